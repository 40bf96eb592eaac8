# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Link-quality parsers: perfquery, mlxlink -c, ethtool -S, rdma statistic / link."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from _paths import REAL_FIXTURES, own_fixture, real_fixture

from ansible_collections.aicluster.infra.plugins.module_utils import ib_counters
from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError


def test_perfquery_extended_with_additional_error_counters():
    parsed = ib_counters.parse_perfquery(own_fixture('perfquery/perfquery-x-rdma-core-50-cx7-ndr-addl-counters-handmade.txt'))
    assert parsed['extended'] is True and parsed['has_errors'] is True
    assert (parsed['lid'], parsed['port'], parsed['capmask'], parsed['capmask2']) == (204, 1, '0x5A00', '0x0000002')
    counters = parsed['counters']
    assert counters['SymbolErrorCounter'] == 7 and counters['LinkDownedCounter'] == 1 and counters['PortXmitDiscards'] == 2
    assert counters['PortXmitData'] == 38000443084 and counters['PortXmitWait'] == 48213
    assert 'CounterSelect' in counters and counters['CounterSelect'] == 0   # 0x0000 read as a number


def test_perfquery_extended_without_error_counters():
    parsed = ib_counters.parse_perfquery(own_fixture('perfquery/perfquery-x-rdma-core-44-cx6-hdr-data-only-handmade.txt'))
    assert parsed['extended'] is True and parsed['has_errors'] is False
    assert 'SymbolErrorCounter' not in parsed['counters'] and parsed['counters']['PortRcvData'] == 37999812200


def test_perfquery_basic_counters_saturate():
    parsed = ib_counters.parse_perfquery(own_fixture('perfquery/perfquery-rdma-core-44-cx6-hdr-basic-saturated-handmade.txt'))
    assert parsed['extended'] is False and parsed['has_errors'] is True and parsed['capmask2'] is None
    assert parsed['counters']['SymbolErrorCounter'] == 65535 and parsed['counters']['LinkErrorRecoveryCounter'] == 255


@pytest.mark.parametrize('text', ['', 'ibwarn: [123] mad_rpc_open_port: can\'t open UMAD port\n', 'SymbolErrorCounter:....0\n'],
                         ids=['empty', 'ibwarn-only', 'no-header'])
def test_perfquery_not_perfquery(text):
    with pytest.raises(ParseError):
        ib_counters.parse_perfquery(text)


def test_mlxlink_ib_marginal_link():
    parsed = ib_counters.parse_mlxlink(own_fixture('mlxlink/mlxlink-c-mft-4.26-cx7-ndr-ib-marginal-handmade.txt'))
    assert parsed['sections']['Operational Info']['Speed'] == 'IB-NDR'
    assert parsed['sections']['Operational Info']['Width'] == '4x'
    ber = parsed['ber']
    assert ber['effective_ber'] == pytest.approx(5e-12) and ber['raw_ber'] == pytest.approx(3e-8)
    assert ber['symbol_ber'] == pytest.approx(5e-12)
    assert (ber['effective_errors'], ber['symbol_errors'], ber['link_down'], ber['link_error_recovery']) == (212, 212, 1, 4)


def test_mlxlink_ethernet_healthy_has_no_symbol_lines():
    parsed = ib_counters.parse_mlxlink(own_fixture('mlxlink/mlxlink-c-mft-4.26-cx7-400g-eth-healthy-handmade.txt'))
    assert parsed['ber']['effective_ber'] == pytest.approx(1.5e-254)   # 15E-255: nothing counted
    assert 'symbol_ber' not in parsed['ber'] and 'link_down' not in parsed['ber']
    assert parsed['sections']['Operational Info']['Physical state'] == 'ETH_AN_FSM_ENABLE'


@pytest.mark.parametrize('text, value', [('15E-255', 1.5e-254), ('3E-11', 3e-11), ('1e-12', 1e-12), ('N/A', None), ('', None)])
def test_parse_ber(text, value):
    assert ib_counters.parse_ber(text) == (pytest.approx(value) if value is not None else None)


def test_mlxlink_not_mlxlink():
    with pytest.raises(ParseError):
        ib_counters.parse_mlxlink('-E- Failed to open device: "mlx5_9", No such file or directory\n')


def test_ethtool_stats():
    stats = ib_counters.parse_ethtool_stats(own_fixture('ethtool/ethtool-S-mlx5-cx7-400g-roce-prio3-handmade.txt'))
    assert stats['rx_prio3_discards'] == 14 and stats['rx_prio3_pause'] == 2231 and stats['link_down_events_phy'] == 1
    with pytest.raises(ParseError):
        ib_counters.parse_ethtool_stats('Cannot get stats strings information: Operation not supported\n')


def test_rdma_statistic_and_link():
    stats = ib_counters.parse_rdma_statistic(own_fixture('rdma/rdma-statistic-iproute2-6.1-cx7-roce-handmade.txt'))
    assert list(stats) == ['mlx5_0/1']
    assert stats['mlx5_0/1']['out_of_sequence'] == 12 and stats['mlx5_0/1']['np_cnp_sent'] == 377
    links = ib_counters.parse_rdma_link(own_fixture('rdma/rdma-link-iproute2-6.1-cx7-roce-ib-mixed-handmade.txt'))
    assert links['mlx5_0/1'] == {'state': 'ACTIVE', 'physical_state': 'LINK_UP', 'netdev': 'enp24s0np0'}
    assert links['mlx5_2/1']['netdev'] is None
    with pytest.raises(ParseError):
        ib_counters.parse_rdma_statistic('Wrong device name\n')


@pytest.mark.parametrize('relpath', ['perfquery', 'mlxlink'])
def test_real_captures_parse_when_present(relpath):
    """Real captures, when ../shared/fixtures/real/<tool> has any (none yet): every one parses."""
    directory = os.path.join(REAL_FIXTURES, relpath)
    if not os.path.isdir(directory):
        pytest.skip('no real %s captures in %s' % (relpath, directory))
    parser = ib_counters.parse_perfquery if relpath == 'perfquery' else ib_counters.parse_mlxlink
    for name in sorted(os.listdir(directory)):
        assert parser(real_fixture(os.path.join(relpath, name)))
