# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The evidence appendix: each node's tool output as the checks read it, one file per node.

``nodes.<name>.raw`` of results.json keeps, per node, the parsed output of
the tools its checks judged (ibstat/ibv_devinfo through ib_info, nvidia-smi
through gpu_info, nccl-tests rows, link counters before and after the tests,
BER). ``evidence_files`` writes it as ``evidence/<node>.json`` beside the
report with the node's results, so a figure in the report can be traced to
what the tool printed; ``evidence_appendix`` says which nodes the HTML shows
inline (the failing ones, up to ``INLINE_NODES``, with their failed results
only) and cuts a node's text at ``INLINE_CHARS`` there (the file is whole).
Pure functions only: no I/O.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.aicluster.infra.plugins.module_utils.report._text import sort_nodes

EVIDENCE_DIR = 'evidence'
INLINE_NODES = 16
INLINE_CHARS = 50000
_UNSAFE = re.compile(r'[^A-Za-z0-9._-]')


def evidence_name(node):
    """The file of a node's evidence, relative to the report: ``evidence/<node>.json`` (a name safe on any file
    system: characters other than letters, digits, dot, dash and underscore become ``_``)."""
    safe = _UNSAFE.sub('_', str(node)).lstrip('.') or '_'
    return '%s/%s.json' % (EVIDENCE_DIR, safe)


def node_evidence(doc, node, failed_only=False):
    """One node's evidence as JSON text (sorted keys, two-space indent, a newline at the end); ``failed_only``: of
    its results only the failed ones (the page's inline copy; the file has them all)."""
    entry = (doc.get('nodes') or {}).get(node) or {}
    run = doc.get('run') or {}
    results = entry.get('results') or []
    if failed_only:
        results = [result for result in results if not result.get('passed', True)]
    evidence = {'node': node, 'run': {'started': run.get('started'), 'finished': run.get('finished')},
                'passed': entry.get('passed'), 'versions': entry.get('versions') or {},
                'inventory': entry.get('inventory') or {}, 'results': results,
                'tool_output': entry.get('raw') or {}}
    # the tool's bytes are kept, escaped: JSON escapes control characters, ensure_ascii the rest (a lone surrogate
    # included), and DEL, which JSON may leave raw, is escaped too, so the file holds no control character
    text = json.dumps(evidence, indent=2, sort_keys=True, ensure_ascii=True, default=str)
    return text.replace('\x7f', '\\u007f') + '\n'


def evidence_files(doc):
    """{relative file name: text} for every node of the run."""
    return dict((evidence_name(node), node_evidence(doc, node)) for node in sort_nodes(doc.get('nodes') or {}))


def evidence_appendix(doc):
    """The HTML appendix: every node with its file, and the failing ones inline (the first INLINE_NODES, with their
    failed results and tool output; each cut at INLINE_CHARS with a note). ``[{node, file, passed, text, cut}]``; text is None when
    the node is not shown inline."""
    nodes = doc.get('nodes') or {}
    out, shown = [], 0
    for node in sort_nodes(nodes):
        passed = nodes[node].get('passed', True)
        text, cut = None, False
        if not passed and shown < INLINE_NODES:
            text = node_evidence(doc, node, failed_only=True)
            cut = len(text) > INLINE_CHARS
            text = text[:INLINE_CHARS] if cut else text
            shown += 1
        out.append({'node': node, 'file': evidence_name(node), 'passed': passed, 'text': text, 'cut': cut})
    return out
