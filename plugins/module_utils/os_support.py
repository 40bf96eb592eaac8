# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-OS decisions (Debian 12, Ubuntu 22.04, Ubuntu 24.04): where Slurm comes from, Enroot's AppArmor profile, and
the Secure Boot state. Pure functions fed with ansible_facts-shaped dicts and what the tasks read; the lab runs
Debian 12 only (Ubuntu's archive is not reachable from it), so Ubuntu's answers are proven by unit tests with each
OS's facts (tests/unit/plugins/module_utils/test_os_support.py; docs/stack.md "Operating systems").
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import binascii
import re

# ------------------------------------------------------------------ Slurm
# The oldest Slurm the slurm role's configuration runs on: cgroup/v2 (CgroupPlugin=cgroup/v2, the only cgroup plugin
# on a cgroup v2 host) and the settings it writes first appeared in 22.05 (https://slurm.schedmd.com/cgroup_v2.html).
SLURM_MIN = (22, 5)
# The distribution's Slurm (source package slurm-wlm) per OS, with where each version is published.
DISTRIBUTION_SLURM = {
    ('Debian', '12'): {'version': '22.05.8-4+deb12u3', 'source': 'https://packages.debian.org/src:slurm-wlm (bookworm)'},
    # jammy's slurm-wlm-basic-plugins has cgroup_v1.so and no cgroup_v2.so: slurmd cannot start on 22.04's cgroup v2
    ('Ubuntu', '22.04'): {'version': '21.08.5-2ubuntu1',
                          'source': 'https://packages.ubuntu.com/jammy/amd64/libslurm-dev (source slurm-wlm)'},
    ('Ubuntu', '24.04'): {'version': '23.11.4-1.2ubuntu5', 'source': 'https://packages.ubuntu.com/noble/slurm-wlm'},
}
_SLURM_VERSION = re.compile(r'^(?:[0-9]+:)?(?P<major>[0-9]+)\.(?P<minor>[0-9]+)')
_POLICY_LINE = re.compile(r'^\s+(?P<key>Installed|Candidate):\s*(?P<value>\S+)\s*$')


def os_key(facts):
    """(distribution, release) of ansible_facts: ('Ubuntu', '22.04'), ('Debian', '12')."""
    facts = facts or {}
    name = str(facts.get('distribution') or '')
    if name == 'Ubuntu':
        return name, str(facts.get('distribution_version') or '')
    return name, str(facts.get('distribution_major_version') or '')


def slurm_version_tuple(version):
    """(major, minor) of a Slurm package version (``21.08.5-2ubuntu1`` -> (21, 8)), or None."""
    match = _SLURM_VERSION.match(str(version or '').strip())
    return (int(match.group('major')), int(match.group('minor'))) if match else None


def parse_apt_cache_policy(text):
    """``installed`` and ``candidate`` of one package from ``apt-cache policy NAME`` (None for ``(none)``)."""
    found = {'installed': None, 'candidate': None}
    for line in (text or '').splitlines():
        match = _POLICY_LINE.match(line)
        if match and match.group('value') != '(none)':
            found[match.group('key').lower()] = match.group('value')
    return found


def _old(version):
    numbers = slurm_version_tuple(version)
    return numbers is not None and numbers < SLURM_MIN


def slurm_source_plan(facts, policy_text='', hpc_repository=None, hpc_configured=False):
    """Where this host's Slurm comes from, and what stops the slurm role before it writes anything.

    ``facts``: ansible_facts (distribution, distribution_version, distribution_major_version). ``policy_text``: the
    output of ``apt-cache policy slurm-client``. ``hpc_repository``: ``aicluster_bom.repositories.hpc``.
    ``hpc_configured``: the hpc repository is in apt's lists already (read again after it was added).
    Returns ``use_hpc`` (the distribution's Slurm is older than 22.05: it must come from the hpc repository),
    ``distribution`` (its version and source; None for an OS the table does not know), ``installed``,
    ``candidate`` and ``problems`` (one line each, naming the variable to set).
    """
    key = os_key(facts)
    label = ' '.join(part for part in key if part) or 'this OS'
    distribution = DISTRIBUTION_SLURM.get(key)
    policy = parse_apt_cache_policy(policy_text)
    use_hpc = bool(distribution) and _old(distribution['version'])
    url = str((hpc_repository or {}).get('url') or '') if isinstance(hpc_repository, dict) else ''
    problems = []
    if use_hpc and not url:
        problems.append(
            '%s ships Slurm %s (%s), older than 22.05: its cgroup plugin cannot run on cgroup v2 and it lacks settings '
            'this role writes. Set aicluster_bom.repositories.hpc (url, suite, key_url) to a repository with Slurm '
            '>= 22.05 (the site\'s own build or SchedMD\'s packages); the role installs Slurm from it'
            % (label, distribution['version'], distribution['source']))
    if _old(policy['installed']):
        problems.append('slurm-client %s is installed on %s, older than 22.05: remove the old Slurm packages and '
                        'install Slurm >= 22.05%s' % (policy['installed'], label,
                                                      ' from aicluster_bom.repositories.hpc' if use_hpc else ''))
    elif _old(policy['candidate']) and (hpc_configured or not use_hpc):
        problems.append('apt would install slurm-client %s on %s, older than 22.05%s' % (
            policy['candidate'], label,
            ': aicluster_bom.repositories.hpc (%s) offers no newer Slurm' % url if use_hpc else
            '; set aicluster_bom.repositories.hpc to a repository with Slurm >= 22.05'))
    return {'use_hpc': use_hpc, 'distribution': distribution, 'installed': policy['installed'],
            'candidate': policy['candidate'], 'problems': problems}


# ------------------------------------------------------------------ Enroot and AppArmor
# enroot's .deb (3.5.0 on) installs conf/apparmor.profile as /etc/apparmor.d/enroot (pkg/deb/rules: dh_apparmor
# --profile-name=enroot): `abi <abi/4.0>`, `/usr/bin/enroot-nsenter flags=(unconfined) { allow userns create, ... }`.
# Its maintainers: "The apparmor profile is required for Ubuntu 23.10 and above"; on 22.04 it fails to parse
# ("Could not open 'abi/4.0'") and is disabled with a link in /etc/apparmor.d/disable (NVIDIA/enroot #201, flx42);
# doc/requirements.md: apparmor_restrict_unprivileged_userns must be 0 "unless {datadir}/enroot/apparmor.profile is
# installed". Debian 12's AppArmor (3.0) has no abi/4.0 either and does not restrict user namespaces.
ENROOT_PROFILE = '/etc/apparmor.d/enroot'
ENROOT_PROFILE_DISABLED = '/etc/apparmor.d/disable/enroot'
# Ubuntu from 23.10 restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1;
# https://ubuntu.com/blog/ubuntu-23-10-restricted-unprivileged-user-namespaces), 24.04 by default.
_RESTRICTING = {('Ubuntu', '24.04')}


def _flag(value):
    text = str(value).strip() if value is not None else ''
    return None if text == '' else text == '1'


def enroot_apparmor_plan(facts, observed=None):
    """What to do with enroot's AppArmor profile on this host: ``load`` it, ``disable`` it, or ``none``.

    ``observed``: ``restrict_userns`` (the content of /proc/sys/kernel/apparmor_restrict_unprivileged_userns; None
    where the file does not exist), ``abi_4_0`` (/etc/apparmor.d/abi/4.0 exists), ``profile`` (/etc/apparmor.d/enroot
    exists), ``apparmor`` (/sys/kernel/security/apparmor exists). Returns ``action``, ``reason`` and ``problems``.
    """
    observed = observed or {}
    key = os_key(facts)
    label = ' '.join(part for part in key if part) or 'this OS'
    restricted = _flag(observed.get('restrict_userns'))
    if restricted is None:
        restricted = key in _RESTRICTING
    abi4 = observed.get('abi_4_0')
    abi4 = (key in _RESTRICTING) if abi4 is None else bool(abi4)
    profile = observed.get('profile')
    profile = True if profile is None else bool(profile)
    if restricted:
        problems = []
        if not profile:
            problems.append('%s restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1) '
                            'and %s is missing: install enroot >= 3.5.0, whose package ships the profile, or every '
                            'container of a non-root user fails (NVIDIA/enroot #201)' % (label, ENROOT_PROFILE))
        elif not abi4:
            problems.append('%s restricts unprivileged user namespaces but has no /etc/apparmor.d/abi/4.0, which '
                            'enroot\'s profile needs: upgrade apparmor' % label)
        return {'action': 'load', 'problems': problems,
                'reason': '%s restricts unprivileged user namespaces: enroot-nsenter needs its AppArmor profile '
                          '(userns) for a non-root user\'s containers' % label}
    if profile and not abi4:
        return {'action': 'disable', 'problems': [],
                'reason': '%s does not restrict user namespaces and its AppArmor has no abi/4.0: the profile would not '
                          'parse, so it is disabled as enroot\'s maintainers say (NVIDIA/enroot #201)' % label}
    return {'action': 'none', 'problems': [],
            'reason': '%s does not restrict user namespaces: enroot needs no AppArmor profile' % label}


# ------------------------------------------------------------------ Secure Boot
# The EFI global variable SecureBoot (efivarfs: 4 bytes of attributes, little-endian, then the 1-byte value; Linux
# Documentation/filesystems/efivarfs.rst), 1 = Secure Boot on.
SECURE_BOOT_EFIVAR = '/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c'
# mokutil --sb-state (lcp/mokutil src/mokutil.c): "SecureBoot enabled" (+ "SecureBoot validation is disabled in
# shim"), "SecureBoot disabled" (+ "Platform is in Setup Mode"), on stderr "EFI variables are not supported on this
# system" and "This system doesn't support Secure Boot".
_MOKUTIL = (
    (re.compile(r'^SecureBoot enabled$', re.M), 'enabled'),
    (re.compile(r'^SecureBoot disabled$', re.M), 'disabled'),
    (re.compile(r'^EFI variables are not supported on this system$', re.M), 'legacy'),
    (re.compile(r"^This system doesn't support Secure Boot$", re.M), 'unsupported'),
)
_SHIM_OFF = re.compile(r'^SecureBoot validation is disabled in shim$', re.M)
_SETUP_MODE = re.compile(r'^Platform is in Setup Mode$', re.M)
SECURE_BOOT_WARNING = (
    'Secure Boot is on: the kernel loads only signed modules, and the DKMS builds of the stack (nvidia, '
    'mlnx-ofed-kernel and its companions) are not signed unless DKMS signs them with a Machine Owner Key enrolled '
    'with mokutil --import (https://wiki.debian.org/SecureBoot, "DKMS and Secure Boot"); without one the driver '
    'installs and never loads. Enroll the key, or turn Secure Boot off in the firmware')


def parse_mokutil_sb_state(text):
    """``state`` (enabled, disabled, legacy, unsupported) of ``mokutil --sb-state`` output (stdout and stderr), plus
    ``setup_mode`` and ``shim_validation`` (False when shim's validation is off); None for other text."""
    text = (text or '').replace('\r\n', '\n')
    for pattern, state in _MOKUTIL:
        if pattern.search(text):
            return {'state': state, 'setup_mode': bool(_SETUP_MODE.search(text)),
                    'shim_validation': not _SHIM_OFF.search(text)}
    return None


def parse_secure_boot_efivar(content_b64):
    """True/False from the SecureBoot efivarfs file's content (base64, as slurp returns it); None when unreadable."""
    try:
        data = base64.b64decode(content_b64 or '', validate=True)
    except (binascii.Error, TypeError, ValueError):
        return None
    if len(data) != 5:
        return None
    return data[4] == 1


def secure_boot_state(efi_present, efivar_b64=None, mokutil_text=None):
    """The Secure Boot state of a host: ``state`` (enabled, disabled, setup_mode, legacy, unsupported, unknown),
    ``source`` (efivar, mokutil, /sys/firmware/efi), ``warn`` and a ``message``.

    ``efi_present``: /sys/firmware/efi exists (booted through UEFI). ``efivar_b64``: the SecureBoot variable's
    content (None: not readable). ``mokutil_text``: ``mokutil --sb-state``'s output (None: not run or not installed).
    The EFI variable wins: it is what the kernel reads; mokutil adds the setup mode and shim's validation.
    """
    mokutil = parse_mokutil_sb_state(mokutil_text) if mokutil_text else None
    efivar = parse_secure_boot_efivar(efivar_b64) if efivar_b64 else None
    if not efi_present:
        state, source = 'legacy', '/sys/firmware/efi'
    elif efivar is not None:
        state, source = ('enabled' if efivar else 'disabled'), 'efivar'
        if mokutil and mokutil['setup_mode'] and not efivar:
            state = 'setup_mode'
    elif mokutil is not None:
        state, source = mokutil['state'], 'mokutil'
        if state == 'disabled' and mokutil['setup_mode']:
            state = 'setup_mode'
    else:
        state, source = 'unknown', 'efivar'
    messages = {
        'enabled': SECURE_BOOT_WARNING,
        'disabled': 'Secure Boot is off: unsigned DKMS modules load',
        'setup_mode': 'Secure Boot is off (the firmware is in Setup Mode): unsigned DKMS modules load',
        'legacy': 'no /sys/firmware/efi: booted through legacy BIOS (or EFI is hidden, as in a container); no Secure Boot',
        'unsupported': 'the firmware has no SecureBoot variable: no Secure Boot',
        'unknown': 'UEFI boot, but neither the SecureBoot variable nor mokutil could be read',
    }
    message = messages[state]
    # shim's MokSBStateRT makes the kernel treat Secure Boot as off (Linux drivers/firmware/efi/libstub/secureboot.c)
    if state == 'enabled' and mokutil and not mokutil['shim_validation']:
        message = 'Secure Boot is on, but shim\'s validation is disabled (mokutil --disable-validation): unsigned DKMS modules load'
    return {'state': state, 'source': source, 'warn': state == 'enabled' and not (mokutil and not mokutil['shim_validation']),
            'message': message}
