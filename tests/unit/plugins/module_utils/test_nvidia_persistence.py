# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nvidia_driver role's persistence decisions (nvidia_driver.persistence): the drop-in's ExecStart from the
packaged unit as `systemctl cat` shows it, and the check that every GPU reports persistence mode Enabled."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.aicluster.infra.plugins.module_utils.nvidia_driver import exec_start, persistence, unit_files

# Ubuntu's packaged unit (canonical/nvidia-graphics-drivers, nvidia-compute-utils-flavour.nvidia-persistenced.service.in,
# with StopWhenUnneeded from PR #34), as `systemctl cat` prints it
UBUNTU = '''# /lib/systemd/system/nvidia-persistenced.service
[Unit]
Description=NVIDIA Persistence Daemon
Wants=syslog.target
StopWhenUnneeded=true

[Service]
Type=forking
ExecStart=/usr/bin/nvidia-persistenced --user nvidia-persistenced --no-persistence-mode --verbose
ExecStopPost=/bin/rm -rf /var/run/nvidia-persistenced
'''
DROPIN = '''
# /etc/systemd/system/nvidia-persistenced.service.d/aicluster-persistence.conf
# Ansible managed
[Service]
ExecStart=
ExecStart=/usr/bin/nvidia-persistenced --user nvidia-persistenced --verbose --persistence-mode
'''
# NVIDIA's sample unit (NVIDIA/nvidia-persistenced init/systemd/nvidia-persistenced.service.template, user filled in)
SAMPLE = '''# /lib/systemd/system/nvidia-persistenced.service
[Unit]
Description=NVIDIA Persistence Daemon
Wants=syslog.target

[Service]
Type=forking
ExecStart=/usr/bin/nvidia-persistenced --user nvidia-persistenced
ExecStopPost=/bin/rm -rf /var/run/nvidia-persistenced

[Install]
WantedBy=multi-user.target
'''
# the lab's stand-in with hwsim_persistenced_ubuntu (lab/hwsim/install.yml)
LAB = '''# /etc/systemd/system/nvidia-persistenced.service
# lab test equipment (lab/hwsim/install.yml): nvidia-persistenced holding the simulated GPUs
[Unit]
Description=nvidia-persistenced (aicluster lab stand-in)

[Service]
ExecStart=/opt/hwsim/bin/hwsim hold nvidia-persistenced --user nvidia-persistenced --no-persistence-mode --verbose
'''


@pytest.mark.parametrize('text, expected', [
    (UBUNTU, '/usr/bin/nvidia-persistenced --user nvidia-persistenced --verbose --persistence-mode'),
    (UBUNTU + DROPIN, '/usr/bin/nvidia-persistenced --user nvidia-persistenced --verbose --persistence-mode'),
    (SAMPLE, '/usr/bin/nvidia-persistenced --user nvidia-persistenced --persistence-mode'),
    (LAB, '/opt/hwsim/bin/hwsim hold nvidia-persistenced --user nvidia-persistenced --verbose --persistence-mode'),
    ('', ''),
    ('No files found for nvidia-persistenced.service.\n', ''),
], ids=['ubuntu', 'ubuntu-with-the-dropin', 'nvidia-sample', 'lab-ubuntu', 'empty', 'no-unit'])
def test_the_dropin_keeps_the_packaged_command_with_persistence_mode_on(text, expected):
    assert persistence({'unit': {'rc': 0, 'stdout': text}})['exec_start'] == expected


def test_the_packaged_unit_is_read_never_a_dropin():
    # a re-run reads the role's own drop-in too: the line it computes must not change (idempotence)
    result = persistence({'unit': UBUNTU + DROPIN})
    assert result['fragment'] == '/lib/systemd/system/nvidia-persistenced.service'
    assert result['packaged'] == '/usr/bin/nvidia-persistenced --user nvidia-persistenced --no-persistence-mode --verbose'
    assert [path for path, _lines in unit_files(UBUNTU + DROPIN)] == [
        '/lib/systemd/system/nvidia-persistenced.service',
        '/etc/systemd/system/nvidia-persistenced.service.d/aicluster-persistence.conf']


def test_exec_start_follows_systemds_rules():
    assert exec_start(['[Service]', 'ExecStart=/a --x \\', '  --y', 'ExecStopPost=/b']) == '/a --x --y'
    assert exec_start(['[Service]', 'ExecStart=/a', 'ExecStart=']) == ''
    assert exec_start(['[Unit]', 'ExecStart=/not-a-service-line']) == ''


def test_every_gpu_enabled_passes():
    result = persistence({'query': {'rc': 0, 'stdout': ''.join('%d, Enabled\n' % index for index in range(8))}})
    assert result['problems'] == [] and result['gpus']['7'] == 'Enabled' and len(result['gpus']) == 8


def test_a_disabled_gpu_is_named():
    stdout = ''.join('%d, %s\n' % (index, 'Disabled' if index in (2, 10) else 'Enabled') for index in range(12))
    problems = persistence({'query': {'rc': 0, 'stdout': stdout}})['problems']
    assert len(problems) == 1 and problems[0].startswith('persistence mode is not Enabled on GPU 2, 10 (Disabled)')
    assert '--no-persistence-mode' in problems[0]


def test_nvidia_smi_failing_is_a_problem_with_its_message():
    result = persistence({'query': {'rc': 18, 'stdout': 'Failed to initialize NVML: Driver/library version mismatch\n'}})
    assert result['problems'] == ['nvidia-smi --query-gpu=index,persistence_mode --format=csv,noheader failed (rc 18): '
                                  'Failed to initialize NVML: Driver/library version mismatch']
