# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""slurm_accounting with sacctmgr answered by a fake slurmdbd that keeps its QOS, accounts and associations.

The fake applies ``add``/``modify``/``delete`` as sacctmgr 22.05 documents them (``Preempt-=``, ``Flags=-1``,
``TRES=-1``, lower-cased names and descriptions, QOS inherited from the parent account) and prints ``show`` the
way sacctmgr does (``[D-]HH:MM:SS``, ``mem=500G``, QOS lists in its own order), so a second run proves the
module reads back what it wrote as unchanged.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

import pytest

from _module_runner import run_main

from ansible_collections.aicluster.infra.plugins.modules import slurm_accounting

SACCTMGR = '/usr/bin/sacctmgr'
FLAG_NAMES = dict((f.lower(), f) for f in ('DenyOnLimit', 'NoReserve', 'OverPartQOS', 'NoDecay', 'PartitionTimeLimit'))


def _clock(total_seconds):
    days, rest = divmod(total_seconds, 86400)
    text = '%02d:%02d:%02d' % (rest // 3600, rest % 3600 // 60, rest % 60)
    return '%d-%s' % (days, text) if days else text


def _tres_out(limits):
    # sacctmgr prints memory with a unit when it divides evenly, and TRES in its own (id) order
    order = ['cpu', 'mem', 'node', 'billing']
    keys = sorted(limits, key=lambda k: (order.index(k) if k in order else 99, k))
    parts = []
    for key in keys:
        value = limits[key]
        if key == 'mem' and value % 1024 == 0:
            parts.append('mem=%dG' % (value // 1024))
        else:
            parts.append('%s=%d' % (key, value))
    return ','.join(parts)


def _tres_in(current, text):
    limits = dict(current)
    for part in text.split(','):
        key, value = part.split('=')
        if int(value) < 0:
            limits.pop(key, None)
        else:
            limits[key] = int(value)
    return limits


class FakeDbd(object):
    """slurmdbd behind sacctmgr; ``fail`` maps (verb, entity) to (rc, stdout, stderr); ``ignore`` verbs do nothing."""

    def __init__(self, cluster='molslurm', fail=None, ignore=()):
        self.clusters = [cluster]
        self.qos = {'normal': self.new_qos('normal', 'Normal QOS default')}
        self.accounts = {'root': {'org': 'root', 'desc': 'default root account'}}
        self.assocs = {('root', ''): self.new_assoc('', qos=['normal']), ('root', 'root'): self.new_assoc('root')}
        self.users = {'root': {'default': 'root', 'admin': 'Administrator'}}
        self.fail = fail or {}
        self.ignore = ignore
        self.writes = 0

    @staticmethod
    def new_qos(name, desc=None):
        return {'priority': 0, 'grace': 0, 'mode': 'cluster', 'preempt': [], 'wall': None, 'grp': {}, 'pu': {},
                'flags': [], 'desc': desc or name}

    @staticmethod
    def new_assoc(parent, qos=None):
        return {'parent': parent, 'share': '1', 'qos': qos, 'defqos': None}

    def snapshot(self):
        return copy.deepcopy((self.qos, self.accounts, self.assocs, self.users))

    # -- show -------------------------------------------------------------------------------------------------
    def effective(self, account, user, key):
        assoc = self.assocs[(account, user)]
        if assoc[key] is not None or (account, user) == ('root', ''):
            return assoc[key]
        parent = (account, '') if user else (assoc['parent'], '')
        return self.effective(parent[0], parent[1], key)

    def show(self, entity, args):
        fields = next(arg for arg in args if arg.startswith('format=')).split('=', 1)[1].split(',')
        rows = []
        if entity == 'cluster':
            rows = [{'Cluster': name} for name in self.clusters]
        elif entity == 'qos':
            for name, q in sorted(self.qos.items()):
                rows.append({'Name': name, 'Priority': str(q['priority']), 'GraceTime': _clock(q['grace']),
                             'PreemptMode': q['mode'], 'Preempt': ','.join(reversed(q['preempt'])),
                             'MaxWall': _clock(q['wall'] * 60) if q['wall'] is not None else '',
                             'GrpTRES': _tres_out(q['grp']), 'MaxTRESPU': _tres_out(q['pu']),
                             'Flags': ','.join(q['flags']), 'Description': q['desc']})
        elif entity == 'account':
            rows = [{'Account': name, 'Organization': a['org'], 'Description': a['desc']} for name, a in sorted(self.accounts.items())]
        elif entity == 'user':
            rows = [{'User': name, 'DefaultAccount': u['default'], 'AdminLevel': u['admin']} for name, u in sorted(self.users.items())]
        elif entity == 'assoc':
            assert 'cluster=molslurm' in args
            for (account, user), assoc in sorted(self.assocs.items()):
                rows.append({'Account': account, 'User': user, 'Partition': '', 'ParentName': '' if user else assoc['parent'],
                             'Fairshare': assoc['share'], 'QOS': ','.join(reversed(self.effective(account, user, 'qos') or [])),
                             'DefaultQOS': self.effective(account, user, 'defqos') or ''})
        return 0, ''.join('|'.join(row[field] for field in fields) + '\n' for row in rows), ''

    # -- writes -----------------------------------------------------------------------------------------------
    @staticmethod
    def split(args):
        where, values, side = {}, [], 'where'
        for arg in args:
            if arg in ('where', 'set'):
                side = arg
                continue
            key, op, value = arg.partition('=')
            if side == 'set':
                values.append((key.lower(), value))
            else:
                where[key.lower()] = value
        return where, values

    def set_qos(self, q, values):
        for key, value in values:
            if key == 'priority':
                q['priority'] = int(value)
            elif key == 'gracetime':
                q['grace'] = int(value)
            elif key == 'preemptmode':
                q['mode'] = value.lower()
            elif key in ('preempt', 'preempt-'):
                wanted = value.split(',')
                if any(name not in self.qos for name in wanted):
                    return 1, '', ' You gave a bad qos %s\n' % value
                q['preempt'] = [n for n in q['preempt'] if n not in wanted] if key.endswith('-') else wanted
            elif key == 'maxwall':
                q['wall'] = None if int(value) < 0 else int(value)
            elif key == 'grptres':
                q['grp'] = _tres_in(q['grp'], value)
            elif key == 'maxtresperuser':
                q['pu'] = _tres_in(q['pu'], value)
            elif key == 'flags':
                q['flags'] = [] if value == '-1' else [FLAG_NAMES[f.lower()] for f in value.split(',')]
            elif key == 'description':
                q['desc'] = value.lower()
            else:
                return 1, ' Unknown option: %s\n' % key, ''
        return 0, ' Modified qos...\n', ''

    def set_assoc(self, assoc, values):
        for key, value in values:
            if key == 'fairshare':
                assoc['share'] = value
            elif key == 'qos':
                assoc['qos'] = value.split(',')
            elif key == 'parent':
                assoc['parent'] = value
            elif key == 'defaultqos':
                qos = assoc['qos'] if assoc['qos'] is not None else []
                if value not in qos and value not in (self.effective(*self.owner(assoc), key='qos') or []):
                    return 1, '', ' Problem modifying associations: default qos not in qos list\n'
                assoc['defqos'] = value
            else:
                return 1, ' Unknown option: %s\n' % key, ''
        return 0, ' Modified account associations...\n', ''

    def owner(self, assoc):
        return next(key for key, value in self.assocs.items() if value is assoc)

    def write(self, verb, entity, args):
        self.writes += 1
        if verb in self.ignore:
            return 0, ' Nothing modified\n', ''
        where, values = self.split(args)
        if verb == 'add':
            fields = dict((k.lower(), v) for k, v in (arg.split('=', 1) for arg in args))
            name = fields['name']
            if entity == 'qos':
                self.qos[name] = self.new_qos(name)
            elif entity == 'account':
                if fields['parent'] not in self.accounts:
                    return 1, '', ' Parent account %s does not exist\n' % fields['parent']
                self.accounts.setdefault(name, {'org': fields.get('organization', fields['parent']).lower(),
                                                'desc': fields.get('description', name).lower()})
                self.assocs[(name, '')] = self.new_assoc(fields['parent'])
            elif entity == 'user':
                for user in name.split(','):        # sacctmgr takes a list of names
                    for account in fields['account'].split(','):
                        if (account, '') not in self.assocs:
                            return 1, '', ' No such account %s\n' % account
                        self.assocs[(account, user)] = self.new_assoc(account)
                    self.users.setdefault(user, {'default': fields.get('defaultaccount', fields['account'].split(',')[0]),
                                                 'admin': {'administrator': 'Administrator', 'operator': 'Operator'}.get(
                                                     fields.get('adminlevel', 'none').lower(), 'None')})
            return 0, ' Adding ...\n', ''
        name = where['name']
        if verb == 'delete':
            if entity == 'qos':
                del self.qos[name]
            elif entity == 'account':
                for key in [k for k in self.assocs if k[0] == name]:
                    del self.assocs[key]
            elif entity == 'user':
                for key in [k for k in self.assocs if k[1] in name.split(',') and k[0] == where.get('account', k[0])]:
                    del self.assocs[key]
            return 0, ' Deleting ...\n', ''
        if entity == 'qos':
            return self.set_qos(self.qos[name], values)
        if entity == 'account':
            if 'cluster' not in where:
                for key, value in values:
                    self.accounts[name]['desc' if key == 'description' else 'org'] = value.lower()
                return 0, ' Modified accounts...\n', ''
            return self.set_assoc(self.assocs[(name, '')], values)
        for user in name.split(','):
            if 'account' in where:
                answer = self.set_assoc(self.assocs[(where['account'], user)], values)
                if answer[0]:
                    return answer
                continue
            for key, value in values:
                self.users[user]['default' if key == 'defaultaccount' else 'admin'] = value
        return 0, ' Modified users...\n', ''

    def __call__(self, argv):
        assert argv[0] == SACCTMGR
        if argv[1] == '--noheader':
            assert argv[2] == '--parsable2' and argv[3] == 'show'
            answer = self.fail.get(('show', argv[4]))
            return answer if answer else self.show(argv[4], argv[5:])
        assert argv[1] == '--immediate'
        answer = self.fail.get((argv[2], argv[3]))
        return answer if answer else self.write(argv[2], argv[3], argv[4:])


POLICY = {
    'cluster': 'molslurm',
    'qos': [{'name': 'training', 'priority': 100, 'preempt_mode': 'requeue', 'grace_time': 300},
            {'name': 'inference', 'priority': 500, 'preempt': ['training'], 'description': 'Online Inference'},
            {'name': 'debug', 'priority': 1000, 'max_wall': '01:00:00', 'max_tres_per_user': 'gres/gpu=8',
             'grp_tres': {'mem': '100G', 'cpu': 64}, 'flags': ['DenyOnLimit']}],
    'accounts': [{'name': 'ml', 'description': 'Machine learning', 'qos': ['normal', 'training', 'inference', 'debug'],
                  'default_qos': 'normal', 'fairshare': 10}],
    'users': [{'name': 'alice', 'account': 'ml'}, {'name': 'root', 'accounts': ['root', 'ml'], 'default_account': 'root'}],
}


def run(run_module, args, dbd):
    return run_module(slurm_accounting, args, {'sacctmgr': dbd})


def test_fresh_cluster_gets_the_policy_and_a_second_run_changes_nothing(run_module):
    dbd = FakeDbd()
    result, calls = run(run_module, dict(POLICY, _ansible_diff=True), dbd)
    assert result['changed'] is True and result['cluster'] == 'molslurm', result.get('msg')
    assert dbd.qos['debug']['wall'] == 60 and dbd.qos['debug']['pu'] == {'gres/gpu': 8}
    assert dbd.qos['debug']['grp'] == {'mem': 102400, 'cpu': 64} and dbd.qos['inference']['preempt'] == ['training']
    assert dbd.qos['inference']['desc'] == 'online inference' and dbd.qos['training']['grace'] == 300
    assert dbd.assocs[('ml', '')]['defqos'] == 'normal' and dbd.assocs[('ml', 'alice')]['parent'] == 'ml'
    assert ('ml', 'root') in dbd.assocs and dbd.users['alice']['default'] == 'ml'
    assert result['cmds'][0] == [SACCTMGR, '--immediate', 'add', 'qos', 'Name=debug']
    assert [c['object'] for c in result['changes']] == ['qos/debug', 'qos/inference', 'qos/training', 'accounts/ml',
                                                        'users/alice', 'users/root']
    writes = [argv for argv in calls if argv[1] == '--immediate']
    assert writes == result['cmds']
    assert 'qos/debug:\n' in result['diff']['after'] and result['diff']['before'].startswith('users/root:')
    before = dbd.snapshot()
    again, calls = run(run_module, dict(POLICY), dbd)
    assert again['changed'] is False and again['cmds'] == [] and again['changes'] == []
    assert all(argv[1] == '--noheader' for argv in calls) and len(calls) == 5 and dbd.snapshot() == before


def test_check_mode_reports_and_writes_nothing(run_module):
    dbd = FakeDbd()
    before = dbd.snapshot()
    result, calls = run(run_module, dict(POLICY, _ansible_check_mode=True, _ansible_diff=True), dbd)
    assert result['changed'] is True and dbd.writes == 0 and dbd.snapshot() == before
    assert len(result['cmds']) > 5 and all(argv[1] == '--noheader' for argv in calls)
    assert 'accounts/ml:\n' in result['diff']['after']


def test_only_the_changed_field_is_written(run_module):
    dbd = FakeDbd()
    run(run_module, dict(POLICY), dbd)
    changed = copy.deepcopy(POLICY)
    changed['qos'][2]['priority'] = 900
    changed['qos'][1]['preempt'] = []
    result, calls = run(run_module, dict(changed, _ansible_diff=True), dbd)
    assert result['cmds'] == [[SACCTMGR, '--immediate', 'modify', 'qos', 'where', 'Name=debug', 'set', 'Priority=900'],
                              [SACCTMGR, '--immediate', 'modify', 'qos', 'where', 'Name=inference', 'set', 'Preempt-=training']]
    assert result['diff'] == {'before': 'qos/debug:\n  priority: 1000\nqos/inference:\n  preempt: training\n',
                              'after': 'qos/debug:\n  priority: 900\nqos/inference:\n  preempt: (none)\n'}
    assert dbd.qos['debug']['priority'] == 900 and dbd.qos['inference']['preempt'] == []


def test_purge_removes_only_what_is_not_named(run_module):
    dbd = FakeDbd()
    run(run_module, dict(POLICY), dbd)
    dbd.qos['scavenger'] = dbd.new_qos('scavenger')
    kept = dict(POLICY, qos=POLICY['qos'][:2])
    result, dummy = run(run_module, kept, dbd)
    assert result['changed'] is False and 'debug' in dbd.qos          # not named, but no purge
    result, dummy = run(run_module, dict(kept, accounts=[dict(POLICY['accounts'][0], qos=['normal', 'training'])],
                                         purge=['qos']), dbd)
    assert [argv[2:] for argv in result['cmds']] == [
        ['modify', 'account', 'where', 'Name=ml', 'Cluster=molslurm', 'set', 'QOS=normal,training'],
        ['delete', 'qos', 'where', 'Name=debug'], ['delete', 'qos', 'where', 'Name=scavenger']]
    assert sorted(dbd.qos) == ['inference', 'normal', 'training']


def test_many_users_in_few_commands(run_module):
    dbd = FakeDbd()
    users = [{'name': 'user%02d' % number, 'accounts': ['ml'], 'qos': ['normal', 'debug']} for number in range(40)]
    result, dummy = run(run_module, dict(POLICY, users=users), dbd)
    user_cmds = [argv for argv in result['cmds'] if argv[3] == 'user']
    assert len(user_cmds) == 2 and user_cmds[0][4].count(',') == 39 and dbd.assocs[('ml', 'user39')]['qos'] == ['debug', 'normal']
    again, dummy = run(run_module, dict(POLICY, users=users), dbd)
    assert again['changed'] is False


def test_user_absent(run_module):
    dbd = FakeDbd()
    run(run_module, dict(POLICY), dbd)
    result, dummy = run(run_module, {'cluster': 'molslurm', 'users': [{'name': 'alice', 'state': 'absent'}]}, dbd)
    assert result['changed'] and ('ml', 'alice') not in dbd.assocs
    result, dummy = run(run_module, {'cluster': 'molslurm', 'users': [{'name': 'alice', 'state': 'absent'}]}, dbd)
    assert result['changed'] is False


def test_a_refused_command_fails_with_what_sacctmgr_said(run_module):
    dbd = FakeDbd(fail={('add', 'account'): (1, '', ' Problem adding accounts: Permission denied\n')})
    result, dummy = run(run_module, dict(POLICY), dbd)
    assert result['failed'] and 'Permission denied' in result['msg'] and result['rc'] == 1
    assert result['cmd'][2:4] == ['add', 'account'] and 'Permission denied' in result['stderr']
    assert result['cmds'][-1] == result['cmd'] and 'debug' in dbd.qos


def test_a_command_that_changes_nothing_is_caught(run_module):
    dbd = FakeDbd(ignore=('modify',))
    result, dummy = run(run_module, {'cluster': 'molslurm', 'qos': [{'name': 'normal', 'priority': 10}]}, dbd)
    assert result['failed'] and 'still differs' in result['msg'] and 'qos/normal' in result['msg']


def test_slurmdbd_down(run_module):
    err = 'sacctmgr: error: Problem talking to the database: Connection refused\n'
    result, calls = run(run_module, dict(POLICY), FakeDbd(fail={('show', 'cluster'): (1, '', err)}))
    assert result['failed'] and 'Connection refused' in result['msg'] and result['rc'] == 1 and len(calls) == 1
    assert result['cmd'] == [SACCTMGR, '--noheader', '--parsable2', 'show', 'cluster', 'format=Cluster']


def test_unregistered_cluster(run_module):
    result, calls = run(run_module, dict(POLICY, cluster='other'), FakeDbd())
    assert result['failed'] and 'cluster other is not registered' in result['msg'] and 'molslurm' in result['msg']


def test_garbled_output(run_module):
    result, dummy = run(run_module, dict(POLICY), FakeDbd(fail={('show', 'qos'): (0, 'normal|0\n', '')}))
    assert result['failed'] and 'could not be parsed' in result['msg'] and result['stdout'] == 'normal|0\n'


@pytest.mark.parametrize('args, message', [
    ({'qos': [{'name': 'x', 'max_wall': 'soon'}]}, 'qos[0] (x).max_wall'),
    ({'users': [{'name': 'u'}]}, 'users[0] (u).accounts must name'),
    ({'qos': [{'name': 'x', 'preempt': ['nosuch']}]}, 'qos[0] (x).preempt: no QOS nosuch'),
    ({'purge': 'nodes'}, 'purge must be'),
], ids=['bad-wall', 'user-without-account', 'unknown-preempt', 'bad-purge'])
def test_bad_arguments_change_nothing(run_module, args, message):
    dbd = FakeDbd()
    result, dummy = run(run_module, dict({'cluster': 'molslurm'}, **args), dbd)
    assert result['failed'] and message in result['msg'] and dbd.writes == 0


def test_sacctmgr_missing():
    result, box, dummy = run_main(slurm_accounting, dict(POLICY), {})
    assert result['failed'] and 'sacctmgr' in result['msg']
