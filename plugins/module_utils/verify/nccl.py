# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Area nccl: nccl-tests all_reduce_perf on each node alone, then across the nodes that passed.

``decide_nccl`` judges every node's single-node run at once (each output
parsed once; the slow-node check needs the fleet median);
``decide_nccl_multi_node`` judges the multi-node run.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils.nccl_tests import parse_nccl_tests
from ansible_collections.aicluster.infra.plugins.module_utils.verify._common import failed, fmt, parse_once, ran
from ansible_collections.aicluster.infra.plugins.module_utils.verify.results import new_result

SINGLE_CHECKS = ('nccl.wrong', 'nccl.busbw', 'nccl.slow_node')


def parse(stdout):
    """nccl-tests output parsed, or ``{'rows': [], 'errors': [why]}`` when it is empty or not nccl-tests output."""
    errors = []
    parsed = parse_once(parse_nccl_tests, stdout, 'all_reduce_perf', errors)
    return parsed if parsed is not None else {'rows': [], 'errors': errors}


def measure(parsed, large_bytes):
    """(busbw GB/s at the large sizes, #wrong total, error lines) of one parsed nccl-tests run.

    busbw: the highest bus bandwidth (out-of-place or in-place) among rows of
    at least ``large_bytes``; when no row is that large, of the largest row.
    """
    parsed = parsed or {}
    rows = parsed.get('rows') or []
    wrong = 0
    for row in rows:
        for key in ('oop_wrong', 'ip_wrong'):
            if row.get(key):
                wrong += int(row[key])
    if parsed.get('out_of_bounds'):
        wrong += int(parsed['out_of_bounds'])
    large = [row for row in rows if (row.get('size') or 0) >= int(large_bytes)]
    if not large and rows:
        biggest = max(row.get('size') or 0 for row in rows)
        large = [row for row in rows if row.get('size') == biggest]
    values = [value for row in large for value in (row.get('oop_busbw'), row.get('ip_busbw')) if value is not None]
    return (max(values) if values else None), wrong, list(parsed.get('errors') or [])


def threshold(table, model, override=None):
    """The busbw threshold (GB/s) for a GPU model: ``override`` when set, else the table's entry whose key the
    model name contains, longest key first; None when none matches."""
    if override not in (None, '', 0, '0'):
        return float(override)
    name = (model or '').lower()
    for key in sorted(table or {}, key=len, reverse=True):
        if key.lower() in name:
            return float(table[key])
    return None


def median(values):
    """Median of the values (None ignored); None when there are none."""
    values = sorted(float(v) for v in values if v is not None)
    if not values:
        return None
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2.0


def evaluate_nccl(parsed, limit, fleet_median=None, expected=None):
    """nccl.wrong, nccl.busbw and nccl.slow_node for one node's single-node run.

    ``limit``: the busbw threshold (None: no threshold for the model, a
    failure asking for one); ``fleet_median``: None skips nccl.slow_node.
    ``expected``: ``slow_fraction``, ``large_bytes``, ``model``.
    """
    expected = expected or {}
    busbw, wrong, errors = measure(parsed, expected.get('large_bytes') or 1 << 30)
    rows = (parsed or {}).get('rows')
    ok = wrong == 0 and not errors and bool(rows)
    results = [new_result('nccl.wrong', 'node', wrong, 0, ok, 'nccl-tests #wrong %d%s' % (wrong, '' if ok else (
        '; the test failed: %s' % errors[0] if errors else '; no result rows' if not rows else
        '; wrong results mean a broken GPU or NVLink: run dcgmi diag -r 3 and RMA')))]
    if limit is None:
        results.append(new_result('nccl.busbw', 'node', busbw, None, False,
                                  'no busbw threshold for GPU model %s; set verify_nccl_busbw_min_gbs or add the model '
                                  'to verify_nccl_busbw_table' % (expected.get('model') or 'unknown'), unit='GB/s'))
    else:
        ok = busbw is not None and busbw >= float(limit)
        results.append(new_result('nccl.busbw', 'node', busbw, float(limit), ok, 'all_reduce busbw %s GB/s %s %s GB/s%s' % (
            fmt(busbw) if busbw is not None else 'none', '>=' if ok else '<', fmt(float(limit)),
            '' if ok else '; check nvidia-smi nvlink -s, topo -m and the fabric manager'), unit='GB/s'))
    if fleet_median is not None:
        slow_fraction = float(expected.get('slow_fraction', 0.1))
        floor = round(float(fleet_median) * (1.0 - slow_fraction), 2)
        ok = busbw is not None and busbw >= floor
        results.append(new_result('nccl.slow_node', 'node', busbw, floor, ok,
                                  'busbw %s GB/s is %s the fleet median %s GB/s minus %d%% (%s GB/s)%s' % (
                                      fmt(busbw) if busbw is not None else 'none', 'within' if ok else 'below',
                                      fmt(float(fleet_median)), int(round(slow_fraction * 100)), fmt(floor),
                                      '' if ok else ': a slow node; compare its clocks, power and PCIe links with a good node'),
                                  unit='GB/s'))
    return results


def decide_nccl(observations, expected):
    """The verify_nccl role's single-node decision for every node at once.

    ``observations``: node -> {``gpu_info``: module result, ``run``: the
    registered all_reduce_perf command (absent or skipped: single-node
    disabled)}. ``expected``: ``busbw_table``, ``busbw_min_gbs``,
    ``slow_node`` (bool), ``slow_fraction``, ``large_bytes``.
    Returns ``{'nodes', 'raw', 'single_node', 'fleet_median', 'model'}``.
    """
    parsed, raw, nodes, order = {}, {}, {}, list(observations)
    for node in order:
        observed = observations[node] or {}
        info, run = observed.get('gpu_info') or {}, observed.get('run')
        raw[node], nodes[node] = {}, []
        if failed(info):
            nodes[node] = [new_result('nccl.wrong', 'node', None, 0, False,
                                      'nccl-tests could not run: %s' % (info.get('msg') or 'unknown error'))]
            continue
        if not ran(run):
            continue
        parsed[node] = parse(run.get('stdout'))
        model = ((info.get('gpus') or [{}])[0] or {}).get('name') or ''
        busbw = measure(parsed[node], expected.get('large_bytes') or 1 << 30)[0]
        raw[node] = {'model': model, 'busbw': busbw, 'rc': run.get('rc'), 'nccl': parsed[node]}
    fleet_median = median(raw[node].get('busbw') for node in order)
    for node in order:
        if node in parsed:
            limit = threshold(expected.get('busbw_table'), raw[node]['model'], expected.get('busbw_min_gbs'))
            nodes[node] = evaluate_nccl(parsed[node], limit, fleet_median if expected.get('slow_node', True) else None,
                                        dict(expected, model=raw[node]['model']))
    return {'nodes': nodes, 'raw': raw, 'fleet_median': fleet_median,
            'single_node': dict((node, {'busbw': raw[node]['busbw'], 'rc': raw[node]['rc']}) for node in order if node in parsed),
            'model': (raw[order[0]].get('model') or '') if order else ''}


def evaluate_multi_node(parsed, limit, nodes, large_bytes=1 << 30, launch_error=None):
    """nccl.multi_node_busbw for every node of a multi-node run: node -> [result], and the figures.

    ``launch_error``: why the launcher (srun, mpirun) gave no result, e.g. its
    last stderr line; it comes first among the errors, so the message says why.
    """
    busbw, wrong, errors = measure(parsed, large_bytes)
    if launch_error:
        errors = [launch_error] + errors
    ok = busbw is not None and limit is not None and busbw >= float(limit) and wrong == 0 and not errors
    message = '%d-node all_reduce busbw %s GB/s %s %s GB/s%s' % (
        len(nodes), fmt(busbw) if busbw is not None else 'none', '>=' if ok else 'vs',
        fmt(float(limit)) if limit is not None else 'no threshold',
        '' if ok else '; %s' % (errors[0] if errors else '#wrong %d' % wrong if wrong else
                                'check the per-node perftest results and NCCL_IB_HCA'))
    out = dict((node, [new_result('nccl.multi_node_busbw', 'cluster', busbw, limit, ok, message, unit='GB/s')])
               for node in nodes)
    return {'nodes': out, 'summary': {'nodes': list(nodes), 'busbw': busbw, 'wrong': wrong, 'threshold': limit,
                                      'passed': ok, 'errors': errors}}


def decide_nccl_multi_node(run, expected):
    """The multi-node decision: ``run`` the registered srun command (skipped: no run), ``expected``:
    ``participants``, ``busbw_table``, ``busbw_min_gbs``, ``model``, ``large_bytes`` and ``slurm_error`` (why Slurm
    could not be read, or empty). Returns ``{'fleet', 'summary'}``."""
    participants = list(expected.get('participants') or [])
    if not ran(run):
        why = ('Slurm unreachable: %s' % expected['slurm_error']) if expected.get('slurm_error') is not None else \
            'fewer than two nodes passed and are in service'
        return {'fleet': {}, 'summary': {'nodes': participants, 'passed': None, 'skipped': why}}
    limit = threshold(expected.get('busbw_table'), expected.get('model') or '', expected.get('busbw_min_gbs'))
    launch_error = ''
    if (run.get('rc') or 0) != 0:
        said = [line for line in (run.get('stderr') or '').splitlines() if line]
        launch_error = 'srun exited %s: %s' % (run.get('rc'), said[-1] if said else 'no message')
    evaluated = evaluate_multi_node(parse(run.get('stdout')), limit, participants, expected.get('large_bytes') or 1 << 30,
                                    launch_error)
    return {'fleet': evaluated['nodes'], 'summary': evaluated['summary']}
