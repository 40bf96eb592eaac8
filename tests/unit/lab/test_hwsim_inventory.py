# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""lab/hwsim as the verify stage's inventory reads it: GPU serials and VBIOS (nvidia-smi -q and --query-gpu agree, the
``vbios GPU VERSION`` fault), HCA PSIDs (ibv_devinfo board_id), through the collection's own gpu_info and ib_info."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import io
import os
import re
import sys

from _module_runner import run_main
from _paths import REPO

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))

# pylint: disable=wrong-import-position
from ansible_collections.aicluster.infra.plugins.module_utils.ibv_devinfo import parse_ibv_devinfo  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.nvidia_smi import parse_nvidia_smi_q, parse_query_gpu_csv  # noqa: E402
from ansible_collections.aicluster.infra.plugins.modules import gpu_info, ib_info  # noqa: E402
from hwsim import cli, profile as profiles  # noqa: E402
from hwsim.testing import make_lab  # noqa: E402

FIELDS = ['index', 'serial', 'vbios_version']


def _tool(lab, host):
    def run(argv):
        out, err = io.StringIO(), io.StringIO()
        rc = cli.main([os.path.basename(argv[0])] + list(argv[1:]), environ=lab.env(host), stdout=out, stderr=err)
        return rc, out.getvalue(), err.getvalue()
    return run


def _query(lab, host):
    text = lab.ok(host, ['nvidia-smi', '--query-gpu=' + ','.join(FIELDS), '--format=csv,noheader,nounits'])
    return [(int(row['index']), row['serial'], row['vbios_version']) for row in parse_query_gpu_csv(text, fields=FIELDS)]


def _q(lab, host):
    return [(gpu['serial'], gpu['vbios_version'], gpu['board_part_number'])
            for gpu in parse_nvidia_smi_q(lab.ok(host, ['nvidia-smi', '-q']))['gpus']]


def test_serials_and_vbios_agree_in_query_and_q(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    query = _query(lab, 'gpu01')
    assert [vbios for _index, _serial, vbios in query] == ['96.00.74.00.01'] * 8
    # 13 digits, unique per host and slot
    assert all(re.match(r'^1654\d{9}$', serial) for _index, serial, _vbios in query)
    serials = set(serial for _index, serial, _vbios in query + _query(lab, 'gpu02'))
    assert len(serials) == 16
    assert [(serial, vbios) for _index, serial, vbios in query] == [(serial, vbios) for serial, vbios, _part in _q(lab, 'gpu01')]
    assert set(part for _serial, _vbios, part in _q(lab, 'gpu01')) == set(['692-2G520-0200-000'])
    a100 = make_lab(tmp_path / 'a100', 'hgx-a100-ib', compute=1)
    assert set(vbios for _index, _serial, vbios in _query(a100, 'gpu01')) == set(['92.00.45.00.03'])


def test_vbios_fault_reflashes_one_gpu(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    assert lab.run('gpu01', ['hwsim', 'fault', 'vbios', '3', '96.00.99.00.01'])[0] == 0
    assert [vbios for _index, _serial, vbios in _query(lab, 'gpu01')] == ['96.00.74.00.01'] * 3 + ['96.00.99.00.01'] + ['96.00.74.00.01'] * 4
    assert [vbios for _serial, vbios, _part in _q(lab, 'gpu01')][3] == '96.00.99.00.01'
    assert set(vbios for _index, _serial, vbios in _query(lab, 'gpu02')) == set(['96.00.74.00.01'])
    # hex fields as nvidia-smi prints them (upper case); a later one on the same GPU replaces it; clear restores
    assert lab.run('gpu01', ['hwsim', 'fault', 'vbios', '3', '96.00.a1.00.0f'])[0] == 0
    assert _query(lab, 'gpu01')[3][2] == '96.00.A1.00.0F'
    assert lab.run('gpu01', ['hwsim', 'clear', 'vbios'])[0] == 0
    assert set(vbios for _index, _serial, vbios in _query(lab, 'gpu01')) == set(['96.00.74.00.01'])


def test_vbios_fault_rejects_what_is_not_a_vbios_version(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    for bad in (['vbios', '3'], ['vbios', '3', 'latest'], ['vbios', '3', '96.00.74'], ['vbios', 'x', '96.00.74.00.01']):
        status, _out, err = lab.run('gpu01', ['hwsim', 'fault'] + bad)
        assert status == 2 and 'vbios GPU VERSION' in err, (bad, err)


def test_gpu_info_and_ib_info_carry_the_inventory(tmp_path, monkeypatch):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    # no DMI folder in the test: the node's identity is null, the GPUs' is not
    monkeypatch.setattr(gpu_info, 'SYSFS_DMI', str(tmp_path / 'no-dmi'))
    monkeypatch.setattr(gpu_info, 'PROC_GPUS', str(tmp_path / 'no-proc'))
    assert lab.run('gpu01', ['hwsim', 'fault', 'vbios', '5', '96.00.99.00.01'])[0] == 0
    result = run_main(gpu_info, {'topology': False}, {'nvidia-smi': _tool(lab, 'gpu01')})[0]
    assert not result.get('failed'), result
    assert [(gpu['serial'], gpu['vbios_version']) for gpu in result['gpus']] == [row[1:] for row in _query(lab, 'gpu01')]
    assert result['gpus'][5]['vbios_version'] == '96.00.99.00.01' and result['system'] is None
    tools = dict((name, _tool(lab, 'gpu01')) for name in ('ibstat', 'ibv_devinfo'))
    result = run_main(ib_info, {}, tools)[0]
    assert not result.get('failed'), result
    profile = dict((hca['name'], (hca['firmware'], hca['board_id'])) for hca in profiles.load('hgx-h100-ib')['hcas'])
    assert dict((hca['name'], (hca['firmware_version'], hca['board_id'])) for hca in result['hcas']) == profile
    assert set(hca['board_id'] for hca in parse_ibv_devinfo(lab.ok('gpu01', ['ibv_devinfo']))) == set(
        board_id for _firmware, board_id in profile.values())
