# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""sacctmgr parsers, value normalisation and the change plan (module_utils/slurm_accounting*.py).

The handmade captures follow what sacctmgr 22.05 prints with ``--noheader --parsable2`` and the module's
``format=`` lists (src/sacctmgr/common.c, qos_functions.c): MaxWall and GraceTime as [D-]HH:MM:SS, memory TRES
with a unit, PreemptMode in lower case and ``cluster`` when unset, QOS lists in no particular order, a share of
``parent``, a ``|`` inside the last (free-text) column, and the errors it prints when slurmdbd is down.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

import pytest
from hypothesis import given

from _fuzz import FUZZ_SETTINGS, only_parse_error, texts_from
from _paths import own_fixture

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.slurm_accounting import (
    ASSOC_FORMAT, QOS_FORMAT, UNLIMITED, flags, minutes, parse_accounts, parse_assocs, parse_clusters, parse_qos,
    parse_rows, parse_users, purge_kinds, seconds, slurm_seconds, tres, tres_text, wanted,
)
from ansible_collections.aicluster.infra.plugins.module_utils.slurm_accounting_plan import diff, plan

QOS = 'sacctmgr/sacctmgr-22.05-show-qos-handmade.txt'
ACCOUNTS = 'sacctmgr/sacctmgr-22.05-show-account-handmade.txt'
ASSOCS = 'sacctmgr/sacctmgr-22.05-show-assoc-handmade.txt'
USERS = 'sacctmgr/sacctmgr-22.05-show-user-handmade.txt'
CLUSTERS = 'sacctmgr/sacctmgr-22.05-show-cluster-handmade.txt'
DBD_DOWN = 'sacctmgr/sacctmgr-22.05-show-qos-dbd-down-handmade.txt'


def current():
    return {'qos': parse_qos(own_fixture(QOS)), 'accounts': parse_accounts(own_fixture(ACCOUNTS)),
            'assocs': parse_assocs(own_fixture(ASSOCS)), 'users': parse_users(own_fixture(USERS))}


def fresh():
    """A cluster just registered: Slurm's normal QOS, the root account and root's association."""
    return {'qos': parse_qos('normal|0|00:00:00|cluster||||||Normal QOS default\n'),
            'accounts': parse_accounts('root|root|default root account\n'),
            'assocs': parse_assocs('root||||1|normal|\nroot|root|||1|normal|\n'),
            'users': parse_users('root|root|Administrator\n')}


def want(**params):
    found, problems = wanted(dict({'qos': [], 'accounts': [], 'users': [], 'purge': False}, **params))
    assert problems == []
    return found


# ---------------------------------------------------------------------------------------------------------------
# parsing
# ---------------------------------------------------------------------------------------------------------------

def test_qos_values_as_slurm_prints_them():
    found = parse_qos(own_fixture(QOS))
    assert sorted(found) == ['debug', 'inference', 'long', 'normal', 'training']
    assert found['normal'] == {
        'name': 'normal', 'priority': 0, 'grace_time': 0, 'preempt_mode': 'cluster', 'preempt': [],
        'max_wall': UNLIMITED, 'grp_tres': {}, 'max_tres_per_user': {}, 'flags': [], 'description': 'Normal QOS default'}
    assert found['training']['grace_time'] == 300 and found['training']['preempt_mode'] == 'requeue'
    assert found['debug']['max_wall'] == 60 and found['debug']['max_tres_per_user'] == {'gres/gpu': 8}
    assert found['debug']['flags'] == ['DenyOnLimit']
    long_qos = found['long']
    assert long_qos['max_wall'] == 7 * 24 * 60 and long_qos['grace_time'] == 90
    assert long_qos['preempt'] == ['debug', 'training']
    assert long_qos['grp_tres'] == {'cpu': 256, 'gres/gpu': 16, 'mem': 500 * 1024}
    assert long_qos['max_tres_per_user'] == {'node': 2} and long_qos['flags'] == ['DenyOnLimit', 'NoReserve']
    assert long_qos['description'] == 'a | in a description'


def test_accounts_associations_users_clusters():
    accounts = parse_accounts(own_fixture(ACCOUNTS))
    assert accounts['ml'] == {'name': 'ml', 'organization': 'research', 'description': 'machine learning'}
    assert accounts['ops']['description'] == ''
    assocs = parse_assocs(own_fixture(ASSOCS))
    assert ('ml', 'bob') not in assocs          # a partition association is not managed
    assert assocs[('ml', '')] == {'account': 'ml', 'user': '', 'parent': 'root', 'fairshare': 10,
                                  'qos': ['debug', 'inference', 'normal', 'training'], 'default_qos': 'normal'}
    assert assocs[('ops', '')]['fairshare'] == 'parent' and assocs[('ml', 'carol')]['default_qos'] == 'debug'
    users = parse_users(own_fixture(USERS))
    assert users['carol'] == {'name': 'carol', 'default_account': 'ml', 'admin_level': 'Operator'}
    assert users['root']['admin_level'] == 'Administrator'
    assert parse_clusters(own_fixture(CLUSTERS)) == ['molslurm']


@pytest.mark.parametrize('text, why', [
    (None, 'must be text'),
    ('normal|0|00:00:00\n', 'expected 10'),
    ('long|10|00:00:00|cancel||forever|||||\n', 'not a Slurm time'),
    ('x|0|00:00:00|cluster|||cpu=lots||||\n', 'not a count'),
], ids=['not-text', 'too-few-fields', 'bad-wall', 'bad-tres'])
def test_not_qos_output(text, why):
    with pytest.raises(ParseError, match=why):
        parse_qos(text)


def test_slurmdbd_down_is_a_parse_error():
    with pytest.raises(ParseError, match='Connection refused'):
        parse_rows(own_fixture(DBD_DOWN), QOS_FORMAT)


def test_empty_output_is_no_rows():
    assert parse_qos('') == {} and parse_assocs('\n\n') == {}


@FUZZ_SETTINGS
@given(texts_from([own_fixture(QOS), own_fixture(ASSOCS)]))
def test_parsers_only_raise_parse_error(text):
    for parser in (parse_qos, parse_assocs, parse_accounts, parse_users, parse_clusters):
        only_parse_error(parser, text)


# ---------------------------------------------------------------------------------------------------------------
# values
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('value, expected', [
    (240, 240), ('240', 240), ('04:00:00', 240), ('1-00:00:00', 1440), ('2-12', 3600), ('1-02:30', 1590),
    ('30:01', 31), ('', UNLIMITED), ('UNLIMITED', UNLIMITED), (-1, UNLIMITED), ('-1', UNLIMITED),
], ids=['int-minutes', 'digits-minutes', 'hh-mm-ss', 'days', 'days-hours', 'days-hh-mm', 'seconds-round-up',
        'empty', 'unlimited', 'minus-one', 'minus-one-text'])
def test_minutes(value, expected):
    assert minutes(value) == expected


@pytest.mark.parametrize('value, expected', [
    (300, 300), ('300', 300), ('00:05:00', 300), ('05:00', 300), ('1-00:00:00', 86400), ('', 0),
], ids=['int', 'digits', 'hh-mm-ss', 'mm-ss', 'day', 'empty'])
def test_seconds(value, expected):
    assert seconds(value) == expected


@pytest.mark.parametrize('bad', ['soon', '1:2:3:4', True])
def test_bad_times(bad):
    with pytest.raises(ValueError):
        minutes(bad)


def test_slurm_seconds():
    assert slurm_seconds('1-01:01:01') == 90061 and slurm_seconds('10') == 600


@pytest.mark.parametrize('value, expected', [
    ({'gres/gpu': 8, 'CPU': '4'}, {'gres/gpu': 8, 'cpu': 4}),
    ('gres/gpu=8,cpu=4', {'gres/gpu': 8, 'cpu': 4}),
    ('mem=500G,node=2', {'mem': 512000, 'node': 2}),
    ('mem=512000M', {'mem': 512000}),
    ({'mem': '1T'}, {'mem': 1024 * 1024}),
    ('gres/gpu:h100=16,billing=100', {'gres/gpu:h100': 16, 'billing': 100}),
    ('cpu=-1', {'cpu': UNLIMITED}),
    ('', {}), (None, {}),
], ids=['dict', 'string', 'mem-g', 'mem-m', 'mem-t', 'typed-gres', 'clear', 'empty', 'none'])
def test_tres(value, expected):
    assert tres(value) == expected


@pytest.mark.parametrize('bad', ['cpu', 'cpu=four', 'gpu count=1', {'cpu': True}, 'cpu=1' + '0' * 30])
def test_bad_tres(bad):
    with pytest.raises(ValueError):
        tres(bad)


def test_tres_text_and_flags():
    assert tres_text({'node': 2, 'cpu': 4, 'gres/gpu': -1}) == 'cpu=4,gres/gpu=-1,node=2'
    assert flags(['noreserve', 'DENYONLIMIT', 'Relative']) == ['DenyOnLimit', 'NoReserve', 'Relative']


@pytest.mark.parametrize('value, expected', [
    (False, set()), (None, set()), ([], set()), (True, {'qos', 'accounts', 'users'}), ('all', {'qos', 'accounts', 'users'}),
    (['qos'], {'qos'}), ('qos,users', {'qos', 'users'}),
], ids=['false', 'none', 'empty', 'true', 'all', 'list', 'text'])
def test_purge_kinds(value, expected):
    assert purge_kinds(value) == (expected, [])


def test_wanted_problems_one_sentence_each():
    found, problems = wanted({
        'qos': [{'name': 'Bad Name'}, {'name': 'a', 'max_wall': 'soon', 'grp_tres': 'gpu', 'description': 'say "hi"'},
                {'name': 'a'}],
        'accounts': [{'name': 'x', 'qos': [], 'default_qos': 'normal'}, {'name': 'y', 'fairshare': 'lots'}],
        'users': [{'name': 'u', 'accounts': []}, {'name': 'v', 'accounts': ['x'], 'default_account': 'y'}],
        'purge': ['qos', 'nodes']})
    text = '\n'.join(problems)
    for part in ('qos[0] (bad name).name', 'qos[1] (a).max_wall', 'qos[1] (a).grp_tres', 'qos[1] (a).description',
                 'qos[2] (a): a is named twice', 'accounts[0] (x).qos must name at least one',
                 'accounts[0] (x).default_qos normal is not in its qos list', 'accounts[1] (y).fairshare',
                 'users[0] (u).accounts must name', 'users[1] (v).default_account y', 'purge must be'):
        assert part in text, part


def test_wanted_normalises():
    found = want(qos=[{'name': 'Debug', 'max_wall': '01:00:00', 'max_tres_per_user': {'gres/gpu': 8, 'cpu': -1},
                       'preempt': ['Training'], 'flags': ['denyonlimit'], 'priority': 10}],
                 users=[{'name': 'Alice', 'accounts': ['ML', 'ops'], 'admin_level': 'operator'}])
    assert found['qos']['debug'] == {'name': 'debug', 'state': 'present', 'where': 'qos[0] (debug)', 'max_wall': 60,
                                     'max_tres_per_user': {'gres/gpu': 8}, 'preempt': ['training'],
                                     'flags': ['DenyOnLimit'], 'priority': 10}
    assert found['users']['alice']['default_account'] == 'ml' and found['users']['alice']['admin_level'] == 'Operator'


# ---------------------------------------------------------------------------------------------------------------
# the plan
# ---------------------------------------------------------------------------------------------------------------

POLICY = dict(
    qos=[{'name': 'training', 'priority': 100, 'preempt_mode': 'requeue', 'grace_time': 300},
         {'name': 'inference', 'priority': 500, 'preempt': ['training']},
         {'name': 'debug', 'priority': 1000, 'max_wall': 60, 'max_tres_per_user': 'gres/gpu=8', 'flags': ['DenyOnLimit']}],
    accounts=[{'name': 'ml', 'description': 'Machine Learning', 'qos': ['normal', 'training', 'inference', 'debug'],
               'default_qos': 'normal', 'fairshare': 10}],
    users=[{'name': 'alice', 'accounts': ['ml']}])


def test_create_on_a_fresh_cluster():
    result = plan(fresh(), want(**POLICY), 'molslurm')
    assert result['problems'] == []
    assert result['commands'] == [
        ['add', 'qos', 'Name=debug'], ['add', 'qos', 'Name=inference'], ['add', 'qos', 'Name=training'],
        ['modify', 'qos', 'where', 'Name=debug', 'set', 'Flags=DenyOnLimit', 'MaxTRESPerUser=gres/gpu=8', 'MaxWall=60',
         'Priority=1000'],
        ['modify', 'qos', 'where', 'Name=inference', 'set', 'Preempt=training', 'Priority=500'],
        ['modify', 'qos', 'where', 'Name=training', 'set', 'GraceTime=300', 'PreemptMode=requeue', 'Priority=100'],
        ['add', 'account', 'Name=ml', 'Cluster=molslurm', 'Parent=root', 'Description=Machine Learning'],
        ['modify', 'account', 'where', 'Name=ml', 'Cluster=molslurm', 'set', 'Fairshare=10',
         'QOS=debug,inference,normal,training'],
        ['modify', 'account', 'where', 'Name=ml', 'Cluster=molslurm', 'set', 'DefaultQOS=normal'],
        ['add', 'user', 'Name=alice', 'Account=ml', 'Cluster=molslurm', 'DefaultAccount=ml'],
    ]
    assert [(c['object'], c['action']) for c in result['changes']] == [
        ('qos/debug', 'create'), ('qos/inference', 'create'), ('qos/training', 'create'), ('accounts/ml', 'create'),
        ('users/alice', 'create')]
    text = diff(result['changes'])
    assert text['before'] == '' and 'qos/debug:\n' in text['after'] and '  max_wall: 60 min\n' in text['after']


def test_equal_values_in_slurms_printed_formats_change_nothing():
    # the same policy as the fixture holds, written the other ways the module accepts
    same = want(
        qos=[{'name': 'Training', 'priority': 100, 'preempt_mode': 'requeue', 'grace_time': '00:05:00',
              'description': 'Training jobs, requeued  when preempted'},
             {'name': 'inference', 'priority': 500, 'preempt': ['TRAINING']},
             {'name': 'debug', 'max_wall': '01:00:00', 'max_tres_per_user': {'gres/gpu': 8}, 'flags': ['denyonlimit']},
             {'name': 'long', 'max_wall': '7-00:00:00', 'grace_time': 90, 'preempt': ['debug', 'training'],
              'grp_tres': {'mem': '512000M', 'cpu': 256, 'gres/gpu': 16}, 'flags': ['NoReserve', 'DenyOnLimit']}],
        accounts=[{'name': 'ml', 'parent': 'root', 'fairshare': 10, 'qos': ['normal', 'debug', 'inference', 'training'],
                   'default_qos': 'normal', 'description': 'Machine learning', 'organization': 'RESEARCH'},
                  {'name': 'ops', 'fairshare': 'parent'}],
        users=[{'name': 'alice', 'accounts': ['ml'], 'admin_level': 'none'},
               {'name': 'carol', 'accounts': ['ml'], 'fairshare': 5, 'qos': ['normal', 'debug'], 'default_qos': 'debug',
                'admin_level': 'operator'}])
    result = plan(current(), same, 'molslurm')
    assert result == {'changes': [], 'commands': [], 'problems': []}


def test_only_the_field_that_differs_is_modified():
    result = plan(current(), want(qos=[{'name': 'debug', 'priority': 1000, 'max_wall': 120},
                                       {'name': 'inference', 'preempt': []}]), 'molslurm')
    assert result['commands'] == [['modify', 'qos', 'where', 'Name=debug', 'set', 'MaxWall=120'],
                                  ['modify', 'qos', 'where', 'Name=inference', 'set', 'Preempt-=training']]
    assert result['changes'][0]['fields'] == {'max_wall': {'before': 60, 'after': 120}}
    text = diff(result['changes'])
    assert text['before'] == 'qos/debug:\n  max_wall: 60 min\nqos/inference:\n  preempt: training\n'
    assert text['after'] == 'qos/debug:\n  max_wall: 120 min\nqos/inference:\n  preempt: (none)\n'


def test_limits_and_flags_cleared():
    result = plan(current(), want(qos=[{'name': 'long', 'grp_tres': {'gres/gpu': 32}, 'max_wall': 'UNLIMITED', 'flags': []},
                                       {'name': 'debug', 'max_tres_per_user': {}}]), 'molslurm')
    assert result['commands'] == [
        ['modify', 'qos', 'where', 'Name=debug', 'set', 'MaxTRESPerUser=gres/gpu=-1'],
        ['modify', 'qos', 'where', 'Name=long', 'set', 'Flags=-1', 'GrpTRES=cpu=-1,gres/gpu=32,mem=-1', 'MaxWall=-1']]


def test_accounts_and_users_modified_in_order():
    result = plan(current(), want(
        accounts=[{'name': 'ml', 'qos': ['normal', 'debug'], 'default_qos': 'debug', 'description': 'ML group'},
                  {'name': 'vision', 'parent': 'ml'}],
        users=[{'name': 'alice', 'accounts': ['vision', 'ml'], 'fairshare': 'parent', 'admin_level': 'admin'},
               {'name': 'dave', 'accounts': ['ml'], 'qos': ['normal'], 'default_qos': 'normal'}]), 'molslurm')
    assert result['commands'] == [
        ['modify', 'account', 'where', 'Name=ml', 'set', 'Description=ML group'],
        ['modify', 'account', 'where', 'Name=ml', 'Cluster=molslurm', 'set', 'QOS=debug,normal'],
        ['modify', 'account', 'where', 'Name=ml', 'Cluster=molslurm', 'set', 'DefaultQOS=debug'],
        ['add', 'account', 'Name=vision', 'Cluster=molslurm', 'Parent=ml'],
        ['add', 'user', 'Name=alice', 'Account=vision', 'Cluster=molslurm'],
        ['add', 'user', 'Name=dave', 'Account=ml', 'Cluster=molslurm', 'DefaultAccount=ml'],
        ['modify', 'user', 'where', 'Name=alice', 'Cluster=molslurm', 'Account=ml', 'set', 'Fairshare=parent'],
        ['modify', 'user', 'where', 'Name=alice', 'Cluster=molslurm', 'Account=vision', 'set', 'Fairshare=parent'],
        ['modify', 'user', 'where', 'Name=dave', 'Cluster=molslurm', 'Account=ml', 'set', 'QOS=normal'],
        ['modify', 'user', 'where', 'Name=dave', 'Cluster=molslurm', 'Account=ml', 'set', 'DefaultQOS=normal'],
        ['modify', 'user', 'where', 'Name=alice', 'Cluster=molslurm', 'set', 'DefaultAccount=vision'],
        ['modify', 'user', 'where', 'Name=alice', 'set', 'AdminLevel=Administrator'],
    ]
    alice = next(c for c in result['changes'] if c['object'] == 'users/alice')
    assert alice['action'] == 'modify' and alice['fields']['accounts'] == {'before': ['ml'], 'after': ['ml', 'vision']}
    assert alice['fields']['default_account'] == {'before': 'ml', 'after': 'vision'}


def test_the_same_change_for_many_users_is_one_command():
    users = [{'name': 'user%03d' % number, 'accounts': ['ml'], 'qos': ['normal', 'debug']} for number in range(300)]
    users.append({'name': 'alice', 'accounts': ['ml'], 'qos': ['normal', 'debug']})
    result = plan(current(), want(users=users), 'molslurm')
    names = ','.join('user%03d' % number for number in range(300))
    assert result['commands'] == [
        ['add', 'user', 'Name=%s' % names, 'Account=ml', 'Cluster=molslurm', 'DefaultAccount=ml'],
        ['modify', 'user', 'where', 'Name=alice,%s' % names, 'Cluster=molslurm', 'Account=ml', 'set', 'QOS=debug,normal']]
    assert len(result['changes']) == 301 and result['changes'][0] == {
        'object': 'users/alice', 'action': 'modify',
        'fields': {'ml/qos': {'before': ['debug', 'inference', 'normal', 'training'], 'after': ['debug', 'normal']}}}


def test_absent_deletes_and_nothing_else_goes_without_purge():
    result = plan(current(), want(qos=[{'name': 'long', 'state': 'absent'}, {'name': 'gone', 'state': 'absent'}],
                                  users=[{'name': 'carol', 'state': 'absent'}]), 'molslurm')
    assert result['commands'] == [['delete', 'user', 'where', 'Name=carol', 'Cluster=molslurm'],
                                  ['delete', 'qos', 'where', 'Name=long']]
    text = diff(result['changes'])
    assert text['after'] == '' and 'qos/long:\n' in text['before'] and 'users/carol:\n  accounts: ml\n' in text['before']


def test_purge_by_kind_keeps_slurms_own():
    policy = want(qos=[{'name': 'debug'}, {'name': 'training'}, {'name': 'inference'}],
                  accounts=[{'name': 'ml'}], users=[{'name': 'alice', 'accounts': ['ml']}], purge=True)
    result = plan(current(), policy, 'molslurm')
    assert result['commands'] == [['delete', 'user', 'where', 'Name=carol', 'Cluster=molslurm'],
                                  ['delete', 'account', 'where', 'Name=ops', 'Cluster=molslurm'],
                                  ['delete', 'qos', 'where', 'Name=long']]
    only_qos = dict(policy, purge={'qos'})
    assert plan(current(), only_qos, 'molslurm')['commands'] == [['delete', 'qos', 'where', 'Name=long']]


def test_purge_users_drops_unnamed_associations_of_named_users():
    state = current()
    state['assocs'][('ops', 'alice')] = dict(state['assocs'][('ml', 'alice')], account='ops')
    result = plan(state, want(users=[{'name': 'alice', 'accounts': ['ml']}, {'name': 'carol', 'accounts': ['ml']}],
                              purge=['users']), 'molslurm')
    assert result['commands'] == [['delete', 'user', 'where', 'Name=alice', 'Cluster=molslurm', 'Account=ops']]


@pytest.mark.parametrize('params, message', [
    ({'qos': [{'name': 'a', 'preempt': ['nosuch']}]}, 'qos[0] (a).preempt: no QOS nosuch'),
    ({'qos': [{'name': 'long', 'state': 'absent'}], 'accounts': [{'name': 'x', 'qos': ['long']}]},
     'accounts[0] (x).qos: no QOS long'),
    ({'accounts': [{'name': 'x', 'parent': 'nosuch'}]}, 'accounts[0] (x).parent: account nosuch does not exist'),
    ({'users': [{'name': 'u', 'accounts': ['ops']}], 'accounts': [{'name': 'ops', 'state': 'absent'}]},
     'users[0] (u).accounts: no account on cluster molslurm ops'),
    ({'users': [{'name': 'u', 'accounts': ['ml'], 'default_qos': 'nosuch'}]}, 'users[0] (u).default_qos: no QOS nosuch'),
    ({'accounts': [{'name': 'root', 'state': 'absent'}]}, "the account root is Slurm's own"),
], ids=['preempt-unknown', 'qos-deleted', 'parent-unknown', 'account-deleted', 'default-qos-unknown', 'root'])
def test_problems_stop_the_plan(params, message):
    result = plan(current(), want(**params), 'molslurm')
    assert result['commands'] == [] and any(message in problem for problem in result['problems']), result['problems']


def test_plan_does_not_change_its_inputs():
    state, policy = current(), want(**POLICY)
    before = copy.deepcopy((state, policy))
    plan(state, policy, 'molslurm')
    assert (state, policy) == before


def test_assoc_format_is_what_the_module_asks_for():
    assert ASSOC_FORMAT == ('Account', 'User', 'Partition', 'ParentName', 'Fairshare', 'QOS', 'DefaultQOS')
