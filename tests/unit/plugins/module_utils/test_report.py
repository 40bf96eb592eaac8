# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

from _paths import REPO
from _synthetic_results import LAB_FAULTS, make_results

from ansible_collections.aicluster.infra.plugins.module_utils import report
from ansible_collections.aicluster.infra.plugins.module_utils.report import _text, figures, html, junit, markdown, perftest
from ansible_collections.aicluster.infra.plugins.module_utils.report.compare import compare
from ansible_collections.aicluster.infra.plugins.module_utils.verify import results as vr
from ansible_collections.aicluster.infra.plugins.module_utils.verify.checks import CHECKS

# The report role's template for report.html, as the role passes it to the module.
with open(os.path.join(REPO, html.SHIPPED_TEMPLATE), encoding='utf-8') as _handle:
    TEMPLATE = _handle.read()

LAB = make_results(4, LAB_FAULTS)
CLEAN = make_results(4)


def _rows(doc, **match):
    return [row for row in figures.failing_checks(doc) if all(row[key] == value for key, value in match.items())]


# ------------------------------------------------------------------ helpers

@pytest.mark.parametrize('values, expected', [
    ([3, 1, 2], 2), ([4, 1, 3, 2], 2.5), ([400, 400], 400), ([1.0, 2.0], 1.5), ([], None),
    ([None, 'x', True, 5], 5), ([float('nan'), 1], 1),
])
def test_median(values, expected):
    assert _text.median(values) == expected


def test_median_of_even_ints_stays_an_int_when_exact():
    assert isinstance(_text.median([400, 400]), int)
    assert isinstance(_text.median([1, 2]), float)


@pytest.mark.parametrize('measured, baseline, expected', [
    (360.0, 400.0, -0.1), (440, 400, 0.1), (1, 0, None), ('1X', '4X', None), (None, 3, None), (True, 1, None),
])
def test_deviation(measured, baseline, expected):
    assert _text.deviation(measured, baseline) == (pytest.approx(expected) if expected is not None else None)


@pytest.mark.parametrize('value, unit, text', [
    (471.25, 'GB/s', '471.25 GB/s'), (0.5, None, '0.5'), (2.0, None, '2'), (1234.56, None, '1234.6'), (400, 'Gb/s', '400 Gb/s'),
    (None, 'GB/s', '-'), (True, None, 'yes'), ('1X', None, '1X'),
    ({'symbol_errors': 100, 'link_downed': 0}, None, 'link_downed 0, symbol_errors 100'), ({}, None, '-'),
    (['4X', 2.5], None, '4X, 2.5'),
])
def test_fmt(value, unit, text):
    assert _text.fmt(value, unit) == text


def test_hostlist_falls_back_for_names_slurm_rejects():
    assert _text.hostlist(['gpu02', 'gpu01', 'gpu03']) == 'gpu[01-03]'
    assert _text.hostlist(['a b', 'c']) == 'a b,c'
    assert _text.hostlist([]) == ''


# ------------------------------------------------------------------ failing checks and next actions

def test_every_check_record_has_a_remedy_that_formats():
    assert all(record.remedy for record in CHECKS.values())
    for check in CHECKS:
        result = vr.new_result(check, 'mlx5_1:1', 1, 2, False, 'x', peer='leaf-rail1 port 7', partner='gpu09')
        text = figures.next_action('gpu05', result)
        assert text and '{' not in text


def test_an_unknown_check_falls_back_to_its_message():
    assert figures.next_action('gpu01', {'check': 'future.check', 'message': 'do the thing'}) == 'do the thing'


@pytest.mark.parametrize('kind, node, check, subject, action', [
    ('link_width', 'gpu02', 'fabric.link_width', 'mlx5_3:1', 'reseat or replace the cable on leaf01-rail3 port 2 / gpu02 mlx5_3'),
    ('link_width', 'gpu02', 'ib.port_rate', 'mlx5_3:1', 'leaf01-rail3 port 2 / gpu02 mlx5_3'),
    ('hca_bw_low', 'gpu03', 'perftest.write_bw', 'mlx5_5 -> gpu01 mlx5_5', 'check gpu03 mlx5_5 (fails 3 of its 3 pairs)'),
    ('nccl_slow', 'gpu04', 'nccl.slow_node', 'node', "compare gpu04's GPU clocks"),
    ('gpu_ecc', 'gpu03', 'gpu.ecc', 'GPU 6', 'drain gpu03, reset GPU 6'),
    ('gpu_xid', 'gpu04', 'gpu.xid', 'GPU 2', 'look up Xid 79'),
    ('dcgm', 'gpu03', 'gpu.dcgm_diag', 'node', 'rerun dcgmi diag -r 3 on gpu03'),
    ('fw_odd', 'gpu02', 'ib.firmware_uniform', 'node', 'flash the fleet HCA firmware 28.42.1000 on gpu02'),
])
def test_each_injected_fault_is_named_on_its_node_with_an_action(kind, node, check, subject, action):
    rows = _rows(LAB, node=node, check=check, subject=subject)
    assert len(rows) == 1, kind
    assert action in rows[0]['action']


def test_failing_checks_are_only_the_failures_node_by_node_fleet_last():
    rows = figures.failing_checks(LAB)
    assert all(row['node'] != 'gpu01' for row in rows)  # gpu01 has no fault of its own
    assert [row['node'] for row in rows] == sorted((row['node'] for row in rows), key=lambda n: (n == 'fleet', n))
    fleet = rows[-1]
    assert fleet['check'] == 'nccl.multi_node_busbw' and fleet['subject'] == 'gpu[01-04]'
    assert figures.failing_checks(make_results(4, [('nccl_slow', 'gpu01', 0)])) != []
    assert [row['check'] for row in figures.failing_checks(CLEAN)] == []


def test_failing_checks_carry_the_deviation():
    row = _rows(LAB, node='gpu04', check='nccl.busbw')[0]
    assert row['deviation'] == pytest.approx((row['measured'] - 400.0) / 400.0)


def test_perftest_suspects_count_failed_and_total_pairs_per_endpoint():
    suspects = perftest.perftest_suspects(LAB['perftest']['pairs'])
    assert suspects[('gpu02', 'mlx5_3')] == [3, 3]
    assert suspects[('gpu01', 'mlx5_3')] == [1, 3]
    assert suspects[('gpu01', 'mlx5_0')] == [0, 3]


# ------------------------------------------------------------------ charts' data

def test_nccl_chart():
    chart = figures.nccl_chart(LAB)
    assert [entry['node'] for entry in chart['bars']] == ['gpu01', 'gpu02', 'gpu03', 'gpu04']
    assert [entry['passed'] for entry in chart['bars']] == [True, True, True, False]
    assert chart['threshold'] == 400.0 and chart['median'] == LAB['nccl']['fleet_median']
    assert chart['slow_floor'] == pytest.approx(0.9 * LAB['nccl']['fleet_median'], abs=0.1)
    assert chart['multi_node']['passed'] is False


def test_nccl_chart_from_results_alone_computes_the_median():
    doc = copy.deepcopy(CLEAN)
    del doc['nccl']
    chart = figures.nccl_chart(doc)
    assert chart['median'] == _text.median(entry['busbw'] for entry in chart['bars']) and chart['multi_node'] is None


def test_heatmap_matrix_small_fleet_is_nodes_by_nodes_both_directions():
    matrix = perftest.heatmap_matrix(LAB, 3)
    assert matrix['labels'] == ['gpu01', 'gpu02', 'gpu03', 'gpu04'] and matrix['block'] == 1
    assert len(matrix['cells']) == 12  # every ordered pair but the diagonal (all pairs were tested)
    assert matrix['cells'][(1, 0)]['fraction'] == matrix['cells'][(0, 1)]['fraction'] < 0.3
    assert matrix['cells'][(0, 2)]['fraction'] > 0.9
    assert matrix['threshold_fraction'] == pytest.approx(0.9)
    assert perftest.perftest_rails(LAB) == list(range(8))


def test_heatmap_matrix_large_fleet_is_blocks_holding_their_worst_pair():
    doc = make_results(100, [('hca_bw_low', 'gpu0057', 2)], max_rounds=4)
    matrix = perftest.heatmap_matrix(doc, 2)
    assert matrix['block'] == 4 and len(matrix['labels']) == 25
    assert matrix['labels'][0] == 'gpu0001-gpu0004' and matrix['labels'][-1] == 'gpu0097-gpu0100'
    assert all(0 <= row < 25 and 0 <= col < 25 for row, col in matrix['cells'])
    faulty = [pair for pair in doc['perftest']['pairs'] if pair['rail'] == 2 and 'gpu0057' in (pair['client'], pair['server'])]
    assert len(faulty) == 4
    for pair in faulty:
        cell = matrix['cells'][((int(pair['client'][3:]) - 1) // 4, (int(pair['server'][3:]) - 1) // 4)]
        assert cell['fraction'] < 0.8 and 'gpu0057' in (cell['worst']['client'], cell['worst']['server'])
    assert sum(cell['pairs'] for cell in matrix['cells'].values()) == 2 * len(
        [pair for pair in doc['perftest']['pairs'] if pair['rail'] == 2])
    assert perftest.heatmap_matrix(doc, 5)['cells'] and not perftest.heatmap_matrix(doc, 99)['cells']


# The heatmap bands below and above the pass mark (html._heat_bands); a cell without a pass mark is neutral.
BELOW_PASS = ('#8f2d00', '#d55e00', '#e69f00')
AT_OR_ABOVE_PASS = ('#56b4e9', '#0072b2')


def _cell_colours(text):
    """{'client hca -> server hca': colour} of the heatmap cells of an HTML report (every cell has a tip on 4 nodes)."""
    cells = re.findall(r'<rect [^>]*fill="(#[0-9a-f]+)"><title>([^:<]+):', text)
    return dict((tip.replace('&gt;', '>'), colour) for colour, tip in cells if ' -&gt; ' in tip)


def _bidirectional_doc(parameters=True):
    """CLEAN with ib_write_bw run both ways: thresholds 1.8 x line rate, every pair at 1.85 x, one at 1.7 x."""
    doc = copy.deepcopy(CLEAN)
    for pair in doc['perftest']['pairs']:
        pair.update(threshold=1.8 * pair['line_rate'], measured=1.85 * pair['line_rate'], passed=True)
    slow = doc['perftest']['pairs'][0]
    slow.update(measured=1.7 * slow['line_rate'], passed=False)
    doc['run']['parameters'].update(perftest_fraction=0.9, perftest_bidirectional=True)
    if not parameters:
        del doc['run']['parameters']['perftest_fraction'], doc['run']['parameters']['perftest_bidirectional']
    return doc, '%s %s -> %s %s' % (slow['client'], slow['hca'], slow['server'], slow['peer_hca'])


def test_heatmap_of_a_bidirectional_run_is_against_twice_the_line_rate():
    doc, slow = _bidirectional_doc()
    matrix = perftest.heatmap_matrix(doc, 0)
    assert matrix['threshold_fraction'] == 0.9 and matrix['bidirectional'] is True
    assert sorted(set(round(cell['fraction'], 3) for cell in matrix['cells'].values())) == [0.85, 0.925]
    text = html.html_report(doc, template=TEMPLATE)
    colours = _cell_colours(text)
    assert colours[slow] in BELOW_PASS  # 1.7 x line rate: 85% of both directions, under the 90% pass mark
    healthy = [colour for tip, colour in colours.items() if tip != slow]
    assert healthy and all(colour in AT_OR_ABOVE_PASS for colour in healthy)  # 1.85 x: 92.5%
    assert '(85% of twice the line rate)' in text and 'ib_write_bw (both directions): fraction of twice the line rate' in text


def test_heatmap_pass_mark_comes_from_run_parameters():
    doc = copy.deepcopy(CLEAN)
    doc['run']['parameters']['perftest_fraction'] = 0.97  # every pair measured at 95.5-98.5% of line rate
    assert perftest.heatmap_matrix(doc, 0)['threshold_fraction'] == 0.97
    colours = set(_cell_colours(html.html_report(doc, template=TEMPLATE)).values())
    assert colours & set(BELOW_PASS) and colours & set(AT_OR_ABOVE_PASS)


def test_heatmap_without_parameters_falls_back_to_the_pairs_thresholds():
    doc = copy.deepcopy(CLEAN)
    del doc['run']['parameters']['perftest_fraction'], doc['run']['parameters']['perftest_bidirectional']
    assert perftest.heatmap_matrix(doc, 0)['threshold_fraction'] == pytest.approx(0.9)  # threshold / line rate
    # the heatmaps are the same; the test plan shows the parameters the document has

    def section(text):
        return text.split('id="perftest"', 1)[1].split('id="fabric"', 1)[0]
    assert section(html.html_report(doc, template=TEMPLATE)) == section(html.html_report(CLEAN, template=TEMPLATE))


def test_heatmap_without_a_derivable_pass_mark_draws_no_bands():
    doc, slow = _bidirectional_doc(parameters=False)
    matrix = perftest.heatmap_matrix(doc, 0)
    assert matrix['threshold_fraction'] is None and matrix['bidirectional'] is False  # threshold / line rate is 1.8
    text = html.html_report(doc, template=TEMPLATE)
    assert set(_cell_colours(text).values()) == {'#8c959f'} and slow in _cell_colours(text)
    assert 'no pass mark in results.json' in text
    for pair in doc['perftest']['pairs']:
        del pair['threshold']
    assert perftest.heatmap_matrix(doc, 0)['threshold_fraction'] is None


def test_hca_bars_median_separates_the_faulty_hca_from_its_partners():
    bars = perftest.hca_bars(LAB)
    by = dict(((entry['node'], entry['hca']), entry) for entry in bars['bars'])
    assert len(bars['bars']) == bars['total'] == 32
    assert not by[('gpu02', 'mlx5_3')]['passed'] and by[('gpu02', 'mlx5_3')]['pairs'] == 3
    assert by[('gpu01', 'mlx5_3')]['passed'] and by[('gpu01', 'mlx5_3')]['worst'] < 100
    assert bars['threshold'] == 360.0 and bars['line_rate'] == 400.0 and bars['unit'] == 'Gb/s'


def test_hca_bars_for_a_large_fleet_are_the_lowest():
    bars = perftest.hca_bars(make_results(40, [('hca_bw_low', 'gpu33', 1)], max_rounds=2))
    assert bars['total'] == 320 and len(bars['bars']) == perftest.HCA_BARS_WORST
    assert (bars['bars'][0]['node'], bars['bars'][0]['hca']) == ('gpu33', 'mlx5_1')
    assert [entry['measured'] for entry in bars['bars']] == sorted(entry['measured'] for entry in bars['bars'])


def test_link_table_highlights_degraded_and_down_links():
    table = figures.link_table(make_results(4, [('link_width', 'gpu02', 3), ('port_down', 'gpu01', 0)]))
    assert table['total'] == 32 and table['bad'] == 2 and table['shown_all']
    bad = [row for row in table['rows'] if row['bad']]
    assert sorted(row['node_name'] for row in bad) == ['gpu01 mlx5_0', 'gpu02 mlx5_3']
    trimmed = figures.link_table(make_results(4, [('link_width', 'gpu02', 3)]), limit=10)
    assert not trimmed['shown_all'] and [row['node_name'] for row in trimmed['rows']] == ['gpu02 mlx5_3']
    assert trimmed['counts'][0] == (('4X', '106.25', 'Active'), 31)


def test_version_matrix_marks_the_odd_ones_out():
    doc = make_results(5, [('fw_odd', 'gpu02', 0), ('driver_odd', 'gpu04', 0)])
    matrix = figures.version_matrix(doc)
    by = dict((component['key'], component) for component in matrix['components'])
    assert by['driver']['majority'] == '550.127.08' and by['driver']['odd'] == ['gpu04']
    assert by['driver']['values'][1] == {'value': '535.183.01', 'nodes': ['gpu04'], 'hostlist': 'gpu04'}
    assert by['hca_firmware']['odd'] == ['gpu02']
    assert matrix['nodes']['gpu02']['hca_firmware'] == '28.42.1000 (mlx5_0 28.39.1002)'
    assert by['kernel']['odd'] == [] and by['kernel']['count'] == 5
    assert matrix['odd_nodes'] == ['gpu02', 'gpu04']
    assert [component['key'] for component in matrix['components']] == [key for key, _label in figures.VERSION_COMPONENTS]


def test_gpu_health():
    health = figures.gpu_health(LAB)
    assert health['columns'] == ['ECC', 'row remap', 'NVLink', 'Xid', 'dcgmi diag']
    rows = dict((row['node'], row) for row in health['rows'])
    assert not rows['gpu01']['bad'] and rows['gpu01']['cells'][4] == {'state': 'ok', 'text': 'pass (-r 2)'}
    assert rows['gpu03']['cells'][0] == {'state': 'fail', 'text': 'GPU 6: 2'}
    assert rows['gpu03']['cells'][4]['text'] == 'node: fail (-r 2)'
    assert rows['gpu04']['cells'][3] == {'state': 'fail', 'text': 'GPU 2: 79'}


def test_gpu_health_of_a_node_without_gpu_results():
    doc = copy.deepcopy(CLEAN)
    doc['nodes']['gpu01']['results'] = [r for r in doc['nodes']['gpu01']['results'] if r['area'] != 'gpu']
    cells = figures.gpu_health(doc)['rows'][0]['cells']
    assert all(cell == {'state': 'none', 'text': 'not run'} for cell in cells)


def test_gpu_health_ecc_column_holds_ecc_mode():
    doc = copy.deepcopy(CLEAN)
    doc['nodes']['gpu02']['results'].append(
        vr.new_result('gpu.ecc_mode', 'GPU 5', 'Disabled', 'Enabled', False, 'GPU 5 ECC mode Disabled, expected Enabled'))
    rows = dict((row['node'], row) for row in figures.gpu_health(doc)['rows'])
    assert rows['gpu02']['cells'][0] == {'state': 'fail', 'text': 'GPU 5: Disabled'} and rows['gpu02']['bad']
    assert rows['gpu01']['cells'][0] == {'state': 'ok', 'text': 'ok'}
    assert 'enable ECC on GPU 5 of gpu02' in figures.failing_checks(doc)[0]['action']


def test_results_table_worst_follows_the_check_direction():
    doc = copy.deepcopy(CLEAN)
    for index, name in enumerate(sorted(doc['nodes'])):
        doc['nodes'][name]['results'].append(vr.new_result(
            'fabric.link_speed', 'mlx5_0:1', 106.25 if index else 53.125, 106.25, bool(index), 'lane speed', unit='Gb/s'))
    rows = dict((row['check'], row) for row in figures.results_table(doc))
    assert rows['fabric.link_speed']['worst'] == 53.125  # higher is better: the worst is the lowest
    assert rows['nccl.wrong']['worst'] == 0


# ------------------------------------------------------------------ tables of the summary

def test_results_table_baseline_measured_deviation():
    rows = dict((row['check'], row) for row in figures.results_table(LAB))
    busbw = rows['nccl.busbw']
    assert busbw['baseline'] == 400.0 and busbw['total'] == 4 and busbw['passed'] == 3
    assert busbw['worst'] == min(LAB['nccl']['single_node'][n]['busbw'] for n in LAB['nodes'])
    assert busbw['deviation'] == pytest.approx((busbw['median'] - 400.0) / 400.0)
    assert rows['fabric.link_width']['numeric'] is False and rows['fabric.link_width']['values'] == [('4X', 31), ('1X', 1)]
    assert rows['gpu.ecc']['worst'] == 2  # lower is better: the worst is the highest
    assert rows['nccl.multi_node_busbw']['passed'] == 0
    assert list(rows)[:2] == ['ib.hca_present', 'ib.port_state']


def test_test_plan_lists_tools_and_parameters_per_area():
    plan = dict((row['area'], row) for row in figures.test_plan(LAB))
    assert list(plan) == ['ib', 'fabric', 'perftest', 'net', 'gpu', 'nccl']
    assert plan['gpu']['parameters'] == ['dcgm_diag_level=2']
    assert 'nccl_max_bytes=8G' in plan['nccl']['parameters'] and plan['net']['parameters'] == ['mtu=4092']
    assert plan['perftest']['checks'] == ['perftest.write_bw'] and 'ib_write_bw' in plan['perftest']['tools']


# ------------------------------------------------------------------ comparison

def test_compare_states_fixes_breaks_and_moved_figures():
    before = make_results(4, [('gpu_ecc', 'gpu01', 0), ('nccl_slow', 'gpu02', 0)])
    after = make_results(4, [('dcgm', 'gpu03', 0)], seed=2026)
    comparison = compare(before, after, 0.05)
    states = dict((row['node'], (row['before'], row['after'])) for row in comparison['nodes'])
    assert states == {'gpu01': ('fail', 'pass'), 'gpu02': ('fail', 'pass'), 'gpu03': ('pass', 'fail')}
    assert {'node': 'gpu03', 'check': 'gpu.dcgm_diag', 'subject': 'node'} in comparison['broken']
    assert {'node': 'gpu01', 'check': 'gpu.ecc', 'subject': 'GPU 0'} in comparison['fixed']
    moved = dict(((item['node'], item['check'], item['subject']), item) for item in comparison['moved'])
    assert moved[('gpu01', 'gpu.ecc', 'GPU 0')]['change'] == -1.0
    assert moved[('gpu02', 'nccl.busbw', 'node')]['change'] > 0.2
    assert ('gpu04', 'nccl.busbw', 'node') not in moved  # jitter stays under 5%
    assert comparison['threshold'] == 0.05 and comparison['after']['summary']['verdict'] == 'FAIL'


def test_compare_from_zero_and_absent_nodes():
    before = make_results(3)
    after = make_results(4, [('gpu_ecc', 'gpu01', 1)])
    comparison = compare(before, after)
    assert {'node': 'gpu04', 'before': 'absent', 'after': 'pass', 'drained_before': False, 'drained_after': False} in \
        comparison['nodes']
    item = [item for item in comparison['moved'] if item['check'] == 'gpu.ecc'][0]
    assert item['change'] is None and item['before'] == 0 and item['after'] == 2
    assert comparison['moved'][0] is item  # a change from zero sorts first


def test_compare_with_itself_changes_nothing():
    comparison = compare(LAB, LAB)
    assert comparison['nodes'] == comparison['broken'] == comparison['fixed'] == comparison['moved'] == []


# ------------------------------------------------------------------ JUnit

# Our own statement of what JUnit consumers (Jenkins, GitLab, GitHub test reporters) need,
# after the Ant JUnit task's layout: written here, not copied from a published schema.
JUNIT_XSD = '''<?xml version="1.0" encoding="UTF-8"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" elementFormDefault="qualified">
  <xs:element name="testsuites">
    <xs:complexType>
      <xs:sequence><xs:element name="testsuite" minOccurs="0" maxOccurs="unbounded" type="suite"/></xs:sequence>
      <xs:attribute name="name" type="xs:string"/>
      <xs:attribute name="tests" type="xs:nonNegativeInteger" use="required"/>
      <xs:attribute name="failures" type="xs:nonNegativeInteger" use="required"/>
      <xs:attribute name="errors" type="xs:nonNegativeInteger" use="required"/>
      <xs:attribute name="skipped" type="xs:nonNegativeInteger"/>
      <xs:attribute name="time" type="xs:decimal"/>
    </xs:complexType>
  </xs:element>
  <xs:complexType name="suite">
    <xs:sequence>
      <xs:element name="properties" minOccurs="0">
        <xs:complexType><xs:sequence>
          <xs:element name="property" minOccurs="0" maxOccurs="unbounded">
            <xs:complexType>
              <xs:attribute name="name" type="xs:string" use="required"/>
              <xs:attribute name="value" type="xs:string" use="required"/>
            </xs:complexType>
          </xs:element>
        </xs:sequence></xs:complexType>
      </xs:element>
      <xs:element name="testcase" minOccurs="0" maxOccurs="unbounded">
        <xs:complexType>
          <xs:choice minOccurs="0">
            <xs:element name="failure" type="problem"/>
            <xs:element name="error" type="problem"/>
            <xs:element name="skipped"/>
          </xs:choice>
          <xs:attribute name="name" type="xs:string" use="required"/>
          <xs:attribute name="classname" type="xs:string" use="required"/>
          <xs:attribute name="time" type="xs:decimal" use="required"/>
        </xs:complexType>
      </xs:element>
      <xs:element name="system-out" type="xs:string"/>
      <xs:element name="system-err" type="xs:string"/>
    </xs:sequence>
    <xs:attribute name="name" type="xs:token" use="required"/>
    <xs:attribute name="tests" type="xs:nonNegativeInteger" use="required"/>
    <xs:attribute name="failures" type="xs:nonNegativeInteger" use="required"/>
    <xs:attribute name="errors" type="xs:nonNegativeInteger" use="required"/>
    <xs:attribute name="skipped" type="xs:nonNegativeInteger"/>
    <xs:attribute name="time" type="xs:decimal" use="required"/>
    <xs:attribute name="timestamp" type="xs:dateTime" use="required"/>
    <xs:attribute name="hostname" type="xs:token" use="required"/>
    <xs:attribute name="id" type="xs:int"/>
    <xs:attribute name="package" type="xs:token"/>
  </xs:complexType>
  <xs:complexType name="problem">
    <xs:simpleContent>
      <xs:extension base="xs:string">
        <xs:attribute name="message" type="xs:string"/>
        <xs:attribute name="type" type="xs:string" use="required"/>
      </xs:extension>
    </xs:simpleContent>
  </xs:complexType>
</xs:schema>
'''


def _check_junit_structure(text):
    """The elements and attributes JUnit consumers require, checked by hand."""
    root = ET.fromstring(text)
    assert root.tag == 'testsuites'
    for attribute in ('tests', 'failures', 'errors'):
        assert root.get(attribute, '').isdigit(), attribute
    total = failures = errors = skipped = 0
    for suite in root:
        assert suite.tag == 'testsuite'
        for attribute in ('name', 'tests', 'failures', 'errors', 'time', 'timestamp', 'hostname'):
            assert suite.get(attribute) is not None, attribute
        assert re.match(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$', suite.get('timestamp'))
        children = [child.tag for child in suite]
        assert children[0] == 'properties' and children[-2:] == ['system-out', 'system-err']
        cases = suite.findall('testcase')
        assert set(children[1:-2]) <= {'testcase'}
        assert int(suite.get('tests')) == len(cases)
        tally = {'failure': 0, 'error': 0, 'skipped': 0}
        for case in cases:
            for attribute in ('name', 'classname', 'time'):
                assert case.get(attribute), attribute
            assert case.get('classname').startswith(suite.get('name') + '.')
            problems = list(case)
            assert len(problems) <= 1 and all(problem.tag in tally for problem in problems)
            assert all(problem.get('type') for problem in problems if problem.tag != 'skipped')
            assert all(problem.get('message') for problem in problems)
            for problem in problems:
                tally[problem.tag] += 1
        assert int(suite.get('failures')) == tally['failure']
        assert int(suite.get('errors')) == tally['error'] and int(suite.get('skipped')) == tally['skipped']
        total += len(cases)
        failures += tally['failure']
        errors += tally['error']
        skipped += tally['skipped']
    assert int(root.get('tests')) == total and int(root.get('failures')) == failures
    assert int(root.get('errors')) == errors and int(root.get('skipped')) == skipped
    return root


def test_junit_one_suite_per_area_one_case_per_node_and_check():
    root = _check_junit_structure(junit.junit_xml(LAB))
    assert [suite.get('name') for suite in root] == ['ib', 'fabric', 'perftest', 'net', 'gpu', 'nccl']
    fabric = root.find("testsuite[@name='fabric']")
    assert len(fabric.findall('testcase')) == 4  # 4 nodes x 1 check, 8 subjects each folded into the case
    failing = [case for case in root.iter('testcase') if case.find('failure') is not None]
    names = sorted((case.get('classname'), case.get('name')) for case in failing)
    assert ('fabric.gpu02', 'fabric.link_width') in names and ('gpu.gpu03', 'gpu.ecc') in names
    assert ('nccl.fleet', 'nccl.multi_node_busbw') in names
    failure = root.find("testsuite[@name='fabric']/testcase[@classname='fabric.gpu02']/failure")
    assert failure.get('message') == 'mlx5_3:1: measured 1X, threshold 4X'
    assert failure.get('type') == 'fabric.link_width'
    assert 'next: reseat or replace the cable on leaf01-rail3 port 2 / gpu02 mlx5_3' in failure.text
    failure = root.find("testsuite[@name='perftest']/testcase[@classname='perftest.gpu03']/failure")
    assert failure.get('message').endswith('(and 2 more)')
    props = dict((prop.get('name'), prop.get('value')) for prop in root.find('testsuite/properties'))
    assert props == {'inventory': 'lab', 'collection_version': '0.1.0', 'mode': 'drain'}  # a name, not the path
    assert root.get('time') == '398'


def test_junit_escapes_markup_in_messages():
    doc = copy.deepcopy(CLEAN)
    doc['nodes']['gpu01']['results'].append(vr.new_result('gpu.model', 'node', 'H100 <SXM> & "x"', 'H100', False, 'a\nb'))
    doc['nodes']['gpu01']['passed'] = False
    doc['summary'] = vr.summarize(doc['nodes'])
    root = _check_junit_structure(junit.junit_xml(doc))
    failure = root.find(".//testcase[@classname='gpu.gpu01'][@name='gpu.model']/failure")
    assert 'H100 <SXM> & "x"' in failure.get('message')


def test_junit_validates_against_our_schema_with_xmllint(tmp_path):
    xmllint = shutil.which('xmllint')
    if xmllint is None:
        pytest.skip('xmllint not installed (Debian: apt-get install libxml2-utils)')
    schema = tmp_path / 'junit.xsd'
    schema.write_text(JUNIT_XSD)
    for doc in (LAB, CLEAN):
        path = tmp_path / 'junit.xml'
        path.write_text(junit.junit_xml(doc))
        run = subprocess.run([xmllint, '--noout', '--schema', str(schema), str(path)], capture_output=True, text=True,
                             check=False)
        assert run.returncode == 0, run.stderr


# ------------------------------------------------------------------ Markdown and HTML

def test_summary_markdown_sections():
    text = markdown.summary_markdown(LAB)
    headings = re.findall(r'^## (.*)$', text, re.M)
    assert headings == ['Cluster and hardware inventory', 'Software and firmware versions', 'Test plan', 'Results',
                        'Problems', 'Failed items and actions', 'Sign-off']
    assert text.startswith('# Acceptance test report: lab\n\n**Verdict: FAIL** (1 of 4 nodes passed')
    assert '- Nodes: 4 (`gpu[01-04]`)' in text and '- GPUs per node: 8 x NVIDIA H100 80GB HBM3' in text
    assert '| HCA firmware | 28.42.1000 | 3 of 4 | 28.42.1000 (mlx5_0 28.39.1002): `gpu02` |' in text
    assert re.search(r'^\| `nccl.busbw` \| .* \| 400 GB/s \| median [\d.]+ GB/s, worst [\d.]+ GB/s \| \+[\d.]+% '
                     r'\(worst -[\d.]+%\) \| 3 of 4 \|$', text, re.M)
    assert '| gpu02 | `fabric.link_width` | mlx5_3:1 | 1X | 4X | reseat or replace the cable on leaf01-rail3 port 2' in text
    assert '| Customer representative | | | |' in text
    for line in text.splitlines():
        if line.startswith('|'):
            assert len(re.findall(r'(?<!\\)\|', line)) >= 3


def test_summary_markdown_comparison_and_clean_run():
    text = markdown.summary_markdown(LAB, compare(CLEAN, LAB))
    assert '## Comparison with the run of 2026-11-29T17:00:03Z' in text and '| gpu02 | pass | fail (drained) |' in text
    clean = markdown.summary_markdown(CLEAN)
    assert '**Verdict: PASS**' in clean and '## Failed items and actions\n\nNone.' in clean


def test_html_is_self_contained():
    text = html.html_report(LAB, compare(CLEAN, LAB), template=TEMPLATE)
    assert text.startswith('<!DOCTYPE html>') and text.endswith('</html>\n')
    assert not re.search(r'(https?:|ftp:|//[a-z]|<script|<link|<img|@import|url\()', text, re.I)
    for anchor in ('problems', 'comparison', 'failures', 'nccl', 'perftest', 'fabric', 'versions', 'gpu', 'plan', 'signoff',
                   'appendix'):
        assert 'id="%s"' % anchor in text and 'href="#%s"' % anchor in text
    assert text.count('<svg ') == 8 + 3  # a heatmap per rail, NCCL bars and curves, per-HCA bars
    assert u'<header class="verdict fail"><h1>\u2717 FAIL</h1>' in text
    assert 'reseat or replace the cable on leaf01-rail3 port 2 / gpu02 mlx5_3' in text


def test_html_escapes_document_strings():
    doc = copy.deepcopy(CLEAN)
    doc['nodes']['gpu01']['versions']['kernel'] = '6.1 <b>'
    text = html.html_report(doc, cover={'cluster': '<script>alert(1)</script>'}, template=TEMPLATE)
    assert '<script>' not in text and '&lt;script&gt;' in text and '6.1 &lt;b&gt;' in text
    assert u'<header class="verdict pass"><h1>\u2713 PASS</h1>' in text


def test_a_node_that_could_not_be_reached_is_reported():
    doc = copy.deepcopy(CLEAN)
    doc['nodes']['gpu05'] = {'passed': False, 'drained': True, 'resumed': False, 'results': [
        vr.new_result('node.reachable', 'node', 'unreachable', 'reachable', False, 'gpu05: ssh: connect timed out')]}
    doc['summary'] = vr.summarize(doc['nodes'])
    assert vr.validate_results(doc) == []
    outputs = report.build_outputs(doc, html_template=TEMPLATE)
    assert 'bring gpu05 back (power, BMC console, sshd, network)' in outputs['report.html']
    assert "classname=\"node.gpu05\"" in outputs['junit.xml']
    assert '| node | Ansible connection' in outputs['summary.md']


def test_build_outputs_is_deterministic_and_respects_formats():
    first = report.build_outputs(LAB, CLEAN, html_template=TEMPLATE)
    assert sorted(first) == ['junit.xml', 'report.html', 'summary.md']
    assert first == report.build_outputs(copy.deepcopy(LAB), copy.deepcopy(CLEAN), html_template=TEMPLATE)
    assert list(report.build_outputs(LAB, formats=['junit'])) == ['junit.xml']


def test_large_fleet_html_stays_bounded():
    doc = make_results(300, [('link_width', 'gpu0150', 1), ('gpu_ecc', 'gpu0007', 0)], max_rounds=3)
    text = html.html_report(doc, template=TEMPLATE)
    assert '(blocks of 10 nodes)' in text
    assert '<p>299 nodes healthy in every column; the 1 others:</p>' in text
    assert 'Only the degraded and down links are listed.' in text
    assert 'the 64 lowest of 2400 HCAs' in text
    assert len(text) < 1500000
    assert os.path.basename(report.OUTPUT_NAMES['html']) == 'report.html'


def test_unused_switch_ports_are_not_links():
    doc = make_results(2, [('link_width', 'gpu02', 3)])
    doc['fabric']['links'].append({'node_type': 'Switch', 'node_name': 'MF0;leaf-rail0:MQM9790/U1', 'port': 40,
                                   'width': None, 'lane_speed_gbps': None, 'state': 'Down', 'physical_state': 'Polling',
                                   'peer_lid': None, 'peer_port': None, 'peer_name': None, 'could_be': None, 'degraded': False})
    table = figures.link_table(doc)
    assert table['unused'] == 1 and table['total'] == 16 and table['bad'] == 1
    assert 'MF0;leaf-rail0:MQM9790/U1' not in [row['node_name'] for row in table['rows']]


HOSTILE = '<script>alert(1)</script> `x` | y \x1b[31mred\x1b[0m \x00nul \x07bell \x1b]0;title\x07 \ud800'


def test_tool_derived_text_is_inert_and_every_output_valid(tmp_path):
    """A message, a subject and a version string carrying markup, terminal sequences and bytes XML cannot hold (node
    descriptions and tool output are not ours to trust): junit.xml stays well-formed, nothing runs in summary.md or
    report.html, and no control character reaches any output."""
    doc = copy.deepcopy(LAB)
    doc['nodes']['gpu01']['results'].append(vr.new_result('gpu.model', 'node', 'H100 ' + HOSTILE, 'H100', False, HOSTILE))
    doc['nodes']['gpu01']['passed'] = False
    doc['nodes']['gpu02']['versions']['driver'] = '535.129.03 ' + HOSTILE
    doc['summary'] = vr.summarize(doc['nodes'])
    outputs = report.build_outputs(doc, html_template=TEMPLATE)
    for name, text in outputs.items():
        assert not re.search('[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]', text), name
        assert '<script>alert' not in text, name
        text.encode('utf-8')  # writable as UTF-8 (no lone surrogate)
    root = _check_junit_structure(outputs['junit.xml'])
    failure = root.find(".//testcase[@classname='gpu.gpu01'][@name='gpu.model']/failure")
    assert '<script>alert(1)</script>' in failure.get('message')  # as text, escaped in the file
    assert 'red' in failure.text and 'title' not in failure.text
    xmllint = shutil.which('xmllint')
    if xmllint:
        path = tmp_path / 'junit.xml'
        path.write_text(outputs['junit.xml'], encoding='utf-8')
        run = subprocess.run([xmllint, '--noout', str(path)], capture_output=True, text=True, check=False)
        assert run.returncode == 0, run.stderr
    summary = outputs['summary.md']
    assert '&lt;script&gt;alert(1)&lt;/script&gt;' in summary
    # one table row per failure: the message's pipe and backticks do not open cells or code spans
    row = [line for line in summary.splitlines() if line.startswith('| gpu01 | `gpu.model` |')]
    assert len(row) == 1 and row[0].count(' | ') == 5 and '\\|' in row[0] and '\\`x\\`' in row[0]
    assert '&lt;script&gt;' in outputs['report.html']


def test_per_counter_limits_read_as_counters_not_a_python_dict():
    doc = copy.deepcopy(CLEAN)
    doc['nodes']['gpu01']['results'].append(vr.new_result(
        'ib.link_errors', 'mlx5_0:1', {'symbol_errors': 250}, {'symbol_errors': 100}, False, 'symbol_errors +250'))
    doc['nodes']['gpu02']['results'].append(vr.new_result(
        'ib.link_errors', 'mlx5_0:1', 0, {'symbol_errors': 100, 'link_downed': 0}, True, 'none rose'))
    doc['nodes']['gpu01']['passed'] = False
    doc['summary'] = vr.summarize(doc['nodes'])
    row = [row for row in figures.results_table(doc) if row['check'] == 'ib.link_errors'][0]
    assert row['baseline'] == 'link_downed 0, symbol_errors 100; symbol_errors 100'
    outputs = report.build_outputs(doc, html_template=TEMPLATE)
    assert not any("{'" in text for text in outputs.values())
    assert '| gpu01 | `ib.link_errors` | mlx5_0:1 | symbol_errors 250 | symbol_errors 100 |' in outputs['summary.md']


def test_html_has_the_sign_off_block_and_a_print_stylesheet():
    text = html.html_report(LAB, template=TEMPLATE)
    signoff = text[text.index('<h2 id="signoff">'):]
    assert 'Verdict <b>FAIL</b> for 4 nodes' in signoff and ' on lab with ' in signoff
    assert '<table class="signoff">' in signoff
    assert [row for row in ('Delivery engineer', 'Customer representative') if '<td>%s</td><td></td><td></td><td></td>' % row
            in signoff] == ['Delivery engineer', 'Customer representative']
    style = text[text.index('<style>'):text.index('</style>')]
    assert '@media print{' in style and '@page{size:A4 landscape' in style and 'nav{display:none}' in style


# ------------------------------------------------------------------ report.html's template

def test_the_shipped_template_gives_the_same_bytes_for_the_same_input():
    cover = {'customer': 'Example Research Lab', 'cluster': 'hgx-su1'}
    first = html.html_report(LAB, compare(CLEAN, LAB), cover, TEMPLATE)
    again = html.html_report(copy.deepcopy(LAB), compare(CLEAN, copy.deepcopy(LAB)), dict(cover), TEMPLATE)
    assert first == again
    assert first.startswith('<!DOCTYPE html>\n<html lang="en">') and first.endswith('</main></body></html>\n')
    assert '{#' not in first and '{%' not in first and 'trim_blocks' not in first  # the template's own comment stays out


def test_a_users_template_is_used_and_what_it_writes_is_escaped():
    assert html.html_report(LAB, template='<h1>{{ verdict }}</h1>') == '<h1>FAIL</h1>'
    doc = copy.deepcopy(CLEAN)
    doc['nodes']['gpu01']['results'].append(vr.new_result(
        'gpu.model', 'node', 'H100', 'H100 SXM', False, '<script>alert(1)</script> "q" \x1b[31mred\x1b[0m'))
    doc['nodes']['gpu01']['passed'] = False
    doc['summary'] = vr.summarize(doc['nodes'])
    text = html.html_report(doc, template='{% for row in failures.rows %}<p>{{ row.message }}</p>{% endfor %}\n{{ nccl.chart }}\n')
    assert text.startswith('<p>&lt;script&gt;alert(1)&lt;/script&gt; &quot;q&quot; red</p><svg ')  # the chart is markup


def test_template_errors_say_where():
    with pytest.raises(html.HtmlTemplateError, match=r'^line 2: '):
        html.html_report(LAB, template='<p>\n{% if %}\n')
    with pytest.raises(html.HtmlTemplateError, match=r"^line 3: UndefinedError: 'verdit' is undefined"):
        html.html_report(LAB, template='a\nb\n{{ verdit }}\n')
    with pytest.raises(html.HtmlTemplateError, match=r'^no template: .*roles/report/templates/report.html.j2'):
        html.html_report(LAB)


def test_without_jinja2_the_error_names_it(monkeypatch):
    monkeypatch.setattr(html, 'jinja2', None)
    with pytest.raises(html.HtmlTemplateError, match='needs the Python package jinja2'):
        html.html_report(LAB, template=TEMPLATE)


def test_the_html_context_is_plain_data_and_the_charts_markup():
    """What a template gets: text, numbers, booleans, None, lists and dicts, plus the SVG charts as markup; no key a
    template would read as a dict method (``row.items`` is the method in Jinja2), and every top-level key documented in
    html_context's docstring and in docs/report.md's "Your own template"."""
    context = html.html_context(LAB, compare(CLEAN, LAB), {'customer': 'Example Research Lab'})
    markup = []

    def walk(value, where):
        if isinstance(value, dict):
            for key, item in value.items():
                assert isinstance(key, str) and not hasattr({}, key), '%s.%s' % (where, key)
                walk(item, '%s.%s' % (where, key))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(item, '%s[%d]' % (where, index))
        else:
            assert value is None or isinstance(value, (str, int, float, bool)), where
            if hasattr(value, '__html__'):
                markup.append(where)

    walk(context, 'context')
    assert sorted(markup) == sorted(['context.nccl.chart', 'context.nccl.curves'] + ['context.perftest.tests[0].heatmaps[%d]' % rail for rail in range(8)]
                                    + ['context.perftest.tests[0].hca_chart'])
    with open(os.path.join(REPO, 'docs', 'report.md'), encoding='utf-8') as handle:
        docs = handle.read()
    own = docs[docs.index('### Your own template'):]
    own = own[:own.index('\n## ')] if '\n## ' in own else own
    for key in context:
        assert '``%s``' % key in html.html_context.__doc__, key
        assert '`%s`' % key in own, key


@pytest.mark.parametrize('source, name', [
    ('/home/ops/clusters/hgx-su1/hosts.yml', 'hgx-su1'), ('/home/ops/clusters/hgx-su1/', 'hgx-su1'),
    ('inventories/lab', 'lab'), ('/srv/inv/su2.yml', 'su2'), ('hosts', 'hosts'), ('./mycluster/inventory', 'mycluster'),
    ('', ''), (None, ''),
])
def test_inventory_name_is_never_the_engineers_path(source, name):
    assert _text.inventory_name(source) == name


def test_the_cover_heads_every_output_and_leaves_out_what_is_not_given():
    cover = {'customer': 'Example Research Lab', 'site': 'DH2 rows 14-17', 'cluster': 'hgx-su1',
             'criteria': 'SOW-2026-117 appendix B rev 3', 'run_by': 'J. Doe', 'commit': '9afa5ef'}
    doc = copy.deepcopy(LAB)
    doc['run']['inventory'] = '/home/jdoe/work/customer-x/hgx-su1/hosts.yml'
    assert figures.cover_rows(doc, cover) == [
        ('Customer', 'Example Research Lab'), ('Site', 'DH2 rows 14-17'), ('Cluster', 'hgx-su1'),
        ('Acceptance criteria', 'SOW-2026-117 appendix B rev 3'), ('Inventory', 'hgx-su1'),
        ('Run', '2026-11-29T17:00:03Z to 2026-11-29T17:06:41Z'), ('Run by', 'J. Doe'),
        ('Collection', 'aicluster.infra 0.1.0 (commit 9afa5ef)'), ('Gate mode', 'drain')]
    assert [label for label, _value in figures.cover_rows(doc)] == ['Inventory', 'Run', 'Collection', 'Gate mode']
    outputs = report.build_outputs(doc, cover=cover, html_template=TEMPLATE)
    assert not any('/home/jdoe' in text for text in outputs.values())
    assert outputs['summary.md'].startswith('# Acceptance test report: hgx-su1\n')
    assert '| Acceptance criteria | SOW-2026-117 appendix B rev 3 |' in outputs['summary.md']
    assert '<tr><th>Customer</th><td>Example Research Lab</td></tr>' in outputs['report.html']
    assert '<title>FAIL: hgx-su1 acceptance report</title>' in outputs['report.html']
    root = _check_junit_structure(outputs['junit.xml'])
    props = dict((prop.get('name'), prop.get('value')) for prop in root.find('testsuite/properties'))
    assert props['customer'] == 'Example Research Lab' and props['criteria'] == 'SOW-2026-117 appendix B rev 3'
    assert root.get('name') == 'aicluster.infra acceptance: hgx-su1'
