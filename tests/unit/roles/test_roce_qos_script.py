# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/roce/files/aicluster-roce-qos, the script aicluster-roce-qos.service runs at every boot and driver start, run
as the unit runs it (a subprocess, python3, the settings file the role renders) against hwsim's mlnx_qos and dcb
stand-ins and two sysfs/configfs trees: hwsim's own (after `hwsim boot`, with its driver restarts) and a fake tree as
MLNX_OFED leaves a port on older firmware (ECN off, no RDMA-CM directory yet). It applies the settings, changes nothing
when they are right (no write, no mlnx_qos/dcb change, not even on the port a module run already set), puts them back
after a driver restart, leaves an absent port for later, and refuses a bad settings file. The four module_utils files
the role installs with it are all it imports."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import shutil
import subprocess
import sys

import pytest
from _module_runner import run_main
from _paths import REPO
from _role_templates import render_template

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))

# pylint: disable=wrong-import-position
from ansible_collections.aicluster.infra.plugins.module_utils import roce  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.mlnx_qos import parse_mlnx_qos  # noqa: E402
from ansible_collections.aicluster.infra.plugins.modules import rdma_qos  # noqa: E402
from hwsim import roce as hwsim_roce, sysfs  # noqa: E402
from hwsim.testing import HWSIM_ROOT, make_lab  # noqa: E402

SCRIPT = os.path.join(REPO, 'roles', 'roce', 'files', 'aicluster-roce-qos')
ROLE = os.path.join(REPO, 'roles', 'roce')
COLLECTIONS = os.path.join(REPO, '.collections')
RAILS = ['mlx5_0', 'mlx5_3', 'mlx5_4', 'mlx5_5', 'mlx5_6', 'mlx5_7', 'mlx5_8', 'mlx5_9']
NETDEVS = ['enp24s0np0', 'enp64s0np0', 'enp79s0np0', 'enp94s0np0', 'enp154s0np0', 'enp192s0np0', 'enp206s0np0',
           'enp220s0np0']
PFC3 = [0, 0, 0, 1, 0, 0, 0, 0]


def _ib_info():
    """gpu01's ib_info, as hwsim's ibstat and ibdev2netdev give it (the parts roce_plan reads)."""
    import yaml
    with open(os.path.join(REPO, 'lab', 'hwsim', 'profiles', 'hgx-h100-roce.yml'), encoding='utf-8') as handle:
        profile = yaml.safe_load(handle)
    return {'hcas': [{'name': hca['name'], 'ca_type': hca['ca_type'], 'board_id': hca['board_id'],
                      'ports': [{'port': port['port'], 'link_layer': port['link_layer'], 'netdev': port['netdev']}
                                for port in hca['ports']]} for hca in profile['hcas']]}


def snapshot(root):
    found = {}
    for folder, dirs, files in os.walk(str(root)):
        for name in dirs:
            found[os.path.join(folder, name)] = None
        for name in files:
            path = os.path.join(folder, name)
            found[path] = None
            if not os.path.islink(path):
                with open(path, 'rb') as handle:
                    found[path] = handle.read()
    return found


class Node(object):
    """gpu01 of an hgx-h100-roce lab after `hwsim boot`: hwsim's tree at the driver's defaults, the stand-ins linked
    as the lab links them, and the settings file rendered by the role's template from the role's plan."""

    def __init__(self, tmp_path, stack='doca', rails=None, sysfs_root=None, configfs_root=None):
        self.tmp = tmp_path
        self.lab = make_lab(tmp_path, 'hgx-h100-roce', compute=1)
        self.lab.ok('gpu01', ['hwsim', 'boot'])
        self.root = self.lab.root('gpu01')
        self.bin = tmp_path / 'bin'
        self.bin.mkdir()
        for tool in ('mlnx_qos', 'dcb'):
            os.symlink(os.path.join(HWSIM_ROOT, 'bin', 'hwsim'), str(self.bin / tool))
        self.sys = sysfs_root or os.path.join(self.root, sysfs.SYS_DIR)
        self.config = configfs_root or os.path.join(self.root, hwsim_roce.CONFIG_DIR)
        tool_path = {'mlnx_qos_path': str(self.bin / 'mlnx_qos')} if stack != 'inbox' else {'dcb_path': str(self.bin / 'dcb')}
        self.plan = roce.roce_plan(dict({'rails': rails or RAILS, 'stack': stack, 'sysfs_root': self.sys,
                                         'configfs_root': self.config}, **tool_path), _ib_info())
        self.settings = tmp_path / 'roce-qos.json'
        self.settings.write_text(render_template(
            os.path.join(ROLE, 'templates', 'etc', 'aicluster', 'roce-qos.json.j2'),
            {'__roce_plan': self.plan, '__roce_script_path': '/usr/local/sbin/aicluster-roce-qos'}))

    def run(self, *args, lib=COLLECTIONS):
        """The script as the unit runs it; (exit status, stdout lines, stderr)."""
        env = dict(os.environ, PATH='%s:%s' % (self.bin, os.environ.get('PATH', '')), **self.lab.env('gpu01'))
        done = subprocess.run([SCRIPT, '--config', str(self.settings), '--lib', lib] + list(args), env=env,
                              capture_output=True, text=True, timeout=120, check=False)
        return done.returncode, done.stdout.splitlines(), done.stderr

    def qos(self, netdev):
        return parse_mlnx_qos(self.lab.ok('gpu01', ['mlnx_qos', '-i', netdev]))

    def state(self):
        """Everything the script could change: the trees and hwsim's DCB state (the mlnx_qos/dcb settings)."""
        return snapshot(self.sys), snapshot(self.config), snapshot(self.lab.state_dir)

    def read(self, *parts):
        with open(os.path.join(*parts)) as handle:
            return handle.read()

    def assert_lossless(self, netdev='enp64s0np0', rdma='mlx5_3'):
        qos = self.qos(netdev)
        assert (qos['trust'], qos['pfc_enabled']) == ('dscp', PFC3)
        assert 26 in qos['dscp2prio'][3] and 48 in qos['dscp2prio'][6]
        assert self.read(self.config, 'rdma_cm', rdma, 'ports', '1', 'default_roce_tos') == '106\n'
        assert self.read(self.sys, 'class', 'net', netdev, 'ecn', 'roce_np', 'enable', '3') == '1\n'


@pytest.fixture
def node(tmp_path):
    """Two rails (each stand-in run starts hwsim: a quarter of a second)."""
    return Node(tmp_path, rails=['mlx5_3', 'mlx5_4'])


def test_apply_then_reapply_changes_nothing(tmp_path):
    node = Node(tmp_path)
    status, lines, err = node.run()
    assert status == 0, (lines, err)
    assert len(lines) == 8 and all(' changed trust: pcp -> dscp, pfc: none -> 3' in line for line in lines), lines
    assert lines[1].startswith('enp64s0np0 (mlx5_3, mlnx_qos): changed ')
    assert lines[1].endswith('roce_tos: 0 -> 106, traffic_class: unset -> 106')
    for netdev, rdma in zip(NETDEVS, RAILS):
        node.assert_lossless(netdev, rdma)
    before = node.state()
    status, lines, err = node.run()
    assert status == 0 and lines == ['%s (%s, mlnx_qos): unchanged' % pair for pair in zip(NETDEVS, RAILS)], (lines, err)
    assert node.state() == before
    # the storage NIC (mlx5_1) is not in the settings: left at the driver's defaults
    assert node.qos('enp170s0f0np0')['trust'] == 'pcp'


def test_a_driver_restart_resets_the_ports_and_the_script_puts_them_back(node):
    node.run()
    node.lab.ok('gpu01', ['hwsim', 'fault', 'qos-reset'])       # mlx5_core starts again: everything at its defaults
    assert node.qos('enp64s0np0')['trust'] == 'pcp'
    status, lines, _err = node.run()
    assert status == 0 and all(' changed trust: pcp -> dscp' in line for line in lines)
    node.assert_lossless()
    # a port someone changed by hand (PFC off on one netdev) is the only one changed
    node.lab.ok('gpu01', ['hwsim', 'fault', 'pfc-off', 'enp79s0np0'])
    status, lines, _err = node.run()
    assert status == 0 and lines == ['enp64s0np0 (mlx5_3, mlnx_qos): unchanged',
                                     'enp79s0np0 (mlx5_4, mlnx_qos): changed pfc: none -> 3']


def test_check_reports_and_changes_nothing(node):
    before = node.state()
    status, lines, _err = node.run('--check', '--netdev', 'enp64s0np0')
    assert status == 0 and lines == ['enp64s0np0 (mlx5_3, mlnx_qos): would change trust: pcp -> dscp, pfc: none -> 3, '
                                     'dscp_map[26]: unset -> 3, dscp_map[48]: unset -> 6, roce_tos: 0 -> 106, '
                                     'traffic_class: unset -> 106']
    assert node.state() == before


def test_after_the_module_the_script_changes_nothing(node):
    # the role's rdma_qos run and the boot's script: the same settings through the same code
    params = dict(node.plan['qos'], netdev='enp64s0np0', port=1)
    result, _box, _exited = run_main(rdma_qos, params,
                                     {'mlnx_qos': lambda argv: node.lab.run('gpu01', ['mlnx_qos'] + argv[1:])})
    assert result['changed'] is True and result.get('failed') is not True, result
    status, lines, _err = node.run('--netdev', 'enp64s0np0')
    assert status == 0 and lines == ['enp64s0np0 (mlx5_3, mlnx_qos): unchanged']


def test_inbox_stack_through_dcb(tmp_path):
    node = Node(tmp_path, stack='inbox', rails=['mlx5_3'])
    assert node.plan['qos']['tool'] == 'dcb'
    status, lines, err = node.run()
    assert status == 0 and lines[0].startswith('enp64s0np0 (mlx5_3, dcb): changed trust: pcp -> dscp'), (lines, err)
    node.assert_lossless()
    before = node.state()
    status, lines, _err = node.run()
    assert status == 0 and all(line.endswith(': unchanged') for line in lines) and node.state() == before


def test_a_fake_tree_as_older_firmware_leaves_it_ecn_off_and_no_rdma_cm_directory(tmp_path):
    # mstflint's ConnectX-4-era defaults: ECN off on every priority, CNPs on DSCP 0 priority 7; rdma_cm loaded but
    # nobody has made the device's configfs directory yet (the script makes it, as the module does)
    fake = tmp_path / 'fake'
    net = fake / 'sys' / 'class' / 'net' / 'enp64s0np0'
    (net / 'device' / 'infiniband' / 'mlx5_3').mkdir(parents=True)
    for role in ('roce_np', 'roce_rp'):
        (net / 'ecn' / role / 'enable').mkdir(parents=True)
        for prio in range(8):
            (net / 'ecn' / role / 'enable' / str(prio)).write_text('0\n')
    (net / 'ecn' / 'roce_np' / 'cnp_dscp').write_text('0\n')
    (net / 'ecn' / 'roce_np' / 'cnp_802p_prio').write_text('7\n')
    (fake / 'config' / 'rdma_cm').mkdir(parents=True)
    node = Node(tmp_path, rails=['mlx5_3'], sysfs_root=str(fake / 'sys'), configfs_root=str(fake / 'config'))
    status, lines, err = node.run()
    assert status == 0, (lines, err)
    assert lines == ['enp64s0np0 (mlx5_3, mlnx_qos): changed trust: pcp -> dscp, pfc: none -> 3, dscp_map[26]: '
                     'unset -> 3, dscp_map[48]: unset -> 6, ecn_np: none -> 3, ecn_rp: none -> 3, cnp_dscp: 0 -> 48, '
                     'cnp_prio: 7 -> 6']
    # the RDMA-CM directory was made (a plain directory gets no ports/ tree: that is configfs's), nothing else
    assert os.path.isdir(str(fake / 'config' / 'rdma_cm' / 'mlx5_3'))
    assert 'roce_tos on enp64s0np0: not changed, the RDMA-CM configfs files are absent' in err
    assert (net / 'ecn' / 'roce_np' / 'enable' / '3').read_text() == '1\n'
    assert (net / 'ecn' / 'roce_np' / 'cnp_802p_prio').read_text() == '6\n'
    before = node.state()
    status, lines, _err = node.run()
    assert status == 0 and lines == ['enp64s0np0 (mlx5_3, mlnx_qos): unchanged'] and node.state() == before


def test_an_absent_port_is_left_for_the_udev_rule_and_a_failing_one_fails_the_unit(node):
    data = json.loads(node.settings.read_text())
    data['ports'].append({'netdev': 'enp1s0np0', 'port': 1})
    node.settings.write_text(json.dumps(data))
    status, lines, _err = node.run()
    assert status == 0 and lines[-1] == 'enp1s0np0: absent, not applied (applied when it appears)'
    data['qos']['mlnx_qos_path'] = str(node.tmp / 'nothere')
    node.settings.write_text(json.dumps(data))
    status, lines, _err = node.run('--netdev', 'enp64s0np0')
    assert status == 1 and lines == ['enp64s0np0: nothing changed: mlnx_qos_path: %s is not an executable file'
                                     % (node.tmp / 'nothere')]


@pytest.mark.parametrize('content, message', [
    ('{"version": 2, "ports": [], "qos": {}}', 'not a version 1 RoCE settings file'),
    ('{"version": 1, "ports": [{"netdev": "x"}], "qos": {"pfc": [3]}}', 'qos has unknown keys: pfc'),
    ('not json', 'Expecting value'),
], ids=['version', 'unknown-key', 'not-json'])
def test_a_bad_settings_file_is_refused(node, content, message):
    node.settings.write_text(content)
    status, lines, err = node.run()
    assert status == 2 and lines == [] and message in err


def test_usage_errors(node, tmp_path):
    status, _lines, err = node.run('--netdev', 'eth9')
    assert status == 2 and '--netdev eth9: not in' in err
    status, _lines, err = node.run(lib=str(tmp_path / 'nothing'))
    assert status == 2 and 'the collection\'s module_utils are not under' in err


def test_the_installed_module_utils_are_all_it_imports(tmp_path):
    """The role copies exactly vars/main.yml's __roce_module_utils: with only those files the script runs."""
    import yaml
    with open(os.path.join(ROLE, 'vars', 'main.yml'), encoding='utf-8') as handle:
        names = yaml.safe_load(handle)['__roce_module_utils']
    lib = tmp_path / 'lib'
    target = lib / 'ansible_collections' / 'aicluster' / 'infra' / 'plugins' / 'module_utils'
    target.mkdir(parents=True)
    for name in names:
        shutil.copy(os.path.join(REPO, 'plugins', 'module_utils', name), str(target / name))
    probe = ('import sys; sys.path.insert(0, %r); '
             'from ansible_collections.aicluster.infra.plugins.module_utils import rdma_qos_host; '
             'print(sorted(m for m in sys.modules if m.startswith("ansible")))' % str(lib))
    # -I: no user site, no PYTHONPATH, so nothing but the standard library and the copies can be found
    done = subprocess.run([sys.executable, '-I', '-c', probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == str(sorted(
        ['ansible_collections', 'ansible_collections.aicluster', 'ansible_collections.aicluster.infra',
         'ansible_collections.aicluster.infra.plugins', 'ansible_collections.aicluster.infra.plugins.module_utils']
        + ['ansible_collections.aicluster.infra.plugins.module_utils.' + name[:-3] for name in names]))
