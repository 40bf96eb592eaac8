#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: slurm_node
short_description: Drain or resume a Slurm node, idempotently, keeping other people's drains
version_added: 0.1.0
description:
  - Reads the node with C(scontrol show node NAME) and, only when needed, runs
    C(scontrol update NodeName=NAME State=DRAIN Reason=...) or C(scontrol update NodeName=NAME State=RESUME).
  - Draining a node that is already drained with the same reason changes nothing; a different reason is replaced.
  - Resuming a node that is not drained changes nothing. A drained node whose reason does not start with
    O(reason_prefix) is refused (the module fails and changes nothing) unless O(force=true), so a drain set by an
    operator or by another tool is never lifted by accident.
  - Supports check mode and diff mode (the node's state and reason before and after).
author: aicluster.infra contributors (@aicluster)
extends_documentation_fragment:
  - aicluster.infra.attributes
  - aicluster.infra.attributes.platform
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
options:
  name:
    description:
      - The Slurm NodeName of the node.
    type: str
    required: true
  state:
    description:
      - V(drained) drains the node with O(reason); V(resumed) resumes it.
    type: str
    choices: [drained, resumed]
    required: true
  reason:
    description:
      - The drain reason, as C(sinfo -R) shows it. Required with O(state=drained).
      - Slurm stores the user and time next to it; they are ignored when comparing reasons.
    type: str
  reason_prefix:
    description:
      - With O(state=resumed), only a node whose current reason starts with this text is resumed.
      - An empty string allows resuming any drained node.
    type: str
    default: "aicluster:"
  force:
    description:
      - Resume a drained node whatever its reason.
    type: bool
    default: false
requirements:
  - C(scontrol) from Slurm on the host the module runs on, with the rights to update nodes (SlurmUser or root).
notes:
  - All commands run with C(LANG=C) and C(LC_ALL=C), as argv lists (the reason is one argument, never shell text).
  - Run it where C(scontrol) reaches the controller, usually with C(delegate_to) the Slurm controller.
seealso:
  - module: aicluster.infra.slurm_node_info
'''

EXAMPLES = r'''
- name: Drain a node that failed verification
  aicluster.infra.slurm_node:
    name: gpu017
    state: drained
    reason: "aicluster: fabric.link_width mlx5_3:1"
  delegate_to: "{{ groups['slurm_controller'][0] }}"

- name: Resume it once it passes (refused if someone else drained it)
  aicluster.infra.slurm_node:
    name: gpu017
    state: resumed
    reason_prefix: "aicluster:"
  delegate_to: "{{ groups['slurm_controller'][0] }}"

- name: Resume whatever drained it
  aicluster.infra.slurm_node:
    name: gpu017
    state: resumed
    force: true
  delegate_to: "{{ groups['slurm_controller'][0] }}"
'''

RETURN = r'''
name:
  description: The node.
  returned: always
  type: str
  sample: gpu017
state_before:
  description: The node's State before the module ran, as scontrol prints it.
  returned: success
  type: str
  sample: IDLE
state_after:
  description: The node's State afterwards (read back after a change; predicted in check mode).
  returned: success
  type: str
  sample: IDLE+DRAIN
reason_before:
  description: The node's Reason before, without Slurm's C([user@time]) stamp; V(null) when none.
  returned: success
  type: str
  sample: null
reason_after:
  description: The node's Reason afterwards, without the stamp; V(null) when none.
  returned: success
  type: str
  sample: "aicluster: fabric.link_width mlx5_3:1"
cmd:
  description: The scontrol update argv that was run (or would run in check mode); V(null) when nothing was needed.
  returned: success
  type: list
  elements: str
  sample: [/usr/bin/scontrol, update, NodeName=gpu017, State=DRAIN, "Reason=aicluster: fabric.link_width mlx5_3:1"]
'''

import re

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.slurm import parse_scontrol_show_node

C_LOCALE = {'LANG': 'C', 'LC_ALL': 'C'}
STAMP_RE = re.compile(r'\s*\[[^\]\[@]*@[^\]\[]*\]\s*$')


def clean_reason(reason):
    if reason is None:
        return None
    reason = STAMP_RE.sub('', reason).strip()
    return reason if reason and reason != '(null)' else None


def drained(state):
    parts = re.split(r'[+*~#!%$@^-]', (state or '').upper())
    return any(part in ('DRAIN', 'DRAINED', 'DRAINING') for part in parts)


def read_node(module, scontrol, name):
    argv = [scontrol, 'show', 'node', name]
    rc, out, err = module.run_command(argv, environ_update=C_LOCALE)
    out, err = out or '', err or ''
    if rc != 0:
        module.fail_json(msg='scontrol show node %s failed with rc=%d: %s' % (name, rc, (err or out).strip()[:500]),
                         cmd=argv, rc=rc, stdout=out, stderr=err)
    try:
        nodes = parse_scontrol_show_node(out)
    except ParseError as exc:
        module.fail_json(msg='scontrol show node %s printed output that could not be parsed: %s' % (name, exc),
                         cmd=argv, rc=rc, stdout=out, stderr=err)
    node = next((entry for entry in nodes if entry.get('NodeName') == name), None)
    if node is None:
        module.fail_json(msg='scontrol show node did not list %s' % name, cmd=argv, rc=rc, stdout=out, stderr=err)
    return node.get('State'), clean_reason(node.get('Reason'))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type='str', required=True),
            state=dict(type='str', required=True, choices=['drained', 'resumed']),
            reason=dict(type='str'),
            reason_prefix=dict(type='str', default='aicluster:'),
            force=dict(type='bool', default=False),
        ),
        required_if=[('state', 'drained', ('reason',))],
        supports_check_mode=True,
    )
    name = module.params['name'].strip()
    if not name or name.startswith('-') or any(c in name for c in ' ,[]='):
        module.fail_json(msg='name must be one node name (no spaces, commas, brackets or leading "-"), got %r' % name)
    reason = (module.params['reason'] or '').strip()
    if module.params['state'] == 'drained' and not reason:
        module.fail_json(msg='reason must not be empty when draining (Slurm refuses a drain without a reason)')

    scontrol = module.get_bin_path('scontrol', required=True)
    state_before, reason_before = read_node(module, scontrol, name)
    is_drained = drained(state_before)
    result = dict(changed=False, name=name, state_before=state_before, state_after=state_before,
                  reason_before=reason_before, reason_after=reason_before if is_drained else None, cmd=None)

    argv = None
    predicted_state, predicted_reason = state_before, reason_before
    if module.params['state'] == 'drained':
        if not (is_drained and reason_before == reason):
            argv = [scontrol, 'update', 'NodeName=%s' % name, 'State=DRAIN', 'Reason=%s' % reason]
            predicted_state = state_before if is_drained else '%s+DRAIN' % (state_before or 'UNKNOWN')
            predicted_reason = reason
    elif is_drained:
        prefix = module.params['reason_prefix']
        if not module.params['force'] and not (reason_before or '').startswith(prefix):
            module.fail_json(msg='refusing to resume %s: it was drained by someone else (reason %r does not start with %r); '
                                 'resume it by hand or set force=true' % (name, reason_before, prefix), **result)
        argv = [scontrol, 'update', 'NodeName=%s' % name, 'State=RESUME']
        predicted_state = re.sub(r'\+DRAIN(ED|ING)?', '', state_before or '')
        predicted_reason = None

    if argv is None:
        module.exit_json(**result)

    result['changed'] = True
    result['cmd'] = argv
    if module.check_mode:
        result.update(state_after=predicted_state, reason_after=predicted_reason)
    else:
        rc, out, err = module.run_command(argv, environ_update=C_LOCALE)
        if rc != 0:
            module.fail_json(msg='scontrol update of %s failed with rc=%d: %s' % (name, rc, (err or out).strip()[:500]),
                             rc=rc, stdout=out, stderr=err, **result)
        state_after, reason_after = read_node(module, scontrol, name)
        result.update(state_after=state_after, reason_after=reason_after if drained(state_after) else None)
    if module._diff:
        result['diff'] = {
            'before': 'state: %s\nreason: %s\n' % (state_before, reason_before if is_drained else None),
            'after': 'state: %s\nreason: %s\n' % (result['state_after'], result['reason_after']),
        }
    module.exit_json(**result)


if __name__ == '__main__':
    main()
