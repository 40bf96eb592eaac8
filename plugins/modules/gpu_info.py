#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: gpu_info
short_description: Gather NVIDIA GPU facts from nvidia-smi, with PCIe/NUMA topology and nearest NIC
version_added: 0.1.0
description:
  - Runs C(nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,memory.total,driver_version,persistence_mode,mig.mode.current
    --format=csv,noheader,nounits) and returns one entry per GPU.
  - Runs a second, best-effort query for the health counters (C(ecc.mode.current), C(ecc.errors.uncorrected.volatile.total),
    C(retired_pages.pending), C(remapped_rows.uncorrectable), C(remapped_rows.pending), C(remapped_rows.failure)); a driver
    that refuses one of these fields only costs those keys (they are V(null)) and a warning.
  - Runs a third, best-effort query for the operating conditions (C(pci.device_id), C(power.limit), C(enforced.power.limit),
    C(power.default_limit), C(pcie.link.gen.current/max), C(pcie.link.width.current/max) and the clock event reasons);
    the reasons are asked as C(clocks_event_reasons.*) (R535 and later) and, when the driver refuses those, as
    C(clocks_throttle_reasons.*).
  - Each GPU's model key and form factor come from its exact name and PCI device id (module_utils/gpu_models.py).
  - With O(topology=true), runs C(nvidia-smi topo -m) and derives each GPU's CPU affinity, CPU list, NUMA node and nearest NIC.
  - Reads the CUDA version from the header of C(nvidia-smi -q) (the C(CUDA Version) line every C(-q) report starts
    with; C(--query-gpu) has no field for it), and each GPU's NVSwitch fabric state from its C(Fabric) section, and
    its serial number, VBIOS version and board part number.
  - Reads the node's vendor, product name and serial number from C(/sys/class/dmi/id) (C(sys_vendor),
    C(product_name), C(product_serial); the serial is readable by root only), for the inventory of the node the
    GPUs are in.
  - Reads each GPU's device minor number from C(/proc/driver/nvidia/gpus/<pci>/information) (C(Device Minor:)), because no
    C(--query-gpu) field gives it; when that file is missing the GPU index is used instead.
  - When a GPU has MIG enabled, runs C(nvidia-smi -L) to list its MIG devices.
  - The module only reads state.
author: aicluster.infra contributors (@aicluster)
extends_documentation_fragment:
  - aicluster.infra.attributes
  - aicluster.infra.attributes.info_module
  - aicluster.infra.attributes.platform
options:
  topology:
    description:
      - Whether to run C(nvidia-smi topo -m) and return RV(topology), the CPU and NUMA affinity and the nearest NIC of each GPU.
      - With V(false), RV(topology) is V(null), RV(gpus[].cpus) is empty and the affinity keys are V(null).
    type: bool
    default: true
  details:
    description:
      - Whether to run the best-effort queries beyond the GPUs themselves - the health counters, the operating
        conditions (PCI device id, power, PCIe link, clock events) and C(nvidia-smi -q) (the CUDA version, the
        NVSwitch fabric state, the serial numbers and VBIOS versions) - and to read RV(system).
      - With V(false), those keys are V(null) (RV(gpus[].model_key) is judged from the name alone) and three
        C(nvidia-smi) runs are saved; RV(gpus[].type), the device files, the CPU affinity and MIG devices are the same.
        The slurm role, which needs none of the rest, reads the GPUs so on every run.
    type: bool
    default: true
    version_added: 0.2.0
  missing:
    description:
      - What to do where C(nvidia-smi) is not installed - V(fail), or V(skip) (the result is skipped, with no RV(gpus),
        as a task skipped with C(when) would be; one task instead of a C(command -v nvidia-smi) first).
    type: str
    choices: [fail, skip]
    default: fail
    version_added: 0.2.0
requirements:
  - C(nvidia-smi) from the NVIDIA driver on the target.
notes:
  - All commands run with C(LANG=C) and C(LC_ALL=C).
  - The module fails when C(nvidia-smi) is missing, when the GPU query or (with O(topology=true)) C(topo -m) fails,
    or when their output cannot be parsed. The CUDA version, health counters, MIG listing, device minor numbers,
    serial numbers, VBIOS versions and RV(system) are best effort.
seealso:
  - module: aicluster.infra.ib_info
  - module: aicluster.infra.dcgm_diag
'''

EXAMPLES = r'''
- name: Read the GPUs of the node
  aicluster.infra.gpu_info:
  register: gpu

- name: Eight H100 with persistence mode on
  ansible.builtin.assert:
    that:
      - gpu.count == 8
      - gpu.gpus | map(attribute='type') | unique == ['h100']
      - gpu.gpus | rejectattr('persistence_mode') | list | length == 0

- name: GPU to NIC map for NCCL / Slurm gres.conf
  ansible.builtin.debug:
    msg: "{{ gpu.gpus | items2dict(key_name='index', value_name='nearest_nic') }}"

- name: Without the topology (faster on large nodes)
  aicluster.infra.gpu_info:
    topology: false

- name: The GPUs for Slurm, on a node that may have no driver (skipped there)
  aicluster.infra.gpu_info:
    details: false
    missing: skip
  register: gpu
'''

RETURN = r'''
driver_version:
  description: NVIDIA driver version.
  returned: success
  type: str
  sample: 535.183.01
cuda_version:
  description: Highest CUDA version the driver supports, from the C(nvidia-smi -q) header; V(null) when not printed.
  returned: success
  type: str
  sample: "12.2"
count:
  description: Number of GPUs.
  returned: success
  type: int
  sample: 8
gpus:
  description: One entry per GPU, by index.
  returned: success
  type: list
  elements: dict
  contains:
    index:
      description: nvidia-smi index.
      type: int
      sample: 0
    name:
      description: Product name.
      type: str
      sample: NVIDIA H100 80GB HBM3
    type:
      description: Short GPU type derived from the name (for example V(h100), V(a100)).
      type: str
      sample: h100
    uuid:
      description: GPU UUID.
      type: str
      sample: GPU-566e6f65-c38e-b12f-4824-6944218668b9
    pci_bus_id:
      description: PCI bus id as nvidia-smi prints it.
      type: str
      sample: "00000000:18:00.0"
    minor_number:
      description: Device minor number (from C(/proc/driver/nvidia/gpus), else the index).
      type: int
      sample: 0
    device_file:
      description: The device node, C(/dev/nvidia<minor_number>).
      type: str
      sample: /dev/nvidia0
    memory_total_mib:
      description: Total framebuffer memory in MiB.
      type: int
      sample: 81559
    persistence_mode:
      description: Whether persistence mode is enabled.
      type: bool
      sample: true
    cpu_affinity:
      description: CPU affinity as C(topo -m) prints it; V(null) without topology.
      type: str
      sample: 0-47,96-143
    cpus:
      description: The CPU affinity expanded to CPU numbers.
      type: list
      elements: int
      sample: [0, 1, 2, 3]
    numa_node:
      description: NUMA node of the GPU; V(null) when not printed or N/A.
      type: int
      sample: 0
    nearest_nic:
      description:
        - The NIC with the closest C(topo -m) relation (PIX < PXB < PHB < NODE < SYS), ties broken by NIC order.
        - V(null) without topology or NICs.
      type: str
      sample: mlx5_0
    mig_enabled:
      description: Whether MIG mode is currently enabled.
      type: bool
      sample: false
    mig_devices:
      description: The GPU's MIG devices from C(nvidia-smi -L) (C(index), C(profile), C(uuid)); empty when MIG is off.
      type: list
      elements: dict
      sample: [{index: 0, profile: 1g.10gb, uuid: MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f}]
    ecc_enabled:
      description: Whether ECC is currently enabled; V(null) when unknown.
      type: bool
      sample: true
    ecc_errors_uncorrected_volatile:
      description: Uncorrected ECC errors since the last driver load; V(null) when N/A.
      type: int
      sample: 0
    retired_pages_pending:
      description: Whether retired pages wait for a reset (pre-Ampere); V(null) when N/A.
      type: bool
      sample: null
    remapped_rows_uncorrectable:
      description: Rows remapped for uncorrectable errors (Ampere and later); V(null) when N/A.
      type: int
      sample: 0
    remapped_rows_pending:
      description: Whether a row remap waits for a GPU reset; V(null) when N/A.
      type: bool
      sample: false
    remapped_rows_failure:
      description: Whether a row remap failed (the GPU needs service); V(null) when N/A.
      type: bool
      sample: false
    pci_device_id:
      description: PCI device id (without the vendor half); V(null) when not reported.
      type: str
      sample: "0x2330"
    model_key:
      description: The model by form factor when name and device id agree with the collection's table, else V(null).
      type: str
      sample: h100-sxm
    form_factor:
      description: V(sxm), V(pcie) or V(nvl) of RV(gpus[].model_key); V(null) for an unknown model.
      type: str
      sample: sxm
    power_limit_w:
      description: Enforced power limit in W (C(enforced.power.limit), else C(power.limit)); V(null) when N/A.
      type: float
      sample: 700.0
    power_default_limit_w:
      description: Default power limit in W; V(null) when N/A.
      type: float
      sample: 700.0
    pcie_gen_current:
      description: Current PCIe generation (idle GPUs train down to save power).
      type: int
      sample: 5
    pcie_gen_max:
      description: Highest PCIe generation of the GPU and its slot.
      type: int
      sample: 5
    pcie_width_current:
      description: Current PCIe link width (lanes).
      type: int
      sample: 16
    pcie_width_max:
      description: Highest PCIe link width.
      type: int
      sample: 16
    clock_events:
      description:
        - Active clock event (throttle) reasons, for example V(gpu_idle), V(sw_power_cap), V(hw_slowdown),
          V(hw_thermal_slowdown), V(hw_power_brake_slowdown), V(sw_thermal_slowdown); V(null) when not reported.
      type: list
      elements: str
      sample: [gpu_idle]
    fabric_state:
      description: NVSwitch fabric C(State) from C(nvidia-smi -q) (V(Completed) when ready); V(null) when N/A.
      type: str
      sample: Completed
    fabric_status:
      description: NVSwitch fabric C(Status) from C(nvidia-smi -q) (V(Success) when ready); V(null) when N/A.
      type: str
      sample: Success
    serial:
      description: The board's serial number (C(Serial Number) of C(nvidia-smi -q)); V(null) when N/A or not read.
      type: str
      sample: "1655022005478"
      version_added: 0.2.0
    vbios_version:
      description: The VBIOS version (C(VBIOS Version) of C(nvidia-smi -q)); V(null) when not read.
      type: str
      sample: 96.00.74.00.01
      version_added: 0.2.0
    board_part_number:
      description: The board part number (C(Board Part Number) of C(nvidia-smi -q)); V(null) when N/A or not read.
      type: str
      sample: 692-2G520-0200-000
      version_added: 0.2.0
system:
  description:
    - The node's C(vendor), C(product) and C(serial) from C(/sys/class/dmi/id) (C(sys_vendor), C(product_name),
      C(product_serial)), each as the firmware reports it (a placeholder such as C(To Be Filled By O.E.M.) included);
      a key is V(null) when its file is missing, empty or unreadable (the serial, when not run as root).
    - V(null) with O(details=false) or on a machine without DMI (no C(/sys/class/dmi/id)).
  returned: success
  type: dict
  sample: {vendor: Supermicro, product: SYS-821GE-TNHR, serial: S501234X4A12345}
  version_added: 0.2.0
cpu_topology:
  description:
    - Each online CPU's package (socket) and core id from sysfs (C(/sys/devices/system/cpu/cpuN/topology)), sorted by
      CPU id, so that CPU ids map to Slurm's core ids whatever the BIOS numbering (aicluster.infra.gres_conf).
    - V(null) with O(topology=false) or when sysfs does not say.
  returned: success
  type: list
  elements: dict
  sample: [{cpu: 0, package: 0, core: 0}, {cpu: 1, package: 1, core: 0}]
topology:
  description:
    - The parsed C(nvidia-smi topo -m) (C(devices), C(matrix), C(cpu_affinity), C(numa_affinity), C(nic_names)).
    - V(null) with O(topology=false).
  returned: success
  type: dict
  sample:
    devices: [GPU0, NIC0]
    matrix: {GPU0: {GPU0: X, NIC0: PXB}, NIC0: {GPU0: PXB, NIC0: X}}
    cpu_affinity: {GPU0: 0-47,96-143}
    numa_affinity: {GPU0: "0"}
    nic_names: {NIC0: mlx5_0}
'''

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.gpu_facts import (
    BASE_FIELDS, CLOCK_PREFIXES, HEALTH_FIELDS, condition_fields, fabric_states, gpu_identities, merge_gpu_facts,
    parse_device_minor, parse_mig_devices, sysfs_bus_id, to_bool,
)
from ansible_collections.aicluster.infra.plugins.module_utils.nvidia_smi import parse_nvidia_smi_q, parse_query_gpu_csv, parse_topo_matrix

C_LOCALE = {'LANG': 'C', 'LC_ALL': 'C'}
PROC_GPUS = '/proc/driver/nvidia/gpus'


def _run(module, argv):
    rc, out, err = module.run_command(argv, environ_update=C_LOCALE)
    return rc, out or '', err or ''


def _query_argv(nvidia_smi, fields):
    return [nvidia_smi, '--query-gpu=%s' % ','.join(fields), '--format=csv,noheader,nounits']


def _required(module, argv, what, parser):
    rc, out, err = _run(module, argv)
    if rc != 0:
        module.fail_json(msg='%s failed with rc=%d: %s' % (what, rc, (err or out).strip()[:500]), cmd=argv, rc=rc, stdout=out, stderr=err)
    try:
        return parser(out)
    except ParseError as exc:
        module.fail_json(msg='%s printed output that could not be parsed: %s' % (what, exc), cmd=argv, rc=rc, stdout=out, stderr=err)


def _best_effort(module, argv, what):
    rc, out, err = _run(module, argv)
    if rc != 0:
        module.warn('%s failed (rc=%d), its fields are left null: %s' % (what, rc, (err or out).strip()[:300]))
        return None
    return out


def _conditions(module, nvidia_smi):
    """The condition rows, clock reasons under their R535+ names, else their older names; None when both are refused."""
    said = ''
    for prefix in CLOCK_PREFIXES:
        fields = condition_fields(prefix)
        rc, out, err = _run(module, _query_argv(nvidia_smi, fields))
        if rc == 0:
            try:
                return parse_query_gpu_csv(out, fields=list(fields))
            except ParseError as exc:
                said = str(exc)
                continue
        said = (err or out).strip()[:300]
    module.warn('nvidia-smi --query-gpu (device id, power, PCIe, clock events) failed, its fields are left null: %s' % said)
    return None


SYSFS_CPU = '/sys/devices/system/cpu'


def read_cpu_topology(root=SYSFS_CPU):
    """Every online CPU's package and core id from sysfs (``cpuN/topology/physical_package_id`` and ``core_id``),
    sorted by CPU id; None when sysfs does not say (gres.conf then falls back to slurmd -C arithmetic)."""
    out = []
    try:
        names = os.listdir(root)
    except (IOError, OSError):
        return None
    for name in names:
        if not name.startswith('cpu') or not name[3:].isdigit():
            continue
        try:
            with open(os.path.join(root, name, 'topology', 'physical_package_id')) as handle:
                package = int(handle.read().strip())
            with open(os.path.join(root, name, 'topology', 'core_id')) as handle:
                core = int(handle.read().strip())
        except (IOError, OSError, ValueError):
            continue  # an offline CPU has no topology directory
        out.append({'cpu': int(name[3:]), 'package': package, 'core': core})
    out.sort(key=lambda entry: entry['cpu'])
    return out or None


SYSFS_DMI = '/sys/class/dmi/id'
DMI_FILES = (('vendor', 'sys_vendor'), ('product', 'product_name'), ('serial', 'product_serial'))


def read_system_identity(root=None):
    """The node's vendor, product and serial from DMI (``root``: default :data:`SYSFS_DMI`), each None when its file
    is missing, empty or unreadable (product_serial is mode 0400, root's); None when the machine has no DMI at all."""
    root = root or SYSFS_DMI
    if not os.path.isdir(root):
        return None
    found = {}
    for key, name in DMI_FILES:
        try:
            with open(os.path.join(root, name), 'rb') as handle:
                value = handle.read().decode('utf-8', 'replace').strip()
        except (IOError, OSError):
            value = ''
        found[key] = value or None
    return found


def _read_minors(rows):
    minors = {}
    for row in rows:
        bus_id = row.get('pci.bus_id')
        if not bus_id:
            continue
        path = os.path.join(PROC_GPUS, sysfs_bus_id(bus_id), 'information')
        try:
            with open(path) as handle:
                minor = parse_device_minor(handle.read())
        except (IOError, OSError):
            continue
        if minor is not None:
            minors[bus_id] = minor
    return minors


def main():
    module = AnsibleModule(
        argument_spec=dict(
            topology=dict(type='bool', default=True),
            details=dict(type='bool', default=True),
            missing=dict(type='str', choices=['fail', 'skip'], default='fail'),
        ),
        supports_check_mode=True,
    )
    nvidia_smi = module.get_bin_path('nvidia-smi', required=module.params['missing'] == 'fail')
    if not nvidia_smi:
        module.exit_json(changed=False, skipped=True, msg='nvidia-smi is not installed on this host')

    rows = _required(module, _query_argv(nvidia_smi, BASE_FIELDS), 'nvidia-smi --query-gpu',
                     lambda text: parse_query_gpu_csv(text, fields=list(BASE_FIELDS)))

    health_rows = None
    out = None
    if module.params['details']:
        out = _best_effort(module, _query_argv(nvidia_smi, HEALTH_FIELDS), 'nvidia-smi --query-gpu (health counters)')
    if out is not None:
        try:
            health_rows = parse_query_gpu_csv(out, fields=list(HEALTH_FIELDS))
        except ParseError as exc:
            module.warn('nvidia-smi health query output could not be parsed, its fields are left null: %s' % exc)

    condition_rows = _conditions(module, nvidia_smi) if module.params['details'] else None

    topology = None
    cpu_topology = None
    if module.params['topology']:
        topology = _required(module, [nvidia_smi, 'topo', '-m'], 'nvidia-smi topo -m', parse_topo_matrix)
        cpu_topology = read_cpu_topology()

    out = None
    if module.params['details']:
        out = _best_effort(module, [nvidia_smi, '-q'], 'nvidia-smi -q (CUDA version, fabric state, serial numbers, VBIOS)')
    cuda_version, fabric, identities = None, None, None
    if out is not None:
        try:
            report = parse_nvidia_smi_q(out)
            cuda_version, fabric, identities = report.get('cuda_version'), fabric_states(report), gpu_identities(report)
        except ParseError as exc:
            module.warn('nvidia-smi -q output could not be parsed, cuda_version, the fabric state, the serial numbers and '
                        'VBIOS versions are left null: %s' % exc)

    mig_devices = None
    if any(to_bool(row.get('mig.mode.current')) for row in rows):
        out = _best_effort(module, [nvidia_smi, '-L'], 'nvidia-smi -L (MIG devices)')
        mig_devices = parse_mig_devices(out) if out is not None else None

    facts = merge_gpu_facts(rows, topology=topology, health_rows=health_rows, minors=_read_minors(rows),
                            cuda_version=cuda_version, mig_devices=mig_devices, condition_rows=condition_rows, fabric=fabric,
                            identities=identities)
    facts['cpu_topology'] = cpu_topology
    facts['system'] = read_system_identity() if module.params['details'] else None
    module.exit_json(changed=False, **facts)


if __name__ == '__main__':
    main()
