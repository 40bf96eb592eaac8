# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The figures of the acceptance report, computed from a results.json document.

Failing checks with what to do next (the remedy of each check record in
verify/checks.py), the NCCL bar chart's data, the fabric link table, the
version matrix with odd ones out, GPU health per node, the per-test results
table (baseline, measured, deviation) and the test plan. The perftest figures
are in perftest.py, the comparison of two runs in compare.py. The renderers
(html.py, junit.py, markdown.py) only lay these out.
Pure functions only: no I/O.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils.slurm import hostlist_sort_key
from ansible_collections.aicluster.infra.plugins.module_utils.verify.checks import AREAS, CHECKS, higher_is_better
from ansible_collections.aicluster.infra.plugins.module_utils.report._text import (
    check_order, deviation, fmt, has_cluster_result, hca_of, hostlist, inventory_name, is_number, median, node_results,
    sort_nodes)
from ansible_collections.aicluster.infra.plugins.module_utils.report.perftest import perftest_suspects, suspect_text


# The fabric link table lists every link up to this many, else only the degraded and down ones.
LINK_ROWS = 200
VERSION_COMPONENTS = (
    ('driver', 'NVIDIA driver'), ('cuda', 'CUDA'), ('ofed', 'OFED / rdma-core'), ('hca_firmware', 'HCA firmware'),
    ('slurm', 'Slurm'), ('kernel', 'kernel'), ('os', 'OS'), ('gpu_model', 'GPU model'),
)
GPU_COLUMNS = (
    ('ECC', ('gpu.ecc_mode', 'gpu.ecc', 'gpu.retired_pages')),
    ('row remap', ('gpu.row_remap',)),
    ('NVLink', ('gpu.nvlink', 'gpu.nvlink_errors')),
    ('Xid', ('gpu.xid',)),
    ('dcgmi diag', ('gpu.dcgm_diag',)),
)
AREA_TOOLS = {
    'ib': 'ibstat, ibv_devinfo (aicluster.infra.ib_info)',
    'fabric': 'iblinkinfo (aicluster.infra.fabric_info), sminfo and saquery, P_Key tables, ibqueryerrors before and after the tests',
    'perftest': 'ib_write_bw / ib_read_bw / ib_write_lat (perftest), rail-aligned node pairs',
    'net': 'ping -M do at the configured MTU',
    'gpu': 'nvidia-smi (aicluster.infra.gpu_info), dcgmi diag (aicluster.infra.dcgm_diag), kernel log',
    'nccl': 'nccl-tests all_reduce_perf, single node and multi-node',
    'node': 'Ansible connection to the node; its check tasks ran',
}
PARAMETER_AREAS = (('perftest', 'perftest'), ('nccl', 'nccl'), ('dcgm', 'gpu'), ('gpu', 'gpu'), ('ib', 'ib'),
                   ('fabric', 'fabric'), ('mtu', 'net'), ('net', 'net'))


class _Blank(dict):
    def __missing__(self, key):
        return '?'


def next_action(node, result, suspects=None):
    """What to do about a failed result, from its check record's remedy; the result's own message for an unknown check."""
    record = CHECKS.get(result.get('check'))
    template = record.remedy if record is not None else None
    if not template:
        return str(result.get('message') or '')
    fields = _Blank(node=node, subject=result.get('subject') or 'node', hca=hca_of(result.get('subject')),
                    peer=result.get('peer') or 'its switch port', partner=result.get('partner') or 'its partner',
                    measured=fmt(result.get('measured')), threshold=fmt(result.get('threshold')),
                    unit=result.get('unit') or '')
    if str(result.get('check', '')).startswith('perftest.'):
        fields['suspect'] = suspect_text(node, result, suspects or {})
    return template.format_map(fields)


def failing_checks(doc):
    """Every failed result (plus a failed multi-node NCCL run) as a row with its next action, by area, node, check."""
    suspects = perftest_suspects((doc.get('perftest') or {}).get('pairs') or [])
    rows = []
    for node, result in node_results(doc):
        if result.get('passed', True):
            continue
        rows.append({
            'node': node, 'check': result.get('check'), 'area': result.get('area'), 'subject': result.get('subject'),
            'measured': result.get('measured'), 'threshold': result.get('threshold'), 'unit': result.get('unit'),
            'deviation': deviation(result.get('measured'), result.get('threshold')),
            'message': result.get('message') or '', 'action': next_action(node, result, suspects),
            'peer': result.get('peer'), 'partner': result.get('partner'), 'partners': result.get('partners'),
        })
    multi = (doc.get('nccl') or {}).get('multi_node') or {}
    if multi and multi.get('passed') is False and not has_cluster_result(doc, 'nccl.multi_node_busbw'):
        result = {'check': 'nccl.multi_node_busbw', 'subject': hostlist(multi.get('nodes') or []),
                  'measured': multi.get('busbw'), 'threshold': multi.get('threshold'), 'unit': 'GB/s'}
        rows.append({'node': 'fleet', 'check': result['check'], 'area': 'nccl', 'subject': result['subject'],
                     'measured': result['measured'], 'threshold': result['threshold'], 'unit': 'GB/s',
                     'deviation': deviation(result['measured'], result['threshold']),
                     'message': 'multi-node all_reduce busbw %s GB/s, threshold %s GB/s' % (
                         fmt(multi.get('busbw')), fmt(multi.get('threshold'))),
                     'action': next_action('fleet', result)})
    rows.sort(key=lambda row: (row['node'] in ('fleet', 'cluster'), hostlist_sort_key(row['node']), check_order(row['check']),
                               str(row['subject'])))
    return rows


def nccl_chart(doc):
    """Per node: single-node all_reduce busbw and whether its NCCL checks passed; threshold, fleet median, slow floor."""
    nccl = doc.get('nccl') or {}
    single = nccl.get('single_node') or {}
    values, failed, thresholds, floors = {}, set(), [], []
    for node, result in node_results(doc):
        check = result.get('check')
        if check == 'nccl.busbw':
            values.setdefault(node, result.get('measured'))
            thresholds.append(result.get('threshold'))
        elif check == 'nccl.slow_node':
            floors.append(result.get('threshold'))
        if str(check).startswith('nccl.') and not result.get('passed', True):
            failed.add(node)
    for node, figures in single.items():
        if isinstance(figures, dict) and is_number(figures.get('busbw')):
            values[node] = figures['busbw']
    bars = [{'node': node, 'busbw': values[node], 'passed': node not in failed}
            for node in sort_nodes(values) if is_number(values[node])]
    fleet_median = nccl.get('fleet_median')
    if not is_number(fleet_median):
        fleet_median = median(entry['busbw'] for entry in bars)
    return {'bars': bars, 'threshold': median(thresholds), 'median': fleet_median, 'slow_floor': median(floors),
            'multi_node': nccl.get('multi_node') or None}


def _size_label(size):
    for unit, shift in (('G', 30), ('M', 20), ('K', 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return '%d%s' % (size >> shift, unit)
    return str(size)


def nccl_curves(doc):
    """Single-node busbw against message size, from each node's parsed nccl-tests rows (``raw.nccl.nccl.rows``):
    the fleet median per size and the worst node (the lowest figure at the largest size every node measured).

    Returns ``{'sizes': [bytes], 'labels': ['8', ..., '8G'], 'median': [value or None], 'worst': node or None,
    'worst_points': [...], 'nodes': n}``, or None when no node kept its rows (older results, NCCL not run)."""
    per_node = {}
    for name in sort_nodes(doc.get('nodes') or {}):
        parsed = (((doc['nodes'][name].get('raw') or {}).get('nccl') or {}).get('nccl') or {})
        points = {}
        for row in parsed.get('rows') or []:
            value = row.get('oop_busbw') if is_number(row.get('oop_busbw')) else row.get('ip_busbw')
            if is_number(row.get('size')) and is_number(value):
                points[row['size']] = value
        if points:
            per_node[name] = points
    if not per_node:
        return None
    sizes = sorted(set(size for points in per_node.values() for size in points))
    common = [size for size in sizes if all(size in points for points in per_node.values())]
    largest = common[-1] if common else sizes[-1]
    worst = min((points.get(largest, float('inf')), hostlist_sort_key(name), name) for name, points in per_node.items())[2]
    return {'sizes': sizes, 'labels': [_size_label(size) for size in sizes],
            'median': [median(points[size] for points in per_node.values() if size in points) for size in sizes],
            'worst': worst, 'worst_points': [per_node[worst].get(size) for size in sizes], 'nodes': len(per_node)}


def link_table(doc, limit=LINK_ROWS):
    """Fabric links: all of them up to ``limit``, else only the bad ones, plus counts per (width, speed, state).

    Switch ports that are down with nothing at the other end are unused ports, not
    links: iblinkinfo prints every port of a 64-port leaf. They are counted apart
    (``unused``); an unplugged cable looks the same from the switch, and the
    node-side port checks (ib.port_state) are what catch it.
    """
    every = list((doc.get('fabric') or {}).get('links') or [])
    links = [link for link in every if not _unused_switch_port(link)]
    degraded_ids = set(id(link) for link in (doc.get('fabric') or {}).get('degraded') or [])

    def bad(link):
        return bool(link.get('degraded')) or id(link) in degraded_ids or link.get('state') not in (None, 'Active') or \
            link.get('physical_state') not in (None, 'LinkUp')

    counts = {}
    for link in links:
        key = (fmt(link.get('width')), fmt(link.get('lane_speed_gbps')), fmt(link.get('state')))
        counts[key] = counts.get(key, 0) + 1
    rows = [dict(link, bad=bad(link)) for link in links]
    shown_all = len(rows) <= limit
    if not shown_all:
        rows = [row for row in rows if row['bad']]
    degraded = [link for link in links if bad(link)]
    if not links and (doc.get('fabric') or {}).get('degraded'):
        rows = [dict(link, bad=True) for link in doc['fabric']['degraded']]
        degraded = list(doc['fabric']['degraded'])
    # iblinkinfo lists a link from both of its ends (the HCA's row and the switch port's): one cable, counted once
    physical = set(_link_key(link) for link in degraded)
    return {'rows': rows, 'total': len(set(_link_key(link) for link in links)), 'bad': len(physical), 'shown_all': shown_all,
            'unused': len(every) - len(links),
            'counts': sorted(counts.items(), key=lambda item: (-item[1], item[0]))}


def _link_key(link):
    """The same key for both ends' rows of one link: their (LID, port) pairs; a link without a known peer is its own."""
    here = (link.get('node_lid'), link.get('port'))
    there = (link.get('peer_lid'), link.get('peer_port'))
    if here[0] is None or there[0] is None:
        return ('row', id(link))
    return frozenset([here, there])


def _unused_switch_port(link):
    return (link.get('node_type') == 'Switch' and link.get('state') != 'Active'
            and not link.get('peer_name') and link.get('peer_lid') is None)


def _version_value(versions, key):
    value = versions.get(key)
    if key == 'hca_firmware' and isinstance(value, dict):
        if not value:
            return None
        tally = {}
        for firmware in value.values():
            tally[firmware] = tally.get(firmware, 0) + 1
        common = sorted(tally.items(), key=lambda item: (-item[1], str(item[0])))[0][0]
        others = ['%s %s' % (hca, firmware) for hca, firmware in sorted(value.items()) if firmware != common]
        return '%s (%s)' % (common, ', '.join(others)) if others else str(common)
    return None if value is None else str(value)


def version_matrix(doc):
    """Per component: each value with its nodes, the majority value and the odd ones out; per node its values."""
    nodes = doc.get('nodes') or {}
    names = sort_nodes(nodes)
    per_node = dict((name, {}) for name in names)
    components = []
    for key, label in VERSION_COMPONENTS:
        groups = {}
        for name in names:
            value = _version_value(nodes[name].get('versions') or {}, key)
            per_node[name][key] = value
            if value is not None:
                groups.setdefault(value, []).append(name)
        if not groups:
            continue
        ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
        majority = ordered[0][0]
        odd = sort_nodes(name for value, members in ordered[1:] for name in members)
        components.append({'key': key, 'label': label, 'majority': majority, 'count': len(groups[majority]),
                           'reported': sum(len(members) for members in groups.values()),
                           'values': [{'value': value, 'nodes': members, 'hostlist': hostlist(members)}
                                      for value, members in ordered],
                           'odd': odd})
    odd_nodes = sort_nodes(set(name for component in components for name in component['odd']))
    return {'components': components, 'nodes': per_node, 'odd_nodes': odd_nodes}


def gpu_health(doc):
    """Per node, one cell per GPU_COLUMNS entry: state ok / fail / none (not run) and a short text."""
    level = ((doc.get('run') or {}).get('parameters') or {}).get('dcgm_diag_level')
    rows = []
    for name in sort_nodes(doc.get('nodes') or {}):
        results = [result for result in doc['nodes'][name].get('results') or [] if result.get('area') == 'gpu']
        cells = []
        for column, checks in GPU_COLUMNS:
            mine = [result for result in results if result.get('check') in checks]
            bad = [result for result in mine if not result.get('passed', True)]
            if not mine:
                cells.append({'state': 'none', 'text': 'not run'})
            elif bad:
                cells.append({'state': 'fail', 'text': '; '.join(
                    '%s: %s' % (result.get('subject'), fmt(result.get('measured'))) for result in bad)})
            else:
                cells.append({'state': 'ok', 'text': 'ok'})
            if column == 'dcgmi diag' and mine:
                diag_level = mine[0].get('level', level)
                if diag_level is not None:
                    cells[-1]['text'] = '%s (-r %s)' % ('pass' if not bad else cells[-1]['text'], diag_level)
        rows.append({'node': name, 'cells': cells, 'bad': any(cell['state'] == 'fail' for cell in cells)})
    return {'columns': [column for column, _checks in GPU_COLUMNS], 'rows': rows}


# A node's passing fabric link result counts its links (measured: links seen, threshold: HCAs); the table compares
# what the failing ones compare, the width or the lane speed.
LINK_SUMMARY = {'fabric.link_width': ('fabric_width', '4X'), 'fabric.link_speed': ('fabric_lane_speed_gbps', 'full lane speed')}


def _as_compared(result, parameters):
    """A result as the results table compares it: a node's passing link summary as the expected width or speed."""
    check = result.get('check')
    if check in LINK_SUMMARY and result.get('subject') == 'node' and result.get('passed', True):
        key, default = LINK_SUMMARY[check]
        wanted = parameters.get(key) or default
        return dict(result, measured=wanted, threshold=wanted, unit=None)
    return result


def results_table(doc):
    """Per check id that ran: baseline (the threshold), measured median and worst, deviations, passed of total."""
    by_check = {}
    parameters = (doc.get('run') or {}).get('parameters') or {}
    for _node, result in node_results(doc):
        by_check.setdefault(result.get('check'), []).append(_as_compared(result, parameters))
    rows = []
    for check in sorted(by_check, key=check_order):
        results = by_check[check]
        passed = sum(1 for result in results if result.get('passed', True))
        measured = [result.get('measured') for result in results]
        thresholds = [result.get('threshold') for result in results]
        unit = next((result.get('unit') for result in results if result.get('unit')), None)
        row = {'check': check, 'what': CHECKS[check].description if check in CHECKS else check,
               'passed': passed, 'total': len(results),
               'unit': unit, 'numeric': all(is_number(value) for value in measured + thresholds)}
        if row['numeric']:
            higher = higher_is_better(check)
            base = median(thresholds)
            row['baseline'] = base if min(thresholds) == max(thresholds) else (min(thresholds), max(thresholds))
            row['median'] = median(measured)
            row['worst'] = min(measured) if higher else max(measured)
            row['deviation'] = deviation(row['median'], base)
            row['worst_deviation'] = deviation(row['worst'], base)
        else:
            expected = sorted(set(fmt(value) for value in thresholds))
            row['baseline'] = '; '.join(expected)
            values = {}
            for value in measured:
                values[fmt(value)] = values.get(fmt(value), 0) + 1
            row['values'] = sorted(values.items(), key=lambda item: (-item[1], item[0]))
        rows.append(row)
    multi = (doc.get('nccl') or {}).get('multi_node') or {}
    if is_number(multi.get('busbw')) and 'nccl.multi_node_busbw' not in by_check:
        rows.append({'check': 'nccl.multi_node_busbw', 'what': CHECKS['nccl.multi_node_busbw'].description,
                     'passed': 1 if multi.get('passed') else 0, 'total': 1, 'unit': 'GB/s', 'numeric': True,
                     'baseline': multi.get('threshold'), 'median': multi['busbw'], 'worst': multi['busbw'],
                     'deviation': deviation(multi['busbw'], multi.get('threshold')),
                     'worst_deviation': deviation(multi['busbw'], multi.get('threshold'))})
    return rows


def test_plan(doc):
    """Per check area that ran: tools, parameters (from run.parameters) and the check ids that judged it."""
    run = doc.get('run') or {}
    parameters = run.get('parameters') or {}
    ran = set(result.get('area') for _node, result in node_results(doc))
    areas = [area for area in AREAS if area in (run.get('checks') or []) or area in ran]
    rows = []
    for area in areas:
        mine = []
        for key in sorted(parameters):
            for prefix, owner in PARAMETER_AREAS:
                if key.startswith(prefix):
                    if owner == area:
                        mine.append('%s=%s' % (key, parameters[key]))
                    break
        checks = sorted(set(result.get('check') for _node, result in node_results(doc) if result.get('area') == area),
                        key=check_order)
        rows.append({'area': area, 'tools': AREA_TOOLS.get(area, ''), 'parameters': mine, 'checks': checks})
    return rows


def criteria(doc):
    """Per planned check: what it compares, the threshold of this run (every distinct value, from the results; a
    cluster-level check's too), the default and where that default comes from (the check record's ``default`` and
    ``source``, which docs/verify.md tabulates)."""
    parameters = (doc.get('run') or {}).get('parameters') or {}
    thresholds = {}
    for _node, result in node_results(doc):
        result = _as_compared(result, parameters)
        if result.get('skipped'):
            continue
        value = fmt(result.get('threshold'), result.get('unit'))
        seen = thresholds.setdefault(result.get('check'), [])
        if value not in seen:
            seen.append(value)
    rows = []
    for check in sorted(thresholds, key=check_order):
        record = CHECKS.get(check)
        values = thresholds[check]
        shown = '; '.join(values[:4]) + ('; ... (%d values)' % len(values) if len(values) > 4 else '')
        rows.append({'check': check, 'what': record.description if record else check, 'threshold': shown,
                     'default': (record.default if record else '') or '', 'source': (record.source if record else '') or ''})
    return rows


COVER_KEYS = ('customer', 'site', 'cluster', 'criteria', 'run_by', 'commit')


def report_title(doc, cover=None):
    """The report's title: the cluster's name from the cover, else the inventory's name."""
    cover = cover or {}
    return str(cover.get('cluster') or '').strip() or inventory_name((doc.get('run') or {}).get('inventory')) or 'cluster'


def cover_rows(doc, cover=None):
    """(label, value) of the report's cover: who the cluster is for, where, against which criteria, what ran and
    who ran it. Empty values are left out; the inventory by its name only."""
    cover = dict((key, str((cover or {}).get(key) or '').strip()) for key in COVER_KEYS)
    run = doc.get('run') or {}
    collection = 'aicluster.infra %s' % (run.get('collection_version') or '?')
    if cover['commit']:
        collection += ' (commit %s)' % cover['commit']
    rows = [('Customer', cover['customer']), ('Site', cover['site']), ('Cluster', cover['cluster']),
            ('Acceptance criteria', cover['criteria']),
            ('Inventory', inventory_name(run.get('inventory'))),
            ('Run', '%s to %s' % (run.get('started') or '?', run.get('finished') or '?')),
            ('Run by', cover['run_by']), ('Collection', collection), ('Gate mode', str(run.get('mode') or ''))]
    return [(label, value) for label, value in rows if value]
