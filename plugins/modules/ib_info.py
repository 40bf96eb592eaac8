#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: ib_info
short_description: Gather InfiniBand and RoCE adapter facts from ibstat, ibdev2netdev and show_gids
version_added: 0.1.0
description:
  - Runs C(ibstat) and returns every channel adapter (HCA) with its ports, state, rate, LIDs and GUIDs.
  - When C(ibdev2netdev) is installed, adds each port's network interface and its link state.
  - Adds each port's GID table and the RoCE v2 GID index that NCCL C(NCCL_IB_GID_INDEX) needs, from C(show_gids) when it
    is installed, else from the same sysfs files it reads (C(SYSFS/class/infiniband/HCA/ports/N/gids/I),
    C(gid_attrs/types/I), C(gid_attrs/ndevs/I)), since the inbox rdma-core stack has no C(show_gids).
  - When C(ibv_devinfo) is installed, adds each adapter's PSID (C(board_id)) and each port's active and maximum RDMA
    path MTU.
  - When C(ofed_info) is installed, returns the MLNX_OFED / DOCA-OFED version.
  - Reads each adapter's PCI Vital Product Data (C(SYSFS/class/infiniband/HCA/device/vpd)). The NVSwitch management
    ("bridge") functions of an HGX B200/B300 baseboard carry C(SW_MNG) there; they are RDMA devices like the HCAs but
    belong to NVLSM and the fabric manager, so by default they are left out of RV(hcas) and listed in
    RV(nvswitch_bridges) instead (see M(aicluster.infra.nvswitch_info)).
  - The module only reads state; it never changes the adapters.
author: aicluster.infra contributors (@aicluster)
extends_documentation_fragment:
  - aicluster.infra.attributes
  - aicluster.infra.attributes.info_module
  - aicluster.infra.attributes.platform
options:
  devices:
    description:
      - Restrict the result to these channel adapter names, for example V(mlx5_0).
      - The default (an empty list) returns every adapter C(ibstat) prints.
      - A name that C(ibstat) does not print is reported in RV(errors); the module does not fail for it.
      - C(ibstat) always runs for every adapter and is filtered afterwards, because it takes one adapter name at most.
    type: list
    elements: str
    default: []
  nvswitch_bridges:
    description:
      - V(exclude) leaves the NVSwitch bridge functions (VPD C(SW_MNG)) out of RV(hcas); V(include) keeps them there,
        each with RV(hcas[].nvswitch_bridge) true.
    type: str
    choices: [exclude, include]
    default: exclude
    version_added: 0.3.0
  sysfs_root:
    description:
      - The directory read as C(/sys) for the adapters' VPD, and for the GID tables where C(show_gids) is missing. The lab
        points it at hwsim's simulated tree.
    type: path
    default: /sys
    version_added: 0.3.0
requirements:
  - C(ibstat) from infiniband-diags (rdma-core) on the target.
  - Optional C(ibdev2netdev), C(show_gids) and C(ofed_info) from MLNX_OFED or DOCA-OFED; optional C(ibv_devinfo) from
    ibverbs-utils (rdma-core).
notes:
  - All tools run with C(LANG=C) and C(LC_ALL=C).
  - When C(ibstat) exits non-zero after printing some adapters (for example C(ibpanic) on one
    adapter that vanished), the module returns the adapters it printed, puts the tool's error lines
    in RV(errors) and warns. It fails only when C(ibstat) is missing, prints no adapter at all while
    failing, or prints something that is not C(ibstat) output.
  - C(ibstat) printing nothing and exiting 0 (a node without RDMA adapters) gives an empty RV(hcas).
  - The optional tools failing, or printing something unreadable, only produces a warning; their
    fields are then V(null).
  - A VPD that cannot be read (mode 0600 before kernel 6.13, so run as root) counts as no bridge.
seealso:
  - module: aicluster.infra.fabric_info
  - module: aicluster.infra.gpu_info
'''

EXAMPLES = r'''
- name: Read the HCAs of the node
  aicluster.infra.ib_info:
  register: ib

- name: Every compute port must be up at 400 Gb/s
  ansible.builtin.assert:
    that:
      - item.1.state == 'Active'
      - item.1.rate_gbps == 400
  loop: "{{ ib.hcas | subelements('ports') }}"
  loop_control:
    label: "{{ item.0.name }}/{{ item.1.port }}"

- name: Only the GPU-facing adapters
  aicluster.infra.ib_info:
    devices: [mlx5_0, mlx5_1, mlx5_2, mlx5_3]
  register: ib_gpu

- name: RoCE GID index for NCCL
  ansible.builtin.set_fact:
    nccl_ib_gid_index: "{{ ib_gpu.hcas[0].ports[0].roce_v2_gid_index }}"
'''

RETURN = r'''
hcas:
  description: The channel adapters, in the order C(ibstat) prints them.
  returned: success
  type: list
  elements: dict
  contains:
    name:
      description: Adapter name.
      type: str
      sample: mlx5_0
    ca_type:
      description: Adapter type as C(ibstat) prints it.
      type: str
      sample: MT4129
    firmware_version:
      description: Firmware version.
      type: str
      sample: 28.39.1002
    nvswitch_bridge:
      description: Whether the adapter is an NVSwitch bridge function (only ever true with O(nvswitch_bridges=include)).
      type: bool
      sample: false
      version_added: 0.3.0
    board_id:
      description:
        - The adapter's PSID, C(board_id) of C(ibv_devinfo) (the board type the firmware image is built for; cards of
          one model and vendor share it, and C(mlxfwmanager) or C(flint) pick a firmware image by it).
        - V(null) without C(ibv_devinfo) or when it does not print the adapter.
      type: str
      sample: MT_0000000838
      version_added: 0.2.0
    node_guid:
      description: Node GUID.
      type: str
      sample: "0xa088c20300ea3b7a"
    ports:
      description: The adapter's ports, with the keys the ibstat parser returns plus the merged ones below.
      type: list
      elements: dict
      contains:
        port:
          description: Port number.
          type: int
          sample: 1
        state:
          description: Logical port state.
          type: str
          sample: Active
        physical_state:
          description: Physical port state.
          type: str
          sample: LinkUp
        rate_gbps:
          description: Port rate in Gb/s.
          type: float
          sample: 400.0
        link_layer:
          description: V(InfiniBand) or V(Ethernet) (RoCE).
          type: str
          sample: InfiniBand
        base_lid:
          description: Base LID (V(0) on Ethernet ports).
          type: int
          sample: 12
        port_guid:
          description: Port GUID.
          type: str
          sample: "0xa088c20300ea3b7a"
        netdev:
          description:
            - Network interface of the port, from C(ibdev2netdev) (else from C(show_gids)).
            - V(null) when neither tool is installed or neither names one.
          type: str
          sample: ib0
        netdev_state:
          description: V(Up) or V(Down) as C(ibdev2netdev) prints it; V(null) without C(ibdev2netdev).
          type: str
          sample: Up
        roce_v2_gid_index:
          description:
            - The lowest-index RoCE v2 GID that carries an IPv4 address, else the lowest RoCE v2 GID index.
            - V(null) without a GID table (neither C(show_gids) nor the sysfs files) or when the port has no RoCE v2 GID (InfiniBand ports).
          type: int
          sample: 3
        active_mtu:
          description:
            - The port's active RDMA path MTU in bytes (C(ibv_devinfo) C(active_mtu)); V(null) without C(ibv_devinfo).
            - On RoCE it follows the netdev MTU (4096 needs a netdev MTU of at least about 4200, for example 9000).
          type: int
          sample: 4096
        max_mtu:
          description: The largest RDMA path MTU the port supports (C(ibv_devinfo) C(max_mtu)); V(null) without C(ibv_devinfo).
          type: int
          sample: 4096
        gids:
          description: The port's GID table from C(show_gids), else from sysfs (empty without either), by index.
          type: list
          elements: dict
          sample:
            - {index: 0, gid: "fe80:0000:0000:0000:a288:c2ff:fe6a:3b7a", ipv4: null, version: v1, netdev: eth2}
            - {index: 3, gid: "0000:0000:0000:0000:0000:ffff:0a00:0102", ipv4: 10.0.1.2, version: v2, netdev: eth2}
  sample:
    - name: mlx5_0
      ca_type: MT4129
      firmware_version: 28.39.1002
      board_id: MT_0000000838
      node_guid: "0xa088c20300ea3b7a"
      ports:
        - port: 1
          state: Active
          physical_state: LinkUp
          rate_gbps: 400.0
          link_layer: InfiniBand
          base_lid: 12
          port_guid: "0xa088c20300ea3b7a"
          netdev: ib0
          netdev_state: Up
          roce_v2_gid_index: null
          active_mtu: 4096
          max_mtu: 4096
          gids: []
ofed_version:
  description: The first line of C(ofed_info -s) without its trailing colon; V(null) when C(ofed_info) is not installed or fails.
  returned: success
  type: str
  sample: MLNX_OFED_LINUX-23.10-1.1.9.0
nvswitch_bridges:
  description: The names of the NVSwitch bridge functions (VPD C(SW_MNG)) C(ibstat) printed; empty on other nodes.
  returned: success
  type: list
  elements: str
  sample: [mlx5_10, mlx5_11, mlx5_12, mlx5_13]
  version_added: 0.3.0
errors:
  description:
    - Error lines the tools printed themselves (for example C(ibpanic) or C(ibwarn) lines), and a line for each
      name in O(devices) that C(ibstat) did not print.
  returned: success
  type: list
  elements: str
  sample: ["ibpanic: [1400444] main: stat of IB device 'mlx5_8' failed: No such file or directory"]
'''

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.ibstat import parse_ibstat
from ansible_collections.aicluster.infra.plugins.module_utils.ibv_devinfo import parse_ibv_devinfo
from ansible_collections.aicluster.infra.plugins.module_utils.nvswitch import is_bridge_vpd
from ansible_collections.aicluster.infra.plugins.module_utils.rdma_tools import gid_row_from_sysfs, parse_ibdev2netdev, parse_show_gids

C_LOCALE = {'LANG': 'C', 'LC_ALL': 'C'}


def _run(module, argv):
    rc, out, err = module.run_command(argv, environ_update=C_LOCALE)
    return rc, out or '', err or ''


def _stderr_lines(err):
    return [line.strip() for line in err.splitlines() if line.strip()]


def _optional(module, tool, parser):
    """Run an optional tool without arguments; its parsed rows, or None (with a warning) when it fails."""
    path = module.get_bin_path(tool, required=False)
    if not path:
        return None
    rc, out, err = _run(module, [path])
    if rc != 0:
        module.warn('%s failed (rc=%d), its fields are left null: %s' % (tool, rc, (err or out).strip()[:300]))
        return None
    try:
        return parser(out)
    except ParseError as exc:
        module.warn('%s printed output that is not %s output, its fields are left null: %s' % (tool, tool, exc))
        return None


def _ofed_version(module):
    path = module.get_bin_path('ofed_info', required=False)
    if not path:
        return None
    rc, out, dummy = _run(module, [path, '-s'])
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    if rc != 0 or not lines:
        return None
    return lines[0].rstrip(':').strip() or None


def roce_v2_gid_index(gids):
    """Lowest-index RoCE v2 GID with an IPv4 address, else the lowest v2 index, else None."""
    v2 = sorted((gid for gid in gids if str(gid.get('version', '')).lower() == 'v2' and gid.get('index') is not None),
                key=lambda gid: gid['index'])
    for gid in v2:
        if gid.get('ipv4'):
            return gid['index']
    return v2[0]['index'] if v2 else None


def merge_ports(cas, netdevs, gids):
    """Add netdev, netdev_state, gids and roce_v2_gid_index to every port of ``cas`` (in place)."""
    by_port = {}
    for row in netdevs or []:
        by_port[(row.get('dev'), row.get('port'))] = row
    gid_table = {}
    for row in gids or []:
        gid_table.setdefault((row.get('dev'), row.get('port')), []).append(row)
    for ca in cas:
        for port in ca.get('ports', []):
            key = (ca.get('name'), port.get('port'))
            link = by_port.get(key) or {}
            table = sorted(gid_table.get(key, []), key=lambda gid: (gid.get('index') is None, gid.get('index')))
            port_gids = [dict((k, gid.get(k) if gid.get(k) != '' else None) for k in ('index', 'gid', 'ipv4', 'version', 'netdev'))
                         for gid in table]
            netdev = link.get('netdev')
            if not netdev:
                netdev = next((gid['netdev'] for gid in port_gids if gid.get('netdev')), None)
            port['netdev'] = netdev or None
            port['netdev_state'] = link.get('state')
            port['gids'] = port_gids
            port['roce_v2_gid_index'] = roce_v2_gid_index(port_gids)
    return cas


def merge_mtus(cas, devinfo):
    """Add board_id (the PSID) to every adapter of ``cas`` and active_mtu and max_mtu (bytes) to every port (in place);
    from ibv_devinfo, None without it."""
    by_port = {}
    board_ids = {}
    for hca in devinfo or []:
        board_ids[hca.get('name')] = hca.get('board_id')
        for port in hca.get('ports') or []:
            by_port[(hca.get('name'), port.get('port'))] = port
    for ca in cas:
        ca['board_id'] = board_ids.get(ca.get('name'))
        for port in ca.get('ports', []):
            found = by_port.get((ca.get('name'), port.get('port'))) or {}
            port['active_mtu'] = found.get('active_mtu')
            port['max_mtu'] = found.get('max_mtu')
    return cas


def _read_text(path):
    """A sysfs file's text, or None where the kernel refuses it (EINVAL for an unused GID entry) or it is absent."""
    try:
        with open(path, 'r') as handle:
            return handle.read()
    except (OSError, ValueError):
        return None


def sysfs_gids(sysfs_root, cas):
    """The GID tables of ``cas``' ports from SYSFS/class/infiniband/HCA/ports/N/{gids,gid_attrs/types,gid_attrs/ndevs}
    (what show_gids reads), as parse_show_gids rows; for hosts without show_gids (the inbox rdma-core stack)."""
    rows = []
    for ca in cas:
        for port in ca.get('ports') or []:
            base = os.path.join(sysfs_root, 'class', 'infiniband', ca.get('name') or '', 'ports', str(port.get('port')))
            try:
                names = [name for name in os.listdir(os.path.join(base, 'gids')) if name.isdigit()]
            except OSError:
                continue
            for name in sorted(names, key=int):
                gid = _read_text(os.path.join(base, 'gids', name))
                if gid is None or gid.strip().lower() == '0000:0000:0000:0000:0000:0000:0000:0000':
                    continue
                row = gid_row_from_sysfs(ca.get('name'), port.get('port'), name, gid,
                                         _read_text(os.path.join(base, 'gid_attrs', 'types', name)),
                                         _read_text(os.path.join(base, 'gid_attrs', 'ndevs', name)))
                if row:
                    rows.append(row)
    return rows


def is_bridge(sysfs_root, name):
    """Whether the RDMA device's PCI function is an NVSwitch bridge (VPD with SW_MNG); False when unreadable."""
    try:
        with open(os.path.join(sysfs_root, 'class', 'infiniband', name, 'device', 'vpd'), 'rb') as handle:
            return is_bridge_vpd(handle.read())
    except (OSError, ValueError):
        return False


def main():
    module = AnsibleModule(
        argument_spec=dict(
            devices=dict(type='list', elements='str', default=[]),
            nvswitch_bridges=dict(type='str', choices=['exclude', 'include'], default='exclude'),
            sysfs_root=dict(type='path', default='/sys'),
        ),
        supports_check_mode=True,
    )
    devices = module.params['devices']

    ibstat = module.get_bin_path('ibstat', required=True)
    argv = [ibstat]
    rc, out, err = _run(module, argv)
    try:
        parsed = parse_ibstat(out) if (out.strip() or rc != 0) else {'cas': [], 'errors': []}
    except ParseError as exc:
        if rc != 0:
            module.fail_json(msg='ibstat failed with rc=%d: %s' % (rc, (err or out).strip()[:500]), cmd=argv, rc=rc, stdout=out, stderr=err)
        module.fail_json(msg='ibstat printed output that is not ibstat output: %s' % exc, cmd=argv, rc=rc, stdout=out, stderr=err)
    cas = parsed.get('cas') or []
    errors = list(parsed.get('errors') or [])
    errors.extend(line for line in _stderr_lines(err) if line not in errors)
    if rc != 0:
        if not cas:
            module.fail_json(msg='ibstat failed with rc=%d: %s' % (rc, (err or out).strip()[:500]), cmd=argv, rc=rc, stdout=out, stderr=err)
        module.warn('ibstat exited with rc=%d after printing %d adapter(s); they are returned and its error lines are in errors' % (rc, len(cas)))

    for ca in cas:
        ca['nvswitch_bridge'] = is_bridge(module.params['sysfs_root'], ca.get('name') or '')
    bridges = [ca['name'] for ca in cas if ca['nvswitch_bridge']]
    if module.params['nvswitch_bridges'] == 'exclude':
        cas = [ca for ca in cas if not ca['nvswitch_bridge']]

    if devices:
        seen = set(ca.get('name') for ca in cas)
        cas = [ca for ca in cas if ca.get('name') in devices]
        errors.extend('%s: not printed by ibstat' % name for name in devices if name not in seen)

    netdevs = _optional(module, 'ibdev2netdev', parse_ibdev2netdev)
    gids = _optional(module, 'show_gids', parse_show_gids)
    if gids is None:
        gids = sysfs_gids(module.params['sysfs_root'], cas)
    merge_ports(cas, netdevs, gids)
    merge_mtus(cas, _optional(module, 'ibv_devinfo', parse_ibv_devinfo))

    module.exit_json(changed=False, hcas=cas, ofed_version=_ofed_version(module), errors=errors, nvswitch_bridges=bridges)


if __name__ == '__main__':
    main()
