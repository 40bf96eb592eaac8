# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The bill of materials (``aicluster_bom``): what is wrong with one, one line per problem naming its key.

The roles of the rdma and gpu stages take every version, package, repository and key from this one dict
(roles/bom/defaults/main.yml ships the tested default; docs/stack.md). Pure functions.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.pinned_packages import NAME, VERSION

URL = re.compile(r'^(https?|file)://\S+$')
BRANCH = re.compile(r'^[0-9]{3}$')
TOOLKIT = re.compile(r'^([0-9]{2})-([0-9]{1,2})$')
PSID = re.compile(r'^[A-Z]{2}_[0-9]{10}$')
FIRMWARE = re.compile(r'^[0-9]+\.[0-9]+\.[0-9]+$')
CHOICES = {
    ('nvidia_driver', 'kernel_modules'): ('open', 'proprietary'),
    ('nvidia_driver', 'gpudirect'): ('peermem', 'dmabuf', 'none'),
}
# The metapackages that drag a driver (or every CUDA version) in: never pinned in a BOM.
FORBIDDEN = ('cuda', 'cuda-drivers', 'cuda-runtime')


def _section(bom, key, problems):
    value = bom.get(key)
    if not isinstance(value, dict):
        problems.append('aicluster_bom.%s must be a mapping (got %s)' % (key, type(value).__name__ if value is not None else 'nothing'))
        return {}
    return value


def _version(value):
    return isinstance(value, str) and bool(VERSION.match(value)) and '*' not in value


# Software stack II's sections (docs/monitoring.md, docs/containers.md): optional, so that a BOM written for the
# rdma and gpu stages stays valid; checked when present, and required by the roles that read them (``require``).
STACK2 = ('dcgm', 'container_toolkit', 'enroot', 'pyxis')
# The repository each stack II section installs from (dcgm: the CUDA repository, always required).
STACK2_REPOSITORY = {'container_toolkit': 'container_toolkit', 'enroot': 'hpc', 'pyxis': 'hpc'}
CUDA_MAJOR = re.compile(r'^[0-9]{2}$')


def _repository_problems(repositories, repo, required):
    entry = repositories.get(repo)
    if entry is None and not required:
        return []
    if not isinstance(entry, dict):
        return ['aicluster_bom.repositories.%s must be a mapping with url, suite and key_url' % repo]
    if repo == 'hpc' and not entry.get('url') and not required:
        return []  # the default: no public repository; the enroot and pyxis roles require one
    problems = []
    for key in ('url', 'key_url'):
        if not isinstance(entry.get(key), str) or not URL.match(entry.get(key)):
            hint = (': the site repository holding enroot\'s release .debs and its pyxis build (docs/containers.md)'
                    if repo == 'hpc' else '')
            problems.append('aicluster_bom.repositories.%s.%s must be an http://, https:// or file:// URL (got %r)%s'
                            % (repo, key, entry.get(key), hint))
    if not isinstance(entry.get('suite'), str) or not entry.get('suite'):
        problems.append('aicluster_bom.repositories.%s.suite must be the apt suite ("/" or "./" for a flat '
                        'repository) (got %r)' % (repo, entry.get('suite')))
    return problems


def _stack2_problems(bom, require):
    problems = []
    repositories = bom.get('repositories') if isinstance(bom.get('repositories'), dict) else {}
    for repo in ('container_toolkit', 'hpc'):
        needed = any(STACK2_REPOSITORY.get(section) == repo for section in require)
        problems += _repository_problems(repositories, repo, needed)
    for section in STACK2:
        value = bom.get(section)
        if value is None:
            if section in require:
                problems.append('aicluster_bom.%s is missing: the %s role installs from it (roles/bom/defaults/main.yml '
                                'has the default)' % (section, section))
            continue
        if not isinstance(value, dict):
            problems.append('aicluster_bom.%s must be a mapping (got %s)' % (section, type(value).__name__))
            continue
        versions = {'dcgm': ('version', 'exporter_version'), 'container_toolkit': ('version',),
                    'enroot': ('version',), 'pyxis': ('version',)}[section]
        for key in versions:
            if not _version(value.get(key)):
                problems.append('aicluster_bom.%s.%s must be an exact Debian version (got %r)' % (section, key, value.get(key)))
        if section == 'dcgm' and not (isinstance(value.get('cuda_major'), str) and CUDA_MAJOR.match(value['cuda_major'])):
            problems.append('aicluster_bom.dcgm.cuda_major must be the CUDA major of the driver, such as "13" (the '
                            'datacenter-gpu-manager-4-cuda<MAJOR> package) (got %r)' % (value.get('cuda_major'),))
        if section == 'enroot' and not isinstance(value.get('caps', False), bool):
            problems.append('aicluster_bom.enroot.caps must be true or false (got %r)' % (value.get('caps'),))
        if section == 'pyxis' and not NAME.match(str(value.get('package', ''))):
            problems.append('aicluster_bom.pyxis.package must be the Debian package name of the site\'s pyxis build '
                            '(got %r)' % (value.get('package'),))
    return problems


def bom_problems(bom, require=()):
    """One line per problem of ``bom``, each naming the key and what is allowed; [] when it is usable.

    ``require``: the stack II sections (STACK2) the caller installs from; they must be present (others are checked
    only when present).
    """
    if not isinstance(bom, dict):
        return ['aicluster_bom must be a mapping (the bill of materials; roles/bom/defaults/main.yml is the default)']
    problems = []
    if not isinstance(bom.get('name'), str) or not bom.get('name'):
        problems.append('aicluster_bom.name must name this bill of materials (e.g. "2026.11")')
    repositories = _section(bom, 'repositories', problems)
    for repo in ('cuda', 'doca'):
        entry = repositories.get(repo)
        if not isinstance(entry, dict):
            problems.append('aicluster_bom.repositories.%s must be a mapping with url, suite and key_url' % repo)
            continue
        for key in ('url', 'key_url'):
            if not isinstance(entry.get(key), str) or not URL.match(entry.get(key)):
                problems.append('aicluster_bom.repositories.%s.%s must be an http://, https:// or file:// URL (got %r)'
                                % (repo, key, entry.get(key)))
        if not isinstance(entry.get('suite'), str) or not entry.get('suite'):
            problems.append('aicluster_bom.repositories.%s.suite must be the apt suite ("/" or "./" for a flat '
                            'repository) (got %r)' % (repo, entry.get('suite')))
    rdma = _section(bom, 'rdma', problems)
    packages = rdma.get('packages')
    if not isinstance(packages, dict) or not packages:
        problems.append('aicluster_bom.rdma.packages must map each DOCA-OFED package name to its exact version')
    else:
        for name, version in sorted(packages.items()):
            if not NAME.match(str(name)):
                problems.append('aicluster_bom.rdma.packages: %r is not a Debian package name' % (name,))
            elif not _version(version):
                problems.append('aicluster_bom.rdma.packages.%s must be an exact Debian version (got %r)' % (name, version))
    firmware = rdma.get('firmware', {})
    if not isinstance(firmware, dict):
        problems.append('aicluster_bom.rdma.firmware must map PSIDs to firmware versions (got %r)' % (firmware,))
    else:
        for psid, version in sorted(firmware.items()):
            if not PSID.match(str(psid)) or not FIRMWARE.match(str(version)):
                problems.append('aicluster_bom.rdma.firmware: %s: %s must be a PSID (MT_0000000838) and a firmware '
                                'version (28.43.2026)' % (psid, version))
    driver = _section(bom, 'nvidia_driver', problems)
    branch, version = driver.get('branch'), driver.get('version')
    if not isinstance(branch, str) or not BRANCH.match(branch):
        problems.append('aicluster_bom.nvidia_driver.branch must be a driver branch such as "580" (got %r)' % (branch,))
    # the driver package's own exact version, revision included (Debian 580.95.05-1, Ubuntu 580.95.05-0ubuntu1);
    # the fabric manager and IMEX are pinned to its upstream part at their own revision (docs/stack.md)
    if not _version(version) or '-' not in str(version):
        problems.append('aicluster_bom.nvidia_driver.version must be the driver package\'s exact Debian version with '
                        'its revision, such as "580.95.05-1" (Ubuntu: "580.95.05-0ubuntu1") (got %r)' % (version,))
    elif isinstance(branch, str) and not str(version).startswith(branch + '.'):
        problems.append('aicluster_bom.nvidia_driver.version %s is not of branch %s' % (version, branch))
    for (section, key), allowed in sorted(CHOICES.items()):
        value = bom.get(section, {}).get(key) if isinstance(bom.get(section), dict) else None
        if value not in allowed:
            problems.append('aicluster_bom.%s.%s must be one of %s (got %r)' % (section, key, ', '.join(allowed), value))
    for key in ('fabricmanager', 'imex'):
        if not isinstance(driver.get(key), bool):
            problems.append('aicluster_bom.nvidia_driver.%s must be true or false (got %r)' % (key, driver.get(key)))
    if driver.get('gpudirect') == 'dmabuf' and driver.get('kernel_modules') == 'proprietary':
        problems.append('aicluster_bom.nvidia_driver.gpudirect dmabuf needs kernel_modules open (DMA-BUF is supported '
                        'by the open kernel modules only)')
    cuda = _section(bom, 'cuda', problems)
    toolkit = cuda.get('toolkit')
    match = TOOLKIT.match(toolkit) if isinstance(toolkit, str) else None
    if toolkit in FORBIDDEN:
        problems.append('aicluster_bom.cuda.toolkit must not be %s: that metapackage pulls a driver in' % toolkit)
    elif not match:
        problems.append('aicluster_bom.cuda.toolkit must be MAJOR-MINOR such as "12-9" (got %r)' % (toolkit,))
    if not _version(cuda.get('version')):
        problems.append('aicluster_bom.cuda.version must be an exact Debian version such as "12.9.1-1" (got %r)'
                        % (cuda.get('version'),))
    elif match and not str(cuda['version']).startswith('%s.%s.' % match.groups()):
        problems.append('aicluster_bom.cuda.version %s is not of toolkit %s' % (cuda['version'], toolkit))
    unknown = [section for section in require if section not in STACK2]
    if unknown:
        problems.append('bom_problems: require must name sections among %s (got %s)' % (', '.join(STACK2), ', '.join(unknown)))
    return problems + _stack2_problems(bom, [section for section in require if section in STACK2])
