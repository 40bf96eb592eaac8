# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Internal steps of the opensm role: one SM host's instances and problems, the SM plan across hosts, and each
instance's root switches. The decisions live in module_utils/opensm_plan.py and opensm_roots.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib

from ansible.errors import AnsibleFilterError

# Imported on a filter's first call, not with this file (docs/scale.md "What a task costs the control node").
_MODULE = 'ansible_collections.aicluster.infra.plugins.module_utils.%s'


def _call(filter_name, function, *args):
    """Run a module_utils function; ValueError/TypeError/KeyError become AnsibleFilterError naming the filter."""
    try:
        return getattr(importlib.import_module(_MODULE % ('opensm_roots' if function == 'opensm_roots'
                                                          else 'opensm_plan')), function)(*args)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise AnsibleFilterError('%s: %s' % (filter_name, exc))


def _opensm_plan(settings, ib_info, host, sm_hosts, gpu_nodes):
    return _call('opensm_plan', 'opensm_plan', dict(settings or {}), dict(ib_info or {}), host, list(sm_hosts or []),
                 list(gpu_nodes or []))


def _opensm_fleet_problems(plans):
    return _call('opensm_fleet_problems', 'opensm_fleet_problems', dict(plans or {}))


def _opensm_roots(value, engines, flavour, instances, fabric=None, header=None):
    return _call('opensm_roots', 'opensm_roots', value, list(engines or []), flavour, list(instances or []),
                 dict(fabric or {}), list(header or []))


class FilterModule(object):
    """aicluster.infra opensm role filters (internal)."""

    def filters(self):
        return {
            'opensm_plan': _opensm_plan,
            'opensm_fleet_problems': _opensm_fleet_problems,
            'opensm_roots': _opensm_roots,
        }
