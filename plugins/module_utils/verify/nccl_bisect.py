# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Localising a failed multi-node NCCL run by bisection: split the node set, rerun, blame only what is localised.

A multi-node run is a property of its node set; its failure fails the verdict and drains nobody. The runs
planned here find the nodes it can be pinned on: a failing set of 4 or more is split in halves and each half
run again; a failing set of 2 or 3 is tested node by node against a node known good (one that was in a passing
run), or pair by pair when there is none. When both halves of a failing set pass, the fault needs both halves
(a spine, a routing problem): it stays a cluster-level failure, with the set named.

``plan(participants, runs)`` is pure: ``runs`` maps a frozenset of nodes to passed (True/False) for the runs
made so far; it returns the runs still needed, the culprits and the unresolved sets.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from itertools import combinations


def _key(nodes):
    return frozenset(nodes)


def _halves(nodes):
    middle = len(nodes) // 2
    return nodes[:middle], nodes[middle:]


def _good(runs):
    return sorted(set(node for nodes, passed in runs.items() if passed for node in nodes))


def _small(nodes, runs):
    """A failing set of 2 or 3 nodes: each node with a known-good reference, else pair by pair (3 nodes)."""
    references = [node for node in _good(runs) if node not in nodes]
    if references:
        pairs = [[node, references[0]] for node in nodes]
        pending = [pair for pair in pairs if _key(pair) not in runs]
        if pending:
            return pending, [], []
        culprits = [pair[0] for pair in pairs if not runs[_key(pair)]]
        return [], culprits, [] if culprits else [list(nodes)]
    if len(nodes) == 3:
        pairs = [list(pair) for pair in combinations(nodes, 2)]
        pending = [pair for pair in pairs if _key(pair) not in runs]
        if pending:
            return pending, [], []
        failing = [set(pair) for pair in pairs if not runs[_key(pair)]]
        common = set(nodes)
        for pair in failing:
            common &= pair
        # one node is in every failing pair and the pair without it passed
        culprits = sorted(node for node in common if failing and runs[_key([other for other in nodes if other != node])])
        return [], culprits, [] if culprits else [list(nodes)]
    return [], [], [list(nodes)]


def _localise(nodes, runs):
    """(runs still needed, culprits, unresolved sets) for one node set."""
    key = _key(nodes)
    if key not in runs:
        return [list(nodes)], [], []
    if runs[key]:
        return [], [], []
    if len(nodes) >= 4:
        pending, culprits, unresolved = [], [], []
        for half in _halves(nodes):
            more, found, open_sets = _localise(half, runs)
            pending += more
            culprits += found
            unresolved += open_sets
        if pending:
            return pending, [], []
        if not culprits and not unresolved:
            return [], [], [list(nodes)]  # both halves pass: the fault needs both of them
        return [], culprits, unresolved
    return _small(list(nodes), runs)


def plan(participants, runs):
    """The bisection's state after ``runs`` (frozenset of nodes -> passed): ``{'pending': [[nodes]],
    'culprits': [nodes], 'unresolved': [[nodes]], 'done': bool}``. The full set's run must be in ``runs``."""
    nodes = sorted(participants)
    pending, culprits, unresolved = _localise(nodes, runs)
    done = not pending
    return {'pending': pending, 'culprits': sorted(set(culprits)) if done else [],
            'unresolved': unresolved if done else [], 'done': done}
