# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The burn-in part of the acceptance report: each node's run in a few numbers and charts (docs/burnin.md "Report").

``node_summary`` runs where the samples are (next to ``verify/burnin.judge_node``): the series the charts draw, thinned
to at most ``max_points`` samples, the worst GPU, and per sensor its minimum, maximum and mean with the threshold it is
judged against. ``node_charts`` draws a summary as SVG (module_utils/svg.py): temperature, power and SM clock of every
GPU over the run, the worst GPU in red and the others in grey; ``load_chart`` the fleet's load figure per iteration,
the median and the slowest node. Pure functions: no I/O.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils.svg import line_chart
from ansible_collections.aicluster.infra.plugins.module_utils.verify.burnin import DEFAULTS

SERIES = (('temp_c', 'GPU temperature', 'C'), ('power_w', 'GPU power', 'W'), ('sm_clock_mhz', 'SM clock', 'MHz'))
WORST = '#cf222e'
OTHERS = '#8c959f'
MEDIAN = '#0969da'


def _thin(samples, max_points):
    """At most ``max_points`` samples, evenly spaced, the first and the last kept."""
    if len(samples) <= max_points or max_points < 2:
        return list(samples)
    step = (len(samples) - 1) / float(max_points - 1)
    return [samples[int(round(index * step))] for index in range(max_points)]


def _stats(values):
    known = [value for value in values if isinstance(value, (int, float)) and not isinstance(value, bool)]
    if not known:
        return None
    return {'min': min(known), 'max': max(known), 'mean': round(sum(known) / float(len(known)), 2), 'count': len(known)}


def _worst_gpu(samples):
    """The index of the GPU with the least T.Limit headroom over the run (else the hottest), None without GPUs."""
    worst = None
    for sample in samples:
        for gpu in sample.get('gpus') or []:
            headroom, temp = gpu.get('temp_headroom_c'), gpu.get('temp_c')
            key = (0, headroom) if headroom is not None else ((1, -temp) if temp is not None else None)
            if key is not None and (worst is None or key < worst[0]):
                worst = (key, gpu.get('index'))
    return worst[1] if worst else None


def node_summary(samples, expected=None, max_points=96):
    """One node's burn-in in numbers: ``{'samples', 'hours', 'worst_gpu', 'series', 'sensors'}``.

    ``series``: ``hours`` (the x axis) and per GPU index the values of ``SERIES`` at each kept sample (None where
    unread). ``sensors``: a row per GPU figure and BMC reading with ``min``, ``max``, ``mean`` and the ``threshold``
    the gate judges it against (None: not judged)."""
    settings = dict(DEFAULTS)
    settings.update(dict((key, value) for key, value in (expected or {}).items() if value is not None))
    kept = _thin(samples, max_points)
    gpus = sorted(set(gpu.get('index') for sample in samples for gpu in sample.get('gpus') or []), key=str)
    series = {'hours': [round(float(sample['elapsed_s']) / 3600.0, 2) for sample in kept], 'gpus': {}}
    for index in gpus:
        per = dict((key, []) for key, _title, _unit in SERIES)
        for sample in kept:
            found = dict((gpu.get('index'), gpu) for gpu in sample.get('gpus') or [])
            for key, _title, _unit in SERIES:
                per[key].append((found.get(index) or {}).get(key))
        series['gpus'][str(index)] = per
    sensors = []
    for index in gpus:
        mine = [gpu for sample in samples for gpu in sample.get('gpus') or [] if gpu.get('index') == index]
        for key, title, unit, threshold in (
                ('temp_c', 'temperature', 'C', settings.get('gpu_temp_max_c')),
                ('temp_headroom_c', 'headroom to max operating temperature', 'C', settings['gpu_headroom_min_c']),
                ('power_w', 'power', 'W', None), ('sm_clock_mhz', 'SM clock', 'MHz', None)):
            stats = _stats([gpu.get(key) for gpu in mine])
            if stats:
                sensors.append(dict(stats, name='GPU %s %s' % (index, title), unit=unit, threshold=threshold))
    for key, title, unit, threshold in (('inlet_c', 'inlet temperature', 'C', settings['inlet_max_c']),
                                        ('exhaust_c', 'exhaust temperature', 'C', None), ('power_w', 'system power', 'W', None)):
        stats = _stats([(sample.get('bmc') or {}).get(key) for sample in samples if (sample.get('bmc') or {}).get('valid')])
        if stats:
            sensors.append(dict(stats, name='BMC %s' % title, unit=unit, threshold=threshold))
    hours = round(float(samples[-1]['elapsed_s']) / 3600.0, 2) if samples else 0
    return {'samples': len(samples), 'hours': hours, 'worst_gpu': _worst_gpu(samples), 'series': series, 'sensors': sensors}


def node_charts(node, summary):
    """SVG line charts of one node's GPUs over the run, one per ``SERIES`` entry, the worst GPU in red."""
    hours = summary['series']['hours']
    labels = ['%sh' % ('%g' % hour) for hour in hours]
    worst = str(summary.get('worst_gpu'))
    charts = []
    for key, title, unit in SERIES:
        lines = []
        for index, per in sorted(summary['series']['gpus'].items(), key=lambda item: (item[0] == worst, item[0])):
            lines.append({'label': 'GPU %s%s' % (index, ' (worst)' if index == worst else ''),
                          'colour': WORST if index == worst else OTHERS, 'points': per[key]})
        charts.append(line_chart(lines, labels, '%s: %s over the burn-in' % (node, title), unit=unit))
    return charts


def load_chart(figures_by_node, kind):
    """The fleet's figure of one load kind per iteration: the median, and the node furthest below it (its name in the
    legend). ``figures_by_node``: node -> ``verify/burnin.load_figures``."""
    by_iteration = {}
    for node, figures in figures_by_node.items():
        for entry in figures:
            if entry[0] == kind and entry[2] is not None:
                by_iteration.setdefault(entry[1], {})[node] = entry[2]
    iterations = sorted(by_iteration)
    medians = []
    for iteration in iterations:
        ordered = sorted(by_iteration[iteration].values())
        middle = len(ordered) // 2
        medians.append(ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2.0)
    slowest, lowest = None, None
    for number, iteration in enumerate(iterations):
        for node, figure in by_iteration[iteration].items():
            ratio = figure / medians[number] if medians[number] else None
            if ratio is not None and (lowest is None or ratio < lowest):
                slowest, lowest = node, ratio
    unit = next((entry[3] for figures in figures_by_node.values() for entry in figures if entry[0] == kind and entry[3]), '')
    series = [{'label': 'fleet median', 'colour': MEDIAN, 'points': medians}]
    if slowest is not None:
        series.append({'label': 'slowest: %s (%.0f%%)' % (slowest, 100 * lowest), 'colour': WORST,
                       'points': [by_iteration[iteration].get(slowest) for iteration in iterations]})
    return line_chart(series, [str(iteration) for iteration in iterations], '%s per iteration' % kind, unit=unit)
