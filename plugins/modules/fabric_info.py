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
  reads:
    description:
      - Read several subnets, one C(iblinkinfo -C <ca> -P <port>) each, and return their links merged.
        C(iblinkinfo) reads only the subnet of the port it opens, so on a fabric with one subnet per rail
        every rail needs its own read.
      - A read whose O(reads[].guid) an earlier read already printed is on a subnet already read, and is skipped.
      - A read that fails is listed in RV(reads) with its message; the module fails only when every read fails.
    type: list
    elements: dict
    suboptions:
      ca:
        description: Local channel adapter to read through.
        type: str
        required: true
      port:
        description: Its port.
        type: int
        default: 1
      guid:
        description: The port GUID of O(reads[].ca) (from C(ibstat)), to skip a subnet already read.
        type: str
      subnet:
        description: A label for the subnet (GID prefix, SM LID), copied to RV(reads).
        type: str
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
  - With O(reads), each link carries the read it came from in RV(links[].source) (V(mlx5_3:1)), because LIDs are
    unique within one subnet only.
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

- name: One read per subnet (one subnet per rail)
  aicluster.infra.fabric_info:
    reads:
      - {ca: mlx5_0, port: 1, guid: "0x946dae0300010000"}
      - {ca: mlx5_3, port: 1, guid: "0x946dae0300010003"}
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
    port_guid:
      description: The port GUID printed on the line (a CA port's GUID in the default layout), else V(null).
      type: str
      sample: "0x946dae0300010000"
    source:
      description: The read (V(ca:port)) that printed the line; V(null) for a single read without O(ca).
      type: str
      sample: "mlx5_0:1"
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
reads:
  description: What each read did, in order.
  returned: success
  type: list
  elements: dict
  contains:
    ca: {description: The local adapter., type: str}
    port: {description: Its port., type: int}
    guid: {description: Its port GUID as given., type: str}
    subnet: {description: The subnet label as given., type: str}
    status: {description: "V(read), V(skipped) (an earlier read printed this port) or V(failed).", type: str}
    links: {description: Lines this read printed., type: int}
    msg: {description: Why it failed or was skipped., type: str}
  sample:
    - {ca: mlx5_0, port: 1, guid: "0x946dae0300010000", subnet: null, status: read, links: 140, msg: null}
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


def _norm_guid(value):
    text = str(value or '').strip().lower()
    text = text[2:] if text.startswith('0x') else text
    try:
        return '0x%016x' % int(text, 16) if text else None
    except ValueError:
        return None


def run_read(module, path, params, source):
    """(links, errors, failure message or None) of one iblinkinfo run; each link tagged with ``source``."""
    argv = build_argv(path, params)
    rc, out, err = module.run_command(argv, environ_update=C_LOCALE)
    out, err = out or '', err or ''
    try:
        parsed = parse_iblinkinfo(out) if (out.strip() or rc != 0) else {'links': [], 'errors': []}
    except ParseError as exc:
        if rc != 0:
            return [], [], ('iblinkinfo failed with rc=%d: %s' % (rc, (err or out).strip()[:500]), argv, rc, out, err)
        return [], [], ('iblinkinfo printed output that is not iblinkinfo output: %s' % exc, argv, rc, out, err)
    links = parsed.get('links') or []
    errors = list(parsed.get('errors') or [])
    errors.extend(line.strip() for line in err.splitlines() if line.strip() and line.strip() not in errors)
    if rc != 0:
        if not links:
            return [], errors, ('iblinkinfo failed with rc=%d: %s' % (rc, (err or out).strip()[:500]), argv, rc, out, err)
        module.warn('iblinkinfo exited with rc=%d after printing %d link(s); they are returned and its error lines are in errors'
                    % (rc, len(links)))
    for link in links:
        link['source'] = source
    return links, errors, None


def read_subnets(module, path, params):
    """Every read of ``reads`` in order, a read on a subnet already read skipped; returns (links, errors, reads)."""
    links, errors, reads, seen, last = [], [], [], set(), None
    for read in params['reads']:
        source = '%s:%d' % (read['ca'], read['port'])
        record = {'ca': read['ca'], 'port': read['port'], 'guid': read.get('guid'), 'subnet': read.get('subnet'),
                  'status': 'read', 'links': 0, 'msg': None}
        reads.append(record)
        guid = _norm_guid(read.get('guid'))
        if guid and guid in seen:
            record.update(status='skipped', msg='an earlier read printed port %s: its subnet is read' % guid)
            continue
        got, got_errors, failure = run_read(module, path, dict(params, ca=read['ca'], port=read['port']), source)
        errors.extend(line for line in got_errors if line not in errors)
        if failure is not None:
            record.update(status='failed', msg=failure[0])
            errors.append('%s: %s' % (source, failure[0]))
            last = failure
            continue
        record['links'] = len(got)
        links.extend(got)
        seen.update(_norm_guid(link.get('port_guid')) for link in got if link.get('port_guid'))
    if reads and all(record['status'] == 'failed' for record in reads):
        msg, argv, rc, out, err = last
        module.fail_json(msg='every fabric read failed; the last: %s' % msg, cmd=argv, rc=rc, stdout=out, stderr=err, reads=reads)
    failed = [record for record in reads if record['status'] == 'failed']
    if failed:
        module.warn('%d of %d fabric reads failed: %s' % (len(failed), len(reads), '; '.join(
            '%s:%s %s' % (record['ca'], record['port'], record['msg']) for record in failed)))
    return links, errors, reads


def main():
    module = AnsibleModule(
        argument_spec=dict(
            switches_only=dict(type='bool', default=False),
            cas_only=dict(type='bool', default=False),
            down_only=dict(type='bool', default=False),
            ca=dict(type='str'),
            port=dict(type='int'),
            reads=dict(type='list', elements='dict', options=dict(
                ca=dict(type='str', required=True),
                port=dict(type='int', default=1),
                guid=dict(type='str'),
                subnet=dict(type='str'),
            )),
        ),
        mutually_exclusive=[('switches_only', 'cas_only'), ('reads', 'ca'), ('reads', 'port')],
        supports_check_mode=True,
    )
    if module.params['port'] is not None and module.params['port'] < 1:
        module.fail_json(msg='port must be 1 or more, got %d' % module.params['port'])
    if any(read['port'] < 1 for read in module.params['reads'] or []):
        module.fail_json(msg='every reads[].port must be 1 or more')

    path = module.get_bin_path('iblinkinfo', required=True)
    if module.params['reads']:
        links, errors, reads = read_subnets(module, path, module.params)
    else:
        source = '%s:%s' % (module.params['ca'], module.params['port'] or 1) if module.params['ca'] else None
        links, errors, failure = run_read(module, path, module.params, source)
        if failure is not None:
            msg, argv, rc, out, err = failure
            module.fail_json(msg=msg, cmd=argv, rc=rc, stdout=out, stderr=err)
        reads = []

    module.exit_json(changed=False, links=links, degraded=[link for link in links if link.get('degraded')], errors=errors,
                     reads=reads)


if __name__ == '__main__':
    main()
