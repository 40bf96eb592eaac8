# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The roce role's plan (module_utils/roce.py): which ports are the RoCE GPU fabric (never the storage NIC unless
listed), the InfiniBand and empty hosts left alone, one line per bad variable naming it and its allowed values, the
QoS settings for rdma_qos and the boot-time script, the unit's ordering per stack, the addresses, and the shared
network helpers (module_utils/netconf.py) as role roce uses them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml

from _paths import REPO

from ansible_collections.aicluster.infra.plugins.module_utils import netconf, rdma_qos_host, roce

COMPUTE = ['mlx5_0', 'mlx5_3', 'mlx5_4', 'mlx5_5', 'mlx5_6', 'mlx5_7', 'mlx5_8', 'mlx5_9']


def _profile_info(name):
    """ib_info as the module returns it for an hwsim profile's node (name, ca_type, board_id, ports)."""
    with open(os.path.join(REPO, 'lab', 'hwsim', 'profiles', name + '.yml'), encoding='utf-8') as handle:
        profile = yaml.safe_load(handle)
    return {'hcas': [{'name': hca['name'], 'ca_type': hca['ca_type'], 'board_id': hca['board_id'],
                      'ports': [{'port': port['port'], 'link_layer': port['link_layer'], 'netdev': port.get('netdev'),
                                 'state': port['state'], 'rate_gbps': float(port['rate'])}
                                for port in hca['ports']]}
                     for hca in profile['hcas']]}


ROCE = _profile_info('hgx-h100-roce')
IB = _profile_info('hgx-h100-ib')


def _eth(count, ca_type='MT4129', board='MT_0000000838'):
    return {'hcas': [{'name': 'mlx5_%d' % n, 'ca_type': ca_type, 'board_id': board,
                      'ports': [{'port': 1, 'link_layer': 'Ethernet', 'netdev': 'eth%d' % n}]} for n in range(count)]}


def test_the_listed_rails_are_the_gpu_fabric_and_the_storage_nic_is_left_alone():
    plan = roce._plan({'rails': COMPUTE}, ROCE)
    assert plan['problems'] == [] and plan['skip'] is None
    assert [port['hca'] for port in plan['ports']] == COMPUTE
    assert [port['netdev'] for port in plan['ports']][:2] == ['enp24s0np0', 'enp64s0np0']
    assert [port['rail'] for port in plan['ports']] == list(range(8))
    assert not any(port['netdev'].startswith('enp170s0') for port in plan['ports'])   # mlx5_1/2: the CX-6 Dx
    # netdevs name the rails as well as HCAs do
    by_netdev = roce._plan({'rails': ['enp64s0np0', 'mlx5_0']}, ROCE)
    assert [port['hca'] for port in by_netdev['ports']] == ['mlx5_3', 'mlx5_0']


def test_without_a_list_two_adapter_models_are_refused_never_guessed():
    plan = roce._plan({}, ROCE)
    assert plan['ports'] == [] and plan['skip'] is None
    assert plan['problems'] == [
        "roce_rails: this host's Ethernet RDMA ports are of 2 adapter models (MT4125 MT_0000000359: mlx5_1, mlx5_2; "
        "MT4129 MT_0000000838: mlx5_0, mlx5_3, mlx5_4, mlx5_5, mlx5_6, mlx5_7, mlx5_8, mlx5_9); list the GPU-fabric "
        "ones in roce_rails (or verify_ib_hcas), so that no storage or management port is taken for the GPU fabric"]


def test_without_a_list_one_adapter_model_is_the_gpu_fabric_in_device_order():
    info = _eth(12)
    plan = roce._plan({}, info)
    assert plan['problems'] == []
    assert [port['hca'] for port in plan['ports']][:4] == ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3']
    assert [port['hca'] for port in plan['ports']][-2:] == ['mlx5_10', 'mlx5_11']   # mlx5_10 after mlx5_9


@pytest.mark.parametrize('settings, info, skip', [
    ({}, IB, roce.INFINIBAND_SKIP),
    ({'rails': COMPUTE}, IB, roce.INFINIBAND_SKIP),     # the site's verify_ib_hcas on an InfiniBand fleet
    ({}, {'hcas': []}, roce.NO_HCA_SKIP),
    ({}, {'hcas': [{'name': 'mlx5_0', 'nvswitch_bridge': True,
                    'ports': [{'port': 1, 'link_layer': 'Ethernet', 'netdev': 'eth0'}]}]}, roce.NO_HCA_SKIP),
    ({}, {'hcas': [{'name': 'mlx5_0', 'ports': [{'port': 1, 'link_layer': 'Ethernet'}]}]}, roce.NO_PORT_SKIP),
], ids=['ib-default', 'ib-listed', 'no-hca', 'nvswitch-bridge-only', 'no-netdev'])
def test_hosts_left_alone(settings, info, skip):
    plan = roce._plan(settings, info)
    assert plan['skip'] == skip and plan['problems'] == [] and plan['ports'] == []
    assert roce.roce_plan(settings, info)['skip'] == skip


def test_a_listed_rail_that_is_infiniband_or_unknown_among_ethernet_ones_is_refused():
    infiniband = {'name': 'mlx5_10', 'ports': [{'port': 1, 'link_layer': 'InfiniBand', 'netdev': 'ibp1s0'}]}
    mixed = {'hcas': ROCE['hcas'] + [infiniband]}
    plan = roce._plan({'rails': ['mlx5_0', 'mlx5_10', 'mlx5_99'], 'port': 1}, mixed)
    assert plan['problems'] == [
        'roce_rails: mlx5_99 is neither an HCA nor an HCA netdev on this host (ib_info has mlx5_0, mlx5_1, mlx5_10, '
        'mlx5_2, mlx5_3, mlx5_4, mlx5_5, mlx5_6, mlx5_7, mlx5_8, mlx5_9)',
        'roce_rails: mlx5_10 port 1 is InfiniBand; RoCE needs an Ethernet port']
    assert roce._plan({'rails': ['mlx5_0'], 'port': 2}, ROCE)['problems'] == ['roce_port: mlx5_0 has no port 2']
    with pytest.raises(ValueError, match='mlx5_99 is neither'):
        roce.roce_plan({'rails': ['mlx5_99']}, ROCE)


def test_every_bad_variable_is_one_line_naming_it_and_its_allowed_values():
    settings = {'rails': COMPUTE, 'trust': 'vlan', 'stack': 'ofed', 'qos_tool': 'lldptool', 'mtu': 65520,
                'offset': -1, 'pfc_priorities': [3, 8], 'ecn_priorities': [-1], 'dscp_map': {26: 3, 64: 9},
                'cnp_dscp': 70, 'cnp_prio': 8, 'tos': 256, 'mode': 'RoCE v3', 'traffic_class': 'x',
                'sysfs_root': 'sys', 'mlnx_qos_path': 'mlnx_qos', 'port': 1}
    assert roce.roce_problems(settings, ROCE) == [
        "roce_trust must be one of dscp, pcp, got 'vlan'",
        "roce_qos_tool must be one of auto, mlnx_qos, dcb, got 'lldptool'",
        "roce_stack must be one of doca, mlnx_ofed, inbox, got 'ofed'",
        'roce_mtu must be an MTU in bytes (allowed: 1280-9978; 9000 for RoCE, the switch ports at 9216 or more), '
        'got 65520',
        'roce_address_offset must be a non-negative integer, got -1',
        "roce_sysfs_root must be an absolute path, got 'sys'",
        "roce_mlnx_qos_path must be an absolute path or empty (found on the PATH), got 'mlnx_qos'",
        'roce_pfc_priorities: 8 is not a priority (allowed: 0-7)',
        'roce_ecn_priorities: -1 is not a priority (allowed: 0-7)',
        'roce_dscp_map: 64 is not a DSCP (allowed: 0-63); 9 (for DSCP 64) is not a priority (allowed: 0-7)',
        'roce_cnp_dscp: 70 is not a DSCP (allowed: 0-63, or null to leave it)',
        'roce_cnp_prio: 8 is not a priority (allowed: 0-7, or null to leave it)',
        'roce_tos: 256 is not a ToS (allowed: 0-255, or null to leave it)',
        'roce_traffic_class: x is not a traffic class (allowed: 0-255, or null to leave it)',
        "roce_mode: 'RoCE v3' is not a RoCE mode (allowed: RoCE v2, IB/RoCE v1, or null to leave it)"]


def test_bad_shapes_are_named_without_a_traceback():
    problems = roce.roce_problems({'rails': 'mlx5_0', 'pfc_priorities': 3, 'dscp_map': [26, 3], 'addresses': 'x',
                                   'port': 0}, ROCE)
    assert problems == [
        'roce_pfc_priorities must be a list of priorities (allowed: 0-7), got 3',
        'roce_dscp_map must be a dict of DSCP (0-63) -> priority (0-7), got [26, 3]',
        "roce_addresses must be a dict of netdev -> address/prefix, got 'x'",
        "roce_rails must be a list of HCA names or netdevs, got 'mlx5_0'",
        'roce_port must be a positive integer (the RDMA port of the netdev, 1 for a single-port function), got 0',
        # rails that are not a list count as none: the host's own adapter models are then refused
        problems[-1]]
    assert problems[-1].startswith("roce_rails: this host's Ethernet RDMA ports are of 2 adapter models")


def test_dcb_needs_a_dscp_entry_and_pcp_trust_through_dcb_needs_none():
    assert roce.roce_problems({'rails': COMPUTE, 'stack': 'inbox', 'dscp_map': {}}, ROCE) == [
        'roce_dscp_map: empty, but trust dscp through dcb needs at least one DSCP entry (allowed: DSCP 0-63 to '
        'priority 0-7; mlx5 trusts DSCP exactly while DSCP APP entries exist)']
    assert roce.roce_problems({'rails': COMPUTE, 'stack': 'inbox', 'dscp_map': {}, 'trust': 'pcp'}, ROCE) == []


@pytest.mark.parametrize('stack, requested, tool, after, part_of', [
    ('doca', 'auto', 'mlnx_qos', ['openibd.service', 'sys-kernel-config.mount', 'network.target'], ['openibd.service']),
    ('mlnx_ofed', 'auto', 'mlnx_qos', ['openibd.service', 'sys-kernel-config.mount', 'network.target'],
     ['openibd.service']),
    ('inbox', 'auto', 'dcb', ['rdma-load-modules@rdma.service', 'sys-kernel-config.mount', 'network.target'], []),
    ('inbox', 'mlnx_qos', 'mlnx_qos', ['rdma-load-modules@rdma.service', 'sys-kernel-config.mount',
                                       'network.target'], []),
], ids=['doca', 'mlnx_ofed', 'inbox', 'inbox-mlnx_qos'])
def test_the_tool_and_the_unit_order_follow_the_stack(stack, requested, tool, after, part_of):
    plan = roce.roce_plan({'rails': COMPUTE, 'stack': stack, 'qos_tool': requested}, ROCE)
    assert plan['tool'] == plan['qos']['tool'] == tool
    assert plan['unit'] == {'after': after, 'part_of': part_of}


def test_the_qos_settings_are_the_modules_parameters_and_the_file_the_scripts():
    plan = roce.roce_plan({'rails': COMPUTE[:2], 'dscp_map': {'26': '3', 48: 7}, 'cnp_prio': 7, 'traffic_class': None,
                           'sysfs_root': '/run/hwsim/sys', 'configfs_root': '/run/hwsim/config'}, ROCE)
    assert plan['qos'] == {
        'trust': 'dscp', 'pfc_priorities': [3], 'dscp_map': {'26': 3, '48': 7}, 'ecn_priorities': [3],
        'cnp_dscp': 48, 'cnp_prio': 7, 'roce_tos': 106, 'roce_mode': 'RoCE v2', 'traffic_class': None,
        'tool': 'mlnx_qos', 'mlnx_qos_path': None, 'dcb_path': None, 'sysfs_root': '/run/hwsim/sys',
        'configfs_root': '/run/hwsim/config'}
    assert plan['settings_file'] == {'version': 1, 'qos': plan['qos'],
                                     'ports': [{'netdev': 'enp24s0np0', 'port': 1}, {'netdev': 'enp64s0np0', 'port': 1}]}
    # what the script reads back: each port's module parameters, every key one the module knows
    params = rdma_qos_host.load_settings(plan['settings_file'])
    assert [item['netdev'] for item in params] == ['enp24s0np0', 'enp64s0np0']
    assert set(params[0]) - {'netdev', 'port'} <= set(rdma_qos_host.DEFAULTS)


def test_the_settings_file_is_refused_when_it_is_not_one():
    with pytest.raises(ValueError, match='not a version 1 RoCE settings file'):
        rdma_qos_host.load_settings({'ports': []})
    with pytest.raises(ValueError, match='qos has unknown keys: pfc'):
        rdma_qos_host.load_settings({'version': 1, 'ports': [], 'qos': {'pfc': [3]}})
    with pytest.raises(ValueError, match='ports must be a list'):
        rdma_qos_host.load_settings({'version': 1, 'ports': [{'port': 1}], 'qos': {}})


def test_mtu_and_addresses_per_rail():
    plan = roce.roce_plan({'rails': COMPUTE, 'subnets': ['10.100.%d.0/24' % n for n in range(8)], 'node_index': 2,
                           'fleet_size': 4, 'offset': 10}, ROCE)
    assert [item['address'] for item in plan['interfaces']][:2] == ['10.100.0.13/24', '10.100.1.13/24']
    assert {item['mtu'] for item in plan['interfaces']} == {9000}
    assert plan['interfaces'][0] == {'name': 'enp24s0np0', 'parent': None, 'pkey': None, 'hca': 'mlx5_0', 'rail': 0,
                                     'address': '10.100.0.13/24', 'mtu': 9000}
    given = roce.roce_plan({'rails': COMPUTE[:1], 'addresses': {'enp24s0np0': '192.168.7.9/24'}, 'mtu': 4200}, ROCE)
    assert given['interfaces'][0]['address'] == '192.168.7.9/24' and given['interfaces'][0]['mtu'] == 4200
    # no subnet and no address: the MTU alone is managed
    assert [item['address'] for item in roce.roce_plan({'rails': COMPUTE}, ROCE)['interfaces']] == [None] * 8


def test_address_problems_name_the_roce_variables():
    problems = roce.roce_problems({'rails': COMPUTE, 'subnets': ['10.100.0.0/24', '10.100.0.128/25', 'x'],
                                   'node_index': -1, 'fleet_size': 4, 'addresses': {'eth9': '10.1.1.1/24'}}, ROCE)
    assert problems[:4] == [
        'roce_subnets has 3 subnet(s) for 8 rail(s); give one subnet per rail',
        'roce_subnets[1] 10.100.0.128/25 overlaps roce_subnets[0] 10.100.0.0/24; each rail needs its own subnet',
        problems[2],
        'roce_addresses: eth9 is not among this host\'s RoCE GPU-fabric netdevs (enp24s0np0, enp64s0np0, enp79s0np0, '
        'enp94s0np0, enp154s0np0, enp192s0np0, enp206s0np0, enp220s0np0)']
    assert problems[2].startswith("roce_subnets[2]: 'x' is not a subnet in CIDR form")
    assert problems[4] == ('roce_node_index: this host has no index (not in roce_fleet) and roce_addresses has no '
                           'address for enp24s0np0; set one of them')


def test_fleet_duplicates_name_the_roce_variables():
    plans = {'gpu01': {'interfaces': [{'name': 'enp24s0np0', 'address': '10.100.0.2/24'}]},
             'gpu02': {'interfaces': [{'name': 'enp24s0np0', 'address': '10.100.0.2/24'},
                                      {'name': 'enp64s0np0', 'address': None}]}}
    assert roce.fleet_problems(plans) == [
        'roce_addresses/roce_node_index: 10.100.0.2 is given to gpu01 enp24s0np0, gpu02 enp24s0np0; every interface '
        'needs its own address']


def test_the_renderer_names_roce_renderer():
    facts = {'distribution': 'Debian', 'os_family': 'Debian', 'networkd_active': True}
    assert roce.roce_renderer(facts) == 'networkd'
    assert roce.roce_renderer(facts, 'netplan') == 'netplan'
    with pytest.raises(ValueError, match='set roce_renderer'):
        roce.roce_renderer({'distribution': 'Ubuntu', 'os_family': 'Debian'})
    with pytest.raises(ValueError, match=r'^no RoCE renderer for Gentoo \(Gentoo\); set roce_renderer'):
        roce.roce_renderer({'distribution': 'Gentoo', 'os_family': 'Gentoo'})


def test_live_problems_judge_an_ethernet_netdev_without_a_planned_address_on_its_mtu_alone():
    links = [{'ifname': 'enp24s0np0', 'mtu': 1500, 'addr_info': [{'family': 'inet', 'local': '10.9.9.9'}]},
             {'ifname': 'enp64s0np0', 'mtu': 9000, 'addr_info': []}]
    interfaces = [{'name': 'enp24s0np0', 'address': None, 'mtu': 9000},
                  {'name': 'enp64s0np0', 'address': '10.100.1.2/24', 'mtu': 9000},
                  {'name': 'enp79s0np0', 'address': None, 'mtu': 9000}]
    assert netconf.live_problems(interfaces, links) == [
        'enp24s0np0 has MTU 1500, the plan 9000', 'enp64s0np0 has no IPv4 address, the plan 10.100.1.2',
        'enp79s0np0 does not exist']
