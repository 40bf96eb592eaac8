# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""topology.conf, computed once for the cluster: topology/tree from the InfiniBand fabric, topology/block from
each node's NVLink domain.

topology/tree gives every node one parent switch. On a rail-optimized fabric a node hangs off one leaf per rail
(8 leaves for 8 HCAs), so no physical leaf can be its parent. The nodes that share leaf switches, transitively,
form a scalable unit (SU); each SU becomes one pseudo-switch ``<prefix><n>`` and, when there is more than one, the
SUs hang off one ``<prefix>-spine`` (the spine tier joins them). A job packed into one SU never crosses a spine.

Which CA is which node follows the verify stage (``verify/fabric.py``): a CA port is a node's HCA when its port
GUID is one the node's ibstat reported (``identity``: node -> HCA -> GUIDs, ``verify.fabric.identity_of`` of its
ib_info); for a node whose GUIDs are unknown, the first word of the CA's node description names the host
(``gpu01 mlx5_0``, ``hpc-a01 HCA-1``, ``gpu01.example.org mlx5_3``). A switch is its GUID (unmanaged switches all
print the same description), else its LID within the read that printed it (LIDs are unique in one subnet only).

The work is linear in links and nodes: one pass indexes the LIDs, one pass turns links into (node, leaf) pairs,
and a union-find over nodes joins those that share a leaf; only the hostlists sort their nodes. ``decide_topology`` is the one call the slurm role makes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible.module_utils.six.moves.collections_abc import Mapping

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.slurm import hostlist_compress, hostlist_sort_key
from ansible_collections.aicluster.infra.plugins.module_utils.verify.fabric import (
    identity_of,
    norm_guid,
    plan_reads,
    switch_label,
)
from ansible_collections.aicluster.infra.plugins.module_utils.verify.ib import checked_hcas

PLUGINS = ('topology/tree', 'topology/block')
# topology.conf(5): "SwitchName ... cannot be longer than 64 characters".
MAX_NAME = 64
# Slurm's configuration parser reads a line into a 4096-byte buffer (src/common/parse_config.c, BUFFER_SIZE):
# a longer line is cut and its rest read as another line.
MAX_LINE = 4095
# topology/block: BlockSizes are the base size times 2^level, level 0-15 (src/plugins/topology/block/block_record.c);
# without BlockSizes Slurm uses levels 0-4, stopping at the first level that covers every block.
MAX_BLOCK_LEVEL = 15
DEFAULT_BLOCK_LEVELS = 5
_PREFIX_RE = re.compile(r'^[A-Za-z][A-Za-z0-9_.-]*$')


def _ordered_unique(names):
    seen, out = set(), []
    for name in names or []:
        if name not in seen:
            seen.add(name)
            out.append(name)
    return out


def _check_prefix(prefix, variable):
    if not isinstance(prefix, str) or not _PREFIX_RE.match(prefix) or len(prefix) > MAX_NAME - 12:
        raise ValueError('%s: %r is not a usable name prefix (a letter, then letters, digits, "_", "." or "-"; at most '
                         '%d characters)' % (variable, prefix, MAX_NAME - 12))


def _hostlist(names):
    try:
        return hostlist_compress(list(names))
    except ParseError as exc:
        raise ValueError('node names: %s' % exc)


# ---------------------------------------------------------------------------
# The fabric: which leaf switches each node's HCAs are cabled to
# ---------------------------------------------------------------------------

def _end_guid(link):
    """The GUID a port line prints for its own node: a switch's node GUID, a CA's port GUID."""
    if link.get('node_type') == 'Switch':
        return norm_guid(link.get('node_guid'))
    return norm_guid(link.get('port_guid') or link.get('node_guid'))


def _lid_index(links):
    """(read, LID) -> (node type, GUID, description) of the node printed with that LID in that read."""
    index = {}
    for link in links:
        lid = link.get('node_lid')
        if lid is not None and (link.get('source'), lid) not in index:
            index[(link.get('source'), lid)] = (link.get('node_type'), _end_guid(link), link.get('node_name'))
    return index


class _Cas(object):
    """Finds the Slurm node (and HCA) of a CA end in O(1): by port GUID, else by its description's host part for the
    nodes without known GUIDs (as verify.fabric.ca_owner does)."""

    def __init__(self, nodes, identity, hcas):
        self.by_guid = {}
        for node in nodes:
            for hca, guids in ((identity or {}).get(node) or {}).items():
                for guid in guids or []:
                    if norm_guid(guid):
                        self.by_guid[norm_guid(guid)] = (node, hca)
        known = set(node for node, _hca in self.by_guid.values())
        self.by_name = {}
        for node in nodes:
            if node not in known:
                self.by_name.setdefault(node, node)
                self.by_name.setdefault(node.split('.')[0], node)
        self.hcas = set(hcas or [])

    def find(self, guid, description):
        """(node, how) or None. ``hcas`` limits the GUID matches to those HCAs; a description match counts whatever
        HCA it names (MLNX_OFED's ``HCA-1`` cannot be matched to a device name)."""
        if guid and guid in self.by_guid:
            node, hca = self.by_guid[guid]
            return (node, 'guid') if not self.hcas or hca in self.hcas else None
        words = (description or '').split()
        if not words:
            return None
        node = self.by_name.get(words[0]) or self.by_name.get(words[0].split('.')[0])
        return (node, 'description') if node is not None else None


def _switch_key(guid, source, lid, description):
    if guid:
        return guid
    if lid is not None:
        return 'LID %s of read %s' % (lid, source)
    return 'switch %s' % switch_label(description)


def node_leaves(links, nodes, identity=None, hcas=None):
    """Each node's leaf switches: ``({node: {leaf key: leaf label}}, {node: 'guid'|'description'})``.

    A leaf is the switch at the other end of an active link of one of the node's HCAs. A link between two
    switches, to a CA of no Slurm node, or between two CAs gives nothing; a Down port gives nothing.
    """
    cas = _Cas(nodes, identity, hcas)
    lids = _lid_index(links)
    leaves, how = {}, {}
    for link in links:
        if link.get('state') in (None, 'Down') or not link.get('width'):
            continue
        source = link.get('source')
        this_type = link.get('node_type')
        peer_lid = link.get('peer_lid')
        known = lids.get((source, peer_lid)) if peer_lid is not None else None
        peer_type, peer_guid, peer_name = known or (None, None, None)
        peer_guid = norm_guid(link.get('peer_guid')) or peer_guid
        peer_name = link.get('peer_name') or peer_name
        this_guid = _end_guid(link)
        this_ca = cas.find(this_guid, link.get('node_name')) if this_type != 'Switch' else None
        peer_ca = cas.find(peer_guid, peer_name) if peer_type != 'Switch' else None
        if this_ca and not peer_ca and peer_type != 'CA':
            found, switch = this_ca, (peer_guid, peer_lid, peer_name)
        elif peer_ca and not this_ca and this_type != 'CA':
            found, switch = peer_ca, (this_guid, link.get('node_lid'), link.get('node_name'))
        else:
            continue
        node, identified = found
        key = _switch_key(switch[0], source, switch[1], switch[2])
        label = switch_label(switch[2])
        leaves.setdefault(node, {})[key] = '%s (%s)' % (label, switch[0]) if label and switch[0] else (label or key)
        how[node] = identified if how.get(node) != 'guid' else 'guid'
    return leaves, how


def scalable_units(nodes, leaves):
    """The nodes that share leaf switches, transitively (a union-find over nodes keyed by leaf): a list of units, each
    ``{'nodes': [...], 'leaves': {key: label}}``, ordered by their first node in natural order."""
    parent, size, owner = {}, {}, {}

    def find(node):
        root = node
        while parent[root] != root:
            root = parent[root]
        while parent[node] != root:
            parent[node], node = root, parent[node]
        return root

    for node in nodes:
        for leaf in (leaves.get(node) or {}):
            parent.setdefault(node, node)
            size.setdefault(node, 1)
            if leaf not in owner:
                owner[leaf] = node
                continue
            first, second = find(node), find(owner[leaf])
            if first != second:
                if size[first] < size[second]:
                    first, second = second, first
                parent[second] = first
                size[first] += size[second]
    units = {}
    for node in nodes:
        if node in parent:
            unit = units.setdefault(find(node), {'nodes': [], 'leaves': {}})
            unit['nodes'].append(node)
            unit['leaves'].update(leaves[node])
    return sorted(units.values(), key=lambda unit: hostlist_sort_key(min(unit['nodes'], key=hostlist_sort_key)))


def _most_common(values):
    counts = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return max(sorted(counts), key=lambda value: counts[value]) if counts else None


def _reads_text(fabric):
    reads = [read for read in (fabric or {}).get('reads') or [] if read.get('status') in (None, 'read')]
    if not reads:
        return 'the fabric read'
    return 'the fabric read through %s' % ', '.join('%s:%s' % (read.get('ca'), read.get('port')) for read in reads)


def tree_topology(links, nodes, identity=None, prefix='su', hcas=None, fabric=None):
    """topology/tree lines: one ``SwitchName=<prefix><n> Nodes=...`` per scalable unit, ``<prefix>-unplaced`` for the
    nodes the fabric read did not show, and ``<prefix>-spine`` above them when there is more than one of those.

    A node not under any switch is allowed by slurmctld (it logs "switches lack access to N nodes") but a job can
    then only span nodes under one switch tree (topology.conf(5)), so such a node would only run single-node jobs;
    under ``<prefix>-unplaced`` it stays usable, and is never packed with an SU. Returns ``{'lines', 'problems',
    'notes', 'groups', 'unplaced'}``.
    """
    _check_prefix(prefix, 'slurm_topology_switch_prefix')
    nodes = _ordered_unique(nodes)
    leaves, how = node_leaves(links or [], nodes, identity, hcas)
    units = scalable_units(nodes, leaves)
    unplaced = [node for node in nodes if node not in leaves]
    problems, notes, lines, groups = [], [], [], []
    if not nodes:
        problems.append('there is no slurm_compute node to place (slurmctld refuses a topology.conf whose switches '
                        'contain no nodes)')
    elif not units:
        problems.append('none of the %d nodes was found in %s (%d links): neither a port GUID from their ibstat nor '
                        'a CA node description naming the host matched; check that iblinkinfo reads the compute '
                        'fabric and that slurm_topology_hcas names its HCAs'
                        % (len(nodes), _reads_text(fabric), len(links or [])))
    common = _most_common([len(unit['leaves']) for unit in units])
    for number, unit in enumerate(units, 1):
        name = '%s%d' % (prefix, number)
        hostlist = _hostlist(unit['nodes'])
        lines.append('# %s: %d node(s) sharing %d leaf switch(es)' % (name, len(unit['nodes']), len(unit['leaves'])))
        lines.append('SwitchName=%s Nodes=%s' % (name, hostlist))
        groups.append({'name': name, 'nodes': hostlist, 'count': len(unit['nodes']),
                       'leaves': sorted(unit['leaves'].values())})
        if len(units) > 1 and len(unit['leaves']) > common:
            notes.append('%s (%s) spans %d leaf switches where most units span %s: a cable from one scalable unit to '
                         'a leaf of another joins them into one; the verify stage (fabric.rail) names the HCA'
                         % (name, hostlist, len(unit['leaves']), common))
    if unplaced and units:
        name = '%s-unplaced' % prefix
        hostlist = _hostlist(unplaced)
        lines.append('# %s: node(s) not seen in the fabric read' % name)
        lines.append('SwitchName=%s Nodes=%s' % (name, hostlist))
        groups.append({'name': name, 'nodes': hostlist, 'count': len(unplaced), 'leaves': []})
        notes.append('%d node(s) not seen in %s are under %s, so they are never packed with a scalable unit: %s '
                     '(their ports are down, or their HCAs are on a subnet that was not read, or neither their GUIDs '
                     'nor their CA node descriptions name them)' % (len(unplaced), _reads_text(fabric), name, hostlist))
    if len(groups) > 1:
        lines.append('SwitchName=%s-spine Switches=%s' % (prefix, hostlist_compress([group['name'] for group in groups])))
    by_description = [node for node in nodes if how.get(node) == 'description']
    if by_description:
        notes.append('%d node(s) found by their CA node description, no port GUID of theirs being known: %s'
                     % (len(by_description), _hostlist(by_description)))
    if units:
        notes.insert(0, '%d scalable unit(s): %s' % (len(units), ', '.join(
            '%s %s (%d nodes, %d leaves)' % (group['name'], group['nodes'], group['count'], len(group['leaves']))
            for group in groups if group['leaves'])))
    return _finish({'lines': lines, 'problems': problems, 'notes': notes, 'groups': groups, 'unplaced': unplaced})


# ---------------------------------------------------------------------------
# NVLink domains: topology/block
# ---------------------------------------------------------------------------

def _comment_text(value):
    """A block id as comment text: one line, no ``#`` (a comment to Slurm) or ``\\`` (a line continuation)."""
    return ' '.join(str(value).replace('#', ' ').replace('\\', ' ').split())


def _block_sizes(given, sizes, names):
    """(BlockSizes, problems): ``given`` checked as block_record.c reads it, else Slurm's default levels (0-4, up to the
    first that covers every block) on the smallest block's node count."""
    problems = []
    base = min(sizes)
    if not given:
        levels = []
        for level in range(DEFAULT_BLOCK_LEVELS):
            levels.append(base << level)
            if (1 << level) >= len(sizes):
                break
        return levels, problems
    if isinstance(given, str):
        given = [value for value in given.split(',') if value.strip()]
    try:
        values = [int(value) for value in given]
    except (TypeError, ValueError):
        raise ValueError('slurm_topology_block_sizes: %r is not a list of node counts' % (given,))
    first = values[0]
    if first <= 0:
        raise ValueError('slurm_topology_block_sizes: %r: counts must be above 0' % (given,))
    for value in values[1:]:
        ratio, rest = divmod(value, first)
        if value <= first or rest or ratio & (ratio - 1) or ratio > (1 << MAX_BLOCK_LEVEL):
            problems.append('slurm_topology_block_sizes %s: %d is not %d times a power of two (2 to 2^%d), as '
                            'topology/block requires' % (values, value, first, MAX_BLOCK_LEVEL))
    small = [name for name, size in zip(names, sizes) if size < first]
    if small:
        problems.append('slurm_topology_block_sizes starts at %d but block(s) %s have fewer nodes; slurmctld refuses '
                        'a block smaller than the base block size' % (first, ', '.join(small)))
    return values, problems


def block_topology(nodes, blocks, block_sizes=None, prefix='block'):
    """topology/block lines: one ``BlockName=<prefix><n> Nodes=...`` per NVLink domain (``blocks``: node -> domain id),
    in natural order of the ids (Slurm pairs neighbouring blocks into larger ones), and ``BlockSizes=``.

    Every node needs a domain: slurmctld only warns about nodes in no block ("blocks lack access"), and a job is
    placed in blocks only. BlockSizes defaults to Slurm's own levels on the smallest block's node count, so a
    domain with a node missing does not make slurmctld refuse the file (a block below the base size is fatal).
    """
    _check_prefix(prefix, 'slurm_topology_block_prefix')
    nodes = _ordered_unique(nodes)
    problems, notes, lines, groups = [], [], [], []
    domains, missing = {}, []
    for node in nodes:
        block = (blocks or {}).get(node)
        if block is None or str(block).strip() == '':
            missing.append(node)
        else:
            domains.setdefault(str(block).strip(), []).append(node)
    if missing:
        problems.append('slurm_topology_block is not set for %d node(s): %s; every node needs its NVLink domain '
                        '(a node in no block gets no job under topology/block)' % (len(missing), _hostlist(missing)))
    if not domains:
        if nodes and not missing:
            problems.append('no NVLink domain given')
        elif not nodes:
            problems.append('there is no slurm_compute node to place')
        return _finish({'lines': lines, 'problems': problems, 'notes': notes, 'groups': groups, 'unplaced': missing})
    order = sorted(domains, key=hostlist_sort_key)
    names = ['%s%d' % (prefix, number) for number in range(1, len(order) + 1)]
    sizes = [len(domains[block]) for block in order]
    for name, block in zip(names, order):
        hostlist = _hostlist(domains[block])
        lines.append('# %s: NVLink domain %s, %d node(s)' % (name, _comment_text(block), len(domains[block])))
        lines.append('BlockName=%s Nodes=%s' % (name, hostlist))
        groups.append({'name': name, 'nodes': hostlist, 'count': len(domains[block]), 'block': block})
    values, size_problems = _block_sizes(block_sizes, sizes, names)
    problems.extend(size_problems)
    lines.append('BlockSizes=%s' % ','.join(str(value) for value in values))
    if len(set(sizes)) > 1:
        notes.append('NVLink domains differ in size: %s with fewer nodes than the largest (%d); BlockSizes starts at %d' % (
            ', '.join('%s %d' % (name, size) for name, size in zip(names, sizes) if size != max(sizes)), max(sizes),
            values[0]))
    notes.insert(0, '%d block(s) of %s nodes, BlockSizes=%s' % (
        len(order), '/'.join(str(size) for size in sorted(set(sizes))), ','.join(str(value) for value in values)))
    return _finish({'lines': lines, 'problems': problems, 'notes': notes, 'groups': groups, 'unplaced': missing})


def _finish(out):
    for line in out['lines']:
        if len(line) > MAX_LINE:
            out['problems'].append('a topology.conf line is %d characters, longer than Slurm reads (%d): %s...'
                                   % (len(line), MAX_LINE, line[:80]))
    return out


# ---------------------------------------------------------------------------
# The role's calls
# ---------------------------------------------------------------------------

# The cacheable fact the slurm role records on each compute node with its adapters (``{'hcas': ...}`` of ib_info)
RECORDED_IB_VAR = 'slurm_topology_ib'


def _usable(result):
    return isinstance(result, Mapping) and result and not result.get('failed') and not result.get('skipped')


def topology_reads(ib_infos, hcas=None, port=1, host=None):
    """Where iblinkinfo reads from for topology/tree: ``{'host', 'reads'}``, one read per subnet, from the node whose
    active ports reach the most subnets (``verify.fabric.plan_reads``). ``ib_infos``: node -> ib_info result (failed
    or skipped ones are left out); ``hcas``: the HCAs of the compute fabric (default every InfiniBand HCA)."""
    readable = dict((node, info) for node, info in (ib_infos or {}).items() if _usable(info))
    checked = dict((node, checked_hcas(info, hcas, 'InfiniBand')) for node, info in readable.items())
    return plan_reads(readable, checked, port or 1, host or None)


def _blocks_from(nodes, blocks, hostvars, block_var):
    if blocks:
        return blocks
    out = {}
    for node in nodes:
        host = hostvars[node] if hostvars is not None and node in hostvars else {}
        out[node] = host.get(block_var) if hasattr(host, 'get') else None
    return out


def decide_topology(nodes, plugin, fabric=None, ib_infos=None, identity=None, blocks=None, hostvars=None,
                    block_var='slurm_topology_block', block_sizes=None, switch_prefix='su', block_prefix='block',
                    hcas=None):
    """The slurm role's topology decision, once for the cluster: ``{'plugin', 'lines', 'problems', 'notes', 'groups',
    'unplaced'}``.

    ``plugin``: ``topology/tree`` (from ``fabric``, the fabric_info result; the nodes' GUIDs from ``identity`` or
    from ``ib_infos``, node -> ib_info result, and for the nodes not in it from their ``slurm_topology_ib`` fact in
    ``hostvars``) or ``topology/block`` (``blocks``: node -> NVLink domain id, else
    each node's ``block_var`` in ``hostvars``). ``problems`` make the file wrong or refused: the role stops on them.
    """
    if plugin not in PLUGINS:
        raise ValueError('slurm_topology_plugin: %r is not one of %s' % (plugin, ', '.join(PLUGINS)))
    nodes = _ordered_unique(nodes)
    if plugin == 'topology/block':
        out = block_topology(nodes, _blocks_from(nodes, blocks, hostvars, block_var), block_sizes, block_prefix)
    else:
        if isinstance(fabric, Mapping) and fabric.get('failed'):
            raise ValueError('topology/tree needs the fabric, and fabric_info failed: %s' % fabric.get('msg'))
        fabric = fabric if _usable(fabric) else None
        if identity is None:
            infos = dict((node, info) for node, info in (ib_infos or {}).items() if _usable(info))
            # a node outside this play (a run limited with --limit) is found by the ports recorded when it last was
            # in one (the cacheable fact slurm_topology_ib), as its hardware is for slurm.conf
            for node in nodes:
                if node not in infos and hostvars is not None and node in hostvars:
                    host = hostvars[node]
                    recorded = host.get(RECORDED_IB_VAR) if hasattr(host, 'get') else None
                    if _usable(recorded):
                        infos[node] = recorded
            identity = dict((node, identity_of(info)) for node, info in infos.items())
        out = tree_topology((fabric or {}).get('links') or [], nodes, identity, switch_prefix, hcas, fabric)
    out['plugin'] = plugin
    return out
