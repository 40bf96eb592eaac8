# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The acceptance report: figures computed from results.json, and its three renderings.

``build_outputs(doc, compare_doc)`` returns the text of report.html, junit.xml
and summary.md for a results document (verify_results.py is the contract).
The computations are separate, tested functions: failing checks with what to
do next, the NCCL bar chart's data, perftest heatmap matrices per rail (node
blocks above ``HEATMAP_MAX_SIDE`` nodes), per-HCA bars, the fabric link table,
the version matrix with odd ones out, GPU health per node, the per-test
results table (baseline, measured, deviation) and the comparison of two runs.
Output is deterministic: the same documents give the same bytes.
Pure functions only: no I/O.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import math

from ansible_collections.aicluster.infra.plugins.module_utils import svg
from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.slurm import hostlist_compress, hostlist_sort_key
from ansible_collections.aicluster.infra.plugins.module_utils.verify.checks import AREAS, CHECKS

OUTPUT_NAMES = {'html': 'report.html', 'junit': 'junit.xml', 'markdown': 'summary.md'}
DEFAULT_COMPARE_THRESHOLD = 0.05
# Up to this many nodes a heatmap shows every node; above, blocks of nodes (32 nodes = one
# SuperPOD scalable unit at 1,024 nodes), coloured by the worst pair measured between them.
HEATMAP_MAX_SIDE = 32
# Tables and charts with one row per node list every node up to this many, else only the bad ones.
FULL_ROWS = 64
LINK_ROWS = 200
HCA_BARS_ALL = 128
HCA_BARS_WORST = 64
FAILURE_ROWS = 500
MOVED_ROWS = 200

# What to do next, per check id; fields: node, subject, hca, peer, partner, measured, threshold, unit, suspect.
NEXT_ACTIONS = {
    'ib.hca_present': 'check that every HCA on {node} is seated and enabled (lspci, mst status); reseat or replace the missing card',
    'ib.port_state': 'check the cable on {peer} / {node} {hca}: reseat it, then replace the cable or transceiver if the port stays down',
    'ib.port_rate': 'reseat or replace the cable on {peer} / {node} {hca} (a port below its rate usually has a bad cable or transceiver)',
    'ib.link_layer': 'set the link layer of {node} {hca} to {threshold} (mlxconfig LINK_TYPE_P1) and reboot the node',
    'ib.firmware_uniform': 'flash the fleet HCA firmware {threshold} on {node} (mlxfwmanager -u) and reboot the node',
    'ib.ofed_uniform': 'install the fleet OFED {threshold} on {node} (rerun the rdma stage with --limit {node})',
    'fabric.link_width': 'reseat or replace the cable on {peer} / {node} {hca}',
    'fabric.link_speed': 'reseat or replace the cable on {peer} / {node} {hca}; check the switch port speed setting',
    'fabric.rail': 'recable {node} {hca} to its rail ({threshold}); it now reaches {measured}',
    'perftest.write_bw': 'check {suspect}: link state and rate (ibstat, iblinkinfo), PCIe width (lspci -vv), then rerun ib_write_bw',
    'perftest.read_bw': 'check {suspect}: link state and rate (ibstat, iblinkinfo), PCIe width (lspci -vv), then rerun ib_read_bw',
    'perftest.write_lat': 'check {suspect}: cable and switch port errors (perfquery), then rerun ib_write_lat',
    'net.mtu': 'set MTU {threshold} on {node} {subject} and on every switch port in its path',
    'gpu.count': 'a GPU is missing on {node}: check nvidia-smi -L and dmesg, reseat the baseboard or open a hardware ticket',
    'gpu.model': 'GPU model on {node} is {measured}, expected {threshold}: correct the inventory or swap the hardware',
    'gpu.driver_uniform': 'install the fleet driver {threshold} on {node} (rerun the gpu stage with --limit {node}) and reboot',
    'gpu.persistence': 'enable persistence mode on {node} (nvidia-persistenced service)',
    'gpu.ecc': 'drain {node}, reset {subject} (nvidia-smi -r -i) and run dcgmi diag -r 3; RMA the GPU if the errors return',
    'gpu.retired_pages': 'reboot {node} to retire the pending pages; RMA {subject} if retired pages exceed the vendor limit',
    'gpu.row_remap': 'reset {subject} on {node} (or reboot) to apply the pending row remap; RMA the GPU on a remap failure',
    'gpu.nvlink': 'reboot {node}; if {subject} still has NVLinks down, check fabric manager and open a hardware ticket',
    'gpu.nvlink_errors': 'clear the NVLink counters on {node} and rerun nccl-tests; open a hardware ticket if they keep rising',
    'gpu.xid': 'look up Xid {measured} in NVIDIA\'s Xid catalogue; drain {node}, reboot, and open a hardware ticket for {subject} if it recurs',
    'gpu.processes': 'stop the stray GPU processes on {node} (nvidia-smi --query-compute-apps=pid,name) before it takes jobs',
    'gpu.dcgm_diag': 'rerun dcgmi diag -r 3 on {node}, and open a hardware ticket with the failing test\'s output',
    'nccl.busbw': 'run all_reduce_perf on {node} alone; check NVLink/NVSwitch (nvidia-smi nvlink -s, fabric manager), GPU clocks and power',
    'nccl.wrong': 'data corruption: drain {node}, run dcgmi diag -r 3 and open a hardware ticket',
    'nccl.slow_node': 'compare {node}\'s GPU clocks, power limits and NVLink state with a healthy node; rerun all_reduce_perf',
    'nccl.multi_node_busbw': 'check the NCCL environment (NCCL_IB_HCA, GID index), rail cabling, and perftest between the nodes of the run',
    'node.reachable': 'bring {node} back (power, BMC console, sshd, network), then rerun verify with --limit {node}',
}
# Checks whose figure is better when higher (the others: lower is better, or not a figure).
HIGHER_IS_BETTER = frozenset(['ib.hca_present', 'ib.port_rate', 'perftest.write_bw', 'perftest.read_bw', 'gpu.count',
                              'gpu.nvlink', 'nccl.busbw', 'nccl.slow_node', 'nccl.multi_node_busbw', 'net.mtu'])
VERSION_COMPONENTS = (
    ('driver', 'NVIDIA driver'), ('cuda', 'CUDA'), ('ofed', 'OFED / rdma-core'), ('hca_firmware', 'HCA firmware'),
    ('slurm', 'Slurm'), ('kernel', 'kernel'), ('os', 'OS'), ('gpu_model', 'GPU model'),
)
GPU_COLUMNS = (
    ('ECC', ('gpu.ecc', 'gpu.retired_pages')),
    ('row remap', ('gpu.row_remap',)),
    ('NVLink', ('gpu.nvlink', 'gpu.nvlink_errors')),
    ('Xid', ('gpu.xid',)),
    ('dcgmi diag', ('gpu.dcgm_diag',)),
)
AREA_TOOLS = {
    'ib': 'ibstat, ibv_devinfo (aicluster.infra.ib_info)',
    'fabric': 'iblinkinfo (aicluster.infra.fabric_info)',
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


# ------------------------------------------------------------------ small helpers

def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not (
        isinstance(value, float) and (math.isnan(value) or math.isinf(value)))


def median(values):
    """The median of the numbers in ``values`` (others ignored); None when there are none."""
    numbers = sorted(value for value in values if is_number(value))
    if not numbers:
        return None
    middle = len(numbers) // 2
    if len(numbers) % 2:
        return numbers[middle]
    low, high = numbers[middle - 1], numbers[middle]
    if isinstance(low, int) and isinstance(high, int) and (low + high) % 2 == 0:
        return (low + high) // 2
    return (low + high) / 2.0


def deviation(measured, baseline):
    """(measured - baseline) / baseline, or None when either is not a number or the baseline is 0."""
    if not is_number(measured) or not is_number(baseline) or baseline == 0:
        return None
    return (measured - baseline) / float(baseline)


def fmt(value, unit=None):
    """A measured value or threshold as text."""
    if value is None:
        text = '-'
    elif isinstance(value, bool):
        text = 'yes' if value else 'no'
    elif isinstance(value, float):
        text = ('%.2f' % value).rstrip('0').rstrip('.') if abs(value) < 1000 else '%.1f' % value
    else:
        text = str(value)
    return '%s %s' % (text, unit) if unit and value is not None else text


def fmt_pct(fraction, signed=True):
    if fraction is None:
        return '-'
    return ('%+.1f%%' if signed else '%.1f%%') % (100.0 * fraction)


def hostlist(names):
    """A Slurm hostlist expression for the names, or the names joined when they do not compress."""
    names = list(names)
    if not names:
        return ''
    try:
        return hostlist_compress(names)
    except ParseError:
        return ','.join(sorted(names))


def sort_nodes(names):
    return sorted(names, key=hostlist_sort_key)


def _check_order(check):
    keys = list(CHECKS)
    return (keys.index(check) if check in keys else len(keys), check)


def _hca_of(subject):
    text = str(subject or '')
    return text.split(':', 1)[0].split(' ', 1)[0]


def node_results(doc):
    """(node, result) for every result, nodes in natural order, results in document order."""
    nodes = doc.get('nodes') or {}
    for name in sort_nodes(nodes):
        for result in nodes[name].get('results') or []:
            yield name, result


# ------------------------------------------------------------------ perftest

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


def _suspect_text(node, result, suspects):
    hca = _hca_of(result.get('subject'))
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


def heatmap_matrix(doc, rail, test='write_bw', max_side=HEATMAP_MAX_SIDE):
    """The heatmap of one rail: fractions of line rate between nodes, or between blocks of nodes.

    Returns ``labels`` (a node name, or ``first-last`` of a block), ``block``
    (nodes per label), ``cells`` ({(row, col): {fraction, measured, pairs, worst}}
    for measured pairs only, both directions; a block cell holds its worst pair)
    and ``threshold_fraction`` (median of threshold / line rate).
    """
    names = sort_nodes((doc.get('nodes') or {}).keys())
    block = max(1, int(math.ceil(len(names) / float(max_side)))) if names else 1
    index = dict((name, position // block) for position, name in enumerate(names))
    labels = []
    for start in range(0, len(names), block):
        members = names[start:start + block]
        labels.append(members[0] if len(members) == 1 else '%s-%s' % (members[0], members[-1]))
    cells = {}
    fractions = []
    for pair in perftest_pairs(doc, test):
        if pair.get('rail') != rail or pair['client'] not in index or pair['server'] not in index:
            continue
        line_rate = pair.get('line_rate') or 0
        if not is_number(pair.get('measured')) or not is_number(line_rate) or line_rate <= 0:
            continue
        fraction = pair['measured'] / float(line_rate)
        if is_number(pair.get('threshold')):
            fractions.append(pair['threshold'] / float(line_rate))
        for row, col in ((index[pair['client']], index[pair['server']]), (index[pair['server']], index[pair['client']])):
            cell = cells.get((row, col))
            if cell is None:
                cells[(row, col)] = {'fraction': fraction, 'measured': pair['measured'], 'pairs': 1, 'worst': pair}
            else:
                cell['pairs'] += 1
                if fraction < cell['fraction']:
                    cell.update(fraction=fraction, measured=pair['measured'], worst=pair)
    return {'labels': labels, 'block': block, 'cells': cells, 'threshold_fraction': median(fractions)}


def perftest_rails(doc, test='write_bw'):
    return sorted(set(pair.get('rail') for pair in perftest_pairs(doc, test) if pair.get('rail') is not None))


def hca_bars(doc, test='write_bw'):
    """Per (node, hca) endpoint, the median of its pairs (a faulty HCA is low with every partner, its partners only
    with it) and its worst pair: all endpoints up to HCA_BARS_ALL, else the HCA_BARS_WORST lowest."""
    measured = {}
    thresholds, line_rates, units = [], [], set()
    for pair in perftest_pairs(doc, test):
        if not is_number(pair.get('measured')):
            continue
        thresholds.append(pair.get('threshold'))
        line_rates.append(pair.get('line_rate'))
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
        bars.append({'node': node, 'hca': hca, 'measured': middle, 'worst': worst, 'partner': partner, 'pairs': len(values),
                     'passed': threshold is None or middle >= threshold})
    total = len(bars)
    if total > HCA_BARS_ALL:
        bars = sorted(bars, key=lambda entry: (entry['measured'], hostlist_sort_key(entry['node']), str(entry['hca'])))[:HCA_BARS_WORST]
    return {'bars': bars, 'total': total, 'threshold': threshold, 'line_rate': median(line_rates),
            'unit': ', '.join(sorted(unit for unit in units if unit)) or 'Gb/s'}


# ------------------------------------------------------------------ per-check computations

def next_action(node, result, suspects=None):
    """What to do about a failed result, from NEXT_ACTIONS; the result's own message for an unknown check."""
    template = NEXT_ACTIONS.get(result.get('check'))
    if template is None:
        return str(result.get('message') or '')
    fields = _Blank(node=node, subject=result.get('subject') or 'node', hca=_hca_of(result.get('subject')),
                    peer=result.get('peer') or 'its switch port', partner=result.get('partner') or 'its partner',
                    measured=fmt(result.get('measured')), threshold=fmt(result.get('threshold')),
                    unit=result.get('unit') or '')
    if str(result.get('check', '')).startswith('perftest.'):
        fields['suspect'] = _suspect_text(node, result, suspects or {})
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
        })
    multi = (doc.get('nccl') or {}).get('multi_node') or {}
    if multi and multi.get('passed') is False:
        result = {'check': 'nccl.multi_node_busbw', 'subject': hostlist(multi.get('nodes') or []),
                  'measured': multi.get('busbw'), 'threshold': multi.get('threshold'), 'unit': 'GB/s'}
        rows.append({'node': 'fleet', 'check': result['check'], 'area': 'nccl', 'subject': result['subject'],
                     'measured': result['measured'], 'threshold': result['threshold'], 'unit': 'GB/s',
                     'deviation': deviation(result['measured'], result['threshold']),
                     'message': 'multi-node all_reduce busbw %s GB/s, threshold %s GB/s' % (
                         fmt(multi.get('busbw')), fmt(multi.get('threshold'))),
                     'action': next_action('fleet', result)})
    rows.sort(key=lambda row: (row['node'] == 'fleet', hostlist_sort_key(row['node']), _check_order(row['check']),
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
    return {'rows': rows, 'total': len(links), 'bad': len(degraded), 'shown_all': shown_all,
            'unused': len(every) - len(links),
            'counts': sorted(counts.items(), key=lambda item: (-item[1], item[0]))}


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


def results_table(doc):
    """Per check id that ran: baseline (the threshold), measured median and worst, deviations, passed of total."""
    by_check = {}
    for _node, result in node_results(doc):
        by_check.setdefault(result.get('check'), []).append(result)
    rows = []
    for check in sorted(by_check, key=_check_order):
        results = by_check[check]
        passed = sum(1 for result in results if result.get('passed', True))
        measured = [result.get('measured') for result in results]
        thresholds = [result.get('threshold') for result in results]
        unit = next((result.get('unit') for result in results if result.get('unit')), None)
        row = {'check': check, 'what': (CHECKS[check].description if check in CHECKS else check), 'passed': passed, 'total': len(results),
               'unit': unit, 'numeric': all(is_number(value) for value in measured + thresholds)}
        if row['numeric']:
            higher = check in HIGHER_IS_BETTER
            base = median(thresholds)
            row['baseline'] = base if min(thresholds) == max(thresholds) else (min(thresholds), max(thresholds))
            row['median'] = median(measured)
            row['worst'] = min(measured) if higher else max(measured)
            row['deviation'] = deviation(row['median'], base)
            row['worst_deviation'] = deviation(row['worst'], base)
        else:
            expected = sorted(set(str(value) for value in thresholds))
            row['baseline'] = ', '.join(expected)
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
                        key=_check_order)
        rows.append({'area': area, 'tools': AREA_TOOLS.get(area, ''), 'parameters': mine, 'checks': checks})
    return rows


# ------------------------------------------------------------------ comparison

def _state(node):
    if node is None:
        return 'absent'
    return 'pass' if node.get('passed') else 'fail'


def _figures(doc):
    """Numeric figures of a run: {(node, check, subject): (value, unit)}."""
    figures = {}
    for node, result in node_results(doc):
        if is_number(result.get('measured')):
            figures[(node, result.get('check'), str(result.get('subject')))] = (result['measured'], result.get('unit'))
    nccl = doc.get('nccl') or {}
    if is_number(nccl.get('fleet_median')):
        figures[('fleet', 'nccl.busbw', 'fleet median')] = (nccl['fleet_median'], 'GB/s')
    multi = nccl.get('multi_node') or {}
    if is_number(multi.get('busbw')):
        figures[('fleet', 'nccl.multi_node_busbw', 'multi-node')] = (multi['busbw'], 'GB/s')
    return figures


def _passes(doc):
    passes = {}
    for node, result in node_results(doc):
        key = (node, result.get('check'), str(result.get('subject')))
        passes[key] = passes.get(key, True) and bool(result.get('passed', True))
    return passes


def compare(before, after, threshold=DEFAULT_COMPARE_THRESHOLD):
    """What changed from ``before`` to ``after``: node states, checks that broke or were fixed, figures that moved.

    A figure moved when ``|after - before| > threshold * |before|`` (any change from 0 counts).
    """
    before_nodes, after_nodes = before.get('nodes') or {}, after.get('nodes') or {}
    nodes = []
    for name in sort_nodes(set(before_nodes) | set(after_nodes)):
        old, new = before_nodes.get(name), after_nodes.get(name)
        old_state, new_state = _state(old), _state(new)
        old_drained = bool(old and old.get('drained'))
        new_drained = bool(new and new.get('drained'))
        if old_state != new_state or old_drained != new_drained:
            nodes.append({'node': name, 'before': old_state, 'after': new_state,
                          'drained_before': old_drained, 'drained_after': new_drained})
    old_passes, new_passes = _passes(before), _passes(after)
    broken = [key for key in new_passes if not new_passes[key] and old_passes.get(key, True)]
    fixed = [key for key in old_passes if not old_passes[key] and new_passes.get(key) is True]
    old_figures, new_figures = _figures(before), _figures(after)
    moved = []
    for key in set(old_figures) & set(new_figures):
        old_value, unit = old_figures[key]
        new_value = new_figures[key][0]
        if old_value == 0:
            change = None if new_value == 0 else float('inf')
        else:
            change = (new_value - old_value) / abs(float(old_value))
        if change is not None and abs(change) > threshold:
            moved.append({'node': key[0], 'check': key[1], 'subject': key[2], 'before': old_value,
                          'after': new_value, 'unit': unit, 'change': None if math.isinf(change) else change})

    def order(key):
        return (hostlist_sort_key(key[0]), _check_order(key[1]), key[2])

    moved.sort(key=lambda item: (-(abs(item['change']) if item['change'] is not None else float('inf')),
                                 order((item['node'], item['check'], item['subject']))))
    return {
        'threshold': threshold,
        'before': {'started': (before.get('run') or {}).get('started'), 'summary': before.get('summary') or {}},
        'after': {'started': (after.get('run') or {}).get('started'), 'summary': after.get('summary') or {}},
        'nodes': nodes,
        'broken': [{'node': key[0], 'check': key[1], 'subject': key[2]} for key in sorted(broken, key=order)],
        'fixed': [{'node': key[0], 'check': key[1], 'subject': key[2]} for key in sorted(fixed, key=order)],
        'moved': moved,
    }


# ------------------------------------------------------------------ JUnit

def _xml(text):
    return (str(text).replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;').replace('"', '&quot;')
            .replace('\n', '&#10;'))


def _xml_text(text):
    return str(text).replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;')


def _seconds(run):
    try:
        start = datetime.datetime.strptime(str(run.get('started')), '%Y-%m-%dT%H:%M:%SZ')
        end = datetime.datetime.strptime(str(run.get('finished')), '%Y-%m-%dT%H:%M:%SZ')
    except ValueError:
        return 0
    return max(0, int((end - start).total_seconds()))


def junit_xml(doc):
    """JUnit XML: one testsuite per check area, one testcase per node and check (classname ``<area>.<node>``)."""
    run = doc.get('run') or {}
    timestamp = str(run.get('started') or '1970-01-01T00:00:00Z').rstrip('Z')
    cases = {}
    for node, result in node_results(doc):
        area = result.get('area') or (CHECKS[result['check']].area if result.get('check') in CHECKS else 'other')
        cases.setdefault(area, {}).setdefault((node, result.get('check')), []).append(result)
    multi = (doc.get('nccl') or {}).get('multi_node') or {}
    if is_number(multi.get('busbw')):
        cases.setdefault('nccl', {})[('fleet', 'nccl.multi_node_busbw')] = [{
            'check': 'nccl.multi_node_busbw', 'subject': hostlist(multi.get('nodes') or []), 'measured': multi['busbw'],
            'threshold': multi.get('threshold'), 'unit': 'GB/s', 'passed': bool(multi.get('passed')),
            'message': 'multi-node all_reduce busbw %s GB/s, threshold %s GB/s' % (fmt(multi['busbw']), fmt(multi.get('threshold')))}]
    suspects = perftest_suspects((doc.get('perftest') or {}).get('pairs') or [])
    suites = []
    total_tests = total_failures = 0
    area_rank = dict((area, position) for position, area in enumerate(AREAS))
    for suite_id, area in enumerate(sorted(cases, key=lambda name: (area_rank.get(name, len(AREAS)), name))):
        lines = []
        failures = 0
        ordered = sorted(cases[area], key=lambda key: (hostlist_sort_key(key[0]), _check_order(key[1])))
        for node, check in ordered:
            results = cases[area][(node, check)]
            bad = [result for result in results if not result.get('passed', True)]
            head = '    <testcase classname="%s" name="%s" time="0"' % (_xml('%s.%s' % (area, node)), _xml(check))
            if not bad:
                lines.append(head + '/>')
                continue
            failures += 1
            first = bad[0]
            message = '%s: measured %s, threshold %s' % (first.get('subject'), fmt(first.get('measured'), first.get('unit')),
                                                         fmt(first.get('threshold'), first.get('unit')))
            if len(bad) > 1:
                message += ' (and %d more)' % (len(bad) - 1)
            body = []
            for result in bad:
                body.append('%s: measured %s, threshold %s: %s' % (
                    result.get('subject'), fmt(result.get('measured'), result.get('unit')),
                    fmt(result.get('threshold'), result.get('unit')), result.get('message') or ''))
            body.append('next: ' + next_action(node, first, suspects))
            lines.append(head + '>')
            lines.append('      <failure message="%s" type="%s">%s</failure>' % (
                _xml(message), _xml(check), _xml_text('\n'.join(body))))
            lines.append('    </testcase>')
        total_tests += len(ordered)
        total_failures += failures
        suites.append('\n'.join([
            '  <testsuite name="%s" tests="%d" failures="%d" errors="0" skipped="0" time="0" timestamp="%s" '
            'hostname="%s" id="%d" package="aicluster.infra.verify.%s">' % (
                _xml(area), len(ordered), failures, _xml(timestamp), _xml(run.get('inventory') or 'localhost'),
                suite_id, _xml(area)),
            '    <properties>',
            '      <property name="inventory" value="%s"/>' % _xml(run.get('inventory') or ''),
            '      <property name="collection_version" value="%s"/>' % _xml(run.get('collection_version') or ''),
            '      <property name="mode" value="%s"/>' % _xml(run.get('mode') or ''),
            '    </properties>',
        ] + lines + ['    <system-out/>', '    <system-err/>', '  </testsuite>']))
    head = '<testsuites name="%s" tests="%d" failures="%d" errors="0" time="%d">' % (
        _xml('aicluster.infra acceptance: %s' % (run.get('inventory') or '')), total_tests, total_failures, _seconds(run))
    return '\n'.join(['<?xml version="1.0" encoding="UTF-8"?>', head] + suites + ['</testsuites>']) + '\n'


# ------------------------------------------------------------------ Markdown

def _md(text):
    return str(text).replace('|', '\\|').replace('\n', ' ')


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
    lines = ['- Nodes: %d (`%s`)' % (len(nodes), hostlist(nodes))]
    if majority.get('gpu_model') or first.get('gpu_count'):
        lines.append('- GPUs per node: %s x %s' % (first.get('gpu_count', '?'), majority.get('gpu_model', '?')))
    if hcas:
        lines.append('- HCAs per node: %d' % hcas)
    if links:
        lines.append('- Fabric links seen: %d' % len(links))
    if perftest.get('pairs'):
        lines.append('- perftest: %d pair results in %d rounds' % (len(perftest['pairs']), len(perftest.get('rounds') or [])))
    return lines


def summary_markdown(doc, comparison=None):
    run = doc.get('run') or {}
    summary = doc.get('summary') or {}
    out = ['# Acceptance test report: %s' % (run.get('inventory') or 'cluster'), '']
    out.append('**Verdict: %s** (%s of %s nodes passed, %s failed, %s drained)' % (
        summary.get('verdict', '?'), summary.get('passed', '?'), summary.get('nodes', '?'), summary.get('failed', '?'),
        summary.get('drained', '?')))
    out += ['', '| | |', '|---|---|',
            '| Run | %s to %s |' % (_md(run.get('started', '?')), _md(run.get('finished', '?'))),
            '| Inventory | %s |' % _md(run.get('inventory', '?')),
            '| Collection | aicluster.infra %s |' % _md(run.get('collection_version', '?')),
            '| Gate mode | %s |' % _md(run.get('mode', '?')), '']
    out += ['## Cluster and hardware inventory', ''] + _inventory_lines(doc) + ['']
    matrix = version_matrix(doc)
    out += ['## Software and firmware versions', '', '| component | fleet value | nodes | odd ones out |', '|---|---|---|---|']
    for component in matrix['components']:
        others = '; '.join('%s: `%s`' % (value['value'], value['hostlist']) for value in component['values'][1:]) or 'none'
        out.append('| %s | %s | %d of %d | %s |' % (
            _md(component['label']), _md(component['majority']), component['count'], component['reported'], _md(others)))
    out += ['', '## Test plan', '', '| area | tools | parameters | criteria (check ids) |', '|---|---|---|---|']
    for row in test_plan(doc):
        out.append('| %s | %s | %s | %s |' % (row['area'], _md(row['tools']), _md(', '.join(row['parameters']) or '-'),
                                              _md(', '.join(row['checks']) or '-')))
    out += ['', '## Results', '',
            'Baseline is the acceptance threshold; deviation is the median (and the worst node) against it.', '',
            '| test | what | baseline | measured | deviation | passed |', '|---|---|---|---|---|---|']
    for row in results_table(doc):
        out.append('| `%s` | %s | %s | %s | %s | %d of %d |' % (
            row['check'], _md(row['what']), _md(_baseline_text(row)), _md(_measured_text(row)), _md(_deviation_text(row)),
            row['passed'], row['total']))
    failures = failing_checks(doc)
    out += ['', '## Failed items and actions', '']
    if not failures:
        out.append('None.')
    else:
        out += ['| node | check | subject | measured | threshold | action |', '|---|---|---|---|---|---|']
        for row in failures:
            out.append('| %s | `%s` | %s | %s | %s | %s |' % (
                _md(row['node']), row['check'], _md(row['subject']), _md(fmt(row['measured'], row['unit'])),
                _md(fmt(row['threshold'], row['unit'])), _md(row['action'])))
    if comparison is not None:
        out += [''] + _comparison_markdown(comparison)
    out += ['', '## Sign-off', '',
            'The results above were measured on the nodes listed, with the tools and parameters of the test plan.', '',
            '| role | name | signature | date |', '|---|---|---|---|',
            '| Delivery engineer | | | |', '| Customer representative | | | |', '']
    return '\n'.join(out)


def _comparison_markdown(comparison):
    before, after = comparison['before'], comparison['after']
    out = ['## Comparison with the run of %s' % (before.get('started') or 'an earlier run'), '',
           'Verdict %s -> %s; figures listed when they moved by more than %s.' % (
               (before.get('summary') or {}).get('verdict', '?'), (after.get('summary') or {}).get('verdict', '?'),
               fmt_pct(comparison['threshold'], signed=False)), '']
    if comparison['nodes']:
        out += ['| node | before | after |', '|---|---|---|']
        for row in comparison['nodes']:
            out.append('| %s | %s%s | %s%s |' % (row['node'], row['before'], ' (drained)' if row['drained_before'] else '',
                                                 row['after'], ' (drained)' if row['drained_after'] else ''))
    else:
        out.append('No node changed state.')
    for title, key in (('Newly failing', 'broken'), ('Fixed', 'fixed')):
        if comparison[key]:
            items = ['%s `%s` %s' % (item['node'], item['check'], item['subject']) for item in comparison[key][:50]]
            out += ['', '%s: %s' % (title, '; '.join(items))]
    if comparison['moved']:
        out += ['', '| node | check | subject | before | after | change |', '|---|---|---|---|---|---|']
        for item in comparison['moved'][:MOVED_ROWS]:
            out.append('| %s | `%s` | %s | %s | %s | %s |' % (
                item['node'], item['check'], _md(item['subject']), fmt(item['before'], item['unit']),
                fmt(item['after'], item['unit']), fmt_pct(item['change']) if item['change'] is not None else 'from 0'))
    return out


# ------------------------------------------------------------------ HTML

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


def _heat_bands(threshold_fraction):
    t = threshold_fraction if is_number(threshold_fraction) and 0 < threshold_fraction < 1 else 0.9
    high = t + (1 - t) / 2
    bands = [(0.5, '#82071e', '< 50%'), (0.75, '#cf222e', '50-75%'), (t, '#fb8f44', '75%%-%d%%' % round(100 * t)),
             (high, '#8ddb8c', '%d%%-%d%%' % (round(100 * t), round(100 * high))), (float('inf'), '#1a7f37', '>= %d%%' % round(100 * high))]
    kept, last = [], 0.0
    for upper, colour, label in bands:
        if upper > last:
            kept.append((upper, colour, label))
            last = upper
    return kept, t


def _band(fraction, bands):
    for upper, colour, _label in bands:
        if fraction < upper:
            return colour
    return bands[-1][1]


def _html_heatmap(doc, rail, test):
    matrix = heatmap_matrix(doc, rail, test)
    bands, t = _heat_bands(matrix['threshold_fraction'])
    side = len(matrix['labels'])
    cell = max(8, min(28, 360 // max(side, 1)))
    tip_all = len(matrix['cells']) <= 256
    cells = {}
    for key, value in matrix['cells'].items():
        pair = value['worst']
        bad = value['fraction'] < t
        tip = None
        if bad or tip_all:
            what = '%s %s -> %s %s: %s %s (%d%% of line rate)' % (
                pair['client'], pair.get('hca'), pair['server'], pair.get('peer_hca', pair.get('hca')),
                fmt(pair['measured']), pair.get('unit') or '', round(100 * value['fraction']))
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
        out.append('<h3>ib_%s: fraction of line rate per rail</h3>' % _e(test))
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


def html_report(doc, comparison=None):
    run = doc.get('run') or {}
    summary = doc.get('summary') or {}
    verdict = str(summary.get('verdict', 'FAIL'))
    sections = [('failures', 'Failing checks'), ('nccl', 'NCCL'), ('perftest', 'perftest'), ('fabric', 'Fabric links'),
                ('versions', 'Versions'), ('gpu', 'GPU health')]
    if comparison is not None:
        sections.insert(0, ('comparison', 'Comparison'))
    out = ['<!DOCTYPE html>', '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           '<title>%s: %s acceptance report</title>' % (_e(verdict), _e(run.get('inventory') or 'cluster')),
           '<style>%s</style></head><body>' % CSS,
           '<header class="verdict %s"><h1>%s</h1>' % ('pass' if verdict == 'PASS' else 'fail', _e(verdict)),
           '<p>%s &middot; aicluster.infra %s &middot; run %s to %s &middot; gate mode %s</p>' % (
               _e(run.get('inventory', '?')), _e(run.get('collection_version', '?')), _e(run.get('started', '?')),
               _e(run.get('finished', '?')), _e(run.get('mode', '?'))),
           '<div class="counts"><span>%s nodes</span><span>%s passed</span><span>%s failed</span><span>%s drained</span>'
           '<span>%s resumed</span></div></header>' % tuple(
               _e(summary.get(key, '?')) for key in ('nodes', 'passed', 'failed', 'drained', 'resumed')),
           '<nav>%s</nav><main>' % ''.join('<a href="#%s">%s</a>' % (anchor, title) for anchor, title in sections)]
    if comparison is not None:
        out += _section_comparison(comparison)
    out += _section_failures(doc)
    out += _section_nccl(doc)
    out += _section_perftest(doc)
    out += _section_fabric(doc)
    out += _section_versions(doc)
    out += _section_gpu(doc)
    out.append('<p class="note">Written by aicluster.infra.acceptance_report from results.json (%s).</p>' % _e(doc.get('schema', '')))
    out.append('</main></body></html>')
    return '\n'.join(out) + '\n'


def build_outputs(doc, compare_doc=None, formats=('html', 'junit', 'markdown'), compare_threshold=DEFAULT_COMPARE_THRESHOLD):
    """{file name: text} for the requested formats (OUTPUT_NAMES) of a valid results document."""
    comparison = compare(compare_doc, doc, compare_threshold) if compare_doc is not None else None
    renderers = {'html': lambda: html_report(doc, comparison), 'junit': lambda: junit_xml(doc),
                 'markdown': lambda: summary_markdown(doc, comparison)}
    return dict((OUTPUT_NAMES[name], renderers[name]()) for name in formats)
