# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Schedules for node-to-node bandwidth tests (perftest), and who to blame for a failing pair.

Pure functions, no I/O. A *round* is a list of node-disjoint pairs
``[client, server]`` that run at the same time; rounds run one after another.

- ``cover_rounds``: every node in at least one pair: 1 round for an even node
  count, 2 for an odd one.
- ``all_pairs_rounds``: every pair of nodes exactly once, by the circle method
  (round-robin tournament): N-1 rounds for even N, N for odd N.
- ``attribute``: from pair results, the (node, rail)s that failed with two
  different partners (faulty), those that failed with one partner only and
  need a test against a third node (suspect), and failures no node can be
  blamed for (unattributed).
- ``retest_round``: the next round of node-disjoint pairs that tests every
  suspect against a partner it has not met yet, preferring nodes without
  failures.
- ``server_port``: the TCP port of one test, unique per server node and rail
  within a round, so concurrent tests never collide.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def _check_nodes(nodes):
    if isinstance(nodes, (str, bytes)) or not hasattr(nodes, '__iter__'):
        raise ValueError('nodes must be a list of names, got %r' % (nodes,))
    nodes = list(nodes)
    for node in nodes:
        if not isinstance(node, str) or not node:
            raise ValueError('every node must be a non-empty name, got %r' % (node,))
    if len(set(nodes)) != len(nodes):
        dupes = sorted(set(node for node in nodes if nodes.count(node) > 1))
        raise ValueError('nodes must be unique; repeated: %s' % ', '.join(dupes))
    return nodes


def cover_rounds(nodes):
    """Rounds in which every node is in at least one pair.

    Even count: one round, (n0, n1), (n2, n3), ...  Odd count (3 or more): that
    round for the first N-1 nodes, and a second round pairing the last node
    with the first. Fewer than two nodes: no rounds.
    """
    nodes = _check_nodes(nodes)
    if len(nodes) < 2:
        return []
    even = len(nodes) - len(nodes) % 2
    rounds = [[[nodes[i], nodes[i + 1]] for i in range(0, even, 2)]]
    if len(nodes) % 2:
        rounds.append([[nodes[-1], nodes[0]]])
    return rounds


def all_pairs_rounds(nodes):
    """Every unordered pair exactly once, in N-1 rounds (N even) or N rounds (N odd).

    Circle method: the first node stays, the others rotate one place per
    round; with an odd count a bye fills the circle and its partner sits out.
    """
    nodes = _check_nodes(nodes)
    if len(nodes) < 2:
        return []
    circle = list(nodes) + ([None] if len(nodes) % 2 else [])
    size = len(circle)
    fixed, rest = circle[0], circle[1:]
    rounds = []
    for dummy in range(size - 1):
        order = [fixed] + rest
        pairs = []
        for i in range(size // 2):
            first, second = order[i], order[size - 1 - i]
            if first is not None and second is not None:
                pairs.append([first, second])
        rounds.append(pairs)
        rest = rest[-1:] + rest[:-1]
    return rounds


def schedule(nodes, mode='cover'):
    """``cover_rounds`` or ``all_pairs_rounds`` by name."""
    if mode == 'cover':
        return cover_rounds(nodes)
    if mode == 'all_pairs':
        return all_pairs_rounds(nodes)
    raise ValueError("mode must be 'cover' or 'all_pairs', got %r" % (mode,))


def server_port(base_port, rail, rails_per_node=64):
    """TCP port of the test on ``rail``: base + rail.

    A node is in at most one pair per round, so (server node, rail) is unique
    within a round and so is this port on that node.
    """
    base_port, rail = int(base_port), int(rail)
    if rail < 0 or rail >= rails_per_node:
        raise ValueError('rail must be 0..%d, got %d' % (rails_per_node - 1, rail))
    if base_port < 1024 or base_port + rails_per_node > 65535:
        raise ValueError('base port must be 1024..%d, got %d' % (65535 - rails_per_node, base_port))
    return base_port + rail


def _tallies(results):
    """(node, rail) -> {'failed': set of partners, 'passed': set of partners}; and the failing tests."""
    tally = {}
    failing = []
    for result in results:
        client, server, rail = result['client'], result['server'], int(result['rail'])
        outcome = 'passed' if result['passed'] else 'failed'
        for node, partner in ((client, server), (server, client)):
            entry = tally.setdefault((node, rail), {'failed': set(), 'passed': set()})
            entry[outcome].add(partner)
        if not result['passed']:
            failing.append((client, server, rail))
    return tally, failing


def attribute(results):
    """Who is to blame for the failing pairs.

    ``results``: dicts with ``client``, ``server``, ``rail`` and ``passed``
    (one per test, retests included). Returns ``faulty`` and ``suspect``
    (sorted ``[node, rail]`` lists) and ``unattributed`` (sorted
    ``[client, server, rail]`` of failing tests whose both ends passed with
    other partners). A (node, rail) is faulty when it failed with two different
    partners; a failing test between two nodes neither of which is faulty makes
    suspect each end that has not passed with another partner.
    """
    tally, failing = _tallies(results)
    faulty = set(key for key, entry in tally.items() if len(entry['failed']) >= 2)
    suspect = set()
    unattributed = set()
    for client, server, rail in failing:
        ends = [(client, rail), (server, rail)]
        if any(end in faulty for end in ends):
            continue
        cleared = [bool(tally[end]['passed']) for end in ends]
        if all(cleared):
            unattributed.add((client, server, rail))
            continue
        for end, ok in zip(ends, cleared):
            if not ok:
                suspect.add(end)
    return {
        'faulty': sorted([node, rail] for node, rail in faulty),
        'suspect': sorted([node, rail] for node, rail in suspect),
        'unattributed': sorted([c, s, r] for c, s, r in unattributed),
    }


def retest_round(nodes, results):
    """The next round of retests: each suspect against a partner it has not met on that rail.

    Returns a list of ``{'client', 'server', 'rails'}`` with node-disjoint
    pairs (a node is in one pair at most). Partners are chosen among nodes
    without any failure first, then any node that is neither faulty nor
    suspect on those rails, in node order. Suspects with no possible partner
    (a two-node fleet) are left out; ``attribute`` keeps them suspect.
    """
    nodes = _check_nodes(nodes)
    verdict = attribute(results)
    tally, dummy = _tallies(results)
    blamed = set((node, rail) for node, rail in verdict['faulty'] + verdict['suspect'])
    failures = set(node for (node, dummy_rail), entry in tally.items() if entry['failed'])
    wanted = {}
    for node, rail in verdict['suspect']:
        wanted.setdefault(node, []).append(rail)
    busy = set()
    pairs = []
    for node in nodes:
        if node not in wanted or node in busy:
            continue
        rails = sorted(wanted[node])
        met = set()
        for rail in rails:
            entry = tally.get((node, rail), {'failed': set(), 'passed': set()})
            met |= entry['failed'] | entry['passed']

        def usable(other):
            return (other != node and other not in busy and other not in met
                    and not any((other, rail) in blamed for rail in rails))
        candidates = [other for other in nodes if usable(other) and other not in failures]
        candidates += [other for other in nodes if usable(other) and other in failures]
        if not candidates:
            continue
        partner = candidates[0]
        busy.update((node, partner))
        pairs.append({'client': node, 'server': partner, 'rails': rails})
    return pairs
