# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Internal steps of the dcgm role: its variables, DCGM against the driver, the exporter's liveness. The decisions
live in module_utils/dcgm_stack.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib

from ansible.errors import AnsibleFilterError

# Imported on a filter's first call, not with this file (docs/scale.md "What a task costs the control node").
_MODULE = 'ansible_collections.aicluster.infra.plugins.module_utils.dcgm_stack'


def _call(filter_name, function, *args):
    """Run a dcgm_stack function; ValueError/TypeError/KeyError become AnsibleFilterError naming the filter."""
    try:
        return getattr(importlib.import_module(_MODULE), function)(*args)
    except (TypeError, ValueError, KeyError) as exc:
        raise AnsibleFilterError('%s: %s' % (filter_name, exc))


def _dict(value):
    return dict(value) if value else {}


def _dcgm_problems(settings):
    return _call('dcgm_problems', 'dcgm_problems', _dict(settings))


def _dcgm_driver_check(nvidia_smi, settings):
    return _call('dcgm_driver_check', 'driver_check', _dict(settings), _dict(nvidia_smi))


def _dcgm_exporter_liveness(scrapes, expected_gpus=None, expected_count=0):
    scrapes = list(scrapes or [])
    if len(scrapes) != 2:
        raise AnsibleFilterError('dcgm_exporter_liveness: needs the two /metrics bodies, got %d' % len(scrapes))
    return _call('dcgm_exporter_liveness', 'exporter_liveness', scrapes[0], scrapes[1], list(expected_gpus or []),
                 int(expected_count or 0))


class FilterModule(object):
    """aicluster.infra dcgm role filters (internal to the role)."""

    def filters(self):
        return {
            'dcgm_problems': _dcgm_problems,
            'dcgm_driver_check': _dcgm_driver_check,
            'dcgm_exporter_liveness': _dcgm_exporter_liveness,
        }
