#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: name_resolution_info
short_description: Resolve host names on the managed node, the way its programs will
description:
  - Looks up each name with the node's own resolver (C(getaddrinfo), so C(/etc/hosts), DNS and
    nsswitch all apply) and reports the addresses, the names that do not resolve, and the names
    that resolve to a loopback address.
  - One call resolves a whole cluster's host list in-process, instead of one C(getent) per name.
  - A name resolving to a loopback address (Debian's C(127.0.1.1 hostname) line) breaks Slurm,
    MPI and NCCL bootstrap, which then advertise an address no other node can reach.
version_added: 0.1.0
author:
  - aicluster.infra contributors (@aicluster)
extends_documentation_fragment:
  - aicluster.infra.attributes
  - aicluster.infra.attributes.info_module
options:
  names:
    description:
      - Host names to resolve.
    type: list
    elements: str
    required: true
  family:
    description:
      - Address family to ask for.
    type: str
    choices: [any, ipv4, ipv6]
    default: any
'''

EXAMPLES = r'''
- name: Every inventory host must resolve from every host
  aicluster.infra.name_resolution_info:
    names: "{{ groups['all'] }}"
  register: resolution

- name: Fail on names that do not resolve
  ansible.builtin.assert:
    that: resolution.unresolved | length == 0
    fail_msg: "cannot resolve {{ resolution.unresolved | join(', ') }}"
'''

RETURN = r'''
resolved:
  description: Addresses of each name that resolved, in the resolver's order, without duplicates.
  returned: always
  type: dict
  sample: {"ctl01": ["10.89.0.2"], "gpu01": ["10.89.0.3"]}
unresolved:
  description: Names that did not resolve, with the order of O(names) kept.
  returned: always
  type: list
  elements: str
  sample: ["gpu04"]
loopback:
  description: Names whose first address is a loopback address.
  returned: always
  type: list
  elements: str
  sample: ["gpu01"]
'''

import socket

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.aicluster.infra.plugins.module_utils.system import resolve

_FAMILIES = {'any': socket.AF_UNSPEC, 'ipv4': socket.AF_INET, 'ipv6': socket.AF_INET6}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            names=dict(type='list', elements='str', required=True),
            family=dict(type='str', choices=list(_FAMILIES), default='any'),
        ),
        supports_check_mode=True,
    )
    resolved, unresolved, loopback = resolve(module.params['names'], _FAMILIES[module.params['family']])
    module.exit_json(changed=False, resolved=resolved, unresolved=unresolved, loopback=loopback)


if __name__ == '__main__':
    main()
