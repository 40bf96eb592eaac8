# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Internal steps of the opensm role: one SM host's instances and problems, the SM plan across hosts, the rogue
SMs of the compute nodes, and each instance's root switches. The decisions live in module_utils/opensm_plan.py,
opensm_rogue.py and opensm_roots.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib

from ansible.errors import AnsibleFilterError

# Imported on a filter's first call, not with this file (docs/scale.md "What a task costs the control node").
_MODULE = 'ansible_collections.aicluster.infra.plugins.module_utils.opensm_plan'
_ROGUE = 'ansible_collections.aicluster.infra.plugins.module_utils.opensm_rogue'
_ROOTS = 'ansible_collections.aicluster.infra.plugins.module_utils.opensm_roots'


def _call(filter_name, function, *args, **kwargs):
    """Run a module_utils function; ValueError/TypeError/KeyError become AnsibleFilterError naming the filter."""
    try:
        return getattr(importlib.import_module(kwargs.pop('module', _MODULE)), function)(*args)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise AnsibleFilterError('%s: %s' % (filter_name, exc))


def _opensm_plan(settings, ib_info, host, sm_hosts, gpu_nodes):
    return _call('opensm_plan', 'opensm_plan', dict(settings or {}), dict(ib_info or {}), host, list(sm_hosts or []),
                 list(gpu_nodes or []))


def _opensm_fleet_problems(plans):
    return _call('opensm_fleet_problems', 'opensm_fleet_problems', dict(plans or {}))


def _opensm_rogue_plan(read, host, gpu_nodes, allow_on_compute=False, stop=False):
    return _call('opensm_rogue_plan', 'rogue_plan', read if isinstance(read, str) else dict(read or {}), host,
                 list(gpu_nodes or []), allow_on_compute, stop, module=_ROGUE)


def _opensm_rogue_summary(plans, check_mode=False):
    return _call('opensm_rogue_summary', 'rogue_summary', dict(plans or {}), bool(check_mode), module=_ROGUE)


def _opensm_roots(value, engines, flavour, instances, fabric=None, header=None):
    return _call('opensm_roots', 'opensm_roots', value, list(engines or []), flavour, list(instances or []),
                 dict(fabric or {}), list(header or []), module=_ROOTS)


class FilterModule(object):
    """aicluster.infra opensm role filters (internal)."""

    def filters(self):
        return {
            'opensm_plan': _opensm_plan,
            'opensm_fleet_problems': _opensm_fleet_problems,
            'opensm_rogue_plan': _opensm_rogue_plan,
            'opensm_rogue_summary': _opensm_rogue_summary,
            'opensm_roots': _opensm_roots,
        }
