"""lab/hwsim: persistence mode from nvidia-persistenced as its unit starts it (Ubuntu's packaged unit passes
--no-persistence-mode), and the NVSwitch fabric state after a boot until the fabric manager stand-in has started.

The role side is driven with the role's own decision (plugins/module_utils/nvidia_driver.py persistence): the drop-in's
ExecStart, computed from the lab's Ubuntu-like unit, started as the unit would start it."""
import os
import re
import subprocess
import sys

import pytest

from _paths import REPO

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))

# pylint: disable=wrong-import-position
from ansible_collections.aicluster.infra.plugins.module_utils.gpu_facts import fabric_states, fabric_unregistered  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.nvidia_driver import persistence  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.nvidia_smi import parse_nvidia_smi_q  # noqa: E402
from hwsim import daemons  # noqa: E402
from hwsim.testing import make_lab  # noqa: E402

VERSION = '580.95.05'
HWSIM = os.path.join(REPO, 'lab', 'hwsim', 'bin', 'hwsim')
# lab/hwsim/install.yml's unit with hwsim_persistenced_ubuntu: true, as `systemctl cat` prints it
UBUNTU_UNIT = '''# /etc/systemd/system/nvidia-persistenced.service
# lab test equipment (lab/hwsim/install.yml): nvidia-persistenced holding the simulated GPUs
[Unit]
Description=nvidia-persistenced (aicluster lab stand-in)
After=hwsim-devices.service
Requires=hwsim-devices.service

[Service]
ExecStart=/opt/hwsim/bin/hwsim hold nvidia-persistenced --user nvidia-persistenced --no-persistence-mode --verbose
'''


@pytest.fixture
def lab(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    lab.install_driver('gpu01', VERSION)
    return lab


def _modes(lab):
    out = lab.ok('gpu01', ['nvidia-smi', '--query-gpu=index,persistence_mode', '--format=csv,noheader'])
    return sorted(set(line.split(', ')[1] for line in out.splitlines()))


class Persistenced(object):
    """``hwsim hold nvidia-persistenced ARGS --root ROOT`` running as its unit would run it."""

    def __init__(self, lab, args):
        self.proc = subprocess.Popen([sys.executable, HWSIM, 'hold', 'nvidia-persistenced', '--root', lab.root('gpu01')]
                                     + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith('nvidia-persistenced: holding'), (line, self.proc.stderr.read())

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


def _unit_args(command):
    """The arguments after ``hwsim hold nvidia-persistenced`` of a unit's ExecStart."""
    words = command.split()
    return words[words.index('nvidia-persistenced') + 1:]


def test_ubuntus_unit_leaves_persistence_mode_off_and_the_roles_dropin_turns_it_on(lab):
    """Fails on main: there hwsim's nvidia-smi always said Enabled (and hold refused Ubuntu's options)."""
    ubuntu = Persistenced(lab, _unit_args(persistence({'unit': UBUNTU_UNIT})['packaged']))
    try:
        assert _modes(lab) == ['Disabled']
        summary = lab.ok('gpu01', ['nvidia-smi'])
        assert re.search(r'HBM3 +Off \| 00000000:1B:00\.0 ', summary), summary  # the Persistence-M column
        q = parse_nvidia_smi_q(lab.ok('gpu01', ['nvidia-smi', '-q']))
        assert set(gpu['persistence_mode'] for gpu in q['gpus']) == {'Disabled'}
    finally:
        ubuntu.stop()
    dropin = persistence({'unit': UBUNTU_UNIT})['exec_start']
    assert dropin.endswith('--verbose --persistence-mode') and '--no-persistence-mode' not in dropin
    fixed = Persistenced(lab, _unit_args(dropin))
    try:
        assert _modes(lab) == ['Enabled']
        check = persistence({'query': {'rc': 0, 'stdout': lab.ok(
            'gpu01', ['nvidia-smi', '--query-gpu=index,persistence_mode', '--format=csv,noheader'])}})
        assert check['problems'] == [] and len(check['gpus']) == 8
    finally:
        fixed.stop()
    # the daemon stopped: nothing keeps persistence mode on
    assert _modes(lab) == ['Disabled']


def test_the_roles_check_names_every_gpu_under_ubuntus_unit(lab):
    ubuntu = Persistenced(lab, ['--user', 'nvidia-persistenced', '--no-persistence-mode', '--verbose'])
    try:
        status, out, _err = lab.run('gpu01', ['nvidia-smi', '--query-gpu=index,persistence_mode', '--format=csv,noheader'])
        problems = persistence({'query': {'rc': status, 'stdout': out}})['problems']
        assert problems and problems[0].startswith('persistence mode is not Enabled on GPU 0, 1, 2, 3, 4, 5, 6, 7 (Disabled)')
        # nvidia-smi -pm 1 goes through the running daemon's RPC interface: on until the daemon stops
        assert 'Enabled persistence mode for GPU 00000000:1B:00.0.' in lab.ok('gpu01', ['nvidia-smi', '-pm', '1'])
        assert _modes(lab) == ['Enabled']
    finally:
        ubuntu.stop()


def test_legacy_persistence_mode_lasts_until_the_reboot(lab):
    assert _modes(lab) == ['Disabled']
    lab.ok('gpu01', ['nvidia-smi', '-pm', '1'])
    assert _modes(lab) == ['Enabled']
    assert 'is already Enabled' in lab.ok('gpu01', ['nvidia-smi', '-pm', '1'])
    lab.ok('gpu01', ['hwsim', 'reboot'])
    assert _modes(lab) == ['Disabled']


def test_without_the_driver_stand_ins_persistence_stays_as_before(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    assert _modes(lab) == ['Enabled']


def test_hold_refuses_options_that_are_not_persistenceds():
    assert daemons.parse_hold_args(['nvidia-persistenced', '--no-persistence-mode', '--persistence-mode']) == (
        'nvidia-persistenced', None, 'Enabled')
    assert daemons.parse_hold_args(['nvidia-persistenced', '-u', 'x', '-V', '--no-persistence-mode']) == (
        'nvidia-persistenced', None, 'Disabled')
    assert daemons.parse_hold_args(['nv-hostengine', '--no-persistence-mode']) is None
    assert daemons.parse_hold_args(['nvidia-persistenced', '--bogus']) is None
    assert daemons.parse_hold_args(['nv-hostengine', '--root', '/x']) == ('nv-hostengine', '/x', None)


def _fabric(lab):
    out = lab.ok('gpu01', ['nvidia-smi', '--query-gpu=index,fabric.state,fabric.status', '--format=csv,noheader'])
    return sorted(set(tuple(line.split(', ')[1:]) for line in out.splitlines()))


def test_after_a_reboot_the_fabric_is_in_progress_until_the_fabric_manager_started(lab):
    """Fails on main: there the fabric state was the profile's (Completed) whatever ran."""
    lab.install_fabric_manager('gpu01')
    lab.ok('gpu01', ['hwsim', 'boot'])
    assert _fabric(lab) == [('In Progress', 'N/A')]
    status, err = lab.start_fabric_manager('gpu01', VERSION)
    assert status == 0, err
    assert _fabric(lab) == [('Completed', 'Success')]
    lab.ok('gpu01', ['hwsim', 'reboot'])
    states = fabric_states(parse_nvidia_smi_q(lab.ok('gpu01', ['nvidia-smi', '-q'])))
    assert len(fabric_unregistered(states)) == 8 and set(fabric_unregistered(states).values()) == {'In Progress'}
    assert lab.start_fabric_manager('gpu01', VERSION)[0] == 0
    assert fabric_unregistered(fabric_states(parse_nvidia_smi_q(lab.ok('gpu01', ['nvidia-smi', '-q'])))) == {}


def test_a_fabric_manager_of_another_version_registers_nothing(lab):
    lab.install_fabric_manager('gpu01')
    lab.ok('gpu01', ['hwsim', 'boot'])
    status, err = lab.start_fabric_manager('gpu01', '580.82.07')
    assert status == 1 and 'does not match the driver 580.95.05' in err
    assert _fabric(lab) == [('In Progress', 'N/A')]


def test_without_a_fabric_manager_installed_the_profiles_state_holds(lab):
    lab.ok('gpu01', ['hwsim', 'reboot'])
    assert _fabric(lab) == [('Completed', 'Success')]
    lab.ok('gpu01', ['hwsim', 'fault', 'fabric-state', 'not-started'])
    assert _fabric(lab)[0][0] != 'Completed'


def test_an_hgx_b200_fabric_needs_nvlsm_and_ib_umad_beside_the_fabric_manager(tmp_path):
    """NVLink 5: the fabric manager alone leaves the GPUs In Progress (NVIDIA/gpu-operator #2781); with NVLSM's
    package installed and ib_umad loaded it registers them."""
    lab = make_lab(tmp_path, 'hgx-b200-ib', compute=1)
    lab.install_driver('gpu01', VERSION)
    lab.install_fabric_manager('gpu01')
    lab.ok('gpu01', ['hwsim', 'boot'])
    assert lab.start_fabric_manager('gpu01', VERSION)[0] == 0
    assert _fabric(lab) == [('In Progress', 'N/A')]
    record = os.path.join(lab.root('gpu01'), 'var', 'lib', 'dpkg', 'info', 'nvlsm.list')
    os.makedirs(os.path.dirname(record), exist_ok=True)
    with open(record, 'w', encoding='utf-8') as handle:
        handle.write('/usr/share/doc/nvlsm\n')
    assert _fabric(lab) == [('Completed', 'Success')]  # the boot loaded ib_umad with the RDMA modules
    lab.ok('gpu01', ['modprobe', '-r', 'ib_umad'])
    assert _fabric(lab) == [('In Progress', 'N/A')]
