"""lab/hwsim core: profiles, derived identifiers, build_fabric wiring, fault CLI, state files."""
import json
import os
import subprocess
import sys

import pytest
import yaml

from _paths import REPO

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))

# pylint: disable=wrong-import-position
from hwsim import faults, fabric as fabrics, links, profile as profiles, state as states  # noqa: E402
from hwsim.testing import HWSIM_ROOT, PROFILES, Lab, make_lab  # noqa: E402


@pytest.mark.parametrize('name', PROFILES)
def test_profiles_load_and_are_consistent(name):
    prof = profiles.load(name)
    assert prof['name'] == name
    assert prof['gpus']['count'] == 8
    compute = [hca for hca in prof['hcas'] if hca['role'] == 'compute']
    assert sorted(hca['rail'] for hca in compute) == list(range(8))
    nearest = {device['nearest_hca'] for device in prof['gpus']['devices']}
    assert nearest == {hca['name'] for hca in compute}
    assert 0 < prof['perftest']['efficiency'] <= 1
    assert prof['nccl']['all_reduce_busbw_gbps'] > 0
    for key in ('sockets', 'cores_per_socket', 'threads_per_core'):
        assert prof['system'][key] >= 1


def test_profile_facts_match_the_node_types():
    h100 = profiles.load('hgx-h100-ib')
    assert h100['gpus']['model'] == 'NVIDIA H100 80GB HBM3' and h100['gpus']['topology'] == 'NV18'
    cx7 = [hca for hca in h100['hcas'] if hca['ca_type'] == 'MT4129']
    assert len(cx7) == 8 and all(hca['ports'][0]['rate'] == 400 and hca['link_layer'] == 'InfiniBand' for hca in cx7)
    storage = [hca for hca in h100['hcas'] if hca['ca_type'] == 'MT4125']
    assert len(storage) == 2 and len({hca['adapter'] for hca in storage}) == 1
    a100 = profiles.load('hgx-a100-ib')
    assert a100['gpus']['model'] == 'NVIDIA A100-SXM4-80GB' and a100['gpus']['topology'] == 'NV12'
    assert {(hca['ca_type'], hca['ports'][0]['rate'], hca['ports'][0]['lane_speed_gbps']) for hca in a100['hcas']} == {('MT4123', 200, 53.125)}
    roce = profiles.load('hgx-h100-roce')
    assert all(hca['link_layer'] == 'Ethernet' for hca in roce['hcas'])
    assert all(hca['ports'][0].get('ipv4_network') for hca in roce['hcas'] if hca['role'] == 'compute')


def test_unknown_profile_names_the_available_ones():
    with pytest.raises(profiles.ProfileError, match='hgx-h100-ib'):
        profiles.load('dgx-b200')


def test_derived_identifiers():
    assert profiles.node_guid(1, 'mlx5_0') == 0x946dae0300000100
    assert profiles.node_guid(12, 'mlx5_9') == 0x946dae0300000c09
    assert profiles.lid(2, 'mlx5_3') == 204
    assert profiles.mac(1, 'mlx5_4') == '94:6d:ae:00:01:04'
    # The EUI-64 rule against a real capture: node GUID 0xa088c20300e3142a, port GUID 0xa288c2fffee3142a.
    assert profiles.eui64('a0:88:c2:e3:14:2a') == 0xa288c2fffee3142a
    with pytest.raises(profiles.ProfileError):
        profiles.lid(profiles.MAX_HOST_INDEX + 1, 'mlx5_0')


def test_link_arithmetic():
    assert links.rate('4X', 106.25) == 400
    assert links.rate('1X', 106.25) == 100
    assert links.rate('4X', 53.125) == 200
    assert links.rate('1X', 2.5) == 2.5
    assert links.rate_text('4X', 106.25) == '400 Gb/sec (4X NDR)'
    assert links.rate_text('4X', 2.5) == '10 Gb/sec (4X)'
    assert links.format_speed(10.0) == '10.0' and links.format_speed(25.78125) == '25.78125'
    with pytest.raises(ValueError, match='106.25'):
        links.lane_speed('77')


def test_build_fabric_is_rail_optimized(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=3)
    fabric = lab.fabric
    assert fabric['hosts']['ctl01']['index'] is None and fabric['hosts']['ctl01']['hcas'] == {}
    leaves = {switch['name']: switch for switch in fabric['switches'] if switch['kind'] == 'leaf'}
    assert sorted(leaves) == ['leaf-rail%d' % rail for rail in range(8)]
    prof = profiles.load('hgx-h100-ib')
    for number in (1, 2, 3):
        host = 'gpu%02d' % number
        entry = fabric['hosts'][host]
        assert entry['index'] == number
        for hca in prof['hcas']:
            if hca['link_layer'] != 'InfiniBand':
                assert hca['name'] not in entry['hcas']
                continue
            wired = entry['hcas'][hca['name']]
            assert wired['switch'] == 'leaf-rail%d' % hca['rail']
            assert wired['switch_port'] == number
            assert leaves[wired['switch']]['ports'][number] == {'peer': '%s/%s' % (host, hca['name']), 'peer_port': 1}
    for leaf in leaves.values():
        assert leaf['port_count'] == 64 and leaf['model'] == 'MQM9790'
        uplinks = [peer for port, peer in leaf['ports'].items() if peer['peer'].startswith('spine')]
        assert len(uplinks) == 4 and len(leaf['ports']) == 3 + 4
        assert sorted(port for port, peer in leaf['ports'].items() if peer['peer'].startswith('spine')) == [61, 62, 63, 64]
    lids = [switch['lid'] for switch in fabric['switches']] + [
        hca['lid'] for entry in fabric['hosts'].values() for hca in entry['hcas'].values()]
    guids = [switch['guid'] for switch in fabric['switches']] + [
        hca['guid'] for entry in fabric['hosts'].values() for hca in entry['hcas'].values()]
    assert len(lids) == len(set(lids)) and len(guids) == len(set(guids))
    assert fabric['subnet_manager'] == {'lid': 1, 'node': 'leaf-rail0'}
    assert len(fabric['links']) == 3 * 8 + 8 * 4


def test_build_fabric_spine_side_and_hdr_switches(tmp_path):
    fabric = make_lab(tmp_path, 'hgx-a100-ib', compute=2).fabric
    spines = [switch for switch in fabric['switches'] if switch['kind'] == 'spine']
    assert [spine['name'] for spine in spines] == ['spine0', 'spine1']
    assert all(switch['model'] == 'MQM8790' and switch['port_count'] == 40 for switch in fabric['switches'])
    leaf3 = fabrics.switch_by_name(fabric, 'leaf-rail3')
    assert spines[1]['ports'][3 * 2 + 1] == {'peer': 'leaf-rail3', 'peer_port': 39}
    assert leaf3['ports'][39] == {'peer': 'spine1', 'peer_port': 7}


def test_build_fabric_roce_only_has_no_switches(tmp_path):
    fabric = make_lab(tmp_path, 'hgx-h100-roce').fabric
    assert fabric['switches'] == [] and fabric['links'] == []
    assert fabric['hosts']['gpu02']['index'] == 2


def test_build_fabric_refuses_what_does_not_fit():
    with pytest.raises(fabrics.FabricError, match='do not fit'):
        fabrics.build_fabric([('gpu%02d' % number, 'hgx-a100-ib') for number in range(1, 40)])
    with pytest.raises(fabrics.FabricError, match='share an index'):
        fabrics.build_fabric([('a', 'hgx-a100-ib', 1), ('b', 'hgx-a100-ib', 1)])


def test_fabric_file_round_trip(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    loaded = fabrics.load_fabric(lab.fabric_path)
    assert loaded['hosts'] == lab.fabric['hosts']
    assert [switch['ports'] for switch in loaded['switches']] == [switch['ports'] for switch in lab.fabric['switches']]
    with open(lab.fabric_path, encoding='utf-8') as handle:
        assert handle.readline().startswith('# Written by hwsim')
    with pytest.raises(fabrics.FabricError, match='HWSIM_FABRIC'):
        fabrics.load_fabric(str(tmp_path / 'missing.yml'))


def test_fault_cli_validates_kind_and_arguments(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    status, _out, err = lab.run('gpu01', ['hwsim', 'fault', 'melt', 'mlx5_0'])
    assert status == 2
    for kind in faults.KINDS:
        assert kind in err
    cases = [
        (['link-width', 'mlx5_0', '3Y'], 'allowed widths: 1X, 2X, 4X'),
        (['link-speed', 'mlx5_0', '99'], '106.25'),
        (['port-down'], 'usage: hwsim fault port-down HCA'),
        (['port-down', 'mlx5_42'], "allowed: mlx5_0, mlx5_1"),
        (['nccl-slow', '1.5'], 'between 0 and 1'),
        (['xid', 'zero', '79'], 'usage: hwsim fault xid GPU CODE'),
    ]
    for argv, message in cases:
        status, _out, err = lab.run('gpu01', ['hwsim', 'fault'] + argv)
        assert status == 2, argv
        assert message in err, (argv, err)
    assert not os.path.exists(os.path.join(lab.state_dir, 'gpu01.json'))


def test_fault_clear_and_show(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    for argv in (['port-down', 'mlx5_0'], ['link-width', 'mlx5_3', '1x'], ['link-width', 'mlx5_3', '2X'],
                 ['gpu-missing', '3'], ['gpu-process', '1', '4242', 'python3'], ['hca-bw-low', 'mlx5_4', '0.5']):
        assert lab.run('gpu01', ['hwsim', 'fault'] + argv)[0] == 0
    shown = json.loads(lab.ok('gpu01', ['hwsim', 'show']))
    assert shown['host'] == 'gpu01'
    assert {'kind': 'link-width', 'args': {'hca': 'mlx5_3', 'width': '2X'}} in shown['faults']
    assert len(shown['faults']) == 5
    assert lab.run('gpu01', ['hwsim', 'clear', 'link-width'])[0] == 0
    assert lab.run('gpu01', ['hwsim', 'clear', 'port-down', 'mlx5_9'])[0] == 0
    kinds = [fault['kind'] for fault in json.loads(lab.ok('gpu01', ['hwsim', 'show']))['faults']]
    assert kinds == ['port-down', 'gpu-missing', 'gpu-process', 'hca-bw-low']
    assert lab.run('gpu01', ['hwsim', 'clear', 'bogus'])[0] == 2
    assert lab.run('gpu01', ['hwsim', 'clear'])[0] == 0
    assert json.loads(lab.ok('gpu01', ['hwsim', 'show']))['faults'] == []
    assert json.loads(lab.ok('gpu02', ['hwsim', 'show']))['faults'] == []


def test_state_writes_are_atomic(tmp_path, monkeypatch):
    directory = str(tmp_path / 'state')
    states.save(directory, 'gpu01', {'host': 'gpu01', 'faults': [{'kind': 'gpu-missing', 'args': {'index': 1}}], 'adapters': {}})
    assert os.listdir(directory) == ['gpu01.json']

    def broken_dump(*_args, **_kwargs):
        raise OSError('disk full')

    monkeypatch.setattr(states.json, 'dump', broken_dump)
    with pytest.raises(OSError):
        states.save(directory, 'gpu01', states.empty('gpu01'))
    assert os.listdir(directory) == ['gpu01.json']
    monkeypatch.undo()
    assert states.load(directory, 'gpu01')['faults'] == [{'kind': 'gpu-missing', 'args': {'index': 1}}]
    assert states.load(directory, 'gpu07') == states.empty('gpu07')


def test_unknown_command_and_tools_list(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    status, _out, err = lab.run('gpu01', ['hwsim', 'explode'])
    assert status == 2 and 'ibstat' in err
    tools = lab.ok('gpu01', ['hwsim', 'tools']).split()
    assert tools == sorted(tools)
    assert {'ibstat', 'ibstatus', 'iblinkinfo', 'ibdev2netdev', 'show_gids', 'ibv_devinfo', 'mlnx_qos',
            'nvidia-smi', 'dcgmi', 'dmesg', 'ib_write_bw', 'ib_read_bw', 'ib_write_lat', 'all_reduce_perf'} <= set(tools)


def test_host_missing_from_fabric_is_a_simulator_error(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    status, out, err = lab.run('gpu99', ['ibstat'])
    assert status == 1 and out == '' and 'gpu99 is not in' in err


def test_busybox_link_and_build_fabric_command(tmp_path):
    fabric_path = tmp_path / 'fabric.yml'
    script = os.path.join(HWSIM_ROOT, 'bin', 'hwsim')
    env = dict(os.environ, HWSIM_HOST='gpu02', HWSIM_STATE_DIR=str(tmp_path / 'state'), HWSIM_FABRIC=str(fabric_path))
    subprocess.run([sys.executable, script, 'build-fabric', str(fabric_path), 'ctl01=none', 'gpu01=hgx-a100-ib',
                    'gpu02=hgx-a100-ib'], check=True, env=env)
    assert yaml.safe_load(fabric_path.read_text())['hosts']['gpu02']['index'] == 2
    link = tmp_path / 'ibstat'
    link.symlink_to(script)
    result = subprocess.run([sys.executable, str(link), '-l'], env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0 and result.stdout.split() == ['mlx5_%d' % number for number in range(8)]
    result = subprocess.run([str(link), 'mlx5_9'], env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 255 and "'mlx5_9' IB device can't be found" in result.stderr


def test_lab_class_builds_from_explicit_indexes(tmp_path):
    lab = Lab(tmp_path, [('gpu07', 'hgx-h100-ib', 7)])
    assert lab.fabric['hosts']['gpu07']['hcas']['mlx5_0']['lid'] == 701


def test_fault_and_clear_name_another_host_of_the_lab(tmp_path):
    """`hwsim fault HOST KIND ARGS` from any host: the state directory is shared by the lab."""
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    assert lab.run('gpu01', ['hwsim', 'fault', 'gpu02', 'port-down', 'mlx5_0'])[0] == 0
    assert 'port-down' in lab.ok('gpu02', ['hwsim', 'show'])
    assert 'port-down' not in lab.ok('gpu01', ['hwsim', 'show'])
    status, _out, err = lab.run('gpu01', ['hwsim', 'fault', 'gpu99', 'port-down', 'mlx5_0'])
    assert status == 2 and 'allowed kinds' in err
    assert lab.run('gpu01', ['hwsim', 'clear', 'gpu02'])[0] == 0
    assert 'port-down' not in lab.ok('gpu02', ['hwsim', 'show'])
