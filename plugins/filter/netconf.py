# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Internal steps of the fabric_netconf role (the OS network configuration roles ipoib and roce share). The decisions
live in module_utils/netconf.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib

from ansible.errors import AnsibleFilterError

# Imported on a filter's first call, not with this file (docs/scale.md "What a task costs the control node").
_MODULE = 'ansible_collections.aicluster.infra.plugins.module_utils.netconf'


def _fabric_netconf_live_problems(interfaces, links):
    try:
        return importlib.import_module(_MODULE).live_problems(list(interfaces or []), links)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise AnsibleFilterError('fabric_netconf_live_problems: %s' % exc)


class FilterModule(object):
    """aicluster.infra fabric_netconf role filters (internal)."""

    def filters(self):
        return {'fabric_netconf_live_problems': _fabric_netconf_live_problems}
