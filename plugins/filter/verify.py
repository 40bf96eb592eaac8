# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the verify stage: one per decision point (docs/plugins.md lists them).

Each check role gathers raw tool output, then makes one call here per area
and scope; ``module_utils/verify/decide.py`` hands observations and
expectations to the area's module and returns that area's outcome (results
per node, figures, and the parameters that shaped them), which the gate (the
action ``aicluster.infra.verify_gate``) joins into results.json.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib

from ansible.errors import AnsibleFilterError

# Imported on a filter's first call, not with this file: Ansible loads every filter file of a collection to find one
# filter, in every worker process (one per host and task), so an import here costs every task that uses any
# aicluster.infra filter (docs/scale.md "What a task costs the control node").
_VERIFY = 'ansible_collections.aicluster.infra.plugins.module_utils.verify.'


def _call(name, function, *args):
    module, attribute = function.split('.')
    function = getattr(importlib.import_module(_VERIFY + module), attribute)
    try:
        return function(*args)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise AnsibleFilterError('%s: %s' % (name, exc))


def verify_ib(observations, expected):
    """Areas ib and net: node -> {ib_info, links, pings, peer} in; the outcome (ports, fleet uniformity, MTU) out."""
    return _call('verify_ib', 'decide.ib', observations, expected)


def verify_mtu_plan(observations, expected):
    """Area net, before the pings: node -> {ib_info, links, peer} in; node -> the rails to ping out."""
    return _call('verify_mtu_plan', 'decide.mtu_plan', observations, expected)


def verify_fabric(fabric_info, checked, expected):
    """Area fabric: the fabric_info result and each node's HCAs in rail order in; the outcome (None: not read) out."""
    return _call('verify_fabric', 'decide.fabric', fabric_info, checked, expected)


def verify_fabric_sm(observations, reads, expected):
    """Area fabric, subnet manager and partitions: each node's reads and the subnet reads in; fabric.sm and fabric.partition out."""
    return _call('verify_fabric_sm', 'decide.fabric_sm', observations, reads, expected)


def verify_fabric_problems(settings):
    """verify_ib's fabric-health variables (sm_provider, sm_guids, sm_priority, sm_sweep_s, partitions) -> one line per bad one."""
    return _call('verify_fabric_problems', 'decide.fabric_problems', settings)


def verify_switch_errors(reads, expected):
    """Area fabric, switch ports: ibqueryerrors before and after the bandwidth tests in; fabric.switch_errors out."""
    return _call('verify_switch_errors', 'decide.switch_errors', reads, expected)


def verify_link(observations, expected):
    """Area ib, link quality: each node's counter reads before and after the bandwidth tests -> results."""
    return _call('verify_link', 'decide.link', observations, expected)


def verify_roce_qos(observations, expected):
    """Area net, RoCE QoS: node -> {plan, qos, links} in; net.roce_qos out."""
    return _call('verify_roce_qos', 'decide.roce_qos', observations, expected)


def verify_lossless_plan(observations, outcome, expected):
    """Area net, incast: node -> {ib_info} and the perftest plan in; the incast rounds (one per rail) out."""
    return _call('verify_lossless_plan', 'decide.lossless_plan', observations, outcome, expected)


def verify_lossless(plan, observations, expected):
    """Area net, incast: the plan and node -> {before, after} counter reads in; net.lossless out."""
    return _call('verify_lossless', 'decide.lossless', plan, observations, expected)


def verify_perftest_plan(observations, expected):
    """Area perftest, before the rounds: node -> {ib_info, address} in; endpoints and rounds out."""
    return _call('verify_perftest_plan', 'decide.perftest_plan', observations, expected)


def verify_perftest_tests(pairs, outcome, base_port, test=None):
    """The tests of one round (client, server, HCAs, port, line rate, per-side options) of ``test`` for ``pairs`` of the plan."""
    return _call('verify_perftest_tests', 'decide.perftest_tests', pairs, outcome, base_port, test)


def verify_perftest_round(outcome, async_results, expected):
    """Area perftest, after a round: the clients' async results in; the outcome with the pairs judged out."""
    return _call('verify_perftest_round', 'decide.perftest_round', outcome, async_results, expected)


def verify_gpu(observations, expected):
    """Area gpu: node -> {gpu_info, nvlink_status, nvlink_errors, retired, compute_apps, dmesg, dcgm_diag} in."""
    return _call('verify_gpu', 'decide.gpu', observations, expected)


def verify_nccl(observations, expected):
    """Area nccl, single node: node -> {gpu_info, run} in; per-node results, busbw figures and fleet median out."""
    return _call('verify_nccl', 'decide.nccl', observations, expected)


def verify_nccl_multi_node(outcome, run, expected):
    """Area nccl, across nodes: the single-node outcome and the srun run in; the outcome with the multi-node result."""
    return _call('verify_nccl_multi_node', 'decide.nccl_multi_node', outcome, run, expected)


def verify_ready_nodes(variables, slurm_nodes, nodes):
    """The nodes that passed every check so far (the outcome facts in ``variables``) and that Slurm has in service."""
    return _call('verify_ready_nodes', 'decide.ready_nodes', variables, slurm_nodes, nodes)


class FilterModule(object):
    """aicluster.infra verification filters."""

    def filters(self):
        return {
            'verify_ib': verify_ib,
            'verify_mtu_plan': verify_mtu_plan,
            'verify_fabric': verify_fabric,
            'verify_fabric_sm': verify_fabric_sm,
            'verify_fabric_problems': verify_fabric_problems,
            'verify_switch_errors': verify_switch_errors,
            'verify_link': verify_link,
            'verify_roce_qos': verify_roce_qos,
            'verify_lossless_plan': verify_lossless_plan,
            'verify_lossless': verify_lossless,
            'verify_perftest_plan': verify_perftest_plan,
            'verify_perftest_tests': verify_perftest_tests,
            'verify_perftest_round': verify_perftest_round,
            'verify_gpu': verify_gpu,
            'verify_nccl': verify_nccl,
            'verify_nccl_multi_node': verify_nccl_multi_node,
            'verify_ready_nodes': verify_ready_nodes,
        }
