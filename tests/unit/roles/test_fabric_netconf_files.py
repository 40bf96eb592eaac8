# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Role fabric_netconf's per-interface files (systemd-networkd, NetworkManager) written by ansible-playbook on this
machine into a temporary directory: one node_files run per host writes them all, a re-run changes nothing, a hand
edit is put back, and the files of an interface no longer planned are removed while other files stay.

The renderer is set to one no handler knows, so nothing reconfigures this machine's network."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import subprocess
import sys

import pytest

from _paths import REPO

from ansible_collections.aicluster.infra.plugins.module_utils import ipoib

INFO = {'hcas': [{'name': 'mlx5_%d' % n, 'ports': [{'port': 1, 'link_layer': 'InfiniBand', 'netdev': 'ib%d' % n}]}
                 for n in range(2)]}
SETTINGS = {'subnets': ['10.10.0.0/24', '10.11.0.0/24'], 'node_index': 2, 'fleet_size': 4,
            'partitions': [{'name': 'Default', 'pkey': '0x7fff', 'mtu': 4096}, {'name': 't', 'pkey': 1, 'mtu': 2048}],
            'pkeys': [{'pkey': '0x0001', 'subnets': ['10.20.0.0/24', '10.21.0.0/24']}]}
PLAY = """\
- name: fabric_netconf's files
  hosts: localhost
  gather_facts: false
  tasks:
    - name: The renderer's files
      ansible.builtin.include_role:
        name: aicluster.infra.fabric_netconf
        tasks_from: "{{ renderer }}"
      vars:
        fabric_netconf_name: ipoib
        fabric_netconf_kind: ipoib
        fabric_netconf_renderer: none-in-this-test
"""


def _interfaces(**overrides):
    return ipoib.ipoib_plan(dict(SETTINGS, **overrides), INFO)['interfaces']


def _run(tmp_path, renderer, interfaces, *args):
    play = tmp_path / 'play.yml'
    play.write_text(PLAY)
    extra = {'renderer': renderer, 'fabric_netconf_interfaces': interfaces, 'ansible_python_interpreter': sys.executable,
             '__fabric_netconf_networkd_dir': str(tmp_path / 'networkd'), '__fabric_netconf_nm_dir': str(tmp_path / 'nm')}
    env = dict(os.environ, ANSIBLE_NOCOLOR='1', ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.collections'),
               ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'), ANSIBLE_LOCALHOST_WARNING='0',
               ANSIBLE_INVENTORY_UNPARSED_WARNING='0', ANSIBLE_RETRY_FILES_ENABLED='0')
    env.pop('ANSIBLE_CALLBACKS_ENABLED', None)
    playbook = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    done = subprocess.run([playbook, '-i', 'localhost,', '-c', 'local', str(play), '-e', json.dumps(extra)] + list(args),
                          cwd=str(tmp_path), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=300, check=False)
    recap = dict((key, int(value)) for key, value in
                 re.findall(r'\b(ok|changed|failed)=(\d+)', done.stdout.rsplit('PLAY RECAP', 1)[-1]))
    assert done.returncode == 0, done.stdout[-3000:]
    return recap, done.stdout


def _files(folder):
    return dict((name, (folder / name).read_text()) for name in sorted(os.listdir(str(folder))))


@pytest.mark.parametrize('renderer,folder,names,mode', [
    ('networkd', 'networkd',
     ['60-aicluster-ipoib-ib0.8001.netdev', '60-aicluster-ipoib-ib0.8001.network', '60-aicluster-ipoib-ib0.network',
      '60-aicluster-ipoib-ib1.8001.netdev', '60-aicluster-ipoib-ib1.8001.network', '60-aicluster-ipoib-ib1.network'],
     0o644),
    ('networkmanager', 'nm',
     ['aicluster-ipoib-ib0.8001.nmconnection', 'aicluster-ipoib-ib0.nmconnection',
      'aicluster-ipoib-ib1.8001.nmconnection', 'aicluster-ipoib-ib1.nmconnection'],
     0o600),
])
def test_one_run_writes_every_file_keeps_them_and_removes_the_unplanned(tmp_path, renderer, folder, names, mode):
    target = tmp_path / folder
    target.mkdir()
    (target / '10-other.network').write_text('[Match]\nName=eth0\n')   # not the role's: left alone throughout
    interfaces = _interfaces()

    _recap, output = _run(tmp_path, renderer, interfaces, '--check', '--diff')
    assert sorted(os.listdir(str(target))) == ['10-other.network'], output   # check mode writes nothing

    recap, output = _run(tmp_path, renderer, interfaces)
    assert recap['changed'] == 1, output                                    # one module run for every file
    files = _files(target)
    assert sorted(files) == sorted(names + ['10-other.network'])
    assert all(os.stat(str(target / name)).st_mode & 0o777 == mode for name in names)
    assert 'ib0.8001' in files[names[0]] and files[names[0]].startswith('#\n# Ansible managed')

    recap, output = _run(tmp_path, renderer, interfaces)
    assert recap['changed'] == 0, output

    (target / names[-1]).write_text('edited by hand\n')
    recap, output = _run(tmp_path, renderer, interfaces)
    assert recap['changed'] == 1 and _files(target) == files, output

    # the P_Key children are no longer planned: their files go, the parents' and the foreign file stay
    recap, output = _run(tmp_path, renderer, _interfaces(pkeys=[]))
    assert recap['changed'] == 1, output
    left = sorted(os.listdir(str(target)))
    assert left == sorted([name for name in names if '.8001' not in name] + ['10-other.network']), left
