# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rdma role's firmware steps (plugins/module_utils/rdma_plan.py firmware_report) on lab/hwsim's mlxfwmanager:
the lab BOM's matrix passes, a ``firmware`` fault differs, a flash leaves a reset pending until ``hwsim reboot``, a
downgrade without ``-f`` is refused (so the role's re-query fails it), and a host without HCAs has no device."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys

import pytest

from _paths import REPO

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))

# pylint: disable=wrong-import-position
from ansible_collections.aicluster.infra.plugins.module_utils.rdma_plan import firmware_report  # noqa: E402

try:
    from hwsim.testing import make_lab  # noqa: E402
    from hwsim.tools import mlxfw  # noqa: E402,F401  pylint: disable=unused-import
except ImportError:  # pragma: no cover - an older hwsim without the mlxfwmanager stand-in
    pytest.skip('lab/hwsim has no mlxfwmanager stand-in', allow_module_level=True)

# inventories/lab/group_vars/all/bom.yml: the simulated ConnectX-7 and ConnectX-6 Dx
LAB_MATRIX = {'MT_0000000838': '28.39.1002', 'MT_0000000359': '22.39.1002'}


def _query(lab, host):
    # what the role's `sh -c 'command -v TOOL || exit 127; exec TOOL --query'` registers
    status, out, err = lab.run(host, ['mlxfwmanager', '--query'])
    return {'rc': status, 'stdout': out, 'stderr': err}


@pytest.fixture(name='lab')
def _lab(tmp_path):
    return make_lab(tmp_path, 'hgx-h100-ib', compute=1)


def test_the_lab_matrix_passes(lab):
    report = firmware_report(_query(lab, 'gpu01'), LAB_MATRIX)
    assert report['error'] == '' and report['warnings'] == [] and not report['reboot_required']
    assert len(report['devices']) == 9
    assert {(d['psid'], d['status']) for d in report['devices']} == {('MT_0000000838', 'ok'), ('MT_0000000359', 'ok')}
    assert report['devices'][0]['device'] == '0000:18:00.0'


def test_a_firmware_fault_differs_and_a_flash_waits_for_the_reboot(lab, tmp_path):
    assert lab.run('gpu01', ['hwsim', 'fault', 'firmware', '28.38.1000'])[0] == 0
    image = tmp_path / 'cx7.fw'
    image.write_text('PSID=MT_0000000838\nFW=28.39.1002\n')
    report = firmware_report(_query(lab, 'gpu01'), LAB_MATRIX, {'MT_0000000838': str(image)})
    differs = [d for d in report['devices'] if d['status'] == 'differs']
    assert len(differs) == 9
    # the ConnectX-6 Dx has no image: the role stops before flashing anything
    assert report['missing_images'] == ['0000:aa:00.0: no image for PSID MT_0000000359 in rdma_firmware_images']
    assert [entry['device'] for entry in report['to_flash']][:2] == ['0000:18:00.0', '0000:40:00.0']

    # the role's flash of one device: mlxfwmanager -u -i IMAGE -d DEVICE -y
    status, out, _err = lab.run('gpu01', ['mlxfwmanager', '-u', '-i', str(image), '-d', '0000:18:00.0', '-y'])
    assert status == 0 and 'Restart needed' in out
    after = firmware_report(_query(lab, 'gpu01'), LAB_MATRIX, {'MT_0000000838': str(image)})
    first = after['devices'][0]
    assert (first['status'], first['current'], first['running'], first['pending_reset']) == (
        'ok', '28.39.1002', '28.38.1000', True)
    assert after['reboot_required'] is True
    assert '0000:18:00.0 (MCX75310AAS-NEA_Ax, PSID MT_0000000838) has firmware 28.39.1002 flashed but runs ' \
           '28.38.1000 until its next reset (reboot)' in after['warnings']


def test_a_downgrade_without_force_is_not_burnt(lab, tmp_path):
    image = tmp_path / 'old.fw'
    image.write_text('PSID=MT_0000000838\nFW=28.37.1000\n')
    matrix = dict(LAB_MATRIX, MT_0000000838='28.37.1000')
    status, _out, _err = lab.run('gpu01', ['mlxfwmanager', '-u', '-i', str(image), '-d', '0000:18:00.0', '-y'])
    assert status == 0
    after = firmware_report(_query(lab, 'gpu01'), matrix, {'MT_0000000838': str(image)})
    assert after['devices'][0]['status'] == 'differs'


def test_a_host_without_hcas_has_no_device(lab):
    report = firmware_report(_query(lab, 'ctl01'), LAB_MATRIX)
    assert report['devices'] == [] and report['error'] == ''
    assert report['warnings'] == ["mlxfwmanager found no device: No devices found or specified, mst might be stopped, "
                                  "run 'mst start' to load MST modules"]
