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
bits, saturating.

mlxlink (MFT / mstflint mlxlink_commander.cpp): sections of ``Key<spaces>: value``
lines under a title and a line of dashes; ``-c`` adds "Physical Counters and
BER Info" (``Effective Physical BER : 15E-255``: coefficient E-magnitude,
``15E-255`` meaning no error counted).

ethtool -S: ``NIC statistics:`` then ``     name: value`` lines.
rdma statistic show link DEV/PORT (iproute2): ``link mlx5_0/1 name value name value ...``,
the port's hw_counters (``/sys/class/infiniband/DEV/ports/P/hw_counters``).

Unknown lines are skipped; a text that is not the tool's output raises ParseError.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError

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


def _number(value):
    text = value.strip()
    try:
        return int(text, 16) if text.lower().startswith('0x') else int(text)
    except ValueError:
        return text


def parse_perfquery(text):
    """``{'extended', 'lid', 'port', 'capmask', 'capmask2', 'counters': {name: int}, 'has_errors'}``.

    ``has_errors``: the output carries the error counters (basic PortCounters always; ``-x`` only with CapMask2's
    additional extended counters).
    """
    header, values = None, {}
    for number, line in enumerate(str(text).splitlines(), 1):
        found = PERFQUERY_HEADER_RE.match(line.strip())
        if found:
            if header is not None:
                break   # one port per parse; perfquery prints one block per port asked
            header = found
            continue
        field = PERFQUERY_FIELD_RE.match(line.strip())
        if field and header is not None:
            values[field.group('name')] = _number(field.group('value'))
        elif field and header is None and number == 1:
            raise ParseError('perfquery output starts without a "# Port counters" header', number, line)
    if header is None:
        raise ParseError('no "# Port counters" or "# Port extended counters" header: not perfquery output')
    return {
        'extended': bool(header.group('kind')),
        'lid': int(header.group('lid')) if header.group('lid') else None,
        'port': int(header.group('port')),
        'capmask': header.group('capmask'),
        'capmask2': header.group('capmask2'),
        'counters': dict((name, value) for name, value in values.items() if isinstance(value, int)),
        'has_errors': 'SymbolErrorCounter' in values,
    }


def parse_ber(text):
    """``15E-255`` -> 1.5e-254; ``3E-11`` -> 3e-11; None when not a BER."""
    found = BER_RE.match(str(text or '').strip())
    if not found:
        return None
    return float(found.group('coef')) * 10.0 ** int(found.group('exp'))


def parse_mlxlink(text):
    """``{section title: {key: value text}}`` plus ``ber``: the BER and counters of "Physical Counters and BER Info"
    (``effective_ber``, ``raw_ber``, ``symbol_ber`` as floats, ``effective_errors``, ``symbol_errors``,
    ``link_down``, ``link_error_recovery`` as ints; absent when not printed)."""
    lines = str(text).splitlines()
    sections, current = {}, None
    for index, line in enumerate(lines):
        if MLXLINK_RULE_RE.match(line) and index > 0 and lines[index - 1].strip():
            current = lines[index - 1].strip()
            sections[current] = {}
            continue
        found = MLXLINK_KEY_RE.match(line)
        if found and current is not None:
            sections[current][found.group('key')] = found.group('value')
    if not sections:
        raise ParseError('no "Title" / "-----" section: not mlxlink output')
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
