"""lab/hwsim InfiniBand/RDMA stand-ins, parsed back with the collection's own parsers.

For every profile, healthy and with each IB fault kind, every stand-in runs
in-process on gpu01 of a small lab and its output must parse into the
profile's values; where a real capture of the command exists the layout
(header lines, keys, their order, indentation, separators) is compared too.
"""
import os
import re
import sys

import pytest

from _paths import REPO, real_fixture

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))

# pylint: disable=wrong-import-position
from ansible_collections.aicluster.infra.plugins.module_utils.iblinkinfo import parse_iblinkinfo  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.ibstat import parse_ibstat  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.rdma_tools import parse_ibdev2netdev, parse_show_gids  # noqa: E402
from hwsim import profile as profiles  # noqa: E402
from hwsim.testing import PROFILES, make_lab  # noqa: E402

# (fault argv after the HCA name or None, expected port on the faulted HCA for IB / Ethernet)
FAULTS = {
    'healthy': None,
    'port-down': ['port-down'],
    'link-width': ['link-width', '1X'],
    'link-speed': ['link-speed', 'SLOWER'],
}
SLOWER = {106.25: '53.125', 53.125: '25.78125', 25.78125: '14.0625'}


def _first_compute_ib(prof):
    """The rail-1 HCA (not the first in the list, to catch index mix-ups)."""
    return [hca for hca in prof['hcas'] if hca['role'] == 'compute' and hca['rail'] == 1][0]


def _inject(lab, prof, scenario):
    """Inject the scenario's fault on gpu01's rail-1 HCA; returns (hca, expected port values)."""
    hca = _first_compute_ib(prof)
    port = hca['ports'][0]
    expected = {'state': 'Active', 'physical_state': 'LinkUp', 'width': port['width'],
                'lane_speed': port['lane_speed_gbps'], 'rate': port['rate']}
    argv = FAULTS[scenario]
    if argv is None:
        return hca, expected
    argv = [argv[0], hca['name']] + [SLOWER[port['lane_speed_gbps']] if item == 'SLOWER' else item for item in argv[1:]]
    status, _out, err = lab.run('gpu01', ['hwsim', 'fault'] + argv)
    assert status == 0, err
    if scenario == 'port-down':
        ethernet = hca['link_layer'] == 'Ethernet'
        expected.update(state='Down', physical_state='Disabled' if ethernet else 'Polling', rate=40 if ethernet else 10)
    elif scenario == 'link-width':
        expected.update(width='1X', rate=port['rate'] // 4)
    else:
        expected.update(lane_speed=float(argv[2]), rate=port['rate'] // 2)
    return hca, expected


@pytest.fixture(params=[(name, scenario) for name in PROFILES for scenario in FAULTS],
                ids=lambda param: '%s-%s' % param)
def scenario_lab(request, tmp_path):
    name, scenario = request.param
    lab = make_lab(tmp_path, name)
    prof = profiles.load(name)
    hca, expected = _inject(lab, prof, scenario)
    return lab, prof, scenario, hca, expected


def test_ibstat_parses_into_the_profile(scenario_lab):
    lab, prof, _scenario, faulted, expected = scenario_lab
    parsed = parse_ibstat(lab.ok('gpu01', ['ibstat']))
    assert parsed['errors'] == []
    assert [ca['name'] for ca in parsed['cas']] == sorted(hca['name'] for hca in prof['hcas'])
    for ca in parsed['cas']:
        hca = profiles.find_hca(prof, ca['name'])
        port = ca['ports'][0]
        assert ca['ca_type'] == hca['ca_type'] and ca['firmware_version'] == hca['firmware']
        assert ca['node_guid'] == '0x%016x' % profiles.node_guid(1, hca['name'])
        assert port['link_layer'] == hca['link_layer']
        if hca['name'] == faulted['name']:
            assert (port['state'], port['physical_state'], port['rate_gbps']) == (
                expected['state'], expected['physical_state'], expected['rate'])
        else:
            assert (port['state'], port['physical_state'], port['rate_gbps']) == ('Active', 'LinkUp', hca['ports'][0]['rate'])
        if hca['link_layer'] == 'InfiniBand' and port['state'] == 'Active':
            assert port['base_lid'] == profiles.lid(1, hca['name']) and port['sm_lid'] == 1
            assert port['port_guid'] == ca['node_guid']
        else:
            assert port['base_lid'] == 0 and port['sm_lid'] == 0
        if hca['link_layer'] == 'Ethernet':
            assert port['port_guid'] == '0x%016x' % profiles.eui64(profiles.mac(1, hca['name']))


def test_ibstat_one_ca_and_one_port(scenario_lab):
    lab, _prof, _scenario, faulted, expected = scenario_lab
    parsed = parse_ibstat(lab.ok('gpu01', ['ibstat', faulted['name']]))
    assert [ca['name'] for ca in parsed['cas']] == [faulted['name']]
    single = lab.ok('gpu01', ['ibstat', faulted['name'], '1'])
    assert single.startswith("CA: '%s'\nPort 1:\nState: " % faulted['name'])
    port = parse_ibstat(single)['cas'][0]['ports'][0]
    assert (port['state'], port['rate_gbps']) == (expected['state'], expected['rate'])


def test_ibstatus_reports_sysfs_rate_and_state(scenario_lab):
    lab, _prof, _scenario, faulted, expected = scenario_lab
    out = lab.ok('gpu01', ['ibstatus', faulted['name']])
    fields = dict(re.findall(r'^\t([a-z_ ]+):\t+ (.*)$', out, re.M))
    assert fields['state'].endswith(': ' + {'Active': 'ACTIVE', 'Down': 'DOWN'}[expected['state']])
    assert fields['phys state'].endswith(': ' + expected['physical_state'])
    assert fields['rate'].startswith('%s Gb/sec (%s' % (expected['rate'], expected['width'] if expected['state'] == 'Active' else '4X'))


def test_iblinkinfo_shows_the_fault_on_both_ends(scenario_lab):
    lab, prof, scenario, faulted, expected = scenario_lab
    status, out, err = lab.run('gpu01', ['iblinkinfo'])
    if all(hca['link_layer'] == 'Ethernet' for hca in prof['hcas']):
        assert status == 1 and out == ''
        assert parse_iblinkinfo(err)['errors']
        return
    assert status == 0, err
    parsed = parse_iblinkinfo(out)
    assert parsed['errors'] == []
    by_node = {}
    for link in parsed['links']:
        by_node.setdefault(link['node_name'], []).append(link)
    rail = faulted['rail']
    leaf = [name for name in by_node if ';leaf-rail%d:' % rail in name][0]
    switch_side = [link for link in by_node[leaf] if link['port'] == 1][0]
    ca_name = 'gpu01 %s' % faulted['name']
    ib_hcas = [hca for hca in prof['hcas'] if hca['link_layer'] == 'InfiniBand']
    for host in ('gpu01', 'gpu02'):
        for hca in ib_hcas:
            name = '%s %s' % (host, hca['name'])
            if name == ca_name and scenario == 'port-down':
                assert name not in by_node
                continue
            (link,) = by_node[name]
            assert link['node_type'] == 'CA' and link['node_lid'] == profiles.lid(int(host[-2:]), hca['name'])
            assert link['peer_name'].startswith('MF0;leaf-rail%d:' % hca['rail']) and link['peer_port'] == int(host[-2:])
    if scenario == 'port-down':
        assert (switch_side['state'], switch_side['physical_state'], switch_side['peer_name']) == ('Down', 'Polling', None)
        return
    (ca_side,) = by_node[ca_name]
    for link in (ca_side, switch_side):
        assert link['state'] == 'Active' and link['width'] == expected['width']
        assert link['lane_speed_gbps'] == expected['lane_speed']
        assert link['degraded'] is (scenario != 'healthy')
    could_be = {'healthy': None, 'link-width': 'Could be 4X',
                'link-speed': 'Could be %s Gbps' % faulted['ports'][0]['lane_speed_gbps']}[scenario]
    assert ca_side['could_be'] == could_be and switch_side['could_be'] == could_be
    assert switch_side['peer_name'] == ca_name and ca_side['peer_name'] == leaf
    healthy = [link for link in parsed['links'] if link['state'] == 'Active' and link not in (ca_side, switch_side)]
    assert healthy and not any(link['degraded'] for link in healthy)


def test_iblinkinfo_filters_and_line_mode(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    assert lab.run('gpu02', ['hwsim', 'fault', 'link-width', 'mlx5_0', '1X'])[0] == 0
    cas = parse_iblinkinfo(lab.ok('gpu01', ['iblinkinfo', '--cas-only']))['links']
    assert {link['node_type'] for link in cas} == {'CA'} and len(cas) == 16
    switches = parse_iblinkinfo(lab.ok('gpu01', ['iblinkinfo', '--switches-only']))['links']
    assert {link['node_type'] for link in switches} == {'Switch'} and len(switches) == 10 * 64
    line = parse_iblinkinfo(lab.ok('gpu01', ['iblinkinfo', '-l']))['links']
    degraded = [link for link in line if link['degraded']]
    assert {link['node_name'] for link in degraded} == {'gpu02 mlx5_0', 'MF0;leaf-rail0:MQM9790/U1'}
    assert all(link['node_guid'] and link['peer_guid'] for link in line if link['state'] == 'Active')
    down = parse_iblinkinfo(lab.ok('gpu01', ['iblinkinfo', '-d']))['links']
    assert down and all(link['state'] == 'Down' for link in down)
    assert lab.run('gpu01', ['iblinkinfo', '--bogus'])[0] == 2
    status, _out, err = lab.run('ctl01', ['iblinkinfo'])
    assert status == 1 and 'Failed to open' in err


def test_iblinkinfo_default_layout_matches_the_printf_formats(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    lab.run('gpu01', ['hwsim', 'fault', 'link-speed', 'mlx5_0', '53.125'])
    lines = lab.ok('gpu02', ['iblinkinfo']).splitlines()
    assert lines[0] == 'Switch: 0xfc6a1c0300010000 MF0;leaf-rail0:MQM9790/U1:'
    assert lines[1] == ('           1    1[  ] ==( 4X        53.125 Gbps Active/  LinkUp)==>     101    1[  ] '
                        '"gpu01 mlx5_0" ( Could be 106.25 Gbps)')
    assert '           1    5[  ] ==(                Down/ Polling)==>             [  ] "" ( )' in lines
    assert 'CA: gpu02 mlx5_9:' in lines
    assert ('      0x946dae0300000209    210    1[  ] ==( 4X        106.25 Gbps Active/  LinkUp)==>       8    2[  ] '
            '"MF0;leaf-rail7:MQM9790/U1" ( )') in lines


def test_ibdev2netdev_plain_and_verbose(scenario_lab):
    lab, prof, scenario, faulted, _expected = scenario_lab
    plain = parse_ibdev2netdev(lab.ok('gpu01', ['ibdev2netdev']))
    verbose = parse_ibdev2netdev(lab.ok('gpu01', ['ibdev2netdev', '-v']))
    for entries in (plain, verbose):
        assert [entry['dev'] for entry in entries] == sorted(hca['name'] for hca in prof['hcas'])
        for entry in entries:
            hca = profiles.find_hca(prof, entry['dev'])
            assert entry['netdev'] == hca['ports'][0]['netdev']
            down = scenario == 'port-down' and hca['name'] == faulted['name']
            assert entry['state'] == ('Down' if down else 'Up')
    for entry in verbose:
        hca = profiles.find_hca(prof, entry['dev'])
        assert (entry['pci'], entry['device_id'], entry['part_id'], entry['firmware_version']) == (
            hca['pci'], hca['ca_type'], hca['part_number'], hca['firmware'])
        assert entry['port_state'] == ('DOWN' if scenario == 'port-down' and hca['name'] == faulted['name'] else 'ACTIVE')


def test_show_gids_roce_v2_ipv4_index(scenario_lab):
    lab, prof, _scenario, _faulted, _expected = scenario_lab
    out = lab.ok('gpu01', ['show_gids'])
    gids = parse_show_gids(out)
    assert out.rstrip('\n').endswith('n_gids_found=%d' % len(gids))
    for hca in prof['hcas']:
        rows = [row for row in gids if row['dev'] == hca['name']]
        port = hca['ports'][0]
        if hca['link_layer'] == 'InfiniBand':
            assert [(row['index'], row['version'], row['netdev'], row['ipv4']) for row in rows] == [(0, 'v1', '', '')]
            assert rows[0]['gid'] == profiles.gid_text((0xfe80 << 112) | profiles.node_guid(1, hca['name']))
            continue
        assert all(row['netdev'] == port['netdev'] for row in rows)
        v2_ipv4 = [row for row in rows if row['version'] == 'v2' and row['ipv4']]
        if port.get('ipv4_network'):
            assert [(row['index'], row['ipv4']) for row in v2_ipv4] == [(3, profiles.ipv4(1, port).split('/')[0])]
        else:
            assert not v2_ipv4 and len(rows) == 2
    status, out, err = lab.run('gpu01', ['show_gids', 'mlx5_77'])
    assert status == 0 and out.endswith('n_gids_found=0\n') and 'cannot access' in err


def test_ibv_devinfo_one_device(scenario_lab):
    lab, _prof, _scenario, faulted, expected = scenario_lab
    out = lab.ok('gpu01', ['ibv_devinfo', '-d', faulted['name']])
    assert out.startswith('hca_id:\t%s\n' % faulted['name'])
    assert '\t\t\tstate:\t\t\t%s\n' % {'Active': 'PORT_ACTIVE (4)', 'Down': 'PORT_DOWN (1)'}[expected['state']] in out
    assert '\t\t\tlink_layer:\t\t%s\n' % faulted['link_layer'] in out
    status, _out, err = lab.run('gpu01', ['ibv_devinfo', '-d', 'mlx5_77'])
    assert status == 255 and err == "IB device 'mlx5_77' wasn't found\n"


def _layout(text, pattern):
    """(indent, key) per line: the structure of a ``key: value`` report without its values."""
    shape = []
    for line in text.splitlines():
        match = re.match(pattern, line)
        if match:
            shape.append((match.group(1), match.group(2)))
    return shape


IBSTAT_LINE = r'^(\s*)([A-Za-z][A-Za-z ]*?):'


def test_ibstat_layout_matches_real_capture(tmp_path):
    real = real_fixture('ibstat/gpud-h100-ib-ndr-cx7-eth-cx6dx-3down.txt')
    real_block = real.split("CA '")[1]
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    ours = lab.ok('gpu01', ['ibstat'])
    our_block = ours.split("CA '")[1]
    assert _layout(our_block, IBSTAT_LINE) == _layout(real_block, IBSTAT_LINE)
    assert ours.startswith("CA 'mlx5_0'\n\tCA type: MT4129\n")
    real_cas = parse_ibstat(real)['cas']
    our_cas = parse_ibstat(ours)['cas']
    # Same key sets, same kinds of values (GUIDs as 0x + 16 hex digits, capability mask as 0x + 8).
    for real_ca, our_ca in zip(real_cas, our_cas):
        assert set(real_ca) == set(our_ca)
        for key in ('node_guid', 'system_image_guid'):
            assert re.match(r'^0x[0-9a-f]{16}$', our_ca[key]) and re.match(r'^0x[0-9a-f]{16}$', real_ca[key])
        assert re.match(r'^0x[0-9a-f]{8}$', our_ca['ports'][0]['capability_mask'])
    # The real node also has CX-7 NDR ports at Rate 400 and CX-6 Dx Ethernet ports at Rate 100.

    def kinds(cas):
        return {(ca['ca_type'], ca['ports'][0]['link_layer'], ca['ports'][0]['rate_gbps']) for ca in cas if ca['ports'][0]['state'] == 'Active'}

    assert kinds(real_cas) == kinds(our_cas)


def test_ibstat_roce_layout_matches_real_capture(tmp_path):
    real = real_fixture('ibstat/gpud-h100-roce400-cx7-all-active.txt')
    lab = make_lab(tmp_path, 'hgx-h100-roce')
    ours = lab.ok('gpu01', ['ibstat'])
    assert _layout(ours.split("CA '")[1], IBSTAT_LINE) == _layout(real.split("CA '")[1], IBSTAT_LINE)
    real_port = parse_ibstat(real)['cas'][0]['ports'][0]
    our_port = parse_ibstat(ours)['cas'][0]['ports'][0]
    for key in ('state', 'physical_state', 'rate_gbps', 'base_lid', 'lmc', 'sm_lid', 'capability_mask', 'link_layer'):
        assert our_port[key] == real_port[key], key
    down = real_fixture('ibstat/gpud-h100-roce400-cx7-2down-disabled.txt')
    real_down = [ca['ports'][0] for ca in parse_ibstat(down)['cas'] if ca['ports'][0]['state'] == 'Down'][0]
    lab.run('gpu01', ['hwsim', 'fault', 'port-down', 'mlx5_5'])
    our_down = [ca['ports'][0] for ca in parse_ibstat(lab.ok('gpu01', ['ibstat']))['cas'] if ca['name'] == 'mlx5_5'][0]
    for key in ('state', 'physical_state', 'rate_gbps', 'base_lid', 'sm_lid', 'link_layer'):
        assert our_down[key] == real_down[key], key


def test_ibstat_errors_like_the_real_tool(tmp_path):
    lab = make_lab(tmp_path, 'hgx-a100-ib')
    status, out, err = lab.run('gpu01', ['ibstat', 'mlx5_8'])
    assert status == 255 and out == ''
    assert parse_ibstat(err)['errors'] == [err.strip()]
    assert re.match(r"^ibpanic: \[\d+\] main: 'mlx5_8' IB device can't be found: ", err)
    status, _out, err = lab.run('gpu01', ['ibstat', 'mlx5_0', '2'])
    assert status == 255 and "has no port number 2 - max (1)" in err
    assert lab.ok('gpu01', ['ibstat', '-l']).split() == ['mlx5_%d' % number for number in range(8)]
    assert lab.ok('gpu01', ['ibstat', '-p']).split() == ['0x%016x' % profiles.node_guid(1, 'mlx5_%d' % number) for number in range(8)]
    short = lab.ok('gpu01', ['ibstat', '-s', 'mlx5_0'])
    assert 'Port 1' not in short and short.startswith("CA 'mlx5_0'\n")
    status, _out, err = lab.run('ctl01', ['ibstat'])
    assert status == 255 and "can't list IB device names" in err
    assert lab.run('gpu01', ['ibstat', '--frob'])[0] == 2


IBSTATUS_LINE = r'^(\s*)([a-z_ ]+):'


def test_ibstatus_layout_matches_real_capture(tmp_path):
    real = real_fixture('ibstatus/gpud-azure-ndv4-a100-hdr-ibstatus.txt')
    lab = make_lab(tmp_path, 'hgx-a100-ib')
    ours = lab.ok('gpu01', ['ibstatus'])
    real_blocks = real.split('\n\n')
    our_blocks = ours.split('\n\n')
    assert len([block for block in our_blocks if block.strip()]) == 8
    # The capture has tabs expanded to spaces; compare keys, order and the values' spelling.
    real_keys = [key for _indent, key in _layout(real_blocks[0], IBSTATUS_LINE)]
    our_keys = [key for _indent, key in _layout(our_blocks[0], IBSTATUS_LINE)]
    assert our_keys == real_keys
    assert real_blocks[0].splitlines()[0] == "Infiniband device 'mlx5_0' port 1 status:"
    assert our_blocks[0].splitlines()[0] == "Infiniband device 'mlx5_0' port 1 status:"
    real_values = dict(re.findall(r'^\s+([a-z_ ]+):\s+(.*)$', real_blocks[0], re.M))
    our_values = dict(re.findall(r'^\s+([a-z_ ]+):\s+(.*)$', our_blocks[0], re.M))
    for key in ('state', 'phys state', 'rate', 'link_layer'):
        assert our_values[key] == real_values[key], key
    assert re.match(r'^0x[0-9a-f]+$', our_values['base lid']) and re.match(r'^0x[0-9a-f]+$', real_values['base lid'])
    assert re.match(r'^fe80(:[0-9a-f]{4}){7}$', our_values['default gid'])
    status, out, _err = lab.run('gpu01', ['ibstatus', 'mlx5_9'])
    assert status == 255 and out.startswith("Fatal error:  device 'mlx5_9'")


def test_ibv_devinfo_layout_matches_real_capture(tmp_path):
    real = real_fixture('ibv_devinfo/kaust-ibex-cx6-hdr100-rdma-core-tabs.txt')
    lab = make_lab(tmp_path, 'hgx-a100-ib')
    ours = lab.ok('gpu01', ['ibv_devinfo', '-d', 'mlx5_0'])
    pattern = r'^(\t*)([a-z_]+):\t'
    assert _layout(ours, pattern) == _layout(real, pattern)
    real_tabs = [re.sub(r'[^\t]+$', '', line) for line in real.splitlines() if line]
    our_tabs = [re.sub(r'[^\t]+$', '', line) for line in ours.splitlines() if line]
    assert our_tabs == real_tabs
    for line in ('\tfw_ver:\t\t\t\t20.35.1012', '\tvendor_part_id:\t\t\t4123', '\t\t\tstate:\t\t\tPORT_ACTIVE (4)',
                 '\t\t\tmax_mtu:\t\t4096 (5)', '\t\t\tlink_layer:\t\tInfiniBand', '\tnode_guid:\t\t\t946d:ae03:0000:0100'):
        assert line in ours.splitlines()
    assert lab.ok('gpu01', ['ibv_devinfo', '-l']).startswith('8 HCAs found:\n\tmlx5_0\n')
    assert lab.ok('gpu01', ['ibv_devinfo']).count('hca_id:') == 8


def test_a_renumbered_lab_shows_its_own_rail_addresses_in_the_roce_gids(tmp_path):
    """A lab beside another (lab.py lab_renumbering): the fabric's ipv4_networks moves the profile's subnets, and
    show_gids' IPv4-mapped GIDs follow, as they follow the interface address on a real node."""
    renumber = {'10.100.0.0/24': '10.102.0.0/24'}
    lab = make_lab(tmp_path, 'hgx-h100-roce', compute=2, ipv4_networks=renumber)
    rows = [row for row in parse_show_gids(lab.ok('gpu02', ['show_gids'])) if row['ipv4'] and row['version'] == 'v2']
    assert ('mlx5_0', '10.102.0.2') in [(row['dev'], row['ipv4']) for row in rows]
    assert not any(row['ipv4'].startswith('10.100.0.') for row in rows)
    assert any(row['ipv4'] == '10.100.1.2' for row in rows)  # rails not in the map keep the profile's subnet


def test_build_fabric_takes_ipv4_network_pairs(tmp_path):
    from hwsim import cli, fabric as fabrics  # pylint: disable=import-outside-toplevel

    class Ctx(object):
        profile_dir = None
        said = ''

        def error(self, text):
            self.said += text
    out = str(tmp_path / 'fabric.yml')
    assert cli.cmd_build_fabric(Ctx(), ['--ipv4-network=10.100.0.0/24=10.102.0.0/24', '--ipv4-network', '10.100.1.0/24=10.102.1.0/24',
                                        out, 'gpu01=hgx-h100-roce']) == 0
    assert fabrics.load_fabric(out)['ipv4_networks'] == {'10.100.0.0/24': '10.102.0.0/24', '10.100.1.0/24': '10.102.1.0/24'}
    ctx = Ctx()
    assert cli.cmd_build_fabric(ctx, ['--ipv4-network', '10.100.0.0/24', out, 'gpu01=hgx-h100-roce']) == 2
    assert 'usage' in ctx.said
