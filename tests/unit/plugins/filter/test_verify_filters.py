# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The verify filters are thin wrappers over module_utils/verify/: each called once on a small realistic input.

What the outcomes mean is tested in tests/unit/plugins/module_utils/verify/; here: the outcome's shape, the
parameters each area records, and that bad input raises AnsibleFilterError naming the filter.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from ansible.errors import AnsibleFilterError

from _paths import own_fixture

from ansible_collections.aicluster.infra.plugins.filter import verify as vf
from ansible_collections.aicluster.infra.plugins.module_utils.verify.results import new_result

# The gate itself (plan, Slurm, results.json) is the verify_gate action (plugins/action/verify_gate.py), not a filter.
FILTERS = ['verify_ib', 'verify_mtu_plan', 'verify_fabric', 'verify_fabric_sm', 'verify_fabric_problems', 'verify_switch_errors',
           'verify_link', 'verify_roce_qos', 'verify_lossless_plan', 'verify_lossless', 'verify_perftest_plan', 'verify_perftest_tests',
           'verify_perftest_round', 'verify_gpu', 'verify_nccl', 'verify_nccl_multi_node', 'verify_ready_nodes']
SKIPPED = {'changed': False, 'skipped': True}
RUN = {'started': 's', 'finished': 'f', 'inventory': 'inventories/lab', 'collection_version': '0.1.0', 'mode': 'drain',
       'slurm': 'ctl01'}


def _ib_info(rates=(400, 400)):
    """What aicluster.infra.ib_info returns for a node with two NDR HCAs."""
    return {'changed': False, 'ofed_version': 'OFED-internal-24.04-0.6.6', 'hcas': [
        {'name': name, 'ca_type': 'MT4129', 'firmware_version': '28.39.1002',
         'ports': [{'port': 1, 'state': 'Active', 'physical_state': 'LinkUp', 'rate_gbps': rate, 'link_layer': 'InfiniBand'}]}
        for name, rate in zip(('mlx5_0', 'mlx5_3'), rates)]}


def _gpu_info():
    gpus = [{'index': index, 'name': 'NVIDIA H100 80GB HBM3', 'type': 'h100', 'pci_bus_id': '00000000:%02X:00.0' % (0x18 + index),
             'persistence_mode': True, 'ecc_errors_uncorrected_volatile': 0, 'remapped_rows_pending': False,
             'remapped_rows_failure': False} for index in range(8)]
    return {'changed': False, 'gpus': gpus, 'count': 8, 'driver_version': '535.183.01', 'cuda_version': '12.2'}


def _ran(stdout, rc=0):
    return {'changed': False, 'rc': rc, 'stdout': stdout, 'stderr': ''}


def _plan():
    observations = {'gpu01': {'ib_info': _ib_info(), 'address': '10.0.0.1'}, 'gpu02': {'ib_info': _ib_info((400, 200))}}
    return vf.verify_perftest_plan(observations, {'fraction': 0.9, 'schedule': 'cover', 'size': 8388608})


def test_every_filter_is_registered_with_a_sidecar():
    names = vf.FilterModule().filters()
    assert sorted(names) == sorted(FILTERS)
    here = os.path.dirname(vf.__file__)
    assert [name for name in names if not os.path.exists(os.path.join(here, name + '.yml'))] == []


def test_verify_ib():
    observations = {'gpu01': {'ib_info': _ib_info(), 'links': _ran('[]'), 'pings': SKIPPED, 'peer': 'gpu02'},
                    'gpu02': {'ib_info': {'failed': True, 'msg': 'ibstat: not found'}, 'links': SKIPPED, 'pings': SKIPPED,
                              'peer': 'gpu01'}}
    outcome = vf.verify_ib(observations, {'hcas': [], 'port': 1, 'rate_gbps': 400, 'link_layer': 'InfiniBand', 'mtu': 4096})
    assert {'nodes', 'fleet', 'raw', 'checked', 'identity', 'fabric_reads', 'parameters'} <= set(outcome)
    assert outcome['parameters'] == {'ib_rate_gbps': 400, 'ib_port': 1, 'ib_link_layer': 'InfiniBand', 'mtu': 4096}
    assert 'net.mtu' in [r['check'] for r in outcome['nodes']['gpu01']]  # its rails have no netdev: not checked, with the reason
    assert [r['check'] for r in outcome['nodes']['gpu02']] == ['ib.hca_present']
    assert outcome['checked']['gpu01'] == ['mlx5_0', 'mlx5_3']
    with pytest.raises(AnsibleFilterError, match='^verify_ib: '):
        vf.verify_ib(None, {})


def test_verify_mtu_plan():
    info = _ib_info()
    for hca, netdev in zip(info['hcas'], ('ibp24s0', 'ibp64s0')):
        hca['ports'][0]['netdev'] = netdev

    def links(host):
        return _ran(json.dumps([{'ifname': netdev, 'mtu': 4092, 'addr_info': [
            {'family': 'inet', 'local': '10.100.%d.%d' % (rail, host), 'prefixlen': 24}]}
            for rail, netdev in enumerate(('ibp24s0', 'ibp64s0'))]))
    observations = {'gpu01': {'ib_info': info, 'links': links(1), 'peer': 'gpu02'},
                    'gpu02': {'ib_info': info, 'links': links(2), 'peer': 'gpu01'}}
    plan = vf.verify_mtu_plan(observations, {'port': 1, 'link_layer': 'InfiniBand', 'ipoib_mtu': 4092})
    assert [(p['netdev'], p['peer_address'], p['size']) for p in plan['gpu02']] == [
        ('ibp24s0', '10.100.0.1', 4064), ('ibp64s0', '10.100.1.1', 4064)]
    with pytest.raises(AnsibleFilterError, match='^verify_mtu_plan: '):
        vf.verify_mtu_plan(None, {})


def test_verify_fabric():
    link = {'node_type': 'CA', 'node_name': 'gpu01 mlx5_0', 'port': 1, 'width': '4X', 'lane_speed_gbps': 106.25,
            'state': 'Active', 'peer_name': 'MF0;leaf-rail0:MQM9790/U1', 'peer_port': 1, 'could_be': None}
    outcome = vf.verify_fabric({'changed': False, 'links': [link]}, {'gpu01': ['mlx5_0']},
                               {'width': '4X', 'lane_speed_gbps': 0.0, 'rail_check': True})
    assert set(outcome) == {'fleet', 'cluster', 'summary', 'peers', 'parameters'}
    assert outcome['parameters'] == {'fabric_width': '4X', 'fabric_lane_speed_gbps': 0.0}
    assert outcome['peers']['gpu01']['mlx5_0']['switch'] == 'leaf-rail0'
    assert all(r['passed'] for r in outcome['fleet']['gpu01'])
    assert vf.verify_fabric({'failed': True, 'msg': 'iblinkinfo: not found'}, {'gpu01': ['mlx5_0']}, {}) is None
    with pytest.raises(AnsibleFilterError, match='^verify_fabric: '):
        vf.verify_fabric('not a result', {}, {})


def test_verify_link():
    def read(counters):
        return {'changed': False, 'ports': [{'hca': 'mlx5_0', 'port': 1, 'link_layer': 'InfiniBand', 'counters': counters,
                                             'ber': {'effective_ber': 1.5e-254}, 'missing': [], 'errors': []}]}
    outcome = vf.verify_link({'gpu01': {'before': read({'SymbolErrorCounter': 3}), 'after': read({'SymbolErrorCounter': 90})}},
                             {'checked': {'gpu01': ['mlx5_0']}, 'port': 1, 'ber_max': 1e-12})
    assert set(outcome) == {'nodes', 'raw', 'parameters'} and outcome['parameters'] == {'ib_ber_max': 1e-12}
    assert [(r['check'], r['passed']) for r in outcome['nodes']['gpu01']] == [('ib.link_errors', False), ('ib.ber', True)]
    with pytest.raises(AnsibleFilterError, match='^verify_link: '):
        vf.verify_link('not a dict', {})


def test_verify_perftest_plan():
    outcome = _plan()
    assert {'summary', 'endpoints', 'rails', 'tests', 'retest', 'fleet', 'parameters'} <= set(outcome)
    assert outcome['summary']['rounds'] and outcome['summary']['pairs'] == []
    assert outcome['rails'] == {'gpu01': ['mlx5_0', 'mlx5_3'], 'gpu02': ['mlx5_0', 'mlx5_3']}
    assert outcome['parameters'] == {'perftest_fraction': 0.9, 'perftest_schedule': 'cover', 'perftest_size': 8388608}
    with pytest.raises(AnsibleFilterError, match='^verify_perftest_plan: '):
        vf.verify_perftest_plan(None, {})


def test_verify_perftest_tests():
    tests = vf.verify_perftest_tests([['gpu01', 'gpu02']], _plan(), 18515)
    # the line rate is the fleet's most common (400), never the degraded port's own (negotiated 200)
    assert [(t['client_hca'], t['server_hca'], t['port'], t['address'], t['line_rate'], t['negotiated']) for t in tests] == [
        ('mlx5_0', 'mlx5_0', 18515, 'gpu02', 400.0, 400.0), ('mlx5_3', 'mlx5_3', 18516, 'gpu02', 400.0, 200.0)]
    retest = vf.verify_perftest_tests([{'client': 'gpu02', 'server': 'gpu01', 'rails': [1]}], _plan(), 18515)
    assert [(t['client'], t['rail'], t['address']) for t in retest] == [('gpu02', 1, '10.0.0.1')]
    with pytest.raises(AnsibleFilterError, match='^verify_perftest_tests: '):
        vf.verify_perftest_tests([['gpu01', 'gpu09']], _plan(), 18515)


def test_verify_perftest_tests_without_a_plan():
    with pytest.raises(AnsibleFilterError, match='^verify_perftest_tests: '):
        vf.verify_perftest_tests([['gpu01', 'gpu02']], {}, 18515)


def test_verify_perftest_round():
    outcome = _plan()
    tests = vf.verify_perftest_tests([['gpu01', 'gpu02']], outcome, 18515)
    text = own_fixture('perftest/perftest-4.5-ib_write_bw-ndr-cx7-report-gbits-all-sizes-client-handmade.txt')
    done = [{'item': {'item': spec, 'ansible_job_id': 'j%d' % n}, 'finished': 1, 'rc': 0, 'stdout': text, 'stderr': ''}
            for n, spec in enumerate(tests)]
    after = vf.verify_perftest_round(outcome, done, {'test': 'write_bw', 'round': 0, 'fraction': 0.9})
    assert [(p['client'], p['rail'], p['round']) for p in after['summary']['pairs']] == [('gpu01', 0, 0), ('gpu01', 1, 0)]
    assert sorted(after['fleet']) == ['gpu01', 'gpu02'] and 'write_bw' in after['retest']
    with pytest.raises(AnsibleFilterError, match='^verify_perftest_round: '):
        vf.verify_perftest_round(outcome, done, {'round': 0})


def test_verify_gpu():
    observations = {'gpu01': {'gpu_info': _gpu_info(), 'dmesg': _ran('[    1.0] nothing\n'), 'compute_apps': _ran(''),
                              'nvlink_status': _ran(own_fixture('nvidia-smi/nvidia-smi-535-8xh100-nvlink-s-2inactive-handmade.txt')),
                              'nvlink_errors': SKIPPED, 'retired': SKIPPED, 'dcgm_diag': SKIPPED}}
    outcome = vf.verify_gpu(observations, {'count': 8, 'model': 'h100', 'fatal_xids': [79], 'dcgm_level': 1,
                                           'nvlinks_per_gpu': None})
    assert set(outcome) == {'nodes', 'fleet', 'cluster', 'raw', 'parameters'}
    assert outcome['parameters'] == {'dcgm_diag_level': 1, 'gpu_nvlinks_per_gpu': None}
    assert [r for r in outcome['nodes']['gpu01'] if not r['passed'] and r['check'] == 'gpu.nvlink']
    assert outcome['raw']['gpu01']['gpu_info']['count'] == 8 and 'changed' not in outcome['raw']['gpu01']['gpu_info']
    with pytest.raises(AnsibleFilterError, match='^verify_gpu: '):
        vf.verify_gpu(None, {})


def _nccl_outcome():
    text = own_fixture('nccl-tests/nccl-tests-2.13-8xh100-allreduce-pass-handmade.txt')
    observations = dict((node, {'gpu_info': _gpu_info(), 'run': _ran(text)}) for node in ('gpu01', 'gpu02'))
    return vf.verify_nccl(observations, {'busbw_table': {'h100': 1}, 'slow_node': True, 'slow_fraction': 0.1,
                                         'large_bytes': 1 << 30, 'test': 'all_reduce_perf'})


def test_verify_nccl():
    outcome = _nccl_outcome()
    assert set(outcome) == {'nodes', 'raw', 'single_node', 'fleet_median', 'model', 'parameters'}
    assert outcome['parameters'] == {'nccl_test': 'all_reduce_perf', 'nccl_large_bytes': 1 << 30, 'nccl_slow_fraction': 0.1}
    assert sorted(outcome['single_node']) == ['gpu01', 'gpu02'] and outcome['fleet_median'] > 0
    with pytest.raises(AnsibleFilterError, match='^verify_nccl: '):
        vf.verify_nccl(None, {})


def test_verify_nccl_multi_node():
    outcome = _nccl_outcome()
    run = {'changed': False, 'rc': 1, 'stdout': '', 'stderr': 'srun: error: Unable to allocate resources\n'}
    after = vf.verify_nccl_multi_node(outcome, run, {'participants': ['gpu01', 'gpu02'], 'busbw_table': {'h100': 300}})
    # a failed multi-node run is a cluster-level result: no participant is failed (drained) for it
    assert after['nodes'] == outcome['nodes'] and after['fleet'] == {}
    assert [r['check'] for r in after['cluster']] == ['nccl.multi_node_busbw'] and not after['cluster'][0]['passed']
    assert after['multi_node']['passed'] is False and after['multi_node']['threshold'] == 300.0
    with pytest.raises(AnsibleFilterError, match='^verify_nccl_multi_node: '):
        vf.verify_nccl_multi_node(None, run, {})


def _variables():
    """A host's variables: the outcome facts the check roles set (one area ran here)."""
    outcome = {'nodes': {'a': [new_result('gpu.count', 'node', 7, 8, False, '7 GPUs')],
                         'b': [new_result('gpu.count', 'node', 8, 8, True, '8 GPUs')]}}
    return {'inventory_hostname': 'a', 'verify_gpu_outcome': outcome, 'verify_ib_outcome': None}


def test_verify_ready_nodes():
    slurm = [{'NodeName': 'a', 'State': 'IDLE'}, {'NodeName': 'b', 'State': 'IDLE'}, {'NodeName': 'c', 'State': 'IDLE+DRAIN'}]
    assert vf.verify_ready_nodes(_variables(), slurm, ['a', 'b', 'c']) == ['b']
    assert vf.verify_ready_nodes({}, slurm, ['a', 'b']) == []
    with pytest.raises(AnsibleFilterError, match='^verify_ready_nodes: '):
        vf.verify_ready_nodes(_variables(), slurm, None)
