# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Replay of the verify stage's decisions, as the roles make them, on one fixture case.

``run_case(case_in)`` takes a case's in.json (what the roles' tasks gather,
and the role variables) and returns the results.json document the gate
builds. Each role gathers its tools' output per node, then makes one filter
call per area and scope; the functions below build the same observations
and expectations as the roles' vars/main.yml and tasks, and make the same
calls in the same order. The in.json format is a contract: a refactor
changes the calls here, never the fixtures.
"""

from __future__ import absolute_import, division, print_function

import copy
import re

from ansible_collections.aicluster.infra.plugins.filter import verify as vf
from ansible_collections.aicluster.infra.plugins.filter import verify_gate as vf_gate
from ansible_collections.aicluster.infra.plugins.modules import slurm_node
from ansible_collections.aicluster.infra.plugins.module_utils.verify import document, gate

SKIPPED = {'changed': False, 'skipped': True, 'skip_reason': 'Conditional result was False'}


def _on(value):
    if isinstance(value, str):
        return value.strip().lower() in ('yes', 'true', 'on', '1', 'y')
    return bool(value)


def _int_or_none(value):
    return int(value) if int(value) > 0 else None


class Play(object):
    """The play: role variables, the hosts that answer, what each reported, and the outcomes so far."""

    def __init__(self, case_in):
        self.case = case_in
        self.vars = case_in['vars']
        self.hosts_all = list(case_in['hosts_all'])
        unreachable = set(case_in.get('unreachable') or [])
        self.hosts = [host for host in self.hosts_all if host not in unreachable]
        self.slurm_host = case_in.get('slurm_host') or ''
        self.outcomes = {}
        # roles/verify_gate/tasks/busy.yml: the nodes Slurm shows running jobs when verify starts (verify_busy_plan;
        # the maintenance reservation changes no result: its second read finds the same nodes busy)
        states = {'changed': False, 'nodes': case_in.get('slurm_nodes') or []} if self.slurm_host else SKIPPED
        self.busy = vf_gate.verify_busy_plan(states, {'nodes': self.hosts_all, 'slurm_names': {}, 'reservation': False,
                                                      'busy': case_in['vars'].get('verify_gate_busy', 'skip')})['busy']

    def facts(self):
        """The outcome facts each role sets (roles/verify_*: verify_<role>_outcome), as the first host holds them."""
        return dict((fact, self.outcomes[area]) for area, fact in gate.OUTCOME_FACTS if area in self.outcomes)

    def v(self, name):
        return self.vars[name]

    def observed(self, host, name, default=None):
        value = (self.case['hosts'].get(host) or {}).get(name)
        return default if value is None else value


def role_verify_ib(play):
    """roles/verify_ib: ib_info, links (ip addr), the plan's pings and fabric_info gathered; verify_ib, then verify_fabric."""
    expected = {'hcas': play.v('verify_ib_hcas'), 'port': play.v('verify_ib_port'),
                'rate_gbps': int(play.v('verify_ib_rate_gbps')), 'link_layer': play.v('verify_ib_link_layer'),
                'firmware': play.v('verify_ib_firmware'), 'ofed': play.v('verify_ib_ofed'),
                'ports': _on(play.v('verify_ib_ports_enabled')), 'uniform': _on(play.v('verify_ib_uniform_enabled')),
                'mtu': int(play.v('verify_ib_mtu')),
                # cases recorded before these variables existed: their defaults
                'ipoib_mtu': int(play.vars.get('verify_ib_ipoib_mtu', 4092)),
                'rdma_mtu': int(play.vars.get('verify_ib_rdma_mtu', 4096)),
                'mtu_enabled': _on(play.v('verify_ib_mtu_enabled')), 'fabric_host': play.vars.get('verify_ib_fabric_host', ''),
                # cases recorded before the mode was read: not judged then ('')
                'ipoib_mode': play.vars.get('verify_ib_ipoib_mode', ''),
                'sysfs_root': play.vars.get('verify_ib_sysfs_root', '/sys')}
    mtu = expected['mtu_enabled']
    fabric = _on(play.v('verify_ib_fabric_enabled')) and play.v('verify_ib_link_layer') != 'Ethernet'
    read = expected['ports'] or expected['uniform'] or mtu or fabric
    observations = {}
    for index, host in enumerate(play.hosts):
        observations[host] = {
            'ib_info': play.observed(host, 'ib_info') if read else SKIPPED,
            'links': play.observed(host, 'links') if mtu else SKIPPED,
            'ipoib_modes': play.observed(host, 'ipoib_modes', SKIPPED) if mtu else SKIPPED,
            'peer': play.hosts[(index + 1) % len(play.hosts)]}
    # the ping loop runs over the plan; in.json holds each node's registered loop (cases without one: not pinged)
    if mtu:
        vf.verify_mtu_plan(observations, expected)
    for host in play.hosts:
        observations[host]['pings'] = (play.observed(host, 'pings') if mtu else None) or SKIPPED
    play.outcomes['ib'] = vf.verify_ib(observations, expected)
    if fabric:
        play.outcomes['fabric'] = vf.verify_fabric(play.case.get('fabric_info'), play.outcomes['ib']['checked'], {
            'width': play.v('verify_ib_width'), 'lane_speed_gbps': float(play.v('verify_ib_lane_speed_gbps')),
            'rail_check': _on(play.v('verify_ib_rail_enabled')), 'rail_group_regex': play.v('verify_ib_rail_group_regex'),
            'port': int(play.v('verify_ib_port')), 'identity': play.outcomes['ib']['identity'],
            'scalable_units': dict((host, '') for host in play.hosts)})


def perftest_expected(play):
    """roles/verify_perftest/vars/main.yml __verify_perftest_expected."""
    return {'hcas': play.v('verify_perftest_hcas'), 'link_layer': play.v('verify_perftest_link_layer'),
            'schedule': play.v('verify_perftest_schedule'),
            'write_bw_enabled': _on(play.v('verify_perftest_write_bw_enabled')),
            'read_bw_enabled': _on(play.v('verify_perftest_read_bw_enabled')),
            'write_lat_enabled': _on(play.v('verify_perftest_write_lat_enabled')),
            'fraction': float(play.v('verify_perftest_fraction')), 'bidirectional': _on(play.v('verify_perftest_bidirectional')),
            'max_latency_us': play.v('verify_perftest_max_latency_us'), 'size': play.v('verify_perftest_size'),
            'qps': play.v('verify_perftest_qps'), 'duration_s': play.v('verify_perftest_duration_s'),
            # cases recorded before these variables existed: their defaults
            'rate_gbps': int(play.vars.get('verify_perftest_rate_gbps') or 0) or int(play.vars.get('verify_ib_rate_gbps') or 0),
            'tclass': play.vars.get('verify_perftest_tclass', 106),
            'gpudirect_bw_enabled': _on(play.vars.get('verify_perftest_gpudirect_enabled', True)),
            'timeout_s': play.vars.get('verify_perftest_timeout_s'), 'server_wait_s': play.vars.get('verify_perftest_server_wait_s')}


def _client_output(play, test, spec):
    key = '%s>%s:%d' % (spec['client'], spec['server'], spec['rail'])
    outputs = (play.case.get('perftest') or {}).get(test)
    if outputs is None or key not in outputs:
        raise AssertionError('in.json has no perftest.%s[%r]: the generator must record every ordered pair and rail' % (test, key))
    return outputs[key]


def perftest_round(play, outcome, test, pairs, round_index):
    """round.yml: the round's tests, each node's perftest_run result (play order), then verify_perftest_round."""
    tests = vf.verify_perftest_tests(pairs, outcome, play.v('verify_perftest_base_port'), test)
    done = []
    for host in play.hosts:
        mine = [item for item in tests if host in (item['client'], item['server'])]
        if not mine:
            continue
        clients = []
        for spec in (item for item in mine if item['client'] == host):
            output = _client_output(play, test, spec)
            clients.append({'data': spec['client_cmd']['data'], 'argv': spec['client_cmd']['argv'], 'rc': output['rc'],
                            'stdout': output.get('stdout', ''), 'stderr': output.get('stderr', ''), 'attempts': 1})
        done.append({'finished': 1, 'changed': False, 'clients': clients, 'servers': []})
    return vf.verify_perftest_round(outcome, done, dict(perftest_expected(play), test=test, round=round_index))


def role_verify_perftest(play):
    """roles/verify_perftest: plan, the scheduled rounds of every test, then the re-tests each round planned."""
    observations = dict((host, {'ib_info': play.observed(host, 'ib_info'), 'address': host, 'busy': host in play.busy})
                        for host in play.hosts)
    outcome = vf.verify_perftest_plan(observations, perftest_expected(play))
    rounds = outcome['summary']['rounds']
    for test in list(outcome['tests']):
        for index in range(len(rounds)):
            outcome = perftest_round(play, outcome, test, rounds[index], index)
    for test in list(outcome['tests']):
        for step in range(int(play.v('verify_perftest_retest_rounds'))):
            if outcome['retest'][test]:
                outcome = perftest_round(play, outcome, test, outcome['retest'][test], 'retest-%d' % step)
    play.outcomes['perftest'] = outcome


def role_verify_gpu(play):
    """roles/verify_gpu: every tool's registered result, then verify_gpu."""
    def on(name):
        return _on(play.v(name))
    expected = {
        'count': _int_or_none(play.v('verify_gpu_count')), 'model': play.v('verify_gpu_model'),
        'driver': play.v('verify_gpu_driver'), 'ecc_uncorrected_max': play.v('verify_gpu_ecc_uncorrected_max'),
        'retired_pages_max': play.v('verify_gpu_retired_pages_max'),
        'nvlinks_per_gpu': _int_or_none(play.v('verify_gpu_nvlinks_per_gpu')),
        'nvlink_error_max': play.v('verify_gpu_nvlink_error_max'),
        'nvlink_error_absolute_max': play.v('verify_gpu_nvlink_error_absolute_max'), 'fatal_xids': play.v('verify_gpu_fatal_xids'),
        'allowed_processes': play.v('verify_gpu_allowed_processes'), 'dcgm_allow_warn': play.v('verify_gpu_dcgm_allow_warn'),
        'dcgm_level': play.v('verify_gpu_dcgm_level'),
        'power_limit_tolerance_pct': float(play.v('verify_gpu_power_limit_tolerance_pct')),
        'pcie_gen_strict': _on(play.v('verify_gpu_pcie_gen_strict')),
        'enabled': dict((group, on('verify_gpu_%s_enabled' % group))
                        for group in ('inventory', 'persistence', 'power', 'pcie', 'fabric', 'memory', 'nvlink', 'xid',
                                      'processes', 'dcgm'))}
    observations = {}
    for host in play.hosts:
        info = play.observed(host, 'gpu_info')
        ok = not info.get('failed')

        def tool(name, group):
            return (play.observed(host, name) or SKIPPED) if ok and expected['enabled'][group] else SKIPPED
        # DCGM level 2+ never runs on a node that runs jobs (verify_gate_busy)
        dcgm = SKIPPED if host in play.busy and int(expected['dcgm_level']) >= 2 else tool('dcgm_diag', 'dcgm')
        observations[host] = {'gpu_info': info, 'nvlink_status': tool('nvlink_status', 'nvlink'),
                              'nvlink_errors_before': tool('nvlink_errors_before', 'nvlink'),
                              'nvlink_errors': tool('nvlink_errors', 'nvlink'), 'proc_cgroups': tool('proc_cgroups', 'processes'),
                              'slurm_pids': tool('slurm_pids', 'processes'), 'xid_state': tool('xid_state', 'xid'),
                              'retired': tool('retired', 'memory'), 'compute_apps': tool('compute_apps', 'processes'),
                              'dmesg': tool('dmesg', 'xid'), 'dcgm_diag': dcgm}
    play.outcomes['gpu'] = vf.verify_gpu(observations, expected)


def nccl_expected(play):
    """roles/verify_nccl/vars/main.yml __verify_nccl_expected."""
    algorithm = play.v('verify_nccl_algorithm')
    return {'test': play.v('verify_nccl_binary'), 'min_bytes': play.v('verify_nccl_min_bytes'),
            'max_bytes': play.v('verify_nccl_max_bytes'), 'step_factor': play.v('verify_nccl_step_factor'),
            'large_bytes': int(play.v('verify_nccl_large_bytes')), 'algorithm': algorithm,
            'busbw_table': play.v('verify_nccl_busbw_table_nvls' if algorithm == 'nvls' else 'verify_nccl_busbw_table'),
            'busbw_min_gbs': play.v('verify_nccl_busbw_min_gbs'), 'slow_node': _on(play.v('verify_nccl_slow_node_enabled')),
            'slow_fraction': float(play.v('verify_nccl_slow_fraction')),
            'ranks_per_node': play.v('verify_nccl_multi_node_ranks_per_node')}


def nccl_single_node(play):
    """roles/verify_nccl main.yml up to the single-node decision: gpu_info and all_reduce_perf per node, verify_nccl."""
    single = _on(play.v('verify_nccl_single_node_enabled'))
    observations = {}
    for host in play.hosts:
        info = (play.observed(host, 'nccl_gpu_info') or play.observed(host, 'gpu_info')) if single else SKIPPED
        # never on a node that runs jobs (verify_gate_busy)
        run = play.observed(host, 'nccl') if single and not info.get('failed') and host not in play.busy else SKIPPED
        observations[host] = {'gpu_info': info, 'run': run}
    play.outcomes['nccl'] = vf.verify_nccl(observations, nccl_expected(play))


def nccl_ready(play):
    """multi_node.yml: the nodes that pass so far and Slurm has in service (verify_ready_nodes)."""
    return vf.verify_ready_nodes(play.facts(), play.case.get('slurm_nodes') or [], play.hosts)


def ready_for_multi_node(case_in):
    """The nodes the multi-node run takes in a case: the roles replayed up to that point."""
    play = Play(copy.deepcopy(case_in))
    for role in (role_verify_ib, role_verify_perftest, role_verify_gpu, nccl_single_node):
        role(play)
    return nccl_ready(play)


def role_verify_nccl(play):
    """roles/verify_nccl: the single-node decision, then multi_node.yml."""
    nccl_single_node(play)
    srun_host = play.v('verify_nccl_srun_host') or play.slurm_host
    if _on(play.v('verify_nccl_multi_node_enabled')) and srun_host != '':
        nccl_multi_node(play)


def nccl_multi_node(play):
    """multi_node.yml: the ready nodes (verify_ready_nodes), srun when two or more, verify_nccl_multi_node."""
    participants = nccl_ready(play)
    multi = play.case.get('nccl_multi')
    run = SKIPPED
    if len(participants) >= 2:
        if multi is None:
            raise AssertionError('%d nodes take part in the multi-node run (%s) but in.json has no nccl_multi'
                                 % (len(participants), ', '.join(participants)))
        if multi.get('participants') != participants:
            raise AssertionError('the multi-node run takes %s, in.json recorded %s' % (participants, multi.get('participants')))
        run = {'rc': multi['rc'], 'stdout': multi.get('stdout', ''), 'stderr': multi.get('stderr', ''), 'changed': False}
    elif multi is not None:
        raise AssertionError('in.json has nccl_multi but only %s pass and are in service' % participants)
    gpus = int(play.v('verify_nccl_gpus')) or int((play.observed(play.hosts[0], 'gpu_info') or {}).get('count') or 8)
    ranks = int(play.v('verify_nccl_multi_node_ranks_per_node')) or gpus
    play.outcomes['nccl'] = vf.verify_nccl_multi_node(play.outcomes['nccl'], run, dict(
        nccl_expected(play), participants=participants, busbw_table=play.v('verify_nccl_multi_node_busbw_table'),
        busbw_min_gbs=play.v('verify_nccl_multi_node_busbw_min_gbs'),
        network_fraction=play.v('verify_nccl_multi_node_network_fraction'), ib_outcome=play.outcomes.get('ib'),
        node_ranks=ranks * max(1, gpus // max(1, ranks)), bisect=int(play.v('verify_nccl_bisect_rounds')) > 0,
        bisect_runs=[], slurm_error=None))


def _slurm_node_result(node, action):
    """What aicluster.infra.slurm_node returns after a successful drain or resume (plugins/modules/slurm_node.py)."""
    state_before = action['state']
    if action['action'] == 'drain':
        state_after = state_before if slurm_node.drained(state_before) else '%s+DRAIN' % (state_before or 'UNKNOWN')
        cmd = ['/usr/bin/scontrol', 'update', 'NodeName=%s' % action['slurm_name'], 'State=DRAIN', 'Reason=%s' % action['reason']]
        reason_after = action['reason']
    else:
        state_after = re.sub(r'\+DRAIN(ED|ING)?', '', state_before or '')
        cmd = ['/usr/bin/scontrol', 'update', 'NodeName=%s' % action['slurm_name'], 'State=RESUME']
        reason_after = None
    return {'changed': True, 'name': action['slurm_name'], 'state_before': state_before, 'state_after': state_after,
            'reason_before': action['reason_before'], 'reason_after': reason_after, 'cmd': cmd,
            'item': {'key': node, 'value': action}, 'ansible_loop_var': 'item'}


def role_verify_gate(play):
    """roles/verify_gate: the verify_gate action (plugins/action/verify_gate.py), its Slurm side simulated:
    slurm_node_info gives the case's slurm_nodes, and slurm_node succeeds for every drain and resume."""
    name_var = play.v('verify_gate_slurm_name_var')
    slurm_nodes = (play.case.get('slurm_nodes') or []) if play.slurm_host else None
    fixed = play.case['run']
    run = {'started': fixed['started'], 'finished': fixed['finished'], 'inventory': fixed['inventory'],
           'collection_version': fixed['collection_version'], 'slurm': play.slurm_host if play.slurm_host else None}

    def act(actions):
        return dict((node, _slurm_node_result(node, action)) for node, action in sorted(actions.items())
                    if action['action'] != 'none')
    doc, dummy, dummy = document.run_gate(play.facts(), slurm_nodes, {
        'nodes': play.hosts_all, 'first': play.hosts[0], 'mode': play.v('verify_gate_on_failure'),
        'facts': dict((host, play.observed(host, 'facts')) for host in play.hosts),
        'slurm_names': dict((host, None) for host in play.hosts_all) if name_var else {},
        'max_drain_fraction': float(play.v('verify_gate_max_drain_fraction')), 'busy': play.busy}, run, act)
    return doc


def run_case(case_in):
    """The results.json document the verify stage builds from one case's observations."""
    play = Play(copy.deepcopy(case_in))
    role_verify_ib(play)
    role_verify_perftest(play)
    role_verify_gpu(play)
    role_verify_nccl(play)
    return role_verify_gate(play)
