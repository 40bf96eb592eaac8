# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""verify/nccl_bisect.py: a failed multi-node run localised by rerunning halves, pairs and reference pairs."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.aicluster.infra.plugins.module_utils.verify import nccl_bisect


def _simulate(nodes, passes):
    """Run the bisection to the end against ``passes(node_set) -> bool``; returns (plan, number of runs)."""
    runs = {frozenset(nodes): passes(frozenset(nodes))}
    for dummy in range(50):
        state = nccl_bisect.plan(nodes, runs)
        if state['done']:
            return state, len(runs)
        for pending in state['pending']:
            assert len(pending) >= 2
            runs[frozenset(pending)] = passes(frozenset(pending))
    raise AssertionError('no end')


NODES = ['gpu%02d' % n for n in range(1, 33)]


@pytest.mark.parametrize('bad', [['gpu07'], ['gpu01'], ['gpu32'], ['gpu03', 'gpu20']])
def test_bad_nodes_are_found_in_few_runs(bad):
    state, runs = _simulate(NODES, lambda nodes: not nodes & set(bad))
    assert state['culprits'] == sorted(bad) and state['unresolved'] == []
    assert runs <= 1 + 2 * 5 * len(bad) + 2 * len(bad)


def test_a_fault_between_halves_is_not_blamed_on_anyone():
    """Both halves pass alone: the fault needs both (a spine link): cluster-level, no culprit."""
    state, dummy = _simulate(NODES, lambda nodes: not (nodes & set(NODES[:16]) and nodes & set(NODES[16:])))
    assert state['culprits'] == [] and state['unresolved'] == [sorted(NODES)]


def test_three_nodes_without_a_reference_pair_by_pair():
    state, runs = _simulate(['a', 'b', 'c'], lambda nodes: 'b' not in nodes)
    assert state['culprits'] == ['b'] and runs == 4
    # every pair fails: not localised
    state, dummy = _simulate(['a', 'b', 'c'], lambda nodes: False)
    assert state['culprits'] == [] and state['unresolved'] == [['a', 'b', 'c']]


def test_two_nodes_alone_cannot_be_told_apart():
    state, runs = _simulate(['a', 'b'], lambda nodes: False)
    assert state == {'pending': [], 'culprits': [], 'unresolved': [['a', 'b']], 'done': True} and runs == 1


def test_a_passing_run_needs_nothing():
    assert nccl_bisect.plan(['a', 'b'], {frozenset(['a', 'b']): True})['pending'] == []
