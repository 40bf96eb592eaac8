"""hwsim link-quality stand-ins (perfquery, mlxlink, ethtool -S, rdma) and the link-errors fault, read by our parsers."""

import os
import sys

from _paths import REPO

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))

# pylint: disable=wrong-import-position
from ansible_collections.aicluster.infra.plugins.module_utils import ib_counters  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.verify import link  # noqa: E402
from hwsim import testing  # noqa: E402


def _perfquery(lab, host, hca):
    return ib_counters.parse_perfquery(lab.ok(host, ['perfquery', '-x', '-C', hca, '-P', '1']))


def _entry(lab, host, hca):
    parsed = _perfquery(lab, host, hca)
    ber = ib_counters.parse_mlxlink(lab.ok(host, ['mlxlink', '-d', hca, '-p', '1', '-c']))['ber']
    return {'changed': False, 'ports': [{'hca': hca, 'port': 1, 'link_layer': 'InfiniBand', 'counters': parsed['counters'],
                                         'ber': ber, 'missing': [], 'errors': []}]}


def test_healthy_port_keeps_a_constant_history(tmp_path):
    lab = testing.make_lab(tmp_path, 'hgx-h100-ib')
    first, second = _perfquery(lab, 'gpu01', 'mlx5_0'), _perfquery(lab, 'gpu01', 'mlx5_0')
    assert first['has_errors'] and first['lid'] == 101 and first['counters'] == second['counters']
    assert first['counters']['LinkDownedCounter'] == 1
    ber = ib_counters.parse_mlxlink(lab.ok('gpu01', ['mlxlink', '-d', 'mlx5_0', '-p', '1', '-c', '-e']))
    assert ber['ber']['effective_ber'] < 1e-200 and 'EYE Opening Info' in ber['sections']


def test_link_errors_keeps_width_and_speed_and_rises_on_every_read(tmp_path):
    lab = testing.make_lab(tmp_path, 'hgx-h100-ib')
    assert lab.run('gpu01', ['hwsim', 'fault', 'link-errors', 'mlx5_3'])[0] == 0
    assert 'Rate: 400' in lab.ok('gpu01', ['ibstat', 'mlx5_3'])
    before = _entry(lab, 'gpu01', 'mlx5_3')
    after = _entry(lab, 'gpu01', 'mlx5_3')
    assert after['ports'][0]['counters']['SymbolErrorCounter'] > before['ports'][0]['counters']['SymbolErrorCounter']
    assert after['ports'][0]['ber']['effective_ber'] > 1e-12
    outcome = link.decide_link({'gpu01': {'before': before, 'after': after}},
                               {'checked': {'gpu01': ['mlx5_3']}, 'port': 1, 'ber_max': 1e-12})
    assert [(r['check'], r['passed']) for r in outcome['nodes']['gpu01']] == [('ib.link_errors', False), ('ib.ber', False)]
    # clear: the counts made stay (counters do not reset), they stop rising
    assert lab.run('gpu01', ['hwsim', 'clear'])[0] == 0
    again, last = _perfquery(lab, 'gpu01', 'mlx5_3'), _perfquery(lab, 'gpu01', 'mlx5_3')
    assert again['counters'] == last['counters'] and again['counters']['SymbolErrorCounter'] > 0
    # a port of another host by its LID, through a local port
    remote = lab.ok('gpu02', ['perfquery', '-x', '-C', 'mlx5_0', '-P', '1', '104', '1'])
    assert ib_counters.parse_perfquery(remote)['lid'] == 104


def test_roce_profile_ethtool_and_rdma(tmp_path):
    lab = testing.make_lab(tmp_path, 'hgx-h100-roce')
    links = ib_counters.parse_rdma_link(lab.ok('gpu01', ['rdma', 'link', 'show', 'mlx5_0/1']))
    netdev = links['mlx5_0/1']['netdev']
    assert netdev
    lab.ok('gpu01', ['hwsim', 'fault', 'link-errors', 'mlx5_0'])
    first = ib_counters.parse_ethtool_stats(lab.ok('gpu01', ['ethtool', '-S', netdev]))
    second = ib_counters.parse_ethtool_stats(lab.ok('gpu01', ['ethtool', '-S', netdev]))
    assert second['rx_prio3_discards'] > first['rx_prio3_discards']
    stats = ib_counters.parse_rdma_statistic(lab.ok('gpu01', ['rdma', 'statistic', 'show', 'link', 'mlx5_0/1']))
    assert stats['mlx5_0/1']['out_of_sequence'] > 0
    status, dummy, err = lab.run('gpu01', ['perfquery', '-x', '-C', 'mlx5_0', '-P', '1'])
    assert status == 255 and "can't open UMAD port" in err


def test_unknown_device_and_fault_validation(tmp_path):
    lab = testing.make_lab(tmp_path, 'hgx-h100-ib')
    status, dummy, err = lab.run('gpu01', ['mlxlink', '-d', 'mlx5_99', '-c'])
    assert status == 1 and 'Failed to open device' in err
    status, dummy, err = lab.run('gpu01', ['hwsim', 'fault', 'link-errors', 'mlx5_99'])
    assert status == 2 and 'unknown HCA' in err
