# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""results.json from the gate's plan and what Slurm did, and the verdict table printed at the end of a run."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils.verify import gate
from ansible_collections.aicluster.infra.plugins.module_utils.verify import results as vr

# run.checks: the areas that ran, in this order
AREAS_RAN = ('ib', 'fabric', 'perftest', 'net', 'gpu', 'nccl')
# the outcomes whose checks are of area fabric besides the link read's (fabric.sm, fabric.partition, fabric.switch_errors)
FABRIC_OUTCOMES = ('sm', 'switch')


# what scontrol prints for a node whose slurmd never registered
_NO_SLURM_VERSION = ('', '(null)', 'n/a')


def _raw_infos(raw):
    return ((raw.get('gpu') or {}).get('gpu_info') or {}), ((raw.get('ib_info') or {}).get('ib_info') or {})


def slurm_version(slurm_node):
    """The Slurm version a node's slurmd registered with (``Version=`` of its ``scontrol show node`` entry), or None."""
    version = str((slurm_node or {}).get('Version') or '').strip()
    return None if version.lower() in _NO_SLURM_VERSION else version


def versions(node_facts, raw, slurm_node=None):
    """What a node runs (the report's version matrix): OS and kernel from its facts, Slurm from its ``scontrol show
    node`` entry (``slurm_node``; None: Slurm not read), the rest from its raw results."""
    if not node_facts:
        return {}
    gpu_info, ib_info = _raw_infos(raw)
    gpus = gpu_info.get('gpus') or []
    return {
        'os': node_facts.get('os'), 'kernel': node_facts.get('kernel'),
        'driver': gpu_info.get('driver_version'), 'cuda': gpu_info.get('cuda_version'),
        'gpu_model': gpus[0].get('name') if gpus else None, 'gpu_count': gpu_info.get('count'),
        'ofed': ib_info.get('ofed_version'),
        'hca_firmware': dict((ca.get('name'), ca.get('firmware_version')) for ca in ib_info.get('hcas') or []),
        'slurm': slurm_version(slurm_node),
    }


def inventory(raw):
    """What a node is made of, by serial number and firmware (results.json ``nodes.<node>.inventory``), from its raw
    results: the system's DMI identity and each GPU's serial and VBIOS (gpu_info), each HCA's PSID and firmware
    (ib_info). ``{}`` when neither was read."""
    gpu_info, ib_info = _raw_infos(raw)
    if not gpu_info and not ib_info:
        return {}
    system = gpu_info.get('system')
    return {
        'system': dict((key, system.get(key)) for key in ('vendor', 'product', 'serial')) if isinstance(system, dict) else None,
        'gpus': [{'index': gpu.get('index'), 'uuid': gpu.get('uuid'), 'serial': gpu.get('serial'),
                  'vbios': gpu.get('vbios_version'), 'board_part_number': gpu.get('board_part_number')}
                 for gpu in gpu_info.get('gpus') or []],
        'hcas': [{'name': ca.get('name'), 'ca_type': ca.get('ca_type'), 'psid': ca.get('board_id'),
                  'firmware': ca.get('firmware_version')}
                 for ca in ib_info.get('hcas') or []],
    }


def checks_ran(outcomes, first):
    """The areas whose role ran (results.json run.checks); net when the first node has an MTU result."""
    ran = []
    for area in AREAS_RAN:
        if area == 'net':
            own = ((outcomes.get('ib') or {}).get('nodes') or {}).get(first) or []
            if any(result.get('check') == 'net.mtu' for result in own):
                ran.append(area)
        elif outcomes.get(area) or (area == 'fabric' and any(outcomes.get(name) for name in FABRIC_OUTCOMES)):
            ran.append(area)
    return ran


def parameters(outcomes):
    """Every parameter that changes a figure, from the outcomes that ran (results.json run.parameters)."""
    out = {}
    for name in gate.OUTCOMES:
        out.update((outcomes.get(name) or {}).get('parameters') or {})
    return out


def _nccl_section(outcomes):
    nccl = outcomes.get('nccl') or {}
    return {'single_node': nccl.get('single_node') or {}, 'fleet_median': nccl.get('fleet_median'),
            'multi_node': nccl.get('multi_node')}


def document(plan, run, slurm_results=None):
    """The whole results.json: ``plan`` (``verify_gate_plan``'s: nodes, actions, outcomes, first), ``run``
    (started, finished, inventory, collection_version, mode, slurm) and ``slurm_results`` (node -> slurm_node result).
    Raises ValueError when the document does not validate."""
    outcomes = plan.get('outcomes') or {}
    nodes = gate.apply(plan['nodes'], plan.get('actions') or {}, slurm_results)
    run = dict(run, checks=checks_ran(outcomes, plan.get('first')), parameters=parameters(outcomes))
    fabric = (outcomes.get('fabric') or {}).get('summary')
    perftest = (outcomes.get('perftest') or {}).get('summary')
    cluster = vr.cluster_section(list(plan.get('cluster') or []))
    doc = {'schema': vr.SCHEMA, 'run': run, 'summary': vr.summarize(nodes, cluster), 'cluster': cluster, 'nodes': nodes,
           'fabric': fabric or {'links': [], 'degraded': []}, 'perftest': perftest or {'rounds': [], 'pairs': []},
           'nccl': _nccl_section(outcomes)}
    problems = vr.validate_results(doc)
    if problems:
        raise ValueError('the results do not validate: %s' % '; '.join(problems[:10]))
    return doc


def table(doc):
    """Verdict table lines: node, verdict, Slurm action, failed checks; then the verdict line."""
    rows = [('node', 'verdict', 'slurm', 'failed checks')]
    for node, data in sorted(doc['nodes'].items()):
        failed = [r for r in data['results'] if not r['passed']]
        slurm = 'drained' if data.get('drained') else ('resumed' if data.get('resumed') else (
            'kept drained' if gate.is_drained((data.get('slurm_state') or {}).get('after')) else '-'))
        detail = '; '.join('%s %s: %s' % (r['check'], r['subject'], r['measured']) for r in failed[:4])
        if len(failed) > 4:
            detail += '; +%d more' % (len(failed) - 4)
        rows.append((node, 'PASS' if data['passed'] else 'FAIL', slurm, detail or '-'))
    for result in (doc.get('cluster') or {}).get('results') or []:
        if not result['passed']:
            rows.append(('cluster', 'FAIL', '-', '%s: %s' % (result['check'], result['message'])))
    widths = [max(len(str(row[i])) for row in rows) for i in range(3)]
    lines = ['%-*s  %-*s  %-*s  %s' % (widths[0], r[0], widths[1], r[1], widths[2], r[2], r[3]) for r in rows]
    summary = doc['summary']
    lines.append('verdict %s: %d nodes, %d passed, %d failed, %d drained, %d resumed%s' % (
        summary['verdict'], summary['nodes'], summary['passed'], summary['failed'], summary['drained'],
        summary['resumed'], ', %d cluster-level failures (no node drained for them)' % summary['cluster_failed']
        if summary.get('cluster_failed') else ''))
    return lines


def plan_gate(variables, slurm_nodes, expected):
    """The gate's decision: ``variables`` (a host's variables holding the outcome facts of ``gate.OUTCOME_FACTS``),
    ``slurm_nodes`` (scontrol entries; None: no Slurm) and
    ``expected``: ``nodes`` (every node of the play, reachable or not, in order), ``facts`` (node -> {os, kernel}
    of the nodes that answered), ``mode``, ``slurm_names``, ``max_drain_fraction`` (the breaker; None: off) and
    ``busy`` (the nodes that ran jobs when the run started: no active test ran there). Returns the plan ``document`` takes, with ``ready``:
    the nodes that pass and Slurm has in service."""
    outcomes = gate.outcomes_of(variables)
    nodes = list(expected.get('nodes') or [])
    facts = expected.get('facts') or {}
    by_name = dict((entry.get('NodeName'), entry) for entry in slurm_nodes or [])
    names = expected.get('slurm_names') or {}
    collected = gate.collect(nodes, outcomes, versions=dict(
        (node, versions(facts.get(node), gate.raw_of(node, outcomes), by_name.get(names.get(node) or node)))
        for node in nodes))
    for node in nodes:
        collected[node]['inventory'] = inventory(collected[node]['raw'])
    first = expected.get('first') or (nodes[0] if nodes else None)
    actions = None
    max_fraction = expected.get('max_drain_fraction')
    tripped = gate.breaker(collected, max_fraction)
    if slurm_nodes is not None:
        actions = gate.plan(collected, slurm_nodes, expected.get('mode') or 'drain', expected.get('slurm_names'),
                            ran=checks_ran(outcomes, first), max_fraction=max_fraction)
    cluster = gate.cluster_results(outcomes)
    for extra in (gate.busy_result([node for node in nodes if node in (expected.get('busy') or [])], len(nodes)),
                  gate.breaker_result(tripped, len(collected))):
        if extra is not None:
            cluster.append(extra)
    for node in expected.get('busy') or []:
        if node in collected:
            collected[node]['busy'] = True
    return {'nodes': collected, 'actions': actions, 'outcomes': outcomes, 'first': first, 'cluster': cluster,
            'breaker': tripped, 'ready': gate.ready(nodes, outcomes, slurm_nodes)}


def run_gate(variables, slurm_nodes, expected, run, act=None):
    """The whole gate, as the verify_gate action runs it: plan, act in Slurm, the document.

    ``act``: called with the plan's actions (node -> action) when there are
    any; returns node -> the slurm_node result. Returns ``(document, plan,
    slurm_results)``.
    """
    plan = plan_gate(variables, slurm_nodes, expected)
    run = dict(run, mode=expected.get('mode') or 'drain')
    document(plan, run)  # a document that would not validate stops the gate before it changes anything in Slurm
    slurm_results = (act(plan['actions']) if act is not None else {}) if plan['actions'] else {}
    return document(plan, run, slurm_results), plan, slurm_results
