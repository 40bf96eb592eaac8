# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
name: slurm_nodes
short_description: Group the cluster's nodes by their state in Slurm (drained by the gate, down, partition)
version_added: 0.1.0
description:
  - Reads C(scontrol show node --oneliner) (run on the control node, usually through C(ssh) to the Slurm controller,
    or a saved copy) and puts each node in groups by its Slurm state, drain reason and partitions.
  - Used next to the cluster's own inventory (C(-i inventories/mycluster -i slurm.slurm_nodes.yml)), where the node
    names are the inventory names, it lets a run target what Slurm sees, for example re-verify the nodes the verify
    gate drained - C(ansible-playbook playbooks/verify.yml --limit slurm_drained_by_aicluster).
  - "Groups, each prefixed with O(prefix): C(nodes); C(state_<state>) (C(idle), C(allocated), C(mixed), C(down), ...);
    C(drain); C(not_responding); C(drained_by_aicluster) (reason C(aicluster:) - the verify gate's and the health
    check's drains, which a passing verify run lifts); C(drained_by_slurm_role) (C(aicluster-slurm:), lifted by the
    slurm stage); C(drained_by_others); C(in_service); C(partition_<name>)."
  - "Host variables: C(<prefix>state) (as Slurm prints it), C(<prefix>reason) (without Slurm's [user@time] stamp),
    C(<prefix>partitions)."
  - The configuration file name must end in C(slurm_nodes.yml) or C(slurm_nodes.yaml).
author: aicluster.infra contributors (@aicluster)
extends_documentation_fragment:
  - ansible.builtin.constructed
options:
  plugin:
    description: The name of this plugin.
    required: true
    type: str
    choices: [aicluster.infra.slurm_nodes]
  command:
    description:
      - The argv that prints C(scontrol show node --oneliner), run on the control node with C(LC_ALL=C). To reach the
        controller, put C(ssh) in front, e.g. V([ssh, root@ctl01, scontrol, show, node, --oneliner]).
      - Ignored when O(source) is set.
    type: list
    elements: str
    default: [scontrol, show, node, --oneliner]
  source:
    description:
      - A file with saved C(scontrol show node) output (one-line or multi-line) to read instead of running O(command).
    type: path
  timeout:
    description: Seconds O(command) may take.
    type: int
    default: 60
  prefix:
    description: Prefix of every group and variable this plugin makes.
    type: str
    default: slurm_
'''

EXAMPLES = r'''
# inventories/mycluster/slurm.slurm_nodes.yml
plugin: aicluster.infra.slurm_nodes
command: [ssh, root@ctl01, scontrol, show, node, --oneliner]

# ansible-playbook -i inventories/mycluster -i inventories/mycluster/slurm.slurm_nodes.yml \
#   playbooks/verify.yml --limit slurm_drained_by_aicluster
'''

import os
import subprocess

from ansible.errors import AnsibleParserError
from ansible.module_utils.common.text.converters import to_native, to_text
from ansible.plugins.inventory import BaseInventoryPlugin, Constructable

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.slurm import parse_scontrol_show_node
from ansible_collections.aicluster.infra.plugins.module_utils.slurm_inventory import inventory_from_nodes


class InventoryModule(BaseInventoryPlugin, Constructable):
    NAME = 'aicluster.infra.slurm_nodes'

    def verify_file(self, path):
        return super(InventoryModule, self).verify_file(path) and path.endswith(('slurm_nodes.yml', 'slurm_nodes.yaml'))

    def _read(self):
        source = self.get_option('source')
        if source:
            try:
                with open(source, 'rb') as handle:
                    return to_text(handle.read(), errors='surrogate_or_strict'), source
            except (IOError, OSError) as exc:
                raise AnsibleParserError('slurm_nodes: cannot read source %s: %s' % (source, to_native(exc)))
        argv = list(self.get_option('command'))
        env = dict(os.environ, LANG='C', LC_ALL='C')
        try:
            done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, check=False,
                                  timeout=self.get_option('timeout'))
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise AnsibleParserError('slurm_nodes: %s failed: %s' % (argv, to_native(exc)))
        out, err = to_text(done.stdout, errors='surrogate_or_replace'), to_text(done.stderr, errors='surrogate_or_replace')
        if done.returncode != 0:
            raise AnsibleParserError('slurm_nodes: %s failed with rc=%d: %s' % (argv, done.returncode, (err or out).strip()[:500]))
        return out, ' '.join(argv)

    def parse(self, inventory, loader, path, cache=True):
        super(InventoryModule, self).parse(inventory, loader, path, cache)
        self._read_config_data(path)
        text, where = self._read()
        try:
            records = parse_scontrol_show_node(text)
        except ParseError as exc:
            raise AnsibleParserError('slurm_nodes: %s printed what is not scontrol show node output: %s' % (where, exc))
        strict = self.get_option('strict')
        for name, entry in inventory_from_nodes(records, self.get_option('prefix')).items():
            self.inventory.add_host(name)
            for group in entry['groups']:
                self.inventory.add_group(group)
                self.inventory.add_child(group, name)
            for key, value in entry['vars'].items():
                self.inventory.set_variable(name, key, value)
            host_vars = self.inventory.get_host(name).get_vars()
            self._set_composite_vars(self.get_option('compose'), host_vars, name, strict=strict)
            self._add_host_to_composed_groups(self.get_option('groups'), host_vars, name, strict=strict)
            self._add_host_to_keyed_groups(self.get_option('keyed_groups'), host_vars, name, strict=strict)
