# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The monitoring role's GPU fleet dashboard: it imports into any Grafana, its every query is PromQL (promtool) and
reads only metrics the exporter serves (roles/dcgm's dcgm_exporter_counters), up and ALERTS."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:  # --import-mode=importlib puts no test folder on sys.path
    sys.path.insert(0, HERE)

# pylint: disable=wrong-import-position
from _monitoring import (BUILTINS, DASHBOARD, PROMTOOL, PROMTOOL_ABSENT, exporter_counters,  # noqa: E402
                         metric_names)

DATASOURCE = {'type': 'prometheus', 'uid': '${DS_PROMETHEUS}'}
# Grafana's variables, filled in as Grafana would before the query reaches Prometheus
GRAFANA_VARIABLES = (('$node', 'gpu01'), ('$__rate_interval', '1m'), ('$__range', '6h'))


def _load():
    with open(DASHBOARD, encoding='utf-8') as handle:
        return json.load(handle)


def _panels(dashboard):
    for panel in dashboard['panels']:
        yield from [panel] + (panel.get('panels') or [])


def _exprs(dashboard):
    exprs = []
    for panel in _panels(dashboard):
        exprs.extend((panel['title'], target['expr']) for target in panel.get('targets') or [])
    for variable in dashboard['templating']['list']:
        if variable['type'] == 'query':
            query = variable['query']
            query = query['query'] if isinstance(query, dict) else query
            assert query.startswith('label_values(')
            exprs.append((variable['name'], query[len('label_values('):].rsplit(',', 1)[0]))
    return exprs


def test_dashboard_is_valid_and_imports_anywhere():
    dashboard = _load()
    assert dashboard['title'] and dashboard['uid'] == 'aicluster-gpu-fleet' and dashboard['schemaVersion'] >= 30
    panels = list(_panels(dashboard))
    ids = [panel['id'] for panel in panels]
    assert len(ids) == len(set(ids)) and all(isinstance(panel_id, int) for panel_id in ids)
    assert all(panel.get('title', '').strip() for panel in panels)
    variables = dict((variable['name'], variable) for variable in dashboard['templating']['list'])
    assert variables['DS_PROMETHEUS']['type'] == 'datasource' and variables['DS_PROMETHEUS']['query'] == 'prometheus'
    assert variables['node']['type'] == 'query' and variables['node']['datasource'] == DATASOURCE
    for panel in panels:
        if panel['type'] != 'row':
            assert panel['datasource'] == DATASOURCE, panel['title']
            assert panel['targets'], panel['title']
            assert all(target['datasource'] == DATASOURCE for target in panel['targets']), panel['title']
    # no datasource of the machine it was made on
    assert not re.search(r'"uid": "(?!\$\{DS_PROMETHEUS\}|aicluster-gpu-fleet)', json.dumps(dashboard))


def test_fleet_overview_then_a_node_drill_down():
    dashboard = _load()
    rows = [panel for panel in dashboard['panels'] if panel['type'] == 'row']
    assert [row['title'] for row in rows] == ['Fleet', 'Node $node']
    node_row_y = rows[1]['gridPos']['y']
    for panel in dashboard['panels']:
        if panel['type'] == 'row':
            continue
        exprs = ' '.join(target['expr'] for target in panel['targets'])
        # above the node row every panel is fleet-wide; below it every panel reads the picked node only
        assert ('Hostname="$node"' in exprs) == (panel['gridPos']['y'] > node_row_y), panel['title']
    titles = set(panel['title'] for panel in dashboard['panels'])
    for wanted in ('GPUs per node', 'Firing alerts', 'Xid errors (last Xid per GPU)', 'ECC and row remapping',
                   'NVLink errors in the time range', 'GPU utilisation', 'GPU and memory temperature', 'Power'):
        assert wanted in titles, wanted


def test_panels_do_not_overlap():
    cells = {}
    for panel in _load()['panels']:
        grid = panel['gridPos']
        assert grid['x'] + grid['w'] <= 24, panel['title']
        for x in range(grid['x'], grid['x'] + grid['w']):
            for y in range(grid['y'], grid['y'] + grid['h']):
                assert (x, y) not in cells, (panel['title'], cells.get((x, y)))
                cells[(x, y)] = panel['title']


def test_dashboard_queries_only_metrics_the_exporter_serves():
    served = set(exporter_counters()) | BUILTINS
    used = set()
    for title, expr in _exprs(_load()):
        names = metric_names(expr)
        assert names, title
        assert names <= served, (title, sorted(names - served))
        used |= names
    for wanted in ('DCGM_FI_DEV_GPU_UTIL', 'DCGM_FI_DEV_GPU_TEMP', 'DCGM_FI_DEV_POWER_USAGE', 'DCGM_FI_DEV_XID_ERRORS',
                   'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL', 'DCGM_FI_DEV_ROW_REMAP_PENDING',
                   'DCGM_FI_DEV_NVLINK_COUNT_RX_ERRORS', 'ALERTS', 'up'):
        assert wanted in used, wanted


def test_dashboard_file_is_stable_json():
    """Indented as json.dump(indent=2) writes it, so a re-export diff shows only what changed."""
    with open(DASHBOARD, encoding='utf-8') as handle:
        text = handle.read()
    assert text == json.dumps(json.loads(text), indent=2, ensure_ascii=False) + '\n'


@pytest.mark.skipif(not os.path.exists(PROMTOOL), reason=PROMTOOL_ABSENT)
def test_dashboard_queries_are_promql(tmp_path):
    """promtool parses each query as a recording rule (Grafana's variables filled in)."""
    rules = ['groups:', '  - name: dashboard', '    rules:']
    for index, (_title, expr) in enumerate(_exprs(_load())):
        for variable, value in GRAFANA_VARIABLES:
            expr = expr.replace(variable, value)
        assert '$' not in expr, expr
        rules.extend(['      - record: dashboard_query_%d' % index, '        expr: %s' % json.dumps(expr)])
    path = tmp_path / 'rules.yml'
    path.write_text('\n'.join(rules) + '\n')
    process = subprocess.run([PROMTOOL, 'check', 'rules', str(path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             check=False)
    assert process.returncode == 0, process.stdout.decode('utf-8', 'replace')
