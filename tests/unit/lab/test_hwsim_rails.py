"""lab/hwsim rails (hwsim/rails.py): the IPoIB rail netdevs as a freshly installed node has them (no address, MTU
2044, datagram mode in hwsim's sysfs tree), the RoCE ones too (no address, MTU 1500), hosts without hardware left alone, and `hwsim reboot`
restarting the fresh rails and the network configuration before the NVIDIA units."""
import os
import sys

from _paths import REPO

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))

# pylint: disable=wrong-import-position
from hwsim import cli, driver, rails, sysfs  # noqa: E402
from hwsim.testing import make_lab  # noqa: E402

H100_IB = ['ibp24s0', 'ibp64s0', 'ibp79s0', 'ibp94s0', 'ibp154s0', 'ibp192s0', 'ibp206s0', 'ibp220s0']


def _model(lab, host='gpu01'):
    return cli.Context.from_env(lab.env(host), None, None).host_model()


def test_the_ipoib_rails_of_a_profile_in_hca_order(tmp_path):
    netdevs = rails.ipoib_netdevs(_model(make_lab(tmp_path / 'ib', 'hgx-h100-ib', compute=1)))
    assert netdevs == H100_IB  # the profile's eight IB rails, mlx5_0 .. (sysfs order)
    # the storage port (Ethernet) and a RoCE profile's rails are not IPoIB
    assert rails.ipoib_netdevs(_model(make_lab(tmp_path / 'roce', 'hgx-h100-roce', compute=1))) == []


def test_fresh_takes_the_address_and_sets_2044_on_the_rails_that_exist(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    model = _model(lab)
    netdevs = rails.ipoib_netdevs(model)
    root = tmp_path / 'root'
    for name in netdevs[:2]:  # the lab gives two rails an interface
        os.makedirs(str(root / 'sys' / 'class' / 'net' / name))
    calls = []
    lines, errors = rails.fresh(model, str(root), run=lambda argv, **kw: calls.append(argv) or 0)
    assert errors == [] and lines == ['%s: no address, MTU 2044 (datagram)\n' % name for name in netdevs[:2]]
    assert calls == [argv for name in netdevs[:2] for argv in (['ip', '-4', 'addr', 'flush', 'dev', name],
                                                               ['ip', 'link', 'set', 'dev', name, 'mtu', '2044'])]
    lines, errors = rails.fresh(model, str(root), run=lambda argv, **kw: 2)
    assert errors[0] == 'hwsim: rails-fresh: ip -4 addr flush dev %s failed (exit status 2)\n' % netdevs[0]


def test_fresh_takes_the_address_and_sets_1500_on_the_roce_rails(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-roce', compute=1)
    model = _model(lab)
    netdevs = [netdev for netdev, layer in rails.rail_netdevs(model) if layer == 'Ethernet']
    assert len(netdevs) == 8 and rails.rail_netdevs(model, 'InfiniBand') == []
    root = tmp_path / 'root'
    os.makedirs(str(root / 'sys' / 'class' / 'net' / netdevs[0]))
    calls = []
    lines, errors = rails.fresh(model, str(root), run=lambda argv, **kw: calls.append(argv) or 0)
    assert errors == [] and lines == ['%s: no address, MTU 1500\n' % netdevs[0]]
    assert calls == [['ip', '-4', 'addr', 'flush', 'dev', netdevs[0]], ['ip', 'link', 'set', 'dev', netdevs[0], 'mtu', '1500']]


def test_the_command_on_a_host_without_rails_does_nothing(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    assert lab.run('ctl01', ['hwsim', 'rails-fresh']) == (0, '', '')
    assert lab.run('gpu01', ['hwsim', 'rails-fresh', 'extra'])[0] == 2
    # gpu01's root has no /sys/class/net: no interface, nothing run
    assert lab.run('gpu01', ['hwsim', 'rails-fresh']) == (0, '', '')


def test_the_sysfs_tree_has_each_ipoib_rail_in_datagram_mode(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    model = _model(lab)
    root = str(tmp_path / 'devroot')
    sysfs.write_tree(root, model)
    for name in rails.ipoib_netdevs(model):
        with open(os.path.join(root, sysfs.SYS_DIR, 'class', 'net', name, 'mode'), encoding='utf-8') as handle:
            assert handle.read() == 'datagram\n'


def test_a_reboot_restarts_the_rails_and_the_network_before_the_nvidia_units():
    assert driver.SERVICES[:3] == ('hwsim-rails.service', 'systemd-networkd.service', 'nvidia-persistenced.service')
    ran = []

    def run(argv, **kw):
        ran.append(argv[1:])
        return 0
    lines, errors = driver.restart_services('systemctl', run=run)
    assert errors == [] and lines[:2] == ['restarted hwsim-rails.service\n', 'restarted systemd-networkd.service\n']
    assert [argv for argv in ran if argv[0] == 'restart'][:2] == [['restart', 'hwsim-rails.service'],
                                                                  ['restart', 'systemd-networkd.service']]
