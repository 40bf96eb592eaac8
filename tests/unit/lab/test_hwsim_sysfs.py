"""lab/hwsim sysfs tree (hwsim/sysfs.py): the PCI functions nvswitch_info and ib_info read in the lab
(sysfs_root /run/hwsim/sys, proc_root /run/hwsim/proc), and the HGX B200 model: ConnectX-7 bridge functions with
SW_MNG in their VPD, no /dev/nvidia-nvswitch*."""
import os
import sys

import pytest

from _paths import REPO

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))

# pylint: disable=wrong-import-position
from ansible_collections.aicluster.infra.plugins.module_utils.ibstat import parse_ibstat  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.nvswitch import nvswitch_plan, parse_vpd, vendor_fields  # noqa: E402
from ansible_collections.aicluster.infra.plugins.modules.nvswitch_info import read_pci, read_proc  # noqa: E402
from hwsim import sysfs  # noqa: E402
from hwsim.testing import make_lab  # noqa: E402

ROOT_ONLY = pytest.mark.skipif(not hasattr(os, 'geteuid') or os.geteuid() != 0,
                               reason='mknod of character devices needs CAP_MKNOD (root)')
BRIDGES = ['mlx5_10', 'mlx5_11', 'mlx5_12', 'mlx5_13']


def _plan(root):
    return nvswitch_plan(read_pci(os.path.join(root, sysfs.SYS_DIR)), read_proc(os.path.join(root, sysfs.PROC_DIR)))


@ROOT_ONLY
def test_b200_devices_make_no_nvswitch_nodes_and_a_tree_with_bridges(tmp_path):
    lab = make_lab(tmp_path, 'hgx-b200-ib', compute=1)
    root = tmp_path / 'devroot'
    out = lab.ok('gpu01', ['hwsim', 'devices', '--root', str(root)])
    assert 'nvswitch' not in out and not any(name.startswith('nvidia-nvswitch') for name in os.listdir(str(root / 'dev')))
    assert os.path.exists(str(root / 'dev' / 'nvidia0'))
    plan = _plan(str(root))
    assert plan['generation'] == 5 and plan['nvswitches'] == [] and plan['bridge_devices'] == BRIDGES
    assert plan['nvlsm'] is True and plan['fabric_manager'] is True and plan['kernel_modules'] == ['mlx5_ib', 'ib_umad']
    # as /sys/class/infiniband/<hca>/device/vpd, the path NVIDIA's driver container greps
    vpd = (root / 'run' / 'hwsim' / 'sys' / 'class' / 'infiniband' / 'mlx5_10' / 'device' / 'vpd').read_bytes()
    assert vendor_fields(parse_vpd(vpd))['SMDL'] == 'SW_MNG' and parse_vpd(vpd)['checksum_ok'] is True
    compute = parse_vpd((root / 'run' / 'hwsim' / 'sys' / 'class' / 'infiniband' / 'mlx5_0' / 'device' / 'vpd').read_bytes())
    assert 'SMDL' not in vendor_fields(compute) and compute['read_only']['PN'] == 'MCX75310AAS-NEAT'


def test_h100_tree_has_its_four_switch_functions_and_proc_follows_the_driver(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    root = lab.root('gpu01')
    lab.ok('gpu01', ['hwsim', 'boot'])  # a fresh node: no driver installed
    plan = _plan(root)
    assert plan['generation'] == 4 and plan['source'] == 'pci' and plan['bridges'] == []
    assert [item['address'] for item in plan['nvswitches']] == ['0000:05:00.0', '0000:06:00.0', '0000:07:00.0', '0000:08:00.0']
    assert read_proc(os.path.join(root, sysfs.PROC_DIR)) is None
    lab.install_driver('gpu01', '580.95.05')
    lab.ok('gpu01', ['hwsim', 'boot'])  # loads nvidia: the driver's proc tree appears
    assert read_proc(os.path.join(root, sysfs.PROC_DIR)) == ['0000:05:00.0', '0000:06:00.0', '0000:07:00.0', '0000:08:00.0']
    info = os.path.join(root, sysfs.PROC_DIR, 'driver', 'nvidia-nvswitch', 'devices', '0000:05:00.0', 'information')
    with open(info, encoding='utf-8') as handle:
        assert handle.read().startswith('BIOS Version: ')


def test_a100_has_six_gen2_switches_and_a_host_without_hardware_no_tree(tmp_path):
    lab = make_lab(tmp_path, 'hgx-a100-ib', compute=1)
    lab.ok('gpu01', ['hwsim', 'boot'])
    plan = _plan(lab.root('gpu01'))
    assert plan['generation'] == 3 and len(plan['nvswitches']) == 6
    lab.ok('ctl01', ['hwsim', 'boot'])
    assert _plan(lab.root('ctl01'))['generation'] == 0


def test_b200_ibstat_lists_the_bridges_off_the_compute_fabric(tmp_path):
    lab = make_lab(tmp_path, 'hgx-b200-ib', compute=2)
    cas = dict((ca['name'], ca) for ca in parse_ibstat(lab.ok('gpu01', ['ibstat']))['cas'])
    assert set(BRIDGES) <= set(cas)
    assert all(cas[name]['ca_type'] == 'MT4129' and cas[name]['ports'][0]['link_layer'] == 'InfiniBand' for name in BRIDGES)
    hosts = lab.fabric['hosts']['gpu01']['hcas']
    assert not set(BRIDGES) & set(hosts) and 'mlx5_0' in hosts


@pytest.mark.parametrize('where, value, words', [
    ('gpu', 22, 'nvswitch_pci_device'), ('gpu', '22A3', 'nvswitch_pci_device'), ('bridge', 3, 'cannot be on a rail')])
def test_profile_checks_the_switch_id_and_the_bridges(where, value, words):
    from hwsim import profile as profiles  # pylint: disable=import-outside-toplevel
    data = profiles.load('hgx-b200-ib' if where == 'bridge' else 'hgx-h100-ib')
    if where == 'gpu':
        data['gpus']['nvswitch_pci_device'] = value
    else:
        profiles.find_hca(data, 'mlx5_10')['rail'] = value
    with pytest.raises(profiles.ProfileError, match=words):
        profiles.check(data)
