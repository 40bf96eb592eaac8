# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gpu stage's packages and variables: which packages the NVIDIA driver is, per OS, and what is wrong with the
``nvidia_driver_*`` and ``cuda_*`` variables, one line per problem naming the variable.

Pure functions, called by the roles nvidia_driver and cuda through the internal filters of plugins/filter/nvidia_stack.py.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.pinned_packages import upstream_of

# ``1:580.95.05-1`` -> ``580.95.05``; '' for '' (re-exported: nvidia_driver and the tests read it from here)
upstream_version = upstream_of

# The package names of one driver branch, by OS: lab/mirror/snapshot/*.yml holds the real repositories' names,
# versions and Provides with their sources, and tests/unit/plugins/module_utils/test_nvidia_packages_snapshot.py
# checks every name asked for here against them. {branch} is the branch ("580"); {open} is "-open" for the open
# kernel modules and "" for the proprietary ones, where the OS names the driver after its flavour.
# A (from_580, below_580) pair: from branch 580 NVIDIA's CUDA repositories name the fabric manager, IMEX, NSCQ and
# NVSDM packages without the branch; nvidia-fabricmanager-580 and libnvsdm-580 are then only names the new packages
# provide, and `apt-get install nvidia-fabricmanager-580=580.x-1` fails "Version ... was not found"
# (NVIDIA/gpu-driver-container pull request #451, issue #585, ubuntu22.04/install.sh at 091f60d). Below 580 the
# names carry -<branch> (IMEX from 550, NVSDM from 570). nvlsm (NVLink5 systems, B200) has one name and a version of
# its own (gpu-driver-container installs it unpinned; gpu-operator issue #2781).
# Debian: NVIDIA's CUDA repository for Debian 12 (the names the lab's mirror serves, proven in molecule/stack).
# Ubuntu: NVIDIA's CUDA repositories for 22.04 and 24.04, branch-named driver packages through 580 (the driver
# installation guide's "Recent Updates": from 590 they drop the branch; name those in nvidia_driver_package_names).
# RedHat: never run here (README.md); the fabric manager was nvidia-fabric-manager from 470 to 575 (issue #585).
_COMPANIONS = {
    'fabricmanager': ('nvidia-fabricmanager', 'nvidia-fabricmanager-{branch}'),
    'imex': ('nvidia-imex', 'nvidia-imex-{branch}'),
    'nscq': ('libnvidia-nscq', 'libnvidia-nscq-{branch}'),
    'nvsdm': ('libnvsdm', 'libnvsdm-{branch}'),
    'nvlsm': ('nvlsm', 'nvlsm'),
}
PACKAGE_NAMES = {
    'Debian': dict(_COMPANIONS, **{
        'driver': ('nvidia-driver', 'nvidia-driver'),
        'libraries': (['libnvidia-ml1'], ['libnvidia-ml1']),
        'kernel_modules_open': ('nvidia-kernel-open-dkms', 'nvidia-kernel-open-dkms'),
        'kernel_modules_proprietary': ('nvidia-kernel-dkms', 'nvidia-kernel-dkms'),
    }),
    'Ubuntu': dict(_COMPANIONS, **{
        'driver': ('nvidia-driver-{branch}{open}', 'nvidia-driver-{branch}{open}'),
        'libraries': (['libnvidia-compute-{branch}'], ['libnvidia-compute-{branch}']),
        'kernel_modules_open': ('nvidia-dkms-{branch}-open', 'nvidia-dkms-{branch}-open'),
        'kernel_modules_proprietary': ('nvidia-dkms-{branch}', 'nvidia-dkms-{branch}'),
    }),
    'RedHat': dict(_COMPANIONS, **{
        'driver': ('nvidia-driver', 'nvidia-driver'),
        'libraries': (['libnvidia-ml'], ['libnvidia-ml']),
        'kernel_modules_open': ('kmod-nvidia-open-dkms', 'kmod-nvidia-open-dkms'),
        'kernel_modules_proprietary': ('kmod-nvidia-latest-dkms', 'kmod-nvidia-latest-dkms'),
        'fabricmanager': ('nvidia-fabricmanager', 'nvidia-fabric-manager'),
        'imex': ('nvidia-imex', 'nvidia-imex'),
    }),
}
# The first branch whose companions have no branch in their names.
UNVERSIONED_FROM = 580
COMPONENTS = tuple(sorted(PACKAGE_NAMES['Debian']))
# The driver's own packages, built from one source with one revision: pinned at exactly nvidia_driver_version.
# Every other package (fabric manager, IMEX, NSCQ, NVSDM, extra packages) is packaged apart and may carry another
# revision (Ubuntu: nvidia-driver-580-open 580.95.05-0ubuntu1 beside nvidia-fabricmanager 580.95.05-1): pinned by
# the driver's upstream version, resolved to the one repository version with it (pinned_packages' ``upstream``).
EXACT_COMPONENTS = ('driver', 'libraries', 'kernel_modules')
# The components the nvidia_driver role installs (nscq, nvsdm and nvlsm are named for other roles and modules).
INSTALLED_COMPONENTS = ('driver', 'fabricmanager', 'imex', 'kernel_modules_open', 'kernel_modules_proprietary',
                        'libraries')
# Names (ansible_facts distribution or os_family) -> the table above.
OS_TABLES = {'Debian': 'Debian', 'Ubuntu': 'Ubuntu', 'RedHat': 'RedHat', 'Rocky': 'RedHat', 'AlmaLinux': 'RedHat',
             'CentOS': 'RedHat', 'OracleLinux': 'RedHat'}
PROVEN = ('Debian',)

KERNEL_MODULES = ('open', 'proprietary')
# true/false as extra vars (-e nvidia_driver_fabricmanager=false) pass them
BOOLEAN_STRINGS = {'true': True, 'yes': True, 'false': False, 'no': False}
GPUDIRECT = ('peermem', 'dmabuf', 'none')

NAME = re.compile(r'^[a-z0-9][a-z0-9+._-]+$')
# An exact package version: optional epoch, an upstream part starting with a digit, a revision; no wildcard.
VERSION = re.compile(r'^(?:[0-9]+:)?[0-9][A-Za-z0-9.+~:-]*$')
BRANCH = re.compile(r'^[0-9]{3,4}$')
TOOLKIT = re.compile(r'^([0-9]{1,2})-([0-9]{1,2})$')
URL = re.compile(r'^(https?|file)://\S+$')
# Packages that pull a driver in (or every CUDA version): never installed by the gpu stage. cuda -> cuda-X-Y ->
# cuda-runtime-X-Y -> cuda-drivers -> cuda-drivers-<branch>, each at the repository's newest, whatever is pinned.
FORBIDDEN = (
    (re.compile(r'^cuda$'), 'the cuda metapackage pulls cuda-drivers, a driver outside the pins'),
    (re.compile(r'^cuda-[0-9]+-[0-9]+$'), 'it pulls cuda-runtime and cuda-drivers, a driver outside the pins'),
    (re.compile(r'^cuda-runtime(-[0-9]+-[0-9]+)?$'), 'it pulls cuda-drivers, a driver outside the pins'),
    (re.compile(r'^cuda-drivers(-.*)?$'), 'it installs a driver outside the pins (nvidia_driver installs the driver)'),
)


def os_table(os_family):
    """The PACKAGE_NAMES key for a distribution or OS family name, or None."""
    return OS_TABLES.get(str(os_family or ''))


def fabricmanager_setting(value):
    """``auto``, True or False from the variable (a string from ``-e`` too), or None when it is none of them."""
    if isinstance(value, bool) or value == 'auto':
        return value
    return BOOLEAN_STRINGS.get(str(value).lower()) if isinstance(value, str) else None


def fabricmanager_wanted(setting, nvswitch_present):
    """Whether the fabric manager's package belongs on a node: true/false as set, auto where NVSwitches are."""
    setting = fabricmanager_setting(setting)
    if setting == 'auto':
        return bool(nvswitch_present)
    return setting is True


def _branch_number(branch):
    try:
        return int(str(branch))
    except ValueError:
        return UNVERSIONED_FROM


def package_names(branch, kernel_modules='open', os_family='Debian', overrides=None):
    """{component: name or [names]} for one branch and flavour: the OS's table for the branch (the unversioned
    companion names from 580 on, ``-<branch>`` ones below), then ``overrides`` by component."""
    current = _branch_number(branch) >= UNVERSIONED_FROM
    table = dict((component, pair[0] if current else pair[1])
                 for component, pair in PACKAGE_NAMES[os_table(os_family) or 'Debian'].items())
    table.update(overrides or {})
    fields = {'branch': branch, 'open': '-open' if kernel_modules == 'open' else ''}
    names = {}
    for component, value in table.items():
        if component == 'libraries' and not isinstance(value, list):
            value = [value] if value else []
        if isinstance(value, list):
            names[component] = [item.format(**fields) for item in value]
        else:
            names[component] = str(value).format(**fields)
    names['kernel_modules'] = names['kernel_modules_%s' % kernel_modules]
    return names


def driver_packages(branch, version, kernel_modules='open', fabricmanager=True, imex=False, os_family='Debian',
                    overrides=None, extra=None):
    """The driver's packages for pinned_packages: the driver, its libraries and kernel modules ``{name, version}``
    at exactly ``version``; the fabric manager, IMEX and ``extra`` names ``{name, upstream}`` at the driver's
    upstream version (their own revision, resolved from the repository: EXACT_COMPONENTS).

    ``fabricmanager`` and ``imex`` are booleans here (``auto`` is resolved by fabricmanager_wanted). Order: driver,
    its libraries, the kernel modules, fabric manager, IMEX, then ``extra`` names; no name twice.
    """
    names = package_names(branch, kernel_modules, os_family, overrides)
    exact = [names['driver']] + list(names['libraries']) + [names['kernel_modules']]
    companions = ([names['fabricmanager']] if fabricmanager else []) + ([names['imex']] if imex else [])
    wanted = [{'name': name, 'version': version} for name in exact]
    wanted += [{'name': name, 'upstream': upstream_version(version)} for name in companions + list(extra or [])]
    result, seen = [], set()
    for entry in wanted:
        if entry['name'] and entry['name'] not in seen:
            seen.add(entry['name'])
            result.append(entry)
    return result


def candidate_names(branch, os_family='Debian', overrides=None, extra=None):
    """Every name the nvidia_driver role may manage or must know about on a node (both kernel-module flavours,
    fabric manager and IMEX whatever is asked): what the role reads from dpkg before deciding."""
    names = package_names(branch, 'open', os_family, overrides)
    proprietary = package_names(branch, 'proprietary', os_family, overrides)
    ordered = [names['driver'], proprietary['driver']] + list(names['libraries']) + [
        names['kernel_modules_open'], names['kernel_modules_proprietary'], names['fabricmanager'], names['imex']]
    ordered.extend(extra or [])
    result = []
    for name in ordered:
        if name and name not in result:
            result.append(name)
    return result


def forbidden_reason(name):
    """Why ``name`` must never be installed by the gpu stage, or ''."""
    for pattern, reason in FORBIDDEN:
        if pattern.match(str(name)):
            return reason
    return ''


def _choice(problems, variable, value, allowed):
    if not isinstance(value, str) or value not in allowed:
        problems.append('%s must be one of %s (got %r)' % (variable, ', '.join(allowed), value))
        return False
    return True


def driver_problems(settings):
    """One line per bad ``nvidia_driver_*`` variable, naming it and what is allowed; [] when all is well.

    ``settings`` holds the role's variables without their prefix: branch, version, kernel_modules, fabricmanager,
    imex, gpudirect, os_family, package_names, extra_packages, repository ({url, suite, key_url}),
    module_version_file, and rdma_stack (the rdma role's, '' when not set).
    """
    problems = []
    branch, version = settings.get('branch'), settings.get('version')
    branch_ok = isinstance(branch, str) and bool(BRANCH.match(branch))
    if not branch_ok:
        problems.append('nvidia_driver_branch must be a driver branch, digits such as "580" (got %r)' % (branch,))
    if not isinstance(version, str) or not VERSION.match(version) or '*' in version or '-' not in version:
        problems.append('nvidia_driver_version must be an exact package version with its revision, such as '
                        '"580.95.05-1" (got %r)' % (version,))
    elif branch_ok and not upstream_version(version).startswith(branch + '.'):
        problems.append('nvidia_driver_version %s is not of nvidia_driver_branch %s: its upstream version must '
                        'start with "%s."' % (version, branch, branch))
    flavour_ok = _choice(problems, 'nvidia_driver_kernel_modules', settings.get('kernel_modules'), KERNEL_MODULES)
    if fabricmanager_setting(settings.get('fabricmanager')) is None:
        problems.append('nvidia_driver_fabricmanager must be one of auto, true, false (got %r)'
                        % (settings.get('fabricmanager'),))
    if not isinstance(settings.get('imex'), bool):
        problems.append('nvidia_driver_imex must be true or false (got %r)' % (settings.get('imex'),))
    gpudirect = settings.get('gpudirect')
    if _choice(problems, 'nvidia_driver_gpudirect', gpudirect, GPUDIRECT):
        if gpudirect == 'dmabuf' and flavour_ok and settings.get('kernel_modules') == 'proprietary':
            problems.append('nvidia_driver_gpudirect dmabuf needs nvidia_driver_kernel_modules open: only the open '
                            'kernel modules export GPU memory as DMA-BUF (NVIDIA GPU Operator, "GPUDirect RDMA": '
                            'DMA-BUF requires the open kernel modules and Linux 5.12 or later); use peermem with the '
                            'proprietary modules')
        if gpudirect == 'peermem' and settings.get('rdma_stack') == 'inbox':
            problems.append('nvidia_driver_gpudirect peermem needs the peer-memory interface of DOCA-OFED\'s ib_core, '
                            'which rdma_stack inbox does not have (nvidia_peermem would not load): use dmabuf')
    table = os_table(settings.get('os_family'))
    overrides = settings.get('package_names') or {}
    if not isinstance(overrides, dict):
        problems.append('nvidia_driver_package_names must map components (%s) to package names (got %r)'
                        % (', '.join(COMPONENTS), overrides))
        overrides = {}
    unknown = sorted(set(overrides) - set(COMPONENTS))
    if unknown:
        problems.append('nvidia_driver_package_names: %s not among %s' % (', '.join(unknown), ', '.join(COMPONENTS)))
    for component, value in sorted(overrides.items()):
        if component == 'libraries' and not (isinstance(value, list) and all(isinstance(item, str) for item in value)):
            problems.append('nvidia_driver_package_names.libraries must be a list of package names (got %r)' % (value,))
            unknown.append(component)
        elif component != 'libraries' and component in COMPONENTS and not isinstance(value, str):
            problems.append('nvidia_driver_package_names.%s must be a package name (got %r)' % (component, value))
            unknown.append(component)
    if table is None and not set(INSTALLED_COMPONENTS) <= set(overrides):
        problems.append('nvidia_driver_os_family %r: no package names known (known: %s); name %s in '
                        'nvidia_driver_package_names' % (settings.get('os_family'), ', '.join(sorted(OS_TABLES)),
                                                         ', '.join(INSTALLED_COMPONENTS)))
    extra = settings.get('extra_packages') or []
    if not isinstance(extra, list) or not all(isinstance(name, str) for name in extra):
        problems.append('nvidia_driver_extra_packages must be a list of package names (got %r)' % (extra,))
        extra = []
    if branch_ok and not unknown:
        for name in _flatten(package_names(branch, 'open', settings.get('os_family'), overrides)) + extra:
            reason = forbidden_reason(name)
            if reason:
                problems.append('nvidia_driver_package_names/nvidia_driver_extra_packages: %s is never installed: '
                                '%s' % (name, reason))
            elif not NAME.match(name):
                problems.append('nvidia_driver_package_names/nvidia_driver_extra_packages: %r is not a package name'
                                % (name,))
    repository = settings.get('repository') or {}
    for key in ('url', 'key_url'):
        value = repository.get(key)
        if not isinstance(value, str) or not URL.match(value):
            problems.append('nvidia_driver_repo_%s must be an http://, https:// or file:// URL (got %r)' % (key, value))
    suite, components = repository.get('suite'), repository.get('components') or []
    if not isinstance(suite, str) or not suite:
        problems.append('nvidia_driver_repo_suite must be the apt suite, "/" for NVIDIA\'s flat repository '
                        '(got %r)' % (suite,))
    elif not isinstance(components, list) or not all(isinstance(item, str) and item for item in components):
        problems.append('nvidia_driver_repo_components must be a list of component names (got %r)' % (components,))
    elif suite.endswith('/') and components:
        problems.append('nvidia_driver_repo_components must be empty for the flat suite %r (deb822 forbids '
                        'Components with a suite ending in /)' % suite)
    elif not suite.endswith('/') and not components:
        problems.append('nvidia_driver_repo_components must name the components of suite %r (main ...); a flat '
                        'repository\'s suite ends with /' % suite)
    path = settings.get('module_version_file')
    if not isinstance(path, str) or not path.startswith('/'):
        problems.append('nvidia_driver_module_version_file must be an absolute path such as /sys/module/nvidia/version '
                        '(got %r)' % (path,))
    return problems


def _flatten(names):
    flat = []
    for key in sorted(names):
        value = names[key]
        for name in (value if isinstance(value, list) else [value]):
            if name not in flat:
                flat.append(name)
    return flat


def toolkit_release(toolkit):
    """``12-9`` -> ``12.9`` (the directory /usr/local/cuda-12.9 and nvcc's "release 12.9"); '' when malformed."""
    match = TOOLKIT.match(str(toolkit or ''))
    return '%s.%s' % match.groups() if match else ''


def cuda_problems(settings):
    """One line per bad ``cuda_*`` variable; ``settings``: toolkit, version, packages ([{name, version}]), home."""
    problems = []
    toolkit, version = settings.get('toolkit'), settings.get('version')
    release = toolkit_release(toolkit)
    if not release:
        problems.append('cuda_toolkit must be MAJOR-MINOR as in the package name cuda-toolkit-12-9, such as "12-9" '
                        '(got %r)' % (toolkit,))
    if not isinstance(version, str) or not VERSION.match(version) or '*' in version or '-' not in version:
        problems.append('cuda_version must be an exact package version with its revision, such as "12.9.1-1" (got %r)'
                        % (version,))
    elif release and not upstream_version(version).startswith(release + '.'):
        problems.append('cuda_version %s is not of cuda_toolkit %s: its upstream version must start with "%s."'
                        % (version, toolkit, release))
    home = settings.get('home')
    if 'home' in settings and (not isinstance(home, str) or not home.startswith('/')):
        problems.append('cuda_home must be the toolkit\'s absolute directory, such as /usr/local/cuda-12.9 (got %r)'
                        % (home,))
    packages = settings.get('packages')
    if not isinstance(packages, list) or not packages:
        problems.append('cuda_packages must list the packages to install, each {name, version} (got %r)' % (packages,))
        return problems
    for index, entry in enumerate(packages):
        name = entry.get('name') if isinstance(entry, dict) else None
        pinned = entry.get('version') if isinstance(entry, dict) else None
        if not isinstance(name, str) or not NAME.match(name):
            problems.append('cuda_packages[%d]: %r is not a package name' % (index, name))
            continue
        reason = forbidden_reason(name)
        if reason or name.startswith('nvidia-'):
            problems.append('cuda_packages[%d]: %s is never installed by the cuda role: %s' % (
                index, name, reason or 'the driver\'s packages belong to nvidia_driver, pinned to its version'))
        if not isinstance(pinned, str) or not VERSION.match(pinned) or '*' in pinned:
            problems.append('cuda_packages[%d]: %s needs an exact package version such as "12.9.1-1" (got %r)'
                            % (index, name, pinned))
    return problems
