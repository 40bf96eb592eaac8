# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""report/inventory.py: the per-node inventory table (system, GPU serials and VBIOS, HCA PSIDs and firmware, Slurm),
the odd ones out against the fleet, and the big-fleet rule."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os

import pytest

from _synthetic_results import FIRMWARE, ODD_PSID, ODD_VBIOS, PSID, VBIOS, make_results

from ansible_collections.aicluster.infra.plugins.module_utils.report import html
from ansible_collections.aicluster.infra.plugins.module_utils.report.inventory import (
    COLUMNS, FULL_ROWS, index_ranges, node_inventory,
)
from ansible_collections.aicluster.infra.plugins.module_utils.verify.results import validate_results

GATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'verify', 'fixtures', 'gate')


def _cells(row):
    return dict(zip(COLUMNS, row['cells']))


def _row(table, node):
    return next(row for row in table['rows'] if row['node'] == node)


def test_the_rule_is_the_report_s():
    assert FULL_ROWS == html.FULL_ROWS


def test_a_uniform_fleet_has_nothing_odd():
    doc = make_results(4)
    assert validate_results(doc) == []
    table = node_inventory(doc)
    assert table['columns'] == list(COLUMNS) and table['columns'][0] == 'node'
    assert [row['node'] for row in table['rows']] == ['gpu01', 'gpu02', 'gpu03', 'gpu04']
    assert (table['total'], table['reported'], table['odd'], table['shown_all']) == (4, 4, 0, True)
    row = _row(table, 'gpu02')
    assert row['system'] == {'vendor': 'Supermicro', 'product': 'SYS-821GE-TNHR', 'serial': 'S501230002A'}
    assert row['gpu_serials'] == ['1654000002%02d0' % gpu for gpu in range(8)]
    assert row['vbios'] == [{'value': VBIOS, 'gpus': list(range(8)), 'odd': False}]
    assert [(hca['name'], hca['psid'], hca['firmware']) for hca in row['hcas']] == [('mlx5_%d' % k, PSID, FIRMWARE) for k in range(8)]
    assert row['slurm'] == '23.11.10' and not row['slurm_odd'] and not row['odd']
    cells = _cells(row)
    assert [cells[column]['text'] for column in ('node', 'vendor', 'product', 'system serial')] == [
        'gpu02', 'Supermicro', 'SYS-821GE-TNHR', 'S501230002A']
    assert cells['GPU serials']['text'] == ', '.join(row['gpu_serials'])
    assert (cells['VBIOS']['text'], cells['HCA PSID']['text'], cells['HCA firmware']['text'], cells['Slurm']['text']) == (
        VBIOS, PSID, FIRMWARE, '23.11.10')
    assert not any(cell['odd'] for cell in row['cells'])
    assert table['fleet']['slurm'] == '23.11.10'
    assert table['fleet']['vbios'] == [{'gpu_model': 'NVIDIA H100 80GB HBM3', 'board_part_number': '692-2G520-0200-000', 'value': VBIOS}]
    assert table['fleet']['firmware'] == [{'psid': PSID, 'value': FIRMWARE}]


def test_odd_vbios_psid_firmware_and_slurm_are_flagged():
    doc = make_results(4, [('vbios_odd', 'gpu03', 5), ('psid_odd', 'gpu02', 6), ('fw_odd', 'gpu02', 3),
                           ('slurm_odd', 'gpu04', 0)])
    assert validate_results(doc) == []
    table = node_inventory(doc)
    assert table['odd'] == 3 and [row['node'] for row in table['rows'] if row['odd']] == ['gpu02', 'gpu03', 'gpu04']
    gpu03 = _row(table, 'gpu03')
    assert gpu03['vbios'] == [{'value': VBIOS, 'gpus': [0, 1, 2, 3, 4, 6, 7], 'odd': False},
                              {'value': ODD_VBIOS, 'gpus': [5], 'odd': True}]
    cells = _cells(gpu03)
    assert cells['VBIOS'] == {'text': '%s (GPU 0-4,6-7); %s (GPU 5)' % (VBIOS, ODD_VBIOS), 'odd': True}
    assert not cells['HCA PSID']['odd'] and not cells['Slurm']['odd']
    gpu02 = _row(table, 'gpu02')
    odd = dict((hca['name'], (hca['psid_odd'], hca['firmware_odd'])) for hca in gpu02['hcas'])
    assert odd['mlx5_6'] == (True, False) and odd['mlx5_3'] == (False, True) and odd['mlx5_0'] == (False, False)
    cells = _cells(gpu02)
    assert cells['HCA PSID'] == {'text': '%s (mlx5_[0-5,7]); %s (mlx5_6)' % (PSID, ODD_PSID), 'odd': True}
    assert cells['HCA firmware'] == {'text': '%s (mlx5_[0-2,4-7]); 28.39.1002 (mlx5_3)' % FIRMWARE, 'odd': True}
    assert not cells['VBIOS']['odd']
    gpu04 = _row(table, 'gpu04')
    assert gpu04['slurm'] == '22.05.8' and gpu04['slurm_odd'] and _cells(gpu04)['Slurm'] == {'text': '22.05.8', 'odd': True}


def test_firmware_is_compared_within_its_psid_and_psid_within_its_slot():
    """A storage NIC (another card, another PSID) on its own firmware is not odd; a GPU-fabric HCA of another PSID is."""
    doc = make_results(3)
    for node in doc['nodes'].values():
        node['inventory']['hcas'].append({'name': 'mlx5_8', 'ca_type': 'MT4125', 'psid': 'MT_0000000359', 'firmware': '22.39.1002'})
    doc['nodes']['gpu03']['inventory']['hcas'][8]['firmware'] = '22.41.1000'
    table = node_inventory(doc)
    assert [row['node'] for row in table['rows'] if row['odd']] == ['gpu03']
    assert _cells(_row(table, 'gpu01'))['HCA firmware'] == {'text': '%s (mlx5_[0-7]); 22.39.1002 (mlx5_8)' % FIRMWARE, 'odd': False}
    hca = _row(table, 'gpu03')['hcas'][8]
    assert (hca['name'], hca['firmware_odd'], hca['psid_odd']) == ('mlx5_8', True, False)
    assert {'psid': 'MT_0000000359', 'value': '22.39.1002'} in table['fleet']['firmware']


def test_vbios_is_compared_within_model_and_board_part():
    """A PCIe H100 on its own VBIOS is not odd beside SXM boards; no majority among missing values."""
    doc = make_results(3)
    node = doc['nodes']['gpu03']
    node['versions']['gpu_model'] = 'NVIDIA H100 PCIe'
    for gpu in node['inventory']['gpus']:
        gpu.update(vbios='96.00.30.00.01', board_part_number='900-21010-0000-000')
    doc['nodes']['gpu02']['inventory']['gpus'][1]['vbios'] = None
    table = node_inventory(doc)
    assert table['odd'] == 0
    assert _row(table, 'gpu02')['vbios'] == [{'value': VBIOS, 'gpus': [0, 2, 3, 4, 5, 6, 7], 'odd': False}]
    assert len(table['fleet']['vbios']) == 2


def test_a_tie_flags_the_higher_value_as_the_version_matrix_does():
    doc = make_results(2, [('slurm_odd', 'gpu02', 0)])
    table = node_inventory(doc)
    # 22.05.8 and 23.11.10 once each: the lower value is the fleet's
    assert table['fleet']['slurm'] == '22.05.8'
    assert [row['node'] for row in table['rows'] if row['slurm_odd']] == ['gpu01']


def test_big_fleet_lists_only_the_odd_nodes():
    doc = make_results(FULL_ROWS + 1, [('vbios_odd', 'gpu10', 2), ('psid_odd', 'gpu50', 0)], max_rounds=1)
    table = node_inventory(doc)
    assert (table['total'], table['reported'], table['odd'], table['shown_all']) == (FULL_ROWS + 1, FULL_ROWS + 1, 2, False)
    assert [row['node'] for row in table['rows']] == ['gpu10', 'gpu50']
    assert len(node_inventory(doc, full_rows=100)['rows']) == FULL_ROWS + 1
    # nothing odd: no rows, the counts say why
    table = node_inventory(make_results(FULL_ROWS + 1, max_rounds=1))
    assert table['rows'] == [] and table['odd'] == 0 and not table['shown_all']
    # exactly FULL_ROWS: every node
    assert len(node_inventory(make_results(FULL_ROWS, max_rounds=1))['rows']) == FULL_ROWS


def test_an_older_document_has_no_inventory_rows():
    doc = make_results(3)
    for node in doc['nodes'].values():
        del node['inventory']
        del node['versions']['slurm']
    table = node_inventory(doc)
    assert (table['rows'], table['total'], table['reported'], table['odd']) == ([], 3, 0, 0)
    # the Slurm version alone (a document between the two) gives rows with the rest unknown
    doc['nodes']['gpu01']['versions']['slurm'] = '23.11.10'
    row = _row(node_inventory(doc), 'gpu02')
    assert [cell['text'] for cell in row['cells']] == ['gpu02', '-', '-', '-', '-', '-', '-', '-', '-']
    assert row['gpu_serials'] == [] and row['hcas'] == [] and row['slurm'] is None


def test_an_unreachable_node_and_missing_values():
    doc = make_results(3)
    doc['nodes']['gpu02']['inventory'] = {}
    doc['nodes']['gpu02']['versions'] = {}
    gpus = doc['nodes']['gpu03']['inventory']['gpus']
    gpus[0]['serial'] = None
    doc['nodes']['gpu03']['inventory']['system'] = None
    table = node_inventory(doc)
    assert table['reported'] == 2 and table['odd'] == 0
    assert [cell['text'] for cell in _row(table, 'gpu02')['cells']][1:] == ['-'] * 8
    cells = _cells(_row(table, 'gpu03'))
    assert cells['GPU serials']['text'].startswith('-, 1654000003010') and cells['vendor']['text'] == '-'


def test_same_input_same_output():
    doc = make_results(5, [('vbios_odd', 'gpu03', 5), ('psid_odd', 'gpu02', 6)])
    shuffled = copy.deepcopy(doc)
    shuffled['nodes'] = dict(reversed(list(shuffled['nodes'].items())))
    for node in shuffled['nodes'].values():
        node['inventory']['hcas'].reverse()
        node['inventory']['gpus'].reverse()
    assert json.dumps(node_inventory(doc), sort_keys=True) == json.dumps(node_inventory(shuffled), sort_keys=True)


@pytest.mark.parametrize('indices, text', [([], ''), ([3], '3'), ([0, 1, 2, 4, 5, 7], '0-2,4-5,7'), ([5, 1, 1, None, 2], '1-2,5')],
                         ids=['none', 'one', 'ranges', 'unsorted'])
def test_index_ranges(indices, text):
    assert index_ranges(indices) == text


def test_pinned_gate_case_flags_the_reflashed_gpu():
    """fixtures/gate/fleet-odd: hwsim's vbios fault on gpu01 GPU 3, read by gpu_info and carried by the gate."""
    path = os.path.join(GATE, 'fleet-odd', 'out.json')
    with open(path, encoding='utf-8') as handle:
        doc = json.load(handle)
    table = node_inventory(doc)
    gpu01 = _row(table, 'gpu01')
    assert [(value['value'], value['gpus'], value['odd']) for value in gpu01['vbios']] == [
        ('96.00.74.00.01', [0, 1, 2, 4, 5, 6, 7], False), ('96.00.99.00.01', [3], True)]
    assert gpu01['slurm'] == '22.05.8' and gpu01['system']['product'] == 'SYS-821GE-TNHR'
    assert gpu01['hcas'][0]['psid'] == 'MT_0000000838'
    # gpu05's ib_info failed: no HCAs, nothing odd in them
    assert _row(table, 'gpu05')['hcas'] == []
