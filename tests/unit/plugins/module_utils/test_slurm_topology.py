# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""slurm_topology.py: topology.conf from the fabric (topology/tree) and from NVLink domains (topology/block), on
handmade links, our iblinkinfo fixtures, real captures when present, and the lab's stand-ins (lab/hwsim)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import sys

import pytest

from _paths import REPO, fixture_files, read_fixture

from ansible.errors import AnsibleFilterError

from ansible_collections.aicluster.infra.plugins.filter.slurm_conf import FilterModule
from ansible_collections.aicluster.infra.plugins.module_utils.iblinkinfo import parse_iblinkinfo
from ansible_collections.aicluster.infra.plugins.module_utils.slurm import hostlist_expand
from ansible_collections.aicluster.infra.plugins.module_utils import slurm_topology as topo

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))
try:
    from hwsim.testing import make_lab  # pylint: disable=wrong-import-position
except ImportError:  # pragma: no cover
    make_lab = None

UNMANAGED = 'Quantum2 Mellanox Technologies'
RAILS = 8


# ---- helpers: iblinkinfo-shaped links (fabric_info's `links`) and a reading of the rendered lines

def _guid(index, rail):
    return '0x946dae0300%04x%02x' % (index, rail)


def _sw_guid(leaf):
    return '0xfc6a1c030001%04x' % leaf


def _cable(index, description, rail, leaf, leaf_port, source=None, width='4X', state='Active'):
    """Both printed lines of one CA<->leaf cable (default layout): the switch's port line and the CA's."""
    ca_lid = 1000 + 16 * index + rail
    link = {'width': width if state != 'Down' else None, 'lane_speed_gbps': 106.25, 'state': state,
            'physical_state': 'LinkUp', 'could_be': None, 'source': source}
    switch_line = dict(link, node_type='Switch', node_guid=_sw_guid(leaf), node_name=UNMANAGED, node_lid=leaf,
                       port=leaf_port, port_guid=None, peer_lid=ca_lid, peer_port=1, peer_name=description)
    ca_line = dict(link, node_type='CA', node_guid=None, node_name=description, node_lid=ca_lid, port=1,
                   port_guid=_guid(index, rail), peer_lid=leaf, peer_port=leaf_port, peer_name=UNMANAGED)
    return [switch_line, ca_line]


def _rail_optimized(units, description='{node} HCA-{n}', cross=None, start=0):
    """``units``: node names per scalable unit; each node's HCA k on leaf k of its SU (8 leaves per SU, every node
    on all 8), the leaves named alike. Returns (links, identity). ``cross``: (node, rail, unit) recables one HCA to
    that rail's leaf of another unit."""
    links, identity, index = [], {}, start
    for unit, members in enumerate(units):
        for position, node in enumerate(members):
            index += 1
            identity[node] = {}
            for rail in range(RAILS):
                leaf_unit = cross[2] if cross and (node, rail) == cross[:2] else unit
                links.extend(_cable(index, description.format(node=node, n=rail + 1), rail,
                                    100 + RAILS * leaf_unit + rail, position + 1))
                identity[node]['mlx5_%d' % rail] = [_guid(index, rail)]
    # the spine tier: every leaf to a spine (switch<->switch lines carry no node)
    for leaf in range(100, 100 + RAILS * len(units)):
        links.append({'node_type': 'Switch', 'node_guid': _sw_guid(leaf), 'node_name': UNMANAGED, 'node_lid': leaf,
                      'port': 64, 'width': '4X', 'state': 'Active', 'peer_lid': 1, 'peer_port': leaf, 'peer_name': UNMANAGED})
    return links, identity


def _switches(lines):
    """SwitchName -> {'nodes': [...], 'switches': [...]} of the rendered lines (comments skipped)."""
    out = {}
    for line in lines:
        if line.startswith('#'):
            continue
        fields = dict(field.split('=', 1) for field in line.split())
        out[fields['SwitchName']] = {'nodes': hostlist_expand(fields['Nodes']) if 'Nodes' in fields else [],
                                     'switches': hostlist_expand(fields['Switches']) if 'Switches' in fields else []}
    return out


def _assert_one_tree(lines, nodes):
    """Every node under exactly one switch, and every switch reachable from one top switch."""
    switches = _switches(lines)
    placed = [node for entry in switches.values() for node in entry['nodes']]
    assert sorted(placed) == sorted(nodes)
    children = set(child for entry in switches.values() for child in entry['switches'])
    assert children <= set(switches)
    assert len(set(switches) - children) == 1
    return switches


SU1 = ['gpu%02d' % n for n in range(1, 5)]
SU2 = ['gpu%02d' % n for n in range(5, 9)]


# ---- topology/tree on handmade links

def test_two_rail_optimized_units_identical_switch_names_by_guid():
    links, identity = _rail_optimized([SU1, SU2])
    out = topo.decide_topology(SU1 + SU2, 'topology/tree', fabric={'links': links}, identity=identity)
    assert out['problems'] == [] and out['plugin'] == 'topology/tree'
    assert [line for line in out['lines'] if not line.startswith('#')] == [
        'SwitchName=su1 Nodes=gpu[01-04]', 'SwitchName=su2 Nodes=gpu[05-08]', 'SwitchName=su-spine Switches=su[1-2]']
    assert [(group['name'], group['count'], len(group['leaves'])) for group in out['groups']] == [('su1', 4, 8), ('su2', 4, 8)]
    assert out['unplaced'] == []
    assert out['notes'] == ['2 scalable unit(s): su1 gpu[01-04] (4 nodes, 8 leaves), su2 gpu[05-08] (4 nodes, 8 leaves)']
    _assert_one_tree(out['lines'], SU1 + SU2)


def test_host_hca_n_descriptions_without_guids_are_the_fallback():
    links, dummy = _rail_optimized([SU1, SU2])
    out = topo.decide_topology(SU1 + SU2, 'topology/tree', fabric={'links': links})
    assert _switches(out['lines'])['su2']['nodes'] == SU2
    assert out['notes'][-1] == '8 node(s) found by their CA node description, no port GUID of theirs being known: gpu[01-08]'


def test_guids_win_over_descriptions():
    # every description names gpu01, but the GUIDs are known: the nodes are still told apart
    links, identity = _rail_optimized([SU1, SU2], description='gpu01 HCA-{n}')
    out = topo.decide_topology(SU1 + SU2, 'topology/tree', fabric={'links': links}, identity=identity)
    assert [group['nodes'] for group in out['groups']] == ['gpu[01-04]', 'gpu[05-08]']
    # and a node whose GUIDs are known is not found by a description that names it
    partial = dict((node, identity[node]) for node in SU1 + ['gpu05'])
    partial['gpu05'] = {'mlx5_0': ['0x1']}
    out = topo.decide_topology(SU1 + ['gpu05'], 'topology/tree', fabric={'links': links}, identity=partial)
    assert out['unplaced'] == ['gpu05']


def _ib_info(hcas):
    """An ib_info result with these HCAs' port GUIDs (``identity`` of one node)."""
    return {'changed': False, 'hcas': [{'name': hca, 'node_guid': None, 'ports': [{'port_guid': guid} for guid in guids]}
                                       for hca, guids in sorted(hcas.items())]}


def test_nodes_outside_a_limited_run_are_found_by_the_ports_they_recorded():
    # "localhost HCA-N" descriptions name no node: only GUIDs tell them apart. A run limited to gpu08 (the node being
    # added) reads ib_info there only; the others come from the fact they recorded in earlier runs (fact cache).
    links, identity = _rail_optimized([SU1, SU2], description='localhost HCA-{n}')
    hostvars = dict((node, {'slurm_topology_ib': _ib_info(identity[node])}) for node in SU1 + SU2[:-1])
    ib_infos = {'gpu08': _ib_info(identity['gpu08'])}
    out = topo.decide_topology(SU1 + SU2, 'topology/tree', fabric={'links': links}, ib_infos=ib_infos, hostvars=hostvars)
    assert [group['nodes'] for group in out['groups']] == ['gpu[01-04]', 'gpu[05-08]'] and out['unplaced'] == []
    # without the recorded ports they would all fall out of their scalable units
    out = topo.decide_topology(SU1 + SU2, 'topology/tree', fabric={'links': links}, ib_infos=ib_infos, hostvars={})
    assert out['unplaced'] == SU1 + SU2[:-1]
    # a record of a read that failed is not used
    hostvars['gpu01'] = {'slurm_topology_ib': {'failed': True, 'msg': 'ibstat'}}
    out = topo.decide_topology(SU1 + SU2, 'topology/tree', fabric={'links': links}, ib_infos=ib_infos, hostvars=hostvars)
    assert out['unplaced'] == ['gpu01']


def test_a_node_missing_from_the_fabric_goes_under_its_own_switch_below_the_spine():
    links, identity = _rail_optimized([SU1])
    nodes = SU1 + ['gpu09']
    out = topo.decide_topology(nodes, 'topology/tree', fabric={'links': links, 'reads': [
        {'ca': 'mlx5_0', 'port': 1, 'status': 'read'}]}, identity=identity)
    assert out['problems'] == [] and out['unplaced'] == ['gpu09']
    switches = _assert_one_tree(out['lines'], nodes)
    assert switches['su-unplaced']['nodes'] == ['gpu09']
    assert sorted(switches['su-spine']['switches']) == ['su-unplaced', 'su1']
    assert any(note.startswith('1 node(s) not seen in the fabric read through mlx5_0:1 are under su-unplaced') for note in out['notes'])


def test_a_single_unit_has_no_spine_line():
    links, identity = _rail_optimized([SU1 + SU2])
    out = topo.decide_topology(SU1 + SU2, 'topology/tree', fabric={'links': links}, identity=identity)
    assert [line for line in out['lines'] if not line.startswith('#')] == ['SwitchName=su1 Nodes=gpu[01-08]']
    assert out['lines'][0] == '# su1: 8 node(s) sharing 8 leaf switch(es)'


def test_down_ports_and_unknown_cas_place_nobody():
    links, identity = _rail_optimized([SU1])
    stray = _cable(99, 'storage01 mlx5_0', 0, 100, 40) + _cable(98, 'gpu09 HCA-1', 0, 100, 41, state='Down')
    out = topo.decide_topology(SU1 + ['gpu09'], 'topology/tree', fabric={'links': links + stray},
                               identity=dict(identity, gpu09={}))
    assert out['unplaced'] == ['gpu09'] and out['groups'][0]['count'] == 4


def test_a_cable_into_another_unit_joins_them_and_is_noted():
    units = [SU1, SU2, ['gpu%02d' % n for n in range(9, 13)]]
    links, identity = _rail_optimized(units, cross=('gpu02', 7, 1))
    out = topo.decide_topology(sum(units, []), 'topology/tree', fabric={'links': links}, identity=identity)
    assert [group['nodes'] for group in out['groups']] == ['gpu[01-08]', 'gpu[09-12]']
    assert [note for note in out['notes'] if 'joins them' in note] == [
        'su1 (gpu[01-08]) spans 16 leaf switches where most units span 8: a cable from one scalable unit to a leaf '
        'of another joins them into one; the verify stage (fabric.rail) names the HCA']


def test_hcas_leave_out_a_storage_fabric_that_would_join_everything():
    links, identity = _rail_optimized([SU1, SU2])
    for index, node in enumerate(SU1 + SU2, 1):
        links.extend(_cable(index, '%s mlx5_10' % node, 10, 900, index))   # one storage switch for all
        identity[node]['mlx5_10'] = [_guid(index, 10)]
    joined = topo.decide_topology(SU1 + SU2, 'topology/tree', fabric={'links': links}, identity=identity)
    assert [group['nodes'] for group in joined['groups']] == ['gpu[01-08]']
    out = topo.decide_topology(SU1 + SU2, 'topology/tree', fabric={'links': links}, identity=identity,
                               hcas=['mlx5_%d' % rail for rail in range(RAILS)])
    assert [group['nodes'] for group in out['groups']] == ['gpu[01-04]', 'gpu[05-08]']


def test_several_reads_keep_lids_apart():
    # two subnets print the same LIDs for different switches: each read's LIDs are its own
    first, identity = _rail_optimized([SU1])
    second, other = _rail_optimized([SU2], start=len(SU1))
    for link in first:
        link['source'] = 'mlx5_0:1'
    for link in second:
        link['source'] = 'mlx5_3:1'
        if link['node_type'] == 'Switch':
            link['node_guid'] = '0xaa' + link['node_guid'][4:]
    identity.update(other)
    out = topo.decide_topology(SU1 + SU2, 'topology/tree', fabric={'links': first + second}, identity=identity)
    assert [group['nodes'] for group in out['groups']] == ['gpu[01-04]', 'gpu[05-08]']


def test_no_node_found_is_a_problem_not_an_empty_file():
    links, dummy = _rail_optimized([SU1], description='MT4129 ConnectX7 Mellanox Technologies')
    out = topo.decide_topology(SU1, 'topology/tree', fabric={'links': links})
    assert out['lines'] == [] and len(out['problems']) == 1 and 'none of the 4 nodes' in out['problems'][0]
    assert topo.decide_topology([], 'topology/tree', fabric={'links': links})['problems'][0].startswith('there is no')


def test_prefix_and_large_scale():
    units = [['n%04d' % (unit * 32 + position) for position in range(32)] for unit in range(64)]
    links, identity = _rail_optimized(units)
    nodes = sum(units, [])
    out = topo.decide_topology(nodes, 'topology/tree', fabric={'links': links}, identity=identity, switch_prefix='ib-su')
    assert out['problems'] == [] and len(out['groups']) == 64
    switches = _assert_one_tree(out['lines'], nodes)
    assert switches['ib-su64']['nodes'][0] == 'n2016'
    assert out['lines'][-1] == 'SwitchName=ib-su-spine Switches=ib-su[1-64]'


@pytest.mark.parametrize('kwargs, message', [
    ({'plugin': 'topology/3d_torus'}, 'slurm_topology_plugin'),
    ({'switch_prefix': 'su[1]'}, 'slurm_topology_switch_prefix'),
    ({'fabric': {'failed': True, 'msg': 'iblinkinfo: not found'}}, 'fabric_info failed: iblinkinfo: not found'),
])
def test_bad_input_raises_naming_it(kwargs, message):
    args = dict({'plugin': 'topology/tree', 'fabric': {'links': []}}, **kwargs)
    with pytest.raises(ValueError, match=message.replace('[', r'\[').replace(']', r'\]')):
        topo.decide_topology(SU1, args.pop('plugin'), **args)


def test_a_skipped_fabric_read_places_nobody():
    out = topo.decide_topology(SU1, 'topology/tree', fabric={'skipped': True})
    assert out['lines'] == [] and out['problems']


# ---- our iblinkinfo fixtures, and real captures when present

def test_handmade_hdr_switch_hca_1_descriptions_one_unit():
    parsed = parse_iblinkinfo(read_fixture('own', 'iblinkinfo/iblinkinfo-2.x-hdr-spine-ca-blocks-down-handmade.txt'))
    out = topo.decide_topology(['hpc-a01', 'hpc-a02', 'hpc-a03'], 'topology/tree', fabric=parsed)
    assert [line for line in out['lines'] if not line.startswith('#')] == ['SwitchName=su1 Nodes=hpc-a[01-03]']
    assert out['groups'][0]['leaves'] == ['Quantum Mellanox Technologies (0xb8cef60300a1c200)']


def _iblinkinfo_fixtures():
    return [(kind, path) for kind, path in fixture_files('iblinkinfo') if path.endswith('.txt')]


HCA_DESCRIPTION = re.compile(r'^(?P<host>\S+) (?:mlx\d+_\d+|HCA-\d+)$')


def _described_hosts(parsed):
    """The hosts that CA node descriptions name (``gpu01 mlx5_0``, ``hpc-a01 HCA-1``), on either end of a line."""
    names = [link.get(key) or '' for link in parsed['links'] for key in ('node_name', 'peer_name')]
    return sorted(set(match.group('host') for match in map(HCA_DESCRIPTION.match, names) if match))


@pytest.mark.parametrize('kind, relpath', _iblinkinfo_fixtures(), ids=[path for dummy, path in _iblinkinfo_fixtures()])
def test_every_iblinkinfo_fixture_places_each_named_host_once(kind, relpath):
    parsed = parse_iblinkinfo(read_fixture(kind, relpath))
    hosts = _described_hosts(parsed)
    if not hosts:
        pytest.skip('%s names no host in its CA descriptions' % relpath)
    out = topo.decide_topology(hosts, 'topology/tree', fabric=parsed)
    assert out['problems'] == [] and out['groups']
    _assert_one_tree(out['lines'], hosts)


def test_handmade_ndr_leaf_switch_lines_only_one_unit_per_leaf():
    # switch port lines only (CAs named by their peers); two reads of one leaf each, as two files
    first = parse_iblinkinfo(read_fixture('own', 'iblinkinfo/iblinkinfo-2.x-ndr-leaf-1x-could-be-handmade.txt'))['links']
    second = parse_iblinkinfo(read_fixture('own', 'iblinkinfo/iblinkinfo-2.x-ndr-leaf-ibwarn-discover-failed-handmade.txt'))
    links = first + second['links']
    hosts = _described_hosts({'links': links})
    out = topo.decide_topology(hosts, 'topology/tree', fabric={'links': links})
    assert [(group['name'], group['leaves']) for group in out['groups']] == [
        ('su1', ['lab-leaf-01 (0xfc6a1c0300e0a100)']), ('su2', ['lab-leaf-02 (0xfc6a1c0300e0a200)'])]
    assert out['lines'][-1] == 'SwitchName=su-spine Switches=su[1-2]'


# ---- the lab's stand-ins: iblinkinfo and ibstat of lab/hwsim, read through fabric_info's module code

def _lab_ib_infos(lab, hosts):
    from ansible_collections.aicluster.infra.plugins.module_utils.ibstat import parse_ibstat
    from ansible_collections.aicluster.infra.plugins.module_utils.rdma_tools import parse_show_gids
    from ansible_collections.aicluster.infra.plugins.modules.ib_info import merge_ports
    infos = {}
    for host in hosts:
        cas = parse_ibstat(lab.ok(host, ['ibstat']))['cas']
        infos[host] = {'changed': False, 'hcas': merge_ports(cas, [], parse_show_gids(lab.ok(host, ['show_gids'])))}
    return infos


def _lab_fabric(lab, infos):
    """The role's path: plan the reads (slurm_topology_reads), then fabric_info over the stand-in."""
    from _module_runner import run_main
    from ansible_collections.aicluster.infra.plugins.modules import fabric_info
    plan = topo.topology_reads(infos)

    def iblinkinfo(argv):
        return lab.run(plan['host'], ['iblinkinfo'] + argv[1:])
    result = run_main(fabric_info, {'reads': plan['reads']} if plan['reads'] else {}, {'iblinkinfo': iblinkinfo})[0]
    assert not result.get('failed'), result
    return plan, result


@pytest.mark.skipif(make_lab is None, reason='lab/hwsim not importable')
@pytest.mark.parametrize('with_guids', [True, False], ids=['guids', 'descriptions'])
def test_stand_in_two_units_unmanaged_switches_ofed_descriptions(tmp_path, with_guids):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=6, scalable_units=2, descriptions='ofed', switch_names='identical')
    hosts = ['gpu%02d' % n for n in range(1, 7)]
    infos = _lab_ib_infos(lab, hosts)
    plan, result = _lab_fabric(lab, infos)
    assert 'gpu01 HCA-1' in [link['node_name'] for link in result['links']]
    out = topo.decide_topology(hosts + ['gpu07'], 'topology/tree', fabric=result, ib_infos=infos if with_guids else None)
    assert out['problems'] == []
    switches = _assert_one_tree(out['lines'], hosts + ['gpu07'])
    assert switches['su1']['nodes'] == ['gpu01', 'gpu02', 'gpu03'] and switches['su2']['nodes'] == ['gpu04', 'gpu05', 'gpu06']
    assert switches['su-unplaced']['nodes'] == ['gpu07']
    assert [len(group['leaves']) for group in out['groups']] == [8, 8, 0]
    assert any('found by their CA node description' in note for note in out['notes']) is not with_guids


@pytest.mark.skipif(make_lab is None, reason='lab/hwsim not importable')
def test_stand_in_one_subnet_per_rail_one_unit(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=3, subnet_per_rail=True)
    hosts = ['gpu01', 'gpu02', 'gpu03']
    infos = _lab_ib_infos(lab, hosts)
    plan, result = _lab_fabric(lab, infos)
    assert len(plan['reads']) == 8 and len(set(read['subnet'] for read in plan['reads'])) == 8
    assert [read['status'] for read in result['reads']] == ['read'] * 8
    out = topo.decide_topology(hosts, 'topology/tree', fabric=result, ib_infos=infos)
    assert [line for line in out['lines'] if not line.startswith('#')] == ['SwitchName=su1 Nodes=gpu[01-03]']
    assert out['groups'][0]['count'] == 3 and len(out['groups'][0]['leaves']) == 8


@pytest.mark.skipif(make_lab is None, reason='lab/hwsim not importable')
def test_stand_in_a_node_with_every_port_down_is_unplaced(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=3)
    for hca in ('mlx5_0', 'mlx5_3', 'mlx5_4', 'mlx5_5', 'mlx5_6', 'mlx5_7', 'mlx5_8', 'mlx5_9'):
        assert lab.run('gpu03', ['hwsim', 'fault', 'port-down', hca])[0] == 0
    infos = _lab_ib_infos(lab, ['gpu01', 'gpu02'])
    dummy, result = _lab_fabric(lab, infos)
    out = topo.decide_topology(['gpu01', 'gpu02', 'gpu03'], 'topology/tree', fabric=result, ib_infos=infos)
    assert out['unplaced'] == ['gpu03']
    assert out['lines'][-1] == 'SwitchName=su-spine Switches=su1,su-unplaced'


# ---- topology/block

def _domains(sizes, prefix='rack'):
    blocks, nodes, number = {}, [], 0
    for domain, size in enumerate(sizes, 1):
        for dummy in range(size):
            number += 1
            nodes.append('gb%03d' % number)
            blocks[nodes[-1]] = '%s%02d' % (prefix, domain)
    return nodes, blocks


def test_block_one_block_per_nvlink_domain():
    nodes, blocks = _domains([18, 18, 18, 18])
    out = topo.decide_topology(nodes, 'topology/block', blocks=blocks)
    assert out['problems'] == [] and out['plugin'] == 'topology/block'
    assert out['lines'] == [
        '# block1: NVLink domain rack01, 18 node(s)', 'BlockName=block1 Nodes=gb[001-018]',
        '# block2: NVLink domain rack02, 18 node(s)', 'BlockName=block2 Nodes=gb[019-036]',
        '# block3: NVLink domain rack03, 18 node(s)', 'BlockName=block3 Nodes=gb[037-054]',
        '# block4: NVLink domain rack04, 18 node(s)', 'BlockName=block4 Nodes=gb[055-072]',
        'BlockSizes=18,36,72']
    assert out['notes'] == ['4 block(s) of 18 nodes, BlockSizes=18,36,72']


def test_block_a_short_domain_sets_the_base_size_and_ids_sort_naturally():
    nodes, blocks = _domains([18, 17, 18])
    blocks = dict((node, block.replace('rack0', 'nvl')) for node, block in blocks.items())
    blocks['gb040'] = 'nvl10'    # a tenth domain sorts after nvl3, not after nvl1
    out = topo.decide_topology(nodes, 'topology/block', blocks=blocks, block_prefix='nvl')
    assert [group['block'] for group in out['groups']] == ['nvl1', 'nvl2', 'nvl3', 'nvl10']
    assert out['lines'][-1] == 'BlockSizes=1,2,4'
    assert out['notes'][1] == ('NVLink domains differ in size: nvl2 17, nvl3 17, nvl4 1 with fewer nodes than the largest '
                               '(18); BlockSizes starts at 1')


def test_block_single_domain_and_sizes_from_the_inventory():
    nodes, blocks = _domains([8])
    assert topo.decide_topology(nodes, 'topology/block', blocks=blocks)['lines'][-1] == 'BlockSizes=8'
    nodes, blocks = _domains([16, 16, 16, 16])
    out = topo.decide_topology(nodes, 'topology/block', blocks=blocks, block_sizes=[8, 32, 64])
    assert out['problems'] == [] and out['lines'][-1] == 'BlockSizes=8,32,64'
    assert topo.decide_topology(nodes, 'topology/block', blocks=blocks, block_sizes='16,32')['lines'][-1] == 'BlockSizes=16,32'


@pytest.mark.parametrize('sizes, problem', [
    ([32], 'block(s) block1, block2, block3, block4 have fewer nodes'),
    ([16, 48], '48 is not 16 times a power of two'),
    ([16, 16], '16 is not 16 times a power of two'),
])
def test_block_sizes_slurmctld_would_refuse(sizes, problem):
    nodes, blocks = _domains([16, 16, 16, 16])
    out = topo.decide_topology(nodes, 'topology/block', blocks=blocks, block_sizes=sizes)
    assert any(problem in text for text in out['problems']), out['problems']


def test_block_a_node_without_a_domain_is_a_problem():
    nodes, blocks = _domains([4, 4])
    del blocks['gb003']
    out = topo.decide_topology(nodes + ['gb099'], 'topology/block', blocks=blocks)
    assert out['problems'] == ['slurm_topology_block is not set for 2 node(s): gb[003,099]; every node needs its NVLink '
                               'domain (a node in no block gets no job under topology/block)']
    assert out['unplaced'] == ['gb003', 'gb099']


def test_block_ids_from_hostvars_and_comment_safe():
    hostvars = {'gb001': {'slurm_topology_block': 'clique #1 \\'}, 'gb002': {'slurm_topology_block': 'clique #1 \\'},
                'gb003': {'slurm_topology_block': 7}}
    out = topo.decide_topology(['gb001', 'gb002', 'gb003'], 'topology/block', hostvars=hostvars)
    assert out['lines'][0] == '# block1: NVLink domain 7, 1 node(s)'
    assert out['lines'][2] == '# block2: NVLink domain clique 1, 2 node(s)'
    assert out['lines'][-1] == 'BlockSizes=1,2'


# ---- the filters

def test_filters_wrap_the_module_utils_and_turn_errors_into_filter_errors():
    filters = FilterModule().filters()
    links, identity = _rail_optimized([SU1])
    out = filters['slurm_topology'](SU1, 'topology/tree', fabric={'links': links}, identity=identity)
    assert out['lines'][-1] == 'SwitchName=su1 Nodes=gpu[01-04]'
    with pytest.raises(AnsibleFilterError, match='slurm_topology: slurm_topology_plugin'):
        filters['slurm_topology'](SU1, 'topology/flat')
    assert filters['slurm_topology_reads']({'gpu01': {'failed': True}}) == {'host': None, 'reads': []}
    assert filters['slurm_topology_reads']({}, host='gpu09') == {'host': 'gpu09', 'reads': []}


def test_topology_reads_never_go_through_an_nvswitch_bridge():
    """On an HGX B200 the bridge functions sort first (DGX B200: mlx5_0..mlx5_3); iblinkinfo through one reads the
    NVLink side's subnet (NVLSM's), not the compute fabric."""
    def info(node):
        hcas = [{'name': 'mlx5_%d' % n, 'nvswitch_bridge': n < 4,
                 'ports': [{'port': 1, 'state': 'Active', 'link_layer': 'InfiniBand',
                            'port_guid': '0x%016x' % ((node << 8) | n)}]} for n in range(6)]
        return {'hcas': hcas}
    plan = topo.topology_reads({'gpu01': info(1), 'gpu02': info(2)})
    assert plan['reads'] and all(read['ca'] in ('mlx5_4', 'mlx5_5') for read in plan['reads'])
