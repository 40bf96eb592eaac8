# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from _paths import own_fixture

from ansible_collections.aicluster.infra.plugins.modules import slurm_node_info

# No real scontrol capture exists in shared/fixtures/real: these are the
# parser engineers' fixtures in the Slurm 22.05 layout.
DRAINED = own_fixture('scontrol/scontrol-22.05-h100-nodes-drained-handmade.txt')
NO_NODES = own_fixture('scontrol/scontrol-22.05-no-nodes-handmade.txt')
NOT_FOUND = own_fixture('scontrol/scontrol-22.05-node-not-found-handmade.txt')


def test_all_nodes(run_module):
    result, calls = run_module(slurm_node_info, {}, {'scontrol': (0, DRAINED, '')})
    assert calls == [['/usr/bin/scontrol', 'show', 'node']]
    assert 'failed' not in result and result['changed'] is False
    nodes = result['nodes']
    assert [node['NodeName'] for node in nodes] == ['gpu01', 'gpu02', 'gpu03']
    assert nodes[0]['State'] == 'IDLE' and nodes[0]['Gres'] == 'gpu:h100:8(S:0-1)' and nodes[0]['CPUTot'] == '192'
    assert nodes[1]['State'] == 'IDLE+DRAIN'
    assert nodes[1]['Reason'] == 'gpu xid 79 on GPU 3 [root@2026-01-06T10:02:33]'
    assert nodes[2]['State'] == 'DOWN+NOT_RESPONDING'


def test_named_nodes_are_one_hostlist_argument(run_module):
    dummy, calls = run_module(slurm_node_info, {'nodes': ['gpu01', ' gpu[02-03] ', '']}, {'scontrol': (0, DRAINED, '')})
    assert calls == [['/usr/bin/scontrol', 'show', 'node', 'gpu01,gpu[02-03]']]


def test_no_nodes(run_module):
    result, dummy = run_module(slurm_node_info, {}, {'scontrol': (0, NO_NODES, '')})
    assert result['nodes'] == []


def test_check_mode_still_returns_facts(run_module):
    result, calls = run_module(slurm_node_info, {'_ansible_check_mode': True}, {'scontrol': (0, DRAINED, '')})
    assert result['changed'] is False and len(result['nodes']) == 3
    assert len(calls) == 1


def test_scontrol_missing(run_module):
    result, calls = run_module(slurm_node_info, {}, {})
    assert result['failed'] is True and 'scontrol' in result['msg']
    assert calls == []


def test_unknown_node_fails(run_module):
    result, dummy = run_module(slurm_node_info, {'nodes': ['gpu99']}, {'scontrol': (1, NOT_FOUND, '')})
    assert result['failed'] is True
    assert result['msg'] == 'scontrol show node failed with rc=1: Node gpu99 not found'
    assert result['cmd'] == ['/usr/bin/scontrol', 'show', 'node', 'gpu99']
    assert result['rc'] == 1 and result['stdout'] == NOT_FOUND and result['stderr'] == ''


def test_controller_down_fails(run_module):
    err = 'slurm_load_node error: Unable to contact slurm controller (connect failure)\n'
    result, dummy = run_module(slurm_node_info, {}, {'scontrol': (1, '', err)})
    assert result['failed'] is True and 'Unable to contact slurm controller' in result['msg']
    assert result['stderr'] == err


def test_error_line_with_rc_0_fails(run_module):
    result, dummy = run_module(slurm_node_info, {'nodes': ['gpu99']}, {'scontrol': (0, NOT_FOUND, '')})
    assert result['failed'] is True
    assert 'could not be parsed' in result['msg'] and 'gpu99 not found' in result['msg']


def test_unparseable_output(run_module):
    result, dummy = run_module(slurm_node_info, {}, {'scontrol': (0, 'garbage\n', '')})
    assert result['failed'] is True and 'could not be parsed' in result['msg']
    assert result['stdout'] == 'garbage\n'


def test_option_like_node_name_is_refused(run_module):
    result, calls = run_module(slurm_node_info, {'nodes': ['--help']}, {'scontrol': (0, DRAINED, '')})
    assert result['failed'] is True and 'must not start with' in result['msg']
    assert calls == []
