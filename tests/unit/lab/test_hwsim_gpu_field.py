"""lab/hwsim field conditions for the GPU checks (issue 11): R570+ NVLink counters, rising NVLink errors,
DCGM 4 without its CUDA plugins, dmesg with ISO stamps that wraps, and a job's process on a GPU;
each stand-in output read back with the collection's own parsers and decision functions."""
import base64
import json
import os
import sys

import pytest

from _paths import REPO

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))

# pylint: disable=wrong-import-position
from ansible_collections.aicluster.infra.plugins.module_utils.dcgm import parse_dcgmi_diag  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.kernel_log import log_window, parse_xid  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.nvidia_smi import parse_nvlink_errors, parse_nvlink_status  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.verify import gpu  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.verify.gpu_checks import (  # noqa: E402
    dcgm_result, nvlink_error_results, process_results, xid_results,
)
from hwsim.testing import make_lab  # noqa: E402

LIMITS = {'replay_errors': 100, 'recovery_errors': 0, 'crc_errors': 100, 'rx_errors': 0}


def _nvlink(lab, flag='-e'):
    return lab.ok('gpu01', ['nvidia-smi', 'nvlink', flag])


@pytest.mark.parametrize('profile, layout', [('hgx-h100-ib', 'legacy'), ('hgx-b200-ib', 'nvlink5')])
def test_nvlink_counter_names_follow_the_driver(tmp_path, profile, layout):
    lab = make_lab(tmp_path, profile, compute=1)
    parsed = parse_nvlink_errors(_nvlink(lab))
    assert set(g['layout'] for g in parsed['gpus']) == {layout}
    status = parse_nvlink_status(_nvlink(lab, '-s'))
    results = nvlink_error_results(parsed, {'nvlink_error_max': LIMITS}, before=parsed, status=status)
    assert results and all(r['passed'] for r in results)


@pytest.mark.parametrize('profile, counter', [('hgx-h100-ib', 'replay errors'), ('hgx-b200-ib', 'rx errors')])
def test_rising_nvlink_errors_fail_only_their_gpu(tmp_path, profile, counter):
    lab = make_lab(tmp_path, profile, compute=1)
    before = parse_nvlink_errors(_nvlink(lab))
    assert lab.run('gpu01', ['hwsim', 'fault', 'nvlink-errors', '3', '5', '200'])[0] == 0
    after = parse_nvlink_errors(_nvlink(lab))
    results = nvlink_error_results(after, {'nvlink_error_max': LIMITS}, before=before)
    bad = [r for r in results if not r['passed']]
    assert [r['subject'] for r in bad] == ['GPU 3'] and 'link 5 %s +200' % counter in bad[0]['message']
    # the same counts read twice (a node that has carried them since the driver loaded) pass
    assert all(r['passed'] for r in nvlink_error_results(after, {'nvlink_error_max': LIMITS}, before=after))


@pytest.mark.parametrize('json_flag', [True, False], ids=['json', 'table'])
def test_dcgm_plugin_missing_skips_and_fails_the_check(tmp_path, json_flag):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    assert lab.run('gpu01', ['hwsim', 'fault', 'dcgm-plugin-missing'])[0] == 0
    rc, out, _err = lab.run('gpu01', ['dcgmi', 'diag', '-r', '3'] + (['-j'] if json_flag else []))
    assert rc == 0
    parsed = parse_dcgmi_diag(out)
    assert parsed['overall'] == 'pass'
    assert [t['result'] for t in parsed['tests']][0] == 'pass' and {t['result'] for t in parsed['tests'][1:]} == {'skip'}
    result = dcgm_result(parsed, {'dcgm_level': 3, 'cuda_major': '12'})
    assert not result['passed'] and result['message'].startswith('DCGM plugin missing: pcie, memory, diagnostic')
    assert 'datacenter-gpu-manager-4-cuda12' in result['message']


def test_dcgm_level_4_runs(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    rc, out, _err = lab.run('gpu01', ['dcgmi', 'diag', '-r', '4', '-j'])
    assert rc == 0 and parse_dcgmi_diag(out)['overall'] == 'pass'


def test_dmesg_iso_stamps_stay_put_and_the_cursor_skips_old_xids(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    assert lab.run('gpu01', ['hwsim', 'fault', 'xid', '0', '79'])[0] == 0
    first = lab.ok('gpu01', ['dmesg', '--time-format', 'iso'])
    second = lab.ok('gpu01', ['dmesg', '--time-format=iso'])
    events = parse_xid(first)
    assert [(e['code'], e['bucket']) for e in events] == [(79, 'REBOOT')]
    assert events[0]['time'] == parse_xid(second)[0]['time']
    window = log_window(first)
    assert window['from_boot'] and window['last'] == events[0]['time']
    gpus = [{'index': 0, 'pci_bus_id': events[0]['pci']}]
    assert not xid_results(gpus, events, {}, window=window)[0]['passed']
    # the next check starts where this one stopped: the same Xid no longer drains the node
    assert xid_results(gpus, parse_xid(second), {}, window=log_window(second), cursor=window['last'])[0]['passed']


def test_wrapped_ring_buffer_is_said(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    assert lab.run('gpu01', ['hwsim', 'fault', 'dmesg-wrapped'])[0] == 0
    text = lab.ok('gpu01', ['dmesg', '--time-format', 'iso'])
    window = log_window(text)
    assert not window['from_boot'] and 'Linux version' not in text
    results = xid_results([], parse_xid(text), {}, window=window, cursor='2000-01-01T00:00:00.000000+00:00')
    assert results[0]['passed'] and 'Xids between them were not seen' in results[0]['message']


def test_a_listed_pid_in_a_job_cgroup_is_busy(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    assert lab.run('gpu01', ['hwsim', 'fault', 'gpu-process', '2', '31337', 'sleep'])[0] == 0
    csv = lab.ok('gpu01', ['nvidia-smi', '--query-compute-apps=' + ','.join(gpu.APPS_FIELDS), '--format=csv,noheader,nounits'])
    assert '31337' in csv
    cgroups = '/proc/31337/cgroup:0::/system.slice/slurmstepd.scope/job_7/step_0/user/task_0\n'
    observed = {'gpu_info': {'gpus': [{'index': i, 'pci_bus_id': b} for i, b in enumerate(_bus_ids(lab))]},
                'compute_apps': {'rc': 0, 'stdout': csv}, 'proc_cgroups': {'rc': 0, 'stdout': cgroups}}
    results = [r for r in gpu.evaluate_gpu(observed, {'enabled': {'inventory': False, 'persistence': False, 'memory': False}})
               if r['check'] == 'gpu.processes']
    assert [(r['subject'], r['passed'], r.get('busy')) for r in results] == [('GPU 2', True, True)]
    assert not process_results([], [{'pid': '31337', 'process_name': 'sleep', 'gpu_bus_id': 'x'}], {})[0]['passed']


def _bus_ids(lab):
    out = lab.ok('gpu01', ['nvidia-smi', '--query-gpu=pci.bus_id', '--format=csv,noheader'])
    return [line.strip() for line in out.splitlines() if line.strip()]


def test_state_cursor_round_trip():
    state = {'content': base64.b64encode(json.dumps({'xid_cursor': 'x'}).encode()).decode()}
    assert gpu.xid_cursor(state) == 'x' and gpu.xid_cursor({'failed': True}) is None
