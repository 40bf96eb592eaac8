# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/dkms.py: `dkms status` in both real formats, the next boot's kernel, the modules without a build.

The status lines are real captures quoted in public issues (each case names its source); the DOCA lines are the
same format with DOCA-OFED 24.10's mlnx-ofed-kernel version (roles/bom/defaults/main.yml)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.aicluster.infra.plugins.module_utils.dkms import (
    describe_missing, dkms_report, kernel_hygiene_problems, missing_builds, next_boot_kernel, parse_dkms_status)

OFED = '24.10.OFED.24.10.1.1.4.1'

STATUS_CASES = [
    # dkms 3 (Ubuntu 24.04's), two kernels, with dkms's own error line first: pop-os/system76-driver #336
    ('dkms3-ubuntu-two-kernels',
     'Error! Could not locate dkms.conf file.\n'
     'File: /var/lib/dkms/system76/1.0.18~1743109511~24.04~8b1da53/source/dkms.conf does not exist.\n'
     'nvidia/570.172.08, 6.12.10-76061203-generic, x86_64: installed\n'
     'nvidia/570.172.08, 6.16.3-76061603-generic, x86_64: installed\n',
     [('nvidia', '570.172.08', '6.12.10-76061203-generic', 'x86_64', 'installed'),
      ('nvidia', '570.172.08', '6.16.3-76061603-generic', 'x86_64', 'installed')], 2),
    # dkms 3.0.10: morrownr/rtl8852bu #7
    ('dkms3.0.10-two-modules',
     'nvidia/535.86.05, 6.5.0-060500rc5-generic, x86_64: installed\n'
     'rtl8852bu/1.19.3, 6.5.0-060500rc5-generic, x86_64: installed\n',
     [('nvidia', '535.86.05', '6.5.0-060500rc5-generic', 'x86_64', 'installed'),
      ('rtl8852bu', '1.19.3', '6.5.0-060500rc5-generic', 'x86_64', 'installed')], 0),
    # dkms 2 (before 3.0): linux-surface/linux-surface #573; realsenseai/librealsense #4763
    ('dkms2-comma-format',
     'nvidia, 460.91.03, 5.11.0-36-generic, x86_64: installed\n'
     'librealsense2-dkms, 1.3.6, 4.18.0-15-generic, x86_64: installed\n',
     [('nvidia', '460.91.03', '5.11.0-36-generic', 'x86_64', 'installed'),
      ('librealsense2-dkms', '1.3.6', '4.18.0-15-generic', 'x86_64', 'installed')], 0),
    # an HGX node with DOCA-OFED and the driver; a source only added; a note after the status
    ('dkms3-doca-added-and-note',
     'mlnx-ofed-kernel/%s, 6.1.0-28-amd64, x86_64: installed\n'
     'nvidia/580.95.05, 6.1.0-28-amd64, x86_64: installed (WARNING! Diff between built and installed module!)\n'
     'knem/1.1.4.90mlnx3: added\n'
     'xpmem, 2.7.4: added\n' % OFED,
     [('mlnx-ofed-kernel', OFED, '6.1.0-28-amd64', 'x86_64', 'installed'),
      ('nvidia', '580.95.05', '6.1.0-28-amd64', 'x86_64', 'installed'),
      ('knem', '1.1.4.90mlnx3', '', '', 'added'), ('xpmem', '2.7.4', '', '', 'added')], 0),
    ('empty', '', [], 0),
]


@pytest.mark.parametrize('text,expected,errors', [case[1:] for case in STATUS_CASES], ids=[case[0] for case in STATUS_CASES])
def test_parse_dkms_status(text, expected, errors):
    parsed = parse_dkms_status(text)
    assert [(b['module'], b['version'], b['kernel'], b['arch'], b['status']) for b in parsed['builds']] == expected
    assert len(parsed['errors']) == errors


def test_the_status_note_is_kept():
    parsed = parse_dkms_status('nvidia/580.95.05, 6.1.0-28-amd64, x86_64: installed (original_module exists)\n')
    assert parsed['builds'][0]['note'] == '(original_module exists)'


@pytest.mark.parametrize('default_grub,grubenv,expected', [
    ('', '', ('6.1.0-30-amd64', 'the newest /boot/vmlinuz-*')),
    ('GRUB_DEFAULT=0\n', 'saved_entry=gnulinux-6.1.0-18-amd64-advanced-0b6f\n', ('6.1.0-30-amd64', 'the newest /boot/vmlinuz-*')),
    ('GRUB_DEFAULT=saved\n', '# GRUB Environment Block\nsaved_entry=gnulinux-advanced-0b6f>gnulinux-6.1.0-18-amd64-advanced-0b6f\n',
     ('6.1.0-18-amd64', 'GRUB saved_entry (GRUB_DEFAULT=saved)')),
    ('GRUB_DEFAULT="saved"\n', 'saved_entry=Advanced options for Debian GNU/Linux>Debian GNU/Linux, with Linux 6.1.0-28-amd64\n'
     'next_entry=Advanced options for Debian GNU/Linux>Debian GNU/Linux, with Linux 6.1.0-18-amd64\n',
     ('6.1.0-18-amd64', 'GRUB next_entry (GRUB_DEFAULT=saved)')),
    # a saved entry naming a kernel that is gone: GRUB falls back to the first entry, the newest
    ('GRUB_DEFAULT=saved\n', 'saved_entry=gnulinux-5.10.0-9-amd64-advanced-0b6f\n', ('6.1.0-30-amd64', 'the newest /boot/vmlinuz-*')),
], ids=['no-grub', 'grub-default-0', 'saved-id', 'next-entry-title', 'saved-kernel-removed'])
def test_next_boot_kernel(default_grub, grubenv, expected):
    installed = ['6.1.0-18-amd64', '6.1.0-30-amd64', '6.1.0-28-amd64']
    boot = next_boot_kernel('6.1.0-28-amd64', installed, default_grub, grubenv)
    assert (boot['kernel'], boot['source']) == expected


def test_a_container_boots_its_running_kernel():
    assert next_boot_kernel('6.8.0-45-generic', [])['kernel'] == '6.8.0-45-generic'


def test_a_newer_kernel_with_the_driver_but_not_doca():
    """The nvidia postinst built for both kernels; DOCA's mlnx-ofed-kernel only for the running one."""
    text = ('mlnx-ofed-kernel/%s, 6.1.0-28-amd64, x86_64: installed\n'
            'nvidia/580.95.05, 6.1.0-28-amd64, x86_64: installed\n'
            'nvidia/580.95.05, 6.1.0-30-amd64, x86_64: installed\n' % OFED)
    report = dkms_report(text, '6.1.0-28-amd64', ['6.1.0-28-amd64', '6.1.0-30-amd64'])
    assert report['next_boot']['kernel'] == '6.1.0-30-amd64'
    assert report['missing'] == [{'module': 'mlnx-ofed-kernel', 'version': OFED, 'status': '',
                                  'built_for': ['6.1.0-28-amd64']}]
    assert report['message'].startswith('the next boot uses kernel 6.1.0-30-amd64 (the newest /boot/vmlinuz-*), and '
                                        'DKMS has no installed build of mlnx-ofed-kernel for it: ')
    assert 'dkms autoinstall -k 6.1.0-30-amd64' in report['message']
    # the same node booting its running kernel (GRUB_DEFAULT=saved on it) has everything
    saved = dkms_report(text, '6.1.0-28-amd64', ['6.1.0-28-amd64', '6.1.0-30-amd64'], 'GRUB_DEFAULT=saved\n',
                        'saved_entry=gnulinux-6.1.0-28-amd64-advanced-x\n')
    assert saved['missing'] == [] and saved['message'] == ''


def test_missing_builds_takes_each_modules_newest_version_and_only_installed():
    builds = parse_dkms_status(
        'nvidia/580.82.07, 6.1.0-30-amd64, x86_64: installed\n'
        'nvidia/580.95.05, 6.1.0-28-amd64, x86_64: installed\n'
        'nvidia/580.95.05, 6.1.0-30-amd64, x86_64: built\n'
        'knem/1.1.4.90mlnx3: added\n'
        'srp/24.10, 6.1.0-30-amd64, x86_64: installed-weak from 6.1.0-28-amd64\n'
        'zfs/2.1.11, 6.1.0-28-amd64, x86_64: installed\n')['builds']
    missing = missing_builds(builds, '6.1.0-30-amd64', ignore=['zfs'])
    assert [(m['module'], m['version'], m['status'], m['built_for']) for m in missing] == [
        ('knem', '1.1.4.90mlnx3', '', []), ('nvidia', '580.95.05', 'built', ['6.1.0-28-amd64'])]
    assert describe_missing(missing, '6.1.0-30-amd64') == [
        'knem/1.1.4.90mlnx3: built for no kernel',
        'nvidia/580.95.05: installed for 6.1.0-28-amd64 only (built for 6.1.0-30-amd64)']


def test_nothing_registered_is_nothing_missing():
    report = dkms_report('', '6.1.0-28-amd64', [])
    assert report['missing'] == [] and report['message'] == '' and report['builds'] == []


def test_kernel_hygiene_problems():
    good = {'initramfs_command': ['update-initramfs', '-u'], 'unattended_upgrades_blacklist': ['^linux-image-', '^.+-dkms$'],
            'dkms_ignore': ['zfs']}
    assert kernel_hygiene_problems(good) == []
    problems = kernel_hygiene_problems({'initramfs_command': [], 'unattended_upgrades_blacklist': ['say "x"', '(', ''],
                                        'dkms_ignore': ['nvidia/580.95.05']})
    assert len(problems) == 5
    assert problems[0].startswith('nvidia_driver_initramfs_command must be a non-empty list')
    assert 'not a one-line string without double quotes' in problems[1]
    assert 'is not a Python regular expression' in problems[2]
    assert problems[4].startswith("nvidia_driver_dkms_ignore: 'nvidia/580.95.05' is not a DKMS module name")
