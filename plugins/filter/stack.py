# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the software stack: the bill of materials' check (public), the rolling upgrade's node step and the
bring-up's reboot stage (playbooks/reboot.yml)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib

# Imported on a filter's first call, not with this file (docs/scale.md "What a task costs the control node").
_MODULE_UTILS = 'ansible_collections.aicluster.infra.plugins.module_utils.'


def _bom_problems(bom, require=()):
    return importlib.import_module(_MODULE_UTILS + 'bom').bom_problems(bom, require)


def _rolling_node_step(node_info, name, reason):
    records = [record for record in (node_info or {}).get('nodes') or [] if record.get('NodeName') == name]
    return importlib.import_module(_MODULE_UTILS + 'rolling').node_step(records[0] if records else None, reason)


def _bringup_reboot_step(reasons, name, slurm, enabled):
    return importlib.import_module(_MODULE_UTILS + 'bringup').reboot_step(name, reasons, slurm, enabled)


def _bringup_boot_problems(observed):
    return importlib.import_module(_MODULE_UTILS + 'bringup').boot_problems(observed)


class FilterModule(object):
    """aicluster.infra software-stack filters."""

    def filters(self):
        return {
            'bom_problems': _bom_problems,
            'rolling_node_step': _rolling_node_step,
            'bringup_reboot_step': _bringup_reboot_step,
            'bringup_boot_problems': _bringup_boot_problems,
        }
