"""lab/hwsim RoCE QoS (hwsim/roce.py, tools/dcb.py): the ECN/CNP sysfs files, the verbs traffic class and RDMA-CM's
configfs at the driver's defaults; what is written to them and set through mlnx_qos or dcb lasts until mlx5_core starts
again (a driver restart, hwsim reboot, the qos-reset fault); pfc-off; the dcb stand-in's JSON and set commands, read with
the collection's parsers; and module rdma_qos run against all of it as the lab runs it."""
import json
import os
import sys

import pytest

from _module_runner import run_main
from _paths import REPO

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))

# pylint: disable=wrong-import-position
from ansible_collections.aicluster.infra.plugins.module_utils.mlnx_qos import parse_mlnx_qos  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.rdma_qos import parse_dcb_app, parse_dcb_pfc  # noqa: E402
from ansible_collections.aicluster.infra.plugins.modules import rdma_qos  # noqa: E402
from hwsim import roce, sysfs  # noqa: E402
from hwsim.testing import HWSIM_ROOT, make_lab  # noqa: E402
from hwsim.tools import linkcounters  # noqa: E402

NETDEV = 'enp64s0np0'     # mlx5_3, rail 1 of hgx-h100-roce
RDMA = 'mlx5_3'
STORAGE = 'enp170s0f0np0'  # mlx5_1, the ConnectX-6 Dx storage NIC
PFC3 = '0,0,0,1,0,0,0,0'


@pytest.fixture(autouse=True)
def no_real_dcb(monkeypatch):
    """The test machine's own dcb (iproute2) never answers: a netdev hwsim does not simulate gets hwsim's message."""
    monkeypatch.setattr(linkcounters, 'REAL_DIRS', ())


class Node(object):
    """gpu01 of an hgx-h100-roce lab after its first boot (mlx5_core loaded: the tree at the driver's defaults)."""

    def __init__(self, tmp_path):
        self.lab = make_lab(tmp_path, 'hgx-h100-roce')
        self.root = self.lab.root('gpu01')
        self.sys = os.path.join(self.root, sysfs.SYS_DIR)
        self.config = os.path.join(self.root, roce.CONFIG_DIR)
        self.lab.ok('gpu01', ['hwsim', 'boot'])
        self.bin = str(tmp_path / 'bin')
        os.makedirs(self.bin)
        os.symlink(os.path.join(HWSIM_ROOT, 'bin', 'hwsim'), os.path.join(self.bin, 'mlnx_qos'))

    def path(self, *parts):
        return os.path.join(self.root, *parts)

    def ecn(self, netdev=NETDEV):
        """(np enables, rp enables, cnp_dscp, cnp_802p_prio) as texts."""
        base = os.path.join(self.sys, 'class', 'net', netdev, 'ecn')
        return ([_read(os.path.join(base, 'roce_np', 'enable', str(prio))) for prio in range(8)],
                [_read(os.path.join(base, 'roce_rp', 'enable', str(prio))) for prio in range(8)],
                _read(os.path.join(base, 'roce_np', 'cnp_dscp')), _read(os.path.join(base, 'roce_np', 'cnp_802p_prio')))

    def cm(self, name, rdma=RDMA):
        return _read(os.path.join(self.config, 'rdma_cm', rdma, 'ports', '1', name))

    def traffic_class(self, rdma=RDMA):
        return _read(os.path.join(self.sys, 'class', 'infiniband', rdma, 'tc', '1', 'traffic_class'))

    def qos(self, *argv, host='gpu01'):
        return parse_mlnx_qos(self.lab.ok(host, ['mlnx_qos', '-i', NETDEV] + list(argv)))

    def configure(self):
        """What rdma_qos sets, by hand: DSCP trust and PFC 3 (mlnx_qos), ECN off on 5, the CNP, ToS, mode, class."""
        self.qos('--trust', 'dscp', '--pfc', PFC3)
        _write(os.path.join(self.sys, 'class', 'net', NETDEV, 'ecn', 'roce_np', 'enable', '5'), '0\n')
        _write(os.path.join(self.sys, 'class', 'net', NETDEV, 'ecn', 'roce_np', 'cnp_dscp'), '46\n')
        _write(os.path.join(self.config, 'rdma_cm', RDMA, 'ports', '1', 'default_roce_tos'), '106\n')
        _write(os.path.join(self.config, 'rdma_cm', RDMA, 'ports', '1', 'default_roce_mode'), 'IB/RoCE v1\n')
        _write(os.path.join(self.sys, 'class', 'infiniband', RDMA, 'tc', '1', 'traffic_class'), '106\n')

    def assert_configured(self):
        qos = self.qos()
        assert (qos['trust'], qos['pfc_enabled']) == ('dscp', [0, 0, 0, 1, 0, 0, 0, 0])
        np_enable, _rp, cnp_dscp, _prio = self.ecn()
        assert np_enable[5] == '0\n' and cnp_dscp == '46\n'
        assert (self.cm('default_roce_tos'), self.cm('default_roce_mode'), self.traffic_class()) == \
            ('106\n', 'IB/RoCE v1\n', '106\n')

    def assert_defaults(self):
        qos = self.qos()
        assert (qos['trust'], qos['pfc_enabled'], qos['dscp2prio']) == ('pcp', [0] * 8, None)
        assert self.ecn() == (['1\n'] * 8, ['1\n'] * 8, '48\n', '6\n')
        assert (self.cm('default_roce_tos'), self.cm('default_roce_mode'), self.traffic_class()) == ('0\n', 'RoCE v2\n', '')
        assert NETDEV not in json.loads(self.lab.ok('gpu01', ['hwsim', 'show']))['adapters']


def _read(path):
    with open(path, encoding='utf-8') as handle:
        return handle.read()


def _write(path, text):
    with open(path, 'w', encoding='utf-8') as handle:
        handle.write(text)


@pytest.fixture
def node(tmp_path):
    return Node(tmp_path)


# -- the tree and its defaults ---------------------------------------------------------------------------------------

def test_every_ethernet_port_has_the_mlx5_ecn_tree_traffic_class_and_configfs_at_the_driver_defaults(node):
    node.assert_defaults()
    for netdev, rdma in ((STORAGE, 'mlx5_1'), ('enp220s0np0', 'mlx5_9')):
        assert node.ecn(netdev) == (['1\n'] * 8, ['1\n'] * 8, '48\n', '6\n')
        assert (node.cm('default_roce_tos', rdma), node.traffic_class(rdma)) == ('0\n', '')
    # class/net/<if>/device is the PCI function, whose infiniband/ names the RDMA device (rdma_qos finds it there)
    device = os.path.join(node.sys, 'class', 'net', NETDEV, 'device')
    assert os.readlink(device) == '../../../bus/pci/devices/0000:40:00.0' and os.listdir(device + '/infiniband') == [RDMA]
    assert sorted(os.listdir(os.path.join(node.config, 'rdma_cm'))) == ['mlx5_%d' % number for number in range(10)]


def test_an_infiniband_node_has_no_ecn_tree_on_its_ipoib_rails(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    lab.ok('gpu01', ['hwsim', 'boot'])
    net = os.path.join(lab.root('gpu01'), sysfs.SYS_DIR, 'class', 'net')
    assert os.listdir(os.path.join(net, 'ibp24s0')) == ['mode']
    ethernet = [netdev for netdev, _hca, _port in roce.ports(lab_model(lab))]
    assert all(os.path.isdir(os.path.join(net, netdev, 'ecn')) for netdev in ethernet)
    assert not any(netdev.startswith('ib') for netdev in ethernet)


def lab_model(lab, host='gpu01'):
    from hwsim import cli  # pylint: disable=import-outside-toplevel
    ctx = cli.Context.from_env(lab.env(host), None, None)
    return ctx.host_model()


# -- what is written lasts until the driver starts again -------------------------------------------------------------

def test_writes_last_across_a_rewrite_of_the_tree_and_a_boot_without_restart(node):
    node.configure()
    sysfs.write_tree(node.root, lab_model(node.lab))       # hwsim devices (new hwsim code installed)
    node.assert_configured()
    node.lab.ok('gpu01', ['hwsim', 'boot'])                # the boot unit started again: mlx5_core is loaded already
    node.assert_configured()
    assert node.lab.run('gpu01', ['modprobe', 'mlx5_core']) == (0, '', '')   # loaded: nothing happens
    node.assert_configured()


def test_a_driver_restart_resets_everything(node):
    node.configure()
    assert node.lab.run('gpu01', ['modprobe', '-r', 'mlx5_ib']) == (0, '', '')   # mlx5_core goes with it
    node.assert_configured()                                   # unloaded: the files stay until the driver comes back
    assert node.lab.run('gpu01', ['modprobe', 'mlx5_ib']) == (0, '', '')
    node.assert_defaults()


def test_a_reboot_resets_everything_and_another_host_keeps_its_settings(node):
    node.configure()
    node.qos('--trust', 'dscp', host='gpu02')
    assert node.lab.run('gpu01', ['hwsim', 'reboot'])[0] == 0
    node.assert_defaults()
    assert node.qos(host='gpu02')['trust'] == 'dscp'


def test_the_qos_reset_fault_is_a_driver_restart_on_this_host_only(node):
    node.configure()
    status, _out, err = node.lab.run('ctl01', ['hwsim', 'fault', 'gpu01', 'qos-reset'])
    assert status == 1 and 'run hwsim fault qos-reset on gpu01' in err
    node.assert_configured()
    assert node.lab.run('gpu01', ['hwsim', 'fault', 'qos-reset']) == (0, '', '')
    node.assert_defaults()
    assert json.loads(node.lab.ok('gpu01', ['hwsim', 'show']))['faults'] == []    # done, not kept
    node.configure()
    assert node.lab.run('gpu01', ['hwsim', 'fault', 'qos-reset', 'gpu01']) == (0, '', '')
    node.assert_defaults()
    status, _out, err = node.lab.run('ctl01', ['hwsim', 'fault', 'qos-reset'])
    assert status == 2 and 'ctl01 has no Ethernet RDMA port' in err


def test_pfc_off_from_any_host_turns_pfc_off_on_that_netdev_only(node):
    node.qos('--trust', 'dscp', '--pfc', PFC3)
    node.lab.ok('gpu01', ['mlnx_qos', '-i', STORAGE, '--pfc', PFC3])
    assert node.lab.run('ctl01', ['hwsim', 'fault', 'gpu01', 'pfc-off', NETDEV]) == (0, '', '')
    qos = node.qos()
    assert (qos['trust'], qos['pfc_enabled']) == ('dscp', [0] * 8)
    assert parse_mlnx_qos(node.lab.ok('gpu01', ['mlnx_qos', '-i', STORAGE]))['pfc_enabled'] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert parse_dcb_pfc(node.lab.ok('gpu01', ['dcb', '-j', 'pfc', 'show', 'dev', NETDEV])) == []
    assert json.loads(node.lab.ok('gpu01', ['hwsim', 'show']))['faults'] == []
    status, _out, err = node.lab.run('gpu01', ['hwsim', 'fault', 'pfc-off', 'ibp24s0'])
    assert status == 2 and "unknown NETDEV 'ibp24s0'" in err and NETDEV in err
    assert node.lab.run('gpu01', ['hwsim', 'fault', 'pfc-off'])[0] == 2
    assert 'qos-reset | qos-reset HOST' in node.lab.run('gpu01', ['hwsim', 'fault'])[2]
    assert 'pfc-off NETDEV' in node.lab.run('gpu01', ['hwsim', 'fault'])[2]


# -- the dcb stand-in ------------------------------------------------------------------------------------------------

def test_dcb_json_as_iproute2_prints_it_and_read_by_the_collection(node):
    lab = node.lab
    assert lab.run('gpu01', ['dcb', '-j', 'app', 'show', 'dev', NETDEV]) == (0, '{}\n', '')
    assert lab.ok('gpu01', ['dcb', '-j', 'pfc', 'show', 'dev', NETDEV]) == (
        '{"pfc_cap":8,"macsec_bypass":false,"delay":7,"prio_pfc":[false,false,false,false,false,false,false,false]}\n')
    assert lab.ok('gpu01', ['dcb', 'pfc', 'show', 'dev', NETDEV]) == (
        'pfc-cap 8 macsec-bypass off delay 7 \nprio-pfc 0:off 1:off 2:off 3:off 4:off 5:off 6:off 7:off \n')
    assert lab.run('gpu01', ['dcb', 'pfc', 'set', 'dev', NETDEV, 'prio-pfc', '0:off', '3:on']) == (0, '', '')
    assert lab.run('gpu01', ['dcb', 'app', 'replace', 'dev', NETDEV, 'dscp-prio', '48:6', 'AF31:3']) == (0, '', '')
    app = lab.ok('gpu01', ['dcb', '-j', 'app', 'show', 'dev', NETDEV])
    assert app == '{"dscp_prio":[[26,3],[48,6]]}\n' and parse_dcb_app(app) == {26: [3], 48: [6]}
    assert parse_dcb_pfc(lab.ok('gpu01', ['dcb', '--json', 'pfc', 'show', 'dev', NETDEV])) == [3]
    assert lab.ok('gpu01', ['dcb', 'app', 'sh', 'dev', NETDEV]) == 'dscp-prio 26:3 48:6 \n'
    assert json.loads(lab.ok('gpu01', ['dcb', '-jp', 'pfc', 'show', 'dev', NETDEV, 'prio-pfc', 'delay'])) == {
        'prio_pfc': [False, False, False, True, False, False, False, False], 'delay': 7}
    assert lab.ok('gpu01', ['dcb', '-j', 'app', 'show', 'dev', NETDEV, 'pcp-prio']) == '{}\n'


def test_dcb_and_mlnx_qos_share_one_dcb_state_per_netdev(node):
    lab = node.lab
    lab.ok('gpu01', ['dcb', 'app', 'add', 'dev', NETDEV, 'dscp-prio', '26:3'])
    qos = node.qos()
    assert (qos['trust'], qos['dscp2prio']) == ('dscp', {3: [26]})     # the first DSCP entry: DSCP trust (mlx5)
    node.qos('--pfc', PFC3, '--cable_len', '20')
    assert json.loads(lab.ok('gpu01', ['dcb', '-j', 'pfc', 'show', 'dev', NETDEV]))['delay'] == 20
    lab.ok('gpu01', ['dcb', 'pfc', 'set', 'dev', NETDEV, 'prio-pfc', 'all:off', 'delay', '7'])
    assert (node.qos()['pfc_enabled'], node.qos()['cable_len']) == ([0] * 8, 7)
    assert lab.run('gpu01', ['dcb', 'app', 'flush', 'dev', NETDEV, 'dscp-prio']) == (0, '', '')
    assert node.qos()['trust'] == 'pcp'                                # the last entry gone: PCP trust
    node.qos('--trust', 'dscp')       # mlnx_qos installs DSCP d -> d >> 3 for all 64
    table = parse_dcb_app(lab.ok('gpu01', ['dcb', '-j', 'app', 'show', 'dev', NETDEV]))
    assert len(table) == 64 and table[26] == [3] and table[48] == [6]
    assert lab.run('gpu01', ['dcb', 'app', 'flush', 'dev', NETDEV]) == (0, '', '')
    assert node.qos()['trust'] == 'pcp'
    assert lab.run('gpu01', ['dcb', 'app', 'del', 'dev', NETDEV, 'dscp-prio', '26:3']) == (
        1, '', 'Error when attempting to set attribute: Unknown error 254\n')


def test_dcb_replace_on_mlx5_moves_an_entry_and_reports_the_refused_delete(node):
    lab = node.lab
    lab.ok('gpu01', ['dcb', 'app', 'add', 'dev', NETDEV, 'dscp-prio', '26:5', '48:6'])
    # mlx5 keeps one entry per DSCP: the add of 26:3 replaces 26:5, so dcb's delete of 26:5 is refused (exit 0)
    assert lab.run('gpu01', ['dcb', 'app', 'replace', 'dev', NETDEV, 'dscp-prio', '26:3']) == (
        0, '', 'Error when attempting to set attribute: Unknown error 254\nCould not remove replaced APP entries\n')
    assert parse_dcb_app(lab.ok('gpu01', ['dcb', '-j', 'app', 'show', 'dev', NETDEV])) == {26: [3], 48: [6]}
    lab.ok('gpu01', ['dcb', 'app', 'del', 'dev', NETDEV, 'dscp-prio', '26:3'])
    assert parse_dcb_app(lab.ok('gpu01', ['dcb', '-j', 'app', 'show', 'dev', NETDEV])) == {48: [6]}


@pytest.mark.parametrize('argv, status, err', [
    (['app', 'add', 'dev', NETDEV, 'dscp-prio', '64:3'], 1, 'In DSCP:PRIO mapping, DSCP is expected to be 0..63\n'
                                                            'Invalid mapping 64\n'),
    (['app', 'add', 'dev', NETDEV, 'dscp-prio', '26:8'], 1, 'In DSCP:PRIO mapping, PRIO is expected to be 0..7\n'
                                                            'Invalid mapping 26\n'),
    (['app', 'add', 'dev', NETDEV, 'dscp-prio', 'XX:3'], 1, 'Invalid mapping XX\n'),
    (['app', 'add', 'dev', NETDEV, 'dscp-prio'], 255, 'Command line is not complete. Try option "help"\n'),
    (['pfc', 'set', 'dev', NETDEV, 'prio-pfc', '8:on'], 1, 'In PRIO:PFC mapping, PRIO is expected to be 0..7\n'
                                                           'Invalid pfc mapping 8\n'),
    (['pfc', 'set', 'dev', NETDEV, 'prio-pfc', '3:yes'], 1, 'Error: argument of "PFC" must be "on" or "off", not "yes"\n'
                                                            'Invalid pfc mapping 3\n'),
    (['pfc', 'show', 'dev', 'ibp24s0'], 1, 'Attribute read: No such device\n'),   # not on this RoCE node, no real dcb
    (['-j', 'app', 'show', 'dev', 'eth0'], 1, 'Attribute read: No such device\n'),
    (['buffer', 'show', 'dev', NETDEV], 2, 'hwsim dcb: only "app" and "pfc" are simulated, not "buffer"\n'),
    (['bogus', 'show', 'dev', NETDEV], 1, 'Object "bogus" is unknown\n'),
    (['app', 'add', 'dev', NETDEV, 'pcp-prio', '1de:3'], 2, 'hwsim dcb: only dscp-prio entries are simulated (mlx5 '
                                                            'takes no other selector)\n'),
], ids=['dscp-64', 'prio-8', 'dscp-name-unknown', 'incomplete', 'pfc-prio-8', 'pfc-yes', 'not-here', 'eth0',
        'buffer', 'object', 'pcp'])
def test_dcb_errors_like_the_real_tool(node, argv, status, err):
    before = node.lab.ok('gpu01', ['hwsim', 'show'])
    assert node.lab.run('gpu01', ['dcb'] + argv) == (status, '', err)
    assert node.lab.ok('gpu01', ['hwsim', 'show']) == before


def test_dcb_on_an_ipoib_netdev_has_no_dcb_and_others_go_to_the_real_dcb(tmp_path, monkeypatch):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    assert lab.run('gpu01', ['dcb', '-j', 'app', 'show', 'dev', 'ibp24s0']) == (
        1, '', 'Attribute read: Operation not supported\n')
    real = tmp_path / 'sbin'
    real.mkdir()
    (real / 'dcb').write_text('#!/bin/sh\necho "real dcb $*"\n')
    (real / 'dcb').chmod(0o755)
    monkeypatch.setattr(linkcounters, 'REAL_DIRS', (str(real),))
    assert lab.run('gpu01', ['dcb', '-j', 'app', 'show', 'dev', 'eth0']) == (0, 'real dcb -j app show dev eth0\n', '')
    assert lab.run('gpu01', ['dcb', '-s', 'pfc', 'show', 'dev', 'ibp24s0'])[1] == 'real dcb -s pfc show dev ibp24s0\n'


def test_dcb_is_a_tool_the_lab_links():
    assert 'dcb\n' in _hwsim_tools()


def _hwsim_tools():
    import io  # pylint: disable=import-outside-toplevel
    from hwsim import cli  # pylint: disable=import-outside-toplevel
    out = io.StringIO()
    assert cli.main(['hwsim', 'tools'], environ={}, stdout=out, stderr=io.StringIO()) == 0
    return out.getvalue()


# -- module rdma_qos against the lab's tree and stand-ins ------------------------------------------------------------

def _rdma_qos(node, check=False, **extra):
    """Run rdma_qos as in the lab (sysfs_root /run/hwsim/sys, configfs_root /run/hwsim/config), its tools answered by
    hwsim's stand-ins on gpu01."""
    def tool(argv):
        return node.lab.run('gpu01', [os.path.basename(argv[0])] + list(argv[1:]))
    args = dict({'netdev': NETDEV, 'sysfs_root': node.sys, 'configfs_root': node.config,
                 'mlnx_qos_path': os.path.join(node.bin, 'mlnx_qos'), '_ansible_check_mode': check,
                 '_ansible_diff': True}, **extra)
    result, box, exited = run_main(rdma_qos, args, {'mlnx_qos': tool, 'dcb': tool})
    assert exited and not result.get('failed'), result
    return result, box.calls


FRESH_CHANGES = ['trust: pcp -> dscp', 'pfc: none -> 3', 'dscp_map[26]: unset -> 3', 'dscp_map[48]: unset -> 6',
                 'roce_tos: 0 -> 106', 'traffic_class: unset -> 106']


@pytest.mark.parametrize('tool', ['mlnx_qos', 'dcb'])
def test_rdma_qos_apply_reapply_qos_reset_apply_again(node, tool):
    extra = {} if tool == 'mlnx_qos' else {'tool': 'dcb', 'mlnx_qos_path': None}
    check, _calls = _rdma_qos(node, check=True, **extra)
    assert check['changed'] is True and check['changes'] == FRESH_CHANGES and check['rdma_device'] == RDMA
    assert check['unavailable'] == [] and check['current']['ecn_np'] == list(range(8))
    node.assert_defaults()
    applied, _calls = _rdma_qos(node, **extra)
    assert applied['tool'] == tool and applied['changes'] == FRESH_CHANGES
    qos = node.qos()
    assert (qos['trust'], qos['pfc_enabled']) == ('dscp', [0, 0, 0, 1, 0, 0, 0, 0])
    assert 26 in qos['dscp2prio'][3] and 48 in qos['dscp2prio'][6]
    assert (node.cm('default_roce_tos'), node.cm('default_roce_mode'), node.traffic_class()) == ('106\n', 'RoCE v2\n', '106\n')
    again, calls = _rdma_qos(node, **extra)
    assert again['changed'] is False and again['cmds'] == [] and len(calls) == (1 if tool == 'mlnx_qos' else 2)
    assert node.lab.run('gpu01', ['hwsim', 'fault', 'qos-reset']) == (0, '', '')
    drift, _calls = _rdma_qos(node, check=True, **extra)    # what net.roce_qos would see after a driver restart
    assert drift['changes'] == FRESH_CHANGES
    after, _calls = _rdma_qos(node, **extra)
    assert after['changed'] is True and after['changes'] == FRESH_CHANGES
    assert _rdma_qos(node, **extra)[0]['changed'] is False


def test_rdma_qos_completes_ecn_switched_off_by_hand_and_survives_a_tree_rewrite(node):
    _rdma_qos(node)
    _write(os.path.join(node.sys, 'class', 'net', NETDEV, 'ecn', 'roce_rp', 'enable', '3'), '0\n')
    sysfs.write_tree(node.root, lab_model(node.lab))
    fixed, _calls = _rdma_qos(node)
    assert fixed['changes'] == ['ecn_rp: 0,1,2,4,5,6,7 -> 0,1,2,3,4,5,6,7']
    assert node.ecn()[1][3] == '1\n'
    node.lab.ok('gpu01', ['hwsim', 'reboot'])
    assert _rdma_qos(node, check=True)[0]['changes'] == FRESH_CHANGES
