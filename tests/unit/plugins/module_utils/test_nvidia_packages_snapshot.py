# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvidia_packages against the repository snapshot (lab/mirror/snapshot/*.yml: NVIDIA's real package names,
versions and Provides, each with its source): every name the code can ask for is a real package of that OS's
repository in that branch, never a virtual one, and every pin resolves to exactly one version there."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os
import re

import pytest
import yaml

from ansible_collections.aicluster.infra.plugins.module_utils.nvidia_packages import (
    candidate_names, driver_packages, package_names)
from ansible_collections.aicluster.infra.plugins.module_utils.pinned_packages import resolve

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
SNAPSHOTS = sorted(glob.glob(os.path.join(REPO, 'lab', 'mirror', 'snapshot', 'cuda-*.yml')))


def _load(path):
    with open(path, encoding='utf-8') as handle:
        return yaml.safe_load(handle)


def _cases():
    for path in SNAPSHOTS:
        snapshot = _load(path)
        for branch in sorted(snapshot['branches']):
            yield pytest.param(snapshot, str(branch), id='%s-%s' % (snapshot['repository'], branch))


def _repository(snapshot, branch):
    """(real {name: [versions]}, virtual names) of one branch of one snapshot."""
    data = snapshot['branches'][branch]
    real, virtual = {}, set()
    for spec in data['packages']:
        versions = ['%s-%s' % (up, spec['revision']) for up in spec.get('upstream') or data['upstream']] \
            if 'revision' in spec else []
        real.setdefault(spec['name'], []).extend(versions)
        virtual.update(re.split(r'\s', item, 1)[0] for item in spec.get('provides') or [])
    return real, virtual


def _driver_version(snapshot, branch, upstream):
    """The BOM's nvidia_driver_version for this OS: the driver package's own version of that upstream."""
    driver = next(spec for spec in snapshot['branches'][branch]['packages'] if spec['component'] == 'driver')
    return '%s-%s' % (upstream, driver['revision'])


def _asked(snapshot, branch, version):
    """Every driver_packages list the role can ask for in this branch: both flavours, fabric manager and IMEX on
    and off."""
    for flavour in ('open', 'proprietary'):
        for fabricmanager in (True, False):
            for imex in (True, False):
                yield (flavour, fabricmanager, imex), driver_packages(
                    branch, version, flavour, fabricmanager, imex, snapshot['os_table'])


@pytest.mark.parametrize('snapshot, branch', list(_cases()))
def test_every_name_asked_for_is_a_real_package(snapshot, branch):
    real, virtual = _repository(snapshot, branch)
    version = _driver_version(snapshot, branch, snapshot['branches'][branch]['upstream'][-1])
    asked = set(candidate_names(branch, snapshot['os_table']))
    for _case, packages in _asked(snapshot, branch, version):
        asked.update(entry['name'] for entry in packages)
    # the names other roles and modules read from package_names (nvlsm only where the snapshot records it: no
    # source shows it in the Debian 12 repository)
    recorded = set(spec['component'] for spec in snapshot['branches'][branch]['packages'])
    for flavour in ('open', 'proprietary'):
        names = package_names(branch, flavour, snapshot['os_table'])
        asked.update(names[component] for component in ('nscq', 'nvsdm', 'nvlsm') if component in recorded)
    assert sorted(name for name in asked if name in virtual) == [], 'virtual packages asked for'
    assert sorted(name for name in asked if name not in real) == [], 'names the repository does not have'


@pytest.mark.parametrize('snapshot, branch', list(_cases()))
def test_every_pin_resolves_to_one_repository_version(snapshot, branch):
    real, _virtual = _repository(snapshot, branch)
    for upstream in snapshot['branches'][branch]['upstream']:
        version = _driver_version(snapshot, branch, upstream)
        for case, packages in _asked(snapshot, branch, version):
            for entry in packages:
                offered = real.get(entry['name'], [])
                madison = ''.join(' %s | %s | %s Packages\n' % (entry['name'], item, snapshot['url'])
                                  for item in offered)
                resolved, problems = resolve([dict(entry)], madison)
                assert problems == [], (case, entry)
                assert resolved[0]['version'] in offered and resolved[0]['version'].startswith(upstream + '-'), \
                    (case, entry, resolved)


def test_the_snapshots_cover_two_branches_per_repository():
    assert [os.path.basename(path) for path in SNAPSHOTS] == [
        'cuda-debian12.yml', 'cuda-ubuntu2204.yml', 'cuda-ubuntu2404.yml']
    for path in SNAPSHOTS:
        snapshot = _load(path)
        assert sorted(snapshot['branches']) == ['570', '580']
        for data in snapshot['branches'].values():
            assert all(spec.get('source') for spec in data['packages'])


def test_ubuntu_pins_the_driver_and_its_companions_at_their_own_revisions():
    packages = driver_packages('580', '580.95.05-0ubuntu1', 'open', True, True, 'Ubuntu')
    assert packages == [
        {'name': 'nvidia-driver-580-open', 'version': '580.95.05-0ubuntu1'},
        {'name': 'libnvidia-compute-580', 'version': '580.95.05-0ubuntu1'},
        {'name': 'nvidia-dkms-580-open', 'version': '580.95.05-0ubuntu1'},
        {'name': 'nvidia-fabricmanager', 'upstream': '580.95.05'},
        {'name': 'nvidia-imex', 'upstream': '580.95.05'}]
    madison = (' nvidia-fabricmanager | 580.95.05-1 | https://developer.download.nvidia.com/compute/cuda/repos/'
               'ubuntu2404/x86_64  Packages\n nvidia-fabricmanager | 580.82.07-1 | same\n')
    resolved, problems = resolve([packages[3]], madison)
    assert problems == [] and resolved == [{'name': 'nvidia-fabricmanager', 'version': '580.95.05-1'}]
