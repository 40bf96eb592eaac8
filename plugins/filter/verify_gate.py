# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the verify gate before any measurement (docs/plugins.md lists them): which nodes run jobs and which
idle ones the stage reserves (``module_utils/verify/busy.py``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError


def verify_busy_plan(read, expected):
    """slurm_node_info's registered result and the gate's expectations in; busy nodes and the reservation plan out."""
    # imported on the first call (see filter/verify.py)
    from ansible_collections.aicluster.infra.plugins.module_utils.verify import busy
    try:
        return busy.plan(read, expected)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise AnsibleFilterError('verify_busy_plan: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'verify_busy_plan': verify_busy_plan}
