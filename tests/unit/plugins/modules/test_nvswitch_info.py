# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvswitch_info: the generation from a sysfs/proc tree (sysfs_root/proc_root), no command run."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.aicluster.infra.plugins.module_utils.nvswitch import build_vpd
from ansible_collections.aicluster.infra.plugins.modules import nvswitch_info

FIELDS = [('PN', 'MCX75310AAS-NEAT'), ('SN', 'MT2314XZ0JUZ'), ('VA', 'MLX:MN=MLNX:CSKU=V2:UUID=V3:PCI=V0:MODL=CX75310A')]


def _function(root, address, vendor, device, klass, vpd=None, ib=()):
    folder = root / 'sys' / 'bus' / 'pci' / 'devices' / address
    folder.mkdir(parents=True)
    for name, value in (('vendor', vendor), ('device', device), ('class', klass)):
        (folder / name).write_text(value + '\n')
    if vpd is not None:
        (folder / 'vpd').write_bytes(vpd)
    for name in ib:
        (folder / 'infiniband' / name).mkdir(parents=True)
    return folder


def _args(root):
    return {'sysfs_root': str(root / 'sys'), 'proc_root': str(root / 'proc')}


def test_h100_before_the_driver(run_module, tmp_path):
    for bus in range(5, 9):
        _function(tmp_path, '0000:%02x:00.0' % bus, '0x10de', '0x22a3', '0x068000')
    _function(tmp_path, '0000:1b:00.0', '0x10de', '0x2330', '0x030200')
    _function(tmp_path, '0000:18:00.0', '0x15b3', '0x1021', '0x020700', build_vpd('ConnectX-7', FIELDS), ['mlx5_0'])
    result, calls = run_module(nvswitch_info, _args(tmp_path), {})
    assert calls == [] and result['changed'] is False
    assert result['generation'] == 4 and len(result['nvswitches']) == 4 and result['fabric_manager'] is True
    assert result['nvlsm'] is False and result['bridge_devices'] == [] and not result.get('warnings')


def test_b200_bridges_and_their_rdma_devices(run_module, tmp_path):
    _function(tmp_path, '0000:1b:00.0', '0x10de', '0x2901', '0x030200')
    _function(tmp_path, '0000:18:00.0', '0x15b3', '0x1021', '0x020700', build_vpd('ConnectX-7', FIELDS), ['mlx5_0'])
    bridge = build_vpd('ConnectX-7', FIELDS[:2] + [('VA', FIELDS[2][1] + ':SMDL=SW_MNG')])
    _function(tmp_path, '0000:e4:00.0', '0x15b3', '0x1021', '0x020700', bridge, ['mlx5_10'])
    _function(tmp_path, '0000:e4:00.1', '0x15b3', '0x1021', '0x020700', bridge, ['mlx5_11'])
    result, _calls = run_module(nvswitch_info, _args(tmp_path), {})
    assert result['generation'] == 5 and result['source'] == 'vpd'
    assert result['bridge_devices'] == ['mlx5_10', 'mlx5_11']
    assert 'packages' not in result and result['kernel_modules'] == ['mlx5_ib', 'ib_umad']


def test_the_proc_tree_of_a_loaded_driver(run_module, tmp_path):
    (tmp_path / 'proc' / 'driver' / 'nvidia-nvswitch' / 'devices' / '0000:05:00.0').mkdir(parents=True)
    _function(tmp_path, '0000:05:00.0', '0x10de', '0x22a3', '0x068000')
    result, _calls = run_module(nvswitch_info, _args(tmp_path), {})
    assert result['generation'] == 4 and len(result['nvswitches']) == 1


def test_a_container_without_pci_functions(run_module, tmp_path):
    result, _calls = run_module(nvswitch_info, _args(tmp_path), {})
    assert result['generation'] == 0 and result['fabric_manager'] is False and result['nvswitches'] == []


def test_an_unreadable_vpd_is_warned(run_module, tmp_path):
    folder = _function(tmp_path, '0000:18:00.0', '0x15b3', '0x1021', '0x020700', b'x', ['mlx5_0'])
    os.chmod(str(folder / 'vpd'), 0)
    try:
        result, _calls = run_module(nvswitch_info, _args(tmp_path), {})
    finally:
        os.chmod(str(folder / 'vpd'), 0o600)
    if os.geteuid() == 0:  # root reads a mode-0 file: nothing to warn about
        assert not result.get('warnings')
    else:
        assert any('0000:18:00.0' in text for text in result['warnings'])
