# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Synthetic results.json documents for the report's tests and bench/report_1024.py.

``make_results(count, faults=...)`` builds a document that passes
``validate_results``: every node with 8 HCAs (rails) and 8 GPUs, per-HCA and
per-GPU check results, a perftest schedule of rail-aligned pairs (round-robin
rounds, each a perfect matching), NCCL figures, fabric links, versions and
the inventory (system, GPU serials and VBIOS, HCA PSIDs and firmware).
Figures jitter deterministically from ``seed``. Each fault is a tuple
``(kind, node, index)`` (index: HCA or GPU number, ignored by node-level
kinds); ``FAULT_KINDS`` lists them. ``LAB_FAULTS`` puts one of each on a
4-node fleet (the documentation's screenshot). ``INVENTORY_FAULT_KINDS``
(another VBIOS on a GPU, another PSID on an HCA, another Slurm version on a
node) change the inventory and versions only, no check result; scatter_faults
leaves them out, so its fleets stay as they were.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import random

from ansible_collections.aicluster.infra.plugins.module_utils.verify import results as vr

LINE_RATE = 400.0            # NDR, Gb/s
BW_FRACTION = 0.9            # perftest threshold as a fraction of line rate
NCCL_THRESHOLD = 400.0       # single-node all_reduce busbw, GB/s
NCCL_SLOW_FRACTION = 0.9     # of the fleet median
MULTI_NODE_THRESHOLD = 300.0
FIRMWARE = '28.42.1000'
DRIVER = '550.127.08'
VERSIONS = {
    'os': 'Debian 12.8', 'kernel': '6.1.0-28-amd64', 'driver': DRIVER, 'cuda': '12.4',
    'ofed': 'MLNX_OFED_LINUX-24.10-1.1.4.0', 'slurm': '23.11.10',
    'gpu_model': 'NVIDIA H100 80GB HBM3', 'gpu_count': 8,
}
PARAMETERS = {
    'dcgm_diag_level': 2, 'nccl_test': 'all_reduce_perf', 'nccl_min_bytes': '8', 'nccl_max_bytes': '8G',
    'perftest_size': 8388608, 'perftest_fraction': BW_FRACTION, 'perftest_bidirectional': False,
    'nccl_slow_fraction': NCCL_SLOW_FRACTION, 'mtu': 4092,
}

FAULT_KINDS = ('link_width', 'hca_bw_low', 'port_down', 'nccl_slow', 'nccl_wrong', 'gpu_ecc', 'gpu_xid',
               'row_remap', 'nvlink', 'dcgm', 'fw_odd', 'driver_odd')
INVENTORY_FAULT_KINDS = ('vbios_odd', 'psid_odd', 'slurm_odd')
SYSTEM = {'vendor': 'Supermicro', 'product': 'SYS-821GE-TNHR'}
VBIOS = '96.00.74.00.01'
ODD_VBIOS = '96.00.99.00.01'
PSID = 'MT_0000000838'
ODD_PSID = 'DEL0000000054'
GPU_PART = '692-2G520-0200-000'
LAB_FAULTS = (
    ('link_width', 'gpu02', 3),
    ('hca_bw_low', 'gpu03', 5),
    ('nccl_slow', 'gpu04', 0),
    ('gpu_ecc', 'gpu03', 6),
    ('gpu_xid', 'gpu04', 2),
    ('dcgm', 'gpu03', 0),
    ('fw_odd', 'gpu02', 0),
)


def node_names(count, prefix='gpu'):
    width = 2 if count < 100 else 4
    return ['%s%0*d' % (prefix, width, index + 1) for index in range(count)]


def schedule(names, max_rounds=8):
    """Round-robin (circle method) rounds of node pairs; every round a perfect matching."""
    players = list(names) + ([None] if len(names) % 2 else [])
    count = len(players)
    rounds = []
    for _round in range(min(count - 1, max_rounds)):
        pairs = []
        for index in range(count // 2):
            a, b = players[index], players[count - 1 - index]
            if a is not None and b is not None:
                pairs.append([a, b])
        rounds.append(pairs)
        players = [players[0], players[-1]] + players[1:-1]
    return rounds


def _faults_by(faults):
    found = {}
    for kind, node, index in faults:
        if kind not in FAULT_KINDS + INVENTORY_FAULT_KINDS:
            raise ValueError('unknown fault kind %r' % kind)
        found.setdefault((kind, node), set()).add(index)
    return found


def _hca_factor(fault, node, hca):
    if hca in fault.get(('link_width', node), ()):
        return 0.24
    if hca in fault.get(('hca_bw_low', node), ()):
        return 0.71
    if hca in fault.get(('port_down', node), ()):
        return 0.0
    return 1.0


def _leaf(index, rail):
    return 'leaf%02d-rail%d' % (index // 32 + 1, rail), index % 32 + 1


def _inventory(number, versions, fault, name, hcas, gpus):
    """The inventory of node ``number`` (1-based), serials as hwsim derives them; no random draw (the figures stay)."""
    return {
        'system': dict(SYSTEM, serial='S50123%04dA' % number),
        'gpus': [{'index': gpu, 'uuid': 'GPU-4857534d-%04x-4000-8000-%012x' % (number, gpu),
                  'serial': '1654%06d%02d0' % (number, gpu),
                  'vbios': ODD_VBIOS if gpu in fault.get(('vbios_odd', name), ()) else VBIOS, 'board_part_number': GPU_PART}
                 for gpu in range(gpus)],
        'hcas': [{'name': 'mlx5_%d' % k, 'ca_type': 'MT4129',
                  'psid': ODD_PSID if k in fault.get(('psid_odd', name), ()) else PSID,
                  'firmware': versions['hca_firmware']['mlx5_%d' % k]}
                 for k in range(hcas)],
    }


def nccl_rows(busbw, half=64 << 20):
    """nccl-tests rows from 8 B to 8 GiB (each size four times the last) whose bus bandwidth rises to ``busbw`` at
    8 GiB: size / (size + half) of a peak, as all_reduce_perf's curve rises (no random draw)."""
    top = float(8 << 30)
    peak = busbw * (top + half) / top
    return [{'size': 8 << (2 * step), 'oop_busbw': round(peak * (8 << (2 * step)) / ((8 << (2 * step)) + half), 2),
             'ip_busbw': None} for step in range(16)]


def write_lab_results(tmp_path):
    """results.json of the 4-node lab fleet with LAB_FAULTS in a run directory under ``tmp_path`` (the module's and
    the role's tests); returns its path."""
    path = tmp_path / 'verify-20261129T170003Z' / 'results.json'
    path.parent.mkdir()
    path.write_text(json.dumps(make_results(4, LAB_FAULTS)))
    return path


def make_results(count=4, faults=(), seed=2026, hcas=8, gpus=8, max_rounds=8, mode='drain',
                 inventory='inventories/lab', started='2026-11-29T17:00:03Z', finished='2026-11-29T17:06:41Z'):
    rng = random.Random(seed)
    names = node_names(count)
    fault = _faults_by(faults)
    nodes = dict((name, {'results': [], 'versions': None}) for name in names)
    links = []
    for index, name in enumerate(names):
        node = nodes[name]
        versions = copy.deepcopy(VERSIONS)
        versions['hca_firmware'] = dict(('mlx5_%d' % k, FIRMWARE) for k in range(hcas))
        for k in fault.get(('fw_odd', name), ()):
            versions['hca_firmware']['mlx5_%d' % k] = '28.39.1002'
        if ('driver_odd', name) in fault:
            versions['driver'] = '535.183.01'
        if ('slurm_odd', name) in fault:
            versions['slurm'] = '22.05.8'
        node['versions'] = versions
        node['inventory'] = _inventory(index + 1, versions, fault, name, hcas, gpus)
        add = node['results'].append
        add(vr.new_result('ib.hca_present', 'node', hcas, hcas, True, '%d HCAs present, expected %d' % (hcas, hcas)))
        for k in range(hcas):
            hca = 'mlx5_%d' % k
            leaf, port = _leaf(index, k)
            peer = '%s port %d' % (leaf, port)
            down = k in fault.get(('port_down', name), ())
            narrow = k in fault.get(('link_width', name), ())
            state = 'Down' if down else 'Active'
            add(vr.new_result('ib.port_state', '%s:1' % hca, state, 'Active', not down,
                              '%s port 1 is %s, expected Active' % (hca, state), peer=peer))
            rate = 0 if down else (100 if narrow else 400)
            add(vr.new_result('ib.port_rate', '%s:1' % hca, rate, 400, rate == 400,
                              '%s port 1 rate %d Gb/s, expected 400' % (hca, rate), unit='Gb/s', peer=peer))
            add(vr.new_result('fabric.link_width', '%s:1' % hca, '1X' if narrow else '4X', '4X', not narrow,
                              '%s port 1 trained at %s, expected 4X (peer %s)' % (hca, '1X' if narrow else '4X', peer),
                              peer=peer))
            links.append({
                'node_type': 'CA', 'node_guid': '0x%016x' % (0xfc6a1c0300a00000 + index * 16 + k),
                'node_name': '%s %s' % (name, hca), 'node_lid': index * 16 + k + 1, 'port': 1,
                'width': None if down else ('1X' if narrow else '4X'), 'lane_speed_gbps': None if down else 106.25,
                'state': state, 'physical_state': 'Polling' if down else 'LinkUp',
                'peer_lid': None if down else 20000 + index // 32 * 8 + k, 'peer_port': None if down else port,
                'peer_name': None if down else 'MF0;%s:MQM9700/U1' % leaf,
                'could_be': '4X 106.25 Gbps' if narrow else None, 'degraded': narrow,
            })
        firmware_ok = len(set(versions['hca_firmware'].values())) == 1 and FIRMWARE in versions['hca_firmware'].values()
        add(vr.new_result('ib.firmware_uniform', 'node', ','.join(sorted(set(versions['hca_firmware'].values()))), FIRMWARE,
                          firmware_ok, 'HCA firmware %s, fleet %s' % (sorted(set(versions['hca_firmware'].values())), FIRMWARE)))
        add(vr.new_result('ib.ofed_uniform', 'node', versions['ofed'], VERSIONS['ofed'], True, 'OFED as the fleet'))
        add(vr.new_result('net.mtu', 'ib0', 4092, 4092, True, 'ping -M do -s 4064 reached every peer'))
        add(vr.new_result('gpu.count', 'node', gpus, gpus, True, '%d GPUs, expected %d' % (gpus, gpus)))
        add(vr.new_result('gpu.driver_uniform', 'node', versions['driver'], DRIVER, versions['driver'] == DRIVER,
                          'driver %s, fleet %s' % (versions['driver'], DRIVER)))
        for gpu in range(gpus):
            ecc = 2 if gpu in fault.get(('gpu_ecc', name), ()) else 0
            add(vr.new_result('gpu.ecc', 'GPU %d' % gpu, ecc, 0, ecc == 0,
                              'GPU %d volatile uncorrectable ECC errors %d, limit 0' % (gpu, ecc)))
            remap = 1 if gpu in fault.get(('row_remap', name), ()) else 0
            add(vr.new_result('gpu.row_remap', 'GPU %d' % gpu, remap, 0, remap == 0,
                              'GPU %d pending row remaps %d, limit 0' % (gpu, remap)))
            links_up = 17 if gpu in fault.get(('nvlink', name), ()) else 18
            add(vr.new_result('gpu.nvlink', 'GPU %d' % gpu, links_up, 18, links_up == 18,
                              'GPU %d NVLinks up %d of 18' % (gpu, links_up)))
        xid = sorted(fault.get(('gpu_xid', name), ()))
        add(vr.new_result('gpu.xid', 'GPU %d' % xid[0] if xid else 'node', 79 if xid else 'none', 'none', not xid,
                          'Xid 79 (GPU fallen off the bus) on GPU %d' % xid[0] if xid else 'no fatal Xid since boot'))
        dcgm_bad = ('dcgm', name) in fault
        add(vr.new_result('gpu.dcgm_diag', 'node', 'fail' if dcgm_bad else 'pass', 'pass', not dcgm_bad,
                          'dcgmi diag -r 2: %s' % ('memory test failed on GPU 3' if dcgm_bad else 'pass'),
                          level=PARAMETERS['dcgm_diag_level']))
    # perftest: rail-aligned pairs, the result attached to the end at fault (the client when both are healthy)
    rounds = schedule(names, max_rounds)
    pairs = []
    for round_index, matching in enumerate(rounds):
        for client, server in matching:
            for k in range(hcas):
                hca = 'mlx5_%d' % k
                factor = min(_hca_factor(fault, client, k), _hca_factor(fault, server, k))
                measured = round(LINE_RATE * factor * rng.uniform(0.955, 0.985), 1)
                threshold = LINE_RATE * BW_FRACTION
                passed = measured >= threshold
                pairs.append({'test': 'write_bw', 'client': client, 'server': server, 'hca': hca, 'peer_hca': hca,
                              'rail': k, 'measured': measured, 'line_rate': LINE_RATE, 'threshold': threshold,
                              'unit': 'Gb/s', 'passed': passed, 'round': round_index})
                owner = client
                if _hca_factor(fault, server, k) < _hca_factor(fault, client, k):
                    owner = server
                partner = server if owner == client else client
                nodes[owner]['results'].append(vr.new_result(
                    'perftest.write_bw', '%s -> %s %s' % (hca, partner, hca), measured, threshold, passed,
                    'ib_write_bw %s <-> %s %s: %.1f Gb/s, threshold %.1f' % (hca, partner, hca, measured, threshold),
                    unit='Gb/s', partner=partner, rail=k))
    # nccl: single-node all_reduce busbw per node, fleet median, multi-node run
    single = {}
    for name in names:
        busbw = round(rng.uniform(468.0, 482.0) * (0.78 if ('nccl_slow', name) in fault else 1.0), 1)
        wrong = 3 if ('nccl_wrong', name) in fault else 0
        single[name] = {'busbw': busbw, 'wrong': wrong}
    ordered = sorted(value['busbw'] for value in single.values())
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else round((ordered[middle - 1] + ordered[middle]) / 2, 2)
    for name in names:
        add = nodes[name]['results'].append
        busbw, wrong = single[name]['busbw'], single[name]['wrong']
        add(vr.new_result('nccl.busbw', 'node', busbw, NCCL_THRESHOLD, busbw >= NCCL_THRESHOLD,
                          'all_reduce busbw %.1f GB/s at 8 GiB, threshold %.1f GB/s' % (busbw, NCCL_THRESHOLD), unit='GB/s'))
        add(vr.new_result('nccl.wrong', 'node', wrong, 0, wrong == 0, 'nccl-tests #wrong %d' % wrong))
        floor = round(median * NCCL_SLOW_FRACTION, 1)
        add(vr.new_result('nccl.slow_node', 'node', busbw, floor, busbw >= floor,
                          'busbw %.1f GB/s, %.0f%% of the fleet median %.1f' % (busbw, 100 * busbw / median, median),
                          unit='GB/s'))
    for name in names:
        node = nodes[name]
        failed = [result for result in node['results'] if not result['passed']]
        node['passed'] = not failed
        node['drained'] = bool(failed) and mode == 'drain'
        node['resumed'] = False
        node['drain_reason'] = vr.drain_reason(failed) if failed else None
        node['slurm_state'] = {'before': 'IDLE', 'after': 'DRAIN' if node['drained'] else 'IDLE', 'reason_before': None}
        node['raw'] = {'nccl': {'busbw': single[name]['busbw'], 'nccl': {'rows': nccl_rows(single[name]['busbw'])}}}
    multi_busbw = round(min(ordered) * 0.77, 1)
    doc = {
        'schema': vr.SCHEMA,
        'run': {'started': started, 'finished': finished, 'inventory': inventory, 'collection_version': '0.1.0',
                'mode': mode, 'checks': ['ib', 'fabric', 'perftest', 'net', 'gpu', 'nccl'], 'parameters': dict(PARAMETERS)},
        'summary': vr.summarize(nodes),
        'nodes': nodes,
        'fabric': {'links': links, 'degraded': [link for link in links if link['degraded']]},
        'perftest': {'rounds': rounds, 'pairs': pairs},
        'nccl': {'single_node': single, 'fleet_median': median,
                 'multi_node': {'nodes': list(names), 'busbw': multi_busbw, 'threshold': MULTI_NODE_THRESHOLD,
                                'passed': multi_busbw >= MULTI_NODE_THRESHOLD}},
    }
    return doc


def scatter_faults(count, per_kind=2, seed=7, hcas=8, gpus=8):
    """A few faults of every kind on random nodes of a large fleet."""
    rng = random.Random(seed)
    names = node_names(count)
    faults = []
    for kind in FAULT_KINDS:
        for _index in range(per_kind):
            faults.append((kind, rng.choice(names), rng.randrange(hcas if kind in ('link_width', 'hca_bw_low', 'port_down',
                                                                                   'fw_odd') else gpus)))
    return faults
