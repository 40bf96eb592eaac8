# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Before any measurement: the busy nodes and the maintenance reservation (module_utils/verify/busy.py), replayed
as roles/verify_gate/tasks/busy.yml and reserve.yml make the calls, and the srun that runs inside it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.aicluster.infra.plugins.filter.verify_gate import verify_busy_plan
from ansible_collections.aicluster.infra.plugins.module_utils.verify import busy, decide

NODES = ['gpu01', 'gpu02', 'gpu03', 'gpu04']
SKIPPED = {'changed': False, 'skipped': True, 'skip_reason': 'Conditional result was False'}


def _read(*states):
    """slurm_node_info's registered result: (NodeName, State) pairs."""
    return {'changed': False, 'nodes': [{'NodeName': name, 'State': state} for name, state in states]}


FIRST = _read(('gpu01', 'IDLE'), ('gpu02', 'MIXED'), ('gpu03', 'IDLE+DRAIN'), ('gpu04', 'IDLE'))


def _expected(**extra):
    return dict({'nodes': NODES, 'slurm_names': {}, 'busy': 'skip', 'reservation': True}, **extra)


def test_idle_nodes_are_reserved_busy_ones_are_not():
    plan = busy.plan(FIRST, _expected())
    # a drained node is tested (the repair loop) and reserved too: the gate may resume it before the release
    assert plan == {'busy': ['gpu02'], 'reserve': ['gpu01', 'gpu03', 'gpu04'], 'reservation': None, 'reserved': [],
                    'raced': [], 'unknown': []}


@pytest.mark.parametrize('switch', [False, 'False', 'no'], ids=['bool', 'text', 'no'])
def test_no_reservation_when_switched_off(switch):
    plan = busy.plan(FIRST, _expected(reservation=switch))
    assert plan['busy'] == ['gpu02'] and plan['reserve'] == []


def test_mode_test_reserves_every_node_slurm_knows():
    plan = busy.plan(FIRST, _expected(busy='test'))
    assert plan['busy'] == [] and plan['reserve'] == ['gpu01', 'gpu02', 'gpu03', 'gpu04']


@pytest.mark.parametrize('read', [SKIPPED, {'failed': True, 'msg': 'Unable to contact slurm controller'}, None],
                         ids=['no-slurm-host', 'slurm-unreachable', 'none'])
def test_without_slurm_nothing_is_busy_or_reserved(read):
    assert busy.plan(read, _expected()) == {'busy': [], 'reserve': [], 'reservation': None, 'reserved': [], 'raced': [],
                                            'unknown': []}


def test_slurm_names_and_unknown_nodes():
    read = _read(('node-a', 'ALLOCATED'), ('node-b', 'IDLE'))
    plan = busy.plan(read, _expected(nodes=['gpu01', 'gpu02', 'gpu03'], slurm_names={'gpu01': 'node-a', 'gpu02': 'node-b'}))
    assert plan['busy'] == ['gpu01'] and plan['reserve'] == ['node-b'] and plan['unknown'] == ['gpu03']


def _module_result(nodes, check_mode=False, failed=False):
    """What slurm_reservation registers."""
    if failed:
        return {'failed': True, 'msg': 'scontrol create of reservation aicluster-verify failed with rc=1: Access denied'}
    return {'changed': True, 'name': 'aicluster-verify', 'action': 'created', 'nodes': nodes,
            'reservation': None if check_mode else {'ReservationName': 'aicluster-verify', 'Nodes': 'gpu[01,03-04]'}}


def test_a_node_that_started_a_job_before_the_reservation_is_busy():
    first = busy.plan(FIRST, _expected())
    # gpu04 started a job between the first read and the reservation (IGNORE_JOBS let the reservation be made)
    again = _read(('gpu01', 'IDLE+MAINT+RESERVED'), ('gpu02', 'MIXED'), ('gpu03', 'IDLE+DRAIN+MAINT+RESERVED'),
                  ('gpu04', 'ALLOCATED+MAINT+RESERVED'))
    plan = busy.plan(again, _expected(reserved=_module_result(first['reserve']), previous=first))
    assert plan['busy'] == ['gpu02', 'gpu04'] and plan['raced'] == ['gpu04']
    assert plan['reservation'] == 'aicluster-verify' and plan['reserved'] == ['gpu01', 'gpu03', 'gpu04']
    assert plan['reserve'] == []


def test_second_read_failed_keeps_the_first_answer():
    first = busy.plan(FIRST, _expected())
    plan = busy.plan({'failed': True, 'msg': 'timeout'}, _expected(reserved=_module_result(first['reserve']), previous=first))
    assert plan['busy'] == ['gpu02'] and plan['reservation'] == 'aicluster-verify'


@pytest.mark.parametrize('result', [_module_result(['gpu01'], check_mode=True), SKIPPED],
                         ids=['check-mode', 'skipped'])
def test_no_reservation_to_run_in(result):
    first = busy.plan(FIRST, _expected())
    plan = busy.plan(FIRST, _expected(reserved=result, previous=first))
    assert plan['reservation'] is None and plan['reserved'] == []


def test_the_filter_is_the_same_call():
    assert verify_busy_plan(FIRST, _expected()) == busy.plan(FIRST, _expected())


def test_reserved_nodes_are_in_service_for_the_multi_node_run():
    # a MAINT reservation shows in the node state (IDLE+MAINT, IDLE+MAINTENANCE+RESERVED); the multi-node run still
    # takes those nodes, and the gate's busy test does not count them as running jobs
    slurm = [{'NodeName': 'gpu01', 'State': 'IDLE+MAINT'}, {'NodeName': 'gpu02', 'State': 'IDLE+MAINTENANCE+RESERVED'}]
    outcome = {'nodes': {'gpu01': [{'check': 'gpu.count', 'passed': True}], 'gpu02': [{'check': 'gpu.count', 'passed': True}]}}
    assert decide.ready_nodes({'verify_gpu_outcome': outcome}, slurm, ['gpu01', 'gpu02']) == ['gpu01', 'gpu02']
    assert busy.plan({'nodes': slurm}, _expected(nodes=['gpu01', 'gpu02']))['busy'] == []


def test_multi_node_summary_names_the_reservation_srun_ran_in():
    outcome = {'model': 'h100-sxm', 'nodes': {}, 'cluster': []}
    expected = {'participants': ['gpu01', 'gpu02'], 'busbw_table': {'h100-sxm': 300}, 'busbw_min_gbs': 0, 'node_ranks': 0}
    run = {'rc': 1, 'stdout': '', 'stderr': 'srun: error: x', 'changed': False,
           'cmd': ['timeout', '--kill-after=10', '600', 'srun', '--exclusive', '--reservation=aicluster-verify', 'all_reduce_perf']}
    assert decide.nccl_multi_node(outcome, run, expected)['multi_node']['reservation'] == 'aicluster-verify'
    del run['cmd'][5]
    assert 'reservation' not in decide.nccl_multi_node(outcome, run, expected)['multi_node']
