# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/mlxfwmanager.py (``mlxfwmanager --query``; own -handmade fixtures, laid out as
MFT 4.22-4.30 prints its report: PCI device names in each of the tool's forms, masked GUIDs, ROM names with spaces,
an unindented field, the ``FW (Running)`` row of a reset pending, and the no-device error)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from hypothesis import given

from _fuzz import FUZZ_SETTINGS, texts_from, only_parse_error
from _paths import own_fixture, fixture_files, read_fixture

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.mlxfwmanager import parse_mlxfwmanager_query

TWO_CX7 = 'mlxfwmanager/mlxfwmanager-mft-4.30-cx7-ndr-two-hcas-one-behind-handmade.txt'
PENDING = 'mlxfwmanager/mlxfwmanager-mft-4.30-cx7-bf3-reset-pending-virtio-roms-handmade.txt'
OEM = 'mlxfwmanager/mlxfwmanager-mft-4.22-cx6dx-cx3pro-oem-pci-names-handmade.txt'
NONE = 'mlxfwmanager/mlxfwmanager-mft-4.30-no-devices-handmade.txt'


def _summary(device):
    return (device['index'], device['device'], device['psid'], device['fw'], device['fw_running'],
            device['fw_available'], device['status'])


def test_two_connectx7_one_behind():
    parsed = parse_mlxfwmanager_query(own_fixture(TWO_CX7))
    assert [_summary(d) for d in parsed['devices']] == [
        (1, '/dev/mst/mt4129_pciconf0', 'MT_0000000838', '28.43.2026', '28.43.2026', None, 'No matching image found'),
        (2, '/dev/mst/mt4129_pciconf1', 'MT_0000000838', '28.39.1002', '28.39.1002', None, 'No matching image found'),
    ]
    first = parsed['devices'][0]
    assert first['device_type'] == 'ConnectX7'
    assert first['part_number'] == 'MCX75310AAS-NEA_Ax'
    assert first['description'].startswith('NVIDIA ConnectX-7 HHHL Adapter card; 400GbE / NDR IB')
    assert first['base_guid'] == 'a088c2030051e6a0' and first['base_mac'] == 'a088c251e6a0'
    assert first['versions'] == {'FW': {'current': '28.43.2026', 'available': None},
                                 'PXE': {'current': '3.7.0500', 'available': None},
                                 'UEFI': {'current': '14.36.0016', 'available': None}}
    assert parsed['errors'] == [] and parsed['warnings'] == []


def test_reset_pending_and_rom_names_with_spaces():
    parsed = parse_mlxfwmanager_query(own_fixture(PENDING))
    assert [_summary(d) for d in parsed['devices']] == [
        (1, '0000:3b:00.0', 'MT_0000000834', '28.43.2026', '28.41.1000', '28.43.2026', 'Up to date'),
        (2, '/dev/mst/mt41692_pciconf0', 'MT_0000000884', '32.43.1014', '32.43.1014', '32.43.2024', 'Update required'),
    ]
    bluefield = parsed['devices'][1]
    # "Device Type:" printed without its indent is still the device's
    assert bluefield['device_type'] == 'BlueField3'
    assert list(bluefield['versions']) == ['FW', 'NVMe', 'PXE', 'UEFI', 'UEFI Virtio blk', 'UEFI Virtio net']
    assert bluefield['versions']['UEFI Virtio net'] == {'current': '21.4.0014', 'available': None}
    assert bluefield['base_guid'] == '****************'
    assert parsed['devices'][0]['versions']['FW (Running)'] == {'current': '28.41.1000', 'available': None}


def test_oem_psid_short_pci_names_port_guids_and_warning():
    parsed = parse_mlxfwmanager_query(own_fixture(OEM))
    assert [_summary(d) for d in parsed['devices']] == [
        (1, 'c1:00.0', 'MT_0000000359', '22.39.1002', '22.39.1002', None, 'No matching image found'),
        (2, 'mt4103_pci_cr0', 'HP_1380110017', '2.42.5000', '2.42.5000', None, 'No matching image found'),
    ]
    assert parsed['devices'][1]['base_guid'] is None
    assert parsed['devices'][1]['versions']['CLP'] == {'current': '8025', 'available': None}
    assert parsed['warnings'] == ['Skipping device mt4099_pci_cr0 (wording made up for this fixture)']


def test_no_devices_is_an_error_line_not_a_parse_error():
    parsed = parse_mlxfwmanager_query(own_fixture(NONE))
    assert parsed['devices'] == []
    assert parsed['errors'] == ["No devices found or specified, mst might be stopped, run 'mst start' to load MST modules"]


def test_crlf_and_tabs_read_the_same():
    text = own_fixture(PENDING)
    assert parse_mlxfwmanager_query(text.replace('\n', '\r\n')) == parse_mlxfwmanager_query(text)
    assert parse_mlxfwmanager_query(text.replace('   ', '\t')) == parse_mlxfwmanager_query(text)


@pytest.mark.parametrize('text', [
    '',
    'hca_id:\tmlx5_0\n\ttransport:\t\t\tInfiniBand (0)\n',
    'sh: 1: mlxfwmanager: not found\n',
    42,
], ids=['empty', 'ibv_devinfo', 'shell-error', 'not-text'])
def test_not_mlxfwmanager_output(text):
    with pytest.raises(ParseError):
        parse_mlxfwmanager_query(text)


def test_header_alone_is_no_device():
    assert parse_mlxfwmanager_query('Querying Mellanox devices firmware ...\n') == {
        'devices': [], 'errors': [], 'warnings': []}


@FUZZ_SETTINGS
@given(texts_from([read_fixture(k, p) for k, p in fixture_files('mlxfwmanager')]))
def test_fuzz_only_parse_error(text):
    result = only_parse_error(parse_mlxfwmanager_query, text)
    if result is not None:
        for device in result['devices']:
            assert isinstance(device['index'], int)
            assert device['fw_running'] == (device['versions'].get('FW (Running)', {}).get('current') or device['fw'])
