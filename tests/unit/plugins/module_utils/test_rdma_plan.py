# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/rdma_plan.py: the rdma role's variable checks, kernel-module decision,
firmware report and device check."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os

import pytest
import yaml

from _paths import REPO, own_fixture

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.rdma_plan import (
    device_check, firmware_report, kernel_module_packages, parse_device_list, rdma_vars_problems)

TWO_CX7 = 'mlxfwmanager/mlxfwmanager-mft-4.30-cx7-ndr-two-hcas-one-behind-handmade.txt'
PENDING = 'mlxfwmanager/mlxfwmanager-mft-4.30-cx7-bf3-reset-pending-virtio-roms-handmade.txt'
NONE = 'mlxfwmanager/mlxfwmanager-mft-4.30-no-devices-handmade.txt'

GOOD = {
    'rdma_stack': 'doca',
    'rdma_doca_packages': {'doca-ofed': '2.9.1-1', 'mlnx-ofed-kernel-dkms': '24.10.OFED.24.10.1.1.4.1-1',
                           'mlnx-ofed-kernel-utils': '24.10.OFED.24.10.1.1.4.1-1'},
    'rdma_doca_profile': 'doca-ofed',
    'rdma_repo_url': 'https://linux.mellanox.com/public/repo/doca/2.9.1/debian12/x86_64/',
    'rdma_repo_suite': './',
    'rdma_repo_components': [],
    'rdma_repo_key_url': 'https://linux.mellanox.com/public/repo/doca/GPG-KEY-Mellanox.pub',
    'rdma_inbox_packages': ['rdma-core', 'ibverbs-utils', 'infiniband-diags', 'perftest'],
    'rdma_memlock': 'unlimited',
    'rdma_subnet_manager_services': ['opensm', 'opensmd'],
    'rdma_firmware_enabled': True,
    'rdma_firmware_tool': 'mlxfwmanager',
    'rdma_firmware_expected': {'MT_0000000838': '28.43.2026'},
    'rdma_firmware_images': {},
    'rdma_firmware_update': False,
}


def _with(**changes):
    settings = copy.deepcopy(GOOD)
    settings.update(changes)
    return settings


def test_the_default_bill_of_materials_passes():
    """The role's defaults, taken from roles/bom/defaults/main.yml, raise no problem."""
    path = os.path.join(REPO, 'roles', 'bom', 'defaults', 'main.yml')
    if not os.path.isfile(path):
        pytest.skip('roles/bom/defaults/main.yml absent')
    with open(path, encoding='utf-8') as handle:
        bom = yaml.safe_load(handle)['aicluster_bom']
    settings = _with(rdma_doca_packages=bom['rdma']['packages'], rdma_doca_profile=bom['rdma']['doca_profile'],
                     rdma_repo_url=bom['repositories']['doca']['url'], rdma_repo_suite=bom['repositories']['doca']['suite'],
                     rdma_repo_key_url=bom['repositories']['doca']['key_url'],
                     rdma_firmware_expected=bom['rdma']['firmware'])
    assert rdma_vars_problems(settings) == []


def test_good_settings_and_inbox_pass():
    assert rdma_vars_problems(GOOD) == []
    # inbox ignores the pinned stack's variables, whatever they hold
    assert rdma_vars_problems(_with(rdma_stack='inbox', rdma_doca_packages={}, rdma_repo_url='')) == []
    assert rdma_vars_problems(_with(rdma_stack='mlnx_ofed', rdma_doca_packages={'mlnx-ofed-hpc': '24.10-1.1.4.0'},
                                    rdma_doca_profile='mlnx-ofed-hpc', rdma_repo_suite='bookworm',
                                    rdma_repo_components=['main'])) == []
    assert rdma_vars_problems(_with(rdma_memlock=65536)) == []
    assert rdma_vars_problems(_with(rdma_memlock='')) == []
    assert rdma_vars_problems(_with(rdma_repo_url='file:/srv/mirror/doca/', rdma_repo_key_url='http://ctl01/k.asc')) == []
    assert rdma_vars_problems(_with(rdma_firmware_images={'MT_0000000838': '/srv/fw/cx7.bin'},
                                    rdma_firmware_update=True)) == []


@pytest.mark.parametrize('changes, expected', [
    ({'rdma_stack': 'ofed'}, ["rdma_stack must be one of doca, inbox, mlnx_ofed, got 'ofed'"]),
    ({'rdma_doca_packages': {}}, ['rdma_doca_packages must map each package of the doca stack to its exact Debian '
                                  'version (aicluster_bom.rdma.packages), got {}']),
    ({'rdma_doca_packages': {'doca-ofed': 2.9}}, ['rdma_doca_packages[doca-ofed] must be an exact Debian version as a '
                                                  'quoted string, such as "24.10.OFED.24.10.1.1.4.1-1" (no wildcard), '
                                                  'got 2.9']),
    ({'rdma_doca_packages': {'doca-ofed': '2.9.*', 'Doca': '1'}},
     ["rdma_doca_packages: 'Doca' is not a Debian package name (lowercase letters, digits, + - .)",
      'rdma_doca_packages[doca-ofed] must be an exact Debian version as a quoted string, such as '
      '"24.10.OFED.24.10.1.1.4.1-1" (no wildcard), got \'2.9.*\'']),
    ({'rdma_doca_profile': 'doca-all'},
     ["rdma_doca_profile must be one of the packages of rdma_doca_packages (doca-ofed, mlnx-ofed-kernel-dkms, "
      "mlnx-ofed-kernel-utils), the metapackage that brings the stack (doca-ofed for DOCA-OFED), got 'doca-all'"]),
    ({'rdma_repo_url': 'linux.mellanox.com/public/repo/doca/', 'rdma_repo_key_url': 'ftp://x/k'},
     ["rdma_repo_url must be an http://, https:// or file:/ URL (got 'linux.mellanox.com/public/repo/doca/')",
      "rdma_repo_key_url must be an http://, https:// or file:/ URL (got 'ftp://x/k')"]),
    ({'rdma_repo_components': ['main']},
     ["rdma_repo_components must be empty with the flat suite './' (rdma_repo_suite ends in /), got main"]),
    ({'rdma_repo_suite': 'bookworm'},
     ["rdma_repo_components must name at least one component with the suite 'bookworm' (or give a flat suite ending "
      "in /, such as ./)"]),
    ({'rdma_repo_suite': 'a suite'},
     ["rdma_repo_suite must be a suite or, for a flat repository such as DOCA's, a path ending in / (./), got 'a suite'"]),
    ({'rdma_stack': 'inbox', 'rdma_inbox_packages': []},
     ['rdma_inbox_packages must be a non-empty list of Debian package names, got []']),
    ({'rdma_memlock': 'lots'}, ["rdma_memlock must be unlimited, a number of KiB, or empty (no limits file), got 'lots'"]),
    ({'rdma_memlock': True}, ['rdma_memlock must be unlimited, a number of KiB, or empty (no limits file), got True']),
    ({'rdma_subnet_manager_services': 'opensm'},
     ["rdma_subnet_manager_services must be a list of systemd unit names, got 'opensm'"]),
    ({'rdma_firmware_expected': {'MT_0000000838': 28.43}},
     ['rdma_firmware_expected[MT_0000000838] must be a firmware version as a quoted string, such as "28.43.2026", got 28.43']),
    ({'rdma_firmware_expected': {'MT 838': '28.43.2026'}},
     ["rdma_firmware_expected: 'MT 838' is not a PSID such as MT_0000000838"]),
    ({'rdma_firmware_images': {'MT_0000000359': '/srv/fw/cx6.bin', 'MT_0000000838': 'cx7.bin'}},
     ['rdma_firmware_images[MT_0000000359]: the PSID is not in rdma_firmware_expected (MT_0000000838), so no device '
      'of it is ever flashed',
      "rdma_firmware_images[MT_0000000838] must be an absolute path on the node, got 'cx7.bin'"]),
    ({'rdma_firmware_update': True},
     ['rdma_firmware_update is true but rdma_firmware_images is empty: name the image of each PSID to flash']),
    ({'rdma_firmware_update': True, 'rdma_firmware_enabled': False, 'rdma_firmware_images': {'MT_0000000838': '/f'}},
     ['rdma_firmware_update is true but rdma_firmware_enabled is false: the firmware is only flashed after the query '
      'that compares it']),
    ({'rdma_firmware_tool': 'mlxfwmanager --online'},
     ["rdma_firmware_tool must be a command name or an absolute path (mlxfwmanager), got 'mlxfwmanager --online'"]),
], ids=['stack', 'no-packages', 'float-version', 'bad-name-wildcard', 'profile', 'urls', 'flat-with-components',
        'suite-without-components', 'suite-space', 'inbox-empty', 'memlock-word', 'memlock-bool', 'sm-string',
        'fw-float', 'fw-psid', 'fw-images', 'update-no-images', 'update-disabled', 'tool-args'])
def test_each_problem_names_its_variable(changes, expected):
    assert rdma_vars_problems(_with(**changes)) == expected


def test_vars_problems_wants_a_dict():
    with pytest.raises(TypeError):
        rdma_vars_problems(['rdma_stack'])


@pytest.mark.parametrize('packages, profile, expected', [
    ([], 'doca-ofed', []),
    ([{'name': 'mlnx-ofed-kernel-utils', 'before': '1', 'after': '2'}], 'doca-ofed', []),
    ([{'name': 'doca-ofed', 'before': '2.9.1-1', 'after': '2.9.2-1'},
      {'name': 'mlnx-ofed-kernel-dkms', 'before': '24.10.OFED.24.10.1.1.4.1-1', 'after': '24.10.OFED.24.10.2.1.8.1-1'},
      {'name': 'mlnx-ofed-kernel-utils', 'before': '', 'after': '24.10.OFED.24.10.2.1.8.1-1'}],
     'doca-ofed', ['doca-ofed', 'mlnx-ofed-kernel-dkms']),
    (['knem-dkms=1.1.4.90mlnx3-OFED.23.10.0.2.1.1', 'rdma-core', 'knem-dkms'], '', ['knem-dkms']),
    (['doca-ofed=2.9.1-1'], '', []),
], ids=['nothing', 'userland-only', 'doca-bump', 'specs-once', 'no-profile'])
def test_kernel_module_packages(packages, profile, expected):
    assert kernel_module_packages(packages, profile) == expected


# ------------------------------------------------------------------ firmware
def _query(fixture=None, rc=0, stdout=None, stderr=''):
    return {'rc': rc, 'stdout': own_fixture(fixture) if fixture else (stdout or ''), 'stderr': stderr}


def test_firmware_one_device_behind():
    report = firmware_report(_query(TWO_CX7), {'MT_0000000838': '28.43.2026'})
    assert report['tool_found'] and report['error'] == '' and not report['reboot_required']
    assert [(d['device'], d['psid'], d['current'], d['expected'], d['status'], d['pending_reset'])
            for d in report['devices']] == [
        ('/dev/mst/mt4129_pciconf0', 'MT_0000000838', '28.43.2026', '28.43.2026', 'ok', False),
        ('/dev/mst/mt4129_pciconf1', 'MT_0000000838', '28.39.1002', '28.43.2026', 'differs', False)]
    assert report['warnings'] == ['/dev/mst/mt4129_pciconf1 (MCX75310AAS-NEA_Ax, PSID MT_0000000838) runs firmware '
                                  '28.39.1002, the bill of materials says 28.43.2026']
    assert report['to_flash'] == []
    assert report['missing_images'] == ['/dev/mst/mt4129_pciconf1: no image for PSID MT_0000000838 in '
                                        'rdma_firmware_images']


def test_firmware_images_make_the_flash_list():
    report = firmware_report(_query(TWO_CX7), {'MT_0000000838': '28.43.2026'},
                             {'MT_0000000838': '/srv/fw/fw-ConnectX7-28.43.2026.bin'})
    assert report['to_flash'] == [{'device': '/dev/mst/mt4129_pciconf1', 'psid': 'MT_0000000838',
                                   'image': '/srv/fw/fw-ConnectX7-28.43.2026.bin'}]
    assert report['missing_images'] == []
    assert [d['image'] for d in report['devices']] == ['/srv/fw/fw-ConnectX7-28.43.2026.bin'] * 2


def test_firmware_reset_pending_and_unknown_psid():
    report = firmware_report(_query(PENDING), {'MT_0000000834': '28.43.2026'})
    first, second = report['devices']
    assert (first['status'], first['current'], first['running'], first['pending_reset']) == (
        'ok', '28.43.2026', '28.41.1000', True)
    assert (second['status'], second['expected'], second['pending_reset']) == ('unknown_psid', None, False)
    assert report['reboot_required'] is True
    assert report['warnings'] == [
        '0000:3b:00.0 (MCX755106AS-HEA_Ax, PSID MT_0000000834) has firmware 28.43.2026 flashed but runs 28.41.1000 '
        'until its next reset (reboot)',
        '/dev/mst/mt41692_pciconf0 (900-9D3B6-00CV-A_Ax, PSID MT_0000000884) is not in the firmware matrix '
        '(rdma_firmware_expected): its firmware 32.43.1014 is not checked']


def test_firmware_tool_missing():
    report = firmware_report({'rc': 127, 'stdout': '', 'stderr': ''}, {'MT_0000000838': '28.43.2026'})
    assert report == {'tool_found': False, 'devices': [], 'error': '', 'warnings': [], 'reboot_required': False,
                      'to_flash': [], 'missing_images': []}


def test_firmware_no_device_is_a_warning():
    text = own_fixture(NONE)
    report = firmware_report({'rc': 1, 'stdout': text.splitlines()[0], 'stderr': text.splitlines()[1]}, {})
    assert report['error'] == '' and report['devices'] == []
    assert report['warnings'] == ["mlxfwmanager found no device: No devices found or specified, mst might be stopped, "
                                  "run 'mst start' to load MST modules"]


def test_firmware_tool_failure_and_garbage_are_errors():
    report = firmware_report(_query(rc=3, stdout='Querying Mellanox devices firmware ...\n',
                                    stderr='-E- Failed to open device\n'), {})
    assert report['error'] == 'mlxfwmanager --query failed (rc 3): Failed to open device'
    report = firmware_report(_query(rc=139, stdout='', stderr='Segmentation fault\n'), {})
    assert report['error'].startswith('mlxfwmanager --query (rc 139) printed no firmware report: Segmentation fault')


def test_firmware_devices_reported_with_a_bad_rc_are_still_compared():
    report = firmware_report(_query(TWO_CX7, rc=1, stderr='-E- Failed to query one device\n'),
                             {'MT_0000000838': '28.39.1002'})
    assert [d['status'] for d in report['devices']] == ['differs', 'ok']
    assert report['error'] == ''
    assert report['warnings'][0] == 'mlxfwmanager --query returned rc 1: Failed to query one device'


# ------------------------------------------------------------------ ibv_devinfo -l
@pytest.mark.parametrize('text, names', [
    ('2 HCAs found:\n\tmlx5_0\n\tmlx5_1\n\n', ['mlx5_0', 'mlx5_1']),
    ('1 HCA found:\n\tmlx5_0\n', ['mlx5_0']),
    ('0 HCAs found:\n\n', []),
], ids=['two', 'one', 'none'])
def test_parse_device_list(text, names):
    assert parse_device_list(text) == names


def test_parse_device_list_needs_the_count():
    with pytest.raises(ParseError):
        parse_device_list('mlx5_0\n')


@pytest.mark.parametrize('query, require, check_mode, expected', [
    ({'rc': 0, 'stdout': '2 HCAs found:\n\tmlx5_0\n\tmlx5_1\n', 'stderr': ''}, True, False,
     {'devices': ['mlx5_0', 'mlx5_1'], 'failed': False, 'message': 'RDMA devices: mlx5_0, mlx5_1'}),
    # rdma-core 44 in a container: no /sys/class/infiniband_verbs
    ({'rc': 255, 'stdout': '', 'stderr': 'Failed to get IB devices list: Function not implemented\n'}, False, False,
     {'devices': [], 'failed': False,
      'message': 'no RDMA device found (ibv_devinfo -l, rc 255: Failed to get IB devices list: Function not '
                 'implemented). Expected in a container or on a node without HCAs; set rdma_require_devices: true '
                 'where HCAs must be present.'}),
    ({'rc': 0, 'stdout': '0 HCAs found:\n\n', 'stderr': ''}, True, False,
     {'devices': [], 'failed': True, 'message': 'no RDMA device found (ibv_devinfo -l, rc 0: 0 HCAs found:).'}),
    ({'rc': 127, 'stdout': '', 'stderr': ''}, True, True,
     {'devices': [], 'failed': False, 'message': 'ibv_devinfo (ibverbs-utils) is not installed yet (check mode).'}),
    ({'rc': 127, 'stdout': '', 'stderr': ''}, True, False,
     {'devices': [], 'failed': True, 'message': 'ibv_devinfo (ibverbs-utils) is not installed.'}),
    ({'rc': 0, 'stdout': 'something else\n', 'stderr': ''}, False, False,
     {'devices': [], 'failed': False, 'message': 'ibv_devinfo -l printed no device list (rc 0): something else'}),
], ids=['devices', 'container', 'none-required', 'missing-check-mode', 'missing', 'garbage'])
def test_device_check(query, require, check_mode, expected):
    assert device_check(query, require, check_mode) == expected


# --------------------------------------------------------------------------
# nvidia's DKMS module rebuilt after a DOCA-OFED change (issue 31)

def test_a_doca_change_rebuilds_the_newest_nvidia_build_for_the_running_and_next_kernels():
    from ansible_collections.aicluster.infra.plugins.module_utils.rdma_plan import nvidia_dkms_rebuild
    assert nvidia_dkms_rebuild(['doca-ofed', 'mlnx-ofed-kernel-dkms'], ['580.82.07', '580.95.05', 'original_module'],
                               ['6.1.0-28-amd64', '6.1.0-30-amd64']) == [
        ['dkms', 'build', 'nvidia/580.95.05', '-k', '6.1.0-28-amd64', '--force'],
        ['dkms', 'install', 'nvidia/580.95.05', '-k', '6.1.0-28-amd64', '--force'],
        ['dkms', 'build', 'nvidia/580.95.05', '-k', '6.1.0-30-amd64', '--force'],
        ['dkms', 'install', 'nvidia/580.95.05', '-k', '6.1.0-30-amd64', '--force']]
    # the same kernel twice (running is newest): once
    assert len(nvidia_dkms_rebuild(['mlnx-ofed-kernel-dkms'], ['580.95.05'], ['6.1.0-28-amd64', '6.1.0-28-amd64'])) == 2


def test_no_doca_change_or_no_nvidia_build_rebuilds_nothing():
    from ansible_collections.aicluster.infra.plugins.module_utils.rdma_plan import nvidia_dkms_rebuild
    assert nvidia_dkms_rebuild([], ['580.95.05'], ['6.1.0-28-amd64']) == []
    assert nvidia_dkms_rebuild(['doca-ofed'], [], ['6.1.0-28-amd64']) == []  # greenfield: the driver comes after
