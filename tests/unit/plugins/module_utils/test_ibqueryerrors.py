# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ibqueryerrors on every real capture, and handmade layouts from rdma-core infiniband-diags/ibqueryerrors.c
@0c6807aa5847be3f17a935fd941f3db0d03aa7df (64-bit counters, --details, -r Link info, --counters refused)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest
from hypothesis import given

from _fuzz import FUZZ_SETTINGS, texts_from, only_parse_error
from _paths import fixture_files, own_fixture, read_fixture, real_fixture

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.ibqueryerrors import parse_ibqueryerrors

SX6036 = 'ibqueryerrors/linux-rdma-ml-sx6036-mlx4-saturated-xmitwait.txt'
CLEAN = 'ibqueryerrors/guilbaults-issue48-clean-node-G-summary-only.txt'
LEAF_SPINE = 'ibqueryerrors/ibqueryerrors-rdma-core-50-ndr-r-details-64bit-leaf-spine-handmade.txt'
COUNTERS_ONLY = 'ibqueryerrors/ibqueryerrors-rdma-core-50-counters-only-handmade.txt'
SWITCH = '0x0002c903006e29b0'


def test_every_ibqueryerrors_capture_is_read():
    assert sorted(path for kind, path in fixture_files('ibqueryerrors') if kind == 'real') == sorted([CLEAN, SX6036])


def test_real_sx6036_fabric():
    parsed = parse_ibqueryerrors(real_fixture(SX6036))
    assert [(n['type'], n['guid'], n['name']) for n in parsed['nodes']] == [
        ('ca', None, 'dl380g7 mlx4_0'), ('ca', None, 'server mlx4_0'), ('switch', SWITCH, 'MF0;ys23ib4:SX6036/U1'),
        ('ca', None, 'rd240 mlx4_0')]
    ports = parsed['ports']
    assert len(ports) == 15
    assert sum(1 for p in ports if p['port'] != 'ALL') == 14   # the summary's "14 ports have errors beyond threshold"
    switch = dict((p['port'], p) for p in ports if p['node_type'] == 'switch')
    assert sorted(switch, key=str) == [0, 1, 2, 3, 4, 5, 6, 7, 8, 'ALL']
    assert all(p['guid'] == SWITCH and p['node_guid'] == SWITCH for p in switch.values())
    assert switch['ALL']['counters'] == {'LinkErrorRecoveryCounter': 15, 'LinkDownedCounter': 48, 'PortRcvSwitchRelayErrors': 2461,
                                         'PortXmitDiscards': 15854, 'VL15Dropped': 5, 'PortXmitWait': 4294967295}
    assert switch[5]['counters']['SymbolErrorCounter'] == 65535 and switch[5]['counters']['PortXmitDiscards'] == 649
    assert switch[0]['counters'] == {'PortXmitWait': 76959324}
    ca = ports[0]
    assert (ca['node_type'], ca['node_guid'], ca['guid'], ca['port']) == ('ca', None, '0x7cfe900300179b31', 1)
    assert ca['counters'] == {'VL15Dropped': 14, 'PortXmitWait': 4294967295} and ca['link'] is None
    assert ports[-1]['guid'] == '0xe41d2d0300e0bae2' and ports[-1]['counters'] == {'PortXmitWait': 1}
    assert parsed['summary'] == {'nodes_checked': 4, 'bad_nodes': 4, 'ports_checked': 43, 'bad_ports': 14,
                                 'pma_query_failures': 0, 'thresholds': {}, 'suppressed': []}
    assert parsed['errors'] == []


def test_real_clean_node_summary_only():
    parsed = parse_ibqueryerrors(real_fixture(CLEAN))
    assert parsed['nodes'] == [] and parsed['ports'] == []
    summary = parsed['summary']
    assert (summary['nodes_checked'], summary['bad_nodes'], summary['ports_checked'], summary['bad_ports']) == (1, 0, 1, 0)
    assert len(summary['thresholds']) == 13 and set(summary['thresholds'].values()) == {0}
    assert summary['thresholds']['PortXmitWait'] == 0


def test_handmade_64bit_details_and_link_info():
    parsed = parse_ibqueryerrors(own_fixture(LEAF_SPINE))
    ports = dict(((p['node_name'], p['port']), p) for p in parsed['ports'])
    uplink = ports[('MF0;leaf-rail0:MQM9790/U1', 33)]
    assert uplink['counters'] == {'SymbolErrorCounter': 1250, 'LinkErrorRecoveryCounter': 1}   # "(1.250K)" read as 1250
    assert uplink['link'] == {'lid': 7, 'port': 33, 'width': '4X', 'speed': '106.25 Gbps', 'state': 'Active',
                              'physical_state': 'LinkUp', 'peer_guid': '0xfc6a1c0300e0b200', 'peer_lid': 3, 'peer_port': 1,
                              'peer_name': 'MF0;spine-01:MQM9790/U1'}
    assert ports[('MF0;leaf-rail0:MQM9790/U1', 5)]['counters']['PortInactiveDiscards'] == 3   # --details
    assert ports[('MF0;spine-01:MQM9790/U1', 1)]['counters']['PortLocalPhysicalErrors'] == 17
    host = ports[('gpu02 mlx5_0', 1)]
    assert host['guid'] == '0x946dae0300cde72c' and host['link']['peer_port'] == 5
    assert parsed['summary']['pma_query_failures'] == 1 and parsed['summary']['thresholds'] == {}
    assert parsed['errors'] == ['ibwarn: [41817] query_and_dump: PortXmitDiscardDetails query failed on '
                                'MF0;leaf-rail1:MQM9790/U1, Lid 8 port 2']


def test_counters_only_mode_is_refused():
    with pytest.raises(ParseError, match='--counters'):
        parse_ibqueryerrors(own_fixture(COUNTERS_ONLY))


def test_down_peer_and_fdr10_link_info():
    text = ('Errors for 0xfc6a1c0300e0a100 "leaf"\n'
            '   GUID 0xfc6a1c0300e0a100 port 2: [LinkDownedCounter == 1]\n'
            '       Link info:      7   2[  ] ==(              Down/ Polling)==>             [  ] "" ( )\n'
            '   GUID 0xfc6a1c0300e0a100 port 3: [SymbolErrorCounter == 9]\n'
            '       Link info:      7   3[  ] ==( 4X  10.0 Gbps (FDR10) Active/  LinkUp)==>  0x0002c903000d81f9     12    1[  ] "n1 HCA-1" ( )\n')
    ports = parse_ibqueryerrors(text)['ports']
    assert ports[0]['link']['state'] == 'Down' and ports[0]['link']['peer_guid'] is None
    assert ports[1]['link']['speed'] == '10.0 Gbps (FDR10)' and ports[1]['link']['peer_lid'] == 12


@pytest.mark.parametrize('text', ['', 'prose\n', '   GUID 0x1 port 1: [SymbolErrorCounter == 1]\n'],
                         ids=['empty', 'prose', 'port-before-header'])
def test_not_ibqueryerrors(text):
    with pytest.raises(ParseError):
        parse_ibqueryerrors(text)


def test_discover_failed_is_an_error():
    assert parse_ibqueryerrors('discover failed\n')['errors'] == ['discover failed']


@FUZZ_SETTINGS
@given(texts_from([read_fixture(k, p) for k, p in fixture_files('ibqueryerrors')]))
def test_parse_ibqueryerrors_never_raises_anything_but_parse_error(text):
    result = only_parse_error(parse_ibqueryerrors, text)
    if result is not None:
        json.dumps(result)
