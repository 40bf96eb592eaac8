# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""report.html: the acceptance report as one self-contained HTML page (inline CSS and SVG, no script).

Pure functions only: no I/O.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils import svg
from ansible_collections.aicluster.infra.plugins.module_utils.report._text import fmt, fmt_pct, is_number, sort_nodes
from ansible_collections.aicluster.infra.plugins.module_utils.report.compare import MOVED_ROWS
from ansible_collections.aicluster.infra.plugins.module_utils.report.figures import (
    cover_rows, failing_checks, gpu_health, link_table, nccl_chart, report_title, version_matrix)
from ansible_collections.aicluster.infra.plugins.module_utils.report.perftest import (
    hca_bars, heatmap_matrix, perftest_parameters, perftest_rails, perftest_tests)


# Tables and charts with one row per node list every node up to this many, else only the bad ones.
FULL_ROWS = 64
FAILURE_ROWS = 500


CSS = '''
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1f2328;margin:0;background:#fff}
main{max-width:1400px;margin:0 auto;padding:0 24px 40px}
header.verdict{padding:18px 24px;color:#fff}
header.pass{background:#1a7f37} header.fail{background:#cf222e}
header h1{margin:0;font-size:34px;letter-spacing:.04em}
header p{margin:4px 0 0;font-size:15px}
.counts{display:flex;gap:12px;margin-top:10px;flex-wrap:wrap}
.counts span{background:rgba(255,255,255,.18);border-radius:6px;padding:4px 10px;font-weight:600}
nav{padding:8px 24px;background:#f6f8fa;border-bottom:1px solid #d0d7de;font-size:13px}
nav a{margin-right:14px;color:#0969da;text-decoration:none}
h2{border-bottom:1px solid #d0d7de;padding-bottom:4px;margin-top:32px}
table{border-collapse:collapse;margin:8px 0;font-size:13px}
th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}
td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.bad td,td.bad{background:#ffebe9} td.ok{color:#1a7f37} td.none{color:#8c959f}
td.odd{background:#fff8c5;font-weight:600}
.note{color:#57606a;font-size:13px}
.grid{display:flex;flex-wrap:wrap;gap:10px 18px}
.pill{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;font-weight:600;color:#fff}
.pill.pass{background:#1a7f37} .pill.fail{background:#cf222e}
.legend span{display:inline-block;margin-right:12px;font-size:12px}
.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-1px}
code{font-size:12px}
svg{max-width:100%;height:auto}
table.signoff td{height:3.2em;min-width:12em}
table.cover{margin-top:14px} table.cover th{width:12em}
@media print{
@page{size:A4 landscape;margin:12mm}
body{font-size:11px}
nav{display:none}
main{max-width:none;padding:0}
header.verdict,.pill,tr.bad td,td.bad,td.odd{-webkit-print-color-adjust:exact;print-color-adjust:exact}
h2{break-after:avoid}
tr,svg,table.signoff{break-inside:avoid}
#signoff{break-before:page}
}
'''


def _e(text):
    return svg.escape(text)


def _table(head, rows, classes=None):
    out = ['<table><thead><tr>%s</tr></thead><tbody>' % ''.join('<th>%s</th>' % _e(cell) for cell in head)]
    for index, row in enumerate(rows):
        css = (classes or {}).get(index)
        out.append('<tr%s>%s</tr>' % (' class="%s"' % css if css else '', ''.join(row)))
    out.append('</tbody></table>')
    return '\n'.join(out)


def _td(text, css=None, raw=False):
    return '<td%s>%s</td>' % (' class="%s"' % css if css else '', text if raw else _e(text))


# A heatmap cell when no pass mark is known (a results.json without run.parameters.perftest_fraction).
NEUTRAL_BANDS = [(float('inf'), '#8c959f', 'measured (no pass mark in results.json)')]


def _heat_bands(t):
    """(upper bound, colour, legend) per band around the pass mark ``t`` (a fraction of line rate); one
    neutral band when ``t`` is None."""
    if t is None:
        return NEUTRAL_BANDS
    high = t + (1 - t) / 2
    bands = [(0.5, '#82071e', '< 50%'), (0.75, '#cf222e', '50-75%'), (t, '#fb8f44', '75%%-%d%%' % round(100 * t)),
             (high, '#8ddb8c', '%d%%-%d%%' % (round(100 * t), round(100 * high))), (float('inf'), '#1a7f37', '>= %d%%' % round(100 * high))]
    kept, last = [], 0.0
    for upper, colour, label in bands:
        if upper > last:
            kept.append((upper, colour, label))
            last = upper
    return kept


def _band(fraction, bands):
    for upper, colour, _label in bands:
        if fraction < upper:
            return colour
    return bands[-1][1]


def _html_heatmap(doc, rail, test):
    matrix = heatmap_matrix(doc, rail, test)
    t = matrix['threshold_fraction']
    bands = _heat_bands(t)
    side = len(matrix['labels'])
    cell = max(8, min(28, 360 // max(side, 1)))
    tip_all = len(matrix['cells']) <= 256
    cells = {}
    for key, value in matrix['cells'].items():
        pair = value['worst']
        bad = t is not None and value['fraction'] < t
        tip = None
        if bad or tip_all:
            what = '%s %s -> %s %s: %s %s (%d%% of %s)' % (
                pair['client'], pair.get('hca'), pair['server'], pair.get('peer_hca', pair.get('hca')),
                fmt(pair['measured']), pair.get('unit') or '', round(100 * value['fraction']),
                'twice the line rate' if matrix['bidirectional'] else 'line rate')
            tip = what if matrix['block'] == 1 else '%s x %s: %d pairs, worst %s' % (
                matrix['labels'][key[0]], matrix['labels'][key[1]], value['pairs'], what)
        cells[key] = (_band(value['fraction'], bands), tip)
    title = 'rail %s' % rail + ('' if matrix['block'] == 1 else ' (blocks of %d nodes)' % matrix['block'])
    return svg.heatmap(matrix['labels'], matrix['labels'], cells, title, cell=cell), bands


def _section_failures(doc):
    rows = failing_checks(doc)
    out = ['<h2 id="failures">Failing checks (%d)</h2>' % len(rows)]
    if not rows:
        return out + ['<p>Every check passed.</p>']
    body = []
    for row in rows[:FAILURE_ROWS]:
        body.append([_td(row['node']), _td('<code>%s</code>' % _e(row['check']), raw=True), _td(row['subject']),
                     _td(fmt(row['measured'], row['unit']), 'num'), _td(fmt(row['threshold'], row['unit']), 'num'),
                     _td(fmt_pct(row['deviation']), 'num'),
                     _td('<b>%s</b><br><span class="note">%s</span>' % (_e(row['action']), _e(row['message'])), raw=True)])
    out.append(_table(['node', 'check', 'subject', 'measured', 'threshold', 'deviation', 'what to do next'], body))
    if len(rows) > FAILURE_ROWS:
        out.append('<p class="note">%d more failing results are in junit.xml and summary.md.</p>' % (len(rows) - FAILURE_ROWS))
    return out


def _section_nccl(doc):
    chart = nccl_chart(doc)
    out = ['<h2 id="nccl">NCCL all_reduce bus bandwidth per node</h2>']
    if not chart['bars']:
        return out + ['<p class="note">No NCCL results in this run.</p>']
    bars = [{'label': entry['node'], 'value': entry['busbw'], 'colour': '#54aeff' if entry['passed'] else '#cf222e'}
            for entry in chart['bars']]
    lines = [{'value': chart['threshold'], 'label': 'threshold %s' % fmt(chart['threshold']), 'colour': '#cf222e', 'dash': '6 3'},
             {'value': chart['median'], 'label': 'median %s' % fmt(chart['median']), 'colour': '#24292f'}]
    if chart['slow_floor'] is not None:
        lines.append({'value': chart['slow_floor'], 'label': 'slow below %s' % fmt(chart['slow_floor']),
                      'colour': '#bf8700', 'dash': '2 3'})
    width = 900 if len(bars) <= 48 else min(1400, 220 + 2 * len(bars))
    out.append(svg.bar_chart(bars, 'single-node all_reduce busbw (GB/s); red: a failed NCCL check', lines=lines,
                             unit='GB/s', width=width))
    multi = chart['multi_node']
    if multi and is_number(multi.get('busbw')):
        out.append('<p>Multi-node run on %d nodes: <b>%s GB/s</b>, threshold %s GB/s <span class="pill %s">%s</span></p>' % (
            len(multi.get('nodes') or []), fmt(multi['busbw']), fmt(multi.get('threshold')),
            'pass' if multi.get('passed') else 'fail', 'PASS' if multi.get('passed') else 'FAIL'))
    return out


def _section_perftest(doc):
    out = ['<h2 id="perftest">Pairwise RDMA bandwidth (perftest)</h2>']
    tests = perftest_tests(doc)
    if not tests:
        return out + ['<p class="note">No perftest results in this run.</p>']
    for test in tests:
        if test.endswith('_lat'):
            continue
        rails = perftest_rails(doc, test)
        both = perftest_parameters(doc)[1]
        out.append('<h3>ib_%s%s: fraction of %s per rail</h3>' % (
            _e(test), ' (both directions)' if both else '', 'twice the line rate' if both else 'line rate'))
        legend = None
        maps = []
        for rail in rails:
            picture, legend = _html_heatmap(doc, rail, test)
            maps.append('<div>%s</div>' % picture)
        if legend:
            out.append('<p class="legend">%s<span><i style="background:#f6f8fa;border:1px solid #d0d7de"></i>not measured</span></p>' % ''.join(
                '<span><i style="background:%s"></i>%s</span>' % (colour, _e(label)) for _upper, colour, label in legend))
        out.append('<div class="grid">%s</div>' % '\n'.join(maps))
        bars = hca_bars(doc, test)
        caption = 'median of each HCA\'s pairs (%s)' % bars['unit']
        if len(bars['bars']) < bars['total']:
            caption += ': the %d lowest of %d HCAs' % (len(bars['bars']), bars['total'])
        out.append('<h3>ib_%s per HCA</h3>' % _e(test))
        out.append(svg.bar_chart(
            [{'label': '%s %s' % (entry['node'], entry['hca']), 'value': entry['measured'],
              'colour': '#54aeff' if entry['passed'] else '#cf222e',
              'tip': '%s %s: median %s %s of %d pairs, worst %s (with %s)' % (
                  entry['node'], entry['hca'], fmt(entry['measured']), bars['unit'], entry['pairs'], fmt(entry['worst']), entry['partner'])}
             for entry in bars['bars']],
            caption, unit=bars['unit'], width=900 if len(bars['bars']) <= 48 else 1200,
            lines=[{'value': bars['threshold'], 'label': 'threshold %s' % fmt(bars['threshold']), 'colour': '#cf222e', 'dash': '6 3'},
                   {'value': bars['line_rate'], 'label': 'line rate %s' % fmt(bars['line_rate']), 'colour': '#57606a', 'dash': '2 3'}]))
    return out


def _section_fabric(doc):
    table = link_table(doc)
    out = ['<h2 id="fabric">Fabric links</h2>',
           '<p>%d links, <b>%d degraded or down</b>%s.%s</p>' % (
               table['total'], table['bad'],
               ' (%d unused switch ports not counted)' % table['unused'] if table['unused'] else '',
               '' if table['shown_all'] else ' Only the degraded and down links are listed.')]
    if table['counts']:
        out.append('<p class="note">By width / lane speed (Gb/s) / state: %s</p>' % _e('; '.join(
            '%s %s %s: %d' % (key[0], key[1], key[2], count) for key, count in table['counts'])))

    def link_table_html(rows):
        body, classes = [], {}
        for index, row in enumerate(rows):
            if row['bad']:
                classes[index] = 'bad'
            body.append([_td('%s port %s' % (row.get('node_name'), row.get('port'))), _td(fmt(row.get('width'))),
                         _td(fmt(row.get('lane_speed_gbps')), 'num'), _td(fmt(row.get('state'))),
                         _td(fmt(row.get('physical_state'))),
                         _td('%s port %s' % (row.get('peer_name'), row.get('peer_port')) if row.get('peer_name') else '-'),
                         _td(fmt(row.get('could_be')))])
        return _table(['port', 'width', 'lane Gb/s', 'state', 'physical', 'peer', 'could be'], body, classes)

    bad_rows = [row for row in table['rows'] if row['bad']]
    if bad_rows:
        out.append(link_table_html(bad_rows))
    if table['shown_all'] and len(bad_rows) < len(table['rows']):
        out.append('<details><summary>all %d links</summary>\n%s\n</details>' % (len(table['rows']), link_table_html(table['rows'])))
    return out


def _section_versions(doc):
    matrix = version_matrix(doc)
    out = ['<h2 id="versions">Software and firmware versions</h2>']
    if not matrix['components']:
        return out + ['<p class="note">No versions reported.</p>']
    body, classes = [], {}
    for index, component in enumerate(matrix['components']):
        if component['odd']:
            classes[index] = 'bad'
        others = '<br>'.join('%s: <code>%s</code>' % (_e(value['value']), _e(value['hostlist'])) for value in component['values'][1:])
        body.append([_td(component['label']), _td(component['majority']),
                     _td('%d of %d' % (component['count'], component['reported']), 'num'), _td(others or 'none', raw=True)])
    out.append(_table(['component', 'fleet value', 'nodes', 'odd ones out'], body, classes))
    names = sort_nodes(matrix['nodes']) if len(matrix['nodes']) <= FULL_ROWS else matrix['odd_nodes']
    if names:
        if len(matrix['nodes']) > FULL_ROWS:
            out.append('<p class="note">Nodes with an odd value (%d of %d):</p>' % (len(names), len(matrix['nodes'])))
        majority = dict((component['key'], component['majority']) for component in matrix['components'])
        keys = [component['key'] for component in matrix['components']]
        rows = []
        for name in names:
            cells = [_td(name)]
            for key in keys:
                value = matrix['nodes'][name].get(key)
                cells.append(_td(fmt(value), 'odd' if value is not None and value != majority[key] else None))
            rows.append(cells)
        out.append(_table(['node'] + [component['label'] for component in matrix['components']], rows))
    return out


def _section_gpu(doc):
    health = gpu_health(doc)
    out = ['<h2 id="gpu">GPU health per node</h2>']
    rows = health['rows']
    if not any(cell['state'] != 'none' for row in rows for cell in row['cells']):
        return out + ['<p class="note">No GPU results in this run.</p>']
    if len(rows) > FULL_ROWS:
        healthy = sum(1 for row in rows if not row['bad'])
        rows = [row for row in rows if row['bad']]
        if not rows:
            return out + ['<p>All %d nodes healthy in every column.</p>' % healthy]
        out.append('<p>%d nodes healthy in every column; the %d others:</p>' % (healthy, len(rows)))
    body = [[_td(row['node'])] + [_td(cell['text'], 'bad' if cell['state'] == 'fail' else cell['state']) for cell in row['cells']]
            for row in rows]
    out.append(_table(['node'] + health['columns'], body))
    return out


def _section_comparison(comparison):
    before, after = comparison['before'], comparison['after']
    out = ['<h2 id="comparison">Compared with the run of %s</h2>' % _e(before.get('started') or 'an earlier run'),
           '<p>Verdict %s &rarr; %s. Figures are listed when they moved by more than %s.</p>' % (
               _e((before.get('summary') or {}).get('verdict', '?')), _e((after.get('summary') or {}).get('verdict', '?')),
               _e(fmt_pct(comparison['threshold'], signed=False)))]
    if comparison['nodes']:
        body, classes = [], {}
        for index, row in enumerate(comparison['nodes']):
            if row['after'] == 'fail':
                classes[index] = 'bad'
            body.append([_td(row['node']), _td(row['before'] + (' (drained)' if row['drained_before'] else '')),
                         _td(row['after'] + (' (drained)' if row['drained_after'] else ''))])
        out.append(_table(['node', 'before', 'after'], body, classes))
    else:
        out.append('<p>No node changed state.</p>')
    for title, key in (('Newly failing', 'broken'), ('Fixed', 'fixed')):
        if comparison[key]:
            out.append('<p><b>%s:</b> %s</p>' % (title, _e('; '.join(
                '%s %s %s' % (item['node'], item['check'], item['subject']) for item in comparison[key][:50]))))
    if comparison['moved']:
        body = [[_td(item['node']), _td('<code>%s</code>' % _e(item['check']), raw=True), _td(item['subject']),
                 _td(fmt(item['before'], item['unit']), 'num'), _td(fmt(item['after'], item['unit']), 'num'),
                 _td(fmt_pct(item['change']) if item['change'] is not None else 'from 0', 'num')]
                for item in comparison['moved'][:MOVED_ROWS]]
        out.append(_table(['node', 'check', 'subject', 'before', 'after', 'change'], body))
        if len(comparison['moved']) > MOVED_ROWS:
            out.append('<p class="note">%d more figures moved.</p>' % (len(comparison['moved']) - MOVED_ROWS))
    return out


def _section_signoff(doc, cover):
    """The block the delivery engineer and the customer sign, on a page of its own when printed."""
    run = doc.get('run') or {}
    summary = doc.get('summary') or {}
    return ['<h2 id="signoff">Sign-off</h2>',
            '<p>Verdict <b>%s</b> for %s nodes (%s passed, %s failed), measured from %s to %s on %s with the tools and '
            'parameters of the test plan (results.json, aicluster.infra %s).</p>' % tuple(_e(value) for value in (
                summary.get('verdict', '?'), summary.get('nodes', '?'), summary.get('passed', '?'),
                summary.get('failed', '?'), run.get('started', '?'), run.get('finished', '?'),
                report_title(doc, cover), run.get('collection_version', '?'))),
            _table(['role', 'name', 'signature', 'date'],
                   [[_td('Delivery engineer'), _td(''), _td(''), _td('')],
                    [_td('Customer representative'), _td(''), _td(''), _td('')]]).replace('<table>', '<table class="signoff">', 1)]


def html_report(doc, comparison=None, cover=None):
    run = doc.get('run') or {}
    summary = doc.get('summary') or {}
    verdict = str(summary.get('verdict', 'FAIL'))
    title = report_title(doc, cover)
    sections = [('failures', 'Failing checks'), ('nccl', 'NCCL'), ('perftest', 'perftest'), ('fabric', 'Fabric links'),
                ('versions', 'Versions'), ('gpu', 'GPU health'), ('signoff', 'Sign-off')]
    if comparison is not None:
        sections.insert(0, ('comparison', 'Comparison'))
    out = ['<!DOCTYPE html>', '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           '<title>%s: %s acceptance report</title>' % (_e(verdict), _e(title)),
           '<style>%s</style></head><body>' % CSS,
           '<header class="verdict %s"><h1>%s</h1>' % ('pass' if verdict == 'PASS' else 'fail', _e(verdict)),
           '<p>%s &middot; aicluster.infra %s &middot; run %s to %s &middot; gate mode %s</p>' % (
               _e(title), _e(run.get('collection_version', '?')), _e(run.get('started', '?')),
               _e(run.get('finished', '?')), _e(run.get('mode', '?'))),
           '<div class="counts"><span>%s nodes</span><span>%s passed</span><span>%s failed</span><span>%s drained</span>'
           '<span>%s resumed</span>%s</div></header>' % (tuple(
               _e(summary.get(key, '?')) for key in ('nodes', 'passed', 'failed', 'drained', 'resumed')) + (
               '<span>%s cluster-level failures (no node drained)</span>' % _e(summary['cluster_failed'])
               if summary.get('cluster_failed') else '',)),
           '<nav>%s</nav><main>' % ''.join('<a href="#%s">%s</a>' % (anchor, title) for anchor, title in sections)]
    out.append('<table class="cover">%s</table>' % ''.join(
        '<tr><th>%s</th><td>%s</td></tr>' % (_e(label), _e(value)) for label, value in cover_rows(doc, cover)))
    if comparison is not None:
        out += _section_comparison(comparison)
    out += _section_failures(doc)
    out += _section_nccl(doc)
    out += _section_perftest(doc)
    out += _section_fabric(doc)
    out += _section_versions(doc)
    out += _section_gpu(doc)
    out += _section_signoff(doc, cover)
    out.append('<p class="note">Written by aicluster.infra.acceptance_report from results.json (%s).</p>' % _e(doc.get('schema', '')))
    out.append('</main></body></html>')
    return '\n'.join(out) + '\n'
