# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse the report printed by ``mlnx_qos -i <netdev>`` (mlnx-tools, MLNX_OFED/DOCA) into plain data."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError

# Layout handled (mlnx-tools python/mlnx_qos pretty_print(); dscp lines from
# print_dscp2prio_sysfs()/DcbAppTable.printAppSelector()):
#
#   DCBX mode: OS controlled                  ("Firmware controlled")
#   Priority trust state: dscp                ("pcp"; older tools "none")
#   dscp2prio mapping:
#   <TAB>prio:0 dscp:07,06,05,04,03,02,01,00,
#   <TAB>prio:3 dscp:31,30,29,28,27,26,25,24,  (8 per line; a longer list goes on
#   <TAB>prio:3 dscp:...                        in more lines with the same prefix)
#   default priority:
#   Receive buffer size (bytes): 130944,130944,0,0,0,0,0,0,total_size=...
#   Cable len: 7
#   PFC configuration:
#   <TAB>priority    0   1   2   3   4   5   6   7
#   <TAB>enabled     0   0   0   1   0   0   0   0
#   <TAB>buffer      0   0   0   1   0   0   0   0
#   tc: 0 ratelimit: unlimited, tsa: vendor
#   <TAB> priority:  1
#   tc: 3 ratelimit: 25.0 Gbps, tsa: ets, bw: 50%
#   <TAB> priority:  3
#
# Sections that a tool version or a NIC does not print are None.  The tool's
# own complaints ("... is not supported on your system", the lldpad warning,
# netlink errors) go to ``errors``.

DCBX_RE = re.compile(r'^\s*DCBX mode\s*:\s*(?P<mode>.*?)\s*$', re.IGNORECASE)
TRUST_RE = re.compile(r'^\s*Priority trust (?:state|mode)\s*:\s*(?P<trust>\S+)\s*$', re.IGNORECASE)
DSCP_HEADER_RE = re.compile(r'^\s*dscp2prio mapping\s*:\s*$', re.IGNORECASE)
DSCP_LINE_RE = re.compile(r'^\s*prio\s*:\s*(?P<prio>[0-9]+)\s+dscp\s*:\s*(?P<dscps>[0-9,\s]*)$')
DSCP_CONTINUATION_RE = re.compile(r'^\s+(?P<dscps>[0-9]{1,2}(?:\s*,\s*[0-9]{1,2})*\s*,?)\s*$')
DEFAULT_PRIO_RE = re.compile(r'^\s*default priority\s*:\s*(?P<prio>[0-9]+)?\s*$', re.IGNORECASE)
DEFAULT_PRIO_VALUE_RE = re.compile(r'^\s*(?:prio(?:rity)?\s*:?\s*)?(?P<prio>[0-7])\s*$')
RX_BUFFER_RE = re.compile(r'^\s*Receive buffer size \(bytes\)\s*:\s*(?P<values>.*?)\s*$', re.IGNORECASE)
TOTAL_SIZE_RE = re.compile(r'total_size\s*=\s*(?P<size>[0-9]+)')
CABLE_LEN_RE = re.compile(r'^\s*Cable len\s*:\s*(?P<len>[0-9]+)\s*$', re.IGNORECASE)
PFC_HEADER_RE = re.compile(r'^\s*PFC configuration\s*:\s*$', re.IGNORECASE)
PFC_ROW_RE = re.compile(r'^\s*(?P<row>priority|enabled|buffer)\s+(?P<values>[0-9]+(?:\s+[0-9]+)*)\s*$')
TC_RE = re.compile(
    r'^\s*tc\s*:\s*(?P<tc>[0-9]+)\s+ratelimit\s*:\s*(?P<ratelimit>[^,]*?)\s*,\s*tsa\s*:\s*(?P<tsa>\w+)'
    r'(?:\s*,\s*bw\s*:\s*(?P<bw>[0-9]+)\s*%)?\s*$')
TC_PRIORITY_RE = re.compile(r'^\s*priority\s*:\s*(?P<prio>[0-9]+)\s*$')
RATELIMIT_RE = re.compile(r'^(?P<gbps>[0-9]+(?:\.[0-9]+)?)\s*Gbps$')
TOOL_ERROR_RE = re.compile(
    r'(?:not supported on your system|WARNING: lldpad|^\s*Netlink error|^\s*\[Errno [0-9]+\]'
    r'|^\s*(?:Bad arguments|Bad value for|Bad TSA value|Interface name is required|Buffers commands error'
    r'|Too many items|Invalid .* command|\S+ command failed|\S+ list must have 8 items|ETS BW for a strict))')


def _ints(values):
    return [int(item) for item in re.findall(r'[0-9]+', values)]


def _new_result():
    return {
        'dcbx': None,
        'trust': None,
        'dscp2prio': None,
        'default_priority': None,
        'receive_buffer_size': None,
        'total_size': None,
        'cable_len': None,
        'pfc_enabled': None,
        'buffer': None,
        'tcs': [],
        'errors': [],
    }


def _dcbx_mode(text):
    lowered = text.lower()
    if lowered.startswith('os'):
        return 'os'
    if lowered.startswith('firmware') or lowered.startswith('fw'):
        return 'firmware'
    return None


def _tc_entry(match):
    ratelimit = match.group('ratelimit')
    gbps = RATELIMIT_RE.match(ratelimit)
    bw = match.group('bw')
    return {
        'tc': int(match.group('tc')),
        'ratelimit': ratelimit,
        'ratelimit_gbps': float(gbps.group('gbps')) if gbps else None,
        'tsa': match.group('tsa'),
        'bw_percent': int(bw) if bw is not None else None,
        'priorities': [],
    }


class _State(object):
    """Where in the report the previous line was, for lines that continue a section."""

    def __init__(self):
        self.section = None
        self.dscp_prio = None
        self.tc = None


def _header_line(line, result, state):
    """Single-line facts; True when the line was one of them."""
    match = DCBX_RE.match(line)
    if match:
        result['dcbx'] = _dcbx_mode(match.group('mode'))
        return True
    match = TRUST_RE.match(line)
    if match:
        result['trust'] = match.group('trust').lower()
        return True
    match = RX_BUFFER_RE.match(line)
    if match:
        values = match.group('values')
        total = TOTAL_SIZE_RE.search(values)
        result['total_size'] = int(total.group('size')) if total else None
        result['receive_buffer_size'] = _ints(TOTAL_SIZE_RE.sub('', values))
        return True
    match = CABLE_LEN_RE.match(line)
    if match:
        result['cable_len'] = int(match.group('len'))
        return True
    match = DEFAULT_PRIO_RE.match(line)
    if match:
        state.section = 'default'
        if match.group('prio') is not None:
            result['default_priority'] = int(match.group('prio'))
        return True
    return False


def _section_line(line, result, state):
    """Lines that open a section or belong to the open one; True when consumed."""
    if DSCP_HEADER_RE.match(line):
        state.section = 'dscp'
        state.dscp_prio = None
        result['dscp2prio'] = {}
        return True
    if PFC_HEADER_RE.match(line):
        state.section = 'pfc'
        return True
    match = TC_RE.match(line)
    if match:
        state.section = 'tc'
        state.tc = _tc_entry(match)
        result['tcs'].append(state.tc)
        return True
    match = DSCP_LINE_RE.match(line)
    if match:
        state.section = 'dscp'
        state.dscp_prio = int(match.group('prio'))
        mapping = result['dscp2prio'] if result['dscp2prio'] is not None else {}
        mapping.setdefault(state.dscp_prio, []).extend(_ints(match.group('dscps')))
        result['dscp2prio'] = mapping
        return True
    match = DSCP_CONTINUATION_RE.match(line)
    if match and state.section == 'dscp' and state.dscp_prio is not None:
        result['dscp2prio'].setdefault(state.dscp_prio, []).extend(_ints(match.group('dscps')))
        return True
    match = PFC_ROW_RE.match(line)
    if match and (state.section == 'pfc' or match.group('row') != 'priority'):
        row = match.group('row')
        if row == 'enabled':
            result['pfc_enabled'] = _ints(match.group('values'))
        elif row == 'buffer':
            result['buffer'] = _ints(match.group('values'))
        return True
    match = TC_PRIORITY_RE.match(line)
    if match and state.section == 'tc' and state.tc is not None:
        state.tc['priorities'].append(int(match.group('prio')))
        return True
    match = DEFAULT_PRIO_VALUE_RE.match(line)
    if match and state.section == 'default':
        result['default_priority'] = int(match.group('prio'))
        state.section = None
        return True
    return False


def parse_mlnx_qos(text):
    """Parse ``mlnx_qos -i <netdev>`` output.

    Returns ``dcbx`` ("os", "firmware" or None), ``trust`` ("dscp", "pcp"),
    ``dscp2prio`` (``{prio: [dscp, ...]}`` in printed order, continuation
    lines merged; None unless trust is dscp), ``default_priority``,
    ``receive_buffer_size`` (list of 8 ints), ``total_size``,
    ``cable_len``, ``pfc_enabled`` (8 ints 0/1, priority 0 first),
    ``buffer`` (priority -> receive buffer, 8 ints), ``tcs`` (``tc``,
    ``ratelimit`` text, ``ratelimit_gbps``, ``tsa``, ``bw_percent`` (None
    unless ets), ``priorities``) and ``errors``.  Raises ParseError when no
    line of the report and no mlnx_qos error line is found.
    """
    if not isinstance(text, str):
        raise ParseError('mlnx_qos output must be text')
    result = _new_result()
    state = _State()
    recognised = 0
    for raw in text.splitlines():
        line = raw.rstrip('\r')
        if not line.strip():
            continue
        if TOOL_ERROR_RE.search(line):
            result['errors'].append(line.strip())
            continue
        if _header_line(line, result, state):
            recognised += 1
        elif _section_line(line, result, state):
            recognised += 1
    if not recognised and not result['errors']:
        raise ParseError('not mlnx_qos output: no DCBX/trust/PFC/tc line found')
    return result
