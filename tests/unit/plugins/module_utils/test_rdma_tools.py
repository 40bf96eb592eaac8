# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/rdma_tools.py (show_gids, ibdev2netdev; own -handmade fixtures)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest
from hypothesis import given

from _fuzz import FUZZ_SETTINGS, texts_from, only_parse_error
from _paths import own_fixture, fixture_files, read_fixture

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.rdma_tools import parse_show_gids, parse_ibdev2netdev

ROCE_GIDS = 'show_gids/show_gids-mlnx-tools-h100-roce-v1-v2-ipv4-vlan-handmade.txt'
IB_GIDS = 'show_gids/show_gids-mlnx-tools-ndr-ib-no-netdev-no-eol-handmade.txt'
PLAIN = 'ibdev2netdev/ibdev2netdev-mlnx-tools-h100-ndr-ib-roce-mixed-handmade.txt'
VERBOSE = 'ibdev2netdev/ibdev2netdev-mlnx-tools-v-cx7-cx6dx-vf-mlx4-handmade.txt'
OLD = 'ibdev2netdev/ibdev2netdev-ofed-1.5-old-style-mlx4-crlf-handmade.txt'


def test_show_gids_roce_rows():
    gids = parse_show_gids(own_fixture(ROCE_GIDS))
    assert len(gids) == 10
    assert gids[0] == {'dev': 'mlx5_0', 'port': 1, 'index': 0, 'gid': 'fe80:0000:0000:0000:a288:c2ff:fead:eab8',
                       'ipv4': '', 'version': 'v1', 'netdev': 'ens1np0'}
    assert gids[3] == {'dev': 'mlx5_0', 'port': 1, 'index': 3, 'gid': '0000:0000:0000:0000:0000:ffff:0a0a:0115',
                       'ipv4': '10.10.1.21', 'version': 'v2', 'netdev': 'ens1np0'}
    assert gids[-1] == {'dev': 'mlx5_3', 'port': 1, 'index': 5, 'gid': '0000:0000:0000:0000:0000:ffff:c0a8:6415',
                        'ipv4': '192.168.100.21', 'version': 'v2', 'netdev': 'ens2np0.100'}
    roce_v2_ipv4 = [(g['dev'], g['index']) for g in gids if g['version'] == 'v2' and g['ipv4']]
    assert roce_v2_ipv4 == [('mlx5_0', 3), ('mlx5_3', 3), ('mlx5_3', 5)]


def test_show_gids_infiniband_has_no_netdev_and_no_trailing_newline():
    gids = parse_show_gids(own_fixture(IB_GIDS))
    assert [g['dev'] for g in gids] == ['mlx5_0', 'mlx5_1', 'mlx5_4', 'mlx5_5']
    assert {(g['version'], g['netdev'], g['ipv4']) for g in gids} == {('v1', '', '')}
    assert gids[2]['gid'] == 'fe80:0000:0000:0000:58a2:e103:00a7:824e'


def test_show_gids_with_no_gid_is_an_empty_list():
    text = 'DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\n---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---\nn_gids_found=0\n'
    assert parse_show_gids(text) == []


def test_show_gids_spaces_instead_of_tabs_and_crlf():
    text = own_fixture(ROCE_GIDS)
    assert parse_show_gids(text.replace('\t', '    ').replace('\n', '\r\n')) == parse_show_gids(text)


def test_ibdev2netdev_plain():
    entries = parse_ibdev2netdev(own_fixture(PLAIN))
    assert len(entries) == 12
    assert entries[0] == {'dev': 'mlx5_0', 'port': 1, 'netdev': 'ibp12s0', 'state': 'Up', 'pci': None, 'device_id': None,
                          'part_id': None, 'description': None, 'firmware_version': None, 'port_state': None}
    assert entries[-1]['dev'] == 'mlx5_9' and entries[-1]['netdev'] == 'ibp154s0'
    assert [e['dev'] for e in entries if e['state'] == 'Down'] == ['mlx5_2', 'mlx5_7', 'mlx5_8']


@pytest.mark.parametrize('index,expected', [
    (0, dict(pci='0000:0c:00.0', dev='mlx5_0', device_id='MT4129', part_id='MCX75310AAS-NEAT', firmware_version='28.39.1002',
             port=1, port_state='ACTIVE', netdev='ibp12s0', state='Up')),
    (2, dict(pci='0000:1f:00.1', dev='mlx5_2', device_id='MT4125', part_id='MCX623106AN-CDAT', firmware_version='22.38.1002',
             port_state='DOWN', netdev='ens9f1np1', state='Down')),
    (3, dict(pci='0000:1f:00.2', dev='mlx5_12', device_id='MT4126', part_id='NA', description=None, netdev='ens9f0v0')),
    (4, dict(pci=None, dev='mlx4_0', device_id='MT26428', firmware_version='2.9.1000', netdev='ib0', state='Up')),
], ids=['cx7-ib', 'cx6dx-down', 'vf-no-description', 'mlx4-no-pci'])
def test_ibdev2netdev_verbose(index, expected):
    entry = parse_ibdev2netdev(own_fixture(VERBOSE))[index]
    assert {key: entry[key] for key in expected} == expected


def test_ibdev2netdev_verbose_description_keeps_parentheses():
    entry = parse_ibdev2netdev(own_fixture(VERBOSE))[0]
    assert entry['description'].startswith('NVIDIA ConnectX-7 HHHL Adapter card, 400GbE / NDR IB (default mode)')
    assert entry['description'].endswith('Secure Boot Enabled')


def test_ibdev2netdev_old_style_has_no_state():
    entries = parse_ibdev2netdev(own_fixture(OLD))
    assert [(e['dev'], e['port'], e['netdev'], e['state']) for e in entries] == [
        ('mlx4_0', 1, 'ib0', None), ('mlx4_0', 2, 'ib1', None)]


@pytest.mark.parametrize('parser,text', [
    (parse_show_gids, ''), (parse_show_gids, 'mlx5_0 port 1 ==> ib0 (Up)\n'), (parse_show_gids, 'DEV PORT\n'),
    (parse_ibdev2netdev, ''), (parse_ibdev2netdev, 'mlx5_0\t1\t0\tfe80:0000:0000:0000:0000:0000:0000:0001\n'),
    (parse_ibdev2netdev, 'usage: ibdev2netdev <options>\n'),
], ids=['gids-empty', 'gids-given-ibdev2netdev', 'gids-half-header', 'netdev-empty', 'netdev-given-gids', 'netdev-usage'])
def test_wrong_tool_raises_parse_error(parser, text):
    with pytest.raises(ParseError):
        parser(text)


@FUZZ_SETTINGS
@given(texts_from([read_fixture(k, p) for k, p in fixture_files('show_gids')]))
def test_parse_show_gids_never_raises_anything_but_parse_error(text):
    result = only_parse_error(parse_show_gids, text)
    if result is not None:
        json.dumps(result)


@FUZZ_SETTINGS
@given(texts_from([read_fixture(k, p) for k, p in fixture_files('ibdev2netdev')]))
def test_parse_ibdev2netdev_never_raises_anything_but_parse_error(text):
    result = only_parse_error(parse_ibdev2netdev, text)
    if result is not None:
        json.dumps(result)
