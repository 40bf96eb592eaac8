# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Time the acceptance report on a synthetic 1,024-node results set and print the file sizes.

The set: 8 HCAs and 8 GPUs per node, per-HCA and per-GPU results, 8 round-robin
perftest rounds (32,768 pair results), NCCL figures, two faults of every kind.
Run from the repository root: ``python bench/report_1024.py``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import functools
import json
import os
import sys
import time

from _collection import REPO  # noqa: E402  (puts the collection on sys.path)
sys.path.insert(0, os.path.join(REPO, 'tests', 'unit'))  # the synthetic results generator the tests use

from _synthetic_results import make_results, scatter_faults  # noqa: E402

from ansible_collections.aicluster.infra.plugins.module_utils import report  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.report import (  # noqa: E402
    evidence, html, junit, markdown, prometheus)
from ansible_collections.aicluster.infra.plugins.module_utils.verify.results import validate_results  # noqa: E402


def _best(function, repeat=3):
    best, value = None, None
    for _attempt in range(repeat):
        start = time.perf_counter()
        value = function()
        elapsed = time.perf_counter() - start
        best = elapsed if best is None else min(best, elapsed)
    return best, value


def main(count=1024):
    start = time.perf_counter()
    doc = make_results(count, scatter_faults(count))
    older = make_results(count, seed=11)
    made = time.perf_counter() - start
    text = json.dumps(doc)
    parse_s, dummy = _best(lambda: json.loads(text), 1)
    validate_s, problems = _best(lambda: validate_results(doc), 1)
    assert not problems, problems[:3]
    print('synthetic %d nodes: results.json %.1f MB, %d results, %d perftest pairs (made in %.2f s; json.loads %.2f s, '
          'validate %.2f s)' % (count, len(text) / 1e6, sum(len(n['results']) for n in doc['nodes'].values()),
                                len(doc['perftest']['pairs']), made, parse_s, validate_s))
    with open(os.path.join(REPO, html.SHIPPED_TEMPLATE)) as handle:
        template = handle.read()
    formats = ('html', 'junit', 'markdown', 'prometheus')
    for label, compare_doc in (('report', None), ('report + comparison', older)):
        seconds, outputs = _best(lambda: report.build_outputs(doc, compare_doc, formats=formats, html_template=template))
        sizes = ', '.join('%s %.0f KB' % (name, len(outputs[name].encode('utf-8')) / 1e3) for name in sorted(outputs))
        print('%-20s %.2f s (best of 3): %s' % (label, seconds, sizes))
    for name, function in (('html', functools.partial(html.html_report, template=template)), ('junit', junit.junit_xml),
                           ('markdown', markdown.summary_markdown), ('prometheus', prometheus.metrics_text),
                           ('evidence', evidence.evidence_files)):
        seconds, dummy = _best(lambda: function(doc))
        print('  %-8s %.2f s' % (name, seconds))


if __name__ == '__main__':
    main()
