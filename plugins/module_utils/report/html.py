# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""report.html: the acceptance report as one self-contained HTML page (inline CSS and SVG, no script).

Two steps. ``html_context(doc, comparison, cover)`` computes everything the page
shows: plain data (text, numbers, lists, dicts) from the figures modules, and
the charts as SVG built by svg.py. ``render_html(template, context)`` lays it
out with a Jinja2 template: the report role's
``roles/report/templates/report.html.j2`` (``SHIPPED_TEMPLATE``) or the
user's own. ``html_report`` does both.

The template is rendered here, by Jinja2 itself, not by Ansible's template
module: autoescape is on, and every ``{{ value }}`` is cleaned of terminal
sequences and control characters and escaped as svg.py escapes (``_finalize``),
so tool text is shown, never run. The SVG charts are already escaped and go in
as markup.

Pure functions only: no I/O (the module reads the template and passes its text).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import sys

try:
    import jinja2
    from markupsafe import Markup
except ImportError as _exc:  # the module fails with this when html is asked for (jinja2 comes with ansible-core)
    jinja2 = None
    Markup = None
    JINJA2_IMPORT_ERROR = _exc
else:
    JINJA2_IMPORT_ERROR = None

from ansible_collections.aicluster.infra.plugins.module_utils import svg
from ansible_collections.aicluster.infra.plugins.module_utils.report._text import fmt, fmt_pct, hostlist, is_number, sort_nodes
from ansible_collections.aicluster.infra.plugins.module_utils.report.compare import MOVED_ROWS
from ansible_collections.aicluster.infra.plugins.module_utils.report.evidence import evidence_appendix
from ansible_collections.aicluster.infra.plugins.module_utils.report.figures import (
    cover_rows, criteria, failing_checks, gpu_health, link_table, nccl_chart, nccl_curves, report_title, test_plan,
    version_matrix)
from ansible_collections.aicluster.infra.plugins.module_utils.report.inventory import node_inventory
from ansible_collections.aicluster.infra.plugins.module_utils.report.perftest import (
    hca_bars, heatmap_matrix, perftest_parameters, perftest_rails, perftest_tests)
from ansible_collections.aicluster.infra.plugins.module_utils.report.problems import (
    check_states, physical_problems, problem_counts)


# The report role's template, relative to the collection's root.
SHIPPED_TEMPLATE = 'roles/report/templates/report.html.j2'

# Tables and charts with one row per node list every node up to this many, else only the bad ones.
FULL_ROWS = 64
FAILURE_ROWS = 500
# "Newly failing" and "Fixed" of the comparison name at most this many checks.
CHANGED_CHECKS = 50


class HtmlTemplateError(Exception):
    """report.html could not be laid out: no template, Jinja2 missing, or an error in the template."""


def _svg(text):
    """An SVG chart from svg.py (escaped there) as markup the template writes as it is."""
    return Markup(text) if Markup is not None else text


# The palette: Okabe and Ito's colour-blind-safe set (blue for pass, vermillion for fail, orange and sky blue
# between), and grey for neutral. Colour is never the only cue: failing bars carry a mark, failing heatmap cells a
# cross, states their word and a symbol.
PASS_COLOUR = '#0072b2'
FAIL_COLOUR = '#d55e00'
NEUTRAL_COLOUR = '#8c959f'
PASS_MARK = u'\u2713'   # check mark
FAIL_MARK = u'\u2717'   # ballot x
# A heatmap cell when no pass mark is known (a results.json without run.parameters.perftest_fraction).
NEUTRAL_BANDS = [(float('inf'), NEUTRAL_COLOUR, 'measured (no pass mark in results.json)')]


def _heat_bands(t):
    """(upper bound, colour, legend) per band around the pass mark ``t`` (a fraction of line rate); one
    neutral band when ``t`` is None."""
    if t is None:
        return NEUTRAL_BANDS
    high = t + (1 - t) / 2
    bands = [(0.5, '#8f2d00', '< 50%'), (0.75, FAIL_COLOUR, '50-75%'), (t, '#e69f00', '75%%-%d%%' % round(100 * t)),
             (high, '#56b4e9', '%d%%-%d%%' % (round(100 * t), round(100 * high))),
             (float('inf'), PASS_COLOUR, '>= %d%%' % round(100 * high))]
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
        # the gate's verdict first: a failed pair is never drawn in a passing band, whatever its fraction
        failed = value.get('passed') is False
        bad = failed or (t is not None and value['fraction'] < t)
        tip = None
        if bad or tip_all:
            what = '%s %s -> %s %s: %s %s (%d%% of %s)' % (
                pair['client'], pair.get('hca'), pair['server'], pair.get('peer_hca', pair.get('hca')),
                fmt(pair['measured']), pair.get('unit') or '', round(100 * value['fraction']),
                'twice the line rate' if matrix['bidirectional'] else 'line rate')
            tip = what if matrix['block'] == 1 else '%s x %s: %d pairs, worst %s' % (
                matrix['labels'][key[0]], matrix['labels'][key[1]], value['pairs'], what)
        fraction = min(value['fraction'], t * 0.999) if failed and t is not None else value['fraction']
        cells[key] = (_band(fraction, bands), tip, bad)
    title = 'rail %s' % rail + ('' if matrix['block'] == 1 else ' (blocks of %d nodes)' % matrix['block'])
    return svg.heatmap(matrix['labels'], matrix['labels'], cells, title, cell=cell), bands


def _failures(doc):
    rows = failing_checks(doc)
    return {
        'count': len(rows),
        'rows': [{'node': row['node'], 'check': row['check'], 'subject': row['subject'],
                  'measured': fmt(row['measured'], row['unit']), 'threshold': fmt(row['threshold'], row['unit']),
                  'deviation': fmt_pct(row['deviation']), 'action': row['action'], 'message': row['message']}
                 for row in rows[:FAILURE_ROWS]],
        'more': max(0, len(rows) - FAILURE_ROWS),
    }


def _nccl(doc):
    chart = nccl_chart(doc)
    if not chart['bars']:
        return {'chart': None, 'multi_node': None}
    bars = [{'label': entry['node'], 'value': entry['busbw'], 'colour': PASS_COLOUR if entry['passed'] else FAIL_COLOUR,
             'mark': None if entry['passed'] else FAIL_MARK}
            for entry in chart['bars']]
    lines = [{'value': chart['threshold'], 'label': 'threshold %s' % fmt(chart['threshold']), 'colour': FAIL_COLOUR, 'dash': '6 3'},
             {'value': chart['median'], 'label': 'median %s' % fmt(chart['median']), 'colour': '#24292f'}]
    if chart['slow_floor'] is not None:
        lines.append({'value': chart['slow_floor'], 'label': 'slow below %s' % fmt(chart['slow_floor']),
                      'colour': '#e69f00', 'dash': '2 3'})
    width = 900 if len(bars) <= 48 else min(1400, 220 + 2 * len(bars))
    picture = svg.bar_chart(bars, u'single-node all_reduce busbw (GB/s); %s: a failed NCCL check' % FAIL_MARK, lines=lines,
                            unit='GB/s', width=width)
    multi = chart['multi_node']
    if not (multi and is_number(multi.get('busbw'))):
        multi = None
    else:
        multi = {'node_count': len(multi.get('nodes') or []), 'busbw': fmt(multi['busbw']),
                 'threshold': fmt(multi.get('threshold')), 'passed': bool(multi.get('passed'))}
    return {'chart': _svg(picture), 'multi_node': multi, 'curves': _nccl_curves(doc, chart)}


def _nccl_curves(doc, chart):
    """busbw against message size: the fleet median and the worst node (SVG), None without nccl-tests rows."""
    curves = nccl_curves(doc)
    if curves is None:
        return None
    series = [{'label': 'fleet median (%d nodes)' % curves['nodes'], 'colour': PASS_COLOUR, 'points': curves['median']},
              {'label': 'worst: %s' % curves['worst'], 'colour': FAIL_COLOUR, 'dash': '5 3', 'points': curves['worst_points']}]
    lines = [{'value': chart['threshold'], 'label': 'threshold %s' % fmt(chart['threshold']), 'colour': FAIL_COLOUR,
              'dash': '6 3'}]
    return _svg(svg.line_chart(series, curves['labels'], 'all_reduce busbw (GB/s) by message size (bytes)', unit='GB/s',
                               lines=lines))


def _perftest(doc):
    tests = perftest_tests(doc)
    both = perftest_parameters(doc)[1]
    shown = []
    for test in tests:
        if test.endswith('_lat'):
            continue
        legend, heatmaps = [], []
        for rail in perftest_rails(doc, test):
            picture, bands = _html_heatmap(doc, rail, test)
            heatmaps.append(_svg(picture))
            legend = [{'colour': colour, 'label': label} for _upper, colour, label in bands]
        bars = hca_bars(doc, test)
        caption = 'median of each HCA\'s pairs (%s)' % bars['unit']
        if len(bars['bars']) < bars['total']:
            caption += ': the %d lowest of %d HCAs' % (len(bars['bars']), bars['total'])
        # a bandwidth test run in both directions measures the sum of both: its reference is twice the line rate
        doubled = both and not test.endswith('_lat') and is_number(bars['line_rate'])
        reference = {'value': bars['line_rate'] * 2 if doubled else bars['line_rate'], 'colour': '#57606a', 'dash': '2 3',
                     'label': ('twice the line rate %s' if doubled else 'line rate %s') % fmt(
                         bars['line_rate'] * 2 if doubled else bars['line_rate'])}
        chart = svg.bar_chart(
            [{'label': '%s %s' % (entry['node'], entry['hca']), 'value': entry['measured'],
              'colour': BAR_COLOURS[entry.get('state', 'pass' if entry['passed'] else 'fail')],
              'mark': FAIL_MARK if entry.get('state', 'pass' if entry['passed'] else 'fail') == 'fail' else None,
              'tip': '%s %s: median %s %s of %d pairs, worst %s (with %s)%s' % (
                  entry['node'], entry['hca'], fmt(entry['measured']), bars['unit'], entry['pairs'], fmt(entry['worst']),
                  entry['partner'], BAR_NOTES[entry.get('state', 'pass' if entry['passed'] else 'fail')])}
             for entry in bars['bars']],
            caption, unit=bars['unit'], width=900 if len(bars['bars']) <= 48 else 1200,
            lines=[{'value': bars['threshold'], 'label': 'threshold %s' % fmt(bars['threshold']), 'colour': FAIL_COLOUR, 'dash': '6 3'},
                   reference])
        shown.append({'name': test, 'both_directions': both, 'against': 'twice the line rate' if both else 'line rate',
                      'legend': legend, 'heatmaps': heatmaps, 'hca_chart': _svg(chart)})
    return {'ran': bool(tests), 'tests': shown}


# Per-HCA bars: the end the gate failed, its cleared partners (low only with it: neutral), the rest.
BAR_COLOURS = {'fail': FAIL_COLOUR, 'partner': NEUTRAL_COLOUR, 'pass': PASS_COLOUR}
BAR_NOTES = {'fail': u'; %s the end at fault' % FAIL_MARK, 'partner': '; cleared by the gate: low only with a failing partner',
             'pass': ''}


def _link_row(row):
    return {'node_name': row.get('node_name'), 'port': row.get('port'), 'width': fmt(row.get('width')),
            'lane_speed': fmt(row.get('lane_speed_gbps')), 'state': fmt(row.get('state')),
            'physical_state': fmt(row.get('physical_state')), 'peer_name': row.get('peer_name'),
            'peer_port': row.get('peer_port'), 'could_be': fmt(row.get('could_be')), 'bad': bool(row['bad'])}


def _fabric(doc):
    table = link_table(doc)
    rows = [_link_row(row) for row in table['rows']]
    bad_rows = [row for row in rows if row['bad']]
    return {
        'total': table['total'], 'bad': table['bad'], 'unused': table['unused'], 'shown_all': table['shown_all'],
        'counts': [{'width': key[0], 'lane_speed': key[1], 'state': key[2], 'links': count} for key, count in table['counts']],
        'bad_rows': bad_rows,
        'all_rows': rows if table['shown_all'] and len(bad_rows) < len(rows) else [],
    }


def _versions(doc):
    matrix = version_matrix(doc)
    components = [{'key': component['key'], 'label': component['label'], 'majority': component['majority'],
                   'count': component['count'], 'reported': component['reported'], 'odd_nodes': component['odd'],
                   'others': [{'value': value['value'], 'hostlist': value['hostlist'], 'nodes': value['nodes']}
                              for value in component['values'][1:]]}
                  for component in matrix['components']]
    every_node = len(matrix['nodes']) <= FULL_ROWS
    rows = []
    if components:
        names = sort_nodes(matrix['nodes']) if every_node else matrix['odd_nodes']
        for name in names:
            cells = []
            for component in components:
                value = matrix['nodes'][name].get(component['key'])
                cells.append({'text': fmt(value), 'odd': value is not None and value != component['majority']})
            rows.append({'node': name, 'cells': cells})
    return {'components': components, 'node_count': len(matrix['nodes']), 'every_node': every_node, 'rows': rows}


def _inventory(doc):
    table = node_inventory(doc, FULL_ROWS)
    return {'columns': list(table['columns']), 'total': table['total'], 'reported': table['reported'], 'odd': table['odd'],
            'shown_all': table['shown_all'],
            'rows': [{'node': row['node'], 'odd': row['odd'], 'cells': [dict(cell) for cell in row['cells']]}
                     for row in table['rows']]}


def _gpu(doc):
    health = gpu_health(doc)
    rows = health['rows']
    ran = any(cell['state'] != 'none' for row in rows for cell in row['cells'])
    every_node = len(rows) <= FULL_ROWS
    healthy = sum(1 for row in rows if not row['bad'])
    if not every_node:
        rows = [row for row in rows if row['bad']]
    return {'ran': ran, 'columns': health['columns'], 'every_node': every_node, 'healthy': healthy,
            'rows': [{'node': row['node'], 'cells': [dict(cell) for cell in row['cells']]} for row in rows] if ran else []}


def _problem_entry(problem):
    rows = [{'node': row['node'], 'check': row['check'], 'subject': row['subject'],
             'measured': fmt(row['measured'], row['unit']), 'threshold': fmt(row['threshold'], row['unit'])}
            for row in problem['rows']]
    return {'kind': problem['kind'], 'title': problem['title'], 'blamed': problem['blamed'], 'ends': list(problem['ends']),
            'action': problem['action'], 'rows': rows}


def _problems(doc):
    found = physical_problems(failing_checks(doc))
    return {
        'counts': problem_counts(found),
        'entries': [_problem_entry(problem) for problem in found[:FAILURE_ROWS]],
        'more': max(0, len(found) - FAILURE_ROWS),
    }


def _plan(doc):
    states = check_states(doc)
    return {
        'areas': [{'area': row['area'], 'tools': row['tools'], 'parameters': ', '.join(row['parameters']) or '-',
                   'checks': ', '.join(row['checks']) or '-'} for row in test_plan(doc)],
        'criteria': [dict(row) for row in criteria(doc)],
        'coverage': [{'check': row['check'], 'passed': row['counts']['passed'], 'failed': row['counts']['failed'],
                      'skipped': row['counts']['skipped'], 'not_tested': row['counts']['not tested'],
                      'reasons': [{'state': state, 'reason': reason, 'hostlist': hostlist(members)}
                                  for state, reason, members in row['reasons']]}
                     for row in states['checks']],
        'totals': dict((state.replace(' ', '_'), count) for state, count in states['totals'].items()),
        'not_run': list(states['not_run']),
    }


def _evidence(doc):
    return [dict(entry) for entry in evidence_appendix(doc)]


def _comparison(comparison):
    if comparison is None:
        return None
    before, after = comparison['before'], comparison['after']
    return {
        'since': before.get('started') or 'an earlier run',
        'verdict_before': (before.get('summary') or {}).get('verdict', '?'),
        'verdict_after': (after.get('summary') or {}).get('verdict', '?'),
        'threshold': fmt_pct(comparison['threshold'], signed=False),
        'nodes': [dict(row) for row in comparison['nodes']],
        'broken': [dict(item) for item in comparison['broken'][:CHANGED_CHECKS]],
        'fixed': [dict(item) for item in comparison['fixed'][:CHANGED_CHECKS]],
        'moved': [{'node': item['node'], 'check': item['check'], 'subject': item['subject'],
                   'before': fmt(item['before'], item['unit']), 'after': fmt(item['after'], item['unit']),
                   'change': fmt_pct(item['change']) if item['change'] is not None else 'from 0'}
                  for item in comparison['moved'][:MOVED_ROWS]],
        'moved_more': max(0, len(comparison['moved']) - MOVED_ROWS),
    }


def html_context(doc, comparison=None, cover=None):
    """Everything report.html shows, computed from a results document (``comparison``: compare.compare()'s result or
    None; ``cover``: the cover's values). Plain data (text, numbers, booleans, None, lists, dicts) plus the charts as
    SVG markup; numbers shown in tables are already text (``fmt``). The template only lays it out, and escapes each
    value it writes. Keys:

    - ``verdict``: the run's verdict, ``'PASS'`` or ``'FAIL'``; ``title``: the cover's cluster, else the inventory's
      name; ``schema``: results.json's schema.
    - ``run``: ``started``, ``finished``, ``collection_version``, ``mode`` (the gate's); ``'?'`` when absent.
    - ``summary``: ``nodes``, ``passed``, ``failed``, ``drained``, ``resumed``, ``verdict`` (``'?'`` when absent) and
      ``cluster_failed`` (cluster-level failures, None when absent).
    - ``cover``: the cover's rows, ``[{label, value}]``, empty values left out.
    - ``comparison``: None without an earlier run, else ``since`` (the earlier run's start), ``verdict_before``,
      ``verdict_after``, ``threshold`` (text, ``'5.0%'``), ``nodes`` (``[{node, before, after, drained_before,
      drained_after}]``, states ``pass``/``fail``/``absent``), ``broken`` and ``fixed`` (``[{node, check, subject}]``,
      the first CHANGED_CHECKS), ``moved`` (``[{node, check, subject, before, after, change}]`` as text, the first
      MOVED_ROWS) and ``moved_more`` (how many more).
    - ``failures``: ``count`` (every failing result), ``rows`` (the first FAILURE_ROWS: ``node, check, subject,
      measured, threshold, deviation, action, message``) and ``more`` (rows left out).
    - ``nccl``: ``chart`` (SVG; None when the run has no NCCL results), ``multi_node`` (None, or ``node_count,
      busbw, threshold, passed``) and ``curves`` (SVG: busbw by message size, the fleet median and the worst node;
      None when results.json kept no nccl-tests rows).
    - ``perftest``: ``ran`` (the run has perftest results) and ``tests``, one per bandwidth test: ``name``
      (``write_bw``), ``both_directions``, ``against`` (``'line rate'`` or ``'twice the line rate'``), ``legend``
      (``[{colour, label}]``, the heatmaps' bands), ``heatmaps`` (SVG per rail), ``hca_chart`` (SVG).
    - ``fabric``: ``total`` (links), ``bad`` (degraded or down), ``unused`` (switch ports not counted), ``shown_all``
      (every link is listed, else only the bad ones), ``counts`` (``[{width, lane_speed, state, links}]``),
      ``bad_rows`` and ``all_rows`` (every link when there are at most figures.LINK_ROWS and some are good, else
      empty), each row ``node_name, port, width, lane_speed, state, physical_state, peer_name, peer_port, could_be,
      bad``.
    - ``versions``: ``components`` (``[{key, label, majority, count, reported, odd_nodes, others: [{value, hostlist,
      nodes}]}]``), ``node_count``, ``every_node`` (at most FULL_ROWS nodes: ``rows`` lists every node, else only
      those with an odd value) and ``rows`` (``[{node, cells: [{text, odd}]}]``, a cell per component).
    - ``gpu``: ``ran`` (any GPU result), ``columns``, ``every_node`` (at most FULL_ROWS nodes: ``rows`` lists every
      node, else only the unhealthy ones), ``healthy`` (nodes healthy in every column) and ``rows`` (``[{node,
      cells: [{state, text}]}]``, state ``ok``/``fail``/``none``).
    - ``inventory``: the per-node inventory (serial numbers, VBIOS, HCA PSID and firmware, Slurm): ``columns``,
      ``total``, ``reported`` (nodes that reported one), ``odd`` (nodes with an odd value), ``shown_all`` (every
      node, else only the odd ones) and ``rows`` (``[{node, odd, cells: [{text, odd}]}]``, a cell per column).
    - ``problems``: ``counts`` (``problems``, ``nodes``, ``checks``), ``entries`` (one per physical problem, the first
      FAILURE_ROWS: ``kind``, ``title``, ``blamed`` (the end at fault), ``ends`` (the other end or ends, neutral),
      ``action`` and ``rows``, ``[{node, check, subject, measured, threshold}]``, the checks it failed) and ``more``.
    - ``plan``: ``areas`` (``[{area, tools, parameters, checks}]``), ``criteria`` (``[{check, what, threshold,
      default, source}]``: each check's threshold in this run, its default and the default's source), ``coverage``
      (``[{check, passed, failed, skipped, not_tested, reasons: [{state, reason, hostlist}]}]``), ``totals``
      (``passed``, ``failed``, ``skipped``, ``not_tested``) and ``not_run`` (verify areas this run did not run).
    - ``evidence``: per node ``[{node, file, passed, text, cut}]``: its evidence file beside the report
      (``evidence/<node>.json``) and, for the failing nodes, its text (None for the others; ``cut``: the text was
      cut for the page, the file is whole).
    - ``palette``: ``pass``, ``fail``, ``neutral`` (colours) and ``pass_mark``, ``fail_mark`` (symbols).
    """
    run = doc.get('run') or {}
    summary = doc.get('summary') or {}
    return {
        'verdict': str(summary.get('verdict', 'FAIL')),
        'title': report_title(doc, cover),
        'schema': doc.get('schema', ''),
        'run': dict((key, run.get(key, '?')) for key in ('started', 'finished', 'collection_version', 'mode')),
        'summary': dict([(key, summary.get(key, '?')) for key in ('nodes', 'passed', 'failed', 'drained', 'resumed', 'verdict')]
                        + [('cluster_failed', summary.get('cluster_failed'))]),
        'cover': [{'label': label, 'value': value} for label, value in cover_rows(doc, cover)],
        'comparison': _comparison(comparison),
        'failures': _failures(doc),
        'nccl': _nccl(doc),
        'perftest': _perftest(doc),
        'fabric': _fabric(doc),
        'versions': _versions(doc),
        'gpu': _gpu(doc),
        'inventory': _inventory(doc),
        'problems': _problems(doc),
        'plan': _plan(doc),
        'evidence': _evidence(doc),
        'palette': {'pass': PASS_COLOUR, 'fail': FAIL_COLOUR, 'neutral': NEUTRAL_COLOUR, 'pass_mark': PASS_MARK,
                    'fail_mark': FAIL_MARK},
    }


def _finalize(value):
    """What the template writes for ``{{ value }}``: markup (the SVG charts, macros) as it is; anything else as text
    without terminal sequences or control characters, escaped like the SVG (svg.escape). Autoescape stays on for
    what does not pass here."""
    if hasattr(value, '__html__'):
        return value
    return Markup(svg.escape(value))


_COMPILED = {}


def _compile(template):
    compiled = _COMPILED.get(template)
    if compiled is None:
        environment = jinja2.Environment(autoescape=True, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                                         undefined=jinja2.StrictUndefined, finalize=_finalize)
        compiled = environment.from_string(template)
        if len(_COMPILED) >= 4:
            _COMPILED.clear()
        _COMPILED[template] = compiled
    return compiled


def _template_line(traceback):
    """The template's line where rendering failed, from the traceback Jinja2 rewrites to point into the template."""
    line = None
    while traceback is not None:
        if traceback.tb_frame.f_code.co_filename == '<template>':
            line = traceback.tb_lineno
        traceback = traceback.tb_next
    return line


def render_html(template, context):
    """The text of a Jinja2 template (report.html.j2 or the user's own) rendered with a context from html_context()."""
    if jinja2 is None:
        raise HtmlTemplateError('report.html needs the Python package jinja2 (it comes with ansible-core; '
                                'pip install jinja2): %s' % JINJA2_IMPORT_ERROR)
    try:
        return _compile(template).render(context)
    except jinja2.TemplateSyntaxError as exc:
        raise HtmlTemplateError('line %s: %s' % (exc.lineno, exc.message))
    except (jinja2.TemplateError, TypeError, ValueError, KeyError, AttributeError, IndexError, ZeroDivisionError) as exc:
        line = _template_line(sys.exc_info()[2])
        raise HtmlTemplateError('%s%s: %s' % ('line %s: ' % line if line else '', type(exc).__name__, exc))


def html_report(doc, comparison=None, cover=None, template=None):
    """report.html's text: html_context() laid out by ``template``, the text of a Jinja2 template (the report role's
    is SHIPPED_TEMPLATE in the collection)."""
    if template is None:
        raise HtmlTemplateError('no template: report.html is laid out by a Jinja2 template, such as the report '
                                "role's %s; pass its text" % SHIPPED_TEMPLATE)
    return render_html(template, html_context(doc, comparison, cover))
