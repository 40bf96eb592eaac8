# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Internal steps of the nccl role: one node's /etc/nccl.conf plan, and the play's report (warnings, differing nodes). The decisions live
in module_utils/nccl_conf.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib

from ansible.errors import AnsibleFilterError

# Imported on a filter's first call, not with this file (docs/scale.md "What a task costs the control node").
_MODULE = 'ansible_collections.aicluster.infra.plugins.module_utils.nccl_conf'


def _call(filter_name, function, *args):
    """Run a module_utils function; ValueError/TypeError/KeyError become AnsibleFilterError naming the filter."""
    try:
        return getattr(importlib.import_module(_MODULE), function)(*args)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise AnsibleFilterError('%s: %s' % (filter_name, exc))


def _nccl_conf_plan(settings, ib_info):
    return _call('nccl_conf_plan', 'conf_plan', dict(settings or {}), ib_info)


def _nccl_fleet_report(plans, compare=True):
    return _call('nccl_fleet_report', 'fleet_report', dict(plans or {}), bool(compare))


class FilterModule(object):
    """aicluster.infra nccl role filters (internal)."""

    def filters(self):
        return {
            'nccl_conf_plan': _nccl_conf_plan,
            'nccl_fleet_report': _nccl_fleet_report,
        }
