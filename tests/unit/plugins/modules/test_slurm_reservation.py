# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""slurm_reservation with scontrol answered by a fake controller that keeps its reservations."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from _module_runner import run_main

from ansible_collections.aicluster.infra.plugins.module_utils.slurm import hostlist_compress, hostlist_expand
from ansible_collections.aicluster.infra.plugins.modules import slurm_reservation

SCONTROL = '/usr/bin/scontrol'
FORMAT = '%Y-%m-%dT%H:%M:%S'


def _show(resv):
    return ('ReservationName=%(name)s StartTime=%(start)s EndTime=%(end)s Duration=%(duration)s\n'
            '   Nodes=%(nodes)s NodeCnt=%(count)d CoreCnt=96 Features=(null) PartitionName=(null) Flags=%(flags)s\n'
            '   TRES=cpu=96\n'
            '   Users=%(users)s Groups=(null) Accounts=(null) Licenses=(null) State=%(state)s BurstBuffer=(null) Watts=n/a\n'
            '   MaxStartDelay=(null)\n\n' % resv)


class FakeSlurm(object):
    """scontrol with reservations that create and delete change; ``fail`` maps a verb to (rc, stderr)."""

    def __init__(self, reservations=None, fail=None):
        self.resv = dict((r['name'], r) for r in reservations or [])
        self.fail = fail or {}

    @staticmethod
    def reservation(name, nodes, users='root', flags='MAINT,IGNORE_JOBS,SPEC_NODES', left_s=4 * 3600, state='ACTIVE'):
        now = time.time()
        return {'name': name, 'start': time.strftime(FORMAT, time.localtime(now - 60)),
                'end': time.strftime(FORMAT, time.localtime(now + left_s)), 'duration': '04:00:00',
                'nodes': nodes, 'count': len(hostlist_expand(nodes)), 'flags': flags, 'users': users, 'state': state}

    def __call__(self, argv):
        verb = argv[1]
        if verb in self.fail:
            rc, err = self.fail[verb]
            return rc, '', err
        if verb == 'show':
            name = argv[3]
            if name not in self.resv:
                return 1, 'Reservation %s not found\n' % name, ''
            return 0, _show(self.resv[name]), ''
        fields = dict(arg.split('=', 1) for arg in argv[2:] if '=' in arg)
        name = fields['ReservationName']
        if verb == 'delete':
            del self.resv[name]
            return 0, '', ''
        if name in self.resv:
            return 1, '', 'Error creating the reservation: Duplicate reservation name\n'
        flags = fields['Flags'].split(',')
        self.resv[name] = self.reservation(name, hostlist_compress(fields['Nodes']), fields['Users'],
                                           ','.join(flags[:1] + ['IGNORE_JOBS', 'SPEC_NODES'] if 'MAINT' in flags else flags),
                                           left_s=int(fields['Duration']) * 60)
        return 0, 'Reservation created: %s\n' % name, ''


def run(args, slurm):
    result, box, exited = run_main(slurm_reservation, args, {'scontrol': slurm})
    assert exited
    for environ in box.environ:
        assert environ == {'LANG': 'C', 'LC_ALL': 'C', 'SLURM_TIME_FORMAT': 'standard'}
    return result, box.calls


def test_create_on_named_nodes():
    slurm = FakeSlurm()
    result, calls = run({'name': 'aicluster-verify', 'nodes': ['gpu01', 'gpu03', 'gpu02'], 'users': ['root'], 'minutes': 120,
                         '_ansible_diff': True}, slurm)
    assert result['changed'] is True and result['action'] == 'created' and result['before'] is None
    assert calls[1] == [SCONTROL, 'create', 'reservation', 'ReservationName=aicluster-verify', 'StartTime=now', 'Duration=120',
                        'Nodes=gpu[01-03]', 'Users=root', 'Flags=MAINT,IGNORE_JOBS']
    assert result['reservation']['Nodes'] == 'gpu[01-03]' and result['reservation']['State'] == 'ACTIVE'
    assert result['nodes'] == ['gpu01', 'gpu02', 'gpu03']
    assert result['diff']['before'] == '' and 'Nodes: gpu[01-03]' in result['diff']['after']


def test_users_default_to_who_runs_the_module(monkeypatch):
    monkeypatch.setattr(slurm_reservation.getpass, 'getuser', lambda: 'slurm')
    result, calls = run({'name': 'v', 'nodes': ['gpu01']}, FakeSlurm())
    assert 'Users=slurm' in calls[1] and 'Duration=240' in calls[1]


def test_same_reservation_changes_nothing():
    slurm = FakeSlurm([FakeSlurm.reservation('aicluster-verify', 'gpu[01-03]')])
    result, calls = run({'name': 'aicluster-verify', 'nodes': ['gpu[01-02]', 'gpu03'], 'users': ['root'], 'minutes': 240}, slurm)
    assert result['changed'] is False and result['action'] == 'none' and len(calls) == 1
    assert result['reservation']['Nodes'] == 'gpu[01-03]'


def test_a_crashed_runs_reservation_is_replaced():
    # left by a run that died: other nodes and an end too near for this run
    slurm = FakeSlurm([FakeSlurm.reservation('aicluster-verify', 'gpu[01-02]', left_s=600)])
    result, calls = run({'name': 'aicluster-verify', 'nodes': ['gpu01', 'gpu02', 'gpu03'], 'users': ['root']}, slurm)
    assert result['changed'] is True and result['action'] == 'replaced'
    assert [argv[1] for argv in calls] == ['show', 'delete', 'create', 'show']
    assert calls[1] == [SCONTROL, 'delete', 'ReservationName=aicluster-verify']
    assert any(why.startswith('nodes gpu[01-02]') for why in result['why']) and any('too soon' in why for why in result['why'])
    assert result['reservation']['Nodes'] == 'gpu[01-03]' and result['before']['Nodes'] == 'gpu[01-02]'


def test_replaced_when_a_flag_or_the_users_differ():
    slurm = FakeSlurm([FakeSlurm.reservation('v', 'gpu01', users='alice', flags='SPEC_NODES')])
    result, dummy = run({'name': 'v', 'nodes': ['gpu01'], 'users': ['root']}, slurm)
    assert result['action'] == 'replaced' and len(result['why']) == 2  # IGNORE_JOBS is not compared


def test_check_mode_runs_nothing_that_writes():
    slurm = FakeSlurm([FakeSlurm.reservation('v', 'gpu01', left_s=60)])
    result, calls = run({'name': 'v', 'nodes': ['gpu01', 'gpu02'], 'users': ['root'], '_ansible_check_mode': True,
                         '_ansible_diff': True}, slurm)
    assert result['changed'] is True and result['action'] == 'replaced' and len(calls) == 1
    assert [argv[1] for argv in result['cmds']] == ['delete', 'create']
    assert slurm.resv['v']['nodes'] == 'gpu01' and result['reservation'] is None
    assert 'Nodes: gpu[01-02]' in result['diff']['after'] and 'Nodes: gpu01' in result['diff']['before']


def test_check_mode_create_on_a_cluster_without_it():
    result, calls = run({'name': 'v', 'nodes': ['gpu01'], '_ansible_check_mode': True}, FakeSlurm())
    assert result['changed'] is True and result['action'] == 'created' and result['reservation'] is None and len(calls) == 1


def test_absent_deletes_and_is_idempotent():
    slurm = FakeSlurm([FakeSlurm.reservation('v', 'gpu01')])
    result, calls = run({'name': 'v', 'state': 'absent', '_ansible_diff': True}, slurm)
    assert result['changed'] is True and result['action'] == 'deleted' and result['reservation'] is None
    assert calls[1] == [SCONTROL, 'delete', 'ReservationName=v'] and 'v' not in slurm.resv
    assert result['diff']['after'] == ''
    result, calls = run({'name': 'v', 'state': 'absent'}, slurm)
    assert result['changed'] is False and result['action'] == 'none' and len(calls) == 1


def test_absent_in_check_mode():
    slurm = FakeSlurm([FakeSlurm.reservation('v', 'gpu01')])
    result, calls = run({'name': 'v', 'state': 'absent', '_ansible_check_mode': True}, slurm)
    assert result['changed'] is True and len(calls) == 1 and 'v' in slurm.resv


def test_delete_refused_while_jobs_run_in_it():
    slurm = FakeSlurm([FakeSlurm.reservation('v', 'gpu01')], fail={'delete': (1, 'Reservation request denied: Requested reservation is in use\n')})
    result, dummy = run({'name': 'v', 'state': 'absent'}, slurm)
    assert result['failed'] and 'in use' in result['msg'] and result['rc'] == 1
    assert result['cmd'] == [SCONTROL, 'delete', 'ReservationName=v'] and 'in use' in result['stderr']


def test_create_refused():
    slurm = FakeSlurm(fail={'create': (1, 'Error creating the reservation: Invalid node name specified\n')})
    result, dummy = run({'name': 'v', 'nodes': ['gpu09'], 'users': ['root']}, slurm)
    assert result['failed'] and 'Invalid node name' in result['msg'] and result['cmd'][1] == 'create'


def test_controller_unreachable():
    slurm = FakeSlurm(fail={'show': (1, 'slurm_load_reservations error: Unable to contact slurm controller (connect failure)\n')})
    result, calls = run({'name': 'v', 'nodes': ['gpu01']}, slurm)
    assert result['failed'] and 'Unable to contact' in result['msg'] and len(calls) == 1


def test_bad_arguments_one_sentence_each():
    result, calls = run({'name': 'bad name', 'nodes': [], 'minutes': 0, 'users': ['-x']}, FakeSlurm())
    assert result['failed'] and calls == []
    assert 'name must be' in result['msg'] and 'nodes must name' in result['msg'] and 'minutes must be' in result['msg']
    assert 'users' in result['msg']


def test_scontrol_missing():
    result, box, dummy = run_main(slurm_reservation, {'name': 'v', 'nodes': ['gpu01']}, {})
    assert result['failed'] and 'scontrol' in result['msg']
