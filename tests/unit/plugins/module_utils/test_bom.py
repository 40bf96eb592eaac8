# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""bom_problems: the shipped default is clean; every bad key gives one line naming it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os

import pytest
import yaml

from ansible_collections.aicluster.infra.plugins.module_utils.bom import bom_problems

DEFAULT = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'roles', 'bom', 'defaults', 'main.yml')


def _default():
    with open(DEFAULT, encoding='utf-8') as handle:
        return yaml.safe_load(handle)['aicluster_bom']


def test_the_shipped_default_is_clean():
    assert bom_problems(_default()) == []


def test_each_problem_names_its_key():
    bom = copy.deepcopy(_default())
    bom['repositories']['cuda']['url'] = 'ftp://mirror/cuda'
    bom['nvidia_driver']['version'] = '570.172.08-1'
    bom['nvidia_driver']['kernel_modules'] = 'closed'
    bom['cuda']['toolkit'] = 'cuda'
    bom['rdma']['packages']['doca-ofed'] = '2.9.*'
    bom['rdma']['firmware'] = {'MT_0000000838': 'latest'}
    problems = bom_problems(bom)
    assert problems == [
        "aicluster_bom.repositories.cuda.url must be an http://, https:// or file:// URL (got 'ftp://mirror/cuda')",
        "aicluster_bom.rdma.packages.doca-ofed must be an exact Debian version (got '2.9.*')",
        'aicluster_bom.rdma.firmware: MT_0000000838: latest must be a PSID (MT_0000000838) and a firmware version (28.43.2026)',
        'aicluster_bom.nvidia_driver.version 570.172.08-1 is not of branch 580',
        "aicluster_bom.nvidia_driver.kernel_modules must be one of open, proprietary (got 'closed')",
        'aicluster_bom.cuda.toolkit must not be cuda: that metapackage pulls a driver in',
    ]


@pytest.mark.parametrize('version, ok', [('580.95.05-1', True), ('580.95.05-0ubuntu1', True), ('580.95.05', False),
                                         ('580.95.05-*', False)])
def test_the_driver_version_is_the_driver_packages_with_its_revision(version, ok):
    bom = copy.deepcopy(_default())
    bom['nvidia_driver']['version'] = version
    problems = [line for line in bom_problems(bom) if 'nvidia_driver.version' in line]
    assert problems == ([] if ok else [
        'aicluster_bom.nvidia_driver.version must be the driver package\'s exact Debian version with its revision, '
        'such as "580.95.05-1" (Ubuntu: "580.95.05-0ubuntu1") (got %r)' % version])


def test_dmabuf_needs_open_modules_and_cuda_version_of_its_toolkit():
    bom = copy.deepcopy(_default())
    bom['nvidia_driver'].update(gpudirect='dmabuf', kernel_modules='proprietary')
    bom['cuda']['version'] = '12.8.1-1'
    assert bom_problems(bom) == [
        'aicluster_bom.nvidia_driver.gpudirect dmabuf needs kernel_modules open (DMA-BUF is supported by the open '
        'kernel modules only)',
        'aicluster_bom.cuda.version 12.8.1-1 is not of toolkit 12-9']


def test_missing_sections():
    assert bom_problems(None) == [
        'aicluster_bom must be a mapping (the bill of materials; roles/bom/defaults/main.yml is the default)']
    problems = bom_problems({'name': 'x'})
    assert 'aicluster_bom.repositories must be a mapping (got nothing)' in problems
    assert 'aicluster_bom.nvidia_driver.branch must be a driver branch such as "580" (got None)' in problems


def test_stack2_sections_are_checked_when_present_and_required_by_their_roles():
    bom = copy.deepcopy(_default())
    assert bom_problems(bom, ['dcgm', 'container_toolkit']) == []
    # the default has no site repository for enroot and pyxis: fine until a role needs it
    assert bom_problems(bom, ['enroot']) == [
        "aicluster_bom.repositories.hpc.url must be an http://, https:// or file:// URL (got '')"
        ": the site repository holding enroot's release .debs and its pyxis build (docs/containers.md)",
        "aicluster_bom.repositories.hpc.key_url must be an http://, https:// or file:// URL (got '')"
        ": the site repository holding enroot's release .debs and its pyxis build (docs/containers.md)"]
    bom['dcgm'].update(version='4.4.*', cuda_major=13)
    bom['pyxis']['package'] = 'Pyxis Plugin'
    assert bom_problems(bom) == [
        "aicluster_bom.dcgm.version must be an exact Debian version (got '4.4.*')",
        'aicluster_bom.dcgm.cuda_major must be the CUDA major of the driver, such as "13" (the '
        'datacenter-gpu-manager-4-cuda<MAJOR> package) (got 13)',
        "aicluster_bom.pyxis.package must be the Debian package name of the site's pyxis build (got 'Pyxis Plugin')"]


def test_a_stack1_bom_stays_valid_until_a_stack2_role_needs_its_sections():
    bom = copy.deepcopy(_default())
    for section in ('dcgm', 'container_toolkit', 'enroot', 'pyxis'):
        del bom[section]
    del bom['repositories']['container_toolkit']
    assert bom_problems(bom) == []
    assert bom_problems(bom, ['dcgm', 'container_toolkit', 'gpu']) == [
        'bom_problems: require must name sections among dcgm, container_toolkit, enroot, pyxis (got gpu)',
        'aicluster_bom.repositories.container_toolkit must be a mapping with url, suite and key_url',
        'aicluster_bom.dcgm is missing: the dcgm role installs from it (roles/bom/defaults/main.yml has the default)',
        'aicluster_bom.container_toolkit is missing: the container_toolkit role installs from it '
        '(roles/bom/defaults/main.yml has the default)']
