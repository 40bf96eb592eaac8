# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nvidia_driver role's two decisions, from what its tasks read on a node.

``persistence`` (the persistence daemon): the ExecStart of the role's drop-in for the packaged
nvidia-persistenced unit, and whether every GPU reports persistence mode Enabled.

``driver_plan`` (before installing): which packages, whether a kernel-module package changes, and whether that
may happen now (the running kernel must be the newest installed; the other kernel-module flavour must not be
installed). ``driver_state`` (after installing): the reboot contract, the versions, which services to start or
restart, whether nvidia_peermem is loaded now, and what is wrong (a fabric manager or IMEX of another version than
the driver). Pure functions: text and dicts in, dicts out.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.nvidia_packages import (
    candidate_names, driver_packages, fabricmanager_wanted, package_names, upstream_version)
from ansible_collections.aicluster.infra.plugins.module_utils.nvidia_smi import ParseError, parse_query_gpu_csv

TOOL_VERSION = re.compile(r'(?<![0-9.])(?P<version>[0-9]+\.[0-9]+(?:\.[0-9]+)?)(?![0-9.])')
KERNEL_RELEASE_PACKAGE = re.compile(r'^linux-image-[0-9]')
SERVICES = {'fabricmanager': 'nvidia-fabricmanager', 'imex': 'nvidia-imex', 'persistenced': 'nvidia-persistenced'}
TOOLS = {'fabricmanager': 'nv-fabricmanager --version', 'imex': 'nvidia-imex --version'}
WORDS = {'fabricmanager': 'the fabric manager', 'imex': 'IMEX'}
PEERMEM = 'nvidia_peermem'
DMABUF_NOTE = ('DMA-BUF: nothing to load; NCCL registers GPU memory with the NIC through dma-buf by default '
               '(NCCL_DMABUF_ENABLE=1) on the open kernel modules')


# nvidia-persistenced's own switches (NVIDIA/nvidia-persistenced option-table.h @410f354: persistence mode is on by
# default, --no-persistence-mode forces it off). Ubuntu's packaged unit passes --no-persistence-mode
# (canonical/nvidia-graphics-drivers debian/templates/nvidia-compute-utils-flavour.nvidia-persistenced.service.in:
# "ExecStart=/usr/bin/nvidia-persistenced --user nvidia-persistenced --no-persistence-mode --verbose"); NVIDIA's own
# role overrides it with a drop-in (NVIDIA/ansible-role-nvidia-driver files/nvidia-persistenced-override.conf @f68d4a7:
# "ExecStart=" then "ExecStart=/usr/bin/nvidia-persistenced --user root --persistence-mode --verbose").
PERSISTENCE_ON = '--persistence-mode'
PERSISTENCE_OFF = '--no-persistence-mode'
PERSISTENCE_FIELDS = ('index', 'persistence_mode')
SYSTEMCTL_CAT_FILE = re.compile(r'^# (?P<path>/\S+)\s*$')


def parse_tool_version(text):
    """The first dotted version in a tool's output (``Fabric Manager version is : 580.95.05`` -> ``580.95.05``)."""
    match = TOOL_VERSION.search(text or '')
    return match.group('version') if match else ''


def parse_lsmod(text):
    """Module names from ``lsmod`` (the first column; the header line skipped)."""
    names = []
    for line in (text or '').splitlines():
        fields = line.split()
        if fields and fields[0] != 'Module':
            names.append(fields[0])
    return names


def installed_version(entry):
    """The version of a host_state_info package entry ({version, status}) when dpkg has it installed, else ''."""
    entry = entry or {}
    status = entry.get('status') or ''
    return (entry.get('version') or '') if len(status) >= 2 and status[1] == 'i' else ''


def kernel_hold_packages(dpkg_query_stdout, running):
    """The kernel packages to hold: the running kernel's image and the installed image metapackages (which would
    pull the next kernel ABI in), from ``dpkg-query --show --showformat='${Package}\\t${db:Status-Abbrev}\\n'
    'linux-image-*'``. Returns (names, warnings)."""
    installed = []
    for line in (dpkg_query_stdout or '').splitlines():
        fields = line.split('\t')
        if len(fields) == 2 and len(fields[1].strip()) >= 2 and fields[1].strip()[1] == 'i':
            installed.append(fields[0])
    running_package = 'linux-image-%s' % running
    names = [running_package] if running_package in installed else []
    names.extend(sorted(name for name in installed if not KERNEL_RELEASE_PACKAGE.match(name)
                        and name != running_package and not name.endswith('-dbg')))
    warnings = [] if running_package in installed else [
        'nvidia_driver_kernel_hold: the running kernel %s is not from a package (%s is not installed); only its '
        'metapackages are held' % (running, running_package)]
    return names, warnings


def unit_files(text):
    """[(path, lines)] of ``systemctl cat UNIT``: each file follows a ``# /path`` line; the packaged unit first."""
    files = []
    for line in (text or '').splitlines():
        match = SYSTEMCTL_CAT_FILE.match(line)
        if match:
            files.append((match.group('path'), []))
        elif files:
            files[-1][1].append(line)
    return files


def exec_start(lines):
    """The command an ExecStart= of these unit-file lines runs (the last one; an empty one resets), or ''."""
    command, section, joined = '', '', []
    for raw in lines:
        line = raw.rstrip()
        if joined or line.endswith('\\'):
            joined.append(line.rstrip('\\').strip())
            if line.endswith('\\'):
                continue
            line, joined = ' '.join(joined), []
        line = line.strip()
        if line.startswith('[') and line.endswith(']'):
            section = line
        elif section == '[Service]' and line.startswith('ExecStart='):
            command = line[len('ExecStart='):].strip()
    return command


def persistence(observed):
    """The persistence daemon's two decisions, from what the role read.

    ``observed.unit``: ``systemctl cat nvidia-persistenced.service`` (its result dict, or its stdout). Returns
    ``exec_start``: the packaged unit's own ExecStart (the first file, never a drop-in's, so a re-run computes the
    same line) without ``--no-persistence-mode`` and with ``--persistence-mode``, for the role's drop-in; '' when the
    unit cannot be read. ``observed.query``: the ``nvidia-smi --query-gpu=index,persistence_mode
    --format=csv,noheader`` result. Returns ``gpus`` ({index: mode}) and ``problems`` naming every GPU whose
    persistence mode is not Enabled.
    """
    result = {'exec_start': '', 'packaged': '', 'fragment': '', 'gpus': {}, 'problems': []}
    unit = observed.get('unit')
    if unit is not None:
        text = unit.get('stdout', '') if isinstance(unit, dict) else unit
        files = unit_files(text)
        if files:
            result['fragment'], packaged = files[0][0], exec_start(files[0][1])
            result['packaged'] = packaged
            words = [word for word in packaged.split() if word != PERSISTENCE_OFF]
            if words and PERSISTENCE_ON not in words:
                words.append(PERSISTENCE_ON)
            result['exec_start'] = ' '.join(words)
    query = observed.get('query')
    if query is not None:
        cmd = 'nvidia-smi --query-gpu=%s --format=csv,noheader' % ','.join(PERSISTENCE_FIELDS)
        said = ((query.get('stdout') or '') + ' ' + (query.get('stderr') or '')).strip()
        rows = []
        if query.get('rc') == 0:
            try:
                rows = parse_query_gpu_csv(query.get('stdout') or '', PERSISTENCE_FIELDS)
            except ParseError:
                rows = []
        if not rows:
            result['problems'].append('%s failed (rc %s): %s' % (cmd, query.get('rc'), said[:300] or 'no GPU listed'))
        result['gpus'] = dict((row['index'], row['persistence_mode']) for row in rows)
        off = [index for index, mode in sorted(result['gpus'].items(), key=lambda item: int(item[0]))
               if mode != 'Enabled']
        if off:
            result['problems'].append(
                'persistence mode is not Enabled on GPU %s (%s): nvidia-persistenced must run with %s (a unit that '
                'passes %s, as Ubuntu\'s does, keeps it off; the role\'s drop-in replaces its ExecStart)'
                % (', '.join(off), ', '.join(sorted(set(str(result['gpus'][index]) for index in off))),
                   PERSISTENCE_ON, PERSISTENCE_OFF))
    return result


def _ran(result):
    """A registered command result, or None where the task was skipped or absent."""
    if not result or result.get('skipped'):
        return None
    return result


def driver_plan(settings, observed):
    """What to install on one node, and whether it may be installed now.

    ``settings``: the role's branch, version, kernel_modules, fabricmanager (auto/true/false), imex, os_family,
    package_names, extra_packages, kernel_hold. ``observed``: nvswitch (whether the node has NVSwitches, from
    aicluster.infra.nvswitch_info), nvswitch_generation (its NVLink generation, 0 none),
    packages (host_state_info's packages of candidate_names), kernel (kernel_info's result), loaded (the module
    version file's text, None when missing), kernel_images (the dpkg-query of linux-image-*, when kernel_hold).
    """
    branch, version = settings['branch'], settings['version']
    flavour = settings['kernel_modules']
    overrides, extra = settings.get('package_names') or {}, settings.get('extra_packages') or []
    names = package_names(branch, flavour, settings.get('os_family'), overrides)
    other = names['kernel_modules_%s' % ('proprietary' if flavour == 'open' else 'open')]
    found = observed.get('packages') or {}
    installed = dict((name, installed_version(found.get(name)))
                     for name in candidate_names(branch, settings.get('os_family'), overrides, extra))
    nvswitch = bool(observed.get('nvswitch'))
    wants = {'fabricmanager': fabricmanager_wanted(settings.get('fabricmanager'), nvswitch),
             'imex': settings.get('imex') is True}
    # What DCGM reads the switches through, packaged with the driver and pinned to its upstream version: NSCQ up to
    # NVLink 4 (A100, H100), NVSDM on NVLink 5 (B200), where NVLSM (a version of its own) also runs the switches
    # (NVIDIA/gpu-driver-container install.sh nscq_install, nvsdm_install, nvlink5_pkgs_install).
    generation = int(observed.get('nvswitch_generation') or 0)
    switch_libraries = []
    if wants['fabricmanager'] and nvswitch and generation:
        switch_libraries = [names['nvsdm']] if generation >= 5 else [names['nscq']]
    packages = driver_packages(branch, version, flavour, wants['fabricmanager'], wants['imex'],
                               settings.get('os_family'), overrides, list(extra) + switch_libraries)
    kernel_modules_change = installed.get(names['kernel_modules']) != version
    kernel = observed.get('kernel') or {}
    problems = []
    if kernel_modules_change and installed.get(other):
        problems.append('nvidia_driver_kernel_modules is %s but %s (the other flavour) %s is installed: apt cannot '
                        'switch flavours without removing packages, which this role never does. In a maintenance window '
                        'remove it (apt-get remove %s, which removes %s too) and re-run; the node then needs a reboot'
                        % (flavour, other, installed[other], other, names['driver']))
    elif kernel_modules_change and kernel.get('running_is_newest') is False:
        problems.append(kernel.get('message') or 'the running kernel %s is not the newest installed (%s): reboot into '
                        'it before building kernel modules' % (kernel.get('running'), kernel.get('newest')))
    for component in ('fabricmanager', 'imex'):
        name = names[component]
        # packaged apart from the driver, with a revision of its own: it matches when its upstream version does
        if not wants[component] and installed.get(name) and upstream_version(installed[name]) != upstream_version(version):
            problems.append('%s %s is installed but nvidia_driver_%s does not manage it here (%s%s): it would not '
                            'match the driver %s. Set nvidia_driver_%s true to pin it with the driver, or remove it'
                            % (name, installed[name], component, str(settings.get(component)).lower(),
                               ', no NVSwitch found' if settings.get(component) == 'auto' else '',
                               version, component))
    hold, warnings = [], []
    if settings.get('kernel_hold'):
        hold, warnings = kernel_hold_packages(observed.get('kernel_images'), kernel.get('running', ''))
    loaded = (observed.get('loaded') or '').strip()
    return {
        'upstream': upstream_version(version),
        'packages': packages,
        'names': dict((component, names[component]) for component in (
            'driver', 'kernel_modules', 'fabricmanager', 'imex', 'nscq', 'nvsdm', 'nvlsm')),
        'installed': installed,
        'kernel_modules_change': kernel_modules_change,
        'dkms': names['kernel_modules'].endswith('dkms'),
        'problems': problems,
        'loaded': loaded,
        'nvswitch': nvswitch,
        'nvswitch_generation': generation,
        # NVLink 5: NVLSM, installed with its own version (not the driver's) where the fabric manager is
        'nvlsm': [names['nvlsm']] if wants['fabricmanager'] and nvswitch and generation >= 5 else [],
        # present: the package is on the node after this run (asked for, or installed by someone else)
        'fabricmanager': {'wanted': wants['fabricmanager'],
                          'present': wants['fabricmanager'] or bool(installed.get(names['fabricmanager']))},
        'imex': {'wanted': wants['imex'], 'present': wants['imex'] or bool(installed.get(names['imex']))},
        'kernel_hold': hold,
        'warnings': warnings,
    }


def _tool_problem(component, package, package_version, driver, read, managed):
    """(version, problem): the fabric manager's or IMEX's ``--version`` against the driver installed on the node.

    ``package_version`` and ``driver`` are what is installed after the run (in a check run, what is installed now),
    so a check run of a BOM change finds an old fabric manager beside its old driver consistent, and one installed
    apart from its driver (by hand) inconsistent. Nothing is judged where either is not installed.
    """
    if read is None or not package_version or not driver:
        return '', ''
    output = '%s %s' % (read.get('stdout') or '', read.get('stderr') or '')
    version = parse_tool_version(read.get('stdout') or '') or parse_tool_version(output)
    if read.get('rc') != 0 or not version:
        return '', ('%s failed (rc %s): %s' % (TOOLS[component], read.get('rc'),
                                               (output.strip() or read.get('msg') or 'no output')[:300]))
    if version == driver:
        return version, ''
    problem = ('%s reports %s but the installed driver is %s: %s must be exactly the driver\'s version'
               % (TOOLS[component], version, driver, WORDS[component]))
    if managed and upstream_version(package_version) == driver:
        problem += ('; %s %s does not install what its version says: reinstall it (apt-get install --reinstall %s) '
                    'or check the repository' % (package, package_version, package))
    elif managed:
        problem += ('; %s %s was installed apart from the driver: a run without --check puts it back at the '
                    'driver\'s version, pinned and held with it' % (package, package_version))
    else:
        problem += '; set nvidia_driver_%s true to pin %s with the driver, or remove it' % (component, package)
    return version, problem


def _service(component, plan, observed, loaded, changed_names, warnings):
    """The fabric manager's or IMEX's service on this node: {name, enabled, state} or None (left alone)."""
    name = SERVICES[component]
    if not plan[component]['present'] or not plan['nvswitch']:
        return None
    unit = (observed.get('services') or {}).get(name) or {}
    if not unit.get('exists'):
        if not observed.get('check_mode'):
            warnings.append('%s.service does not exist although %s is installed' % (name, plan['names'][component]))
        return None
    if loaded == plan['upstream']:
        return {'name': name, 'enabled': True,
                'state': 'restarted' if plan['names'][component] in changed_names else 'started'}
    if loaded:
        warnings.append('%s not (re)started: the loaded nvidia module is %s, the driver %s; it starts at the reboot '
                        '(nvidia_driver_reboot_required)' % (name, loaded, plan['upstream']))
    else:
        warnings.append('%s not started: no nvidia module is loaded; it starts at the next boot' % name)
    return {'name': name, 'enabled': True, 'state': None}


RDMA_CORE_MODULES = ('ib_core', 'mlx5_core')


def rdma_stack_state(observed):
    """Whether nvidia_peermem must wait for a reboot, and what a failure of ``modprobe nvidia_peermem`` means.

    ``observed``: rdma_reboot_required (the rdma stage's fact: its kernel modules changed); module_dir (the directory
    of the loaded modules' version files, /sys/module); contents (host_state_info's: path -> text, None when missing)
    with <module_dir>/<module>/version of RDMA_CORE_MODULES; modinfo (the ``modinfo -F version <module>`` loop
    results: what the running kernel would load now); lsmod. DOCA-OFED's modules carry a version
    (``24.10-1.1.4``), the distribution's none. nvidia_peermem registers with DOCA-OFED's ib_core through
    ib_register_peer_memory_client, which the inbox ib_core lacks (kmod: "Unknown symbol in module", dmesg
    "Unknown symbol ib_register_peer_memory_client (err -2)"; Mellanox/nv_peer_memory#84).

    Returns {'pending': reboot reason or '', 'cause': what a failure of the modprobe means, 'loaded': {module:
    version or None}, 'installed': {module: version or ''}}.
    """
    module_dir = (observed.get('module_dir') or '').rstrip('/')
    contents = observed.get('contents') or {}
    names = parse_lsmod(observed.get('lsmod'))
    loaded = dict((name, (contents.get('%s/%s/version' % (module_dir, name)) or '').strip() or None)
                  for name in RDMA_CORE_MODULES)
    installed = dict((name, '') for name in RDMA_CORE_MODULES)
    for result in observed.get('modinfo') or []:
        if result.get('item') in installed and result.get('rc') == 0:
            installed[result['item']] = (result.get('stdout') or '').strip()
    pending = ''
    if observed.get('rdma_reboot_required'):
        pending = ('the rdma stage changed DOCA-OFED\'s kernel modules, which the running kernel loads at the next '
                   'boot: %s needs DOCA-OFED\'s ib_core and is loaded then (modules-load.d)' % PEERMEM)
    else:
        for name in RDMA_CORE_MODULES:
            if installed[name] and name in names and loaded[name] != installed[name]:
                pending = ('the loaded %s is %s, the running kernel has DOCA-OFED\'s %s installed: DOCA-OFED\'s '
                           'modules load at the next boot, and %s with them (modules-load.d)'
                           % (name, 'the distribution\'s (inbox)' if loaded[name] is None else loaded[name],
                              installed[name], PEERMEM))
                break
    if not installed['ib_core']:
        cause = ('no DOCA-OFED ib_core is installed for the running kernel (modinfo -F version ib_core prints none): '
                 '%s needs the peer-memory interface of DOCA-OFED\'s ib_core (the rdma stage with rdma_stack doca, '
                 'before this one); with the distribution\'s RDMA stack use nvidia_driver_gpudirect dmabuf' % PEERMEM)
    else:
        cause = ('the loaded ib_core is DOCA-OFED\'s %s, so no reboot is pending: the nvidia DKMS build is older '
                 'than DOCA-OFED\'s and was built against other peer-memory symbols (dmesg: "disagrees about version '
                 'of symbol ib_register_peer_memory_client"); rebuild it for the running kernel (dkms install '
                 'nvidia/<version> -k $(uname -r) --force; the rdma role does after a DOCA-OFED change) and load it '
                 'again' % (loaded['ib_core'] or installed['ib_core']))
    return {'pending': pending, 'cause': cause, 'loaded': loaded, 'installed': installed}


def driver_state(plan, observed):
    """After the install: the reboot contract, the versions, services, GPUDirect and problems of one node.

    ``observed``: check_mode; changed_packages and installed (pinned_packages' result, absent when it did not run;
    in a check run it is what is installed now);
    loaded (the module version file's text after the install, None when missing); modprobe (the ``modprobe nvidia``
    result when it ran, else None); services (host_state_info's services); fabricmanager and imex (the --version
    command results, None when not read); lsmod (its stdout, None when not read); gpudirect; persistenced (whether
    to run nvidia-persistenced); module_version_file; for nvidia_peermem the RDMA stack's state (rdma_stack_state:
    rdma_reboot_required, module_dir, contents, modinfo): while DOCA-OFED's ib_core waits for a reboot,
    nvidia_peermem is deferred to the boot and the wait is a reboot reason.
    """
    upstream = plan['upstream']
    check_mode = bool(observed.get('check_mode'))
    changed = observed.get('changed_packages') or []
    changed_names = [entry['name'] for entry in changed]
    installed = dict(plan.get('installed') or {})
    installed.update(observed.get('installed') or {})
    loaded = (observed.get('loaded') or '').strip()
    problems, warnings, reasons = [], list(plan.get('warnings') or []), []

    modprobe = _ran(observed.get('modprobe'))
    if modprobe is not None and modprobe.get('rc') == 0 and not loaded:
        problems.append('modprobe nvidia succeeded but %s does not exist: nvidia_driver_module_version_file must be '
                        'the file the loaded module\'s version is read from (/sys/module/nvidia/version)'
                        % observed.get('module_version_file'))
    elif modprobe is not None and modprobe.get('rc') not in (0, None):
        reasons.append('modprobe nvidia failed: %s' % ((modprobe.get('stderr') or modprobe.get('msg') or '').strip()[:200]))
    if loaded and loaded != upstream:
        reasons.append('the loaded nvidia module is %s, the driver %s' % (loaded, upstream))
    for entry in changed:
        if entry['name'] == plan['names']['kernel_modules']:
            reasons.append('%s %s' % (entry['name'], 'installed at %s' % entry['after'] if not entry.get('before')
                                      else 'changed %s -> %s' % (entry['before'], entry['after'])))

    driver = upstream_version(installed.get(plan['names']['kernel_modules']))
    versions = {'wanted': upstream, 'installed': driver, 'loaded': loaded}
    for component in ('fabricmanager', 'imex'):
        package = plan['names'][component]
        version, problem = _tool_problem(component, package, installed.get(package), driver,
                                         _ran(observed.get(component)), plan[component]['wanted'])
        versions[component] = version
        if problem:
            problems.append(problem)

    services = []
    units = observed.get('services') or {}
    if observed.get('persistenced'):
        if (units.get(SERVICES['persistenced']) or {}).get('exists'):
            services.append({'name': SERVICES['persistenced'], 'enabled': True, 'state': 'started'})
        elif not check_mode:
            problems.append('nvidia-persistenced.service does not exist: add the package that ships it '
                            '(nvidia-persistenced) to nvidia_driver_extra_packages, or set '
                            'nvidia_driver_persistenced_enabled false')
    for component in ('fabricmanager', 'imex'):
        service = _service(component, plan, observed, loaded, changed_names, warnings)
        if service:
            services.append(service)

    gpudirect = observed.get('gpudirect')
    peermem_load, record, peermem_cause = False, 'none', ''
    if gpudirect == 'peermem':
        rdma = rdma_stack_state(observed)
        peermem_cause = rdma['cause']
        if PEERMEM in parse_lsmod(observed.get('lsmod')):
            record = '%s loaded' % PEERMEM
        elif loaded == upstream and rdma['pending']:
            # DOCA-OFED installed (or changed), its ib_core not running yet: modprobe would fail with "Unknown symbol
            # ib_register_peer_memory_client"; the reboot the rdma stage needs loads both (modules-load.d)
            record = '%s loads at the next boot (modules-load.d)' % PEERMEM
            reasons.append(rdma['pending'])
        elif loaded == upstream:
            # a check run loads nothing; the run after it would
            peermem_load = not check_mode
            record = '%s loaded' % PEERMEM if peermem_load else '%s to be loaded now' % PEERMEM
        else:
            record = '%s loads at the next boot (modules-load.d)' % PEERMEM
            if not check_mode:
                warnings.append('%s not loaded now: the driver it needs is %s; it loads at the next boot'
                                % (PEERMEM, 'not loaded' if not loaded else 'at %s, not %s' % (loaded, upstream)))
    elif gpudirect == 'dmabuf':
        record = DMABUF_NOTE

    return {
        'reboot_required': bool(reasons),
        'reboot_reasons': reasons,
        'versions': versions,
        'problems': problems,
        'services': services,
        'peermem_load': peermem_load,
        'peermem_cause': peermem_cause,
        'gpudirect': record,
        'warnings': warnings,
    }
