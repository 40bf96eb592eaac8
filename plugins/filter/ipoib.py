# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Internal steps of the ipoib role: one host's plan and problems, the fleet's duplicate addresses, the renderer,
and the mode read back. The decisions live in module_utils/ipoib.py (the live interfaces against the plan:
filter fabric_netconf_live_problems, role fabric_netconf)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib

from ansible.errors import AnsibleFilterError

# Imported on a filter's first call, not with this file (docs/scale.md "What a task costs the control node").
_MODULE = 'ansible_collections.aicluster.infra.plugins.module_utils.ipoib'


def _call(filter_name, function, *args):
    """Run a module_utils function; ValueError/TypeError/KeyError become AnsibleFilterError naming the filter."""
    try:
        return getattr(importlib.import_module(_MODULE), function)(*args)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise AnsibleFilterError('%s: %s' % (filter_name, exc))


def _ipoib_plan(settings, ib_info):
    """problems, skip and interfaces in one call; sysctl from the fleet size and the number of subnets."""
    settings = dict(settings or {})
    plan = _call('ipoib_plan', '_plan', settings, dict(ib_info or {}))
    sysctl = {}
    if not plan['problems'] and not plan['skip']:
        subnets = len(plan['interfaces']) or 1  # one subnet per interface: parents and children
        sysctl = _call('ipoib_plan', 'neigh_gc_thresh', settings.get('nodes_per_subnet') or
                       settings.get('fleet_size') or 0, subnets)
    return dict(plan, sysctl=sysctl)


def _ipoib_fleet_problems(plans):
    return _call('ipoib_fleet_problems', 'fleet_problems', dict(plans or {}))


def _ipoib_renderer(facts, requested='auto', interfaces=None):
    return _call('ipoib_renderer', 'ipoib_renderer', dict(facts or {}), requested, list(interfaces or []))


def _ipoib_mode_problems(interfaces, observed):
    return _call('ipoib_mode_problems', 'mode_problems', list(interfaces or []), dict(observed or {}))


class FilterModule(object):
    """aicluster.infra ipoib role filters (internal)."""

    def filters(self):
        return {
            'ipoib_plan': _ipoib_plan,
            'ipoib_fleet_problems': _ipoib_fleet_problems,
            'ipoib_renderer': _ipoib_renderer,
            'ipoib_mode_problems': _ipoib_mode_problems,
        }
