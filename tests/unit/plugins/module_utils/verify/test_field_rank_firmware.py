# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 11 field conditions on the decision functions: a multi-node NCCL failure that names one host's rank, and
an HCA firmware rolling upgrade (a three-way tie, a 2/1 split), through to the gate's drains and verdict."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils.nccl_tests import parse_nccl_tests
from ansible_collections.aicluster.infra.plugins.module_utils.verify import document, gate, ib, nccl
from ansible_collections.aicluster.infra.plugins.module_utils.verify.results import new_result, validate_results

RUN = {'started': '2026-12-01T10:00:00Z', 'finished': '2026-12-01T10:30:00Z', 'inventory': 'lab', 'collection_version': '0.1.0'}
NODES = ['gpu01', 'gpu02', 'gpu03']
HCAS = ['mlx5_0', 'mlx5_3']
EXPECTED = {'hcas': HCAS, 'port': 1, 'rate_gbps': 400, 'link_layer': 'InfiniBand'}
MULTI = {'participants': NODES, 'busbw_table': {'h100': 300}, 'model': 'NVIDIA H100 80GB HBM3', 'node_ranks': 8,
         'bisect': True, 'large_bytes': 1 << 30}


def _ok(check='gpu.count'):
    return new_result(check, 'node', 8, 8, True, 'ok')


def _gate(outcomes, nodes=None):
    nodes = nodes or NODES
    variables = dict((fact, outcomes[area]) for area, fact in gate.OUTCOME_FACTS if area in outcomes)
    plan = document.plan_gate(variables, [{'NodeName': node, 'State': 'IDLE'} for node in nodes],
                              {'nodes': nodes, 'mode': 'drain', 'max_drain_fraction': 1})
    return plan, document.document(plan, dict(RUN, mode='drain'))


def _drained(plan):
    return sorted(node for node, action in plan['actions'].items() if action['action'] == 'drain')


def _rank_lines(hosts, gpus=8):
    return ''.join('#  Rank %2d Group  0 Pid %6d on %10s device %2d [0000:1b:00] NVIDIA H100 80GB HBM3\n'
                   % (h * gpus + g, 4000 + h, host, g) for h, host in enumerate(hosts) for g in range(gpus))


HEADER = ('# nccl-tests version 2.13.11 nccl-headers=22105 nccl-library=22105\n'
          '# Collective test starting: all_reduce_perf\n'
          '# nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 '
          'validation: 1 graph: 0\n#\n# Using devices\n')
OWN = ("gpu02:4633:4784 [3] misc/ibvwrap.cc:203 NCCL WARN Call to ibv_reg_mr_iova2 failed with error Bad address\n"
       "gpu02: Test NCCL failure common.cu:1005 'unhandled system error (run with NCCL_DEBUG=INFO for details) / "
       "Call to ibv_reg_mr_iova2 failed with error Bad address'\n .. gpu02 pid 4633: Test failure common.cu:1063\n")


def _remote(host, culprit='gpu02'):
    return ("%s: Test NCCL failure common.cu:1005 'remote process exited or there was a network error / socketProgress: "
            "Connection closed by remote peer %s<43001>'\n .. %s pid 4100: Test failure common.cu:1063\n" % (host, culprit, host))


def test_parser_keeps_each_failure_with_its_host_and_whether_it_is_the_remote_echo():
    parsed = parse_nccl_tests(HEADER + _rank_lines(NODES) + _remote('gpu01') + OWN + _remote('gpu03'))
    assert [(f['host'], f['kind'], f['where'], f['remote']) for f in parsed['failures']] == [
        ('gpu01', 'NCCL', 'common.cu:1005', True), ('gpu02', 'NCCL', 'common.cu:1005', False),
        ('gpu03', 'NCCL', 'common.cu:1005', True)]
    assert parsed['failures'][1]['reason'].startswith('unhandled system error')
    assert len(parsed['errors']) == 6 and len(parsed['warnings']) == 1 and parsed['rows'] == []


def test_a_failure_naming_one_hosts_rank_fails_that_node_and_the_run_at_cluster_level():
    run = {'rc': 3, 'stdout': HEADER + _rank_lines(NODES) + _remote('gpu01') + OWN + _remote('gpu03'),
           'stderr': 'srun: error: gpu02: task 1: Exited with exit code 3\n'}
    multi = nccl.decide_nccl_multi_node(dict(run, rc=0), MULTI)
    assert sorted(multi['fleet']) == ['gpu02']
    result = multi['fleet']['gpu02'][0]
    assert result['check'] == 'nccl.multi_node_busbw' and not result['passed'] and 'unhandled system error' in result['message']
    assert [r['check'] for r in multi['cluster'] if not r['passed']] == ['nccl.multi_node_busbw']
    assert 'failed on the rank of gpu02' in multi['cluster'][-1]['message']
    assert 'bisect' not in multi['summary'] and list(multi['summary']['rank_failed']) == ['gpu02']
    single = {'nodes': dict((node, [_ok('nccl.busbw')]) for node in NODES)}
    plan, doc = _gate({'nccl': dict(single, cluster=multi['cluster'], multi_node=multi['summary'], fleet=multi['fleet'])})
    assert _drained(plan) == ['gpu02'] and 'nccl.multi_node_busbw' in plan['actions']['gpu02']['reason']
    assert doc['summary']['failed'] == 1 and doc['summary']['cluster_failed'] == 1 and validate_results(doc) == []
    # srun's own non-zero exit (the failed task) keeps the attribution: the launcher's line comes first in errors
    assert sorted(nccl.decide_nccl_multi_node(run, MULTI)['fleet']) == ['gpu02']


def test_unattributed_or_fleet_wide_failures_stay_cluster_level():
    # only remote echoes: no process says it failed itself
    echoes = {'rc': 0, 'stdout': HEADER + _rank_lines(NODES) + _remote('gpu01') + _remote('gpu03')}
    multi = nccl.decide_nccl_multi_node(echoes, MULTI)
    assert multi['fleet'] == {} and not multi['cluster'][-1]['passed'] and 'rank_failed' not in multi['summary']
    # every node's rank failed on its own (a fabric-wide cause): not a node fault
    everyone = ''.join(OWN.replace('gpu02', host) for host in NODES)
    multi = nccl.decide_nccl_multi_node({'rc': 0, 'stdout': HEADER + _rank_lines(NODES) + everyone}, MULTI)
    assert multi['fleet'] == {} and not multi['cluster'][-1]['passed']
    # two of three: more than half, cluster-level
    two = OWN + OWN.replace('gpu02', 'gpu03')
    assert nccl.decide_nccl_multi_node({'rc': 0, 'stdout': HEADER + _rank_lines(NODES) + two}, MULTI)['fleet'] == {}
    # a host outside the run is ignored
    other = OWN.replace('gpu02', 'gpu09')
    assert nccl.decide_nccl_multi_node({'rc': 0, 'stdout': HEADER + _rank_lines(NODES) + other}, MULTI)['fleet'] == {}


def test_a_slow_run_without_errors_is_still_bisected():
    slow = HEADER + _rank_lines(NODES) + (
        '  8589934592    2147483648     float     sum      -1  37364.1  229.90  290.00      0  37360.2  229.92  290.00      0\n')
    multi = nccl.decide_nccl_multi_node({'rc': 0, 'stdout': slow}, MULTI)
    assert multi['fleet'] == {} and multi['summary']['bisect']['pending'] and not multi['cluster'][-1]['passed']


def _info(firmware):
    return {'hcas': [{'name': name, 'firmware_version': firmware,
                      'ports': [{'port': 1, 'state': 'Active', 'physical_state': 'LinkUp', 'rate_gbps': 400.0,
                                 'link_layer': 'InfiniBand'}]} for name in HCAS], 'ofed_version': 'OFED-24.04'}


def _ib_gate(versions):
    out = ib.decide_ib(dict((node, {'ib_info': _info(version)}) for node, version in zip(NODES, versions)), EXPECTED)
    outcome = {'nodes': out['nodes'], 'fleet': out['fleet'], 'cluster': out['cluster']}
    return out, _gate({'ib': outcome})


def test_firmware_three_versions_on_three_nodes_is_one_cluster_result_per_hca_and_drains_nobody():
    """A rolling upgrade caught half way: 28.39, 28.40 and 28.41 on three nodes, no majority, no pin."""
    out, (plan, doc) = _ib_gate(['28.40.1000', '28.41.1000', '28.39.1002'])
    firmware = [r for r in out['cluster'] if r['check'] == 'ib.firmware_uniform']
    assert [r['message'].split()[0] for r in firmware] == HCAS and not any(r['passed'] for r in firmware)
    assert {r['subject'] for r in firmware} == {'cluster'}
    assert 'firmware split with no majority: 28.39.1002 on 1 nodes; 28.40.1000 on 1 nodes; 28.41.1000 on 1 nodes' \
        in firmware[0]['message']
    assert all(r['passed'] for results in out['fleet'].values() for r in results)
    assert _drained(plan) == [] and doc['summary']['failed'] == 0 and doc['summary']['cluster_failed'] == len(HCAS)
    assert doc['summary']['verdict'] == 'FAIL' and validate_results(doc) == []


def test_firmware_two_to_one_fails_the_minority_node_only():
    out, (plan, doc) = _ib_gate(['28.40.1000', '28.39.1002', '28.39.1002'])
    assert out['cluster'] == []
    failed = dict((node, [r for r in results if not r['passed']]) for node, results in out['fleet'].items())
    assert sorted(node for node, results in failed.items() if results) == ['gpu01']
    assert [(r['subject'], r['measured'], r['threshold']) for r in failed['gpu01']] == [
        ('mlx5_0', '28.40.1000', '28.39.1002'), ('mlx5_3', '28.40.1000', '28.39.1002')]
    assert _drained(plan) == ['gpu01'] and doc['summary']['failed'] == 1 and doc['summary']['cluster_failed'] == 0
    # pinned to the new version (acceptance after the upgrade): the two old nodes fail by name
    pinned = ib.decide_ib(dict((node, {'ib_info': _info(v)}) for node, v in zip(NODES, ['28.40.1000', '28.39.1002', '28.39.1002'])),
                          dict(EXPECTED, firmware='28.40.1000'))
    assert sorted(node for node, results in pinned['fleet'].items() if not all(r['passed'] for r in results)) == ['gpu02', 'gpu03']
