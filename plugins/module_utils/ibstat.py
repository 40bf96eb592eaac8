# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse the text output of ``ibstat`` (rdma-core / infiniband-diags) into plain data."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError

# Layout handled (rdma-core infiniband-diags ibstat.c, ca_dump()/port_dump()):
#
#   CA 'mlx5_0'
#   <TAB>CA type: MT4129
#   <TAB>Number of ports: 1
#   <TAB>Firmware version: 28.39.1002
#   <TAB>Hardware version: 0
#   <TAB>Node GUID: 0x946dae0300cde72c
#   <TAB>System image GUID: 0x946dae0300cde72c
#   <TAB>Port 1:
#   <TAB><TAB>State: Active
#   <TAB><TAB>Physical state: LinkUp
#   <TAB><TAB>Rate: 400                  (also "Rate: 2.5", "Rate: 40 (FDR10)")
#   <TAB><TAB>Base lid: 75
#   <TAB><TAB>LMC: 0
#   <TAB><TAB>SM lid: 334
#   <TAB><TAB>Capability mask: 0xa751e848
#   <TAB><TAB>Port GUID: 0x946dae0300cde72c
#   <TAB><TAB>Link layer: InfiniBand
#
# Indentation may be tabs or spaces (or none: ``ibstat mlx5_0 1`` prints
# ``CA: 'mlx5_0'`` then an unindented ``Port 1:`` block).  Lines ibstat
# prints on failure (``ibpanic: ...``, ``ibwarn: ...``) are returned in
# ``errors``; everything parsed before them is kept.

CA_HEADER_RE = re.compile(r"^\s*(?:CA|Switch|Router|RNIC|\?\?\?)\s*:?\s+'(?P<name>[^']*)'\s*$")
PORT_HEADER_RE = re.compile(r'^\s*Port\s+(?P<port>[0-9]+)\s*:\s*$')
FIELD_RE = re.compile(r'^\s*(?P<key>[A-Za-z][A-Za-z ]*?)\s*:\s*(?P<value>.*?)\s*$')
TOOL_ERROR_RE = re.compile(r'^\s*(?:[\w./-]+:\s+)?(?:ibpanic|ibwarn|iberror|ibexit)\b.*$', re.IGNORECASE)
INT_RE = re.compile(r'^(?:0x[0-9a-fA-F]+|[0-9]+)$')
RATE_RE = re.compile(r'^(?P<rate>[0-9]+(?:\.[0-9]+)?)(?:\s*\((?P<note>[^)]*)\))?')

# ibstat field label -> (our key, converter name)
CA_FIELDS = {
    'CA type': ('ca_type', 'str'),
    'Number of ports': ('number_of_ports', 'int'),
    'Firmware version': ('firmware_version', 'str'),
    'Hardware version': ('hardware_version', 'str'),
    'Node GUID': ('node_guid', 'str'),
    'System image GUID': ('system_image_guid', 'str'),
}
PORT_FIELDS = {
    'State': ('state', 'str'),
    'Physical state': ('physical_state', 'str'),
    'Rate': ('rate_gbps', 'rate'),
    'Base lid': ('base_lid', 'int'),
    'LMC': ('lmc', 'int'),
    'SM lid': ('sm_lid', 'int'),
    'Capability mask': ('capability_mask', 'str'),
    'Port GUID': ('port_guid', 'str'),
    'Link layer': ('link_layer', 'str'),
}


def _to_int(value):
    """Decimal or 0x-hex integer, else None."""
    if not INT_RE.match(value):
        return None
    return int(value, 16) if value[:2].lower() == '0x' else int(value)


def _to_rate(value):
    """The number after ``Rate:`` as a float (``40 (FDR10)`` -> 40.0), else None."""
    match = RATE_RE.match(value)
    return float(match.group('rate')) if match else None


def _convert(kind, value):
    if kind == 'int':
        return _to_int(value)
    if kind == 'rate':
        return _to_rate(value)
    return value if value != '' else None


def _new_ca(name):
    ca = {'name': name}
    for key, _kind in CA_FIELDS.values():
        ca[key] = None
    ca['ports'] = []
    return ca


def _new_port(number):
    port = {'port': number}
    for key, _kind in PORT_FIELDS.values():
        port[key] = None
    port['rate_note'] = None
    return port


def _apply_field(ca, port, key, value):
    """Store one ``Key: value`` line on the current port or CA; unknown keys are skipped."""
    if port is not None and key in PORT_FIELDS:
        name, kind = PORT_FIELDS[key]
        port[name] = _convert(kind, value)
        if name == 'rate_gbps':
            match = RATE_RE.match(value)
            port['rate_note'] = match.group('note') if match else None
        return True
    if ca is not None and key in CA_FIELDS:
        name, kind = CA_FIELDS[key]
        ca[name] = _convert(kind, value)
        return True
    return False


def parse_ibstat(text):
    """Parse ``ibstat`` output.

    Returns ``{"cas": [...], "errors": [...]}``: one dict per CA in input
    order (``name``, ``ca_type``, ``number_of_ports``, ``firmware_version``,
    ``hardware_version``, ``node_guid``, ``system_image_guid``, ``ports``),
    each port with ``port``, ``state``, ``physical_state``, ``rate_gbps``,
    ``rate_note`` (e.g. ``FDR10``), ``base_lid``, ``lmc``, ``sm_lid``,
    ``capability_mask``, ``port_guid``, ``link_layer``; fields not printed
    are None.  Raises ParseError when the text holds no CA and no ibstat
    error line.
    """
    if not isinstance(text, str):
        raise ParseError('ibstat output must be text')
    cas = []
    errors = []
    ca = None
    port = None
    recognised = 0
    for raw in text.splitlines():
        line = raw.rstrip('\r')
        if not line.strip():
            continue
        if TOOL_ERROR_RE.match(line):
            errors.append(line.strip())
            continue
        match = CA_HEADER_RE.match(line)
        if match:
            ca = _new_ca(match.group('name'))
            cas.append(ca)
            port = None
            recognised += 1
            continue
        match = PORT_HEADER_RE.match(line)
        if match and ca is not None:
            port = _new_port(int(match.group('port')))
            ca['ports'].append(port)
            continue
        match = FIELD_RE.match(line)
        if match and _apply_field(ca, port, match.group('key'), match.group('value')):
            recognised += 1
    if not cas and not errors:
        raise ParseError('not ibstat output: no "CA \'name\'" block found')
    if not recognised and not errors:
        raise ParseError('not ibstat output: no recognisable field')
    return {'cas': cas, 'errors': errors}
