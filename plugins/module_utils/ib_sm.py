# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse what the subnet manager says about itself: ``sminfo`` and ``saquery`` (``SMIR`` and ``-s``).

sminfo (rdma-core infiniband-diags/sminfo.c, main())::

    sminfo: sm lid 37 sm guid 0x7cfe90030016aef1, activity count 4484381 priority 14 state 3 SMINFO_MASTER

printf ``"sminfo: sm lid %d sm guid 0x%" PRIx64 ", activity count %u priority %d state %d %s\\n"``: the GUID
without leading zeros (a real capture prints ``0x2c903000d81f9``), the state name from
``SMINFO_NOTACT/DISCOVER/STANDBY/MASTER`` or ``???`` for a state above 3. ``sminfo -s/-p/-a`` with a
modifier sets the SM's SMInfo and prints the same line.

saquery (rdma-core infiniband-diags/saquery.c @9914953352476a60cf85d0f2e389996529579018):

- ``saquery SMIR`` (SMInfoRecord, dump_sm_info_record()): one block per SM of the subnet, every SM the SA
  knows, master and standbys::

      SMInfoRecord dump:
      \\t\\tRID
      \\t\\tLID...................%u
      \\t\\tSMInfo dump:
      \\t\\tGUID..................0x%016" PRIx64
      \\t\\tSM_Key................0x%016" PRIx64
      \\t\\tActCount..............%u
      \\t\\tPriority..............%u
      \\t\\tSMState...............%u

  The SM_Key is never returned (a secret; the m_key/sm_key of a site come from a vault).
- ``saquery -s`` (print_issm_records()): not SMInfoRecords but the PortInfoRecords of the ports whose
  CapabilityMask has IsSM (an SM runs there), then those with IsSMdisabled::

      IsSM ports
      PortInfoRecord dump:
      \\t\\tEndPortLid..............%u
      \\t\\tPortNum.................%u
      \\t\\tbase_lid................%u
      \\t\\tmaster_sm_base_lid......%u
      \\t\\tcapability_mask.........0x%X

      IsSMdisabled ports
      ...

  It carries no GUID or priority: it says on which LIDs an SM runs (one with no SMInfoRecord is an SM the
  master does not know about), and ``SMIR`` says which is which.

Tool errors (``ibwarn:``/``ibpanic:``/``iberror:`` lines, ``Query SA failed``, ``sa_report_err``'s
``ERROR: Query result returned``...) are returned in ``errors``. The other saquery queries (NodeRecord, PathRecord,
...) are refused with a ParseError naming the record.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError

# sminfo.c statestr[] and the SMInfo state codes of the IBA (0 not active, 1 discovering, 2 standby, 3 master)
SM_STATES = {0: 'NOTACTIVE', 1: 'DISCOVERING', 2: 'STANDBY', 3: 'MASTER'}

SMINFO_RE = re.compile(
    r'^sminfo:\s+sm lid (?P<lid>\d+) sm guid (?P<guid>0x[0-9a-fA-F]+), activity count (?P<act>\d+) '
    r'priority (?P<prio>-?\d+) state (?P<state>-?\d+) (?P<name>\S+)\s*$')
TOOL_ERROR_RE = re.compile(
    r'^\s*(?:(?:[\w./-]+:\s+)?(?:ibpanic|ibwarn|iberror|ibexit)\b|Query SA failed|ERROR: |Failed to |'
    r'sminfo: iberror|.*can\'t (?:resolve|open))', re.IGNORECASE)
FIELD_RE = re.compile(r'^\s*(?P<key>[A-Za-z_][\w ]*?)\.{2,}\s*(?P<value>\S.*?)?\s*$')
DUMP_RE = re.compile(r'^(?P<record>[A-Za-z0-9 ]+?) dump:\s*$')
# the other saquery records (saquery.c query_cmds[] and the dump_* functions' titles), refused by name
OTHER_RECORDS = ('NodeRecord', 'PathRecord', 'SA ClassPortInfo', 'MCMember Record', 'MCMemberRecord group', 'MCMemberRecord member',
                 'ServiceRecord', 'SwitchInfoRecord', 'InformInfoRecord', 'LinkRecord', 'SL2VLTableRecord', 'VLArbTableRecord',
                 'PKeyTableRecord', 'LFT Record', 'GUIDInfo Record', 'MFT Record')


def norm_guid(text):
    """``0x2c903000d81f9`` -> ``0x0002c903000d81f9`` (16 digits, lower case)."""
    return '0x%016x' % int(text, 16)


def _lines(text, tool):
    if not isinstance(text, str):
        raise ParseError('%s output must be text' % tool)
    return [raw.rstrip('\r') for raw in text.splitlines()]


def parse_sminfo(text):
    """``sminfo`` output -> ``{'sm': {lid, guid, activity_count, priority, state, state_name} or None, 'errors'}``.

    ``state_name`` is ``MASTER``/``STANDBY``/``DISCOVERING``/``NOTACTIVE`` (None for a state sminfo prints as
    ``???``). Raises ParseError when neither an sminfo line nor a tool error is found.
    """
    found, errors = None, []
    for number, line in enumerate(_lines(text, 'sminfo'), 1):
        if not line.strip():
            continue
        match = SMINFO_RE.match(line.strip())
        if match:
            if found is not None:
                raise ParseError('two sminfo lines: one read prints one', number, line)
            state = int(match.group('state'))
            found = {'lid': int(match.group('lid')), 'guid': norm_guid(match.group('guid')),
                     'activity_count': int(match.group('act')), 'priority': int(match.group('prio')),
                     'state': state, 'state_name': SM_STATES.get(state)}
        elif TOOL_ERROR_RE.match(line):
            errors.append(line.strip())
    if found is None and not errors:
        raise ParseError('not sminfo output: no "sminfo: sm lid ..." line')
    return {'sm': found, 'errors': errors}


def _blocks(lines):
    """(title, {field: value}, line number) per ``X dump:`` block; a ``RID``/``SMInfo dump:`` line stays in its block."""
    blocks, current, section = [], None, None
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if stripped in ('IsSM ports', 'IsSMdisabled ports'):
            section, current = stripped.split()[0], None
            continue
        match = DUMP_RE.match(stripped)
        if match and match.group('record') not in ('SMInfo', 'PortInfo'):
            current = (match.group('record'), {}, number, section)
            blocks.append(current)
            continue
        if current is None:
            continue
        field = FIELD_RE.match(line)
        if field and field.group('value') is not None:
            current[1][field.group('key').strip()] = field.group('value')
    return blocks


def _int(value, base=10):
    try:
        return int(value, base)
    except (TypeError, ValueError):
        return None


def _refuse_other(blocks):
    for title, fields, number, dummy in blocks:
        if title in OTHER_RECORDS:
            raise ParseError('saquery %s output is not supported (SMIR and -s only)' % title, number, '%s dump:' % title)


def parse_saquery_sminfo(text):
    """``saquery SMIR`` output -> ``{'sms': [{lid, guid, activity_count, priority, state, state_name}], 'errors'}``.

    An SA that answers with no record gives an empty list. Raises ParseError for another saquery record or for
    text with neither an SMInfoRecord nor a tool error.
    """
    lines = _lines(text, 'saquery')
    blocks = _blocks(lines)
    _refuse_other(blocks)
    sms = []
    for title, fields, number, dummy in blocks:
        if title != 'SMInfoRecord':
            continue
        guid, lid, state = fields.get('GUID'), _int(fields.get('LID')), _int(fields.get('SMState'))
        if guid is None or lid is None or state is None or not re.match(r'^0x[0-9a-fA-F]+$', guid):
            raise ParseError('SMInfoRecord without a LID, GUID or SMState', number, 'SMInfoRecord dump:')
        sms.append({'lid': lid, 'guid': norm_guid(guid), 'activity_count': _int(fields.get('ActCount')),
                    'priority': _int(fields.get('Priority')), 'state': state, 'state_name': SM_STATES.get(state)})
    errors = [line.strip() for line in lines if TOOL_ERROR_RE.match(line)]
    if not sms and not errors and not any(title == 'SMInfoRecord' for title, dummy, dummy2, dummy3 in blocks):
        if any(line.strip() in ('IsSM ports', 'IsSMdisabled ports') for line in lines):
            raise ParseError('saquery -s output (PortInfoRecords of SM ports) where saquery SMIR was expected')
        if any(title == 'PortInfoRecord' for title, dummy, dummy2, dummy3 in blocks):
            raise ParseError('saquery PortInfoRecord (PIR) output is not supported (SMIR and -s only)')
        if any(line.strip() for line in lines):
            raise ParseError('not saquery SMIR output: no "SMInfoRecord dump:" block')
    return {'sms': sms, 'errors': errors}


def parse_saquery_issm(text):
    """``saquery -s`` output -> ``{'ports': [{lid, port, base_lid, master_sm_base_lid, capability_mask,
    sm_disabled}], 'errors'}``: ``sm_disabled`` False under ``IsSM ports``, True under ``IsSMdisabled ports``.

    Raises ParseError for another saquery record, or text without the ``IsSM ports`` title and without a tool error.
    """
    lines = _lines(text, 'saquery')
    blocks = _blocks(lines)
    _refuse_other(blocks)
    if any(title == 'SMInfoRecord' for title, dummy, dummy2, dummy3 in blocks):
        raise ParseError('saquery SMIR output (SMInfoRecords) where saquery -s was expected')
    ports = []
    for title, fields, number, section in blocks:
        if title != 'PortInfoRecord':
            continue
        if section is None or 'Options' in fields:
            raise ParseError('a PortInfoRecord outside the IsSM lists (saquery PIR is not supported)', number, 'PortInfoRecord dump:')
        lid, capmask = _int(fields.get('EndPortLid')), _int(fields.get('capability_mask'), 16)
        if lid is None or capmask is None:
            raise ParseError('PortInfoRecord without EndPortLid or capability_mask', number, 'PortInfoRecord dump:')
        ports.append({'lid': lid, 'port': _int(fields.get('PortNum')), 'base_lid': _int(fields.get('base_lid')),
                      'master_sm_base_lid': _int(fields.get('master_sm_base_lid')), 'capability_mask': capmask,
                      'sm_disabled': section == 'IsSMdisabled'})
    errors = [line.strip() for line in lines if TOOL_ERROR_RE.match(line)]
    if not any(line.strip() == 'IsSM ports' for line in lines) and not errors:
        raise ParseError('not saquery -s output: no "IsSM ports" title')
    return {'ports': ports, 'errors': errors}
