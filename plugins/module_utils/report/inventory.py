# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The per-node inventory table of the report: what each node is made of, by serial number and firmware.

Reads results.json ``nodes.<node>.inventory`` (system DMI identity, GPU serials and VBIOS, HCA PSIDs and
firmware) and ``versions.slurm``, and flags the odd ones out against the fleet: a VBIOS other than the one most
GPUs of the same model and board part run, a PSID other than the one most nodes have in the same slot (HCA name
and type), a firmware other than the one most HCAs of the same PSID run, a Slurm version other than most nodes'.
Serial numbers are never odd: they are unique by nature.

Pure functions only: no I/O.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils.report._text import fmt, hostlist, sort_nodes
from ansible_collections.aicluster.infra.plugins.module_utils.slurm import hostlist_sort_key

# Rows for every node up to this many, else only the nodes with an odd value (report.html's FULL_ROWS; the
# renderers pass theirs).
FULL_ROWS = 64
COLUMNS = ('node', 'vendor', 'product', 'system serial', 'GPU serials', 'VBIOS', 'HCA PSID', 'HCA firmware', 'Slurm')


def _majorities(tallies):
    """group -> the value most members have (ties: the lowest value, as the version matrix breaks them)."""
    out = {}
    for group, counts in tallies.items():
        out[group] = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[0][0]
    return out


def _count(tallies, group, value):
    if value is not None:
        counts = tallies.setdefault(group, {})
        counts[value] = counts.get(value, 0) + 1


def _text(value):
    return None if value is None else str(value)


def _vbios_group(versions, gpu):
    return (versions.get('gpu_model'), gpu.get('board_part_number'))


def _psid_group(hca):
    return (hca.get('ca_type'), hca.get('name'))


def _firmware_group(hca):
    return ('psid', hca.get('psid')) if hca.get('psid') else ('ca_type', hca.get('ca_type'))


def _nodes_of(doc):
    """(name, versions, inventory) of every node, in natural order; inventory {} when the document has none."""
    nodes = doc.get('nodes') or {}
    out = []
    for name in sort_nodes(nodes):
        node = nodes[name] or {}
        inventory = node.get('inventory') if isinstance(node.get('inventory'), dict) else {}
        out.append((name, node.get('versions') or {}, inventory))
    return out


def _fleet(entries):
    """The majority of every group: vbios, psid, firmware (group -> value) and slurm (one value or None)."""
    tallies = {'vbios': {}, 'psid': {}, 'firmware': {}, 'slurm': {}}
    for dummy, versions, inventory in entries:
        for gpu in inventory.get('gpus') or []:
            _count(tallies['vbios'], _vbios_group(versions, gpu), _text(gpu.get('vbios')))
        for hca in inventory.get('hcas') or []:
            _count(tallies['psid'], _psid_group(hca), _text(hca.get('psid')))
            _count(tallies['firmware'], _firmware_group(hca), _text(hca.get('firmware')))
        _count(tallies['slurm'], 'slurm', _text(versions.get('slurm')))
    fleet = dict((key, _majorities(tallies[key])) for key in ('vbios', 'psid', 'firmware'))
    fleet['slurm'] = _majorities(tallies['slurm']).get('slurm')
    return fleet


def index_ranges(indices):
    """GPU indices as ranges: [0, 1, 2, 4, 5, 7] -> '0-2,4-5,7'."""
    runs = []
    for number in sorted(set(index for index in indices if isinstance(index, int))):
        if runs and number == runs[-1][1] + 1:
            runs[-1][1] = number
        else:
            runs.append([number, number])
    return ','.join(str(low) if low == high else '%d-%d' % (low, high) for low, high in runs)


def _spread(entries, label):
    """Cell text of values over members: one value alone, else each value with its members, most common first.
    ``entries``: [{'value', 'member', 'odd'}]; ``label``: members -> text."""
    by_value = {}
    for entry in entries:
        if entry['value'] is not None:
            by_value.setdefault(entry['value'], []).append(entry['member'])
    if not by_value:
        return '-'
    ordered = sorted(by_value.items(), key=lambda item: (-len(item[1]), item[0]))
    if len(ordered) == 1:
        return ordered[0][0]
    return '; '.join('%s (%s)' % (value, label(members)) for value, members in ordered)


def _gpu_label(members):
    return 'GPU %s' % index_ranges(members)


def _row(name, versions, inventory, fleet):
    system = inventory.get('system') if isinstance(inventory.get('system'), dict) else {}
    gpus = sorted((gpu for gpu in inventory.get('gpus') or [] if isinstance(gpu, dict)),
                  key=lambda gpu: (not isinstance(gpu.get('index'), int), gpu.get('index') if isinstance(gpu.get('index'), int) else 0))
    vbios, hcas = [], []
    for gpu in gpus:
        value = _text(gpu.get('vbios'))
        majority = fleet['vbios'].get(_vbios_group(versions, gpu))
        vbios.append({'value': value, 'member': gpu.get('index'), 'odd': value is not None and value != majority})
    for hca in sorted((hca for hca in inventory.get('hcas') or [] if isinstance(hca, dict)),
                      key=lambda hca: hostlist_sort_key(str(hca.get('name')))):
        psid, firmware = _text(hca.get('psid')), _text(hca.get('firmware'))
        psid_majority = fleet['psid'].get(_psid_group(hca))
        firmware_majority = fleet['firmware'].get(_firmware_group(hca))
        hcas.append({'name': hca.get('name'), 'psid': psid, 'firmware': firmware,
                     'psid_odd': psid is not None and psid != psid_majority,
                     'firmware_odd': firmware is not None and firmware != firmware_majority})
    slurm = _text(versions.get('slurm'))
    slurm_odd = slurm is not None and slurm != fleet['slurm']
    serials = [_text(gpu.get('serial')) for gpu in gpus]
    vbios_values, by_value = [], {}
    for entry in vbios:
        if entry['value'] is None:
            continue
        if entry['value'] not in by_value:
            by_value[entry['value']] = {'value': entry['value'], 'gpus': [], 'odd': False}
            vbios_values.append(by_value[entry['value']])
        by_value[entry['value']]['gpus'].append(entry['member'])
        by_value[entry['value']]['odd'] = by_value[entry['value']]['odd'] or entry['odd']
    psid_entries = [{'value': hca['psid'], 'member': hca['name'], 'odd': hca['psid_odd']} for hca in hcas]
    firmware_entries = [{'value': hca['firmware'], 'member': hca['name'], 'odd': hca['firmware_odd']} for hca in hcas]
    cells = [
        {'text': name, 'odd': False},
        {'text': fmt(system.get('vendor')), 'odd': False},
        {'text': fmt(system.get('product')), 'odd': False},
        {'text': fmt(system.get('serial')), 'odd': False},
        {'text': ', '.join(fmt(serial) for serial in serials) or '-', 'odd': False},
        {'text': _spread(vbios, _gpu_label), 'odd': any(entry['odd'] for entry in vbios)},
        {'text': _spread(psid_entries, hostlist), 'odd': any(hca['psid_odd'] for hca in hcas)},
        {'text': _spread(firmware_entries, hostlist), 'odd': any(hca['firmware_odd'] for hca in hcas)},
        {'text': fmt(slurm), 'odd': slurm_odd},
    ]
    return {
        'node': name,
        'system': {'vendor': system.get('vendor'), 'product': system.get('product'), 'serial': system.get('serial')},
        'gpu_serials': serials,
        'vbios': vbios_values,
        'hcas': hcas,
        'slurm': slurm,
        'slurm_odd': slurm_odd,
        'odd': any(cell['odd'] for cell in cells),
        'cells': cells,
    }


def node_inventory(doc, full_rows=None):
    """The inventory table: one row per node (every node up to ``full_rows``, default :data:`FULL_ROWS`; beyond,
    only the nodes with an odd value), each with ``cells`` in :data:`COLUMNS` order (``text``, ``odd``) and the
    values behind them (``system``, ``gpu_serials``, ``vbios``: distinct values with their GPUs, ``hcas``: name,
    psid, firmware and their ``*_odd`` flags, ``slurm``, ``slurm_odd``, ``odd``).

    Also ``total`` (nodes in the document), ``reported`` (nodes with an inventory or a Slurm version), ``odd``
    (nodes with an odd value), ``shown_all`` and ``fleet`` (the majority values: ``vbios`` by (GPU model, board
    part number), ``psid`` by (HCA type, name), ``firmware`` by PSID, ``slurm``). A document written before the
    inventory existed, or whose nodes reported none, gives no rows.
    """
    full_rows = FULL_ROWS if full_rows is None else full_rows
    entries = _nodes_of(doc)
    reported = [entry for entry in entries if entry[2] or entry[1].get('slurm') is not None]
    fleet = _fleet(entries)
    rows = [_row(name, versions, inventory, fleet) for name, versions, inventory in entries] if reported else []
    odd = sum(1 for row in rows if row['odd'])
    shown_all = len(rows) <= full_rows
    if not shown_all:
        rows = [row for row in rows if row['odd']]
    return {'columns': list(COLUMNS), 'rows': rows, 'total': len(entries), 'reported': len(reported), 'odd': odd,
            'shown_all': shown_all,
            'fleet': {'vbios': [{'gpu_model': group[0], 'board_part_number': group[1], 'value': value}
                                for group, value in sorted(fleet['vbios'].items(), key=lambda item: tuple(str(part) for part in item[0]))],
                      'psid': [{'ca_type': group[0], 'hca': group[1], 'value': value}
                               for group, value in sorted(fleet['psid'].items(), key=lambda item: tuple(str(part) for part in item[0]))],
                      'firmware': [{group[0]: group[1], 'value': value}
                                   for group, value in sorted(fleet['firmware'].items(), key=lambda item: tuple(str(part) for part in item[0]))],
                      'slurm': fleet['slurm']}}
