# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for nvidia_packages: the driver's package names per OS and the nvidia_driver and cuda variable checks."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.aicluster.infra.plugins.module_utils.nvidia_packages import (
    candidate_names, cuda_problems, driver_packages, driver_problems, fabricmanager_wanted, forbidden_reason,
    package_names, toolkit_release, upstream_version)

V = '580.95.05-1'


def settings(**changes):
    """The default BOM's nvidia_driver settings (roles/bom/defaults/main.yml), with changes."""
    base = {
        'branch': '580', 'version': V, 'kernel_modules': 'open', 'fabricmanager': True, 'imex': False,
        'gpudirect': 'peermem', 'os_family': 'Debian', 'package_names': {}, 'extra_packages': [],
        'repository': {'url': 'https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/',
                       'suite': '/', 'components': [],
                       'key_url': 'https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/3bf863cc.pub'},
        'module_version_file': '/sys/module/nvidia/version', 'rdma_stack': '',
    }
    base.update(changes)
    return base


@pytest.mark.parametrize('version, upstream', [
    ('580.95.05-1', '580.95.05'),
    ('1:580.95.05-1', '580.95.05'),
    ('3:580.95.05-1.el9', '580.95.05'),
    ('580.95.05-0ubuntu1', '580.95.05'),
    ('24.10.OFED.24.10.1.1.4.1-1', '24.10.OFED.24.10.1.1.4.1'),
    ('580.95.05', '580.95.05'),
    ('', ''),
    (None, ''),
], ids=['debian', 'epoch', 'el9', 'ubuntu', 'doca', 'no-revision', 'empty', 'none'])
def test_upstream_version(version, upstream):
    assert upstream_version(version) == upstream


def test_debian_driver_packages_at_the_driver_version_companions_at_its_upstream():
    packages = driver_packages('580', V, 'open', fabricmanager=True, imex=True)
    assert packages == [{'name': 'nvidia-driver', 'version': V}, {'name': 'libnvidia-ml1', 'version': V},
                        {'name': 'nvidia-kernel-open-dkms', 'version': V},
                        {'name': 'nvidia-fabricmanager', 'upstream': '580.95.05'},
                        {'name': 'nvidia-imex', 'upstream': '580.95.05'}]


@pytest.mark.parametrize('branch, fabricmanager, imex, nscq, nvsdm', [
    ('580', 'nvidia-fabricmanager', 'nvidia-imex', 'libnvidia-nscq', 'libnvsdm'),
    ('590', 'nvidia-fabricmanager', 'nvidia-imex', 'libnvidia-nscq', 'libnvsdm'),
    ('570', 'nvidia-fabricmanager-570', 'nvidia-imex-570', 'libnvidia-nscq-570', 'libnvsdm-570'),
    ('550', 'nvidia-fabricmanager-550', 'nvidia-imex-550', 'libnvidia-nscq-550', 'libnvsdm-550'),
])
def test_companions_lose_the_branch_from_580(branch, fabricmanager, imex, nscq, nvsdm):
    for os_family in ('Debian', 'Ubuntu'):
        names = package_names(branch, 'open', os_family)
        assert (names['fabricmanager'], names['imex'], names['nscq'], names['nvsdm'], names['nvlsm']) == (
            fabricmanager, imex, nscq, nvsdm, 'nvlsm')


def test_proprietary_without_fabric_manager_with_extra_packages_listed_once():
    packages = driver_packages('580', V, 'proprietary', fabricmanager=False, imex=False,
                               extra=['nvidia-persistenced', 'libnvidia-ml1'])
    names = [entry['name'] for entry in packages]
    assert names == ['nvidia-driver', 'libnvidia-ml1', 'nvidia-kernel-dkms', 'nvidia-persistenced']


@pytest.mark.parametrize('os_family, flavour, names', [
    ('Ubuntu', 'open', ['nvidia-driver-580-open', 'libnvidia-compute-580', 'nvidia-dkms-580-open',
                        'nvidia-fabricmanager']),
    ('Ubuntu', 'proprietary', ['nvidia-driver-580', 'libnvidia-compute-580', 'nvidia-dkms-580',
                               'nvidia-fabricmanager']),
    ('Rocky', 'open', ['nvidia-driver', 'libnvidia-ml', 'kmod-nvidia-open-dkms', 'nvidia-fabricmanager']),
    ('RedHat', 'proprietary', ['nvidia-driver', 'libnvidia-ml', 'kmod-nvidia-latest-dkms', 'nvidia-fabricmanager']),
], ids=['ubuntu-open', 'ubuntu-proprietary', 'rocky-open', 'redhat-proprietary'])
def test_other_os_names(os_family, flavour, names):
    assert [entry['name'] for entry in driver_packages('580', V, flavour, True, False, os_family)] == names
    # issue #585: nvidia-fabric-manager from 470 to 575
    assert package_names('570', flavour, 'RedHat')['fabricmanager'] == 'nvidia-fabric-manager'


def test_overrides_replace_a_component_and_fill_in_the_branch():
    names = package_names('580', 'open', 'Debian', {'fabricmanager': 'site-fm-{branch}', 'libraries': 'libnvidia-ml1'})
    assert names['fabricmanager'] == 'site-fm-580'
    assert names['libraries'] == ['libnvidia-ml1']
    assert names['kernel_modules'] == 'nvidia-kernel-open-dkms'


def test_candidates_name_both_flavours_fabric_manager_and_imex_whatever_is_asked():
    assert candidate_names('580', 'Debian', extra=['nvidia-persistenced']) == [
        'nvidia-driver', 'libnvidia-ml1', 'nvidia-kernel-open-dkms', 'nvidia-kernel-dkms', 'nvidia-fabricmanager',
        'nvidia-imex', 'nvidia-persistenced']
    assert candidate_names('580', 'Ubuntu')[:2] == ['nvidia-driver-580-open', 'nvidia-driver-580']


@pytest.mark.parametrize('setting, nvswitch, wanted', [
    (True, False, True), (False, True, False), ('auto', True, True), ('auto', False, False),
    ('false', True, False), ('True', False, True),   # -e nvidia_driver_fabricmanager=false passes a string
])
def test_fabricmanager_wanted(setting, nvswitch, wanted):
    assert fabricmanager_wanted(setting, nvswitch) is wanted


@pytest.mark.parametrize('name, forbidden', [
    ('cuda', True), ('cuda-12-9', True), ('cuda-runtime-12-9', True), ('cuda-runtime', True), ('cuda-drivers', True),
    ('cuda-drivers-580', True), ('cuda-drivers-fabricmanager-580', True), ('cuda-toolkit-12-9', False),
    ('cuda-nvcc-12-9', False), ('nvidia-driver', False),
])
def test_forbidden_names(name, forbidden):
    assert bool(forbidden_reason(name)) is forbidden


def test_the_default_bom_is_valid():
    assert driver_problems(settings()) == []
    assert driver_problems(settings(fabricmanager='auto', gpudirect='dmabuf', imex=True)) == []
    assert driver_problems(settings(fabricmanager='false')) == []
    mirror = dict(settings()['repository'], url='http://ctl01/mirror/cuda/', suite='./',
                  key_url='http://ctl01/mirror/aicluster-lab.asc')
    assert driver_problems(settings(repository=mirror)) == []


@pytest.mark.parametrize('changes, expected', [
    ({'version': '570.195.03-1'}, 'nvidia_driver_version 570.195.03-1 is not of nvidia_driver_branch 580: its '
                                  'upstream version must start with "580."'),
    ({'version': '580.95.05'}, 'nvidia_driver_version must be an exact package version with its revision'),
    ({'version': '580.*'}, 'nvidia_driver_version must be an exact package version'),
    ({'branch': 'R580'}, "nvidia_driver_branch must be a driver branch, digits such as \"580\" (got 'R580')"),
    ({'kernel_modules': 'closed'}, "nvidia_driver_kernel_modules must be one of open, proprietary (got 'closed')"),
    ({'fabricmanager': 'maybe'}, "nvidia_driver_fabricmanager must be one of auto, true, false (got 'maybe')"),
    ({'fabricmanager': 1}, 'nvidia_driver_fabricmanager must be one of auto, true, false (got 1)'),
    ({'imex': 'no'}, "nvidia_driver_imex must be true or false (got 'no')"),
    ({'gpudirect': 'rdma'}, "nvidia_driver_gpudirect must be one of peermem, dmabuf, none (got 'rdma')"),
    ({'gpudirect': 'dmabuf', 'kernel_modules': 'proprietary'}, 'nvidia_driver_gpudirect dmabuf needs '
                                                               'nvidia_driver_kernel_modules open'),
    ({'rdma_stack': 'inbox'}, 'nvidia_driver_gpudirect peermem needs the peer-memory interface'),
    ({'extra_packages': ['cuda']}, 'cuda is never installed: the cuda metapackage pulls cuda-drivers'),
    ({'extra_packages': ['cuda-drivers-580']}, 'cuda-drivers-580 is never installed'),
    ({'extra_packages': 'nvidia-persistenced'}, 'nvidia_driver_extra_packages must be a list of package names'),
    ({'package_names': {'driver': 'cuda-12-9'}}, 'cuda-12-9 is never installed'),
    ({'package_names': {'drivers': 'x'}}, 'nvidia_driver_package_names: drivers not among driver, fabricmanager'),
    ({'package_names': {'libraries': 'libnvidia-ml1'}}, 'nvidia_driver_package_names.libraries must be a list'),
    ({'os_family': 'Suse'}, "nvidia_driver_os_family 'Suse': no package names known"),
    ({'repository': {'url': 'ftp://x/', 'suite': '/', 'key_url': 'https://x/k.pub'}},
     "nvidia_driver_repo_url must be an http://, https:// or file:// URL (got 'ftp://x/')"),
    ({'repository': {'url': 'https://x/', 'suite': '', 'key_url': 'https://x/k.pub'}}, 'nvidia_driver_repo_suite must'),
    ({'repository': {'url': 'https://x/', 'suite': '/', 'components': ['main'], 'key_url': 'https://x/k.pub'}},
     "nvidia_driver_repo_components must be empty for the flat suite '/'"),
    ({'repository': {'url': 'https://x/', 'suite': 'bookworm', 'key_url': 'https://x/k.pub'}},
     "nvidia_driver_repo_components must name the components of suite 'bookworm'"),
    ({'module_version_file': 'sys/module/nvidia/version'}, 'nvidia_driver_module_version_file must be an absolute path'),
], ids=['other-branch', 'no-revision', 'wildcard', 'branch', 'flavour', 'fm-string', 'fm-int', 'imex', 'gpudirect',
        'dmabuf-proprietary', 'peermem-inbox', 'cuda-metapackage', 'cuda-drivers', 'extra-not-list', 'override-cuda',
        'override-unknown', 'override-libraries', 'os', 'url', 'suite', 'flat-components', 'suite-components',
        'module-file'])
def test_each_bad_variable_is_one_line_naming_it(changes, expected):
    problems = driver_problems(settings(**changes))
    assert len(problems) == 1, problems
    assert expected in problems[0]


def test_unknown_os_is_fine_when_every_component_is_named():
    names = {'driver': 'nvidia-driver', 'libraries': ['libnvidia-ml1'], 'kernel_modules_open': 'a-dkms',
             'kernel_modules_proprietary': 'b-dkms', 'fabricmanager': 'fm', 'imex': 'imex'}
    assert driver_problems(settings(os_family='Suse', package_names=names)) == []


@pytest.mark.parametrize('toolkit, release', [('12-9', '12.9'), ('13-0', '13.0'), ('12.9', ''), ('', '')])
def test_toolkit_release(toolkit, release):
    assert toolkit_release(toolkit) == release


def cuda(**changes):
    base = {'toolkit': '12-9', 'version': '12.9.1-1', 'home': '/usr/local/cuda-12.9',
            'packages': [{'name': 'cuda-toolkit-12-9', 'version': '12.9.1-1'}]}
    base.update(changes)
    return base


def test_the_default_cuda_variables_are_valid():
    assert cuda_problems(cuda()) == []


@pytest.mark.parametrize('changes, expected', [
    ({'toolkit': '12.9'}, "cuda_toolkit must be MAJOR-MINOR"),
    ({'version': '12.8.1-1'}, 'cuda_version 12.8.1-1 is not of cuda_toolkit 12-9'),
    ({'version': '12.9.1'}, 'cuda_version must be an exact package version with its revision'),
    ({'home': 'usr/local/cuda'}, 'cuda_home must be'),
    ({'packages': [{'name': 'cuda', 'version': '12.9.1-1'}]},
     'cuda_packages[0]: cuda is never installed by the cuda role: the cuda metapackage pulls cuda-drivers'),
    ({'packages': [{'name': 'cuda-12-9', 'version': '12.9.1-1'}]}, 'cuda_packages[0]: cuda-12-9 is never installed'),
    ({'packages': [{'name': 'cuda-drivers', 'version': '580.95.05-1'}]}, 'cuda_packages[0]: cuda-drivers is never'),
    ({'packages': [{'name': 'nvidia-driver', 'version': '580.95.05-1'}]}, "the driver's packages belong to nvidia_driver"),
    ({'packages': [{'name': 'cuda-toolkit-12-9', 'version': '12.9.*'}]}, 'needs an exact package version'),
    ({'packages': []}, 'cuda_packages must list the packages'),
], ids=['toolkit', 'other-toolkit', 'no-revision', 'home', 'cuda', 'cuda-x-y', 'cuda-drivers', 'driver', 'wildcard',
        'empty'])
def test_each_bad_cuda_variable_is_one_line(changes, expected):
    problems = cuda_problems(cuda(**changes))
    assert len(problems) == 1, problems
    assert expected in problems[0]
