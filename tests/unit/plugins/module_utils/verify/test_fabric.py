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
    assert set(out) == {'fleet', 'summary'}
    assert not _failed(out['fleet']['a'])
    assert [r['check'] for r in _failed(out['fleet']['b'])] == ['fabric.link_width']
    assert out['summary']['links'] == links and len(out['summary']['degraded']) == 1
    assert out['summary']['unmapped'] == [] and out['summary']['errors'] == ['ibwarn: something']
    # fabric_info failed, skipped or not run: no fabric results at all
    for info in (None, {}, {'failed': True, 'msg': 'iblinkinfo: not found'}, {'skipped': True}):
        assert fabric.decide_fabric(info, {'a': ['mlx5_0']}, {}) is None
