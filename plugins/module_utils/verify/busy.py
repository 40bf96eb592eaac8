# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Before any measurement: which nodes run jobs (the active tests skip them) and which idle ones to reserve.

roles/verify_gate/tasks/busy.yml reads ``scontrol show node`` once and calls
``plan`` (filter ``verify_busy_plan``); with a reservation wanted it makes a
maintenance reservation on ``reserve`` (module slurm_reservation), reads the
nodes again and calls ``plan`` once more with what the module did: a job that
started between the first read and the reservation keeps its node busy (the
reservation's IGNORE_JOBS lets it run on), and no job starts on a reserved node
after that, so the second answer holds until the reservation is released.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils.verify import gate


def _slurm_nodes(read):
    """scontrol entries from slurm_node_info's registered result (or its ``nodes`` list); None when Slurm was not read."""
    if read is None:
        return None
    if isinstance(read, list):
        return read
    if read.get('skipped') or read.get('failed') or not isinstance(read.get('nodes'), list):
        return None
    return read['nodes']


def _on(value):
    """A switch as Ansible may hand it over (bool, or text such as ``False``)."""
    if isinstance(value, str):
        return value.strip().lower() in ('yes', 'true', 'on', '1', 'y')
    return bool(value)


def _made(reserved):
    """The reservation the module made or kept (not in check mode): its name, or None."""
    if not isinstance(reserved, dict) or reserved.get('skipped') or reserved.get('failed'):
        return None
    return reserved.get('name') if reserved.get('reservation') else None


def plan(read, expected):
    """The busy nodes and the reservation plan.

    ``read``: slurm_node_info's registered result (skipped or failed: Slurm unknown, nothing is busy).
    ``expected``: ``nodes`` (the play's nodes, in order), ``slurm_names`` (node -> Slurm NodeName when it
    differs), ``busy`` (V(skip): nodes running jobs skip the active tests; V(test): none is busy),
    ``reservation`` (bool: reserve the nodes that will be tested), ``reserved`` (the second call: the
    slurm_reservation result) and ``previous`` (the second call: the first plan, kept when Slurm cannot be
    read again).

    Returns ``{'busy': [node], 'reserve': [Slurm NodeName], 'reservation': name or None, 'reserved': [node],
    'raced': [node], 'unknown': [node]}``: ``reserve`` is what to reserve (the first call only): every node
    Slurm knows and that does not run jobs (in mode test every node Slurm knows); ``reservation`` the name of
    the reservation the active tests run in and ``reserved`` its nodes; ``raced`` the nodes that started a
    job between the two reads (busy, not tested); ``unknown`` the nodes Slurm does not list.
    """
    nodes = list(expected.get('nodes') or [])
    names = dict((node, (expected.get('slurm_names') or {}).get(node) or node) for node in nodes)
    previous = expected.get('previous') or {}
    slurm_nodes = _slurm_nodes(read)
    out = {'busy': list(previous.get('busy') or []), 'reserve': [], 'reservation': None, 'reserved': [], 'raced': [],
           'unknown': list(previous.get('unknown') or [])}
    if slurm_nodes is not None:
        known = set(entry.get('NodeName') for entry in slurm_nodes)
        out['unknown'] = [node for node in nodes if names[node] not in known]
        out['busy'] = gate.busy(slurm_nodes, nodes, expected.get('slurm_names')) if expected.get('busy', 'skip') == 'skip' else []
        if previous:
            out['raced'] = [node for node in out['busy'] if node not in (previous.get('busy') or [])]
    if 'reserved' in expected:
        made = _made(expected.get('reserved'))
        if made:
            wanted = set((expected.get('reserved') or {}).get('nodes') or [])
            out['reservation'] = made
            out['reserved'] = [node for node in nodes if names[node] in wanted]
    elif slurm_nodes is not None and _on(expected.get('reservation')):
        out['reserve'] = [names[node] for node in nodes if node not in out['unknown'] and node not in out['busy']]
    return out
