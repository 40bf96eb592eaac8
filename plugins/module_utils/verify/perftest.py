# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Area perftest: rail-aligned ib_write_bw / ib_read_bw / ib_write_lat between node pairs.

The verify_perftest role makes two kinds of call: ``plan`` once (each node's
test endpoint, the rounds of node-disjoint pairs), then ``record_round``
after every round, which parses each client's output once, judges the pair
against the threshold, plans the re-tests and blames the side that failed
with two partners (``evaluate_perftest``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils import perftest_schedule as ps
from ansible_collections.aicluster.infra.plugins.module_utils.cluster_math import expected_link_gbps
from ansible_collections.aicluster.infra.plugins.module_utils.perftest import parse_perftest
from ansible_collections.aicluster.infra.plugins.module_utils.verify._common import failed, parse_once
from ansible_collections.aicluster.infra.plugins.module_utils.verify.ib import checked_hcas
from ansible_collections.aicluster.infra.plugins.module_utils.verify.perftest_blame import evaluate_perftest

TESTS = ('write_bw', 'read_bw', 'write_lat')
MIB_PER_S_IN_GBPS = 8.0 * 1048576 / 1e9
_NOMINAL_LANE = {2.5: 'SDR', 5.0: 'DDR', 10.0: 'QDR', 14.0: 'FDR', 25.0: 'EDR', 50.0: 'HDR', 100.0: 'NDR', 200.0: 'XDR'}


def data_rate_gbps(rate):
    """Usable data rate of a port from ibstat's nominal ``Rate`` (400 -> 400.0, 56 -> 54.55, 40 -> 32.0).

    Tried as 4X, then 1X, 2X, 8X, 12X of a nominal lane rate; the data rate is
    ``expected_link_gbps`` of that width and generation. None when no width fits.
    """
    if rate in (None, ''):
        return None
    rate = float(rate)
    for lanes in (4, 1, 2, 8, 12):
        generation = _NOMINAL_LANE.get(round(rate / lanes, 3))
        if generation:
            return expected_link_gbps('%dX' % lanes, generation)
    return None


def endpoint(ib_info, hcas=None, link_layer=None, address=None):
    """A node's test endpoint: address, HCA names in rail order, and per rail the HCA, its rate and RoCE GID index."""
    names = checked_hcas(ib_info, hcas, link_layer)
    by_name = dict((ca.get('name'), ca) for ca in (ib_info or {}).get('hcas') or [])
    entries = []
    for rail, name in enumerate(names):
        port = ((by_name.get(name) or {}).get('ports') or [{}])[0]
        entries.append({'rail': rail, 'name': name, 'rate_gbps': port.get('rate_gbps'),
                        'gid_index': port.get('roce_v2_gid_index') if port.get('link_layer') == 'Ethernet' else None})
    return {'address': address, 'names': names, 'hcas': entries}


def enabled_tests(expected):
    """The tests turned on (``<test>_enabled`` in ``expected``), in the order they run."""
    return [test for test in TESTS if expected.get('%s_enabled' % test, test == 'write_bw')]


def plan(observations, expected):
    """The run's plan: ``observations`` node -> {``ib_info``: module result, ``address``}.

    Returns the outcome the rounds update: ``summary`` (results.json's
    ``perftest``: schedule, rounds, pairs, unattributed), ``endpoints`` (node ->
    endpoint; a node whose adapters could not be read has none and is left
    out of the pairs), ``rails`` (node -> HCAs in rail order), ``tests``,
    ``retest`` (test -> the next re-test round) and ``fleet`` (node -> results).
    """
    endpoints = {}
    for node, observed in observations.items():
        info = (observed or {}).get('ib_info')
        endpoints[node] = {} if not info or failed(info) else endpoint(
            info, expected.get('hcas'), expected.get('link_layer'), observed.get('address') or node)
    order = list(observations)
    nodes = [node for node in order if endpoints[node].get('names')]
    tests = enabled_tests(expected)
    outcome = {'summary': {'schedule': expected.get('schedule') or 'cover', 'rounds': ps.schedule(nodes, expected.get('schedule') or 'cover'),
                           'pairs': [], 'unattributed': {}},
               'endpoints': endpoints, 'rails': dict((node, endpoints[node].get('names') or []) for node in order),
               'tests': tests, 'retest': dict((test, []) for test in tests)}
    return _evaluated(outcome)


def round_tests(pairs, endpoints, base_port, rails=None):
    """One entry per (pair, rail) of a round: client, server, their HCAs, GID indexes, address, port and line rate.

    ``pairs``: ``[client, server]`` lists or ``{client, server, rails}`` dicts.
    """
    tests = []
    for pair in pairs or []:
        if isinstance(pair, dict):
            client, server, wanted = pair['client'], pair['server'], pair.get('rails')
        else:
            client, server, wanted = pair[0], pair[1], rails
        mine, theirs = endpoints[client], endpoints[server]
        theirs_by_rail = dict((h['rail'], h) for h in theirs.get('hcas') or [])
        for hca in mine.get('hcas') or []:
            rail = hca['rail']
            if (wanted is not None and rail not in wanted) or rail not in theirs_by_rail:
                continue
            peer = theirs_by_rail[rail]
            rates = [data_rate_gbps(r) for r in (hca.get('rate_gbps'), peer.get('rate_gbps'))]
            rates = [r for r in rates if r is not None]
            port = ps.server_port(base_port, rail)
            tests.append({
                'client': client, 'server': server, 'rail': rail,
                'client_hca': hca['name'], 'server_hca': peer['name'],
                'client_gid_index': hca.get('gid_index'), 'server_gid_index': peer.get('gid_index'),
                'address': theirs.get('address') or server, 'port': port, 'port_hex': '%04X' % port,
                'line_rate': min(rates) if rates else None,
            })
    return tests


def threshold_fraction(test, expected):
    """The share of the line rate a pair must reach: ``fraction``, doubled for bidirectional bandwidth tests
    (they report the sum of both directions)."""
    fraction = float(expected.get('fraction'))
    return fraction * (2 if expected.get('bidirectional') and test != 'write_lat' else 1)


def pair_result(client_run, test, spec, expected, round_index=None):
    """One pair result (results.json ``perftest.pairs``) from the client's registered run (stdout, rc, stderr).

    Bandwidth tests: the average of the largest message size in Gb/s
    (``--report_gbits``) against the threshold fraction x the line rate.
    Latency: t_typical (else t_avg) of the smallest size against ``max_latency_us``.
    """
    errors = []
    parsed = parse_once(parse_perftest, client_run.get('stdout', ''), 'ib_%s' % test, errors) or {'results': [], 'errors': []}
    rc = client_run.get('rc')
    stderr = client_run.get('stderr') or ''
    errors = list(parsed.get('errors') or []) + errors + (
        [line.strip() for line in stderr.splitlines() if line.strip()][:3] if rc not in (0, None) else [])
    if rc == 124:
        errors.insert(0, 'timed out')
    rows = parsed.get('results') or []
    entry = {'test': test, 'client': spec['client'], 'server': spec['server'], 'hca': spec['client_hca'],
             'peer_hca': spec['server_hca'], 'rail': spec['rail'], 'line_rate': spec.get('line_rate'),
             'round': round_index, 'errors': errors}
    if test == 'write_lat':
        limit = expected.get('max_latency_us')
        row = min(rows, key=lambda r: r.get('bytes') or 0) if rows else None
        value = None if row is None else (row.get('t_typical') if row.get('t_typical') is not None else row.get('t_avg'))
        entry.update(measured=value, threshold=limit, unit='usec',
                     passed=value is not None and (limit in (None, '') or value <= float(limit)))
        return entry
    row = max(rows, key=lambda r: r.get('bytes') or 0) if rows else None
    value = None if row is None else row.get('bw_average')
    units = parsed.get('units')
    if value is not None and units and units != 'Gb/sec':
        # perftest's MB/sec (older) and MiB/sec (newer) are both 2^20 bytes per second (its --report_gbits usage text)
        value = value * MIB_PER_S_IN_GBPS
    line_rate = spec.get('line_rate')
    threshold = None if line_rate in (None, '') else round(float(line_rate) * threshold_fraction(test, expected), 2)
    entry.update(measured=None if value is None else round(value, 2), threshold=threshold, unit='Gb/s',
                 passed=value is not None and threshold is not None and value >= threshold)
    return entry


def _client_runs(async_results):
    """(spec, client run) of every client of a round, from the async_status results (``item.item`` is the spec)."""
    for result in async_results or []:
        spec = (result.get('item') or {}).get('item')
        if not spec:
            continue
        yield spec, {'stdout': result.get('stdout', ''), 'rc': result.get('rc', 1 if not result.get('finished') else 0),
                     'stderr': result.get('stderr') or result.get('msg') or ''}


def _evaluated(outcome):
    evaluated = dict((test, evaluate_perftest(outcome['summary']['pairs'], outcome['rails'], test)) for test in outcome['tests'])
    fleet = {}
    for test in outcome['tests']:
        for node, results in evaluated[test]['nodes'].items():
            fleet.setdefault(node, []).extend(results)
    outcome['fleet'] = fleet
    outcome['summary']['unattributed'] = dict((test, evaluated[test]['unattributed']) for test in outcome['tests'])
    return outcome


def _flatten(items):
    out = []
    for item in items:
        out.extend(_flatten(item) if isinstance(item, (list, tuple)) else [item])
    return out


def record_round(outcome, async_results, expected):
    """The outcome after one round: its pair results added, the next re-test round of the test planned, every node judged.

    ``async_results``: the clients' async_status results of the round, every
    node's, in play order. ``expected``: ``test``, ``round`` (its index, or
    ``retest-N``), ``fraction``, ``bidirectional``, ``max_latency_us``.
    """
    test = expected['test']
    outcome = dict(outcome, summary=dict(outcome['summary']), retest=dict(outcome.get('retest') or {}))
    pairs = [pair_result(run, test, spec, expected, expected.get('round')) for spec, run in _client_runs(async_results)]
    outcome['summary']['pairs'] = list(outcome['summary']['pairs']) + pairs
    nodes = []
    for node in _flatten(outcome['summary']['rounds']):
        if node not in nodes:
            nodes.append(node)
    outcome['retest'][test] = ps.retest_round(nodes, [p for p in outcome['summary']['pairs'] if p.get('test') == test])
    return _evaluated(outcome)
