# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The verify_gate action: the gate fixtures' outcomes in, slurm_node_info / slurm_node answered, results.json out."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import sys

import pytest

try:
    from unittest.mock import MagicMock
except ImportError:  # pragma: no cover
    from mock import MagicMock

from ansible.errors import AnsibleActionFail
from ansible.playbook.task import Task

from ansible_collections.aicluster.infra.plugins.action import verify_gate as action

HERE = os.path.dirname(os.path.abspath(__file__))
GATE = os.path.join(os.path.dirname(HERE), 'module_utils', 'verify')
sys.path.insert(0, GATE)

from _gate_harness import Play, role_verify_gpu, role_verify_ib, role_verify_nccl, role_verify_perftest  # noqa: E402  pylint: disable=wrong-import-position


def _case(name):
    with open(os.path.join(GATE, 'fixtures', 'gate', name, 'in.json')) as handle:
        case = json.load(handle)
    with open(os.path.join(GATE, 'fixtures', 'gate', name, 'out.json')) as handle:
        return case, json.load(handle)


def _facts(case):
    play = Play(case)
    for role in (role_verify_ib, role_verify_perftest, role_verify_gpu, role_verify_nccl):
        role(play)
    return play


class FakeAction(action.ActionModule):
    """The action with its module calls answered: slurm_node_info gives ``slurm_nodes``, slurm_node succeeds."""

    def __init__(self, args, check_mode, slurm_nodes, refuse=()):  # pylint: disable=super-init-not-called
        self._task = Task()
        self._task.args = args
        self._task.action = 'aicluster.infra.verify_gate'
        self._task.check_mode = check_mode
        self._connection = MagicMock()
        self._connection._shell.tmpdir = '/nonexistent'
        self.slurm_nodes = slurm_nodes
        self.refuse = set(refuse)
        self.calls = []

    def _execute_module(self, module_name=None, module_args=None, task_vars=None, **kwargs):
        self.calls.append((module_name, dict(module_args or {})))
        if module_name == 'aicluster.infra.slurm_node_info':
            if self.slurm_nodes is None:
                return {'failed': True, 'msg': 'scontrol: error: Unable to contact slurm controller'}
            return {'changed': False, 'nodes': self.slurm_nodes}
        if module_args['name'] in self.refuse:
            return {'failed': True, 'msg': 'Invalid node name specified'}
        drain = module_args['state'] == 'drained'
        return {'changed': True, 'state_before': 'IDLE', 'state_after': 'IDLE+DRAIN' if drain else 'IDLE'}


def _run(tmp_path, case, check_mode=False, slurm=True, slurm_nodes=(), refuse=()):
    play = _facts(case)
    path = str(tmp_path / 'run' / 'results.json')
    args = {'nodes': play.hosts_all, 'answered': play.hosts, 'mode': play.v('verify_gate_on_failure'), 'slurm': slurm,
            'facts': dict((host, play.observed(host, 'facts')) for host in play.hosts), 'path': path,
            'run': dict(case['run'], slurm='ctl01' if slurm else None),
            'max_drain_fraction': float(play.v('verify_gate_max_drain_fraction'))}
    fake = FakeAction(args, check_mode, case.get('slurm_nodes') if slurm_nodes == () else slurm_nodes, refuse)
    result = fake.run(task_vars=dict(play.facts(), ansible_play_hosts=play.hosts))
    return fake, result, path


def test_faults_1_drains_each_node_and_writes_the_fixture_document(tmp_path):
    case, expected = _case('faults-1')
    fake, result, path = _run(tmp_path, case)
    with open(path) as handle:
        written = json.load(handle)
    assert written == result['document']
    assert written['nodes'].keys() == expected['nodes'].keys()
    for node, data in expected['nodes'].items():
        assert written['nodes'][node]['results'] == data['results']
        assert written['nodes'][node]['drain_reason'] == data['drain_reason']
    drains = [args for name, args in fake.calls if name == 'aicluster.infra.slurm_node']
    assert sorted(a['name'] for a in drains) == ['gpu01', 'gpu02', 'gpu03']
    assert all(a['state'] == 'drained' and a['reason'].startswith('aicluster: ') for a in drains)
    assert result['changed'] and result['written']
    assert result['table'][-1].startswith('verdict FAIL: 3 nodes, 0 passed, 3 failed, 3 drained')
    assert not [name for name in os.listdir(os.path.dirname(path)) if name.startswith('.results.')]


def test_the_maintenance_reservation_is_recorded_in_run(tmp_path):
    case, dummy = _case('healthy')
    reservation = {'name': 'aicluster-verify', 'nodes': ['gpu01', 'gpu02', 'gpu03']}
    dummy, result, dummy = _run(tmp_path, dict(case, run=dict(case['run'], reservation=reservation)))
    assert result['document']['run']['reservation'] == reservation
    dummy, result, dummy = _run(tmp_path, dict(case, run=dict(case['run'], reservation=None)))
    assert 'reservation' not in result['document']['run']


def test_check_mode_writes_nothing_and_still_reports(tmp_path):
    case, dummy = _case('faults-1')
    fake, result, path = _run(tmp_path, case, check_mode=True)
    assert not os.path.exists(path) and result['written'] is False
    assert result['document']['summary']['failed'] == 3


def test_without_slurm_nothing_is_called(tmp_path):
    case, expected = _case('unreachable-and-no-slurm')
    fake, result, dummy = _run(tmp_path, case, slurm=False)
    assert fake.calls == []
    assert result['document']['nodes'] == expected['nodes']


def test_slurm_unreachable_is_said_and_nothing_is_drained(tmp_path):
    case, dummy = _case('faults-1')
    fake, result, dummy = _run(tmp_path, case, slurm_nodes=None)
    assert result['slurm_error'].startswith('scontrol: error')
    assert [name for name, args in fake.calls] == ['aicluster.infra.slurm_node_info']
    assert result['document']['summary']['drained'] == 0


def test_a_node_slurm_refuses_does_not_stop_the_others(tmp_path):
    case, dummy = _case('faults-1')
    fake, result, dummy = _run(tmp_path, case, refuse=['gpu02'])
    nodes = result['document']['nodes']
    assert nodes['gpu02']['drained'] is False and nodes['gpu01']['drained'] and nodes['gpu03']['drained']
    assert result['slurm']['gpu02']['failed'] is True


@pytest.mark.parametrize('bad, said', [
    ({'mode': 'drained'}, 'mode'),
    ({'nodes': []}, 'nodes must be the non-empty list'),
    ({'path': ''}, 'path must be the results.json path'),
    ({'run': {'started': 'x'}}, 'run must have started, finished, inventory, collection_version'),
    ({'colour': 'red'}, 'colour'),
], ids=['mode', 'nodes', 'path', 'run', 'unknown'])
def test_bad_arguments_are_named(bad, said):
    args = {'nodes': ['gpu01'], 'path': '/tmp/x/results.json',
            'run': {'started': 'a', 'finished': 'b', 'inventory': 'c', 'collection_version': 'd'}}
    args.update(bad)
    fake = FakeAction(args, False, [])
    with pytest.raises(AnsibleActionFail, match=said):
        fake.run(task_vars={})
