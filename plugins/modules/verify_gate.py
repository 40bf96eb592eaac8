#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: verify_gate
short_description: Join the verify stage's outcomes, drain and resume nodes in Slurm, write results.json
description:
  - The gate of the verify stage, run once on the control node after the check roles (verify_ib, verify_perftest,
    verify_gpu, verify_nccl) have left their outcome facts (C(verify_ib_outcome), C(verify_ib_fabric_outcome),
    C(verify_ib_sm_outcome), C(verify_perftest_outcome), C(verify_gpu_outcome), C(verify_nccl_outcome), and
    C(verify_ib_link_outcome) and C(verify_ib_switch_outcome) from the link and switch-port counters read after the
    tests) on the play's hosts.
  - Joins each node's results (a node with none fails C(node.reachable)), reads the nodes in Slurm with
    M(aicluster.infra.slurm_node_info) on the host the task is delegated to, and, in mode V(drain), drains each failing node
    with M(aicluster.infra.slurm_node) and a reason that starts with O(reason_prefix). In every mode it resumes nodes whose
    reason starts with O(reason_prefix) and that pass now; it never resumes a node drained by anyone else.
  - Builds the results document (C(docs/verify-results.md)), refuses one that does not validate, and writes it to O(path)
    on the control node through a temporary file and a rename.
  - This is an action plugin; delegate the task to the Slurm controller (or to C(localhost) with O(slurm=false)) and run it
    with C(run_once=true).
version_added: 0.1.0
author:
  - aicluster.infra contributors (@aicluster)
extends_documentation_fragment:
  - aicluster.infra.attributes
attributes:
  check_mode:
    support: full
    details:
      - In check mode results.json is not written and M(aicluster.infra.slurm_node) only reports what it would change.
  diff_mode:
    support: none
options:
  nodes:
    description: Every node of the play, reachable or not, in order (C(ansible_play_hosts_all)).
    type: list
    elements: str
    required: true
  answered:
    description: The nodes that answered (C(ansible_play_hosts)); the first one's outcome facts are read. Default the play's.
    type: list
    elements: str
  mode:
    description:
      - What a failing node gets. V(drain) drains it, V(fail) and V(report) leave it in service (the play's verdict comes
        later, from the verdict entry point of the verify_gate role).
    type: str
    choices: [drain, fail, report]
    default: drain
  slurm:
    description: Whether to read and act in Slurm on the host the task is delegated to.
    type: bool
    default: true
  slurm_names:
    description: Node -> its Slurm NodeName where the two differ.
    type: dict
  facts:
    description: Node -> C(os) and C(kernel) of the nodes that answered, for the version matrix.
    type: dict
  run:
    description:
      - C(started), C(finished), C(inventory), C(collection_version) and C(slurm) of results.json C(run).
      - Optional C(reservation) (C(name), C(nodes)), the maintenance reservation the active tests ran in, copied when set.
    type: dict
    required: true
  path:
    description: Where results.json goes on the control node; its directory is created.
    type: path
    required: true
  reason_prefix:
    description: The start of every drain reason this gate writes, and of the reasons it may resume.
    type: str
    default: "aicluster:"
  max_drain_fraction:
    description:
      - The drain breaker. When more than this fraction of O(nodes) (and at least two) fail the same check, no node is drained
        in this run; results.json records a failed cluster-level C(node.drain_breaker) result, so the verdict fails.
      - Above 0, at most 1; V(1) never trips.
    type: float
    default: 0.1
  busy:
    description:
      - The nodes that ran jobs when the run started; the active tests skipped them. They are marked C(busy) in results.json
        and a failed cluster-level C(node.tested) result lists them; a drain of theirs is only resumed for checks that ran on them.
    type: list
    elements: str
    default: []
'''

EXAMPLES = r'''
- name: Gate on the results
  aicluster.infra.verify_gate:
    nodes: "{{ ansible_play_hosts_all }}"
    mode: drain
    run:
      started: "2026-12-01T09:00:00Z"
      finished: "{{ now(utc=true, fmt='%Y-%m-%dT%H:%M:%SZ') }}"
      inventory: inventories/mycluster
      collection_version: 0.1.0
      slurm: ctl01
    path: artifacts/verify-20261201T090000Z/results.json
  delegate_to: ctl01
  run_once: true
  register: gate
'''

RETURN = r'''
document:
  description: The results document (C(docs/verify-results.md)).
  returned: success
  type: dict
  sample: {"schema": "aicluster.infra/verify-results/v1", "summary": {"nodes": 3, "passed": 2, "failed": 1, "drained": 1,
           "resumed": 0, "verdict": "FAIL"}}
path:
  description: Path of results.json on the control node.
  returned: success
  type: str
  sample: artifacts/verify-20261201T090000Z/results.json
written:
  description: Whether results.json was written (false in check mode).
  returned: success
  type: bool
  sample: true
table:
  description: The verdict table, one line per node and the verdict line.
  returned: success
  type: list
  elements: str
  sample: ["node   verdict  slurm    failed checks", "gpu01  FAIL     drained  ib.port_state mlx5_0:1: Down/Polling"]
slurm:
  description: Node -> what slurm_node did (changed, failed, msg, state_before, state_after).
  returned: success
  type: dict
  sample: {"gpu01": {"changed": true, "failed": false, "msg": null, "state_before": "IDLE", "state_after": "IDLE+DRAIN"}}
slurm_error:
  description: Why Slurm could not be read (no actions then), or null.
  returned: success
  type: str
  sample: "scontrol: error: Unable to contact slurm controller"
'''

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nodes=dict(type='list', elements='str', required=True),
            answered=dict(type='list', elements='str'),
            mode=dict(type='str', choices=['drain', 'fail', 'report'], default='drain'),
            max_drain_fraction=dict(type='float', default=0.1),
            busy=dict(type='list', elements='str', default=[]),
            slurm=dict(type='bool', default=True),
            slurm_names=dict(type='dict'),
            facts=dict(type='dict'),
            run=dict(type='dict', required=True),
            path=dict(type='path', required=True),
            reason_prefix=dict(type='str', default='aicluster:'),
        ),
        supports_check_mode=True,
    )
    module.fail_json(msg='aicluster.infra.verify_gate runs as an action plugin on the control node; call it as a task')


if __name__ == '__main__':
    main()
