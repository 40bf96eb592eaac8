# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""host_state_info: one run reads packages (one dpkg-query), services (one systemctl show) and files."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import getpass
import grp
import hashlib
import os

from ansible_collections.aicluster.infra.plugins.modules import host_state_info

DPKG = 'munge\tmunge\t0.5.15-2+deb12u1\tii \nslurmd\tslurmd\t22.05.8-4+deb12u3\tii \n'
SYSTEMCTL = ('Id=munge.service\nLoadState=loaded\nActiveState=active\nUnitFileState=enabled\n\n'
             'Id=slurmd.service\nLoadState=loaded\nActiveState=inactive\nUnitFileState=enabled\n')
FORMAT = r'--showformat=${Package}\t${binary:Package}\t${Version}\t${db:Status-Abbrev}\n'


def test_one_command_per_kind(run_module, tmp_path):
    key = tmp_path / 'munge.key'
    key.write_text('secret')
    os.chmod(str(key), 0o400)
    result, calls = run_module(host_state_info, dict(
        packages=['munge', 'slurmd=22.05.*', 'mariadb-server'], services=['munge', 'slurmd'],
        files=[str(key), str(tmp_path / 'missing')]),
        {'dpkg-query': (1, DPKG, 'dpkg-query: no packages found matching mariadb-server\n'), 'systemctl': (0, SYSTEMCTL, '')})
    assert calls == [
        ['/usr/bin/dpkg-query', '--show', FORMAT, 'munge', 'slurmd', 'mariadb-server'],
        ['/usr/bin/systemctl', 'show', '--property=Id,LoadState,ActiveState,UnitFileState', '--', 'munge', 'slurmd'],
    ]
    assert result['changed'] is False
    assert result['packages'] == {'munge': {'version': '0.5.15-2+deb12u1', 'status': 'ii'},
                                  'slurmd': {'version': '22.05.8-4+deb12u3', 'status': 'ii'},
                                  'mariadb-server': {'version': '', 'status': ''}}
    assert result['packages_missing'] == ['mariadb-server']
    assert result['services_to_start'] == ['slurmd']
    assert result['files'][str(key)] == {
        'exists': True, 'checksum': hashlib.sha1(b'secret').hexdigest(), 'owner': getpass.getuser(),
        'group': grp.getgrgid(os.getgid()).gr_name, 'mode': '0400'}
    assert result['files'][str(tmp_path / 'missing')] == {'exists': False, 'checksum': '', 'owner': '', 'group': '',
                                                          'mode': ''}
    assert 'secret' not in repr(result)


def test_nothing_asked_runs_nothing(run_module):
    result, calls = run_module(host_state_info, {}, {})
    assert calls == [] and result['packages_missing'] == [] and result['services_to_start'] == []
    assert 'packages' not in result and 'services' not in result and 'files' not in result


def test_check_mode_reads_the_same(run_module):
    result, calls = run_module(host_state_info, dict(services=['munge'], _ansible_check_mode=True),
                               {'systemctl': (0, SYSTEMCTL.split('\n\n', maxsplit=1)[0], '')})
    assert len(calls) == 1 and result['services_to_start'] == []


def test_dpkg_query_failing_fails_with_its_output(run_module):
    result, dummy = run_module(host_state_info, dict(packages=['munge']),
                               {'dpkg-query': (2, '', 'dpkg-query: error: database is locked\n')})
    assert result['failed'] is True and result['rc'] == 2 and 'locked' in result['stderr']
    assert result['cmd'][0] == '/usr/bin/dpkg-query'


def test_no_systemctl(run_module):
    result, dummy = run_module(host_state_info, dict(services=['munge']), {})
    assert result['failed'] is True and 'systemctl' in result['msg']


def test_contents_reads_small_text_files_whole_and_a_missing_one_as_none(run_module, tmp_path):
    marker = tmp_path / 'clustername'
    marker.write_bytes(b'cluster\n')
    result, calls = run_module(host_state_info, dict(contents=[str(marker), str(tmp_path / 'absent')]), {})
    assert calls == []
    assert result['contents'] == {str(marker): 'cluster\n', str(tmp_path / 'absent'): None}


def test_contents_refuses_a_large_file_or_a_directory(run_module, tmp_path):
    big = tmp_path / 'big'
    big.write_bytes(b'x' * (64 * 1024 + 1))
    result, _calls = run_module(host_state_info, dict(contents=[str(big)]), {})
    assert result['failed'] and result['msg'] == '%s: not a regular file of at most 65536 bytes' % big
    result, _calls = run_module(host_state_info, dict(contents=[str(tmp_path)]), {})
    assert result['failed'] and result['msg'] == '%s: not a regular file of at most 65536 bytes' % tmp_path
