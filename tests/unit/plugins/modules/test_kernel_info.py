# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kernel_info: the kernel images of a /boot against the running kernel."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.aicluster.infra.plugins.modules import kernel_info


def test_a_newer_image_than_the_running_kernel(run_module, tmp_path):
    running = os.uname()[2]
    (tmp_path / ('vmlinuz-' + running)).write_text('')
    (tmp_path / 'vmlinuz-999.1.0-1-amd64').write_text('')
    (tmp_path / 'config-999.1.0-1-amd64').write_text('')
    result, calls = run_module(kernel_info, {'boot_dir': str(tmp_path)}, {})
    assert calls == [] and result['changed'] is False
    assert result['running'] == running and result['newest'] == '999.1.0-1-amd64'
    assert result['running_is_newest'] is False and '999.1.0-1-amd64' in result['message']


def test_an_empty_boot_is_a_container(run_module, tmp_path):
    result, _calls = run_module(kernel_info, {'boot_dir': str(tmp_path)}, {})
    assert result['running_is_newest'] is True and result['installed'] == [] and result['message'] == ''
