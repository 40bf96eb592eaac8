# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The perftest figures of the report: pairs, suspect endpoints, heatmaps per rail, per-HCA bars.

The pass mark of the heatmap is ``run.parameters.perftest_fraction`` (the role
variable verify_perftest_fraction), and a cell's fraction is measured / line
rate, or measured / (2 x line rate) for a bandwidth test run with
``run.parameters.perftest_bidirectional``. A results.json from a run that did
not record them falls back to the median of the pairs' threshold / line rate,
and to no pass mark at all when that is not a fraction.
Pure functions only: no I/O.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math

from ansible_collections.aicluster.infra.plugins.module_utils.slurm import hostlist_sort_key
from ansible_collections.aicluster.infra.plugins.module_utils.report._text import hca_of, is_number, median, sort_nodes


# Up to this many nodes a heatmap shows every node; above, blocks of nodes (32 nodes = one
# SuperPOD scalable unit at 1,024 nodes), coloured by the worst pair measured between them.
HEATMAP_MAX_SIDE = 32
# The per-HCA bar chart shows every HCA up to HCA_BARS_ALL, else the HCA_BARS_WORST lowest.
HCA_BARS_ALL = 128
HCA_BARS_WORST = 64


def perftest_pairs(doc, test='write_bw'):
    return [pair for pair in (doc.get('perftest') or {}).get('pairs') or [] if pair.get('test', 'write_bw') == test]


def perftest_tests(doc):
    return sorted(set(pair.get('test', 'write_bw') for pair in (doc.get('perftest') or {}).get('pairs') or []))


def perftest_suspects(pairs):
    """Per (node, hca) endpoint: [failed pairs, pairs]. An endpoint failing with every partner is the likely fault."""
    counts = {}
    for pair in pairs:
        for node, hca in ((pair['client'], pair.get('hca')), (pair['server'], pair.get('peer_hca', pair.get('hca')))):
            entry = counts.setdefault((node, hca), [0, 0])
            entry[1] += 1
            if not pair.get('passed', True):
                entry[0] += 1
    return counts


def suspect_text(node, result, suspects):
    hca = hca_of(result.get('subject'))
    partner = result.get('partner')
    subject = str(result.get('subject') or '')
    peer_hca = subject.rsplit(' ', 1)[-1] if partner and ' ' in subject else hca
    ends = [(node, hca)]
    if partner:
        ends.append((partner, peer_hca))
    known = [(end, suspects[end]) for end in ends if end in suspects]
    if not known:
        return '%s %s' % (node, hca)
    known.sort(key=lambda item: (-item[1][0] / float(max(item[1][1], 1)), item[0]))
    (end_node, end_hca), (failed, total) = known[0]
    return '%s %s (fails %d of its %d pairs)' % (end_node, end_hca, failed, total)


def perftest_parameters(doc):
    """``(fraction, bidirectional)`` from run.parameters: the pass mark as a fraction of line rate (None when the
    document does not carry one in (0, 1]) and whether the bandwidth tests ran in both directions."""
    parameters = (doc.get('run') or {}).get('parameters') or {}
    fraction = parameters.get('perftest_fraction')
    if not (is_number(fraction) and 0 < fraction <= 1):
        fraction = None
    return fraction, parameters.get('perftest_bidirectional') is True


def expected_rates(pairs):
    """Per rail, the line rate the fleet expects: the most common ``line_rate`` of the rail's pairs (ties: the
    higher). results.json since the verify redesign records the fleet's expected rate in every pair (``negotiated``
    beside it); an older document recorded the pair's own port rate, which a degraded link lowers."""
    tally = {}
    for pair in pairs:
        rate = pair.get('line_rate')
        if is_number(rate) and rate > 0:
            counts = tally.setdefault(pair.get('rail'), {})
            counts[rate] = counts.get(rate, 0) + 1
    return dict((rail, sorted(counts.items(), key=lambda item: (-item[1], -item[0]))[0][0]) for rail, counts in tally.items())


def pair_line_rate(pair, expected):
    """The line rate a pair is judged against: its own ``line_rate`` when the document says it is the fleet's
    (``negotiated`` recorded beside it), else never below the rail's expected rate (``expected_rates``)."""
    rate = pair.get('line_rate')
    if 'negotiated' in pair and is_number(rate) and rate > 0:
        return rate
    fleet = expected.get(pair.get('rail'))
    if is_number(rate) and rate > 0:
        return max(rate, fleet) if is_number(fleet) else rate
    return fleet


def blamed_endpoints(doc, test='write_bw'):
    """(node, hca) endpoints the gate failed for ``perftest.<test>``: the end at fault, never its healthy partner."""
    check = 'perftest.' + test
    blamed = set()
    for name, entry in (doc.get('nodes') or {}).items():
        for result in entry.get('results') or []:
            if result.get('check') == check and not result.get('passed', True):
                blamed.add((name, hca_of(result.get('subject'))))
    return blamed


def _heatmap_labels(names, block):
    labels = []
    for start in range(0, len(names), block):
        members = names[start:start + block]
        labels.append(members[0] if len(members) == 1 else '%s-%s' % (members[0], members[-1]))
    return labels


def heatmap_matrix(doc, rail, test='write_bw', max_side=HEATMAP_MAX_SIDE):
    """The heatmap of one rail: fractions of line rate between nodes, or between blocks of nodes.

    Returns ``labels`` (a node name, or ``first-last`` of a block), ``block``
    (nodes per label), ``cells`` ({(row, col): {fraction, measured, pairs, worst, passed}}
    for measured pairs only, both directions; a block cell holds its worst pair; ``passed``: every pair of the cell
    passed the gate; the fraction is of the rate the fleet expects (``pair_line_rate``), never a degraded port's own),
    ``bidirectional`` (the cells are fractions of twice the line rate) and
    ``threshold_fraction``: run.parameters.perftest_fraction; for a document
    without it, the median of the pairs' threshold / line rate when that is a
    fraction; else None (no pass mark known).
    """
    names = sort_nodes((doc.get('nodes') or {}).keys())
    block = max(1, int(math.ceil(len(names) / float(max_side)))) if names else 1
    index = dict((name, position // block) for position, name in enumerate(names))
    threshold_fraction, bidirectional = perftest_parameters(doc)
    bidirectional = bidirectional and test.endswith('_bw')
    cells = {}
    fractions = []
    pairs = perftest_pairs(doc, test)
    expected = expected_rates(pairs)
    for pair in pairs:
        if pair.get('rail') != rail or pair['client'] not in index or pair['server'] not in index:
            continue
        line_rate = pair_line_rate(pair, expected) or 0
        if not is_number(pair.get('measured')) or not is_number(line_rate) or line_rate <= 0:
            continue
        fraction = pair['measured'] / (float(line_rate) * (2 if bidirectional else 1))
        if is_number(pair.get('threshold')):
            fractions.append(pair['threshold'] / float(line_rate))
        passed = pair.get('passed', True) is not False
        for row, col in ((index[pair['client']], index[pair['server']]), (index[pair['server']], index[pair['client']])):
            cell = cells.get((row, col))
            if cell is None:
                cells[(row, col)] = {'fraction': fraction, 'measured': pair['measured'], 'pairs': 1, 'worst': pair,
                                     'passed': passed}
            else:
                cell['pairs'] += 1
                cell['passed'] = cell['passed'] and passed
                if fraction < cell['fraction']:
                    cell.update(fraction=fraction, measured=pair['measured'], worst=pair)
    if threshold_fraction is None:
        derived = median(fractions)
        threshold_fraction = derived if derived is not None and 0 < derived < 1 else None
    return {'labels': _heatmap_labels(names, block), 'block': block, 'cells': cells, 'bidirectional': bidirectional,
            'threshold_fraction': threshold_fraction}


def perftest_rails(doc, test='write_bw'):
    return sorted(set(pair.get('rail') for pair in perftest_pairs(doc, test) if pair.get('rail') is not None))


def hca_bars(doc, test='write_bw'):
    """Per (node, hca) endpoint, the median of its pairs (a faulty HCA is low with every partner, its partners only
    with it) and its worst pair: all endpoints up to HCA_BARS_ALL, else the HCA_BARS_WORST lowest.

    ``state``: ``fail`` for an endpoint the gate failed (the end at fault), ``partner`` for one whose median is
    under the threshold only because its pairs include a failing end (neutral: the gate cleared it), ``pass``."""
    measured = {}
    thresholds, line_rates, units = [], [], set()
    pairs = perftest_pairs(doc, test)
    expected = expected_rates(pairs)
    blamed = blamed_endpoints(doc, test)
    for pair in pairs:
        if not is_number(pair.get('measured')):
            continue
        thresholds.append(pair.get('threshold'))
        line_rates.append(pair_line_rate(pair, expected))
        units.add(pair.get('unit') or '')
        for node, hca, partner in ((pair['client'], pair.get('hca'), pair['server']),
                                   (pair['server'], pair.get('peer_hca', pair.get('hca')), pair['client'])):
            measured.setdefault((node, hca), []).append((pair['measured'], partner))
    threshold = median(thresholds)
    bars = []
    for (node, hca) in sorted(measured, key=lambda key: (hostlist_sort_key(key[0]), str(key[1]))):
        values = measured[(node, hca)]
        middle = median(value for value, _partner in values)
        worst, partner = min(values)
        low = threshold is not None and middle < threshold
        state = 'fail' if (node, hca) in blamed else ('partner' if low else 'pass')
        bars.append({'node': node, 'hca': hca, 'measured': middle, 'worst': worst, 'partner': partner, 'pairs': len(values),
                     'passed': state != 'fail', 'state': state})
    total = len(bars)
    if total > HCA_BARS_ALL:
        bars = sorted(bars, key=lambda entry: (entry['measured'], hostlist_sort_key(entry['node']), str(entry['hca'])))[:HCA_BARS_WORST]
    return {'bars': bars, 'total': total, 'threshold': threshold, 'line_rate': median(line_rates),
            'unit': ', '.join(sorted(unit for unit in units if unit)) or 'Gb/s'}
