# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The acceptance report: figures computed from results.json, and its three renderings.

``build_outputs(doc, compare_doc)`` returns the text of report.html, junit.xml
and summary.md for a results document (verify/results.py is the contract).
The figures are pure data: ``figures`` (failing checks with what to do next,
the NCCL chart, the fabric link table, the version matrix, GPU health, the
results table, the test plan), ``perftest`` (heatmap matrices per rail, node
blocks above ``HEATMAP_MAX_SIDE`` nodes, per-HCA bars) and ``compare`` (two
runs). The renderers ``html``, ``junit`` and ``markdown`` lay them out and
derive nothing; ``_text`` holds the helpers they share. Output is
deterministic: the same documents give the same bytes.
Pure functions only: no I/O.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils.report.compare import DEFAULT_COMPARE_THRESHOLD, compare
from ansible_collections.aicluster.infra.plugins.module_utils.report.evidence import EVIDENCE_DIR, evidence_files
from ansible_collections.aicluster.infra.plugins.module_utils.report.figures import COVER_KEYS  # noqa: F401 (the module's options)
from ansible_collections.aicluster.infra.plugins.module_utils.report.html import html_report
from ansible_collections.aicluster.infra.plugins.module_utils.report.junit import junit_xml
from ansible_collections.aicluster.infra.plugins.module_utils.report.markdown import summary_markdown
from ansible_collections.aicluster.infra.plugins.module_utils.report.prometheus import metrics_text

OUTPUT_NAMES = {'html': 'report.html', 'junit': 'junit.xml', 'markdown': 'summary.md', 'prometheus': 'metrics.prom',
                'evidence': EVIDENCE_DIR, 'pdf': 'report.pdf'}
# Formats build_outputs does not make: the PDF is printed from report.html by Chromium (report/pdf.py).
PRINTED = ('pdf',)


def build_outputs(doc, compare_doc=None, formats=('html', 'junit', 'markdown'), compare_threshold=DEFAULT_COMPARE_THRESHOLD,
                  cover=None, html_template=None):
    """{file name: text} for the requested formats (OUTPUT_NAMES) of a valid results document; ``cover`` (COVER_KEYS:
    customer, site, cluster, criteria, run_by, commit) heads every output. ``html_template``: the text of the Jinja2
    template report.html is laid out by (needed for html; the report role's is html.SHIPPED_TEMPLATE). ``evidence``
    gives one file per node, ``evidence/<node>.json``; ``pdf`` is not made here (PRINTED)."""
    comparison = compare(compare_doc, doc, compare_threshold) if compare_doc is not None else None
    renderers = {'html': lambda: html_report(doc, comparison, cover, html_template), 'junit': lambda: junit_xml(doc, cover),
                 'markdown': lambda: summary_markdown(doc, comparison, cover), 'prometheus': lambda: metrics_text(doc, cover)}
    outputs = dict((OUTPUT_NAMES[name], renderers[name]()) for name in formats if name in renderers)
    if 'evidence' in formats:
        outputs.update(evidence_files(doc))
    return outputs
