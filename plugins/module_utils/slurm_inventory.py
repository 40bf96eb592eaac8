# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Inventory groups from Slurm's view of the nodes (the aicluster.infra.slurm_nodes inventory plugin).

Pure functions over ``scontrol show node`` records (module_utils/slurm.parse_scontrol_show_node): which groups each
node belongs to, and the host variables it carries. The repair loop runs the verify stage on the nodes the gate
drained: ``--limit slurm_drained_by_aicluster``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.verify.results import DRAIN_PREFIX

# The drains a verify run lifts when the node passes: the verify gate's and the health check's ("aicluster: <check>
# ...", verify/results.DRAIN_PREFIX). The slurm role's ("aicluster-slurm: ...") are lifted by the slurm stage once
# the hardware fits; any other (an operator's, the prolog's "prolog: ...") only by hand.
SLURM_ROLE_PREFIX = 'aicluster-slurm:'
_NOT_NAME = re.compile(r'[^A-Za-z0-9_]')
# Slurm appends who set the reason and when: "gpu xid 79 [root@2026-01-06T10:02:33]"
_REASON_STAMP = re.compile(r'\s*\[[^\]]*@[^\]]*\]\s*$')


def group_name(text):
    """``text`` as an Ansible group name part: lower case, anything but letters, digits and _ becomes _."""
    return _NOT_NAME.sub('_', str(text).strip().lower())


def node_state(record):
    """``(base, flags)`` of a node's ``State=`` (``IDLE+DRAIN`` -> ``('idle', ['drain'])``; a trailing ``*``, which
    ``sinfo`` prints for a node that does not respond, counts as ``not_responding``)."""
    state = str(record.get('State') or 'UNKNOWN').strip()
    responding = not state.endswith('*')
    parts = [part for part in state.rstrip('*').split('+') if part]
    base = group_name(parts[0]) if parts else 'unknown'
    flags = [group_name(part) for part in parts[1:]]
    if not responding and 'not_responding' not in flags:
        flags.append('not_responding')
    return base, flags


def reason_of(record):
    """The drain or down reason without Slurm's ``[user@time]`` stamp; '' when there is none."""
    reason = str(record.get('Reason') or '').strip()
    return _REASON_STAMP.sub('', reason)


def inventory_from_nodes(records, prefix='slurm_'):
    """``{node: {'groups': [...], 'vars': {...}}}`` for ``scontrol show node`` records, in Slurm's order.

    Groups (each name prefixed with ``prefix``): ``nodes``; ``state_<base>`` (``idle``, ``allocated``, ``mixed``,
    ``down``, ...); ``drain`` (draining or drained); ``not_responding``; ``drained_by_aicluster`` (the verify
    gate's and the health check's drains, which a passing verify run lifts), ``drained_by_slurm_role`` and
    ``drained_by_others``; ``partition_<name>``; ``in_service`` (neither drained nor down nor not responding).
    Variables: ``<prefix>state`` (as printed), ``<prefix>reason``, ``<prefix>partitions``.
    """
    prefix = prefix or ''
    out = {}
    for record in records or []:
        name = record.get('NodeName')
        if not name:
            continue
        base, flags = node_state(record)
        reason = reason_of(record)
        partitions = [part for part in str(record.get('Partitions') or '').split(',') if part and part != '(null)']
        groups = ['nodes', 'state_%s' % base]
        drained = 'drain' in flags
        if drained:
            groups.append('drain')
            if reason.startswith(DRAIN_PREFIX):
                groups.append('drained_by_aicluster')
            elif reason.startswith(SLURM_ROLE_PREFIX):
                groups.append('drained_by_slurm_role')
            else:
                groups.append('drained_by_others')
        if 'not_responding' in flags:
            groups.append('not_responding')
        if not drained and base not in ('down', 'fail', 'future', 'unknown') and 'not_responding' not in flags \
                and 'fail' not in flags:
            groups.append('in_service')
        groups.extend('partition_%s' % group_name(part) for part in partitions)
        out[name] = {
            'groups': [prefix + group for group in groups],
            'vars': {prefix + 'state': str(record.get('State') or ''), prefix + 'reason': reason,
                     prefix + 'partitions': partitions},
        }
    return out
