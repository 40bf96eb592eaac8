# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse ``ibqueryerrors`` output: the error counters of every node's ports that are above the thresholds.

Layout (rdma-core infiniband-diags/ibqueryerrors.c @0c6807aa5847be3f17a935fd941f3db0d03aa7df, print_results(),
print_port_config(), print_summary())::

    Errors for 0x2c903006e29b0 "MF0;ys23ib4:SX6036/U1"          <- a switch: its GUID, then its description
       GUID 0x2c903006e29b0 port ALL: [LinkDownedCounter == 48] ...   <- AllPortSelect: the ports summed
       GUID 0x2c903006e29b0 port 5: [SymbolErrorCounter == 65535] [PortXmitDiscards == 649]
    Errors for "dl380g7 mlx4_0"                                 <- a CA: its description only
       GUID 0x7cfe900300179b31 port 1: [VL15Dropped == 14] [PortXmitWait == 4294967295]

    ## Summary: 4 nodes checked, 4 bad nodes found
    ##          43 ports checked, 14 ports have errors beyond threshold
    ## Thresholds: [SymbolErrorCounter = 10]...
    ##          2 PMA query failures                               <- only when some failed
    ## Suppressed: PortRcvSwitchRelayErrors

- A counter is printed only when above its threshold (``--threshold-file``; rdma-core's default file
  etc/error_thresholds has every line commented out, so the default is 0 and every counter that is not 0 is
  printed). A port not printed had none above its threshold.
- 32-bit values print ``[Name == 12]``; with 64-bit extended error counters (CapabilityMask2
  IsAddlPortCountersExtendedSupported) ``[Name == 12 (12.000)]`` and with a unit (``(1.234K)``); ``--data`` adds the
  data counters of ports with errors in the same form, ``--details`` the PortXmitDiscardDetails and
  PortRcvErrorDetails counters after PortXmitDiscards/PortRcvErrors. All are read by name into ``counters``.
- ``-r``/``--report-port`` adds ``       Link info: LID PORT[EXT] ==(width speed state/phys)==>  0xPEERGUID PEERLID
  PEERPORT[EXT] "peer" (msgs)`` after each port: the peer end of the link (``link``).
- Every port GUID of a switch is the switch's GUID (ibnetdiscover's ports[0] GUID), so a switch port is
  (switch GUID, port number).
- ``-k``/``-K`` clear the counters after the read and print nothing more: the text cannot tell. A caller that
  compares two reads must not pass them.

Refused with a ParseError naming the mode: ``--counters`` (``Data Counters for ...``: data counters only, no error
counters). ``ibwarn:`` lines (``IB_GSI_PORT_COUNTERS query failed on ...``), ``discover failed``, ``Failed to find
node`` and the other tool errors go to ``errors``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.ib_sm import norm_guid

NODE_RE = re.compile(r'^Errors for (?:(?P<guid>0x[0-9a-fA-F]+) )?"(?P<name>.*)"\s*$')
PORT_RE = re.compile(r'^\s+GUID (?P<guid>0x[0-9a-fA-F]+) port (?P<port>ALL|\d+):(?P<counters>.*)$')
# check_threshold(): a 64-bit value prints "(%5.3f%s)" after the count, a 32-bit one nothing: "(" marks the 64-bit form
COUNTER_RE = re.compile(r'\[(\w+) == (\d+)(?: \(\s*[0-9.]+\s*[A-Za-z]*\))?\]')
LINK_INFO_RE = re.compile(
    r'^\s+Link info:\s+(?P<lid>\d+)\s*(?P<port>\d+)\[(?P<ext>[^\]]*)\] ==\((?P<link>.*)\)==>\s+'
    r'(?:(?P<peer_guid>0x[0-9a-fA-F]+)\s+(?P<peer_lid>\d+)\s+(?P<peer_port>\d+)\[[^\]]*\]\s+"(?P<peer_name>.*)"\s+\([^()]*\)'
    r'|(?P<no_peer>\[\s*\]\s*""\s*\(\s*\)))\s*$')
SUMMARY_NODES_RE = re.compile(r'^## Summary: (?P<nodes>\d+) nodes checked, (?P<bad>\d+) bad nodes found\s*$')
SUMMARY_PORTS_RE = re.compile(r'^##\s+(?P<ports>\d+) ports checked, (?P<bad>\d+) ports have errors beyond threshold\s*$')
SUMMARY_PMA_RE = re.compile(r'^##\s+(?P<n>\d+) PMA query failures\s*$')
THRESHOLDS_RE = re.compile(r'^## (?:Thresholds:(?P<list>.*)|\(null\))\s*$')
THRESHOLD_RE = re.compile(r'\[(?P<name>\w+) = (?P<value>\d+)\]')
SUPPRESSED_RE = re.compile(r'^## Suppressed:(?P<list>.*)$')
DATA_ONLY_RE = re.compile(r'^Data Counters for ')
TOOL_ERROR_RE = re.compile(
    r'^\s*(?:(?:[\w./-]+:\s+)?(?:ibpanic|ibwarn|iberror|ibexit)\b|discover failed|Failed to |loading cached fabric|'
    r'Cannot specify|WARN:|Query SA failed)', re.IGNORECASE)


def _link(match, guids):
    """The ``Link info:`` line: this end's LID/port, the link state and the peer end (None when the peer part does
    not parse). ``guids``: a cache of normalised GUIDs."""
    lid, port, dummy, link, peer_guid, peer_lid, peer_port, peer_name, no_peer = match.groups()
    pre, dummy, phys = link.rpartition('/')
    words = pre.split()
    if not words or not phys.strip() or (peer_guid is None and no_peer is None):
        return None
    if peer_guid is not None:
        if peer_guid not in guids:
            guids[peer_guid] = norm_guid(peer_guid)
        peer_guid, peer_lid, peer_port = guids[peer_guid], int(peer_lid), int(peer_port)
    return {'lid': int(lid), 'port': int(port), 'width': words[0] if len(words) > 1 and words[0].endswith('X') else None,
            'speed': ' '.join(words[1:-1]) or None, 'state': words[-1], 'physical_state': phys.strip(),
            'peer_guid': peer_guid, 'peer_lid': peer_lid, 'peer_port': peer_port, 'peer_name': peer_name}


def _summary(line, summary):
    """Fill ``summary`` from one ``## ...`` line; False when the line is none of them."""
    for regex, keys in ((SUMMARY_NODES_RE, ('nodes_checked', 'bad_nodes')), (SUMMARY_PORTS_RE, ('ports_checked', 'bad_ports'))):
        match = regex.match(line)
        if match:
            summary[keys[0]], summary[keys[1]] = (int(value) for value in match.groups())
            return True
    match = SUMMARY_PMA_RE.match(line)
    if match:
        summary['pma_query_failures'] = int(match.group('n'))
        return True
    match = THRESHOLDS_RE.match(line)
    if match:
        summary['thresholds'] = dict((m.group('name'), int(m.group('value')))
                                     for m in THRESHOLD_RE.finditer(match.group('list') or ''))
        return True
    match = SUPPRESSED_RE.match(line)
    if match:
        summary['suppressed'] = match.group('list').split()
        return True
    return False


def parse_ibqueryerrors(text):
    """``ibqueryerrors`` output -> ``{'nodes': [...], 'ports': [...], 'summary': {...}, 'errors': [...]}``.

    ``nodes``: ``{type ('switch'/'ca'), guid (a switch's; None for a CA), name}`` per ``Errors for`` header.
    ``ports``: one entry per ``GUID ... port N:`` line, in order: ``node_type``, ``node_guid``, ``node_name``,
    ``guid`` (the port GUID), ``port`` (an int, or ``'ALL'`` for the AllPortSelect sum), ``counters`` (name -> int),
    ``extended`` (the 64-bit form was printed: the counters do not saturate at 16 or 8 bits),
    ``link`` (the ``-r`` Link info, else None). ``summary``: nodes_checked, bad_nodes, ports_checked, bad_ports,
    pma_query_failures (0 when not printed), thresholds (name -> value; empty: every threshold 0), suppressed.
    Raises ParseError for ``--counters`` output, a port line before any node header, or text with no header,
    summary or tool error.
    """
    if not isinstance(text, str):
        raise ParseError('ibqueryerrors output must be text')
    nodes, ports, errors = [], [], []
    summary = {'nodes_checked': None, 'bad_nodes': None, 'ports_checked': None, 'bad_ports': None,
               'pma_query_failures': 0, 'thresholds': {}, 'suppressed': []}
    node, last, guids = None, None, {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line or line.isspace():
            continue
        if line.startswith('   GUID ') or line.startswith('\tGUID '):
            match = PORT_RE.match(line)
            if match:
                if node is None:
                    raise ParseError('a port line before any "Errors for" header', number, line)
                guid, port, counters = match.group('guid', 'port', 'counters')
                if guid not in guids:
                    guids[guid] = norm_guid(guid)
                last = {'node_type': node['type'], 'node_guid': node['guid'], 'node_name': node['name'],
                        'guid': guids[guid], 'port': port if port == 'ALL' else int(port),
                        'counters': {name: int(value) for name, value in COUNTER_RE.findall(counters)},
                        'extended': '(' in counters, 'link': None}
                ports.append(last)
                continue
        if 'Link info:' in line:
            match = LINK_INFO_RE.match(line)
            if match and last is not None and last['link'] is None:
                link = _link(match, guids)
                if link is not None:
                    last['link'] = link
                    continue
        match = NODE_RE.match(line)
        if match:
            guid = match.group('guid')
            node = {'type': 'switch' if guid else 'ca', 'guid': norm_guid(guid) if guid else None, 'name': match.group('name')}
            nodes.append(node)
            last = None
            continue
        if DATA_ONLY_RE.match(line):
            raise ParseError('ibqueryerrors --counters output (data counters only) is not supported', number, line)
        if line.startswith('##') and _summary(line.strip(), summary):
            continue
        if TOOL_ERROR_RE.match(line):
            errors.append(line.strip())
    if not nodes and summary['nodes_checked'] is None and not errors:
        raise ParseError('not ibqueryerrors output: no "Errors for" header, no "## Summary" and no tool error')
    return {'nodes': nodes, 'ports': ports, 'summary': summary, 'errors': errors}
