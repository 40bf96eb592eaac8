#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: rdma_qos
short_description: Lossless RoCE on netdevs - DSCP trust, PFC, DSCP map, ECN for DCQCN, CNP marking, RDMA-CM ToS
version_added: 0.1.0
description:
  - Reads the QoS state of one Ethernet netdev and of its RDMA device and sets what differs from the wanted
    settings; nothing is written when everything is right, so applying it again changes nothing, and a partial
    state (PFC right, ECN off) is completed.
  - Trust, PFC and the DSCP-to-priority entries go through C(mlnx_qos) (mlnx-tools, with DOCA or MLNX_OFED) or
    iproute2's C(dcb) on the inbox stack (O(tool)). With C(dcb) the trust follows the DSCP entries, as mlx5 sets it
    (DSCP trust exactly while DSCP APP entries exist; PCP trust is set by flushing them).
  - ECN for DCQCN (notification and reaction point per priority) and the CNP's DSCP and 802.1p priority are
    MLNX_OFED's sysfs files under C(<sysfs_root>/class/net/<netdev>/ecn/). RDMA-CM's default ToS and RoCE mode are
    configfs files under C(<configfs_root>/rdma_cm/<rdma_device>/ports/<port>/); the device directory is made
    first when it is absent (the kernel then makes the ports tree), and removed again in check mode. The verbs
    traffic class is MLNX_OFED's C(<sysfs_root>/class/infiniband/<rdma_device>/tc/<port>/traffic_class), written
    only where the driver has it.
  - A setting whose interface is absent (the inbox driver has no ECN sysfs and no traffic_class file; configfs not
    mounted or rdma_cm not loaded) is not changed, named in RV(unavailable), and warned about (except the traffic
    class, which only MLNX_OFED has).
  - All problems are found before any change and reported in one failure, one line each - a priority outside 0-7,
    a DSCP outside 0-63, a ToS or traffic class outside 0-255, a netdev that does not exist or has no DCB (as
    C(mlnx_qos) or C(dcb) says).
  - After the changes everything is read again; a setting that still differs fails the module naming it.
  - Several ports in one module run with O(ports) (the same settings on each) - every port is read and compared
    before any is changed, a problem on any port changes nothing on all of them, and only the ports that differ are
    changed. A re-run that changes nothing costs one remote task per host instead of one per port.
  - Supports check mode (reads and reports; writes nothing) and diff mode (one line per setting).
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
  netdev:
    description:
      - The Ethernet netdev of the RoCE port (for example V(enp64s0np0)). One of O(netdev) and O(ports) is required.
    type: str
  rdma_device:
    description:
      - Its RDMA device (for example V(mlx5_3)); found under C(<sysfs_root>/class/net/<netdev>/device/infiniband/)
        when not given.
    type: str
  port:
    description: The RDMA device's port (configfs C(ports/<port>) and C(tc/<port>)).
    type: int
    default: 1
  ports:
    description:
      - Several RoCE ports to hold the same settings, in one module run (instead of O(netdev)).
    type: list
    elements: dict
    suboptions:
      netdev:
        description: The port's Ethernet netdev.
        type: str
        required: true
      rdma_device:
        description: Its RDMA device; found through sysfs when not given.
        type: str
      port:
        description: The RDMA device's port.
        type: int
        default: 1
  trust:
    description:
      - How the NIC classifies received packets into priorities. V(pcp) leaves O(dscp_map) unapplied (a DSCP entry
        switches mlx5 to DSCP trust).
    type: str
    choices: [dscp, pcp]
    default: dscp
  pfc_priorities:
    description: The priorities with PFC on; PFC is switched off on every other one.
    type: list
    elements: int
    default: [3]
  dscp_map:
    description:
      - DSCP-to-priority entries to hold (DSCP 0-63 to priority 0-7); other DSCPs are left as they are. The default
        puts RoCE data (DSCP 26) on priority 3 and the CNPs (DSCP 48) on priority 6, as NVIDIA and Cumulus do
        (Broadcom NICs put CNPs on 7).
    type: dict
    default: {'26': 3, '48': 6}
  ecn_priorities:
    description:
      - The priorities whose ECN notification point (C(roce_np), sends CNPs for ECN-marked packets) and reaction
        point (C(roce_rp), slows down on CNPs) are switched on; the others are left as they are.
    type: list
    elements: int
    default: [3]
  cnp_dscp:
    description:
      - The DSCP the CNPs carry (C(roce_np/cnp_dscp)), an integer 0-63; V(null) leaves it.
      - Type C(raw) so that V(null) reaches the module (an C(int) option with a default refuses it).
    type: raw
    default: 48
  cnp_prio:
    description: The 802.1p priority the CNPs carry (C(roce_np/cnp_802p_prio)), an integer 0-7; V(null) leaves it.
    type: raw
    default: 6
  roce_tos:
    description:
      - RDMA-CM's default ToS (configfs C(default_roce_tos), an integer 0-255); V(106) is DSCP 26 with ECT(0) set
        (26 * 4 + 2). V(null) leaves it.
    type: raw
    default: 106
  roce_mode:
    description: RDMA-CM's default RoCE mode (configfs C(default_roce_mode)), V(RoCE v2) or V(IB/RoCE v1); V(null) leaves it.
    type: raw
    default: RoCE v2
  traffic_class:
    description:
      - The global traffic class of the verbs port (MLNX_OFED C(tc/<port>/traffic_class), an integer 0-255), written
        only where the file exists; V(null) leaves it.
    type: raw
    default: 106
  tool:
    description:
      - What sets trust, PFC and the DSCP map. V(auto) - C(mlnx_qos) when it is found (or O(mlnx_qos_path) is
        given), else C(dcb).
    type: str
    choices: [auto, mlnx_qos, dcb]
    default: auto
  mlnx_qos_path:
    description: The C(mlnx_qos) program; found on the PATH when not given.
    type: path
  dcb_path:
    description: The C(dcb) program (iproute2); found on the PATH (and the sbin directories) when not given.
    type: path
  sysfs_root:
    description: Where sysfs is mounted (tests point it at a fake tree).
    type: path
    default: /sys
  configfs_root:
    description: Where configfs is mounted.
    type: path
    default: /sys/kernel/config
notes:
  - The tools run as argv lists with C(LANG=C) and C(LC_ALL=C).
  - sysfs and configfs attributes are written in place (a temporary file and a rename cannot replace a kernel
    attribute).
  - The settings do not survive a driver restart or a reboot; role C(roce) re-applies them at every boot.
seealso:
  - name: configfs-rdma_cm
    description: The kernel's ABI of RDMA-CM's configfs (default_roce_mode, default_roce_tos).
    link: https://www.kernel.org/doc/Documentation/ABI/testing/configfs-rdma_cm
  - name: Explicit Congestion Notification (ECN), MLNX_OFED
    description: NVIDIA's description of the ECN sysfs files (roce_np, roce_rp, enable per priority).
    link: https://docs.nvidia.com/networking/display/MLNXOFEDv497100LTS/Explicit+Congestion+Notification+%28ECN%29
  - name: dcb-app(8) and dcb-pfc(8)
    description: iproute2's DCB APP table and PFC commands.
    link: https://man7.org/linux/man-pages/man8/dcb-app.8.html
'''

EXAMPLES = r'''
- name: Lossless RoCE on a GPU-fabric port (the defaults - DSCP 26 on priority 3, CNPs DSCP 48 priority 6)
  aicluster.infra.rdma_qos:
    netdev: enp64s0np0

- name: Read only - does the port hold the settings (net.roce_qos)
  aicluster.infra.rdma_qos:
    netdev: enp64s0np0
  check_mode: true
  register: roce_qos

- name: Every GPU-fabric port of the node in one module run
  aicluster.infra.rdma_qos:
    ports:
      - {netdev: enp24s0np0, rdma_device: mlx5_0}
      - {netdev: enp64s0np0, rdma_device: mlx5_3}
  register: roce_qos  # roce_qos.ports: one entry per port

- name: A Broadcom-style fabric - CNPs on priority 7, the inbox stack's dcb
  aicluster.infra.rdma_qos:
    netdev: ens1f0np0
    tool: dcb
    dscp_map: {26: 3, 48: 7}
    cnp_prio: 7
    traffic_class: null
'''

RETURN = r'''
settings:
  description: The wanted settings, normalized (DSCP keys as strings); V(null) where a setting is left.
  returned: success
  type: dict
  sample: {trust: dscp, pfc: [3], dscp_map: {"26": 3, "48": 6}, ecn_np: [3], ecn_rp: [3], cnp_dscp: 48,
           cnp_prio: 6, roce_tos: 106, roce_mode: RoCE v2, traffic_class: 106}
current:
  description:
    - What was read before any change - trust, pfc, dscp2prio (every DSCP entry, DSCP to a list of priorities),
      ecn_np and ecn_rp (priorities with ECN on), cnp_dscp, cnp_prio, roce_tos, roce_mode, traffic_class (V(-1) when
      no global class is set); V(null) where the interface is absent.
  returned: success, without O(ports) (each entry of RV(ports) has its own)
  type: dict
  sample: {trust: pcp, pfc: [], dscp2prio: {}, ecn_np: [], ecn_rp: [], cnp_dscp: 0, cnp_prio: 7, roce_tos: 0,
           roce_mode: RoCE v2, traffic_class: -1}
changes:
  description: One line per setting that changed (check mode - would change), C(setting - before -> after).
  returned: success
  type: list
  elements: str
  sample: ["trust: pcp -> dscp", "pfc: none -> 3", "ecn_np: none -> 3", "roce_tos: 0 -> 106"]
diff:
  description: Before and after, one line per managed setting.
  returned: success
  type: dict
  sample: {before: "trust: pcp\npfc: none\n", after: "trust: dscp\npfc: 3\n"}
unavailable:
  description: Managed settings whose sysfs or configfs interface is absent here; they are not changed.
  returned: success
  type: list
  elements: str
  sample: [traffic_class]
cmds:
  description: The commands run to change trust, PFC and the DSCP map, and the attributes written (C(path = value)).
  returned: success
  type: list
  elements: str
  sample: ["mlnx_qos -i enp64s0np0 --trust dscp --pfc 0,0,0,1,0,0,0,0", "/sys/class/net/enp64s0np0/ecn/roce_np/enable/3 = 1"]
tool:
  description: The tool that read and set trust, PFC and the DSCP map.
  returned: success
  type: str
  sample: mlnx_qos
rdma_device:
  description: The RDMA device of the netdev.
  returned: success, without O(ports)
  type: str
  sample: mlx5_3
ports:
  description:
    - With O(ports), one entry per port in the order given - C(netdev), C(port), C(rdma_device), C(tool),
      C(changed), C(changes), C(current), C(unavailable), C(cmds); a port that could not be read has C(failed),
      C(msg) and C(problems) instead. Also returned on failure. The top-level C(changes) and C(cmds) then list every
      port's, each change prefixed with its netdev, and C(unavailable) the settings absent on any port.
  returned: with O(ports)
  type: list
  elements: dict
  sample: [{netdev: enp24s0np0, port: 1, rdma_device: mlx5_0, tool: mlnx_qos, changed: false, changes: [],
            unavailable: [], cmds: []}]
problems:
  description: On failure before any change, one line per problem (the same as in C(msg)).
  returned: failure
  type: list
  elements: str
  sample: ["pfc_priorities: 8 is not a priority (allowed: 0-7)"]
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aicluster.infra.plugins.module_utils import rdma_qos
from ansible_collections.aicluster.infra.plugins.module_utils import rdma_qos_host
from ansible_collections.aicluster.infra.plugins.module_utils.rdma_qos_host import DEFAULTS, ENVIRON, Failure


def _port_entry(entry):
    """One port's part of the result (ports mode), JSON-safe."""
    out = {'netdev': entry['netdev'], 'port': entry['port'], 'rdma_device': entry.get('rdma_device'),
           'tool': entry.get('tool')}
    if entry.get('failed'):
        out.update(failed=True, msg=entry.get('msg'), problems=entry.get('problems') or [])
        return out
    out.update(changed=bool(entry.get('changes')), changes=entry.get('changes') or [],
               current=rdma_qos.json_state(entry['state']) if entry.get('state') is not None else None,
               unavailable=entry.get('unavailable') or [], cmds=entry.get('cmds') or [])
    return out


def _run_ports(module, params, run):
    """Several ports in one module run: all read and compared before any change (rdma_qos_host.ensure_ports)."""
    try:
        entries, problems = rdma_qos_host.ensure_ports(params, params['ports'], run, module.get_bin_path,
                                                       check_mode=module.check_mode)
    except Failure as exc:
        kwargs = dict(exc.kwargs)
        kwargs['ports'] = [_port_entry(entry) for entry in kwargs.get('ports') or []]
        module.fail_json(**kwargs)
    ports = [_port_entry(entry) for entry in entries]
    if problems:
        module.fail_json(msg='rdma_qos: nothing changed on any port: %s' % '; '.join(problems), problems=problems,
                         ports=ports)
    warnings = []
    for entry in entries:
        warnings.extend(line for line in entry.get('warnings') or [] if line not in warnings)
    for warning in warnings:
        module.warn(warning)
    before, after = [], []
    for entry in entries:
        header = '# %s (%s)\n' % (entry['netdev'], entry.get('rdma_device'))
        before.append(header + rdma_qos.diff_text(entry['state'], entry['settings']))
        after.append(header + rdma_qos.diff_text(entry['after'], entry['settings']))
    module.exit_json(
        changed=any(port['changed'] for port in ports),
        settings=rdma_qos.json_settings(entries[0]['settings']) if entries else None,
        ports=ports,
        changes=['%s: %s' % (port['netdev'], line) for port in ports for line in port['changes']],
        unavailable=sorted(set(name for port in ports for name in port['unavailable'])),
        cmds=[cmd for port in ports for cmd in port['cmds']],
        tool=entries[0].get('tool') if entries else None,
        diff={'before': ''.join(before), 'after': ''.join(after)},
    )


def main():
    module = AnsibleModule(
        argument_spec=dict(
            netdev=dict(type='str'),
            rdma_device=dict(type='str'),
            port=dict(type='int', default=DEFAULTS['port']),
            ports=dict(type='list', elements='dict', options=dict(
                netdev=dict(type='str', required=True),
                rdma_device=dict(type='str'),
                port=dict(type='int', default=DEFAULTS['port']),
            )),
            trust=dict(type='str', default=DEFAULTS['trust'], choices=list(rdma_qos.TRUSTS)),
            pfc_priorities=dict(type='list', elements='int', default=DEFAULTS['pfc_priorities']),
            dscp_map=dict(type='dict', default=DEFAULTS['dscp_map']),
            ecn_priorities=dict(type='list', elements='int', default=DEFAULTS['ecn_priorities']),
            # raw: null (leave the setting) must reach the module; wanted_settings checks the values
            cnp_dscp=dict(type='raw', default=DEFAULTS['cnp_dscp']),
            cnp_prio=dict(type='raw', default=DEFAULTS['cnp_prio']),
            roce_tos=dict(type='raw', default=DEFAULTS['roce_tos']),
            roce_mode=dict(type='raw', default=DEFAULTS['roce_mode']),
            traffic_class=dict(type='raw', default=DEFAULTS['traffic_class']),
            tool=dict(type='str', default=DEFAULTS['tool'], choices=['auto', 'mlnx_qos', 'dcb']),
            mlnx_qos_path=dict(type='path'),
            dcb_path=dict(type='path'),
            sysfs_root=dict(type='path', default=DEFAULTS['sysfs_root']),
            configfs_root=dict(type='path', default=DEFAULTS['configfs_root']),
        ),
        required_one_of=[('netdev', 'ports')],
        mutually_exclusive=[('netdev', 'ports'), ('rdma_device', 'ports')],
        supports_check_mode=True,
    )
    params = module.params

    def run(argv):
        return module.run_command(argv, environ_update=ENVIRON)

    if params['ports'] is not None:
        _run_ports(module, params, run)
        return
    try:
        # the same code re-applies the settings at boot (roles/roce/files/aicluster-roce-qos)
        result = rdma_qos_host.ensure(params, run=run, which=module.get_bin_path, check_mode=module.check_mode)
    except Failure as exc:
        module.fail_json(**exc.kwargs)
    if result['problems']:
        module.fail_json(msg='rdma_qos %s: nothing changed: %s' % (params['netdev'], '; '.join(result['problems'])),
                         problems=result['problems'])
    for warning in result['warnings']:
        module.warn(warning)
    settings, state, after = result['settings'], result['state'], result['after']
    header = '%s (%s)' % (params['netdev'], result['rdma_device'])
    module.exit_json(
        changed=bool(result['changes']),
        settings=rdma_qos.json_settings(settings),
        current=rdma_qos.json_state(state),
        changes=result['changes'],
        diff={'before': rdma_qos.diff_text(state, settings), 'after': rdma_qos.diff_text(after, settings),
              'before_header': header, 'after_header': header},
        unavailable=result['unavailable'],
        cmds=result['cmds'],
        tool=result['tool'],
        rdma_device=result['rdma_device'],
    )


if __name__ == '__main__':
    main()
