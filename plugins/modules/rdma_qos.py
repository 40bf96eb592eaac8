#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: rdma_qos
short_description: Lossless RoCE on one netdev - DSCP trust, PFC, DSCP map, ECN for DCQCN, CNP marking, RDMA-CM ToS
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
    description: The Ethernet netdev of the RoCE port (for example V(enp64s0np0)).
    type: str
    required: true
  rdma_device:
    description:
      - Its RDMA device (for example V(mlx5_3)); found under C(<sysfs_root>/class/net/<netdev>/device/infiniband/)
        when not given.
    type: str
  port:
    description: The RDMA device's port (configfs C(ports/<port>) and C(tc/<port>)).
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
  returned: success
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
  returned: success
  type: str
  sample: mlx5_3
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


def main():
    module = AnsibleModule(
        argument_spec=dict(
            netdev=dict(type='str', required=True),
            rdma_device=dict(type='str'),
            port=dict(type='int', default=DEFAULTS['port']),
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
        supports_check_mode=True,
    )
    params = module.params
    try:
        # the same code re-applies the settings at boot (roles/roce/files/aicluster-roce-qos)
        result = rdma_qos_host.ensure(
            params, run=lambda argv: module.run_command(argv, environ_update=ENVIRON),
            which=module.get_bin_path, check_mode=module.check_mode)
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
