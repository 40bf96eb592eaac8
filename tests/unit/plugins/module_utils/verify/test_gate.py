# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""verify/gate.py: every area's outcome joined per node, the Slurm actions, and the nodes ready for a multi-node run."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.aicluster.infra.plugins.module_utils.verify import gate
from ansible_collections.aicluster.infra.plugins.module_utils.verify.results import new_result


def _ok(check='gpu.count'):
    return new_result(check, 'node', 8, 8, True, '8 GPUs')


LINK_1X = new_result('fabric.link_width', 'mlx5_3:1', '1X', '4X', False, 'trained at 1X')


def test_collect_and_gate():
    outcomes = {'gpu': {'nodes': dict((node, [_ok()]) for node in ('gpu01', 'gpu02', 'gpu03', 'gpu04'))},
                'fabric': {'fleet': {'gpu02': [LINK_1X]}}}
    nodes = gate.collect(['gpu01', 'gpu02', 'gpu03', 'gpu04', 'gpu05'], outcomes)
    assert nodes['gpu01']['passed'] and not nodes['gpu02']['passed']
    assert nodes['gpu05']['results'][0]['check'] == 'node.reachable' and not nodes['gpu05']['passed']
    slurm = [{'NodeName': 'gpu01', 'State': 'IDLE'},
             {'NodeName': 'gpu02', 'State': 'IDLE'},
             {'NodeName': 'gpu03', 'State': 'IDLE+DRAIN', 'Reason': 'aicluster: gpu.xid GPU 3 [root@2026-01-06T10:02:33]'},
             {'NodeName': 'gpu04', 'State': 'IDLE+DRAIN', 'Reason': 'cable swap, ticket 12 [ops@2026-01-06T10:02:33]'}]
    actions = gate.plan(nodes, slurm, 'drain')
    assert actions['gpu01']['action'] == 'none'
    assert actions['gpu02'] == dict(actions['gpu02'], action='drain', reason='aicluster: fabric.link_width mlx5_3:1')
    assert actions['gpu03']['action'] == 'resume'
    assert actions['gpu04']['action'] == 'none' and 'someone else' in actions['gpu04']['note']
    assert actions['gpu05']['action'] == 'none' and 'not a Slurm node' in actions['gpu05']['note']
    assert gate.plan(nodes, slurm, 'report')['gpu02']['action'] == 'none'
    assert gate.plan(nodes, slurm, 'fail')['gpu03']['action'] == 'resume'
    # already drained by the gate for the same reason: nothing to do
    slurm[1] = {'NodeName': 'gpu02', 'State': 'IDLE+DRAIN', 'Reason': 'aicluster: fabric.link_width mlx5_3:1 [root@x]'}
    assert gate.plan(nodes, slurm, 'drain')['gpu02']['action'] == 'none'
    # a failing node drained by an operator keeps the operator's reason
    nodes = gate.collect(['gpu04'], {'gpu': {'nodes': {'gpu04': [new_result('gpu.xid', 'GPU 1', [79], 'none', False, 'xid')]}}})
    assert gate.plan(nodes, slurm, 'drain')['gpu04']['action'] == 'none'


def test_results_by_node_fleet_first_in_area_order():
    outcomes = {'nccl': {'nodes': {'a': [_ok('nccl.busbw')]}},
                'gpu': {'nodes': {'a': [_ok('gpu.count')]}, 'fleet': {'a': [_ok('gpu.driver_uniform')]}},
                'ib': {'fleet': {'a': [_ok('ib.ofed_uniform')]}, 'nodes': {'a': [_ok('ib.port_state')]}}}
    assert [r['check'] for r in gate.results_by_node(['a'], outcomes)['a']] == [
        'ib.ofed_uniform', 'gpu.driver_uniform', 'ib.port_state', 'gpu.count', 'nccl.busbw']


def test_collect_carries_raw_and_versions():
    outcomes = {'ib': {'nodes': {'a': [_ok('ib.port_state')]}, 'raw': {'a': {'ib_info': {'hcas': []}}}},
                'gpu': {'nodes': {'a': [_ok()]}, 'raw': {'a': {'gpu_info': {'count': 8}}}}}
    node = gate.collect(['a'], outcomes, versions={'a': {'os': 'Ubuntu 22.04'}})['a']
    assert node['raw'] == {'ib_info': {'ib_info': {'hcas': []}}, 'gpu': {'gpu_info': {'count': 8}}}
    assert node['versions'] == {'os': 'Ubuntu 22.04'} and node['drained'] is False


def test_plan_uses_the_slurm_name():
    nodes = gate.collect(['gpu02.lab'], {'fabric': {'fleet': {'gpu02.lab': [LINK_1X]}}})
    actions = gate.plan(nodes, [{'NodeName': 'gpu02', 'State': 'MIXED'}], 'drain', {'gpu02.lab': 'gpu02'})
    assert actions['gpu02.lab']['action'] == 'drain' and actions['gpu02.lab']['slurm_name'] == 'gpu02'


def test_ready_excludes_drained_down_and_failing_nodes():
    outcomes = {'gpu': {'nodes': {'a': [_ok()], 'b': [_ok()], 'c': [_ok()], 'd': [_ok()], 'e': [_ok()],
                                  'f': [new_result('gpu.xid', 'GPU 1', [79], 'none', False, 'xid')], 'h': [_ok()]}}}
    slurm = [{'NodeName': 'a', 'State': 'IDLE'}, {'NodeName': 'b', 'State': 'IDLE+DRAIN'},
             {'NodeName': 'c', 'State': 'DOWN+NOT_RESPONDING'}, {'NodeName': 'd', 'State': 'MIXED'},
             {'NodeName': 'e', 'State': 'FAIL'}, {'NodeName': 'f', 'State': 'IDLE'}, {'NodeName': 'g', 'State': 'IDLE'}]
    # g has no result (unreachable), h is not a Slurm node, d runs a job (MIXED)
    assert gate.ready(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'], outcomes, slurm) == ['a']
    assert gate.ready(['a'], outcomes, None) == []


def test_apply_records_what_slurm_did():
    nodes = gate.collect(['a', 'b', 'c'], {'gpu': {'nodes': {'a': [_ok()], 'b': [_ok()]}},
                                           'fabric': {'fleet': {'a': [LINK_1X]}}})
    slurm = [{'NodeName': 'a', 'State': 'IDLE'}, {'NodeName': 'b', 'State': 'IDLE+DRAIN', 'Reason': 'aicluster: gpu.xid GPU 3'},
             {'NodeName': 'c', 'State': 'IDLE+DRAIN', 'Reason': 'aicluster: gpu.xid GPU 1'}]
    actions = gate.plan(nodes, slurm, 'drain')
    done = gate.apply(nodes, actions, {'a': {'changed': True, 'state_after': 'IDLE+DRAIN'},
                                       'b': {'changed': True, 'state_after': 'IDLE'}})
    assert done['a']['drained'] and done['a']['drain_reason'] == 'aicluster: fabric.link_width mlx5_3:1'
    assert done['a']['slurm_state'] == {'before': 'IDLE', 'after': 'IDLE+DRAIN', 'reason_before': None}
    assert done['b']['resumed'] and done['b']['drain_reason'] is None
    # c fails (unreachable) and stays drained by the gate's earlier reason; nothing ran for it
    assert not done['c']['drained'] and done['c']['drain_reason'] == 'aicluster: gpu.xid GPU 1'
    assert nodes['a']['drained'] is False  # the collected nodes are left as they were
    # a drain that failed in Slurm is not recorded as done
    assert not gate.apply(nodes, actions, {'a': {'changed': True, 'failed': True}})['a']['drained']


@pytest.mark.parametrize('reason, stripped', [('aicluster: gpu.xid GPU 3 [root@2026-01-06T10:02:33]', 'aicluster: gpu.xid GPU 3'),
                                              ('cable swap', 'cable swap'), (None, None), (' [root@x]', None)])
def test_strip_reason_stamp(reason, stripped):
    assert gate.strip_reason_stamp(reason) == stripped


@pytest.mark.parametrize('state, drained', [('IDLE+DRAIN', True), ('DRAINED', True), ('MIXED+DRAIN', True), ('DOWN+DRAIN+NOT_RESPONDING', True),
                                            ('IDLE', False), ('DOWN', False), (None, False)])
def test_is_drained(state, drained):
    assert gate.is_drained(state) is drained


def test_is_own_reason():
    assert gate.is_own_reason(' aicluster: gpu.xid GPU 3') and not gate.is_own_reason('ops: aicluster later')
    assert not gate.is_own_reason(None)


def test_checks_in_reason():
    assert gate.checks_in_reason('aicluster: gpu.xid GPU 3; ib.port_state mlx5_0:1; gpu.xid GPU 5') == ['gpu.xid', 'ib.port_state']
    assert gate.checks_in_reason('aicluster: fabric.rail mlx5_0 (rail 0); perftest.write_bw mlx5_0 -> gpu02 mlx...') == [
        'fabric.rail']
    assert gate.checks_in_reason('operator: fan') == [] and gate.checks_in_reason(None) == []


def test_a_subset_run_resumes_only_what_it_checked_again():
    """--tags verify_ib,verify_gate: the IB checks pass, but a drain for a GPU fault was not checked again."""
    outcomes = {'ib': {'nodes': dict((node, [_ok('ib.port_state')]) for node in ('gpu01', 'gpu02', 'gpu03'))}}
    nodes = gate.collect(['gpu01', 'gpu02', 'gpu03'], outcomes)
    slurm = [{'NodeName': 'gpu01', 'State': 'IDLE+DRAIN', 'Reason': 'aicluster: gpu.ecc GPU 4 [root@2026-01-06T10:02:33]'},
             {'NodeName': 'gpu02', 'State': 'IDLE+DRAIN', 'Reason': 'aicluster: ib.port_state mlx5_0:1 [root@2026-01-06T10:02:33]'},
             {'NodeName': 'gpu03', 'State': 'DRAINED', 'Reason': 'aicluster: node.reachable node [root@2026-01-06T10:02:33]'}]
    actions = gate.plan(nodes, slurm, 'drain', ran=['ib'])
    assert actions['gpu01']['action'] == 'none' and 'gpu.ecc, which this run did not check' in actions['gpu01']['note']
    assert actions['gpu02']['action'] == 'resume'
    assert actions['gpu03']['action'] == 'resume'  # reachability is checked by every run
    # the gpu area ran, but not on this node (a busy node): still kept
    assert gate.plan(nodes, slurm, 'drain', ran=['ib', 'gpu'])['gpu01']['action'] == 'none'
    outcomes['gpu'] = {'nodes': {'gpu01': [_ok('gpu.ecc')]}}
    nodes = gate.collect(['gpu01', 'gpu02', 'gpu03'], outcomes)
    assert gate.plan(nodes, slurm, 'drain', ran=['ib', 'gpu'])['gpu01']['action'] == 'resume'


def test_a_check_made_by_another_areas_role_resumes_its_drain():
    """--tags verify_perftest,verify_gate on a RoCE lab (2026-12-07): net.lossless (area net) is made by verify_perftest,
    so run.checks lists only perftest; the node passed it again and must be resumed, not "left drained"."""
    outcomes = {'perftest': {'nodes': {'gpu01': [_ok('perftest.write_bw'), _ok('net.lossless')],
                                       'gpu02': [_ok('perftest.write_bw')]}}}
    nodes = gate.collect(['gpu01', 'gpu02'], outcomes)
    reason = 'aicluster: net.lossless enp64s0np0 rail 1 (receiver) [root@2026-12-07T06:05:01]'
    slurm = [{'NodeName': 'gpu01', 'State': 'IDLE+DRAIN', 'Reason': reason},
             {'NodeName': 'gpu02', 'State': 'IDLE+DRAIN', 'Reason': reason}]
    actions = gate.plan(nodes, slurm, 'drain', ran=['perftest'])
    assert actions['gpu01']['action'] == 'resume'
    # gpu02 has no net.lossless result in this run (not a member of an incast round): kept
    assert actions['gpu02']['action'] == 'none' and 'net.lossless, which this run did not check' in actions['gpu02']['note']


def test_a_drain_whose_check_was_read_without_traffic_is_kept():
    """--tags verify_ib,verify_gate: link counters read twice with no bandwidth test between are "not checked"."""
    skipped = dict(_ok('ib.link_errors'), skipped='no bandwidth test ran on this node between the two reads')
    outcomes = {'ib': {'nodes': {'gpu01': [_ok('ib.port_state'), skipped], 'gpu02': [_ok('ib.port_state'), _ok('ib.link_errors')]}}}
    nodes = gate.collect(['gpu01', 'gpu02'], outcomes)
    reason = 'aicluster: ib.link_errors mlx5_3:1 (0xfc6a1c0300010001 port 1) [root@2026-01-06T10:02:33]'
    slurm = [{'NodeName': 'gpu01', 'State': 'IDLE+DRAIN', 'Reason': reason}, {'NodeName': 'gpu02', 'State': 'IDLE+DRAIN', 'Reason': reason}]
    actions = gate.plan(nodes, slurm, 'drain', ran=['ib'])
    assert actions['gpu01']['action'] == 'none' and 'ib.link_errors, which this run did not check' in actions['gpu01']['note']
    assert actions['gpu02']['action'] == 'resume'
