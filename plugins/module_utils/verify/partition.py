# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""fabric.partition: each GPU-fabric port holds exactly the P_Keys its partitions give it, as the member it should be.

The SM writes each port's P_Key table from partitions.conf. A node reads it back from
``/sys/class/infiniband/DEV/ports/PORT/pkeys/<index>`` (or ``smpquery pkeys LID PORT``). Each entry's top bit is
the membership (IBA 10.9.1: 1 full, 0 limited): ``0xffff`` is the default partition 0x7fff as a full member,
``0x7fff`` the same partition as a limited member, which cannot talk to other limited members (so IPoIB between
two such nodes fails while the port is Active). opensm doc/partition-config.txt: ``ALL=full`` makes every port
a full member, and a partitions.conf with no rule for the Default partition makes every port but the SM's a limited
member of 0x7fff; a partitions.conf OpenSM cannot parse leaves what it parsed up to the error (osm_prtn.c). A
missing key, a key the port should not hold, or the wrong membership fails the node.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.ib_partitions import pkey_number
from ansible_collections.aicluster.infra.plugins.module_utils.smpquery import parse_smpquery, parse_sysfs_pkeys
from ansible_collections.aicluster.infra.plugins.module_utils.verify._common import for_node
from ansible_collections.aicluster.infra.plugins.module_utils.verify.results import new_result

CHECK = 'fabric.partition'
MEMBERSHIPS = ('full', 'limited', 'both')
# opensm partition-config.txt: the default partition, every port a full member ("Default=0x7fff, ipoib : ALL=full;")
DEFAULT_PKEYS = ({'pkey': 0x7fff, 'membership': 'full'},)


def wanted_entries(pkeys):
    """The expected partitions -> the set of (P_Key without the membership bit, full) a port must hold.

    Each item: ``{'pkey': 0x8001 | '0x0001' | 1, 'membership': 'full'|'limited'|'both'}``, or a bare table value
    (``'0xffff'``: its top bit says the membership). ``both`` (partition-config.txt ``defmember=both``) is two entries.
    """
    out = set()
    for item in pkeys or []:
        if isinstance(item, dict):
            number = pkey_number(item.get('pkey'))
            membership = item.get('membership') or ('full' if number & 0x8000 else 'limited')
        else:
            number = pkey_number(item)
            membership = 'full' if number & 0x8000 else 'limited'
        if membership not in MEMBERSHIPS:
            raise ValueError('membership %r of P_Key 0x%04x is not one of %s' % (membership, number, ', '.join(MEMBERSHIPS)))
        base = number & 0x7fff
        if base == 0:
            raise ValueError('P_Key 0x%04x is not a partition (0x0000 and 0x8000 are invalid)' % number)
        if membership in ('full', 'both'):
            out.add((base, True))
        if membership in ('limited', 'both'):
            out.add((base, False))
    return out


def _text(entry):
    return '0x%04x' % (entry[0] | (0x8000 if entry[1] else 0))


def _held(read):
    """The P_Key table of one port -> (set of (pkey, full), None) or (None, why not)."""
    if read is None:
        return None, 'the port was not read'
    try:
        if isinstance(read, dict) and read.get('failed'):
            return None, 'the read failed: %s' % (read.get('msg') or read.get('stderr') or 'no message')
        if isinstance(read, dict) and 'stdout' in read:
            parsed = parse_smpquery(read['stdout'])
        elif isinstance(read, (dict, list)):
            parsed = parse_sysfs_pkeys(read)
        else:
            parsed = parse_smpquery(str(read))
    except ParseError as exc:
        return None, 'the P_Key table could not be read: %s' % exc
    if parsed.get('operation') != 'pkeys':
        return None, 'no P_Key table: %s' % ('; '.join(parsed.get('errors') or []) or 'smpquery printed another operation')
    return set((member['pkey'], member['full']) for member in parsed['members']), None


def _judge(subject, held, wanted):
    missing, extra = sorted(wanted - held), sorted(held - wanted)
    measured, threshold = sorted(_text(entry) for entry in held), sorted(_text(entry) for entry in wanted)
    if not missing and not extra:
        return new_result(CHECK, subject, measured, threshold, True, '%s holds exactly %s' % (subject, ', '.join(threshold)))
    notes = []
    for base, full in missing:
        other = (base, not full) in held
        if other:
            notes.append('P_Key 0x%04x as a %s member, expected %s (partitions.conf: %s)' % (
                base, 'limited' if full else 'full', 'full' if full else 'limited',
                'add =full to the port or use ALL=full' if full else 'the port is a full member where limited was asked'))
        else:
            notes.append('missing %s (partition 0x%04x as a %s member)' % (_text((base, full)), base, 'full' if full else 'limited'))
    for base, full in extra:
        if (base, not full) not in wanted:
            notes.append('holds %s, which none of its partitions gives it' % _text((base, full)))
    return new_result(CHECK, subject, measured, threshold, False,
                      '%s: %s; check partitions.conf on the SM (and its log for PARSE ERROR lines), then resweep'
                      % (subject, '; '.join(notes)), missing=[_text(entry) for entry in missing], extra=[_text(entry) for entry in extra])


def decide_partition(observations, expected):
    """The fabric.partition decision.

    ``observations``: node -> {'HCA:PORT' -> a read}: the sysfs table (index -> ``0xffff`` text, or a list in index
    order), ``smpquery pkeys`` stdout, or a registered command result. ``expected``: ``pkeys`` (the fleet's
    partitions for a GPU port, default the default partition as a full member), ``nodes`` (node -> its own
    ``pkeys``, where partitions differ per tenant), ``port_pkeys`` (node -> port -> its own ``pkeys``: partitions
    name their members by port GUID, so two ports of one node may differ) and ``ports`` (node -> the ports to judge;
    default: those read).

    Returns ``{'nodes': node -> [result]}``: one result per port; a port that could not be read fails.
    """
    expected = expected or {}
    out = {}
    for node, reads in sorted((observations or {}).items()):
        pkeys = for_node(expected, node).get('pkeys', expected.get('pkeys'))
        node_wanted = wanted_entries(pkeys if pkeys is not None else DEFAULT_PKEYS)
        ports = ((expected.get('ports') or {}).get(node)) or sorted(reads or {})
        per_port = (expected.get('port_pkeys') or {}).get(node) or {}
        results = []
        for port in ports:
            wanted = wanted_entries(per_port[port]) if per_port.get(port) is not None else node_wanted
            held, why = _held((reads or {}).get(port))
            if held is None:
                results.append(new_result(CHECK, port, None, sorted(_text(entry) for entry in wanted), False,
                                          '%s: %s; read /sys/class/infiniband/%s/pkeys/ by hand' % (
                                              port, why, port.replace(':', '/ports/'))))
                continue
            results.append(_judge(port, held, wanted))
        out[node] = results
    return {'nodes': out}
