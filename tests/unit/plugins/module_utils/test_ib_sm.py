# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""sminfo (real captures) and saquery SMIR / -s (no capture exists: handmade from rdma-core
infiniband-diags/saquery.c @9914953352476a60cf85d0f2e389996529579018, dump_sm_info_record() and print_issm_records())."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest
from hypothesis import given

from _fuzz import FUZZ_SETTINGS, texts_from, only_parse_error
from _paths import fixture_files, own_fixture, read_fixture, real_fixture

from ansible_collections.aicluster.infra.plugins.module_utils import ib_sm
from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError

SMINFO = [
    ('sminfo/zh-notes-connectx2-qdr-master-prio14-short-guid.txt', (4, '0x0002c903000d81f9', 1329328, 14, 3, 'MASTER')),
    ('sminfo/zh-notes-hca-sm-lid37-master-prio14.txt', (37, '0x7cfe90030016aef1', 4484381, 14, 3, 'MASTER')),
]
SMIR = 'saquery/saquery-SMIR-rdma-core-master-standby-handmade.txt'
SMIR_ROGUE = 'saquery/saquery-SMIR-rdma-core-two-masters-rogue-handmade.txt'
ISSM = 'saquery/saquery-s-rdma-core-two-sm-ports-one-disabled-handmade.txt'


def test_every_sminfo_capture_is_listed():
    assert sorted(path for kind, path in fixture_files('sminfo') if kind == 'real') == sorted(path for path, dummy in SMINFO)


@pytest.mark.parametrize('path,expected', SMINFO, ids=[path.split('/')[1] for path, dummy in SMINFO])
def test_sminfo_real(path, expected):
    parsed = ib_sm.parse_sminfo(real_fixture(path))
    sm = parsed['sm']
    assert (sm['lid'], sm['guid'], sm['activity_count'], sm['priority'], sm['state'], sm['state_name']) == expected
    assert parsed['errors'] == []


@pytest.mark.parametrize('line,state,name', [
    ('sminfo: sm lid 1 sm guid 0xb8cef60300a1d94e, activity count 80977 priority 14 state 2 SMINFO_STANDBY', 2, 'STANDBY'),
    ('sminfo: sm lid 9 sm guid 0x1, activity count 0 priority 0 state 7 ???', 7, None),
], ids=['standby', 'unknown-state'])
def test_sminfo_states(line, state, name):
    sm = ib_sm.parse_sminfo(line + '\n')['sm']
    assert (sm['state'], sm['state_name']) == (state, name)


def test_sminfo_tool_error_only():
    parsed = ib_sm.parse_sminfo('ibwarn: [3141] mad_rpc_open_port: can\'t open UMAD port ((null):0)\n'
                                'sminfo: iberror: failed: Failed to open \'(null)\' port \'0\'\n')
    assert parsed['sm'] is None and len(parsed['errors']) == 2


@pytest.mark.parametrize('text', ['', 'sm lid 4\n', 'SMInfoRecord dump:\n'], ids=['empty', 'prose', 'saquery'])
def test_not_sminfo(text):
    with pytest.raises(ParseError):
        ib_sm.parse_sminfo(text)


def test_saquery_smir_master_and_standby():
    sms = ib_sm.parse_saquery_sminfo(own_fixture(SMIR))['sms']
    assert sms == [
        {'lid': 1, 'guid': '0xb8cef60300a1d92a', 'activity_count': 81234, 'priority': 15, 'state': 3, 'state_name': 'MASTER'},
        {'lid': 2, 'guid': '0xb8cef60300a1d94e', 'activity_count': 80977, 'priority': 14, 'state': 2, 'state_name': 'STANDBY'}]
    assert 'SM_Key' not in json.dumps(sms) and 'sm_key' not in json.dumps(sms)


def test_saquery_smir_two_masters_and_a_discovering_sm():
    sms = ib_sm.parse_saquery_sminfo(own_fixture(SMIR_ROGUE))['sms']
    assert [(sm['lid'], sm['priority'], sm['state_name']) for sm in sms] == [(1, 15, 'MASTER'), (2, 15, 'MASTER'), (37, 0, 'DISCOVERING')]


def test_saquery_issm():
    ports = ib_sm.parse_saquery_issm(own_fixture(ISSM))['ports']
    assert [(p['lid'], p['port'], p['master_sm_base_lid'], p['sm_disabled']) for p in ports] == [
        (1, 1, 1, False), (2, 1, 1, False), (37, 1, 1, True)]
    assert ports[0]['capability_mask'] & 0x2 and ports[2]['capability_mask'] & 0x400   # IsSM, IsSMdisabled


def test_saquery_modes_are_not_mixed_up():
    with pytest.raises(ParseError, match='saquery -s output'):
        ib_sm.parse_saquery_sminfo(own_fixture(ISSM))
    with pytest.raises(ParseError, match='SMIR output'):
        ib_sm.parse_saquery_issm(own_fixture(SMIR))


@pytest.mark.parametrize('text,what', [
    ('NodeRecord dump:\n\t\tlid.....................1\n', 'NodeRecord'),
    ('PathRecord dump:\n\t\tservice_id..............0x0000000000000000\n', 'PathRecord'),
    ('PortInfoRecord dump:\n\tRID\n\t\tEndPortLid..............1\n\t\tPortNum.................1\n\t\tOptions.................0x0\n', 'PortInfoRecord'),
], ids=['node-record', 'path-record', 'portinfo-record'])
def test_other_saquery_records_are_refused(text, what):
    for parser in (ib_sm.parse_saquery_sminfo, ib_sm.parse_saquery_issm):
        with pytest.raises(ParseError, match=what):
            parser(text)


def test_saquery_sa_failure_is_an_error():
    parsed = ib_sm.parse_saquery_sminfo('Query SA failed: Connection timed out\n')
    assert parsed == {'sms': [], 'errors': ['Query SA failed: Connection timed out']}


@FUZZ_SETTINGS
@given(texts_from([read_fixture(k, p) for k, p in fixture_files('sminfo') + fixture_files('saquery')]))
def test_parsers_never_raise_anything_but_parse_error(text):
    for parser in (ib_sm.parse_sminfo, ib_sm.parse_saquery_sminfo, ib_sm.parse_saquery_issm):
        result = only_parse_error(parser, text)
        if result is not None:
            json.dumps(result)
