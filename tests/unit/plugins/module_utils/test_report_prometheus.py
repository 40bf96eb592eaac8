# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""metrics.prom and the per-node texts (report/prometheus.py), and the Grafana dashboard that reads them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import math
import os
import re
import subprocess

import pytest

from _paths import REPO
from _synthetic_results import LAB_FAULTS, make_results, scatter_faults

from ansible_collections.aicluster.infra.plugins.module_utils import report
from ansible_collections.aicluster.infra.plugins.module_utils.report import figures, prometheus
from ansible_collections.aicluster.infra.plugins.module_utils.verify import results as vr

PROMTOOL = '/usr/bin/promtool'
DASHBOARD = os.path.join(REPO, 'roles', 'report', 'files', 'grafana', 'aicluster-verify.json')
P = prometheus.PREFIX

LAB = make_results(4, LAB_FAULTS)
RUN_FAMILIES = set(P + name for name in prometheus.FAMILIES if name not in prometheus.NODE_FAMILIES)
CHECK_FAMILIES = set(P + name for name in ('check_results', 'check_passed', 'check_failed'))


# ------------------------------------------------------------------ a small parser of the text exposition format

_NAME = r'[a-zA-Z_:][a-zA-Z0-9_:]*'
_SAMPLE = re.compile(r'^(%s)(?:\{(.*)\})? (\S+)$' % _NAME)
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)')


def _unescape(text):
    return re.sub(r'\\([\\"n])', lambda match: '\n' if match.group(1) == 'n' else match.group(1), text)


def parse(text):
    """{family: {'help', 'type', 'samples': [(labels, value)]}}, asserting the format as it goes: HELP then TYPE
    before a family's samples, families contiguous, valid names and label text, a float value and no timestamp, no
    repeated series."""
    assert text.endswith('\n') and '\n\n' not in text
    families, order, current, seen = {}, [], None, set()
    for line in text.splitlines():
        if line.startswith('# HELP '):
            name, help_text = line[len('# HELP '):].split(' ', 1)
            assert re.match('^%s$' % _NAME, name) and name not in families, line
            families[name] = {'help': help_text, 'type': None, 'samples': []}
            order.append(name)
            current = name
        elif line.startswith('# TYPE '):
            name, kind = line[len('# TYPE '):].split(' ')
            assert name == current and families[name]['type'] is None and not families[name]['samples'], line
            families[name]['type'] = kind
        else:
            match = _SAMPLE.match(line)
            assert match, 'not a sample line (or a sample with a timestamp): %r' % line
            name, label_text, value = match.groups()
            assert name == current and families[name]['type'] == 'gauge', line
            labels = {}
            position = 0
            for label in _LABEL.finditer(label_text or ''):
                assert label.start() == position, 'bad label text in %r' % line
                assert label.group(1) not in labels
                labels[label.group(1)] = _unescape(label.group(2))
                position = label.end()
            assert position == len(label_text or ''), 'bad label text in %r' % line
            number = float(value)
            assert not math.isnan(number) and not math.isinf(number)
            key = (name, tuple(sorted(labels.items())))
            assert key not in seen, 'repeated series %r' % (key,)
            seen.add(key)
            families[name]['samples'].append((labels, number))
    assert order == sorted(order), 'families not sorted'
    assert all(family['samples'] for family in families.values())
    return families


def values(families, name, **labels):
    return [value for sample_labels, value in families[P + name]['samples']
            if all(sample_labels.get(key) == want for key, want in labels.items())]


def promtool_check(text):
    process = subprocess.run([PROMTOOL, 'check', 'metrics'], input=text.encode('utf-8'), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, check=False)
    return process.returncode, process.stdout.decode('utf-8', 'replace')


# ------------------------------------------------------------------ metrics.prom

def test_the_lab_run_as_metrics():
    families = parse(prometheus.metrics_text(LAB, {'cluster': 'hgx-su1', 'site': 'DH2'}))
    assert set(families) == set(P + name for name in prometheus.FAMILIES)
    assert all(family['type'] == 'gauge' and family['help'] for family in families.values())
    assert values(families, 'passed') == [0]
    assert [values(families, name)[0] for name in ('nodes', 'nodes_passed', 'nodes_failed', 'nodes_drained',
                                                   'nodes_resumed', 'cluster_results_failed')] == [4, 1, 3, 3, 0, 0]
    assert families[P + 'info']['samples'] == [({'cluster': 'hgx-su1', 'collection_version': '0.1.0', 'inventory': 'lab',
                                                 'mode': 'drain', 'site': 'DH2'}, 1)]
    assert values(families, 'run_finished_timestamp_seconds') == [1795972001]  # 2026-11-29T17:06:41Z
    assert values(families, 'run_started_timestamp_seconds') == [1795972001 - 398]
    assert [(labels['node'], value) for labels, value in families[P + 'node_passed']['samples']] == [
        ('gpu01', 1), ('gpu02', 0), ('gpu03', 0), ('gpu04', 0)]
    assert values(families, 'node_drained', node='gpu02') == [1]
    assert values(families, 'node_check_passed', node='gpu02', check='fabric.link_width') == [0]
    assert values(families, 'node_check_passed', node='gpu02', check='gpu.ecc') == [1]
    # a numeric result: measured and threshold, per subject
    assert values(families, 'measured', node='gpu02', check='ib.port_rate', subject='mlx5_3:1') == [100]
    assert values(families, 'threshold', node='gpu02', check='ib.port_rate', subject='mlx5_3:1') == [400]
    assert values(families, 'measured', node='gpu03', check='gpu.ecc', subject='GPU 6') == [2]
    assert values(families, 'measured', node='gpu04', check='nccl.busbw', subject='node') == [
        LAB['nccl']['single_node']['gpu04']['busbw']]
    # a result that is not a figure (1X against 4X) has no series
    assert values(families, 'measured', check='fabric.link_width') == []
    # the per-check counts are the report's results table
    for row in figures.results_table(LAB):
        assert values(families, 'check_results', check=row['check']) == [row['total']]
        assert values(families, 'check_passed', check=row['check']) == [row['passed']]
        assert values(families, 'check_failed', check=row['check']) == [row['total'] - row['passed']]


def test_perftest_pairs_fold_into_their_hca_worst_pair_kept():
    families = parse(prometheus.metrics_text(LAB))
    subjects = set(labels['subject'] for labels, _value in families[P + 'measured']['samples']
                   if labels['check'] == 'perftest.write_bw')
    assert subjects == set('mlx5_%d' % index for index in range(8))
    pairs = [result for result in LAB['nodes']['gpu03']['results']
             if result['check'] == 'perftest.write_bw' and result['subject'].startswith('mlx5_5 ')]
    assert len(pairs) > 1
    assert values(families, 'measured', node='gpu03', check='perftest.write_bw', subject='mlx5_5') == [
        min(result['measured'] for result in pairs)]
    assert values(families, 'threshold', node='gpu03', check='perftest.write_bw', subject='mlx5_5') == [360.0]


@pytest.mark.parametrize('check, subject, expected', [
    ('perftest.write_bw', 'mlx5_0 -> gpu02 mlx5_0', 'mlx5_0'),
    ('perftest.read_bw', 'mlx5_3 -> gpu02 mlx5_3 (rail 3), gpu07 mlx5_3 (rail 3)', 'mlx5_3'),
    ('ib.port_rate', 'mlx5_3:1', 'mlx5_3:1'),
    ('ib.link_errors', 'mlx5_0:1 (leaf01-rail0 port 3)', 'mlx5_0:1'),
    ('fabric.rail', 'mlx5_2 (rail 2)', 'mlx5_2'),
    ('gpu.ecc', 'GPU 5', 'GPU 5'),
    ('gpu.xid', 'GPU 12: Xid 79', 'GPU 12'),
    ('nccl.busbw', 'node', 'node'),
    ('net.mtu', 'ib0', 'ib0'),
    ('gpu.count', '', 'node'),
    ('gpu.count', None, 'node'),
])
def test_subject_labels_are_bounded(check, subject, expected):
    assert prometheus.subject_label(check, subject) == expected


def test_several_results_of_one_subject_keep_the_worst():
    doc = make_results(2)
    results = doc['nodes']['gpu01']['results']
    results.append(vr.new_result('gpu.nvlink', 'GPU 0 (second read)', 16, 18, True, 'x'))
    results.append(vr.new_result('gpu.ecc', 'GPU 1 again', 1, 0, True, 'x'))
    families = parse(prometheus.metrics_text(doc))
    assert values(families, 'measured', node='gpu01', check='gpu.nvlink', subject='GPU 0') == [16]   # higher is better
    assert values(families, 'measured', node='gpu01', check='gpu.ecc', subject='GPU 1') == [1]       # lower is better


def test_at_most_subjects_max_subjects_per_node_and_check():
    doc = make_results(2)
    results = doc['nodes']['gpu01']['results']
    for index in range(200):
        results.append(vr.new_result('net.mtu', 'ib%d' % index, 4092 - index, 4092, True, 'x'))
    families = parse(prometheus.metrics_text(doc))
    subjects = [labels['subject'] for labels, _value in families[P + 'measured']['samples']
                if labels['node'] == 'gpu01' and labels['check'] == 'net.mtu']
    assert len(subjects) == prometheus.SUBJECTS_MAX and 'other' in subjects
    assert values(families, 'measured', node='gpu01', check='net.mtu', subject='other') == [4092 - 199]


def test_output_is_deterministic_and_sorted():
    first = prometheus.metrics_text(LAB)
    shuffled = copy.deepcopy(LAB)
    shuffled['nodes'] = dict(reversed(list(shuffled['nodes'].items())))
    assert prometheus.metrics_text(shuffled) == first == prometheus.metrics_text(copy.deepcopy(LAB))
    lines = first.splitlines()
    assert [line.split(' ')[2] for line in lines if line.startswith('# HELP ')] == sorted(
        P + name for name in prometheus.FAMILIES)
    nodes = [re.search(r'node="([^"]*)"', line).group(1) for line in lines if line.startswith(P + 'node_passed{')]
    assert nodes == ['gpu01', 'gpu02', 'gpu03', 'gpu04']
    assert report.build_outputs(LAB, formats=['prometheus']) == {'metrics.prom': first}
    assert report.OUTPUT_NAMES['prometheus'] == 'metrics.prom'


@pytest.mark.parametrize('text, expected', [
    ('2026-11-29T17:06:41Z', 1795972001),
    ('2026-11-29T17:06:41', 1795972001),
    ('2026-11-29 18:06:41+01:00', 1795972001),
    ('2026-11-29T12:06:41-0500', 1795972001),
    ('2026-11-29T17:06:41.25Z', 1795972001.25),
    ('2026-02-30T00:00:00Z', None),
    ('yesterday', None),
    (None, None),
])
def test_unix_time(text, expected):
    assert prometheus.unix_time(text) == expected


def test_a_run_without_times_has_no_timestamp_series():
    doc = copy.deepcopy(LAB)
    doc['run']['finished'] = 'unknown'
    families = parse(prometheus.metrics_text(doc))
    assert P + 'run_finished_timestamp_seconds' not in families and values(families, 'run_started_timestamp_seconds')


HOSTILE = 'gpu"09\\x\nrm -rf /\r\t\x1b[31mred\x1b[0m\x00\x7f\u0085{{ lookup("pipe", "id") }} é'


def test_hostile_label_text_stays_one_valid_label():
    doc = make_results(2)
    doc['nodes'][HOSTILE] = copy.deepcopy(doc['nodes']['gpu02'])
    doc['nodes'][HOSTILE]['results'].append(vr.new_result('net.mtu', 'ib"1\\\n2', 1500, 4092, False, 'x'))
    doc['nodes'][HOSTILE]['passed'] = False
    doc['run']['inventory'] = '/home/ops/"evil"\n inv/hosts.yml'
    doc['run']['mode'] = 'report'
    doc['summary'] = vr.summarize(doc['nodes'])
    assert vr.validate_results(doc) == []
    text = prometheus.metrics_text(doc, {'cluster': 'c"1\\\n\x1b]0;title\x07x'})
    assert '\x1b' not in text and '\x00' not in text and '\r' not in text and '\t' not in text
    families = parse(text)
    cleaned = 'gpu"09\\x\nrm -rf /  red{{ lookup("pipe", "id") }} é'
    assert values(families, 'node_passed', node=cleaned) == [0]
    assert values(families, 'measured', node=cleaned, check='net.mtu', subject='ib"1\\') == [1500]
    info = families[P + 'info']['samples'][0][0]
    assert info['cluster'] == 'c"1\\\nx' and info['inventory'] == '"evil"\n inv'
    node_text = prometheus.node_metrics_text(doc, HOSTILE)
    assert set(labels['node'] for family in parse(node_text).values() for labels, _value in family['samples']
               if 'node' in labels) == {cleaned}
    if os.path.exists(PROMTOOL):
        assert promtool_check(text) == (0, '')


def test_two_node_names_that_clean_to_one_label_give_one_series():
    doc = make_results(2)
    doc['nodes']['gpu01\x1b[0m'] = copy.deepcopy(doc['nodes']['gpu01'])
    doc['summary'] = vr.summarize(doc['nodes'])
    families = parse(prometheus.metrics_text(doc))
    assert values(families, 'node_passed', node='gpu01') == [1]


# ------------------------------------------------------------------ per node

def test_a_node_text_holds_only_that_node_and_the_run():
    texts = prometheus.node_metrics(LAB)
    assert sorted(texts) == ['gpu01', 'gpu02', 'gpu03', 'gpu04']
    whole = parse(prometheus.metrics_text(LAB))
    for node, text in texts.items():
        assert text == prometheus.node_metrics_text(LAB, node)
        families = parse(text)
        assert set(families) == set(P + name for name in prometheus.FAMILIES) - CHECK_FAMILIES
        for name, family in families.items():
            if name in RUN_FAMILIES:
                assert family['samples'] == whole[name]['samples']
            else:
                assert set(labels['node'] for labels, _value in family['samples']) == {node}
                assert family['samples'] == [sample for sample in whole[name]['samples'] if sample[0]['node'] == node]
    assert prometheus.node_metrics(LAB, names=['gpu02', 'gpu99']) == {'gpu02': texts['gpu02']}
    with pytest.raises(ValueError, match='gpu99'):
        prometheus.node_metrics_text(LAB, 'gpu99')


def test_series_stay_bounded_at_1024_nodes():
    """Per node at 8 HCAs and 8 GPUs: node_passed, node_drained, one node_check_passed per check (18 here), and
    measured + threshold per numeric (check, subject) (up to 46 here: 8 port rates, up to 8 perftest HCAs, 24 GPU
    figures, 6 node figures; an Xid's code adds one): 95 to 113 series, whatever the number of perftest pairs;
    docs/report.md states the figure."""
    doc = make_results(1024, scatter_faults(1024))
    per_node = prometheus.series_per_node(doc)
    assert len(per_node) == 1024 and max(per_node.values()) <= 115
    text = prometheus.metrics_text(doc)
    families = parse(text)
    total = sum(len(family['samples']) for family in families.values())
    run_level = sum(len(family['samples']) for name, family in families.items() if name in RUN_FAMILIES)
    assert total == run_level + sum(per_node.values())
    assert run_level < 100
    assert not [labels for labels, _value in families[P + 'measured']['samples'] if '->' in labels['subject']]
    assert len(doc['perftest']['pairs']) == 32768   # not one series per pair
    if os.path.exists(PROMTOOL):
        assert promtool_check(text) == (0, '')


@pytest.mark.skipif(not os.path.exists(PROMTOOL), reason='%s absent (Debian: prometheus)' % PROMTOOL)
@pytest.mark.parametrize('which', ['whole', 'node'])
def test_promtool_accepts_the_metrics(which):
    text = prometheus.metrics_text(LAB, {'cluster': 'hgx-su1'}) if which == 'whole' else \
        prometheus.node_metrics_text(LAB, 'gpu03')
    assert promtool_check(text) == (0, '')


# ------------------------------------------------------------------ the Grafana dashboard

def _load_dashboard():
    with open(DASHBOARD, encoding='utf-8') as handle:
        return json.load(handle)


def _panels(dashboard):
    for panel in dashboard['panels']:
        yield panel
        yield from panel.get('panels') or []


def _exprs(dashboard):
    exprs = []
    for panel in _panels(dashboard):
        exprs.extend((panel['title'], target['expr']) for target in panel.get('targets') or [])
    for variable in dashboard['templating']['list']:
        query = variable.get('query')
        if variable['type'] == 'query':
            exprs.append((variable['name'], query['query'] if isinstance(query, dict) else query))
    return exprs


def test_dashboard_is_valid_and_imports_anywhere():
    dashboard = _load_dashboard()
    assert dashboard['title'] and dashboard['uid'] and dashboard['schemaVersion'] >= 30
    panels = list(_panels(dashboard))
    ids = [panel['id'] for panel in panels]
    assert len(ids) == len(set(ids)) and all(isinstance(panel_id, int) for panel_id in ids)
    assert all(panel.get('title', '').strip() for panel in panels)
    variables = dict((variable['name'], variable) for variable in dashboard['templating']['list'])
    assert variables['DS_PROMETHEUS']['type'] == 'datasource' and variables['DS_PROMETHEUS']['query'] == 'prometheus'
    assert variables['node']['type'] == 'query'
    for panel in panels:
        if panel['type'] != 'row':
            assert panel['datasource'] == {'type': 'prometheus', 'uid': '${DS_PROMETHEUS}'}, panel['title']
            assert panel['targets'], panel['title']
            for target in panel['targets']:
                assert target['datasource'] == panel['datasource']
    assert any('$node' in expr for _title, expr in _exprs(dashboard))
    # no datasource of the machine it was made on
    assert not re.search(r'"uid": "(?!\$\{DS_PROMETHEUS\}|aicluster-verify)', json.dumps(dashboard))


def test_dashboard_queries_only_metrics_the_report_writes():
    emitted = set(parse(prometheus.metrics_text(LAB)))
    node_emitted = set(parse(prometheus.node_metrics_text(LAB, 'gpu01')))
    dashboard = _load_dashboard()
    used = set()
    for title, expr in _exprs(dashboard):
        names = set(re.findall(r'aicluster_verify_\w+', expr))
        assert names, title
        assert names <= emitted, (title, names - emitted)
        used |= names
    # the fleet view works from the nodes' files alone too (they have no per-check counts)
    assert used <= node_emitted
    assert set(re.findall(r'aicluster_verify_\w+', json.dumps(dashboard))) <= emitted


@pytest.mark.skipif(not os.path.exists(PROMTOOL), reason='%s absent (Debian: prometheus)' % PROMTOOL)
def test_dashboard_queries_are_promql(tmp_path):
    """promtool parses each query as a recording rule (the template variables filled in)."""
    rules = ['groups:', '  - name: dashboard', '    rules:']
    for index, (_title, expr) in enumerate(_exprs(_load_dashboard())):
        if expr.startswith('label_values('):
            expr = expr[len('label_values('):].rsplit(',', 1)[0]   # Grafana's function around a selector
        expr = expr.replace('$node', 'gpu01').replace('$check', '.*')
        rules.extend(['      - record: dashboard_query_%d' % index, '        expr: %s' % json.dumps(expr)])
    path = tmp_path / 'rules.yml'
    path.write_text('\n'.join(rules) + '\n')
    process = subprocess.run([PROMTOOL, 'check', 'rules', str(path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             check=False)
    assert process.returncode == 0, process.stdout.decode('utf-8', 'replace')
