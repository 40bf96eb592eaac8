# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""hwsim field fabric layouts (issue 11): description modes, unmanaged switch names, scalable units, a subnet per
rail, 12 RDMA devices; the stand-ins' output read with the collection's parsers."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys

import pytest

from _paths import REPO

from ansible_collections.aicluster.infra.plugins.module_utils.iblinkinfo import parse_iblinkinfo
from ansible_collections.aicluster.infra.plugins.module_utils.ibstat import parse_ibstat
from ansible_collections.aicluster.infra.plugins.module_utils.rdma_tools import parse_show_gids

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))
from hwsim import fabric as fabrics  # noqa: E402 pylint: disable=wrong-import-position
from hwsim.testing import make_lab  # noqa: E402 pylint: disable=wrong-import-position


def _ca_names(text):
    return sorted(set(link['node_name'] for link in parse_iblinkinfo(text)['links'] if link['node_type'] == 'CA'))


@pytest.mark.parametrize('mode, expected', [
    ('mlx5', 'gpu01 mlx5_3'), ('ofed', 'gpu01 HCA-4'), ('anonymous', 'MT4129 ConnectX7 Mellanox Technologies'),
    ('fqdn', 'gpu01.lab.example mlx5_3')])
def test_description_modes(tmp_path, mode, expected):
    lab = make_lab(tmp_path, 'hgx-h100-ib', descriptions=mode)
    assert expected in _ca_names(lab.ok('gpu02', ['iblinkinfo']))


def test_identical_unmanaged_switch_names_keep_their_guids(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', switch_names='identical')
    links = parse_iblinkinfo(lab.ok('gpu01', ['iblinkinfo']))['links']
    switches = dict((link['node_guid'], link['node_name']) for link in links if link['node_type'] == 'Switch')
    assert len(switches) == 10 and set(switches.values()) == {'Quantum2 Mellanox Technologies'}


def test_two_scalable_units_have_their_own_leaves_and_shared_spines(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=4, scalable_units=2)
    assert [lab.fabric['hosts']['gpu%02d' % n]['su'] for n in range(1, 5)] == [0, 0, 1, 1]
    assert lab.fabric['hosts']['gpu03']['hcas']['mlx5_0']['switch'] == 'su2-leaf-rail0'
    links = parse_iblinkinfo(lab.ok('gpu01', ['iblinkinfo']))['links']
    spine = [link for link in links if link['node_name'].startswith('MF0;spine0:') and link['state'] == 'Active']
    assert set(link['peer_name'].split(':')[0] for link in spine) == set(
        'MF0;su%d-leaf-rail%d' % (unit, rail) for unit in (1, 2) for rail in range(8))


def test_a_subnet_per_rail(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', subnet_per_rail=True)
    assert len(lab.fabric['subnets']) == 8
    ports = dict((ca['name'], ca['ports'][0]) for ca in parse_ibstat(lab.ok('gpu01', ['ibstat']))['cas'])
    assert ports['mlx5_0']['sm_lid'] != ports['mlx5_5']['sm_lid']
    gids = dict((gid['dev'], gid['gid']) for gid in parse_show_gids(lab.ok('gpu01', ['show_gids'])) if gid['index'] == 0)
    assert gids['mlx5_5'].startswith('fec0:0000:0000:0003:') and gids['mlx5_0'].startswith('fec0:0000:0000:0000:')
    # iblinkinfo reads the subnet of the port it opens, nothing else
    assert _ca_names(lab.ok('gpu01', ['iblinkinfo', '-C', 'mlx5_5', '-P', '1'])) == ['gpu01 mlx5_5', 'gpu02 mlx5_5']
    assert _ca_names(lab.ok('gpu01', ['iblinkinfo'])) == ['gpu01 mlx5_0', 'gpu02 mlx5_0']
    switches = set(link['node_name'] for link in parse_iblinkinfo(lab.ok('gpu02', ['iblinkinfo', '-C', 'mlx5_5']))['links']
                   if link['node_type'] == 'Switch')
    assert switches == {'MF0;leaf-rail3:MQM9790/U1', 'MF0;rail3-spine0:MQM9790/U1', 'MF0;rail3-spine1:MQM9790/U1'}


def test_one_subnet_by_default(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    gids = [gid['gid'] for gid in parse_show_gids(lab.ok('gpu01', ['show_gids'])) if gid['dev'] == 'mlx5_5']
    assert gids[0].startswith('fe80:0000:0000:0000:')
    assert len(_ca_names(lab.ok('gpu01', ['iblinkinfo', '-C', 'mlx5_5']))) == 16


def test_twelve_rdma_devices_in_sysfs_order(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib-12dev')
    cas = parse_ibstat(lab.ok('gpu01', ['ibstat']))['cas']
    assert [ca['name'] for ca in cas] == ['mlx5_0', 'mlx5_1', 'mlx5_10', 'mlx5_11', 'mlx5_2', 'mlx5_3', 'mlx5_4', 'mlx5_5',
                                          'mlx5_6', 'mlx5_7', 'mlx5_8', 'mlx5_9']
    infiniband = [ca['name'] for ca in cas if ca['ports'][0]['link_layer'] == 'InfiniBand']
    assert sorted(infiniband, key=lambda name: int(name[5:])) == ['mlx5_0', 'mlx5_3', 'mlx5_4', 'mlx5_5', 'mlx5_6', 'mlx5_9',
                                                                  'mlx5_10', 'mlx5_11']


@pytest.mark.parametrize('options', [{'descriptions': 'hostname'}, {'switch_names': 'same'}, {'scalable_units': 0}])
def test_bad_options(options):
    with pytest.raises(fabrics.FabricError):
        fabrics.build_fabric([('gpu01', 'hgx-h100-ib')], **options)


def test_build_fabric_command_options(tmp_path):
    from hwsim import cli
    import io
    import yaml
    out, err = io.StringIO(), io.StringIO()
    argv = ['hwsim', 'build-fabric', '--descriptions', 'ofed', '--switch-names', 'identical', '--scalable-units', '2',
            '--subnet-per-rail', str(tmp_path / 'fabric.yml'), 'ctl01=none', 'gpu01=hgx-a100-ib', 'gpu02=hgx-a100-ib']
    assert cli.main(argv, environ={'HWSIM_HOST': 'ctl01'}, stdout=out, stderr=err) == 0, err.getvalue()
    fabric = yaml.safe_load((tmp_path / 'fabric.yml').read_text())
    assert fabric['node_description']['mode'] == 'ofed' and fabric['scalable_units'] == 2 and len(fabric['subnets']) == 8
    assert cli.main(argv[:2] + ['--descriptions', 'bad'] + argv[3:], environ={}, stdout=out, stderr=err) == 2
