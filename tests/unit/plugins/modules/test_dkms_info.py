# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""dkms_info: dkms status against the next boot's kernel, read from a /boot and GRUB's settings."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.aicluster.infra.plugins.modules import dkms_info

OFED = '24.10.OFED.24.10.1.1.4.1'


def _boot(tmp_path, kernels):
    for kernel in kernels:
        (tmp_path / ('vmlinuz-' + kernel)).write_text('')
    return str(tmp_path)


def test_a_newer_kernel_without_doca_build(run_module, tmp_path):
    running = os.uname()[2]
    status = ('mlnx-ofed-kernel/%s, %s, x86_64: installed\nnvidia/580.95.05, %s, x86_64: installed\n'
              'nvidia/580.95.05, 999.1.0-1-amd64, x86_64: installed\n' % (OFED, running, running))
    args = {'boot_dir': _boot(tmp_path, [running, '999.1.0-1-amd64']), 'default_grub': str(tmp_path / 'none')}
    result, calls = run_module(dkms_info, args, {'dkms': (0, status, '')})
    assert calls == [['/usr/bin/dkms', 'status']] and result['changed'] is False and result['available'] is True
    assert result['next_boot']['kernel'] == '999.1.0-1-amd64' and result['running'] == running
    assert [entry['module'] for entry in result['missing']] == ['mlnx-ofed-kernel']
    assert 'dkms autoinstall -k 999.1.0-1-amd64' in result['message']
    ignored, _calls = run_module(dkms_info, dict(args, ignore=['mlnx-ofed-kernel']), {'dkms': (0, status, '')})
    assert ignored['missing'] == [] and ignored['message'] == ''


def test_grub_saved_entry_is_the_next_boot(run_module, tmp_path):
    running = os.uname()[2]
    (tmp_path / 'grub').mkdir()
    (tmp_path / 'grub' / 'grubenv').write_text('saved_entry=gnulinux-advanced-x>gnulinux-%s-advanced-x\n' % running)
    (tmp_path / 'default-grub').write_text('GRUB_DEFAULT=saved\n')
    status = 'nvidia/580.95.05, %s, x86_64: installed\n' % running
    args = {'boot_dir': _boot(tmp_path, [running, '999.1.0-1-amd64']), 'default_grub': str(tmp_path / 'default-grub')}
    result, _calls = run_module(dkms_info, args, {'dkms': (0, status, '')})
    assert result['next_boot'] == {'kernel': running, 'source': 'GRUB saved_entry (GRUB_DEFAULT=saved)'}
    assert result['missing'] == []


def test_without_dkms(run_module, tmp_path):
    result, calls = run_module(dkms_info, {'boot_dir': str(tmp_path)}, {})
    assert calls == [] and result['available'] is False and result['missing'] == []
    assert result['next_boot']['kernel'] == os.uname()[2]


def test_dkms_failing(run_module, tmp_path):
    result, _calls = run_module(dkms_info, {'boot_dir': str(tmp_path)}, {'dkms': (3, '', 'Error! broken')})
    assert result['failed'] is True and result['rc'] == 3 and result['cmd'] == ['/usr/bin/dkms', 'status']
    assert result['stderr'] == 'Error! broken'
