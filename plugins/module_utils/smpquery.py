# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse ``smpquery`` output: ``PKeyTable`` (``pkeys``) and ``NodeDesc`` (``ND``); the other operations are refused.

Layouts (rdma-core infiniband-diags/smpquery.c @a78c47bf86239dccc224b4bd996f230f38bbf433):

- ``smpquery pkeys LID [PORT]`` (pkey_table()): rows of eight ``"%4u: 0x%04x ... 0x%04x"`` (the index of the first
  entry, then the entries), then ``"%d pkeys capacity for this port"``. A switch port prints its
  PartitionEnforcementCap entries, a CA its PartitionCap (the real captures: 64 for a CA, 8 for a switch port).
- ``smpquery ND LID`` (node_desc()): ``"Node Description:%s%s"``, dots padding the name to 32 characters.

Refused, with the operation named: NodeInfo/PortInfo/PortInfoExtended/SwitchInfo/MlnxExtPortInfo (``# Node info:``,
``# Port info:`` ... headers), SL2VL, VLArbitration and GUIDInfo (``guids capacity``). ``ibwarn:`` and other tool
error lines (the captures carry ibsim's ``ibwarn: ... sim_connect`` line from stderr) go to ``errors``.

A P_Key's top bit is the membership type (IBA 10.9.1: 1 full member, 0 limited member); the low 15 bits are
the partition. 0x0000 and 0x8000 are invalid entries (empty slots).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError

FULL_MEMBER = 0x8000   # IBA 10.9.1 P_Key membership bit: set = full member
PKEY_ROW_RE = re.compile(r'^\s*(?P<index>\d+):(?P<values>(?:\s+0x[0-9a-fA-F]{4}){1,8})\s*$')
CAPACITY_RE = re.compile(r'^\s*(?P<n>\d+) pkeys capacity for this port\s*$')
NODE_DESC_RE = re.compile(r'^Node Description:\.*(?P<name>.*?)\s*$')
TOOL_ERROR_RE = re.compile(r'^\s*(?:(?:[\w./-]+:\s+)?(?:ibpanic|ibwarn|iberror|ibexit)\b|Failed to |.*can\'t resolve)', re.IGNORECASE)
# smpquery.c match_tbl[] operations other than PKeyTable and NodeDesc, by what their output starts with
OTHER_OPERATIONS = (
    (re.compile(r'^# Node info:'), 'NodeInfo (NI)'),
    (re.compile(r'^# Port info Extended:'), 'PortInfoExtended (PIE)'),
    (re.compile(r'^# Port info:'), 'PortInfo (PI)'),
    (re.compile(r'^# MLNX ext Port info:'), 'MlnxExtPortInfo (MEPI)'),
    (re.compile(r'^# Switch info:'), 'SwitchInfo (SI)'),
    (re.compile(r'^# SL2VL table:'), 'SL2VLTable (SL2VL)'),
    (re.compile(r'^# (?:VLArbitration tables|No VLArbitration tables)'), 'VLArbitration (VLArb)'),
    (re.compile(r'^\s*\d+ guids capacity for this port'), 'GUIDInfo (GI)'),
)


def pkey_member(value):
    """A P_Key entry -> ``{'pkey': 0x7fff, 'full': True}`` (the partition without the membership bit); None for
    an empty slot (0x0000 or 0x8000)."""
    value = int(value)
    if value & 0x7fff == 0:
        return None
    return {'pkey': value & 0x7fff, 'full': bool(value & FULL_MEMBER)}


def parse_smpquery(text):
    """``smpquery pkeys`` or ``smpquery ND`` output.

    Returns ``{'operation': 'pkeys'|'nodedesc', 'pkeys': [int, ...] (every table entry, in index order; pkeys only),
    'members': [{'index', 'pkey', 'full'}] (the non-empty entries), 'capacity': int, 'node_description': str
    (nodedesc only), 'errors': [...]}``. Raises ParseError for another smpquery operation (named), a pkeys table
    whose rows skip an index or lack the capacity line, or text that is neither.
    """
    if not isinstance(text, str):
        raise ParseError('smpquery output must be text')
    pkeys, capacity, description, errors = [], None, None, []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip('\r')
        if not line.strip():
            continue
        for regex, name in OTHER_OPERATIONS:
            if regex.match(line):
                raise ParseError('smpquery %s output is not supported (pkeys and ND only)' % name, number, line)
        match = PKEY_ROW_RE.match(line)
        if match:
            if capacity is not None:
                raise ParseError('a P_Key row after the capacity line', number, line)
            if int(match.group('index')) != len(pkeys):
                raise ParseError('P_Key row starts at index %s, expected %d' % (match.group('index'), len(pkeys)), number, line)
            pkeys.extend(int(value, 16) for value in match.group('values').split())
            continue
        match = CAPACITY_RE.match(line)
        if match:
            capacity = int(match.group('n'))
            continue
        match = NODE_DESC_RE.match(line)
        if match:
            description = match.group('name')
            continue
        if TOOL_ERROR_RE.match(line):
            errors.append(line.strip())
    if description is not None and (pkeys or capacity is not None):
        raise ParseError('NodeDesc and PKeyTable output mixed: one read is one operation')
    if description is not None:
        return {'operation': 'nodedesc', 'node_description': description, 'errors': errors}
    if pkeys and capacity is None:
        raise ParseError('smpquery pkeys output without "N pkeys capacity for this port" (cut short)')
    if capacity is None:
        if errors:
            return {'operation': None, 'errors': errors}
        raise ParseError('not smpquery pkeys/ND output: no P_Key row, capacity line or Node Description')
    members = []
    for index, value in enumerate(pkeys[:capacity]):
        member = pkey_member(value)
        if member is not None:
            member['index'] = index
            members.append(member)
    return {'operation': 'pkeys', 'pkeys': pkeys, 'members': members, 'capacity': capacity, 'errors': errors}


def parse_sysfs_pkeys(entries):
    """The P_Key table of a port read from ``/sys/class/infiniband/DEV/ports/PORT/pkeys/<index>`` (each file holds
    ``0xffff``): a mapping index -> text (or a list in index order) -> ``{'members': [...], 'pkeys': [...]}`` as
    ``parse_smpquery``. Raises ParseError for an entry that is not a 16-bit hex number."""
    items = sorted(entries.items(), key=lambda item: int(item[0])) if isinstance(entries, dict) else list(enumerate(entries or []))
    pkeys, members = [], []
    for index, text in items:
        value = str(text).strip()
        if not re.match(r'^0x[0-9a-fA-F]{1,4}$', value):
            raise ParseError('pkeys/%s holds %r, not a P_Key' % (index, value))
        number = int(value, 16)
        pkeys.append(number)
        member = pkey_member(number)
        if member is not None:
            member['index'] = int(index)
            members.append(member)
    return {'operation': 'pkeys', 'pkeys': pkeys, 'members': members, 'capacity': len(pkeys), 'errors': []}
