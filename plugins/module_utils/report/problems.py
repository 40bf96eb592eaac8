# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a customer reads first: the physical problems of a run, and what every planned check did on every node.

``physical_problems(doc)`` folds the failing check results into one entry per
physical problem: a cable trained at 1X fails ``fabric.link_width``,
``ib.port_rate`` and the HCA's perftest pairs, and is one problem with both ends
named (the node's HCA, which the gate blamed, and the switch port it is
cabled to), the checks it caused listed under it and one action. A GPU with an
Xid and ECC errors is one problem; a node-level consequence (a slow NCCL
figure, a failed ``dcgmi diag``) joins the node's one hardware problem when it
has exactly one, else stands on its own.

``check_states(doc)`` says for every node and every planned check (the checks
the run made on any node) whether it passed, failed, was skipped (the check
said why: link counters read with no traffic in between, an area not run) or
was not tested (the node ran jobs and the active tests left it alone, or it did
not answer).
Pure functions only: no I/O.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils.slurm import hostlist_sort_key
from ansible_collections.aicluster.infra.plugins.module_utils.verify.checks import AREAS, CHECKS, VERIFY_AREAS
from ansible_collections.aicluster.infra.plugins.module_utils.report._text import (
    CLUSTER, check_order, fmt, gpu_of, hca_of, node_results, sort_nodes)

# The check that names a port problem, most telling first: a port that is down explains everything after it.
PORT_LEAD = ('ib.hca_present', 'ib.port_state', 'fabric.link_width', 'fabric.link_speed', 'ib.port_rate', 'ib.link_layer',
             'ib.link_errors', 'ib.ber', 'ib.roce_drops', 'net.rdma_mtu', 'net.mtu', 'perftest.write_bw', 'perftest.read_bw',
             'perftest.gpudirect_bw', 'perftest.write_lat')
GPU_LEAD = ('gpu.xid', 'gpu.ecc', 'gpu.row_remap', 'gpu.retired_pages', 'gpu.nvlink', 'gpu.nvlink_errors', 'gpu.pcie_link',
            'gpu.clock_events', 'gpu.power_limit', 'gpu.ecc_mode', 'gpu.fabric_state')
# Checks that compare a node with the fleet: one software problem per node.
SOFTWARE = ('ib.firmware_uniform', 'ib.ofed_uniform', 'gpu.driver_uniform', 'gpu.model')
# Node-level consequences: they join the node's one hardware problem.
CONSEQUENCES = ('nccl.busbw', 'nccl.slow_node', 'nccl.wrong', 'gpu.dcgm_diag', 'perftest.gpudirect_bw')
# The active tests a busy node (one running jobs) is left out of.
ACTIVE_AREAS = ('perftest', 'nccl')
ACTIVE_CHECKS = ('gpu.dcgm_diag', 'ib.link_errors', 'ib.ber', 'ib.roce_drops', 'gpu.nvlink_errors')
KIND_TITLES = {'port': 'HCA port and its link', 'gpu': 'GPU', 'gpus': "the node's GPUs", 'software': 'software and firmware',
               'nccl': 'NCCL', 'node': 'node', 'cluster': 'fleet', 'other': 'check'}
STATES = ('passed', 'failed', 'skipped', 'not tested')


def _key(row):
    """The physical thing a failing row is about: (kind, node, part)."""
    node, check, subject = row['node'], str(row.get('check') or ''), row.get('subject')
    area = row.get('area') or (CHECKS[check].area if check in CHECKS else '')
    if node in (CLUSTER, 'fleet'):
        return ('cluster', node, '%s %s' % (check, subject))
    if check == 'node.reachable':
        return ('node', node, '')
    if check in SOFTWARE:
        return ('software', node, '')
    if area in ('ib', 'fabric', 'perftest', 'net') and subject not in (None, 'node') and hca_of(subject):
        if check != 'net.mtu' or str(hca_of(subject)).startswith(('mlx', 'ib', 'bnxt', 'irdma')):
            return ('port', node, hca_of(subject))
    gpu = gpu_of(subject) if area == 'gpu' else None
    if gpu is not None:
        return ('gpu', node, gpu)
    if area == 'gpu':
        return ('gpus', node, '')
    if area == 'nccl':
        return ('nccl', node, '')
    return ('other', node, check)


def _lead(rows, order):
    rank = dict((check, position) for position, check in enumerate(order))
    return sorted(rows, key=lambda row: (rank.get(row['check'], len(order)), check_order(row['check']),
                                         str(row.get('subject'))))[0]


def _end_name(node, part, kind):
    if kind == 'port':
        return '%s %s' % (node, part)
    if kind == 'gpu':
        return '%s GPU %s' % (node, part)
    return node


def _perftest_peer(row):
    """(partner node, partner HCA) of a perftest row: ``mlx5_3 -> gpu02 mlx5_3``."""
    partner = row.get('partner')
    subject = str(row.get('subject') or '')
    if not partner or '->' not in subject:
        return None
    words = subject.split('->', 1)[1].split(',')[0].split()
    return (partner, words[1] if len(words) > 1 else hca_of(subject))


def _merge_partner_perftest(groups):
    """A perftest failure recorded on the healthy end of a pair (results.json before the gate blamed one side)
    joins the partner's link problem when that partner has one."""
    for key in list(groups):
        if key[0] != 'port' or key not in groups:
            continue
        rows = groups[key]
        if any(not str(row['check']).startswith('perftest.') for row in rows):
            continue
        peers = set(_perftest_peer(row) for row in rows) - set([None])
        targets = [('port',) + peer for peer in peers
                   if ('port',) + peer in groups and any(not str(row['check']).startswith('perftest.')
                                                         for row in groups[('port',) + peer])]
        if len(targets) == 1:
            groups[targets[0]].extend(rows)
            del groups[key]


def _merge_consequences(groups):
    """Node-level consequences join the node's one hardware problem."""
    hardware = {}
    for key in groups:
        if key[0] in ('port', 'gpu', 'gpus'):
            hardware.setdefault(key[1], []).append(key)
    for key in list(groups):
        if key[0] not in ('nccl', 'gpus') or key not in groups:
            continue
        movable = [row for row in groups[key] if row['check'] in CONSEQUENCES]
        targets = [other for other in hardware.get(key[1], []) if other != key]
        if not movable or len(targets) != 1:
            continue
        groups[targets[0]].extend(movable)
        rest = [row for row in groups[key] if row['check'] not in CONSEQUENCES]
        if rest:
            groups[key] = rest
        else:
            del groups[key]


def _ends(kind, node, part, rows):
    """(blamed end, the other end or ends): an HCA port and its switch port; a perftest HCA and its partners."""
    blamed = _end_name(node, part, kind)
    others = []
    for row in rows:
        peer = row.get('peer')
        if kind == 'port' and peer and peer not in others:
            others.append(str(peer))
    if kind == 'port' and not others:
        partners = []
        for row in rows:
            if row['node'] != node:
                continue
            found = _perftest_peer(row)
            for name in row.get('partners') or ([found[0]] if found else []):
                text = '%s %s' % (name, found[1] if found and found[0] == name else part)
                if text not in partners:
                    partners.append(text)
        others = sorted(partners, key=hostlist_sort_key)
    for row in rows:
        if row['node'] != node and _end_name(row['node'], hca_of(row.get('subject')), 'port') not in others:
            others.append(_end_name(row['node'], hca_of(row.get('subject')), 'port'))
    return blamed, others


def physical_problems(failing):
    """One entry per physical problem from the failing check rows (``figures.failing_checks``), in node order.

    An entry: ``kind`` (port, gpu, gpus, software, nccl, node, cluster, other),
    ``node``, ``blamed`` (the end the checks point at), ``ends`` (the other end:
    the switch port a link is cabled to, or the partners a perftest HCA failed
    with; shown neutral), ``lead`` (the check that names the problem),
    ``title``, ``action`` (the lead check's next action) and ``rows`` (every
    failing check it caused, lead first)."""
    groups = {}
    order = []
    for row in failing:
        key = _key(row)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(row)
    _merge_partner_perftest(groups)
    _merge_consequences(groups)
    problems = []
    for key in order:
        if key not in groups:
            continue
        kind, node, part = key
        rows = groups[key]
        lead = _lead(rows, PORT_LEAD if kind == 'port' else GPU_LEAD if kind in ('gpu', 'gpus') else ())
        ordered = sorted(rows, key=lambda row: (check_order(row['check']), hostlist_sort_key(row['node']), str(row.get('subject'))))
        rows = [lead] + [row for row in ordered if row is not lead]
        blamed, others = _ends(kind, node, part, rows) if kind not in ('cluster',) else (str(lead.get('subject')), [])
        problems.append({
            'kind': kind, 'node': node, 'blamed': blamed, 'ends': others, 'lead': lead['check'],
            'title': '%s: %s' % (blamed if kind != 'cluster' else 'fleet', _lead_text(lead)),
            'action': lead.get('action') or '', 'rows': rows,
            'checks': sorted(set(row['check'] for row in rows), key=check_order),
        })
    problems.sort(key=lambda problem: (problem['node'] in (CLUSTER, 'fleet'), hostlist_sort_key(problem['node']),
                                       check_order(problem['lead']), problem['blamed']))
    return problems


def _lead_text(row):
    check = row['check']
    measured, threshold, unit = row.get('measured'), row.get('threshold'), row.get('unit')
    if measured is None and threshold is None:
        return CHECKS[check].description if check in CHECKS else check
    return '%s %s, expected %s' % (check, fmt(measured, unit), fmt(threshold, unit))


def _planned(doc):
    """The planned checks: every check id some node (or the fleet) has a result of, in check order."""
    seen = set(result.get('check') for _node, result in node_results(doc) if result.get('check'))
    seen.discard('node.reachable')
    return sorted(seen, key=check_order)


def _unreachable(entry):
    results = entry.get('results') or []
    return bool(results) and all(result.get('check') == 'node.reachable' for result in results) and not all(
        result.get('passed', True) for result in results)


def _active(check):
    return (CHECKS[check].area if check in CHECKS else '') in ACTIVE_AREAS or check in ACTIVE_CHECKS


def _by_check(entry):
    index = {}
    for result in entry.get('results') or []:
        index.setdefault(result.get('check'), []).append(result)
    return index


def node_check_state(doc, node, check, index=None):
    """(state, reason) of one planned check on one node: state is one of STATES. ``index``: the node's results by
    check id, when the caller has it."""
    entry = (doc.get('nodes') or {}).get(node) or {}
    if _unreachable(entry):
        return 'not tested', 'the node did not answer'
    results = (index if index is not None else _by_check(entry)).get(check) or []
    if any(not result.get('passed', True) for result in results):
        return 'failed', ''
    made = [result for result in results if not result.get('skipped')]
    if made:
        return 'passed', ''
    if results:
        return 'skipped', str(results[0].get('skipped') if results[0].get('skipped') not in (True, None) else
                              results[0].get('message') or 'not checked')
    if entry.get('busy') and _active(check):
        return 'not tested', 'running jobs: the active tests left it alone'
    area = CHECKS[check].area if check in CHECKS else None
    if area and area not in ((doc.get('run') or {}).get('checks') or AREAS) and area != 'node':
        return 'skipped', 'area %s not run' % area
    return 'not tested', 'no result on this node'


def check_states(doc):
    """Per planned check: counts per state and the reasons with their nodes; per node: check -> (state, reason).

    Returns ``{'checks': [{check, area, what, counts: {state: n}, reasons: [(state, reason, [nodes])]}],
    'nodes': {node: {check: (state, reason)}}, 'totals': {state: n}, 'not_run': [areas]}``; ``not_run`` are the
    verify areas that did not run at all in this run (run.checks)."""
    nodes = sort_nodes((doc.get('nodes') or {}).keys())
    planned = _planned(doc)
    per_node = dict((node, {}) for node in nodes)
    indexes = dict((node, _by_check(doc['nodes'][node])) for node in nodes)
    cluster_checks = set(result.get('check') for name, result in node_results(doc) if name == CLUSTER)
    rows = []
    totals = dict((state, 0) for state in STATES)
    for check in planned:
        counts = dict((state, 0) for state in STATES)
        reasons = {}
        cluster_only = check in cluster_checks and all(check not in indexes[node] for node in nodes)
        if cluster_only:
            for name, result in node_results(doc):
                if name == CLUSTER and result.get('check') == check:
                    state = 'failed' if not result.get('passed', True) else ('skipped' if result.get('skipped') else 'passed')
                    counts[state] += 1
        else:
            for node in nodes:
                state, reason = node_check_state(doc, node, check, indexes[node])
                per_node[node][check] = (state, reason)
                counts[state] += 1
                if reason:
                    reasons.setdefault((state, reason), []).append(node)
        for state in STATES:
            totals[state] += counts[state]
        rows.append({'check': check, 'area': CHECKS[check].area if check in CHECKS else 'other',
                     'what': CHECKS[check].description if check in CHECKS else check, 'counts': counts,
                     'reasons': [(state, reason, members) for (state, reason), members in sorted(reasons.items())]})
    ran = (doc.get('run') or {}).get('checks')
    not_run = [area for area in VERIFY_AREAS if area != 'node' and ran is not None and area not in ran]
    return {'checks': rows, 'nodes': per_node, 'totals': totals, 'not_run': not_run}


def problem_counts(problems):
    """How many problems, on how many nodes (the fleet counted once), with how many failing checks."""
    return {'problems': len(problems), 'nodes': len(set(problem['node'] for problem in problems)),
            'checks': sum(len(problem['rows']) for problem in problems)}
