# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rdma role's decisions, as pure functions (reached through the filters in plugins/filter/rdma.py).

- ``rdma_vars_problems``: one line per bad role variable, naming it and what it may be;
- ``kernel_module_packages``: which package changes bring new kernel modules (the running-kernel check before, the
  reboot fact after);
- ``nvidia_dkms_rebuild``: after a DOCA-OFED change, the dkms commands that rebuild nvidia's module against it;
- ``firmware_report``: ``mlxfwmanager --query`` against the bill of materials' firmware matrix (PSID -> version);
- ``device_check``: what ``ibv_devinfo -l`` says about the node's RDMA devices.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible.module_utils.six import string_types
from ansible.module_utils.six.moves.collections_abc import Mapping

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.mlxfwmanager import parse_mlxfwmanager_query
from ansible_collections.aicluster.infra.plugins.module_utils.packages import package_name
# The same name and version rules as the module that installs the packages, so the role's check and the module agree.
from ansible_collections.aicluster.infra.plugins.module_utils.pinned_packages import NAME as PACKAGE_NAME
from ansible_collections.aicluster.infra.plugins.module_utils.pinned_packages import VERSION as PACKAGE_VERSION

STACKS = ('doca', 'inbox', 'mlnx_ofed')
PINNED_STACKS = ('doca', 'mlnx_ofed')
# apt fetches http(s) and file: URIs without extra transports; a key is fetched the same way.
URL_RE = re.compile(r'^(?:https?://[^\s/]+(?:/\S*)?|file:/\S*)$')
SUITE_RE = re.compile(r'^[A-Za-z0-9._~/+-]+$')
COMPONENT_RE = re.compile(r'^[A-Za-z0-9._+-]+$')
# PSIDs: MT_0000000838 (NVIDIA), OEM ones such as DEL0000000027, HP_0000000009, SM_1001000001000.
PSID_RE = re.compile(r'^[A-Za-z0-9_]{4,24}$')
FIRMWARE_RE = re.compile(r'^[0-9]+\.[0-9]+\.[0-9]+$')
UNIT_RE = re.compile(r'^[A-Za-z0-9:_.@-]+$')
# `mlxfwmanager` wrapped in `command -v TOOL || exit 127`: 127 means the tool is not on the node.
TOOL_MISSING_RC = 127
DEVICE_LIST_RE = re.compile(r'^\s*(?P<count>[0-9]+)\s+HCAs?\s+found:\s*$')
NO_DEVICE_RE = re.compile(r'Failed to get IB devices list|No IB devices found', re.IGNORECASE)


def _is_str(value):
    return isinstance(value, string_types)


def _url_problem(name, value):
    if not _is_str(value) or not URL_RE.match(value):
        return '%s must be an http://, https:// or file:/ URL (got %r)' % (name, value)
    return None


def _pinned_problems(settings):
    problems = []
    packages = settings.get('rdma_doca_packages')
    if not isinstance(packages, Mapping) or not packages:
        problems.append('rdma_doca_packages must map each package of the %s stack to its exact Debian version '
                        '(aicluster_bom.rdma.packages), got %r' % (settings.get('rdma_stack'), packages))
    else:
        for name in sorted(packages, key=str):
            version = packages[name]
            if not _is_str(name) or not PACKAGE_NAME.match(name):
                problems.append('rdma_doca_packages: %r is not a Debian package name (lowercase letters, digits, + - .)'
                                % (name,))
            elif not _is_str(version) or not PACKAGE_VERSION.match(version) or '*' in version:
                problems.append('rdma_doca_packages[%s] must be an exact Debian version as a quoted string, such as '
                                '"24.10.OFED.24.10.1.1.4.1-1" (no wildcard), got %r' % (name, version))
        profile = settings.get('rdma_doca_profile')
        if not _is_str(profile) or profile not in packages:
            problems.append('rdma_doca_profile must be one of the packages of rdma_doca_packages (%s), the metapackage '
                            'that brings the stack (doca-ofed for DOCA-OFED), got %r'
                            % (', '.join(sorted(str(name) for name in packages)), profile))
    for name in ('rdma_repo_url', 'rdma_repo_key_url'):
        problem = _url_problem(name, settings.get(name))
        if problem:
            problems.append(problem)
    suite = settings.get('rdma_repo_suite')
    components = settings.get('rdma_repo_components')
    if not _is_str(suite) or not SUITE_RE.match(suite):
        problems.append('rdma_repo_suite must be a suite or, for a flat repository such as DOCA\'s, a path ending in '
                        '/ (./), got %r' % (suite,))
    elif not isinstance(components, list) or not all(_is_str(c) and COMPONENT_RE.match(c) for c in components):
        problems.append('rdma_repo_components must be a list of component names, got %r' % (components,))
    elif suite.endswith('/') and components:
        problems.append('rdma_repo_components must be empty with the flat suite %r (rdma_repo_suite ends in /), '
                        'got %s' % (suite, ', '.join(components)))
    elif not suite.endswith('/') and not components:
        problems.append('rdma_repo_components must name at least one component with the suite %r (or give a flat '
                        'suite ending in /, such as ./)' % (suite,))
    return problems


def _firmware_problems(settings):
    problems = []
    expected = settings.get('rdma_firmware_expected')
    if not isinstance(expected, Mapping):
        problems.append('rdma_firmware_expected must map PSIDs to firmware versions (aicluster_bom.rdma.firmware), '
                        'got %r' % (expected,))
        expected = {}
    for psid in sorted(expected, key=str):
        version = expected[psid]
        if not _is_str(psid) or not PSID_RE.match(psid):
            problems.append('rdma_firmware_expected: %r is not a PSID such as MT_0000000838' % (psid,))
        elif not _is_str(version) or not FIRMWARE_RE.match(version):
            problems.append('rdma_firmware_expected[%s] must be a firmware version as a quoted string, such as '
                            '"28.43.2026", got %r' % (psid, version))
    images = settings.get('rdma_firmware_images')
    if not isinstance(images, Mapping):
        problems.append('rdma_firmware_images must map PSIDs to firmware image paths on the node, got %r' % (images,))
        images = {}
    for psid in sorted(images, key=str):
        path = images[psid]
        if psid not in expected:
            problems.append('rdma_firmware_images[%s]: the PSID is not in rdma_firmware_expected (%s), so no device of '
                            'it is ever flashed' % (psid, ', '.join(sorted(str(p) for p in expected)) or 'empty'))
        elif not _is_str(path) or not path.startswith('/'):
            problems.append('rdma_firmware_images[%s] must be an absolute path on the node, got %r' % (psid, path))
    if settings.get('rdma_firmware_update') and not images:
        problems.append('rdma_firmware_update is true but rdma_firmware_images is empty: name the image of each PSID '
                        'to flash')
    if settings.get('rdma_firmware_update') and not settings.get('rdma_firmware_enabled', True):
        problems.append('rdma_firmware_update is true but rdma_firmware_enabled is false: the firmware is only '
                        'flashed after the query that compares it')
    tool = settings.get('rdma_firmware_tool')
    if not _is_str(tool) or not tool or any(c.isspace() for c in tool):
        problems.append('rdma_firmware_tool must be a command name or an absolute path (mlxfwmanager), got %r'
                        % (tool,))
    return problems


def _memlock_ok(value):
    """'' (no limits file), 'unlimited', or a positive number of KiB (an int or digits)."""
    if value in ('', 'unlimited'):
        return True
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value > 0
    return _is_str(value) and value.isdigit() and int(value) > 0


def rdma_vars_problems(settings):
    """One line per bad variable of the rdma role, each naming the variable and what it may be; empty when all is
    well. ``settings`` holds the role's variables by name; the package and repository variables are checked only
    for the stacks that use them (doca, mlnx_ofed)."""
    if not isinstance(settings, Mapping):
        raise TypeError('rdma_vars_problems: expected a dict of the role variables, got %r' % (settings,))
    problems = []
    stack = settings.get('rdma_stack')
    if stack not in STACKS:
        return ['rdma_stack must be one of %s, got %r' % (', '.join(STACKS), stack)]
    if stack in PINNED_STACKS:
        problems.extend(_pinned_problems(settings))
    else:
        packages = settings.get('rdma_inbox_packages')
        if not isinstance(packages, list) or not packages or not all(
                _is_str(p) and PACKAGE_NAME.match(p) for p in packages):
            problems.append('rdma_inbox_packages must be a non-empty list of Debian package names, got %r'
                            % (packages,))
    memlock = settings.get('rdma_memlock')
    if not _memlock_ok(memlock):
        problems.append('rdma_memlock must be unlimited, a number of KiB, or empty (no limits file), got %r'
                        % (memlock,))
    services = settings.get('rdma_subnet_manager_services')
    if not isinstance(services, list) or not all(_is_str(s) and UNIT_RE.match(s) for s in services):
        problems.append('rdma_subnet_manager_services must be a list of systemd unit names, got %r' % (services,))
    problems.extend(_firmware_problems(settings))
    return problems


def _entry_name(entry):
    if isinstance(entry, Mapping):
        return entry.get('name') or ''
    return package_name(str(entry))


def kernel_module_packages(packages, profile=''):
    """The names among ``packages`` whose change installs or replaces kernel modules.

    ``packages`` are names, apt specs (``name=version``) or ``{name, ...}`` dicts (pinned_packages'
    ``changed_packages``). A ``*-dkms`` package builds modules when it is installed; the stack's metapackage
    (``profile``, doca-ofed) counts too, since it depends on DKMS packages the bill of materials does not list
    (knem-dkms, srp-dkms, kernel-mft-dkms...), which apt changes with it.
    """
    names = []
    for entry in packages or []:
        name = _entry_name(entry)
        if name and (name.endswith('-dkms') or (profile and name == profile)) and name not in names:
            names.append(name)
    return names


VERSION_DIR = re.compile(r'^[0-9]+(?:\.[0-9]+)+$')


def nvidia_dkms_rebuild(changed_modules, nvidia_versions, kernels):
    """The commands that rebuild nvidia's DKMS module against DOCA-OFED's new kernel modules, before any reboot.

    nvidia-peermem.ko is built against MLNX_OFED's peer-memory symbols (ib_register_peer_memory_client): built before
    DOCA-OFED was installed or upgraded, it keeps the old symbol versions and fails to load after the reboot ("disagrees
    about version of symbol ib_register_peer_memory_client", "Unknown symbol ... (err -22)": NVIDIA/gpu-operator#2868,
    Mellanox/nv_peer_memory#39; "did you upgrade OFED after installing nv_peer_mem? remove and install again":
    Mellanox/nv_peer_memory#84). ``changed_modules``: the DOCA-OFED kernel-module packages this run changed (none:
    nothing to rebuild); ``nvidia_versions``: the entries of /var/lib/dkms/nvidia (the newest version is rebuilt, the
    one the node runs or will run); ``kernels``: the running kernel and the one the next boot uses. Returns argv lists:
    ``dkms build nvidia/<V> -k <kernel> --force`` then ``dkms install ... --force`` per kernel (dkms(8): --force builds
    and installs again a version already built).
    """
    versions = [version for version in nvidia_versions or [] if VERSION_DIR.match(version or '')]
    if not changed_modules or not versions:
        return []
    newest = max(versions, key=lambda text: tuple(int(part) for part in text.split('.')))
    commands = []
    for kernel in kernels or []:
        if kernel and all(kernel != command[4] for command in commands):
            for action in ('build', 'install'):
                commands.append(['dkms', action, 'nvidia/%s' % newest, '-k', kernel, '--force'])
    return commands


def _device_report(device, expected, images):
    psid = device.get('psid')
    current = device.get('fw')
    running = device.get('fw_running') or current
    want = expected.get(psid) if psid else None
    if want is None:
        status = 'unknown_psid'
    elif current == want:
        status = 'ok'
    else:
        status = 'differs'
    return {
        'device': device.get('device') or 'Device #%s' % device.get('index'),
        'device_type': device.get('device_type'),
        'part_number': device.get('part_number'),
        'psid': psid,
        'current': current,
        'running': running,
        'expected': want,
        'status': status,
        # the flashed image runs after the adapter's next reset (a reboot)
        'pending_reset': bool(current and running and running != current),
        'image': (images.get(psid) or '') if psid else '',
    }


def _tail(text, lines=5):
    return ' / '.join([line.strip() for line in (text or '').splitlines() if line.strip()][-lines:])


def firmware_report(query, expected, images=None, tool='mlxfwmanager'):
    """Compare the HCAs' firmware with the matrix.

    ``query`` is the registered result of ``sh -c 'command -v TOOL >/dev/null || exit 127; exec TOOL --query'``
    (``rc``, ``stdout``, ``stderr``); ``expected`` maps PSID -> firmware version; ``images`` PSID -> image path.

    Returns ``{tool_found, devices, error, warnings, reboot_required, to_flash, missing_images}``: ``devices`` one
    dict per adapter (``device, device_type, part_number, psid, current, running, expected, status, pending_reset,
    image``; ``status`` ok, differs or unknown_psid, comparing the flashed firmware); ``error`` a message when the tool
    failed or printed something else than its report; ``warnings`` one line per differing, unknown or reset-pending
    device; ``to_flash`` the differing devices with an image, ``missing_images`` those without one.
    """
    query = query if isinstance(query, Mapping) else {}
    expected = expected if isinstance(expected, Mapping) else {}
    images = images if isinstance(images, Mapping) else {}
    report = {'tool_found': True, 'devices': [], 'error': '', 'warnings': [], 'reboot_required': False,
              'to_flash': [], 'missing_images': []}
    rc = query.get('rc')
    stdout, stderr = query.get('stdout') or '', query.get('stderr') or ''
    if rc == TOOL_MISSING_RC:
        report['tool_found'] = False
        return report
    try:
        parsed = parse_mlxfwmanager_query(stdout + '\n' + stderr)
    except ParseError as exc:
        report['error'] = '%s --query (rc %s) printed no firmware report: %s (%s)' % (tool, rc, _tail(stdout + '\n' + stderr), exc)
        return report
    if not parsed['devices']:
        if parsed['errors'] and not any('No devices found' in line for line in parsed['errors']):
            report['error'] = '%s --query failed (rc %s): %s' % (tool, rc, ' / '.join(parsed['errors']))
        else:
            report['warnings'].append('%s found no device%s' % (
                tool, (': ' + ' / '.join(parsed['errors'])) if parsed['errors'] else ''))
        return report
    if rc not in (0, None) or parsed['errors']:
        # the devices it did report are still compared
        report['warnings'].append('%s --query returned rc %s: %s' % (
            tool, rc, ' / '.join(parsed['errors']) or _tail(stderr) or 'no message'))
    for device in parsed['devices']:
        entry = _device_report(device, expected, images)
        report['devices'].append(entry)
        label = '%s (%s, PSID %s)' % (entry['device'], entry['part_number'] or entry['device_type'] or 'adapter',
                                      entry['psid'] or 'unknown')
        if entry['status'] == 'differs':
            report['warnings'].append('%s runs firmware %s, the bill of materials says %s' % (
                label, entry['current'] or 'unknown', entry['expected']))
            if entry['image']:
                report['to_flash'].append({'device': entry['device'], 'psid': entry['psid'], 'image': entry['image']})
            else:
                report['missing_images'].append('%s: no image for PSID %s in rdma_firmware_images'
                                                % (entry['device'], entry['psid']))
        elif entry['status'] == 'unknown_psid':
            report['warnings'].append('%s is not in the firmware matrix (rdma_firmware_expected): its firmware %s is '
                                      'not checked' % (label, entry['current'] or 'unknown'))
        if entry['pending_reset']:
            report['reboot_required'] = True
            report['warnings'].append('%s has firmware %s flashed but runs %s until its next reset (reboot)'
                                      % (label, entry['current'], entry['running']))
    return report


def parse_device_list(text):
    """The device names of ``ibv_devinfo -l`` (``2 HCAs found:`` then one TAB-indented name a line); ParseError
    without the count line."""
    names, count = [], None
    for line in (text or '').splitlines():
        found = DEVICE_LIST_RE.match(line)
        if found:
            count = int(found.group('count'))
            continue
        if count is not None and line.strip():
            names.append(line.strip())
    if count is None:
        raise ParseError('not ibv_devinfo -l output: no "N HCAs found:" line')
    return names


def device_check(query, require=False, check_mode=False):
    """What ``ibv_devinfo -l`` (run as ``sh -c 'command -v ibv_devinfo >/dev/null || exit 127; exec ibv_devinfo
    -l'``) says: ``{'devices': [names], 'message': str, 'failed': bool}``.

    No device (a container, a node without HCAs, the verbs driver not loaded) is a warning in ``message``; it fails
    only with ``require``. A missing ``ibv_devinfo`` fails with ``require`` too, except in check mode, where the
    packages that bring it may not be installed yet.
    """
    query = query if isinstance(query, Mapping) else {}
    rc = query.get('rc')
    stdout, stderr = query.get('stdout') or '', query.get('stderr') or ''
    hint = ('' if require else ' Expected in a container or on a node without HCAs; set rdma_require_devices: true '
            'where HCAs must be present.')
    if rc == TOOL_MISSING_RC:
        return {'devices': [], 'failed': bool(require) and not check_mode,
                'message': 'ibv_devinfo (ibverbs-utils) is not installed%s.' % (' yet (check mode)' if check_mode else '')}
    try:
        names = parse_device_list(stdout) if rc == 0 else []
    except ParseError:
        return {'devices': [], 'failed': bool(require),
                'message': 'ibv_devinfo -l printed no device list (rc %s): %s' % (rc, _tail(stdout + '\n' + stderr))}
    if names:
        return {'devices': names, 'failed': False, 'message': 'RDMA devices: %s' % ', '.join(names)}
    said = _tail(stderr) if NO_DEVICE_RE.search(stderr) else (_tail(stdout + '\n' + stderr) or 'nothing')
    return {'devices': [], 'failed': bool(require),
            'message': 'no RDMA device found (ibv_devinfo -l, rc %s: %s).%s' % (rc, said, hint)}
