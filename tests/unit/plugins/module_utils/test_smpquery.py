# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""smpquery pkeys / ND on every real capture; the other operations refused (rdma-core infiniband-diags/smpquery.c)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest
from hypothesis import given

from _fuzz import FUZZ_SETTINGS, texts_from, only_parse_error
from _paths import fixture_files, read_fixture, real_fixture

from ansible_collections.aicluster.infra.plugins.module_utils import smpquery
from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError

HCA = 'smpquery/ibsim-pkeys-hca-lid2-limited-default-full-8010-ibwarn-stderr.txt'
SWITCH = 'smpquery/ibsim-pkeys-switch-lid1-8cap-ibwarn-stderr.txt'
ND = 'smpquery/zh-notes-nd-L37-sm-host-hca1.txt'


def test_every_smpquery_capture_is_read():
    assert sorted(path for kind, path in fixture_files('smpquery') if kind == 'real') == sorted([HCA, SWITCH, ND])


def test_pkeys_hca_limited_default_and_full_partition():
    parsed = smpquery.parse_smpquery(real_fixture(HCA))
    assert parsed['operation'] == 'pkeys' and parsed['capacity'] == 64 and len(parsed['pkeys']) == 64
    assert parsed['pkeys'][:3] == [0x7fff, 0x8010, 0x0000]
    # 0x7fff: the default partition as a LIMITED member (no 0x8000 bit); 0x8010: partition 0x0010 as a FULL member
    assert parsed['members'] == [{'pkey': 0x7fff, 'full': False, 'index': 0}, {'pkey': 0x0010, 'full': True, 'index': 1}]
    assert parsed['errors'] == ['ibwarn: [14338] sim_connect: attached as client 1 at node "Sw1"']


def test_pkeys_switch_port_capacity_8():
    parsed = smpquery.parse_smpquery(real_fixture(SWITCH))
    assert parsed['capacity'] == 8 and parsed['pkeys'] == [0xffff] + [0] * 7
    assert parsed['members'] == [{'pkey': 0x7fff, 'full': True, 'index': 0}]


def test_node_description():
    assert smpquery.parse_smpquery(real_fixture(ND)) == {'operation': 'nodedesc', 'node_description': 'b1nstcx02 HCA-1', 'errors': []}


@pytest.mark.parametrize('text,operation', [
    ('# Node info: Lid 2\nBaseVers:........................1\n', 'NodeInfo'),
    ('# Port info: Lid 2 port 1\nMkey:............................0x0\n', 'PortInfo'),
    ('# Switch info: Lid 1\nLinearFdbCap:....................49152\n', 'SwitchInfo'),
    ('# SL2VL table: Lid 2\n#                 SL: | 0| 1|\n', 'SL2VL'),
    ('# VLArbitration tables: Lid 2 port 1 LowCap 8 HighCap 8\n', 'VLArbitration'),
    ('   0: 0x0002c90300a1d92a 0x0000000000000000\n1 guids capacity for this port\n', 'GUIDInfo'),
], ids=['ni', 'pi', 'si', 'sl2vl', 'vlarb', 'guidinfo'])
def test_other_operations_are_refused(text, operation):
    with pytest.raises(ParseError, match=operation):
        smpquery.parse_smpquery(text)


@pytest.mark.parametrize('text', ['', 'prose\n', '   0: 0xffff 0x0000\n', '   8: 0xffff\n8 pkeys capacity for this port\n'],
                         ids=['empty', 'prose', 'no-capacity', 'skipped-row'])
def test_not_pkeys(text):
    with pytest.raises(ParseError):
        smpquery.parse_smpquery(text)


def test_pkey_member():
    assert smpquery.pkey_member(0xffff) == {'pkey': 0x7fff, 'full': True}
    assert smpquery.pkey_member(0x7fff) == {'pkey': 0x7fff, 'full': False}
    assert smpquery.pkey_member(0x8000) is None and smpquery.pkey_member(0) is None


def test_sysfs_pkeys():
    parsed = smpquery.parse_sysfs_pkeys({'1': '0x8001\n', '0': '0xffff\n', '2': '0x0000\n'})
    assert parsed['pkeys'] == [0xffff, 0x8001, 0] and parsed['capacity'] == 3
    assert [(m['index'], m['pkey'], m['full']) for m in parsed['members']] == [(0, 0x7fff, True), (1, 0x0001, True)]
    with pytest.raises(ParseError):
        smpquery.parse_sysfs_pkeys(['ffff'])


@FUZZ_SETTINGS
@given(texts_from([read_fixture(k, p) for k, p in fixture_files('smpquery')]))
def test_parse_smpquery_never_raises_anything_but_parse_error(text):
    result = only_parse_error(smpquery.parse_smpquery, text)
    if result is not None:
        json.dumps(result)
