"""roles/slurm/files/aicluster-healthcheck: the node health check slurmd runs (HealthCheckProgram).

Most tests drive the program against the lab's stand-ins (lab/hwsim: nvidia-smi, dcgmi, dmesg, ibstat, linked
into a temporary bin directory put first on PATH, with a temporary hwsim state directory) and a fake scontrol
that keeps one node's state in a JSON file, so each test reads like the lab: inject a fault, run the program,
read what it did in "Slurm". The decisions (drain/resume) and the parsers are also tested as functions.
"""
import io
import json
import os
import sys
import time

import pytest
import yaml

from _paths import REPO, load_program, own_fixture

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))

# pylint: disable=wrong-import-position
from ansible_collections.aicluster.infra.plugins.module_utils import kernel_log  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.verify import gate  # noqa: E402
from hwsim.testing import HWSIM_ROOT, make_lab  # noqa: E402

PROGRAM = os.path.join(REPO, 'roles', 'slurm', 'files', 'aicluster-healthcheck')
LAB_HCAS = ['mlx5_0', 'mlx5_3', 'mlx5_4', 'mlx5_5', 'mlx5_6', 'mlx5_7', 'mlx5_8', 'mlx5_9']  # inventories/lab verify_ib_hcas


hc = load_program(PROGRAM, 'aicluster_healthcheck')

FAKE_SCONTROL = '''#!{python}
"""scontrol stand-in: one node's State/Reason in $FAKE_SLURM (JSON); every call appended to $FAKE_SLURM.calls."""
import json, os, sys, time
path = os.environ['FAKE_SLURM']
with open(path + '.calls', 'a') as log:
    log.write(json.dumps(sys.argv[1:]) + '\\n')
time.sleep(float(os.environ.get('FAKE_SCONTROL_SLEEP') or 0))
with open(path) as handle:
    nodes = json.load(handle)
args = sys.argv[1:]
if args[:2] == ['show', 'node']:
    name = args[-1]
    if name not in nodes:
        print('Node %s not found' % name)
        sys.exit(1)
    node = nodes[name]
    line = ('NodeName=%s Arch=x86_64 CoresPerSocket=48 CPUAlloc=0 CPUEfctv=192 CPUTot=192 Gres=gpu:h100:8(S:0-1) '
            'NodeAddr=%s NodeHostName=%s Version=22.05.8 OS=Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 '
            '(2024-02-01)  RealMemory=2063731 State=%s ThreadsPerCore=2 Partitions=gpu CfgTRES=cpu=192 AllocTRES= '
            'CapWatts=n/a CurrentWatts=0 AveWatts=0' % (name, name, name, node['state']))
    if node.get('reason'):
        line += ' Reason=%s [%s@2026-12-02T01:00:00]' % (node['reason'], node.get('by', 'root'))
    print(line)
elif args[:1] == ['update']:
    fields = dict(arg.split('=', 1) for arg in args[1:])
    node = nodes[fields['NodeName']]
    base = node['state'].split('+')[0]
    if fields['State'] == 'DRAIN':
        node.update(state=base + '+DRAIN', reason=fields['Reason'], by='root')
    elif fields['State'] == 'RESUME':
        node.update(state=base, reason=None)
    with open(path, 'w') as handle:
        json.dump(nodes, handle)
else:
    sys.exit(2)
'''


class Node(object):
    """One lab node (gpu01 of a hwsim lab) with the program's configuration, state directory and a fake Slurm."""

    def __init__(self, tmp_path, profile='hgx-h100-ib', **config):
        self.tmp = tmp_path
        (tmp_path / 'lab').mkdir()
        self.lab = make_lab(tmp_path / 'lab', profile, compute=1)
        self.bin = tmp_path / 'bin'
        self.bin.mkdir()
        for tool in ('nvidia-smi', 'dcgmi', 'dmesg', 'ibstat'):
            (self.bin / tool).symlink_to(os.path.join(HWSIM_ROOT, 'bin', 'hwsim'))
        (self.bin / 'python3').symlink_to(sys.executable)  # the stand-ins start python3 (with PyYAML)
        self.fake('scontrol', FAKE_SCONTROL.format(python=sys.executable))
        self.slurm = tmp_path / 'slurm.json'
        self.set_slurm('IDLE')
        (tmp_path / 'proc' / 'sys' / 'kernel' / 'random').mkdir(parents=True)
        self.set_boot_id('boot-1')
        self.state_dir = tmp_path / 'hcstate'
        self.config_path = tmp_path / 'aicluster-healthcheck.json'
        self.config = {
            'state_dir': str(self.state_dir), 'sysfs_root': str(tmp_path / 'root'), 'proc_root': str(tmp_path),
            'syslog': False, 'checks': {}, 'ib': {'hcas': list(LAB_HCAS), 'rate_gbps': 400}, 'gpu': {'count': 8},
        }
        self.configure(**config)
        self.env = {'PATH': '%s:/usr/bin:/bin' % self.bin, 'HWSIM_HOST': 'gpu01', 'HWSIM_STATE_DIR': self.lab.state_dir,
                    'HWSIM_FABRIC': self.lab.fabric_path, 'FAKE_SLURM': str(self.slurm), 'HOME': str(tmp_path)}

    def fake(self, name, text):
        path = self.bin / name
        if path.exists() or path.is_symlink():
            path.unlink()
        path.write_text(text)
        path.chmod(0o755)

    def configure(self, **config):
        for key, value in config.items():
            if isinstance(value, dict) and isinstance(self.config.get(key), dict):
                self.config[key].update(value)
            else:
                self.config[key] = value
        self.config_path.write_text(json.dumps(self.config))

    def set_slurm(self, state, reason=None, by='root'):
        self.slurm.write_text(json.dumps({'gpu01': {'state': state, 'reason': reason, 'by': by}}))
        calls = self.tmp / 'slurm.json.calls'
        if calls.exists():
            calls.unlink()

    def slurm_node(self):
        return json.loads(self.slurm.read_text())['gpu01']

    def updates(self):
        calls = self.tmp / 'slurm.json.calls'
        lines = calls.read_text().splitlines() if calls.exists() else []
        return [json.loads(line) for line in lines if json.loads(line)[0] == 'update']

    def set_boot_id(self, value):
        (self.tmp / 'proc' / 'sys' / 'kernel' / 'random' / 'boot_id').write_text(value + '\n')

    def hwsim(self, *argv):
        return self.lab.ok('gpu01', ['hwsim'] + list(argv))

    def run(self, *options, **env):
        out = io.StringIO()
        environ = dict(self.env, **env)
        status = hc.main([str(self.config_path), '--json', '--node', 'gpu01'] + list(options), environ=environ, stdout=out)
        assert status == 0
        report = json.loads(out.getvalue())
        report['by_check'] = {}
        for result in report['results']:
            report['by_check'].setdefault(result['check'], []).append(result)
        return report

    def state(self):
        return json.loads((self.state_dir / hc.STATE_FILE).read_text())


def statuses(report, check):
    return [result['status'] for result in report['by_check']['health.' + check]]


@pytest.fixture
def node(tmp_path):
    return Node(tmp_path)


# ---------------------------------------------------------------------------------------------------------------
# The catalog: the same fatal Xids as the verify stage (and the role's prolog list)


def test_fatal_xids_are_the_verify_stages():
    catalog = sorted(code for code, (bucket, _name) in kernel_log.XID_CATALOG.items() if bucket in kernel_log.FAIL_BUCKETS)
    assert sorted(hc.FATAL_XIDS) == catalog
    for code in range(1, 200):
        if code != 154:
            assert hc.xid_fatal(code, '') == (kernel_log.xid_bucket(code) in kernel_log.FAIL_BUCKETS), code
    for text in ('GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)',
                 'GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)',
                 'GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)',
                 'GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)'):
        assert hc.xid_fatal(154, text) == (kernel_log.xid_bucket(154, text) in kernel_log.FAIL_BUCKETS), text
    assert hc.xid_fatal(13, '', extra=[13]) and not hc.xid_fatal(79, '', fatal=[48])


def test_the_roles_fatal_xid_list_when_it_has_one():
    with open(os.path.join(REPO, 'roles', 'slurm', 'defaults', 'main.yml'), encoding='utf-8') as handle:
        defaults = yaml.safe_load(handle)
    if 'slurm_fatal_xids' not in defaults:
        pytest.skip('roles/slurm/defaults/main.yml has no slurm_fatal_xids (yet)')
    assert sorted(defaults['slurm_fatal_xids']) == sorted(hc.FATAL_XIDS)


# ---------------------------------------------------------------------------------------------------------------
# The lab node, end to end


def test_healthy_lab_node_passes_and_touches_nothing(node):
    first = node.run()
    assert statuses(first, 'ib_port') == ['pass'] and '8 ports Active/LinkUp at 400 Gb/s (ibstat)' in first['by_check']['health.ib_port'][0]['message']
    assert statuses(first, 'gpu_count') == ['pass'] and statuses(first, 'gpu_remap') == ['pass']
    assert statuses(first, 'xid') == ['pass'] and 'first run' in first['by_check']['health.xid'][0]['message']
    # DCGM's health watches were not set: the program sets them and checks from the next run
    assert statuses(first, 'dcgm') == ['not checked'] and 'set now' in first['by_check']['health.dcgm'][0]['message']
    assert not first['failed'] and first['slurm']['action'] == 'none' and node.updates() == []
    second = node.run()
    assert statuses(second, 'dcgm') == ['pass'] and 'Healthy' in second['by_check']['health.dcgm'][0]['message']
    assert statuses(second, 'xid') == ['pass'] and 'since the last check' in second['by_check']['health.xid'][0]['message']
    assert second['elapsed_s'] < 8 and node.updates() == []


def test_gpu_missing_drains_then_the_repair_resumes(node):
    node.hwsim('fault', 'gpu-missing', '7')
    report = node.run()
    assert statuses(report, 'gpu_count') == ['fail']
    assert report['by_check']['health.gpu_count'][0]['subject'] == '7/8'
    assert report['slurm']['action'] == 'drain' and report['slurm']['done']
    assert node.slurm_node() == {'state': 'IDLE+DRAIN', 'reason': 'aicluster: health.gpu_count 7/8', 'by': 'root'}
    # the next run, still failing, with the same reason: nothing to do
    again = node.run()
    assert again['slurm']['action'] == 'none' and 'same reason' in again['slurm']['note'] and len(node.updates()) == 1
    node.hwsim('clear')
    repaired = node.run()
    assert not repaired['failed'] and repaired['slurm']['action'] == 'resume' and repaired['slurm']['done']
    assert node.slurm_node()['state'] == 'IDLE' and node.updates()[-1] == ['update', 'NodeName=gpu01', 'State=RESUME']


def test_the_verify_gate_leaves_a_health_check_drain_alone():
    """The gate resumes an ``aicluster:`` drain only for checks it made again: health.* is none of them."""
    reason = 'aicluster: health.gpu_count 7/8'
    assert gate.is_own_reason(reason) and gate.checks_in_reason(reason) == ['health.gpu_count']
    assert gate._unchecked(reason, ['ib', 'gpu'], 'aicluster:') == ['health.gpu_count']  # pylint: disable=protected-access
    assert hc.checks_in_reason(reason) == gate.checks_in_reason(reason)


def test_operator_and_gate_drains_are_left_alone(node):
    node.hwsim('fault', 'gpu-missing', '7')
    for reason in ('operator: fan', 'aicluster: ib.port_state mlx5_0:1',
                   'aicluster: health.gpu_count 7/8; gpu.xid GPU 3', 'Kill task failed'):
        node.set_slurm('IDLE+DRAIN', reason, by='admin')
        failing = node.run()
        assert failing['slurm']['action'] == 'none' and 'someone else' in failing['slurm']['note']
        assert node.slurm_node()['reason'] == reason and node.updates() == []
    node.hwsim('clear')
    node.set_slurm('MIXED+DRAIN', 'aicluster: ib.port_state mlx5_0:1')
    passing = node.run()
    assert passing['slurm']['action'] == 'none' and node.slurm_node()['reason'] == 'aicluster: ib.port_state mlx5_0:1'
    assert node.updates() == []


def test_its_own_drain_for_another_failure_gets_the_new_reason(node):
    node.set_slurm('IDLE+DRAIN', 'aicluster: health.gpu_count 7/8')
    node.hwsim('fault', 'row-remap-pending', '3')
    report = node.run()
    assert report['slurm']['action'] == 'drain' and 'replaces its own drain' in report['slurm']['note']
    assert node.slurm_node()['reason'] == 'aicluster: health.gpu_remap GPU 3'


def test_row_remap_and_retired_page_pending(node):
    node.hwsim('fault', 'row-remap-pending', '3')
    node.hwsim('fault', 'ecc-pending', '5')
    report = node.run()
    remap = report['by_check']['health.gpu_remap']
    assert [result['subject'] for result in remap] == ['GPU 3', 'GPU 5']
    assert 'row remap pending' in remap[0]['message'] and 'page retirement pending' in remap[1]['message']
    assert node.slurm_node()['reason'] == 'aicluster: health.gpu_remap GPU 3; health.gpu_remap GPU 5'


def test_dcgm_health_failure(node):
    node.lab.ok('gpu01', ['dcgmi', 'health', '-s', 'a'])
    node.hwsim('fault', 'nvlink-down', '2', '5')
    report = node.run()
    assert [result['subject'] for result in report['by_check']['health.dcgm']] == ['GPU 2 NVLINK']
    assert 'NvLink link 5 is currently down' in report['by_check']['health.dcgm'][0]['message']
    assert statuses(report, 'gpu_count') == ['pass'] and report['slurm']['action'] == 'drain'


def test_dcgm_absent_or_not_answering_is_not_checked(node):
    (node.bin / 'dcgmi').unlink()
    report = node.run()
    assert statuses(report, 'dcgm') == ['not checked'] and 'dcgmi not installed' in report['by_check']['health.dcgm'][0]['message']
    node.fake('dcgmi', '#!/bin/sh\necho "Error: unable to establish a connection to the specified host: localhost" >&2\n'
                       'echo "Error: Unable to connect to host engine. Host engine connection invalid/disconnected." >&2\nexit 255\n')
    report = node.run()
    assert statuses(report, 'dcgm') == ['not checked'] and 'nv-hostengine does not answer' in report['by_check']['health.dcgm'][0]['message']
    assert not report['failed'] and node.updates() == []


def test_port_down_and_a_1x_link(node):
    node.hwsim('fault', 'port-down', 'mlx5_0')
    node.hwsim('fault', 'link-width', 'mlx5_3', '1X')
    report = node.run()
    ports = report['by_check']['health.ib_port']
    assert [result['subject'] for result in ports] == ['mlx5_0:1', 'mlx5_3:1']
    assert 'Down/Polling, expected Active/LinkUp' in ports[0]['message']
    assert 'rate 100 Gb/s, expected 400' in ports[1]['message']
    assert node.slurm_node()['reason'] == 'aicluster: health.ib_port mlx5_0:1; health.ib_port mlx5_3:1'


def test_without_an_expected_rate_only_the_state_counts(node):
    node.configure(ib={'hcas': [], 'rate_gbps': 0})
    node.hwsim('fault', 'link-width', 'mlx5_3', '1X')
    report = node.run()
    message = report['by_check']['health.ib_port'][0]['message']
    # every InfiniBand port (the two Ethernet storage ports left out), the rate not judged
    assert statuses(report, 'ib_port') == ['pass'] and message.startswith('8 ports Active/LinkUp (rate not checked')


# ---------------------------------------------------------------------------------------------------------------
# Xids: the cursor, new fatal ones, non-fatal ones, sticky until a reboot or --clear-xid


def test_xid_first_run_sets_the_cursor_without_failing(node):
    node.hwsim('fault', 'xid', '3', '79')
    report = node.run()
    message = report['by_check']['health.xid'][0]['message']
    assert statuses(report, 'xid') == ['pass'] and message.startswith('first run: the cursor is set')
    assert 'Xids before it are not judged; Xid 79 GPU 3 logged before it' in message
    assert node.state()['xid_cursor'] and node.state()['xid_pending'] == []
    assert statuses(node.run(), 'xid') == ['pass']


def test_a_new_fatal_xid_fails_and_stays_until_cleared(node):
    node.run()
    time.sleep(0.01)
    node.hwsim('fault', 'xid', '2', '48')
    report = node.run()
    xid = report['by_check']['health.xid']
    assert statuses(report, 'xid') == ['fail'] and xid[0]['subject'] == 'GPU 2 Xid 48'
    assert 'double bit ECC error' in xid[0]['message'] and '--clear-xid' in xid[0]['message']
    assert node.slurm_node()['reason'] == 'aicluster: health.xid GPU 2 Xid 48'
    # the kernel logs an Xid once: the next run still fails (sticky), even once the line is gone
    node.hwsim('clear')
    assert statuses(node.run(), 'xid') == ['fail'] and node.slurm_node()['state'] == 'IDLE+DRAIN'
    cleared = node.run('--clear-xid')
    assert statuses(cleared, 'xid') == ['pass'] and 'cleared 1 pending Xid (--clear-xid)' in cleared['by_check']['health.xid'][0]['message']
    assert cleared['slurm']['action'] == 'resume' and node.slurm_node()['state'] == 'IDLE'


def test_a_reboot_clears_pending_xids(node):
    node.run()
    time.sleep(0.01)
    node.hwsim('fault', 'xid', '0', '79')
    assert statuses(node.run(), 'xid') == ['fail']
    node.set_boot_id('boot-2')
    report = node.run()
    assert statuses(report, 'xid') == ['pass'] and 'of the previous boot' in report['by_check']['health.xid'][0]['message']


def test_a_non_fatal_xid_passes(node):
    node.run()
    time.sleep(0.01)
    node.hwsim('fault', 'xid', '1', '13')
    report = node.run()
    assert statuses(report, 'xid') == ['pass'] and 'seen, no node action: Xid 13' in report['by_check']['health.xid'][0]['message']
    node.configure(xid={'extra_fatal': [31]})
    time.sleep(0.01)
    node.hwsim('fault', 'xid', '1', '31')
    assert node.run()['by_check']['health.xid'][0]['subject'] == 'GPU 1 Xid 31'


def _dmesg(*lines):
    return ''.join('%s %s\n' % line for line in lines)


BOOT = ('2026-12-01T10:00:00,000000+00:00', 'Linux version 5.15.0-119-generic (buildd@lcy02-amd64-075)')
XID79 = ('2026-12-01T11:00:00,500000+00:00', "NVRM: Xid (PCI:0000:1b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.")
LATER = ('2026-12-01T11:30:00,000000+00:00', 'perf: interrupt took too long')


def test_xid_cursor_as_functions():
    config = {'xid': {}, 'gpu': {'pci_bus_ids': ['00000000:18:00.0', '00000000:1B:00.0']}}
    results, first = hc.evaluate_xid({'text': _dmesg(BOOT)}, {}, config, current_boot='b1')
    assert results[0]['status'] == 'pass' and first['xid_cursor'] == '2026-12-01T10:00:00+00:00'
    results, failed = hc.evaluate_xid({'text': _dmesg(BOOT, XID79)}, first, config, current_boot='b1')
    # nvidia-smi not read: the GPUs the role found (gpu.pci_bus_ids) name the GPU
    assert results[0]['status'] == 'fail' and results[0]['subject'] == 'GPU 1 Xid 79'
    assert failed['xid_cursor'] == '2026-12-01T11:00:00.500000+00:00' and len(failed['xid_pending']) == 1
    # the same line read again with a stamp a little later (dmesg recomputes stamps from the boot time): the same event
    cleared = dict(failed, xid_pending=[])
    jittered = ('2026-12-01T11:00:01,700000+00:00', XID79[1])
    results, dummy = hc.evaluate_xid({'text': _dmesg(BOOT, jittered, LATER)}, cleared, config, current_boot='b1')
    assert results[0]['status'] == 'pass'
    # the same text half an hour later is a new event
    again = ('2026-12-01T11:31:00,000000+00:00', XID79[1])
    results, dummy = hc.evaluate_xid({'text': _dmesg(BOOT, XID79, LATER, again)}, cleared, config, current_boot='b1')
    assert results[0]['status'] == 'fail'
    # another time zone for the same instant is the same cursor
    assert hc.parse_iso('2026-12-01T12:00:00,500000+01:00') == hc.parse_iso(failed['xid_cursor'])
    # a dmesg that cannot be read keeps a pending Xid failing, and is otherwise not checked
    results, dummy = hc.evaluate_xid({'text': None, 'error': 'dmesg failed'}, failed, config, current_boot='b1')
    assert results[0]['status'] == 'fail'
    results, dummy = hc.evaluate_xid({'text': None, 'error': 'dmesg failed'}, cleared, config, current_boot='b1')
    assert results[0]['status'] == 'not checked' and 'dmesg failed' in results[0]['message']


def test_a_wrapped_ring_buffer_is_said_not_failed():
    config = {'xid': {}, 'gpu': {}}
    dummy, state = hc.evaluate_xid({'text': _dmesg(BOOT)}, {}, config)
    results, dummy = hc.evaluate_xid({'text': _dmesg(LATER)}, state, config)
    assert results[0]['status'] == 'pass' and 'after the last check' in results[0]['message']
    results, dummy = hc.evaluate_xid({'text': _dmesg(LATER)}, {}, config)
    assert results[0]['status'] == 'pass' and 'has wrapped' in results[0]['message']


def test_lab_wrapped_dmesg_passes(node):
    node.run()
    node.hwsim('fault', 'dmesg-wrapped')
    report = node.run()
    assert statuses(report, 'xid') == ['pass'] and 'not seen' in report['by_check']['health.xid'][0]['message']


# ---------------------------------------------------------------------------------------------------------------
# Killswitches, the time budget, dry run, job context, configuration


def test_killswitch_per_check(node):
    node.hwsim('fault', 'gpu-missing', '7')
    node.hwsim('fault', 'port-down', 'mlx5_0')
    node.configure(checks={'gpu_count': False, 'gpu_remap': False, 'fabric': False, 'ib_port': False})
    report = node.run()
    assert statuses(report, 'gpu_count') == ['disabled'] and statuses(report, 'ib_port') == ['disabled']
    assert not report['failed'] and node.updates() == []
    assert not any(command['argv'][0] in ('nvidia-smi', 'ibstat') for command in report['commands'])


def test_switching_a_check_off_releases_its_drain(node):
    """A check switched off (it misfires) no longer holds the node: its own drain is resumed."""
    node.set_slurm('IDLE+DRAIN', 'aicluster: health.dcgm GPU 2 NVLINK')
    node.configure(checks={'dcgm': False})
    report = node.run()
    assert report['slurm']['action'] == 'resume' and node.slurm_node()['state'] == 'IDLE'


def test_a_drain_for_a_check_that_could_not_run_is_kept(node):
    node.set_slurm('IDLE+DRAIN', 'aicluster: health.dcgm GPU 2 NVLINK')
    (node.bin / 'dcgmi').unlink()
    report = node.run()
    assert report['slurm']['action'] == 'none' and 'health.dcgm, not checked this run' in report['slurm']['note']


def test_a_hung_nvidia_smi_fails_within_the_budget_on_the_second_run_in_a_row(node):
    node.fake('nvidia-smi', '#!/bin/sh\nsleep 30\n')
    node.configure(command_timeout_s=1)
    start = time.monotonic()
    report = node.run()
    assert time.monotonic() - start < 6
    first = report['by_check']['health.gpu_count'][0]
    assert first['status'] == 'not checked' and 'the first run in a row' in first['message']
    assert node.slurm_node()['state'] == 'IDLE'  # one slow call on a loaded node drains nothing
    report = node.run()
    result = report['by_check']['health.gpu_count'][0]
    assert result['status'] == 'fail' and result['subject'] == 'nvidia-smi'
    assert result['message'].startswith('nvidia-smi did not answer in 1 s') and '(2 runs in a row)' in result['message']
    assert statuses(report, 'gpu_remap') == ['not checked']
    assert node.slurm_node()['reason'] == 'aicluster: health.gpu_count nvidia-smi'


def test_a_slow_nvidia_smi_that_answers_the_next_run_drains_nothing_and_clears_its_strike(node):
    node.configure(command_timeout_s=1)
    node.fake('nvidia-smi', '#!/bin/sh\nsleep 30\n')
    assert statuses(node.run(), 'gpu_count') == ['not checked']
    (node.bin / 'nvidia-smi').unlink()
    (node.bin / 'nvidia-smi').symlink_to(os.path.join(HWSIM_ROOT, 'bin', 'hwsim'))
    node.configure(command_timeout_s=5)
    assert statuses(node.run(), 'gpu_count') == ['pass'] and node.slurm_node()['state'] == 'IDLE'
    node.fake('nvidia-smi', '#!/bin/sh\nsleep 30\n')
    node.configure(command_timeout_s=1)
    assert statuses(node.run(), 'gpu_count') == ['not checked']  # a first time again, not a second


def test_the_deadline_bounds_every_command(node):
    for tool in ('nvidia-smi', 'dcgmi', 'dmesg', 'ibstat'):
        node.fake(tool, '#!/bin/sh\nsleep 30\n')
    node.configure(command_timeout_s=5, check_deadline_s=1.5)
    start = time.monotonic()
    report = node.run()
    assert time.monotonic() - start < 6
    assert all(command['timed_out'] for command in report['commands'])


def test_a_hung_scontrol_is_given_up(node):
    node.hwsim('fault', 'gpu-missing', '7')
    node.configure(scontrol_timeout_s=1)
    start = time.monotonic()
    report = node.run(FAKE_SCONTROL_SLEEP='30')
    assert time.monotonic() - start < 8
    assert report['failed'] and report['slurm']['action'] == 'none' and 'slurmctld did not answer' in report['slurm']['note']


def test_dry_run_changes_nothing(node):
    node.hwsim('fault', 'gpu-missing', '7')
    report = node.run('--dry-run')
    assert report['slurm']['action'] == 'drain' and '(dry run: not done)' in report['slurm']['note']
    assert node.updates() == [] and node.slurm_node()['state'] == 'IDLE'
    assert not (node.state_dir / hc.STATE_FILE).exists()
    assert statuses(report, 'dcgm') == ['not checked'] and 'are not set' in report['by_check']['health.dcgm'][0]['message']


def test_no_scontrol_from_a_prolog_or_a_job(node):
    node.hwsim('fault', 'gpu-missing', '7')
    for env in ({'SLURM_SCRIPT_CONTEXT': 'prolog_slurmd', 'SLURM_JOB_ID': '42'}, {'SLURM_JOB_ID': '42'}):
        report = node.run(**env)
        assert report['failed'] and report['slurm']['action'] == 'none' and 'inside a job' in report['slurm']['note']
    assert not (node.tmp / 'slurm.json.calls').exists()


def test_a_node_slurm_does_not_know(node):
    node.hwsim('fault', 'gpu-missing', '7')
    report = node.run('--node', 'gpu99')
    assert report['slurm']['action'] == 'none' and 'not known to Slurm' in report['slurm']['note']


def test_configuration_errors(tmp_path):
    bad = tmp_path / 'bad.json'
    bad.write_text('{not json')
    assert hc.main([str(bad)], environ={'PATH': '/nonexistent'}, stdout=io.StringIO()) == 2
    bad.write_text(json.dumps({'checks': {'gpu_cnt': True}}))
    with pytest.raises(hc.ConfigError, match='unknown checks gpu_cnt'):
        hc.load_config(str(bad))
    config = hc.load_config(str(tmp_path / 'absent.json'))
    assert config['checks'] == dict((name, True) for name in hc.CHECKS) and config['_source'] is None


def test_the_summary_for_an_operator(node):
    node.hwsim('fault', 'gpu-missing', '7')
    out = io.StringIO()
    assert hc.main([str(node.config_path), '--node', 'gpu01', '--dry-run'], environ=node.env, stdout=out) == 0
    text = out.getvalue()
    assert text.startswith('aicluster-healthcheck gpu01: FAIL') and 'health.gpu_count  fail' in text
    assert 'slurm: drain "aicluster: health.gpu_count 7/8" (state IDLE)' in text


def test_the_program_runs_as_slurmd_runs_it(node, tmp_path):
    """As a file: started through /bin/sh with only SLURMD_NODENAME (and here the lab's variables) in its environment."""
    import subprocess  # pylint: disable=import-outside-toplevel
    node.hwsim('fault', 'gpu-missing', '7')
    env = dict(node.env, SLURMD_NODENAME='gpu01')
    result = subprocess.run([PROGRAM, str(node.config_path)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            universal_newlines=True, timeout=30, check=False)
    assert result.returncode == 0, result.stderr
    assert 'gpu01: FAIL' in result.stdout and node.slurm_node()['reason'] == 'aicluster: health.gpu_count 7/8'


# ---------------------------------------------------------------------------------------------------------------
# The pieces: sysfs, ibstat, nvidia-smi, dcgmi, scontrol, the decision


def _port(root, hca, port, state, phys, rate, layer='InfiniBand'):
    folder = root / 'sys' / 'class' / 'infiniband' / hca / 'ports' / str(port)
    folder.mkdir(parents=True)
    for name, value in (('state', state), ('phys_state', phys), ('rate', rate), ('link_layer', layer)):
        (folder / name).write_text(value + '\n')


def test_sysfs_is_read_before_ibstat(node):
    root = node.tmp / 'root'
    _port(root, 'mlx5_0', 1, '4: ACTIVE', '5: LinkUp', '400 Gb/sec (4X NDR)')
    _port(root, 'mlx5_1', 1, '4: ACTIVE', '5: LinkUp', '100 Gb/sec (4X EDR)', 'Ethernet')
    _port(root, 'mlx5_3', 1, '1: DOWN', '3: Disabled', '10 Gb/sec (4X SDR)')
    _port(root, 'mlx5_4', 1, '4: ACTIVE', '5: LinkUp', '200 Gb/sec (4X HDR)')
    node.configure(ib={'hcas': [], 'rate_gbps': 400})
    report = node.run()
    assert not any(command['argv'][0] == 'ibstat' for command in report['commands'])
    assert [(result['subject'], result['status']) for result in report['by_check']['health.ib_port']] == [
        ('mlx5_3:1', 'fail'), ('mlx5_4:1', 'fail')]
    assert 'DOWN/Disabled' in report['by_check']['health.ib_port'][0]['message']
    node.configure(ib={'hcas': ['mlx5_0', 'mlx5_9:1'], 'rate_gbps': 400})
    report = node.run()
    assert [(result['subject'], result['message']) for result in report['by_check']['health.ib_port']] == [
        ('mlx5_9:1', 'mlx5_9 port 1 not found (sysfs)')]
    # a container that sees its host's sysfs but runs simulated HCAs: ibstat only
    node.configure(ib={'hcas': LAB_HCAS, 'source': 'ibstat'})
    report = node.run()
    assert statuses(report, 'ib_port') == ['pass'] and report['by_check']['health.ib_port'][0]['message'].endswith('(ibstat)')


def test_no_rdma_at_all(node):
    (node.bin / 'ibstat').unlink()
    report = node.run()
    assert statuses(report, 'ib_port') == ['fail'] and 'no /sys/class/infiniband and no ibstat' in report['by_check']['health.ib_port'][0]['message']
    node.configure(ib={'hcas': []})
    assert statuses(node.run(), 'ib_port') == ['not checked']


def test_ibstat_parser_on_the_projects_fixture():
    ports = hc.parse_ibstat(own_fixture('ibstat/ibstat-rdma-core-cx3-fdr10-2port-polling-init-handmade.txt'))
    assert ports[('mlx4_0', 1)] == {'state': 'Active', 'phys_state': 'LinkUp', 'rate_gbps': 40.0, 'link_layer': 'InfiniBand'}
    assert ports[('mlx4_0', 2)]['state'] == 'Down' and ports[('mlx5_0', 1)]['rate_gbps'] == 2.5


def test_an_old_driver_without_remap_fields(node):
    node.fake('nvidia-smi', '#!/bin/sh\ncase "$1" in *remapped_rows*) echo \'Field "remapped_rows.pending" is not a valid '
                            'field to query.\'; exit 2;; esac\nfor i in 0 1 2 3 4 5 6 7; do echo "$i, 00000000:1$i:00.0"; done\n')
    report = node.run()
    assert statuses(report, 'gpu_count') == ['pass'] and statuses(report, 'gpu_remap') == ['not checked']
    # the newest fields are left out first: fabric.state/status, then the remap fields
    assert [command['argv'][1].count(',') for command in report['commands'] if command['argv'][0] == 'nvidia-smi'] == [6, 4, 1]
    assert statuses(report, 'fabric') == ['not checked']


def test_no_gpu_expected(node):
    node.configure(gpu={'count': 0})
    (node.bin / 'nvidia-smi').unlink()
    report = node.run()
    assert statuses(report, 'gpu_count') == ['not checked'] and statuses(report, 'gpu_remap') == ['not checked']
    node.configure(gpu={'count': 8})
    report = node.run()
    assert statuses(report, 'gpu_count') == ['fail'] and 'nvidia-smi not found' in report['by_check']['health.gpu_count'][0]['message']


def test_missing_gpus_are_named_by_bus_id():
    rows = [{'index': str(index), 'pci.bus_id': '00000000:%02X:00.0' % (0x18 + index)} for index in range(7)]
    config = {'gpu': {'count': 8, 'pci_bus_ids': [row['pci.bus_id'] for row in rows] + ['00000000:DB:00.0']}}
    result = hc.evaluate_gpu_count({'rows': rows, 'error': None}, config)[0]
    assert result['status'] == 'fail' and result['message'] == '7 GPUs of 8 expected (missing: 00000000:DB:00.0)'
    assert hc.evaluate_gpu_count({'rows': rows + rows[:2], 'error': None}, config)[0]['status'] == 'pass'


@pytest.mark.parametrize('name, overall, failing', [
    ('dcgmi-3.3-8xh100-health-failure-ecc-nvlink-handmade.txt', 'Failure', ['GPU 1 Memory', 'GPU 5 NVLINK']),
    ('dcgmi-3.3-8xh100-health-failure-json-handmade.txt', 'Failure', ['GPU 1 Memory', 'GPU 5 NVLINK']),
    ('dcgmi-3.3-8xh100-health-warning-pcie-handmade.txt', 'Warning', []),
    ('dcgmi-3.3-8xh100-health-healthy-handmade.txt', 'Healthy', []),
], ids=['table-failure', 'json-failure', 'table-warning', 'table-healthy'])
def test_dcgmi_health_reports(name, overall, failing):
    report = hc.parse_dcgm_health(own_fixture('dcgmi/' + name))
    assert report['overall'] == overall
    results = hc.evaluate_dcgm({'report': report})
    assert [result['subject'] for result in results if result['status'] == 'fail'] == failing
    if overall == 'Warning':
        assert 'warnings, not failed: GPU 3 PCIe' in results[0]['message']
    if failing:
        assert 'Detected 1 volatile double-bit ECC error(s) in GPU 1.' in results[0]['message']
    assert hc.parse_dcgm_health(own_fixture('dcgmi/dcgmi-3.3-8xh100-health-nowatches-handmade.txt')) is None


def test_scontrol_one_line_fixture():
    text = own_fixture('scontrol/scontrol-22.05-h100-nodes-drained-oneline-handmade.txt')
    assert hc.parse_node_line(text, 'gpu02') == {'NodeName': 'gpu02', 'State': 'IDLE+DRAIN', 'Reason': 'gpu xid 79 on GPU 3'}
    assert hc.parse_node_line(text, 'gpu01')['Reason'] is None
    assert hc.parse_node_line(own_fixture('scontrol/scontrol-22.05-node-not-found-handmade.txt'), 'gpu99') is None
    line = 'NodeName=n1 State=MIXED+DRAIN Reason=aicluster: health.xid GPU 3 Xid 79 [root@2026-12-02T01:00:00] Comment=x'
    assert hc.parse_node_line(line)['Reason'] == 'aicluster: health.xid GPU 3 Xid 79'


def _results(**statuses_by_check):
    return [hc.new_result(check, status, 'node', '') for check, status in statuses_by_check.items()]


ALL_PASS = dict((name, 'pass') for name in hc.CHECKS)


@pytest.mark.parametrize('state, reason, results, action', [
    ('IDLE', None, ALL_PASS, 'none'),
    ('IDLE+DRAIN', 'aicluster: health.gpu_count 7/8', ALL_PASS, 'resume'),
    ('DOWN+DRAIN', 'aicluster: health.xid GPU 3 Xid 79; health.dcgm GPU 3 Memory', ALL_PASS, 'resume'),
    ('IDLE+DRAIN', 'aicluster: ib.port_state mlx5_0:1', ALL_PASS, 'none'),
    ('IDLE+DRAIN', 'operator: fan', ALL_PASS, 'none'),
    ('IDLE+DRAIN', 'aicluster: health.gpu_count 7/8', dict(ALL_PASS, gpu_count='not checked'), 'none'),
    ('IDLE+DRAIN', 'aicluster: health.gpu_count 7/8', dict(ALL_PASS, gpu_count='disabled'), 'resume'),
    ('IDLE+DRAIN', 'aicluster: health.unknown x', ALL_PASS, 'none'),
    ('IDLE', None, dict(ALL_PASS, gpu_count='fail'), 'drain'),
    ('ALLOCATED', None, dict(ALL_PASS, gpu_count='fail'), 'drain'),
    ('IDLE+DRAIN', 'aicluster: health.gpu_count node', dict(ALL_PASS, gpu_count='fail'), 'none'),
    ('IDLE+DRAIN', 'aicluster: health.dcgm node', dict(ALL_PASS, gpu_count='fail'), 'drain'),
    ('IDLE+DRAIN', 'aicluster: gpu.xid GPU 3', dict(ALL_PASS, gpu_count='fail'), 'none'),
    ('MIXED+DRAIN', 'operator: fan', dict(ALL_PASS, gpu_count='fail'), 'none'),
], ids=['in-service', 'own-resumed', 'own-two-checks-resumed', 'gate-kept', 'operator-kept', 'own-unchecked-kept',
        'own-switched-off-resumed', 'own-unknown-check-kept', 'drain', 'drain-busy-node', 'same-reason-nothing',
        'own-new-reason', 'gate-drain-kept-failing', 'operator-kept-failing'])
def test_decide(state, reason, results, action):
    decision = hc.decide(_results(**results), {'NodeName': 'gpu01', 'State': state, 'Reason': reason})
    assert decision['action'] == action, decision
    if action == 'drain':
        assert decision['reason'] == 'aicluster: health.gpu_count node'


def test_a_long_reason_stays_short_and_its_own():
    failed = [hc.new_result('ib_port', 'fail', 'mlx5_%d:1' % number, '') for number in range(40)]
    reason = hc.drain_reason(failed, 240)
    assert len(reason) <= 240 and reason.endswith('...')
    assert hc.is_own_reason(reason) and gate.checks_in_reason(reason) == ['health.ib_port']
    assert not hc.is_own_reason('aicluster: ...') and not hc.is_own_reason('aicluster:')
    assert not hc.is_drained('IDLE') and hc.is_drained('MIXED+DRAIN') and hc.is_drained('DRAINED')


def test_nvswitch_bridges_are_not_in_the_default_ports(tmp_path):
    """An HGX B200's bridge functions (VPD SW_MNG) are RDMA devices whose ports NVLSM brings up, not the compute
    fabric's: the default port list (every InfiniBand port) leaves them out, read from sysfs or from ibstat."""
    node = Node(tmp_path, profile='hgx-b200-ib')
    node.hwsim('boot')  # hwsim's sysfs tree: the bridges' VPD under run/hwsim/sys
    vpd_sysfs = os.path.join(node.lab.root('gpu01'), 'run', 'hwsim', 'sys')
    root = node.tmp / 'root'
    _port(root, 'mlx5_0', 1, '4: ACTIVE', '5: LinkUp', '400 Gb/sec (4X NDR)')
    _port(root, 'mlx5_10', 1, '2: INIT', '5: LinkUp', '400 Gb/sec (4X NDR)')  # NVLSM not running yet
    for name in ('mlx5_0', 'mlx5_10'):
        os.symlink(os.path.join(vpd_sysfs, 'class', 'infiniband', name, 'device'),
                   str(root / 'sys' / 'class' / 'infiniband' / name / 'device'))
    node.configure(ib={'hcas': [], 'rate_gbps': 400})
    report = node.run()
    assert statuses(report, 'ib_port') == ['pass'] and report['by_check']['health.ib_port'][0]['message'].startswith('1 port ')
    # ibstat (the lab's containers): the VPD from the configured tree
    node.configure(ib={'hcas': [], 'rate_gbps': 400, 'source': 'ibstat', 'vpd_sysfs': vpd_sysfs})
    report = node.run()
    assert statuses(report, 'ib_port') == ['pass'] and report['by_check']['health.ib_port'][0]['message'].startswith('8 ports ')
    assert hc.nvswitch_bridges(vpd_sysfs, ['mlx5_0', 'mlx5_10', 'mlx5_13', 'mlx5_99']) == ['mlx5_10', 'mlx5_13']


# ---------------------------------------------------------------------------------------------------------------
# health.fabric: after a reboot the node stays drained until the fabric manager registered the GPUs


def test_after_a_reboot_the_node_is_drained_until_the_fabric_is_registered(node):
    """Fails on main: there no check read the fabric state, and hwsim reported Completed whatever ran."""
    root = node.lab.root('gpu01')
    node.env.update(HWSIM_ROOT=root, HWSIM_KERNEL=node.lab.kernel)
    node.lab.install_driver('gpu01', '580.95.05')
    node.lab.install_fabric_manager('gpu01')
    node.hwsim('boot')
    assert node.lab.start_fabric_manager('gpu01', '580.95.05')[0] == 0
    report = node.run()
    assert statuses(report, 'fabric') == ['pass'] and '8 of 8 GPUs registered' in report['by_check']['health.fabric'][0]['message']
    node.hwsim('reboot')  # slurmd runs the health check when it starts, before it registers the node
    report = node.run()
    assert statuses(report, 'fabric') == ['fail']
    assert report['by_check']['health.fabric'][0]['subject'] == 'GPU 0,1,2,3,4,5,6,7 In Progress'
    assert node.slurm_node()['reason'] == 'aicluster: health.fabric GPU 0,1,2,3,4,5,6,7 In Progress'
    # ReturnToService does not clear a drain: the node takes no job until the next run finds the fabric registered
    assert node.run()['slurm']['action'] == 'none' and node.slurm_node()['state'] == 'IDLE+DRAIN'
    assert node.lab.start_fabric_manager('gpu01', '580.95.05')[0] == 0
    report = node.run()
    assert statuses(report, 'fabric') == ['pass'] and report['slurm']['action'] == 'resume'
    assert node.slurm_node()['state'] == 'IDLE'


def test_the_prologs_fabric_drain_is_resumed_by_the_health_check(node):
    node.set_slurm('IDLE+DRAIN', 'aicluster: health.fabric GPU 0,1,2,3,4,5,6,7 In Progress')
    report = node.run()  # hwsim without a fabric manager installed: the profile's Completed/Success
    assert statuses(report, 'fabric') == ['pass'] and report['slurm']['action'] == 'resume'


@pytest.mark.parametrize('state, status, label', [
    ('Completed', 'Success', None), ('N/A', 'N/A', None), ('[N/A]', '[N/A]', None), ('Not Supported', None, None),
    (None, None, None), ('In Progress', 'N/A', 'In Progress'), ('Not Started', 'N/A', 'Not Started'),
    ('Completed', 'Failure', 'Completed/Failure'), ('Completed', None, 'Completed/N/A'),
])
def test_the_fabric_labels_are_gpu_facts(state, status, label):
    from ansible_collections.aicluster.infra.plugins.module_utils.gpu_facts import fabric_label
    assert hc.fabric_label(state, status) == fabric_label(state, status) == label
