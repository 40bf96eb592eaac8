#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: slurm_node_info
short_description: Gather Slurm node records from scontrol show node
version_added: 0.1.0
description:
  - Runs C(scontrol show node) (all nodes) or C(scontrol show node NAMES) and returns every node record it prints,
    one dict of its C(Key=Value) pairs each.
  - The module only reads state; it never drains or resumes a node.
author: aicluster.infra contributors (@aicluster)
extends_documentation_fragment:
  - aicluster.infra.attributes
  - aicluster.infra.attributes.info_module
  - aicluster.infra.attributes.platform
options:
  nodes:
    description:
      - Node names or Slurm hostlist expressions (V(gpu[01-16])) to show; they are joined with commas into one argument.
      - The default (an empty list) shows every node.
      - A name Slurm does not know makes C(scontrol) fail, and the module with it.
    type: list
    elements: str
    default: []
requirements:
  - C(scontrol) from Slurm on the target, with a reachable C(slurmctld).
notes:
  - All commands run with C(LANG=C) and C(LC_ALL=C).
  - Values are returned as C(scontrol) prints them (strings); interpret C(State) flags such as V(IDLE+DRAIN) in the play.
seealso:
  - module: aicluster.infra.gpu_info
'''

EXAMPLES = r'''
- name: Read this node's Slurm record
  aicluster.infra.slurm_node_info:
    nodes: ["{{ inventory_hostname_short }}"]
  delegate_to: "{{ groups['slurm_controller'][0] }}"
  register: slurm

- name: The node must not be drained
  ansible.builtin.assert:
    that: "'DRAIN' not in slurm.nodes[0].State"

- name: Every node of the partition
  aicluster.infra.slurm_node_info:
    nodes: ["gpu[001-128]"]
  run_once: true
'''

RETURN = r'''
nodes:
  description: One dict per node record, with the C(Key=Value) pairs as C(scontrol) prints them.
  returned: success
  type: list
  elements: dict
  sample:
    - NodeName: gpu001
      Arch: x86_64
      CoresPerSocket: "48"
      CPUAlloc: "0"
      CPUTot: "192"
      Gres: gpu:h100:8
      NodeAddr: gpu001
      State: IDLE
      Partitions: gpu
      RealMemory: "2000000"
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.slurm import parse_scontrol_show_node

C_LOCALE = {'LANG': 'C', 'LC_ALL': 'C'}


def build_argv(path, nodes):
    argv = [path, 'show', 'node']
    names = [name.strip() for name in nodes if name and name.strip()]
    if names:
        argv.append(','.join(names))
    return argv


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nodes=dict(type='list', elements='str', default=[]),
        ),
        supports_check_mode=True,
    )
    bad = [name for name in module.params['nodes'] if name.strip().startswith('-')]
    if bad:
        module.fail_json(msg='node names must not start with "-" (scontrol would read them as options): %s' % bad)
    argv = build_argv(module.get_bin_path('scontrol', required=True), module.params['nodes'])
    rc, out, err = module.run_command(argv, environ_update=C_LOCALE)
    out, err = out or '', err or ''
    if rc != 0:
        module.fail_json(msg='scontrol show node failed with rc=%d: %s' % (rc, (err or out).strip()[:500]), cmd=argv, rc=rc, stdout=out, stderr=err)
    try:
        nodes = parse_scontrol_show_node(out)
    except ParseError as exc:
        module.fail_json(msg='scontrol show node printed output that could not be parsed: %s' % exc, cmd=argv, rc=rc, stdout=out, stderr=err)
    module.exit_json(changed=False, nodes=nodes)


if __name__ == '__main__':
    main()
