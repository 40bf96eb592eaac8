# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Time rendering slurm.conf for a 4,096-node inventory, the way the slurm role does it once on the controller.

Steps timed: the node table from 4,096 node records (slurm_nodes, as the role's filter does), the grouped and
compressed NodeName lines, the partition lines, and the role's real template rendered through Ansible's templar.
Run from the repository root: ``python bench/slurm_conf_render.py``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import random
import time

from _collection import REPO  # noqa: E402  (puts the collection on sys.path)

import yaml  # noqa: E402
from ansible.parsing.dataloader import DataLoader  # noqa: E402
from ansible.template import Templar  # noqa: E402

from ansible_collections.aicluster.infra.plugins.module_utils.slurm_conf import (  # noqa: E402
    slurm_node_lines, slurm_nodes, slurm_partition_lines,
)

TEMPLATE = os.path.join(REPO, 'roles', 'slurm', 'templates', 'etc', 'slurm', 'slurm.conf.j2')


def _inventory(count, seed=2026):
    """4,096 HGX nodes in racks of 32; 1 in 64 has a DIMM less, 1 in 128 lost a GPU, 256 are an A100 group."""
    rng = random.Random(seed)
    names = ['gpu%04d' % index for index in range(1, count + 1)]
    records = []
    for index, name in enumerate(names):
        memory = 2063937 - (65536 if rng.random() < 1.0 / 64 else 0)
        gpus = 7 if rng.random() < 1.0 / 128 else 8
        gtype = 'a100' if index >= count - 256 else 'h100'
        records.append({'NodeName': name, 'CPUs': 192, 'Boards': 1, 'SocketsPerBoard': 2, 'CoresPerSocket': 48,
                        'ThreadsPerCore': 2, 'RealMemory': memory, 'Gres': 'gpu:%s:%d' % (gtype, gpus)})
    groups = {'slurm_compute': names, 'h100': names[:-256], 'a100': names[-256:], 'debug': names[:32]}
    node_groups = [{'name': 'h100', 'groups': ['h100'], 'features': ['h100', 'ndr'], 'weight': 10},
                   {'name': 'a100', 'groups': ['a100'], 'features': ['a100', 'hdr'], 'weight': 20}]
    partitions = [{'name': 'gpu', 'groups': ['slurm_compute'], 'default': True, 'max_time': 'INFINITE'},
                  {'name': 'debug', 'groups': ['debug'], 'max_time': '60', 'options': {'PriorityTier': 10}}]
    return names, records, groups, node_groups, partitions


def _variables(lines, partition_lines):
    with open(os.path.join(REPO, 'roles', 'slurm', 'defaults', 'main.yml'), encoding='utf-8') as handle:
        variables = yaml.safe_load(handle)
    with open(os.path.join(REPO, 'roles', 'slurm', 'vars', 'main.yml'), encoding='utf-8') as handle:
        internal = yaml.safe_load(handle)
    variables.update({
        'ansible_managed': 'Ansible managed',
        '__slurm_controllers': ['mgmt01'], '__slurm_controller': 'mgmt01', '__slurm_dbd_host': 'mgmt01',
        '__slurm_timeouts': internal['__slurm_timeouts_default'],
        '__slurm_conf_dir': '/etc/slurm', '__slurm_state_dir': '/var/lib/slurm/slurmctld',
        '__slurm_spool_dir': '/var/lib/slurm/slurmd', '__slurm_log_dir': '/var/log/slurm',
        '__slurm_node_lines': lines, '__slurm_partition_lines': partition_lines,
    })
    return variables


def main():
    names, records, groups, node_groups, partitions = _inventory(4096)
    with open(TEMPLATE, encoding='utf-8') as handle:
        template = handle.read()
    best = None
    for _attempt in range(3):
        start = time.perf_counter()
        table = slurm_nodes(names, records, node_groups, groups)
        lines = slurm_node_lines(table)
        partition_lines = slurm_partition_lines(partitions, groups, names)
        table_s = time.perf_counter() - start
        templar = Templar(loader=DataLoader(), variables=_variables(lines, partition_lines))
        text = templar.template(template)
        total_s = time.perf_counter() - start
        best = (table_s, total_s) if best is None or total_s < best[1] else best
    print('slurm.conf for %d nodes: node table + lines %.3fs, with the template %.3fs; %d NodeName lines, '
          '%d partition lines, %d bytes' % (len(names), best[0], best[1], len(lines), len(partition_lines), len(text)))


if __name__ == '__main__':
    main()
