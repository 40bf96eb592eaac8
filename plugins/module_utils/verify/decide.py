# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The decision points of the verify stage: what each role hands over, the area's outcome back.

One function per filter of plugins/filter/verify.py (which only turns errors
into AnsibleFilterError). Each outcome records, in ``parameters``, the
expectations that change its figures: the gate copies them into results.json
``run.parameters`` and nothing downstream re-derives them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils.verify import (
    fabric as _fabric, fabric_health as _health, gate as _gate, gpu as _gpu, ib as _ib, link as _link, nccl as _nccl, net as _net,
    perftest as _perftest, roce as _roce,
)

# results.json run.parameters, by area: expected key -> parameter name
PARAMETERS = {
    'ib': (('rate_gbps', 'ib_rate_gbps'), ('port', 'ib_port'), ('link_layer', 'ib_link_layer'), ('mtu', 'mtu'),
           ('ipoib_mtu', 'ipoib_mtu'), ('rdma_mtu', 'rdma_mtu')),
    'fabric': (('width', 'fabric_width'), ('lane_speed_gbps', 'fabric_lane_speed_gbps')),
    'sm': (('provider', 'fabric_sm_provider'), ('priority', 'fabric_sm_priority'), ('sweep_s', 'fabric_sm_sweep_s'),
           ('partitions_source', 'fabric_partitions')),
    'switch': (('error_max', 'fabric_switch_error_max'),),
    'roce': (('link_layer', 'roce_link_layer'),),
    'lossless': (('priority', 'lossless_priority'), ('tclass', 'lossless_tclass')),
    'link': (('ber_max', 'ib_ber_max'), ('error_max', 'ib_link_error_max'), ('roce_priority', 'ib_roce_priority')),
    'perftest': (('fraction', 'perftest_fraction'), ('bidirectional', 'perftest_bidirectional'), ('size', 'perftest_size'),
                 ('qps', 'perftest_qps'), ('duration_s', 'perftest_duration_s'), ('schedule', 'perftest_schedule'),
                 ('max_latency_us', 'perftest_max_latency_us'), ('rate_gbps', 'perftest_rate_gbps'),
                 ('tclass', 'perftest_tclass'), ('gpudirect_bw_enabled', 'perftest_gpudirect')),
    'gpu': (('dcgm_level', 'dcgm_diag_level'), ('dcgm_allow_warn', 'dcgm_allow_warn'),
            ('ecc_uncorrected_max', 'gpu_ecc_uncorrected_max'), ('nvlinks_per_gpu', 'gpu_nvlinks_per_gpu')),
    'nccl': (('algorithm', 'nccl_algorithm'), ('test', 'nccl_test'), ('min_bytes', 'nccl_min_bytes'), ('max_bytes', 'nccl_max_bytes'),
             ('step_factor', 'nccl_step_factor'), ('large_bytes', 'nccl_large_bytes'), ('slow_fraction', 'nccl_slow_fraction'),
             ('ranks_per_node', 'nccl_multi_node_ranks_per_node')),
}


def parameters(area, expected):
    """The area's run.parameters from what its decision expected."""
    return dict((name, expected[key]) for key, name in PARAMETERS[area] if key in expected)


def _recorded(area, outcome, expected):
    if outcome is not None:
        outcome['parameters'] = parameters(area, expected)
    return outcome


def ib(observations, expected):
    """Areas ib and net: node -> {ib_info, links, pings, peer}; ports and fleet uniformity, then each rail's MTU."""
    outcome = _ib.decide_ib(observations, expected)
    if expected.get('mtu_enabled', True):
        for node, results in _net.decide_net(observations, expected).items():
            outcome['nodes'].setdefault(node, []).extend(results)
    return _recorded('ib', outcome, expected)


def mtu_plan(observations, expected):
    """Area net, before the pings: node -> {ib_info, links, peer}; node -> the rails to ping (netdev, peer address, size)."""
    return _net.plan(observations, expected)


def fabric(fabric_info, checked, expected):
    """Area fabric: the fabric_info result and each node's HCAs in rail order; None when the fabric was not read."""
    return _recorded('fabric', _fabric.decide_fabric(fabric_info, checked, expected), expected)


def fabric_sm(observations, reads, expected):
    """Area fabric, subnet manager and partitions: node -> {ib_info, opensm_pgrep, opensm_units, pkeys_sysfs,
    pkeys_smpquery}, the subnet reads (sminfo twice, saquery SMIR and -s); fabric.sm and fabric.partition, one outcome
    (``nodes``, ``cluster``, ``summary``)."""
    sm = _health.decide_fabric_sm(observations, reads, expected)
    partition = _health.decide_fabric_partition(observations, expected)
    nodes = dict((node, list(results)) for node, results in sm['nodes'].items())
    for node, results in partition['nodes'].items():
        nodes.setdefault(node, []).extend(results)
    outcome = {'nodes': nodes, 'cluster': sm['cluster'], 'summary': {'sm': sm['summary'], 'partition': partition['summary']}}
    return _recorded('sm', outcome, dict(expected, priority=sm['summary'].get('priority'),
                                         partitions_source=partition['summary'].get('partitions')))


def fabric_problems(settings):
    """The fabric-health variables of verify_ib checked before any measurement: one line per bad one."""
    return _health.fabric_problems(settings)


def switch_errors(reads, expected):
    """Area fabric, switch ports: ibqueryerrors -r once per subnet before and after the bandwidth tests;
    fabric.switch_errors (``nodes``, ``cluster``, ``summary``)."""
    return _recorded('switch', _health.decide_fabric_switch_errors(reads, expected), expected)


def link(observations, expected):
    """Area ib, link quality: node -> {before, after} (ib_counters_info results); error counter rises, BER, RoCE drops."""
    return _recorded('link', _link.decide_link(observations, expected), expected)


def roce_qos(observations, expected):
    """Area net, RoCE QoS: node -> {plan, qos, links} (the roce role's plan, rdma_qos in check mode, ip -j addr); net.roce_qos."""
    return _recorded('roce', _roce.decide_roce_qos(observations, expected), expected)


def lossless_plan(observations, outcome, expected):
    """Area net, before the incast rounds: node -> {ib_info} and the perftest plan; one incast round per rail."""
    return _roce.lossless_plan(observations, outcome, expected)


def lossless(plan, observations, expected):
    """Area net, after the incast rounds: node -> {before, after} (ethtool -S loops); net.lossless."""
    outcome = _roce.decide_lossless(plan, observations, expected)
    return _recorded('lossless', outcome, dict(expected or {}, priority=outcome['priority']))


def perftest_plan(observations, expected):
    """Area perftest, before the rounds: node -> {ib_info, address}; endpoints and rounds."""
    return _recorded('perftest', _perftest.plan(observations, expected), expected)


def perftest_tests(pairs, outcome, base_port, test=None):
    """The tests of one round of ``test`` for ``pairs`` of the plan."""
    return _perftest.round_tests(pairs, outcome['endpoints'], base_port, test=test, options=outcome.get('options'))


def perftest_round(outcome, async_results, expected):
    """Area perftest, after a round: the clients' async results judged, the next re-test planned."""
    return _perftest.record_round(outcome, async_results, expected)


def gpu(observations, expected):
    """Area gpu: node -> {gpu_info, nvlink_status, nvlink_errors, retired, compute_apps, dmesg, dcgm_diag}."""
    return _recorded('gpu', _gpu.decide_gpu(observations, expected), expected)


def nccl(observations, expected):
    """Area nccl, single node: node -> {gpu_info, run}; per-node results, busbw figures and fleet median."""
    return _recorded('nccl', _nccl.decide_nccl(observations, expected), expected)


def _srun_reservation(run):
    """The reservation the srun command ran in (``--reservation=NAME`` in its registered argv), or None."""
    for arg in (run or {}).get('cmd') or []:
        if isinstance(arg, str) and arg.startswith('--reservation='):
            return arg.split('=', 1)[1]
    return None


def nccl_multi_node(outcome, run, expected):
    """Area nccl, across nodes: the single-node outcome completed with the multi-node run's result (with
    ``reservation`` when srun ran inside the stage's maintenance reservation)."""
    multi = _nccl.decide_nccl_multi_node(run, dict(expected, model=outcome.get('model')))
    summary = multi['summary']
    if _srun_reservation(run):
        summary = dict(summary, reservation=_srun_reservation(run))
    return dict(outcome, cluster=multi['cluster'], multi_node=summary, fleet=multi['fleet'])


def ready_nodes(variables, slurm_nodes, nodes):
    """The nodes that passed every check so far (the outcome facts in ``variables``) and that Slurm has in service."""
    return _gate.ready(list(nodes), _gate.outcomes_of(variables), slurm_nodes)
