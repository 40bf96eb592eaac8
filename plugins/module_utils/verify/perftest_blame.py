# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which side of a failing perftest pair is at fault: per (node, rail) results from every pair result."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils.perftest_schedule import attribute
from ansible_collections.aicluster.infra.plugins.module_utils.verify._common import fmt
from ansible_collections.aicluster.infra.plugins.module_utils.verify.results import new_result


# What to check on the node blamed for a test.
FAULTY_HINT = {
    None: 'check the HCA, its cable and its PCIe slot',
    'gpudirect_bw': ('check GPUDirect RDMA on this node (nvidia_peermem or dma-buf, PCIe ACS off between the GPU and the HCA, '
                     'IOMMU passthrough); host memory is tested by write_bw'),
}


def _partner(pair, node):
    return pair['server'] if pair['client'] == node else pair['client']


def _describe(pair, node):
    return '%s %s' % (_partner(pair, node), pair['peer_hca'] if pair['client'] == node else pair['hca'])


def _figure(pair):
    return fmt(pair['measured']) if pair['measured'] is not None else (pair['errors'][0] if pair['errors'] else 'no result')


def _rail_result(check, test, node, hca, rail, mine, verdict, final):
    """The result of one (node, rail) from its pairs ``mine``; None when it has none that decides."""
    failed = [p for p in mine if not p['passed']]
    passed = [p for p in mine if p['passed']]
    if test != 'write_lat':
        worst = min(mine, key=lambda p: (p['measured'] is None, p['measured'] if p['measured'] is not None else 0))
    else:
        worst = max(mine, key=lambda p: p['measured'] or 0)
    unit = worst.get('unit')
    if (node, rail) in verdict['faulty']:
        shown = sorted(failed, key=lambda p: _partner(p, node))
        partners = sorted(set(_partner(p, node) for p in failed))
        return new_result(
            check, '%s -> %s' % (hca, ', '.join(_describe(p, node) for p in shown)), worst['measured'], worst['threshold'],
            False, '%s failed %s with %d different partners (%s), threshold %s %s; the fault is on this node: %s' % (
                hca, test, len(partners), ', '.join('%s: %s' % (_partner(p, node), _figure(p)) for p in shown),
                fmt(worst['threshold']), unit, FAULTY_HINT.get(test, FAULTY_HINT[None])), unit=unit, rail=rail, partners=partners)
    if (node, rail) in verdict['suspect'] and final:
        p = failed[0]
        return new_result(
            check, '%s -> %s' % (hca, _describe(p, node)), p['measured'], p['threshold'], False,
            '%s %s with %s: %s %s, threshold %s; could not be re-tested against a third node, so neither side is '
            'cleared' % (hca, test, _partner(p, node), fmt(p['measured']) if p['measured'] is not None else 'no result',
                         unit, fmt(p['threshold'])), unit=unit, rail=rail, partners=[_partner(p, node)])
    best = passed[0] if passed else worst
    blamed = [_partner(p, node) for p in failed]
    note = ' (failed with %s, which is the faulty side)' % ', '.join(blamed) if blamed else ''
    return new_result(
        check, '%s -> %s' % (hca, _describe(best, node)), best['measured'], best['threshold'], True,
        '%s %s %s %s %s %s%s' % (hca, test, fmt(best['measured']), unit, '>=' if test != 'write_lat' else '<=',
                                 fmt(best['threshold']), note),
        unit=unit, rail=rail)


def evaluate_perftest(pairs, nodes, test='write_bw', final=True):
    """perftest.<test> results per node from every pair result (retests included).

    ``pairs``: pair results (``perftest.pair_result``); ``nodes``: node ->
    HCAs in rail order. A (node, rail) that failed with two partners fails; one
    that failed with one partner and passed with another passes (its partner is
    blamed); with ``final``, one that failed with one partner and could not be
    re-tested fails, saying so. Returns ``{'nodes': node -> [results],
    'unattributed': [...]}``.
    """
    check = 'perftest.' + test
    tests = [p for p in pairs if p.get('test') == test]
    verdict = attribute([{'client': p['client'], 'server': p['server'], 'rail': p['rail'], 'passed': p['passed']}
                         for p in tests])
    verdict_sets = {'faulty': set((n, r) for n, r in verdict['faulty']),
                    'suspect': set((n, r) for n, r in verdict['suspect'])}
    by_end = {}
    for pair in tests:
        by_end.setdefault((pair['client'], pair['rail']), []).append(pair)
        if pair['server'] != pair['client']:
            by_end.setdefault((pair['server'], pair['rail']), []).append(pair)
    out = {}
    for node, hcas in sorted(nodes.items()):
        results = [_rail_result(check, test, node, hca, rail, by_end[(node, rail)], verdict_sets, final)
                   for rail, hca in enumerate(hcas) if by_end.get((node, rail))]
        if results:
            out[node] = results
    return {'nodes': out, 'unattributed': verdict['unattributed']}
