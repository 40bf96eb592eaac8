# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The slurm_nodes inventory plugin: groups from scontrol show node, through ansible-inventory as a user runs it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys

import pytest

from _paths import REPO, own_fixture

from ansible_collections.aicluster.infra.plugins.module_utils.slurm import parse_scontrol_show_node
from ansible_collections.aicluster.infra.plugins.module_utils.slurm_inventory import inventory_from_nodes, node_state

DRAINED = 'scontrol/scontrol-22.05-h100-nodes-drained-oneline-handmade.txt'


def _ours(text):
    """The fixture with gpu02 drained by the verify gate instead of by hand."""
    return text.replace('Reason=gpu xid 79 on GPU 3', 'Reason=aicluster: nccl.slow_node busbw 310 < 360 GB/s', 1)


@pytest.mark.parametrize('state, expected', [
    ('IDLE', ('idle', [])),
    ('IDLE+DRAIN', ('idle', ['drain'])),
    ('MIXED+DRAIN', ('mixed', ['drain'])),
    ('DOWN+NOT_RESPONDING', ('down', ['not_responding'])),
    ('DOWN*', ('down', ['not_responding'])),
    ('ALLOCATED+COMPLETING', ('allocated', ['completing'])),
    ('', ('unknown', [])),
])
def test_states_as_scontrol_prints_them(state, expected):
    assert node_state({'State': state}) == expected


def test_groups_and_variables_from_scontrol():
    nodes = inventory_from_nodes(parse_scontrol_show_node(_ours(own_fixture(DRAINED))))
    assert nodes['gpu01']['groups'] == ['slurm_nodes', 'slurm_state_idle', 'slurm_in_service', 'slurm_partition_gpu',
                                        'slurm_partition_debug']
    assert 'slurm_drained_by_aicluster' in nodes['gpu02']['groups'] and 'slurm_drain' in nodes['gpu02']['groups']
    assert nodes['gpu02']['vars']['slurm_reason'] == 'aicluster: nccl.slow_node busbw 310 < 360 GB/s'
    assert 'slurm_not_responding' in nodes['gpu03']['groups'] and 'slurm_in_service' not in nodes['gpu03']['groups']
    assert nodes['gpu03']['vars']['slurm_state'] == 'DOWN+NOT_RESPONDING'


@pytest.mark.parametrize('reason, group', [
    ('aicluster: nccl.slow_node busbw 310 < 360 GB/s', 'slurm_drained_by_aicluster'),   # the verify gate
    ('aicluster: health.gpu_count 7 of 8 GPUs', 'slurm_drained_by_aicluster'),          # the health check
    ('aicluster-slurm: 7 of 8 GPUs (slurm_node_groups hgx)', 'slurm_drained_by_slurm_role'),
    ('prolog: nvidia-smi sees 7 of 8 GPUs', 'slurm_drained_by_others'),                # a verify run cannot lift it
    ('operator: fan', 'slurm_drained_by_others'),
])
def test_who_drained_decides_the_group(reason, group):
    record = {'NodeName': 'gpu01', 'State': 'IDLE+DRAIN', 'Reason': reason + ' [root@2026-12-02T07:00:00]'}
    groups = inventory_from_nodes([record])['gpu01']['groups']
    assert group in groups and len([name for name in groups if name.startswith('slurm_drained_by_')]) == 1


def test_a_drain_by_hand_is_someone_elses():
    nodes = inventory_from_nodes(parse_scontrol_show_node(own_fixture(DRAINED)), prefix='s_')
    assert 's_drained_by_others' in nodes['gpu02']['groups'] and 's_drained_by_aicluster' not in nodes['gpu02']['groups']
    # Slurm's [user@time] stamp is not part of the reason
    assert nodes['gpu02']['vars']['s_reason'] == 'gpu xid 79 on GPU 3'


def _plain(value):
    return value['__ansible_unsafe'] if isinstance(value, dict) and '__ansible_unsafe' in value else value


def _inventory(tmp_path, config, *extra):
    path = tmp_path / 'cluster.slurm_nodes.yml'
    path.write_text(config)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.collections'), ANSIBLE_INVENTORY_UNPARSED_FAILED='1')
    ansible_inventory = os.path.join(os.path.dirname(sys.executable), 'ansible-inventory')
    done = subprocess.run([ansible_inventory, '-i', str(path)] + list(extra) + ['--list'], capture_output=True, text=True,
                          env=env, check=False, timeout=120)
    return done


def test_ansible_inventory_reads_a_saved_copy_and_limits_to_the_gates_drains(tmp_path):
    saved = tmp_path / 'nodes.txt'
    saved.write_text(_ours(own_fixture(DRAINED)))
    done = _inventory(tmp_path, 'plugin: aicluster.infra.slurm_nodes\nsource: %s\n'
                      'keyed_groups: [{key: slurm_state, prefix: raw}]\n' % saved)
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    assert listed['slurm_drained_by_aicluster']['hosts'] == ['gpu02']
    assert sorted(listed['slurm_nodes']['hosts']) == ['gpu01', 'gpu02', 'gpu03']
    # values from an inventory plugin are not templates: ansible-inventory marks them so
    assert [_plain(part) for part in listed['_meta']['hostvars']['gpu02']['slurm_partitions']] == ['gpu', 'debug']
    assert listed['raw_IDLE_DRAIN']['hosts'] == ['gpu02']  # keyed_groups (constructed) work too


def test_ansible_inventory_runs_the_command(tmp_path):
    saved = tmp_path / 'nodes.txt'
    saved.write_text(own_fixture(DRAINED))
    done = _inventory(tmp_path, 'plugin: aicluster.infra.slurm_nodes\ncommand: [cat, %s]\n' % saved)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)['slurm_drained_by_others']['hosts'] == ['gpu02']


def test_a_failing_command_fails_the_inventory_with_its_message(tmp_path):
    done = _inventory(tmp_path, 'plugin: aicluster.infra.slurm_nodes\n'
                      'command: [sh, -c, "echo slurm_load_node error: Unable to contact slurm controller >&2; exit 1"]\n')
    assert done.returncode != 0
    assert 'Unable to contact slurm controller' in done.stderr and 'rc=1' in done.stderr
