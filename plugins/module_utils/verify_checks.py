# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Verification decisions: parsed tool output and expectations in, check results out.

Pure functions, no I/O. Every function returns a list of results built with
``verify_results.new_result`` (check id, subject, measured, threshold,
passed, message), so the roles only gather facts and hand them here; docs/verify.md
lists every check and its default threshold.

Per node: ``evaluate_ports``, ``evaluate_gpus``, ``evaluate_nccl``,
``evaluate_mtu``. Fleet-wide: ``evaluate_ib_fleet`` (firmware, OFED, rate
odd ones out), ``evaluate_gpu_fleet`` (driver), ``evaluate_fabric``
(iblinkinfo links, rails), ``evaluate_perftest`` (pair results and blame),
``nccl_fleet_median``. ``collect_nodes`` joins them into results.json's
``nodes``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.cluster_math import expected_link_gbps
from ansible_collections.aicluster.infra.plugins.module_utils.perftest_schedule import attribute
from ansible_collections.aicluster.infra.plugins.module_utils.verify.results import DRAIN_PREFIX, new_result

# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def _fmt(value):
    if isinstance(value, float):
        return ('%.2f' % value).rstrip('0').rstrip('.')
    return str(value)


def _most_common(values):
    """The value held by strictly more nodes than any other, or None on a tie."""
    counts = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    if not counts:
        return None
    ranked = sorted(counts.items(), key=lambda item: -item[1])
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return None
    return ranked[0][0]


def _uniform(check, subject, values_by_node, what, fix, expected=None):
    """Odd ones out: each node's value against ``expected`` or the fleet's majority value.

    ``values_by_node``: node -> value (None: unknown, reported as failed).
    Returns node -> [result].
    """
    known = [value for value in values_by_node.values() if value is not None]
    reference = expected if expected not in (None, '') else _most_common(known)
    distinct = sorted(set(str(value) for value in known))
    out = {}
    for node, value in sorted(values_by_node.items()):
        if value is None:
            passed = False
            message = '%s of %s unknown; %s' % (what, subject, fix)
        elif reference is None:
            passed = False
            message = ('%s %s is %s; the fleet has no majority (%s); make them identical'
                       % (subject, what, value, ', '.join(distinct)))
        else:
            passed = str(value) == str(reference)
            if passed:
                message = '%s %s %s, as the fleet' % (subject, what, value) if expected in (None, '') else \
                    '%s %s %s as expected' % (subject, what, value)
            else:
                message = '%s %s is %s, the %s is %s; %s' % (
                    subject, what, value, 'fleet' if expected in (None, '') else 'expected value', reference, fix)
        out.setdefault(node, []).append(new_result(check, subject, value, reference if reference is not None else distinct,
                                                   passed, message))
    return out


def _merge(target, more):
    for node, results in more.items():
        target.setdefault(node, []).extend(results)
    return target


# ---------------------------------------------------------------------------
# InfiniBand ports (ibstat through ib_info)
# ---------------------------------------------------------------------------


def checked_hcas(ib_info, hcas=None, link_layer=None):
    """The HCAs the checks look at, in rail order: ``hcas`` when given, else every HCA with a port of ``link_layer``."""
    if hcas:
        return list(hcas)
    names = []
    for ca in (ib_info or {}).get('hcas') or []:
        if any(link_layer in (None, '') or port.get('link_layer') == link_layer for port in ca.get('ports') or []):
            names.append(ca.get('name'))
    return names


def evaluate_ports(ib_info, expected):
    """ib.hca_present, ib.port_state, ib.port_rate, ib.link_layer for one node.

    ``expected``: ``hcas`` (names in rail order; empty: every HCA of
    ``link_layer``), ``port`` (default 1), ``rate_gbps`` (None: the rate is
    checked fleet-wide by ``evaluate_ib_fleet``), ``link_layer``, and
    ``checks`` (the check ids to run; default all four).
    """
    checks = expected.get('checks') or ['ib.hca_present', 'ib.port_state', 'ib.port_rate', 'ib.link_layer']
    port_number = int(expected.get('port') or 1)
    link_layer = expected.get('link_layer') or None
    rate = expected.get('rate_gbps')
    by_name = dict((ca.get('name'), ca) for ca in (ib_info or {}).get('hcas') or [])
    names = checked_hcas(ib_info, expected.get('hcas'), link_layer)
    results = []
    if not names:
        results.append(new_result('ib.hca_present', 'node', 0, 'at least 1', False,
                                  'no %sHCA found by ibstat; check the adapters and the driver (mlx5_core, ib_umad)'
                                  % ((link_layer + ' ') if link_layer else '')))
        return results
    for name in names:
        ca = by_name.get(name)
        subject = '%s:%d' % (name, port_number)
        if 'ib.hca_present' in checks:
            results.append(new_result(
                'ib.hca_present', name, 'present' if ca else 'missing', 'present', ca is not None,
                '%s present (%s, firmware %s)' % (name, ca.get('ca_type'), ca.get('firmware_version')) if ca else
                '%s missing from ibstat; reseat the adapter or check its driver and firmware' % name))
        if ca is None:
            continue
        port = next((p for p in ca.get('ports') or [] if p.get('port') == port_number), None)
        if port is None:
            results.append(new_result('ib.port_state', subject, 'missing', 'Active/LinkUp', False,
                                      '%s has no port %d in ibstat' % (name, port_number)))
            continue
        if 'ib.port_state' in checks:
            state = '%s/%s' % (port.get('state'), port.get('physical_state'))
            ok = port.get('state') == 'Active' and port.get('physical_state') == 'LinkUp'
            results.append(new_result(
                'ib.port_state', subject, state, 'Active/LinkUp', ok,
                '%s port %d is %s' % (name, port_number, state) if ok else
                '%s port %d is %s, expected Active/LinkUp; check the cable, the switch port and the subnet manager'
                % (name, port_number, state)))
        if 'ib.port_rate' in checks and rate not in (None, '', 0):
            measured = port.get('rate_gbps')
            ok = measured is not None and float(measured) == float(rate)
            results.append(new_result(
                'ib.port_rate', subject, measured, float(rate), ok,
                '%s port %d rate %s Gb/s%s' % (
                    name, port_number, _fmt(measured), ' as expected' if ok else
                    ', expected %s Gb/s; a lower rate is a degraded link (width or speed): '
                    'reseat or replace the cable' % _fmt(float(rate))),
                unit='Gb/s'))
        if 'ib.link_layer' in checks and link_layer:
            ok = port.get('link_layer') == link_layer
            results.append(new_result(
                'ib.link_layer', subject, port.get('link_layer'), link_layer, ok,
                '%s port %d link layer %s%s' % (
                    name, port_number, port.get('link_layer'), '' if ok else
                    ', expected %s; set the port type (mlxconfig LINK_TYPE_P1) and reboot' % link_layer)))
    return results


def evaluate_ib_fleet(ib_infos, expected):
    """ib.firmware_uniform, ib.ofed_uniform and (without an expected rate) ib.port_rate, fleet-wide.

    ``ib_infos``: node -> ib_info facts. ``expected``: as ``evaluate_ports``
    plus ``firmware`` (HCA name -> version, or one version for all; empty: the
    fleet's majority), ``ofed`` (empty: majority) and ``checks``.
    Returns node -> [results].
    """
    checks = expected.get('checks') or ['ib.firmware_uniform', 'ib.ofed_uniform', 'ib.port_rate']
    port_number = int(expected.get('port') or 1)
    ib_infos = dict((node, info) for node, info in ib_infos.items() if info)
    out = {}
    names = {}
    for node, info in ib_infos.items():
        names[node] = checked_hcas(info, expected.get('hcas'), expected.get('link_layer') or None)
    all_names = sorted(set(name for node_names in names.values() for name in node_names))
    firmware_expected = expected.get('firmware')
    for name in all_names:
        holders = dict((node, info) for node, info in ib_infos.items() if name in names[node])
        if 'ib.firmware_uniform' in checks:
            values = {}
            for node, info in holders.items():
                ca = next((c for c in (info or {}).get('hcas') or [] if c.get('name') == name), None)
                if ca is not None:
                    values[node] = ca.get('firmware_version')
            wanted = firmware_expected.get(name) if isinstance(firmware_expected, dict) else firmware_expected
            _merge(out, _uniform('ib.firmware_uniform', name, values, 'firmware',
                                 'flash the same firmware on every node (mlxfwmanager)', wanted))
        if 'ib.port_rate' in checks and expected.get('rate_gbps') in (None, '', 0):
            values = {}
            for node, info in holders.items():
                ca = next((c for c in (info or {}).get('hcas') or [] if c.get('name') == name), None)
                port = next((p for p in (ca or {}).get('ports') or [] if p.get('port') == port_number), None)
                if port is not None and port.get('state') == 'Active':
                    values[node] = port.get('rate_gbps')
            for node, results in _uniform('ib.port_rate', '%s:%d' % (name, port_number), values, 'rate (Gb/s)',
                                          'reseat or replace the cable (a lower rate is a degraded link)').items():
                for result in results:
                    result['unit'] = 'Gb/s'
                out.setdefault(node, []).extend(results)
    if 'ib.ofed_uniform' in checks:
        values = dict((node, (info or {}).get('ofed_version') or 'inbox') for node, info in ib_infos.items())
        _merge(out, _uniform('ib.ofed_uniform', 'node', values, 'OFED', 'install the same DOCA-OFED/MLNX_OFED release',
                             expected.get('ofed') or None))
    return out


# ---------------------------------------------------------------------------
# Fabric (iblinkinfo through fabric_info)
# ---------------------------------------------------------------------------

_SWITCH_NAME_RE = re.compile(r'^(?:MF0;)?(?P<name>[^:]+)')


def switch_label(description):
    """``MF0;leaf-rail3:MQM9790/U1`` -> ``leaf-rail3``; other descriptions unchanged."""
    match = _SWITCH_NAME_RE.match(description or '')
    return match.group('name') if match else (description or '')


def ca_owner(description, nodes):
    """(node, hca) of a CA node description (``gpu02 mlx5_3`` or ``gpu02.example.org mlx5_3``), or (None, None)."""
    words = (description or '').split()
    if not words:
        return None, None
    host = words[0]
    hca = words[1] if len(words) > 1 else None
    for candidate in (host, host.split('.')[0]):
        if candidate in nodes:
            return candidate, hca
    short = dict((node.split('.')[0], node) for node in nodes)
    return short.get(host.split('.')[0]), hca


def evaluate_fabric(fabric, nodes, expected):
    """fabric.link_width, fabric.link_speed and (optionally) fabric.rail for every node.

    ``fabric``: fabric_info facts (``links``). ``nodes``: node name -> list of
    its HCAs in rail order. ``expected``: ``width`` (default ``4X``),
    ``lane_speed_gbps`` (None: only the tool's ``Could be`` hint counts),
    ``rail_check`` (bool), ``rail_group_regex`` (a regex whose group ``group``
    names a switch's rail group; default the switch name) and ``checks``.

    Returns ``{'nodes': node -> [results], 'degraded': [...], 'unmapped': [...]}``:
    each degraded link once, with both ends; a node side that belongs to no
    known node goes to ``unmapped`` (switch-to-switch links too).
    """
    checks = expected.get('checks') or ['fabric.link_width', 'fabric.link_speed', 'fabric.rail']
    width_wanted = expected.get('width') or '4X'
    lanes_wanted = int(str(width_wanted).upper().rstrip('X'))
    speed_wanted = expected.get('lane_speed_gbps')
    links = (fabric or {}).get('links') or []
    node_names = list(nodes)
    problems = {}
    degraded = []
    unmapped = []
    seen = set()
    ca_switch = {}
    for link in links:
        if link.get('state') in (None, 'Down') or not link.get('width'):
            continue
        if link.get('node_type') == 'CA':
            node, hca = ca_owner(link.get('node_name'), node_names)
            node_port = link.get('port')
            switch_name, switch_port = link.get('peer_name'), link.get('peer_port')
        elif link.get('node_type') == 'Switch':
            node, hca = ca_owner(link.get('peer_name'), node_names)
            node_port = link.get('peer_port')
            switch_name, switch_port = link.get('node_name'), link.get('port')
        else:
            continue
        if node is not None and hca and switch_name:
            ca_switch[(node, hca)] = switch_label(switch_name)
        lanes = int(str(link.get('width')).upper().rstrip('X') or 0) if str(link.get('width')).upper().rstrip('X').isdigit() else 0
        could_be = link.get('could_be') or ''
        width_bad = lanes < lanes_wanted or 'X' in could_be.replace('Gbps', '')
        speed = link.get('lane_speed_gbps')
        speed_bad = ('Gbps' in could_be) or (
            speed_wanted not in (None, '', 0) and speed is not None and float(speed) < float(speed_wanted))
        if not (width_bad or speed_bad):
            continue
        key = (node, hca, node_port) if node else (link.get('node_name'), link.get('port'))
        if key in seen:
            continue
        seen.add(key)
        entry = {'node': node, 'hca': hca, 'port': node_port, 'switch': switch_label(switch_name),
                 'switch_port': switch_port, 'width': link.get('width'), 'lane_speed_gbps': speed,
                 'could_be': could_be or None}
        degraded.append(entry)
        if node is None:
            unmapped.append(entry)
            continue
        peer = '%s port %s' % (entry['switch'], switch_port)
        subject = '%s:%s' % (hca, node_port)
        if width_bad and 'fabric.link_width' in checks:
            problems.setdefault(node, []).append(new_result(
                'fabric.link_width', subject, link.get('width'), width_wanted, False,
                '%s port %s trained at %s, expected %s (peer %s%s); reseat or replace the cable, clean the connectors'
                % (hca, node_port, link.get('width'), width_wanted, peer, ', iblinkinfo: %s' % could_be if could_be else ''),
                peer=peer))
        if speed_bad and 'fabric.link_speed' in checks:
            threshold = speed_wanted if speed_wanted not in (None, '', 0) else could_be
            problems.setdefault(node, []).append(new_result(
                'fabric.link_speed', subject, speed, threshold, False,
                '%s port %s runs at %s Gb/s per lane, below full speed (%s; peer %s); check cable type and length, '
                'and the port speed settings on both ends' % (
                    hca, node_port, _fmt(speed), could_be or 'expected %s' % _fmt(float(speed_wanted)), peer),
                unit='Gb/s', peer=peer))
    out = {}
    for node, hcas in nodes.items():
        node_problems = problems.get(node, [])
        out[node] = list(node_problems)
        for check, what in (('fabric.link_width', 'at %s' % width_wanted), ('fabric.link_speed', 'at full lane speed')):
            if check in checks and not any(r['check'] == check for r in node_problems):
                seen_links = [hca for hca in hcas if (node, hca) in ca_switch]
                out[node].append(new_result(check, 'node', len(seen_links), len(hcas), True,
                                            'all %d fabric links of the node %s (%d of %d HCAs seen by iblinkinfo)'
                                            % (len(seen_links), what, len(seen_links), len(hcas))))
    if expected.get('rail_check') and 'fabric.rail' in checks:
        _merge(out, _rails(nodes, ca_switch, expected.get('rail_group_regex')))
    return {'nodes': out, 'degraded': degraded, 'unmapped': unmapped}


def _rails(nodes, ca_switch, group_regex):
    regex = re.compile(group_regex) if group_regex else None

    def group(switch):
        if regex is None or switch is None:
            return switch
        match = regex.search(switch)
        return (match.groupdict().get('group') or match.group(0)) if match else switch
    rails = max([len(hcas) for hcas in nodes.values()] or [0])
    out = {}
    for rail in range(rails):
        values = {}
        for node, hcas in nodes.items():
            if rail < len(hcas):
                values[node] = group(ca_switch.get((node, hcas[rail])))
        for node, results in _uniform('fabric.rail', 'rail %d' % rail, values, 'leaf group',
                                      'rewire HCA %d of the node to the rail %d leaf (rail-optimized wiring)'
                                      % (rail, rail)).items():
            for result in results:
                result['rail'] = rail
                result['subject'] = '%s (rail %d)' % (nodes[node][rail], rail)
            out.setdefault(node, []).extend(results)
    return out


# ---------------------------------------------------------------------------
# Bandwidth (perftest)
# ---------------------------------------------------------------------------

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


def perftest_pair_result(parsed, test, client, server, rail, client_hca, server_hca, line_rate_gbps, fraction,
                         max_latency_us=None, round_index=None):
    """One perftest pair result (for results.json ``perftest.pairs``) from the client's parsed output.

    Bandwidth tests: the average of the largest message size, in Gb/s (run with
    ``--report_gbits``), against ``fraction`` x the line rate. Latency tests:
    t_typical (else t_avg) of the smallest size against ``max_latency_us``.
    """
    parsed = parsed or {}
    rows = parsed.get('results') or []
    entry = {'test': test, 'client': client, 'server': server, 'hca': client_hca, 'peer_hca': server_hca,
             'rail': rail, 'line_rate': line_rate_gbps, 'round': round_index, 'errors': list(parsed.get('errors') or [])}
    if test == 'write_lat':
        row = min(rows, key=lambda r: r.get('bytes') or 0) if rows else None
        value = None if row is None else (row.get('t_typical') if row.get('t_typical') is not None else row.get('t_avg'))
        entry.update(measured=value, threshold=max_latency_us, unit='usec',
                     passed=value is not None and (max_latency_us in (None, '') or value <= float(max_latency_us)))
        return entry
    row = max(rows, key=lambda r: r.get('bytes') or 0) if rows else None
    value = None if row is None else row.get('bw_average')
    units = parsed.get('units')
    if value is not None and units and units != 'Gb/sec':
        value = value * (8.0 / 1000.0 if units == 'MB/sec' else 8.0 * 1.048576 / 1000.0)
    threshold = None if line_rate_gbps in (None, '') else round(float(line_rate_gbps) * float(fraction), 2)
    entry.update(measured=None if value is None else round(value, 2), threshold=threshold, unit='Gb/s',
                 passed=value is not None and threshold is not None and value >= threshold)
    return entry


def evaluate_perftest(pairs, nodes, test='write_bw', final=True):
    """perftest.<test> results per node from every pair result (retests included).

    ``pairs``: entries of ``perftest_pair_result`` for this test; ``nodes``:
    node -> HCAs in rail order. A (node, rail) that failed with two partners
    fails; one that failed with one partner and passed with another passes (its
    partner is blamed); with ``final``, one that failed with one partner and
    could not be re-tested fails, saying so. Returns node -> [results] and the
    unattributed failing pairs: ``{'nodes': ..., 'unattributed': [...]}``.
    """
    check = 'perftest.' + test
    tests = [p for p in pairs if p.get('test') == test]
    verdict = attribute([{'client': p['client'], 'server': p['server'], 'rail': p['rail'], 'passed': p['passed']}
                         for p in tests])
    faulty = set((n, r) for n, r in verdict['faulty'])
    suspect = set((n, r) for n, r in verdict['suspect'])
    out = {}
    for node, hcas in sorted(nodes.items()):
        results = []
        for rail, hca in enumerate(hcas):
            mine = [p for p in tests if p['rail'] == rail and node in (p['client'], p['server'])]
            if not mine:
                continue
            failed = [p for p in mine if not p['passed']]
            passed = [p for p in mine if p['passed']]

            def partner(p):
                return p['server'] if p['client'] == node else p['client']

            def desc(p):
                return '%s %s' % (partner(p), p['peer_hca'] if p['client'] == node else p['hca'])
            worst = min(mine, key=lambda p: (p['measured'] is None, p['measured'] if p['measured'] is not None else 0)) \
                if test != 'write_lat' else max(mine, key=lambda p: p['measured'] or 0)
            unit = worst.get('unit')
            if (node, rail) in faulty:
                shown = sorted(failed, key=partner)
                results.append(new_result(
                    check, '%s -> %s' % (hca, ', '.join(desc(p) for p in shown)), worst['measured'], worst['threshold'],
                    False, '%s failed %s with %d different partners (%s), threshold %s %s; the fault is on this node: '
                    'check the HCA, its cable and its PCIe slot' % (
                        hca, test, len(set(partner(p) for p in failed)),
                        ', '.join('%s: %s' % (partner(p), _fmt(p['measured']) if p['measured'] is not None else
                                              (p['errors'][0] if p['errors'] else 'no result')) for p in shown),
                        _fmt(worst['threshold']), unit), unit=unit, rail=rail,
                    partners=sorted(set(partner(p) for p in failed))))
            elif (node, rail) in suspect and final:
                p = failed[0]
                results.append(new_result(
                    check, '%s -> %s' % (hca, desc(p)), p['measured'], p['threshold'], False,
                    '%s %s with %s: %s %s, threshold %s; could not be re-tested against a third node, so neither side is '
                    'cleared' % (hca, test, partner(p), _fmt(p['measured']) if p['measured'] is not None else 'no result',
                                 unit, _fmt(p['threshold'])), unit=unit, rail=rail, partners=[partner(p)]))
            else:
                best = passed[0] if passed else worst
                blamed = [partner(p) for p in failed]
                note = ' (failed with %s, which is the faulty side)' % ', '.join(blamed) if blamed else ''
                results.append(new_result(
                    check, '%s -> %s' % (hca, desc(best)), best['measured'], best['threshold'], True,
                    '%s %s %s %s >= %s%s' % (hca, test, _fmt(best['measured']), unit, _fmt(best['threshold']), note)
                    if test != 'write_lat' else
                    '%s %s %s %s <= %s%s' % (hca, test, _fmt(best['measured']), unit, _fmt(best['threshold']), note),
                    unit=unit, rail=rail))
        if results:
            out[node] = results
    return {'nodes': out, 'unattributed': verdict['unattributed']}


# ---------------------------------------------------------------------------
# MTU (ping -M do)
# ---------------------------------------------------------------------------

_PING_MTU_RE = re.compile(r'(?:mtu\s*=\s*|mtu\s+)(?P<mtu>\d+)', re.IGNORECASE)


def evaluate_mtu(rc, stdout, stderr, peer, mtu):
    """net.mtu for one node and one peer, from ``ping -M do -s MTU-28 -c N peer``."""
    text = '%s\n%s' % (stdout or '', stderr or '')
    payload = int(mtu) - 28
    if rc == 0:
        return [new_result('net.mtu', peer, int(mtu), int(mtu), True,
                           'ping -M do -s %d to %s passes: MTU %d holds end to end' % (payload, peer, int(mtu)), unit='bytes')]
    found = _PING_MTU_RE.search(text)
    measured = int(found.group('mtu')) if found else None
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    said = next((line for line in lines if 'too long' in line or 'Frag' in line or 'unknown host' in line.lower()
                 or 'Name or service' in line), lines[-1] if lines else 'no output')
    return [new_result('net.mtu', peer, measured, int(mtu), False,
                       'ping -M do -s %d to %s failed (rc=%s): %s; set MTU %d on the interfaces and every switch port '
                       'on the path' % (payload, peer, rc, said, int(mtu)), unit='bytes')]


# ---------------------------------------------------------------------------
# GPUs
# ---------------------------------------------------------------------------

_XID_RE = re.compile(r'NVRM:\s*Xid\s*\((?P<where>[^)]*)\)\s*:\s*(?P<code>\d+)\s*,?\s*(?P<text>.*)$')


def parse_xid(text):
    """NVRM Xid events of a kernel log (dmesg): list of ``{code, pci, text, line}``."""
    events = []
    for raw in (text or '').splitlines():
        match = _XID_RE.search(raw)
        if match:
            where = match.group('where').strip()
            pci = where[4:] if where.upper().startswith('PCI:') else where
            events.append({'code': int(match.group('code')), 'pci': pci.strip(), 'text': match.group('text').strip(),
                           'line': raw.strip()})
    return events


def _bus_key(bus_id):
    """A PCI address reduced to bus:device for matching (``00000000:1B:00.0`` ~ ``0000:1b:00``)."""
    parts = (bus_id or '').lower().split(':')
    if len(parts) >= 2:
        return ':'.join([parts[-2], parts[-1].split('.')[0]])
    return (bus_id or '').lower()


def _gpu_label(gpus, bus_id):
    key = _bus_key(bus_id)
    for gpu in gpus:
        if _bus_key(gpu.get('pci_bus_id')) == key:
            return 'GPU %s' % gpu.get('index')
    return 'PCI %s' % bus_id


def _model_matches(gpu, model):
    wanted = (model or '').strip().lower()
    return wanted in ((gpu.get('name') or '').lower(), (gpu.get('type') or '').lower())


def evaluate_gpus(gpu_info, expected, nvlink=None, nvlink_errors=None, dcgm=None, dmesg_text=None, compute_apps=None,
                  retired=None):
    """gpu.* checks for one node.

    ``gpu_info``: the gpu_info facts. ``nvlink`` / ``nvlink_errors``: parsed
    ``nvidia-smi nvlink -s`` / ``-e``. ``dcgm``: dcgm_diag's result.
    ``dmesg_text``: the kernel log since boot. ``compute_apps``: rows of
    ``--query-compute-apps=gpu_bus_id,pid,process_name,used_memory``.
    ``retired``: rows of ``--query-gpu=index,retired_pages.sbe,retired_pages.dbe,retired_pages.pending``.
    An argument left None skips its checks. ``expected``: ``count``, ``model``,
    ``persistence`` (bool), ``ecc_uncorrected_max`` (0), ``retired_pages_max``
    (0), ``nvlinks_per_gpu`` (None: every link printed must be up),
    ``nvlink_error_max`` ({counter: limit}), ``fatal_xids`` (list),
    ``allowed_processes`` (names), ``dcgm_allow_warn`` (bool), ``checks``.
    """
    checks = expected.get('checks') or [
        'gpu.count', 'gpu.model', 'gpu.persistence', 'gpu.ecc', 'gpu.retired_pages', 'gpu.row_remap', 'gpu.nvlink',
        'gpu.nvlink_errors', 'gpu.xid', 'gpu.processes', 'gpu.dcgm_diag']
    gpus = (gpu_info or {}).get('gpus') or []
    results = []
    if 'gpu.count' in checks:
        count = len(gpus)
        want = expected.get('count')
        ok = want in (None, '') or count == int(want)
        results.append(new_result('gpu.count', 'node', count, want, ok,
                                  '%d GPUs%s' % (count, ' as expected' if ok else ', expected %s; a missing GPU has fallen off '
                                                 'the bus or failed to initialise: check dmesg, reseat or RMA' % want)))
    if 'gpu.model' in checks and expected.get('model'):
        wrong = ['GPU %s (%s)' % (g.get('index'), g.get('name')) for g in gpus if not _model_matches(g, expected['model'])]
        names = sorted(set(g.get('name') for g in gpus))
        results.append(new_result('gpu.model', 'node', ', '.join(n for n in names if n) or None, expected['model'],
                                  not wrong and bool(gpus),
                                  'GPU model %s' % ', '.join(n for n in names if n) if not wrong and gpus else
                                  'wrong GPU model: %s, expected %s' % (', '.join(wrong) or 'no GPU', expected['model'])))
    for gpu in gpus:
        label = 'GPU %s' % gpu.get('index')
        if 'gpu.persistence' in checks and expected.get('persistence', True):
            ok = gpu.get('persistence_mode') is True
            results.append(new_result('gpu.persistence', label, 'Enabled' if ok else 'Disabled', 'Enabled', ok,
                                      '%s persistence mode %s' % (label, 'enabled' if ok else
                                                                  'disabled; enable nvidia-persistenced (nvidia-smi -pm 1)')))
        if 'gpu.ecc' in checks:
            value = gpu.get('ecc_errors_uncorrected_volatile')
            limit = int(expected.get('ecc_uncorrected_max') or 0)
            ok = value is None or int(value) <= limit
            results.append(new_result('gpu.ecc', label, value, limit, ok,
                                      '%s volatile uncorrectable ECC errors: %s (limit %d)%s' % (
                                          label, 'N/A' if value is None else value, limit,
                                          '' if ok else '; reset the GPU, and RMA it if they return')))
        if 'gpu.row_remap' in checks:
            pending, failure = gpu.get('remapped_rows_pending'), gpu.get('remapped_rows_failure')
            ok = not pending and not failure
            measured = 'failure' if failure else ('pending' if pending else ('none' if pending is not None else 'N/A'))
            results.append(new_result('gpu.row_remap', label, measured, 'none', ok,
                                      '%s row remapping: %s%s' % (label, measured, '' if ok else (
                                          '; a remapping failed: the GPU needs service (RMA)' if failure else
                                          '; reset the GPU (nvidia-smi -r or reboot) to apply the pending remap'))))
    if 'gpu.retired_pages' in checks and retired is not None:
        limit = int(expected.get('retired_pages_max') or 0)
        for row in retired:
            label = 'GPU %s' % row.get('index')
            sbe, dbe = _int_or_none(row.get('retired_pages.sbe')), _int_or_none(row.get('retired_pages.dbe'))
            pending = str(row.get('retired_pages.pending') or '').strip().lower() in ('yes', 'true', 'enabled')
            total = None if sbe is None and dbe is None else (sbe or 0) + (dbe or 0)
            ok = not pending and (total is None or total <= limit)
            results.append(new_result('gpu.retired_pages', label, total, limit, ok,
                                      '%s retired pages %s (limit %d)%s%s' % (
                                          label, 'N/A' if total is None else total, limit,
                                          ', retirement pending: reload the driver or reboot' if pending else '',
                                          '; RMA the GPU' if total is not None and total > limit else '')))
    if 'gpu.nvlink' in checks and nvlink is not None:
        per_gpu = expected.get('nvlinks_per_gpu')
        most = max([len(gpu.get('links') or []) for gpu in nvlink.get('gpus') or []] or [0])
        for gpu in nvlink.get('gpus') or []:
            label = 'GPU %s' % gpu.get('index')
            links = gpu.get('links') or []
            up = [link for link in links if link.get('active')]
            down = [str(link.get('link')) for link in links if not link.get('active')]
            want = int(per_gpu) if per_gpu not in (None, '') else most
            ok = len(up) >= want
            results.append(new_result('gpu.nvlink', label, len(up), want, ok,
                                      '%s NVLinks up: %d of %d%s' % (
                                          label, len(up), want, '' if ok else
                                          ' (down: %s); check the NVSwitch/fabric manager, reset the GPU, else RMA'
                                          % ', '.join(down))))
        for line in nvlink.get('errors') or []:
            results.append(new_result('gpu.nvlink', 'node', line, 'no error', False, 'nvidia-smi nvlink -s: %s' % line))
    if 'gpu.nvlink_errors' in checks and nvlink_errors is not None:
        limits = expected.get('nvlink_error_max') or {}
        for gpu in nvlink_errors.get('gpus') or []:
            label = 'GPU %s' % gpu.get('index')
            over = []
            totals = {}
            for link in gpu.get('links') or []:
                for counter in ('replay_errors', 'recovery_errors', 'crc_errors'):
                    value = link.get(counter)
                    if value is None:
                        continue
                    totals[counter] = totals.get(counter, 0) + value
                    limit = limits.get(counter)
                    if limit is not None and value > int(limit):
                        over.append('link %s %s %d > %d' % (link.get('link'), counter.replace('_', ' '), value, int(limit)))
            results.append(new_result('gpu.nvlink_errors', label, totals, limits, not over,
                                      '%s NVLink error counters within limits (%s)' % (
                                          label, ', '.join('%s %d' % (k.replace('_', ' '), v) for k, v in sorted(totals.items()))
                                          or 'none printed') if not over else
                                      '%s NVLink errors over the limits: %s; reseat the GPU baseboard cables or RMA' % (
                                          label, '; '.join(over))))
    if 'gpu.xid' in checks and dmesg_text is not None:
        fatal = set(int(code) for code in expected.get('fatal_xids') or [])
        events = parse_xid(dmesg_text)
        bad = [event for event in events if event['code'] in fatal]
        if bad:
            by_gpu = {}
            for event in bad:
                by_gpu.setdefault(_gpu_label(gpus, event['pci']), []).append(event)
            for label, found in sorted(by_gpu.items()):
                codes = sorted(set(event['code'] for event in found))
                results.append(new_result('gpu.xid', label, codes, 'none of %s' % sorted(fatal), False,
                                          '%s fatal Xid %s in the kernel log since boot: %s; follow NVIDIA\'s Xid catalog '
                                          '(reset the GPU or reboot, RMA if it returns)' % (
                                              label, ', '.join(str(c) for c in codes), found[-1]['text'][:120])))
        else:
            other = sorted(set(event['code'] for event in events))
            results.append(new_result('gpu.xid', 'node', other, 'none of %s' % sorted(fatal), True,
                                      'no fatal Xid in the kernel log since boot%s' % (
                                          ' (non-fatal Xid seen: %s)' % ', '.join(str(c) for c in other) if other else '')))
    if 'gpu.processes' in checks and compute_apps is not None:
        allowed = set(expected.get('allowed_processes') or [])
        stray = [row for row in compute_apps if row.get('process_name') not in allowed and
                 (row.get('process_name') or '').split('/')[-1] not in allowed]
        if stray:
            by_gpu = {}
            for row in stray:
                by_gpu.setdefault(_gpu_label(gpus, row.get('gpu_bus_id')), []).append(row)
            for label, rows in sorted(by_gpu.items()):
                results.append(new_result('gpu.processes', label, len(rows), 0, False,
                                          '%s has %d stray process(es): %s; kill them or fix the job epilog' % (
                                              label, len(rows), ', '.join('%s (pid %s)' % (r.get('process_name'), r.get('pid'))
                                                                          for r in rows))))
        else:
            results.append(new_result('gpu.processes', 'node', 0, 0, True, 'no process on any GPU'))
    if 'gpu.dcgm_diag' in checks and dcgm is not None:
        overall = dcgm.get('overall')
        allowed = ('pass', 'warn') if expected.get('dcgm_allow_warn') else ('pass',)
        ok = overall in allowed
        failing = [test.get('name') for test in dcgm.get('tests') or [] if test.get('result') in ('fail', 'warn')
                   and (test.get('result') == 'fail' or not expected.get('dcgm_allow_warn'))]
        level = dcgm.get('level')
        results.append(new_result('gpu.dcgm_diag', 'node', overall, ' or '.join(allowed), ok,
                                  'dcgmi diag -r %s: %s%s' % (level if level is not None else '?', overall, '' if ok else
                                                              ' (%s); read dcgmi diag -r %s -v and follow its advice'
                                                              % (', '.join(f for f in failing if f) or
                                                                 '; '.join(dcgm.get('errors') or []) or 'no report',
                                                                 level if level is not None else '?'))))
    return results


def _int_or_none(value):
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


def evaluate_gpu_fleet(gpu_infos, expected=None):
    """gpu.driver_uniform: node -> [results] (against ``expected['driver']`` or the fleet's majority)."""
    expected = expected or {}
    values = dict((node, (info or {}).get('driver_version')) for node, info in gpu_infos.items())
    return _uniform('gpu.driver_uniform', 'node', values, 'driver', 'install the same driver branch and version everywhere',
                    expected.get('driver') or None)


# ---------------------------------------------------------------------------
# NCCL (nccl-tests)
# ---------------------------------------------------------------------------

def nccl_measure(parsed, large_bytes):
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


def nccl_threshold(table, model, override=None):
    """The busbw threshold (GB/s) for a GPU model: ``override`` when set, else the table's entry whose key the
    model name (or short type) contains, longest key first; None when none matches."""
    if override not in (None, '', 0):
        return float(override)
    name = (model or '').lower()
    for key in sorted(table or {}, key=len, reverse=True):
        if key.lower() in name:
            return float(table[key])
    return None


def nccl_fleet_median(busbws):
    """Median of the measured busbw values (None values ignored); None when there are none."""
    values = sorted(float(v) for v in busbws if v is not None)
    if not values:
        return None
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2.0


def evaluate_nccl(parsed, threshold, median=None, slow_fraction=0.1, large_bytes=1 << 30, model=None, checks=None):
    """nccl.wrong, nccl.busbw and nccl.slow_node for one node's single-node all_reduce_perf run."""
    checks = checks or ['nccl.wrong', 'nccl.busbw', 'nccl.slow_node']
    busbw, wrong, errors = nccl_measure(parsed, large_bytes)
    results = []
    if 'nccl.wrong' in checks:
        ok = wrong == 0 and not errors and bool((parsed or {}).get('rows'))
        results.append(new_result('nccl.wrong', 'node', wrong, 0, ok,
                                  'nccl-tests #wrong %d%s' % (wrong, '' if ok else (
                                      '; the test failed: %s' % errors[0] if errors else
                                      '; no result rows' if not (parsed or {}).get('rows') else
                                      '; wrong results mean a broken GPU or NVLink: run dcgmi diag -r 3 and RMA'))))
    if 'nccl.busbw' in checks:
        if threshold is None:
            results.append(new_result('nccl.busbw', 'node', busbw, None, False,
                                      'no busbw threshold for GPU model %s; set verify_nccl_busbw_min_gbs or add the model '
                                      'to verify_nccl_busbw_table' % (model or 'unknown'), unit='GB/s'))
        else:
            ok = busbw is not None and busbw >= float(threshold)
            results.append(new_result('nccl.busbw', 'node', busbw, float(threshold), ok,
                                      'all_reduce busbw %s GB/s %s %s GB/s%s' % (
                                          _fmt(busbw) if busbw is not None else 'none', '>=' if ok else '<',
                                          _fmt(float(threshold)), '' if ok else
                                          '; check nvidia-smi nvlink -s, topo -m and the fabric manager'), unit='GB/s'))
    if 'nccl.slow_node' in checks and median is not None:
        floor = round(float(median) * (1.0 - float(slow_fraction)), 2)
        ok = busbw is not None and busbw >= floor
        results.append(new_result('nccl.slow_node', 'node', busbw, floor, ok,
                                  'busbw %s GB/s is %s the fleet median %s GB/s minus %d%% (%s GB/s)%s' % (
                                      _fmt(busbw) if busbw is not None else 'none', 'within' if ok else 'below',
                                      _fmt(float(median)), int(round(float(slow_fraction) * 100)), _fmt(floor),
                                      '' if ok else ': a slow node; compare its clocks, power and PCIe links with a good node'),
                                  unit='GB/s'))
    return results


def evaluate_nccl_multi_node(parsed, threshold, nodes, large_bytes=1 << 30, launch_error=None):
    """nccl.multi_node_busbw for every node of a multi-node run: node -> [result], and the figures.

    ``launch_error``: why the launcher (srun, mpirun) gave no result, e.g. its
    last stderr line; it comes first among the errors, so the message says why.
    """
    busbw, wrong, errors = nccl_measure(parsed, large_bytes)
    if launch_error:
        errors = [launch_error] + errors
    ok = busbw is not None and threshold is not None and busbw >= float(threshold) and wrong == 0 and not errors
    message = '%d-node all_reduce busbw %s GB/s %s %s GB/s%s' % (
        len(nodes), _fmt(busbw) if busbw is not None else 'none', '>=' if ok else 'vs',
        _fmt(float(threshold)) if threshold is not None else 'no threshold',
        '' if ok else '; %s' % (errors[0] if errors else '#wrong %d' % wrong if wrong else
                                'check the per-node perftest results and NCCL_IB_HCA'))
    out = dict((node, [new_result('nccl.multi_node_busbw', 'cluster', busbw, threshold, ok, message, unit='GB/s')])
               for node in nodes)
    return {'nodes': out, 'summary': {'nodes': list(nodes), 'busbw': busbw, 'wrong': wrong, 'threshold': threshold,
                                      'passed': ok, 'errors': errors}}


# ---------------------------------------------------------------------------
# Collecting
# ---------------------------------------------------------------------------

def collect_nodes(nodes, per_area, raw=None, versions=None, missing_message=None):
    """results.json ``nodes`` before the gate acts: node -> {passed, results, raw, versions}.

    ``per_area``: a list of node -> [results] mappings (one per area or
    fleet-wide check). A node with no result at all fails (it was unreachable
    or every check errored).
    """
    out = {}
    for node in nodes:
        results = []
        for mapping in per_area:
            results.extend((mapping or {}).get(node) or [])
        if not results:
            results.append(new_result('node.reachable', 'node', 'no results', 'results', False,
                                      missing_message or 'no check result: the node was unreachable or every check '
                                      'failed to run; see the play output'))
        out[node] = {
            'passed': all(r['passed'] for r in results),
            'drained': False,
            'resumed': False,
            'drain_reason': None,
            'slurm_state': {'before': None, 'after': None, 'reason_before': None},
            'versions': (versions or {}).get(node) or {},
            'results': results,
            'raw': (raw or {}).get(node) or {},
        }
    return out


def is_own_reason(reason, prefix=DRAIN_PREFIX):
    """Whether a Slurm reason was set by this gate (starts with the prefix)."""
    return (reason or '').strip().startswith(prefix)


# ---------------------------------------------------------------------------
# Gate
# ---------------------------------------------------------------------------

_REASON_STAMP_RE = re.compile(r'\s*\[[^\]\[@]*@[^\]\[]*\]\s*$')


def strip_reason_stamp(reason):
    """``aicluster: gpu.xid GPU 3 [root@2026-01-06T10:02:33]`` -> ``aicluster: gpu.xid GPU 3``; None stays None."""
    if reason is None:
        return None
    return _REASON_STAMP_RE.sub('', reason).strip() or None


def is_drained(state):
    """Whether a Slurm node state (``IDLE+DRAIN``, ``DRAINED``, ``MIXED+DRAIN``) carries the drain flag."""
    parts = re.split(r'[+*~#!%$@^-]', (state or '').upper())
    return any(part in ('DRAIN', 'DRAINED', 'DRAINING') for part in parts)


def gate_actions(nodes, slurm_nodes, mode, slurm_names=None, prefix=DRAIN_PREFIX):
    """What the gate does in Slurm: node -> {action, reason, slurm_name, state, reason_before, note}.

    ``nodes``: results.json nodes (``passed``, ``results``). ``slurm_nodes``:
    parsed ``scontrol show node`` entries. ``mode``: drain, fail or report
    (only ``drain`` drains; every mode resumes nothing it did not drain, and
    resumes its own drains of nodes that now pass). ``slurm_names``: node ->
    its Slurm NodeName when they differ. Actions: ``drain``, ``resume``,
    ``none``; a node unknown to Slurm gets ``none`` with a note.
    """
    from ansible_collections.aicluster.infra.plugins.module_utils.verify.results import drain_reason
    by_name = dict((entry.get('NodeName'), entry) for entry in slurm_nodes or [])
    out = {}
    for node, data in sorted(nodes.items()):
        name = (slurm_names or {}).get(node) or node
        entry = by_name.get(name)
        action = {'action': 'none', 'reason': None, 'slurm_name': name, 'state': None, 'reason_before': None, 'note': None}
        out[node] = action
        if entry is None:
            action['note'] = 'not a Slurm node (scontrol does not know %s)' % name
            continue
        state = entry.get('State')
        reason = strip_reason_stamp(entry.get('Reason'))
        action.update(state=state, reason_before=reason)
        drained = is_drained(state)
        own = drained and reason is not None and reason.startswith(prefix)
        if data.get('passed'):
            if own:
                action.update(action='resume', note='passes now; resuming the gate\'s own drain (%s)' % reason)
            elif drained:
                action['note'] = 'passes, but drained by someone else (%s): left drained' % (reason or 'no reason')
            continue
        failed = [r for r in data.get('results') or [] if not r.get('passed')]
        wanted = drain_reason(failed)
        if mode != 'drain':
            action['note'] = 'fails; mode %s does not drain' % mode
        elif drained and not own:
            action['note'] = 'fails, and is already drained by someone else (%s): their reason is kept' % (reason or 'no reason')
        elif own and reason == wanted:
            action['note'] = 'already drained by the gate for the same reason'
        else:
            action.update(action='drain', reason=wanted)
    return out
