# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of aicluster.infra.verify_gate: the gate, once, on the control node (docs in plugins/modules/verify_gate.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import tempfile

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.json import AnsibleJSONEncoder
from ansible.module_utils.common.text.converters import to_bytes, to_native
from ansible.plugins.action import ActionBase

from ansible_collections.aicluster.infra.plugins.module_utils.verify import document as vd
from ansible_collections.aicluster.infra.plugins.module_utils.verify import results as vr

RUN_KEYS = ('started', 'finished', 'inventory', 'collection_version')
ARGUMENT_SPEC = dict(
    nodes=dict(type='list', elements='str', required=True),
    answered=dict(type='list', elements='str'),
    mode=dict(type='str', choices=list(vr.MODES), default='drain'),
    slurm=dict(type='bool', default=True),
    slurm_names=dict(type='dict', default={}),
    facts=dict(type='dict', default={}),
    run=dict(type='dict', required=True),
    path=dict(type='path', required=True),
    reason_prefix=dict(type='str', default=vr.DRAIN_PREFIX),
    max_drain_fraction=dict(type='float', default=0.1),
    busy=dict(type='list', elements='str', default=[]),
)


def _problems(args):
    """What the argument spec cannot say: one sentence per bad argument, naming it."""
    problems = []
    if not args['nodes']:
        problems.append("nodes must be the non-empty list of the play's nodes")
    if not args['path']:
        problems.append('path must be the results.json path on the control node')
    if not 0 < args['max_drain_fraction'] <= 1:
        problems.append('max_drain_fraction must be above 0 and at most 1 (1: never trip), got %s' % args['max_drain_fraction'])
    if any(key not in args['run'] for key in RUN_KEYS):
        problems.append('run must have %s (got %s)' % (', '.join(RUN_KEYS), ', '.join(sorted(args['run'])) or 'nothing'))
    return problems


def write_atomically(path, text):
    """Write ``text`` to ``path`` through a temporary file in the same directory and a rename."""
    directory = os.path.dirname(path) or '.'
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    handle, temp = tempfile.mkstemp(dir=directory, prefix='.results.', suffix='.tmp')
    try:
        with os.fdopen(handle, 'wb') as out:
            out.write(to_bytes(text))
        os.chmod(temp, 0o644)
        os.rename(temp, path)
    except Exception:
        if os.path.exists(temp):
            os.unlink(temp)
        raise


class ActionModule(ActionBase):
    """Joins every check role's outcome, acts in Slurm through slurm_node_info/slurm_node, writes results.json."""

    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(ARGUMENT_SPEC)

    def _slurm_nodes(self, task_vars):
        """(nodes, error) from slurm_node_info on the host the task is delegated to."""
        result = self._execute_module(module_name='aicluster.infra.slurm_node_info', module_args={}, task_vars=task_vars)
        if result.get('failed'):
            return None, result.get('msg') or 'slurm_node_info failed'
        return result.get('nodes') or [], None

    def _act(self, actions, prefix, task_vars):
        """Run slurm_node for every drain or resume; a node Slurm refuses is recorded, the others go on."""
        outcomes = {}
        for node, action in sorted((actions or {}).items()):
            if action.get('action') not in ('drain', 'resume'):
                continue
            args = {'name': action['slurm_name'], 'state': 'drained' if action['action'] == 'drain' else 'resumed',
                    'reason_prefix': prefix}
            if action['action'] == 'drain':
                args['reason'] = action['reason']
            outcomes[node] = self._execute_module(module_name='aicluster.infra.slurm_node', module_args=args,
                                                  task_vars=task_vars)
        return outcomes

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        dummy, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        problems = _problems(args)
        if problems:
            raise AnsibleActionFail('verify_gate: ' + '; '.join(problems))
        mode = args['mode']
        prefix = args['reason_prefix']
        answered = list(args.get('answered') or task_vars.get('ansible_play_hosts') or args['nodes'])
        slurm_nodes, slurm_error = (None, None)
        if args['slurm']:
            slurm_nodes, slurm_error = self._slurm_nodes(task_vars)
        run = dict((key, args['run'][key]) for key in RUN_KEYS)
        run['slurm'] = args['run'].get('slurm')
        if args['run'].get('reservation'):
            run['reservation'] = args['run']['reservation']
        try:
            doc, dummy, slurm_results = vd.run_gate(task_vars, slurm_nodes, {
                'nodes': args['nodes'], 'first': answered[0] if answered else None, 'mode': mode,
                'facts': args['facts'], 'slurm_names': args['slurm_names'],
                'max_drain_fraction': args['max_drain_fraction'], 'busy': args['busy']},
                run, lambda actions: self._act(actions, prefix, task_vars))
        except ValueError as exc:
            raise AnsibleActionFail('verify_gate: %s' % to_native(exc))
        path = args['path']
        written = False
        if not self._task.check_mode:
            write_atomically(path, json.dumps(doc, cls=AnsibleJSONEncoder, indent=2, sort_keys=True) + '\n')
            written = True
        result.update(
            changed=written or any(r.get('changed') for r in slurm_results.values()),
            document=doc, path=path, written=written, table=vd.table(doc), slurm_error=slurm_error,
            slurm=dict((node, dict((key, r.get(key)) for key in ('changed', 'failed', 'msg', 'state_before', 'state_after')))
                       for node, r in slurm_results.items()))
        return result
