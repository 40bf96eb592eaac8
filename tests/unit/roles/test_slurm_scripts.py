# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The slurm role's prolog and epilog: rendered with the role's defaults, valid bash, and the prolog's checks run
against stand-in nvidia-smi, dmesg and scontrol commands (molecule/slurm runs both on lab nodes with real Slurm)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil
import stat
import subprocess
import time

import pytest
import yaml

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

try:
    from ansible.template import trust_as_template  # ansible-core 2.19: a template must be trusted to be rendered
except ImportError:  # 2.16 to 2.18 render any string
    def trust_as_template(text):
        return text

from ansible_collections.aicluster.infra.plugins.module_utils.kernel_log import FAIL_BUCKETS, XID_CATALOG

ROLE = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'roles', 'slurm')


def _defaults():
    with open(os.path.join(ROLE, 'defaults', 'main.yml'), encoding='utf-8') as handle:
        return yaml.safe_load(handle)


def _render(name, **overrides):
    variables = _defaults()
    variables.update({'ansible_managed': 'Ansible managed', '__slurm_spool_dir': '/var/lib/slurm/slurmd',
                      '__slurm_prolog_gpus': 8})
    variables.update(overrides)
    with open(os.path.join(ROLE, 'templates', 'etc', 'slurm', name + '.j2'), encoding='utf-8') as handle:
        text = handle.read()
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(text))


def test_the_default_fatal_xids_are_the_catalogs_reset_reboot_and_support_buckets():
    """The prolog and the verify stage's gpu.xid fail the same Xids."""
    expected = sorted(code for code, (bucket, _name) in XID_CATALOG.items() if bucket in FAIL_BUCKETS)
    assert sorted(_defaults()['slurm_fatal_xids']) == expected


@pytest.mark.parametrize('name', ['prolog.sh', 'epilog.sh'])
def test_scripts_render_to_valid_bash(name, tmp_path):
    script = tmp_path / name
    script.write_text(_render(name))
    subprocess.run(['bash', '-n', str(script)], check=True)
    if shutil.which('shellcheck'):
        subprocess.run(['shellcheck', '-s', 'bash', '-S', 'warning', str(script)], check=True)


def test_the_epilog_names_the_gpu_daemons_as_proc_shows_them():
    text = _render('epilog.sh')
    # /proc/PID/comm holds 15 characters: nvidia-persistenced shows as nvidia-persiste
    assert 'daemons=" nvidia-persiste nv-hostengine dcgm-exporter "' in text


def _alive(proc):
    return proc.poll() is None


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which('setpriv'), reason='needs root and setpriv (util-linux)')
def test_the_epilog_kills_the_job_users_leftover_and_leaves_daemons_and_others(tmp_path):
    """Real processes hold stand-in GPU device files: a persistence daemon (root, every GPU), the job user's leftover
    (nobody) and another user's process on the job's GPU. The epilog kills the leftover only and ends at once."""
    dev = tmp_path / 'dev'
    dev.mkdir()
    for index in range(4):
        (dev / ('nvidia%d' % index)).write_text('')
    daemon = tmp_path / 'nvidia-persistenced'
    shutil.copy(shutil.which('sleep'), str(daemon))
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    logged = tmp_path / 'logged'
    _tool(bin_dir, 'logger', 'cat >> %s' % logged)
    # the daemon holds every GPU, for its whole life
    holders = ' '.join('%d<%s/nvidia%d' % (3 + index, dev, index) for index in range(4))
    procs = {
        'daemon': subprocess.Popen(['bash', '-c', 'exec %s; exec %s 300' % (holders, daemon)]),
        # opened as root, then run as the job's user (nobody) or as someone else (uid 4343)
        'leftover': subprocess.Popen(['bash', '-c', 'exec 3<%s/nvidia1; exec setpriv --reuid=65534 --regid=65534 '
                                      '--clear-groups sleep 300' % dev]),
        'other': subprocess.Popen(['bash', '-c', 'exec 3<%s/nvidia1; exec setpriv --reuid=4343 --regid=4343 '
                                   '--clear-groups sleep 300' % dev]),
    }
    try:
        deadline = time.time() + 10
        while time.time() < deadline and not all(
                os.path.exists('/proc/%d/fd/3' % proc.pid) and os.readlink('/proc/%d/fd/3' % proc.pid).startswith(str(dev))
                for proc in procs.values()):
            time.sleep(0.05)
        script = tmp_path / 'epilog.sh'
        text = _render('epilog.sh', slurm_epilog_gpu_release_timeout=5).replace('/dev/nvidia', '%s/nvidia' % dev)
        script.write_text(text.replace('export PATH=', 'export PATH=%s:' % bin_dir, 1))
        env = {'PATH': '%s:/usr/bin:/bin' % bin_dir, 'SLURM_JOB_GPUS': '1', 'SLURM_JOB_ID': '42', 'SLURM_JOB_USER': 'nobody'}
        started = time.time()
        done = subprocess.run(['bash', str(script)], env=env, capture_output=True, text=True, timeout=60, check=False)
        elapsed = time.time() - started
        procs['leftover'].wait(timeout=5)
        assert done.returncode == 0, done.stderr
        assert elapsed < 3, 'the epilog waited %.1f s' % elapsed
        assert not _alive(procs['leftover']) and procs['leftover'].returncode == -9
        assert _alive(procs['daemon']) and _alive(procs['other'])
        assert not logged.exists() or 'still held' not in logged.read_text()
    finally:
        for proc in procs.values():
            if _alive(proc):
                proc.kill()
                proc.wait()


def _tool(directory, name, body):
    path = directory / name
    path.write_text('#!/bin/sh\n' + body + '\n')
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


@pytest.fixture
def prolog(tmp_path):
    """Run the rendered prolog with stand-in tools: returns (rc, what scontrol was asked, what was logged)."""
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    spool = tmp_path / 'spool'
    spool.mkdir()
    calls = tmp_path / 'calls'
    _tool(bin_dir, 'scontrol', 'echo "scontrol $*" >> %s' % calls)
    _tool(bin_dir, 'logger', 'cat >> %s' % calls)

    def run(smi, dmesg='', timeout=10, fabric=FABRIC_DONE, **overrides):
        # the fabric query (index,fabric.state,fabric.status) gets its own answer
        _tool(bin_dir, 'nvidia-smi', 'case "$*" in\n*fabric.state*)\n%s\n;;\n*)\n%s\n;;\nesac' % (fabric, smi))
        _tool(bin_dir, 'dmesg', "cat <<'END'\n%sEND" % dmesg)
        script = tmp_path / 'prolog.sh'
        text = _render('prolog.sh', __slurm_spool_dir=str(spool), slurm_prolog_nvidia_smi_timeout=timeout, **overrides)
        # the script sets its own PATH (slurmd gives it none): the stand-ins go first
        script.write_text(text.replace('export PATH=', 'export PATH=%s:' % bin_dir, 1))
        env = {'PATH': '%s:/usr/bin:/bin' % bin_dir, 'SLURMD_NODENAME': 'gpu07', 'SLURM_JOB_ID': '42'}
        done = subprocess.run(['bash', str(script)], env=env, capture_output=True, text=True, timeout=60, check=False)
        said = calls.read_text() if calls.exists() else ''
        if calls.exists():
            calls.unlink()
        return done.returncode, said
    return run


HEALTHY = ('cat <<END\n' + ''.join('%d, No, [N/A]\n' % index for index in range(8)) + 'END')


def _fabric(*states):
    """An nvidia-smi stand-in body printing index, fabric.state, fabric.status for 8 GPUs (one state for all, or 8)."""
    states = states * 8 if len(states) == 1 else states
    return 'cat <<END\n' + ''.join('%d, %s\n' % (index, state) for index, state in enumerate(states)) + 'END'


FABRIC_DONE = _fabric('Completed, Success')
XID_79 = '[ 100.000001] NVRM: Xid (PCI:0000:1b:00): 79, pid=0, GPU has fallen off the bus.\n'
XID_13 = '[ 100.000001] NVRM: Xid (PCI:0000:1b:00): 13, pid=123, Graphics Exception\n'


def test_a_healthy_node_passes_without_calling_slurm(prolog):
    assert prolog(HEALTHY) == (0, '')


def test_a_missing_gpu_drains_with_a_reason(prolog):
    smi = 'cat <<END\n' + ''.join('%d, No, [N/A]\n' % index for index in range(7)) + 'END'
    rc, said = prolog(smi)
    assert rc == 1
    assert 'scontrol update NodeName=gpu07 State=DRAIN Reason=prolog: nvidia-smi sees 7 of 8 GPUs' in said
    assert 'prolog: job 42: nvidia-smi sees 7 of 8 GPUs' in said


def test_a_pending_row_remap_drains(prolog):
    smi = 'cat <<END\n' + ''.join('%d, %s, [N/A]\n' % (index, 'Yes' if index == 3 else 'No') for index in range(8)) + 'END'
    rc, said = prolog(smi)
    assert rc == 1 and 'Reason=prolog: GPU 3: row remap or page retirement pending, reset the GPU' in said


def test_a_hung_nvidia_smi_drains_after_the_timeout(prolog):
    rc, said = prolog('sleep 30', timeout=1)
    assert rc == 1 and 'Reason=prolog: nvidia-smi did not answer in 1 s' in said


def test_a_failing_nvidia_smi_drains_with_its_message(prolog):
    rc, said = prolog('echo "NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver."; exit 9')
    assert rc == 1 and 'Reason=prolog: nvidia-smi failed (exit 9): NVIDIA-SMI has failed because' in said


def test_only_a_new_fatal_xid_drains(prolog):
    # the first job only sets the cursor, whatever the log holds
    assert prolog(HEALTHY, dmesg=XID_79) == (0, '')
    assert prolog(HEALTHY, dmesg=XID_79) == (0, '')
    # an application's Xid 13 is not fatal
    assert prolog(HEALTHY, dmesg=XID_79 + XID_13) == (0, '')
    rc, said = prolog(HEALTHY, dmesg=XID_79 + XID_13 + XID_79.replace('1b:00', '2c:00'))
    assert rc == 1 and 'Reason=prolog: new fatal Xid: Xid (PCI:0000:2c:00): 79, pid=0, GPU has fallen off the bus.' in said
    # counted once: the next job passes (an operator resumed the node after a reset)
    assert prolog(HEALTHY, dmesg=XID_79 + XID_13 + XID_79.replace('1b:00', '2c:00')) == (0, '')


def test_each_check_can_be_switched_off(prolog):
    checks = {'device_files': True, 'nvidia_smi': False, 'xid': False}
    assert prolog('exit 1', slurm_prolog_checks=checks) == (0, '')


@pytest.mark.parametrize('fabric', [FABRIC_DONE, _fabric('N/A, N/A'), _fabric('[Not Supported], [Not Supported]'),
                                    'echo \'Field "fabric.state" is not a valid field to query.\'; exit 2'],
                         ids=['registered', 'pcie-na', 'not-supported', 'old-driver'])
def test_a_registered_fabric_or_none_passes(prolog, fabric):
    assert prolog(HEALTHY, fabric=fabric) == (0, '')


def test_a_fabric_not_registered_drains_with_the_health_checks_reason(prolog):
    """After a boot the GPUs are In Progress until the fabric manager registered them: the job is requeued and the
    node drained with health.fabric, which aicluster-healthcheck resumes once the fabric is Completed/Success."""
    rc, said = prolog(HEALTHY, fabric=_fabric('In Progress, N/A'))
    assert rc == 1
    assert ('scontrol update NodeName=gpu07 State=DRAIN Reason=aicluster: health.fabric GPU 0,1,2,3,4,5,6,7 In Progress'
            in said)
    assert 'prolog: job 42: GPU 0,1,2,3,4,5,6,7 In Progress: not registered with the NVSwitch fabric' in said


def test_a_fabric_completed_with_an_error_names_its_status(prolog):
    states = ['Completed, Success'] * 8
    states[5] = 'Completed, Failure'
    rc, said = prolog(HEALTHY, fabric=_fabric(*states))
    assert rc == 1 and 'Reason=aicluster: health.fabric GPU 5 Completed/Failure' in said


def test_the_fabric_check_can_be_switched_off(prolog):
    checks = {'device_files': True, 'nvidia_smi': True, 'fabric': False, 'xid': True}
    assert prolog(HEALTHY, fabric=_fabric('In Progress, N/A'), slurm_prolog_checks=checks) == (0, '')


def _render_dropin(services):
    variables = _defaults()
    variables.update({'ansible_managed': 'Ansible managed', '__slurm_gpu_services': {'services': services}})
    path = os.path.join(ROLE, 'templates', 'etc', 'systemd', 'slurmd.service.d', 'aicluster-gpu-services.conf.j2')
    with open(path, encoding='utf-8') as handle:
        text = handle.read()
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(text))


def test_slurmd_starts_after_the_gpu_services_and_wants_those_the_node_starts():
    unit = {'exists': True, 'enabled': True}
    text = _render_dropin({'nvidia-persistenced.service': unit, 'nvidia-dcgm.service': unit,
                           'nvidia-fabricmanager.service': {'exists': True, 'enabled': False}})
    lines = [line for line in text.splitlines() if line and not line.startswith('#')]
    assert lines == ['[Unit]', 'After=nvidia-persistenced.service', 'After=nvidia-fabricmanager.service',
                     'After=nvidia-dcgm.service', 'Wants=nvidia-dcgm.service', 'Wants=nvidia-persistenced.service']
    text = _render_dropin({'nvidia-persistenced.service': unit, 'nvidia-dcgm.service': unit,
                           'nvidia-fabricmanager.service': unit})
    assert 'Wants=nvidia-fabricmanager.service' in text.splitlines()


def test_a_job_right_after_a_reboot_is_not_started_before_the_fabric_is_registered(prolog, tmp_path):
    """The prolog against the lab's nvidia-smi (lab/hwsim) after `hwsim reboot` on an HGX H100 node with the mirror's
    driver and fabric manager stand-ins: the job is refused (requeued by Slurm) and the node drained with health.fabric
    until the fabric manager has started in this boot; then the next job passes. Fails on main (no fabric check)."""
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', '..', 'lab', 'hwsim'))
    from hwsim.testing import HWSIM_ROOT, make_lab  # pylint: disable=import-outside-toplevel
    lab = make_lab(tmp_path / 'lab', 'hgx-h100-ib', compute=1)
    lab.install_driver('gpu01', '580.95.05')
    lab.install_fabric_manager('gpu01')
    lab.ok('gpu01', ['hwsim', 'boot'])
    assert lab.start_fabric_manager('gpu01', '580.95.05')[0] == 0
    env = ' '.join('%s=%s' % item for item in sorted(lab.env('gpu01').items()) if item[1])
    smi = 'exec env %s %s %s nvidia-smi "$@"' % (env, sys.executable, os.path.join(HWSIM_ROOT, 'bin', 'hwsim'))
    assert prolog(smi, fabric=smi) == (0, '')
    lab.ok('gpu01', ['hwsim', 'reboot'])
    rc, said = prolog(smi, fabric=smi)
    assert rc == 1 and 'Reason=aicluster: health.fabric GPU 0,1,2,3,4,5,6,7 In Progress' in said
    assert lab.start_fabric_manager('gpu01', '580.95.05')[0] == 0
    assert prolog(smi, fabric=smi) == (0, '')
