# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""OpenSM's root switches, from one fabric read (docs/fabric.md "Root GUIDs").

The rule is the one OpenSM's fat-tree engine applies when it has no root file (opensm/osm_ucast_ftree.c
fabric_rank_from_cas(): leaves are the switches a CA hangs off, every other switch one more than its nearest
neighbour): switches ranked by hops from the CA-attached switches (leaves rank 0), roots = the highest rank
(the spines of a two-tier fat tree, the cores of a three-tier one). Written down, the roots no longer depend on
each sweep's view: ``ftree`` with ``root_guid_file`` accepts a tree that is not pure (doc/current-routing.txt:
only the compute nodes must share a rank), ``updn`` skips its statistical root detection, which may find none and
fall back to min-hop.

Which node a port line's peer is: by its GUID in iblinkinfo's line layout (``-l``), by its LID in the default
layout (the layout M(aicluster.infra.fabric_info) reads). LIDs are the SM's: before a master SM's first sweep
every port has LID 0 and the peers cannot be told apart, so a read with LID 0 on an active link is refused (the
role reads the fabric after its SM settled). A read is refused, with its reason, rather than guessed when it is not
a tree this rule can rank: no CA (nothing to rank from), a link between two switches of one rank (a CA on a spine,
a leaf-to-leaf cable), or a top-rank switch that joins nothing the ranks below do not already join (a leaf whose
nodes are all down or unplugged is ranked above the spines: taken as a root it would turn the tree upside down).
A fabric of leaves only (no switch-to-switch link), or with one leaf (a subnet per rail of one scalable unit: no path
crosses a spine), has no roots.

Linear in port lines: one pass indexes the nodes, one builds the switch graph, one BFS ranks it, one union-find
checks the top rank.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import deque

from ansible_collections.aicluster.infra.plugins.module_utils.verify.fabric import norm_guid

# Upstream OpenSM reads root_guid_file in these engines only (opensm/osm_ucast_ftree.c fabric_load_roots(),
# opensm/osm_ucast_updn.c updn_lid_matrices()); NVIDIA's adaptive-routing engines are built on them (weakly
# sourced: NVIDIA's OpenSM sources are not public; its docs name the engines, not their root handling).
ROOT_READING_ENGINES = ('ftree', 'updn', 'ar_ftree', 'ar_updn')
# The build's default engine when opensm_routing_engine is empty: upstream's minhop (reads no root file),
# NVIDIA's ar_updn (opensm_conf.py NVIDIA_ENGINES).
DEFAULT_ENGINE = {'upstream': 'minhop', 'nvidia': 'ar_updn'}
AUTO = 'auto'
CONF_DIR = '/etc/opensm/aicluster'
ROOT_FILE = CONF_DIR + '/root_guids-%s.conf'
SHOWN = 3


class Refused(Exception):
    """The read cannot be ranked (the message says why)."""


def _shown(items):
    items = sorted(items)
    more = ' and %d more' % (len(items) - SHOWN) if len(items) > SHOWN else ''
    return ', '.join(items[:SHOWN]) + more


def _line_keys(links):
    """[(GUID that names the printing node, its type)] of the port lines: a switch's node GUID, a CA's port GUID; the
    type is None in the line layout (iblinkinfo -l prints none). A switch prints its GUID on each of its port lines:
    each text is normalised once."""
    normal, keys = {}, []
    for link in links:
        kind = link.get('node_type')
        raw = link.get('node_guid') if kind == 'Switch' else (link.get('port_guid') or link.get('node_guid'))
        if raw not in normal:
            normal[raw] = norm_guid(raw)
        keys.append((normal[raw], kind))
    return keys


def _up(link):
    return link.get('state') not in (None, 'Down') and (link.get('peer_lid') is not None or link.get('peer_guid'))


def _nodes(links, keys):
    """guid -> {type, name, lid, lines, max_port}, and LID -> guid. In the line layout a node's type is inferred: a
    switch prints its node GUID on every port line; a CA port has a GUID of its own, on one line, port 1 or 2."""
    nodes, lids = {}, {}
    for link, (guid, kind) in zip(links, keys):
        if guid is None:
            continue
        node = nodes.get(guid)
        if node is None:
            node = nodes[guid] = {'type': kind, 'name': link.get('node_name'), 'lid': link.get('node_lid'),
                                  'lines': 0, 'max_port': 0}
        node['lines'] += 1
        node['max_port'] = max(node['max_port'], link.get('port') or 0)
    for guid, node in nodes.items():
        if node['type'] is None:
            node['type'] = 'Switch' if node['lines'] > 1 or node['max_port'] > 2 else 'CA'
        lid = node['lid']
        if lid:
            other = lids.setdefault(lid, guid)
            if other != guid:
                raise Refused('LID %d is printed by two nodes (%s and %s): not one subnet\'s read'
                              % (lid, min(other, guid), max(other, guid)))
    return nodes, lids


def _peer(link, nodes, lids):
    """The peer's GUID, or None when the read does not print it (a CA left out by --switches-only)."""
    if link.get('peer_guid'):
        guid = norm_guid(link.get('peer_guid'))
        return guid if guid in nodes else None
    return lids.get(link.get('peer_lid'))


def switch_graph(links):
    """(switches {guid: name}, leaves set, adjacency {guid: set}) of one subnet's port lines; raises Refused."""
    keys = _line_keys(links)
    nodes, lids = _nodes(links, keys)
    unassigned = set()
    switches = dict((guid, node['name']) for guid, node in nodes.items() if node['type'] == 'Switch')
    adjacency = dict((guid, set()) for guid in switches)
    leaves = set()
    for link, (this, dummy) in zip(links, keys):
        if not _up(link):
            continue
        if not link.get('peer_guid') and (not link.get('peer_lid') or not link.get('node_lid')):
            unassigned.add(link.get('node_name') or this or '?')
            continue
        peer = _peer(link, nodes, lids)
        if this is None or peer is None or this == peer:
            continue
        types = (nodes[this]['type'], nodes[peer]['type'])
        if types == ('Switch', 'Switch'):
            adjacency[this].add(peer)
            adjacency[peer].add(this)
        elif types == ('Switch', 'CA'):
            leaves.add(this)
        elif types == ('CA', 'Switch'):
            leaves.add(peer)
    if unassigned:
        raise Refused('LID 0 on active links of %s: no SM has assigned LIDs yet (iblinkinfo names a peer by its LID), '
                      'read the fabric after the master SM\'s first sweep' % _shown(unassigned))
    return switches, leaves, adjacency


def _ranks(leaves, adjacency):
    """BFS from every leaf at once: switch -> hops to its nearest leaf (switches no leaf reaches are left out)."""
    ranks = dict((leaf, 0) for leaf in leaves)
    queue = deque(sorted(leaves))
    while queue:
        current = queue.popleft()
        for other in adjacency[current]:
            if other not in ranks:
                ranks[other] = ranks[current] + 1
                queue.append(other)
    return ranks


def _components_below(ranks, adjacency, top):
    """Switch -> its component in the fabric without the top rank (union-find)."""
    parent = dict((guid, guid) for guid, rank in ranks.items() if rank < top)

    def find(guid):
        while parent[guid] != guid:
            parent[guid] = parent[parent[guid]]
            guid = parent[guid]
        return guid

    for guid in parent:
        for other in adjacency[guid]:
            if other in parent:
                first, second = find(guid), find(other)
                if first != second:
                    parent[first] = second
    return dict((guid, find(guid)) for guid in parent)


def fabric_roots(links):
    """The root switches of one subnet's iblinkinfo port lines (parse_iblinkinfo's ``links``, one read).

    Returns ``{roots, reason, ranks, names, tiers}``: ``roots`` the root switch GUIDs (sorted), ``reason`` None or
    why there are none (leaves only, or a read refused), ``ranks`` switch GUID -> rank (0 = leaf), ``names`` switch
    GUID -> node description, ``tiers`` the number of switch ranks."""
    result = {'roots': [], 'reason': None, 'ranks': {}, 'names': {}, 'tiers': 0}
    try:
        switches, leaves, adjacency = switch_graph(links or [])
    except Refused as exc:
        result['reason'] = str(exc)
        return result
    result['names'] = switches
    if not switches:
        result['reason'] = 'the read shows no switch'
        return result
    if not leaves:
        result['reason'] = 'the read shows no CA on a switch: no leaf to rank from'
        return result
    ranks = _ranks(leaves, adjacency)
    result['ranks'] = ranks
    top = max(ranks.values())
    result['tiers'] = top + 1
    if top == 0:
        result['reason'] = ('leaves only: no switch above the switches CAs hang off (%d switch(es)), so no root; '
                            'OpenSM needs no root file' % len(ranks))
        return result
    if len(leaves) == 1:
        result['reason'] = ('one leaf: every CA hangs off one switch, so no path crosses the %d switch(es) above it '
                            'and no root is needed' % (len(ranks) - 1))
        return result
    flat = set('%s-%s' % tuple(sorted((guid, other))) for guid in ranks for other in adjacency[guid]
               if ranks.get(other) == ranks[guid])
    if flat:
        result['reason'] = ('not a fat tree: a link between two switches of one rank (%s), e.g. a CA on a spine or a '
                            'leaf-to-leaf cable; give opensm_root_guids' % _shown(flat))
        return result
    below = _components_below(ranks, adjacency, top)
    tops = sorted(guid for guid, rank in ranks.items() if rank == top)
    dead = [guid for guid in tops if len(set(below[other] for other in adjacency[guid] if other in below)) < 2]
    if dead:
        result['reason'] = ('the top rank is not the tree\'s top: %s join(s) nothing the ranks below do not join '
                            '(a leaf with no CA, its nodes down or unplugged, ranks above the spines); give '
                            'opensm_root_guids or read again when every leaf has a node up'
                            % _shown('%s (%s)' % (guid, switches.get(guid) or '?') for guid in dead))
        return result
    result['roots'] = tops
    return result


def root_guids_problems(value):
    """One line per problem of opensm_root_guids (V(auto), or a list of switch node GUIDs; [] is off)."""
    if value == AUTO:
        return []
    if not isinstance(value, list):
        return ['opensm_root_guids: %r must be "auto" or a list of switch GUIDs ([] writes no root file)' % (value,)]
    problems = []
    seen = set()
    for index, item in enumerate(value):
        guid = norm_guid(item) if isinstance(item, str) else None
        if guid is None:
            problems.append('opensm_root_guids[%d]: %r is not a GUID (0x followed by up to 16 hex digits)' % (index, item))
        elif guid in seen:
            problems.append('opensm_root_guids[%d]: %s is listed twice' % (index, guid))
        else:
            seen.add(guid)
    return problems


def roots_wanted(value, engines, flavour='upstream'):
    """(mode, why): mode 'auto', 'given' or 'off'. V(auto) is on only when a configured routing engine (or the build's
    default when none is configured) reads root_guid_file."""
    if isinstance(value, list):
        return ('given', 'opensm_root_guids lists %d switch(es)' % len(value)) if value else (
            'off', 'opensm_root_guids is [] (no root file)')
    names = list(engines or [DEFAULT_ENGINE.get(flavour or 'upstream', 'minhop')])
    reading = [name for name in names if name in ROOT_READING_ENGINES]
    if reading:
        return 'auto', 'routing engine %s reads root_guid_file' % reading[0]
    return 'off', 'no configured routing engine (%s) reads root_guid_file (%s do)' % (
        ', '.join(names), ', '.join(ROOT_READING_ENGINES))


def root_file_text(roots, names=None, header=None):
    """The root file: one GUID a line (complib/cl_nodenamemap.c parse_node_map(): a line the parser cannot read
    fails the whole file, and the engine with it), each followed by its node description as a comment."""
    lines = ['# %s' % line for text in (header or []) for line in str(text).splitlines()]
    for guid in roots:
        name = ' '.join(str((names or {}).get(guid) or '').split())
        lines.append('%s%s' % (guid, ' # %s' % name if name else ''))
    return '\n'.join(lines) + '\n'


def _source_of(instance, links):
    """The read that printed this instance's subnet: its own (ca:port), else the read that printed its port GUID
    (fabric_info skips a read of a subnet an earlier read printed)."""
    read = instance.get('read') or {}
    own = '%s:%s' % (read.get('ca'), read.get('port'))
    sources = set(link.get('source') for link in links)
    if own in sources:
        return own
    for link in links:
        if norm_guid(link.get('port_guid')) == instance['guid']:
            return link.get('source')
    return None


def opensm_roots(value, engines, flavour, instances, fabric=None, header=None):
    """Per SM instance of the plan: its root file and the opensm.conf settings that point to it.

    ``value`` opensm_root_guids, ``engines`` opensm_routing_engine, ``instances`` the plan's instances, ``fabric``
    fabric_info's result (one read per instance, links tagged with ``source``) when ``value`` is V(auto).
    Returns ``{mode, why, instances: [{unit, guid, conf_path, path, roots, reason, content, settings}]}``; ``content`` and
    ``settings`` are None for an instance without roots (its files are left as they are)."""
    mode, why = roots_wanted(value, engines, flavour)
    by_source = {}
    for link in (fabric or {}).get('links') or []:
        by_source.setdefault(link.get('source'), []).append(link)
    out = []
    for instance in instances or []:
        path = ROOT_FILE % instance['guid']
        entry = {'unit': instance['unit'], 'guid': instance['guid'], 'conf_path': instance.get('conf_path'),
                 'path': path, 'roots': [], 'reason': None, 'content': None, 'settings': None}
        names = {}
        if mode == 'given':
            entry['roots'] = sorted(set(norm_guid(guid) for guid in value))
        elif mode == 'auto':
            links = (fabric or {}).get('links') or []
            source = _source_of(instance, links)
            if fabric and 'links' not in fabric:
                entry['reason'] = 'the fabric read failed: %s' % (fabric.get('msg') or '?')
            elif source is None and not by_source:
                entry['reason'] = 'no fabric read'
            else:
                found = fabric_roots(by_source.get(source) or [])
                entry['roots'], entry['reason'], names = found['roots'], found['reason'], found['names']
        else:
            entry['reason'] = why
        if entry['roots']:
            entry['content'] = root_file_text(entry['roots'], names, header)
            entry['settings'] = dict(instance['settings'], root_guid_file=path)
        out.append(entry)
    return {'mode': mode, 'why': why, 'instances': out}
