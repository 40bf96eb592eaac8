# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Internal steps of the gpu stage's roles (nvidia_driver, cuda): variable checks, the packages a node reads, and
the driver role's two decisions. The decisions live in module_utils/nvidia_packages.py and nvidia_driver.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib

from ansible.errors import AnsibleFilterError

# Imported on a filter's first call, not with this file: Ansible loads every filter file of a collection in every
# worker that uses any aicluster.infra filter (docs/scale.md "What a task costs the control node").
_MODULE_UTILS = 'ansible_collections.aicluster.infra.plugins.module_utils.'
_FUNCTIONS = {
    'candidate_names': 'nvidia_packages',
    'cuda_problems': 'nvidia_packages',
    'driver_plan': 'nvidia_driver',
    'driver_problems': 'nvidia_packages',
    'driver_state': 'nvidia_driver',
    'persistence': 'nvidia_driver',
}


def _call(filter_name, function, *args):
    """Run a module_utils function; ValueError/TypeError/KeyError become AnsibleFilterError naming the filter."""
    try:
        return getattr(importlib.import_module(_MODULE_UTILS + _FUNCTIONS[function]), function)(*args)
    except (TypeError, ValueError, KeyError) as exc:
        raise AnsibleFilterError('%s: %s' % (filter_name, exc))


def _dict(value):
    return dict(value) if value else {}


def _nvidia_driver_problems(settings):
    return _call('nvidia_driver_problems', 'driver_problems', _dict(settings))


def _nvidia_driver_candidates(settings):
    settings = _dict(settings)
    return _call('nvidia_driver_candidates', 'candidate_names', settings['branch'], settings.get('os_family'),
                 settings.get('package_names'), settings.get('extra_packages'))


def _nvidia_driver_plan(observed, settings):
    return _call('nvidia_driver_plan', 'driver_plan', _dict(settings), _dict(observed))


def _nvidia_driver_state(observed, plan):
    return _call('nvidia_driver_state', 'driver_state', _dict(plan), _dict(observed))


def _nvidia_driver_persistence(observed):
    return _call('nvidia_driver_persistence', 'persistence', _dict(observed))


def _cuda_problems(settings):
    return _call('cuda_problems', 'cuda_problems', _dict(settings))


class FilterModule(object):
    """aicluster.infra gpu stage filters (internal to the nvidia_driver and cuda roles)."""

    def filters(self):
        return {
            'nvidia_driver_problems': _nvidia_driver_problems,
            'nvidia_driver_candidates': _nvidia_driver_candidates,
            'nvidia_driver_plan': _nvidia_driver_plan,
            'nvidia_driver_state': _nvidia_driver_state,
            'nvidia_driver_persistence': _nvidia_driver_persistence,
            'cuda_problems': _cuda_problems,
        }
