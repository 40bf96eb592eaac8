# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/ibstat.py on real captures and own fixtures."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest
from hypothesis import given

from _fuzz import FUZZ_SETTINGS, texts_from, only_parse_error
from _paths import real_fixture, own_fixture, fixture_files, read_fixture

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.ibstat import parse_ibstat

# (fixture, CA count, first CA, last CA, names of CAs whose port 1 is Down)
REAL_CASES = [
    ('ibstat/gpud-a100-mt4126-mixed-eth-ib-hdr.txt', 9,
     dict(name='mlx5_0', ca_type='MT4126', firmware_version='22.35.2302', node_guid='0x1e918efffe7a03a0',
          system_image_guid='0xb83fd20300b6eb16'),
     dict(name='mlx5_8', firmware_version='28.37.1014', node_guid='0x4c1037318e9cd20a'),
     []),
    ('ibstat/gpud-azure-ndv4-a100-hdr-ibpanic-mlx5_8.txt', 8,
     dict(name='mlx5_0', ca_type='MT4124', firmware_version='20.41.1000', node_guid='0x00155dfffe3411eb'),
     dict(name='mlx5_7', node_guid='0x00155dfffe3411f2', system_image_guid='0xb83fd203006e277c'),
     []),
    ('ibstat/gpud-h100-ib-ndr-cx7-eth-cx6dx-3down.txt', 12,
     dict(name='mlx5_0', ca_type='MT4129', firmware_version='28.39.1002', node_guid='0x946dae0300cde72c'),
     dict(name='mlx5_9', ca_type='MT4129', node_guid='0x946dae0300cde9c8'),
     ['mlx5_2', 'mlx5_7', 'mlx5_8']),
    ('ibstat/gpud-h100-ib-ndr-cx7-fw28.41-spaces.txt', 9,
     dict(name='mlx5_0', ca_type='MT4129', firmware_version='28.41.1000', node_guid='0x58a2e10300a7820e'),
     dict(name='mlx5_bond_0', ca_type='MT41692', firmware_version='32.38.3056', node_guid='0x58a2e10300760398'),
     []),
    ('ibstat/gpud-h100-roce400-cx7-2down-disabled.txt', 12,
     dict(name='mlx5_0', ca_type='MT4129', node_guid='0xa088c20300adeab8'),
     dict(name='mlx5_9', ca_type='MT4129', node_guid='0xa088c20300adeb60'),
     ['mlx5_11', 'mlx5_5']),
    ('ibstat/gpud-h100-roce400-cx7-all-active.txt', 12,
     dict(name='mlx5_0', ca_type='MT4129', node_guid='0xa088c20300e3142a'),
     dict(name='mlx5_9', node_guid='0xa088c20300e313f2'),
     []),
    ('ibstat/kaust-ibex-cx6-hdr100-rate100.txt', 1,
     dict(name='mlx5_0', ca_type='MT4123', number_of_ports=1, firmware_version='20.35.1012', hardware_version='0',
          node_guid='0xb8599f030022626e', system_image_guid='0xb8599f030022626e'),
     dict(name='mlx5_0'),
     []),
]


def _subset(actual, expected):
    return {key: actual.get(key) for key in expected}


@pytest.mark.parametrize('path,count,first,last,down', REAL_CASES, ids=[case[0].split('/')[1] for case in REAL_CASES])
def test_real_captures(path, count, first, last, down):
    result = parse_ibstat(real_fixture(path))
    cas = result['cas']
    assert len(cas) == count
    assert _subset(cas[0], first) == first
    assert _subset(cas[-1], last) == last
    assert sorted(ca['name'] for ca in cas if ca['ports'][0]['state'] == 'Down') == sorted(down)
    for ca in cas:
        assert ca['number_of_ports'] == 1 and len(ca['ports']) == 1
        port = ca['ports'][0]
        assert port['port'] == 1
        assert port['link_layer'] in ('InfiniBand', 'Ethernet')
        if port['state'] == 'Down':
            assert port['physical_state'] == 'Disabled'
        else:
            assert (port['state'], port['physical_state']) == ('Active', 'LinkUp')
    json.dumps(result)


def test_ndr_ib_ports_in_detail():
    cas = {ca['name']: ca for ca in parse_ibstat(real_fixture('ibstat/gpud-h100-ib-ndr-cx7-eth-cx6dx-3down.txt'))['cas']}
    assert list(cas)[:4] == ['mlx5_0', 'mlx5_1', 'mlx5_10', 'mlx5_11']
    assert cas['mlx5_0']['ports'][0] == {
        'port': 1, 'state': 'Active', 'physical_state': 'LinkUp', 'rate_gbps': 400.0, 'rate_note': None,
        'base_lid': 75, 'lmc': 0, 'sm_lid': 334, 'capability_mask': '0xa751e848',
        'port_guid': '0x946dae0300cde72c', 'link_layer': 'InfiniBand'}
    eth_down = cas['mlx5_2']['ports'][0]
    assert (eth_down['state'], eth_down['physical_state'], eth_down['rate_gbps'], eth_down['link_layer']) == (
        'Down', 'Disabled', 40.0, 'Ethernet')
    assert cas['mlx5_1']['ports'][0]['rate_gbps'] == 100.0
    ib_lids = sorted(ca['ports'][0]['base_lid'] for ca in cas.values() if ca['ports'][0]['link_layer'] == 'InfiniBand')
    assert ib_lids == [75, 143, 343, 454, 597, 771, 828, 944]


def test_roce_ports_have_lid_zero_and_zero_guid_on_cx6dx():
    cas = parse_ibstat(real_fixture('ibstat/gpud-h100-roce400-cx7-all-active.txt'))['cas']
    assert all(ca['ports'][0]['link_layer'] == 'Ethernet' for ca in cas)
    assert all(ca['ports'][0]['base_lid'] == 0 and ca['ports'][0]['sm_lid'] == 0 for ca in cas)
    by_type = {}
    for ca in cas:
        by_type.setdefault(ca['ca_type'], set()).add(ca['ports'][0]['rate_gbps'])
    assert by_type == {'MT4129': {400.0}, 'MT4125': {100.0}}
    assert cas[1]['ports'][0]['port_guid'] == '0x0000000000000000'


def test_ibpanic_keeps_cas_parsed_before_it():
    result = parse_ibstat(real_fixture('ibstat/gpud-azure-ndv4-a100-hdr-ibpanic-mlx5_8.txt'))
    assert [ca['name'] for ca in result['cas']] == ['mlx5_%d' % i for i in range(8)]
    assert result['errors'] == ["ibpanic: [1400444] main: stat of IB device 'mlx5_8' failed: No such file or directory"]
    assert [ca['ports'][0]['base_lid'] for ca in result['cas']] == [13247, 13246, 13259, 13276, 13301, 13300, 13302, 13305]
    assert {ca['ports'][0]['sm_lid'] for ca in result['cas']} == {1}


def test_hdr100_rate_and_lids():
    port = parse_ibstat(real_fixture('ibstat/kaust-ibex-cx6-hdr100-rate100.txt'))['cas'][0]['ports'][0]
    assert (port['rate_gbps'], port['base_lid'], port['sm_lid'], port['capability_mask']) == (100.0, 762, 8, '0xa651e848')


def test_own_two_port_fdr10_polling_initializing():
    cas = parse_ibstat(own_fixture('ibstat/ibstat-rdma-core-cx3-fdr10-2port-polling-init-handmade.txt'))['cas']
    assert [ca['name'] for ca in cas] == ['mlx4_0', 'mlx5_0']
    mlx4 = cas[0]
    assert mlx4['number_of_ports'] == 2
    assert [(p['port'], p['state'], p['physical_state'], p['rate_gbps']) for p in mlx4['ports']] == [
        (1, 'Active', 'LinkUp', 40.0), (2, 'Down', 'Polling', 10.0)]
    assert mlx4['ports'][0]['rate_note'] == 'FDR10'
    assert cas[1]['ports'][0]['state'] == 'Initializing'
    assert cas[1]['ports'][0]['rate_gbps'] == 2.5
    assert cas[1]['ports'][0]['base_lid'] == 65535


def test_own_single_port_query_layout():
    cas = parse_ibstat(own_fixture('ibstat/ibstat-rdma-core-ndr-single-port-arg-handmade.txt'))['cas']
    assert len(cas) == 1 and cas[0]['name'] == 'mlx5_3' and cas[0]['ca_type'] is None
    assert cas[0]['ports'][0]['base_lid'] == 211 and cas[0]['ports'][0]['rate_gbps'] == 400.0


def test_crlf_and_missing_trailing_newline():
    text = real_fixture('ibstat/kaust-ibex-cx6-hdr100-rate100.txt')
    crlf = text.rstrip('\n').replace('\n', '\r\n')
    assert parse_ibstat(crlf) == parse_ibstat(text)


@pytest.mark.parametrize('text', ['', '   \n\t\n', 'hello world\n', 'State: Active\nRate: 400\n', '{"cas": []}'],
                         ids=['empty', 'blank', 'prose', 'fields-without-ca', 'json'])
def test_not_ibstat_raises_parse_error(text):
    with pytest.raises(ParseError):
        parse_ibstat(text)


def test_ibpanic_alone_is_an_error_not_a_parse_error():
    result = parse_ibstat("ibpanic: [42] main: can't init UMAD library: No such file or directory\n")
    assert result['cas'] == [] and len(result['errors']) == 1


@FUZZ_SETTINGS
@given(texts_from([read_fixture(k, p) for k, p in fixture_files('ibstat')]))
def test_parse_ibstat_never_raises_anything_but_parse_error(text):
    result = only_parse_error(parse_ibstat, text)
    if result is not None:
        json.dumps(result)
