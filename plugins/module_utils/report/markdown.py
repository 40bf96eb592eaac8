# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""summary.md: the acceptance report as Markdown, for a ticket or a sign-off.

Pure functions only: no I/O.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils.report._text import fmt, fmt_pct, hostlist
from ansible_collections.aicluster.infra.plugins.module_utils.svg import control_free
from ansible_collections.aicluster.infra.plugins.module_utils.report.compare import MOVED_ROWS
from ansible_collections.aicluster.infra.plugins.module_utils.report.figures import (
    cover_rows, criteria, failing_checks, report_title, results_table, test_plan, version_matrix)
from ansible_collections.aicluster.infra.plugins.module_utils.report.inventory import node_inventory
from ansible_collections.aicluster.infra.plugins.module_utils.report.problems import (
    check_states, physical_problems, problem_counts)


def _md(text):
    """Tool-derived text as inert Markdown in a table cell or a line: terminal sequences and control characters
    removed, HTML neutralised (a renderer would run a <script> in a result message), no cell or line break."""
    text = control_free(text).replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;')
    return text.replace('|', '\\|').replace('`', '\\`').replace('\r', ' ').replace('\n', ' ')


def _ours(text):
    """The collection's own text (check records): code spans kept, HTML and pipes neutralised."""
    text = control_free(text).replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;')
    return text.replace('|', '\\|').replace('\r', ' ').replace('\n', ' ')


def _code(text):
    """Text inside a code span (`...`): nothing inside is rendered, but a backtick would end the span."""
    return control_free(text).replace('`', "'").replace('|', '\\|').replace('\r', ' ').replace('\n', ' ')


def _baseline_text(row):
    baseline = row.get('baseline')
    if isinstance(baseline, tuple):
        return '%s..%s' % (fmt(baseline[0], row.get('unit')), fmt(baseline[1], row.get('unit')))
    return fmt(baseline, row.get('unit')) if row.get('numeric') else str(baseline)


def _measured_text(row):
    if row.get('numeric'):
        if row['total'] == 1:
            return fmt(row['median'], row.get('unit'))
        return 'median %s, worst %s' % (fmt(row['median'], row.get('unit')), fmt(row['worst'], row.get('unit')))
    return ', '.join('%s x%d' % (value, count) for value, count in row['values'][:4]) + (
        ', ...' if len(row['values']) > 4 else '')


def _deviation_text(row):
    if not row.get('numeric') or row.get('deviation') is None:
        return '-'
    if row['total'] == 1:
        return fmt_pct(row['deviation'])
    return '%s (worst %s)' % (fmt_pct(row['deviation']), fmt_pct(row['worst_deviation']))


def _inventory_lines(doc):
    nodes = doc.get('nodes') or {}
    matrix = version_matrix(doc)
    majority = dict((component['key'], component['majority']) for component in matrix['components'])
    first = next((node.get('versions') or {} for node in nodes.values() if node.get('versions')), {})
    hcas = len(first.get('hca_firmware') or {}) if isinstance(first.get('hca_firmware'), dict) else None
    perftest = doc.get('perftest') or {}
    links = (doc.get('fabric') or {}).get('links') or []
    lines = ['- Nodes: %d (`%s`)' % (len(nodes), _code(hostlist(nodes)))]
    if majority.get('gpu_model') or first.get('gpu_count'):
        lines.append('- GPUs per node: %s x %s' % (_md(first.get('gpu_count', '?')), _md(majority.get('gpu_model', '?'))))
    if hcas:
        lines.append('- HCAs per node: %d' % hcas)
    if links:
        lines.append('- Fabric links seen: %d' % len(links))
    if perftest.get('pairs'):
        lines.append('- perftest: %d pair results in %d rounds' % (len(perftest['pairs']), len(perftest.get('rounds') or [])))
    return lines


def _node_inventory_markdown(doc):
    """Per node: system, GPU serials and VBIOS, HCA PSID and firmware, Slurm; odd values marked (every node up to 64,
    else the odd ones)."""
    table = node_inventory(doc)
    if not table['rows']:
        return []
    out = ['### Per-node inventory', '',
           '%d of %d nodes reported; %d with a value other than the fleet\'s (**bold**, marked !).%s' % (
               table['reported'], table['total'], table['odd'], '' if table['shown_all'] else ' Only those are listed.'),
           '', '| %s |' % ' | '.join(table['columns']), '|%s' % ('---|' * len(table['columns']))]
    for row in table['rows']:
        out.append('| %s |' % ' | '.join('**! %s**' % _md(cell['text']) if cell['odd'] else _md(cell['text'])
                                         for cell in row['cells']))
    return out + ['']


def summary_markdown(doc, comparison=None, cover=None):
    run = doc.get('run') or {}
    summary = doc.get('summary') or {}
    out = ['# Acceptance test report: %s' % _md(report_title(doc, cover)), '']
    out.append('**Verdict: %s** (%s of %s nodes passed, %s failed, %s drained%s)' % (
        summary.get('verdict', '?'), summary.get('passed', '?'), summary.get('nodes', '?'), summary.get('failed', '?'),
        summary.get('drained', '?'), '; %s cluster-level failures, for which no node is drained' % summary['cluster_failed']
        if summary.get('cluster_failed') else ''))
    out += ['', '| | |', '|---|---|'] + ['| %s | %s |' % (label, _md(value)) for label, value in cover_rows(doc, cover)] + ['']
    out += ['## Cluster and hardware inventory', ''] + _inventory_lines(doc) + [''] + _node_inventory_markdown(doc)
    matrix = version_matrix(doc)
    out += ['## Software and firmware versions', '', '| component | fleet value | nodes | odd ones out |', '|---|---|---|---|']
    for component in matrix['components']:
        others = '; '.join('%s: `%s`' % (_md(value['value']), _code(value['hostlist'])) for value in component['values'][1:]) or 'none'
        out.append('| %s | %s | %d of %d | %s |' % (
            _md(component['label']), _md(component['majority']), component['count'], component['reported'], others))
    out += ['', '## Test plan', '', '| area | tools | parameters | criteria (check ids) |', '|---|---|---|---|']
    for row in test_plan(doc):
        out.append('| %s | %s | %s | %s |' % (_md(row['area']), _md(row['tools']), _md(', '.join(row['parameters']) or '-'),
                                              _md(', '.join(row['checks']) or '-')))
    out += ['', '### Acceptance criteria', '',
            'Every check of the run with its threshold in this run, the default and where the default comes from.', '',
            '| check | criterion | threshold (this run) | default | source |', '|---|---|---|---|---|']
    for row in criteria(doc):
        cells = (_code(row['check']), _ours(row['what']), _md(row['threshold']), _ours(row['default']), _ours(row['source']))
        out.append('| `%s` | %s | %s | %s | %s |' % cells)
    out += [''] + _coverage_markdown(doc)
    out += ['', '## Results', '',
            'Baseline is the acceptance threshold; deviation is the median (and the worst node) against it.', '',
            '| test | what | baseline | measured | deviation | passed |', '|---|---|---|---|---|---|']
    for row in results_table(doc):
        out.append('| `%s` | %s | %s | %s | %s | %d of %d |' % (
            _code(row['check']), _md(row['what']), _md(_baseline_text(row)), _md(_measured_text(row)), _md(_deviation_text(row)),
            row['passed'], row['total']))
    failures = failing_checks(doc)
    out += [''] + _problems_markdown(physical_problems(failures))
    out += ['', '## Failed items and actions', '']
    if not failures:
        out.append('None.')
    else:
        out += ['| node | check | subject | measured | threshold | action |', '|---|---|---|---|---|---|']
        for row in failures:
            out.append('| %s | `%s` | %s | %s | %s | %s |' % (
                _md(row['node']), _code(row['check']), _md(row['subject']), _md(fmt(row['measured'], row['unit'])),
                _md(fmt(row['threshold'], row['unit'])), _md(row['action'])))
    if comparison is not None:
        out += [''] + _comparison_markdown(comparison)
    out += ['', '## Sign-off', '',
            'The results above were measured on the nodes listed, with the tools and parameters of the test plan.', '',
            '| role | name | signature | date |', '|---|---|---|---|',
            '| Delivery engineer | | | |', '| Customer representative | | | |', '']
    return '\n'.join(out)


def _problems_markdown(problems):
    """One entry per physical problem: the end at fault, the other end (neutral), the checks it failed, the action."""
    counts = problem_counts(problems)
    out = ['## Problems', '']
    if not problems:
        return out + ['None: every check passed.']
    out += ['%d problems on %d nodes (or the fleet), %d failing checks in all.' % (
        counts['problems'], counts['nodes'], counts['checks']), '']
    for number, problem in enumerate(problems, 1):
        out.append('%d. **%s**' % (number, _md(problem['title'])))
        out.append('   - at fault: %s%s' % (_md(problem['blamed']), '; other end: %s' % _md(', '.join(problem['ends']))
                                            if problem['ends'] else ''))
        failed = ['`%s` %s %s' % (_code(row['check']), _md(row['subject']), _md(fmt(row['measured'], row['unit'])))
                  for row in problem['rows']]
        out.append('   - failed: %s' % '; '.join(failed))
        out.append('   - next: %s' % _md(problem['action']))
    return out


def _coverage_markdown(doc):
    """Every planned check with how many nodes passed, failed, skipped it or were not tested, and why."""
    states = check_states(doc)
    out = ['### Coverage', '', 'Every check the run made, on every node: passed, failed, skipped (with the reason the '
           'check gave) or not tested (the node ran jobs or did not answer).', '',
           '| check | passed | failed | skipped | not tested | why |', '|---|---|---|---|---|---|']
    for row in states['checks']:
        counts = row['counts']
        why = '; '.join('%s on `%s`: %s' % (state, _code(hostlist(members)), _md(reason))
                        for state, reason, members in row['reasons'])
        cells = (_code(row['check']), counts['passed'], counts['failed'], counts['skipped'], counts['not tested'], why or '-')
        out.append('| `%s` | %d | %d | %d | %d | %s |' % cells)
    if states['not_run']:
        out += ['', 'Areas not run in this run: %s.' % _md(', '.join(states['not_run']))]
    return out


def _comparison_markdown(comparison):
    before, after = comparison['before'], comparison['after']
    out = ['## Comparison with the run of %s' % _md(before.get('started') or 'an earlier run'), '',
           'Verdict %s -> %s; figures listed when they moved by more than %s.' % (
               (before.get('summary') or {}).get('verdict', '?'), (after.get('summary') or {}).get('verdict', '?'),
               fmt_pct(comparison['threshold'], signed=False)), '']
    if comparison['nodes']:
        out += ['| node | before | after |', '|---|---|---|']
        for row in comparison['nodes']:
            out.append('| %s | %s%s | %s%s |' % (_md(row['node']), _md(row['before']), ' (drained)' if row['drained_before'] else '',
                                                 _md(row['after']), ' (drained)' if row['drained_after'] else ''))
    else:
        out.append('No node changed state.')
    for title, key in (('Newly failing', 'broken'), ('Fixed', 'fixed')):
        if comparison[key]:
            items = ['%s `%s` %s' % (_md(item['node']), _code(item['check']), _md(item['subject'])) for item in comparison[key][:50]]
            out += ['', '%s: %s' % (title, '; '.join(items))]
    if comparison['moved']:
        out += ['', '| node | check | subject | before | after | change |', '|---|---|---|---|---|---|']
        for item in comparison['moved'][:MOVED_ROWS]:
            out.append('| %s | `%s` | %s | %s | %s | %s |' % (
                _md(item['node']), _code(item['check']), _md(item['subject']), fmt(item['before'], item['unit']),
                fmt(item['after'], item['unit']), fmt_pct(item['change']) if item['change'] is not None else 'from 0'))
    return out
