#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: slurm_accounting
short_description: Manage Slurm QOS, accounts and user associations in slurmdbd with sacctmgr, idempotently
version_added: 0.1.0
description:
  - Reads what slurmdbd holds with C(sacctmgr --noheader --parsable2 show qos|account|assoc|user format=...), compares
    it with O(qos), O(accounts) and O(users), and runs only the C(sacctmgr --immediate add|modify|delete ...) commands
    that make the difference, as argument lists (no shell).
  - "Values are compared the way sacctmgr prints them - V(240) and V(04:00:00) are the same C(MaxWall),
    the dict V({gres/gpu: 8}) and the string V(gres/gpu=8) the same TRES limit, C(Preempt) and QOS lists are sets,
    names and free text are compared in lower case (slurmdbd stores them so) - so a second run with the same input
    changes nothing."
  - A key left out of an entry is not managed - Slurm keeps what it has. Nothing that is not named is deleted unless
    O(purge) says so.
  - The same change for many users is one command (C(Name=a,b,c)), so a site with thousands of users is set up in
    a handful of sacctmgr runs (sacctmgr(1) warns against calling it in loops).
  - After changing anything it reads everything back and fails if slurmdbd still differs (sacctmgr can exit 0
    having changed nothing).
  - Supports check mode (reports the commands it would run) and diff mode (each changed object before and after).
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
  cluster:
    description:
      - The cluster whose associations (accounts and users) are managed; it must already be registered
        (C(sacctmgr add cluster NAME), which the slurm role does). QOS are not per cluster.
    type: str
    required: true
  qos:
    description: QOS to create, change or delete.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: QOS name (stored in lower case).
        type: str
        required: true
      state:
        description: V(absent) deletes the QOS (Slurm refuses while it is some association's default QOS).
        type: str
        choices: [present, absent]
        default: present
      description:
        description: C(Description). Slurm stores it in lower case; quotes and C(|) are refused.
        type: str
      priority:
        description: C(Priority), added to a job's priority through C(PriorityWeightQOS) (priority/multifactor).
        type: int
      preempt:
        description:
          - C(Preempt) - the QOS whose jobs this QOS's jobs may preempt (with C(PreemptType=preempt/qos)). V([])
            clears the list. Unrelated to O(qos[].priority).
        type: list
        elements: str
      preempt_mode:
        description: C(PreemptMode) of jobs of this QOS when they are preempted; V(cluster) uses slurm.conf's.
        type: str
        choices: [cluster, cancel, requeue]
      grace_time:
        description: C(GraceTime) - seconds a preempted job gets (SIGTERM first) before it is cancelled or requeued;
          an int is seconds, V([D-]HH:MM:SS) a Slurm time.
        type: raw
      max_wall:
        description:
          - C(MaxWall) per job - an int is minutes; a Slurm time (V(04:00:00), V(1-00:00:00), V(2-12)) also works.
            V(-1) or V(UNLIMITED) clears it.
        type: raw
      grp_tres:
        description:
          - "C(GrpTRES), the TRES all running jobs of the QOS may hold together, as a dict (V({gres/gpu: 16, cpu: 256}))
            or a string (V(gres/gpu=16,cpu=256)); memory in MB or with a unit (V(mem=500G)). TRES not named are
            cleared; V({}) clears all."
        type: raw
      max_tres_per_user:
        description: C(MaxTRESPerUser), in the same forms as O(qos[].grp_tres).
        type: raw
      flags:
        description: C(Flags) such as V(DenyOnLimit), V(NoReserve), V(OverPartQOS); V([]) clears them.
        type: list
        elements: str
  accounts:
    description: Accounts (and their association on O(cluster)).
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: Account name (stored in lower case).
        type: str
        required: true
      state:
        description: V(absent) deletes the account's association on O(cluster) (and with it the associations below it).
        type: str
        choices: [present, absent]
        default: present
      description:
        description: C(Description) of the account (the same on every cluster).
        type: str
      organization:
        description: C(Organization) of the account.
        type: str
      parent:
        description: C(Parent) account; a new account goes under V(root) when this is left out.
        type: str
      fairshare:
        description: C(Fairshare) - a share number, or V(parent).
        type: raw
      qos:
        description: The QOS its jobs may use (C(QOS=), inherited by its users unless they have their own list).
        type: list
        elements: str
      default_qos:
        description: C(DefaultQOS); must be one of O(accounts[].qos).
        type: str
  users:
    description: Users and their associations on O(cluster).
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: Login name (stored in lower case).
        type: str
        required: true
      state:
        description: V(absent) deletes all the user's associations on O(cluster).
        type: str
        choices: [present, absent]
        default: present
      accounts:
        description:
          - Accounts the user may charge jobs to (one association each). Required with O(users[].state=present).
            Associations to other accounts are kept unless O(purge) includes V(users).
        type: list
        elements: str
        aliases: [account]
      default_account:
        description: C(DefaultAccount); the first of O(users[].accounts) when left out.
        type: str
      admin_level:
        description: C(AdminLevel) in slurmdbd.
        type: str
        choices: [none, operator, admin]
      fairshare:
        description: C(Fairshare) of each of the user's associations - a number, or V(parent).
        type: raw
      qos:
        description: QOS list of each of the user's associations; left out, the account's list is inherited.
        type: list
        elements: str
      default_qos:
        description: C(DefaultQOS) of each of the user's associations.
        type: str
  purge:
    description:
      - Delete what the lists do not name - V(false) (the default) nothing; V(true) all three kinds; or a list of
        kinds out of V(qos), V(accounts), V(users). Purging users also removes a named user's associations to accounts
        not in its O(users[].accounts).
      - Never purged - the QOS V(normal), the account V(root) and the user V(root) (Slurm's own).
    type: raw
    default: false
requirements:
  - C(sacctmgr) (Slurm 22.05 or later) on the host the module runs on, run by root or a slurmdbd administrator,
    with slurmdbd up.
notes:
  - Commands run with C(LANG=C) and C(LC_ALL=C).
  - QOS limits are enforced only with C(AccountingStorageEnforce=limits,qos) in slurm.conf, C(Priority) counts only
    with C(PriorityType=priority/multifactor) and a C(PriorityWeightQOS), and C(Preempt) only with
    C(PreemptType=preempt/qos).
  - Run it once per cluster, where C(sacctmgr) reaches slurmdbd (the slurm role runs it once, on the first C(slurm_dbd) host).
seealso:
  - name: sacctmgr(1)
    description: The commands and fields this module uses.
    link: https://slurm.schedmd.com/sacctmgr.html
  - name: QOS
    description: Slurm's QOS, preemption and limits.
    link: https://slurm.schedmd.com/qos.html
'''

EXAMPLES = r'''
- name: QOS, accounts and users for a GPU cluster
  aicluster.infra.slurm_accounting:
    cluster: hgx
    qos:
      - name: training
        priority: 100
        preempt_mode: requeue
        grace_time: 300
      - name: inference
        priority: 500
        preempt: [training]
      - name: debug
        priority: 1000
        max_wall: 60
        max_tres_per_user: {gres/gpu: 8}
        flags: [DenyOnLimit]
    accounts:
      - name: ml
        description: machine learning
        qos: [normal, training, inference, debug]
        default_qos: normal
    users:
      - name: alice
        accounts: [ml]
  delegate_to: "{{ groups['slurm_dbd'][0] }}"
  run_once: true

- name: Remove every QOS the list does not name (normal is kept)
  aicluster.infra.slurm_accounting:
    cluster: hgx
    qos: [{name: training}, {name: inference}, {name: debug}]
    purge: [qos]
  delegate_to: "{{ groups['slurm_dbd'][0] }}"
  run_once: true
'''

RETURN = r'''
cluster:
  description: The cluster, as slurmdbd names it (lower case).
  returned: always
  type: str
  sample: hgx
changes:
  description:
    - One record per changed object - C(object) (V(qos/training), V(accounts/ml), V(users/alice)), C(action)
      (V(create), V(modify), V(delete)) and C(fields), each with C(before) and C(after). In check mode, what would change.
    - Association fields of a user are named C(ACCOUNT/FIELD) (V(ml/qos)).
  returned: success
  type: list
  elements: dict
  sample:
    - object: qos/inference
      action: modify
      fields:
        priority: {before: 50, after: 500}
cmds:
  description: The sacctmgr argument lists that were run (or would be run in check mode), in order.
  returned: success
  type: list
  elements: list
  sample:
    - [/usr/bin/sacctmgr, --immediate, modify, qos, where, Name=inference, set, Priority=500]
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.slurm_accounting import (
    ACCOUNT_FORMAT, ASSOC_FORMAT, CLUSTER_FORMAT, QOS_FORMAT, USER_FORMAT, parse_accounts, parse_assocs, parse_clusters,
    parse_qos, parse_users, wanted,
)
from ansible_collections.aicluster.infra.plugins.module_utils.slurm_accounting_plan import diff, plan

ENVIRON = {'LANG': 'C', 'LC_ALL': 'C'}


def _state():
    return dict(type='str', choices=['present', 'absent'], default='present')


ARGUMENT_SPEC = dict(
    cluster=dict(type='str', required=True),
    qos=dict(type='list', elements='dict', default=[], options=dict(
        name=dict(type='str', required=True), state=_state(), description=dict(type='str'), priority=dict(type='int'),
        preempt=dict(type='list', elements='str'), preempt_mode=dict(type='str', choices=['cluster', 'cancel', 'requeue']),
        grace_time=dict(type='raw'), max_wall=dict(type='raw'), grp_tres=dict(type='raw'), max_tres_per_user=dict(type='raw'),
        flags=dict(type='list', elements='str'))),
    accounts=dict(type='list', elements='dict', default=[], options=dict(
        name=dict(type='str', required=True), state=_state(), description=dict(type='str'),
        organization=dict(type='str'), parent=dict(type='str'), fairshare=dict(type='raw'),
        qos=dict(type='list', elements='str'), default_qos=dict(type='str'))),
    users=dict(type='list', elements='dict', default=[], options=dict(
        name=dict(type='str', required=True), state=_state(),
        accounts=dict(type='list', elements='str', aliases=['account']), default_account=dict(type='str'),
        admin_level=dict(type='str', choices=['none', 'operator', 'admin']), fairshare=dict(type='raw'),
        qos=dict(type='list', elements='str'), default_qos=dict(type='str'))),
    purge=dict(type='raw', default=False),
)
READS = (('qos', 'qos', QOS_FORMAT, parse_qos), ('accounts', 'account', ACCOUNT_FORMAT, parse_accounts),
         ('assocs', 'assoc', ASSOC_FORMAT, parse_assocs), ('users', 'user', USER_FORMAT, parse_users))


def _fail(module, msg, argv, rc, out, err, **extra):
    module.fail_json(msg='%s: %s' % (msg, (err or out or 'no message').strip()[:500]), cmd=argv, rc=rc, stdout=out,
                     stderr=err, **extra)


def show(module, sacctmgr, entity, fields, parser, *conditions):
    argv = [sacctmgr, '--noheader', '--parsable2', 'show', entity] + list(conditions) + ['format=%s' % ','.join(fields)]
    rc, out, err = module.run_command(argv, environ_update=ENVIRON)
    out, err = out or '', err or ''
    if rc != 0:
        _fail(module, 'sacctmgr show %s failed with rc=%d' % (entity, rc), argv, rc, out, err)
    try:
        return parser(out)
    except ParseError as exc:
        _fail(module, 'sacctmgr show %s printed output that could not be parsed (%s)' % (entity, exc), argv, rc, out, err)


def read(module, sacctmgr, cluster):
    """What slurmdbd holds: the plan's ``current``."""
    current = {}
    for key, entity, fields, parser in READS:
        conditions = ['cluster=%s' % cluster] if entity == 'assoc' else []
        current[key] = show(module, sacctmgr, entity, fields, parser, *conditions)
    return current


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    want, problems = wanted(module.params)
    cluster = (module.params['cluster'] or '').strip().lower()
    if not cluster:
        problems.insert(0, 'cluster must name the cluster')
    if problems:
        module.fail_json(msg='; '.join(problems))
    sacctmgr = module.get_bin_path('sacctmgr', required=True)

    clusters = show(module, sacctmgr, 'cluster', CLUSTER_FORMAT, parse_clusters)
    if cluster not in clusters:
        module.fail_json(msg='cluster %s is not registered in slurmdbd (sacctmgr add cluster %s); it has: %s'
                         % (cluster, cluster, ', '.join(clusters) or 'none'), cluster=cluster)
    current = read(module, sacctmgr, cluster)
    planned = plan(current, want, cluster)
    if planned['problems']:
        module.fail_json(msg='; '.join(planned['problems']), cluster=cluster)
    cmds = [[sacctmgr, '--immediate'] + tail for tail in planned['commands']]
    result = dict(changed=bool(cmds), cluster=cluster, changes=planned['changes'], cmds=cmds)

    if cmds and not module.check_mode:
        for number, argv in enumerate(cmds):
            rc, out, err = module.run_command(argv, environ_update=ENVIRON)
            out, err = out or '', err or ''
            if rc != 0:
                ran = dict(result)
                ran['cmds'] = cmds[:number + 1]
                _fail(module, 'sacctmgr %s %s failed with rc=%d' % (argv[2], argv[3], rc), argv, rc, out, err, **ran)
        left = plan(read(module, sacctmgr, cluster), want, cluster)
        if left['changes'] or left['problems']:
            module.fail_json(msg='sacctmgr ran every command but slurmdbd still differs: %s'
                             % '; '.join(left['problems'] or ['%s %s' % (change['object'], sorted(change['fields']))
                                                              for change in left['changes']]),
                             still_differs=left['changes'], **result)
    if module._diff:
        result['diff'] = diff(planned['changes'])
    module.exit_json(**result)


if __name__ == '__main__':
    main()
