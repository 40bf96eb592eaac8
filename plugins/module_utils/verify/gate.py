# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gate: every area's outcome joined per node, what to do in Slurm, and the results document.

The check roles each leave one outcome in a host fact (``OUTCOME_FACTS``:
``{'fleet', 'nodes', 'raw', 'parameters', ...}``). ``plan`` joins them per
node and decides drain/resume/keep for each; ``document`` applies what Slurm
did and builds results.json; ``ready`` picks the nodes the multi-node NCCL
run may use.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.verify import results as vr
from ansible_collections.aicluster.infra.plugins.module_utils.verify.checks import CHECKS

# Each check role leaves its outcome in one host fact (set once for the play); the order is the order of a node's
# results in results.json: every outcome's fleet-wide results, then each node's own.
OUTCOME_FACTS = (('ib', 'verify_ib_outcome'), ('fabric', 'verify_ib_fabric_outcome'), ('sm', 'verify_ib_sm_outcome'),
                 ('perftest', 'verify_perftest_outcome'), ('gpu', 'verify_gpu_outcome'), ('nccl', 'verify_nccl_outcome'),
                 ('link', 'verify_ib_link_outcome'), ('switch', 'verify_ib_switch_outcome'),
                 ('roce', 'verify_ib_roce_outcome'), ('lossless', 'verify_perftest_lossless_outcome'))
OUTCOMES = tuple(area for area, dummy in OUTCOME_FACTS)
# results.json nodes.<node>.raw: key -> the outcome whose raw it is
RAW = (('ib_info', 'ib'), ('gpu', 'gpu'), ('nccl', 'nccl'), ('link', 'link'))
_REASON_STAMP_RE = re.compile(r'\s*\[[^\]\[@]*@[^\]\[]*\]\s*$')
_UNREACHABLE = 'no check result: the node was unreachable or every check failed to run; see the play output'


def strip_reason_stamp(reason):
    """``aicluster: gpu.xid GPU 3 [root@2026-01-06T10:02:33]`` -> ``aicluster: gpu.xid GPU 3``; None stays None."""
    if reason is None:
        return None
    return _REASON_STAMP_RE.sub('', reason).strip() or None


def is_drained(state):
    """Whether a Slurm node state (``IDLE+DRAIN``, ``DRAINED``, ``MIXED+DRAIN``) carries the drain flag."""
    parts = re.split(r'[+*~#!%$@^-]', (state or '').upper())
    return any(part in ('DRAIN', 'DRAINED', 'DRAINING') for part in parts)


def is_own_reason(reason, prefix=vr.DRAIN_PREFIX):
    """Whether a Slurm reason was set by this gate (starts with the prefix)."""
    return (reason or '').strip().startswith(prefix)


def outcomes_of(variables):
    """area -> outcome from a host's variables (the facts the check roles set); an area whose role did not run is absent."""
    out = {}
    for area, fact in OUTCOME_FACTS:
        value = variables.get(fact) if hasattr(variables, 'get') else None
        if value:
            out[area] = value
    return out


def _present(outcomes):
    return [(name, outcomes[name]) for name in OUTCOMES if (outcomes or {}).get(name)]


def results_by_node(nodes, outcomes):
    """node -> its results from every outcome: fleet-wide ones first, then the node's own, in ``OUTCOMES`` order."""
    present = _present(outcomes)
    out = {}
    for node in nodes:
        results = []
        for scope in ('fleet', 'nodes'):
            for dummy, outcome in present:
                results.extend((outcome.get(scope) or {}).get(node) or [])
        out[node] = results
    return out


def cluster_results(outcomes):
    """The cluster-level results of every outcome (its optional ``cluster`` list), in ``OUTCOMES`` order: what
    belongs to no single node fails the acceptance verdict and never drains anyone."""
    out = []
    for dummy, outcome in _present(outcomes):
        out.extend(outcome.get('cluster') or [])
    return out


def raw_of(node, outcomes):
    """results.json ``nodes.<node>.raw``: what the node's tools reported, per outcome that has it."""
    present = dict(_present(outcomes))
    return dict((key, present[name]['raw'][node]) for key, name in RAW
                if name in present and node in (present[name].get('raw') or {}))


def collect(nodes, outcomes, versions=None):
    """results.json ``nodes`` before the gate acts: node -> {passed, results, raw, versions, ...}.

    A node with no result at all fails (it was unreachable or every check errored).
    """
    joined = results_by_node(nodes, outcomes)
    out = {}
    for node in nodes:
        results = joined[node] or [vr.new_result('node.reachable', 'node', 'no results', 'results', False, _UNREACHABLE)]
        out[node] = {
            'passed': all(r['passed'] for r in results), 'drained': False, 'resumed': False, 'drain_reason': None,
            'slurm_state': {'before': None, 'after': None, 'reason_before': None},
            'versions': (versions or {}).get(node) or {}, 'results': results, 'raw': raw_of(node, outcomes),
        }
    return out


def checks_in_reason(reason, prefix=vr.DRAIN_PREFIX):
    """The check ids a drain reason of this gate names: ``aicluster: gpu.xid GPU 3; ib.port_state mlx5_0:1`` ->
    ``['gpu.xid', 'ib.port_state']`` (a part cut off by Slurm's length limit is left out)."""
    text = (reason or '').strip()
    if not text.startswith(prefix):
        return []
    ids = []
    for part in text[len(prefix):].split(';'):
        words = part.split()
        if words and not part.rstrip().endswith('...') and words[0] not in ids:
            ids.append(words[0])
    return ids


def _unchecked(reason, ran, prefix, results=None):
    """The checks a drain reason names that this run did not make on this node: their area did not run (``ran``),
    the node has no result of that area (a busy node skipped by the active tests), every result of the check is
    "not checked" (``skipped``: e.g. link counters read with no traffic in between), or the id is unknown. A check
    the node has a result of (not skipped) was made, whatever role made it: net.lossless (area net) comes from
    verify_perftest, so a ``--tags verify_perftest,verify_gate`` run that passes it resumes its drain."""
    if ran is None:
        return []
    areas = set(ran) | set(['node'])
    not_made = set()
    made = set()
    if results is not None:
        areas &= set(result.get('area') for result in results) | set(['node'])
        made = set(result.get('check') for result in results if not result.get('skipped'))
        not_made = set(result.get('check') for result in results if result.get('skipped')) - made
    return [check for check in checks_in_reason(reason, prefix)
            if check not in CHECKS or (CHECKS[check].area not in areas and check not in made) or check in not_made]


def _action(data, entry, name, mode, prefix, ran=None):
    action = {'action': 'none', 'reason': None, 'slurm_name': name, 'state': None, 'reason_before': None, 'note': None}
    if entry is None:
        action['note'] = 'not a Slurm node (scontrol does not know %s)' % name
        return action
    state = entry.get('State')
    reason = strip_reason_stamp(entry.get('Reason'))
    action.update(state=state, reason_before=reason)
    drained = is_drained(state)
    own = drained and reason is not None and reason.startswith(prefix)
    if data.get('passed'):
        unchecked = _unchecked(reason, ran, prefix, data.get('results')) if own else []
        if unchecked:
            action['note'] = ('passes the checks that ran, but its drain names %s, which this run did not check: left drained'
                              % ', '.join(unchecked))
        elif own:
            action.update(action='resume', note='passes now; resuming the gate\'s own drain (%s)' % reason)
        elif drained:
            action['note'] = 'passes, but drained by someone else (%s): left drained' % (reason or 'no reason')
        return action
    wanted = vr.drain_reason([r for r in data.get('results') or [] if not r.get('passed')])
    if mode != 'drain':
        action['note'] = 'fails; mode %s does not drain' % mode
    elif drained and not own:
        action['note'] = 'fails, and is already drained by someone else (%s): their reason is kept' % (reason or 'no reason')
    elif own and reason == wanted:
        action['note'] = 'already drained by the gate for the same reason'
    else:
        action.update(action='drain', reason=wanted)
    return action


def breaker(nodes, max_fraction):
    """The circuit breaker: the checks that more than ``max_fraction`` of the nodes (and at least two) fail.

    A fault shared by that many nodes is not a node fault (a bad image, a switch, a wrong threshold, an
    upgrade half done): draining them all would take the fleet down for one cause. Returns
    ``{'tripped', 'max_fraction', 'checks': {check: [nodes]}}``; ``max_fraction`` None or >= 1 never trips.
    """
    failing = {}
    for node, data in sorted(nodes.items()):
        for check in sorted(set(r['check'] for r in data.get('results') or [] if not r.get('passed'))):
            failing.setdefault(check, []).append(node)
    limit = None if max_fraction in (None, '') or float(max_fraction) >= 1 else float(max_fraction) * len(nodes)
    over = dict((check, found) for check, found in failing.items()
                if limit is not None and len(found) >= 2 and len(found) > limit)
    return {'tripped': bool(over), 'max_fraction': max_fraction, 'checks': over}


def breaker_result(tripped, total):
    """The cluster-level result that says the breaker tripped (None when it did not)."""
    if not tripped['tripped']:
        return None
    parts = ['%s on %d of %d nodes' % (check, len(found), total) for check, found in sorted(tripped['checks'].items())]
    return vr.new_result('node.drain_breaker', 'cluster', len(max(tripped['checks'].values(), key=len)),
                         '%s of %d nodes' % (tripped['max_fraction'], total), False,
                         'the drain breaker tripped (%s; verify_gate_max_drain_fraction %s): a failure that wide is a '
                         'cluster problem, not a node fault, so no node was drained; fix the common cause, or raise the '
                         'fraction if these nodes really are bad' % ('; '.join(parts), tripped['max_fraction']))


def plan(nodes, slurm_nodes, mode, slurm_names=None, prefix=vr.DRAIN_PREFIX, ran=None, max_fraction=None):
    """What the gate does in Slurm: node -> {action, reason, slurm_name, state, reason_before, note}.

    ``nodes``: results.json nodes (``passed``, ``results``). ``slurm_nodes``:
    parsed ``scontrol show node`` entries. ``mode``: drain, fail or report
    (only ``drain`` drains; every mode resumes the gate's own drains of nodes
    that now pass, and nothing it did not drain). ``slurm_names``: node ->
    its Slurm NodeName where they differ. Actions: ``drain``, ``resume``,
    ``none``; a node unknown to Slurm gets ``none`` with a note. ``ran``: the
    areas this run checked (None: all); a node is only resumed when every check
    its drain reason names was made again (a subset run, such as
    ``--tags verify_ib,verify_gate``, never resumes a node drained for a GPU fault).
    ``max_fraction``: the circuit breaker (see ``breaker``); when it trips no node is drained (resumes still happen).
    """
    by_name = dict((entry.get('NodeName'), entry) for entry in slurm_nodes or [])
    tripped = breaker(nodes, max_fraction)
    out = {}
    for node, data in sorted(nodes.items()):
        name = (slurm_names or {}).get(node) or node
        out[node] = _action(data, by_name.get(name), name, mode, prefix, ran)
        if tripped['tripped'] and out[node]['action'] == 'drain':
            out[node].update(action='none', reason=None,
                             note='fails, but the drain breaker tripped (%s): not drained'
                             % ', '.join(sorted(tripped['checks'])))
    return out


BUSY_RE = re.compile(r'ALLOC|MIX|COMPLETING')


def busy(slurm_nodes, nodes, slurm_names=None):
    """The nodes Slurm shows running jobs (ALLOCATED, MIXED, COMPLETING): active tests would disturb the jobs and be
    disturbed by them, so they skip these nodes, which are reported as not tested."""
    states = dict((entry.get('NodeName'), entry.get('State') or '') for entry in slurm_nodes or [])
    return [node for node in nodes if BUSY_RE.search(states.get((slurm_names or {}).get(node) or node, '').upper())]


def busy_result(nodes_busy, total):
    """The cluster-level result for the nodes that were not tested actively because they ran jobs (None: none)."""
    if not nodes_busy:
        return None
    return vr.new_result('node.tested', 'cluster', len(nodes_busy), 0, False,
                         '%d of %d nodes not tested (running jobs: %s): perftest, nccl-tests and the DCGM diagnostic '
                         'skipped them; drain them (or reserve them) and run verify again to accept them'
                         % (len(nodes_busy), total, ', '.join(nodes_busy)), nodes=list(nodes_busy))


def ready(nodes, outcomes, slurm_nodes):
    """The nodes that passed every check so far and that Slurm has in service and idle (not drained, down, failed,
    or running jobs)."""
    in_service = set(entry.get('NodeName') for entry in slurm_nodes or []
                     if not re.search('DRAIN|DOWN|FAIL', entry.get('State') or '')
                     and not BUSY_RE.search((entry.get('State') or '').upper()))
    joined = results_by_node(nodes, outcomes)
    return [node for node in nodes if joined[node] and all(r['passed'] for r in joined[node]) and node in in_service]


def apply(nodes, actions, outcomes=None):
    """results.json nodes after the gate: drained/resumed/drain_reason/slurm_state from the actions and the
    slurm_node results (``outcomes``: node -> module result)."""
    out = {}
    for node, data in nodes.items():
        data = dict(data)
        action = (actions or {}).get(node) or {}
        outcome = (outcomes or {}).get(node) or {}
        done = bool(outcome.get('changed')) and not outcome.get('failed')
        data['drained'] = action.get('action') == 'drain' and done
        data['resumed'] = action.get('action') == 'resume' and done
        data['drain_reason'] = action.get('reason') if data['drained'] else (
            action.get('reason_before') if is_own_reason(action.get('reason_before')) and not data['resumed']
            and is_drained(action.get('state')) else None)
        data['slurm_state'] = {'before': action.get('state'), 'after': outcome.get('state_after', action.get('state')),
                               'reason_before': action.get('reason_before')}
        data['gate'] = action.get('note')
        out[node] = data
    return out
