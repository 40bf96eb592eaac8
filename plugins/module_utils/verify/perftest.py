# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Area perftest: rail-aligned ib_write_bw / ib_read_bw / ib_write_lat between node pairs, and a GPUDirect pass.

The verify_perftest role makes two kinds of call: ``plan`` once (each node's
test endpoint, the rounds of node-disjoint pairs), then ``record_round``
after every round, which parses each client's output once, judges the pair
against the threshold, plans the re-tests and blames the side that failed
with two partners (``evaluate_perftest``).

The line rate a pair is judged against is the fleet's, never the pair's own:
``rate_gbps`` from the inventory (``verify_ib_rate_gbps``) when set, else the
most common port rate of the fleet (ties: the highest). A pair over a 1X
link is then measured against 0.9 x 400 Gb/s, not 0.9 x its own 100.
Each test runs under ``numactl`` bound to its HCA's NUMA node when that node
is known and numactl is installed; RoCE tests carry ``--tclass``; the
``gpudirect_bw`` pass is ib_write_bw with ``--use_cuda`` of the GPU nearest
each HCA (gpu_info's ``nearest_nic``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils import perftest_schedule as ps
from ansible_collections.aicluster.infra.plugins.module_utils.cluster_math import expected_link_gbps
from ansible_collections.aicluster.infra.plugins.module_utils.perftest import parse_perftest
from ansible_collections.aicluster.infra.plugins.module_utils.verify._common import failed, parse_once
from ansible_collections.aicluster.infra.plugins.module_utils.verify.ib import checked_hcas
from ansible_collections.aicluster.infra.plugins.module_utils.verify.perftest_blame import evaluate_perftest
from ansible_collections.aicluster.infra.plugins.module_utils.verify.results import new_result

TESTS = ('write_bw', 'read_bw', 'write_lat', 'gpudirect_bw')
# Tests judged as bandwidth (Gb/s against the line rate); the others are latency.
BW_TESTS = ('write_bw', 'read_bw', 'gpudirect_bw')
TOOLS = {'write_bw': 'ib_write_bw', 'read_bw': 'ib_read_bw', 'write_lat': 'ib_write_lat', 'gpudirect_bw': 'ib_write_bw'}
# Run options the commands need, with the role's defaults (roles/verify_perftest/defaults/main.yml).
OPTION_DEFAULTS = {'size': 65536, 'qps': 2, 'duration_s': 30, 'bidirectional': True, 'timeout_s': 60, 'server_wait_s': 10}
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


def _numa_node(value):
    """A NUMA node number from sysfs text or an int; None for -1 (unknown), blank or junk."""
    try:
        number = int(str(value).strip())
    except (TypeError, ValueError):
        return None
    return number if number >= 0 else None


def nearest_gpus(gpu_info):
    """HCA name -> index of the GPU nearest to it (gpu_info ``nearest_nic``; several GPUs: the lowest index)."""
    nearest = {}
    if not isinstance(gpu_info, dict) or failed(gpu_info):
        return nearest
    for gpu in gpu_info.get('gpus') or []:
        nic, index = gpu.get('nearest_nic'), gpu.get('index')
        if nic and index is not None and (nic not in nearest or index < nearest[nic]):
            nearest[nic] = index
    return nearest


def endpoint(ib_info, hcas=None, link_layer=None, address=None, numa=None, numactl=None, gpu_info=None, tclass=None):
    """A node's test endpoint: address, HCA names in rail order, and per rail the HCA, its rate, link layer,
    RoCE GID index, NUMA node, nearest GPU and the traffic class its RoCE tests use.

    ``numa``: HCA name -> its sysfs ``numa_node`` (-1 or missing: unknown);
    ``numactl``: whether numactl is installed (None: not asked); ``gpu_info``:
    the gpu_info result (None: no GPUs); ``tclass``: the RoCE traffic class.
    """
    names = checked_hcas(ib_info, hcas, link_layer)
    by_name = dict((ca.get('name'), ca) for ca in (ib_info or {}).get('hcas') or [])
    gpus = nearest_gpus(gpu_info)
    entries = []
    for rail, name in enumerate(names):
        port = ((by_name.get(name) or {}).get('ports') or [{}])[0]
        roce = port.get('link_layer') == 'Ethernet'
        entries.append({'rail': rail, 'name': name, 'rate_gbps': port.get('rate_gbps'), 'link_layer': port.get('link_layer'),
                        'gid_index': port.get('roce_v2_gid_index') if roce else None,
                        'numa_node': _numa_node((numa or {}).get(name)), 'gpu': gpus.get(name),
                        'tclass': int(tclass) if roce and tclass not in (None, '') else None})
    return {'address': address, 'names': names, 'hcas': entries, 'numactl': numactl}


def fleet_rate_gbps(endpoints, rail=None):
    """The data rate (Gb/s) of the fleet's most common port rate over every tested HCA, or over the HCAs of one
    ``rail`` (a storage NIC at 200G and the GPU fabric at 400G are judged each against its own kind); ties: the
    highest; None when no port has one."""
    counts = {}
    for point in (endpoints or {}).values():
        for hca in (point or {}).get('hcas') or []:
            rate = data_rate_gbps(hca.get('rate_gbps'))
            if rate is not None and (rail is None or hca.get('rail') == rail):
                counts[rate] = counts.get(rate, 0) + 1
    if not counts:
        return None
    return max(counts, key=lambda rate: (counts[rate], rate))


def expected_rate(expected, endpoints, rail=None):
    """(line rate in Gb/s, its source): the inventory's ``rate_gbps`` when set (> 0), else the fleet's most common rate
    (of one ``rail`` when given).

    Never a pair's own negotiated rate: a degraded link would lower its own bar.
    """
    wanted = (expected or {}).get('rate_gbps')
    try:
        wanted = float(wanted) if wanted not in (None, '') else 0.0
    except (TypeError, ValueError):
        wanted = 0.0
    if wanted > 0:
        rate = data_rate_gbps(wanted)
        return (rate if rate is not None else wanted), 'inventory'
    rate = fleet_rate_gbps(endpoints, rail)
    return rate, 'fleet' if rate is not None else None


def pinning(point, hca):
    """numactl argv prefix for one HCA's test and why: ([...], 'numa node N') or ([], the reason it is not pinned)."""
    node = hca.get('numa_node')
    if node is None:
        return [], 'not pinned: NUMA node of %s unknown' % hca.get('name')
    if point.get('numactl') is False:
        return [], 'not pinned: numactl absent'
    if point.get('numactl') is None:
        return [], 'not pinned: numactl not looked for'
    return ['numactl', '--cpunodebind=%d' % node, '--membind=%d' % node], 'numa node %d' % node


def enabled_tests(expected, endpoints=None):
    """The tests turned on (``<test>_enabled`` in ``expected``), in the order they run.

    ``gpudirect_bw`` runs only when some node has a GPU nearest one of its HCAs.
    """
    tests = [test for test in TESTS if expected.get('%s_enabled' % test, test == 'write_bw')]
    if 'gpudirect_bw' in tests and not any(hca.get('gpu') is not None for point in (endpoints or {}).values()
                                           for hca in (point or {}).get('hcas') or []):
        tests.remove('gpudirect_bw')
    return tests


def plan(observations, expected):
    """The run's plan: ``observations`` node -> {``ib_info``: module result, ``address``, and optionally
    ``numa`` (HCA -> sysfs numa_node), ``numactl`` (bool), ``gpu_info`` (module result), ``busy`` (bool: the
    node runs jobs, so it is left out of the pairs and listed in the summary's ``not_tested``)}.

    Returns the outcome the rounds update: ``summary`` (results.json's
    ``perftest``: schedule, rounds, pairs, unattributed), ``endpoints`` (node ->
    endpoint; a node whose adapters could not be read has none and is left
    out of the pairs), ``rails`` (node -> HCAs in rail order), ``tests``,
    ``retest`` (test -> the next re-test round) and ``fleet`` (node -> results).
    Every endpoint carries ``line_rate_gbps``, the rate every pair is judged
    against (``expected_rate``); the summary records it and its source.
    """
    endpoints = {}
    for node, observed in observations.items():
        observed = observed or {}
        info = observed.get('ib_info')
        gpu_info = observed.get('gpu_info')
        endpoints[node] = {} if not info or failed(info) or observed.get('busy') else endpoint(
            info, expected.get('hcas'), expected.get('link_layer'), observed.get('address') or node,
            numa=numa_nodes(observed['numa']) if isinstance(observed.get('numa'), str) else observed.get('numa'),
            numactl=observed.get('numactl'),
            gpu_info=gpu_info if expected.get('gpudirect_bw_enabled') else None, tclass=expected.get('tclass'))
    rate, source = expected_rate(expected, endpoints)
    by_rail = {}
    for point in endpoints.values():
        if point:
            point['line_rate_gbps'] = rate
            for hca in point.get('hcas') or []:
                if hca['rail'] not in by_rail:
                    by_rail[hca['rail']] = expected_rate(expected, endpoints, hca['rail'])[0]
                hca['line_rate_gbps'] = by_rail[hca['rail']]
    order = list(observations)
    nodes = [node for node in order if endpoints[node].get('names')]
    tests = enabled_tests(expected, endpoints)
    outcome = {'summary': {'schedule': expected.get('schedule') or 'cover', 'rounds': ps.schedule(nodes, expected.get('schedule') or 'cover'),
                           'pairs': [], 'unattributed': {}, 'line_rate_gbps': rate, 'line_rate_source': source,
                           'not_tested': [node for node in order if (observations[node] or {}).get('busy')]},
               'endpoints': endpoints, 'rails': dict((node, endpoints[node].get('names') or []) for node in order),
               'tests': tests, 'retest': dict((test, []) for test in tests), 'options': run_options(expected)}
    return _evaluated(outcome)


def _side_argv(hca, test):
    """Per-side perftest options that depend on the HCA: ``-x`` (RoCE GID), ``--tclass`` (RoCE), ``--use_cuda``."""
    argv = []
    if hca.get('gid_index') is not None:
        argv += ['-x', str(hca['gid_index'])]
    if hca.get('tclass') is not None:
        argv += ['--tclass=%d' % hca['tclass']]
    if test == 'gpudirect_bw' and hca.get('gpu') is not None:
        argv += ['--use_cuda=%d' % hca['gpu']]
    return argv


def run_options(expected):
    """The options every command of the run uses (``OPTION_DEFAULTS`` for those ``expected`` lacks)."""
    options = {}
    for key, default in OPTION_DEFAULTS.items():
        value = expected.get(key)
        if value in (None, ''):
            value = default
        options[key] = (str(value).strip().lower() in ('1', 'true', 'yes', 'on')) if isinstance(default, bool) else int(value)
    return options


def common_argv(test, options):
    """perftest options shared by both sides: ``--report_gbits -F``, and for bandwidth tests size, QPs, duration, ``-b``."""
    argv = ['--report_gbits', '-F']
    if test in BW_TESTS:
        argv += ['-s', str(options['size']), '-q', str(options['qps'])]
        if options['duration_s'] > 0:
            argv += ['-D', str(options['duration_s'])]
        if options['bidirectional']:
            argv += ['-b']
    return argv


def _commands(spec, test, options):
    """The server's and the client's command of one test: ``{'argv', 'data'}`` (perftest_run), ``data`` the spec."""
    tool = TOOLS.get(test or 'write_bw', 'ib_write_bw')
    common = common_argv(test or 'write_bw', options)
    port = ['-p', str(spec['port'])]
    server_timeout = options['timeout_s'] + options['server_wait_s']
    data = dict(spec)
    server = (['timeout', '--kill-after=5', str(server_timeout)] + spec['server_prefix'] + [tool, '-d', spec['server_hca']]
              + port + common + spec['server_args'])
    client = (['timeout', '--kill-after=5', str(options['timeout_s'])] + spec['client_prefix'] + [tool, '-d', spec['client_hca']]
              + port + common + spec['client_args'] + [spec['address']])
    return {'argv': server, 'data': data}, {'argv': client, 'data': data}


def round_tests(pairs, endpoints, base_port, rails=None, test=None, options=None):
    """One entry per (pair, rail) of a round: client, server, their HCAs, GID indexes, address, port, line rate,
    and each side's extra options (``client_args``/``server_args``) and numactl prefix (``client_prefix``/``server_prefix``).

    ``pairs``: ``[client, server]`` lists or ``{client, server, rails}`` dicts.
    ``line_rate`` is the fleet's expected rate (``plan``), ``negotiated`` the
    lower data rate of both ports. ``test`` ``gpudirect_bw`` keeps only the
    rails where both sides have a nearest GPU. With ``options`` (``run_options``)
    each entry also carries ``server_cmd`` and ``client_cmd`` for perftest_run.
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
            if test == 'gpudirect_bw' and (hca.get('gpu') is None or peer.get('gpu') is None):
                continue
            rates = [data_rate_gbps(r) for r in (hca.get('rate_gbps'), peer.get('rate_gbps'))]
            rates = [r for r in rates if r is not None]
            negotiated = min(rates) if rates else None
            expected_line = hca.get('line_rate_gbps', mine.get('line_rate_gbps'))
            port = ps.server_port(base_port, rail)
            client_prefix, client_pinning = pinning(mine, hca)
            server_prefix, server_pinning = pinning(theirs, peer)
            tests.append({
                'client': client, 'server': server, 'rail': rail,
                'client_hca': hca['name'], 'server_hca': peer['name'],
                'client_gid_index': hca.get('gid_index'), 'server_gid_index': peer.get('gid_index'),
                'address': theirs.get('address') or server, 'port': port, 'port_hex': '%04X' % port,
                'line_rate': expected_line if expected_line is not None else negotiated, 'negotiated': negotiated,
                'client_args': _side_argv(hca, test), 'server_args': _side_argv(peer, test),
                'client_prefix': client_prefix, 'server_prefix': server_prefix,
                'client_pinning': client_pinning, 'server_pinning': server_pinning,
                'tclass': hca.get('tclass'), 'client_gpu': hca.get('gpu') if test == 'gpudirect_bw' else None,
                'server_gpu': peer.get('gpu') if test == 'gpudirect_bw' else None,
            })
            if options:
                tests[-1]['server_cmd'], tests[-1]['client_cmd'] = _commands(tests[-1], test, options)
    return tests


def threshold_fraction(test, expected):
    """The share of the line rate a pair must reach: ``fraction``, doubled for bidirectional bandwidth tests
    (they report the sum of both directions)."""
    fraction = float(expected.get('fraction'))
    return fraction * (2 if expected.get('bidirectional') and test in BW_TESTS else 1)


def pair_result(client_run, test, spec, expected, round_index=None):
    """One pair result (results.json ``perftest.pairs``) from the client's registered run (stdout, rc, stderr).

    Bandwidth tests: the average of the largest message size in Gb/s
    (``--report_gbits``) against the threshold fraction x the line rate (the
    fleet's expected rate, ``spec['line_rate']``; the pair's own negotiated
    rate is recorded beside it, never used as the bar).
    Latency: t_typical (else t_avg) of the smallest size against ``max_latency_us``.
    """
    errors = []
    parsed = parse_once(parse_perftest, client_run.get('stdout', ''), TOOLS.get(test, 'ib_%s' % test), errors) or {'results': [], 'errors': []}
    rc = client_run.get('rc')
    stderr = client_run.get('stderr') or ''
    # the tool's own words first: a failed client's stderr, then what its stdout said, then "printed nothing"
    said = [line.strip() for line in stderr.splitlines() if line.strip()][:3] if rc not in (0, None) else []
    errors = list(parsed.get('errors') or []) + [line for line in said if line not in (parsed.get('errors') or [])] + errors
    if rc == 124:
        errors.insert(0, 'timed out')
    rows = parsed.get('results') or []
    entry = {'test': test, 'client': spec['client'], 'server': spec['server'], 'hca': spec['client_hca'],
             'peer_hca': spec['server_hca'], 'rail': spec['rail'], 'line_rate': spec.get('line_rate'),
             'round': round_index, 'errors': errors}
    for key in ('negotiated', 'tclass', 'client_pinning', 'server_pinning', 'client_gpu', 'server_gpu'):
        if spec.get(key) is not None:
            entry[key] = spec[key]
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


def _key(spec):
    return (spec.get('client'), spec.get('server'), spec.get('rail'))


def _client_runs(async_results):
    """(spec, client run) of every client of a round.

    ``async_results``: per node, the async_status result of its perftest_run
    call (``clients`` and ``servers``, each with ``data`` the spec), or, one
    per client, an async_status result whose ``item.item`` is the spec. When a
    client failed, its server's error lines are added to its stderr.
    """
    servers = {}
    for result in async_results or []:
        for run in (result or {}).get('servers') or []:
            if isinstance(run.get('data'), dict):
                servers[_key(run['data'])] = run
    for result in async_results or []:
        result = result or {}
        if 'clients' in result:
            for run in result.get('clients') or []:
                spec = run.get('data')
                if not isinstance(spec, dict):
                    continue
                stderr = run.get('stderr') or ''
                server = servers.get(_key(spec)) or {}
                if run.get('rc') != 0 and server.get('rc') not in (0, None) and server.get('stderr'):
                    stderr = '%s\nserver %s: %s' % (stderr, spec.get('server'), server['stderr'].strip())
                yield spec, {'stdout': run.get('stdout', ''), 'rc': 1 if run.get('rc') is None else run.get('rc'), 'stderr': stderr}
            continue
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
    outcome['cluster'] = unattributed_results(outcome['summary']['unattributed'])
    return outcome


def unattributed_results(unattributed):
    """Cluster-level results for failed pairs that no re-test could pin on either end (a switch or a cable between
    them, or no third node to test against): they fail the verdict and drain nobody."""
    results = []
    for test, pairs in sorted((unattributed or {}).items()):
        if pairs:
            shown = ', '.join('%s -> %s rail %s' % (client, server, rail) for client, server, rail in pairs[:8])
            results.append(new_result(
                'perftest.' + test, 'cluster', len(pairs), 0, False,
                '%d failed %s pair(s) not attributed to either end: %s%s; check the switch ports and cables between them, '
                'or rerun with more nodes to re-test against' % (len(pairs), test, shown, ', ...' if len(pairs) > 8 else '')))
    return results


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


def numa_nodes(text):
    """HCA name -> NUMA node from ``grep -H '' /sys/class/infiniband/<hca>/device/numa_node ...`` output (-1: unknown, left out)."""
    found = {}
    for line in (text or '').splitlines():
        path, sep, value = line.rpartition(':')
        parts = path.split('/')
        if not sep or 'infiniband' not in parts or parts.index('infiniband') + 1 >= len(parts):
            continue
        node = _numa_node(value)
        if node is not None:
            found[parts[parts.index('infiniband') + 1]] = node
    return found
