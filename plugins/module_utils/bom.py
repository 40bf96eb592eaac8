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


def bom_problems(bom):
    """One line per problem of ``bom``, each naming the key and what is allowed; [] when it is usable."""
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
    if not _version(version):
        problems.append('aicluster_bom.nvidia_driver.version must be an exact Debian version such as "580.95.05-1" '
                        '(got %r)' % (version,))
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
    return problems
