# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""fabric.switch_errors: the error counters of every switch port, before and after the bandwidth tests.

ib.link_errors reads the HCA's end of each host link; the errors of the host-to-switch direction, and every
leaf-spine link, count on switch ports, which only a fabric-wide read sees: ``ibqueryerrors`` (one read per
subnet, with ``-r`` so that each port line names the port at the other end, and without ``-k``/``-K``, which
would clear the counters). Judged like ib.link_errors: the rise of each error counter between the two reads
against ``error_max`` (``verify_ib_link_error_max``, default 0 for each), a counter lower after than before
read as reset (its value after is the rise).

Where a rising switch port leads:

- to another switch (an ISL: the ``-r`` Link info's peer is a switch of either read or of ``switches``, the
  fabric read's): one cluster result naming both ends (switch name, GUID,
  port, and what each end counted); it fails the verdict and drains nobody;
- to a checked node's HCA (from the fabric read's ``peers``, or the Link info's peer GUID): that node's result,
  the host's end blamed as ib.link_errors does (it drains the node);
- to anything else (a CA of no checked node, an unknown peer): a cluster result.

Not judged: PortRcvSwitchRelayErrors (counts packets a switch could not forward, e.g. to a LID that left during
a sweep; ibqueryerrors' own ``--suppress-common`` suppresses it as "the only common error", ibqueryerrors.c
process_opt 'c'), PortXmitWait and VL15Dropped (congestion and SMP drops, not link errors): kept as evidence.
A basic (32-bit-form) counter at the top of its width is saturated: a rise can no longer be seen, which fails.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils.ib_counters import PERFQUERY_BASIC_BITS
from ansible_collections.aicluster.infra.plugins.module_utils.ibqueryerrors import parse_ibqueryerrors
from ansible_collections.aicluster.infra.plugins.module_utils.verify._common import parse_once
from ansible_collections.aicluster.infra.plugins.module_utils.verify.fabric import guid_owners, norm_guid, switch_label
from ansible_collections.aicluster.infra.plugins.module_utils.verify.link import IB_ERRORS
from ansible_collections.aicluster.infra.plugins.module_utils.verify.results import new_result

CHECK = 'fabric.switch_errors'
NOT_ON_SWITCHES = ('PortRcvSwitchRelayErrors',)
JUDGED = tuple(name for name in IB_ERRORS if name not in NOT_ON_SWITCHES)
EVIDENCE = NOT_ON_SWITCHES + ('PortXmitWait', 'VL15Dropped')


def _read(value, what, errors):
    """One ibqueryerrors read parsed: stdout text, a registered command result, or the parser's result; None."""
    if isinstance(value, dict) and 'ports' in value and 'summary' in value:
        return value
    if isinstance(value, dict):
        if value.get('failed') or value.get('skipped') or (value.get('rc') not in (None, 0, 1)):
            # ibqueryerrors exits 1 when it found errors beyond the thresholds (main(): rc = print_summary() ? 1)
            if not value.get('skipped'):
                errors.append('%s failed: %s' % (what, (value.get('stderr') or value.get('msg') or 'rc %s' % value.get('rc')).strip()))
            return None
        value = value.get('stdout')
    return parse_once(parse_ibqueryerrors, value, what, errors)


def _switch_ports(parsed):
    """(switch GUID, port) -> the port entry; switch GUID -> its name. Port 0 (the switch's management port) and
    the AllPortSelect sum are left out."""
    ports, names = {}, {}
    for entry in (parsed or {}).get('ports') or []:
        if entry['node_type'] != 'switch' or entry['port'] in ('ALL', 0):
            continue
        guid = entry['node_guid']   # the parser's GUIDs are normalised already
        ports[(guid, entry['port'])] = entry
        names[guid] = entry['node_name']
    return ports, names


def _rises(before, after, baseline):
    """name -> rise of the judged counters, the names reset in between, the saturated ones. A counter a read did not
    print was at most that read's threshold (``baseline``, 0 by default)."""
    rises, reset, saturated = {}, [], []
    counters_after = (after or {}).get('counters') or {}
    counters_before = (before or {}).get('counters') or {}
    for name in JUDGED:
        if name not in counters_after:
            continue
        value = counters_after[name]
        previous = counters_before.get(name, int(baseline.get(name, 0)))
        rise = value - previous
        if rise < 0:
            reset.append(name)
            rise = value
        rises[name] = rise
        bits = PERFQUERY_BASIC_BITS.get(name)
        if not (after or {}).get('extended') and bits and value >= (1 << bits) - 1:
            saturated.append(name)
    return rises, reset, saturated


def _end_text(guid, port, names):
    label = switch_label(names.get(guid) or '')
    return '%s (%s) port %s' % (label, guid, port) if label else '%s port %s' % (guid, port)


def _host_ports(peers):
    """(switch GUID, port) -> (node, HCA), from the fabric decision's peers (node -> HCA -> switch port)."""
    out = {}
    for node, hcas in (peers or {}).items():
        for hca, peer in (hcas or {}).items():
            if norm_guid(peer.get('switch_guid')) and peer.get('switch_port') is not None:
                out[(norm_guid(peer['switch_guid']), int(peer['switch_port']))] = (node, hca)
    return out


class _Judge(object):
    """The results of one subnet's pair of reads."""

    def __init__(self, expected, owners, hosts):
        self.limits = expected.get('error_max') or {}
        self.owners, self.hosts = owners, hosts
        self.switches = set(norm_guid(guid) for guid in expected.get('switches') or [] if norm_guid(guid))
        self.busy = set(expected.get('busy') or [])
        self.active = str(expected.get('active', True)).lower() not in ('false', '0', 'no', 'none')
        self.nodes, self.cluster, self.rising, self.seen_links = {}, [], [], set()

    def over(self, rises):
        return dict((name, rise) for name, rise in rises.items() if rise > int(self.limits.get(name, 0)))

    def judge(self, subnet, before, after):
        ports_before, names = _switch_ports(before)
        ports_after, names_after = _switch_ports(after)
        names.update(names_after)
        baseline = ((before or {}).get('summary') or {}).get('thresholds') or {}
        problems = 0
        for key in sorted(set(ports_after) | set(ports_before)):
            rises, reset, saturated = _rises(ports_before.get(key), ports_after.get(key), baseline)
            over = self.over(rises)
            if not over and not saturated:
                continue
            problems += 1
            entry = ports_after.get(key) or ports_before.get(key)
            self.rising.append({'subnet': subnet, 'switch_guid': key[0], 'port': key[1], 'switch': names.get(key[0]),
                                'rises': over, 'saturated': saturated, 'reset': reset})
            self._place(subnet, key, entry, over, reset, saturated, names, ports_before, ports_after, baseline)
        return len(set(ports_after) | set(ports_before)), problems

    def _what(self, over, reset, saturated):
        parts = ['%s +%d' % (name, rise) for name, rise in sorted(over.items())]
        parts += ['%s saturated (a rise cannot be seen: clear the counters with perfquery -R and rerun)' % name for name in saturated]
        if reset:
            parts.append('reset between the reads: %s' % ', '.join(reset))
        return ', '.join(parts)

    def _place(self, subnet, key, entry, over, reset, saturated, names, ports_before, ports_after, baseline):
        link = entry.get('link') or {}
        peer_guid = norm_guid(link.get('peer_guid')) if link.get('peer_guid') else None
        here = _end_text(key[0], key[1], names)
        owner = self.hosts.get(key) or (self.owners.get(peer_guid) if peer_guid else None)
        limits = dict((name, int(self.limits.get(name, 0))) for name in over)
        if owner is not None:
            node, hca = owner
            self.nodes.setdefault(node, []).append(new_result(
                CHECK, '%s (%s port %s)' % (hca, key[0], key[1]), over or saturated, limits or 0, False,
                'the switch end of %s on %s, %s, counted %s between the reads; clean or replace the optic/cable between %s '
                'and the switch, reseat both ends' % (hca, node, here, self._what(over, reset, saturated), hca),
                peer=here, subnet=subnet))
            return
        if peer_guid and (peer_guid in names or peer_guid in self.switches):
            peer_key = (peer_guid, link.get('peer_port'))
            pair = frozenset([key, peer_key])
            if pair in self.seen_links:
                return
            self.seen_links.add(pair)
            peer_rises, peer_reset, peer_saturated = _rises(ports_before.get(peer_key), ports_after.get(peer_key), baseline)
            there = _end_text(peer_guid, link.get('peer_port'), dict(names, **{peer_guid: names.get(peer_guid) or link.get('peer_name')}))
            peer_over = self.over(peer_rises)
            self.cluster.append(new_result(
                CHECK, 'link %s port %s - %s port %s' % (key[0], key[1], peer_guid, link.get('peer_port')),
                {here: over or saturated, there: peer_over or peer_saturated}, limits or 0, False,
                'a switch-to-switch link counts errors: %s counted %s; the other end, %s, counted %s; replace or clean '
                'the cable between them (a cluster result: no node is drained)' % (
                    here, self._what(over, reset, saturated), there, self._what(peer_over, peer_reset, peer_saturated) or 'nothing'),
                peer=there, subnet=subnet, ends=[here, there]))
            return
        peer = ('"%s" (%s) port %s, which belongs to no checked node' % (link.get('peer_name'), peer_guid, link.get('peer_port'))
                if peer_guid else 'an unknown peer (run ibqueryerrors with -r to name it)')
        self.cluster.append(new_result(
            CHECK, 'switch %s port %s' % key, over or saturated, limits or 0, False,
            '%s, cabled to %s, counted %s; check that link (a cluster result: no node is drained)'
            % (here, peer, self._what(over, reset, saturated)), peer=peer, subnet=subnet))


def decide_switch_errors(observations, expected):
    """The fabric.switch_errors decision.

    ``observations``: ``{'reads': [{'subnet', 'before', 'after'}]}`` (or one ``{'before', 'after'}``), each read
    ibqueryerrors' stdout, a registered command result or the parser's result. ``expected``: ``identity`` (node ->
    HCA -> GUIDs), ``peers`` (node -> HCA -> its switch port, from the fabric decision), ``switches`` (the switch
    GUIDs of the fabric read: a Link info peer among them is an ISL), ``error_max``, ``active``
    (a bandwidth test ran between the reads), ``busy`` (nodes the tests skipped) and ``checked`` (the GPU nodes).

    Returns ``{'nodes': node -> [result], 'cluster': [results], 'summary': {'rising', 'errors'}}``.
    """
    expected = expected or {}
    observations = observations or {}
    reads = observations.get('reads') or ([dict(observations, subnet=observations.get('subnet') or 'the fabric')]
                                          if 'after' in observations or 'before' in observations else [])
    judge = _Judge(expected, guid_owners(expected.get('identity')), _host_ports(expected.get('peers')))
    errors, compared, judged = [], 0, 0
    for read in reads:
        subnet = read.get('subnet') or 'the fabric'
        before = _read(read.get('before'), 'ibqueryerrors before the tests (%s)' % subnet, errors)
        after = _read(read.get('after'), 'ibqueryerrors after the tests (%s)' % subnet, errors)
        if before is None or after is None:
            judge.cluster.append(new_result(CHECK, 'subnet %s' % subnet, None, 0, True, 'not checked: the switch ports of %s were '
                                            'not read %s the tests' % (subnet, 'before' if before is None else 'after'),
                                            skipped='a read is missing'))
            continue
        ports, problems = judge.judge(subnet, before, after)
        compared += ports
        judged += 1
        if not problems:
            text = '%s: no switch port printed a rising error counter (%d ports with counters shown, %s ports checked)' % (
                subnet, ports, (after.get('summary') or {}).get('ports_checked'))
            if judge.active:
                judge.cluster.append(new_result(CHECK, 'subnet %s' % subnet, 0, 0, True, text))
            else:
                # quiet counters with no traffic in between prove nothing (as ib.link_errors)
                judge.cluster.append(new_result(CHECK, 'subnet %s' % subnet, 0, 0, True, 'not checked: no bandwidth test ran '
                                                'between the reads; %s' % text, skipped='not tested'))
    placed = set(judge.nodes)
    for node in sorted(set(expected.get('checked') or []) | set((expected.get('peers') or {}))):
        if node in placed:
            continue
        tested = judge.active and node not in judge.busy
        hcas = sorted(((expected.get('peers') or {}).get(node) or {}))
        text = 'the switch ends of %s counted no error rise' % (', '.join(hcas) or 'its links')
        if not judged or not tested:
            # no pair of reads compared (none made, or a read failed): the node's switch ends were not seen
            judge.nodes[node] = [new_result(CHECK, 'node', 0, 0, True, 'not checked: %s' % (
                'no switch read' if not reads else 'no pair of switch reads before and after the tests' if not judged
                else 'no bandwidth test ran on this node between the reads, and ' + text),
                skipped='not tested')]
        else:
            judge.nodes[node] = [new_result(CHECK, 'node', 0, 0, True, text)]
    return {'nodes': judge.nodes, 'cluster': judge.cluster,
            'summary': {'rising': judge.rising, 'errors': errors, 'ports_compared': compared}}
