# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/iblinkinfo.py (no real capture exists: own -handmade fixtures)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest
from hypothesis import given

from _fuzz import FUZZ_SETTINGS, texts_from, only_parse_error
from _paths import own_fixture, fixture_files, read_fixture

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.iblinkinfo import parse_iblinkinfo

NDR_LEAF = 'iblinkinfo/iblinkinfo-2.x-ndr-leaf-1x-could-be-handmade.txt'
HDR_CA = 'iblinkinfo/iblinkinfo-2.x-hdr-spine-ca-blocks-down-handmade.txt'
EDR_LINE = 'iblinkinfo/iblinkinfo-2.x-edr-line-mode-fdr10-hoq-crlf-handmade.txt'
IBWARN = 'iblinkinfo/iblinkinfo-2.x-ndr-leaf-ibwarn-discover-failed-handmade.txt'

# fixture, port lines, down, degraded, first (node_name, port), last (node_name, port)
COUNTS = [
    (NDR_LEAF, 16, 2, 2, ('MF0;lab-leaf-01:MQM9790/U1', 1), ('MF0;lab-leaf-01:MQM9790/U1', 16)),
    (HDR_CA, 8, 2, 2, ('Quantum Mellanox Technologies', 1), ('hpc-a03 HCA-1', 1)),
    (EDR_LINE, 4, 1, 1, ('SwitchIB Mellanox Technologies', 1), ('edr-node01 HCA-1', 1)),
    (IBWARN, 2, 0, 0, ('MF0;lab-leaf-02:MQM9790/U1', 1), ('MF0;lab-leaf-02:MQM9790/U1', 2)),
]


@pytest.mark.parametrize('path,count,down,degraded,first,last', COUNTS, ids=[c[0].split('/')[1] for c in COUNTS])
def test_fixture_counts(path, count, down, degraded, first, last):
    links = parse_iblinkinfo(own_fixture(path))['links']
    assert len(links) == count
    assert sum(1 for link in links if link['state'] == 'Down') == down
    assert sum(1 for link in links if link['degraded']) == degraded
    assert (links[0]['node_name'], links[0]['port']) == first
    assert (links[-1]['node_name'], links[-1]['port']) == last


def test_ndr_leaf_active_port():
    links = parse_iblinkinfo(own_fixture(NDR_LEAF))['links']
    assert links[0] == {
        'node_type': 'Switch', 'node_guid': '0xfc6a1c0300e0a100', 'node_name': 'MF0;lab-leaf-01:MQM9790/U1',
        'node_lid': 7, 'port': 1, 'port_guid': None, 'width': '4X', 'lane_speed_gbps': 106.25,
        'speed_text': '106.25 Gbps', 'state': 'Active', 'physical_state': 'LinkUp', 'hoq_life': None,
        'vl_stall_count': None, 'peer_guid': None, 'peer_lid': 101, 'peer_port': 1,
        'peer_name': 'gpu-node-01 mlx5_0', 'could_be': None, 'port_not_available': False, 'degraded': False}


@pytest.mark.parametrize('port,width,speed,state,phys,peer,could_be,degraded', [
    (3, '1X', 106.25, 'Active', 'LinkUp', (103, 1, 'gpu-node-02 mlx5_0'), 'Could be 4X', True),
    (6, '4X', 53.125, 'Active', 'LinkUp', (106, 1, 'gpu-node-03 mlx5_1'), 'Could be 106.25 Gbps', True),
    (12, '4X', 106.25, 'Active', 'LinkUp', (4, 4, 'MF0;lab-spine-04:MQM9790/U1'), None, False),
    (13, None, None, 'Down', 'Polling', (None, None, None), None, False),
    (14, None, None, 'Down', 'Disabled', (None, None, None), None, False),
    (15, '4X', 106.25, 'Initialize', 'LinkUp', (131, 1, 'gpu-node-09 mlx5_0'), None, False),
    (16, '4X', 106.25, 'Active', 'LinkUp', (None, None, None), None, False),
], ids=['1x-could-be-4x', 'hdr-could-be-ndr', 'uplink', 'down-polling', 'down-disabled', 'initialize', 'port-not-available'])
def test_ndr_leaf_ports(port, width, speed, state, phys, peer, could_be, degraded):
    links = {link['port']: link for link in parse_iblinkinfo(own_fixture(NDR_LEAF))['links']}
    link = links[port]
    assert (link['width'], link['lane_speed_gbps'], link['state'], link['physical_state']) == (width, speed, state, phys)
    assert (link['peer_lid'], link['peer_port'], link['peer_name']) == peer
    assert (link['could_be'], link['degraded']) == (could_be, degraded)
    assert link['port_not_available'] is (port == 16)


def test_ca_blocks_use_port_guid_and_keep_order():
    links = parse_iblinkinfo(own_fixture(HDR_CA))['links']
    assert [link['node_type'] for link in links] == ['Switch'] * 4 + ['CA'] * 4
    cas = links[4:]
    assert [(c['node_name'], c['node_guid'], c['node_lid'], c['port']) for c in cas] == [
        ('hpc-a01 HCA-1', '0xb8cef60300b0c001', 21, 1),
        ('hpc-a02 HCA-1', '0xb8cef60300b0c002', 22, 1),
        ('hpc-a02 HCA-1', '0xb8cef60300b0c003', 0, 2),
        ('hpc-a03 HCA-1', '0xb8cef60300b0c004', 23, 1)]
    assert cas[2]['state'] == 'Down' and cas[2]['physical_state'] == 'Disabled' and cas[2]['peer_name'] is None
    assert cas[3]['width'] == '2X' and cas[3]['degraded'] and cas[3]['could_be'] == 'Could be 4X'
    assert all(link['lane_speed_gbps'] == 53.125 for link in links if link['state'] == 'Active')


def test_line_mode_fdr10_and_hoq():
    links = parse_iblinkinfo(own_fixture(EDR_LINE))['links']
    assert all(link['node_type'] is None for link in links)
    assert links[0]['lane_speed_gbps'] == 25.78125 and links[0]['peer_guid'] == '0x248a0703009a0011'
    fdr10 = links[1]
    assert (fdr10['lane_speed_gbps'], fdr10['speed_text'], fdr10['hoq_life'], fdr10['vl_stall_count']) == (
        10.0, '10.0 Gbps (FDR10)', 19, 7)
    assert fdr10['could_be'] == 'Could be 25.78125 Gbps' and fdr10['degraded']
    assert links[3]['node_name'] == 'edr-node01 HCA-1' and links[3]['peer_name'] == 'SwitchIB Mellanox Technologies'


def test_ibwarn_and_discover_failed_are_errors():
    result = parse_iblinkinfo(own_fixture(IBWARN))
    assert [link['peer_name'] for link in result['links']] == ['gpu-node-11 mlx5_0', 'gpu-node-11 mlx5_1']
    assert len(result['errors']) == 3
    assert result['errors'][0].startswith('ibwarn: [48213] mad_rpc:')
    assert result['errors'][-1] == 'discover failed'


def test_tabs_and_no_trailing_newline():
    text = own_fixture(NDR_LEAF)
    mangled = text.replace('      ', '\t').rstrip('\n')
    assert parse_iblinkinfo(mangled)['links'] == parse_iblinkinfo(text)['links']


@pytest.mark.parametrize('text', ['', '\n\n', 'no links here\n', 'CA \'mlx5_0\'\n\tCA type: MT4129\n', 'Port 1: ==> x'],
                         ids=['empty', 'blank', 'prose', 'ibstat', 'arrow-only'])
def test_not_iblinkinfo_raises_parse_error(text):
    with pytest.raises(ParseError):
        parse_iblinkinfo(text)


@FUZZ_SETTINGS
@given(texts_from([read_fixture(k, p) for k, p in fixture_files('iblinkinfo')]))
def test_parse_iblinkinfo_never_raises_anything_but_parse_error(text):
    result = only_parse_error(parse_iblinkinfo, text)
    if result is not None:
        json.dumps(result)
