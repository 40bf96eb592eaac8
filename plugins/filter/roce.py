# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Internal steps of the roce role: one host's plan and problems, the fleet's duplicate addresses, and the renderer.
The decisions live in module_utils/roce.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib

from ansible.errors import AnsibleFilterError

# Imported on a filter's first call, not with this file (docs/scale.md "What a task costs the control node").
_MODULE = 'ansible_collections.aicluster.infra.plugins.module_utils.roce'


def _call(filter_name, function, *args):
    """Run a module_utils function; ValueError/TypeError/KeyError become AnsibleFilterError naming the filter."""
    try:
        return getattr(importlib.import_module(_MODULE), function)(*args)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise AnsibleFilterError('%s: %s' % (filter_name, exc))


def _roce_plan(settings, ib_info):
    """problems, skip, ports, interfaces, qos, unit and the settings file in one call."""
    return _call('roce_plan', '_plan', dict(settings or {}), dict(ib_info or {}))


def _roce_fleet_problems(plans):
    return _call('roce_fleet_problems', 'fleet_problems', dict(plans or {}))


def _roce_renderer(facts, requested='auto'):
    return _call('roce_renderer', 'roce_renderer', dict(facts or {}), requested)


class FilterModule(object):
    """aicluster.infra roce role filters (internal)."""

    def filters(self):
        return {
            'roce_plan': _roce_plan,
            'roce_fleet_problems': _roce_fleet_problems,
            'roce_renderer': _roce_renderer,
        }
