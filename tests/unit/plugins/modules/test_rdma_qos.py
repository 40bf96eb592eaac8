# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rdma_qos against hwsim's mlnx_qos and dcb stand-ins (lab/hwsim/hwsim/tools/mlnx_qos.py and dcb.py, one DCB state
per netdev in the lab's state directory, run in-process; mlnx_qos through a link named mlnx_qos to lab/hwsim/bin/hwsim
given as mlnx_qos_path) and a fake sysfs/configfs tree in tmp_path: check mode changes nothing, apply sets everything,
re-apply is a no-op, a partial state is completed, bad input and a netdev without DCB are refused. Against hwsim's own
tree (/run/hwsim/sys, /run/hwsim/config) and its driver restarts: tests/unit/lab/test_hwsim_roce.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys

import pytest

from _paths import REPO

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))

# pylint: disable=wrong-import-position
from ansible_collections.aicluster.infra.plugins.module_utils.mlnx_qos import parse_mlnx_qos  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.rdma_qos import parse_dcb_app, parse_dcb_pfc  # noqa: E402
from ansible_collections.aicluster.infra.plugins.modules import rdma_qos  # noqa: E402
from hwsim import state  # noqa: E402
from hwsim.testing import HWSIM_ROOT, make_lab  # noqa: E402

NETDEV = 'enp64s0np0'   # mlx5_3, rail 1 of hgx-h100-roce
RDMA = 'mlx5_3'
PFC3 = '0,0,0,1,0,0,0,0'


def make_tree(root, netdev=NETDEV, rdma=RDMA, ecn=True, cm='ports', traffic_class=''):
    """sysfs and configfs of one port as MLNX_OFED leaves it on firmware whose NVConfig has congestion control off
    (ROCE_CC_PRIO_MASK 0: ECN off, the CNP on DSCP 0 priority 7, mstflint's ConnectX-4-era mlxconfig defaults; current
    firmware enables it on every priority with DSCP 48 priority 6, as hwsim's tree has it: lab/hwsim/hwsim/roce.py),
    RDMA-CM ToS 0 in RoCE v2 mode, no global traffic class. ``cm``: 'ports' (the device directory made, with its
    ports tree), 'absent' (rdma_cm without the device directory), None (no rdma_cm)."""
    net = root / 'sys' / 'class' / 'net' / netdev
    (net / 'device' / 'infiniband' / rdma).mkdir(parents=True)
    if ecn:
        for role in ('roce_np', 'roce_rp'):
            enable = net / 'ecn' / role / 'enable'
            enable.mkdir(parents=True)
            for prio in range(8):
                (enable / str(prio)).write_text('0\n')
        (net / 'ecn' / 'roce_np' / 'cnp_dscp').write_text('0\n')
        (net / 'ecn' / 'roce_np' / 'cnp_802p_prio').write_text('7\n')
    if cm is not None:
        (root / 'config' / 'rdma_cm').mkdir(parents=True, exist_ok=True)
    if cm == 'ports':
        port = root / 'config' / 'rdma_cm' / rdma / 'ports' / '1'
        port.mkdir(parents=True)
        (port / 'default_roce_tos').write_text('0\n')
        (port / 'default_roce_mode').write_text('RoCE v2\n')
    if traffic_class is not None:
        tc = root / 'sys' / 'class' / 'infiniband' / rdma / 'tc' / '1'
        tc.mkdir(parents=True)
        (tc / 'traffic_class').write_text(traffic_class)
    return root


def snapshot(root):
    """Every file and directory under root with its text."""
    found = {}
    for folder, dirs, files in os.walk(str(root)):
        for name in dirs:
            found[os.path.join(folder, name)] = None
        for name in files:
            with open(os.path.join(folder, name)) as handle:
                found[os.path.join(folder, name)] = handle.read()
    return found


class Node(object):
    """gpu01 of an hgx-h100-roce lab: hwsim's mlnx_qos, and the fake sysfs/configfs tree."""

    def __init__(self, tmp_path, profile='hgx-h100-roce', **tree):
        self.lab = make_lab(tmp_path, profile, compute=1)
        self.root = make_tree(tmp_path / 'fs', **tree)
        bindir = tmp_path / 'bin'
        bindir.mkdir()
        self.mlnx_qos = str(bindir / 'mlnx_qos')
        os.symlink(os.path.join(HWSIM_ROOT, 'bin', 'hwsim'), self.mlnx_qos)

    def tool(self, argv):
        assert argv[0] == self.mlnx_qos
        return self.lab.run('gpu01', ['mlnx_qos'] + list(argv[1:]))

    def dcb(self, argv):
        """hwsim's dcb stand-in (lab/hwsim/hwsim/tools/dcb.py), sharing the netdev's DCB state with its mlnx_qos."""
        return self.lab.run('gpu01', ['dcb'] + list(argv[1:]))

    def dcb_state(self):
        """({dscp: [priorities]}, [priorities with PFC on]) as dcb -j shows them."""
        return (parse_dcb_app(self.lab.ok('gpu01', ['dcb', '-j', 'app', 'show', 'dev', NETDEV])),
                parse_dcb_pfc(self.lab.ok('gpu01', ['dcb', '-j', 'pfc', 'show', 'dev', NETDEV])))

    def args(self, **extra):
        return dict({'netdev': NETDEV, 'mlnx_qos_path': self.mlnx_qos, 'sysfs_root': str(self.root / 'sys'),
                     'configfs_root': str(self.root / 'config')}, **extra)

    def qos(self, *argv):
        return parse_mlnx_qos(self.lab.ok('gpu01', ['mlnx_qos', '-i', NETDEV] + list(argv)))

    def read(self, *parts):
        return (self.root.joinpath(*parts)).read_text()

    def ecn(self, role, prio):
        return self.read('sys', 'class', 'net', NETDEV, 'ecn', role, 'enable', str(prio))


@pytest.fixture
def node(tmp_path):
    return Node(tmp_path)


def test_check_mode_reads_and_changes_nothing(run_module, node):
    before = snapshot(node.root)
    result, calls = run_module(rdma_qos, node.args(_ansible_check_mode=True), {'mlnx_qos': node.tool})
    assert result['changed'] is True and result.get('failed') is not True
    assert calls == [[node.mlnx_qos, '-i', NETDEV]]
    assert result['changes'] == [
        'trust: pcp -> dscp', 'pfc: none -> 3', 'dscp_map[26]: unset -> 3', 'dscp_map[48]: unset -> 6',
        'ecn_np: none -> 3', 'ecn_rp: none -> 3', 'cnp_dscp: 0 -> 48', 'cnp_prio: 7 -> 6', 'roce_tos: 0 -> 106',
        'traffic_class: unset -> 106']
    assert result['current']['trust'] == 'pcp' and result['current']['traffic_class'] == -1
    assert result['rdma_device'] == RDMA and result['tool'] == 'mlnx_qos' and result['cmds'] == []
    assert 'trust: pcp\n' in result['diff']['before'] and 'trust: dscp\n' in result['diff']['after']
    assert snapshot(node.root) == before
    assert node.qos()['trust'] == 'pcp' and not os.path.exists(os.path.join(node.lab.state_dir, 'gpu01.json'))


def test_apply_sets_everything_then_reapply_is_a_no_op(run_module, node):
    result, calls = run_module(rdma_qos, node.args(_ansible_diff=True), {'mlnx_qos': node.tool})
    assert result['changed'] is True and len(result['changes']) == 10
    assert calls[1] == [node.mlnx_qos, '-i', NETDEV, '--trust', 'dscp', '--pfc', PFC3]
    # --trust dscp installs the default map (26 -> 3, 48 -> 6): no --dscp2prio run is needed
    assert not any('--dscp2prio' in call for call in calls)
    qos = node.qos()
    assert (qos['trust'], qos['pfc_enabled']) == ('dscp', [0, 0, 0, 1, 0, 0, 0, 0])
    assert 26 in qos['dscp2prio'][3] and 48 in qos['dscp2prio'][6]
    assert [node.ecn(role, prio) for role in ('roce_np', 'roce_rp') for prio in range(8)] == \
        ['1\n' if prio == 3 else '0\n' for _role in range(2) for prio in range(8)]
    assert node.read('sys', 'class', 'net', NETDEV, 'ecn', 'roce_np', 'cnp_dscp') == '48\n'
    assert node.read('sys', 'class', 'net', NETDEV, 'ecn', 'roce_np', 'cnp_802p_prio') == '6\n'
    assert node.read('config', 'rdma_cm', RDMA, 'ports', '1', 'default_roce_tos') == '106\n'
    assert node.read('config', 'rdma_cm', RDMA, 'ports', '1', 'default_roce_mode') == 'RoCE v2\n'
    assert node.read('sys', 'class', 'infiniband', RDMA, 'tc', '1', 'traffic_class') == '106\n'
    assert result['cmds'][0].endswith('mlnx_qos -i %s --trust dscp --pfc %s' % (NETDEV, PFC3))
    assert len(result['cmds']) == 1 + 2 + 2 + 1 + 1
    assert result['diff']['after'] == (
        'trust: dscp\npfc: 3\ndscp_map[26]: 3\ndscp_map[48]: 6\necn_np: 3\necn_rp: 3\ncnp_dscp: 48\ncnp_prio: 6\n'
        'roce_tos: 106\nroce_mode: RoCE v2\ntraffic_class: 106\n')
    state = snapshot(node.root)
    again, calls = run_module(rdma_qos, node.args(), {'mlnx_qos': node.tool})
    assert again['changed'] is False and again['changes'] == [] and again['cmds'] == []
    assert calls == [[node.mlnx_qos, '-i', NETDEV]]
    assert again['diff']['before'] == again['diff']['after'] == result['diff']['after']
    assert snapshot(node.root) == state


def test_partial_state_is_completed(run_module, tmp_path):
    # PFC and trust right (by hand), one ECN role on, the traffic class as the driver prints it after `echo 106`
    node = Node(tmp_path, traffic_class='Global tclass=106\n')
    node.qos('--trust', 'dscp', '--pfc', PFC3)
    ecn = node.root / 'sys' / 'class' / 'net' / NETDEV / 'ecn'
    (ecn / 'roce_rp' / 'enable' / '3').write_text('1\n')
    (ecn / 'roce_np' / 'enable' / '5').write_text('1\n')
    result, calls = run_module(rdma_qos, node.args(), {'mlnx_qos': node.tool})
    assert result['changed'] is True
    assert result['changes'] == ['ecn_np: 5 -> 3,5', 'cnp_dscp: 0 -> 48', 'cnp_prio: 7 -> 6', 'roce_tos: 0 -> 106']
    assert calls == [[node.mlnx_qos, '-i', NETDEV]] * 2   # read, read back: no mlnx_qos change
    assert node.ecn('roce_np', 3) == '1\n' and node.ecn('roce_np', 5) == '1\n'   # the other priority is left on
    assert node.read('sys', 'class', 'infiniband', RDMA, 'tc', '1', 'traffic_class') == 'Global tclass=106\n'


def test_a_moved_dscp_entry_is_set_back_alone(run_module, node):
    node.qos('--trust', 'dscp', '--pfc', PFC3)
    node.qos('--dscp2prio', 'set,26,0')
    run_module(rdma_qos, node.args(), {'mlnx_qos': node.tool})
    node.qos('--dscp2prio', 'set,26,0')
    result, calls = run_module(rdma_qos, node.args(), {'mlnx_qos': node.tool})
    assert result['changes'] == ['dscp_map[26]: 0 -> 3']
    assert calls[1] == [node.mlnx_qos, '-i', NETDEV, '--dscp2prio', 'set,26,3']
    assert 26 in node.qos()['dscp2prio'][3]


def test_bad_input_refused_one_line_per_parameter_nothing_changed(run_module, node):
    before = snapshot(node.root)
    args = node.args(pfc_priorities=[3, 9], ecn_priorities=[8], dscp_map={'64': 3, '26': 3}, cnp_dscp=64,
                     cnp_prio=7, roce_tos=300, traffic_class=256)
    result, calls = run_module(rdma_qos, args, {'mlnx_qos': node.tool})
    assert result['failed'] is True
    assert result['problems'] == [
        'pfc_priorities: 9 is not a priority (allowed: 0-7)',
        'ecn_priorities: 8 is not a priority (allowed: 0-7)',
        'dscp_map: 64 is not a DSCP (allowed: 0-63)',
        'cnp_dscp: 64 is not a DSCP (allowed: 0-63, or null to leave it)',
        'roce_tos: 300 is not a ToS (allowed: 0-255, or null to leave it)',
        'traffic_class: 256 is not a traffic class (allowed: 0-255, or null to leave it)']
    assert result['msg'].startswith('rdma_qos %s: nothing changed: pfc_priorities: 9' % NETDEV)
    assert all(call == [node.mlnx_qos, '-i', NETDEV] for call in calls)
    assert snapshot(node.root) == before and node.qos()['trust'] == 'pcp'


def test_null_leaves_a_setting_and_a_bad_scalar_is_refused_by_the_module(run_module, node):
    # cnp_dscp, cnp_prio, roce_tos, roce_mode and traffic_class take null ("leave it"), so they are raw options: an int
    # option with a default would refuse null before the module runs
    cm_port = ('config', 'rdma_cm', RDMA, 'ports', '1')
    result, _calls = run_module(rdma_qos, node.args(cnp_dscp=None, cnp_prio=None, roce_tos=None, roce_mode=None,
                                                    traffic_class=None), {'mlnx_qos': node.tool})
    assert result.get('failed') is not True, result.get('msg')
    assert result['settings']['cnp_dscp'] is None and result['settings']['roce_mode'] is None
    assert not any(line.split(':')[0] in ('cnp_dscp', 'cnp_prio', 'roce_tos', 'roce_mode', 'traffic_class')
                   for line in result['changes'])
    assert node.read('sys', 'class', 'net', NETDEV, 'ecn', 'roce_np', 'cnp_dscp') == '0\n'
    assert node.read(*(cm_port + ('default_roce_tos',))) == '0\n'
    before = snapshot(node.root)
    result, calls = run_module(rdma_qos, node.args(cnp_dscp='forty', roce_mode='RoCE v3', roce_tos=True),
                               {'mlnx_qos': node.tool})
    assert result['failed'] is True and result['problems'] == [
        'cnp_dscp: forty is not a DSCP (allowed: 0-63, or null to leave it)',
        'roce_tos: True is not a ToS (allowed: 0-255, or null to leave it)',
        "roce_mode: 'RoCE v3' is not a RoCE mode (allowed: RoCE v2, IB/RoCE v1, or null to leave it)"]
    assert snapshot(node.root) == before


def test_unknown_parameter_and_bad_choice_refused_by_ansible(run_module, node):
    result, calls = run_module(rdma_qos, node.args(pfc=[3]), {'mlnx_qos': node.tool})
    assert result['failed'] is True and 'Unsupported parameters' in result['msg'] and 'pfc' in result['msg']
    result, calls = run_module(rdma_qos, node.args(trust='vlan'), {'mlnx_qos': node.tool})
    assert result['failed'] is True and 'trust' in result['msg'] and calls == []


def test_netdev_without_dcb_or_absent_refused(run_module, tmp_path):
    node = Node(tmp_path)
    (node.root / 'sys' / 'class' / 'net' / 'eno1').mkdir()      # the management NIC: no DCB, no RDMA device
    result, _calls = run_module(rdma_qos, node.args(netdev='eno1', rdma_device=RDMA), {'mlnx_qos': node.tool})
    assert result['failed'] is True
    assert result['problems'] == [
        'netdev: eno1 has no DCB (mlnx_qos: Priority trust state is not supported on your system); give the RoCE '
        'port of an adapter with DCB (mlx5)']
    result, _calls = run_module(rdma_qos, node.args(netdev='eno1'), {'mlnx_qos': node.tool})
    assert len(result['problems']) == 2 and result['problems'][0].startswith('rdma_device: eno1 has no RDMA device')
    result, calls = run_module(rdma_qos, node.args(netdev='nosuch0', pfc_priorities=[10]), {'mlnx_qos': node.tool})
    assert result['problems'] == ['pfc_priorities: 10 is not a priority (allowed: 0-7)',
                                  'netdev: nosuch0 does not exist (no %s)'
                                  % (node.root / 'sys' / 'class' / 'net' / 'nosuch0')]
    assert calls == []


def test_ipoib_netdev_has_no_dcb(run_module, tmp_path):
    node = Node(tmp_path, profile='hgx-h100-ib', netdev='ibp24s0', rdma='mlx5_0')
    result, _calls = run_module(rdma_qos, node.args(netdev='ibp24s0'), {'mlnx_qos': node.tool})
    assert result['failed'] is True and result['problems'][0].startswith('netdev: ibp24s0 has no DCB (mlnx_qos: ')


def test_inbox_stack_without_ecn_sysfs_or_traffic_class(run_module, tmp_path):
    node = Node(tmp_path, ecn=False, traffic_class=None)
    result, _calls = run_module(rdma_qos, node.args(), {'mlnx_qos': node.tool})
    assert result['changed'] is True and result['unavailable'] == ['ecn_np', 'ecn_rp', 'cnp_dscp', 'cnp_prio',
                                                                   'traffic_class']
    assert len(result['warnings']) == 4 and all('ECN sysfs files are absent' in text for text in result['warnings'])
    assert result['changes'] == ['trust: pcp -> dscp', 'pfc: none -> 3', 'dscp_map[26]: unset -> 3',
                                 'dscp_map[48]: unset -> 6', 'roce_tos: 0 -> 106']
    again, _calls = run_module(rdma_qos, node.args(), {'mlnx_qos': node.tool})
    assert again['changed'] is False


def test_configfs_device_directory_made_when_absent_and_left_as_found_in_check_mode(run_module, tmp_path):
    node = Node(tmp_path, cm='absent')
    cm_dev = node.root / 'config' / 'rdma_cm' / RDMA
    result, _calls = run_module(rdma_qos, node.args(_ansible_check_mode=True), {'mlnx_qos': node.tool})
    assert not cm_dev.exists()
    # a plain directory here: the kernel would make ports/1/ in it; without it the settings are unavailable
    assert result['unavailable'] == ['roce_tos', 'roce_mode']
    assert any('RDMA-CM configfs files are absent' in text for text in result['warnings'])
    run_module(rdma_qos, node.args(), {'mlnx_qos': node.tool})
    assert cm_dev.is_dir()


def test_a_setting_that_does_not_stick_fails(run_module, node):
    fresh = node.lab.ok('gpu01', ['mlnx_qos', '-i', NETDEV])

    def deaf(argv):   # accepts every command and changes nothing
        return 0, fresh, ''

    result, calls = run_module(rdma_qos, node.args(), {'mlnx_qos': deaf})
    assert result['failed'] is True
    assert result['msg'] == 'rdma_qos %s: still differs after the changes: trust, pfc, dscp_map[26], dscp_map[48]' % NETDEV
    # the trust run's report still says pcp, so the DSCP entries are set too; then the files
    assert result['cmds'][1].endswith('--dscp2prio set,26,3 --dscp2prio set,48,6')
    assert len(result['cmds']) == 2 + 2 + 2 + 1 + 1


def test_missing_mlnx_qos_path_refused(run_module, node):
    result, _calls = run_module(rdma_qos, node.args(mlnx_qos_path='/nonexistent/mlnx_qos'), {})
    assert result['failed'] is True and result['problems'] == ['mlnx_qos_path: /nonexistent/mlnx_qos is not an '
                                                               'executable file']
    result, _calls = run_module(rdma_qos, node.args(mlnx_qos_path=None, tool='mlnx_qos'), {'dcb': (0, '', '')})
    assert result['problems'][0].startswith('tool: mlnx_qos is not installed')


# -- the inbox stack's dcb -------------------------------------------------------------------------------------------

def test_dcb_check_apply_reapply_and_partial(run_module, tmp_path):
    node = Node(tmp_path, ecn=False, traffic_class=None)
    args = node.args(mlnx_qos_path=None)   # tool auto: mlnx_qos is not installed ({} of tools below), dcb is
    check, calls = run_module(rdma_qos, dict(args, _ansible_check_mode=True), {'dcb': node.dcb})
    assert check['tool'] == 'dcb' and check['changed'] is True
    assert calls == [['/usr/bin/dcb', '-j', 'app', 'show', 'dev', NETDEV],
                     ['/usr/bin/dcb', '-j', 'pfc', 'show', 'dev', NETDEV]]
    assert node.dcb_state() == ({}, [])
    result, calls = run_module(rdma_qos, args, {'dcb': node.dcb})
    assert result['changes'] == check['changes'] and result['changes'][:2] == ['trust: pcp -> dscp', 'pfc: none -> 3']
    assert ['/usr/bin/dcb', 'app', 'replace', 'dev', NETDEV, 'dscp-prio', '26:3', '48:6'] in calls
    assert node.dcb_state() == ({26: [3], 48: [6]}, [3])
    assert node.qos()['trust'] == 'dscp'      # one DCB state per netdev: mlnx_qos sees what dcb set
    again, calls = run_module(rdma_qos, args, {'dcb': node.dcb})
    assert again['changed'] is False and len(calls) == 2
    # a second priority for DSCP 26 (not through mlx5, which keeps one entry per DSCP; another driver's table can have
    # it): replace leaves only ours
    data = state.load(node.lab.state_dir, 'gpu01')
    data['adapters'][NETDEV]['apps'].append([26, 5])
    state.save(node.lab.state_dir, 'gpu01', data)
    fixed, calls = run_module(rdma_qos, args, {'dcb': node.dcb})
    assert fixed['changes'] == ['dscp_map[26]: 3,5 -> 3']
    assert node.dcb_state()[0] == {26: [3], 48: [6]}
    # PCP trust flushes the DSCP entries
    pcp, calls = run_module(rdma_qos, dict(args, trust='pcp'), {'dcb': node.dcb})
    assert pcp['changes'] == ['trust: dscp -> pcp'] and node.dcb_state()[0] == {}


def test_dcb_netdev_without_dcb_refused(run_module, tmp_path):
    node = Node(tmp_path, profile='hgx-h100-ib', netdev='ibp24s0', rdma='mlx5_0')
    result, _calls = run_module(rdma_qos, node.args(netdev='ibp24s0', tool='dcb'), {'dcb': node.dcb})
    assert result['problems'] == ['netdev: ibp24s0 has no DCB (dcb: Attribute read: Operation not supported); give the '
                                  'RoCE port of an adapter with DCB (mlx5)']


# -- several ports in one module run ----------------------------------------------------------------------------------

OTHER = 'enp24s0np0'   # mlx5_0, rail 0 of hgx-h100-roce


def two_ports(tmp_path, **tree):
    node = Node(tmp_path, **tree)
    make_tree(node.root, netdev=OTHER, rdma='mlx5_0')
    return node


def test_ports_check_apply_and_reapply_in_one_run_each(run_module, tmp_path):
    node = two_ports(tmp_path)
    args = dict(node.args(), ports=[{'netdev': OTHER, 'rdma_device': 'mlx5_0'}, {'netdev': NETDEV}])
    del args['netdev']
    before = snapshot(node.root)
    checked, calls = run_module(rdma_qos, dict(args, _ansible_check_mode=True), {'mlnx_qos': node.tool})
    assert checked['changed'] is True and snapshot(node.root) == before
    assert calls == [[node.mlnx_qos, '-i', OTHER], [node.mlnx_qos, '-i', NETDEV]]
    assert [(port['netdev'], port['rdma_device'], len(port['changes'])) for port in checked['ports']] == [
        (OTHER, 'mlx5_0', 10), (NETDEV, RDMA, 10)]
    assert checked['changes'][0] == '%s: trust: pcp -> dscp' % OTHER and len(checked['changes']) == 20

    applied, _calls = run_module(rdma_qos, dict(args, _ansible_diff=True), {'mlnx_qos': node.tool})
    assert applied['changed'] is True and [port['changed'] for port in applied['ports']] == [True, True]
    assert '# %s (mlx5_0)\ntrust: pcp\n' % OTHER in applied['diff']['before']
    assert '# %s (%s)\ntrust: dscp\n' % (NETDEV, RDMA) in applied['diff']['after']
    for netdev in (OTHER, NETDEV):
        qos = parse_mlnx_qos(node.lab.ok('gpu01', ['mlnx_qos', '-i', netdev]))
        assert (qos['trust'], qos['pfc_enabled']) == ('dscp', [0, 0, 0, 1, 0, 0, 0, 0])
    assert applied['settings']['cnp_dscp'] == 48 and applied['tool'] == 'mlnx_qos'

    again, calls = run_module(rdma_qos, args, {'mlnx_qos': node.tool})
    assert again['changed'] is False and again['changes'] == [] and again['cmds'] == []
    assert calls == [[node.mlnx_qos, '-i', OTHER], [node.mlnx_qos, '-i', NETDEV]]


def test_ports_change_only_the_port_that_differs(run_module, tmp_path):
    node = two_ports(tmp_path)
    args = dict(node.args(), ports=[{'netdev': OTHER}, {'netdev': NETDEV}])
    del args['netdev']
    run_module(rdma_qos, args, {'mlnx_qos': node.tool})
    node.lab.ok('gpu01', ['mlnx_qos', '-i', NETDEV, '--trust', 'pcp'])
    result, calls = run_module(rdma_qos, args, {'mlnx_qos': node.tool})
    assert [port['changed'] for port in result['ports']] == [False, True]
    # trust pcp also dropped the DSCP entries (mlx5 keeps them only under DSCP trust; hwsim does the same)
    assert result['changes'] == ['%s: %s' % (NETDEV, line) for line in (
        'trust: pcp -> dscp', 'dscp_map[26]: unset -> 3', 'dscp_map[48]: unset -> 6')]
    assert [call[:3] for call in calls if len(call) > 3] == [[node.mlnx_qos, '-i', NETDEV]]


def test_ports_a_bad_port_changes_nothing_anywhere_and_names_itself(run_module, tmp_path):
    node = two_ports(tmp_path)
    args = dict(node.args(), ports=[{'netdev': NETDEV}, {'netdev': 'enp9s0np0'}])
    del args['netdev']
    before = snapshot(node.root)
    result, calls = run_module(rdma_qos, args, {'mlnx_qos': node.tool})
    assert result['msg'].startswith('rdma_qos: nothing changed on any port: enp9s0np0: netdev: enp9s0np0 does not exist')
    assert [(port['netdev'], port.get('failed', False)) for port in result['ports']] == [(NETDEV, False), ('enp9s0np0', True)]
    assert result['ports'][0]['changes'] and snapshot(node.root) == before and node.qos()['trust'] == 'pcp'
    assert all(len(call) == 3 for call in calls)   # reads only


def test_ports_and_netdev_are_one_or_the_other(run_module, node):
    result, _calls = run_module(rdma_qos, dict(node.args(), ports=[{'netdev': NETDEV}]), {'mlnx_qos': node.tool})
    assert 'mutually exclusive' in result['msg']
    args = node.args()
    del args['netdev']
    result, _calls = run_module(rdma_qos, args, {'mlnx_qos': node.tool})
    assert 'one of the following is required: netdev, ports' in result['msg']
