# -*- coding: utf-8 -*-
"""module_utils/os_support.py: the per-OS decisions, fed with each OS's facts (Ubuntu cannot run in the lab)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64

import pytest

from ansible_collections.aicluster.infra.plugins.module_utils.os_support import (
    enroot_apparmor_plan, parse_apt_cache_policy, parse_mokutil_sb_state, parse_secure_boot_efivar,
    secure_boot_state, slurm_source_plan, slurm_version_tuple)

# ansible_facts as ansible-core's distribution collector reports each release (from /etc/os-release and, on Debian,
# /etc/debian_version); only the keys the roles read.
FACTS = {
    'debian-12': {'distribution': 'Debian', 'distribution_version': '12.8', 'distribution_major_version': '12',
                  'distribution_release': 'bookworm', 'os_family': 'Debian', 'kernel': '6.1.0-28-amd64'},
    'ubuntu-22.04': {'distribution': 'Ubuntu', 'distribution_version': '22.04', 'distribution_major_version': '22',
                     'distribution_release': 'jammy', 'os_family': 'Debian', 'kernel': '5.15.0-126-generic'},
    'ubuntu-24.04': {'distribution': 'Ubuntu', 'distribution_version': '24.04', 'distribution_major_version': '24',
                     'distribution_release': 'noble', 'os_family': 'Debian', 'kernel': '6.8.0-49-generic'},
}
HPC = {'url': 'https://repo.example.org/hpc/', 'suite': './', 'key_url': 'https://repo.example.org/hpc/key.asc'}
NO_HPC = {'url': '', 'suite': './', 'key_url': ''}


def _policy(installed, candidate):
    # apt-cache policy's layout (apt 2.x)
    return ('slurm-client:\n  Installed: %s\n  Candidate: %s\n  Version table:\n     %s 500\n'
            '        500 http://archive.ubuntu.com/ubuntu jammy/universe amd64 Packages\n' % (installed, candidate, candidate))


# --- Slurm: the distribution's version per OS (packages.debian.org, packages.ubuntu.com)
def test_slurm_versions_of_each_os():
    assert slurm_version_tuple('21.08.5-2ubuntu1') == (21, 8)
    assert slurm_version_tuple('23.11.4-1.2ubuntu5') == (23, 11)
    assert slurm_version_tuple('22.05.8-4+deb12u3') == (22, 5)
    assert parse_apt_cache_policy(_policy('(none)', '21.08.5-2ubuntu1')) == {'installed': None, 'candidate': '21.08.5-2ubuntu1'}


@pytest.mark.parametrize('os_name, candidate', [('debian-12', '22.05.8-4+deb12u3'), ('ubuntu-24.04', '23.11.4-1.2ubuntu5')])
def test_debian_12_and_ubuntu_24_04_use_their_own_slurm(os_name, candidate):
    plan = slurm_source_plan(FACTS[os_name], _policy('(none)', candidate), NO_HPC)
    assert plan['use_hpc'] is False and plan['problems'] == [] and plan['candidate'] == candidate


def test_ubuntu_22_04_without_the_hpc_repository_is_refused_naming_the_variable():
    plan = slurm_source_plan(FACTS['ubuntu-22.04'], _policy('(none)', '21.08.5-2ubuntu1'), NO_HPC)
    assert plan['use_hpc'] is True
    assert len(plan['problems']) == 1
    assert 'aicluster_bom.repositories.hpc' in plan['problems'][0] and '21.08.5-2ubuntu1' in plan['problems'][0]
    assert 'cgroup v2' in plan['problems'][0]


def test_ubuntu_22_04_with_the_hpc_repository():
    # before the repository is added, apt's candidate is still jammy's 21.08: not a problem yet
    first = slurm_source_plan(FACTS['ubuntu-22.04'], _policy('(none)', '21.08.5-2ubuntu1'), HPC)
    assert first['use_hpc'] is True and first['problems'] == []
    # after it: the site's 23.11 wins
    after = slurm_source_plan(FACTS['ubuntu-22.04'], _policy('(none)', '23.11.10-1'), HPC, hpc_configured=True)
    assert after['problems'] == []
    # a repository without a newer Slurm
    stale = slurm_source_plan(FACTS['ubuntu-22.04'], _policy('(none)', '21.08.5-2ubuntu1'), HPC, hpc_configured=True)
    assert stale['problems'] and 'offers no newer Slurm' in stale['problems'][0]


def test_an_installed_old_slurm_is_refused():
    plan = slurm_source_plan(FACTS['ubuntu-22.04'], _policy('21.08.5-2ubuntu1', '21.08.5-2ubuntu1'), HPC)
    assert plan['problems'] == ['slurm-client 21.08.5-2ubuntu1 is installed on Ubuntu 22.04, older than 22.05: remove the old '
                                'Slurm packages and install Slurm >= 22.05 from aicluster_bom.repositories.hpc']


def test_an_unknown_os_is_judged_by_apts_candidate_only():
    facts = {'distribution': 'Ubuntu', 'distribution_version': '20.04', 'distribution_major_version': '20'}
    assert slurm_source_plan(facts, _policy('(none)', '23.02.1-1'), NO_HPC)['problems'] == []
    assert slurm_source_plan(facts, _policy('(none)', '19.05.5-1'), NO_HPC)['problems']
    assert slurm_source_plan(facts, '', None) == {'use_hpc': False, 'distribution': None, 'installed': None,
                                                  'candidate': None, 'problems': []}


# --- Enroot's AppArmor profile (NVIDIA/enroot #201; conf/apparmor.profile)
@pytest.mark.parametrize('os_name, observed, action', [
    # 24.04: the sysctl is 1 by default, AppArmor 4 has abi/4.0: load the profile
    ('ubuntu-24.04', {'restrict_userns': '1', 'abi_4_0': True, 'profile': True, 'apparmor': True}, 'load'),
    # 22.04: no restriction (the sysctl is absent on its 5.15 kernel), AppArmor 3 has no abi/4.0: disable
    ('ubuntu-22.04', {'restrict_userns': None, 'abi_4_0': False, 'profile': True, 'apparmor': True}, 'disable'),
    # Debian 12: AppArmor 3.0, no restriction: disable, as on 22.04
    ('debian-12', {'restrict_userns': None, 'abi_4_0': False, 'profile': True, 'apparmor': True}, 'disable'),
    # the lab's enroot stand-in ships no profile: nothing to do
    ('debian-12', {'restrict_userns': None, 'abi_4_0': False, 'profile': False, 'apparmor': False}, 'none'),
    # facts only (nothing read): the OS decides
    ('ubuntu-24.04', {}, 'load'),
    ('ubuntu-22.04', {}, 'disable'),
    ('debian-12', {}, 'disable'),
], ids=['24.04', '22.04', 'debian-12', 'debian-12-no-profile', '24.04-facts', '22.04-facts', 'debian-12-facts'])
def test_enroot_apparmor_profile_per_os(os_name, observed, action):
    plan = enroot_apparmor_plan(FACTS[os_name], observed)
    assert plan['action'] == action and plan['problems'] == []


def test_a_restricting_host_without_the_profile_is_a_problem():
    plan = enroot_apparmor_plan(FACTS['ubuntu-24.04'], {'restrict_userns': '1', 'abi_4_0': True, 'profile': False})
    assert plan['action'] == 'load' and 'non-root user fails' in plan['problems'][0]
    # 22.04 with the restriction turned on by hand (HWE kernel, sysctl=1) but AppArmor 3: cannot load
    plan = enroot_apparmor_plan(FACTS['ubuntu-22.04'], {'restrict_userns': '1', 'abi_4_0': False, 'profile': True})
    assert plan['action'] == 'load' and 'abi/4.0' in plan['problems'][0]


# --- Secure Boot: mokutil --sb-state (lcp/mokutil src/mokutil.c) and the EFI variable
MOKUTIL = {
    'enabled': ('SecureBoot enabled\n', 'enabled', False, True),
    'enabled-shim-validation-off': ('SecureBoot enabled\nSecureBoot validation is disabled in shim\n', 'enabled', False, False),
    'disabled': ('SecureBoot disabled\n', 'disabled', False, True),
    'setup-mode': ('SecureBoot disabled\nPlatform is in Setup Mode\n', 'disabled', True, True),
    'legacy-bios': ('EFI variables are not supported on this system\n', 'legacy', False, True),
    'no-secureboot-variable': ("This system doesn't support Secure Boot\n", 'unsupported', False, True),
}


@pytest.mark.parametrize('name', sorted(MOKUTIL), ids=sorted(MOKUTIL))
def test_parse_mokutil_sb_state(name):
    text, state, setup, shim = MOKUTIL[name]
    assert parse_mokutil_sb_state(text) == {'state': state, 'setup_mode': setup, 'shim_validation': shim}
    assert parse_mokutil_sb_state(text.replace('\n', '\r\n'))['state'] == state


def test_parse_mokutil_other_text():
    assert parse_mokutil_sb_state('mokutil: command not found') is None
    assert parse_mokutil_sb_state('') is None


def _efivar(value):
    # attributes 0x06 (BOOTSERVICE_ACCESS | RUNTIME_ACCESS), little-endian, then the value
    return base64.b64encode(b'\x06\x00\x00\x00' + bytes([value])).decode()


def test_parse_secure_boot_efivar():
    assert parse_secure_boot_efivar(_efivar(1)) is True
    assert parse_secure_boot_efivar(_efivar(0)) is False
    assert parse_secure_boot_efivar(base64.b64encode(b'\x06\x00\x00').decode()) is None
    assert parse_secure_boot_efivar('not base64!') is None


def test_secure_boot_state():
    on = secure_boot_state(True, _efivar(1), 'SecureBoot enabled\n')
    assert on['state'] == 'enabled' and on['source'] == 'efivar' and on['warn'] is True
    assert 'Machine Owner Key' in on['message'] and 'nvidia' in on['message']
    assert secure_boot_state(True, _efivar(0))['warn'] is False
    assert secure_boot_state(True, _efivar(0), 'SecureBoot disabled\nPlatform is in Setup Mode\n')['state'] == 'setup_mode'
    assert secure_boot_state(True, None, 'SecureBoot enabled\n') == dict(on, source='mokutil')
    shim_off = secure_boot_state(True, _efivar(1), 'SecureBoot enabled\nSecureBoot validation is disabled in shim\n')
    assert shim_off['state'] == 'enabled' and shim_off['warn'] is False and 'shim' in shim_off['message']
    legacy = secure_boot_state(False, None, 'EFI variables are not supported on this system\n')
    assert legacy['state'] == 'legacy' and legacy['warn'] is False
    assert secure_boot_state(True, None, None)['state'] == 'unknown'
    assert secure_boot_state(True, None, "This system doesn't support Secure Boot\n")['state'] == 'unsupported'
