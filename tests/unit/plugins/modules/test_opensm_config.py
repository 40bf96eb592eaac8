# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""opensm_config: partitions.conf rendered, checked and written once; opensm.conf from the real OpenSM's defaults
(Debian's opensm 3.3.23, skipped where it is not installed) read back by the same binary, secrets masked."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import subprocess

import pytest

from ansible_collections.aicluster.infra.plugins.modules import opensm_config

OPENSM = '/usr/sbin/opensm'
needs_opensm = pytest.mark.skipif(not os.access(OPENSM, os.X_OK), reason='OpenSM is not installed (apt-get install opensm)')
DEFAULT = {'name': 'Default', 'pkey': '0x7fff', 'ipoib': True, 'mtu': 4096, 'members': [{'guid': 'ALL', 'membership': 'full'}]}
TENANT = {'name': 'tenant1', 'pkey': '0x0101', 'ipoib': True, 'mtu': 4096,
          'members': [{'guid': '0xa088c20300002001', 'membership': 'full'}]}
GUID = '0xa088c20300001001'


def real_opensm(argv):
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60,
                          env=dict(os.environ, LANG='C', LC_ALL='C'))
    return done.returncode, done.stdout, done.stderr


def test_partitions_written_once_then_unchanged(run_module, tmp_path):
    path = str(tmp_path / 'opensm' / 'partitions.conf')
    args = {'kind': 'partitions.conf', 'path': path, 'partitions': [DEFAULT, TENANT], 'header': ['managed'],
            'mode': '0644'}
    result, calls = run_module(opensm_config, args, {})
    assert result['changed'] is True and calls == [] and result['changes'] == ['partitions.conf is absent']
    text = open(path).read()
    assert text.startswith('# managed\n') and 'Default=0x7fff,ipoib,mtu=5:' in text and 'tenant1=0x0101,ipoib,mtu=5:' in text
    assert oct(os.stat(path).st_mode & 0o777) == '0o644'
    again, _calls = run_module(opensm_config, args, {})
    assert again['changed'] is False and again['changes'] == []


def test_partitions_hand_edit_named_and_check_mode_writes_nothing(run_module, tmp_path):
    path = tmp_path / 'partitions.conf'
    args = {'kind': 'partitions.conf', 'path': str(path), 'partitions': [DEFAULT, TENANT]}
    run_module(opensm_config, args, {})
    path.write_text(path.read_text().replace('0xa088c20300002001=full', '0xa088c20300003001=full'))
    edited = path.read_text()
    result, _calls = run_module(opensm_config, dict(args, _ansible_check_mode=True, _ansible_diff=True), {})
    assert result['changed'] is True and path.read_text() == edited
    assert any('members missing' in line and '0xa088c20300002001' in line for line in result['changes'])
    assert any('in partitions.conf only' in line and '0xa088c20300003001' in line for line in result['changes'])
    assert '0xa088c20300002001=full' in result['diff']['after']


def test_ufm_user_ext_written_once_then_unchanged_and_default_refused(run_module, tmp_path):
    path = tmp_path / 'conf' / 'partitions.conf.user_ext'
    args = {'kind': 'partitions.conf.user_ext', 'path': str(path), 'partitions': [TENANT], 'header': ['managed'],
            'mode': '0644'}
    check, _calls = run_module(opensm_config, dict(args, _ansible_check_mode=True), {})
    assert check['changed'] is True and check['changes'] == ['partitions.conf.user_ext is absent'] and not path.exists()
    result, calls = run_module(opensm_config, args, {})
    assert result['changed'] is True and calls == []
    assert path.read_text() == '# managed\ntenant1=0x0101,ipoib,mtu=5:\n  0xa088c20300002001=full;\n'
    again, _calls = run_module(opensm_config, args, {})
    assert again['changed'] is False and again['changes'] == []
    refused, _calls = run_module(opensm_config, dict(args, partitions=[DEFAULT, TENANT]), {})
    assert refused['failed'] is True and 'opensm_partitions[0].pkey: 0x7fff is the default partition' in refused['msg']
    assert path.read_text().startswith('# managed\ntenant1=')


def test_bad_partitions_refused_and_nothing_written(run_module, tmp_path):
    path = tmp_path / 'partitions.conf'
    bad = dict(TENANT, pkey='0x8001', mtu=4000)
    result, _calls = run_module(opensm_config, {'kind': 'partitions.conf', 'path': str(path), 'partitions': [DEFAULT, bad]}, {})
    assert result['failed'] is True and not path.exists()
    assert any('opensm_partitions[1].pkey' in line for line in result['problems'])
    assert any('opensm_partitions[1].mtu' in line for line in result['problems'])


def test_opensm_failing_is_reported(run_module, tmp_path):
    args = {'kind': 'opensm.conf', 'path': str(tmp_path / 'o.conf'), 'settings': {'guid': GUID}}
    result, calls = run_module(opensm_config, args, {'opensm': (1, '', 'cannot open')})
    assert result['failed'] is True and result['rc'] == 1 and result['stderr'] == 'cannot open'
    assert calls[0][:2] == [OPENSM, '--create-config'] and not (tmp_path / 'o.conf').exists()


@needs_opensm
def test_real_opensm_conf_written_read_back_and_masked(run_module, tmp_path):
    path = tmp_path / ('opensm-%s.conf' % GUID)
    settings = {'guid': GUID, 'sm_priority': 15, 'sweep_interval': 10, 'routing_engine': ['ftree', 'minhop'],
                'log_file': '/var/log/opensm-%s.log' % GUID, 'partition_config_file': '/etc/opensm/aicluster/partitions.conf',
                'log_max_size': None}
    args = {'kind': 'opensm.conf', 'path': str(path), 'settings': settings, 'secrets': {'sm_key': '0x1234', 'm_key': ''},
            'header': ['managed']}
    result, calls = run_module(opensm_config, args, {'opensm': real_opensm})
    assert result['changed'] is True, result
    assert [call[1] for call in calls] == ['--create-config', '-F']
    text = path.read_text()
    for line in ('guid %s' % GUID, 'sm_priority 15', 'routing_engine ftree,minhop', 'sm_key 0x0000000000001234'):
        assert '\n%s\n' % line in text
    assert oct(path.stat().st_mode & 0o777) == '0o600'
    again, _calls = run_module(opensm_config, args, {'opensm': real_opensm})
    assert again['changed'] is False and again['changes'] == []
    moved, _calls = run_module(opensm_config, dict(args, settings=dict(settings, sm_priority=14),
                                                   secrets={'sm_key': '0x99'}, _ansible_diff=True), {'opensm': real_opensm})
    assert moved['changed'] is True
    assert 'sm_priority: 15 -> 14' in moved['changes'] and 'sm_key: ******** -> ********' in moved['changes']
    assert '0x99' not in str(moved) and '1234' not in str(moved)


@needs_opensm
def test_real_opensm_refuses_an_option_the_build_lacks(run_module, tmp_path):
    path = tmp_path / 'o.conf'
    args = {'kind': 'opensm.conf', 'path': str(path), 'settings': {'guid': GUID, 'routing_engine': ['ar_updn']}}
    result, _calls = run_module(opensm_config, args, {'opensm': real_opensm})
    assert result['failed'] is True and not path.exists()
    assert any('opensm_routing_engine' in line and 'ar_updn' in line for line in result['problems'])
