# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""fabric.sm: one master per subnet, the expected one at its priority, stable; an SM on a GPU node drains that node."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from _paths import own_fixture, real_fixture

from ansible_collections.aicluster.infra.plugins.module_utils.verify import results as vr
from ansible_collections.aicluster.infra.plugins.module_utils.verify.sm import decide_sm

PRIMARY, STANDBY, GPU01 = '0xb8cef60300a1d92a', '0xb8cef60300a1d94e', '0x946dae0300cde72c'
IDENTITY = {'gpu01': {'mlx5_0': [GPU01]}, 'gpu02': {'mlx5_0': ['0x946dae0300cde800']}}


def _sminfo(guid=PRIMARY, lid=1, priority=15, state=3, name='SMINFO_MASTER', act=81234):
    return 'sminfo: sm lid %d sm guid %s, activity count %d priority %d state %d %s\n' % (lid, guid, act, priority, state, name)


def _expected(**more):
    return dict({'provider': 'opensm', 'sm_guids': [PRIMARY, STANDBY], 'priority': 15, 'identity': IDENTITY,
                 'gpu_nodes': ['gpu01', 'gpu02']}, **more)


def _subnet(**more):
    return dict({'sminfo': [_sminfo(), _sminfo(act=81240)],
                 'saquery_smir': own_fixture('saquery/saquery-SMIR-rdma-core-master-standby-handmade.txt')}, **more)


def _valid(outcome):
    for results in list(outcome['nodes'].values()) + [outcome['cluster']]:
        for result in results:
            assert vr._problems_in_result('x', result) == []


def test_one_expected_master_passes_and_no_node_runs_an_sm():
    outcome = decide_sm({'subnets': {'0xfe80000000000000': _subnet()}}, _expected())
    _valid(outcome)
    assert [r['passed'] for r in outcome['cluster']] == [True]
    assert outcome['cluster'][0]['measured'] == PRIMARY and 'master 0xb8cef60300a1d92a in all 2 reads' in outcome['cluster'][0]['message']
    assert all(results[0]['passed'] for results in outcome['nodes'].values()) and sorted(outcome['nodes']) == ['gpu01', 'gpu02']


def test_real_sminfo_master_not_expected_at_priority_14():
    capture = real_fixture('sminfo/zh-notes-hca-sm-lid37-master-prio14.txt')
    outcome = decide_sm({'subnets': {'ib0': {'sminfo': [capture, capture]}}}, _expected())
    messages = [r['message'] for r in outcome['cluster'] if not r['passed']]
    assert len(messages) == 2
    assert 'the master 0x7cfe90030016aef1 is not one of the SM ports' in messages[0]
    assert 'runs at priority 14, configured 15' in messages[1]
    assert all(results[0]['passed'] for results in outcome['nodes'].values())   # a fabric problem drains nobody


def test_two_masters_equal_priority_and_a_rogue_sm_on_a_gpu_node():
    smir = own_fixture('saquery/saquery-SMIR-rdma-core-two-masters-rogue-handmade.txt').replace('0x946dae0300cde72c', GPU01)
    outcome = decide_sm({'subnets': {'ib0': _subnet(saquery_smir=smir)}}, _expected())
    failed = [r for r in outcome['cluster'] if not r['passed']]
    assert any('has 2 masters' in r['message'] for r in failed)
    assert any('share priority 15' in r['message'] for r in failed)
    rogue = outcome['nodes']['gpu01'][0]
    assert rogue['passed'] is False and 'mlx5_0 (0x946dae0300cde72c) runs an SM, DISCOVERING at priority 0' in rogue['message']
    assert outcome['nodes']['gpu02'][0]['passed'] is True


def test_opensm_running_on_a_node_drains_it():
    outcome = decide_sm({'subnets': {'ib0': _subnet()}, 'nodes': {'gpu02': {'opensm_running': True}}}, _expected())
    assert outcome['nodes']['gpu02'][0]['passed'] is False and 'opensm unit or process' in outcome['nodes']['gpu02'][0]['message']
    assert all(r['passed'] for r in outcome['cluster'])


def test_mastership_moving_between_reads_fails_the_subnet():
    outcome = decide_sm({'subnets': {'ib0': _subnet(sminfo=[_sminfo(), _sminfo(guid=STANDBY, lid=2, priority=14)])}}, _expected())
    failed = [r for r in outcome['cluster'] if not r['passed']]
    assert len(failed) == 1 and 'the master changed between the sminfo reads' in failed[0]['message']


def test_no_sm_answers():
    failed = {'rc': 255, 'stdout': '', 'stderr': 'ibwarn: [1] smp_query_via: SMInfo query failed\n', 'failed': True}
    outcome = decide_sm({'subnets': {'ib0': {'sminfo': [failed, failed], 'saquery_smir': {'rc': 1, 'stdout': '',
                                                                                          'stderr': 'Query SA failed'}}}}, _expected())
    assert outcome['cluster'][0]['passed'] is False and 'no SM answered' in outcome['cluster'][0]['message']
    assert len(outcome['summary']['errors']) == 3


def test_switch_provider_master_on_a_gpu_node_fails():
    smir = ('SMInfoRecord dump:\n\t\tRID\n\t\tLID...................5\n\t\tSMInfo dump:\n\t\tGUID..................%s\n'
            '\t\tSM_Key................0x0000000000000000\n\t\tActCount..............9\n\t\tPriority..............15\n'
            '\t\tSMState...............3\n' % GPU01)
    outcome = decide_sm({'subnets': {'ib0': {'saquery_smir': smir}}}, _expected(provider='ufm', sm_guids=[]))
    assert any('a GPU node, where the ufm SM should be master' in r['message'] for r in outcome['cluster'])
    assert outcome['nodes']['gpu01'][0]['passed'] is False
    # with the switch as SM, a master that is no GPU node's port passes
    ok = decide_sm({'subnets': {'ib0': {'saquery_smir': smir.replace(GPU01, '0xfc6a1c0300e0a100')}}}, _expected(provider='switch', sm_guids=[]))
    assert [r['passed'] for r in ok['cluster']] == [True] and '0 sminfo reads: stability across a sweep not checked' in ok['cluster'][0]['message']


def test_issm_port_unknown_to_the_sa():
    issm = own_fixture('saquery/saquery-s-rdma-core-two-sm-ports-one-disabled-handmade.txt').replace(
        'EndPortLid..............2', 'EndPortLid..............9')
    outcome = decide_sm({'subnets': {'ib0': _subnet(saquery_issm=issm)}}, _expected())
    failed = [r for r in outcome['cluster'] if not r['passed']]
    assert len(failed) == 1 and failed[0]['measured'] == [9] and 'IsSM' in failed[0]['message']


def test_unknown_provider_is_refused():
    with pytest.raises(ValueError):
        decide_sm({}, {'provider': 'nvlsm'})


def test_switch_sm_priority_is_judged_only_when_given():
    # a switch SM at priority 0 (its own setting, not ours): without a configured priority it passes; given one, it is judged
    smir = ('SMInfoRecord dump:\n\t\tRID\n\t\tLID...................5\n\t\tSMInfo dump:\n\t\tGUID..................0xfc6a1c0300e0a100\n'
            '\t\tSM_Key................0x0000000000000000\n\t\tActCount..............9\n\t\tPriority..............0\n'
            '\t\tSMState...............3\n')
    free = decide_sm({'subnets': {'ib0': {'saquery_smir': smir}}}, _expected(provider='switch', sm_guids=[], priority=None))
    assert [r['passed'] for r in free['cluster']] == [True] and 'at priority 0' in free['cluster'][0]['message']
    given = decide_sm({'subnets': {'ib0': {'saquery_smir': smir}}}, _expected(provider='switch', sm_guids=[], priority=15))
    assert any('runs at priority 0, configured 15' in r['message'] for r in given['cluster'] if not r['passed'])
