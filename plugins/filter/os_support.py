# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-OS decisions of the slurm, enroot and preflight roles (module_utils/os_support.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib

from ansible.errors import AnsibleFilterError

# imported on the first call, not when Ansible loads the filter files (tests/unit/plugins/filter/test_filter_imports.py)
_MODULE = 'ansible_collections.aicluster.infra.plugins.module_utils.os_support'


def _facts(name, facts):
    if not isinstance(facts, dict):
        raise AnsibleFilterError('%s: expected ansible_facts (a mapping), got %r' % (name, facts))
    return facts


def _slurm_source_plan(facts, policy_text='', hpc_repository=None, hpc_configured=False):
    return importlib.import_module(_MODULE).slurm_source_plan(
        _facts('slurm_source_plan', facts), policy_text or '', hpc_repository, bool(hpc_configured))


def _enroot_apparmor_plan(facts, observed=None):
    return importlib.import_module(_MODULE).enroot_apparmor_plan(_facts('enroot_apparmor_plan', facts), observed or {})


def _secure_boot_state(efi_present, efivar_b64=None, mokutil_text=None):
    return importlib.import_module(_MODULE).secure_boot_state(bool(efi_present), efivar_b64 or None, mokutil_text or None)


class FilterModule(object):
    def filters(self):
        return {
            'slurm_source_plan': _slurm_source_plan,
            'enroot_apparmor_plan': _enroot_apparmor_plan,
            'secure_boot_state': _secure_boot_state,
        }
