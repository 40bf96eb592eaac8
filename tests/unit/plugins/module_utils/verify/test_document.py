# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""verify/document.py: results.json from the gate's plan, run.checks, run.parameters and the verdict table."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.aicluster.infra.plugins.module_utils.verify import document, gate
from ansible_collections.aicluster.infra.plugins.module_utils.verify.results import new_result, validate_results

RUN = {'started': 's', 'finished': 'f', 'inventory': 'i', 'collection_version': '0.1.0', 'mode': 'drain'}


def _variables(outcomes):
    """A host's variables holding the outcome facts the check roles set (gate.OUTCOME_FACTS)."""
    return dict((fact, outcomes[area]) for area, fact in gate.OUTCOME_FACTS if area in outcomes)


def _ok(check='gpu.count'):
    return new_result(check, 'node', 8, 8, True, '8 GPUs')


def test_collected_nodes_validate_in_a_document():
    outcomes = {'gpu': {'nodes': {'a': [_ok()]}}}
    plan = {'nodes': gate.collect(['a'], outcomes), 'actions': None, 'outcomes': outcomes, 'first': 'a'}
    doc = document.document(plan, RUN)
    assert validate_results(doc) == [] and doc['summary']['verdict'] == 'PASS'
    assert doc['run']['checks'] == ['gpu'] and doc['run']['parameters'] == {}
    assert doc['fabric'] == {'links': [], 'degraded': []} and doc['perftest'] == {'rounds': [], 'pairs': []}
    assert doc['nccl'] == {'single_node': {}, 'fleet_median': None, 'multi_node': None}


def test_document_refuses_what_does_not_validate():
    outcomes = {'gpu': {'nodes': {'a': [_ok()]}}}
    plan = {'nodes': gate.collect(['a'], outcomes), 'outcomes': outcomes}
    with pytest.raises(ValueError, match='do not validate'):
        document.document(plan, dict(RUN, mode='sideways'))


def test_checks_ran():
    mtu = new_result('net.mtu', 'b', 9000, 9000, True, 'ok')
    outcomes = {'ib': {'nodes': {'a': [mtu], 'b': []}}, 'fabric': None, 'perftest': {'summary': {}},
                'gpu': {'nodes': {}}, 'nccl': {}}
    # an outcome that is empty or None did not run; net ran when the first node has an MTU result
    assert document.checks_ran(outcomes, 'a') == ['ib', 'perftest', 'net', 'gpu']
    assert document.checks_ran(outcomes, 'b') == ['ib', 'perftest', 'gpu']
    assert document.checks_ran({}, 'a') == []


def test_parameters_from_the_outcomes_that_ran():
    outcomes = {'ib': {'parameters': {'ib_rate_gbps': 400, 'mtu': 4096}}, 'fabric': None,
                'gpu': {'parameters': {'dcgm_diag_level': 1}}, 'nccl': {'nodes': {}},
                'other': {'parameters': {'ignored': True}}}
    assert document.parameters(outcomes) == {'ib_rate_gbps': 400, 'mtu': 4096, 'dcgm_diag_level': 1}
    assert document.parameters({}) == {}


def test_versions_from_facts_and_raw():
    raw = {'gpu': {'gpu_info': {'driver_version': '535.183.01', 'cuda_version': '12.2', 'count': 8,
                                'gpus': [{'name': 'NVIDIA H100 80GB HBM3'}]}},
           'ib_info': {'ib_info': {'ofed_version': 'OFED-24.04', 'hcas': [{'name': 'mlx5_0', 'firmware_version': '28.39.1002'}]}}}
    assert document.versions({'os': 'Ubuntu 22.04', 'kernel': '5.15'}, raw) == {
        'os': 'Ubuntu 22.04', 'kernel': '5.15', 'driver': '535.183.01', 'cuda': '12.2', 'gpu_model': 'NVIDIA H100 80GB HBM3',
        'gpu_count': 8, 'ofed': 'OFED-24.04', 'hca_firmware': {'mlx5_0': '28.39.1002'}, 'slurm': None}
    assert document.versions(None, raw) == {}
    # Slurm: the version the node's slurmd registered with (scontrol show node Version=)
    assert document.versions({'os': 'Ubuntu 22.04'}, {}, {'NodeName': 'a', 'Version': '22.05.8'})['slurm'] == '22.05.8'
    assert document.versions({'os': 'Ubuntu 22.04'}, {}, {'NodeName': 'a', 'Version': '(null)'})['slurm'] is None


GPU_INFO = {'driver_version': '535.183.01', 'count': 2,
            'system': {'vendor': 'Supermicro', 'product': 'SYS-821GE-TNHR', 'serial': 'S501234X4A12345'},
            'gpus': [{'index': 0, 'name': 'NVIDIA H100 80GB HBM3', 'uuid': 'GPU-0', 'serial': '1654000001000',
                      'vbios_version': '96.00.74.00.01', 'board_part_number': '692-2G520-0200-000'},
                     {'index': 1, 'name': 'NVIDIA H100 80GB HBM3', 'uuid': 'GPU-1', 'serial': None,
                      'vbios_version': '96.00.74.00.01', 'board_part_number': None}]}
IB_INFO = {'ofed_version': None, 'hcas': [{'name': 'mlx5_0', 'ca_type': 'MT4129', 'firmware_version': '28.39.1002',
                                           'board_id': 'MT_0000000838', 'ports': []},
                                          {'name': 'mlx5_1', 'ca_type': 'MT4129', 'firmware_version': '28.39.1002'}]}


def test_inventory_from_raw():
    raw = {'gpu': {'gpu_info': GPU_INFO}, 'ib_info': {'ib_info': IB_INFO}}
    assert document.inventory(raw) == {
        'system': {'vendor': 'Supermicro', 'product': 'SYS-821GE-TNHR', 'serial': 'S501234X4A12345'},
        'gpus': [{'index': 0, 'uuid': 'GPU-0', 'serial': '1654000001000', 'vbios': '96.00.74.00.01',
                  'board_part_number': '692-2G520-0200-000'},
                 {'index': 1, 'uuid': 'GPU-1', 'serial': None, 'vbios': '96.00.74.00.01', 'board_part_number': None}],
        'hcas': [{'name': 'mlx5_0', 'ca_type': 'MT4129', 'psid': 'MT_0000000838', 'firmware': '28.39.1002'},
                 {'name': 'mlx5_1', 'ca_type': 'MT4129', 'psid': None, 'firmware': '28.39.1002'}]}
    # only the HCAs read (verify_gpu did not run); gpu_info failed and ib_info not read; nothing read at all
    assert document.inventory({'ib_info': {'ib_info': IB_INFO}})['system'] is None
    assert document.inventory({'ib_info': {'ib_info': IB_INFO}})['gpus'] == []
    assert document.inventory({'gpu': {'gpu_info': {}}, 'ib_info': {'ib_info': None}}) == {}
    assert document.inventory({}) == {}


def test_plan_gate_carries_inventory_and_slurm_version():
    outcomes = {'gpu': {'nodes': {'a': [_ok()], 'b': [_ok()]}, 'raw': {'a': {'gpu_info': GPU_INFO}}},
                'ib': {'nodes': {'a': [], 'b': []}, 'raw': {'a': {'ib_info': IB_INFO}, 'b': {'ib_info': None}}}}
    slurm = [{'NodeName': 'node-a', 'State': 'IDLE', 'Version': '22.05.8'}, {'NodeName': 'b', 'State': 'IDLE'}]
    plan = document.plan_gate(_variables(outcomes), slurm, {
        'nodes': ['a', 'b'], 'mode': 'drain', 'slurm_names': {'a': 'node-a'},
        'facts': {'a': {'os': 'Debian 12', 'kernel': '6.1'}, 'b': {'os': 'Debian 12', 'kernel': '6.1'}}})
    assert plan['nodes']['a']['versions']['slurm'] == '22.05.8' and plan['nodes']['b']['versions']['slurm'] is None
    assert [gpu['serial'] for gpu in plan['nodes']['a']['inventory']['gpus']] == ['1654000001000', None]
    assert [hca['psid'] for hca in plan['nodes']['a']['inventory']['hcas']] == ['MT_0000000838', None]
    assert plan['nodes']['b']['inventory'] == {}
    doc = document.document(plan, RUN)
    assert validate_results(doc) == [] and doc['nodes']['a']['inventory']['system']['serial'] == 'S501234X4A12345'
    # without Slurm: no version
    plan = document.plan_gate(_variables(outcomes), None, {'nodes': ['a'], 'mode': 'report', 'facts': {'a': {'os': 'Debian 12'}}})
    assert plan['nodes']['a']['versions']['slurm'] is None


def test_plan_gate_document_and_table():
    outcomes = {'gpu': {'nodes': {'a': [new_result('gpu.count', 'node', 7, 8, False, '7 GPUs')], 'b': [_ok()]},
                        'parameters': {'gpu_nvlinks_per_gpu': 18}}}
    slurm = [{'NodeName': 'a', 'State': 'IDLE'}, {'NodeName': 'b', 'State': 'IDLE'}]
    plan = document.plan_gate(_variables(outcomes), slurm, {
        'nodes': ['a', 'b', 'c'], 'mode': 'drain', 'facts': {'a': {'os': 'Ubuntu 22.04', 'kernel': '5.15'}}})
    assert plan['first'] == 'a' and plan['ready'] == ['b'] and plan['outcomes'] == outcomes
    assert plan['actions']['a']['action'] == 'drain' and plan['actions']['c']['action'] == 'none'
    assert plan['nodes']['a']['versions']['os'] == 'Ubuntu 22.04' and plan['nodes']['c']['versions'] == {}
    doc = document.document(plan, RUN, {'a': {'changed': True, 'state_after': 'IDLE+DRAIN'}})
    assert doc['run']['parameters'] == {'gpu_nvlinks_per_gpu': 18}
    assert doc['nodes']['a']['drained'] and doc['nodes']['a']['drain_reason'] == 'aicluster: gpu.count node'
    lines = document.table(doc)
    assert lines[0].split()[:3] == ['node', 'verdict', 'slurm']
    assert 'drained' in lines[1] and 'gpu.count node: 7' in lines[1]
    assert 'node.reachable' in lines[3]
    assert lines[-1] == 'verdict FAIL: 3 nodes, 1 passed, 2 failed, 1 drained, 0 resumed'
    # without Slurm: no actions, nothing ready
    plan = document.plan_gate(_variables(outcomes), None, {'nodes': ['a', 'b'], 'mode': 'report'})
    assert plan['actions'] is None and plan['ready'] == []
    assert document.document(plan, dict(RUN, mode='report'))['summary']['drained'] == 0


def test_run_gate_acts_only_when_there_are_actions():
    outcomes = {'gpu': {'nodes': {'a': [new_result('gpu.count', 'node', 7, 8, False, '7 GPUs')], 'b': [_ok()]}}}
    acted = []

    def act(actions):
        acted.append(sorted(node for node, action in actions.items() if action['action'] != 'none'))
        return {'a': {'changed': True, 'state_after': 'IDLE+DRAIN'}}
    slurm = [{'NodeName': 'a', 'State': 'IDLE'}, {'NodeName': 'b', 'State': 'IDLE'}]
    doc, plan, done = document.run_gate(_variables(outcomes), slurm, {'nodes': ['a', 'b'], 'mode': 'drain'}, RUN, act)
    assert acted == [['a']] and done == {'a': {'changed': True, 'state_after': 'IDLE+DRAIN'}}
    assert doc['nodes']['a']['drained'] and doc['run']['mode'] == 'drain' and plan['ready'] == ['b']
    # no Slurm: no actions, act is not called
    doc, plan, done = document.run_gate(_variables(outcomes), None, {'nodes': ['a', 'b'], 'mode': 'report'}, RUN, act)
    assert len(acted) == 1 and done == {} and doc['run']['mode'] == 'report' and doc['summary']['drained'] == 0


def test_run_gate_changes_nothing_in_slurm_when_the_document_would_not_validate():
    outcomes = {'gpu': {'nodes': {'a': [new_result('gpu.count', 'node', 7, 8, False, '7 GPUs')]}}}
    acted = []
    with pytest.raises(ValueError, match='do not validate'):
        document.run_gate(_variables(outcomes), [{'NodeName': 'a', 'State': 'IDLE'}], {'nodes': ['a'], 'mode': 'drain'},
                          dict((key, value) for key, value in RUN.items() if key != 'inventory'), acted.append)
    assert acted == []


def test_a_subset_run_does_not_resume_a_drain_it_did_not_check():
    outcomes = {'ib': {'nodes': {'a': [_ok('ib.port_state')]}}}
    slurm = [{'NodeName': 'a', 'State': 'IDLE+DRAIN', 'Reason': 'aicluster: gpu.xid GPU 3 [root@2026-01-06T10:02:33]'}]
    doc, plan, done = document.run_gate(_variables(outcomes), slurm, {'nodes': ['a'], 'mode': 'drain'}, RUN, lambda actions: {})
    assert plan['actions']['a']['action'] == 'none' and doc['nodes']['a']['drain_reason'] == 'aicluster: gpu.xid GPU 3'
    assert doc['run']['checks'] == ['ib'] and doc['summary']['resumed'] == 0
