# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/nccl_conf.py: the nccl role's variables, its warnings for NCCL variables that are no defaults, the
RoCE v2 GID index per node, one node's /etc/nccl.conf, the file read back as NCCL reads it, and the play's report."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

import pytest

from _paths import own_fixture, real_fixture

from ansible_collections.aicluster.infra.plugins.module_utils import nccl_conf as n
from ansible_collections.aicluster.infra.plugins.module_utils.ibstat import parse_ibstat
from ansible_collections.aicluster.infra.plugins.module_utils.rdma_tools import parse_show_gids
from ansible_collections.aicluster.infra.plugins.modules.ib_info import merge_ports

GPU_FABRIC = ['mlx5_0', 'mlx5_3', 'mlx5_4', 'mlx5_5', 'mlx5_6', 'mlx5_9', 'mlx5_10', 'mlx5_11']
ALL_GPU = '=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1'
SETTINGS = {'hca_include': GPU_FABRIC, 'hca_exclude': [], 'socket_ifname': '', 'ib_gid_index': 'auto',
            'ib_tc': '106', 'ib_sl': '', 'env_extra': {}, 'conf_path': '/etc/nccl.conf', 'fleet_group': ''}


def _gids(index, ipv4='10.10.1.21', netdev='eth0'):
    """A ConnectX GID table: v1/v2 link-local at 0/1, v1/v2 of the IPv4 address at index and index + 1."""
    table = [{'index': 0, 'gid': 'fe80::1', 'ipv4': None, 'version': 'v1', 'netdev': netdev},
             {'index': 1, 'gid': 'fe80::1', 'ipv4': None, 'version': 'v2', 'netdev': netdev}]
    if index is not None:
        table += [{'index': index - 1, 'gid': '::ffff:' + ipv4, 'ipv4': ipv4, 'version': 'v1', 'netdev': netdev},
                  {'index': index, 'gid': '::ffff:' + ipv4, 'ipv4': ipv4, 'version': 'v2', 'netdev': netdev}]
    return table


def _port(state='Active', layer='InfiniBand', gid=None, gids=None):
    return {'port': 1, 'state': state, 'physical_state': 'LinkUp' if state == 'Active' else 'Disabled',
            'rate_gbps': 400.0, 'link_layer': layer, 'netdev': None, 'gids': gids or [],
            'roce_v2_gid_index': gid}


def _node(layer='InfiniBand', down=(), absent=(), gid=3, storage=('mlx5_1', 'mlx5_2')):
    """An HGX H100: 8 GPU-fabric HCAs of ``layer`` (RoCE ones with their IPv4 GID at ``gid``), storage NICs on
    Ethernet."""
    hcas = []
    for name in sorted(set(GPU_FABRIC + list(storage)) - set(absent), key=lambda item: int(item.split('_')[1])):
        if name in storage:
            port = _port(layer='Ethernet', gids=_gids(3))
        elif layer == 'Ethernet':
            port = _port(layer='Ethernet', state='Down' if name in down else 'Active', gids=_gids(gid))
        else:
            port = _port(state='Down' if name in down else 'Active')
        hcas.append({'name': name, 'ports': [port]})
    return {'hcas': hcas, 'nvswitch_bridges': []}


def _plan(info, **settings):
    return n.conf_plan(dict(SETTINGS, **settings), info)


# --------------------------------------------------------------------------- variables

def test_the_default_settings_pass():
    assert n.settings_problems(SETTINGS) == []
    assert n.settings_problems(dict(SETTINGS, hca_include=[], ib_gid_index='nccl', ib_tc='', ib_sl=3)) == []
    assert n.settings_problems(dict(SETTINGS, ib_gid_index=5, socket_ifname='^=docker0,lo')) == []


@pytest.mark.parametrize('change, needle', [
    ({'hca_include': ['mlx5_0', 'mlx5 1']}, "nccl_hca_include: 'mlx5 1' not an HCA name"),
    ({'hca_include': {'mlx5_0': 1}}, 'nccl_hca_include must be a list'),
    ({'hca_exclude': ['mlx5_1']}, 'nccl_hca_include and nccl_hca_exclude are both set'),
    ({'socket_ifname': 'bond0 eth0'}, "nccl_socket_ifname must be empty or NCCL's interface list"),
    ({'ib_gid_index': 'roce'}, 'nccl_ib_gid_index must be auto'),
    ({'ib_gid_index': 300}, 'nccl_ib_gid_index must be auto'),
    ({'ib_tc': 256}, 'nccl_ib_tc must be empty or a traffic class 0-255'),
    ({'ib_tc': 'af31'}, 'nccl_ib_tc must be empty or a traffic class 0-255'),
    ({'ib_sl': 16}, 'nccl_ib_sl must be empty or an InfiniBand service level 0-15'),
    ({'env_extra': ['NCCL_DEBUG=WARN']}, 'nccl_env_extra must be a dict'),
    ({'env_extra': {'NCCL DEBUG': 'WARN'}}, "nccl_env_extra: 'NCCL DEBUG' is not an environment variable name"),
    ({'env_extra': {'NCCL_IB_HCA': '=mlx5_0'}}, 'nccl_env_extra.NCCL_IB_HCA: the role writes NCCL_IB_HCA itself; '
                                                'set nccl_hca_include or nccl_hca_exclude'),
    ({'env_extra': {'NCCL_IB_GID_INDEX': 3}}, 'set nccl_ib_gid_index'),
    ({'env_extra': {'NCCL_CONF_FILE': '/x'}}, 'reads NCCL_CONF_FILE from the environment before any file'),
    ({'env_extra': {'NCCL_IB_PCI_RELAXED_ORDERING': True}}, 'booleans: write 1 or 0'),
    ({'env_extra': {'NCCL_DEBUG': 'WARN\nNCCL_IB_HCA=mlx5'}}, 'nccl_env_extra.NCCL_DEBUG: the value must be one line'),
    ({'env_extra': {'NCCL_DEBUG': 'WARN '}}, 'NCCL keeps blanks around a value'),
    ({'env_extra': {'NCCL_DEBUG': ''}}, 'nccl_env_extra.NCCL_DEBUG is empty'),
    ({'env_extra': {'NCCL_TOPO_FILE': '/x' * 600}}, 'NCCL cuts names and values at 1023 characters'),
    ({'conf_path': 'etc/nccl.conf'}, 'nccl_conf_path must be an absolute'),
    ({'conf_path': '/etc/../nccl.conf'}, 'nccl_conf_path must be an absolute, normalised'),
    ({'conf_path': '/etc/my nccl.conf'}, 'without blanks'),
    ({'fleet_group': ['hgx']}, 'nccl_fleet_group must be a string'),
], ids=['include-entry', 'include-type', 'include-and-exclude', 'ifname', 'gid-word', 'gid-range', 'tc-range',
        'tc-word', 'sl-range', 'extra-list', 'extra-name', 'extra-owned-hca', 'extra-owned-gid', 'extra-conf-file',
        'extra-bool', 'extra-multiline', 'extra-blanks', 'extra-empty', 'extra-long', 'path-relative',
        'path-not-normal', 'path-blank', 'group'])
def test_every_bad_variable_is_one_line_naming_it(change, needle):
    problems = n.settings_problems(dict(SETTINGS, **change))
    assert len(problems) == 1 and needle in problems[0], problems


def test_bad_variables_stop_the_node_before_any_fact_is_read():
    plan = _plan(None, ib_sl=99, env_extra={'NCCL_SOCKET_IFNAME': 'eth0'})
    assert len(plan['problems']) == 2 and plan['lines'] == [] and plan['warnings'] == []


# --------------------------------------------------------------------------- variables that are no defaults

# The delivery plan's "every job" settings (issue 33) and the other variables NCCL dropped or keeps for one job.
@pytest.mark.parametrize('key, value, needle', [
    ('NCCL_MIN_NRINGS', 8, 'obsolete: the name NCCL_MIN_NCHANNELS had before 2.5'),
    ('NCCL_MAX_NRINGS', 16, 'obsolete: the name NCCL_MAX_NCHANNELS had before 2.5'),
    ('NCCL_MIN_NCHANNELS', 8, 'Debugging'),
    ('NCCL_MAX_NCHANNELS', 16, 'Debugging'),
    ('NCCL_NTHREADS', 512, 'threads per block by GPU architecture'),
    ('NCCL_BUFFSIZE', 8388608, 'multiplies GPU memory with the peers'),
    ('NCCL_SOCKET_NTHREADS', 8, 'socket transport only'),
    ('NCCL_NSOCKS_PERTHREAD', 4, 'socket transport only'),
    ('NCCL_LL_THRESHOLD', 0, 'removed in NCCL 2.5.6'),
    ('NCCL_TREE_THRESHOLD', 0, 'removed in NCCL 2.5.6'),
    ('NCCL_IB_CUDA_SUPPORT', 1, 'replaced by NCCL_NET_GDR_LEVEL in NCCL 2.4'),
    ('NCCL_IB_GDR_LEVEL', 2, 'replaced by NCCL_NET_GDR_LEVEL in NCCL 2.4'),
    ('NCCL_ALGO', 'Ring', "turns off NCCL's choice"),
    ('NCCL_PROTO', 'Simple', "turns off NCCL's choice"),
    ('NCCL_IB_DISABLE', 1, 'every job falls back to sockets'),
    ('NCCL_P2P_DISABLE', '1', 'NVLink/PCIe peer-to-peer off'),
    ('NCCL_SHM_DISABLE', 1, 'shared-memory transport off'),
    ('NCCL_DEBUG', 'INFO', "floods every job's output"),
    ('CUDA_DEVICE_MAX_CONNECTIONS', 1, 'is not an NCCL variable'),
])
def test_each_variable_that_is_no_default_is_one_warning_naming_why(key, value, needle):
    warnings = n.extra_warnings({key: value})
    assert len(warnings) == 1 and warnings[0].startswith('nccl_env_extra.%s' % key) and needle in warnings[0], warnings


@pytest.mark.parametrize('extra', [
    {'NCCL_IB_DISABLE': 0}, {'NCCL_DEBUG': 'WARN'}, {'NCCL_IB_TIMEOUT': 22}, {'NCCL_IB_QPS_PER_CONNECTION': 4},
    {'NCCL_TOPO_FILE': '/etc/nccl-topo.xml'}, {'NCCL_P2P_DISABLE': 0}, {}, None,
])
def test_system_settings_are_taken_without_a_word(extra):
    assert n.extra_warnings(extra) == []


def test_the_delivery_plans_defaults_are_written_with_one_warning_each():
    extra = {'NCCL_MIN_NRINGS': 8, 'NCCL_SOCKET_NTHREADS': 8, 'NCCL_NSOCKS_PERTHREAD': 4, 'NCCL_IB_TIMEOUT': 22}
    plan = _plan(_node(), env_extra=extra)
    assert plan['problems'] == [] and len(plan['warnings']) == 3
    assert plan['lines'][1:] == ['NCCL_IB_TIMEOUT=22', 'NCCL_MIN_NRINGS=8', 'NCCL_NSOCKS_PERTHREAD=4',
                                 'NCCL_SOCKET_NTHREADS=8']


# --------------------------------------------------------------------------- the RoCE v2 GID

def test_the_gid_index_is_the_lowest_roce_v2_gid_with_an_ipv4_address():
    """show_gids on an H100 RoCE node (handmade): mlx5_3 has a VLAN address at 5 besides its own at 3."""
    rows = parse_show_gids(own_fixture('show_gids/show_gids-mlnx-tools-h100-roce-v1-v2-ipv4-vlan-handmade.txt'))
    cas = merge_ports([{'name': name, 'ports': [{'port': 1}]} for name in ('mlx5_0', 'mlx5_3')], None, rows)
    assert [n.roce_v2_ipv4_gid_index(ca['ports'][0]) for ca in cas] == [3, 3]


@pytest.mark.parametrize('port, index', [
    ({'gids': _gids(3)}, 3),
    ({'gids': _gids(7, ipv4='10.156.129.132')}, 7),      # NVIDIA/nccl #1538: a pod's table from index 4
    ({'gids': _gids(None), 'roce_v2_gid_index': 1}, None),  # link-local only: not routable, never taken
    ({'gids': [], 'roce_v2_gid_index': 3}, 3),           # facts without a table: ib_info's own choice
    ({'gids': [], 'roce_v2_gid_index': None}, None),
], ids=['connectx', 'sparse', 'link-local-only', 'no-table', 'unknown'])
def test_roce_v2_ipv4_gid_index(port, index):
    assert n.roce_v2_ipv4_gid_index(port) == index


def _ports(*indexes, **states):
    ports = {}
    for number, index in enumerate(indexes):
        state = states.get('mlx5_%d' % number, 'Active')
        ports['mlx5_%d:1' % number] = _port(layer='Ethernet', gids=_gids(index), state=state)
    return ports


@pytest.mark.parametrize('mode, layer, ports, value, needle', [
    ('auto', 'Ethernet', _ports(3, 3), '3', None),
    ('auto', 'Ethernet', _ports(3, None, mlx5_1='Down'), '3', None),   # a Down port's table is not read
    ('auto', 'Ethernet', _ports(3, None), None, 'no RoCE v2 GID with an IPv4 address on mlx5_1:1'),
    ('auto', 'Ethernet', _ports(3, 5), None, 'the ports disagree on the RoCE v2 IPv4 GID index (mlx5_0:1=3, mlx5_1:1=5)'),
    ('auto', 'InfiniBand', {'mlx5_0:1': _port()}, None, None),
    ('nccl', 'Ethernet', _ports(3, 3), None, None),
    (5, 'Ethernet', _ports(3, 3), '5', None),
    ('4', 'InfiniBand', {'mlx5_0:1': _port()}, '4', None),
], ids=['same', 'down-port', 'no-ipv4', 'disagree', 'ib', 'left-to-nccl', 'index', 'index-ib'])
def test_gid_decision(mode, layer, ports, value, needle):
    gid, warnings = n.gid_decision(mode, layer, ports)
    assert gid == value
    if needle:
        assert len(warnings) == 1 and needle in warnings[0] and 'from 2.21' in warnings[0], warnings
    else:
        assert warnings == []


# --------------------------------------------------------------------------- one node's file

def test_an_infiniband_node_gets_its_gpu_fabric_exactly_and_nothing_roce():
    plan = _plan(_node())
    assert plan['problems'] == [] and plan['warnings'] == [] and plan['skip'] is None
    assert plan['lines'] == ['NCCL_IB_HCA=' + ALL_GPU]
    assert plan['link_layer'] == 'InfiniBand' and plan['gid_index'] is None and len(plan['ports']) == 8


def test_a_roce_node_gets_the_traffic_class_and_its_own_gid_index():
    plan = _plan(_node('Ethernet', gid=5), socket_ifname='=bond0')
    assert plan['lines'] == ['NCCL_IB_HCA=' + ALL_GPU, 'NCCL_IB_GID_INDEX=5', 'NCCL_IB_TC=106',
                             'NCCL_SOCKET_IFNAME==bond0']
    assert 'mlx5_1:1' not in plan['ports'] and plan['warnings'] == []


def test_the_service_level_is_written_on_infiniband_only():
    assert _plan(_node(), ib_sl=1)['lines'] == ['NCCL_IB_HCA=' + ALL_GPU, 'NCCL_IB_SL=1']
    plan = _plan(_node('Ethernet'), ib_sl=1)
    assert 'NCCL_IB_SL=1' not in plan['lines'] and 'nccl_ib_sl is set but the GPU fabric is RoCE' in plan['warnings'][0]
    assert 'NCCL_IB_TC=106' not in _plan(_node('Ethernet'), ib_tc='')['lines']


def test_a_down_port_stays_and_an_absent_hca_is_left_out_each_said():
    plan = _plan(_node(down=['mlx5_5'], absent=['mlx5_11']))
    assert plan['ports'] == ALL_GPU[1:].replace(',mlx5_11:1', '').split(',') and plan['down'] == ['mlx5_5:1']
    assert plan['missing'] == ['mlx5_11']
    assert plan['warnings'] == ['mlx5_11 of nccl_hca_include not on this node: left out of its NCCL_IB_HCA',
                                'mlx5_5:1 not Active (Down): kept in NCCL_IB_HCA, which NCCL skips until the port is '
                                'Active']


def test_without_an_include_list_every_port_of_the_fabric_minus_the_excluded():
    assert _plan(_node(), hca_include=[])['ports'] == ALL_GPU[1:].split(',')
    assert _plan(_node('Ethernet'), hca_include=[], hca_exclude=['mlx5_1', 'mlx5_2'])['ports'] == ALL_GPU[1:].split(',')
    # on RoCE the storage NICs are Ethernet too: that is why the default is the verify stage's list
    assert 'mlx5_1:1' in _plan(_node('Ethernet'), hca_include=[])['ports']


@pytest.mark.parametrize('info, settings, needle', [
    (_node(), {'hca_include': ['mlx5_42']}, 'none of nccl_hca_include (mlx5_42) is on this node'),
    (_node(), {'hca_include': [], 'hca_exclude': GPU_FABRIC}, 'no port for NCCL_IB_HCA: no InfiniBand port left'),
    (_node(), {'hca_include': ['mlx5_0', 'mlx5_1']}, 'mixes InfiniBand and Ethernet'),
    ({'hcas': 'mlx5_0'}, {}, 'the ib_info facts are not a dict with an hcas list'),
], ids=['include-absent', 'all-excluded', 'mixed', 'not-facts'])
def test_a_node_without_a_port_for_nccl_gets_no_file(info, settings, needle):
    plan = _plan(info, **settings)
    assert len(plan['problems']) == 1 and needle in plan['problems'][0] and plan['lines'] == [], plan['problems']


def test_a_node_without_rdma_adapters_is_skipped():
    plan = _plan({'hcas': [{'name': 'mlx5_0', 'nvswitch_bridge': True, 'ports': [_port()]}]})
    assert plan['problems'] == [] and plan['lines'] == [] and plan['skip'].startswith('no RDMA adapter')


def test_another_path_is_written_with_a_warning_that_nccl_does_not_read_it_by_itself():
    plan = _plan(_node(), conf_path='/etc/nccl/site.conf')
    assert plan['warnings'] == ['nccl_conf_path is /etc/nccl/site.conf: NCCL reads /etc/nccl.conf by itself, any '
                                'other file only when a job sets NCCL_CONF_FILE=/etc/nccl/site.conf (NCCL 2.23 and later)']


def test_the_plan_does_not_modify_its_input():
    info, settings = _node('Ethernet', down=['mlx5_3']), dict(SETTINGS, env_extra={'NCCL_DEBUG': 'WARN'})
    before = copy.deepcopy((info, settings))
    n.conf_plan(settings, info)
    assert (info, settings) == before


def test_a_real_roce_node_with_two_ports_down():
    """ibstat of an H100 RoCE node (leptonai/gpud testdata): 8 CX-7 400G, mlx5_5 and mlx5_11 Down/Disabled, four
    CX-6 Dx 100G storage ports. No show_gids there, so no GID table: the index is left to NCCL, said once."""
    cas = parse_ibstat(real_fixture('ibstat/gpud-h100-roce400-cx7-2down-disabled.txt'))['cas']
    info = {'hcas': merge_ports(cas, None, None)}
    plan = _plan(info)
    assert plan['problems'] == [] and plan['link_layer'] == 'Ethernet'
    assert plan['lines'] == ['NCCL_IB_HCA=' + ALL_GPU, 'NCCL_IB_TC=106']
    assert plan['down'] == ['mlx5_5:1', 'mlx5_11:1']
    assert len(plan['warnings']) == 2 and 'left to NCCL' in plan['warnings'][1]


# --------------------------------------------------------------------------- the file as NCCL reads it

def test_parse_conf_reads_as_nccl_does():
    text = ('# Ansible managed\r\nNCCL_IB_HCA==mlx5_0:1,mlx5_3:1\r\n\r\nnot a setting\n  #NCCL_ALGO=Ring\n'
            'NCCL_DEBUG=WARN \nNCCL_IB_HCA=mlx5\n#NCCL_IB_TC=106\nNCCL_SOCKET_IFNAME=')
    env = n.parse_conf(text)
    assert env['NCCL_IB_HCA'] == '=mlx5_0:1,mlx5_3:1'   # the first wins, as setenv without overwrite
    assert env['NCCL_DEBUG'] == 'WARN '                  # blanks kept
    assert env['NCCL_SOCKET_IFNAME'] == '' and 'NCCL_IB_TC' not in env and '#NCCL_IB_TC' not in env
    assert env['  #NCCL_ALGO'] == 'Ring'                 # '#' is a comment only in the first column
    assert len(env) == 4
    assert n.parse_conf('') == {} and n.parse_conf(None) == {}


def test_the_planned_lines_read_back_as_the_plan():
    plan = _plan(_node('Ethernet'), socket_ifname='=bond0', env_extra={'NCCL_IB_TIMEOUT': 22})
    assert n.parse_conf('\n'.join(['# header'] + plan['lines']) + '\n') == plan['env']


# --------------------------------------------------------------------------- the play's report

def _fleet():
    plans = dict(('gpu%02d' % number, _plan(_node())) for number in range(1, 6))
    plans['gpu03'] = _plan(_node(absent=['mlx5_9']))                        # an HCA the node does not see
    plans['gpu04'] = _plan(_node(down=['mlx5_4']))                         # a port Down: same list, a warning
    plans['gpu05'] = _plan(_node('Ethernet'))                               # a RoCE node among IB ones
    plans['gpu06'] = _plan(_node(), ib_sl=42)                               # refused
    plans['login01'] = _plan({'hcas': []})                                  # no adapter
    plans['gpu07'] = None                                                   # unreachable: no plan
    return plans


def test_the_report_names_each_node_that_differs_from_its_group():
    report = n.fleet_report(_fleet())
    assert report['differences'] == [
        'gpu06: no NCCL file written (the reason is in each node\'s failure above)',
        'gpu03 has 7 GPU-fabric ports for NCCL where 3 of 5 nodes have 8; missing mlx5_9:1',
        'gpu05: its GPU fabric is Ethernet where 3 of 5 nodes have InfiniBand']
    assert report['warnings'] == [
        'gpu03: mlx5_9 of nccl_hca_include not on this node: left out of its NCCL_IB_HCA',
        'gpu04: mlx5_4:1 not Active (Down): kept in NCCL_IB_HCA, which NCCL skips until the port is Active']
    assert report['skipped'] == 'login01: no RDMA adapter: NCCL has no InfiniBand or RoCE port to use here'
    assert report['lines'][0] == '[WARNING] nccl:' and len(report['lines']) == 7


def test_nodes_are_compared_within_their_group_only():
    plans = {'a1': _plan(_node(), fleet_group='h100'), 'a2': _plan(_node(), fleet_group='h100'),
             'b1': _plan(_node(absent=['mlx5_10', 'mlx5_11']), fleet_group='b200'),
             'b2': _plan(_node(absent=['mlx5_10', 'mlx5_11']), fleet_group='b200'),
             'b3': _plan(_node(absent=['mlx5_11']), fleet_group='b200')}
    for plan in plans.values():
        plan['warnings'] = []
    report = n.fleet_report(plans)
    assert report['differences'] == ['b3 has 7 GPU-fabric ports for NCCL where 2 of 3 nodes of group b200 have 6; '
                                     'more: mlx5_10:1']
    assert n.fleet_report(plans, compare=False) == {'warnings': [], 'differences': [], 'skipped': '', 'lines': []}


def test_a_warning_shared_by_many_nodes_is_said_once():
    plans = dict(('gpu%03d' % number, _plan(_node(), env_extra={'NCCL_MIN_NRINGS': 8})) for number in range(1, 257))
    report = n.fleet_report(plans)
    assert report['differences'] == [] and len(report['warnings']) == 1
    assert report['warnings'][0].startswith('gpu[001-256]: nccl_env_extra.NCCL_MIN_NRINGS: obsolete')


def test_a_group_split_in_halves_is_said_once_without_picking_a_side():
    plans = {'i1': _plan(_node()), 'i2': _plan(_node()), 'r1': _plan(_node('Ethernet')), 'r2': _plan(_node('Ethernet'))}
    assert n.fleet_report(plans)['differences'] == [
        'the 4 nodes split with no majority: i[1-2] InfiniBand with 8 ports; r[1-2] Ethernet with 8 ports; nodes built '
        'differently need their own nccl_fleet_group']
