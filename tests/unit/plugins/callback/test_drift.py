# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drift callback through ansible-playbook, as a user runs it: two local hosts, one drifted, in check mode."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import json
import os
import subprocess
import sys

import pytest

from _paths import REPO

PLAYBOOK = '''
- name: Configure
  hosts: all
  gather_facts: false
  tasks:
    - name: Install the site file
      ansible.builtin.copy:
        content: "wanted=1\\n"
        dest: "{{ root }}/site.conf"
        mode: "0644"
      notify: Reload the site
    - name: Install the database settings
      ansible.builtin.copy:
        content: "StorageHost=db\\nStoragePass=right-password\\n"
        dest: "{{ root }}/dbd.conf"
        mode: "0600"
    - name: Install the key
      ansible.builtin.copy:
        content: "the-cluster-key"
        dest: "{{ root }}/cluster.key"
        mode: "0400"
      no_log: true
    - name: Install the lines
      ansible.builtin.lineinfile:
        path: "{{ root }}/lines.conf"
        line: "{{ item }}"
        create: true
        mode: "0644"
      loop: [one, two]
  handlers:
    - name: Reload the site
      ansible.builtin.copy:
        content: "reloaded\\n"
        dest: "{{ root }}/reloaded"
        mode: "0644"
'''


def _write(path, text, mode=0o644):
    with open(path, 'w', encoding='utf-8') as handle:
        handle.write(text)
    os.chmod(path, mode)


@pytest.fixture
def fleet(tmp_path):
    """hosts a and b (local connection), both converged; then a's site.conf is edited and b's dbd.conf and key differ."""
    hosts = {}
    for name in ('a', 'b'):
        root = tmp_path / name
        root.mkdir()
        _write(str(root / 'site.conf'), 'wanted=1\n')
        _write(str(root / 'dbd.conf'), 'StorageHost=db\nStoragePass=right-password\n', 0o600)
        _write(str(root / 'cluster.key'), 'the-cluster-key', 0o400)
        _write(str(root / 'lines.conf'), 'one\ntwo\n')
        hosts[name] = str(root)
    _write(os.path.join(hosts['a'], 'site.conf'), 'wanted=2\n')
    _write(os.path.join(hosts['b'], 'dbd.conf'), 'StorageHost=db\nStoragePass=old-password\n', 0o600)
    os.chmod(os.path.join(hosts['b'], 'cluster.key'), 0o444)
    inventory = tmp_path / 'hosts.yml'
    inventory.write_text(json.dumps({'all': {'hosts': {
        name: {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable, 'root': root}
        for name, root in hosts.items()}}}))
    playbook = tmp_path / 'configure.yml'
    playbook.write_text(PLAYBOOK)
    return tmp_path, hosts


def _run(tmp_path, *args):
    env = dict(os.environ, ANSIBLE_CALLBACKS_ENABLED='aicluster.infra.drift', AICLUSTER_DRIFT_DIR=str(tmp_path / 'artifacts'),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.collections'), ANSIBLE_NOCOLOR='1', ANSIBLE_CONFIG=str(tmp_path / 'ansible.cfg'),
               ANSIBLE_LOCALHOST_WARNING='0', ANSIBLE_INVENTORY_UNPARSED_WARNING='0')
    (tmp_path / 'ansible.cfg').write_text('[defaults]\n')
    ansible_playbook = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    return subprocess.run([ansible_playbook, '-i', str(tmp_path / 'hosts.yml'), str(tmp_path / 'configure.yml')] + list(args),
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=300, check=False)


def test_check_run_reports_each_drift_with_secrets_masked(fleet):
    tmp_path, hosts = fleet
    before = {path: open(path, 'rb').read() for path in glob.glob(str(tmp_path / '*' / '*.conf'))}
    run = _run(tmp_path, '--check', '--diff')
    assert run.returncode == 0, run.stdout
    reports = glob.glob(str(tmp_path / 'artifacts' / 'drift-*' / 'drift.json'))
    assert len(reports) == 1, run.stdout
    with open(reports[0], encoding='utf-8') as handle:
        report = json.load(handle)
    assert report['summary'] == '2 hosts drifted of 2'
    assert report['run']['complete'] and report['run']['diff_mode']
    entries = {host: [(e['kind'], e['name']) for e in record['drift']] for host, record in report['hosts'].items()}
    assert entries == {'a': [('file', os.path.join(hosts['a'], 'site.conf'))],
                       'b': [('file', os.path.join(hosts['b'], 'dbd.conf')),
                             ('file', os.path.join(hosts['b'], 'cluster.key'))]}
    assert [e['task'] for e in report['hosts']['a']['would_also']] == ['Reload the site']
    assert report['hosts']['b']['would_also'] == []
    site = report['hosts']['a']['drift'][0]
    assert '-wanted=2\n+wanted=1\n' in site['diff'] and site['role'] == '' and site['task'] == 'Install the site file'
    dbd, key = report['hosts']['b']['drift']
    assert 'password' not in json.dumps(report).replace('StoragePass', '') and 'StoragePass=********' in dbd['diff']
    assert key['masked'] and key['diff'] == ''
    with open(reports[0].replace('.json', '.md'), encoding='utf-8') as handle:
        markdown = handle.read()
    assert '**2 hosts drifted of 2.**' in markdown and 'right-password' not in markdown
    assert 'DRIFT' in run.stdout and '2 hosts drifted of 2; report ' in run.stdout
    assert '  b: file %s; file %s' % (os.path.join(hosts['b'], 'dbd.conf'), os.path.join(hosts['b'], 'cluster.key')) in run.stdout
    # a check run changes nothing
    assert before == {path: open(path, 'rb').read() for path in before}


def test_a_plain_run_writes_no_report_and_corrects(fleet):
    tmp_path, hosts = fleet
    assert _run(tmp_path).returncode == 0
    assert not os.path.exists(str(tmp_path / 'artifacts'))
    run = _run(tmp_path, '--check', '--diff')
    report = json.load(open(glob.glob(str(tmp_path / 'artifacts' / 'drift-*' / 'drift.json'))[0], encoding='utf-8'))
    assert report['summary'] == '0 hosts drifted of 2', run.stdout
