# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the software stack: the bill of materials' check (public) and the rolling upgrade's node step."""

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


class FilterModule(object):
    """aicluster.infra software-stack filters."""

    def filters(self):
        return {
            'bom_problems': _bom_problems,
            'rolling_node_step': _rolling_node_step,
        }
