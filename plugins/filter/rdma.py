# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rdma role's decisions: its variable checks, which package changes bring kernel modules, the firmware report
and the device check (plugins/module_utils/rdma_plan.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

# Imported on a filter's first call, not with this file (docs/scale.md "What a task costs the control node").
_RDMA_PLAN = 'ansible_collections.aicluster.infra.plugins.module_utils.rdma_plan'


def _call(name, function, *args, **kwargs):
    try:
        return getattr(importlib.import_module(_RDMA_PLAN), function)(*args, **kwargs)
    except (TypeError, ValueError, KeyError) as exc:
        raise AnsibleFilterError('%s: %s' % (name, exc))


def _rdma_vars_problems(settings):
    return _call('rdma_vars_problems', 'rdma_vars_problems', settings)


def _rdma_kernel_module_packages(packages, profile=''):
    return _call('rdma_kernel_module_packages', 'kernel_module_packages', packages, profile or '')


def _rdma_firmware_report(query, expected, images=None, tool='mlxfwmanager'):
    return _call('rdma_firmware_report', 'firmware_report', query, expected, images or {}, tool=tool)


def _rdma_device_check(query, require=False, check_mode=False):
    return _call('rdma_device_check', 'device_check', query, require=boolean(require, strict=False),
                 check_mode=boolean(check_mode, strict=False))


def _rdma_nvidia_dkms_rebuild(changed_modules, nvidia_versions, kernels):
    return _call('rdma_nvidia_dkms_rebuild', 'nvidia_dkms_rebuild', changed_modules, nvidia_versions, kernels)


class FilterModule(object):
    """aicluster.infra rdma role filters."""

    def filters(self):
        return {
            'rdma_vars_problems': _rdma_vars_problems,
            'rdma_kernel_module_packages': _rdma_kernel_module_packages,
            'rdma_firmware_report': _rdma_firmware_report,
            'rdma_device_check': _rdma_device_check,
            'rdma_nvidia_dkms_rebuild': _rdma_nvidia_dkms_rebuild,
        }
