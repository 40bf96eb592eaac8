#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: fabric_info
short_description: Gather InfiniBand fabric link facts from iblinkinfo
version_added: 0.1.0
description:
  - Runs C(iblinkinfo) (infiniband-diags) in its default layout and returns one entry per port line it prints
    (the node, the port, the negotiated width and lane speed, the logical and physical state and the peer).
  - Returns the links that C(iblinkinfo) flags as running below what both ends support (its C(Could be ...) hint),
    or that are up at a width below 4X, as RV(degraded).
  - The module only reads state. C(iblinkinfo) sends SMP queries over the fabric; it changes nothing.
author: aicluster.infra contributors (@aicluster)
extends_documentation_fragment:
  - aicluster.infra.attributes
  - aicluster.infra.attributes.info_module
  - aicluster.infra.attributes.platform
options:
  switches_only:
    description:
      - Print only switches (C(--switches-only)).
    type: bool
    default: false
  cas_only:
    description:
      - Print only channel adapters (C(--cas-only)).
    type: bool
    default: false
  down_only:
    description:
      - Print only nodes that have a port in the Down state (C(--down)).
    type: bool
    default: false
  ca:
    description:
      - Local channel adapter to send the queries through (C(-C)), for example V(mlx5_0).
      - By default C(iblinkinfo) picks the first active one.
    type: str
  port:
    description:
      - Local port of O(ca) to use (C(-P)).
    type: int
requirements:
  - C(iblinkinfo) from infiniband-diags (rdma-core) on the target, and a subnet manager on the fabric.
  - Enough privilege to open C(/dev/infiniband/umad*) (normally root).
notes:
  - All commands run with C(LANG=C) and C(LC_ALL=C).
  - Only the default layout is requested; layout-changing flags (C(--line), C(--additional), C(--diff)) are not offered.
  - On a large fabric C(iblinkinfo) takes a while and returns one entry per switch port; narrow it with O(switches_only)
    or O(down_only), or run it from one host only (C(run_once)).
  - When C(iblinkinfo) exits non-zero after printing links (for example C(ibwarn) lines about unreachable nodes), the module
    returns what it printed, puts the tool's error lines in RV(errors) and warns. It fails when C(iblinkinfo) is missing,
    fails without printing any link, or prints something that is not C(iblinkinfo) output.
seealso:
  - module: aicluster.infra.ib_info
'''

EXAMPLES = r'''
- name: Read the fabric links once
  aicluster.infra.fabric_info:
  run_once: true
  register: fabric

- name: No link may run below its capability
  ansible.builtin.assert:
    that: fabric.degraded | length == 0
    fail_msg: "{{ fabric.degraded | map(attribute='node_name') | list }}"
  run_once: true

- name: Switch ports only, through a given HCA
  aicluster.infra.fabric_info:
    switches_only: true
    ca: mlx5_0
    port: 1
  run_once: true
'''

RETURN = r'''
links:
  description: One entry per port line of C(iblinkinfo), in output order.
  returned: success
  type: list
  elements: dict
  contains:
    node_type:
      description: V(Switch), V(CA) or V(Router).
      type: str
      sample: Switch
    node_guid:
      description: GUID of the node (the port GUID for CAs).
      type: str
      sample: "0xfc6a1c0300e1d2a0"
    node_name:
      description: Node description.
      type: str
      sample: "MF0;leaf-01:MQM9700/U1"
    node_lid:
      description: LID of the node (of the port for CAs).
      type: int
      sample: 12
    port:
      description: Port number.
      type: int
      sample: 1
    width:
      description: Negotiated width; V(null) when the port is down.
      type: str
      sample: 4X
    lane_speed_gbps:
      description: Per-lane signalling rate in Gb/s; V(null) when the port is down.
      type: float
      sample: 106.25
    state:
      description: Logical port state.
      type: str
      sample: Active
    physical_state:
      description: Physical port state.
      type: str
      sample: LinkUp
    peer_lid:
      description: LID of the peer; V(null) without a peer.
      type: int
      sample: 34
    peer_port:
      description: Port number on the peer; V(null) without a peer.
      type: int
      sample: 1
    peer_name:
      description: Node description of the peer; V(null) without a peer.
      type: str
      sample: gpu-node-01 mlx5_0
    could_be:
      description: The C(Could be ...) hint when the link runs below its capability, else V(null).
      type: str
      sample: null
    degraded:
      description: Whether the link has a C(Could be) hint, or is up at a width below 4X.
      type: bool
      sample: false
  sample:
    - node_type: Switch
      node_guid: "0xfc6a1c0300e1d2a0"
      node_name: "MF0;leaf-01:MQM9700/U1"
      node_lid: 12
      port: 1
      width: 4X
      lane_speed_gbps: 106.25
      state: Active
      physical_state: LinkUp
      peer_lid: 34
      peer_port: 1
      peer_name: gpu-node-01 mlx5_0
      could_be: null
      degraded: false
degraded:
  description: The entries of RV(links) whose C(degraded) is V(true).
  returned: success
  type: list
  elements: dict
  sample: []
errors:
  description: Error lines C(iblinkinfo) printed itself (C(ibwarn), C(ibpanic), C(discover failed), ...).
  returned: success
  type: list
  elements: str
  sample: []
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.iblinkinfo import parse_iblinkinfo

C_LOCALE = {'LANG': 'C', 'LC_ALL': 'C'}


def build_argv(path, params):
    argv = [path]
    if params['switches_only']:
        argv.append('--switches-only')
    if params['cas_only']:
        argv.append('--cas-only')
    if params['down_only']:
        argv.append('--down')
    if params['ca']:
        argv.extend(['-C', params['ca']])
    if params['port'] is not None:
        argv.extend(['-P', str(params['port'])])
    return argv


def main():
    module = AnsibleModule(
        argument_spec=dict(
            switches_only=dict(type='bool', default=False),
            cas_only=dict(type='bool', default=False),
            down_only=dict(type='bool', default=False),
            ca=dict(type='str'),
            port=dict(type='int'),
        ),
        mutually_exclusive=[('switches_only', 'cas_only')],
        supports_check_mode=True,
    )
    if module.params['port'] is not None and module.params['port'] < 1:
        module.fail_json(msg='port must be 1 or more, got %d' % module.params['port'])

    argv = build_argv(module.get_bin_path('iblinkinfo', required=True), module.params)
    rc, out, err = module.run_command(argv, environ_update=C_LOCALE)
    out, err = out or '', err or ''
    try:
        parsed = parse_iblinkinfo(out) if (out.strip() or rc != 0) else {'links': [], 'errors': []}
    except ParseError as exc:
        if rc != 0:
            module.fail_json(msg='iblinkinfo failed with rc=%d: %s' % (rc, (err or out).strip()[:500]), cmd=argv, rc=rc, stdout=out, stderr=err)
        module.fail_json(msg='iblinkinfo printed output that is not iblinkinfo output: %s' % exc, cmd=argv, rc=rc, stdout=out, stderr=err)
    links = parsed.get('links') or []
    errors = list(parsed.get('errors') or [])
    errors.extend(line.strip() for line in err.splitlines() if line.strip() and line.strip() not in errors)
    if rc != 0:
        if not links:
            module.fail_json(msg='iblinkinfo failed with rc=%d: %s' % (rc, (err or out).strip()[:500]), cmd=argv, rc=rc, stdout=out, stderr=err)
        module.warn('iblinkinfo exited with rc=%d after printing %d link(s); they are returned and its error lines are in errors' % (rc, len(links)))

    module.exit_json(changed=False, links=links, degraded=[link for link in links if link.get('degraded')], errors=errors)


if __name__ == '__main__':
    main()
