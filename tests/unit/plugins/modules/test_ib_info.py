# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from _paths import own_fixture, real_fixture

from ansible_collections.aicluster.infra.plugins.modules import ib_info

CAPTURES = {'IB_NDR': 'ibstat/gpud-h100-ib-ndr-cx7-eth-cx6dx-3down.txt', 'ROCE': 'ibstat/gpud-h100-roce400-cx7-all-active.txt',
            'IBPANIC': 'ibstat/gpud-azure-ndv4-a100-hdr-ibpanic-mlx5_8.txt'}
IBDEV2NETDEV = own_fixture('ibdev2netdev/ibdev2netdev-mlnx-tools-h100-ndr-ib-roce-mixed-handmade.txt')
SHOW_GIDS = own_fixture('show_gids/show_gids-mlnx-tools-h100-roce-v1-v2-ipv4-vlan-handmade.txt')
OFED = (0, 'MLNX_OFED_LINUX-23.10-1.1.9.0:\n', '')


def _real(name):
    return real_fixture(CAPTURES[name])


def _port(result, name, number=1):
    hca = next(hca for hca in result['hcas'] if hca['name'] == name)
    return next(port for port in hca['ports'] if port['port'] == number)


def test_ibstat_with_ibdev2netdev_and_ofed(run_module):
    result, calls = run_module(ib_info, {}, {
        'ibstat': (0, _real('IB_NDR'), ''),
        'ibdev2netdev': (0, IBDEV2NETDEV, ''),
        'ofed_info': OFED,
    })
    assert result['changed'] is False
    assert 'failed' not in result
    assert calls == [['/usr/bin/ibstat'], ['/usr/bin/ibdev2netdev'], ['/usr/bin/ofed_info', '-s']]
    assert len(result['hcas']) == 12
    mlx5_0 = result['hcas'][0]
    assert mlx5_0['name'] == 'mlx5_0'
    assert mlx5_0['ca_type'] == 'MT4129'
    port = mlx5_0['ports'][0]
    assert port['state'] == 'Active' and port['physical_state'] == 'LinkUp'
    assert port['rate_gbps'] == 400.0
    assert port['link_layer'] == 'InfiniBand'
    assert port['netdev'] == 'ibp12s0' and port['netdev_state'] == 'Up'
    assert port['gids'] == [] and port['roce_v2_gid_index'] is None
    down = _port(result, 'mlx5_2')
    assert down['state'] == 'Down' and down['netdev'] == 'ens9f1np1' and down['netdev_state'] == 'Down'
    assert result['ofed_version'] == 'MLNX_OFED_LINUX-23.10-1.1.9.0'
    assert result['errors'] == []


def test_roce_gid_index_prefers_v2_with_ipv4(run_module):
    result, dummy = run_module(ib_info, {}, {
        'ibstat': (0, _real('ROCE'), ''),
        'show_gids': (0, SHOW_GIDS, ''),
    })
    port = _port(result, 'mlx5_0')
    assert port['link_layer'] == 'Ethernet'
    assert port['roce_v2_gid_index'] == 3
    assert [gid['index'] for gid in port['gids']] == [0, 1, 2, 3]
    assert port['gids'][0] == {'index': 0, 'gid': 'fe80:0000:0000:0000:a288:c2ff:fead:eab8', 'ipv4': None, 'version': 'v1', 'netdev': 'ens1np0'}
    assert port['gids'][3]['ipv4'] == '10.10.1.21'
    # no ibdev2netdev: the netdev comes from show_gids, its state is unknown
    assert port['netdev'] == 'ens1np0' and port['netdev_state'] is None
    # lowest v2 index with IPv4 wins over the VLAN GID 5 with IPv4
    assert _port(result, 'mlx5_3')['roce_v2_gid_index'] == 3
    # a port without GIDs in show_gids
    other = _port(result, 'mlx5_1')
    assert other['gids'] == [] and other['roce_v2_gid_index'] is None and other['netdev'] is None
    assert result['ofed_version'] is None


def test_roce_v2_gid_index_without_ipv4_is_lowest_v2():
    gids = [{'index': 0, 'version': 'v1', 'ipv4': None}, {'index': 5, 'version': 'v2', 'ipv4': None},
            {'index': 1, 'version': 'v2', 'ipv4': None}]
    assert ib_info.roce_v2_gid_index(gids) == 1
    assert ib_info.roce_v2_gid_index([{'index': 0, 'version': 'v1', 'ipv4': '10.0.0.1'}]) is None
    assert ib_info.roce_v2_gid_index([]) is None


def test_optional_tools_absent(run_module):
    result, calls = run_module(ib_info, {}, {'ibstat': (0, _real('IB_NDR'), '')})
    assert calls == [['/usr/bin/ibstat']]
    for hca in result['hcas']:
        for port in hca['ports']:
            assert port['netdev'] is None
            assert port['netdev_state'] is None
            assert port['gids'] == []
            assert port['roce_v2_gid_index'] is None
    assert result['ofed_version'] is None
    assert 'warnings' not in result, result['warnings']


def test_devices_filter_and_unknown_name(run_module):
    result, dummy = run_module(ib_info, {'devices': ['mlx5_3', 'mlx5_0', 'mlx5_99']}, {'ibstat': (0, _real('IB_NDR'), '')})
    assert [hca['name'] for hca in result['hcas']] == ['mlx5_0', 'mlx5_3']
    assert result['errors'] == ['mlx5_99: not printed by ibstat']


def test_check_mode_still_returns_facts(run_module):
    result, calls = run_module(ib_info, {'_ansible_check_mode': True}, {'ibstat': (0, _real('IB_NDR'), '')})
    assert result['changed'] is False
    assert len(result['hcas']) == 12
    assert calls == [['/usr/bin/ibstat']]


def test_ibstat_missing(run_module):
    result, calls = run_module(ib_info, {}, {'ibdev2netdev': (0, IBDEV2NETDEV, '')})
    assert result['failed'] is True
    assert 'ibstat' in result['msg']
    assert calls == []


def test_ibstat_fails_without_output(run_module):
    result, dummy = run_module(ib_info, {}, {'ibstat': (255, '', "ibpanic: [1] main: can't open UMAD port\n")})
    assert result['failed'] is True
    assert 'ibstat failed with rc=255' in result['msg']
    assert result['cmd'] == ['/usr/bin/ibstat']
    assert result['rc'] == 255
    assert result['stdout'] == ''
    assert 'UMAD' in result['stderr']


def test_ibstat_partial_output_with_ibpanic_is_returned_with_errors(run_module):
    out = _real('IBPANIC').replace('\nibpanic', '\n\x00ibpanic').split('\x00')[0]
    err = _real('IBPANIC')[len(out):]
    result, dummy = run_module(ib_info, {}, {'ibstat': (255, out, err)})
    assert 'failed' not in result
    assert [hca['name'] for hca in result['hcas']] == ['mlx5_%d' % i for i in range(8)]
    assert any("stat of IB device 'mlx5_8' failed" in line for line in result['errors'])
    assert any('rc=255' in warning for warning in result['warnings'])


def test_ibstat_merged_stderr_real_capture(run_module):
    # the capture has stderr merged into stdout; the parser itself finds the ibpanic line
    result, dummy = run_module(ib_info, {}, {'ibstat': (255, _real('IBPANIC'), '')})
    assert len(result['hcas']) == 8
    assert len(result['errors']) == 1 and result['errors'][0].startswith('ibpanic:')


def test_ibstat_unparseable_output(run_module):
    result, dummy = run_module(ib_info, {}, {'ibstat': (0, 'Segmentation fault\nsomething else\n', '')})
    assert result['failed'] is True
    assert 'not ibstat output' in result['msg']
    assert result['rc'] == 0 and result['stdout'].startswith('Segmentation fault')


def test_ibstat_empty_output_means_no_adapters(run_module):
    result, dummy = run_module(ib_info, {}, {'ibstat': (0, '', '')})
    assert result['hcas'] == [] and result['errors'] == []


def test_optional_tool_failure_or_garbage_only_warns(run_module):
    result, dummy = run_module(ib_info, {}, {
        'ibstat': (0, _real('IB_NDR'), ''),
        'ibdev2netdev': (1, '', 'ls: cannot access /sys/class/net/*/device/infiniband\n'),
        'show_gids': (0, 'garbage\n', ''),
        'ofed_info': (1, '', 'error\n'),
    })
    assert 'failed' not in result
    assert _port(result, 'mlx5_0')['netdev'] is None
    assert any(warning.startswith('ibdev2netdev failed (rc=1)') for warning in result['warnings'])
    assert any(warning.startswith('show_gids printed output') for warning in result['warnings'])
    assert result['ofed_version'] is None


def test_ibv_devinfo_adds_active_and_max_mtu(run_module):
    devinfo = own_fixture('ibv_devinfo/ibv_devinfo-rdma-core-cx7-roce-mtu9000-mtu1500-handmade.txt')
    result, calls = run_module(ib_info, {}, {'ibstat': (0, _real('ROCE'), ''), 'ibv_devinfo': (0, devinfo, '')})
    assert ['/usr/bin/ibv_devinfo'] in calls
    assert (_port(result, 'mlx5_0')['active_mtu'], _port(result, 'mlx5_0')['max_mtu']) == (4096, 4096)
    assert _port(result, 'mlx5_1')['active_mtu'] == 1024
    # the PSID of each adapter ibv_devinfo printed
    board_ids = dict((hca['name'], hca['board_id']) for hca in result['hcas'])
    assert [board_ids[name] for name in ('mlx5_0', 'mlx5_1', 'mlx5_2')] == ['MT_0000000838'] * 3
    # an adapter or port ibv_devinfo did not print, and a node without ibv_devinfo: null, not a failure
    assert _port(result, 'mlx5_3')['active_mtu'] is None and board_ids['mlx5_3'] is None
    result, dummy = run_module(ib_info, {}, {'ibstat': (0, _real('ROCE'), '')})
    assert _port(result, 'mlx5_0')['active_mtu'] is None and 'failed' not in result
    assert set(hca['board_id'] for hca in result['hcas']) == set([None])


def test_ibv_devinfo_board_id_of_a_real_capture(run_module):
    result, dummy = run_module(ib_info, {}, {
        'ibstat': (0, real_fixture('ibstat/kaust-ibex-cx6-hdr100-rate100.txt'), ''),
        'ibv_devinfo': (0, real_fixture('ibv_devinfo/kaust-ibex-cx6-hdr100-rdma-core-tabs.txt'), '')})
    assert [(hca['name'], hca['firmware_version'], hca['board_id']) for hca in result['hcas']] == [
        ('mlx5_0', '20.35.1012', 'MT_0000000222')]


# NVSwitch bridge functions (HGX B200/B300): RDMA devices whose VPD carries SW_MNG, like mlx5_0..mlx5_3 of a DGX B200
# (siderolabs/extensions #895), sorted before the compute HCAs.
def _ca(name, guid):
    return ("CA '%s'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tFirmware version: 28.39.1002\n\tHardware version: 0\n"
            "\tNode GUID: %s\n\tSystem image GUID: %s\n\tPort 1:\n\t\tState: Active\n\t\tPhysical state: LinkUp\n"
            "\t\tRate: 400\n\t\tBase lid: 5\n\t\tLMC: 0\n\t\tSM lid: 1\n\t\tCapability mask: 0xa751e848\n"
            "\t\tPort GUID: %s\n\t\tLink layer: InfiniBand\n" % (name, guid, guid, guid))


def _sysfs_with_bridges(tmp_path, bridges, others):
    from ansible_collections.aicluster.infra.plugins.module_utils.nvswitch import build_vpd
    for name in bridges + others:
        folder = tmp_path / 'class' / 'infiniband' / name / 'device'
        folder.mkdir(parents=True)
        va = 'MLX:MN=MLNX:CSKU=V2:UUID=V3:PCI=V0:MODL=CX7' + (':SMDL=SW_MNG' if name in bridges else '')
        (folder / 'vpd').write_bytes(build_vpd('ConnectX-7', [('PN', 'MCX75310AAS-NEAT'), ('VA', va)]))
    return str(tmp_path)


def test_nvswitch_bridges_are_left_out_of_the_hcas(run_module, tmp_path):
    text = ''.join(_ca('mlx5_%d' % n, '0xcc40f3030027f6%02x' % n) for n in range(6))
    root = _sysfs_with_bridges(tmp_path, ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3'], ['mlx5_4', 'mlx5_5'])
    result, _calls = run_module(ib_info, {'sysfs_root': root}, {'ibstat': (0, text, '')})
    assert [hca['name'] for hca in result['hcas']] == ['mlx5_4', 'mlx5_5']
    assert result['nvswitch_bridges'] == ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3']
    assert all(hca['nvswitch_bridge'] is False for hca in result['hcas'])
    kept, _calls = run_module(ib_info, {'sysfs_root': root, 'nvswitch_bridges': 'include'}, {'ibstat': (0, text, '')})
    assert [hca['name'] for hca in kept['hcas'] if hca['nvswitch_bridge']] == ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3']
    # without a readable VPD (a container, another sysfs) nothing is a bridge
    plain, _calls = run_module(ib_info, {'sysfs_root': str(tmp_path / 'none')}, {'ibstat': (0, text, '')})
    assert len(plain['hcas']) == 6 and plain['nvswitch_bridges'] == []


def _sysfs_gids(tmp_path, dev, entries, port=1):
    """A port's GID table as sysfs has it: every index has a gids/ file (all zero when unused); an unused index's
    gid_attrs/types and ndevs refuse to be read (EINVAL), simulated by a directory in their place."""
    base = tmp_path / 'class' / 'infiniband' / dev / 'ports' / str(port)
    for sub in ('gids', 'gid_attrs/types', 'gid_attrs/ndevs'):
        (base / sub).mkdir(parents=True, exist_ok=True)
    for index in range(8):
        gid, kind, ndev = entries.get(index, ('0000:0000:0000:0000:0000:0000:0000:0000', None, None))
        (base / 'gids' / str(index)).write_text(gid + '\n')
        for sub, value in (('gid_attrs/types', kind), ('gid_attrs/ndevs', ndev)):
            if value is None:
                (base / sub / str(index)).mkdir()
            else:
                (base / sub / str(index)).write_text(value + '\n')
    return str(tmp_path)


def test_without_show_gids_the_gid_table_comes_from_sysfs(run_module, tmp_path):
    """The inbox rdma-core stack has no show_gids: the same table from the files it reads. The entries of the
    handmade show_gids fixture's mlx5_0, and a ConnectX's unused entries (all zero, type unreadable)."""
    root = _sysfs_gids(tmp_path, 'mlx5_0', {
        0: ('fe80:0000:0000:0000:a288:c2ff:fead:eab8', 'IB/RoCE v1', 'ens1np0'),
        1: ('fe80:0000:0000:0000:a288:c2ff:fead:eab8', 'RoCE v2', 'ens1np0'),
        2: ('0000:0000:0000:0000:0000:ffff:0a0a:0115', 'IB/RoCE v1', 'ens1np0'),
        3: ('0000:0000:0000:0000:0000:ffff:0a0a:0115', 'RoCE v2', 'ens1np0')})
    result, calls = run_module(ib_info, {'sysfs_root': root}, {'ibstat': (0, _real('ROCE'), '')})
    assert calls == [['/usr/bin/ibstat']]
    port = _port(result, 'mlx5_0')
    from_tool, dummy = run_module(ib_info, {}, {'ibstat': (0, _real('ROCE'), ''), 'show_gids': (0, SHOW_GIDS, '')})
    assert port['gids'] == _port(from_tool, 'mlx5_0')['gids'] and port['roce_v2_gid_index'] == 3
    assert port['netdev'] == 'ens1np0'
    assert _port(result, 'mlx5_3')['gids'] == [] and _port(result, 'mlx5_3')['roce_v2_gid_index'] is None


def test_gid_row_from_sysfs():
    from ansible_collections.aicluster.infra.plugins.module_utils.rdma_tools import gid_row_from_sysfs
    assert gid_row_from_sysfs('mlx5_0', 1, '7', '0000:0000:0000:0000:0000:FFFF:0A9C:8184\n', 'RoCE v2\n', 'net1\n') == {
        'dev': 'mlx5_0', 'port': 1, 'index': 7, 'gid': '0000:0000:0000:0000:0000:ffff:0a9c:8184',
        'ipv4': '10.156.129.132', 'version': 'v2', 'netdev': 'net1'}
    assert gid_row_from_sysfs('mlx5_0', 1, 0, 'fe80:0000:0000:0000:0ac0:ebff:feda:1cfb', 'IB/RoCE v1', '')['ipv4'] == ''
    assert gid_row_from_sysfs('mlx5_0', 1, 4, '0000:0000:0000:0000:0000:0000:0000:0000', 'RoCE v2', 'eth0') is None
    assert gid_row_from_sysfs('mlx5_0', 1, 4, 'fe80:0000:0000:0000:0ac0:ebff:feda:1cfb', None, None) is None
    assert gid_row_from_sysfs('mlx5_0', 1, 4, 'not a gid', 'RoCE v2', 'eth0') is None
