# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""fabric.partition: exactly the P_Keys of a port's partitions, with the right membership (full vs limited)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from _paths import real_fixture

from ansible_collections.aicluster.infra.plugins.module_utils.verify import results as vr
from ansible_collections.aicluster.infra.plugins.module_utils.verify.partition import decide_partition, wanted_entries

FULL_DEFAULT = {'0': '0xffff', '1': '0x0000'}


def _one(outcome, node='gpu01'):
    results = outcome['nodes'][node]
    assert len(results) == 1 and vr._problems_in_result('x', results[0]) == []
    return results[0]


def test_default_full_member_passes():
    result = _one(decide_partition({'gpu01': {'mlx5_0:1': FULL_DEFAULT}}, {}))
    assert result['passed'] and result['measured'] == ['0xffff'] and result['threshold'] == ['0xffff']


def test_real_limited_default_and_full_tenant_partition():
    """The ibsim capture: 0x7fff (default as LIMITED member) and 0x8010 (tenant 0x0010 as full member)."""
    read = {'stdout': real_fixture('smpquery/ibsim-pkeys-hca-lid2-limited-default-full-8010-ibwarn-stderr.txt'), 'rc': 0}
    tenant = [{'pkey': '0x0010', 'membership': 'full'}]
    wrong = _one(decide_partition({'gpu01': {'mlx5_0:1': read}}, {'pkeys': [{'pkey': 0x7fff, 'membership': 'full'}] + tenant}))
    assert wrong['passed'] is False and wrong['measured'] == ['0x7fff', '0x8010']
    assert 'P_Key 0x7fff as a limited member, expected full' in wrong['message'] and wrong['missing'] == ['0xffff']
    right = _one(decide_partition({'gpu01': {'mlx5_0:1': read}}, {'pkeys': ['0x7fff'] + tenant}))
    assert right['passed'] is True


def test_missing_and_extra_partitions_per_node():
    expected = {'pkeys': ['0xffff'], 'nodes': {'gpu02': {'pkeys': ['0xffff', '0x8002']}}}
    outcome = decide_partition({'gpu01': {'mlx5_0:1': ['0xffff', '0x8002']}, 'gpu02': {'mlx5_0:1': ['0xffff']}}, expected)
    extra, missing = _one(outcome, 'gpu01'), _one(outcome, 'gpu02')
    assert extra['passed'] is False and 'holds 0x8002, which none of its partitions gives it' in extra['message']
    assert missing['passed'] is False and 'missing 0x8002' in missing['message']


def test_unreadable_port_fails():
    outcome = decide_partition({'gpu01': {'mlx5_0:1': {'failed': True, 'msg': 'No such file'}, 'mlx5_1:1': FULL_DEFAULT}},
                               {'ports': {'gpu01': ['mlx5_0:1', 'mlx5_1:1', 'mlx5_2:1']}})
    results = outcome['nodes']['gpu01']
    assert [r['passed'] for r in results] == [False, True, False]
    assert 'No such file' in results[0]['message'] and 'not read' in results[2]['message']


def test_wanted_entries():
    assert wanted_entries([{'pkey': 1, 'membership': 'both'}]) == {(1, True), (1, False)}
    assert wanted_entries(['0xffff', '0x7ffe']) == {(0x7fff, True), (0x7ffe, False)}
    for bad in ([{'pkey': '0x8000'}], [{'pkey': 2, 'membership': 'half'}], ['zz']):
        with pytest.raises(ValueError):
            wanted_entries(bad)
