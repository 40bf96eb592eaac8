# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""DKMS builds against the kernel the next boot uses: ``dkms status``, the GRUB default, the decision.

Every DKMS module of the stack (nvidia, DOCA-OFED's mlnx-ofed-kernel and its companions knem, xpmem, iser, isert,
srp, kernel-mft, mlnx-nvme, mlnx-nfsrdma) must be built and installed for the kernel the node boots next, or the
node comes back from its reboot without it (ansible-slurm-appliance PR #514; Lambda's "Error! Bad return status for
module build on kernel ... /var/lib/dkms/mlnx-ofed-kernel/.../make.log" after a kernel upgrade). Pure functions:
text in, dicts out.

``dkms status`` prints one line per module, version and kernel (dkms 3, Debian 12's 3.0.10 and Ubuntu's)::

    nvidia/570.172.08, 6.12.10-76061203-generic, x86_64: installed      (pop-os/system76-driver #336)
    mlnx-ofed-kernel/25.10.OFED.25.10.1.7.1.1, 5.15.0-170-generic, x86_64: installed
    nvidia/580.95.05: added                                             (source registered, built for no kernel)

and, before dkms 3 (dkms 2.x, Ubuntu 20.04)::

    nvidia, 460.91.03, 5.11.0-36-generic, x86_64: installed              (linux-surface/linux-surface #573)
    librealsense2-dkms, 1.3.6, 4.18.0-15-generic, x86_64: installed      (realsenseai/librealsense #4763)

A status may carry a note (``installed (WARNING! Diff between built and installed module!)``); dkms also prints
errors between the lines (``Error! Could not locate dkms.conf file.``, system76-driver #336), which are kept apart.
Only ``installed`` means the module is in ``/lib/modules/<kernel>/updates/dkms`` where the boot finds it; ``built``
is compiled but not installed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.pinned_packages import kernel_key

# dkms 3: "module/version[, kernel, arch]"; dkms 2: "module, version[, kernel, arch]"
_HEAD_NEW = re.compile(r'^(?P<module>[^/,\s]+)/(?P<version>[^,\s]+)(?:, (?P<kernel>[^,\s]+), (?P<arch>[^,\s:]+))?$')
_HEAD_OLD = re.compile(r'^(?P<module>[^/,\s]+), (?P<version>[^,\s]+)(?:, (?P<kernel>[^,\s]+), (?P<arch>[^,\s:]+))?$')
_STATUS = re.compile(r'^(?P<status>[a-z][a-z-]*)(?:\s+(?P<note>.*))?$')
# /etc/default/grub: GRUB_DEFAULT=saved makes the boot follow grubenv's next_entry (grub-reboot) or saved_entry
# (grub-set-default); any other value (0, the default) boots the first entry, which grub-mkconfig makes the newest
# kernel (its 10_linux script sorts the kernels newest first).
_GRUB_DEFAULT = re.compile(r'''^\s*GRUB_DEFAULT=(["']?)(?P<value>[^"'\s#]*)\1''', re.MULTILINE)
# grubenv entries name a kernel by title ("Debian GNU/Linux, with Linux 6.1.0-18-amd64") or by id
# ("gnulinux-6.1.0-18-amd64-advanced-<uuid>"), after "Advanced options ...>" when in the submenu.
_ENTRY_KERNEL = (re.compile(r'with Linux (?P<kernel>[^\s>()]+)'), re.compile(r'gnulinux-(?P<kernel>[^>\s]+?)-(?:advanced|recovery)-'))


def _usable(status):
    """``installed``, or ``installed-weak`` (RHEL's weak-updates link to a build for a compatible kernel)."""
    return status == 'installed' or status.startswith('installed-')


def parse_dkms_status(text):
    """``dkms status`` -> {'builds': [{module, version, kernel, arch, status, note}], 'errors': [lines]}.

    ``kernel`` and ``arch`` are '' for a module only added (no build). Lines that are not a status line (dkms's
    ``Error!`` messages, blank lines) go to ``errors``; none of them is fatal.
    """
    builds, errors = [], []
    for line in (text or '').splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        head, sep, tail = stripped.partition(': ')
        if not sep and stripped.endswith(':'):
            head, tail = stripped[:-1], ''
        match = (_HEAD_NEW.match(head) or _HEAD_OLD.match(head)) if head else None
        status = _STATUS.match(tail.strip()) if match else None
        if not match or not status:
            errors.append(stripped)
            continue
        builds.append({'module': match.group('module'), 'version': match.group('version'),
                       'kernel': match.group('kernel') or '', 'arch': match.group('arch') or '',
                       'status': status.group('status'), 'note': (status.group('note') or '').strip()})
    return {'builds': builds, 'errors': errors}


def _entry_kernel(entry, installed):
    for pattern in _ENTRY_KERNEL:
        for match in pattern.finditer(entry or ''):
            if match.group('kernel') in installed:
                return match.group('kernel')
    return None


def next_boot_kernel(running, installed, default_grub='', grubenv=''):
    """{'kernel', 'source'}: the kernel the next boot uses.

    ``installed``: the releases with a /boot/vmlinuz-*; ``default_grub``: /etc/default/grub's text;
    ``grubenv``: /boot/grub/grubenv's. With GRUB_DEFAULT=saved, grubenv's next_entry (grub-reboot, one boot) and
    then saved_entry (grub-set-default) when they name an installed kernel; otherwise the newest installed kernel
    (the first GRUB entry); with none installed (a container), the running one.
    """
    installed = list(installed or [])
    match = _GRUB_DEFAULT.search(default_grub or '')
    if match and match.group('value') == 'saved':
        env = dict(line.split('=', 1) for line in (grubenv or '').splitlines() if '=' in line and not line.startswith('#'))
        for key in ('next_entry', 'saved_entry'):
            kernel = _entry_kernel(env.get(key), installed)
            if kernel:
                return {'kernel': kernel, 'source': 'GRUB %s (GRUB_DEFAULT=saved)' % key}
    if installed:
        return {'kernel': sorted(installed, key=kernel_key)[-1], 'source': 'the newest /boot/vmlinuz-*'}
    return {'kernel': running, 'source': 'the running kernel (no /boot/vmlinuz-*)'}


def missing_builds(builds, kernel, ignore=()):
    """The modules whose newest version has no ``installed`` build for ``kernel``, sorted by name:
    [{module, version, status (what dkms says for that kernel, '' for nothing), built_for (kernels it is installed
    for)}]. Modules named in ``ignore`` are left out."""
    newest = {}
    for build in builds:
        name = build['module']
        if name in ignore:
            continue
        if name not in newest or kernel_key(build['version']) > kernel_key(newest[name]):
            newest[name] = build['version']
    missing = []
    for name in sorted(newest):
        rows = [build for build in builds if build['module'] == name and build['version'] == newest[name]]
        here = [build['status'] for build in rows if build['kernel'] == kernel]
        if any(_usable(status) for status in here):
            continue
        missing.append({'module': name, 'version': newest[name], 'status': here[0] if here else '',
                        'built_for': sorted(set(build['kernel'] for build in rows
                                                if build['kernel'] and _usable(build['status'])), key=kernel_key)})
    return missing


def describe_missing(missing, kernel):
    """One line per module: what dkms has and what to run (dkms autoinstall builds every added module)."""
    lines = []
    for entry in missing:
        where = ('installed for %s only' % ', '.join(entry['built_for'])) if entry['built_for'] else 'built for no kernel'
        state = ' (%s for %s)' % (entry['status'], kernel) if entry['status'] else ''
        lines.append('%s/%s: %s%s' % (entry['module'], entry['version'], where, state))
    return lines


def dkms_report(status_text, running, installed, default_grub='', grubenv='', ignore=()):
    """The decision for one node: {next_boot: {kernel, source}, builds, errors, missing, message}.

    ``message`` is '' when every module dkms knows has an installed build for the next boot's kernel, else one
    sentence naming the kernel, each module and the remedy (install the kernel's headers, then dkms autoinstall).
    """
    parsed = parse_dkms_status(status_text)
    boot = next_boot_kernel(running, installed, default_grub, grubenv)
    missing = missing_builds(parsed['builds'], boot['kernel'], ignore)
    message = ''
    if missing:
        message = ('the next boot uses kernel %s (%s), and DKMS has no installed build of %s for it: %s. The node would '
                   'boot without these modules. Install linux-headers-%s, run dkms autoinstall -k %s and check dkms '
                   'status (the build logs are under /var/lib/dkms/<module>/<version>/build/), or boot another kernel'
                   % (boot['kernel'], boot['source'], ', '.join(entry['module'] for entry in missing),
                      '; '.join(describe_missing(missing, boot['kernel'])), boot['kernel'], boot['kernel']))
    return {'next_boot': boot, 'builds': parsed['builds'], 'errors': parsed['errors'], 'missing': missing,
            'message': message}


def kernel_hygiene_problems(settings):
    """What is wrong with the nvidia_driver role's kernel-hygiene variables (without their ``nvidia_driver_``
    prefix): initramfs_command (an argv list), unattended_upgrades_blacklist (Python regular expressions that
    unattended-upgrades compiles; an apt.conf string cannot hold a double quote) and dkms_ignore (module names as
    dkms status prints them). One line per problem, naming the variable."""
    problems = []
    command = settings.get('initramfs_command')
    if not isinstance(command, list) or not command or not all(isinstance(arg, str) and arg for arg in command):
        problems.append('nvidia_driver_initramfs_command must be a non-empty list of non-empty strings (an argv, such '
                        'as [update-initramfs, -u]), got %r' % (command,))
    for entry in settings.get('unattended_upgrades_blacklist') or []:
        if not isinstance(entry, str) or not entry.strip() or '"' in entry or '\n' in entry:
            problems.append('nvidia_driver_unattended_upgrades_blacklist: %r is not a one-line string without double '
                            'quotes (apt.conf strings cannot hold one)' % (entry,))
            continue
        try:
            re.compile(entry)
        except re.error as exc:
            problems.append('nvidia_driver_unattended_upgrades_blacklist: %r is not a Python regular expression (%s); '
                            'unattended-upgrades compiles each entry' % (entry, exc))
    for name in settings.get('dkms_ignore') or []:
        if not isinstance(name, str) or not re.match(r'^[^\s,/:]+$', name):
            problems.append('nvidia_driver_dkms_ignore: %r is not a DKMS module name as dkms status prints it (no '
                            'spaces, commas, slashes or colons; the name only, without its version)' % (name,))
    return problems
