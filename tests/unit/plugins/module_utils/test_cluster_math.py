# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for gres.conf lines, the NCCL environment, IPoIB addresses and link rates."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

import pytest

from ansible_collections.aicluster.infra.plugins.module_utils.cluster_math import (
    AddressError,
    cpulist_parse,
    expected_link_gbps,
    gpu_type_name,
    gres_conf_lines,
    ipoib_address,
    link_rate_gbps,
    nccl_env,
    slurm_core_map,
)


# --------------------------------------------------------------------------- gpu_type_name

@pytest.mark.parametrize('product, expected', [
    ('NVIDIA H100 80GB HBM3', 'h100'),
    ('NVIDIA A100-SXM4-80GB', 'a100'),
    ('NVIDIA A100-PCIE-40GB', 'a100'),
    ('NVIDIA H200', 'h200'),
    ('NVIDIA B200', 'b200'),
    ('NVIDIA L40S', 'l40s'),
    ('NVIDIA H100 NVL', 'h100'),
    ('NVIDIA GH200 480GB', 'gh200'),
    ('Tesla V100-SXM2-32GB', 'v100'),
    ('Tesla T4', 't4'),
    ('NVIDIA GeForce RTX 4090', 'rtx4090'),
    ('NVIDIA RTX A6000', 'a6000'),
    ('Graphics Device', 'graphics_device'),
], ids=['h100-sxm', 'a100-sxm', 'a100-pcie', 'h200', 'b200', 'l40s', 'h100-nvl', 'gh200', 'v100', 't4', 'rtx4090',
        'rtx-a6000', 'unknown'])
def test_gpu_type_name(product, expected):
    assert gpu_type_name(product) == expected


@pytest.mark.parametrize('product', ['', '   ', None, 'NVIDIA'], ids=['empty', 'blank', 'none', 'vendor-only'])
def test_gpu_type_name_bad(product):
    with pytest.raises(ValueError):
        gpu_type_name(product)


# --------------------------------------------------------------------------- gres_conf_lines

def _gpu(index, affinity, name='NVIDIA H100 80GB HBM3', gtype='h100', **more):
    gpu = {
        'index': index, 'name': name, 'type': gtype, 'uuid': 'GPU-%d' % index, 'minor_number': index,
        'device_file': '/dev/nvidia%d' % index, 'cpu_affinity': affinity, 'mig_enabled': False, 'mig_devices': [],
    }
    gpu.update(more)
    return gpu


def _dgx_h100():
    return {'driver_version': '535.183.01', 'cuda_version': '12.2', 'count': 8, 'gpus': [
        _gpu(index, '0-47,96-143' if index < 4 else '48-95,144-191') for index in range(8)]}


H100_LINES = ['Name=gpu Type=h100 File=/dev/nvidia[0-3] Cores=0-47', 'Name=gpu Type=h100 File=/dev/nvidia[4-7] Cores=48-95']


@pytest.mark.parametrize('kwargs, expected', [
    ({}, H100_LINES),
    ({'sockets': 2, 'cores_per_socket': 48}, H100_LINES),
    ({'threads_per_core': 2}, H100_LINES),
    ({'threads_per_core': 2, 'sockets': 2, 'cores_per_socket': 48}, H100_LINES),
    ({'threads_per_core': 1}, ['Name=gpu Type=h100 File=/dev/nvidia[0-3] Cores=0-47,96-143',
                               'Name=gpu Type=h100 File=/dev/nvidia[4-7] Cores=48-95,144-191']),
    ({'node_name': 'gpu01'}, ['NodeName=gpu01 ' + line for line in H100_LINES]),
    ({'autodetect': 'off'}, ['AutoDetect=off'] + H100_LINES),
    ({'autodetect': 'nvml'}, ['AutoDetect=nvml']),
    ({'autodetect': 'NVML', 'node_name': 'gpu01'}, ['NodeName=gpu01 AutoDetect=nvml']),
], ids=['inferred-ht', 'cores-given', 'threads-given', 'all-given', 'no-ht', 'node-name', 'autodetect-off', 'autodetect-nvml',
        'autodetect-node'])
def test_gres_dgx_h100(kwargs, expected):
    assert gres_conf_lines(_dgx_h100(), **kwargs) == expected


def _topology_linux(sockets=2, cores=48, threads=2):
    """Linux's usual numbering: CPUs 0..95 are the first threads of the cores, socket by socket; 96.. their siblings."""
    total = sockets * cores
    return [{'cpu': thread * total + socket * cores + core, 'package': socket, 'core': core}
            for thread in range(threads) for socket in range(sockets) for core in range(cores)]


def _topology_interleaved(sockets=2, cores=48, threads=2):
    """A BIOS that interleaves sockets: CPU 0 on socket 0, CPU 1 on socket 1, ...; siblings after every first thread."""
    total = sockets * cores
    return [{'cpu': thread * total + core * sockets + socket, 'package': socket, 'core': core}
            for thread in range(threads) for socket in range(sockets) for core in range(cores)]


def test_slurm_core_map_linux_numbering():
    mapping = slurm_core_map(_topology_linux())
    assert mapping[0] == 0 and mapping[96] == 0 and mapping[47] == 47 and mapping[48] == 48 and mapping[191] == 95


def test_slurm_core_map_socket_interleaved_numbering():
    """CPU 1 is socket 1's first core: Slurm core 48, not core 1 as sibling = cpu + total_cores would say."""
    mapping = slurm_core_map(_topology_interleaved())
    assert mapping[0] == 0 and mapping[2] == 1 and mapping[1] == 48 and mapping[3] == 49 and mapping[96] == 0
    assert sorted(set(mapping.values())) == list(range(96))


def test_gres_cores_from_the_kernel_topology():
    info = _dgx_h100()
    assert gres_conf_lines(info, cpu_topology=_topology_linux()) == H100_LINES
    # socket-interleaved: socket 0 owns the even CPUs; its GPUs' affinity lists them
    even = ','.join(str(cpu) for cpu in range(0, 192, 2))
    odd = ','.join(str(cpu) for cpu in range(1, 192, 2))
    info = {'gpus': [_gpu(index, even if index < 4 else odd) for index in range(8)]}
    assert gres_conf_lines(info, cpu_topology=_topology_interleaved()) == H100_LINES
    # the arithmetic guess gets it wrong on that numbering (every GPU on every core)
    assert gres_conf_lines(info, threads_per_core=2, sockets=2, cores_per_socket=48) != H100_LINES
    # a CPU the topology does not list (an affinity the node does not have): no Cores= at all
    assert gres_conf_lines(_dgx_h100(), cpu_topology=_topology_linux(sockets=1)) == [
        'Name=gpu Type=h100 File=/dev/nvidia[0-7]']


def test_gres_no_ht_host():
    info = {'gpus': [_gpu(0, '0-31'), _gpu(1, '0-31'), _gpu(2, '32-63'), _gpu(3, '32-63')]}
    assert gres_conf_lines(info) == ['Name=gpu Type=h100 File=/dev/nvidia[0-1] Cores=0-31',
                                     'Name=gpu Type=h100 File=/dev/nvidia[2-3] Cores=32-63']


def test_gres_interleaved_affinity_groups():
    info = {'gpus': [_gpu(index, '0-15,64-79' if index % 2 == 0 else '16-31,80-95') for index in range(4)]}
    info['gpus'].append(_gpu(4, '32-47,96-111'))
    info['gpus'].append(_gpu(5, '48-63,112-127'))
    assert gres_conf_lines(info) == [
        'Name=gpu Type=h100 File=/dev/nvidia[0,2] Cores=0-15',
        'Name=gpu Type=h100 File=/dev/nvidia[1,3] Cores=16-31',
        'Name=gpu Type=h100 File=/dev/nvidia4 Cores=32-47',
        'Name=gpu Type=h100 File=/dev/nvidia5 Cores=48-63',
    ]


def test_gres_mixed_types_and_no_affinity():
    info = {'gpus': [_gpu(0, '', name='NVIDIA A100-SXM4-80GB', gtype=None), _gpu(1, None, name='NVIDIA L40S', gtype=None),
                     _gpu(2, 'N/A', name='NVIDIA A100-SXM4-80GB', gtype=None)]}
    assert gres_conf_lines(info) == ['Name=gpu Type=a100 File=/dev/nvidia[0,2]', 'Name=gpu Type=l40s File=/dev/nvidia1']


def test_gres_cpus_list_preferred():
    info = {'gpus': [_gpu(0, 'garbage', cpus=[0, 1, 2, 3]), _gpu(1, 'garbage', cpus=[4, 5, 6, 7])]}
    assert gres_conf_lines(info) == ['Name=gpu Type=h100 File=/dev/nvidia0 Cores=0-3', 'Name=gpu Type=h100 File=/dev/nvidia1 Cores=4-7']


@pytest.mark.parametrize('kwargs, cores', [
    ({}, ''), ({'threads_per_core': 1}, ' Cores=0-63'), ({'threads_per_core': 2}, ' Cores=0-31'),
    ({'sockets': 1, 'cores_per_socket': 64}, ' Cores=0-63'), ({'sockets': 1, 'cores_per_socket': 32}, ' Cores=0-31'),
], ids=['ambiguous-left-out', 'no-ht', 'ht', 'cores-64', 'cores-32-ht'])
def test_gres_every_gpu_sees_every_cpu(kwargs, cores):
    info = {'gpus': [_gpu(0, '0-63'), _gpu(1, '0-63')]}
    assert gres_conf_lines(info, **kwargs) == ['Name=gpu Type=h100 File=/dev/nvidia[0-1]' + cores]


def test_gres_mig():
    info = _dgx_h100()
    info['gpus'][0]['mig_enabled'] = True
    info['gpus'][0]['mig_devices'] = [
        {'gi': 1, 'ci': 0, 'profile': '1g.10gb', 'device_files': ['/dev/nvidia-caps/nvidia-cap21', '/dev/nvidia-caps/nvidia-cap22']},
        {'gi': 2, 'ci': 0, 'profile': '3g.40gb', 'device_files': ['/dev/nvidia-caps/nvidia-cap30', '/dev/nvidia-caps/nvidia-cap31']},
    ]
    info['gpus'][1]['mig_enabled'] = True  # MIG on, no instances: no line
    assert gres_conf_lines(info) == [
        'Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap21,/dev/nvidia-caps/nvidia-cap22 Cores=0-47',
        'Name=gpu Type=3g.40gb MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap30,/dev/nvidia-caps/nvidia-cap31 Cores=0-47',
        'Name=gpu Type=h100 File=/dev/nvidia[2-3] Cores=0-47',
        'Name=gpu Type=h100 File=/dev/nvidia[4-7] Cores=48-95',
    ]


def test_gres_device_file_from_minor():
    gpu = _gpu(3, '0-7')
    del gpu['device_file']
    gpu['minor_number'] = 5
    assert gres_conf_lines({'gpus': [gpu]}, threads_per_core=1) == ['Name=gpu Type=h100 File=/dev/nvidia5 Cores=0-7']


def test_gres_no_gpus():
    assert gres_conf_lines({'gpus': []}) == []


@pytest.mark.parametrize('info, kwargs, message', [
    ({'gpus': []}, {'autodetect': 'bogus'}, 'autodetect must be one of'),
    ('nope', {}, 'gpu_info must be a dict'),
    ({'gpus': ['x']}, {}, 'list of dicts'),
    ({'gpus': [_gpu(0, '0-7')]}, {'sockets': 2}, 'both sockets and cores_per_socket'),
    ({'gpus': [_gpu(0, '0-7')]}, {'threads_per_core': 0}, 'threads_per_core must be'),
    ({'gpus': [_gpu(0, '0-300')]}, {'threads_per_core': 2, 'sockets': 2, 'cores_per_socket': 48}, 'beyond 96 cores x 2 threads'),
    ({'gpus': [_gpu(0, '7-3')]}, {}, 'reversed range'),
    ({'gpus': [_gpu(0, '0-7', mig_enabled=True, mig_devices=[{'profile': '1g.10gb'}])]}, {}, 'lacks a profile or device_files'),
], ids=['bad-autodetect', 'not-dict', 'bad-gpus', 'half-layout', 'zero-threads', 'cpu-out-of-range', 'bad-cpulist', 'mig-no-files'])
def test_gres_errors(info, kwargs, message):
    with pytest.raises(ValueError, match=message):
        gres_conf_lines(info, **kwargs)


@pytest.mark.parametrize('value, expected', [
    ('0-3,8', [0, 1, 2, 3, 8]), ([3, 1, 1], [1, 3]), ('', []), (None, []), ('N/A', []), ('5', [5]),
], ids=['ranges', 'list', 'empty', 'none', 'na', 'single'])
def test_cpulist_parse(value, expected):
    assert cpulist_parse(value) == expected


# --------------------------------------------------------------------------- nccl_env

def _port(port=1, state='Active', layer='InfiniBand', gid=None, rate=400.0):
    return {'port': port, 'state': state, 'physical_state': 'LinkUp', 'rate_gbps': rate, 'link_layer': layer,
            'base_lid': 12, 'port_guid': '0x1', 'netdev': 'ib0', 'netdev_state': 'Up', 'roce_v2_gid_index': gid, 'gids': []}


def _hca(name, *ports):
    return {'name': name, 'ca_type': 'MT4129', 'firmware_version': '28.39.1002', 'node_guid': '0x2', 'ports': list(ports)}


def _ib_dgx():
    """8 NDR compute HCAs, two Ethernet (storage) ports, one IB port down."""
    hcas = [_hca('mlx5_%d' % index, _port()) for index in (0, 3, 4, 5, 6, 9, 10, 11)]
    hcas += [_hca('mlx5_1', _port(layer='Ethernet', gid=3)), _hca('mlx5_2', _port(layer='Ethernet', gid=3))]
    hcas.append(_hca('mlx5_7', _port(state='Down')))
    return {'hcas': hcas}


def _ib_roce(gids=(3, 3)):
    return {'hcas': [_hca('mlx5_%d' % index, _port(layer='Ethernet', gid=gid)) for index, gid in enumerate(gids)]}


ALL_IB = '=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1'


@pytest.mark.parametrize('info, kwargs, expected', [
    (_ib_dgx(), {}, {'NCCL_IB_HCA': ALL_IB}),
    (_ib_dgx(), {'hca_exclude': ['mlx5_9', 'mlx5_10:1']},
     {'NCCL_IB_HCA': '=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_11:1'}),
    (_ib_dgx(), {'hca_exclude': 'mlx5_9,=mlx5_11'}, {'NCCL_IB_HCA': '=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_10:1'}),
    (_ib_dgx(), {'hca_include': ['mlx5_3', 'mlx5_0']}, {'NCCL_IB_HCA': '=mlx5_0:1,mlx5_3:1'}),
    (_ib_dgx(), {'socket_ifname': 'bond0'}, {'NCCL_IB_HCA': ALL_IB, 'NCCL_SOCKET_IFNAME': 'bond0'}),
    (_ib_dgx(), {'socket_ifname': ['=eth0', 'eth1']}, {'NCCL_IB_HCA': ALL_IB, 'NCCL_SOCKET_IFNAME': '=eth0,eth1'}),
    (_ib_dgx(), {'extra': {'NCCL_IB_SL': 1, 'NCCL_IB_TC': 106}}, {'NCCL_IB_HCA': ALL_IB, 'NCCL_IB_SL': '1', 'NCCL_IB_TC': '106'}),
    (_ib_dgx(), {'link_layer': 'roce'}, {'NCCL_IB_HCA': '=mlx5_1:1,mlx5_2:1', 'NCCL_IB_GID_INDEX': '3'}),
    (_ib_roce(), {}, {'NCCL_IB_HCA': '=mlx5_0:1,mlx5_1:1', 'NCCL_IB_GID_INDEX': '3'}),
    (_ib_roce(), {'hca_include': 'mlx5_1:1'}, {'NCCL_IB_HCA': '=mlx5_1:1', 'NCCL_IB_GID_INDEX': '3'}),
    ({'hcas': [_hca('mlx5_0', _port(1), _port(2, state='Init')), _hca('mlx5_1', _port(1), _port(2))]}, {},
     {'NCCL_IB_HCA': '=mlx5_0:1,mlx5_1:1,mlx5_1:2'}),
    ({'hcas': [_hca('mlx5_0', _port(state='PORT_ACTIVE (4)'))]}, {}, {'NCCL_IB_HCA': '=mlx5_0:1'}),
], ids=['dgx-ib', 'exclude-list', 'exclude-string', 'include', 'socket-ifname', 'socket-ifname-list', 'extra',
        'force-roce', 'roce', 'roce-include-port', 'dual-port', 'ibv-devinfo-state'])
def test_nccl_env(info, kwargs, expected):
    assert nccl_env(info, **kwargs) == expected


@pytest.mark.parametrize('info, kwargs, message', [
    (_ib_roce((3, 1)), {}, 'disagree on the RoCE v2 GID index: mlx5_0:1=3, mlx5_1:1=1'),
    (_ib_roce((3, None)), {}, 'GID index unknown for mlx5_1:1'),
    (_ib_dgx(), {'hca_include': ['mlx5_42']}, 'does not have: mlx5_42'),
    (_ib_dgx(), {'hca_include': ['mlx5_7']}, 'no active port: mlx5_7'),
    (_ib_dgx(), {'hca_include': ['mlx5_0', 'mlx5_1']}, 'mixes InfiniBand and Ethernet'),
    ({'hcas': [_hca('mlx5_0', _port(state='Down'))]}, {}, 'no active Ethernet port left'),
    ({'hcas': [_hca('mlx5_0', _port())]}, {'hca_exclude': ['mlx5_0']}, 'no active InfiniBand port left'),
    ({'hcas': [_hca('mlx5_0', _port())]}, {'link_layer': 'fibre'}, 'unknown link layer'),
    ({'hcas': [_hca('mlx5_0', _port())]}, {'extra': ['NCCL_IB_SL=1']}, 'extra must be a dict'),
    ({}, {}, 'ib_info must be'),
    ({'hcas': [{'ports': []}]}, {}, 'needs a name'),
], ids=['gid-disagree', 'gid-unknown', 'include-unknown', 'include-down', 'include-mixed', 'nothing-active', 'all-excluded',
        'bad-layer', 'bad-extra', 'not-ib-info', 'nameless-hca'])
def test_nccl_env_errors(info, kwargs, message):
    with pytest.raises(ValueError, match=message):
        nccl_env(info, **kwargs)


@pytest.mark.parametrize('info, kwargs, expected', [
    (_ib_roce((3, 3)), {'gid_index': None}, {'NCCL_IB_HCA': '=mlx5_0:1,mlx5_1:1'}),
    (_ib_roce((3, None)), {'gid_index': ''}, {'NCCL_IB_HCA': '=mlx5_0:1,mlx5_1:1'}),
    (_ib_roce((3, 1)), {'gid_index': 5}, {'NCCL_IB_HCA': '=mlx5_0:1,mlx5_1:1', 'NCCL_IB_GID_INDEX': '5'}),
    (_ib_dgx(), {'gid_index': '0'}, {'NCCL_IB_HCA': ALL_IB, 'NCCL_IB_GID_INDEX': '0'}),
    (_ib_dgx(), {'active_only': False}, {'NCCL_IB_HCA': ALL_IB.replace('mlx5_6:1,', 'mlx5_6:1,mlx5_7:1,')}),
    (_ib_dgx(), {'active_only': False, 'hca_include': ['mlx5_7', 'mlx5_0']}, {'NCCL_IB_HCA': '=mlx5_0:1,mlx5_7:1'}),
    ({'hcas': [_hca('mlx5_0', _port(layer='Ethernet', gid=3)), _hca('mlx5_1', _port(layer='Ethernet', state='Down'))]},
     {'active_only': False}, {'NCCL_IB_HCA': '=mlx5_0:1,mlx5_1:1', 'NCCL_IB_GID_INDEX': '3'}),
], ids=['gid-none', 'gid-empty', 'gid-index', 'gid-index-ib', 'down-port-kept', 'include-down', 'gid-of-active-only'])
def test_nccl_env_gid_index_and_ports_that_are_not_active(info, kwargs, expected):
    assert nccl_env(info, **kwargs) == expected


@pytest.mark.parametrize('kwargs, message', [
    ({'gid_index': 'nccl'}, 'gid_index must be auto, an index'),
    ({'gid_index': True}, 'gid_index must be auto, an index'),
    ({'gid_index': -1}, 'gid_index must be auto, an index'),
])
def test_nccl_env_refuses_a_gid_index_that_is_none(kwargs, message):
    with pytest.raises(ValueError, match=message):
        nccl_env(_ib_roce(), **kwargs)


def test_nccl_env_without_active_ports_says_so():
    down = {'hcas': [_hca('mlx5_0', _port(layer='Ethernet', state='Down'))]}
    assert nccl_env(down, active_only=False, gid_index=None) == {'NCCL_IB_HCA': '=mlx5_0:1'}
    with pytest.raises(ValueError, match='no Active RoCE port to read the RoCE v2 GID index from'):
        nccl_env(down, active_only=False)
    with pytest.raises(ValueError, match='no InfiniBand port left for NCCL_IB_HCA'):
        nccl_env({'hcas': [_hca('mlx5_0', _port())]}, hca_exclude=['mlx5_0'], active_only=False)


def test_nccl_env_does_not_modify_input():
    info = _ib_dgx()
    before = copy.deepcopy(info)
    nccl_env(info, hca_exclude=['mlx5_0'])
    assert info == before


# --------------------------------------------------------------------------- ipoib_address

@pytest.mark.parametrize('index, subnet, offset, expected', [
    (0, '10.10.0.0/16', 0, '10.10.0.1/16'),
    (254, '10.10.0.0/16', 0, '10.10.0.255/16'),
    (255, '10.10.0.0/16', 0, '10.10.1.0/16'),
    (65533, '10.10.0.0/16', 0, '10.10.255.254/16'),
    (3, '10.10.0.0/16', 100, '10.10.0.104/16'),
    (0, '10.10.5.7/24', 0, '10.10.5.1/24'),
    (1, '192.168.0.0/30', 0, '192.168.0.2/30'),
    ('7', '10.0.0.0/24', '1', '10.0.0.9/24'),
    (0, 'fd00:1b::/64', 0, 'fd00:1b::1/64'),
], ids=['first', 'byte-boundary-low', 'byte-boundary-high', 'last', 'offset', 'host-bits-set', 'slash30', 'strings', 'ipv6'])
def test_ipoib_address(index, subnet, offset, expected):
    assert ipoib_address(index, subnet, offset) == expected


@pytest.mark.parametrize('index, subnet, offset, message', [
    (254, '10.0.0.0/24', 0, 'subnet 10.0.0.0/24 has 254 usable addresses; index 254 is outside it'),
    (200, '10.0.0.0/24', 60, 'index 200 \\(\\+ offset 60\\)'),
    (2, '10.0.0.0/30', 0, 'has 2 usable addresses; index 2'),
    (0, '10.0.0.0/31', 0, 'has 0 usable addresses'),
    (0, '10.0.0.0/32', 0, 'has 0 usable addresses'),
    (-1, '10.0.0.0/24', 0, 'index -1'),
    ('x', '10.0.0.0/24', 0, 'must be integers'),
    (True, '10.0.0.0/24', 0, 'not booleans'),
    (0, 'not-a-subnet', 0, 'is not a subnet'),
], ids=['too-small', 'offset-too-far', 'slash30', 'slash31', 'slash32', 'negative', 'not-int', 'bool', 'bad-subnet'])
def test_ipoib_address_errors(index, subnet, offset, message):
    with pytest.raises(AddressError, match=message):
        ipoib_address(index, subnet, offset)


def test_address_error_is_value_error():
    assert issubclass(AddressError, ValueError)


# --------------------------------------------------------------------------- link rates

@pytest.mark.parametrize('width, lane, expected', [
    ('1X', 2.5, 2.0), ('4X', 2.5, 8.0), ('4X', 5.0, 16.0), ('4X', 10.0, 32.0), ('4X', 10.3125, 40.0),
    ('1X', 14.0625, 13.64), ('4X', 14.0625, 54.55), ('4X', 25.78125, 100.0), ('4X', 53.125, 200.0),
    ('2X', 53.125, 100.0), ('4X', 106.25, 400.0), ('8X', 106.25, 800.0), ('4X', 212.5, 800.0), ('12X', 25.78125, 300.0),
    (4, '53.125', 200.0), ('4x', '106.25 Gbps', 400.0), ('4X', 'NDR', 400.0), ('4X', 'fdr10', 40.0), ('1X', '25.78125 Gb/sec', 25.0),
], ids=['1x-sdr', '4x-sdr', '4x-ddr', '4x-qdr', '4x-fdr10', '1x-fdr', '4x-fdr', '4x-edr', '4x-hdr', '2x-hdr100', '4x-ndr',
        '8x-ndr', '4x-xdr', '12x-edr', 'int-width', 'lowercase-units', 'name', 'name-lower', 'ibv-units'])
def test_expected_link_gbps(width, lane, expected):
    assert expected_link_gbps(width, lane) == expected


@pytest.mark.parametrize('width, lane, message', [
    ('4X', 50.0, 'unknown lane speed 50.0; known: SDR 2.5, DDR 5.0'),
    ('4X', 'fast', "unknown lane speed 'fast'"),
    ('3X', 53.125, "unknown link width '3X'"),
    ('wide', 53.125, "unknown link width 'wide'"),
    (True, 53.125, 'unknown link width True'),
], ids=['unknown-speed', 'unknown-name', 'bad-width', 'width-text', 'width-bool'])
def test_expected_link_gbps_errors(width, lane, message):
    with pytest.raises(ValueError, match=message):
        expected_link_gbps(width, lane)


@pytest.mark.parametrize('rate, expected', [
    (400, 400.0), (56.0, 56.0), ('200', 200.0), ('400 Gb/sec (4X NDR)', 400.0), ('13.64', 13.64),
], ids=['int', 'float', 'text', 'ibstatus', 'decimal'])
def test_link_rate_gbps(rate, expected):
    assert link_rate_gbps(rate) == expected


@pytest.mark.parametrize('rate', ['fast', None, True], ids=['text', 'none', 'bool'])
def test_link_rate_gbps_errors(rate):
    with pytest.raises(ValueError, match='not a link rate'):
        link_rate_gbps(rate)
