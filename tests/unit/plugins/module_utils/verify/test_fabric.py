# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""verify/fabric.py: degraded links and rail wiring on our fixtures and on the lab's stand-ins (lab/hwsim)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys

import pytest

from _paths import REPO, own_fixture

from ansible_collections.aicluster.infra.plugins.module_utils.iblinkinfo import parse_iblinkinfo
from ansible_collections.aicluster.infra.plugins.module_utils.verify import fabric

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))
try:
    from hwsim.testing import make_lab  # pylint: disable=wrong-import-position
except ImportError:  # pragma: no cover
    make_lab = None

NDR_HCAS = ['mlx5_0', 'mlx5_3', 'mlx5_4', 'mlx5_5', 'mlx5_6', 'mlx5_7', 'mlx5_8', 'mlx5_9']


def _failed(results):
    return [r for r in results if not r['passed']]


def _by_check(results, check):
    return [r for r in results if r['check'] == check]


def _ca(node, hca, switch):
    return {'node_type': 'CA', 'node_name': '%s %s' % (node, hca), 'port': 1, 'width': '4X', 'lane_speed_gbps': 106.25,
            'state': 'Active', 'peer_name': 'MF0;%s:MQM9790/U1' % switch, 'peer_port': 1, 'could_be': None}


@pytest.mark.parametrize('description, label', [('MF0;leaf-rail3:MQM9790/U1', 'leaf-rail3'), ('spine01', 'spine01'),
                                                (None, '')])
def test_switch_label(description, label):
    assert fabric.switch_label(description) == label


def test_ca_owner_matches_short_and_long_names():
    assert fabric.ca_owner('gpu02 mlx5_3', ['gpu01', 'gpu02']) == ('gpu02', 'mlx5_3')
    assert fabric.ca_owner('gpu02.example.org mlx5_3', ['gpu02']) == ('gpu02', 'mlx5_3')
    assert fabric.ca_owner('gpu02 mlx5_3', ['gpu02.example.org']) == ('gpu02.example.org', 'mlx5_3')
    assert fabric.ca_owner('', ['gpu02']) == (None, None)


def test_fabric_handmade_ndr_leaf_with_1x_and_slow_link():
    parsed = parse_iblinkinfo(own_fixture('iblinkinfo/iblinkinfo-2.x-ndr-leaf-1x-could-be-handmade.txt'))
    degraded = [link for link in parsed['links'] if link['degraded']]
    assert degraded
    owners = set()
    for link in degraded:
        name = link['peer_name'] if link['node_type'] == 'Switch' else link['node_name']
        owners.add((name or '').split()[0] if name else None)
    nodes = dict((owner, ['mlx5_0']) for owner in owners if owner)
    out = fabric.evaluate_fabric(parsed, nodes, {'rail_check': False})
    assert out['degraded']
    failing = [r for results in out['nodes'].values() for r in _failed(results)]
    assert failing
    for result in failing:
        assert result['check'] in ('fabric.link_width', 'fabric.link_speed')
        assert result['peer'] and 'port' in result['peer']


@pytest.mark.skipif(make_lab is None, reason='lab/hwsim not importable')
def test_fabric_from_the_stand_in_1x_link_names_both_ends(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=3)
    assert lab.run('gpu02', ['hwsim', 'fault', 'link-width', 'mlx5_3', '1X'])[0] == 0
    assert lab.run('gpu03', ['hwsim', 'fault', 'link-speed', 'mlx5_5', '53.125'])[0] == 0
    parsed = parse_iblinkinfo(lab.ok('gpu01', ['iblinkinfo']))
    nodes = dict(('gpu%02d' % n, NDR_HCAS) for n in (1, 2, 3))
    out = fabric.evaluate_fabric(parsed, nodes, {'rail_check': True})
    assert not _failed(out['nodes']['gpu01'])
    width = _failed(out['nodes']['gpu02'])
    assert [(r['check'], r['subject'], r['measured']) for r in width] == [('fabric.link_width', 'mlx5_3:1', '1X')]
    assert 'leaf-rail1' in width[0]['peer']
    speed = _failed(out['nodes']['gpu03'])
    assert [(r['check'], r['subject']) for r in speed] == [('fabric.link_speed', 'mlx5_5:1')]
    assert 'Could be' in speed[0]['message']
    rails = _by_check(out['nodes']['gpu01'], 'fabric.rail')
    assert len(rails) == 8 and all(r['passed'] for r in rails)


def test_rail_check_finds_a_crossed_cable():
    links = [_ca('a', 'mlx5_0', 'leaf0'), _ca('a', 'mlx5_1', 'leaf1'), _ca('b', 'mlx5_0', 'leaf0'), _ca('b', 'mlx5_1', 'leaf1'),
             _ca('c', 'mlx5_0', 'leaf1'), _ca('c', 'mlx5_1', 'leaf0')]
    nodes = dict((n, ['mlx5_0', 'mlx5_1']) for n in 'abc')
    out = fabric.evaluate_fabric({'links': links}, nodes, {'rail_check': True})
    assert not _failed(out['nodes']['a'])
    crossed = _failed(out['nodes']['c'])
    assert sorted(r['rail'] for r in crossed) == [0, 1] and crossed[0]['check'] == 'fabric.rail'


def test_decide_fabric_reads_the_module_result_once():
    links = [_ca('a', 'mlx5_0', 'leaf0'), dict(_ca('b', 'mlx5_0', 'leaf0'), width='1X')]
    info = {'changed': False, 'links': links, 'errors': ['ibwarn: something']}
    out = fabric.decide_fabric(info, {'a': ['mlx5_0'], 'b': ['mlx5_0']}, {'width': '4X'})
    assert set(out) == {'fleet', 'cluster', 'summary', 'peers'}
    assert out['peers']['a']['mlx5_0']['switch_port'] is not None and out['peers']['a']['mlx5_0']['text'].startswith('leaf0')
    assert not _failed(out['fleet']['a'])
    assert [r['check'] for r in _failed(out['fleet']['b'])] == ['fabric.link_width']
    assert out['summary']['links'] == links and len(out['summary']['degraded']) == 1
    assert out['summary']['unmapped'] == [] and out['summary']['errors'] == ['ibwarn: something']
    # fabric_info failed, skipped or not run: no fabric results at all
    for info in (None, {}, {'failed': True, 'msg': 'iblinkinfo: not found'}, {'skipped': True}):
        assert fabric.decide_fabric(info, {'a': ['mlx5_0']}, {}) is None


# ---- identity by GUID, missing HCAs, rails per scalable unit, cluster-level links (issue 11)

def _guid(node, hca):
    return '0x946dae03%04x%02x%02x' % (ord(node[-1]), int(hca.rsplit('_', 1)[1]), 1)


def _sw_guid(leaf):
    return '0xfc6a1c030001%04x' % leaf


def _cable(node, hca, leaf, leaf_port, description=None, switch_name='Quantum2 Mellanox Technologies', width='4X',
           could_be=None, source=None):
    """Both printed lines of one CA<->leaf cable (iblinkinfo default layout): the switch line and the CA line."""
    ca_lid = 100 * (ord(node[-1]) - 96) + int(hca.rsplit('_', 1)[1]) + 1
    desc = description if description is not None else '%s %s' % (node, hca)
    link = {'width': width, 'lane_speed_gbps': 106.25, 'state': 'Active', 'could_be': could_be, 'source': source}
    switch_line = dict(link, node_type='Switch', node_guid=_sw_guid(leaf), node_name=switch_name, node_lid=leaf,
                       port=leaf_port, port_guid=None, peer_lid=ca_lid, peer_port=1, peer_name=desc)
    ca_line = dict(link, node_type='CA', node_guid=_guid(node, hca), node_name=desc, node_lid=ca_lid, port=1,
                   port_guid=_guid(node, hca), peer_lid=leaf, peer_port=leaf_port, peer_name=switch_name)
    return [switch_line, ca_line]


def _identity(nodes):
    return dict((node, dict((hca, [_guid(node, hca)]) for hca in hcas)) for node, hcas in nodes.items())


def _fleet(wiring, **kwargs):
    """wiring: node -> [leaf per rail]; returns (links, nodes)."""
    links, nodes = [], {}
    for position, (node, leaves) in enumerate(sorted(wiring.items())):
        nodes[node] = ['mlx5_%d' % rail for rail in range(len(leaves))]
        for rail, leaf in enumerate(leaves):
            links.extend(_cable(node, 'mlx5_%d' % rail, leaf, position + 1, **kwargs))
    return links, nodes


@pytest.mark.parametrize('mode', ['ofed', 'anonymous', 'fqdn'])
def test_identity_by_guid_whatever_the_description(mode):
    descriptions = {'ofed': lambda node, hca: '%s HCA-%d' % (node, int(hca[-1]) + 1),
                    'anonymous': lambda node, hca: 'MT4129 ConnectX7 Mellanox Technologies',
                    'fqdn': lambda node, hca: '%s.cluster.example.org %s' % (node, hca)}[mode]
    links, nodes = [], {'a': ['mlx5_0', 'mlx5_1'], 'b': ['mlx5_0', 'mlx5_1']}
    for position, node in enumerate(sorted(nodes)):
        for rail, hca in enumerate(nodes[node]):
            links.extend(_cable(node, hca, rail + 1, position + 1, description=descriptions(node, hca),
                                width='1X' if (node, hca) == ('b', 'mlx5_1') else '4X'))
    out = fabric.evaluate_fabric({'links': links}, nodes, {'rail_check': True, 'identity': _identity(nodes)})
    assert not _failed(out['nodes']['a'])
    bad = _failed(out['nodes']['b'])
    assert [(r['check'], r['subject'], r['identified_by']) for r in bad] == [('fabric.link_width', 'mlx5_1:1', 'guid')]
    assert _sw_guid(2) in bad[0]['peer']
    assert out['cluster'] == [] and out['unmapped'] == []


def test_description_is_a_fallback_for_a_node_without_guids_and_says_so():
    links = _cable('a', 'mlx5_0', 1, 1) + _cable('b', 'mlx5_0', 1, 2, width='1X')
    nodes = {'a': ['mlx5_0'], 'b': ['mlx5_0']}
    out = fabric.evaluate_fabric({'links': links}, nodes, {'identity': {'a': _identity(nodes)['a']}})
    bad = _failed(out['nodes']['b'])
    assert [(r['subject'], r['identified_by']) for r in bad] == [('mlx5_0:1', 'description')]
    assert 'node description' in bad[0]['message']


def test_a_guid_known_to_no_node_is_not_taken_from_its_description():
    # the description names node a, but a's GUIDs are known and this port is not one of them
    links = _cable('a', 'mlx5_0', 1, 1) + _cable('z', 'mlx5_0', 1, 9, description='a mlx5_0', width='1X')
    nodes = {'a': ['mlx5_0']}
    out = fabric.evaluate_fabric({'links': links}, nodes, {'identity': _identity(nodes)})
    assert not _failed(out['nodes']['a'])
    assert [(r['check'], r['subject']) for r in out['cluster']] == [('fabric.link_width', 'switch %s port 9' % _sw_guid(1))]


def test_unmanaged_switches_with_one_name_are_told_apart_by_guid():
    # a, b, c: rail 0 on leaf 1, rail 1 on leaf 2; d has the rail 1 cable on leaf 1 - every switch has the same name
    links, nodes = _fleet({'a': [1, 2], 'b': [1, 2], 'c': [1, 2], 'd': [1, 1]})
    out = fabric.evaluate_fabric({'links': links}, nodes, {'rail_check': True, 'identity': _identity(nodes)})
    assert [node for node in sorted(nodes) if _failed(out['nodes'][node])] == ['d']
    bad = _failed(out['nodes']['d'])
    assert [(r['check'], r['rail']) for r in bad] == [('fabric.rail', 1)]
    assert 'two rails on one leaf' in bad[0]['message']


def test_hcas_not_seen_in_the_fabric_read_fail():
    links = _cable('a', 'mlx5_0', 1, 1) + _cable('b', 'mlx5_0', 1, 2)
    nodes = {'a': ['mlx5_0', 'mlx5_3'], 'b': ['mlx5_0']}
    reads = [{'ca': 'mlx5_0', 'port': 1, 'subnet': 'fe80:0000:0000:0000 SM LID 1', 'status': 'read'}]
    out = fabric.evaluate_fabric({'links': links, 'reads': reads}, nodes, {'identity': _identity(nodes)})
    assert not _failed(out['nodes']['b'])
    bad = _failed(out['nodes']['a'])
    assert [(r['check'], r['subject'], r['measured']) for r in bad] == [('fabric.link_width', 'mlx5_3:1', 'not seen')]
    assert bad[0]['message'].startswith('mlx5_3 not seen in the fabric read of subnet fe80:0000:0000:0000 SM LID 1')
    assert 'port is down or on a subnet that was not read' in bad[0]['message']


def test_no_hca_seen_at_all_fails_every_node():
    nodes = {'a': ['mlx5_0'], 'b': ['mlx5_0']}
    out = fabric.evaluate_fabric({'links': []}, nodes, {'checks': ['fabric.link_speed']})
    assert all([r['check'] for r in _failed(out['nodes'][node])] == ['fabric.link_speed'] for node in nodes)


def _two_su(extra=None):
    # SU 1: a-d on leaves 1/2; SU 2: e-h on leaves 11/12
    wiring = dict((node, [1, 2]) for node in 'abcd')
    wiring.update((node, [11, 12]) for node in 'efgh')
    wiring.update(extra or {})
    return _fleet(wiring)


def test_two_scalable_units_fail_nobody():
    links, nodes = _two_su()
    out = fabric.evaluate_fabric({'links': links}, nodes, {'rail_check': True, 'identity': _identity(nodes)})
    assert not [node for node in nodes if _failed(out['nodes'][node])]
    assert out['cluster'] == []
    assert len(_by_check(out['nodes']['e'], 'fabric.rail')) == 2


def test_a_rail_against_its_scalable_unit_fails_that_node_only():
    links, nodes = _two_su({'h': [11, 2]})
    out = fabric.evaluate_fabric({'links': links}, nodes, {'rail_check': True, 'identity': _identity(nodes)})
    assert [node for node in sorted(nodes) if _failed(out['nodes'][node])] == ['h']
    assert [r['rail'] for r in _failed(out['nodes']['h'])] == [1]


def test_a_tie_inside_a_scalable_unit_is_a_cluster_result_that_drains_nobody():
    links, nodes = _fleet({'a': [1, 2], 'b': [1, 2], 'c': [1, 3], 'd': [1, 3]})
    out = fabric.evaluate_fabric({'links': links}, nodes, {'rail_check': True, 'identity': _identity(nodes)})
    assert not [node for node in nodes if _failed(out['nodes'][node])]
    assert [(r['check'], r['subject'], r['rail'], r['passed']) for r in out['cluster']] == [('fabric.rail', 'fabric', 1, False)]
    assert out['cluster'][0]['nodes'] == ['a', 'b', 'c', 'd']


def test_scalable_units_from_the_inventory():
    links, nodes = _fleet({'a': [1, 2], 'b': [1, 2], 'c': [3, 2], 'd': [1, 2]})
    units = {'a': 'su1', 'b': 'su1', 'c': 'su1', 'd': 'su1'}
    out = fabric.evaluate_fabric({'links': links}, nodes,
                                 {'rail_check': True, 'identity': _identity(nodes), 'scalable_units': units})
    assert [node for node in sorted(nodes) if _failed(out['nodes'][node])] == ['c']
    assert _failed(out['nodes']['c'])[0]['scalable_unit'] == 'SU su1'


def test_degraded_spine_link_is_a_cluster_result():
    links, nodes = _fleet({'a': [1], 'b': [1]})
    spine = {'width': '4X', 'lane_speed_gbps': 53.125, 'state': 'Active', 'could_be': 'Could be 106.25 Gbps',
             'node_type': 'Switch', 'node_guid': _sw_guid(1), 'node_name': 'Quantum2 Mellanox Technologies', 'node_lid': 1,
             'port': 63, 'peer_lid': 51, 'peer_port': 4, 'peer_name': 'Quantum2 Mellanox Technologies'}
    back = dict(spine, node_guid=_sw_guid(51), node_lid=51, port=4, peer_lid=1, peer_port=63)
    out = fabric.evaluate_fabric({'links': links + [spine, back]}, nodes, {'identity': _identity(nodes)})
    assert not [node for node in nodes if _failed(out['nodes'][node])]
    assert [(r['check'], r['subject']) for r in out['cluster']] == [('fabric.link_speed', 'switch %s port 63' % _sw_guid(1))]
    assert _sw_guid(51) in out['cluster'][0]['message']


def test_plan_reads_one_port_per_subnet():
    def info(prefixes):
        return {'hcas': [{'name': 'mlx5_%d' % n, 'ports': [{
            'port': 1, 'state': 'Active', 'link_layer': 'InfiniBand', 'sm_lid': 1, 'port_guid': '0x%x' % (n + 16),
            'gids': [{'index': 0, 'gid': '%s:0000:0000:0000:0000' % prefix}]}]} for n, prefix in enumerate(prefixes)]}
    per_rail = ['fec0:0000:0000:000%d' % n for n in range(4)]
    infos = {'a': info(per_rail[:3]), 'b': info(per_rail)}
    checked = dict((node, ['mlx5_%d' % n for n in range(len(infos[node]['hcas']))]) for node in infos)
    plan = fabric.plan_reads(infos, checked)
    assert plan['host'] == 'b' and [read['ca'] for read in plan['reads']] == ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3']
    assert plan['reads'][0] == {'ca': 'mlx5_0', 'port': 1, 'guid': '0x0000000000000010', 'subnet': 'fec0:0000:0000:0000 SM LID 1'}
    one = fabric.plan_reads({'a': info(['fe80:0000:0000:0000'] * 3)}, {'a': ['mlx5_0', 'mlx5_1', 'mlx5_2']}, host='a')
    assert one['host'] == 'a' and [read['ca'] for read in one['reads']] == ['mlx5_0', 'mlx5_1', 'mlx5_2']
    assert len(set(read['subnet'] for read in one['reads'])) == 1
    assert fabric.plan_reads(infos, checked, host='mgmt01') == {'host': 'mgmt01', 'reads': []}


# ---- the same on the lab's stand-ins: description modes, unmanaged switches, two SUs, a subnet per rail, 12 devices

def _lab_ib_infos(lab, hosts):
    """node -> ib_info-like facts (ibstat + show_gids through our parsers), as the verify_ib role gathers them."""
    from ansible_collections.aicluster.infra.plugins.module_utils.ibstat import parse_ibstat
    from ansible_collections.aicluster.infra.plugins.module_utils.rdma_tools import parse_show_gids
    from ansible_collections.aicluster.infra.plugins.modules.ib_info import merge_ports
    infos = {}
    for host in hosts:
        cas = parse_ibstat(lab.ok(host, ['ibstat']))['cas']
        infos[host] = {'hcas': merge_ports(cas, [], parse_show_gids(lab.ok(host, ['show_gids'])))}
    return infos


def _lab_decide(lab, hosts, rail_check=True, reads=None, **expected):
    """verify_ib then the fabric read (fabric_info's module code over the iblinkinfo stand-in) then the fabric decision."""
    from _module_runner import run_main
    from ansible_collections.aicluster.infra.plugins.module_utils.verify import ib
    from ansible_collections.aicluster.infra.plugins.modules import fabric_info
    infos = _lab_ib_infos(lab, hosts)
    outcome = ib.decide_ib(dict((host, {'ib_info': info}) for host, info in infos.items()),
                           {'link_layer': 'InfiniBand', 'port': 1})
    plan = outcome['fabric_reads']
    args = {'reads': plan['reads'] if reads is None else reads}

    def iblinkinfo(argv):
        return lab.run(plan['host'], ['iblinkinfo'] + argv[1:])
    result = run_main(fabric_info, args, {'iblinkinfo': iblinkinfo})[0]
    assert not result.get('failed'), result
    decided = fabric.decide_fabric(result, outcome['checked'], dict(
        expected, rail_check=rail_check, identity=outcome['identity'], port=1))
    return decided, outcome, result


LAB_HCAS_12 = ['mlx5_0', 'mlx5_3', 'mlx5_4', 'mlx5_5', 'mlx5_6', 'mlx5_9', 'mlx5_10', 'mlx5_11']


@pytest.mark.skipif(make_lab is None, reason='lab/hwsim not importable')
@pytest.mark.parametrize('descriptions, profile, bad_hca', [
    ('ofed', 'hgx-h100-ib', 'mlx5_3'), ('anonymous', 'hgx-h100-ib', 'mlx5_9'), ('fqdn', 'hgx-h100-ib-12dev', 'mlx5_10'),
    ('mlx5', 'hgx-h100-ib-12dev', 'mlx5_1X'.replace('X', '1'))])
def test_stand_in_identity_by_guid_with_unmanaged_switches(tmp_path, descriptions, profile, bad_hca):
    lab = make_lab(tmp_path, profile, compute=3, descriptions=descriptions, switch_names='identical')
    assert lab.run('gpu02', ['hwsim', 'fault', 'link-width', bad_hca, '1X'])[0] == 0
    text = lab.ok('gpu01', ['iblinkinfo'])
    assert 'MF0;' not in text and 'Quantum2 Mellanox Technologies' in text
    decided, outcome, dummy = _lab_decide(lab, ['gpu01', 'gpu02', 'gpu03'])
    if profile.endswith('12dev'):
        assert outcome['checked']['gpu01'] == LAB_HCAS_12
    assert [node for node in sorted(decided['fleet']) if _failed(decided['fleet'][node])] == ['gpu02']
    bad = _failed(decided['fleet']['gpu02'])
    assert [(r['check'], r['subject'], r['identified_by']) for r in bad] == [('fabric.link_width', '%s:1' % bad_hca, 'guid')]
    assert len(_by_check(decided['fleet']['gpu03'], 'fabric.rail')) == 8 and decided['cluster'] == []


@pytest.mark.skipif(make_lab is None, reason='lab/hwsim not importable')
def test_stand_in_two_scalable_units(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=4, scalable_units=2, descriptions='ofed')
    text = lab.ok('gpu01', ['iblinkinfo'])
    assert 'su1-leaf-rail0' in text and 'su2-leaf-rail7' in text
    hosts = ['gpu01', 'gpu02', 'gpu03', 'gpu04']
    decided, dummy, result = _lab_decide(lab, hosts)
    assert [read['status'] for read in result['reads']] == ['read'] + ['skipped'] * 7
    assert not [node for node in hosts if _failed(decided['fleet'][node])] and decided['cluster'] == []
    rails = _by_check(decided['fleet']['gpu04'], 'fabric.rail')
    assert len(rails) == 8 and rails[0]['measured'].startswith('su2-leaf-rail0')


@pytest.mark.skipif(make_lab is None, reason='lab/hwsim not importable')
def test_stand_in_one_subnet_per_rail_read_once_per_subnet(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=2, subnet_per_rail=True)
    one = parse_iblinkinfo(lab.ok('gpu01', ['iblinkinfo', '-C', 'mlx5_3', '-P', '1']))['links']
    assert set(link['node_name'] for link in one if link['node_type'] == 'CA') == {'gpu01 mlx5_3', 'gpu02 mlx5_3'}
    decided, dummy, result = _lab_decide(lab, ['gpu01', 'gpu02'])
    assert [read['status'] for read in result['reads']] == ['read'] * 8
    assert len(set(read['subnet'] for read in result['reads'])) == 8
    assert not _failed(decided['fleet']['gpu01']) and not _failed(decided['fleet']['gpu02'])
    # the first port's subnet only (what iblinkinfo without -C reads): 7 of 8 HCAs not seen, and said so
    decided, dummy, dummy = _lab_decide(lab, ['gpu01', 'gpu02'], reads=[{'ca': 'mlx5_0', 'port': 1}])
    bad = _failed(decided['fleet']['gpu02'])
    assert sorted(r['subject'] for r in bad) == sorted('%s:1' % hca for hca in NDR_HCAS[1:])
    assert all('not seen in the fabric read' in r['message'] for r in bad)


def test_a_node_whose_rail_0_is_down_keeps_its_other_rails_judged():
    links, nodes = _two_su({'h': [11, 12], 'g': [11, 2]})
    links = [link for link in links if _guid('h', 'mlx5_0') not in (link.get('port_guid'), link.get('node_guid'))
             and not (link['node_type'] == 'Switch' and link['node_lid'] == 11 and link['port'] == 8)]
    out = fabric.evaluate_fabric({'links': links}, nodes, {'rail_check': True, 'identity': _identity(nodes)})
    assert [(r['check'], r['subject']) for r in _failed(out['nodes']['h'])] == [('fabric.link_width', 'mlx5_0:1')]
    # h joins SU 2 through the leaf of its rail 1, where it is judged (and passes)
    rails = _by_check(out['nodes']['h'], 'fabric.rail')
    unit = 'the SU of leaf Quantum2 Mellanox Technologies (%s)' % _sw_guid(11)
    assert [(r['rail'], r['passed'], r['scalable_unit']) for r in rails] == [(1, True, unit)]
    assert [r['rail'] for r in _failed(out['nodes']['g'])] == [1]
