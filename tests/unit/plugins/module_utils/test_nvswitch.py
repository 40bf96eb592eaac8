# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/nvswitch: PCI VPD parsing and the NVSwitch generation decision.

The VPD fixtures are built from a real ConnectX-7's ``lspci -vv`` (linux-pci, "PCI/sysfs: Fix read permissions for
VPD attributes", 2024-11-03, Leon Romanovsky):

    Product Name: NVIDIA ConnectX-7 HHHL adapter Card, 200GbE / NDR200 IB, Dual-port QSFP112, PCIe 5.0 x16 ...
    [PN] Part number: MCX713106AEHEA_QP1          [EC] Engineering changes: A5
    [V2] Vendor specific: MCX713106AEHEA_QP1      [SN] Serial number: MT2314XZ0JUZ
    [V3] Vendor specific: 0a5efb8958deed118000946dae7db798
    [VA] Vendor specific: MLX:MN=MLNX:CSKU=V2:UUID=V3:PCI=V0:MODL=CX713106A
    [V0] Vendor specific: PCIeGen5 x16            [VU] Vendor specific: MT2314XZ0JUZMLNXS0D0F0
    [RV] Reserved: checksum good, 1 byte(s) reserved

The bridge's differs by ``SMDL=SW_MNG`` (Fabric Manager user guide, quoted in siderolabs/extensions
nvidia-fabricmanager-wrapper/nvswitch.go); where the field sits in a real bridge's VPD is not public, so both a VA
entry and a keyword of its own are tested.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.nvswitch import (
    build_vpd, is_bridge_vpd, nvswitch_plan, parse_vpd, vendor_fields)

CX7_NAME = ('NVIDIA ConnectX-7 HHHL adapter Card, 200GbE / NDR200 IB, Dual-port QSFP112, PCIe 5.0 x16 with x16 PCIe '
            'extension option, Crypto, Secure Boot Capable')
CX7_FIELDS = [('PN', 'MCX713106AEHEA_QP1'), ('EC', 'A5'), ('V2', 'MCX713106AEHEA_QP1'), ('SN', 'MT2314XZ0JUZ'),
              ('V3', '0a5efb8958deed118000946dae7db798'), ('VA', 'MLX:MN=MLNX:CSKU=V2:UUID=V3:PCI=V0:MODL=CX713106A'),
              ('V0', 'PCIeGen5 x16'), ('VU', 'MT2314XZ0JUZMLNXS0D0F0')]
CX7_VPD = build_vpd(CX7_NAME, CX7_FIELDS)
BRIDGE_VA_VPD = build_vpd(CX7_NAME, [(key, value + ':SMDL=SW_MNG' if key == 'VA' else value) for key, value in CX7_FIELDS])
BRIDGE_OWN_VPD = build_vpd(CX7_NAME, CX7_FIELDS + [('V4', 'SMDL=SW_MNG')])


def test_the_real_connectx7_layout_parses_to_what_lspci_prints():
    vpd = parse_vpd(CX7_VPD)
    assert vpd['product_name'] == CX7_NAME
    assert vpd['read_only'] == dict(CX7_FIELDS)
    assert vpd['checksum_ok'] is True  # lspci: "checksum good, 1 byte(s) reserved"
    assert vendor_fields(vpd) == {'MN': 'MLNX', 'CSKU': 'V2', 'UUID': 'V3', 'PCI': 'V0', 'MODL': 'CX713106A'}
    assert CX7_VPD[0] == 0x82 and CX7_VPD[-1] == 0x78
    assert is_bridge_vpd(CX7_VPD) is False


@pytest.mark.parametrize('data', [BRIDGE_VA_VPD, BRIDGE_OWN_VPD], ids=['va-field', 'own-keyword'])
def test_a_bridge_is_found_wherever_its_field_sits(data):
    assert is_bridge_vpd(data) is True
    assert vendor_fields(parse_vpd(data))['SMDL'] == 'SW_MNG'


def test_padding_after_the_end_and_a_bad_checksum():
    padded = CX7_VPD + b'\xff' * 64  # sysfs vpd of some functions: the rest of the VPD window
    assert parse_vpd(padded)['read_only']['SN'] == 'MT2314XZ0JUZ'
    rv = CX7_VPD.rindex(b'RV\x02')
    broken = CX7_VPD[:rv + 3] + bytes([(CX7_VPD[rv + 3] + 1) & 0xff]) + CX7_VPD[rv + 4:]
    assert parse_vpd(broken)['checksum_ok'] is False


@pytest.mark.parametrize('data, words', [
    (b'', 'no VPD identifier'),
    (b'\x82\x40\x00short', 'claims 64 bytes'),
    (b'\x10\x00', 'small resource 0x10'),
    (b'\x82\x02\x00ab\x90\x05\x00PN\x09abc', 'runs past'),
    (b'\x83\x01\x00a', 'not 0x82, 0x90 or 0x91'),
], ids=['empty', 'truncated', 'small-resource', 'keyword-overrun', 'unknown-tag'])
def test_what_is_not_vpd(data, words):
    with pytest.raises(ParseError, match=words):
        parse_vpd(data)


def test_an_unparsable_vpd_with_the_marker_is_still_a_bridge():
    """NVIDIA's driver container greps the bytes; so does the decision."""
    assert is_bridge_vpd(b'\x00garbage SW_MNG garbage') is True


def _switch(address, device='0x22a3'):
    return {'address': address, 'vendor': '0x10de', 'device': device, 'class': '0x068000'}


def _hca(address, vpd, names=(), error=None):
    return {'address': address, 'vendor': '0x15b3', 'device': '0x1021', 'class': '0x020700', 'vpd': vpd,
            'vpd_error': error, 'ib_devices': list(names)}


GPU = {'address': '0000:1b:00.0', 'vendor': '0x10de', 'device': '0x2330', 'class': '0x030200'}
B200_GPU = dict(GPU, device='0x2901')  # the B200 GPU (GB100): not a switch


def test_a_fresh_h100_node_has_nvlink4_from_its_pci_ids_alone():
    """Before the driver: no /dev/nvidia-nvswitch*, no proc tree (None), the four 10de:22a3 functions decide."""
    devices = [GPU] + [_switch('0000:%02x:00.0' % bus) for bus in (5, 6, 7, 8)] + [_hca('0000:18:00.0', CX7_VPD, ['mlx5_0'])]
    plan = nvswitch_plan(devices, None)
    assert plan['generation'] == 4 and plan['baseboard'] == 'HGX H100/H200' and plan['source'] == 'pci'
    assert [item['address'] for item in plan['nvswitches']] == ['0000:05:00.0', '0000:06:00.0', '0000:07:00.0', '0000:08:00.0']
    assert plan['fabric_manager'] is True and plan['nvlsm'] is False
    assert plan['kernel_modules'] == [] and plan['bridges'] == [] and plan['warnings'] == []


def test_a100_is_nvlink3_and_a_pcie_node_has_none():
    assert nvswitch_plan([GPU] + [_switch('0000:0%d:00.0' % n, '0x1af1') for n in range(6)])['generation'] == 3
    plain = nvswitch_plan([GPU, _hca('0000:18:00.0', CX7_VPD, ['mlx5_0'])], None)
    assert plain['generation'] == 0 and plain['fabric_manager'] is False and plain['source'] is None


def test_b200_is_nvlink5_from_its_bridges():
    devices = [B200_GPU, _hca('0000:18:00.0', CX7_VPD, ['mlx5_0'])] + [
        _hca('0000:e4:00.%d' % n, BRIDGE_VA_VPD, ['mlx5_%d' % (10 + n)]) for n in (0, 1)]
    plan = nvswitch_plan(devices, None)
    assert plan['generation'] == 5 and plan['source'] == 'vpd' and plan['nvswitches'] == []
    assert plan['bridge_devices'] == ['mlx5_10', 'mlx5_11']
    assert plan['bridges'][0] == {'address': '0000:e4:00.0', 'device_id': '15b3:1021', 'ib_devices': ['mlx5_10'], 'field': 'SW_MNG'}
    assert plan['fabric_manager'] is True and plan['nvlsm'] is True
    assert plan['kernel_modules'] == ['mlx5_ib', 'ib_umad']


def test_bridges_before_mlx5_ib_have_no_names_but_still_decide():
    plan = nvswitch_plan([_hca('0000:e4:00.0', BRIDGE_OWN_VPD)], None)
    assert plan['generation'] == 5 and plan['bridge_devices'] == [] and plan['bridges'][0]['ib_devices'] == []


def test_the_driver_proc_tree_counts_switches_sysfs_did_not_show():
    plan = nvswitch_plan([], ['0000:05:00.0'])
    assert plan['generation'] is None and plan['fabric_manager'] is True and plan['source'] == 'proc'
    assert 'generation is unknown' in plan['warnings'][0]
    known = nvswitch_plan([_switch('0000:05:00.0')], ['0000:05:00.0'])
    assert known['generation'] == 4 and len(known['nvswitches']) == 1


def test_an_unreadable_vpd_is_said_when_no_bridge_was_found():
    plan = nvswitch_plan([_hca('0000:18:00.0', None, ['mlx5_0'], error='Permission denied')], None)
    assert plan['generation'] == 0 and 'Permission denied' in plan['warnings'][0] and '6.13' in plan['warnings'][0]
