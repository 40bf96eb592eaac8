# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/rolling_upgrade.yml's decisions about one node's Slurm record: drain it or not, may the upgrade start,
resume it or not. Pure functions over ``scontrol show node`` records (module_utils/slurm.py parses them)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.verify.gate import is_drained, strip_reason_stamp

# Flags of a node that still runs (or is finishing) jobs: MIXED+DRAIN / ALLOCATED+DRAIN is "draining".
BUSY_FLAGS = ('ALLOCATED', 'ALLOC', 'MIXED', 'COMPLETING')


def node_step(record, reason):
    """What the rolling procedure does with a node, from its Slurm record and the procedure's drain reason.

    Returns ``{'state', 'reason', 'drained', 'own', 'busy', 'drain', 'resume_allowed'}``: ``drain`` when it is not
    drained yet (the procedure drains it with ``reason``); ``own`` when its drain is the procedure's (``reason``),
    so that only such a node is resumed; ``busy`` while a job runs or completes on it (the upgrade waits). A node
    drained by an operator or by the verify gate keeps its drain and its reason: it is upgraded once idle, never
    resumed by the procedure. ``record`` None (not a Slurm node) is upgraded without drain or resume.
    """
    if record is None:
        return {'state': None, 'reason': None, 'drained': False, 'own': False, 'busy': False, 'drain': False,
                'resume_allowed': False, 'slurm': False}
    state = record.get('State') or ''
    current = strip_reason_stamp(record.get('Reason'))
    drained = is_drained(state)
    parts = re.split(r'[+*~#!%$@^-]', state.upper())
    busy = any(part in BUSY_FLAGS for part in parts)
    own = drained and current == reason
    return {'state': state, 'reason': current, 'drained': drained, 'own': own, 'busy': busy,
            'drain': not drained, 'resume_allowed': own, 'slurm': True}
