# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The comparison of two runs: node states, checks that broke or were fixed, figures that moved.

Pure functions only: no I/O.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math

from ansible_collections.aicluster.infra.plugins.module_utils.slurm import hostlist_sort_key
from ansible_collections.aicluster.infra.plugins.module_utils.report._text import check_order, is_number, node_results, sort_nodes


DEFAULT_COMPARE_THRESHOLD = 0.05
# The renderings list this many moved figures.
MOVED_ROWS = 200


def _state(node):
    if node is None:
        return 'absent'
    return 'pass' if node.get('passed') else 'fail'


def _figures(doc):
    """Numeric figures of a run: {(node, check, subject): (value, unit)}."""
    figures = {}
    for node, result in node_results(doc):
        if is_number(result.get('measured')):
            figures[(node, result.get('check'), str(result.get('subject')))] = (result['measured'], result.get('unit'))
    nccl = doc.get('nccl') or {}
    if is_number(nccl.get('fleet_median')):
        figures[('fleet', 'nccl.busbw', 'fleet median')] = (nccl['fleet_median'], 'GB/s')
    multi = nccl.get('multi_node') or {}
    if is_number(multi.get('busbw')):
        figures[('fleet', 'nccl.multi_node_busbw', 'multi-node')] = (multi['busbw'], 'GB/s')
    return figures


def _passes(doc):
    passes = {}
    for node, result in node_results(doc):
        key = (node, result.get('check'), str(result.get('subject')))
        passes[key] = passes.get(key, True) and bool(result.get('passed', True))
    return passes


def compare(before, after, threshold=DEFAULT_COMPARE_THRESHOLD):
    """What changed from ``before`` to ``after``: node states, checks that broke or were fixed, figures that moved.

    A figure moved when ``|after - before| > threshold * |before|`` (any change from 0 counts).
    """
    before_nodes, after_nodes = before.get('nodes') or {}, after.get('nodes') or {}
    nodes = []
    for name in sort_nodes(set(before_nodes) | set(after_nodes)):
        old, new = before_nodes.get(name), after_nodes.get(name)
        old_state, new_state = _state(old), _state(new)
        old_drained = bool(old and old.get('drained'))
        new_drained = bool(new and new.get('drained'))
        if old_state != new_state or old_drained != new_drained:
            nodes.append({'node': name, 'before': old_state, 'after': new_state,
                          'drained_before': old_drained, 'drained_after': new_drained})
    old_passes, new_passes = _passes(before), _passes(after)
    broken = [key for key in new_passes if not new_passes[key] and old_passes.get(key, True)]
    fixed = [key for key in old_passes if not old_passes[key] and new_passes.get(key) is True]
    old_figures, new_figures = _figures(before), _figures(after)
    moved = []
    for key in set(old_figures) & set(new_figures):
        old_value, unit = old_figures[key]
        new_value = new_figures[key][0]
        if old_value == 0:
            change = None if new_value == 0 else float('inf')
        else:
            change = (new_value - old_value) / abs(float(old_value))
        if change is not None and abs(change) > threshold:
            moved.append({'node': key[0], 'check': key[1], 'subject': key[2], 'before': old_value,
                          'after': new_value, 'unit': unit, 'change': None if math.isinf(change) else change})

    def order(key):
        return (hostlist_sort_key(key[0]), check_order(key[1]), key[2])

    moved.sort(key=lambda item: (-(abs(item['change']) if item['change'] is not None else float('inf')),
                                 order((item['node'], item['check'], item['subject']))))
    return {
        'threshold': threshold,
        'before': {'started': (before.get('run') or {}).get('started'), 'summary': before.get('summary') or {}},
        'after': {'started': (after.get('run') or {}).get('started'), 'summary': after.get('summary') or {}},
        'nodes': nodes,
        'broken': [{'node': key[0], 'check': key[1], 'subject': key[2]} for key in sorted(broken, key=order)],
        'fixed': [{'node': key[0], 'check': key[1], 'subject': key[2]} for key in sorted(fixed, key=order)],
        'moved': moved,
    }
