# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from _paths import own_fixture

from ansible_collections.aicluster.infra.plugins.modules import ib_counters_info

PERFQUERY_X = own_fixture('perfquery/perfquery-x-rdma-core-50-cx7-ndr-addl-counters-handmade.txt')
PERFQUERY_X_DATA = own_fixture('perfquery/perfquery-x-rdma-core-44-cx6-hdr-data-only-handmade.txt')
PERFQUERY_BASIC = own_fixture('perfquery/perfquery-rdma-core-44-cx6-hdr-basic-saturated-handmade.txt')
MLXLINK = own_fixture('mlxlink/mlxlink-c-mft-4.26-cx7-ndr-ib-marginal-handmade.txt')


def test_infiniband_port_with_ber(run_module):
    result, calls = run_module(ib_counters_info, {'hcas': ['mlx5_0']}, {
        'perfquery': (0, PERFQUERY_X, ''), 'mlxlink': (0, MLXLINK, '')})
    assert result['changed'] is False and 'failed' not in result
    assert calls == [['/usr/bin/perfquery', '-x', '-C', 'mlx5_0', '-P', '1'], ['/usr/bin/mlxlink', '-d', 'mlx5_0', '-p', '1', '-c']]
    port = result['ports'][0]
    assert (port['hca'], port['port'], port['lid'], port['link_layer']) == ('mlx5_0', 1, 204, 'InfiniBand')
    assert port['counters']['SymbolErrorCounter'] == 7 and port['ber']['effective_ber'] == 5e-12
    assert port['missing'] == [] and port['errors'] == [] and port['saturating'] is False


def test_extended_counters_without_errors_read_the_basic_ones_too(run_module):
    def perfquery(argv):
        return (0, PERFQUERY_X_DATA if '-x' in argv else PERFQUERY_BASIC, '')
    result, calls = run_module(ib_counters_info, {'hcas': ['mlx5_0'], 'ber': False}, {'perfquery': perfquery})
    assert calls == [['/usr/bin/perfquery', '-x', '-C', 'mlx5_0', '-P', '1'], ['/usr/bin/perfquery', '-C', 'mlx5_0', '-P', '1']]
    port = result['ports'][0]
    assert port['counters']['SymbolErrorCounter'] == 65535 and port['counters']['PortXmitData'] == 38000443084
    assert port['saturating'] is True


def test_mlxlink_missing_and_perfquery_failing_never_fail_the_module(run_module):
    result, dummy = run_module(ib_counters_info, {'hcas': ['mlx5_0', 'mlx5_9']}, {
        'perfquery': lambda argv: (0, PERFQUERY_X, '') if 'mlx5_0' in argv else
        (255, '', "ibwarn: [9] mad_rpc_open_port: can't open UMAD port ((mlx5_9):1)\n")})
    assert 'failed' not in result
    good, bad = result['ports']
    assert good['missing'] == ['mlxlink'] and good['ber'] == {} and good['counters']['LinkDownedCounter'] == 1
    assert bad['counters'] == {} and bad['errors'] and bad['errors'][0].startswith('perfquery -x -C mlx5_9 -P 1: rc=255')


def test_roce_port_reads_rdma_and_ethtool(run_module):
    result, calls = run_module(ib_counters_info, {'hcas': ['mlx5_0'], 'link_layer': 'Ethernet', 'ber': False}, {
        'rdma': lambda argv: (0, own_fixture('rdma/rdma-link-iproute2-6.1-cx7-roce-ib-mixed-handmade.txt' if 'link' == argv[1]
                                             else 'rdma/rdma-statistic-iproute2-6.1-cx7-roce-handmade.txt'), ''),
        'ethtool': (0, own_fixture('ethtool/ethtool-S-mlx5-cx7-400g-roce-prio3-handmade.txt'), '')})
    assert calls == [['/usr/bin/rdma', 'link', 'show', 'mlx5_0/1'], ['/usr/bin/rdma', 'statistic', 'show', 'link', 'mlx5_0/1'],
                     ['/usr/bin/ethtool', '-S', 'enp24s0np0']]
    port = result['ports'][0]
    assert port['netdev'] == 'enp24s0np0'
    assert port['counters']['out_of_sequence'] == 12 and port['counters']['rx_prio3_discards'] == 14
