# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU health on a real fleet (issue 11): R570+ NVLink counters, deltas over the run, DCGM Skip,
Xid buckets since the last check, and a running job's processes."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import json

from _paths import own_fixture

from ansible_collections.aicluster.infra.plugins.module_utils.dcgm import parse_dcgmi_diag
from ansible_collections.aicluster.infra.plugins.module_utils.kernel_log import log_window, parse_xid, xid_bucket
from ansible_collections.aicluster.infra.plugins.module_utils.nvidia_smi import parse_nvlink_errors
from ansible_collections.aicluster.infra.plugins.module_utils.slurm_jobs import parse_proc_cgroups, parse_scontrol_listpids
from ansible_collections.aicluster.infra.plugins.module_utils.verify import gpu
from ansible_collections.aicluster.infra.plugins.module_utils.verify.gpu_checks import (
    dcgm_result, nvlink_error_results, process_results, xid_results,
)

B200 = 'nvidia-smi/nvidia-smi-570-2xb200-nvlink-e-rx-errors-handmade.txt'
LEGACY = 'nvidia-smi/nvidia-smi-535-8xh100-nvlink-e-crc-handmade.txt'
LIMITS = {'replay_errors': 100, 'recovery_errors': 0, 'crc_errors': 100, 'rx_errors': 0, 'link_recovery_failed_events': 0}
GPUS = [{'index': i, 'pci_bus_id': '00000000:%02X:00.0' % (0x18 + i)} for i in range(8)]


def _ran(stdout, rc=0):
    return {'changed': False, 'rc': rc, 'stdout': stdout, 'stderr': ''}


def _failed(results):
    return [r for r in results if not r['passed']]


def _nvlink(index, counters):
    """nvlink -e text of one GPU: counters is a list of (link, name, value)."""
    return 'GPU %d: NVIDIA B200 (UUID: GPU-x)\n' % index + ''.join('\t Link %d: %s: %s\n' % item for item in counters)


# 1. R570+ NVLink counter names -------------------------------------------------------------------------------

def test_r570_counters_parse_into_errors():
    parsed = parse_nvlink_errors(own_fixture(B200))
    assert [g['layout'] for g in parsed['gpus']] == ['nvlink5', 'nvlink5']
    link = parsed['gpus'][1]['links'][7]
    assert link['errors']['rx_errors'] == 3 and link['errors']['symbol_errors'] == 41
    assert link['errors']['link_recovery_successful_events'] == 1 and link['replay_errors'] is None
    assert 'tx_packets' not in link['errors'] and link['counters']['Tx packets'] > 0
    assert link['counters']['Effective BER'] == '15e-255'


def test_legacy_counters_keep_their_keys():
    parsed = parse_nvlink_errors(own_fixture(LEGACY))
    assert parsed['gpus'][3]['layout'] == 'legacy'
    assert parsed['gpus'][3]['links'][4]['errors'] == {'replay_errors': 37, 'recovery_errors': 2, 'crc_errors': 1590}


def test_r570_rx_errors_fail_the_link():
    results = nvlink_error_results(parse_nvlink_errors(own_fixture(B200)), {'nvlink_error_max': LIMITS})
    assert [(r['subject'], r['passed']) for r in results] == [('GPU 0', True), ('GPU 1', False)]
    assert 'link 7 rx errors 3 > 0' in results[1]['message']


def test_unknown_counter_names_on_a_linked_gpu_fail():
    text = _nvlink(0, [(0, 'Frobnication Events', 0), (1, 'Frobnication Events', 0)])
    status = {'gpus': [{'index': 0, 'links': [{'link': 0, 'active': True}, {'link': 1, 'active': True}]}]}
    results = nvlink_error_results(parse_nvlink_errors(text), {'nvlink_error_max': LIMITS}, status=status)
    assert [r['passed'] for r in results] == [False]
    assert 'printed no error counter this collection reads' in results[0]['message']
    assert 'none printed' not in results[0]['message']


def test_linked_gpu_missing_from_the_counters_fails():
    status = {'gpus': [{'index': 0, 'links': [{'link': 0, 'active': True}]}]}
    results = nvlink_error_results({'gpus': [], 'errors': []}, {'nvlink_error_max': LIMITS}, status=status)
    assert [(r['subject'], r['passed']) for r in results] == [('GPU 0', False)]


def test_gpu_without_nvlink_passes():
    results = nvlink_error_results({'gpus': [{'index': 0, 'links': []}]}, {'nvlink_error_max': LIMITS}, status={'gpus': []})
    assert results[0]['passed'] and 'no NVLink' in results[0]['message']


# 2. deltas over the run ---------------------------------------------------------------------------------------

def test_high_counts_since_driver_load_that_did_not_rise_pass():
    before = parse_nvlink_errors(_nvlink(0, [(0, 'Replay Errors', 5000), (0, 'Recovery Errors', 3), (0, 'CRC Errors', 9000)]))
    after = parse_nvlink_errors(_nvlink(0, [(0, 'Replay Errors', 5010), (0, 'Recovery Errors', 3), (0, 'CRC Errors', 9000)]))
    results = nvlink_error_results(after, {'nvlink_error_max': LIMITS}, before=before)
    assert results[0]['passed'], results[0]['message']
    assert results[0]['measured'] == {'increase': {'replay_errors': 10, 'recovery_errors': 0, 'crc_errors': 0},
                                      'total': {'replay_errors': 5010, 'recovery_errors': 3, 'crc_errors': 9000}}
    assert 'rose over the run' in results[0]['message']


def test_a_rise_over_the_limit_fails():
    before = parse_nvlink_errors(_nvlink(0, [(2, 'Recovery Errors', 3)]))
    after = parse_nvlink_errors(_nvlink(0, [(2, 'Recovery Errors', 4)]))
    results = nvlink_error_results(after, {'nvlink_error_max': LIMITS}, before=before)
    assert not results[0]['passed'] and 'link 2 recovery errors +1 > 0' in results[0]['message']


def test_a_counter_reset_between_reads_counts_from_zero():
    before = parse_nvlink_errors(_nvlink(0, [(0, 'Rx Errors', 50)]))
    after = parse_nvlink_errors(_nvlink(0, [(0, 'Rx Errors', 1)]))
    results = nvlink_error_results(after, {'nvlink_error_max': LIMITS}, before=before)
    assert results[0]['measured']['increase'] == {'rx_errors': 1} and not results[0]['passed']


def test_absolute_limits_are_opt_in():
    before = parse_nvlink_errors(_nvlink(0, [(0, 'CRC Errors', 900)]))
    after = parse_nvlink_errors(_nvlink(0, [(0, 'CRC Errors', 900)]))
    assert nvlink_error_results(after, {'nvlink_error_max': LIMITS}, before=before)[0]['passed']
    results = nvlink_error_results(after, {'nvlink_error_max': LIMITS, 'nvlink_error_absolute_max': {'crc_errors': 500}},
                                   before=before)
    assert not results[0]['passed'] and 'since driver load 900 > 500' in results[0]['message']


def test_evaluate_gpu_reads_both_and_keeps_them_in_raw():
    before = _nvlink(0, [(0, 'Replay Errors', 5000)])
    after = _nvlink(0, [(0, 'Replay Errors', 5001)])
    observed = {'gpu_info': {'gpus': [dict(GPUS[0])], 'driver_version': '570.124.06'},
                'nvlink_errors_before': _ran(before), 'nvlink_errors': _ran(after)}
    expected = {'nvlink_error_max': LIMITS, 'enabled': {'inventory': False, 'persistence': False, 'memory': False}}
    results = [r for r in gpu.evaluate_gpu(observed, expected) if r['check'] == 'gpu.nvlink_errors']
    assert [r['passed'] for r in results] == [True]
    raw = gpu.decide_gpu({'n1': observed}, expected)['raw']['n1']['nvlink_errors']
    assert raw['before']['0']['nonzero'] == {'0': {'replay_errors': 5000}}
    assert raw['after']['0']['nonzero'] == {'0': {'replay_errors': 5001}}


# 3. DCGM Skip of a required plugin ----------------------------------------------------------------------------

def _dcgm(statuses):
    return {'overall': 'pass', 'tests': [{'name': name, 'result': result} for name, result in statuses], 'errors': []}


def test_skipped_cuda_plugins_fail_though_overall_reads_pass():
    dcgm = _dcgm([('software', 'pass'), ('memory', 'skip'), ('diagnostic', 'skip'), ('targeted_stress', 'skip'),
                  ('memory_bandwidth', 'skip')])
    result = dcgm_result(dcgm, {'dcgm_level': 3, 'cuda_major': '12'})
    assert not result['passed']
    assert result['message'].startswith('DCGM plugin missing: memory, diagnostic, targeted_stress, memory_bandwidth skipped; '
                                        'install the DCGM CUDA package (datacenter-gpu-manager-4-cuda12)')


def test_skipped_table_names_fail_too():
    dcgm = _dcgm([('Denylist', 'pass'), ('Diagnostic', 'skip'), ('Targeted Stress', 'skip')])
    assert not dcgm_result(dcgm, {'dcgm_level': 3})['passed']


def test_a_skipped_deployment_check_is_listed_not_failed():
    result = dcgm_result(_dcgm([('Denylist', 'pass'), ('Fabric Manager', 'skip'), ('memory', 'pass')]), {'dcgm_level': 2})
    assert result['passed'] and 'skipped: Fabric Manager' in result['message']


def test_cuda_major_comes_from_gpu_info():
    observed = {'gpu_info': {'gpus': [dict(GPUS[0])], 'cuda_version': '12.8'}, 'dcgm_diag': _dcgm([('diagnostic', 'skip')])}
    expected = {'dcgm_level': 2, 'enabled': {'inventory': False, 'persistence': False, 'memory': False}}
    result = [r for r in gpu.evaluate_gpu(observed, expected) if r['check'] == 'gpu.dcgm_diag'][0]
    assert 'datacenter-gpu-manager-4-cuda12)' in result['message']


def test_dcgm4_table_with_skips_parses_to_a_failure():
    text = ('+---------------------------+------------------------------------------------+\n'
            '| Diagnostic                | Result                                         |\n'
            '+===========================+================================================+\n'
            '|-----  Metadata  ----------+------------------------------------------------|\n'
            '| DCGM Version              | 4.2.3                                          |\n'
            '|-----  Deployment  --------+------------------------------------------------|\n'
            '| software                  | Pass                                           |\n'
            '+-----  Hardware  ----------+------------------------------------------------+\n'
            '| diagnostic                | Skip                                           |\n'
            '|                           | GPU0: Skip                                     |\n'
            '+---------------------------+------------------------------------------------+\n')
    parsed = parse_dcgmi_diag(text)
    assert parsed['overall'] == 'pass'
    assert not dcgm_result(parsed, {'dcgm_level': 2})['passed']


# 4. Xid buckets, since the last check ------------------------------------------------------------------------

def _line(stamp, code, text, pci='0000:18:00'):
    return '%s,000000+00:00 NVRM: Xid (PCI:%s): %d, pid=\'<unknown>\', name=<unknown>, %s\n' % (stamp, pci, code, text)


BOOT = '2026-12-01T10:00:00,000000+00:00 Linux version 5.15.0-119-generic (buildd@lcy02-amd64-075)\n'


def test_buckets_from_the_catalog():
    assert [xid_bucket(code) for code in (13, 31, 43, 48, 63, 79, 94, 95, 119, 145)] == [
        'RESTART_APP', 'RESTART_APP', 'RESTART_APP', 'RESET_GPU', 'EVENT', 'REBOOT', 'RESTART_APP', 'RESET_GPU', 'RESET_GPU',
        'XID_154_EVAL']
    assert xid_bucket(154, 'GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)') == 'REBOOT'
    assert xid_bucket(154, 'GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)') == 'RESET_GPU'
    assert xid_bucket(154, 'GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)') == 'IGNORE'


def test_app_and_event_xids_pass_and_are_listed():
    log = BOOT + _line('2026-12-01T11:00:00', 13, 'Graphics Exception') + _line('2026-12-01T11:01:00', 63, 'Row Remapper') + \
        _line('2026-12-01T11:02:00', 145, 'NVLink RLW error')
    results = xid_results(GPUS, parse_xid(log), {}, window=log_window(log))
    assert [r['passed'] for r in results] == [True]
    assert 'Xid 13 (graphics engine exception, RESTART_APP)' in results[0]['message']
    assert 'Xid 63' in results[0]['message'] and 'Xid 145' in results[0]['message']


def test_reset_bucket_fails_its_gpu_with_the_action():
    log = BOOT + _line('2026-12-01T11:00:00', 79, 'GPU has fallen off the bus.', pci='0000:1a:00')
    results = xid_results(GPUS, parse_xid(log), {}, window=log_window(log))
    assert [(r['subject'], r['passed']) for r in results] == [('GPU 2', False)]
    assert 'REBOOT' in results[0]['message'] and 'reboot the node' in results[0]['message']


def test_only_xids_after_the_last_check_count():
    log = BOOT + _line('2026-12-01T11:00:00', 48, 'DBE')
    assert not xid_results(GPUS, parse_xid(log), {}, cursor=None)[0]['passed']
    results = xid_results(GPUS, parse_xid(log), {}, window=log_window(log), cursor='2026-12-01T11:30:00.000000+00:00')
    assert results[0]['passed'] and 'since the last check' in results[0]['message']


def test_a_wrapped_ring_buffer_is_said_not_failed():
    log = _line('2026-12-01T12:00:00', 13, 'Graphics Exception')
    results = xid_results(GPUS, parse_xid(log), {}, window=log_window(log), cursor='2026-12-01T11:00:00.000000+00:00')
    assert results[0]['passed'] and 'ring buffer starts at 2026-12-01T12:00:00' in results[0]['message']


def test_extra_fatal_codes_still_fail():
    log = BOOT + _line('2026-12-01T11:00:00', 13, 'Graphics Exception')
    assert not xid_results(GPUS, parse_xid(log), {'fatal_xids': [13]})[0]['passed']


def test_evaluate_gpu_reads_the_cursor_and_gives_the_next():
    log = BOOT + _line('2026-12-01T11:00:00', 48, 'DBE')
    state = {'content': base64.b64encode(json.dumps({'xid_cursor': '2026-12-01T11:30:00.000000+00:00'}).encode()).decode()}
    observed = {'gpu_info': {'gpus': [dict(GPUS[0])]}, 'dmesg': _ran(log), 'xid_state': state}
    expected = {'enabled': {'inventory': False, 'persistence': False, 'memory': False}}
    assert not _failed(gpu.evaluate_gpu(observed, expected))
    assert _failed(gpu.evaluate_gpu(dict(observed, xid_state={'failed': True, 'msg': 'file not found'}), expected))
    raw = gpu.decide_gpu({'n1': observed}, expected)['raw']['n1']['xid']
    assert raw['cursor_next'] == '2026-12-01T11:00:00.000000+00:00' and raw['log_from_boot'] is True


# 5. a running job's processes ---------------------------------------------------------------------------------

CGROUPS = ('/proc/4242/cgroup:0::/system.slice/slurmstepd.scope/job_118/step_0/user/task_0\n'
           '/proc/777/cgroup:12:memory:/slurm/uid_1000/job_93/step_batch/task_0\n'
           '/proc/777/cgroup:11:devices:/slurm/uid_1000/job_93/step_batch/task_0\n'
           '/proc/999/cgroup:0::/user.slice/user-1000.slice/session-4.scope\n')
APPS = [{'gpu_bus_id': '00000000:18:00.0', 'pid': '4242', 'process_name': 'python3'},
        {'gpu_bus_id': '00000000:19:00.0', 'pid': '777', 'process_name': 'all_reduce_perf'},
        {'gpu_bus_id': '00000000:1A:00.0', 'pid': '999', 'process_name': '/usr/bin/python3'}]


def test_job_processes_are_busy_and_others_stray():
    results = process_results(GPUS, APPS, {}, cgroups=parse_proc_cgroups(CGROUPS))
    assert [(r['subject'], r['passed'], r.get('busy')) for r in results] == [
        ('GPU 0', True, True), ('GPU 1', True, True), ('GPU 2', False, None)]
    assert results[0]['message'] == 'busy: job 118 holds GPU 0' and results[1]['jobs'] == ['93']
    assert 'outside any Slurm job' in results[2]['message']


def test_without_cgroups_every_process_is_stray():
    assert len(_failed(process_results(GPUS, APPS, {}))) == 3


def test_evaluate_gpu_uses_the_cgroup_read():
    csv = ''.join('%s, %s, %s, 100\n' % (row['gpu_bus_id'], row['pid'], row['process_name']) for row in APPS[:2])
    observed = {'gpu_info': {'gpus': GPUS}, 'compute_apps': _ran(csv), 'proc_cgroups': _ran(CGROUPS)}
    expected = {'enabled': {'inventory': False, 'persistence': False, 'memory': False}}
    results = [r for r in gpu.evaluate_gpu(observed, expected) if r['check'] == 'gpu.processes']
    assert [r['message'] for r in results] == ['busy: job 118 holds GPU 0', 'busy: job 93 holds GPU 1']


LISTPIDS = ('PID      JOBID    STEPID   LOCALID GLOBALID\n'
            '999      121      0        0       0\n'
            '1001     121      batch    0       0\n')


def test_listpids_names_a_job_without_cgroups():
    # proctrack/linuxproc: no job cgroup, but the job's slurmstepd knows its processes
    results = process_results(GPUS, APPS, {}, cgroups=parse_proc_cgroups(CGROUPS), listpids=parse_scontrol_listpids(LISTPIDS))
    assert [(r['subject'], r['passed']) for r in results] == [('GPU 0', True), ('GPU 1', True), ('GPU 2', True)]
    assert results[2]['message'] == 'busy: job 121 holds GPU 2'


def test_evaluate_gpu_uses_listpids():
    csv = '00000000:1A:00.0, 999, /usr/bin/python3, 100\n'
    observed = {'gpu_info': {'gpus': GPUS}, 'compute_apps': _ran(csv), 'proc_cgroups': _ran(CGROUPS), 'slurm_pids': _ran(LISTPIDS)}
    expected = {'enabled': {'inventory': False, 'persistence': False, 'memory': False}}
    results = [r for r in gpu.evaluate_gpu(observed, expected) if r['check'] == 'gpu.processes']
    assert [(r['subject'], r.get('busy')) for r in results] == [('GPU 2', True)]
