# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import itertools

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.aicluster.infra.plugins.module_utils.perftest_schedule import (
    all_pairs_rounds, attribute, cover_rounds, retest_round, schedule, server_port,
)


def _names(count):
    return ['gpu%02d' % index for index in range(1, count + 1)]


def _disjoint(rounds):
    for pairs in rounds:
        seen = [node for pair in pairs for node in pair]
        assert len(seen) == len(set(seen)), pairs


@pytest.mark.parametrize('count, expected_rounds', [(0, 0), (1, 0), (2, 1), (3, 2), (4, 1), (7, 2), (32, 1), (33, 2)])
def test_cover_round_count(count, expected_rounds):
    rounds = cover_rounds(_names(count))
    assert len(rounds) == expected_rounds
    _disjoint(rounds)
    covered = set(node for pairs in rounds for pair in pairs for node in pair)
    assert covered == set(_names(count)) if count >= 2 else covered == set()


def test_cover_pairs_neighbours_then_the_odd_one_with_the_first():
    assert cover_rounds(['a', 'b', 'c']) == [[['a', 'b']], [['c', 'a']]]
    assert cover_rounds(['a', 'b', 'c', 'd']) == [[['a', 'b'], ['c', 'd']]]


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=2, max_value=40))
def test_all_pairs_every_pair_once_in_n_minus_1_rounds(count):
    nodes = _names(count)
    rounds = all_pairs_rounds(nodes)
    assert len(rounds) == (count - 1 if count % 2 == 0 else count)
    _disjoint(rounds)
    pairs = [frozenset(pair) for r in rounds for pair in r]
    assert len(pairs) == len(set(pairs)) == count * (count - 1) // 2
    assert set(pairs) == set(frozenset(p) for p in itertools.combinations(nodes, 2))


def test_schedule_by_name_and_bad_input():
    assert schedule(['a', 'b'], 'all_pairs') == [[['a', 'b']]]
    with pytest.raises(ValueError, match="mode must be"):
        schedule(['a', 'b'], 'random')
    with pytest.raises(ValueError, match='repeated: a'):
        cover_rounds(['a', 'b', 'a'])
    with pytest.raises(ValueError, match='list of names'):
        cover_rounds('gpu01')
    with pytest.raises(ValueError, match='non-empty name'):
        cover_rounds(['a', ''])


def test_server_port_unique_per_rail_and_bounded():
    assert [server_port(18515, rail) for rail in range(8)] == list(range(18515, 18523))
    with pytest.raises(ValueError, match='rail must be'):
        server_port(18515, 64)
    with pytest.raises(ValueError, match='base port'):
        server_port(80, 0)


def _result(client, server, rail, passed):
    return {'client': client, 'server': server, 'rail': rail, 'passed': passed}


def test_failing_once_then_passing_elsewhere_makes_the_partner_suspect():
    # gpu02 rail 1 is bad: round 0 (gpu01, gpu02) fails, round 1 (gpu03, gpu01) passes
    results = [_result('gpu01', 'gpu02', 1, False), _result('gpu03', 'gpu01', 1, True)]
    verdict = attribute(results)
    assert verdict == {'faulty': [], 'suspect': [['gpu02', 1]], 'unattributed': []}
    retest = retest_round(_names(3), results)
    assert retest == [{'client': 'gpu02', 'server': 'gpu03', 'rails': [1]}]
    results.append(_result('gpu02', 'gpu03', 1, False))
    assert attribute(results) == {'faulty': [['gpu02', 1]], 'suspect': [], 'unattributed': []}
    assert retest_round(_names(3), results) == []


def test_a_pair_failing_once_is_retested_before_blaming_either_side():
    results = [_result('gpu01', 'gpu02', 0, False), _result('gpu03', 'gpu04', 0, True)]
    assert attribute(results)['suspect'] == [['gpu01', 0], ['gpu02', 0]]
    retest = retest_round(_names(4), results)
    # node-disjoint: gpu01 gets gpu03, gpu02 gets gpu04
    assert retest == [{'client': 'gpu01', 'server': 'gpu03', 'rails': [0]},
                      {'client': 'gpu02', 'server': 'gpu04', 'rails': [0]}]
    results += [_result('gpu01', 'gpu03', 0, True), _result('gpu02', 'gpu04', 0, False)]
    assert attribute(results) == {'faulty': [['gpu02', 0]], 'suspect': [], 'unattributed': []}


def test_both_ends_pass_elsewhere_is_unattributed():
    results = [_result('a', 'b', 0, False), _result('a', 'c', 0, True), _result('b', 'd', 0, True)]
    assert attribute(results) == {'faulty': [], 'suspect': [], 'unattributed': [['a', 'b', 0]]}


def test_two_nodes_cannot_be_isolated():
    results = [_result('a', 'b', 0, False)]
    assert retest_round(['a', 'b'], results) == []
    assert attribute(results)['suspect'] == [['a', 0], ['b', 0]]


def test_retest_prefers_partners_without_failures():
    results = [_result('a', 'b', 0, False), _result('c', 'd', 0, True), _result('c', 'd', 1, False),
               _result('e', 'f', 0, True)]
    pairs = retest_round(['a', 'b', 'c', 'd', 'e', 'f'], results)
    assert pairs[0] == {'client': 'a', 'server': 'e', 'rails': [0]}


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=3, max_value=24), st.data())
def test_one_bad_node_is_found_within_two_retest_rounds(count, data):
    nodes = _names(count)
    bad = data.draw(st.sampled_from(nodes))
    results = []
    for pairs in cover_rounds(nodes):
        results += [_result(c, s, 0, bad not in (c, s)) for c, s in pairs]
    for dummy in range(2):
        for pair in retest_round(nodes, results):
            results.append(_result(pair['client'], pair['server'], 0, bad not in (pair['client'], pair['server'])))
    assert attribute(results) == {'faulty': [[bad, 0]], 'suspect': [], 'unattributed': []}
