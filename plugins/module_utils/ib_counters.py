# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse the link-quality tools: ``perfquery``, ``mlxlink -c``, ``ethtool -S`` and ``rdma statistic show link``.

perfquery (rdma-core infiniband-diags/perfquery.c; libibmad field dump)::

    # Port extended counters: Lid 204 port 1 (CapMask: 0x5A00 CapMask2: 0x0000002)
    PortSelect:......................1
    PortXmitData:....................38000443084
    SymbolErrorCounter:..............0
    ...

``-x`` prints the 64-bit PortExtendedCounters; the error counters
(SymbolErrorCounter ... QP1Dropped) follow only when the port's CapMask2
says IsAddlPortCountersExtendedSupported. Without ``-x`` the basic
PortCounters (``# Port counters: ...``) carry the same error names at 4 to 16
bits and the data counters at 32 bits, all saturating (widths: libibmad
fields.c, the ``IB_PC_*_F`` entries; newer rdma-core adds QP1Dropped, 16 bits,
and prints CounterSelect2 before LocalLinkIntegrityErrors: fields are read by
name, so the order does not matter). ``-l`` (or a port list such as ``1,2``)
prints one block per port back to back: one record per port, under ``ports``.
``-a`` prints one block for port 255 (perfquery.c ALL_PORTS, the ports summed).
The other attributes perfquery reads (``-E`` PortRcvErrorDetails, ``-D``
PortXmitDiscardDetails, ``-X``/``-S`` PortXmitDataSL/PortRcvDataSL, ``-T``
PortExtendedSpeedsCounters ...; header ``# NAME counters: Lid L port P``,
perfquery.c common_func) are refused with a ParseError naming the option and
the attribute: nothing here judges them, and their counters are not the link
error counters a caller would take them for.

mlxlink (MFT / mstflint mlxlink_commander.cpp): sections of ``Key<spaces>: value``
lines under a title and a line of dashes (the output starts with an empty
line); ``-c`` adds "Physical Counters and BER Info" (``Effective Physical BER :
15E-255``: coefficient E-magnitude). ``15E-255`` is the "no error counted"
value, read as a BER of 0.0: it comes with Effective Physical Errors 0 and raw
errors 0 per lane in the real captures (SOURCES.tsv, sigcomm26 BlueField-3 and
mlxlink_exporter ConnectX-7), mstflint PR #1961 reports "0 when the effective
BER reports no errors", and sonic-net/sonic-mgmt's transceiver test asserts
Effective Physical BER == '15E-255' for an error-free link.
``--json`` (MFT 4.2x+, jsoncpp StyledWriter) prints ``{"result": {"output":
{section: {key: value}}}, "status": {"code", "message"}}``; per-lane values are
``{"values": [...]}`` (joined with "," as the text prints them) and masks
``{"mask": M, "values": [...]}`` (``M (v1,v2)`` as the text prints them).
Refused with a ParseError naming the mode: ``--port_type PCIE`` output (PCIe
sections, eye and its "Errors" exception: this parser reads network ports),
and an ``-E-`` line (an option the device does not support, a device not
found: mlxlink printed an error instead of, or after, its answer).

ethtool -S: ``NIC statistics:`` then ``     name: value`` lines.
rdma statistic show link DEV/PORT (iproute2): ``link mlx5_0/1 name value name value ...``,
the port's hw_counters (``/sys/class/infiniband/DEV/ports/P/hw_counters``).

Unknown lines are skipped; a text that is not the tool's output raises ParseError.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError

PERFQUERY_OTHER_RE = re.compile(r'^#\s*(?P<attribute>[A-Za-z][A-Za-z0-9 -]*?) counters:\s')
PERFQUERY_HEADER_RE = re.compile(
    r'^#\s*Port (?P<kind>extended )?counters:\s*(?:Lid\s+(?P<lid>[0-9]+)|(?P<other>.*?))\s+port\s+(?P<port>[0-9]+)'
    r'(?:\s*\(CapMask:\s*(?P<capmask>0x[0-9A-Fa-f]+)(?:\s+CapMask2:\s*(?P<capmask2>0x[0-9A-Fa-f]+))?\))?')
PERFQUERY_FIELD_RE = re.compile(r'^(?P<name>[A-Za-z0-9_]+):\.*(?P<value>\S+)\s*$')
MLXLINK_KEY_RE = re.compile(r'^(?P<key>[^:]*?[^\s:])\s*:\s?(?P<value>.*?)\s*$')
MLXLINK_RULE_RE = re.compile(r'^-{3,}\s*$')
BER_RE = re.compile(r'^(?P<coef>[0-9]+(?:\.[0-9]+)?)E(?P<exp>[-+]?[0-9]+)$', re.IGNORECASE)
ETHTOOL_RE = re.compile(r'^\s+(?P<name>[^:]+?):\s+(?P<value>-?[0-9]+)\s*$')
RDMA_LINK_RE = re.compile(r'^link\s+(?P<dev>[^/\s]+)/(?P<port>[0-9]+)\s+(?P<rest>.*)$')

# the error counters a link-quality check judges (perfquery names)
PERFQUERY_ERRORS = ('SymbolErrorCounter', 'LinkErrorRecoveryCounter', 'LinkDownedCounter', 'PortRcvErrors',
                    'PortRcvRemotePhysicalErrors', 'PortRcvSwitchRelayErrors', 'PortXmitDiscards', 'PortXmitConstraintErrors',
                    'PortRcvConstraintErrors', 'LocalLinkIntegrityErrors', 'ExcessiveBufferOverrunErrors', 'VL15Dropped')


# perfquery option -> the attribute its header names (perfquery.c common_func callers; perfquery(8))
PERFQUERY_OTHER_MODES = {'PortRcvErrorDetails': '-E/--rcverr', 'PortXmitDiscardDetails': '-D/--xmtdisc',
                         'PortXmitDataSL': '-X/--xmtsl', 'PortRcvDataSL': '-S/--rcvsl',
                         'PortExtendedSpeedsCounters': '-T/--extended_speeds',
                         'PortExtendedSpeedsCounters with RS-FEC Active': '-T/--extended_speeds'}

# basic PortCounters field widths in bits (libibmad fields.c IB_PC_*_F; QP1Dropped: IBA PortCounters, rdma-core >= 17);
# every PortExtendedCounters field is 64 bits (IB_PC_EXT_*_F)
PERFQUERY_BASIC_BITS = {'SymbolErrorCounter': 16, 'LinkErrorRecoveryCounter': 8, 'LinkDownedCounter': 8, 'PortRcvErrors': 16,
                        'PortRcvRemotePhysicalErrors': 16, 'PortRcvSwitchRelayErrors': 16, 'PortXmitDiscards': 16,
                        'PortXmitConstraintErrors': 8, 'PortRcvConstraintErrors': 8, 'LocalLinkIntegrityErrors': 4,
                        'ExcessiveBufferOverrunErrors': 4, 'QP1Dropped': 16, 'VL15Dropped': 16, 'PortXmitData': 32,
                        'PortRcvData': 32, 'PortXmitPkts': 32, 'PortRcvPkts': 32, 'PortXmitWait': 32}
PERFQUERY_COUNTER_FIELDS = ('PortSelect', 'CounterSelect', 'CounterSelect2')   # selectors, not counts

# mlxlink's "no error counted" BER (see the module docstring for its sources)
BER_NONE_COUNTED = '15E-255'


def _number(value):
    text = value.strip()
    try:
        return int(text, 16) if text.lower().startswith('0x') else int(text)
    except ValueError:
        return text


def _perfquery_record(header, values):
    extended = bool(header.group('kind'))
    counters = dict((name, value) for name, value in values.items() if isinstance(value, int))
    bits = dict((name, 64 if extended else PERFQUERY_BASIC_BITS[name]) for name in counters
                if name not in PERFQUERY_COUNTER_FIELDS and (extended or name in PERFQUERY_BASIC_BITS))
    return {
        'extended': extended,
        'lid': int(header.group('lid')) if header.group('lid') else None,
        'port': int(header.group('port')),
        'capmask': header.group('capmask'),
        'capmask2': header.group('capmask2'),
        'counters': counters,
        'has_errors': 'SymbolErrorCounter' in values,
        'data_bits': 64 if extended else 32,
        'saturated': sorted(name for name, width in bits.items() if counters[name] >= (1 << width) - 1),
    }


def parse_perfquery(text):
    """The PortCounters (plain) or PortExtendedCounters (``-x``) blocks perfquery printed.

    Returns the record of the first block (the only one for one port asked, as ``ib_counters_info`` asks) at the top:
    ``{'extended', 'lid', 'port', 'capmask', 'capmask2', 'counters': {name: int}, 'has_errors', 'data_bits',
    'saturated'}``, plus ``ports``: port number -> that record for every block (``-l`` / a port list print one block
    per port; ``-a`` one block for port 255, the ports summed).

    ``has_errors``: the output carries the error counters (basic PortCounters always; ``-x`` only with CapMask2's
    additional extended counters). ``data_bits``: 64 for ``-x``, 32 for the basic counters (PortXmitData counts
    32-bit words, see the IBA). ``saturated``: the counters at the top of their width (they stopped counting).
    Another perfquery attribute (``-E`` PortRcvErrorDetails and the like) raises ParseError naming its option.
    """
    blocks = []
    for number, line in enumerate(str(text).splitlines(), 1):
        stripped = line.strip()
        found = PERFQUERY_HEADER_RE.match(stripped)
        if found:
            blocks.append((found, {}))
            continue
        other = PERFQUERY_OTHER_RE.match(stripped)
        if other:
            attribute = other.group('attribute')
            raise ParseError('perfquery %s output (%s counters) is not supported: only the PortCounters (plain) and the '
                             'PortExtendedCounters (-x) are read'
                             % (PERFQUERY_OTHER_MODES.get(attribute, 'attribute'), attribute), number, line)
        field = PERFQUERY_FIELD_RE.match(stripped)
        if field and blocks:
            blocks[-1][1][field.group('name')] = _number(field.group('value'))
        elif field and number == 1:
            raise ParseError('perfquery output starts without a "# Port counters" header', number, line)
    if not blocks:
        raise ParseError('no "# Port counters" or "# Port extended counters" header: not perfquery output')
    ports = {}
    for header, values in blocks:
        record = _perfquery_record(header, values)
        if record['port'] in ports:
            raise ParseError('perfquery printed port %d twice (several LIDs in one text are not supported)' % record['port'])
        ports[record['port']] = record
    first = dict(ports[int(blocks[0][0].group('port'))])
    first['ports'] = ports
    return first


def parse_ber(text):
    """``15E-255`` (mlxlink's "no error counted") -> 0.0; ``3E-11`` -> 3e-11; None when not a BER."""
    found = BER_RE.match(str(text or '').strip())
    if not found:
        return None
    if str(text).strip().upper() == BER_NONE_COUNTED:
        return 0.0
    return float(found.group('coef')) * 10.0 ** int(found.group('exp'))


def _mlxlink_json_value(value):
    """A ``--json`` value as the text output prints it: lists joined by ",", masks as ``MASK (v1,v2)``."""
    if isinstance(value, dict):
        joined = ','.join(_mlxlink_json_value(item) for item in value.get('values') or [])
        return '%s (%s)' % (value['mask'], joined) if 'mask' in value else joined
    if isinstance(value, list):
        return ','.join(_mlxlink_json_value(item) for item in value)
    return str(value)


def _mlxlink_json_sections(text):
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise ParseError('mlxlink --json output that is not JSON: %s' % exc)
    document = document if isinstance(document, dict) else {}
    status = document.get('status') if isinstance(document.get('status'), dict) else {}
    if status.get('code') not in (0, None):
        raise ParseError('mlxlink --json reported status %s: %s' % (status.get('code'), status.get('message')))
    result = document.get('result') if isinstance(document.get('result'), dict) else {}
    output = result.get('output')
    if not isinstance(output, dict) or not output:
        raise ParseError('mlxlink --json output without "result": {"output": {...}}: not mlxlink output')
    return dict((title, dict((key, _mlxlink_json_value(value)) for key, value in fields.items()))
                for title, fields in output.items() if isinstance(fields, dict))


def _mlxlink_text_sections(lines):
    sections, current = {}, None
    for index, line in enumerate(lines):
        if line.strip().startswith('-E-'):
            raise ParseError('mlxlink printed an error (an unsupported option or device): %s' % line.strip(), index + 1, line)
        if MLXLINK_RULE_RE.match(line) and index > 0 and lines[index - 1].strip():
            current = lines[index - 1].strip()
            sections[current] = {}
            continue
        found = MLXLINK_KEY_RE.match(line)
        if found and current is not None:
            sections[current][found.group('key')] = found.group('value')
    return sections


def parse_mlxlink(text):
    """``{section title: {key: value text}}`` plus ``ber``: the BER and counters of "Physical Counters and BER Info"
    (``effective_ber``, ``raw_ber``, ``symbol_ber`` as floats, 0.0 for 15E-255, ``effective_errors``,
    ``symbol_errors``, ``link_down``, ``link_error_recovery`` as ints; absent when not printed). Reads the text output
    and ``--json``; refuses ``--port_type PCIE`` output and ``-E-`` errors (ParseError naming them)."""
    text = str(text)
    sections = _mlxlink_json_sections(text) if text.lstrip().startswith('{') else _mlxlink_text_sections(text.splitlines())
    if not sections:
        raise ParseError('no "Title" / "-----" section: not mlxlink output')
    pcie = sorted(title for title in sections if 'PCIe' in title)
    if pcie:
        raise ParseError('mlxlink --port_type PCIE output (%s) is not supported: only network port output (-d DEV -p PORT) '
                         'is read' % ', '.join(pcie))
    counters = sections.get('Physical Counters and BER Info') or {}
    ber = {}
    for key, name in (('Effective Physical BER', 'effective_ber'), ('Raw Physical BER', 'raw_ber'), ('Symbol BER', 'symbol_ber')):
        if key in counters:
            ber[name] = parse_ber(counters[key])
    for key, name in (('Effective Physical Errors', 'effective_errors'), ('Symbol Errors', 'symbol_errors'),
                      ('Link Down Counter', 'link_down'), ('Link Error Recovery Counter', 'link_error_recovery')):
        value = _number(counters.get(key, ''))
        if isinstance(value, int):
            ber[name] = value
    return {'sections': sections, 'ber': ber}


def parse_ethtool_stats(text):
    """``ethtool -S``: ``{name: int}``."""
    lines = str(text).splitlines()
    if not lines or not lines[0].strip().endswith('statistics:'):
        raise ParseError('no "NIC statistics:" line: not ethtool -S output', 1, lines[0] if lines else '')
    out = {}
    for line in lines[1:]:
        found = ETHTOOL_RE.match(line)
        if found:
            out[found.group('name').strip()] = int(found.group('value'))
    return out


def _rdma_ports(text, what):
    """``DEV/PORT`` -> the ``name value`` pairs of each port line rdma(8) printed (``link mlx5_0/1 name value ...``)."""
    out = {}
    for number, line in enumerate(str(text).splitlines(), 1):
        if not line.strip():
            continue
        found = RDMA_LINK_RE.match(line.strip())
        if not found:
            raise ParseError('not an "%s" port line' % what, number, line)
        words = found.group('rest').split()
        out['%s/%s' % (found.group('dev'), found.group('port'))] = dict(zip(words[0::2], words[1::2]))
    return out


def parse_rdma_statistic(text):
    """``rdma statistic show link DEV/PORT``: ``{'DEV/PORT': {counter: int}}`` (one entry per port line)."""
    out = dict((port, dict((name, int(value)) for name, value in pairs.items() if value.lstrip('-').isdigit()))
               for port, pairs in _rdma_ports(text, 'rdma statistic').items())
    if not out:
        raise ParseError('no port line: not rdma statistic output')
    return out


def parse_rdma_link(text):
    """``rdma link show``: ``{'DEV/PORT': {'state', 'physical_state', 'netdev'}}``."""
    return dict((port, {'state': pairs.get('state'), 'physical_state': pairs.get('physical_state'), 'netdev': pairs.get('netdev')})
                for port, pairs in _rdma_ports(text, 'rdma link').items())
