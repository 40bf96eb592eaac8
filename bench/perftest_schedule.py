# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Round counts and compute time of the perftest schedules for 2,048 nodes.

Run from the repository root: ``python bench/perftest_schedule.py``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

# _collection puts the collection on sys.path
import _collection  # noqa: E402,F401  pylint: disable=unused-import
from ansible_collections.aicluster.infra.plugins.module_utils.perftest_schedule import (  # noqa: E402
    all_pairs_rounds, attribute, cover_rounds, retest_round,
)


def _best(function, *args):
    best, value = None, None
    for _attempt in range(3):
        start = time.perf_counter()
        value = function(*args)
        elapsed = time.perf_counter() - start
        best = elapsed if best is None else min(best, elapsed)
    return best, value


def main():
    for count in (2048, 2047):
        nodes = ['gpu%04d' % index for index in range(1, count + 1)]
        seconds, rounds = _best(cover_rounds, nodes)
        print('cover     %5d nodes: %4d rounds, %6d pairs, %.4f s' % (count, len(rounds), sum(len(r) for r in rounds), seconds))
        seconds, rounds = _best(all_pairs_rounds, nodes)
        print('all-pairs %5d nodes: %4d rounds, %7d pairs, %.3f s (sequential tests would be %d)' % (
            count, len(rounds), sum(len(r) for r in rounds), seconds, count * (count - 1) // 2))
    nodes = ['gpu%04d' % index for index in range(1, 2049)]
    bad = set(nodes[5::97])
    results = [{'client': c, 'server': s, 'rail': rail, 'passed': c not in bad and s not in bad}
               for c, s in cover_rounds(nodes)[0] for rail in range(8)]
    seconds, retest = _best(retest_round, nodes, results)
    print('retest    2048 nodes x 8 rails, %d bad nodes: %d retest pairs, %.3f s' % (len(bad), len(retest), seconds))
    results += [{'client': p['client'], 'server': p['server'], 'rail': rail,
                 'passed': p['client'] not in bad and p['server'] not in bad} for p in retest for rail in p['rails']]
    seconds, verdict = _best(attribute, results)
    print('attribute after one retest round: %d faulty (node, rail), %d suspect, %.3f s' % (
        len(verdict['faulty']), len(verdict['suspect']), seconds))


if __name__ == '__main__':
    main()
