# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Internal steps of the containers stage's roles (enroot, pyxis, container_images): variable checks and the
enroot storage check. The decisions live in module_utils/containers.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib

from ansible.errors import AnsibleFilterError

# Imported on a filter's first call, not with this file (docs/scale.md "What a task costs the control node").
_MODULE = 'ansible_collections.aicluster.infra.plugins.module_utils.containers'


def _call(filter_name, function, *args):
    """Run a module_utils function; ValueError/TypeError/KeyError become AnsibleFilterError naming the filter."""
    try:
        return getattr(importlib.import_module(_MODULE), function)(*args)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise AnsibleFilterError('%s: %s' % (filter_name, exc))


def _dict(value):
    return dict(value) if value else {}


def _enroot_problems(settings):
    return _call('enroot_problems', 'enroot_problems', _dict(settings))


def _enroot_storage_problems(paths, findmnt, allowed=None):
    mounts = _call('enroot_storage_problems', 'parse_findmnt', findmnt or '')
    return _call('enroot_storage_problems', 'storage_problems', _dict(paths), mounts, list(allowed or []))


def _pyxis_problems(settings):
    return _call('pyxis_problems', 'pyxis_problems', _dict(settings))


def _container_images_problems(settings):
    return _call('container_images_problems', 'container_images_problems', _dict(settings))


class FilterModule(object):
    """aicluster.infra containers stage filters (internal to the enroot, pyxis and container_images roles)."""

    def filters(self):
        return {
            'enroot_problems': _enroot_problems,
            'enroot_storage_problems': _enroot_storage_problems,
            'pyxis_problems': _pyxis_problems,
            'container_images_problems': _container_images_problems,
        }
