#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: slurm_reservation
short_description: Make or remove a Slurm maintenance reservation on named nodes, idempotently
version_added: 0.1.0
description:
  - Reads the reservation with C(scontrol show reservation NAME) and, only when needed, creates it with
    C(scontrol create reservation ReservationName=NAME StartTime=now Duration=MINUTES Nodes=... Users=... Flags=...)
    or deletes it with C(scontrol delete ReservationName=NAME).
  - With O(state=present) a reservation of that name that differs (other nodes, users or flags, not active, or ending
    sooner than O(minutes) from now less a tenth) is deleted and created again, so a reservation left by a run that
    crashed is replaced, never a reason to fail. One within that tenth is kept as it is (idempotent).
  - The default flags V(MAINT) and V(IGNORE_JOBS) make a maintenance reservation that may overlap other reservations
    and is created even on nodes where a job is still running (that job keeps running; no new job starts there
    except with C(--reservation=NAME) by one of O(users)). IGNORE_JOBS only matters at creation and is not compared.
  - Supports check mode (says what it would run, runs nothing that writes) and diff mode (the reservation before and after).
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
      - The reservation name (C(ReservationName)); letters, digits, C(.), C(_) and C(-).
    type: str
    required: true
  state:
    description:
      - V(present) makes the reservation (or replaces one that differs); V(absent) deletes it.
    type: str
    choices: [present, absent]
    default: present
  nodes:
    description:
      - Slurm node names or hostlist expressions (V(gpu[01-16])). Required and non-empty with O(state=present).
    type: list
    elements: str
    default: []
  minutes:
    description:
      - How long the reservation lasts from now (C(Duration), minutes). Slurm ends it by itself after that, so a run
        that dies before it deletes the reservation frees the nodes at the latest then.
    type: int
    default: 240
  users:
    description:
      - Who may run jobs in it (C(Users)). Empty (the default) for the user the module runs as (root with become),
        the same user that then runs C(srun --reservation=NAME) on this host.
    type: list
    elements: str
    default: []
  flags:
    description:
      - Reservation flags (C(Flags)).
    type: list
    elements: str
    default: [MAINT, IGNORE_JOBS]
requirements:
  - C(scontrol) from Slurm 22.05 or later on the host the module runs on, run as root or the SlurmUser
    (only they may create and delete reservations).
notes:
  - All commands run as argv lists with C(LANG=C), C(LC_ALL=C) and C(SLURM_TIME_FORMAT=standard), so end times read
    back in one format (local time of this host, which is how the end is compared).
  - Slurm refuses to delete a reservation while jobs run in it; the module then fails with scontrol's message.
  - Run it where C(scontrol) reaches the controller, usually with C(delegate_to) the Slurm controller.
seealso:
  - module: aicluster.infra.slurm_node
  - module: aicluster.infra.slurm_node_info
'''

EXAMPLES = r'''
- name: Keep jobs off the idle nodes while the active tests run (4 hours at most)
  aicluster.infra.slurm_reservation:
    name: aicluster-verify
    nodes: [gpu01, gpu02, gpu03]
    minutes: 240
  delegate_to: "{{ groups['slurm_controller'][0] }}"
  run_once: true

- name: A job step inside it
  ansible.builtin.command:
    argv: [srun, --reservation=aicluster-verify, -N, "2", -w, "gpu[01-02]", hostname]
  delegate_to: "{{ groups['slurm_controller'][0] }}"
  run_once: true
  changed_when: false

- name: Give the nodes back
  aicluster.infra.slurm_reservation:
    name: aicluster-verify
    state: absent
  delegate_to: "{{ groups['slurm_controller'][0] }}"
  run_once: true
'''

RETURN = r'''
name:
  description: The reservation name.
  returned: always
  type: str
  sample: aicluster-verify
action:
  description: What was done (or would be done in check mode) - V(created), V(replaced), V(deleted) or V(none).
  returned: success
  type: str
  sample: created
why:
  description: Why an existing reservation of that name was replaced (empty otherwise).
  returned: success
  type: list
  elements: str
  sample: ["nodes gpu[01-02], want gpu01,gpu02,gpu03"]
before:
  description: The reservation before, as C(scontrol show reservation) prints it (one dict of its fields); V(null) when none.
  returned: success
  type: dict
  sample: null
reservation:
  description: The reservation afterwards, read back after a change; V(null) when there is none, and in check mode when
    a change is needed (the diff shows what it would make).
  returned: success
  type: dict
  sample:
    ReservationName: aicluster-verify
    StartTime: "2026-12-01T21:40:12"
    EndTime: "2026-12-02T01:40:12"
    Duration: "04:00:00"
    Nodes: gpu[01-03]
    NodeCnt: "3"
    Flags: MAINT,IGNORE_JOBS,SPEC_NODES
    Users: root
    State: ACTIVE
nodes:
  description: The node names asked for, expanded and sorted.
  returned: success
  type: list
  elements: str
  sample: [gpu01, gpu02, gpu03]
cmds:
  description: The scontrol argv lists that were run (or would run in check mode) to change the reservation.
  returned: success
  type: list
  elements: list
  sample:
    - [/usr/bin/scontrol, create, reservation, ReservationName=aicluster-verify, StartTime=now, Duration=240,
       "Nodes=gpu[01-03]", Users=root, "Flags=MAINT,IGNORE_JOBS"]
'''

import getpass
import re
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.slurm import hostlist_compress, hostlist_expand
from ansible_collections.aicluster.infra.plugins.module_utils.slurm_reservation import (
    differences, parse_scontrol_show_reservation, summary,
)

ENVIRON = {'LANG': 'C', 'LC_ALL': 'C', 'SLURM_TIME_FORMAT': 'standard'}
NAME_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]*$')
WORD_RE = re.compile(r'^[A-Za-z0-9_][A-Za-z0-9._@-]*$')


def create_argv(scontrol, name, nodes, minutes, users, flags):
    """scontrol create reservation for ``nodes`` (names) from now on, for ``minutes``."""
    return [scontrol, 'create', 'reservation', 'ReservationName=%s' % name, 'StartTime=now', 'Duration=%d' % minutes,
            'Nodes=%s' % hostlist_compress(nodes), 'Users=%s' % ','.join(users), 'Flags=%s' % ','.join(flags)]


def delete_argv(scontrol, name):
    return [scontrol, 'delete', 'ReservationName=%s' % name]


def _fail(module, msg, argv, rc, out, err, **extra):
    module.fail_json(msg='%s: %s' % (msg, (err or out or 'no message').strip()[:500]), cmd=argv, rc=rc, stdout=out,
                     stderr=err, **extra)


def read(module, scontrol, name):
    """The reservation's record, or None when Slurm has none of that name."""
    argv = [scontrol, 'show', 'reservation', name]
    rc, out, err = module.run_command(argv, environ_update=ENVIRON)
    out, err = out or '', err or ''
    if rc != 0 and 'not found' not in out + err:
        _fail(module, 'scontrol show reservation %s failed with rc=%d' % (name, rc), argv, rc, out, err)
    try:
        found = parse_scontrol_show_reservation(out if rc == 0 or out.strip() else err)
    except ParseError as exc:
        _fail(module, 'scontrol show reservation %s printed output that could not be parsed (%s)' % (name, exc), argv, rc, out, err)
    return next((entry for entry in found if entry.get('ReservationName') == name), None)


def check_params(module):
    """Problems with the arguments that the argument spec cannot say, one sentence each."""
    params = module.params
    problems = []
    if not NAME_RE.match(params['name'] or ''):
        problems.append('name must be letters, digits, ".", "_" and "-" (got %r)' % params['name'])
    if params['state'] == 'present':
        if not [node for node in params['nodes'] if node and node.strip()]:
            problems.append('nodes must name at least one node with state=present')
        if params['minutes'] < 1:
            problems.append('minutes must be at least 1 (got %d)' % params['minutes'])
    for key in ('nodes', 'users', 'flags'):
        bad = [item for item in params[key] if item and (item.strip().startswith('-') or any(c in item for c in ' ='))]
        if bad:
            problems.append('%s must not start with "-" or hold spaces or "=": %s' % (key, bad))
    bad = [item for item in params['users'] + params['flags'] if item and not WORD_RE.match(item.strip())]
    if bad:
        problems.append('users and flags must be plain words: %s' % bad)
    return problems


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type='str', required=True),
            state=dict(type='str', choices=['present', 'absent'], default='present'),
            nodes=dict(type='list', elements='str', default=[]),
            minutes=dict(type='int', default=240),
            users=dict(type='list', elements='str', default=[]),
            flags=dict(type='list', elements='str', default=['MAINT', 'IGNORE_JOBS']),
        ),
        supports_check_mode=True,
    )
    problems = check_params(module)
    if problems:
        module.fail_json(msg='; '.join(problems))
    name = module.params['name']
    try:
        nodes = sorted(set(hostlist_expand([node.strip() for node in module.params['nodes'] if node and node.strip()])))
    except ParseError as exc:
        module.fail_json(msg='nodes is not a list of node names or hostlist expressions: %s' % exc)
    users = sorted(set(user.strip() for user in module.params['users'] if user.strip())) or [getpass.getuser()]
    flags = [flag.strip().upper() for flag in module.params['flags'] if flag.strip()]
    minutes = module.params['minutes']

    scontrol = module.get_bin_path('scontrol', required=True)
    before = read(module, scontrol, name)
    result = dict(changed=False, name=name, action='none', why=[], before=before, reservation=before, nodes=nodes, cmds=[])

    cmds = []
    if module.params['state'] == 'absent':
        if before is not None:
            cmds = [delete_argv(scontrol, name)]
            result['action'] = 'deleted'
    else:
        # kept when it lasts at least the wanted time less a tenth (a rerun within that tenth changes nothing)
        end_by = int(time.time()) + minutes * 60 - minutes * 6
        why = differences(before, nodes, users, flags, end_by) if before is not None else []
        if before is None:
            cmds = [create_argv(scontrol, name, nodes, minutes, users, flags)]
            result['action'] = 'created'
        elif why:
            cmds = [delete_argv(scontrol, name), create_argv(scontrol, name, nodes, minutes, users, flags)]
            result.update(action='replaced', why=why)

    if cmds:
        result.update(changed=True, cmds=cmds)
        if module.check_mode:
            result['reservation'] = None
        else:
            for argv in cmds:
                rc, out, err = module.run_command(argv, environ_update=ENVIRON)
                out, err = out or '', err or ''
                if rc != 0:
                    _fail(module, 'scontrol %s of reservation %s failed with rc=%d' % (argv[1], name, rc), argv, rc, out, err,
                          **dict((key, value) for key, value in result.items() if key != 'changed'))
            result['reservation'] = read(module, scontrol, name)
            if module.params['state'] == 'present' and result['reservation'] is None:
                module.fail_json(msg='scontrol created reservation %s but does not show it' % name, **result)
    if module._diff:
        after = result['reservation']
        if module.check_mode and module.params['state'] == 'present' and cmds:
            after = {'ReservationName': name, 'StartTime': 'now', 'EndTime': 'now+%dmin' % minutes,
                     'Nodes': hostlist_compress(nodes), 'Users': ','.join(users), 'Flags': ','.join(flags), 'State': 'ACTIVE'}
        result['diff'] = {'before': summary(before), 'after': summary(after)}
    module.exit_json(**result)


if __name__ == '__main__':
    main()
