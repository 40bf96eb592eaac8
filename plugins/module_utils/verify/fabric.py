# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Area fabric: every link of the fabric (iblinkinfo through fabric_info), read once, judged per node.

``evaluate_fabric`` is the one call the verify_ib role makes for the fabric.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.verify._common import fmt, merge, uniform
from ansible_collections.aicluster.infra.plugins.module_utils.verify.results import new_result

CHECKS = ('fabric.link_width', 'fabric.link_speed', 'fabric.rail')
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


def _lanes(width):
    text = str(width).upper().rstrip('X')
    return int(text) if text.isdigit() else 0


def _ends(link, node_names):
    """(node, hca, node port, switch, switch port) of a CA<->switch link, from either end; None for others."""
    if link.get('node_type') == 'CA':
        node, hca = ca_owner(link.get('node_name'), node_names)
        return node, hca, link.get('port'), link.get('peer_name'), link.get('peer_port')
    if link.get('node_type') == 'Switch':
        node, hca = ca_owner(link.get('peer_name'), node_names)
        return node, hca, link.get('peer_port'), link.get('node_name'), link.get('port')
    return None


def _degradation(link, lanes_wanted, speed_wanted):
    """(width bad, speed bad) of a link: below the wanted width/speed, or iblinkinfo's ``Could be`` hint."""
    could_be = link.get('could_be') or ''
    width_bad = _lanes(link.get('width')) < lanes_wanted or 'X' in could_be.replace('Gbps', '')
    speed = link.get('lane_speed_gbps')
    speed_bad = ('Gbps' in could_be) or (
        speed_wanted not in (None, '', 0) and speed is not None and float(speed) < float(speed_wanted))
    return width_bad, speed_bad


def _link_results(entry, link, width_bad, speed_bad, width_wanted, speed_wanted, checks):
    peer = '%s port %s' % (entry['switch'], entry['switch_port'])
    subject = '%s:%s' % (entry['hca'], entry['port'])
    could_be = entry['could_be'] or ''
    results = []
    if width_bad and 'fabric.link_width' in checks:
        results.append(new_result(
            'fabric.link_width', subject, link.get('width'), width_wanted, False,
            '%s port %s trained at %s, expected %s (peer %s%s); reseat or replace the cable, clean the connectors'
            % (entry['hca'], entry['port'], link.get('width'), width_wanted, peer,
               ', iblinkinfo: %s' % could_be if could_be else ''),
            peer=peer))
    if speed_bad and 'fabric.link_speed' in checks:
        threshold = speed_wanted if speed_wanted not in (None, '', 0) else could_be
        results.append(new_result(
            'fabric.link_speed', subject, entry['lane_speed_gbps'], threshold, False,
            '%s port %s runs at %s Gb/s per lane, below full speed (%s; peer %s); check cable type and length, '
            'and the port speed settings on both ends' % (
                entry['hca'], entry['port'], fmt(entry['lane_speed_gbps']),
                could_be or 'expected %s' % fmt(float(speed_wanted)), peer),
            unit='Gb/s', peer=peer))
    return results


def _scan(links, node_names, width_wanted, speed_wanted, checks):
    """Problems per node, the degraded links (each once), the unmapped ones and each (node, hca)'s switch."""
    lanes_wanted = _lanes(width_wanted)
    problems, degraded, unmapped, seen, ca_switch = {}, [], [], set(), {}
    for link in links:
        if link.get('state') in (None, 'Down') or not link.get('width'):
            continue
        ends = _ends(link, node_names)
        if ends is None:
            continue
        node, hca, node_port, switch_name, switch_port = ends
        if node is not None and hca and switch_name:
            ca_switch[(node, hca)] = switch_label(switch_name)
        width_bad, speed_bad = _degradation(link, lanes_wanted, speed_wanted)
        if not (width_bad or speed_bad):
            continue
        key = (node, hca, node_port) if node else (link.get('node_name'), link.get('port'))
        if key in seen:
            continue
        seen.add(key)
        entry = {'node': node, 'hca': hca, 'port': node_port, 'switch': switch_label(switch_name),
                 'switch_port': switch_port, 'width': link.get('width'), 'lane_speed_gbps': link.get('lane_speed_gbps'),
                 'could_be': link.get('could_be') or None}
        degraded.append(entry)
        if node is None:
            unmapped.append(entry)
            continue
        problems.setdefault(node, []).extend(
            _link_results(entry, link, width_bad, speed_bad, width_wanted, speed_wanted, checks))
    return problems, degraded, unmapped, ca_switch


def evaluate_fabric(fabric, nodes, expected):
    """fabric.link_width, fabric.link_speed and (optionally) fabric.rail for every node.

    ``fabric``: fabric_info facts (``links``). ``nodes``: node name -> list of
    its HCAs in rail order. ``expected``: ``width`` (default ``4X``),
    ``lane_speed_gbps`` (0/None: only the tool's ``Could be`` hint counts),
    ``rail_check`` (bool), ``rail_group_regex`` (a regex whose group ``group``
    names a switch's rail group; default the switch name) and ``checks``.

    Returns ``{'nodes': node -> [results], 'degraded': [...], 'unmapped': [...]}``:
    each degraded link once, with both ends; a node side that belongs to no
    known node goes to ``unmapped`` (switch-to-switch links too).
    """
    checks = expected.get('checks') or CHECKS
    width_wanted = expected.get('width') or '4X'
    problems, degraded, unmapped, ca_switch = _scan((fabric or {}).get('links') or [], list(nodes), width_wanted,
                                                    expected.get('lane_speed_gbps'), checks)
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
        merge(out, _rails(nodes, ca_switch, expected.get('rail_group_regex')))
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
        for node, results in uniform('fabric.rail', 'rail %d' % rail, values, 'leaf group',
                                     'rewire HCA %d of the node to the rail %d leaf (rail-optimized wiring)'
                                     % (rail, rail)).items():
            for result in results:
                result['rail'] = rail
                result['subject'] = '%s (rail %d)' % (nodes[node][rail], rail)
            out.setdefault(node, []).extend(results)
    return out


def decide_fabric(fabric_info, checked, expected):
    """The verify_ib role's fabric decision: ``fabric_info`` (the module result; failed or absent: no fabric results),
    ``checked`` (node -> HCAs in rail order, from ``decide_ib``). Returns ``{'fleet', 'summary'}`` or None."""
    if not fabric_info or fabric_info.get('failed') or fabric_info.get('skipped'):
        return None
    evaluated = evaluate_fabric(fabric_info, checked, expected)
    return {'fleet': evaluated['nodes'],
            'summary': {'links': fabric_info.get('links') or [], 'degraded': evaluated['degraded'],
                        'unmapped': evaluated['unmapped'], 'errors': fabric_info.get('errors') or []}}
