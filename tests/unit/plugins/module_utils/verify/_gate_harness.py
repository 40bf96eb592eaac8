# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Replay of the verify stage's Python calls, as the roles' Jinja makes them, on one fixture case.

``run_case(case_in)`` takes a case's in.json (what the roles' tasks gather, and
the role variables) and returns the results.json document the gate builds.
Every function below mimics one task (or one block) of roles/verify_ib,
verify_perftest, verify_gpu, verify_nccl and verify_gate, named after it, with
the same filter calls, in the same order and with the same arguments,
including the Jinja details (``| int``, ``default(none)``, run_once facts set
on every play host, the rescue branches). The in.json format is a contract:
a refactor replaces the calls here, never the fixtures.

ansible-core 2.19 keeps native types through ``"{{ x }}"``, so a value
crosses the Jinja boundary unchanged (a string stays a string).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import re

from ansible_collections.aicluster.infra.plugins.filter import verify as vf
from ansible_collections.aicluster.infra.plugins.modules import slurm_node

UNDEFINED = object()


class Play(object):
    """What the play knows: role variables, hosts, and each host's facts (set_fact)."""

    def __init__(self, case_in):
        self.case = case_in
        self.vars = case_in['vars']
        self.hosts_all = list(case_in['hosts_all'])
        unreachable = set(case_in.get('unreachable') or [])
        self.hosts = [host for host in self.hosts_all if host not in unreachable]  # ansible_play_hosts
        self.facts = dict((host, {}) for host in self.hosts_all)
        self.slurm_host = case_in.get('slurm_host') or ''

    def v(self, name):
        return self.vars[name]

    def observed(self, host, name):
        return (self.case['hosts'].get(host) or {}).get(name)

    def set_fact(self, host, **facts):
        self.facts[host].update(facts)

    def set_fact_run_once(self, **facts):
        """set_fact with run_once: every host of the play gets the facts."""
        for host in self.hosts:
            self.facts[host].update(copy.deepcopy(facts))

    def fact(self, host, name, default=UNDEFINED):
        value = self.facts[host].get(name, UNDEFINED)
        if value is UNDEFINED:
            if default is UNDEFINED:
                raise KeyError('%s has no fact %s' % (host, name))
            return default
        return value

    def defined(self, host, name):
        return name in self.facts[host]

    @property
    def first(self):
        return self.hosts[0]


def _failed(result):
    return bool(result is None or result.get('failed'))


def _msg(result, default='unknown error'):
    return (result or {}).get('msg') or default


def _to_bool(value):
    if isinstance(value, str):
        return value.strip().lower() in ('yes', 'true', 'on', '1', 'y')
    return bool(value)


# ---------------------------------------------------------------------------
# verify_ib
# ---------------------------------------------------------------------------

def ib_expected(play):
    """roles/verify_ib/vars/main.yml __verify_ib_expected."""
    return {'hcas': play.v('verify_ib_hcas'), 'port': play.v('verify_ib_port'),
            'rate_gbps': int(play.v('verify_ib_rate_gbps')), 'link_layer': play.v('verify_ib_link_layer')}


def ib_fleet_expected(play):
    """roles/verify_ib/vars/main.yml __verify_ib_fleet_expected."""
    expected = ib_expected(play)
    expected.update(firmware=play.v('verify_ib_firmware'), ofed=play.v('verify_ib_ofed'),
                    checks=['ib.firmware_uniform', 'ib.ofed_uniform'] + (
                        ['ib.port_rate'] if _to_bool(play.v('verify_ib_ports_enabled')) else []))
    return expected


def verify_ib_start_with_no_results(play, host):
    play.set_fact(host, verify_ib_results=[], verify_ib_raw={'ib_info': None})


def verify_ib_check_the_ports(play, host):
    """Block: Read the adapters, Decide the port checks; rescue: Record that the adapters could not be read."""
    info = play.observed(host, 'ib_info')
    if _failed(info):
        play.set_fact(host, verify_ib_results=[vf.verify_result(
            'ib.hca_present', 'node', None, 'ib_info', False,
            'ib_info failed: ' + _msg(info) + '; install infiniband-diags and check the driver')],
            verify_ib_checked=play.v('verify_ib_hcas'))
        return
    play.set_fact(host,
                  verify_ib_results=vf.verify_ports(info, ib_expected(play)) if _to_bool(play.v('verify_ib_ports_enabled')) else [],
                  verify_ib_raw={'ib_info': {'hcas': info['hcas'], 'ofed_version': info['ofed_version']}},
                  verify_ib_checked=vf.verify_checked_hcas(info, play.v('verify_ib_hcas'), play.v('verify_ib_link_layer')))


def verify_ib_compare_the_fleet(play):
    infos = dict((host, (play.fact(host, 'verify_ib_raw', {}) or {}).get('ib_info')) for host in play.hosts)
    play.set_fact_run_once(verify_ib_fleet_results=vf.verify_ib_fleet(infos, ib_fleet_expected(play)))


def verify_ib_fabric(play):
    """fabric.yml: Read every link of the fabric, then Decide the link checks or Record that the fabric could not be read."""
    fabric = play.case.get('fabric_info')
    if not _failed(fabric):
        rails = dict((host, play.fact(host, 'verify_ib_checked')) for host in play.hosts)
        evaluated = vf.verify_fabric(fabric, rails, {
            'width': play.v('verify_ib_width'), 'lane_speed_gbps': float(play.v('verify_ib_lane_speed_gbps')),
            'rail_check': _to_bool(play.v('verify_ib_rail_enabled')), 'rail_group_regex': play.v('verify_ib_rail_group_regex')})
        play.set_fact_run_once(verify_ib_fabric_results=evaluated['nodes'], verify_ib_fabric_summary={
            'links': fabric.get('links', []), 'degraded': evaluated['degraded'], 'unmapped': evaluated['unmapped'],
            'errors': fabric.get('errors', [])})
        return
    failed = vf.verify_result('fabric.link_width', 'fabric', None, 'iblinkinfo', False,
                              'iblinkinfo failed: ' + _msg(fabric))
    play.set_fact_run_once(verify_ib_fabric_results=dict((host, [failed]) for host in play.hosts),
                           verify_ib_fabric_summary={'links': [], 'degraded': [], 'unmapped': [],
                                                     'errors': [_msg(fabric, 'fabric_info failed')]})


def ib_peer(play, host):
    """roles/verify_ib/vars/main.yml __verify_ib_peer: the next play host (a ring)."""
    return play.hosts[(play.hosts.index(host) + 1) % len(play.hosts)]


def verify_ib_mtu(play, host):
    """mtu.yml: Ping the next node (ping -M do), Decide the MTU check."""
    ping = play.observed(host, 'ping')
    stderr = ping['stderr'] if 'stderr' in ping else ping.get('msg', '')
    results = play.fact(host, 'verify_ib_results') + vf.verify_mtu(
        ping['rc'], ping.get('stdout', ''), stderr, ib_peer(play, host), play.v('verify_ib_mtu'))
    play.set_fact(host, verify_ib_results=results)


def role_verify_ib(play):
    for host in play.hosts:
        verify_ib_start_with_no_results(play, host)
    if _to_bool(play.v('verify_ib_ports_enabled')) or _to_bool(play.v('verify_ib_uniform_enabled')):
        for host in play.hosts:
            verify_ib_check_the_ports(play, host)
    if _to_bool(play.v('verify_ib_uniform_enabled')):
        verify_ib_compare_the_fleet(play)
    if _to_bool(play.v('verify_ib_fabric_enabled')):
        verify_ib_fabric(play)
    if _to_bool(play.v('verify_ib_mtu_enabled')) and len(play.hosts) > 1:
        for host in play.hosts:
            verify_ib_mtu(play, host)


# ---------------------------------------------------------------------------
# verify_perftest
# ---------------------------------------------------------------------------

def perftest_tests_enabled(play):
    """roles/verify_perftest/vars/main.yml __verify_perftest_tests_enabled."""
    return ((['write_bw'] if _to_bool(play.v('verify_perftest_write_bw_enabled')) else [])
            + (['read_bw'] if _to_bool(play.v('verify_perftest_read_bw_enabled')) else [])
            + (['write_lat'] if _to_bool(play.v('verify_perftest_write_lat_enabled')) else []))


def perftest_threshold_fraction(play, test):
    """__verify_perftest_threshold_fraction."""
    return float(play.v('verify_perftest_fraction')) * (
        2 if _to_bool(play.v('verify_perftest_bidirectional')) and test != 'write_lat' else 1)


def perftest_rails(play):
    """__verify_perftest_rails: node -> HCA names in rail order (map(attribute='names', default=[]))."""
    return dict((host, (play.fact(host, '__verify_perftest_endpoint') or {}).get('names', []))
                for host in play.hosts)


def verify_perftest_describe_endpoint(play, host):
    """Read the adapters to test (ib_info, ignore_errors), Describe this node's test endpoint."""
    info = play.observed(host, 'ib_info')
    # hostvars[inventory_hostname][verify_perftest_address_var] | default(inventory_hostname): no host variables here
    address = host
    endpoint = {} if _failed(info) else vf.verify_perftest_endpoint(
        info, play.v('verify_perftest_hcas'), play.v('verify_perftest_link_layer'), address)
    play.set_fact(host, __verify_perftest_endpoint=endpoint)


def verify_perftest_plan_the_rounds(play):
    nodes = [host for host in play.hosts if (play.fact(host, '__verify_perftest_endpoint') or {}).get('names', [])]
    summary = {'schedule': play.v('verify_perftest_schedule'),
               'rounds': vf.verify_perftest_schedule(nodes, play.v('verify_perftest_schedule')),
               'pairs': [], 'unattributed': {}}
    endpoints = dict((host, play.fact(host, '__verify_perftest_endpoint')) for host in play.hosts)
    play.set_fact_run_once(verify_perftest_summary=summary, __verify_perftest_endpoints=endpoints)


def _perftest_output(play, test, spec):
    key = '%s>%s:%d' % (spec['client'], spec['server'], spec['rail'])
    outputs = (play.case.get('perftest') or {}).get(test)
    if outputs is None or key not in outputs:
        raise AssertionError('in.json has no perftest.%s[%r]: the generator must record every ordered pair and rail' % (test, key))
    return outputs[key]


def verify_perftest_round(play, test, pairs, round_index):
    """round.yml: Plan the tests of the round, run the clients, Keep the pair results, Add them to the run's pairs."""
    first = play.first
    tests = vf.verify_perftest_tests(pairs, play.fact(first, '__verify_perftest_endpoints'), play.v('verify_perftest_base_port'))
    for host in play.hosts:
        done = []
        for spec in [item for item in tests if item['client'] == host]:
            output = _perftest_output(play, test, spec)
            # async_status result: its item is the client task's result, whose item is the test
            done.append({'item': {'item': spec, 'ansible_job_id': 'j%d' % len(done)}, 'finished': 1, 'rc': output['rc'],
                         'stdout': output.get('stdout', ''), 'stderr': output.get('stderr', '')})
        play.set_fact(host, __verify_perftest_round_pairs=vf.verify_perftest_pairs(
            done, test, perftest_threshold_fraction(play, test), play.v('verify_perftest_max_latency_us'), round_index))
    summary = dict(play.fact(first, 'verify_perftest_summary'))
    added = [pair for host in play.hosts for pair in play.fact(host, '__verify_perftest_round_pairs')]
    summary['pairs'] = summary['pairs'] + added
    play.set_fact_run_once(verify_perftest_summary=summary)


def verify_perftest_retest(play, test, step):
    """retest.yml: Plan the retest round, Run the retest round."""
    summary = play.fact(play.first, 'verify_perftest_summary')
    nodes = []
    for pair in [node for round_pairs in summary['rounds'] for pairs in round_pairs for node in pairs]:
        if pair not in nodes:
            nodes.append(pair)
    retest = vf.verify_perftest_retest([pair for pair in summary['pairs'] if pair['test'] == test], nodes)
    play.set_fact_run_once(__verify_perftest_retest=retest)
    if len(retest) > 0:
        verify_perftest_round(play, test, retest, 'retest-%d' % step)


def verify_perftest_decide_per_node(play):
    summary = play.fact(play.first, 'verify_perftest_summary')
    evaluated = vf.verify_perftest_evaluate(summary['pairs'], perftest_rails(play), perftest_tests_enabled(play))
    summary = dict(summary)
    summary['unattributed'] = evaluated['unattributed']
    play.set_fact_run_once(verify_perftest_results=evaluated['nodes'], verify_perftest_summary=summary)


def role_verify_perftest(play):
    for host in play.hosts:
        verify_perftest_describe_endpoint(play, host)
    verify_perftest_plan_the_rounds(play)
    enabled = perftest_tests_enabled(play)
    rounds = play.fact(play.first, 'verify_perftest_summary')['rounds']
    for test in enabled:
        for index in range(len(rounds)):
            verify_perftest_round(play, test, rounds[index], index)
    for test in enabled:
        for step in range(int(play.v('verify_perftest_retest_rounds'))):
            verify_perftest_retest(play, test, step)
    verify_perftest_decide_per_node(play)


# ---------------------------------------------------------------------------
# verify_gpu
# ---------------------------------------------------------------------------

def gpu_checks(play):
    """roles/verify_gpu/vars/main.yml __verify_gpu_checks."""
    on = lambda name: _to_bool(play.v(name))  # noqa: E731
    return ((['gpu.count', 'gpu.model'] if on('verify_gpu_inventory_enabled') else [])
            + (['gpu.persistence'] if on('verify_gpu_persistence_enabled') else [])
            + (['gpu.ecc', 'gpu.retired_pages', 'gpu.row_remap'] if on('verify_gpu_memory_enabled') else [])
            + (['gpu.nvlink', 'gpu.nvlink_errors'] if on('verify_gpu_nvlink_enabled') else [])
            + (['gpu.xid'] if on('verify_gpu_xid_enabled') else [])
            + (['gpu.processes'] if on('verify_gpu_processes_enabled') else [])
            + (['gpu.dcgm_diag'] if on('verify_gpu_dcgm_enabled') else []))


def gpu_expected(play):
    """roles/verify_gpu/vars/main.yml __verify_gpu_expected."""
    count = int(play.v('verify_gpu_count'))
    per_gpu = int(play.v('verify_gpu_nvlinks_per_gpu'))
    return {'count': count if count > 0 else None, 'model': play.v('verify_gpu_model'),
            'ecc_uncorrected_max': play.v('verify_gpu_ecc_uncorrected_max'),
            'retired_pages_max': play.v('verify_gpu_retired_pages_max'),
            'nvlinks_per_gpu': per_gpu if per_gpu > 0 else None,
            'nvlink_error_max': play.v('verify_gpu_nvlink_error_max'), 'fatal_xids': play.v('verify_gpu_fatal_xids'),
            'allowed_processes': play.v('verify_gpu_allowed_processes'),
            'dcgm_allow_warn': play.v('verify_gpu_dcgm_allow_warn'), 'checks': gpu_checks(play)}


def _gpu_rescue(play, host, failed_result):
    play.set_fact(host, verify_gpu_results=[vf.verify_result(
        'gpu.count', 'node', None, play.v('verify_gpu_count'), False,
        'GPU checks could not run: ' + _msg(failed_result) + '; check the driver (nvidia-smi) and DCGM (nv-hostengine)')],
        verify_gpu_raw={'gpu_info': {}, 'dcgm_diag': {}})


def verify_gpu_check_the_gpus(play, host):
    """Block: Read the GPUs .. Decide the GPU checks; rescue: Record that the GPUs could not be read."""
    on = lambda name: _to_bool(play.v(name))  # noqa: E731
    info = play.observed(host, 'gpu_info')
    if _failed(info):
        _gpu_rescue(play, host, info)
        return
    nvlink = play.observed(host, 'nvlink_status') if on('verify_gpu_nvlink_enabled') else None
    nvlink_errors = play.observed(host, 'nvlink_errors') if on('verify_gpu_nvlink_enabled') else None
    retired = play.observed(host, 'retired') if on('verify_gpu_memory_enabled') else None
    apps = play.observed(host, 'compute_apps') if on('verify_gpu_processes_enabled') else None
    if apps is not None and apps['rc'] != 0:  # failed_when: rc != 0 ends the block
        _gpu_rescue(play, host, dict(apps, msg=apps.get('msg', 'non-zero return code')))
        return
    dmesg = play.observed(host, 'dmesg') if on('verify_gpu_xid_enabled') else None
    if dmesg is not None and dmesg['rc'] != 0:
        _gpu_rescue(play, host, dict(dmesg, msg=dmesg.get('msg', 'non-zero return code')))
        return
    dcgm = play.observed(host, 'dcgm_diag') if on('verify_gpu_dcgm_enabled') else None
    if dcgm is not None:
        dcgm = dict(dcgm)
        dcgm.pop('failed', None)  # failed_when: false
    results = vf.verify_gpus(
        info, gpu_expected(play),
        nvlink_status=nvlink.get('stdout') if nvlink is not None else None,
        nvlink_errors=nvlink_errors.get('stdout') if nvlink_errors is not None else None,
        dcgm=dict(dcgm, level=play.v('verify_gpu_dcgm_level')) if dcgm is not None else None,
        dmesg=dmesg.get('stdout') if dmesg is not None else None,
        compute_apps=apps.get('stdout') if apps is not None else None,
        retired=(retired['stdout'] if retired.get('rc', 1) == 0 else None) if retired is not None else None)
    raw = {'gpu_info': dict((k, v) for k, v in info.items() if k not in ('changed', 'failed', 'invocation', 'warnings')),
           'dcgm_diag': dict((k, v) for k, v in (dcgm or {}).items() if k in ('overall', 'tests', 'errors'))}
    play.set_fact(host, verify_gpu_results=results, verify_gpu_raw=raw)


def verify_gpu_compare_the_drivers(play):
    infos = dict((host, (play.fact(host, 'verify_gpu_raw', {}) or {}).get('gpu_info')) for host in play.hosts)
    infos = dict((host, info) for host, info in infos.items() if info)
    play.set_fact_run_once(verify_gpu_fleet_results=vf.verify_gpu_fleet(infos, {'driver': play.v('verify_gpu_driver')}))


def role_verify_gpu(play):
    for host in play.hosts:
        verify_gpu_check_the_gpus(play, host)
    if _to_bool(play.v('verify_gpu_inventory_enabled')):
        verify_gpu_compare_the_drivers(play)


# ---------------------------------------------------------------------------
# verify_nccl
# ---------------------------------------------------------------------------

def verify_nccl_start_with_no_results(play, host):
    play.set_fact(host, verify_nccl_results=[], verify_nccl_raw={})


def verify_nccl_run_single_node(play, host):
    """Block: Read the GPUs, Run all_reduce_perf, Keep the figures; rescue: Record that nccl-tests could not run."""
    info = play.observed(host, 'nccl_gpu_info') or play.observed(host, 'gpu_info')
    if _failed(info):
        play.set_fact(host, verify_nccl_results=[vf.verify_result(
            'nccl.wrong', 'node', None, 0, False, 'nccl-tests could not run: ' + _msg(info))])
        return
    single = play.observed(host, 'nccl')
    names = [gpu.get('name') for gpu in info.get('gpus') or []]
    play.set_fact(host, __verify_nccl_single=single, __verify_nccl_gpu=info, verify_nccl_raw={
        'model': names[0] if names else '',
        'busbw': vf.verify_nccl_busbw(single['stdout'], play.v('verify_nccl_large_bytes')),
        'rc': single['rc'],
        'nccl': vf.verify_nccl_parse(single['stdout'])})


def verify_nccl_decide_per_node(play, host):
    raw = play.fact(host, 'verify_nccl_raw')
    threshold = vf.verify_nccl_threshold(play.v('verify_nccl_busbw_table'), raw['model'], play.v('verify_nccl_busbw_min_gbs'))
    median = vf.verify_median([(play.fact(other, 'verify_nccl_raw', {}) or {}).get('busbw') for other in play.hosts])
    play.set_fact(host, verify_nccl_results=vf.verify_nccl(
        play.fact(host, '__verify_nccl_single')['stdout'], threshold,
        median if _to_bool(play.v('verify_nccl_slow_node_enabled')) else None,
        play.v('verify_nccl_slow_fraction'), play.v('verify_nccl_large_bytes'), raw['model']))


def nccl_participants(play):
    """multi_node.yml: Read which nodes Slurm has in service, Choose the nodes."""
    slurm_nodes = play.case.get('slurm_nodes') or []
    in_service = [entry.get('NodeName') for entry in slurm_nodes
                  if not _search('DRAIN|DOWN|FAIL', entry.get('State'))]
    first = play.first
    hostvars = dict((host, play.facts[host]) for host in play.hosts)
    collected = vf.verify_collect(hostvars, play.hosts, ['verify_ib_results', 'verify_gpu_results', 'verify_nccl_results'],
                                  fleet=[play.fact(first, 'verify_ib_fleet_results', {}),
                                         play.fact(first, 'verify_ib_fabric_results', {}),
                                         play.fact(first, 'verify_perftest_results', {}),
                                         play.fact(first, 'verify_gpu_fleet_results', {})])
    return [node for node, data in collected.items() if data['passed'] and node in in_service]


def _search(pattern, value):
    return re.search(pattern, value or '') is not None


def verify_nccl_multi_node(play):
    """multi_node.yml: choose the nodes, run all_reduce_perf through srun, Decide or Say why there was no run."""
    participants = nccl_participants(play)
    play.set_fact_run_once(__verify_nccl_participants=participants)
    first = play.first
    multi = play.case.get('nccl_multi')
    if len(participants) >= 2:
        if multi is None:
            raise AssertionError('%d nodes take part in the multi-node run (%s) but in.json has no nccl_multi'
                                 % (len(participants), ', '.join(participants)))
        if multi.get('participants') != participants:
            raise AssertionError('the multi-node run takes %s, in.json recorded %s' % (participants, multi.get('participants')))
        threshold = vf.verify_nccl_threshold(play.v('verify_nccl_multi_node_busbw_table'),
                                             play.fact(first, 'verify_nccl_raw').get('model', ''),
                                             play.v('verify_nccl_multi_node_busbw_min_gbs'))
        stderr_lines = [line for line in (multi.get('stderr') or '').splitlines() if line]
        launch_error = ('srun exited %s: %s' % (multi['rc'], stderr_lines[-1] if stderr_lines else 'no message')
                        if multi.get('rc', 0) != 0 else '')
        evaluated = vf.verify_nccl_multi_node(multi.get('stdout', ''), threshold, participants,
                                              play.v('verify_nccl_large_bytes'), launch_error)
        play.set_fact_run_once(verify_nccl_fleet_results=evaluated['nodes'], verify_nccl_summary=evaluated['summary'])
        return
    if multi is not None:
        raise AssertionError('in.json has nccl_multi but only %s pass and are in service' % participants)
    play.set_fact_run_once(verify_nccl_summary={'nodes': participants, 'passed': None,
                                                'skipped': 'fewer than two nodes passed and are in service'})


def role_verify_nccl(play):
    for host in play.hosts:
        verify_nccl_start_with_no_results(play, host)
    single = _to_bool(play.v('verify_nccl_single_node_enabled'))
    if single:
        for host in play.hosts:
            verify_nccl_run_single_node(play, host)
        for host in play.hosts:
            if 'nccl' in play.fact(host, 'verify_nccl_raw'):
                verify_nccl_decide_per_node(play, host)
    srun_host = play.v('verify_nccl_srun_host') or play.slurm_host
    if _to_bool(play.v('verify_nccl_multi_node_enabled')) and srun_host != '':
        verify_nccl_multi_node(play)


# ---------------------------------------------------------------------------
# verify_gate
# ---------------------------------------------------------------------------

HOST_FACTS = ['verify_ib_results', 'verify_gpu_results', 'verify_nccl_results']
FLEET_FACTS = ['verify_ib_fleet_results', 'verify_ib_fabric_results', 'verify_perftest_results', 'verify_gpu_fleet_results',
               'verify_nccl_fleet_results']


def verify_gate_record_what_each_node_runs(play, host):
    facts = play.observed(host, 'facts')
    gpu_info = (play.fact(host, 'verify_gpu_raw', {}) or {}).get('gpu_info') or {}
    ib_info = (play.fact(host, 'verify_ib_raw', {}) or {}).get('ib_info') or {}
    hcas = ib_info.get('hcas') or []
    names = [gpu.get('name') for gpu in gpu_info.get('gpus') or []]
    play.set_fact(host, verify_gate_versions={
        'os': facts['os'], 'kernel': facts['kernel'],
        'driver': gpu_info.get('driver_version'), 'cuda': gpu_info.get('cuda_version'),
        'gpu_model': names[0] if names else None, 'gpu_count': gpu_info.get('count'),
        'ofed': ib_info.get('ofed_version'),
        'hca_firmware': dict(zip([hca.get('name') for hca in hcas], [hca.get('firmware_version') for hca in hcas]))})


def gate_checks_ran(play):
    """roles/verify_gate/vars/main.yml __verify_gate_checks_ran."""
    first = play.first
    return ((['ib'] if play.defined(first, 'verify_ib_results') else [])
            + (['fabric'] if play.defined(first, 'verify_ib_fabric_results') else [])
            + (['perftest'] if play.defined(first, 'verify_perftest_results') else [])
            + (['net'] if [r for r in play.fact(first, 'verify_ib_results', []) if r['check'] == 'net.mtu'] else [])
            + (['gpu'] if play.defined(first, 'verify_gpu_results') else [])
            + (['nccl'] if play.defined(first, 'verify_nccl_results') else []))


def verify_gate_collect(play):
    first = play.first
    fleet = [play.facts[first][name] for name in FLEET_FACTS if name in play.facts[first]]
    return vf.verify_collect(play.facts, play.hosts_all, HOST_FACTS,
                             {'ib_info': 'verify_ib_raw', 'gpu': 'verify_gpu_raw', 'nccl': 'verify_nccl_raw'}, fleet)


def _slurm_node_result(action):
    """What aicluster.infra.slurm_node returns after a successful drain or resume (plugins/modules/slurm_node.py)."""
    value = action['value']
    state_before = value['state']
    if value['action'] == 'drain':
        state_after = state_before if slurm_node.drained(state_before) else '%s+DRAIN' % (state_before or 'UNKNOWN')
        cmd = ['/usr/bin/scontrol', 'update', 'NodeName=%s' % value['slurm_name'], 'State=DRAIN', 'Reason=%s' % value['reason']]
        reason_after = value['reason']
    else:
        state_after = re.sub(r'\+DRAIN(ED|ING)?', '', state_before or '')
        cmd = ['/usr/bin/scontrol', 'update', 'NodeName=%s' % value['slurm_name'], 'State=RESUME']
        reason_after = None
    return {'changed': True, 'name': value['slurm_name'], 'state_before': state_before, 'state_after': state_after,
            'reason_before': value['reason_before'], 'reason_after': reason_after, 'cmd': cmd,
            'item': action, 'ansible_loop_var': 'item'}


def verify_gate_act_in_slurm(play, nodes):
    """slurm.yml: Read the nodes' Slurm state, Decide what to do, Drain and resume, Keep what Slurm did."""
    name_var = play.v('verify_gate_slurm_name_var')
    names = {} if not name_var else dict((host, None) for host in play.hosts_all)
    actions = vf.verify_gate_actions(nodes, play.case.get('slurm_nodes') or [], play.v('verify_gate_on_failure'), names)
    changes = [_slurm_node_result({'key': node, 'value': action}) for node, action in actions.items()
               if action['action'] != 'none']
    outcomes = dict(zip([change['item']['key'] for change in changes], changes))
    return actions, outcomes


def gate_nccl(play):
    """__verify_gate_nccl."""
    single = {}
    for node in play.hosts_all:
        raw = play.facts[node].get('verify_nccl_raw')
        if raw is not None and 'busbw' in raw:
            single[node] = {'busbw': raw['busbw'], 'rc': raw['rc']}
    median = vf.verify_median([(play.facts[node].get('verify_nccl_raw') or {}).get('busbw') for node in play.hosts_all])
    return {'single_node': single, 'fleet_median': median,
            'multi_node': play.fact(play.first, 'verify_nccl_summary', None)}


def gate_run(play):
    """__verify_gate_run, with the times, inventory and version fixed by in.json."""
    fixed = play.case['run']
    return {'started': fixed['started'], 'finished': fixed['finished'], 'inventory': fixed['inventory'],
            'collection_version': fixed['collection_version'], 'mode': play.v('verify_gate_on_failure'),
            'checks': gate_checks_ran(play), 'slurm': play.slurm_host if play.slurm_host else None,
            # hostvars[first].<var> | default(...): an inventory variable, else the same value as the role default
            'parameters': {
                'dcgm_diag_level': play.vars.get('verify_gpu_dcgm_level', 2),
                'nccl_min_bytes': play.vars.get('verify_nccl_min_bytes', '8'),
                'nccl_max_bytes': play.vars.get('verify_nccl_max_bytes', '8G'),
                'perftest_size': play.vars.get('verify_perftest_size', 8388608)}}


def verify_gate_build_the_results_document(play, nodes, actions, outcomes):
    first = play.first
    return vf.verify_document(vf.verify_apply_gate(nodes, actions or {}, outcomes or {}), gate_run(play),
                              play.fact(first, 'verify_ib_fabric_summary', None),
                              play.fact(first, 'verify_perftest_summary', None), gate_nccl(play))


def role_verify_gate(play):
    for host in play.hosts:
        verify_gate_record_what_each_node_runs(play, host)
    nodes = verify_gate_collect(play)
    actions, outcomes = None, None
    if play.slurm_host != '':
        actions, outcomes = verify_gate_act_in_slurm(play, nodes)
    return verify_gate_build_the_results_document(play, nodes, actions, outcomes)


def run_case(case_in):
    """The results.json document the verify stage builds from one case's observations."""
    play = Play(copy.deepcopy(case_in))
    role_verify_ib(play)
    role_verify_perftest(play)
    role_verify_gpu(play)
    role_verify_nccl(play)
    return role_verify_gate(play)
