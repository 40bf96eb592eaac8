# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A verification run as Prometheus metrics: metrics.prom, and one text per node for node-exporter.

``metrics_text(doc, cover)`` is the whole run in the text exposition format
that node-exporter's textfile collector reads (HELP and TYPE lines, every
family a gauge, no timestamps on samples): the verdict, node counts, the run's
start and finish as unix times, an ``_info`` series with the cluster's name,
per node whether it passed and was drained, per node and check whether it
passed, per node, check and subject the measured value and the threshold of
numeric results, and per check its passed and failed results.
``node_metrics_text(doc, node, cover)`` is the run-level series (but the
per-check counts, which every node would repeat) plus that one node's
(``node_metrics`` gives every node's at once).

Labels stay bounded: ``subject`` is an HCA port (``mlx5_3:1``), an HCA
(``mlx5_0``: a node's perftest pairs fold into their HCA, worst pair kept),
a GPU (``GPU 5``), an interface or ``node``; several results with one label
set fold into the worst one (a failed result first, then the lowest figure
where higher is better, the highest where lower is better); at most
``SUBJECTS_MAX`` subjects per node and check, the rest fold into ``other``.
Label values are tool text: terminal sequences and control characters are
removed, tabs and carriage returns become spaces, and backslash, double
quote and newline are escaped as the format asks. The same document gives
the same bytes. Pure functions only: no I/O.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import calendar
import datetime
import re

from ansible_collections.aicluster.infra.plugins.module_utils.slurm import hostlist_sort_key
from ansible_collections.aicluster.infra.plugins.module_utils.svg import control_free
from ansible_collections.aicluster.infra.plugins.module_utils.verify.checks import CHECKS
from ansible_collections.aicluster.infra.plugins.module_utils.report._text import (
    check_order, gpu_of, hca_of, inventory_name, is_number, sort_nodes)
from ansible_collections.aicluster.infra.plugins.module_utils.report.figures import report_title

PREFIX = 'aicluster_verify_'
# Subject labels per node and check; the rest of a node's subjects of that check fold into 'other'.
SUBJECTS_MAX = 64
# Characters kept of a subject label, and of an _info label.
SUBJECT_CHARS = 64
INFO_CHARS = 128
OTHER = 'other'

# name (without PREFIX) -> HELP text; every family is a gauge (a run's snapshot, not a counter).
FAMILIES = {
    'info': 'The verification run: cluster (the cover\'s cluster, else the inventory\'s name), inventory, site, '
            'collection_version, mode; always 1.',
    'passed': 'Verdict of the verification run: 1 PASS, 0 FAIL.',
    'nodes': 'Nodes in the verification run.',
    'nodes_passed': 'Nodes of the run whose every check passed.',
    'nodes_failed': 'Nodes of the run with a failed check.',
    'nodes_drained': 'Nodes the gate drained in Slurm in this run.',
    'nodes_resumed': 'Nodes the gate resumed in Slurm in this run.',
    'cluster_results_failed': 'Failed cluster-level results (they fail the verdict and drain no node).',
    'run_started_timestamp_seconds': 'When the verification run started, as a unix time.',
    'run_finished_timestamp_seconds': 'When the verification run finished, as a unix time.',
    'check_results': 'Results of a check in the run, nodes and cluster level together.',
    'check_passed': 'Passed results of a check in the run.',
    'check_failed': 'Failed results of a check in the run.',
    'node_passed': 'Whether every check of the node passed: 1 passed, 0 failed.',
    'node_drained': 'Whether the gate drained the node in this run: 1 drained, 0 not.',
    'node_check_passed': 'Whether every result of the check on the node passed: 1 passed, 0 failed.',
    'measured': 'Measured value of a numeric check result (the worst of those folded into the subject), in the check\'s unit.',
    'threshold': 'Threshold the measured value was judged against, in the check\'s unit.',
}
# The families with a node label: a node's own text holds only its series of these.
NODE_FAMILIES = ('node_passed', 'node_drained', 'node_check_passed', 'measured', 'threshold')
INFO_LABELS = ('cluster', 'inventory', 'site', 'collection_version', 'mode')

_TIME = re.compile(r'^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-]\d{2}:?\d{2})?$')


def label_value(text, limit=None):
    """A label value as the exposition format writes it between double quotes: control characters and terminal
    sequences removed, tab and carriage return as spaces, backslash, double quote and newline escaped."""
    clean = control_free(text).replace('\r', ' ').replace('\t', ' ')
    if limit is not None:
        clean = clean[:limit]
    return clean.replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n')


def subject_label(check, subject):
    """The bounded subject of a result: its HCA for perftest (one series per HCA, not per pair), ``GPU <index>``,
    else the subject's first word (``mlx5_3:1`` of ``mlx5_3:1 (leaf01 port 3)``); ``node`` when empty."""
    text = control_free(subject if subject is not None else '').strip()
    if str(check).startswith('perftest.'):
        label = hca_of(text)
    else:
        gpu = gpu_of(text)
        label = 'GPU %s' % gpu if gpu is not None else (text.split(None, 1)[0] if text else '')
    return (label or 'node')[:SUBJECT_CHARS]


def unix_time(text):
    """Seconds since the epoch of an ISO 8601 time (``2026-11-29T17:06:41Z``; no zone is UTC); None when it is not one."""
    match = _TIME.match(str(text or '').strip())
    if not match:
        return None
    try:
        moment = datetime.datetime(*[int(part) for part in match.groups()[:6]])
    except ValueError:
        return None
    seconds = calendar.timegm(moment.timetuple())
    zone = match.group(8)
    if zone and zone != 'Z':
        sign = -1 if zone[0] == '-' else 1
        digits = zone[1:].replace(':', '')
        seconds -= sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
    if match.group(7):
        return seconds + float(match.group(7))
    return seconds


def sample_value(value):
    """A sample's value as text: booleans as 1/0, integers as they are, floats in Python's shortest repr."""
    if isinstance(value, bool):
        return '1' if value else '0'
    if isinstance(value, int):
        return '%d' % value
    return repr(float(value))


class _Series(object):
    """Samples by family: {family: {label text: (sort key, value text)}}; a repeated label set keeps its first value."""

    def __init__(self):
        self.families = {}

    def add(self, family, labels, value):
        """labels: ((name, raw value, sort key), ...) in the family's label order."""
        text = ','.join('%s="%s"' % (name, label_value(raw)) for name, raw, _key in labels)
        samples = self.families.setdefault(family, {})
        if text not in samples:
            samples[text] = (tuple(key for _name, _raw, key in labels), sample_value(value))


def _render(*collections):
    lines = []
    names = sorted(set(name for series in collections for name in series.families))
    for family in names:
        samples = {}
        for series in collections:
            for text, entry in series.families.get(family, {}).items():
                samples.setdefault(text, entry)
        if not samples:
            continue
        name = PREFIX + family
        lines.append('# HELP %s %s' % (name, FAMILIES[family].replace('\\', '\\\\').replace('\n', '\\n')))
        lines.append('# TYPE %s gauge' % name)
        for text, (_key, value) in sorted(samples.items(), key=lambda item: (item[1][0], item[0])):
            lines.append('%s%s %s' % (name, '{%s}' % text if text else '', value))
    return '\n'.join(lines) + '\n' if lines else ''


def _info_labels(doc, cover):
    run = doc.get('run') or {}
    values = {'cluster': report_title(doc, cover), 'inventory': inventory_name(run.get('inventory')),
              'site': str((cover or {}).get('site') or '').strip(), 'collection_version': run.get('collection_version'),
              'mode': run.get('mode')}
    labels = []
    for name in sorted(INFO_LABELS):
        value = control_free(values[name] if values[name] is not None else '').strip()[:INFO_CHARS]
        if value:   # an empty label is an absent one in Prometheus
            labels.append((name, value, value))
    return tuple(labels)


def _check_label(check):
    return ('check', str(check), check_order(str(check)))


def _run_series(doc, cover, checks=True):
    """The run-level series; ``checks``: with the per-check counts (metrics.prom has them, a node's text does not)."""
    series = _Series()
    nodes = doc.get('nodes') or {}
    cluster_results = [result for result in (doc.get('cluster') or {}).get('results') or [] if isinstance(result, dict)]
    series.add('info', _info_labels(doc, cover), 1)
    counts = {'nodes': len(nodes), 'nodes_passed': 0, 'nodes_failed': 0, 'nodes_drained': 0, 'nodes_resumed': 0}
    for node in nodes.values():
        counts['nodes_passed' if node.get('passed') else 'nodes_failed'] += 1
        counts['nodes_drained'] += 1 if node.get('drained') else 0
        counts['nodes_resumed'] += 1 if node.get('resumed') else 0
    for family, count in counts.items():
        series.add(family, (), count)
    cluster_failed = sum(1 for result in cluster_results if not result.get('passed', True))
    series.add('cluster_results_failed', (), cluster_failed)
    summary = doc.get('summary') or {}
    verdict = summary.get('verdict')
    if verdict not in ('PASS', 'FAIL'):
        verdict = 'PASS' if nodes and not counts['nodes_failed'] and not cluster_failed else 'FAIL'
    series.add('passed', (), verdict == 'PASS')
    run = doc.get('run') or {}
    for family, key in (('run_started_timestamp_seconds', 'started'), ('run_finished_timestamp_seconds', 'finished')):
        seconds = unix_time(run.get(key))
        if seconds is not None:
            series.add(family, (), seconds)
    if not checks:
        return series
    tally = {}
    for name in nodes:
        for result in nodes[name].get('results') or []:
            entry = tally.setdefault(result.get('check'), [0, 0])
            entry[0 if result.get('passed', True) else 1] += 1
    for result in cluster_results:
        entry = tally.setdefault(result.get('check'), [0, 0])
        entry[0 if result.get('passed', True) else 1] += 1
    multi = (doc.get('nccl') or {}).get('multi_node') or {}
    if is_number(multi.get('busbw')) and 'nccl.multi_node_busbw' not in tally:
        # a document from before cluster-level results keeps the multi-node run here (figures.results_table does the same)
        tally['nccl.multi_node_busbw'] = [1, 0] if multi.get('passed') else [0, 1]
    for check, (passed, failed) in tally.items():
        if check is None:
            continue
        series.add('check_results', (_check_label(check),), passed + failed)
        series.add('check_passed', (_check_label(check),), passed)
        series.add('check_failed', (_check_label(check),), failed)
    return series


def _badness(check, result):
    """Sort key of a result among those folded into one series: failed first, then the worst figure, then the first."""
    measured = result.get('measured')
    record = CHECKS.get(check)
    direction = record.direction if record is not None else None
    if not is_number(measured):
        figure = float('-inf') if direction in ('higher', 'lower') else 0
    elif direction == 'higher':
        figure = measured
    elif direction == 'lower':
        figure = -measured
    else:
        figure = 0
    return (bool(result.get('passed', True)), figure)


def _node_series(name, node):
    """The series of one node (its results in results.json)."""
    series = _Series()
    node_key = hostlist_sort_key(name)
    node_label = ('node', name, node_key)
    series.add('node_passed', (node_label,), bool(node.get('passed')))
    series.add('node_drained', (node_label,), bool(node.get('drained')))
    by_check = {}
    for index, result in enumerate(node.get('results') or []):
        if isinstance(result, dict) and result.get('check') is not None:
            by_check.setdefault(str(result['check']), []).append((index, result))
    for check in sorted(by_check, key=check_order):
        results = by_check[check]
        series.add('node_check_passed', (node_label, _check_label(check)),
                   all(result.get('passed', True) for _index, result in results))
        by_subject = {}
        for index, result in results:
            by_subject.setdefault(subject_label(check, result.get('subject')), []).append((index, result))
        subjects = sorted(by_subject, key=lambda label: (hostlist_sort_key(label), label))
        if len(subjects) > SUBJECTS_MAX:
            kept = [label for label in subjects if label != OTHER][:SUBJECTS_MAX - 1]
            by_subject[OTHER] = sorted((item for label in subjects if label not in kept for item in by_subject[label]),
                                       key=lambda item: item[0])
            subjects = kept + [OTHER]
        for subject in subjects:
            dummy, worst = min(((_badness(check, result), index), result) for index, result in by_subject[subject])
            labels = (node_label, _check_label(check), ('subject', subject, (hostlist_sort_key(subject), subject)))
            if is_number(worst.get('measured')):
                series.add('measured', labels, worst['measured'])
            if is_number(worst.get('threshold')):
                series.add('threshold', labels, worst['threshold'])
    return series


def metrics_text(doc, cover=None):
    """metrics.prom: the whole run (run-level series and every node's) in the text exposition format."""
    nodes = doc.get('nodes') or {}
    collections = [_run_series(doc, cover)]
    for name in sort_nodes(nodes):
        collections.append(_node_series(name, nodes[name]))
    return _render(*collections)


def node_metrics(doc, cover=None, names=None):
    """{node: text} for the nodes of the run (all of them, or those of ``names`` in the run): the run-level series
    but the per-check counts, and that node's own, for its node-exporter textfile collector."""
    nodes = doc.get('nodes') or {}
    wanted = sort_nodes(nodes) if names is None else sort_nodes(set(names) & set(nodes))
    run = _run_series(doc, cover, checks=False)
    return dict((name, _render(run, _node_series(name, nodes[name]))) for name in wanted)


def node_metrics_text(doc, node, cover=None):
    """One node's text: the run-level series and the node's own; ValueError for a node not in the run."""
    if node not in (doc.get('nodes') or {}):
        raise ValueError('node %r is not in the results' % (node,))
    return node_metrics(doc, cover, [node])[node]


def series_per_node(doc):
    """How many series each node adds (node_passed, node_drained, node_check_passed, measured, threshold): {node: n}."""
    nodes = doc.get('nodes') or {}
    return dict((name, sum(len(samples) for samples in _node_series(name, nodes[name]).families.values()))
                for name in nodes)
