# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report's consistency and completeness: one entry per physical problem, the blamed end and its neutral
partner, figures judged against the expectation the gate used, every planned check's state (JUnit included), the
criteria with their sources."""

from __future__ import absolute_import, division, print_function

import copy
import xml.etree.ElementTree as ET

from _synthetic_results import make_results

from ansible_collections.aicluster.infra.plugins.module_utils.report import figures, junit, markdown, perftest, problems
from ansible_collections.aicluster.infra.plugins.module_utils.verify import results as vr
from ansible_collections.aicluster.infra.plugins.module_utils.verify.checks import CHECKS

# The lab run: a link trained at 1X, an HCA at 71% bandwidth and an Xid, on three nodes of four.
FIELD_FAULTS = (('link_width', 'gpu02', 3), ('hca_bw_low', 'gpu03', 5), ('gpu_xid', 'gpu04', 2))
FIELD = make_results(4, FIELD_FAULTS)


def _problems(doc):
    return problems.physical_problems(figures.failing_checks(doc))


def test_each_physical_problem_is_one_entry_with_its_checks():
    found = _problems(FIELD)
    assert [problem['blamed'] for problem in found] == ['gpu02 mlx5_3', 'gpu03 mlx5_5', 'gpu04 GPU 2']
    link, hca, gpu = found
    # the 1X cable: both ends named, every check it caused under it, one action naming both ends
    assert link['kind'] == 'port' and link['ends'] == ['leaf01-rail3 port 2']
    assert link['checks'] == ['ib.port_rate', 'fabric.link_width', 'perftest.write_bw']
    assert link['lead'] == 'fabric.link_width' and link['title'] == 'gpu02 mlx5_3: fabric.link_width 1X, expected 4X'
    assert 'leaf01-rail3 port 2' in link['action'] and 'gpu02 mlx5_3' in link['action']
    assert len(link['rows']) == 5  # link width, port rate, three perftest pairs
    # the slow HCA: low with every partner; the partners are named, none of them is blamed
    assert hca['checks'] == ['perftest.write_bw'] and hca['ends'] == ['gpu01 mlx5_5', 'gpu02 mlx5_5', 'gpu04 mlx5_5']
    assert gpu['checks'] == ['gpu.xid'] and gpu['ends'] == []
    assert problems.problem_counts(found) == {'problems': 3, 'nodes': 3, 'checks': 9}
    # and the markdown names each once
    text = markdown.summary_markdown(FIELD)
    section = text.split('## Problems', 1)[1].split('\n## ', 1)[0]
    assert section.count('gpu02 mlx5_3:') == 1 and section.count('gpu03 mlx5_5:') == 1 and section.count('gpu04 GPU 2:') == 1
    assert '3 problems on 3 nodes' in section


def test_a_consequence_joins_the_nodes_one_hardware_problem():
    doc = make_results(4, (('gpu_xid', 'gpu04', 2), ('nccl_slow', 'gpu04', 0)))
    found = [problem for problem in _problems(doc) if problem['node'] == 'gpu04']
    assert len(found) == 1 and found[0]['checks'] == ['gpu.xid', 'nccl.busbw', 'nccl.slow_node']
    # two hardware problems on one node: the consequence stands on its own rather than being guessed at
    doc = make_results(4, (('gpu_xid', 'gpu04', 2), ('gpu_ecc', 'gpu04', 5), ('nccl_slow', 'gpu04', 0)))
    kinds = sorted(problem['kind'] for problem in _problems(doc) if problem['node'] == 'gpu04')
    assert kinds == ['gpu', 'gpu', 'nccl']


def test_a_failure_recorded_on_the_healthy_end_joins_the_partners_link_problem():
    doc = copy.deepcopy(FIELD)
    # an older results.json: the pair's failure sat on the client, the healthy gpu01
    doc['nodes']['gpu01']['results'].append(vr.new_result(
        'perftest.write_bw', 'mlx5_3 -> gpu02 mlx5_3', 93.7, 360.0, False, 'low', unit='Gb/s', partner='gpu02', rail=3))
    found = _problems(doc)
    assert [problem['blamed'] for problem in found] == ['gpu02 mlx5_3', 'gpu03 mlx5_5', 'gpu04 GPU 2']
    assert ('gpu01', 'perftest.write_bw') in [(row['node'], row['check']) for row in found[0]['rows']]
    assert 'gpu01 mlx5_3' in found[0]['ends']


def test_the_gates_blame_format_names_every_partner():
    doc = copy.deepcopy(FIELD)
    results = doc['nodes']['gpu03']['results']
    results[:] = [result for result in results if result['check'] != 'perftest.write_bw' or not result['subject'].startswith('mlx5_5')]
    # verify/perftest_blame.py: one result per faulty (node, rail), the partners listed
    results.append(vr.new_result('perftest.write_bw', 'mlx5_5 -> gpu01 mlx5_5, gpu02 mlx5_5', 276.2, 360.0, False,
                                 'mlx5_5 failed write_bw with 2 different partners', unit='Gb/s', rail=5,
                                 partners=['gpu01', 'gpu02']))
    hca = [problem for problem in _problems(doc) if problem['blamed'] == 'gpu03 mlx5_5'][0]
    assert hca['ends'] == ['gpu01 mlx5_5', 'gpu02 mlx5_5'] and len(hca['rows']) == 1


def test_the_blamed_end_fails_and_its_partner_is_neutral_in_the_hca_bars():
    # two nodes: the healthy partner's only pair is the bad one, so its median is low too
    doc = make_results(2, (('link_width', 'gpu02', 3),))
    bars = dict(((entry['node'], entry['hca']), entry) for entry in perftest.hca_bars(doc)['bars'])
    assert bars[('gpu02', 'mlx5_3')]['state'] == 'fail' and not bars[('gpu02', 'mlx5_3')]['passed']
    assert bars[('gpu01', 'mlx5_3')]['state'] == 'partner' and bars[('gpu01', 'mlx5_3')]['passed']
    assert bars[('gpu01', 'mlx5_0')]['state'] == 'pass'


def test_the_heatmap_judges_a_degraded_pair_against_the_fleets_rate():
    doc = copy.deepcopy(make_results(4, (('link_width', 'gpu02', 3),)))
    # an older results.json recorded the degraded port's own rate (100 Gb/s at 1X) as the pair's line rate
    for pair in doc['perftest']['pairs']:
        if 'gpu02' in (pair['client'], pair['server']) and pair['rail'] == 3:
            pair['line_rate'] = 100.0
    matrix = perftest.heatmap_matrix(doc, 3)
    row = matrix['labels'].index('gpu02')
    cells = [cell for (r, _c), cell in matrix['cells'].items() if r == row]
    assert cells and all(cell['fraction'] < 0.3 and cell['passed'] is False for cell in cells)
    # the redesigned document: line_rate is the fleet's expectation, negotiated beside it; taken as it is
    pair = {'rail': 3, 'line_rate': 400.0, 'negotiated': 100.0}
    assert perftest.pair_line_rate(pair, {3: 800.0}) == 400.0
    assert perftest.pair_line_rate({'rail': 3, 'line_rate': 100.0}, {3: 400.0}) == 400.0
    assert perftest.expected_rates([{'rail': 0, 'line_rate': 400.0}] * 3 + [{'rail': 0, 'line_rate': 100.0}]) == {0: 400.0}


def test_a_link_seen_from_both_ends_is_counted_once():
    doc = copy.deepcopy(make_results(4, (('link_width', 'gpu02', 3),)))
    ca = [link for link in doc['fabric']['links'] if link['degraded']][0]
    switch_side = {'node_type': 'Switch', 'node_guid': '0xabc', 'node_name': 'MF0;leaf01-rail3:MQM9700/U1',
                   'node_lid': ca['peer_lid'], 'port': ca['peer_port'], 'width': '1X', 'lane_speed_gbps': 106.25,
                   'state': 'Active', 'physical_state': 'LinkUp', 'peer_lid': ca['node_lid'], 'peer_port': ca['port'],
                   'peer_name': ca['node_name'], 'could_be': '4X 106.25 Gbps', 'degraded': True}
    doc['fabric']['links'].append(switch_side)
    table = figures.link_table(doc)
    assert table['bad'] == 1 and table['total'] == 32
    assert len([row for row in table['rows'] if row['bad']]) == 2  # both rows are shown, one link is counted


def test_a_passing_link_summary_reads_as_the_width_not_a_link_count():
    row = [row for row in figures.results_table(make_results(4)) if row['check'] == 'fabric.link_width'][0]
    assert row['baseline'] == '4X' and row['values'] == [('4X', 32)] and not row['numeric']
    doc = make_results(2)
    for name in doc['nodes']:
        results = doc['nodes'][name]['results']
        results[:] = [result for result in results if result['check'] != 'fabric.link_width']
        results.append(vr.new_result('fabric.link_width', 'node', 8, 8, True, 'all 8 fabric links of the node at 4X'))
    doc['run']['parameters']['fabric_width'] = '4X'
    row = [row for row in figures.results_table(doc) if row['check'] == 'fabric.link_width'][0]
    assert row['baseline'] == '4X' and row['values'] == [('4X', 2)]
    assert '8' not in markdown._measured_text(row)


def _busy_and_unreachable():
    doc = make_results(4)
    busy = doc['nodes']['gpu03']
    busy['busy'] = True
    busy['results'] = [result for result in busy['results']
                       if result['area'] not in ('perftest', 'nccl') and result['check'] != 'gpu.dcgm_diag']
    gone = doc['nodes']['gpu04']
    gone['results'] = [vr.new_result('node.reachable', 'node', 'no results', 'results', False, 'the node did not answer')]
    gone['passed'] = False
    doc['nodes']['gpu01']['results'].append(vr.new_result('ib.link_errors', 'mlx5_0:1', None, 0, True, 'not checked: no traffic',
                                                          skipped='no traffic between the two reads'))
    doc['summary'] = vr.summarize(doc['nodes'])
    return doc


def test_every_planned_check_has_a_state_with_its_reason():
    states = problems.check_states(_busy_and_unreachable())
    by_check = dict((row['check'], row) for row in states['checks'])
    assert by_check['perftest.write_bw']['counts'] == {'passed': 2, 'failed': 0, 'skipped': 0, 'not tested': 2}
    reasons = dict(((state, reason), nodes) for state, reason, nodes in by_check['perftest.write_bw']['reasons'])
    assert reasons[('not tested', 'running jobs: the active tests left it alone')] == ['gpu03']
    assert reasons[('not tested', 'the node did not answer')] == ['gpu04']
    assert by_check['gpu.ecc']['counts'] == {'passed': 3, 'failed': 0, 'skipped': 0, 'not tested': 1}
    assert by_check['ib.link_errors']['counts']['skipped'] == 1
    assert states['nodes']['gpu01']['ib.link_errors'] == ('skipped', 'no traffic between the two reads')
    assert states['nodes']['gpu03']['gpu.ecc'] == ('passed', '')
    assert states['not_run'] == []


def test_junit_carries_skipped_and_error_counts():
    root = ET.fromstring(junit.junit_xml(_busy_and_unreachable()))
    assert int(root.get('errors')) == 1 and int(root.get('skipped')) > 0
    error = root.find(".//testcase[@classname='node.gpu04'][@name='node.reachable']/error")
    assert error is not None and error.get('message') == 'the node did not answer'
    skipped = root.find(".//testcase[@classname='perftest.gpu03'][@name='perftest.write_bw']/skipped")
    assert skipped.get('message') == 'not tested: running jobs: the active tests left it alone'
    skipped = root.find(".//testcase[@classname='gpu.gpu04'][@name='gpu.ecc']/skipped")
    assert skipped.get('message') == 'not tested: the node did not answer'
    skipped = root.find(".//testcase[@classname='ib.gpu01'][@name='ib.link_errors']/skipped")
    assert skipped.get('message') == 'not checked: no traffic between the two reads'
    total = sum(int(suite.get('skipped')) for suite in root)
    assert total == int(root.get('skipped'))


def test_the_criteria_list_every_threshold_with_its_source():
    rows = figures.criteria(FIELD)
    checks = [row['check'] for row in rows]
    assert checks[:3] == ['ib.hca_present', 'ib.port_state', 'ib.port_rate'] and 'nccl.slow_node' in checks
    for row in rows:
        assert row['threshold'] and row['default'] == CHECKS[row['check']].default and row['source']
    assert dict((row['check'], row['threshold']) for row in rows)['perftest.write_bw'] == '360 Gb/s'
    assert dict((row['check'], row['threshold']) for row in rows)['fabric.link_width'] == '4X'
    text = markdown.summary_markdown(FIELD)
    assert '### Acceptance criteria' in text and '### Coverage' in text
    assert '`verify_ib_rate_gbps`' in text  # our own text keeps its code spans


# ------------------------------------------------------------------ NCCL curves, evidence, second cues

def _with_curves(doc, slow='gpu04'):
    doc = copy.deepcopy(doc)
    sizes = [1 << shift for shift in range(3, 34, 2)]
    for index, name in enumerate(sorted(doc['nodes'])):
        factor = 0.8 if name == slow else 1.0 + index * 0.001
        rows = [{'size': size, 'oop_busbw': round(min(480.0, size / float(1 << 24)) * factor, 2), 'ip_busbw': None}
                for size in sizes]
        doc['nodes'][name]['raw'] = {'nccl': {'busbw': rows[-1]['oop_busbw'], 'nccl': {'rows': rows}}}
    return doc


def test_nccl_curves_give_the_fleet_median_and_the_worst_node():
    curves = figures.nccl_curves(_with_curves(FIELD))
    assert curves['nodes'] == 4 and curves['worst'] == 'gpu04'
    assert curves['labels'][0] == '8' and curves['labels'][-1] == '8G' and len(curves['sizes']) == 16
    assert curves['median'][-1] == 480.24 and curves['worst_points'][-1] == 384.0
    bare = copy.deepcopy(FIELD)
    for entry in bare['nodes'].values():
        entry['raw'] = {}
    assert figures.nccl_curves(bare) is None  # no rows kept (an older results.json): no curves


def test_line_chart_draws_each_series_with_its_own_marker():
    from ansible_collections.aicluster.infra.plugins.module_utils import svg
    picture = svg.line_chart([{'label': 'fleet median', 'colour': '#0072b2', 'points': [1, 2, None, 4]},
                              {'label': 'worst <gpu04>', 'colour': '#d55e00', 'dash': '5 3', 'points': [1, 1, 1, 1]}],
                             ['8', '32', '128', '512'], 'busbw', unit='GB/s',
                             lines=[{'value': 3, 'label': 'threshold 3', 'colour': '#d55e00', 'dash': '6 3'}])
    root = ET.fromstring(picture)
    assert root.tag.endswith('svg')
    assert 'worst &lt;gpu04&gt;' in picture and 'stroke-dasharray="5 3"' in picture
    assert picture.count('a3.5 3.5 0 1 0') >= 6  # circles: three points and the legend's


def test_evidence_files_per_node_and_inline_only_for_failing_nodes():
    from ansible_collections.aicluster.infra.plugins.module_utils.report import evidence
    import json
    doc = _with_curves(FIELD)
    files = evidence.evidence_files(doc)
    assert sorted(files) == ['evidence/gpu01.json', 'evidence/gpu02.json', 'evidence/gpu03.json', 'evidence/gpu04.json']
    data = json.loads(files['evidence/gpu04.json'])
    assert data['node'] == 'gpu04' and data['tool_output']['nccl']['nccl']['rows'] and data['results']
    assert evidence.evidence_name('../etc/pass wd') == 'evidence/_etc_pass_wd.json'
    appendix = evidence.evidence_appendix(doc)
    assert [entry['node'] for entry in appendix if entry['text']] == ['gpu02', 'gpu03', 'gpu04']
    assert evidence.evidence_files(doc) == files  # deterministic


def test_heatmap_marks_failing_cells_with_a_cross():
    from ansible_collections.aicluster.infra.plugins.module_utils import svg
    picture = svg.heatmap(['a', 'b'], ['a', 'b'], {(0, 1): ('#d55e00', 'bad', True), (1, 0): ('#0072b2', None)}, 'rail 0')
    assert 'stroke="#fff"' in picture and picture.count('<path') == 2
    assert 'stroke="#fff"' not in svg.heatmap(['a'], ['a'], {(0, 0): ('#0072b2', None)}, 'rail 0')


def test_the_node_inventory_table_is_in_the_page_and_the_summary_with_odd_values_marked():
    from ansible_collections.aicluster.infra.plugins.module_utils.report import html
    import os
    from _paths import REPO
    with open(os.path.join(REPO, html.SHIPPED_TEMPLATE)) as handle:
        template = handle.read()
    doc = make_results(4, (('vbios_odd', 'gpu03', 2),))
    page = html.html_report(doc, template=template)
    section = page.split('id="inventory"', 1)[1].split('id="gpu"', 1)[0]
    assert '4 of 4 nodes reported their inventory; 1 with a value other than the fleet' in section
    assert section.count('<td class="odd">') == 1 and section.count('<tr>') == 5  # the header and 4 nodes
    text = markdown.summary_markdown(doc)
    assert '### Per-node inventory' in text and text.count('**! ') == 1
    # a results.json from before the inventory: said so, no table
    old = copy.deepcopy(doc)
    for entry in old['nodes'].values():
        entry.pop('inventory', None)
        entry['versions'].pop('slurm', None)
    assert 'No node reported serial numbers' in html.html_report(old, template=template)
    assert '### Per-node inventory' not in markdown.summary_markdown(old)


def test_a_bidirectional_runs_bars_are_drawn_against_twice_the_line_rate():
    from ansible_collections.aicluster.infra.plugins.module_utils.report import html
    import os
    from _paths import REPO
    with open(os.path.join(REPO, html.SHIPPED_TEMPLATE)) as handle:
        template = handle.read()
    doc = copy.deepcopy(FIELD)
    assert 'line rate 400' in html.html_report(doc, template=template)
    doc['run']['parameters']['perftest_bidirectional'] = True
    page = html.html_report(doc, template=template)
    assert 'twice the line rate 800' in page and '>line rate 400<' not in page


def test_gpu_of_reads_the_gpu_a_subject_names():
    from ansible_collections.aicluster.infra.plugins.module_utils.report._text import gpu_of
    assert [gpu_of(text) for text in ('GPU 5', 'GPU 12 (row remap)', 'GPU0', 'node', 'mlx5_0:1', None)] == \
        ['5', '12', '0', None, None, None]
