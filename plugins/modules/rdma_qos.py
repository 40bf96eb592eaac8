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
    description: The DSCP the CNPs carry (C(roce_np/cnp_dscp)); V(null) leaves it.
    type: int
    default: 48
  cnp_prio:
    description: The 802.1p priority the CNPs carry (C(roce_np/cnp_802p_prio)); V(null) leaves it.
    type: int
    default: 6
  roce_tos:
    description:
      - RDMA-CM's default ToS (configfs C(default_roce_tos), 0-255); V(106) is DSCP 26 with ECT(0) set
        (26 * 4 + 2). V(null) leaves it.
    type: int
    default: 106
  roce_mode:
    description: RDMA-CM's default RoCE mode (configfs C(default_roce_mode)); V(null) leaves it.
    type: str
    choices: ['RoCE v2', 'IB/RoCE v1']
    default: RoCE v2
  traffic_class:
    description:
      - The global traffic class of the verbs port (MLNX_OFED C(tc/<port>/traffic_class), 0-255), written only where
        the file exists; V(null) leaves it.
    type: int
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

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aicluster.infra.plugins.module_utils import rdma_qos
from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.mlnx_qos import parse_mlnx_qos

ENVIRON = {'LANG': 'C', 'LC_ALL': 'C'}
_ECN_ABSENT = 'the ECN sysfs files are absent (MLNX_OFED/DOCA has them; the inbox driver does not)'
_CM_ABSENT = 'the RDMA-CM configfs files are absent (is configfs mounted and rdma_cm loaded?)'
# traffic_class is left out: only MLNX_OFED has it, its absence is normal on the inbox stack.
WHY_ABSENT = {'ecn_np': _ECN_ABSENT, 'ecn_rp': _ECN_ABSENT, 'cnp_dscp': _ECN_ABSENT, 'cnp_prio': _ECN_ABSENT,
              'roce_tos': _CM_ABSENT, 'roce_mode': _CM_ABSENT}


class Failure(Exception):
    """A tool or a file that failed unexpectedly: fail_json's arguments."""

    def __init__(self, **kwargs):
        super(Failure, self).__init__(kwargs.get('msg'))
        self.kwargs = kwargs


def run(module, argv):
    rc, out, err = module.run_command(argv, environ_update=ENVIRON)
    return rc, out, err


def read(path):
    """The text of a sysfs/configfs attribute, or None when it is absent."""
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def write(path, text):
    try:
        with open(path, 'w') as handle:
            handle.write(text)
    except (IOError, OSError) as exc:
        raise Failure(msg='writing %r to %s failed: %s' % (text.strip(), path, exc), path=path)


def find_tool(module, params, problems):
    """('mlnx_qos' or 'dcb', its path), or (None, None) with a problem added."""
    tool = params['tool']
    if tool in ('auto', 'mlnx_qos'):
        path = params['mlnx_qos_path'] or module.get_bin_path('mlnx_qos')
        if params['mlnx_qos_path'] and not (os.path.isfile(path) and os.access(path, os.X_OK)):
            problems.append('mlnx_qos_path: %s is not an executable file' % path)
            return None, None
        if path:
            return 'mlnx_qos', path
        if tool == 'mlnx_qos':
            problems.append('tool: mlnx_qos is not installed (mlnx-tools, with DOCA or MLNX_OFED; or give '
                            'mlnx_qos_path)')
            return None, None
    path = params['dcb_path'] or module.get_bin_path('dcb')
    if params['dcb_path'] and not (os.path.isfile(path) and os.access(path, os.X_OK)):
        problems.append('dcb_path: %s is not an executable file' % path)
        return None, None
    if not path:
        problems.append('tool: neither mlnx_qos (mlnx-tools) nor dcb (iproute2) is installed')
        return None, None
    return 'dcb', path


def find_rdma_device(params, problems):
    if params['rdma_device']:
        return params['rdma_device']
    folder = os.path.join(params['sysfs_root'], 'class', 'net', params['netdev'], 'device', 'infiniband')
    names = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
    if not names:
        problems.append('rdma_device: %s has no RDMA device (nothing under %s); give rdma_device'
                        % (params['netdev'], folder))
        return None
    return names[0]


def read_dcb(module, tool, path, netdev):
    """(trust/pfc/dscp2prio, None) or (None, why the netdev has no DCB); raises Failure for anything else."""
    if tool == 'mlnx_qos':
        argv = [path, '-i', netdev]
        rc, out, err = run(module, argv)
        try:
            parsed = parse_mlnx_qos(out)
        except ParseError as exc:
            if rc != 0:
                # not the report: a traceback or an error of the tool; its last line says what
                return None, 'mlnx_qos: %s' % ((err or out).strip().splitlines() or ['rc=%d' % rc])[-1]
            raise Failure(msg='mlnx_qos output not understood: %s' % exc, cmd=argv, rc=rc, stdout=out, stderr=err)
        why = rdma_qos.mlnx_qos_no_dcb(parsed)
        if why:
            return None, 'mlnx_qos: %s' % why
        if rc != 0:
            raise Failure(msg='mlnx_qos failed (rc=%d)' % rc, cmd=argv, rc=rc, stdout=out, stderr=err)
        return rdma_qos.dcb_from_mlnx_qos(parsed), None
    state = {}
    for what, parser in (('app', rdma_qos.parse_dcb_app), ('pfc', rdma_qos.parse_dcb_pfc)):
        argv = [path, '-j', what, 'show', 'dev', netdev]
        rc, out, err = run(module, argv)
        if rc != 0:
            # dcb.c: perror("Attribute read") -> "Attribute read: Operation not supported" (no dcbnl_ops) or
            # "... No such device"
            return None, 'dcb: %s' % ((err or out).strip().splitlines() or ['rc=%d' % rc])[0]
        try:
            state[what] = parser(out)
        except ParseError as exc:
            raise Failure(msg='dcb output not understood: %s' % exc, cmd=argv, rc=rc, stdout=out, stderr=err)
    return {'trust': 'dscp' if state['app'] else 'pcp', 'pfc': state['pfc'], 'dscp2prio': state['app']}, None


def read_number(path, what):
    text = read(path)
    if text is None:
        return None
    try:
        return rdma_qos.parse_number(text, what)
    except ParseError as exc:
        raise Failure(msg='%s: %s' % (path, exc), path=path)


def read_files(file_paths, check_mode):
    """ECN, CNP, RDMA-CM and traffic-class state; None where absent. RDMA-CM's configfs directory of the device is
    made when absent (configfs shows the attributes only then); in check mode it is removed again after reading
    (the values live in the kernel's cma_device, not in the directory)."""
    state = {}
    for role, name in (('roce_np', 'ecn_np'), ('roce_rp', 'ecn_rp')):
        folder = file_paths['ecn_enable'][role]
        if not os.path.isdir(folder):
            state[name] = None
            continue
        values = [read_number(os.path.join(folder, str(prio)), '%s enable %d' % (role, prio))
                  for prio in rdma_qos.PRIORITIES]
        state[name] = None if None in values else [prio for prio, value in enumerate(values) if value]
    state['cnp_dscp'] = read_number(file_paths['cnp_dscp'], 'cnp_dscp')
    state['cnp_prio'] = read_number(file_paths['cnp_prio'], 'cnp_802p_prio')
    state['roce_tos'] = state['roce_mode'] = state['traffic_class'] = None
    if 'rdma_cm_device' not in file_paths:
        return state
    made = False
    if os.path.isdir(file_paths['rdma_cm']) and not os.path.isdir(file_paths['rdma_cm_device']):
        try:
            os.mkdir(file_paths['rdma_cm_device'])
            made = True
        except OSError as exc:
            raise Failure(msg='mkdir %s failed: %s' % (file_paths['rdma_cm_device'], exc),
                          path=file_paths['rdma_cm_device'])
    try:
        state['roce_tos'] = read_number(file_paths['roce_tos'], 'default_roce_tos')
        mode = read(file_paths['roce_mode'])
        if mode is not None:
            try:
                state['roce_mode'] = rdma_qos.parse_roce_mode(mode)
            except ParseError as exc:
                raise Failure(msg='%s: %s' % (file_paths['roce_mode'], exc), path=file_paths['roce_mode'])
    finally:
        if made and check_mode:
            try:
                os.rmdir(file_paths['rdma_cm_device'])
            except OSError:
                pass
    text = read(file_paths['traffic_class'])
    if text is not None:
        try:
            state['traffic_class'] = rdma_qos.parse_traffic_class(text)
        except ParseError as exc:
            raise Failure(msg='%s: %s' % (file_paths['traffic_class'], exc), path=file_paths['traffic_class'])
    return state


def read_state(module, tool, path, params, file_paths, problems):
    dcb, why = read_dcb(module, tool, path, params['netdev'])
    if why:
        problems.append('netdev: %s has no DCB (%s); give the RoCE port of an adapter with DCB (mlx5)'
                        % (params['netdev'], why))
        return None
    state = dict(dcb)
    state.update(read_files(file_paths, module.check_mode))
    return state


def apply(module, tool, path, params, settings, state, file_paths):
    """Change what differs; returns the commands and writes done."""
    netdev = params['netdev']
    done = []

    def tool_run(argv):
        rc, out, err = run(module, argv)
        if rc != 0:
            raise Failure(msg='%s failed (rc=%d)' % (os.path.basename(argv[0]), rc), cmd=argv, rc=rc, stdout=out,
                          stderr=err, cmds=done)
        done.append(' '.join(argv))
        return out

    if tool == 'mlnx_qos':
        argv = rdma_qos.mlnx_qos_trust_pfc_argv(path, netdev, settings, state)
        if argv:
            try:
                state = dict(state, **rdma_qos.dcb_from_mlnx_qos(parse_mlnx_qos(tool_run(argv))))
            except ParseError as exc:
                raise Failure(msg='mlnx_qos output not understood: %s' % exc, cmd=argv, cmds=done)
        argv = rdma_qos.mlnx_qos_dscp_argv(path, netdev, settings, state)
        if argv:
            tool_run(argv)
    else:
        for argv in rdma_qos.dcb_argvs(path, netdev, settings, state):
            tool_run(argv)
    for target, text in rdma_qos.file_writes(file_paths, settings, state):
        write(target, text)
        done.append('%s = %s' % (target, text.strip()))
    return done


def main():
    module = AnsibleModule(
        argument_spec=dict(
            netdev=dict(type='str', required=True),
            rdma_device=dict(type='str'),
            port=dict(type='int', default=1),
            trust=dict(type='str', default='dscp', choices=list(rdma_qos.TRUSTS)),
            pfc_priorities=dict(type='list', elements='int', default=[3]),
            dscp_map=dict(type='dict', default={'26': 3, '48': 6}),
            ecn_priorities=dict(type='list', elements='int', default=[3]),
            cnp_dscp=dict(type='int', default=48),
            cnp_prio=dict(type='int', default=6),
            roce_tos=dict(type='int', default=106),
            roce_mode=dict(type='str', default='RoCE v2', choices=list(rdma_qos.ROCE_MODES)),
            traffic_class=dict(type='int', default=106),
            tool=dict(type='str', default='auto', choices=['auto', 'mlnx_qos', 'dcb']),
            mlnx_qos_path=dict(type='path'),
            dcb_path=dict(type='path'),
            sysfs_root=dict(type='path', default='/sys'),
            configfs_root=dict(type='path', default='/sys/kernel/config'),
        ),
        supports_check_mode=True,
    )
    params = module.params
    problems = []
    tool, path = find_tool(module, params, problems)
    settings, bad, warnings = rdma_qos.wanted_settings(params, tool)
    problems.extend(bad)
    netdev_dir = os.path.join(params['sysfs_root'], 'class', 'net', params['netdev'])
    state = None
    rdma_device = None
    try:
        if not os.path.isdir(netdev_dir):
            problems.append('netdev: %s does not exist (no %s)' % (params['netdev'], netdev_dir))
        else:
            rdma_device = find_rdma_device(params, problems)
            file_paths = rdma_qos.paths(params['sysfs_root'], params['configfs_root'], params['netdev'],
                                        rdma_device, params['port'])
            if tool:
                state = read_state(module, tool, path, params, file_paths, problems)
        if problems:
            module.fail_json(msg='rdma_qos %s: nothing changed: %s' % (params['netdev'], '; '.join(problems)),
                             problems=problems)
        for warning in warnings:
            module.warn(warning)
        missing = rdma_qos.unavailable(settings, state)
        for name in missing:
            if name in WHY_ABSENT:
                module.warn('%s on %s: not changed, %s' % (name, params['netdev'], WHY_ABSENT[name]))
        cmds = []
        if module.check_mode or not rdma_qos.differing(settings, state):
            after = rdma_qos.predict(state, settings)
        else:
            cmds = apply(module, tool, path, params, settings, state, file_paths)
            after = read_state(module, tool, path, params, file_paths, problems)
            if after is None:
                raise Failure(msg='rdma_qos %s: the DCB state could not be read back: %s'
                              % (params['netdev'], '; '.join(problems)), cmds=cmds)
            left = rdma_qos.differing(settings, after)
            if left:
                raise Failure(msg='rdma_qos %s: still differs after the changes: %s'
                              % (params['netdev'], ', '.join(left)), cmds=cmds,
                              current=rdma_qos.json_state(after))
    except Failure as exc:
        module.fail_json(**exc.kwargs)
    changes = rdma_qos.changes(state, after, settings)
    module.exit_json(
        changed=bool(changes),
        settings=rdma_qos.json_settings(settings),
        current=rdma_qos.json_state(state),
        changes=changes,
        diff={'before': rdma_qos.diff_text(state, settings), 'after': rdma_qos.diff_text(after, settings),
              'before_header': '%s (%s)' % (params['netdev'], rdma_device),
              'after_header': '%s (%s)' % (params['netdev'], rdma_device)},
        unavailable=missing,
        cmds=cmds,
        tool=tool,
        rdma_device=rdma_device,
    )


if __name__ == '__main__':
    main()
