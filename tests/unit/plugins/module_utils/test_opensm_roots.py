# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""opensm_roots.py: OpenSM's root switches from iblinkinfo, on handmade fabrics (2- and 3-tier, leaves only, LID 0,
a leaf with no CA, the line layout), our iblinkinfo fixtures and the lab's stand-in (lab/hwsim). No real iblinkinfo
capture exists in ../shared/fixtures/real (none with switch-to-switch links either): the parser's own fixtures are
handmade too."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys

import pytest

from _paths import REPO, own_fixture

from ansible_collections.aicluster.infra.plugins.filter.opensm import FilterModule
from ansible_collections.aicluster.infra.plugins.module_utils.iblinkinfo import parse_iblinkinfo
from ansible_collections.aicluster.infra.plugins.module_utils import opensm_roots as roots
from ansible_collections.aicluster.infra.plugins.module_utils.opensm_plan import opensm_plan

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))
try:
    from hwsim.testing import make_lab  # pylint: disable=wrong-import-position
except ImportError:  # pragma: no cover
    make_lab = None

LINK = '( 4X        106.25 Gbps Active/  LinkUp)'
DOWN = '(                Down/ Polling)'


class Fabric(object):
    """A handmade fabric printed as iblinkinfo's default (or -l line) layout."""

    def __init__(self):
        self.switches = []          # [(name, guid, lid)]
        self.ports = {}             # (switch name, port) -> ('switch', name, port) | ('ca', host)
        self.cas = {}               # host -> (port guid, lid, switch name, switch port)
        self.lid = 0

    def switch(self, name):
        self.lid += 1
        self.switches.append((name, '0xfc6a1c03%08x' % len(self.switches), self.lid))
        return name

    def _by_name(self, name):
        return next(entry for entry in self.switches if entry[0] == name)

    def _free(self, name):
        return 1 + max([port for (switch, port) in self.ports if switch == name] or [0])

    def cable(self, first, second):
        one, two = self._free(first), self._free(second)
        self.ports[(first, one)] = ('switch', second, two)
        self.ports[(second, two)] = ('switch', first, one)

    def host(self, host, leaf):
        port = self._free(leaf)
        self.lid += 1
        self.cas[host] = ('0x946dae03%08x' % len(self.cas), self.lid, leaf, port)
        self.ports[(leaf, port)] = ('ca', host)

    def text(self, line=False, zero_lids=False):
        out = []
        lid = (lambda value: 0) if zero_lids else (lambda value: value)
        for name, guid, switch_lid in self.switches:
            desc = 'MF0;%s:MQM9790/U1' % name
            if not line:
                out.append('Switch: %s %s:' % (guid, desc))
            for port in range(1, self._free(name) + 1):
                peer = self.ports.get((name, port))
                start = '%s "%30s" ' % (guid, desc) if line else '      '
                if peer is None:
                    out.append('%s%6d %4d[  ] ==%s==>             [  ] "" ( )' % (start, lid(switch_lid), port, DOWN))
                    continue
                if peer[0] == 'switch':
                    dummy, pguid, plid = self._by_name(peer[1])
                    pdesc, pport = 'MF0;%s:MQM9790/U1' % peer[1], peer[2]
                else:
                    pguid, plid, dummy, dummy2 = self.cas[peer[1]]
                    pdesc, pport = '%s mlx5_0' % peer[1], 1
                prefix = '%s ' % pguid if line else ''
                out.append('%s%6d %4d[  ] ==%s==>  %s%6d %4d[  ] "%s" ( )' % (
                    start, lid(switch_lid), port, LINK, prefix, lid(plid), pport, pdesc))
        for host, (guid, ca_lid, leaf, port) in self.cas.items():
            dummy, sguid, slid = self._by_name(leaf)
            desc = '%s mlx5_0' % host
            prefix = '%s ' % sguid if line else ''
            start = '%s "%30s" ' % (guid, desc) if line else '      %s ' % guid
            if not line:
                out.append('CA: %s:' % desc)
            out.append('%s%6d %4d[  ] ==%s==>  %s%6d %4d[  ] "MF0;%s:MQM9790/U1" ( )' % (
                start, lid(ca_lid), 1, LINK, prefix, lid(slid), port, leaf))
        return '\n'.join(out) + '\n'

    def guids(self, *names):
        return sorted(self._by_name(name)[1] for name in names)


def two_tier(leaves=4, spines=2, hosts=2):
    fab = Fabric()
    leaf_names = [fab.switch('leaf%d' % n) for n in range(leaves)]
    spine_names = [fab.switch('spine%d' % n) for n in range(spines)]
    for number, leaf in enumerate(leaf_names):
        for host in range(hosts):
            fab.host('node%d-%d' % (number, host), leaf)
        for spine in spine_names:
            fab.cable(leaf, spine)
    return fab, spine_names


def three_tier(pods=3, leaves=2, aggs=2, cores=2):
    fab = Fabric()
    core_names = [fab.switch('core%d' % n) for n in range(cores)]
    for pod in range(pods):
        agg_names = [fab.switch('p%d-agg%d' % (pod, n)) for n in range(aggs)]
        for number in range(leaves):
            leaf = fab.switch('p%d-leaf%d' % (pod, number))
            fab.host('p%d-node%d' % (pod, number), leaf)
            for agg in agg_names:
                fab.cable(leaf, agg)
        for agg in agg_names:
            for core in core_names:
                fab.cable(agg, core)
    return fab, core_names


def found(text):
    return roots.fabric_roots(parse_iblinkinfo(text)['links'])


@pytest.mark.parametrize('line', [False, True], ids=['default-layout', 'line-layout'])
def test_two_tier_roots_are_the_spines(line):
    fab, spines = two_tier()
    result = found(fab.text(line=line))
    assert result['reason'] is None and result['tiers'] == 2
    assert result['roots'] == fab.guids(*spines)
    assert sorted(set(result['ranks'].values())) == [0, 1]


def test_three_tier_roots_are_the_cores():
    fab, cores = three_tier()
    result = found(fab.text())
    assert result['reason'] is None and result['tiers'] == 3
    assert result['roots'] == fab.guids(*cores)


def test_leaves_only_have_no_roots():
    fab = Fabric()
    fab.host('node0', fab.switch('leaf0'))
    fab.host('node1', 'leaf0')
    result = found(fab.text())
    assert result['roots'] == [] and result['reason'].startswith('leaves only')


def test_lid_zero_before_the_first_sweep_is_refused():
    fab, dummy = two_tier()
    result = found(fab.text(zero_lids=True))
    assert result['roots'] == [] and 'LID 0' in result['reason'] and 'no SM has assigned LIDs' in result['reason']


def test_line_layout_names_peers_by_guid_so_lid_zero_is_read():
    fab, spines = two_tier()
    assert found(fab.text(line=True, zero_lids=True))['roots'] == fab.guids(*spines)


def test_a_leaf_with_no_node_up_is_not_taken_for_the_root():
    fab, dummy = two_tier()
    empty = fab.switch('leaf-empty')
    for spine in ('spine0', 'spine1'):
        fab.cable(empty, spine)
    result = found(fab.text())
    assert result['roots'] == [] and "not the tree's top" in result['reason'] and 'leaf-empty' in result['reason']


def test_a_leaf_with_no_node_up_in_a_three_tier_pod_is_refused():
    fab, dummy = three_tier()
    empty = fab.switch('p0-leaf-empty')
    fab.cable(empty, 'p0-agg0')
    result = found(fab.text())
    assert result['roots'] == [] and 'p0-leaf-empty' in result['reason']


def test_a_ca_on_a_spine_is_refused():
    fab, dummy = two_tier()
    fab.host('ufm', 'spine0')
    result = found(fab.text())
    assert result['roots'] == [] and result['reason'].startswith('not a fat tree')


def test_a_read_without_cas_or_switches():
    fab, dummy = two_tier()
    switches_only = '\n'.join(line for line in fab.text().split('\n') if not line.startswith(('CA:', '      0x')))
    # the switches' peers are CAs the read does not print: their LIDs name nobody, so no switch is a leaf
    assert found(switches_only)['reason'].startswith('the read shows no CA')
    text = own_fixture('iblinkinfo/iblinkinfo-2.x-hdr-spine-ca-blocks-down-handmade.txt')
    assert found(text)['reason'].startswith('leaves only')
    assert roots.fabric_roots([])['reason'] == 'the read shows no switch'


def test_two_nodes_with_one_lid_are_refused():
    fab, dummy = two_tier()
    text = fab.text().replace('     6    1[  ] ==', '     5    1[  ] ==')
    assert 'LID 5 is printed by two nodes' in found(text)['reason']


@pytest.mark.skipif(make_lab is None, reason='lab/hwsim not importable')
def test_the_lab_fabric_roots_are_its_spines(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', sm_hosts=['ctl01'])
    result = found(lab.ok('ctl01', ['iblinkinfo']))
    spines = sorted(switch['guid'] for switch in lab.fabric['switches'] if switch['kind'] == 'spine')
    assert result['reason'] is None and result['roots'] == spines and len(spines) == 2
    assert [result['names'][guid] for guid in result['roots']] == ['MF0;spine0:MQM9790/U1', 'MF0;spine1:MQM9790/U1']


@pytest.mark.skipif(make_lab is None, reason='lab/hwsim not importable')
def test_the_lab_two_scalable_units_and_a_subnet_per_rail(tmp_path):
    lab = make_lab(tmp_path / 'su', 'hgx-h100-ib', compute=4, scalable_units=2, switch_names='identical')
    result = found(lab.ok('gpu01', ['iblinkinfo']))
    assert result['roots'] == sorted(s['guid'] for s in lab.fabric['switches'] if s['kind'] == 'spine')
    # a subnet per rail: one leaf per rail in one scalable unit (no path crosses a spine), two leaves with two
    rails = make_lab(tmp_path / 'rails', 'hgx-h100-ib', subnet_per_rail=True)
    result = found(rails.ok('gpu01', ['iblinkinfo', '-C', 'mlx5_5', '-P', '1']))
    assert result['roots'] == [] and result['reason'].startswith('one leaf')
    units = make_lab(tmp_path / 'units', 'hgx-h100-ib', compute=4, scalable_units=2, subnet_per_rail=True)
    result = found(units.ok('gpu01', ['iblinkinfo', '-C', 'mlx5_5', '-P', '1']))
    # mlx5_5 of the profile is rail 3
    assert [result['names'][guid] for guid in result['roots']] == ['MF0;rail3-spine0:MQM9790/U1',
                                                                   'MF0;rail3-spine1:MQM9790/U1']


def test_a_100k_port_fabric_is_ranked():
    # 1,536 leaves x 64 ports and 64 spines: about 100,000 switch port lines, built as parsed links
    links = []
    spines = ['0xfc6a1c0301%06x' % n for n in range(64)]
    for leaf in range(1536):
        guid = '0xfc6a1c0300%06x' % leaf
        for port in range(1, 33):
            links.append({'node_type': 'Switch', 'node_guid': guid, 'node_lid': leaf + 1, 'port': port,
                          'state': 'Active', 'peer_lid': 10000 + leaf * 32 + port, 'peer_port': 1})
            links.append({'node_type': 'CA', 'node_guid': None, 'port_guid': '0x946dae03%08x' % (leaf * 32 + port),
                          'node_lid': 10000 + leaf * 32 + port, 'port': 1, 'state': 'Active', 'peer_lid': leaf + 1,
                          'peer_port': port})
        for number, spine in enumerate(spines[:32]):
            links.append({'node_type': 'Switch', 'node_guid': guid, 'node_lid': leaf + 1, 'port': 33 + number,
                          'state': 'Active', 'peer_lid': 5000 + number, 'peer_port': leaf % 64 + 1})
            links.append({'node_type': 'Switch', 'node_guid': spine, 'node_lid': 5000 + number, 'port': leaf % 64 + 1,
                          'state': 'Active', 'peer_lid': leaf + 1, 'peer_port': 33 + number})
    result = roots.fabric_roots(links)
    assert len(links) > 100000 and result['roots'] == spines[:32] and result['tiers'] == 2


@pytest.mark.parametrize('value, problems', [
    ('auto', 0), ([], 0), (['0xFC6A1C0300020000', 'fc6a1c0300020001'], 0), ('on', 1), (['spine0', 5], 2),
    (['0xfc6a1c0300020000', '0xFC6A1C0300020000'], 1)], ids=['auto', 'off', 'list', 'word', 'not-guids', 'twice'])
def test_root_guids_variable(value, problems):
    assert len(roots.root_guids_problems(value)) == problems


@pytest.mark.parametrize('value, engines, flavour, mode', [
    ('auto', [], 'upstream', 'off'), ('auto', [], 'nvidia', 'auto'), ('auto', ['ftree', 'minhop'], 'upstream', 'auto'),
    ('auto', ['minhop', 'updn'], 'upstream', 'auto'), ('auto', ['dfsssp'], 'upstream', 'off'),
    ('auto', ['ar_updn'], 'nvidia', 'auto'), ([], ['ftree'], 'upstream', 'off'), (['0x1'], ['minhop'], 'upstream', 'given')])
def test_which_engines_read_the_root_file(value, engines, flavour, mode):
    assert roots.roots_wanted(value, engines, flavour)[0] == mode


def test_root_file_text_is_one_guid_a_line():
    text = roots.root_file_text(['0x01', '0x02'], {'0x01': 'MF0;spine0:MQM9790/U1\nx'}, ['Ansible managed'])
    assert text == '# Ansible managed\n0x01 # MF0;spine0:MQM9790/U1 x\n0x02\n'


def _ib_info(guid):
    return {'hcas': [{'name': 'mlx5_0', 'ports': [{'port': 1, 'link_layer': 'InfiniBand', 'port_guid': guid,
                                                   'rate_gbps': 400.0, 'physical_state': 'LinkUp'}]}]}


def _settings(**more):
    base = {'ports': [], 'subnet': 'fabric', 'sm_priority': None, 'allow_on_compute': False, 'provider': 'host',
            'partitions': [{'name': 'Default', 'pkey': '0x7fff', 'members': [{'guid': 'ALL', 'membership': 'full'}]}],
            'conf': {'routing_engine': ['ftree']}, 'root_guids': 'auto', 'flavour': 'upstream'}
    base.update(more)
    return base


def test_the_plan_names_the_root_file_once_it_holds_roots():
    guid = '0x946dae0300000002'
    path = '/etc/opensm/aicluster/root_guids-%s.conf' % guid
    fresh = opensm_plan(_settings(), _ib_info(guid), 'ctl01', ['ctl01'], [])
    [instance] = fresh['instances']
    assert fresh['roots'] == 'auto' and 'root_guid_file' not in instance['settings']
    assert instance['read'] == {'ca': 'mlx5_0', 'port': 1, 'guid': guid}
    again = opensm_plan(_settings(root_files=[path]), _ib_info(guid), 'ctl01', ['ctl01'], [])
    assert again['instances'][0]['settings']['root_guid_file'] == path
    off = opensm_plan(_settings(root_files=[path], conf={'routing_engine': ['minhop']}), _ib_info(guid), 'ctl01',
                      ['ctl01'], [])
    assert off['roots'] == 'off' and 'root_guid_file' not in off['instances'][0]['settings']
    bad = opensm_plan(_settings(root_guids=['spine0']), _ib_info(guid), 'ctl01', ['ctl01'], [])
    assert bad['problems'] == ["opensm_root_guids[0]: 'spine0' is not a GUID (0x followed by up to 16 hex digits)"]


def test_the_role_step_per_instance():
    guid = '0x946dae0300000002'
    fab, spines = two_tier()
    fab.host('ctl01', 'leaf0')
    fab.cas['ctl01'] = (guid,) + fab.cas['ctl01'][1:]
    links = parse_iblinkinfo(fab.text())['links']
    for link in links:
        link['source'] = 'mlx5_0:1'
    [instance] = opensm_plan(_settings(), _ib_info(guid), 'ctl01', ['ctl01'], [])['instances']
    step = FilterModule().filters()['opensm_roots']
    result = step('auto', ['ftree'], 'upstream', [instance], {'links': links}, ['Ansible managed'])
    [entry] = result['instances']
    assert result['mode'] == 'auto' and entry['roots'] == fab.guids(*spines)
    assert entry['content'].splitlines()[1:] == ['%s # MF0;%s:MQM9790/U1' % (g, n) for g, n in zip(entry['roots'], spines)]
    assert entry['settings']['root_guid_file'] == entry['path'] == '/etc/opensm/aicluster/root_guids-%s.conf' % guid
    failed = step('auto', ['ftree'], 'upstream', [instance], {'msg': 'iblinkinfo: not found', 'failed': False})
    assert failed['instances'][0]['reason'] == 'the fabric read failed: iblinkinfo: not found'
    assert failed['instances'][0]['content'] is None and failed['instances'][0]['settings'] is None
    given = step(['0xFC6A1C0300000009'], ['ftree'], 'upstream', [instance])
    assert given['mode'] == 'given' and given['instances'][0]['content'] == '0xfc6a1c0300000009\n'
    off = step([], ['ftree'], 'upstream', [instance])
    assert off['mode'] == 'off' and off['instances'][0]['settings'] is None


def test_the_settings_render_root_guid_file_into_opensm_conf():
    from ansible_collections.aicluster.infra.plugins.module_utils.opensm_conf import render_opensm_conf
    path = '/etc/opensm/aicluster/root_guids-0x946dae0300000002.conf'
    defaults = own_fixture('opensm_conf/mlnx-opensm-create-config-excerpt-handmade.conf')
    text = render_opensm_conf(defaults, {'routing_engine': ['updn'], 'root_guid_file': path}, 'nvidia')
    assert 'root_guid_file %s' % path in text.splitlines()
    assert 'root_guid_file (null)' not in render_opensm_conf(defaults, {'root_guid_file': path}, 'nvidia')
