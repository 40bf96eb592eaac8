# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from _paths import own_fixture

from ansible_collections.aicluster.infra.plugins.filter import verify as vf


ENDPOINTS = {
    'gpu01': {'address': 'gpu01', 'hcas': [{'rail': 0, 'name': 'mlx5_0', 'gid_index': None, 'rate_gbps': 400},
                                           {'rail': 1, 'name': 'mlx5_3', 'gid_index': None, 'rate_gbps': 400}]},
    'gpu02': {'address': '10.0.0.2', 'hcas': [{'rail': 0, 'name': 'mlx5_0', 'gid_index': None, 'rate_gbps': 400},
                                              {'rail': 1, 'name': 'mlx5_3', 'gid_index': None, 'rate_gbps': 200}]},
}


def test_every_filter_is_registered_with_a_sidecar():
    import os
    names = vf.FilterModule().filters()
    here = os.path.dirname(vf.__file__)
    assert all(os.path.exists(os.path.join(here, name + '.yml')) for name in names)


def test_round_tests_are_rail_aligned_with_unique_ports():
    tests = vf.verify_perftest_tests([['gpu01', 'gpu02']], ENDPOINTS, 18515)
    assert [(t['client_hca'], t['server_hca'], t['port'], t['address'], t['line_rate']) for t in tests] == [
        ('mlx5_0', 'mlx5_0', 18515, '10.0.0.2', 400.0), ('mlx5_3', 'mlx5_3', 18516, '10.0.0.2', 200.0)]
    retest = vf.verify_perftest_tests([{'client': 'gpu02', 'server': 'gpu01', 'rails': [1]}], ENDPOINTS, 18515)
    assert [(t['client'], t['rail']) for t in retest] == [('gpu02', 1)]


def test_pair_from_output_and_timeout():
    spec = vf.verify_perftest_tests([['gpu01', 'gpu02']], ENDPOINTS, 18515)[0]
    out = own_fixture('perftest/perftest-4.5-ib_write_bw-ndr-cx7-report-gbits-all-sizes-client-handmade.txt')
    pair = vf.verify_perftest_pair(out, 'write_bw', spec, 0.9, round_index=0)
    assert pair['threshold'] == 360.0 and pair['round'] == 0
    timed_out = vf.verify_perftest_pair('', 'write_bw', spec, rc=124, stderr='')
    assert timed_out['passed'] is False and timed_out['errors'][0] == 'timed out'


def test_document_table_and_errors():
    nodes = vf.verify_collect({'a': {'r': [vf.verify_result('gpu.count', 'node', 7, 8, False, '7 GPUs')]},
                               'b': {'r': [vf.verify_result('gpu.count', 'node', 8, 8, True, '8 GPUs')]}},
                              ['a', 'b', 'c'], facts=['r'])
    actions = vf.verify_gate_actions(nodes, [{'NodeName': 'a', 'State': 'IDLE'}], 'drain')
    nodes = vf.verify_apply_gate(nodes, actions, {'a': {'changed': True, 'state_after': 'IDLE+DRAIN'}})
    assert nodes['a']['drained'] and nodes['a']['drain_reason'] == 'aicluster: gpu.count node'
    doc = vf.verify_document(nodes, {'started': 's', 'finished': 'f', 'inventory': 'i', 'collection_version': '0.1.0',
                                     'mode': 'drain'})
    lines = vf.verify_table(doc)
    assert lines[0].split()[:3] == ['node', 'verdict', 'slurm']
    assert 'drained' in lines[1] and 'gpu.count node: 7' in lines[1]
    assert 'node.reachable' in lines[3]
    assert lines[-1] == 'verdict FAIL: 3 nodes, 1 passed, 2 failed, 1 drained, 0 resumed'
    with pytest.raises(AnsibleFilterError, match='do not validate'):
        vf.verify_document(nodes, {'mode': 'sideways'})
    with pytest.raises(AnsibleFilterError, match='verify_perftest_schedule'):
        vf.verify_perftest_schedule(['a', 'a'])
