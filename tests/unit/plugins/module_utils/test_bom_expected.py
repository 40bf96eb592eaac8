# -*- coding: utf-8 -*-
"""module_utils/bom_expected.py: what the verify stage expects from a bill of materials."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml

from _paths import REPO
from ansible_collections.aicluster.infra.plugins.module_utils.bom_expected import (
    ofed_release, upstream_version, verify_expected)
from ansible_collections.aicluster.infra.plugins.module_utils.verify.ib import evaluate_ib_fleet


def _default_bom():
    with open(os.path.join(REPO, 'roles', 'bom', 'defaults', 'main.yml'), encoding='utf-8') as handle:
        return yaml.safe_load(handle)['aicluster_bom']


@pytest.mark.parametrize('version, upstream', [('580.95.05-1', '580.95.05'), ('1:4.4.1-1', '4.4.1'), ('12.9.1-1', '12.9.1'),
                                               ('570.133.20', '570.133.20'), ('', ''), (None, '')])
def test_upstream_version(version, upstream):
    assert upstream_version(version) == upstream


@pytest.mark.parametrize('kernel, release', [
    ('24.10.OFED.24.10.1.1.4.1-1', '24.10-1.1.4'),          # DOCA-Host 2.9.1 LTS: DOCA-OFED 24.10-1.1.4
    ('25.04.OFED.25.04.0.6.0.1-1', '25.04-0.6.0'),
    ('580.95.05-1', ''),                                     # not an mlnx-ofed-kernel version
    ('', '')])
def test_ofed_release(kernel, release):
    assert ofed_release(kernel) == release


def test_the_collections_default_bom():
    assert verify_expected(_default_bom()) == {
        'driver': '580.95.05', 'cuda': '12.9.1', 'cuda_major': '13', 'firmware': {'MT_0000000838': '28.43.2026'},
        'ofed': 'OFED-internal-24.10-1.1.4'}


def test_inbox_rdma_has_no_expected_ofed_and_no_bom_expects_nothing():
    assert verify_expected(_default_bom(), 'inbox')['ofed'] == ''
    assert verify_expected(None) == {'driver': '', 'cuda': '', 'cuda_major': '', 'firmware': {}, 'ofed': ''}
    assert verify_expected({'nvidia_driver': {'version': '570.133.20-1'}})['driver'] == '570.133.20'


def _ib(firmware, board_id='MT_0000000838', name='mlx5_0', ofed='OFED-internal-24.10-1.1.4'):
    return {'hcas': [{'name': name, 'board_id': board_id, 'firmware_version': firmware}], 'ofed_version': ofed}


def test_firmware_pinned_by_psid_and_by_name():
    infos = {'gpu01': _ib('28.43.2026'), 'gpu02': _ib('28.39.1002'), 'gpu03': _ib('28.39.1002')}
    expected = {'hcas': ['mlx5_0'], 'fleet_checks': ['ib.firmware_uniform']}
    by_psid = evaluate_ib_fleet(infos, dict(expected, firmware={'MT_0000000838': '28.43.2026'}), [])
    # the BOM's version wins over the fleet's majority (two nodes not yet flashed)
    assert [by_psid[node][0]['passed'] for node in ('gpu01', 'gpu02', 'gpu03')] == [True, False, False]
    assert by_psid['gpu02'][0]['threshold'] == '28.43.2026'
    by_name = evaluate_ib_fleet(infos, dict(expected, firmware={'mlx5_0': '28.39.1002'}), [])
    assert [by_name[node][0]['passed'] for node in ('gpu01', 'gpu02', 'gpu03')] == [False, True, True]
    # a PSID the BOM does not list: the fleet's majority
    other = evaluate_ib_fleet(infos, dict(expected, firmware={'MT_0000000359': '22.39.1002'}), [])
    assert [other[node][0]['passed'] for node in ('gpu01', 'gpu02', 'gpu03')] == [False, True, True]


def test_ofed_release_with_a_build_suffix_passes_the_boms_release():
    # ofed_info -s on DGX OS 7 with DOCA 2.9.1-2: "OFED-internal-24.10-1.1.4.0.200:" (ib_info drops the colon)
    infos = {'gpu01': _ib('28.43.2026', ofed='OFED-internal-24.10-1.1.4.0.200'),
             'gpu02': _ib('28.43.2026', ofed='OFED-internal-24.10-1.1.4'),
             'gpu03': _ib('28.43.2026', ofed='OFED-internal-24.10-2.1.8')}
    out = evaluate_ib_fleet(infos, {'hcas': ['mlx5_0'], 'ofed': 'OFED-internal-24.10-1.1.4',
                                    'fleet_checks': ['ib.ofed_uniform']}, [])
    assert [out[node][0]['passed'] for node in ('gpu01', 'gpu02', 'gpu03')] == [True, True, False]
