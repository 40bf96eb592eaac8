# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/report/burnin.py: a node's burn-in in numbers and charts."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import xml.etree.ElementTree as ET

from ansible_collections.aicluster.infra.plugins.module_utils import svg
from ansible_collections.aicluster.infra.plugins.module_utils.report import burnin as report_burnin
from ansible_collections.aicluster.infra.plugins.module_utils.verify import burnin

NS = '{http://www.w3.org/2000/svg}'


def _samples(count=200, hot_gpu=2):
    """Ours: 8 GPUs warming up under load, GPU ``hot_gpu`` 6 C hotter than the others; a BMC with its inlet."""
    out = []
    for seq in range(1, count + 1):
        heat = min(seq, 20)
        gpus = [{'index': index, 'temp_c': 40.0 + 2 * heat + (6 if index == hot_gpu else 0),
                 'temp_headroom_c': 45.0 - 2 * heat - (6 if index == hot_gpu else 0), 'power_w': 300.0 + 19 * heat,
                 'sm_clock_mhz': 1980.0} for index in range(8)]
        out.append({'schema': burnin.SCHEMA, 'node': 'gpu01', 'seq': seq, 'elapsed_s': 900 * seq, 'gpus': gpus,
                    'bmc': {'valid': True, 'inlet_c': 24.0 + (seq % 3), 'exhaust_c': 40.0, 'power_w': 10200.0}})
    return out


def _parse(text):
    return ET.fromstring(text.replace('<svg ', '<svg xmlns="%s" ' % svg.SVG_NS, 1))


def test_a_summary_thins_the_series_keeps_the_ends_and_names_the_worst_gpu():
    summary = report_burnin.node_summary(_samples(), max_points=96)
    assert summary['samples'] == 200 and summary['hours'] == 50.0 and summary['worst_gpu'] == 2
    hours = summary['series']['hours']
    assert len(hours) == 96 and hours[0] == 0.25 and hours[-1] == 50.0
    assert sorted(summary['series']['gpus']) == [str(index) for index in range(8)]
    assert len(summary['series']['gpus']['2']['temp_c']) == 96 and summary['series']['gpus']['2']['temp_c'][-1] == 86.0


def test_the_sensor_table_has_min_max_mean_and_the_threshold_it_is_judged_against():
    rows = dict((row['name'], row) for row in report_burnin.node_summary(_samples())['sensors'])
    headroom = rows['GPU 2 headroom to max operating temperature']
    assert (headroom['min'], headroom['max'], headroom['threshold'], headroom['unit']) == (-1.0, 37.0, 0, 'C')
    assert rows['GPU 0 temperature']['threshold'] is None  # judged by its headroom, not an absolute figure
    inlet = rows['BMC inlet temperature']
    assert (inlet['min'], inlet['max'], inlet['mean'], inlet['threshold']) == (24.0, 26.0, 25.0, 35)
    assert rows['GPU 0 power']['max'] == 680.0 and rows['GPU 0 power']['count'] == 200


def test_node_charts_draw_every_gpu_the_worst_in_red_and_parse_as_svg():
    charts = report_burnin.node_charts('gpu01', report_burnin.node_summary(_samples(count=10)))
    assert len(charts) == 3
    root = _parse(charts[0])
    texts = [element.text for element in root.iter(NS + 'text')]
    assert 'gpu01: GPU temperature over the burn-in' in texts and 'GPU 2 (worst)' in texts
    strokes = [element.get('stroke') for element in root.iter(NS + 'path') if element.get('stroke-width') == '2']
    assert strokes.count(report_burnin.WORST) >= 1 and strokes.count(report_burnin.OTHERS) >= 7


def test_the_load_chart_marks_the_slowest_node_against_the_median():
    figures = {'gpu01': [('gpu_burn', 1, 15000.0, 'Gflop/s', True, 't1', None), ('gpu_burn', 2, 15000.0, 'Gflop/s', True, 't2', None)],
               'gpu02': [('gpu_burn', 1, 15100.0, 'Gflop/s', True, 't1', None), ('gpu_burn', 2, 12000.0, 'Gflop/s', True, 't2', None)],
               'gpu03': [('gpu_burn', 1, 14900.0, 'Gflop/s', True, 't1', None), ('gpu_burn', 2, 15000.0, 'Gflop/s', True, 't2', None)]}
    texts = [element.text for element in _parse(report_burnin.load_chart(figures, 'gpu_burn')).iter(NS + 'text')]
    assert 'slowest: gpu02 (80%)' in texts and 'fleet median' in texts and 'Gflop/s' in texts


def test_a_summary_of_no_samples_is_empty_not_an_error():
    summary = report_burnin.node_summary([])
    assert summary == {'samples': 0, 'hours': 0, 'worst_gpu': None, 'series': {'hours': [], 'gpus': {}}, 'sensors': []}
