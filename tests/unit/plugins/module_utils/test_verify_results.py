import pytest

from ansible_collections.aicluster.infra.plugins.module_utils.verify import results as vr
from ansible_collections.aicluster.infra.plugins.module_utils.verify import checks


def _doc(nodes):
    return {
        'schema': vr.SCHEMA,
        'run': {'started': 'a', 'finished': 'b', 'inventory': 'inventories/lab', 'collection_version': '0.1.0', 'mode': 'drain'},
        'summary': vr.summarize(nodes),
        'nodes': nodes,
    }


def _node(*results, **extra):
    node = {'passed': all(r['passed'] for r in results), 'results': list(results)}
    node.update(extra)
    return node


GOOD = vr.new_result('gpu.count', 'node', 8, 8, True, '8 GPUs, expected 8')
BAD = vr.new_result('fabric.link_width', 'mlx5_3:1', '1X', '4X', False, 'mlx5_3 port 1 at 1X, expected 4X', peer='leaf-rail1 port 2')


def test_new_result_carries_area_and_extras():
    assert BAD['area'] == 'fabric' and BAD['peer'] == 'leaf-rail1 port 2' and BAD['passed'] is False
    with pytest.raises(ValueError, match='unknown check id'):
        vr.new_result('gpu.nope', 'node', 1, 1, True, 'x')


def test_every_check_belongs_to_a_known_area():
    assert {entry.area for entry in checks.CHECKS.values()} == set(checks.AREAS)


def test_a_consistent_document_validates():
    doc = _doc({'gpu01': _node(GOOD), 'gpu02': _node(GOOD, BAD, drained=True)})
    assert vr.validate_results(doc) == []
    assert doc['summary'] == {'nodes': 2, 'passed': 1, 'failed': 1, 'drained': 1, 'resumed': 0, 'cluster_failed': 0, 'verdict': 'FAIL'}


def test_validation_names_each_problem():
    doc = _doc({'gpu01': {'passed': True, 'results': [BAD]}})
    doc['run']['mode'] = 'maybe'
    doc['summary'] = {}
    problems = vr.validate_results(doc)
    assert any('run.mode' in p for p in problems)
    assert any('nodes.gpu01.passed is True but its results say False' in p for p in problems)
    assert any('summary does not match' in p for p in problems)
    assert vr.validate_results([]) == ['results must be a JSON object']


def test_drain_reason_names_checks_once_and_stays_short():
    reason = vr.drain_reason([BAD, BAD, vr.new_result('gpu.xid', 'GPU 3', 79, 'none', False, 'Xid 79')])
    assert reason == 'aicluster: fabric.link_width mlx5_3:1; gpu.xid GPU 3'
    many = [vr.new_result('gpu.ecc', 'GPU %d' % i, 1, 0, False, 'x') for i in range(100)]
    assert len(vr.drain_reason(many)) == 256 and vr.drain_reason(many).endswith('...')


def test_an_empty_fleet_is_not_a_pass():
    assert vr.summarize({})['verdict'] == 'FAIL'


def test_cluster_results_fail_the_verdict_and_validate():
    doc = _doc({'gpu01': _node(GOOD)})
    doc['cluster'] = vr.cluster_section([vr.new_result('nccl.multi_node_busbw', 'cluster', 290.0, 300.0, False, 'low')])
    doc['summary'] = vr.summarize(doc['nodes'], doc['cluster'])
    assert doc['summary']['verdict'] == 'FAIL' and doc['summary']['cluster_failed'] == 1 and doc['summary']['failed'] == 0
    assert vr.validate_results(doc) == []
    doc['cluster']['passed'] = True
    assert vr.validate_results(doc) == ['cluster.passed does not match its results']
    # a document written before cluster results existed still validates
    old = _doc({'gpu01': _node(GOOD)})
    old['summary'].pop('cluster_failed')
    assert vr.validate_results(old) == []


INVENTORY = {'system': {'vendor': 'Supermicro', 'product': 'SYS-821GE-TNHR', 'serial': 'S501234X4A12345'},
             'gpus': [{'index': 0, 'uuid': 'GPU-1', 'serial': '1654522012780', 'vbios': '96.00.74.00.01', 'board_part_number': None}],
             'hcas': [{'name': 'mlx5_0', 'ca_type': 'MT4129', 'psid': 'MT_0000000838', 'firmware': '28.39.1002'}]}


def test_inventory_is_optional_and_checked_when_present():
    # documents written before the inventory have none; an unreachable node's is empty, a node without DMI has no system
    doc = _doc({'gpu01': _node(GOOD, inventory=INVENTORY), 'gpu02': _node(GOOD), 'gpu03': _node(GOOD, inventory={}),
                'gpu04': _node(GOOD, inventory=dict(INVENTORY, system=None))})
    assert vr.validate_results(doc) == []
    doc = _doc({'gpu01': _node(GOOD, inventory=[]),
                'gpu02': _node(GOOD, inventory={'system': 'Supermicro', 'gpus': {}, 'hcas': [{'psid': 'MT_0000000838'}, 'mlx5_1']})})
    assert vr.validate_results(doc) == [
        'nodes.gpu01.inventory: not an object', 'nodes.gpu02.inventory.system: not an object or null',
        'nodes.gpu02.inventory.gpus: not a list', "nodes.gpu02.inventory.hcas[0]: not an object with 'name'",
        "nodes.gpu02.inventory.hcas[1]: not an object with 'name'"]
