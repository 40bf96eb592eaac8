# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rolling upgrade: which nodes to drain, wait for, and resume (never an operator's drain)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils.rolling import node_step

OURS = 'aicluster: rolling upgrade to BOM 2026.11'


def test_idle_node_is_drained_then_owned():
    assert node_step({'State': 'IDLE'}, OURS)['drain'] is True
    step = node_step({'State': 'IDLE+DRAIN', 'Reason': OURS + ' [root@2026-12-02T10:00:00]'}, OURS)
    assert step['drain'] is False and step['own'] is True and step['busy'] is False and step['resume_allowed'] is True


def test_draining_node_is_busy_until_its_jobs_end():
    for state in ('MIXED+DRAIN', 'ALLOCATED+DRAIN', 'IDLE+COMPLETING+DRAIN'):
        assert node_step({'State': state, 'Reason': OURS}, OURS)['busy'] is True


def test_an_operators_drain_is_kept_and_never_resumed():
    step = node_step({'State': 'IDLE+DRAIN', 'Reason': 'bad DIMM, ticket 4711 [ops@2026-11-30T08:00:00]'}, OURS)
    assert step['drain'] is False and step['own'] is False and step['resume_allowed'] is False
    assert step['reason'] == 'bad DIMM, ticket 4711'
    gate = node_step({'State': 'DOWN+DRAIN', 'Reason': 'aicluster: gpu.xid GPU 3'}, OURS)
    assert gate['resume_allowed'] is False


def test_not_a_slurm_node():
    assert node_step(None, OURS) == {'state': None, 'reason': None, 'drained': False, 'own': False, 'busy': False,
                                     'drain': False, 'resume_allowed': False, 'slurm': False}
