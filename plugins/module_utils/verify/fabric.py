# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Area fabric: every link of the fabric (iblinkinfo through fabric_info), read once per subnet, judged per node.

Identity comes from GUIDs: a CA port is a node's HCA when its port GUID is one
ibstat reported on that node (``identity``: node -> HCA -> GUIDs); a switch is
its node GUID (or, in one read, its LID). Node descriptions are labels, and a
fallback only for a node whose GUIDs are unknown. ``evaluate_fabric`` judges;
``plan_reads`` picks the ports iblinkinfo reads through (one per subnet);
``decide_fabric`` is the one call the verify_ib role makes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.verify._common import fmt, most_common
from ansible_collections.aicluster.infra.plugins.module_utils.verify.results import new_result

CHECKS = ('fabric.link_width', 'fabric.link_speed', 'fabric.rail')
_SWITCH_NAME_RE = re.compile(r'^(?:MF0;)?(?P<name>[^:]+)')


def switch_label(description):
    """``MF0;leaf-rail3:MQM9790/U1`` -> ``leaf-rail3``; other descriptions unchanged."""
    match = _SWITCH_NAME_RE.match(description or '')
    return match.group('name') if match else (description or '')


def norm_guid(value):
    """``0x946DAE0300CDE72C`` / ``946dae0300cde72c`` -> ``0x946dae0300cde72c``; None when not a GUID."""
    text = str(value or '').strip().lower()
    text = text[2:] if text.startswith('0x') else text
    if not text or len(text) > 16 or any(c not in '0123456789abcdef' for c in text):
        return None
    return '0x%016x' % int(text, 16)


def guid_owners(identity):
    """port/node GUID -> (node, hca), from node -> HCA -> GUIDs (the fabric checks' ``identity``)."""
    out = {}
    for node, hcas in (identity or {}).items():
        for hca, guids in (hcas or {}).items():
            for guid in guids or []:
                if norm_guid(guid):
                    out[norm_guid(guid)] = (node, hca)
    return out


def ca_owner(description, nodes):
    """(node, hca) of a CA node description (``gpu02 mlx5_3`` or ``gpu02.example.org mlx5_3``), or (None, None).

    The fallback only: ``hpc-a01 HCA-1`` gives the HCA as ``HCA-1``, an anonymous
    ``MT4129 ConnectX7 Mellanox Technologies`` gives no node.
    """
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


def identity_of(ib_info):
    """HCA name -> its port GUIDs and node GUID (normalised), from one node's ib_info/ibstat facts."""
    out = {}
    for ca in (ib_info or {}).get('hcas') or []:
        guids = [norm_guid(port.get('port_guid')) for port in ca.get('ports') or []] + [norm_guid(ca.get('node_guid'))]
        out[ca.get('name')] = sorted(set(guid for guid in guids if guid))
    return out


def _lanes(width):
    text = str(width).upper().rstrip('X')
    return int(text) if text.isdigit() else 0


def _node_index(links):
    """(read, LID) -> the node printed with that LID in that read: LIDs are unique within one subnet only."""
    index = {}
    for link in links:
        key = (link.get('source'), link.get('node_lid'))
        if link.get('node_lid') is None:
            continue
        if key not in index or link.get('node_type'):
            index[key] = {'type': link.get('node_type'), 'guid': norm_guid(link.get('node_guid') or link.get('port_guid')),
                          'name': link.get('node_name')}
    return index


class _Ids(object):
    """What the fabric read is matched against: CA GUIDs -> (node, hca), and the nodes known by description only."""

    def __init__(self, nodes, identity):
        self.cas = guid_owners(identity)
        self.nodes = list(nodes)
        self.by_description = [node for node in nodes if not (identity or {}).get(node)]

    def end(self, node_type, guid, name, lid, port):
        """One end of a link: kind ('ca'/'switch'), node and hca of a CA, how it was identified."""
        end = {'type': node_type, 'guid': guid, 'name': name, 'lid': lid, 'port': port, 'node': None, 'hca': None,
               'identified_by': None, 'kind': 'switch' if node_type == 'Switch' else None}
        if guid in self.cas:
            end['node'], end['hca'] = self.cas[guid]
            end['kind'], end['identified_by'] = 'ca', 'guid'
            return end
        if node_type == 'Switch':
            return end
        node, hca = ca_owner(name, self.by_description)
        if node is not None:
            end['node'], end['hca'] = node, hca
            end['kind'], end['identified_by'] = 'ca', 'description'
        elif node_type == 'CA':
            end['kind'] = 'ca'
        return end


def _switch_key(end):
    """A switch by GUID; by LID within its read when the read printed no GUID for it; else by its description."""
    if end['guid']:
        return end['guid']
    if end['lid'] is not None:
        return 'lid %s of read %s' % (end['lid'], end.get('source'))
    return 'name %s' % switch_label(end['name'])


def _switch_text(end):
    label = switch_label(end['name'])
    return '%s (%s)' % (label, end['guid']) if end['guid'] and label else (label or end['guid'] or 'LID %s' % end['lid'])


def _ends(link, ids, lids):
    """Both ends of one printed port line: (this end, the peer)."""
    guid = norm_guid(link.get('node_guid') if link.get('node_type') == 'Switch' else
                     (link.get('port_guid') or link.get('node_guid')))
    this = ids.end(link.get('node_type'), guid, link.get('node_name'), link.get('node_lid'), link.get('port'))
    known = lids.get((link.get('source'), link.get('peer_lid'))) or {} if link.get('peer_lid') is not None else {}
    peer = ids.end(known.get('type'), norm_guid(link.get('peer_guid')) or known.get('guid'),
                   link.get('peer_name') or known.get('name'), link.get('peer_lid'), link.get('peer_port'))
    this['source'] = peer['source'] = link.get('source')
    return this, peer


def _degradation(link, lanes_wanted, speed_wanted):
    """(width bad, speed bad) of a link: below the wanted width/speed, or iblinkinfo's ``Could be`` hint."""
    could_be = link.get('could_be') or ''
    width_bad = _lanes(link.get('width')) < lanes_wanted or 'X' in could_be.replace('Gbps', '')
    speed = link.get('lane_speed_gbps')
    speed_bad = ('Gbps' in could_be) or (
        speed_wanted not in (None, '', 0) and speed is not None and float(speed) < float(speed_wanted))
    return width_bad, speed_bad


def _link_results(entry, width_bad, speed_bad, width_wanted, speed_wanted, checks, subject, what):
    """fabric.link_width / fabric.link_speed results of one degraded link; ``what`` names its end in the message."""
    could_be = entry['could_be'] or ''
    peer = entry['peer']
    extra = dict(peer=peer, identified_by=entry.get('identified_by'))
    results = []
    if width_bad and 'fabric.link_width' in checks:
        results.append(new_result(
            'fabric.link_width', subject, entry['width'], width_wanted, False,
            '%s trained at %s, expected %s (peer %s%s); reseat or replace the cable, clean the connectors'
            % (what, entry['width'], width_wanted, peer, ', iblinkinfo: %s' % could_be if could_be else ''), **extra))
    if speed_bad and 'fabric.link_speed' in checks:
        threshold = speed_wanted if speed_wanted not in (None, '', 0) else could_be
        results.append(new_result(
            'fabric.link_speed', subject, entry['lane_speed_gbps'], threshold, False,
            '%s runs at %s Gb/s per lane, below full speed (%s; peer %s); check cable type and length, '
            'and the port speed settings on both ends' % (
                what, fmt(entry['lane_speed_gbps']), could_be or 'expected %s' % fmt(float(speed_wanted)), peer),
            unit='Gb/s', **extra))
    return results


def _entry(link, ca, switch, other=None):
    entry = {'node': ca['node'] if ca else None, 'hca': ca['hca'] if ca else None, 'port': ca['port'] if ca else None,
             'ca_guid': ca['guid'] if ca else None, 'ca_name': ca['name'] if ca else None,
             'switch': switch_label(switch['name']) or _switch_key(switch), 'switch_guid': switch['guid'],
             'switch_port': switch['port'], 'width': link.get('width'), 'lane_speed_gbps': link.get('lane_speed_gbps'),
             'could_be': link.get('could_be') or None, 'identified_by': ca['identified_by'] if ca else None}
    if other is not None:
        entry['peer'] = '%s port %s' % (_switch_text(other), other['port'])
        entry['peer_switch'], entry['peer_switch_guid'], entry['peer_port'] = switch_label(other['name']), other['guid'], other['port']
    elif ca is not None and ca['node'] is None:
        entry['peer'] = 'CA %s %s' % (ca['guid'] or '', ('"%s"' % ca['name']) if ca['name'] else '')
    else:
        entry['peer'] = '%s port %s' % (_switch_text(switch), switch['port'])
    return entry


def _scan(links, ids, width_wanted, speed_wanted, checks):
    """Problems per node, cluster-level results, the degraded links (each once), the unmapped ones, and
    each (node, hca)'s switch: ``{(node, hca): (switch key, switch text)}``."""
    lanes_wanted = _lanes(width_wanted)
    lids = _node_index(links)
    problems, cluster, degraded, unmapped, seen, ca_switch, peers = {}, [], [], [], set(), {}, {}
    for link in links:
        if link.get('state') in (None, 'Down') or not link.get('width'):
            continue
        this, peer = _ends(link, ids, lids)
        ca, switch, other = (this, peer, None) if this['kind'] == 'ca' else (
            (peer, this, None) if peer['kind'] == 'ca' else (None, this, peer))
        if ca is not None and ca['node'] is not None and ca['hca']:
            ca_switch[(ca['node'], ca['hca'])] = (_switch_key(switch), _switch_text(switch))
            peers.setdefault(ca['node'], {})[ca['hca']] = {
                'switch': switch_label(switch['name']) or _switch_key(switch), 'switch_guid': switch['guid'],
                'switch_port': switch['port'], 'text': '%s port %s' % (_switch_text(switch), switch['port'])}
        width_bad, speed_bad = _degradation(link, lanes_wanted, speed_wanted)
        if not (width_bad or speed_bad):
            continue
        if ca is not None:
            key = ('ca', ca['guid'] or (link.get('source'), ca['lid'], ca['name']), ca['port'])
        else:
            key = frozenset([(_switch_key(this), this['port']), (_switch_key(peer), peer['port'])])
        if key in seen:
            continue
        seen.add(key)
        entry = _entry(link, ca, switch, other)
        degraded.append(entry)
        if ca is not None and ca['node'] is not None:
            what = '%s port %s' % (ca['hca'], ca['port'])
            if ca['identified_by'] == 'description':
                what += ' (found by its node description "%s": none of the node\'s port GUIDs is known)' % ca['name']
            problems.setdefault(ca['node'], []).extend(_link_results(
                entry, width_bad, speed_bad, width_wanted, speed_wanted, checks, '%s:%s' % (ca['hca'], ca['port']), what))
            continue
        unmapped.append(entry)
        subject = 'switch %s port %s' % (switch['guid'] or switch_label(switch['name']) or _switch_key(switch), switch['port'])
        what = 'switch %s port %s, %s' % (
            _switch_text(switch), switch['port'],
            'a link between switches' if ca is None else 'the link of a CA that belongs to no checked node')
        cluster.extend(_link_results(entry, width_bad, speed_bad, width_wanted, speed_wanted, checks, subject, what))
    return problems, cluster, degraded, unmapped, ca_switch, peers


def _reads_text(fabric):
    reads = [read for read in (fabric or {}).get('reads') or [] if read.get('status') in (None, 'read')]
    if not reads:
        return 'the fabric read'
    return 'the fabric read of %s' % ', '.join(
        'subnet %s (through %s:%s)' % (read['subnet'], read.get('ca'), read.get('port')) if read.get('subnet') else
        'the subnet of %s:%s' % (read.get('ca'), read.get('port')) for read in reads)


def evaluate_fabric(fabric, nodes, expected):
    """fabric.link_width, fabric.link_speed and (optionally) fabric.rail for every node.

    ``fabric``: fabric_info facts (``links``, each with the ``source`` read it
    came from; ``reads``). ``nodes``: node name -> list of its HCAs in rail
    order. ``expected``: ``width`` (default ``4X``), ``lane_speed_gbps``
    (0/None: only the tool's ``Could be`` hint counts), ``port`` (default 1),
    ``identity`` (node -> HCA -> GUIDs; a node without one is matched by its
    node description), ``rail_check`` (bool), ``rail_group_regex``,
    ``scalable_units`` (node -> SU name; default: the leaf of its rail-0 HCA)
    and ``checks``.

    Returns ``{'nodes': node -> [results], 'cluster': [results], 'degraded': [...],
    'unmapped': [...], 'peers': node -> hca -> {switch, switch_guid, switch_port, text}}``: each degraded link once,
    with both ends, and the switch port each seen HCA is cabled to (the link-quality checks name both ends with it). A degraded link
    between switches, or to a CA of no known node, is a cluster result (it fails
    the verdict, drains nobody), as is a rail tie inside a scalable unit.
    """
    checks = expected.get('checks') or CHECKS
    width_wanted = expected.get('width') or '4X'
    port = expected.get('port') or 1
    ids = _Ids(nodes, expected.get('identity'))
    problems, cluster, degraded, unmapped, ca_switch, peers = _scan(
        (fabric or {}).get('links') or [], ids, width_wanted, expected.get('lane_speed_gbps'), checks)
    link_checks = [check for check in ('fabric.link_width', 'fabric.link_speed') if check in checks]
    out = {}
    for node, hcas in nodes.items():
        out[node] = list(problems.get(node, []))
        seen = [hca for hca in hcas if (node, hca) in ca_switch]
        for hca in [hca for hca in hcas if (node, hca) not in ca_switch] if link_checks else []:
            out[node].append(new_result(
                link_checks[0], '%s:%s' % (hca, port), 'not seen', 'seen', False,
                '%s not seen in %s: its port is down or on a subnet that was not read (%d of %d HCAs of the node seen); '
                'check ib.port_state, the cable, and that every subnet is read' % (hca, _reads_text(fabric), len(seen), len(hcas))))
        for check, what in (('fabric.link_width', 'at %s' % width_wanted), ('fabric.link_speed', 'at full lane speed')):
            if check in link_checks and not any(r['check'] == check for r in out[node]):
                out[node].append(new_result(check, 'node', len(seen), len(hcas), True,
                                            'all %d fabric links of the node %s (%d of %d HCAs seen by iblinkinfo)'
                                            % (len(seen), what, len(seen), len(hcas))))
    if expected.get('rail_check') and 'fabric.rail' in checks:
        rail_nodes, rail_cluster = _rails(nodes, ca_switch, expected.get('rail_group_regex'), expected.get('scalable_units'))
        for node, results in rail_nodes.items():
            out.setdefault(node, []).extend(results)
        cluster.extend(rail_cluster)
    return {'nodes': out, 'cluster': cluster, 'degraded': degraded, 'unmapped': unmapped, 'peers': peers}


def _grouper(group_regex):
    regex = re.compile(group_regex) if group_regex else None

    def group(switch):
        """(key, text) of a leaf, or of its group when a regex names groups in the switch label."""
        if switch is None or regex is None:
            return switch
        match = regex.search(switch[1])
        if not match:
            return switch
        name = match.groupdict().get('group') or match.group(0)
        return name, name
    return group


def _rail_leaves(nodes, ca_switch, group_regex):
    """node -> rail -> (leaf key, leaf text), for the HCAs the fabric read saw."""
    group = _grouper(group_regex)
    leaves = {}
    for node, hcas in nodes.items():
        leaves[node] = {}
        for rail, hca in enumerate(hcas):
            if (node, hca) in ca_switch:
                leaves[node][rail] = group(ca_switch[(node, hca)])
    return leaves


def _leaf_rails(leaves):
    """leaf key -> the rail most of its nodes' HCAs have (None on a tie): each leaf serves one rail."""
    rails = {}
    for by_rail in leaves.values():
        for rail, leaf in by_rail.items():
            rails.setdefault(leaf[0], []).append(rail)
    return dict((leaf, most_common(values)) for leaf, values in rails.items())


def _units(nodes, leaves, scalable_units):
    """node -> its scalable unit: the inventory's name, else the leaf of its rail-0 HCA; a node whose rail 0 was not
    seen joins the SU whose nodes share the leaf of its first seen rail."""
    units = {}
    for node in nodes:
        if (scalable_units or {}).get(node) not in (None, ''):
            units[node] = 'SU %s' % scalable_units[node]
        elif 0 in leaves[node]:
            units[node] = 'the SU of leaf %s' % leaves[node][0][1]
    for node in nodes:
        if node in units or not leaves[node]:
            continue
        rail, leaf = sorted(leaves[node].items())[0]
        unit = most_common([units[other] for other in units if leaves[other].get(rail, (None,))[0] == leaf[0]])
        if unit is not None:
            units[node] = unit
    return units


def _rails(nodes, ca_switch, group_regex, scalable_units=None):
    """fabric.rail: a node's rails on distinct leaves, each leaf serving one rail, and the nodes of one scalable
    unit (SU) sharing one leaf per rail. Returns (node -> [results], cluster results): a tie inside an SU is the
    cluster's problem, not a node's."""
    leaves = _rail_leaves(nodes, ca_switch, group_regex)
    leaf_rails = _leaf_rails(leaves)
    units = _units(nodes, leaves, scalable_units)
    faults = dict((node, {}) for node in nodes)
    for node, by_rail in leaves.items():
        first = {}
        for rail, leaf in sorted(by_rail.items()):
            if leaf[0] in first:
                faults[node].setdefault(rail, []).append('%s shares leaf %s with %s (rail %d): two rails on one leaf'
                                                         % (nodes[node][rail], leaf[1], nodes[node][first[leaf[0]]], first[leaf[0]]))
            else:
                first[leaf[0]] = rail
            served = leaf_rails.get(leaf[0])
            if served is not None and served != rail:
                faults[node].setdefault(rail, []).append('leaf %s serves rail %d on the other nodes' % (leaf[1], served))
    cluster, majority = [], {}
    for unit in sorted(set(units.values())):
        members = sorted(node for node in units if units[node] == unit)
        for rail in sorted(set(rail for node in members for rail in leaves[node])):
            values = dict((node, leaves[node][rail]) for node in members if rail in leaves[node])
            reference = most_common([leaf[0] for leaf in values.values()])
            if reference is None:
                distinct = sorted(set(leaf[1] for leaf in values.values()))
                cluster.append(new_result(
                    'fabric.rail', 'fabric', distinct, 'one leaf per rail in %s' % unit, False,
                    'rail %d of %s has no majority leaf (%s over %d nodes: %s); a cluster wiring question, no node is '
                    'drained for it: check the cabling plan' % (rail, unit, ', '.join(distinct), len(values),
                                                                ', '.join(sorted(values))),
                    rail=rail, scalable_unit=unit, nodes=sorted(values)))
                continue
            text = next(leaf[1] for leaf in values.values() if leaf[0] == reference)
            for node, leaf in values.items():
                majority[(node, rail)] = text
                if leaf[0] != reference:
                    faults[node].setdefault(rail, []).append('the other nodes of %s have rail %d on leaf %s' % (unit, rail, text))
    out = {}
    for node, by_rail in sorted(leaves.items()):
        for rail, leaf in sorted(by_rail.items()):
            if (node, rail) not in majority and not faults[node].get(rail):
                continue
            problems = faults[node].get(rail) or []
            hca = nodes[node][rail]
            message = ('%s (rail %d) is on leaf %s: %s; rewire HCA %d of the node to the rail %d leaf of its scalable unit '
                       '(rail-optimized wiring)' % (hca, rail, leaf[1], '; '.join(problems), rail, rail)) if problems else \
                '%s (rail %d) is on leaf %s, as the other nodes of %s' % (hca, rail, leaf[1], units.get(node))
            out.setdefault(node, []).append(new_result(
                'fabric.rail', '%s (rail %d)' % (hca, rail), leaf[1], majority.get((node, rail), 'a leaf of its own'),
                not problems, message, rail=rail, scalable_unit=units.get(node)))
    return out, cluster


def plan_reads(ib_infos, checked, port=1, host=None, linkup=False):
    """Where iblinkinfo reads from: ``{'host', 'reads': [{ca, port, guid, subnet}]}``, one read per subnet.

    iblinkinfo reads the subnet of the port it opens. On one-subnet-per-rail
    fabrics every rail is a subnet of its own, so the reading node opens one
    active checked port per distinct subnet (GID prefix and SM LID); fabric_info
    also skips a read whose port an earlier read already showed. ``host``: the
    reading node (default: the node whose active ports reach the most subnets;
    one that is not a checked node reads through its first port). ``linkup``: also read through a port whose link
    is up but not Active (no master SM: every port stays Initializing, and sminfo must still be asked).
    """
    candidates = {}
    for node, info in (ib_infos or {}).items():
        by_name = dict((ca.get('name'), ca) for ca in (info or {}).get('hcas') or [])
        reads, subnets = [], []
        for name in (checked or {}).get(node) or []:
            ca_port = next((p for p in (by_name.get(name) or {}).get('ports') or [] if p.get('port') == int(port)), None)
            usable = ca_port and (ca_port.get('state') == 'Active' or (linkup and ca_port.get('physical_state') == 'LinkUp'))
            if not usable or ca_port.get('link_layer') not in (None, 'InfiniBand'):
                continue
            prefix = next((gid.get('gid', '')[:19] for gid in ca_port.get('gids') or [] if gid.get('index') == 0), None)
            subnet = '%s SM LID %s' % (prefix, ca_port.get('sm_lid')) if prefix else 'SM LID %s' % ca_port.get('sm_lid')
            reads.append({'ca': name, 'port': int(port), 'guid': norm_guid(ca_port.get('port_guid')), 'subnet': subnet})
            if subnet not in subnets:
                subnets.append(subnet)
        candidates[node] = (subnets, reads)
    if host is not None and host not in candidates:
        return {'host': host, 'reads': []}   # a reader outside the checked nodes: its own first port
    if host is None:
        ranked = sorted(candidates, key=lambda node: -len(candidates[node][0]))
        host = ranked[0] if ranked and candidates[ranked[0]][1] else host
    subnets, reads = candidates.get(host) or ([], [])
    first = [next(read for read in reads if read['subnet'] == subnet) for subnet in subnets]
    return {'host': host, 'reads': first + [read for read in reads if read not in first]}


def decide_fabric(fabric_info, checked, expected):
    """The verify_ib role's fabric decision: ``fabric_info`` (the module result; failed or absent: no fabric results),
    ``checked`` (node -> HCAs in rail order, from ``decide_ib``). Returns ``{'fleet', 'cluster', 'summary', 'peers'}``
    or None; ``peers`` (node -> HCA -> its switch port) is for the link-quality checks, not results.json."""
    if not fabric_info or fabric_info.get('failed') or fabric_info.get('skipped'):
        return None
    evaluated = evaluate_fabric(fabric_info, checked, expected)
    return {'fleet': evaluated['nodes'], 'cluster': evaluated['cluster'], 'peers': evaluated['peers'],
            'summary': {'links': fabric_info.get('links') or [], 'degraded': evaluated['degraded'],
                        'unmapped': evaluated['unmapped'], 'errors': fabric_info.get('errors') or [],
                        'reads': fabric_info.get('reads') or []}}
