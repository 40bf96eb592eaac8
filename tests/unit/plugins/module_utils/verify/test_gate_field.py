# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gate on a real fleet: a cluster-level failure drains nobody; the drain breaker; version splits mid-upgrade.

Each test reproduces a condition of issue 11 ("one shared failure drains the whole fleet") that drained every
node on the old code, with the collection's own decision functions.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils.verify import document, gate, gpu, ib, nccl
from ansible_collections.aicluster.infra.plugins.module_utils.verify._common import uniform
from ansible_collections.aicluster.infra.plugins.module_utils.verify.results import new_result, validate_results

RUN = {'started': '2026-12-01T10:00:00Z', 'finished': '2026-12-01T10:30:00Z', 'inventory': 'lab', 'collection_version': '0.1.0'}


def _nodes(count):
    return ['gpu%02d' % n for n in range(1, count + 1)]


def _idle(nodes):
    return [{'NodeName': node, 'State': 'IDLE'} for node in nodes]


def _ok(check='gpu.count'):
    return new_result(check, 'node', 8, 8, True, 'ok')


def _gate(outcomes, nodes, fraction=0.1, slurm=None):
    variables = dict((fact, outcomes[area]) for area, fact in gate.OUTCOME_FACTS if area in outcomes)
    plan = document.plan_gate(variables, _idle(nodes) if slurm is None else slurm,
                              {'nodes': nodes, 'mode': 'drain', 'max_drain_fraction': fraction})
    return plan, document.document(plan, dict(RUN, mode='drain'))


def _drained(plan):
    return sorted(node for node, action in plan['actions'].items() if action['action'] == 'drain')


def test_one_failed_multi_node_run_drains_nobody_and_fails_the_verdict():
    """32 of 32 nodes were drained for one 290 GB/s multi-node run."""
    nodes = _nodes(32)
    single = {'nodes': dict((node, [_ok('nccl.busbw')]) for node in nodes)}
    run = {'rc': 0, 'stdout': '#  Rank  0 Group  0 Pid  1 on gpu01 device  0 [0x1b] NVIDIA H100 80GB HBM3\n'
           '  8589934592    2147483648     float     sum      -1  37364.1  229.90  290.00      0  37360.2  229.92  290.00      0\n'}
    multi = nccl.decide_nccl_multi_node(run, {'participants': nodes, 'busbw_table': {'h100': 300}, 'model': 'NVIDIA H100'})
    plan, doc = _gate({'nccl': dict(single, cluster=multi['cluster'], multi_node=multi['summary'])}, nodes)
    assert _drained(plan) == []
    assert doc['summary']['failed'] == 0 and doc['summary']['cluster_failed'] == 1 and doc['summary']['verdict'] == 'FAIL'
    assert doc['cluster']['results'][0]['check'] == 'nccl.multi_node_busbw' and validate_results(doc) == []
    assert any(line.startswith('cluster  FAIL') for line in document.table(doc))


def test_a_driver_tie_mid_upgrade_drains_nobody():
    """A 4/4 driver split failed 8 of 8 nodes."""
    nodes = _nodes(8)
    infos = dict((node, {'driver_version': '550.90.07' if n < 4 else '570.124.06'}) for n, node in enumerate(nodes))
    cluster = []
    fleet = gpu.evaluate_gpu_fleet(infos, {}, cluster)
    assert all(result['passed'] for results in fleet.values() for result in results)
    assert len(cluster) == 1 and not cluster[0]['passed'] and '550.90.07 on 4 nodes; 570.124.06 on 4 nodes' in cluster[0]['message']
    plan, doc = _gate({'gpu': {'nodes': dict((node, [_ok()]) for node in nodes), 'fleet': fleet, 'cluster': cluster}}, nodes)
    assert _drained(plan) == [] and doc['summary']['verdict'] == 'FAIL' and doc['summary']['passed'] == 8
    # pinned (acceptance): the nodes on the other version fail by name, and the breaker decides whether to drain
    pinned = gpu.evaluate_gpu_fleet(infos, {'driver': '570.124.06'}, [])
    assert sorted(node for node, results in pinned.items() if not results[0]['passed']) == nodes[:4]
    # without a cluster list (the old call) a tie still fails every node
    assert not any(r['passed'] for results in uniform('gpu.driver_uniform', 'node', dict(
        (node, infos[node]['driver_version']) for node in nodes), 'driver', 'fix').values() for r in results)


def test_a_firmware_tie_goes_to_the_ib_outcome_cluster_list():
    info = {'hcas': [{'name': 'mlx5_0', 'firmware_version': '28.39.1002', 'ports': [{'port': 1, 'state': 'Active',
                                                                                     'rate_gbps': 400.0, 'link_layer': 'InfiniBand'}]}]}
    newer = {'hcas': [dict(info['hcas'][0], firmware_version='28.41.1000')]}
    observations = {'a': {'ib_info': info}, 'b': {'ib_info': newer}}
    out = ib.decide_ib(observations, {'hcas': ['mlx5_0'], 'port': 1, 'rate_gbps': 400, 'link_layer': 'InfiniBand'})
    assert [r['check'] for r in out['cluster']] == ['ib.firmware_uniform']
    assert all(r['passed'] for results in out['fleet'].values() for r in results)


def test_the_breaker_stops_a_fleet_wide_drain():
    """A check failing on more than 10% of the nodes (and at least 2) drains nothing, and says so."""
    nodes = _nodes(20)
    bad = new_result('gpu.xid', 'GPU 0', [79], 'none', False, 'xid 79')
    outcomes = {'gpu': {'nodes': dict((node, [bad] if n < 3 else [_ok()]) for n, node in enumerate(nodes))}}
    plan, doc = _gate(outcomes, nodes)
    assert _drained(plan) == [] and 'breaker tripped' in plan['actions']['gpu01']['note']
    breaker = doc['cluster']['results'][-1]
    assert breaker['check'] == 'node.drain_breaker' and 'gpu.xid on 3 of 20 nodes' in breaker['message']
    assert doc['summary']['failed'] == 3 and doc['summary']['verdict'] == 'FAIL' and validate_results(doc) == []
    # 2 of 20 (10%) is not more than the fraction: drained by name
    outcomes['gpu']['nodes']['gpu03'] = [_ok()]
    plan, doc = _gate(outcomes, nodes)
    assert _drained(plan) == ['gpu01', 'gpu02'] and doc['summary']['cluster_failed'] == 0
    # one node of three (the lab) is never a breaker; 1 turns the breaker off
    assert gate.breaker({'a': {'results': [bad]}, 'b': {'results': []}, 'c': {'results': []}}, 0.1)['tripped'] is False
    assert gate.breaker(dict((n, {'results': [bad]}) for n in nodes), 1)['tripped'] is False


def test_the_breaker_still_resumes_repaired_nodes():
    nodes = _nodes(10)
    bad = new_result('gpu.xid', 'GPU 0', [79], 'none', False, 'xid 79')
    outcomes = {'gpu': {'nodes': dict((node, [bad] if n < 5 else [_ok()]) for n, node in enumerate(nodes))}}
    slurm = _idle(nodes)
    slurm[9] = {'NodeName': 'gpu10', 'State': 'IDLE+DRAIN', 'Reason': 'aicluster: gpu.xid GPU 0'}
    plan, dummy = _gate(outcomes, nodes, slurm=slurm)
    assert _drained(plan) == [] and plan['actions']['gpu10']['action'] == 'resume'


def test_busy_nodes_are_not_tested_not_drained_for_it_and_not_resumed_for_unchecked_areas():
    """A node running a job: the active tests skip it; it is reported as not tested (the verdict fails) and a
    gate drain for a perftest fault is kept, because perftest did not run there."""
    nodes = _nodes(4)
    slurm = [{'NodeName': 'gpu01', 'State': 'IDLE'}, {'NodeName': 'gpu02', 'State': 'MIXED'},
             {'NodeName': 'gpu03', 'State': 'ALLOCATED+DRAIN', 'Reason': 'aicluster: perftest.write_bw mlx5_0'},
             {'NodeName': 'gpu04', 'State': 'IDLE'}]
    assert gate.busy(slurm, nodes) == ['gpu02', 'gpu03']
    assert gate.busy(slurm, ['n1'], {'n1': 'gpu02'}) == ['n1']
    outcomes = {'gpu': {'nodes': dict((node, [_ok()]) for node in nodes)},
                'perftest': {'nodes': dict((node, [_ok('perftest.write_bw')]) for node in ('gpu01', 'gpu04'))}}
    variables = dict((fact, outcomes[area]) for area, fact in gate.OUTCOME_FACTS if area in outcomes)
    plan = document.plan_gate(variables, slurm, {'nodes': nodes, 'mode': 'drain', 'busy': ['gpu02', 'gpu03'],
                                                 'max_drain_fraction': 0.1})
    doc = document.document(plan, dict(RUN, mode='drain'))
    assert plan['actions']['gpu03']['action'] == 'none' and 'perftest.write_bw' in plan['actions']['gpu03']['note']
    assert doc['nodes']['gpu02']['busy'] is True and 'busy' not in doc['nodes']['gpu01']
    tested = doc['cluster']['results'][0]
    assert tested['check'] == 'node.tested' and not tested['passed'] and 'gpu02, gpu03' in tested['message']
    assert doc['summary']['verdict'] == 'FAIL' and doc['summary']['failed'] == 0 and validate_results(doc) == []
    # the multi-node run never takes a busy node
    assert gate.ready(nodes, outcomes, slurm) == ['gpu01', 'gpu04']
