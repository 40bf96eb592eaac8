# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure merge of nvidia-smi outputs into the gpu_info facts.

Nothing here runs a command or reads a file: the gpu_info module gathers
the texts and hands them over. Parsing of the tools' own formats lives in
nvidia_smi.py; this file only derives (nearest NIC, CPU list, device minor,
MIG devices) and assembles.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.cluster_math import gpu_type_name
from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.gpu_models import device_id, form_factor, model_key
from ansible_collections.aicluster.infra.plugins.module_utils.nvidia_smi import cpulist_expand

# Fields gpu_info always queries with --query-gpu (order = CSV column order).
BASE_FIELDS = (
    'index', 'name', 'uuid', 'pci.bus_id', 'memory.total', 'driver_version',
    'persistence_mode', 'mig.mode.current',
)

# Health fields queried in a second, best-effort call: an older driver that
# does not know one of them refuses the whole query, and must not cost the
# base facts. retired_pages.* is N/A on Ampere and later, remapped_rows.* is
# N/A before Ampere.
HEALTH_FIELDS = (
    'index', 'ecc.mode.current', 'ecc.errors.uncorrected.volatile.total',
    'retired_pages.pending', 'remapped_rows.uncorrectable',
    'remapped_rows.pending', 'remapped_rows.failure',
)

# Operating-condition fields, a third best-effort query: the PCI device id
# (model by form factor), power limits, the PCIe link and the clock event
# reasons. The reasons are clocks_event_reasons.* from R535 on and
# clocks_throttle_reasons.* before; gpu_info asks for the new names first and
# falls back to the old ones when the driver refuses them.
CLOCK_REASONS = (
    'gpu_idle', 'applications_clocks_setting', 'sw_power_cap', 'hw_slowdown', 'hw_thermal_slowdown',
    'hw_power_brake_slowdown', 'sw_thermal_slowdown',
)
CONDITION_BASE = (
    'index', 'pci.device_id', 'power.limit', 'enforced.power.limit', 'power.default_limit',
    'pcie.link.gen.current', 'pcie.link.gen.max', 'pcie.link.width.current', 'pcie.link.width.max',
)
CLOCK_PREFIXES = ('clocks_event_reasons', 'clocks_throttle_reasons')


def condition_fields(prefix=CLOCK_PREFIXES[0]):
    """The condition query's fields with the clock reasons under ``prefix`` (see :data:`CLOCK_PREFIXES`)."""
    return CONDITION_BASE + tuple('%s.%s' % (prefix, reason) for reason in CLOCK_REASONS)


# How close a NIC is to a GPU in `nvidia-smi topo -m`, closest first.
# SOC is the pre-R384 spelling of SYS.
TOPO_RANK = {'PIX': 0, 'PXB': 1, 'PHB': 2, 'NODE': 3, 'SYS': 4, 'SOC': 4}

_NA = ('', 'n/a', '[n/a]', 'not supported', '[not supported]', 'unknown error', '[unknown error]')
_TRUE = ('enabled', 'yes', 'true', 'on')
_FALSE = ('disabled', 'no', 'false', 'off')

_MINOR_RE = re.compile(r'^\s*Device Minor\s*:\s*([0-9]+)\s*$', re.MULTILINE)
_LIST_GPU_RE = re.compile(r'^GPU\s+([0-9]+):')
_LIST_MIG_RE = re.compile(r'^\s+MIG\s+(\S+)\s+Device\s+([0-9]+):\s*\(UUID:\s*([^)\s]+)\s*\)')
_NIC_LABEL_RE = re.compile(r'^NIC([0-9]+)$')


def _blank(value):
    return value is None or (not isinstance(value, (int, float, bool)) and str(value).strip().lower() in _NA)


def to_int(value):
    """An int from a CSV cell (``'81559'``, ``81559``, ``'81559 MiB'``), or None when N/A."""
    if _blank(value) or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return int(value)
    match = re.match(r'^\s*(-?[0-9]+)(?:\.0+)?(?:\s*[A-Za-z%]+)?\s*$', str(value))
    return int(match.group(1)) if match else None


def to_bool(value):
    """True/False from Enabled/Disabled, Yes/No and the like; None when N/A or unknown."""
    if isinstance(value, bool):
        return value
    if _blank(value):
        return None
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    return None


def sysfs_bus_id(bus_id):
    """nvidia-smi's ``00000000:18:00.0`` as the kernel spells it: ``0000:18:00.0``.

    The domain is printed with at least four hex digits, in lower case, as
    in /sys/bus/pci/devices and /proc/driver/nvidia/gpus/.
    """
    text = str(bus_id).strip()
    parts = text.split(':')
    if len(parts) != 3:
        return text.lower()
    try:
        domain = '%04x' % int(parts[0], 16)
    except ValueError:
        return text.lower()
    return ('%s:%s:%s' % (domain, parts[1], parts[2])).lower()


def parse_device_minor(text):
    """The ``Device Minor:`` of /proc/driver/nvidia/gpus/<pci>/information, or None."""
    match = _MINOR_RE.search(text or '')
    return int(match.group(1)) if match else None


def parse_mig_devices(text):
    """MIG devices from ``nvidia-smi -L``, as ``{gpu_index: [{index, profile, uuid}]}``.

    ``-L`` prints each GPU line (``GPU 0: NAME (UUID: GPU-...)``) followed by
    indented lines ``MIG 1g.10gb Device 0: (UUID: MIG-...)`` for its MIG
    devices. Lines of other shapes are ignored.
    """
    found = {}
    current = None
    for line in (text or '').splitlines():
        gpu = _LIST_GPU_RE.match(line)
        if gpu:
            current = int(gpu.group(1))
            found.setdefault(current, [])
            continue
        mig = _LIST_MIG_RE.match(line)
        if mig and current is not None:
            found[current].append({
                'index': int(mig.group(2)),
                'profile': mig.group(1),
                'uuid': mig.group(3),
            })
    return found


def _nic_order(label):
    match = _NIC_LABEL_RE.match(label)
    return (0, int(match.group(1)), label) if match else (1, 0, label)


def nearest_nic(row, nic_names=None):
    """The NIC closest to one GPU, from that GPU's row of the topology matrix.

    ``row`` maps column labels to relations (``{'GPU1': 'NV18', 'NIC0': 'PXB'}``).
    Only NIC columns count (``NICn``; or, from drivers that print device
    names as column headers, any column named in ``nic_names`` values or
    starting with ``mlx``). The closest relation wins (PIX < PXB < PHB <
    NODE < SYS); ties go to the lowest NIC number. Returns the NIC's device
    name from ``nic_names`` (``{'NIC0': 'mlx5_0'}``), the label itself when
    the legend lacks it, or None when no NIC column has a known relation.
    """
    nic_names = nic_names or {}
    named = set(nic_names.values())
    best = None
    for label in sorted(row or {}, key=_nic_order):
        if not (_NIC_LABEL_RE.match(label) or label in named or label.startswith('mlx')):
            continue
        rank = TOPO_RANK.get(str(row[label]).strip().upper())
        if rank is None:
            continue
        if best is None or rank < best[0]:
            best = (rank, label)
    if best is None:
        return None
    return nic_names.get(best[1], best[1])


def _cpus(affinity):
    if not affinity:
        return []
    try:
        return cpulist_expand(affinity)
    except ParseError:
        return []


def _gpu_type(name):
    if _blank(name):
        return None
    try:
        return gpu_type_name(name)
    except ValueError:
        return None


def _numa_node(value):
    number = to_int(value)
    return number if number is not None and number >= 0 else None


def to_float(value):
    """A float from a CSV cell (``'700.00'``, ``'700.00 W'``), or None when N/A."""
    if _blank(value) or isinstance(value, bool):
        return None
    match = re.match(r'^\s*(-?[0-9]+(?:\.[0-9]+)?)(?:\s*[A-Za-z%]+)?\s*$', str(value))
    return float(match.group(1)) if match else None


def clock_events(row):
    """Active clock event reasons of one condition row, sorted; None when the driver reported none of them.

    Either spelling counts (``clocks_event_reasons.hw_slowdown`` or
    ``clocks_throttle_reasons.hw_slowdown``); ``Active`` is active, ``Not
    Active`` is not, N/A is unknown.
    """
    active, known = [], False
    for reason in CLOCK_REASONS:
        for prefix in CLOCK_PREFIXES:
            value = (row or {}).get('%s.%s' % (prefix, reason))
            if _blank(value):
                continue
            known = True
            if str(value).strip().lower() == 'active':
                active.append(reason)
            break
    return sorted(active) if known else None


def fabric_states(q_result):
    """``{pci bus id: (State, Status)}`` of each GPU's ``Fabric`` section in a parsed ``nvidia-smi -q``.

    R530+ drivers print, per GPU, ``Fabric`` / ``State : Completed`` /
    ``Status : Success`` on NVSwitch systems and ``N/A`` elsewhere. A GPU
    without the section is left out.
    """
    found = {}
    for key, node in ((q_result or {}).get('sections') or {}).items():
        if not key.startswith('GPU ') or not isinstance(node, dict):
            continue
        fabric = node.get('Fabric')
        if isinstance(fabric, dict):
            state, status = fabric.get('State'), fabric.get('Status')
            found[key[4:].strip()] = (None if _blank(state) else str(state).strip(),
                                      None if _blank(status) else str(status).strip())
        elif isinstance(fabric, str):
            found[key[4:].strip()] = (None, None)
    return found


# A GPU without an NVSwitch fabric (PCIe and NVL cards) prints N/A (R530+); "Not Supported" where the driver says so.
FABRIC_ABSENT = ('n/a', '[n/a]', 'not supported', '[not supported]', '')


def fabric_label(state, status):
    """None when a GPU's fabric registration is done (``Completed``/``Success``) or the GPU has no NVSwitch fabric,
    else what to say about it: the State (``In Progress``, ``Not Started``), or ``Completed/<Status>`` when the
    fabric manager finished with an error.

    The states follow the fabric manager's registration (``Not Started`` -> ``In Progress`` -> ``Completed``,
    NVIDIA/NVSentinel #883); nvidia-smi -q prints them in each GPU's ``Fabric`` section (State, Status) and
    ``--query-gpu=fabric.state,fabric.status`` prints the same values. files/aicluster-healthcheck of the slurm role
    keeps a copy (standard library only), held equal by a unit test.
    """
    state = str(state if state is not None else '').strip()
    status = str(status if status is not None else '').strip()
    if state.lower() in FABRIC_ABSENT:
        return None
    if state == 'Completed' and status == 'Success':
        return None
    return '%s/%s' % (state, status or 'N/A') if state == 'Completed' else state


def fabric_unregistered(states):
    """``{gpu: label}`` of the GPUs whose NVSwitch fabric registration is not ``Completed``/``Success``, from
    ``{gpu: (State, Status)}`` (:func:`fabric_states` of a parsed ``nvidia-smi -q``, or the rows of
    ``--query-gpu=index,fabric.state,fabric.status``). GPUs without a fabric are left out."""
    found = {}
    for gpu, (state, status) in (states or {}).items():
        label = fabric_label(state, status)
        if label:
            found[gpu] = label
    return found


IDENTITY_KEYS = ('serial', 'vbios_version', 'board_part_number')


def gpu_identities(q_result):
    """``{pci bus id (as the kernel spells it): {serial, vbios_version, board_part_number}}`` of every GPU of a parsed
    ``nvidia-smi -q`` (``Serial Number``, ``VBIOS Version``, ``Board Part Number``; None where N/A).

    ``--query-gpu`` has ``serial`` and ``vbios_version`` too, but gpu_info already reads ``-q`` (the CUDA version and
    the fabric state), so the inventory costs no further nvidia-smi run.
    """
    found = {}
    for gpu in (q_result or {}).get('gpus') or []:
        if gpu.get('pci_bus_id'):
            found[sysfs_bus_id(gpu['pci_bus_id'])] = dict((key, gpu.get(key)) for key in IDENTITY_KEYS)
    return found


def _condition_facts(crow, fabric):
    state, status = fabric if fabric else (None, None)
    enforced = to_float(crow.get('enforced.power.limit'))
    return {
        'power_limit_w': enforced if enforced is not None else to_float(crow.get('power.limit')),
        'power_default_limit_w': to_float(crow.get('power.default_limit')),
        'pcie_gen_current': to_int(crow.get('pcie.link.gen.current')),
        'pcie_gen_max': to_int(crow.get('pcie.link.gen.max')),
        'pcie_width_current': to_int(crow.get('pcie.link.width.current')),
        'pcie_width_max': to_int(crow.get('pcie.link.width.max')),
        'clock_events': clock_events(crow),
        'fabric_state': state,
        'fabric_status': status,
    }


def merge_gpu_facts(rows, topology=None, health_rows=None, minors=None, cuda_version=None, mig_devices=None,
                    condition_rows=None, fabric=None, identities=None):
    """Assemble the gpu_info facts.

    :arg rows: ``parse_query_gpu_csv`` rows for :data:`BASE_FIELDS`.
    :arg topology: ``parse_topo_matrix`` result, or None when not gathered.
    :arg health_rows: ``parse_query_gpu_csv`` rows for :data:`HEALTH_FIELDS`,
        or None when that query was refused (the health keys are then None).
    :arg minors: ``{pci_bus_id (as nvidia-smi prints it): device minor}``;
        a GPU missing from it gets its index as minor number (the two often
        agree, but nothing guarantees it: the index follows PCI order, the
        minor number the driver's probe order).
    :arg cuda_version: the CUDA version string, or None.
    :arg mig_devices: ``parse_mig_devices`` result, or None.
    :arg condition_rows: ``parse_query_gpu_csv`` rows for :func:`condition_fields`,
        or None when that query was refused (device id, power, PCIe and clock keys None).
    :arg fabric: :func:`fabric_states` result, or None.
    :arg identities: :func:`gpu_identities` result, or None (serial, VBIOS and board part number None).
    :returns: ``{driver_version, cuda_version, count, gpus, topology}``.
    """
    minors = minors or {}
    mig_devices = mig_devices or {}
    health = {}
    for hrow in health_rows or []:
        hindex = to_int(hrow.get('index'))
        if hindex is not None:
            health[hindex] = hrow
    conditions = {}
    for crow in condition_rows or []:
        cindex = to_int(crow.get('index'))
        if cindex is not None:
            conditions[cindex] = crow
    fabric = fabric or {}
    identities = identities or {}
    topo = topology or {}
    matrix = topo.get('matrix') or {}
    cpu_affinity = topo.get('cpu_affinity') or {}
    numa_affinity = topo.get('numa_affinity') or {}
    nic_names = topo.get('nic_names') or {}

    gpus = []
    driver_version = None
    for row in rows:
        index = to_int(row.get('index'))
        name = row.get('name')
        bus_id = row.get('pci.bus_id')
        label = 'GPU%s' % index
        minor = minors.get(bus_id)
        if minor is None:
            minor = index
        affinity = cpu_affinity.get(label)
        if _blank(affinity):
            affinity = None
        hrow = health.get(index, {})
        mig_enabled = bool(to_bool(row.get('mig.mode.current')))
        crow = conditions.get(index, {})
        dev = device_id(crow.get('pci.device_id'))
        key = model_key({'name': name, 'pci_device_id': dev})
        entry = {
            'index': index,
            'name': name,
            'type': _gpu_type(name),
            'uuid': row.get('uuid'),
            'pci_bus_id': bus_id,
            'minor_number': minor,
            'device_file': '/dev/nvidia%d' % minor if minor is not None else None,
            'memory_total_mib': to_int(row.get('memory.total')),
            'persistence_mode': to_bool(row.get('persistence_mode')),
            'cpu_affinity': affinity,
            'cpus': _cpus(affinity),
            'numa_node': _numa_node(numa_affinity.get(label)),
            'nearest_nic': nearest_nic(matrix.get(label), nic_names),
            'mig_enabled': mig_enabled,
            'mig_devices': list(mig_devices.get(index, [])) if mig_enabled else [],
            'ecc_enabled': to_bool(hrow.get('ecc.mode.current')),
            'ecc_errors_uncorrected_volatile': to_int(hrow.get('ecc.errors.uncorrected.volatile.total')),
            'retired_pages_pending': to_bool(hrow.get('retired_pages.pending')),
            'remapped_rows_uncorrectable': to_int(hrow.get('remapped_rows.uncorrectable')),
            'remapped_rows_pending': to_bool(hrow.get('remapped_rows.pending')),
            'remapped_rows_failure': to_bool(hrow.get('remapped_rows.failure')),
            'pci_device_id': '0x%s' % dev if dev else None,
            'model_key': key,
            'form_factor': form_factor(key),
        }
        entry.update(_condition_facts(crow, fabric.get(bus_id)))
        identity = identities.get(sysfs_bus_id(bus_id)) if bus_id else None
        entry.update((key, (identity or {}).get(key)) for key in IDENTITY_KEYS)
        gpus.append(entry)
        if driver_version is None and not _blank(row.get('driver_version')):
            driver_version = str(row.get('driver_version')).strip()
    gpus.sort(key=lambda gpu: (gpu['index'] is None, gpu['index']))
    return {
        'driver_version': driver_version,
        'cuda_version': cuda_version,
        'count': len(gpus),
        'gpus': gpus,
        'topology': topology,
    }
