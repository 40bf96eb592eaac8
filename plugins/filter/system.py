# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over host facts used by the preflight role."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.aicluster.infra.plugins.module_utils.system import free_space_report


def _free_space_report(mounts, minimums_gib):
    if not isinstance(minimums_gib, dict):
        raise AnsibleFilterError('free_space_report: expected a dict of path: GiB, got %r' % (minimums_gib,))
    try:
        return free_space_report(mounts, minimums_gib)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError('free_space_report: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {
            'free_space_report': _free_space_report,
        }
