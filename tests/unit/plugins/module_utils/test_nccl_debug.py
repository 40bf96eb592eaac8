"""NCCL's NCCL_DEBUG=INFO network lines (module_utils/nccl_debug.py), on lines quoted from public NVIDIA/nccl issues."""
import pytest

from _paths import real_fixture
from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.nccl_debug import gid_text, parse_nccl_debug

# https://github.com/NVIDIA/nccl/issues/1537 (NCCL 2.2x, two RoCE ports, GPU Direct RDMA disabled: no peer memory)
ISSUE_1537 = """\
hostname1:25668:27396 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB primaryip:10.10.10.10<0>
hostname1:25668:27396 [0] NCCL INFO Using non-device net plugin version 0
hostname1:25668:27396 [0] NCCL INFO Using network IB
hostname1:25668:27396 [0] NCCL INFO comm 0x55cc8aa86c70 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 1c000 commId 0x65e0bd6ee7449db4 - Init START
hostname1:25668:27396 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'
hostname1:25668:27396 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 1 'mlx5_1'
"""

# https://github.com/Mellanox/nv_peer_memory/issues/56 (NCCL 2.5.6, InfiniBand, no [RO])
NV_PEER_MEMORY_56 = """\
master_node:24570:24907 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation
master_node:24570:24907 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 0.
master_node:24570:24907 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:192.168.11.1<0>
NCCL version 2.5.6+cuda10.0
"""

# https://github.com/NVIDIA/nccl/issues/226 (no RDMA device: the socket transport)
ISSUE_226 = """\
ip-172-31-12-21:45361:45361 [0] NCCL INFO NET/IB : No device found.
ip-172-31-12-210:45305:45305 [0] NCCL INFO NET/Socket : Using [0]ens3:172.31.12.210<0>
"""

# https://github.com/NVIDIA/nccl/issues/1053 (the socket transport chosen, its GPU Direct RDMA line)
ISSUE_1053 = """\
axa:3048391:3048566 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.
axa:3048391:3048566 [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0>
axa:3048391:3048566 [0] NCCL INFO Using network Socket
axa:3048391:3048566 [0] NCCL INFO NET/Socket : GPU Direct RDMA Disabled for HCA 0 'lo'
"""

# https://github.com/NVIDIA/nccl-tests/issues/227 (HPC-X's IB plugin; the old modify_qp WARN without errno)
NCCL_TESTS_227 = """\
ai-worker01:5771:5783 [0] NCCL INFO NET/IB : Using [0]irdma0:1/RoCE [1]irdma3:1/RoCE [RO]; OOB eth0:172.16.121.86<0>
ai-worker01:5771:5783 [0] NCCL INFO Using network IBext_v8
"""
# https://github.com/NVIDIA/nccl-tests/issues/185 (the WARN line of NCCL 2.18-2.20, no errno)
NCCL_TESTS_185 = """\
dgxh100-3:225140:225355 [0] misc/ibvwrap.cc:187 NCCL WARN Call to ibv_modify_qp failed with error Network is unreachable
dgxh100-3:225140:225355 [0] NCCL INFO transport/net_ib.cc:579 -> 2
"""

# https://github.com/NVIDIA/nccl/issues/2013 (NCCL 2.27: ibvModifyQpLog's detail; the reporter masked host, pid, addresses)
ISSUE_2013 = ('[2026-03-13 22:26:02] host-01.example.com:XXXXXX [5] ibvwrap.c:262 NCCL WARN Call to ibv_modify_qp failed with 110 '
              'Connection timed out, on dev mlx_x:1, curr state INIT, next state RTR, local GID index 3, local GID '
              '::ffff:xxx.xx.xx.xx, remote GID ::ffff:xxx.xx.xxx.xx\n'
              'host-01.example.com:1:2 [5] NCCL INFO Using network IB\n')

# Built from NCCL's format, src/transport/net_ib.cc ncclIbConnect (2.19+), RoCE and InfiniBand:
# "NET/IB: %s %d IbDev %d Port %d qpn %d mtu %d GID %ld (%lX/%lX) fifoRkey=0x%x fifoLkey=0x%x" and
# "NET/IB: %s %d IbDev %d Port %d qpn %d mtu %d LID %d subnet-prefix %lu FLID %d fifoRkey=0x%x fifoLkey=0x%x";
# before 2.19 "NET/IB: Dev %d Port %d qpn %d mtu %d GID %ld (%lX/%lX)". Not a captured line.
CONNECT = """\
gpu01:10:11 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_3:1/RoCE [RO]; OOB eth0:10.0.0.1<0>
gpu01:10:11 [0] NCCL INFO Using network IB
gpu01:10:11 [0] NCCL INFO NET/IB: NCCL Dev 0 IbDev 0 Port 1 qpn 576 mtu 5 GID 3 (0/1064A8C0FFFF0000) fifoRkey=0x1b9e9c fifoLkey=0x1b9e9c
gpu01:10:11 [0] NCCL INFO NET/IB: NCCL Dev 1 IbDev 1 Port 1 qpn 577 mtu 5 query_ece={supported=1, vendor_id=0x15b3, options=0x30000002, \
comp_mask=0x0} GID 0 (80FE/7A3B6AFEFFC288A2) fifoRkey=0x1 fifoLkey=0x1
gpu02:20:21 [0] NCCL INFO NET/IB: Dev 0 Port 1 qpn 12 mtu 5 GID 3 (0/201000AFFFF0000)
gpu03:30:31 [0] NCCL INFO NET/IB: NCCL Dev 0 IbDev 0 Port 1 qpn 12 mtu 5 LID 12 subnet-prefix 65152 FLID 0 fifoRkey=0x1 fifoLkey=0x1
"""


def test_roce_devices_network_and_gdr_of_issue_1537():
    host = parse_nccl_debug(ISSUE_1537)['hosts']['hostname1']
    assert host['devices'] == [{'index': 0, 'name': 'mlx5_0', 'port': 1, 'link_layer': 'RoCE'},
                               {'index': 1, 'name': 'mlx5_1', 'port': 1, 'link_layer': 'RoCE'}]
    assert host['network'] == 'IB' and host['transport'] == 'IB' and host['relaxed_ordering']
    assert host['oob'] == 'primaryip:10.10.10.10<0>'
    assert host['gdr'] == {'mlx5_0': False, 'mlx5_1': False}


def test_infiniband_device_of_nccl_2_5():
    parsed = parse_nccl_debug(NV_PEER_MEMORY_56)
    host = parsed['hosts']['master_node']
    assert host['devices'] == [{'index': 0, 'name': 'mlx5_0', 'port': 1, 'link_layer': 'IB'}]
    assert host['network'] is None and host['transport'] == 'IB' and not host['relaxed_ordering'] and host['gdr'] == {}
    assert parsed['info_lines'] == 3


@pytest.mark.parametrize('text,host,address', [
    (ISSUE_226, 'ip-172-31-12-210', '172.31.12.210'),
    (ISSUE_1053, 'axa', '127.0.0.1'),
], ids=['issue-226', 'issue-1053'])
def test_socket_transport(text, host, address):
    hosts = parse_nccl_debug(text)['hosts']
    assert hosts[host]['transport'] == 'Socket' and hosts[host]['devices'] == []
    assert hosts[host]['socket_devices'][0]['address'] == address
    if host == 'axa':
        assert hosts['axa']['network'] == 'Socket' and hosts['axa']['gdr'] == {'lo': False}
    else:
        assert hosts['ip-172-31-12-21']['no_ib_device'] and hosts['ip-172-31-12-21']['transport'] is None


def test_an_ib_plugin_is_the_ib_transport():
    host = parse_nccl_debug(NCCL_TESTS_227)['hosts']['ai-worker01']
    assert host['network'] == 'IBext_v8' and host['transport'] == 'IB'
    assert [device['name'] for device in host['devices']] == ['irdma0', 'irdma3']


def test_modify_qp_warnings_old_and_new():
    old = parse_nccl_debug(NCCL_TESTS_185)['hosts']['dgxh100-3']['qp_errors']
    assert old == [{'errno': None, 'reason': 'Network is unreachable', 'device': None, 'port': None, 'next_state': None,
                    'gid_index': None, 'local_gid': None, 'remote_gid': None}]
    parsed = parse_nccl_debug(ISSUE_2013)
    new = parsed['hosts']['host-01.example.com']['qp_errors']
    assert new == [{'errno': 110, 'reason': 'Connection timed out', 'device': 'mlx_x', 'port': 1, 'next_state': 'RTR',
                    'gid_index': 3, 'local_gid': '::ffff:xxx.xx.xx.xx', 'remote_gid': '::ffff:xxx.xx.xxx.xx'}]
    assert parsed['warn_lines'] == 1 and parsed['info_lines'] == 1


def test_connection_lines_give_the_gid_index_and_gid():
    hosts = parse_nccl_debug(CONNECT)['hosts']
    first = hosts['gpu01']['connections']
    assert [(c['device'], c['gid_index'], c['gid']) for c in first] == [
        ('mlx5_0', 3, '::ffff:192.168.100.16'), ('mlx5_3', 0, 'fe80::a288:c2ff:fe6a:3b7a')]
    assert hosts['gpu01']['gid_indexes'] == [3, 0]
    assert hosts['gpu02']['connections'][0]['gid'] == '::ffff:10.0.1.2' and hosts['gpu02']['gid_indexes'] == [3]
    assert hosts['gpu03']['connections'][0]['lid'] == 12 and hosts['gpu03']['gid_indexes'] == []


def test_gid_text():
    assert gid_text(0, 0x1064A8C0FFFF0000) == '::ffff:192.168.100.16'
    assert gid_text(0x80FE, 0) == 'fe80::'


@pytest.mark.parametrize('text,needle', [
    ('', 'empty output'),
    ('# nccl-tests version 2.13.11\n#  Rank  0 Group  0 Pid 1 on gpu01 device  0 [0000:1b:00] NVIDIA H100\n', 'NCCL_DEBUG=INFO'),
    ('gpu01:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0 port one; OOB eth0:10.0.0.1<0>\n', 'unsupported NET/IB device list'),
], ids=['empty', 'not-info', 'bad-device-list'])
def test_parse_errors_name_the_mode(text, needle):
    with pytest.raises(ParseError) as error:
        parse_nccl_debug(text)
    assert needle in str(error.value)


def test_real_capture_info_lines_without_network():
    """A real nccl-tests capture with NCCL_DEBUG=INFO on one node: no network lines (single node), no transport."""
    text = real_fixture('nccl-tests/superbench-allreduce-8xa100-40gb-legacy-error-col.txt')
    hosts = parse_nccl_debug(text)['hosts']
    assert hosts['hostname']['transport'] is None and hosts['hostname']['devices'] == []
