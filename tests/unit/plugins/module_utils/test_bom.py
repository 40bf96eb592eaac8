# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""bom_problems: the shipped default is clean; every bad key gives one line naming it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os

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
