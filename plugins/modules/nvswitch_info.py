#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: nvswitch_info
short_description: The node's NVSwitch (NVLink) generation from its PCI functions, before any driver is installed
version_added: 0.3.0
description:
  - Reads the PCI functions in sysfs (C(/sys/bus/pci/devices/*/vendor), C(device), C(class)), the nvidia-nvswitch
    driver's C(/proc/driver/nvidia-nvswitch/devices), and the Vital Product Data (C(vpd)) of every Mellanox (15b3)
    function with the RDMA devices under its C(infiniband/) directory.
  - "NVLink 2/3/4 (HGX-2, HGX A100, HGX H100/H200): NVIDIA functions of class 0680, device 1ac2, 1af1 or 22a3. They are
    on the PCI bus before the driver is installed; C(/dev/nvidia-nvswitch*) and the proc tree only appear once it is
    loaded."
  - "NVLink 5 (HGX B200/B300): no NVSwitch on the host's PCI bus; ConnectX-7 bridge functions whose VPD carries
    C(SW_MNG) (vendor field C(SMDL)) manage the switches through NVLSM and C(ib_umad). Their RDMA devices (mlx5_N) are
    returned in RV(bridge_devices) so that no HCA default picks them. The VPD is read from the PCI function, so the
    bridges are found before mlx5_ib is loaded too (NVIDIA/gpu-operator issue 2781 - detection through
    C(/sys/class/infiniband) finds nothing then)."
  - Returns the plan the nvidia_driver role follows - the fabric manager where there are NVSwitches, and on NVLink 5
    also C(mlx5_ib) and C(ib_umad) loaded. The packages (NVLSM, NVSDM, NSCQ) are named by branch and OS and chosen
    from RV(generation) by the driver plan, not here. IMEX is not decided here (its own variable).
  - The module only reads files; it runs no command.
author: aicluster.infra contributors (@aicluster)
extends_documentation_fragment:
  - aicluster.infra.attributes
  - aicluster.infra.attributes.info_module
  - aicluster.infra.attributes.platform
options:
  sysfs_root:
    description:
      - The directory read as C(/sys) (C(bus/pci/devices) under it). The lab points it at hwsim's simulated tree.
    type: path
    default: /sys
  proc_root:
    description:
      - The directory read as C(/proc) (C(driver/nvidia-nvswitch/devices) under it).
    type: path
    default: /proc
notes:
  - Reading C(vpd) needs root on kernels before 6.13 (the attribute was mode 0600; linux-pci, "PCI/sysfs - Fix read
    permissions for VPD attributes", 2024). A VPD that cannot be read is named in a warning when no bridge was
    found, since a bridge there would be missed; so is an NVSwitch function the module does not know.
  - A node without C(bus/pci/devices) (a container) has no NVSwitch - RV(generation) V(0).
seealso:
  - module: aicluster.infra.ib_info
'''

EXAMPLES = r'''
- name: Read the NVSwitch generation
  aicluster.infra.nvswitch_info:
  register: nvswitch

- name: Load ib_umad for NVLSM on NVLink 5 nodes
  community.general.modprobe:
    name: ib_umad
    persistent: present
  when: nvswitch.generation == 5

- name: The lab's simulated PCI functions
  aicluster.infra.nvswitch_info:
    sysfs_root: /run/hwsim/sys
    proc_root: /run/hwsim/proc
'''

RETURN = r'''
generation:
  description:
    - The NVLink generation of the NVSwitches - V(0) none, V(2) HGX-2 (V100), V(3) HGX A100, V(4) HGX H100/H200,
      V(5) HGX B200/B300 (bridge functions); V(null) for an NVSwitch function the module does not know.
  returned: success
  type: int
  sample: 5
baseboard:
  description: The baseboard the generation belongs to; V(null) without NVSwitches.
  returned: success
  type: str
  sample: HGX B200/B300
nvswitches:
  description: The NVSwitch PCI functions (NVLink 2-4), and the switches the driver lists in proc that sysfs did not show.
  returned: success
  type: list
  elements: dict
  sample: [{address: "0000:05:00.0", device_id: "10de:22a3", generation: 4, baseboard: HGX H100/H200}]
bridges:
  description: The NVLink 5 bridge functions (VPD C(SW_MNG)) with their RDMA devices and the C(SMDL) field's value.
  returned: success
  type: list
  elements: dict
  sample: [{address: "0000:e4:00.1", device_id: "15b3:1021", ib_devices: [mlx5_11], field: SW_MNG}]
bridge_devices:
  description: The RDMA device names of the bridge functions (empty before mlx5_ib is loaded).
  returned: success
  type: list
  elements: str
  sample: [mlx5_10, mlx5_11, mlx5_12, mlx5_13]
fabric_manager:
  description: Whether the node needs the fabric manager (any NVSwitch generation).
  returned: success
  type: bool
  sample: true
nvlsm:
  description: Whether the fabric manager runs with NVLSM (NVLink 5).
  returned: success
  type: bool
  sample: true
kernel_modules:
  description: The kernel modules NVLink 5 needs loaded (now and at boot); empty otherwise.
  returned: success
  type: list
  elements: str
  sample: [mlx5_ib, ib_umad]
source:
  description: What decided - V(pci) (switch IDs), V(proc) (only the driver's proc tree), V(vpd) (bridges); V(null) without NVSwitches.
  returned: success
  type: str
  sample: vpd
'''

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.aicluster.infra.plugins.module_utils.nvswitch import MELLANOX_VENDOR, nvswitch_plan


def _read(path, binary=False):
    with open(path, 'rb' if binary else 'r') as handle:
        return handle.read() if binary else handle.read().strip()


def read_pci(sysfs_root):
    """Every PCI function under ``<sysfs_root>/bus/pci/devices``: address, vendor, device, class; for Mellanox
    functions also vpd (bytes or None), vpd_error and ib_devices."""
    base = os.path.join(sysfs_root, 'bus', 'pci', 'devices')
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return []
    devices = []
    for name in names:
        folder = os.path.join(base, name)
        device = {'address': name}
        try:
            for key in ('vendor', 'device', 'class'):
                device[key] = _read(os.path.join(folder, key))
        except (OSError, UnicodeDecodeError):
            continue
        if device['vendor'].lower().replace('0x', '') == MELLANOX_VENDOR:
            device['vpd'], device['vpd_error'] = None, None
            try:
                device['vpd'] = _read(os.path.join(folder, 'vpd'), binary=True)
            except OSError as exc:
                if os.path.exists(os.path.join(folder, 'vpd')):
                    device['vpd_error'] = exc.strerror or str(exc)
            try:
                device['ib_devices'] = sorted(os.listdir(os.path.join(folder, 'infiniband')))
            except OSError:
                device['ib_devices'] = []
        devices.append(device)
    return devices


def read_proc(proc_root):
    """The entries of the nvidia-nvswitch driver's devices directory; None when the driver has not made it."""
    try:
        return sorted(os.listdir(os.path.join(proc_root, 'driver', 'nvidia-nvswitch', 'devices')))
    except OSError:
        return None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            sysfs_root=dict(type='path', default='/sys'),
            proc_root=dict(type='path', default='/proc'),
        ),
        supports_check_mode=True,
    )
    plan = nvswitch_plan(read_pci(module.params['sysfs_root']), read_proc(module.params['proc_root']))
    for text in plan.pop('warnings'):
        module.warn(text)
    module.exit_json(changed=False, **plan)


if __name__ == '__main__':
    main()
