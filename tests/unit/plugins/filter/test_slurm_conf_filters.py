# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The slurm.conf filters: values through, errors as AnsibleFilterError, a sidecar doc per filter."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from _paths import REPO

from ansible_collections.aicluster.infra.plugins.filter.slurm_conf import FilterModule

FILTERS = FilterModule().filters()
SLURMD_C = 'NodeName=gpu01 CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=24105\n'
GPU_INFO = {'gpus': [{'index': index, 'name': 'NVIDIA H100 80GB HBM3', 'minor_number': index} for index in range(8)]}


@pytest.mark.parametrize('name', sorted(FILTERS))
def test_every_filter_has_a_sidecar_doc(name):
    path = os.path.join(REPO, 'plugins', 'filter', name + '.yml')
    with open(path, encoding='utf-8') as handle:
        doc = yaml.safe_load(handle)
    assert doc['DOCUMENTATION']['name'] == name
    assert doc['EXAMPLES'] and doc['RETURN']['_value']


def test_the_table_through_the_filters():
    names = ['gpu01', 'gpu02', 'gpu03']
    records = [FILTERS['slurm_node_record'](SLURMD_C.replace('gpu01', name), GPU_INFO) for name in names]
    groups = {'slurm_compute': names}
    table = FILTERS['slurm_nodes'](names, records, [{'name': 'h100', 'groups': ['slurm_compute'], 'features': ['h100']}], groups)
    assert FILTERS['slurm_node_lines'](table) == [
        'NodeName=gpu[01-03] CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=24105 '
        'Gres=gpu:h100:8 Feature=h100 MemSpecLimit=4096 State=UNKNOWN']
    assert FILTERS['slurm_partition_lines']([{'name': 'gpu', 'groups': ['slurm_compute'], 'default': True}], groups, names) == [
        'PartitionName=gpu Nodes=gpu[01-03] Default=YES State=UP']
    assert FILTERS['slurm_node_group_of']([{'name': 'h100', 'groups': ['slurm_compute']}], 'gpu02', groups)['name'] == 'h100'
    assert len(FILTERS['slurm_usable_gpus'](GPU_INFO, 2)['gpus']) == 2
    assert FILTERS['parse_slurmd_c'](SLURMD_C)['CPUs'] == 2


def test_slurm_nodes_falls_back_to_the_conf_in_service():
    conf = ('NodeName=gpu01 CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=24105 '
            'Gres=gpu:h100:8 State=UNKNOWN\n')
    table = FILTERS['slurm_nodes'](['gpu01'], [None], [], {}, conf)
    assert table[0]['Gres'] == 'gpu:h100:8'


@pytest.mark.parametrize('name, args, message', [
    ('parse_slurmd_c', ('nonsense',), 'parse_slurmd_c: no NodeName'),
    ('slurm_node_record', (SLURMD_C, GPU_INFO, 9), 'slurm_node_record: 9 GPUs declared but 8 found'),
    ('slurm_usable_gpus', (GPU_INFO, 9), 'slurm_usable_gpus: 9 GPUs declared'),
    ('slurm_nodes', (['gpu09'], [None]), r'slurm_nodes: no hardware facts for gpu09'),
    ('slurm_partition_lines', ([{'name': 'x', 'nodes': ['gpu09']}], {}, ['gpu01']),
     r'slurm_partitions\[0\] \(x\).nodes: gpu09 not in slurm_compute'),
    ('slurm_vars_problems', ([{'name': 'x', 'groups': ['nope']}], [], [], {}), None),
])
def test_errors_become_filter_errors(name, args, message):
    if message is None:
        assert FILTERS[name](*args) == ["slurm_partitions[0] (x).groups: no inventory group 'nope'"]
        return
    with pytest.raises(AnsibleFilterError, match=message):
        FILTERS[name](*args)


def test_slurm_nodes_reads_records_from_hostvars():
    record = FILTERS['slurm_node_record'](SLURMD_C, GPU_INFO)
    hostvars = {'gpu01': {'slurm_node': record}, 'gpu02': {}}
    table = FILTERS['slurm_nodes'](['gpu01', 'gpu02'], hostvars, allow_missing=True)
    assert [node['NodeName'] for node in table] == ['gpu01']
    with pytest.raises(AnsibleFilterError, match='no hardware facts for gpu02'):
        FILTERS['slurm_nodes'](['gpu01', 'gpu02'], hostvars)
