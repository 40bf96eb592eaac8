# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over Slurm hostlists, scontrol output, gres.conf, NCCL environment, IPoIB addresses and link rates."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib

from ansible.errors import AnsibleFilterError

# Imported on a filter's first call, not with this file: Ansible loads every filter file of a collection to find one
# filter, in every worker process (one per host and task), so an import here costs every task that uses any
# aicluster.infra filter (docs/scale.md "What a task costs the control node").
_MODULE_UTILS = 'ansible_collections.aicluster.infra.plugins.module_utils.'
_FUNCTIONS = {
    'expected_link_gbps': 'cluster_math',
    'gres_conf_lines': 'cluster_math',
    'hostlist_compress': 'slurm',
    'hostlist_expand': 'slurm',
    'ipoib_address': 'cluster_math',
    'nccl_env': 'cluster_math',
    'parse_scontrol_show_node': 'slurm',
}


def _function(name):
    return getattr(importlib.import_module(_MODULE_UTILS + _FUNCTIONS[name]), name)


def _call(name, function, *args, **kwargs):
    """Run a module_utils function; ParseError/ValueError/TypeError become AnsibleFilterError."""
    try:
        return function(*args, **kwargs)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError('%s: %s' % (name, exc))


def _hostlist_compress(names):
    return _call('hostlist_compress', _function('hostlist_compress'), names)


def _hostlist_expand(expr):
    return _call('hostlist_expand', _function('hostlist_expand'), expr)


def _parse_scontrol_show_node(text, with_errors=False):
    return _call('parse_scontrol_show_node', _function('parse_scontrol_show_node'), text, with_errors=with_errors)


def _gres_conf(gpu_info, node_name=None, autodetect=None, threads_per_core=None, sockets=None, cores_per_socket=None,
               cpu_topology=None):
    return _call('gres_conf', _function('gres_conf_lines'), gpu_info, node_name=node_name, autodetect=autodetect,
                 threads_per_core=threads_per_core, sockets=sockets, cores_per_socket=cores_per_socket,
                 cpu_topology=cpu_topology)


def _nccl_env(ib_info, hca_include=None, hca_exclude=None, socket_ifname=None, link_layer=None, extra=None,
              gid_index='auto', active_only=True):
    return _call('nccl_env', _function('nccl_env'), ib_info, hca_include=hca_include, hca_exclude=hca_exclude,
                 socket_ifname=socket_ifname, link_layer=link_layer, extra=extra, gid_index=gid_index,
                 active_only=active_only)


def _ipoib_address(index, subnet, offset=0):
    return _call('ipoib_address', _function('ipoib_address'), index, subnet, offset)


def _expected_link_gbps(width, lane_speed_gbps):
    return _call('expected_link_gbps', _function('expected_link_gbps'), width, lane_speed_gbps)


class FilterModule(object):
    """aicluster.infra cluster filters."""

    def filters(self):
        return {
            'hostlist_compress': _hostlist_compress,
            'hostlist_expand': _hostlist_expand,
            'parse_scontrol_show_node': _parse_scontrol_show_node,
            'gres_conf': _gres_conf,
            'nccl_env': _nccl_env,
            'ipoib_address': _ipoib_address,
            'expected_link_gbps': _expected_link_gbps,
        }
