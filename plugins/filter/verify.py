# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the verify stage: one per decision point (docs/plugins.md lists them).

Each check role gathers raw tool output, then makes one call here per area
and scope; the call hands observations and expectations to the area's
module in ``module_utils/verify/`` and returns that area's outcome (results
per node, figures, and the parameters that shaped them), which the gate (the
action ``aicluster.infra.verify_gate``) joins into results.json.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.aicluster.infra.plugins.module_utils.verify import (
    document as vd, fabric as vf, gate as vg_gate, gpu as vg, ib as vi, nccl as vn, net as vnet, perftest as vp,
)

# run.parameters of results.json: the expectations that change a figure, by area (expected key -> parameter name)
PARAMETERS = {
    'ib': (('rate_gbps', 'ib_rate_gbps'), ('port', 'ib_port'), ('link_layer', 'ib_link_layer'), ('mtu', 'mtu')),
    'fabric': (('width', 'fabric_width'), ('lane_speed_gbps', 'fabric_lane_speed_gbps')),
    'perftest': (('fraction', 'perftest_fraction'), ('bidirectional', 'perftest_bidirectional'), ('size', 'perftest_size'),
                 ('qps', 'perftest_qps'), ('duration_s', 'perftest_duration_s'), ('schedule', 'perftest_schedule'),
                 ('max_latency_us', 'perftest_max_latency_us')),
    'gpu': (('dcgm_level', 'dcgm_diag_level'), ('dcgm_allow_warn', 'dcgm_allow_warn'),
            ('ecc_uncorrected_max', 'gpu_ecc_uncorrected_max'), ('nvlinks_per_gpu', 'gpu_nvlinks_per_gpu')),
    'nccl': (('test', 'nccl_test'), ('min_bytes', 'nccl_min_bytes'), ('max_bytes', 'nccl_max_bytes'),
             ('step_factor', 'nccl_step_factor'), ('large_bytes', 'nccl_large_bytes'), ('slow_fraction', 'nccl_slow_fraction'),
             ('ranks_per_node', 'nccl_multi_node_ranks_per_node')),
}


def _call(name, function, *args):
    try:
        return function(*args)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise AnsibleFilterError('%s: %s' % (name, exc))


def _parameters(area, expected):
    return dict((name, expected[key]) for key, name in PARAMETERS[area] if key in expected)


def _recorded(area, decide):
    """``decide`` whose outcome also records the area's parameters (results.json run.parameters)."""
    def call(observations, expected):
        outcome = decide(observations, expected)
        outcome['parameters'] = _parameters(area, expected)
        return outcome
    return call


def _ib(observations, expected):
    outcome = vi.decide_ib(observations, expected)
    for node, observed in observations.items():
        ping = (observed or {}).get('ping')
        if isinstance(ping, dict) and ping and not ping.get('skipped'):
            outcome['nodes'][node].extend(vnet.evaluate_net(ping, {'mtu': expected['mtu'], 'peer': observed.get('peer')}))
    outcome['parameters'] = _parameters('ib', expected)
    return outcome


def verify_ib(observations, expected):
    """Areas ib and net: node -> {ib_info, ping, peer} in; the outcome (ports, fleet uniformity, MTU) out."""
    return _call('verify_ib', _ib, observations, expected)


def _fabric(fabric_info, checked, expected):
    outcome = vf.decide_fabric(fabric_info, checked, expected)
    if outcome is not None:
        outcome['parameters'] = _parameters('fabric', expected)
    return outcome


def verify_fabric(fabric_info, checked, expected):
    """Area fabric: the fabric_info result and each node's HCAs in rail order in; the outcome (None: not read) out."""
    return _call('verify_fabric', _fabric, fabric_info, checked, expected)


def verify_perftest_plan(observations, expected):
    """Area perftest, before the rounds: node -> {ib_info, address} in; endpoints, rounds and round 0's tests out."""
    return _call('verify_perftest_plan', _recorded('perftest', vp.plan), observations, expected)


def verify_perftest_tests(pairs, outcome, base_port):
    """The tests of one round (client, server, HCAs, port, line rate) for ``pairs`` of the plan."""
    return _call('verify_perftest_tests', lambda: vp.round_tests(pairs, outcome['endpoints'], base_port))


def verify_perftest_round(outcome, async_results, expected):
    """Area perftest, after a round: the clients' async results in; the outcome with the pairs judged out."""
    return _call('verify_perftest_round', vp.record_round, outcome, async_results, expected)


def verify_gpu(observations, expected):
    """Area gpu: node -> {gpu_info, nvlink_status, nvlink_errors, retired, compute_apps, dmesg, dcgm_diag} in."""
    return _call('verify_gpu', _recorded('gpu', vg.decide_gpu), observations, expected)


def verify_nccl(observations, expected):
    """Area nccl, single node: node -> {gpu_info, run} in; per-node results, busbw figures and fleet median out."""
    return _call('verify_nccl', _recorded('nccl', vn.decide_nccl), observations, expected)


def _nccl_multi_node(outcome, run, expected):
    multi = vn.decide_nccl_multi_node(run, dict(expected, model=outcome.get('model')))
    return dict(outcome, fleet=multi['fleet'], multi_node=multi['summary'])


def verify_nccl_multi_node(outcome, run, expected):
    """Area nccl, across nodes: the single-node outcome and the srun run in; the outcome with the multi-node result."""
    return _call('verify_nccl_multi_node', _nccl_multi_node, outcome, run, expected)


def _ready(variables, slurm_nodes, nodes):
    return vg_gate.ready(list(nodes), vg_gate.outcomes_of(variables), slurm_nodes)


def verify_ready_nodes(variables, slurm_nodes, nodes):
    """The nodes that passed every check so far (the outcome facts in ``variables``) and that Slurm has in service."""
    return _call('verify_ready_nodes', _ready, variables, slurm_nodes, nodes)


def verify_table(doc):
    """The verdict table of a results.json document, as lines."""
    return _call('verify_table', vd.table, doc)


class FilterModule(object):
    """aicluster.infra verification filters."""

    def filters(self):
        return {
            'verify_ib': verify_ib,
            'verify_fabric': verify_fabric,
            'verify_perftest_plan': verify_perftest_plan,
            'verify_perftest_tests': verify_perftest_tests,
            'verify_perftest_round': verify_perftest_round,
            'verify_gpu': verify_gpu,
            'verify_nccl': verify_nccl,
            'verify_nccl_multi_node': verify_nccl_multi_node,
            'verify_ready_nodes': verify_ready_nodes,
            'verify_table': verify_table,
        }
