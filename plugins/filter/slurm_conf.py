# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that build slurm.conf once for the whole cluster: node records, node and partition lines,
variable checks, and whether a slurm.conf change needs a restart."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six.moves.collections_abc import Mapping

# Imported on a filter's first call, not with this file: Ansible loads every filter file of a collection to find one
# filter, in every worker process (one per host and task), so an import here costs every task that uses any
# aicluster.infra filter (docs/scale.md "What a task costs the control node").
_MODULE_UTILS = 'ansible_collections.aicluster.infra.plugins.module_utils.'
_FUNCTIONS = {
    'check_slurm_vars': 'slurm_conf',
    'decide_topology': 'slurm_topology',
    'gpu_fit': 'slurm_conf',
    'gpu_info_for_node': 'slurm_conf',
    'known_nodes': 'slurm_conf',
    'node_group_of': 'slurm_conf',
    'node_record': 'slurm_conf',
    'parse_slurmd_c': 'slurm_conf',
    'slurm_node_lines': 'slurm_conf',
    'slurm_nodes': 'slurm_conf',
    'slurm_partition_lines': 'slurm_conf',
    'topology_reads': 'slurm_topology',
}


def _function(name):
    return getattr(importlib.import_module(_MODULE_UTILS + _FUNCTIONS[name]), name)


def _call(name, function, *args, **kwargs):
    """Run a module_utils function; ParseError/ValueError/TypeError/KeyError become AnsibleFilterError."""
    try:
        return function(*args, **kwargs)
    except (TypeError, ValueError, KeyError) as exc:
        raise AnsibleFilterError('%s: %s' % (name, exc))


def _parse_slurmd_c(text):
    return _call('parse_slurmd_c', _function('parse_slurmd_c'), text)


def _slurm_node_record(slurmd_c, gpu_info=None, gpus=None):
    return _call('slurm_node_record', _function('node_record'), slurmd_c, gpu_info=gpu_info or None, gpus=gpus)


def _records_from_hostvars(names, hostvars):
    """Each name's ``slurm_node`` fact from ``hostvars`` (None where the host has none)."""
    records = []
    for name in names:
        host = hostvars[name] if name in hostvars else {}
        records.append(host.get('slurm_node') if hasattr(host, 'get') else None)
    return records


def _slurm_nodes(names, records, node_groups=None, groups=None, conf_in_service=None, allow_missing=False,
                 mem_spec_limit='auto', core_spec_count='auto', optional=None):
    if isinstance(records, Mapping):
        records = _records_from_hostvars(names, records)
    known = _call('slurm_nodes', _function('known_nodes'), conf_in_service or '')
    return _call('slurm_nodes', _function('slurm_nodes'), names, records, node_groups=node_groups, groups=groups,
                 known=known, allow_missing=allow_missing, mem_spec_limit=mem_spec_limit, core_spec_count=core_spec_count,
                 optional=optional)


def _slurm_node_group_of(node_groups, host, groups=None):
    return _call('slurm_node_group_of', _function('node_group_of'), node_groups, host, groups)


def _slurm_usable_gpus(gpu_info, gpus=None, cpus=None):
    return _call('slurm_usable_gpus', _function('gpu_info_for_node'), gpu_info, gpus, cpus)


def _slurm_node_lines(nodes, state='UNKNOWN'):
    return _call('slurm_node_lines', _function('slurm_node_lines'), nodes, state=state)


def _slurm_partition_lines(partitions, groups, compute_nodes=None, nodes=None, def_mem_per_gpu='auto', def_cpu_per_gpu='auto'):
    return _call('slurm_partition_lines', _function('slurm_partition_lines'), partitions, groups, compute_nodes=compute_nodes,
                 nodes=nodes, def_mem_per_gpu=def_mem_per_gpu, def_cpu_per_gpu=def_cpu_per_gpu)


def _slurm_vars_problems(partitions, node_groups, compute_nodes, groups, settings=None):
    return _call('slurm_vars_problems', _function('check_slurm_vars'), partitions, node_groups, compute_nodes, groups, settings=settings)


def _slurm_gpu_fit(hosts, hostvars, node_groups, groups):
    return _call('slurm_gpu_fit', _function('gpu_fit'), hosts, hostvars, node_groups, groups)


def _slurm_topology(nodes, plugin, **kwargs):
    return _call('slurm_topology', _function('decide_topology'), nodes, plugin, **kwargs)


def _slurm_topology_reads(ib_infos, hcas=None, port=1, host=None):
    return _call('slurm_topology_reads', _function('topology_reads'), ib_infos, hcas=hcas or None, port=port, host=host or None)


class FilterModule(object):
    """aicluster.infra slurm.conf filters."""

    def filters(self):
        return {
            'parse_slurmd_c': _parse_slurmd_c,
            'slurm_node_record': _slurm_node_record,
            'slurm_nodes': _slurm_nodes,
            'slurm_node_group_of': _slurm_node_group_of,
            'slurm_gpu_fit': _slurm_gpu_fit,
            'slurm_usable_gpus': _slurm_usable_gpus,
            'slurm_node_lines': _slurm_node_lines,
            'slurm_partition_lines': _slurm_partition_lines,
            'slurm_vars_problems': _slurm_vars_problems,
            'slurm_topology': _slurm_topology,
            'slurm_topology_reads': _slurm_topology_reads,
        }
