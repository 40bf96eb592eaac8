# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Area net on RoCE fleets: the lossless class itself (issue 33 item 4).

``net.roce_qos`` (role verify_ib): every RoCE GPU-fabric port's live QoS equals what the roce role sets. The role
gathers (the roce role's own plan, through its ``plan`` entry point, and module ``rdma_qos`` run once for every port in check
mode with the plan's settings, so the two can never disagree), ``decide_roce_qos`` turns the module's ``changes``
(``setting: before -> wanted``) and the netdev's MTU into one result per port.

``net.lossless`` (role verify_perftest): one incast round per rail (every rail's at once), every other node of the
rail's group sending to its first node with ``ib_write_bw --tclass`` of the lossless class, and the ports' priority
counters read before and after (module ib_counters_info, ``ethtool -S``, one call per node). ``lossless_plan`` picks
the receiver, the senders and their commands (the perftest area's own command builder), ``decide_lossless`` judges the
rise: pauses and CNPs may rise (that is PFC and DCQCN working),
``rx_prio<P>_discards`` (and ``rx_discards_phy``) must not (docs/fabric.md "RoCE: the checks").
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.verify import perftest as _perftest
from ansible_collections.aicluster.infra.plugins.module_utils.verify._common import failed, int_or_none
from ansible_collections.aicluster.infra.plugins.module_utils.verify.net import interfaces
from ansible_collections.aicluster.infra.plugins.module_utils.verify.results import new_result

NOT_ETHERNET = ('verify_ib_link_layer is InfiniBand: the GPU fabric is not RoCE, so there is no lossless Ethernet '
                'class to check')
# judged: a lossless class drops nothing. Every priority's discards count, not only the lossless one's: a port whose
# trust or DSCP map is wrong puts the incast on another priority (a fresh mlx5 trusts PCP: priority 0), and drops there.
LOSSLESS_DROPS = ('rx_prio{prio}_discards', 'rx_discards_phy')
_PRIO_DISCARDS = re.compile(r'^rx_prio[0-7]_discards$')
# kept as evidence (may rise: PFC and DCQCN at work)
LOSSLESS_EVIDENCE = ('rx_prio{prio}_pause', 'tx_prio{prio}_pause', 'np_cnp_sent', 'rp_cnp_handled')
# the first port of the incast rounds (ports base + k, k the sender's index: every server of one receiver listens apart)
INCAST_PORT_OFFSET = 64


def _skipped(check, subject, threshold, reason, **extra):
    return new_result(check, subject, None, threshold, True, 'not checked: %s' % reason, skipped=reason, **extra)


# ---------------------------------------------------------------------------------------------------------- roce_qos

def _qos_runs(observation, ports):
    """netdev -> its entry of the rdma_qos run's ``ports`` (one module run for every port of the node). A run that
    failed as a whole (no ``ports``: its arguments refused) is every planned port's result."""
    observation = observation or {}
    entries = observation.get('ports')
    if isinstance(entries, list):
        return dict((entry['netdev'], entry) for entry in entries if isinstance(entry, dict) and entry.get('netdev'))
    if failed(observation):
        return dict((port.get('netdev'), observation) for port in ports)
    return {}


def _port_result(port, run, live, mtu_wanted):
    netdev, hca = port.get('netdev'), port.get('hca')
    subject = '%s (%s:%s)' % (netdev, hca, port.get('port', 1))
    what = '%s (%s port %s, rail %s)' % (netdev, hca, port.get('port', 1), port.get('rail'))
    extra = {'netdev': netdev, 'hca': hca}
    if run is None or run.get('skipped'):
        return _skipped('net.roce_qos', subject, 'the roce role\'s settings', 'rdma_qos did not read %s' % netdev, **extra)
    if failed(run):
        return new_result('net.roce_qos', subject, None, 'the roce role\'s settings', False,
                          '%s: rdma_qos could not read the port: %s; run the fabric stage (role roce) on this node'
                          % (what, run.get('msg') or 'no message'), **extra)
    changes = [str(line) for line in run.get('changes') or []]
    notes = []
    if mtu_wanted is not None:
        if live is None:
            notes.append('the MTU was not read (ip -j addr)')
        elif (live.get(netdev) or {}).get('mtu') is None:
            notes.append('%s has no MTU in ip -j addr' % netdev)
        elif live[netdev]['mtu'] != mtu_wanted:
            changes.append('mtu: %s -> %s' % (live[netdev]['mtu'], mtu_wanted))
    unavailable = list(run.get('unavailable') or [])
    if unavailable:
        notes.append('not exposed here, not judged: %s' % ', '.join(unavailable))
    note = ' (%s)' % '; '.join(notes) if notes else ''
    extra['unavailable'] = unavailable
    if changes:
        return new_result('net.roce_qos', subject, changes, 'the roce role\'s settings', False,
                          '%s differs from the roce role\'s settings: %s%s; run the fabric stage (role roce) on this node, '
                          'and check that aicluster-roce-qos.service is enabled (a driver restart or a hand change undid '
                          'them)' % (what, '; '.join(changes), note), **extra)
    return new_result('net.roce_qos', subject, [], 'the roce role\'s settings', True,
                      '%s: trust, PFC, DSCP map, ECN, CNP, ToS, RoCE mode, traffic class%s as the roce role sets them%s'
                      % (what, ' and MTU %s' % mtu_wanted if mtu_wanted is not None else '', note), **extra)


def evaluate_roce_qos(observed):
    """The net.roce_qos results of one node from ``observed``: ``plan`` (the roce role's plan), ``qos`` (the
    registered rdma_qos run with every port, check mode) and ``links`` (``ip -j -d addr show``)."""
    plan = (observed or {}).get('plan')
    if not isinstance(plan, dict) or plan.get('skipped') or 'ports' not in plan:
        return [_skipped('net.roce_qos', 'node', 'the roce role\'s settings', 'the roce role\'s plan was not made on this node')]
    if plan.get('problems'):
        return [_skipped('net.roce_qos', 'node', 'the roce role\'s settings',
                         'the roce role\'s variables are invalid (%s); the fabric stage refuses them too'
                         % '. '.join(plan['problems']))]
    if plan.get('skip'):
        return [_skipped('net.roce_qos', 'node', 'the roce role\'s settings', plan['skip'])]
    runs = _qos_runs((observed or {}).get('qos'), plan.get('ports') or [])
    live = interfaces((observed or {}).get('links'))
    mtus = dict((item.get('name'), int_or_none(item.get('mtu'))) for item in plan.get('interfaces') or [])
    return [_port_result(port, runs.get(port.get('netdev')), live, mtus.get(port.get('netdev')))
            for port in plan.get('ports') or []]


def decide_roce_qos(observations, expected):
    """The verify_ib role's net.roce_qos decision, once for the play.

    ``observations``: node -> {``plan``, ``qos``, ``links``} (see ``evaluate_roce_qos``). ``expected``:
    ``link_layer`` (verify_ib_link_layer; InfiniBand: every node's check is not run, with the reason) and
    ``enabled``. Returns ``{'nodes': node -> [results]}``.
    """
    expected = expected or {}
    nodes = {}
    for node, observed in sorted((observations or {}).items()):
        if expected.get('link_layer', 'Ethernet') != 'Ethernet':
            nodes[node] = [_skipped('net.roce_qos', 'node', 'the roce role\'s settings', NOT_ETHERNET)]
        elif observed:
            nodes[node] = evaluate_roce_qos(observed)
    return {'nodes': nodes}


# ---------------------------------------------------------------------------------------------------------- lossless

def lossless_priority(tclass, roce_plan=None, default=3):
    """The priority the lossless traffic class lands on: the roce role's DSCP map entry of ``tclass >> 2`` (trust
    dscp), else ``default`` (verify_ib_roce_priority)."""
    qos = (roce_plan or {}).get('qos') if isinstance(roce_plan, dict) else None
    tclass = int_or_none(tclass)
    if qos and tclass is not None and qos.get('trust', 'dscp') == 'dscp':
        prio = int_or_none((qos.get('dscp_map') or {}).get(str(tclass >> 2)))
        if prio is not None:
            return prio
    return int(default)


def _netdevs(ib_info):
    """HCA -> the netdev of its first Ethernet port."""
    out = {}
    for ca in (ib_info or {}).get('hcas') or []:
        for port in (ca or {}).get('ports') or []:
            if isinstance(port, dict) and port.get('netdev') and (port.get('link_layer') or ca.get('link_layer')) == 'Ethernet':
                out.setdefault(ca.get('name'), port['netdev'])
    return out


def lossless_plan(observations, outcome, expected):
    """The incast rounds, one per rail: ``{'skip', 'priority', 'rounds', 'tests', 'reads'}``.

    ``observations``: node -> {``ib_info``} (verify_perftest's reads); ``outcome``: the perftest plan (its
    ``endpoints``, ``options``); ``expected``: ``link_layer``, ``nodes`` (play order), ``base_port``, ``busy`` (nodes
    left out), ``tclass``, ``roce_plan`` (the roce role's plan: its DSCP map gives the priority) and
    ``default_priority`` (without one).
    Each round (rail r): the receiver is the first node (play order) of the nodes having rail r, every other node a
    sender, each to its own server port (``base_port + 64 + k``, k counting the receiver's servers over every rail);
    ``bidirectional`` off (an incast is one way). ``tests``: every round's tests, which run at once (the rails are
    separate ports, so each port's counters still see its own rail's incast only). ``reads``:
    node -> the HCAs whose ports' counters are read before and after (the ports of every rail it takes part in), one
    ``ib_counters_info`` call each time (it reads every port's ``ethtool -S`` at once).
    """
    expected = expected or {}
    plan = {'skip': None, 'rounds': [], 'tests': [], 'reads': {},
            'priority': lossless_priority(expected.get('tclass'), expected.get('roce_plan'),
                                          expected.get('default_priority', 3))}
    if expected.get('link_layer', 'Ethernet') != 'Ethernet':
        plan['skip'] = NOT_ETHERNET
        return plan
    endpoints = (outcome or {}).get('endpoints') or {}
    busy = set(expected.get('busy') or [])
    order = [node for node in (expected.get('nodes') or sorted(endpoints)) if node in endpoints and node not in busy]
    if len(order) < 3:
        plan['skip'] = ('an incast needs 2 or more senders to one receiver: %d node(s) to test here' % len(order))
        return plan
    options = dict(_perftest.run_options(dict(outcome.get('options') or {}, **(expected.get('options') or {}))),
                   bidirectional=False)
    netdevs = dict((node, _netdevs((observed or {}).get('ib_info'))) for node, observed in (observations or {}).items())
    rails = sorted(set(hca['rail'] for node in order for hca in endpoints[node].get('hcas') or []))
    base = int(expected.get('base_port', 18515)) + INCAST_PORT_OFFSET
    used = {}  # receiver -> server ports taken (every rail's incast runs at once: each server listens apart)
    for rail in rails:
        group = [node for node in order if any(hca['rail'] == rail for hca in endpoints[node].get('hcas') or [])]
        if len(group) < 3:
            continue
        receiver, senders = group[0], group[1:]
        tests = _perftest.round_tests([{'client': sender, 'server': receiver, 'rails': [rail]} for sender in senders],
                                      endpoints, base, test='write_bw')
        for spec in tests:
            spec['port'] = base + used.get(receiver, 0)
            used[receiver] = used.get(receiver, 0) + 1
            spec['port_hex'] = '%04X' % spec['port']
            spec['receiver_netdev'] = netdevs.get(receiver, {}).get(spec['server_hca'])
            spec['sender_netdev'] = netdevs.get(spec['client'], {}).get(spec['client_hca'])
            spec['server_cmd'], spec['client_cmd'] = _perftest._commands(spec, 'write_bw', options)
        plan['rounds'].append({'rail': rail, 'receiver': receiver, 'senders': senders, 'tests': tests})
        plan['tests'].extend(tests)
        for spec in tests:
            for node, hca in ((receiver, spec['server_hca']), (spec['client'], spec['client_hca'])):
                if hca and hca not in plan['reads'].setdefault(node, []):
                    plan['reads'][node].append(hca)
    if not plan['rounds']:
        plan['skip'] = 'no rail is shared by 3 or more nodes: no incast to run'
    return plan


def _counter_reads(observation):
    """HCA -> counters of one node's registered ``ib_counters_info`` read (link layer Ethernet): a port whose
    ``ethtool -S`` did not run or did not parse is left out, so it is not checked, as an unread one."""
    out = {}
    for port in (observation or {}).get('ports') or []:
        if not isinstance(port, dict) or not port.get('hca'):
            continue
        if 'ethtool' in (port.get('missing') or []) or not port.get('netdev') or any(
                str(error).startswith('ethtool') or 'no netdev found' in str(error) for error in port.get('errors') or []):
            continue
        out[port['hca']] = dict(port.get('counters') or {})
    return out


def _rise(before, after, names):
    return dict((name, after[name] - before[name]) for name in names if name in before and name in after)


def _client_rcs(runs):
    """(receiver, port) -> (client rc, stderr) from every node's perftest_run async results."""
    out = {}
    for result in runs or []:
        for run in (result or {}).get('clients') or []:
            spec = run.get('data') or {}
            out[(spec.get('server'), spec.get('port'))] = (run.get('rc'), (run.get('stderr') or '').strip())
    return out


def decide_lossless(plan, observations, expected):
    """net.lossless for every node of the incast rounds.

    ``plan``: ``lossless_plan``'s; ``observations``: node -> {``before``, ``after``: registered ``ib_counters_info``
    reads of ``plan.reads[node]``}, and ``runs``: the perftest_run async results of every node. The receiver's port fails
    when its ``rx_prio<P>_discards`` or ``rx_discards_phy`` rose (naming the port and the rise); a sender's port fails
    the same way. Pause and CNP rises are kept in the result as evidence. A port whose counters could not be read
    both times, or a round whose senders all failed to run, is not checked, with the reason.
    """
    expected = expected or {}
    plan = plan or {}
    prio = int(plan.get('priority', expected.get('default_priority', 3)))
    drops = [name.format(prio=prio) for name in LOSSLESS_DROPS]
    evidence = [name.format(prio=prio) for name in LOSSLESS_EVIDENCE]
    nodes = {}
    if plan.get('skip'):
        for node in expected.get('nodes') or []:
            nodes[node] = [_skipped('net.lossless', 'node', 0, plan['skip'])]
        return {'nodes': nodes, 'priority': prio}
    runs = _client_rcs(expected.get('runs') or [])
    reads = dict((node, (_counter_reads((obs or {}).get('before')), _counter_reads((obs or {}).get('after'))))
                 for node, obs in (observations or {}).items())
    for rnd in plan.get('rounds') or []:
        tests = rnd.get('tests') or []
        ran_ok = [spec for spec in tests if (runs.get((spec['server'], spec['port'])) or (None,))[0] == 0]
        ports = [(rnd['receiver'], tests[0]['receiver_netdev'] if tests else None, tests[0]['server_hca'] if tests else None,
                  'receiver', len(ran_ok))]
        ports += [(spec['client'], spec['sender_netdev'], spec['client_hca'], 'sender', spec) for spec in tests]
        for node, netdev, hca, role, own in ports:
            subject = '%s rail %d (%s)' % (netdev, rnd['rail'], role)
            what = '%s %s, rail %d' % (node, netdev, rnd['rail'])
            extra = {'rail': rnd['rail'], 'role': role, 'receiver': rnd['receiver'], 'priority': prio}
            read_before, read_after = reads.get(node, ({}, {}))
            before, after = {netdev: read_before.get(hca)}, {netdev: read_after.get(hca)}
            if not netdev or before[netdev] is None or after[netdev] is None:
                nodes.setdefault(node, []).append(_skipped('net.lossless', subject, 0, 'the counters of %s were not read '
                                                           'before and after the incast' % (netdev or 'its port'), **extra))
                continue
            if role == 'sender' and own not in ran_ok:
                rc, said = runs.get((own['server'], own['port'])) or (None, 'no result')
                nodes.setdefault(node, []).append(_skipped('net.lossless', subject, 0, 'its ib_write_bw to %s did not run '
                                                           '(rc %s): %s' % (rnd['receiver'], rc, said or 'no message'), **extra))
                continue
            if role == 'receiver' and len(ran_ok) < 2:
                failures = ['%s: %s' % (spec['client'], (runs.get((spec['server'], spec['port'])) or (None, 'no result'))[1]
                                        or 'rc %s' % (runs.get((spec['server'], spec['port'])) or (None,))[0])
                            for spec in tests if spec not in ran_ok]
                nodes.setdefault(node, []).append(_skipped(
                    'net.lossless', subject, 0, 'only %d of %d senders ran (an incast needs 2): %s'
                    % (len(ran_ok), len(tests), '; '.join(failures) or 'none'), **extra))
                continue
            printed = list(before[netdev]) + list(after[netdev])
            judged = sorted(set(drops) | set(name for name in printed if _PRIO_DISCARDS.match(name)))
            # a priority's discards printed only after (a driver that prints a priority once it counted) rose from 0
            rises = _rise(dict((name, 0) for name in judged if name in after[netdev] and _PRIO_DISCARDS.match(name)),
                          after[netdev], judged)
            rises.update(_rise(before[netdev], after[netdev], judged))
            seen = dict((name, rise) for name, rise in _rise(before[netdev], after[netdev], evidence).items() if rise)
            dropped = dict((name, rise) for name, rise in rises.items() if rise > 0)
            missing = [name for name in drops if name not in before[netdev]]
            extra['evidence'] = seen
            if len(missing) == len(drops):
                nodes.setdefault(node, []).append(_skipped('net.lossless', subject, 0, 'ethtool -S %s prints none of %s'
                                                           % (netdev, ', '.join(drops)), **extra))
                continue
            shown = ', '.join('%s +%d' % item for item in sorted(seen.items())) or 'no pause or CNP counted'
            if dropped:
                elsewhere = sorted(name for name in dropped if _PRIO_DISCARDS.match(name) and name != drops[0])
                hint = (' (dropped on %s, not priority %d: the traffic class does not land on the lossless priority here; '
                        'trust dscp and the DSCP map are the roce role\'s, see net.roce_qos)' % (', '.join(elsewhere), prio)
                        if elsewhere else '')
                nodes.setdefault(node, []).append(new_result(
                    'net.lossless', subject, dropped, 0, False,
                    '%s dropped lossless traffic during the incast of rail %d (%s): %s (%s)%s; PFC is not working on '
                    'priority %d here or on its switch port: check mlnx_qos -i %s (PFC on %d, trust dscp), net.roce_qos, '
                    'and the switch\'s PFC and ECN on that priority'
                    % (what, rnd['rail'], '%d senders to %s' % (len(tests), rnd['receiver']),
                       ', '.join('%s +%d' % item for item in sorted(dropped.items())), shown, hint, prio, netdev, prio),
                    **extra))
                continue
            nodes.setdefault(node, []).append(new_result(
                'net.lossless', subject, 0, 0, True,
                '%s: no drop on priority %d during the incast of rail %d (%d senders to %s; %s)%s'
                % (what, prio, rnd['rail'], len(tests), rnd['receiver'], shown,
                   '; not printed by ethtool: %s' % ', '.join(missing) if missing else ''), **extra))
    return {'nodes': nodes, 'priority': prio}
