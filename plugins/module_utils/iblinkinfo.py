# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse the text output of ``iblinkinfo`` (rdma-core / infiniband-diags) into one entry per port line."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError

# Layouts handled (rdma-core infiniband-diags iblinkinfo.c print_node_header()
# and print_port(); "Could be" text from ibdiag_common.c get_max_msg()):
#
# Default layout, a header per node then one line per port:
#
#   Switch: 0x<guid> <node description>:
#         <LID> <PORT>[<ext>] ==(<W> <speed> <state>/<phys>)==>  <PEERLID> <PEERPORT>[<ext>] "<peer>" (<msgs>)
#   CA: <node description>:
#         0x<port guid> <LID> <PORT>[<ext>] ==(...)==>  <PEERLID> <PEERPORT>[<ext>] "<peer>" (<msgs>)
#
#   printf formats: "%6d %4d[%2s] ==%s==>  %s", link "(%3s %18s %6s/%8s)",
#   peer "%6d %4d[%2s] \"%s\" (%s %s)".  <msgs> is "( )" on a healthy link,
#   "(Could be 4X )" / "( Could be 106.25 Gbps)" when width or speed is
#   below what both ends support.
#
#   A Down port prints "==(              Down/ Polling)==>             [  ] \"\" ( )";
#   a port that is up but has no peer prints "    \"Port not available\"".
#   With --additional (-p) " (HOQ:<n> VL_Stall:<n>)" follows the link part.
#
# Line mode (-l), one line per port, node type not printed (node_type None):
#
#   0x<port guid> "<node description %30s>" <LID> <PORT>[..] ==(...)==>  0x<peer guid> <PEERLID> <PEERPORT>[..] "<peer>" (<msgs>)
#
# Tool errors (ibwarn:/ibpanic:/iberror: lines, "discover failed", ...) are
# returned in ``errors``.  Diff mode ("< "/"> " prefixes) is not handled.

NODE_HEADER_RE = re.compile(
    r'^(?P<type>Switch|CA|Router)\s*:\s+(?:(?P<guid>0x[0-9a-fA-F]+)\s+)?(?P<name>.*):\s*$')
PORT_LINE_RE = re.compile(
    r'^\s*(?:(?P<guid>0x[0-9a-fA-F]+)\s+)?'
    r'(?:"(?P<name>[^"]*)"\s+)?'
    r'(?P<lid>[0-9]+)\s+(?P<port>[0-9]+)\[(?P<ext>[^\]]*)\]\s*'
    r'==\((?P<link>.*)\)==>\s*(?P<remote>.*?)\s*$')
LINK_RE = re.compile(
    r'^\s*(?P<pre>.*?)\s*(?P<state>[^\s/]+)/\s*(?P<phys>[^\s/)]+)\s*'
    r'(?:\)\s*\(HOQ:(?P<hoq>[0-9]+)\s+VL_Stall:(?P<vl_stall>[0-9]+)\s*)?$')
WIDTH_RE = re.compile(r'^(?P<lanes>[0-9]+)X$')
SPEED_RE = re.compile(r'(?P<gbps>[0-9]+(?:\.[0-9]+)?)\s*Gbps')
PEER_RE = re.compile(
    r'^(?:(?P<guid>0x[0-9a-fA-F]+)\s+)?(?P<lid>[0-9]+)\s+(?P<port>[0-9]+)\[(?P<ext>[^\]]*)\]\s+'
    r'"(?P<name>.*)"\s+\((?P<msgs>[^()]*)\)\s*$')
NO_PEER_DOWN_RE = re.compile(r'^\[\s*\]\s*""\s*\(\s*\)$')
PORT_NOT_AVAILABLE_RE = re.compile(r'^"Port not available"$')
TOOL_ERROR_RE = re.compile(
    r'^\s*(?:(?:[\w./-]+:\s+)?(?:ibpanic|ibwarn|iberror|ibexit)\b'
    r'|discover failed|Failed to |loading cached fabric|Cannot specify|WARN:|invalid diff check key)',
    re.IGNORECASE)


def _int_or_none(value):
    return int(value) if value is not None and value.isdigit() else None


def _parse_link(link):
    """``4X 106.25 Gbps Active/  LinkUp`` -> (width, lane speed, state, phys, hoq, vl_stall)."""
    match = LINK_RE.match(link)
    if not match:
        return None
    pre = match.group('pre').strip()
    width = None
    speed = None
    if pre:
        first = pre.split()[0]
        width = first if WIDTH_RE.match(first) else None
        found = SPEED_RE.search(pre)
        speed = float(found.group('gbps')) if found else None
    return {
        'width': width,
        'lane_speed_gbps': speed,
        'speed_text': pre[len(width):].strip() if width else (pre or None),
        'state': match.group('state'),
        'physical_state': match.group('phys'),
        'hoq_life': _int_or_none(match.group('hoq')),
        'vl_stall_count': _int_or_none(match.group('vl_stall')),
    }


def _parse_peer(remote):
    """The text after ``==>``: peer LID/port/name and the ``( ... )`` messages."""
    peer = {'peer_guid': None, 'peer_lid': None, 'peer_port': None, 'peer_name': None,
            'could_be': None, 'port_not_available': False}
    match = PEER_RE.match(remote)
    if match:
        msgs = ' '.join(match.group('msgs').split())
        peer.update(peer_guid=match.group('guid'), peer_lid=int(match.group('lid')),
                    peer_port=int(match.group('port')), peer_name=match.group('name'),
                    could_be=msgs or None)
        return peer
    if NO_PEER_DOWN_RE.match(remote):
        return peer
    if PORT_NOT_AVAILABLE_RE.match(remote):
        peer['port_not_available'] = True
        return peer
    return None


def _is_degraded(entry):
    """A "Could be" hint, or a link that is up at a width below 4X."""
    if entry['could_be']:
        return True
    width = WIDTH_RE.match(entry['width'] or '')
    return bool(width) and entry['state'] != 'Down' and int(width.group('lanes')) < 4


def _port_entry(match, node):
    """One result entry for a port line, or None when its link/peer parts do not parse."""
    link = _parse_link(match.group('link'))
    peer = _parse_peer(match.group('remote'))
    if link is None or peer is None:
        return None
    line_mode = match.group('name') is not None
    entry = {
        'node_type': None if line_mode else node['type'],
        'node_guid': match.group('guid') if (line_mode or node['guid'] is None) else node['guid'],
        'node_name': match.group('name').strip() if line_mode else node['name'],
        'node_lid': int(match.group('lid')),
        'port': int(match.group('port')),
        'port_guid': match.group('guid'),
    }
    entry.update(link)
    entry.update(peer)
    entry['degraded'] = _is_degraded(entry)
    return entry


def parse_iblinkinfo(text):
    """Parse ``iblinkinfo`` output (default or ``-l`` line layout).

    Returns ``{"links": [...], "errors": [...]}`` with one entry per printed
    port line in input order: ``node_type`` ("Switch"/"CA"/"Router", None in
    line mode), ``node_guid`` (switch GUID from the header; the port GUID
    for CAs, whose header carries none), ``node_name``, ``node_lid``,
    ``port``, ``port_guid``, ``width`` ("4X", None when down),
    ``lane_speed_gbps``, ``speed_text``, ``state``, ``physical_state``,
    ``peer_guid`` (line mode), ``peer_lid``, ``peer_port``, ``peer_name``,
    ``could_be`` (the text inside the trailing parentheses, e.g.
    "Could be 4X", else None), ``port_not_available``, ``hoq_life`` and
    ``vl_stall_count`` (with -p), ``degraded``.  Raises ParseError when no
    node header, port line or iblinkinfo error line is found.
    """
    if not isinstance(text, str):
        raise ParseError('iblinkinfo output must be text')
    links = []
    errors = []
    node = {'type': None, 'guid': None, 'name': None}
    headers = 0
    for raw in text.splitlines():
        line = raw.rstrip('\r')
        if not line.strip():
            continue
        match = NODE_HEADER_RE.match(line)
        if match:
            node = {'type': match.group('type'), 'guid': match.group('guid'), 'name': match.group('name').strip()}
            headers += 1
            continue
        match = PORT_LINE_RE.match(line)
        if match:
            entry = _port_entry(match, node)
            if entry is not None:
                links.append(entry)
                continue
        if TOOL_ERROR_RE.match(line):
            errors.append(line.strip())
    if not links and not headers and not errors:
        raise ParseError('not iblinkinfo output: no "Switch:"/"CA:" header and no port line')
    return {'links': links, 'errors': errors}
