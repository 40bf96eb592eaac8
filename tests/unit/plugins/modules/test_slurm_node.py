# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.modules import slurm_node

SCONTROL = '/usr/bin/scontrol'


def _node(name, state, reason=None):
    text = ('NodeName=%s Arch=x86_64 CoresPerSocket=48 \n   CPUAlloc=0 CPUEfctv=192 CPUTot=192 CPULoad=0.35\n'
            '   State=%s ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A\n   Partitions=gpu \n' % (name, state))
    if reason is not None:
        text += '   Reason=%s [root@2026-01-06T10:02:33]\n' % reason
    return text


class FakeSlurm(object):
    """scontrol with one node whose state changes on update."""

    def __init__(self, name, state, reason=None, update_rc=0):
        self.name, self.state, self.reason, self.update_rc = name, state, reason, update_rc

    def __call__(self, argv):
        if argv[1] == 'show':
            if argv[3] != self.name:
                return 1, 'Node %s not found\n' % argv[3], ''
            return 0, _node(self.name, self.state, self.reason), ''
        if self.update_rc:
            return self.update_rc, '', 'slurm_update error: Invalid node state specified\n'
        fields = dict(arg.split('=', 1) for arg in argv[2:])
        if fields['State'] == 'DRAIN':
            self.state = self.state if '+DRAIN' in self.state else self.state + '+DRAIN'
            self.reason = fields['Reason']
        elif fields['State'] == 'RESUME':
            self.state = self.state.replace('+DRAIN', '')
            self.reason = None
        return 0, '', ''


def test_drain_idle_node(run_module):
    slurm = FakeSlurm('gpu02', 'IDLE')
    result, calls = run_module(slurm_node, {'name': 'gpu02', 'state': 'drained', 'reason': 'aicluster: gpu.xid GPU 3',
                                            '_ansible_diff': True}, {'scontrol': slurm})
    assert result['changed'] is True
    assert calls[1] == [SCONTROL, 'update', 'NodeName=gpu02', 'State=DRAIN', 'Reason=aicluster: gpu.xid GPU 3']
    assert result['state_before'] == 'IDLE' and result['state_after'] == 'IDLE+DRAIN'
    assert result['reason_after'] == 'aicluster: gpu.xid GPU 3' and result['reason_before'] is None
    assert result['diff'] == {'before': 'state: IDLE\nreason: None\n',
                              'after': 'state: IDLE+DRAIN\nreason: aicluster: gpu.xid GPU 3\n'}


def test_drain_is_idempotent_ignoring_the_stamp(run_module):
    slurm = FakeSlurm('gpu02', 'IDLE+DRAIN', 'aicluster: gpu.xid GPU 3')
    result, calls = run_module(slurm_node, {'name': 'gpu02', 'state': 'drained', 'reason': 'aicluster: gpu.xid GPU 3'},
                               {'scontrol': slurm})
    assert result['changed'] is False and len(calls) == 1
    assert result['reason_before'] == 'aicluster: gpu.xid GPU 3'


def test_drain_with_a_new_reason_replaces_it(run_module):
    slurm = FakeSlurm('gpu02', 'MIXED+DRAIN', 'aicluster: gpu.xid GPU 3')
    result, calls = run_module(slurm_node, {'name': 'gpu02', 'state': 'drained', 'reason': 'aicluster: nccl.busbw node'},
                               {'scontrol': slurm})
    assert result['changed'] is True and result['reason_after'] == 'aicluster: nccl.busbw node'


def test_check_mode_predicts_and_changes_nothing(run_module):
    slurm = FakeSlurm('gpu02', 'IDLE')
    result, calls = run_module(slurm_node, {'name': 'gpu02', 'state': 'drained', 'reason': 'aicluster: x',
                                            '_ansible_check_mode': True, '_ansible_diff': True}, {'scontrol': slurm})
    assert result['changed'] is True and len(calls) == 1 and slurm.state == 'IDLE'
    assert result['state_after'] == 'IDLE+DRAIN' and result['cmd'][3] == 'State=DRAIN'
    assert 'IDLE+DRAIN' in result['diff']['after']


def test_resume_own_drain(run_module):
    slurm = FakeSlurm('gpu02', 'IDLE+DRAIN', 'aicluster: fabric.link_width mlx5_3:1')
    result, calls = run_module(slurm_node, {'name': 'gpu02', 'state': 'resumed'}, {'scontrol': slurm})
    assert result['changed'] is True
    assert calls[1] == [SCONTROL, 'update', 'NodeName=gpu02', 'State=RESUME']
    assert result['state_after'] == 'IDLE' and result['reason_after'] is None


def test_resume_refuses_someone_elses_drain(run_module):
    slurm = FakeSlurm('gpu02', 'IDLE+DRAIN', 'disk replacement, ticket 4711')
    result, calls = run_module(slurm_node, {'name': 'gpu02', 'state': 'resumed'}, {'scontrol': slurm})
    assert result['failed'] is True and len(calls) == 1
    assert 'drained by someone else' in result['msg'] and 'disk replacement' in result['msg']
    assert slurm.state == 'IDLE+DRAIN'


def test_resume_forced(run_module):
    slurm = FakeSlurm('gpu02', 'IDLE+DRAIN', 'disk replacement')
    result, dummy = run_module(slurm_node, {'name': 'gpu02', 'state': 'resumed', 'force': True}, {'scontrol': slurm})
    assert result['changed'] is True and slurm.state == 'IDLE'


def test_resume_undrained_node_is_a_no_op(run_module):
    slurm = FakeSlurm('gpu02', 'IDLE')
    result, calls = run_module(slurm_node, {'name': 'gpu02', 'state': 'resumed'}, {'scontrol': slurm})
    assert result['changed'] is False and len(calls) == 1


def test_unknown_node_and_bad_arguments(run_module):
    result, dummy = run_module(slurm_node, {'name': 'gpu99', 'state': 'resumed'}, {'scontrol': FakeSlurm('gpu02', 'IDLE')})
    assert result['failed'] is True and 'gpu99 not found' in result['msg']
    result, calls = run_module(slurm_node, {'name': 'gpu[01-02]', 'state': 'resumed'}, {'scontrol': FakeSlurm('gpu02', 'IDLE')})
    assert result['failed'] is True and calls == []
    result, calls = run_module(slurm_node, {'name': 'gpu02', 'state': 'drained'}, {'scontrol': FakeSlurm('gpu02', 'IDLE')})
    assert result['failed'] is True and 'reason' in result['msg']


def test_update_failure_is_reported(run_module):
    slurm = FakeSlurm('gpu02', 'IDLE', update_rc=1)
    result, dummy = run_module(slurm_node, {'name': 'gpu02', 'state': 'drained', 'reason': 'aicluster: x'}, {'scontrol': slurm})
    assert result['failed'] is True and 'Invalid node state' in result['msg']


def test_scontrol_missing(run_module):
    result, calls = run_module(slurm_node, {'name': 'gpu02', 'state': 'resumed'}, {})
    assert result['failed'] is True and calls == []
