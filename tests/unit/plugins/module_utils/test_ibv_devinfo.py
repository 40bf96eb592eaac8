# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ibv_devinfo: each adapter's firmware and PSID (board_id), each port's active and maximum RDMA path MTU."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from _paths import own_fixture, real_fixture

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.ibv_devinfo import parse_ibv_devinfo


def test_real_capture_hdr100():
    hcas = parse_ibv_devinfo(real_fixture('ibv_devinfo/kaust-ibex-cx6-hdr100-rdma-core-tabs.txt'))
    assert hcas == [{'name': 'mlx5_0', 'fw_ver': '20.35.1012', 'board_id': 'MT_0000000222', 'ports': [
        {'port': 1, 'state': 'PORT_ACTIVE', 'max_mtu': 4096, 'active_mtu': 4096, 'link_layer': 'InfiniBand'}]}]


def test_roce_ports_at_mtu_9000_and_1500():
    hcas = parse_ibv_devinfo(own_fixture('ibv_devinfo/ibv_devinfo-rdma-core-cx7-roce-mtu9000-mtu1500-handmade.txt'))
    assert [hca['name'] for hca in hcas] == ['mlx5_0', 'mlx5_1', 'mlx5_2']
    assert [(hca['ports'][0]['active_mtu'], hca['ports'][0]['state']) for hca in hcas] == [
        (4096, 'PORT_ACTIVE'), (1024, 'PORT_ACTIVE'), (1024, 'PORT_DOWN')]
    assert all(hca['ports'][0]['max_mtu'] == 4096 and hca['ports'][0]['link_layer'] == 'Ethernet' for hca in hcas)
    assert [(hca['fw_ver'], hca['board_id']) for hca in hcas] == [
        ('28.39.1002', 'MT_0000000838'), ('28.39.1002', 'MT_0000000838'), ('22.39.1002', 'MT_0000000838')]


def test_board_id_absent_or_empty_is_none():
    text = 'hca_id:\tmlx5_0\n\tfw_ver:\t\t\t\t28.39.1002\n\tboard_id:\t\t\t\n\t\tport:\t1\n'
    assert parse_ibv_devinfo(text)[0]['board_id'] is None
    assert parse_ibv_devinfo('hca_id:\tmlx5_0\n')[0] == {'name': 'mlx5_0', 'fw_ver': None, 'board_id': None, 'ports': []}


@pytest.mark.parametrize('text', ['', 'No IB devices found\n', 'Usage: ibv_devinfo\n'], ids=['empty', 'no-devices', 'usage'])
def test_not_devinfo_output(text):
    with pytest.raises(ParseError):
        parse_ibv_devinfo(text)
