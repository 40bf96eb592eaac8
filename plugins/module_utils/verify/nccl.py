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

import re

from ansible_collections.aicluster.infra.plugins.module_utils.gpu_models import expected_keys, model_key
from ansible_collections.aicluster.infra.plugins.module_utils.nccl_tests import parse_nccl_tests
from ansible_collections.aicluster.infra.plugins.module_utils.verify import nccl_bisect, nccl_env
from ansible_collections.aicluster.infra.plugins.module_utils.verify._common import failed, fmt, for_node, parse_once, ran
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


def threshold(table, gpu, override=None):
    """The busbw threshold (GB/s) for a GPU: ``override`` when set, else the table's entry for its model key
    (``gpu_models``: the exact nvidia-smi name and PCI device id, so an H100 PCIe or NVL never gets the SXM bar),
    or for its family (``h100`` means the SXM part); None when none matches (the check then asks for one).
    ``gpu``: a gpu_info GPU (``name``, ``pci_device_id``) or an nvidia-smi name."""
    if override not in (None, '', 0, '0'):
        return float(override)
    key = model_key(gpu if isinstance(gpu, dict) else {'name': gpu})
    if key is None:
        return None
    for entry in sorted(table or {}):
        if str(entry).strip().lower() == key or key in (expected_keys(entry) or []):
            return float(table[entry])
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
        first = (info.get('gpus') or [{}])[0] or {}
        busbw = measure(parsed[node], expected.get('large_bytes') or 1 << 30)[0]
        raw[node] = {'model': first.get('name') or '', 'gpu': {'name': first.get('name'), 'pci_device_id': first.get('pci_device_id')},
                     'busbw': busbw, 'rc': run.get('rc'), 'nccl': parsed[node]}
    fleet_median = median(raw[node].get('busbw') for node in order)
    for node in order:
        if node in parsed:
            mine = for_node(expected, node)
            limit = threshold(mine.get('busbw_table'), raw[node].pop('gpu'), mine.get('busbw_min_gbs'))
            nodes[node] = evaluate_nccl(parsed[node], limit, fleet_median if expected.get('slow_node', True) else None,
                                        dict(expected, model=raw[node]['model']))
    return {'nodes': nodes, 'raw': raw, 'fleet_median': fleet_median,
            'single_node': dict((node, {'busbw': raw[node]['busbw'], 'rc': raw[node]['rc']}) for node in order if node in parsed),
            'model': (raw[order[0]].get('model') or '') if order else ''}


_NETWORK_RE = re.compile(r'NCCL INFO (?:Using network|NET/)\s*(?P<net>[A-Za-z]+)')


def networks(stdout):
    """The transports NCCL says it uses (``NCCL INFO Using network IB``, ``NET/Socket``), with NCCL_DEBUG=INFO."""
    found = []
    for match in _NETWORK_RE.finditer(stdout or ''):
        if match.group('net') not in found:
            found.append(match.group('net'))
    return found


def launch_result(parsed, launched, stdout=''):
    """nccl.multi_node_launch: one job over every launched node and GPU, on the RDMA network.

    Without PMI wiring, srun starts each task as its own single-rank (or single-node) job: the output then
    holds several tables, repeated rank numbers and fewer ranks per run than were launched. ``launched``:
    ``nodes`` (names), ``ranks`` (total GPUs = ranks x GPUs per rank). None when nothing was launched.
    """
    ranks = (parsed or {}).get('ranks') or []
    numbers = [rank.get('rank') for rank in ranks]
    hosts = sorted(set(rank.get('host') for rank in ranks if rank.get('host')))
    nodes = list(launched.get('nodes') or [])
    want = int(launched.get('ranks') or 0)
    problems = []
    if sorted(numbers) != list(range(want)):
        runs = numbers.count(0)
        problems.append('%d rank lines (ranks %s) where one job of %d ranks was launched%s' % (
            len(numbers), _span(numbers), want,
            ': %d separate runs, so the tasks did not join one job (no PMI: use --mpi=pmix and nccl-tests built with MPI=1)'
            % runs if runs > 1 else ''))
    short = [node for node in nodes if node not in hosts and node.split('.')[0] not in [h.split('.')[0] for h in hosts]]
    if short:
        problems.append('no rank on %s' % ', '.join(short))
    transports = networks(stdout)
    if 'Socket' in transports:
        problems.append('NCCL fell back to sockets (NCCL INFO Using network Socket): check NCCL_IB_HCA and the RDMA stack')
    measured = '%d ranks on %d hosts' % (len(numbers), len(hosts))
    threshold = '%d ranks on %d hosts' % (want, len(nodes))
    return new_result('nccl.multi_node_launch', 'cluster', measured, threshold, not problems,
                      'one job of %s%s' % (threshold, ', network %s' % '/'.join(transports) if transports else '')
                      if not problems else 'the multi-node run is not one job over the launched nodes: %s'
                      % '; '.join(problems))


def _span(numbers):
    if not numbers:
        return 'none'
    return '%s-%s' % (min(numbers), max(numbers)) if len(set(numbers)) == len(numbers) else \
        '%s, repeated' % ','.join(str(n) for n in sorted(set(numbers)))


def failed_ranks(parsed, nodes):
    """node -> [failure] of the run's nodes whose own process failed: a ``HOST: Test NCCL|CUDA failure`` line other
    than NCCL's remote error ("remote process exited or there was a network error"), which every other process
    prints once one has failed. Hosts are matched by short name (nccl-tests prints the short host name)."""
    short = dict((str(node).partition('.')[0], node) for node in nodes)
    out = {}
    for failure in (parsed or {}).get('failures') or []:
        node = short.get(str(failure.get('host') or '').partition('.')[0])
        if node is not None and not failure.get('remote'):
            out.setdefault(node, []).append(failure)
    return out


def attributed(failed, nodes):
    """The nodes a failed run is pinned on: those whose own rank failed, when they are at most half of the run's
    nodes (one of two). A failure on most nodes (or unattributed) stays a cluster-level result."""
    if failed and len(failed) < len(nodes) and len(failed) <= max(1, len(nodes) // 2):
        return sorted(failed)
    return []


def evaluate_multi_node(parsed, limit, nodes, large_bytes=1 << 30, launch_error=None, launched=None, stdout=''):
    """The multi-node run's cluster-level results (``nccl.multi_node_launch`` when ``launched`` is given, and
    ``nccl.multi_node_busbw``) and its figures.

    A multi-node run is a property of the set of nodes, not of one node: its failure fails the acceptance
    verdict and drains nobody (the per-node checks and perftest pairs localise a culprit). ``summary.rank_failed``:
    the nodes whose own rank failed (``attributed``), which ``decide_nccl_multi_node`` fails by name.
    ``launch_error``: why the launcher (srun, mpirun) gave no result, e.g. its
    last stderr line; it comes first among the errors, so the message says why.
    """
    busbw, wrong, errors = measure(parsed, large_bytes)
    if launch_error:
        errors = [launch_error] + errors
    cluster = []
    if launched is not None and not launch_error:
        cluster.append(launch_result(parsed, launched, stdout))
    one_job = all(result['passed'] for result in cluster)
    ok = busbw is not None and limit is not None and busbw >= float(limit) and wrong == 0 and not errors and one_job
    message = '%d-node all_reduce busbw %s GB/s %s %s GB/s%s' % (
        len(nodes), fmt(busbw) if busbw is not None else 'none', '>=' if ok else 'vs',
        fmt(float(limit)) if limit is not None else 'no threshold',
        '' if ok else '; %s' % (errors[0] if errors else '#wrong %d' % wrong if wrong else
                                'not one job over the nodes (see nccl.multi_node_launch)' if not one_job else
                                'check the per-node perftest results and NCCL_IB_HCA'))
    cluster.append(new_result('nccl.multi_node_busbw', 'cluster', busbw, limit, ok, message, unit='GB/s',
                              nodes=list(nodes)))
    failed = failed_ranks(parsed, nodes)
    culprits = attributed(failed, nodes) if not ok else []
    summary = {'nodes': list(nodes), 'busbw': busbw, 'wrong': wrong, 'threshold': limit, 'passed': ok, 'errors': errors}
    if culprits:
        summary['rank_failed'] = dict((node, ["%s: Test %s failure %s '%s'" % (
            failure['host'], failure['kind'], failure['where'], failure['reason']) for failure in failed[node]])
            for node in culprits)
    return {'cluster': cluster, 'summary': summary}


def network_limit(ib_outcome, participants, fraction):
    """The multi-node busbw bar from the network: ``fraction`` x the GPU-fabric bandwidth of a node (its checked
    HCAs' port rates / 8, in GB/s; the best participant, i.e. the design), or None when the ib outcome is absent."""
    if not ib_outcome or fraction in (None, '', 0):
        return None
    raw, checked = ib_outcome.get('raw') or {}, ib_outcome.get('checked') or {}
    totals = []
    for node in participants:
        hcas = dict((hca.get('name'), hca) for hca in (((raw.get(node) or {}).get('ib_info') or {}).get('hcas') or []))
        rate = 0.0
        for name in checked.get(node) or []:
            ports = (hcas.get(name) or {}).get('ports') or []
            rate += max([float(port.get('rate_gbps') or 0) for port in ports] or [0])
        if rate:
            totals.append(rate / 8.0)
    return round(float(fraction) * max(totals), 2) if totals else None


def _judge(run, nodes, limit, expected):
    """evaluate_multi_node for one registered srun result over ``nodes``."""
    launch_error = ''
    if (run.get('rc') or 0) != 0:
        said = [line for line in (run.get('stderr') or '').splitlines() if line]
        launch_error = 'srun exited %s: %s' % (run.get('rc'), said[-1] if said else 'no message')
    per_node = int(expected.get('node_ranks') or 0)
    launched = {'nodes': nodes, 'ranks': per_node * len(nodes)} if per_node else None
    return evaluate_multi_node(parse(run.get('stdout')), limit, nodes, expected.get('large_bytes') or 1 << 30,
                               launch_error, launched, run.get('stdout') or '')


def _bisect(participants, first, limit, expected):
    """The bisection after a failed run (``nccl_bisect``): its state, the runs judged, and node -> [result] for
    the nodes it localised the failure on (drained like any node fault, within the gate's breaker)."""
    runs = {frozenset(participants): False}
    judged = []
    for item in expected.get('bisect_runs') or []:
        nodes = sorted(item.get('nodes') or [])
        if len(nodes) < 2 or not ran(item):
            continue
        summary = _judge(item, nodes, limit, expected)['summary']
        runs[frozenset(nodes)] = bool(summary['passed'])
        judged.append({'nodes': nodes, 'busbw': summary['busbw'], 'passed': bool(summary['passed'])})
    state = nccl_bisect.plan(participants, runs)
    fleet = {}
    for node in state['culprits']:
        with_node = [run for run in judged if node in run['nodes'] and not run['passed']]
        fleet[node] = [new_result(
            'nccl.multi_node_busbw', 'bisection', min([r['busbw'] for r in with_node if r['busbw'] is not None] or [None]),
            limit, False, 'the failed %d-node run (%s GB/s) is localised to this node: %d runs with it failed, the runs '
            'without it passed; check its HCAs (perftest), NCCL_IB_HCA and GPU-NIC affinity' % (
                len(participants), fmt(first['busbw']) if first['busbw'] is not None else 'none', len(with_node)), unit='GB/s')]
    return dict(state, runs=judged), fleet


def decide_nccl_multi_node(run, expected):
    """The multi-node decision: ``run`` the registered srun command (skipped: no run), ``expected``:
    ``participants``, ``busbw_table``, ``busbw_min_gbs``, ``model``, ``large_bytes``, ``slurm_error`` (why Slurm
    could not be read, or empty), ``node_ranks`` (GPUs per node in the run), ``network_fraction`` and
    ``ib_outcome`` (the verify_ib outcome: the bar is then the fraction of the nodes' GPU-fabric bandwidth),
    ``bisect`` (bool) and ``bisect_runs`` (the reruns so far, registered srun results with their ``nodes``);
    ``env_check`` (bool: judge nccl.env from the run's NCCL_DEBUG=INFO lines, module_utils/verify/nccl_env.py) with
    ``environment`` (the run's) and ``nccl_conf_b64`` (node -> its /etc/nccl.conf as slurp read it).
    Returns ``{'cluster', 'summary', 'fleet'}``: cluster-level results that fail the verdict and drain nobody,
    and the nodes the bisection localised the failure on; ``summary.bisect`` says what to rerun next.
    """
    participants = list(expected.get('participants') or [])
    if not ran(run):
        why = ('Slurm unreachable: %s' % expected['slurm_error']) if expected.get('slurm_error') is not None else \
            'fewer than two nodes passed and are in service'
        return {'cluster': [], 'fleet': {}, 'summary': {'nodes': participants, 'passed': None, 'skipped': why}}
    limit = None
    if expected.get('busbw_min_gbs') in (None, '', 0, '0'):
        limit = network_limit(expected.get('ib_outcome'), participants, expected.get('network_fraction'))
    if limit is None:
        limit = threshold(expected.get('busbw_table'), expected.get('model') or '', expected.get('busbw_min_gbs'))
    evaluated = _judge(run, participants, limit, expected)
    evaluated['fleet'] = {}
    summary = evaluated['summary']
    if summary.get('rank_failed'):
        # the run failed on these nodes' own ranks (the others only saw them go): those nodes fail by name
        for node, lines in sorted(summary['rank_failed'].items()):
            evaluated['fleet'][node] = [new_result(
                'nccl.multi_node_busbw', 'rank', None, limit, False,
                "the %d-node run failed on this node's rank (%s); the other nodes reported only the remote error; "
                'check its GPUs and HCAs (perftest --use_cuda, nvidia_peermem) and run all_reduce_perf with it and a '
                'node known good' % (len(participants), lines[0]), unit='GB/s')]
        evaluated['cluster'][-1]['message'] += '; failed on the rank of %s' % ', '.join(sorted(summary['rank_failed']))
    launch_ok = all(result['passed'] for result in evaluated['cluster'] if result['check'] == 'nccl.multi_node_launch')
    if expected.get('bisect') and not summary['passed'] and launch_ok and not summary['errors'] and limit is not None \
            and len(participants) >= 2:
        summary['bisect'], evaluated['fleet'] = _bisect(participants, summary, limit, expected)
        state = summary['bisect']
        busbw = evaluated['cluster'][-1]
        busbw['message'] += ('; bisection: localised to %s' % ', '.join(state['culprits']) if state['culprits'] else
                             '; bisection: not localised to a node (%s)' % '; '.join(
                                 ', '.join(nodes) for nodes in state['unresolved']) if state['done'] else
                             '; bisection stopped before it localised the failure (verify_nccl_bisect_rounds)')
    stdout = run.get('stdout') or ''
    if expected.get('env_check') and ((run.get('rc') or 0) == 0 or 'NCCL INFO' in stdout):
        # nccl.env: each node's transport, devices, GPU Direct RDMA and RoCE GID as NCCL logged them (a node result)
        for node, results in sorted(nccl_env.decide_nccl_env(stdout, participants, expected).items()):
            evaluated['fleet'][node] = list(evaluated['fleet'].get(node) or []) + results
    return evaluated
