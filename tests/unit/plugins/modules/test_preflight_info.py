# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""preflight_info: free space, swap, time synchronisation and name resolution in one run, on this machine."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import platform
import sys

from ansible_collections.aicluster.infra.plugins.module_utils.system import free_space_report, parse_proc_swaps
from ansible_collections.aicluster.infra.plugins.modules import preflight_info


def test_free_space_of_the_mount_holding_each_path(run_module, tmp_path):
    result, calls = run_module(preflight_info, dict(paths=['/', str(tmp_path / 'not' / 'yet')]), {})
    assert calls == [] and result['changed'] is False
    mounts = result['mounts']
    assert mounts[0]['mount'] == '/' and len(set(m['mount'] for m in mounts)) == len(mounts)
    stats = os.statvfs('/')
    assert abs(mounts[0]['size_available'] - stats.f_frsize * stats.f_bavail) < 2 ** 30
    # the filter the role uses takes the entries as mount_facts' mount_points
    report = free_space_report(mounts, {'/': 0, str(tmp_path / 'not' / 'yet'): 0})
    assert [entry['ok'] for entry in report] == [True, True]
    assert result['time_sync_services_active'] == [] and result['clock_synchronized'] is False


def test_os_facts_as_setup_names_them(run_module):
    result, dummy = run_module(preflight_info, {}, {})
    facts = result['ansible_facts']
    assert facts['ansible_kernel'] == platform.release() and facts['ansible_system'] == 'Linux'
    assert facts['ansible_python']['version_info'][:3] == list(sys.version_info[:3])
    for name in ('distribution', 'distribution_version', 'distribution_major_version', 'os_family', 'architecture'):
        assert facts['ansible_' + name], name


def test_time_synchronisation(run_module):
    def systemctl(argv):
        assert argv[1:] == ['is-active', '--', 'chrony', 'systemd-timesyncd']
        return 3, 'active\ninactive\n', ''
    result, calls = run_module(preflight_info, dict(time_sync_services=['chrony', 'systemd-timesyncd']),
                               {'systemctl': systemctl, 'timedatectl': (0, 'yes\n', '')})
    assert result['time_sync_services_active'] == ['chrony'] and result['clock_synchronized'] is True
    assert calls[1] == ['/usr/bin/timedatectl', 'show', '--property=NTPSynchronized', '--value']


def test_without_systemd_nothing_is_active(run_module):
    result, calls = run_module(preflight_info, dict(time_sync_services=['chrony']), {})
    assert calls == [] and result['time_sync_services_active'] == [] and result['clock_synchronized'] is False


def test_name_resolution(run_module):
    result, dummy = run_module(preflight_info, dict(resolve_names=['localhost', 'no-such-host.invalid']), {})
    assert result['unresolved'] == ['no-such-host.invalid'] and result['loopback'] == ['localhost']


def test_relative_path_fails(run_module):
    result, dummy = run_module(preflight_info, dict(paths=['var/lib']), {})
    assert result['failed'] is True and 'var/lib' in result['msg']


def test_proc_swaps():
    # /proc/swaps of a Debian 12 host with a swap partition and a swap file whose name has a space
    text = ('Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n'
            '/dev/dm-1                               partition\t999420\t\t0\t\t-2\n'
            '/swap\\040file                           file\t\t1048572\t\t0\t\t-3\n')
    assert parse_proc_swaps(text) == ['/dev/dm-1', '/swap file']
    assert parse_proc_swaps('Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n') == []
    assert parse_proc_swaps('') == []
