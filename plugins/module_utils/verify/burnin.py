# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Area burnin: a node's burn-in samples judged over the whole run (docs/burnin.md "Samples" and "The gate").

A sample is one JSON line a node's sampler appends at each interval (schema ``aicluster.infra/burnin-sample/v1``):
its GPUs, GPU-fabric ports, BMC sensors, the Xids since the run started and the load iterations finished since the
last sample. ``read_samples`` turns one node's file into samples (a line written twice, as after a resumed collect,
counts once); ``judge_node`` gives the node's ``burnin.*`` results; ``judge_fleet`` adds the load figures against
the fleet's median per iteration; ``fatal`` says which results stop a node early (a GPU lost, a fatal Xid, a port
down). Counters are cumulative in the samples and judged by their rise over the run; a counter that falls (a driver
restart) counts again from zero. Pure functions: no I/O.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.aicluster.infra.plugins.module_utils.burnin_sample import SCHEMA
from ansible_collections.aicluster.infra.plugins.module_utils.ib_counters import PERFQUERY_BASIC_BITS
from ansible_collections.aicluster.infra.plugins.module_utils.kernel_log import FAIL_BUCKETS, xid_bucket, xid_name
from ansible_collections.aicluster.infra.plugins.module_utils.verify._common import fmt
from ansible_collections.aicluster.infra.plugins.module_utils.verify.gpu_checks import TROUBLE_CLOCK_EVENTS
from ansible_collections.aicluster.infra.plugins.module_utils.verify.link import IB_ERRORS as LINK_IB_ERRORS, ROCE_PHY_ERRORS
from ansible_collections.aicluster.infra.plugins.module_utils.verify.results import new_result


DEFAULTS = {
    'interval_s': 900,             # the delivery plan: a sample every 15 minutes
    'gap_factor': 2,               # burnin.samples: the longest gap allowed, in intervals
    'gpu_headroom_min_c': 0,       # nvidia-smi T.Limit: 0 is the GPU's max operating temperature
    'gpu_temp_max_c': None,        # an absolute limit where the driver gives no T.Limit (optional)
    'ber_max': 1e-12,              # the delivery plan
    'inlet_max_c': 35,             # ASHRAE TC 9.9 class A2 allowable
    'load_slow_fraction': 0.1,     # burnin.load: at least 90% of the fleet median
    'fatal_xids': [],
}

# thermal clock events (gpu_checks.TROUBLE_CLOCK_EVENTS less the power brake, which burnin.bmc's PSUs explain)
THERMAL_EVENTS = tuple(name for name, _text in TROUBLE_CLOCK_EVENTS if name != 'hw_power_brake_slowdown')
# link errors (IBA PortCounters by perfquery's names; RoCE by ethtool -S's); symbol errors are judged as a ratio
# (PortRcvSwitchRelayErrors and VL15Dropped are not: multicast an HCA is not a member of, and dropped SMPs; as
# ib.link_errors, verify/link.py says why)
SYMBOL_COUNTERS = ('SymbolErrorCounter', 'rx_symbol_err_phy')
LINK_COUNTERS = tuple(name for name in LINK_IB_ERRORS + ROCE_PHY_ERRORS if name not in SYMBOL_COUNTERS)
DROP_RE = re.compile(r'^(?:rx_prio[0-7]_discards|rx_discards_phy)$')
ACTIVE_STATES = ('Active', 'ACTIVE', 'up', 'UP')
# A discrete PSU or redundancy sensor keeps status ok while it asserts a failure state: the states that fail it, as
# ipmitool prints them (include/ipmitool/ipmi_sel.h: Power Supply sensor-specific offsets 01-07, the generic
# redundancy states 01-07, Predictive Failure Asserted); 'Presence detected', 'Fully Redundant' and the deasserted
# forms pass
BMC_FAILURE_RE = re.compile(r'Failure detected|Predictive [Ff]ailure(?! Deasserted)|AC lost|AC out-of-range|Config Error|'
                            r'Power Supply Inactive|Redundancy Lost|Redundancy Degraded|Non-Redundant')


def _problem(problems, number, text):
    problems.append('line %d: %s' % (number, text))


def read_samples(text, node=None):
    """One node's samples file (JSON lines) -> (samples in seq order, problems).

    Blank lines are skipped; a line that is not a sample of this schema (or of another node than ``node``) is a
    problem, not a failure of the whole file; a seq seen twice counts once (the first).
    """
    samples, problems, seen = [], [], set()
    for number, line in enumerate((text or '').splitlines(), 1):
        if not line.strip():
            continue
        try:
            sample = json.loads(line)
        except ValueError as exc:
            _problem(problems, number, 'not JSON (%s)' % exc)
            continue
        if not isinstance(sample, dict) or sample.get('schema') != SCHEMA:
            _problem(problems, number, 'not a %s sample' % SCHEMA)
            continue
        if not isinstance(sample.get('seq'), int) or not isinstance(sample.get('elapsed_s'), (int, float)):
            _problem(problems, number, 'a sample without an integer seq and a numeric elapsed_s')
            continue
        if node is not None and sample.get('node') != node:
            _problem(problems, number, 'a sample of node %s in the file of %s' % (sample.get('node'), node))
            continue
        if sample['seq'] in seen:
            continue
        seen.add(sample['seq'])
        samples.append(sample)
    samples.sort(key=lambda sample: sample['seq'])
    return samples, problems


def rise(values):
    """How much a cumulative counter rose over ``values`` (None skipped); a fall is a reset, counted from 0."""
    total, last = 0, None
    for value in values:
        if value is None:
            continue
        if last is not None:
            total += value - last if value >= last else value
        last = value
    return total


def _settings(expected):
    settings = dict(DEFAULTS)
    settings.update(dict((key, value) for key, value in (expected or {}).items() if value is not None))
    return settings


def _at(sample):
    return sample.get('time') or 'at %ss' % fmt(sample.get('elapsed_s'))


def _samples_result(samples, problems, settings, planned_s):
    limit = settings['interval_s'] * settings['gap_factor']
    if not samples:
        return new_result('burnin.samples', 'node', None, limit, False,
                          'no sample recorded%s' % ('; ' + '; '.join(problems[:3]) if problems else ''), unit='s')
    times = [0.0] + [float(sample['elapsed_s']) for sample in samples]
    if planned_s:
        times.append(float(planned_s))
    gaps = [later - earlier for earlier, later in zip(times, times[1:])]
    gap = max(gaps) if gaps else 0.0
    errors = sorted(set(error for sample in samples for error in sample.get('errors') or []))
    passed = gap <= limit
    message = '%d samples over %ss, longest gap %ss (limit %ss)' % (len(samples), fmt(times[-1]), fmt(gap), fmt(limit))
    if errors or problems:
        message += '; sampler said: %s' % '; '.join((errors + problems)[:4])
    return new_result('burnin.samples', 'node', gap, limit, passed, message, unit='s')


def _gpus(samples):
    """GPU index -> [(sample, gpu)] in sample order."""
    out = {}
    for sample in samples:
        for gpu in sample.get('gpus') or []:
            if isinstance(gpu, dict) and gpu.get('index') is not None:
                out.setdefault(gpu['index'], []).append((sample, gpu))
    return out


def _present_results(samples):
    read = [sample for sample in samples if sample.get('gpus') is not None]  # None: nvidia-smi failed, not a GPU lost
    if not read:
        return [new_result('burnin.gpu_present', 'node', None, None, False, 'no sample could read the GPUs (nvidia-smi): %s'
                           % '; '.join(sorted(set(error for sample in samples for error in sample.get('errors') or [])))[:200])]
    first = set(gpu.get('index') for gpu in read[0]['gpus'] if isinstance(gpu, dict))
    for sample in read:
        now = set(gpu.get('index') for gpu in sample.get('gpus') or [] if isinstance(gpu, dict))
        lost = sorted(first - now)
        if lost:
            return [new_result('burnin.gpu_present', 'GPU %s' % ', '.join(str(index) for index in lost), len(now), len(first), False,
                               'GPU %s missing from the sample %s (%d of %d GPUs answered)' % (
                                   ', '.join(str(index) for index in lost), _at(sample), len(now), len(first)),
                               first_seen=sample.get('time'), fatal=True)]
    return [new_result('burnin.gpu_present', 'node', len(first), len(first), True, 'all %d GPUs in every sample' % len(first))]


def _thermal_result(index, series, settings):
    label = 'GPU %s' % index
    headrooms = [(sample, gpu.get('temp_headroom_c')) for sample, gpu in series if gpu.get('temp_headroom_c') is not None]
    temps = [(sample, gpu.get('temp_c')) for sample, gpu in series if gpu.get('temp_c') is not None]
    hottest = max(temps, key=lambda item: item[1]) if temps else (None, None)
    slowed = [(sample, sorted(set(gpu.get('clock_events') or []) & set(THERMAL_EVENTS))) for sample, gpu in series]
    slowed = [(sample, events) for sample, events in slowed if events]
    if headrooms:
        sample, least = min(headrooms, key=lambda item: item[1])
        limit, measured = settings['gpu_headroom_min_c'], least
        hot = least < limit
        figure = 'least headroom to its max operating temperature %s C %s (limit %s C)' % (fmt(least), _at(sample), fmt(limit))
    elif settings.get('gpu_temp_max_c') is not None and temps:
        sample, measured = hottest
        limit = settings['gpu_temp_max_c']
        hot = measured > limit
        figure = 'hottest %s C %s (limit %s C; the driver gives no T.Limit)' % (fmt(measured), _at(sample), fmt(limit))
    else:
        sample, measured, limit, hot = hottest[0], hottest[1], None, False
        figure = ('hottest %s C %s, not judged: no T.Limit from the driver and no burnin_gpu_temp_max_c'
                  % (fmt(measured), _at(sample)) if temps else 'no temperature read')
    if slowed:
        first, events = slowed[0]
        return new_result('burnin.gpu_thermal', label, measured, limit, False, '%s %s %s; %s' % (
            label, ', '.join(events), 'from %s (%d samples)' % (_at(first), len(slowed)), figure), unit='C',
            first_seen=first.get('time'))
    if hot:
        return new_result('burnin.gpu_thermal', label, measured, limit, False, '%s %s' % (label, figure), unit='C',
                          first_seen=sample.get('time'))
    return new_result('burnin.gpu_thermal', label, measured, limit, True, '%s %s' % (label, figure), unit='C')


def _memory_result(index, series):
    label = 'GPU %s' % index
    ecc = rise(gpu.get('ecc_uncorrected') for _sample, gpu in series)
    remap = [(sample, name) for sample, gpu in series for name in ('remap_pending', 'remap_failure') if gpu.get(name)]
    if ecc or remap:
        first = _first_increase([(sample, gpu.get('ecc_uncorrected')) for sample, gpu in series]) if ecc else remap[0][0]
        what = ['%d new uncorrectable ECC errors' % ecc] if ecc else []
        what += sorted(set(name.replace('_', ' ') for _sample, name in remap))
        return new_result('burnin.gpu_memory', label, ecc, 0, False, '%s %s, first %s' % (label, ', '.join(what), _at(first)),
                          first_seen=first.get('time'))
    return new_result('burnin.gpu_memory', label, 0, 0, True, '%s no new uncorrectable ECC error, no row remap' % label)


def _xid_results(samples, settings):
    extra = set(int(code) for code in settings.get('fatal_xids') or [])
    first_seen, events = {}, {}
    for sample in samples:
        for event in sample.get('xids') or []:
            key = (event.get('code'), event.get('pci'), event.get('time'))
            events.setdefault(key, event)
            first_seen.setdefault(key, sample)
    bad = [(key, event) for key, event in sorted(events.items(), key=lambda item: str(item[0]))
           if event.get('code') in extra or xid_bucket(event.get('code'), event.get('text') or '') in FAIL_BUCKETS]
    if not bad:
        other = sorted(set(event.get('code') for event in events.values()))
        return [new_result('burnin.xid', 'node', other, 'none fatal', True, 'no Xid needing a reset, reboot or support%s' % (
            ' (seen, no node action: %s)' % ', '.join('Xid %s' % code for code in other) if other else ''))]
    results = []
    for key, event in bad:
        sample = first_seen[key]
        text = 'Xid %s (%s) on %s, seen %s: %s' % (event.get('code'), xid_name(event.get('code')), event.get('pci') or 'an unnamed GPU',
                                                   _at(sample), (event.get('text') or '')[:120])
        results.append(new_result('burnin.xid', 'GPU %s' % (event.get('pci') or '?'), event.get('code'), 'none fatal', False, text,
                                  first_seen=sample.get('time'), fatal=True))
    return results


def _ports(samples):
    """Port name -> [(sample, port)] in sample order."""
    out = {}
    for sample in samples:
        for port in sample.get('ports') or []:
            if isinstance(port, dict) and port.get('name'):
                out.setdefault(port['name'], []).append((sample, port))
    return out


def _counter_rise(series, name):
    values = [(port.get('counters') or {}).get(name) for _sample, port in series]
    values = [value for value in values if isinstance(value, int)]
    saturated = bool(values) and name in PERFQUERY_BASIC_BITS and values[-1] >= 2 ** PERFQUERY_BASIC_BITS[name] - 1
    return rise(values), saturated, len(values) > 0


def _first_increase(pairs):
    """The sample of (sample, value) pairs in which the value first rose (or fell, a reset, to a non-zero value)."""
    last = None
    for sample, value in pairs:
        if not isinstance(value, int):
            continue
        if last is not None and value != last and (value > last or value > 0):
            return sample
        last = value
    return pairs[-1][0]


def _first_rise(series, name):
    """The sample in which port counter ``name`` first rose."""
    return _first_increase([(sample, (port.get('counters') or {}).get(name)) for sample, port in series])


def _link_result(name, series):
    down = [(sample, port.get('state')) for sample, port in series if port.get('state') is not None and port.get('state') not in ACTIVE_STATES]
    rose = []
    first = None
    for counter in LINK_COUNTERS:
        amount, saturated, _read = _counter_rise(series, counter)
        if amount or saturated:
            rose.append('%s +%d%s' % (counter, amount, ' (saturated: at least)' if saturated else ''))
            sample = _first_rise(series, counter)
            first = sample if first is None or sample['seq'] < first['seq'] else first
    if down:
        states = sorted(set(str(state) for _sample, state in down))
        return new_result('burnin.link_errors', name, 'down', 'Active', False, '%s %s in %d samples, first %s%s' % (
            name, '/'.join(states), len(down), _at(down[0][0]), '; ' + ', '.join(rose) if rose else ''),
            first_seen=down[0][0].get('time'), fatal=True)
    if rose:
        return new_result('burnin.link_errors', name, ', '.join(rose), 0, False, '%s %s over the run, first %s' % (
            name, ', '.join(rose), _at(first)), first_seen=first.get('time'))
    return new_result('burnin.link_errors', name, 0, 0, True, '%s Active in every sample, no link error counted' % name)


def _ber_result(name, series, settings):
    limit = settings['ber_max']
    counter = next((counter for counter in SYMBOL_COUNTERS if _counter_rise(series, counter)[2]), None)
    rates = [port.get('rate_gbps') for _sample, port in series if isinstance(port.get('rate_gbps'), (int, float))]
    seconds = float(series[-1][0]['elapsed_s']) - float(series[0][0]['elapsed_s'])
    if counter is None or not rates or seconds <= 0:
        return None
    errors, saturated, _read = _counter_rise(series, counter)
    bits = min(rates) * 1e9 * seconds
    ratio = errors / bits
    text = '%s %d symbol errors in %.3g bits (%s Gb/s for %ss): ratio %.2g (limit %.0e)%s' % (
        name, errors, bits, fmt(min(rates)), fmt(seconds), ratio, limit, '; the counter saturated' if saturated else '')
    passed = ratio <= limit and not saturated
    return new_result('burnin.ber', name, ratio, limit, passed, text,
                      **({} if passed else {'first_seen': _first_rise(series, counter).get('time')}))


def _drop_result(name, series):
    names = sorted(set(counter for _sample, port in series for counter in port.get('counters') or {} if DROP_RE.match(counter)))
    if not names:
        return None
    rose = [(counter, _counter_rise(series, counter)[0]) for counter in names]
    rose = [(counter, amount) for counter, amount in rose if amount]
    if rose:
        first = min((_first_rise(series, counter) for counter, _amount in rose), key=lambda sample: sample['seq'])
        return new_result('burnin.roce_drops', name, sum(amount for _counter, amount in rose), 0, False, '%s dropped: %s, first %s' % (
            name, ', '.join('%s +%d' % item for item in rose), _at(first)), first_seen=first.get('time'))
    return new_result('burnin.roce_drops', name, 0, 0, True, '%s dropped nothing (%s)' % (name, ', '.join(names)))


def _bmc_results(samples, settings):
    """burnin.bmc: PSU and fan sensors' status in every valid BMC read, and the inlet temperature."""
    limit = settings['inlet_max_c']
    bad, inlet, unread = {}, [], 0
    for sample in samples:
        bmc = sample.get('bmc')
        if not isinstance(bmc, dict) or bmc.get('valid') is False:
            unread += 1
            continue
        for role in ('psus', 'fans'):
            for sensor in bmc.get(role) or []:
                if sensor.get('status') not in (None, 'ok') or BMC_FAILURE_RE.search(sensor.get('text') or ''):
                    bad.setdefault(sensor.get('name'), (sample, sensor))
        if isinstance(bmc.get('inlet_c'), (int, float)):
            inlet.append((sample, bmc['inlet_c']))
    results = []
    for name, (sample, sensor) in sorted(bad.items(), key=lambda item: str(item[0])):
        results.append(new_result('burnin.bmc', str(name), sensor.get('status'), 'ok', False, '%s status %s (%s), first %s' % (
            name, sensor.get('status'), sensor.get('text') or sensor.get('reading') or 'no reading', _at(sample)),
            first_seen=sample.get('time')))
    if inlet:
        sample, hottest = max(inlet, key=lambda item: item[1])
        over = [item for item in inlet if item[1] > limit]
        if over:
            results.append(new_result('burnin.bmc', 'inlet', hottest, limit, False, 'inlet %s C %s, over %s C in %d samples from %s' % (
                fmt(hottest), _at(sample), fmt(limit), len(over), _at(over[0][0])), unit='C', first_seen=over[0][0].get('time')))
        elif not bad:
            results.append(new_result('burnin.bmc', 'node', hottest, limit, True, 'PSUs and fans ok; inlet at most %s C (limit %s C)%s' % (
                fmt(hottest), fmt(limit), '; %d samples without a BMC read' % unread if unread else ''), unit='C'))
    elif not bad:
        results.append(new_result('burnin.bmc', 'node', None, limit, True, 'PSUs and fans ok; no inlet sensor mapped, not judged%s' % (
            '; %d samples without a BMC read' % unread if unread else ''), unit='C'))
    return results


def judge_node(samples, expected=None, problems=None, planned_s=None):
    """The ``burnin.*`` results of one node from its samples (``read_samples``), the load excepted (``judge_fleet``).

    ``expected``: the settings (keys of ``DEFAULTS``; None keeps the default). ``planned_s``: the run's planned
    length, so a sampler that stopped early shows as a gap up to the end; None for a run still going.
    """
    settings = _settings(expected)
    results = [_samples_result(samples, problems or [], settings, planned_s)]
    if not samples:
        return results
    results.extend(_present_results(samples))
    for index, series in sorted(_gpus(samples).items(), key=lambda item: str(item[0])):
        results.append(_thermal_result(index, series, settings))
        results.append(_memory_result(index, series))
    results.extend(_xid_results(samples, settings))
    for name, series in sorted(_ports(samples).items()):
        results.append(_link_result(name, series))
        for result in (_ber_result(name, series, settings), _drop_result(name, series)):
            if result is not None:
                results.append(result)
    results.extend(_bmc_results(samples, settings))
    return results


def _median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2.0


def load_figures(samples):
    """One node's load iterations, kept small (a node's samples can be dropped once judged): a list of
    ``(kind, iteration, figure, unit, ok, time, error)``, the first report of each (kind, iteration)."""
    figures, seen = [], set()
    for sample in samples:
        for load in sample.get('loads') or []:
            key = (load.get('kind'), load.get('iteration'))
            if key not in seen:
                seen.add(key)
                figure = load.get('figure')
                figures.append((key[0], key[1], figure if isinstance(figure, (int, float)) else None, load.get('unit'),
                                load.get('ok') is not False, sample.get('time') or _at(sample), load.get('error')))
    return figures


def load_results(figures_by_node, expected=None):
    """burnin.load per node: per load kind and iteration, each node's figure against the fleet's median of it.

    ``figures_by_node``: node -> ``load_figures``. A node's iteration that failed (``ok`` false) fails; a median over
    fewer than 3 nodes is not judged (a pair has no majority), only reported. Returns node -> [results], one per load
    kind: its worst iteration.
    """
    fraction = _settings(expected)['load_slow_fraction']
    by_key = {}
    for node, figures in figures_by_node.items():
        for entry in figures:
            by_key.setdefault((entry[0], entry[1]), []).append((node, entry))
    worst = {}
    for key, entries in by_key.items():
        known = [entry[2] for _node, entry in entries if entry[2] is not None]
        median = _median(known) if len(known) >= 3 else None
        floor = median * (1 - fraction) if median is not None else None
        for node, entry in entries:
            figure, ok = entry[2], entry[4]
            failed = not ok or (floor is not None and figure is not None and figure < floor)
            ratio = figure / median if median and figure is not None else None
            rank = (not failed, ratio if ratio is not None else float('inf'), entry[1] or 0)
            if (node, key[0]) not in worst or rank < worst[(node, key[0])][0]:
                worst[(node, key[0])] = (rank, failed, ratio, entry, floor, median)
    out = dict((node, []) for node in figures_by_node)
    for (node, kind), (_rank, failed, ratio, entry, floor, median) in sorted(worst.items(), key=lambda item: str(item[0])):
        _kind, iteration, figure, unit, ok, when, error = entry
        if not ok:
            text = '%s iteration %s failed at %s: %s' % (kind, iteration, when, error or 'no result')
        elif median is None:
            text = '%s: %s %s at iteration %s; fewer than 3 nodes, the fleet median is not judged' % (
                kind, fmt(figure), unit or '', iteration)
        else:
            text = '%s: worst iteration %s, %s %s = %.0f%% of the fleet median %s (floor %s)' % (
                kind, iteration, fmt(figure), unit or '', 100 * (ratio or 0), fmt(median), fmt(floor))
        extra = {'first_seen': when} if failed else {}
        out[node].append(new_result('burnin.load', str(kind), figure, floor, not failed, text, unit=unit, **extra))
    return out


def judge_fleet(samples_by_node, expected=None, problems_by_node=None, planned_s=None):
    """node -> every ``burnin.*`` result: ``judge_node`` per node, then ``load_results`` across them. For a large
    fleet, call ``judge_node`` and ``load_figures`` node by node instead and drop each node's samples after
    (bench/burnin_gate.py: 1,024 nodes x 48 h)."""
    out = {}
    for node, samples in sorted(samples_by_node.items()):
        out[node] = judge_node(samples, expected, (problems_by_node or {}).get(node), planned_s)
    figures = dict((node, load_figures(samples)) for node, samples in samples_by_node.items())
    for node, results in load_results(figures, expected).items():
        out.setdefault(node, []).extend(results)
    return out


def fatal(results):
    """The failed results that stop a node's burn-in early (a GPU lost, a fatal Xid, a port down)."""
    return [result for result in results if not result['passed'] and result.get('fatal')]
