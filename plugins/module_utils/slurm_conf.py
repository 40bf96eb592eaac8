# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""slurm.conf arithmetic: node records, node and partition lines, checks of the slurm role's variables,
and which slurm.conf changes need a daemon restart rather than ``scontrol reconfigure``.

Everything here is O(number of nodes): the controller computes the cluster's node
table once (the slurm role calls these through filters in a ``run_once`` task), so
no per-host task loops over every other host's variables.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible.module_utils.six.moves.collections_abc import Mapping

from ansible_collections.aicluster.infra.plugins.module_utils.cluster_math import cpulist_parse, gpu_type_name
from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.slurm import hostlist_compress, hostlist_expand, hostlist_sort_key

# The hardware fields of ``slurmd -C``, in the order slurm.conf lists them.
HARDWARE_KEYS = ('CPUs', 'Boards', 'SocketsPerBoard', 'CoresPerSocket', 'ThreadsPerCore', 'RealMemory')
# What a node line may carry besides its name, in output order.
NODE_KEYS = HARDWARE_KEYS + ('Gres', 'Feature', 'Weight', 'CoreSpecCount', 'MemSpecLimit')

# What ``auto`` reserves for the node's own daemons (slurmd, slurmstepd, nvidia-persistenced, nv-hostengine,
# dcgm-exporter, the file-system clients): MemSpecLimit is 2% of RealMemory, at least 4 GiB and at most 32 GiB;
# CoreSpecCount one core per socket, on sockets of 16 cores or more (docs/slurm.md "Resources for the node itself").
AUTO_MEM_SPEC_FRACTION = 0.02
AUTO_MEM_SPEC_MIN_MB = 4096
AUTO_MEM_SPEC_MAX_MB = 32768
AUTO_CORE_SPEC_MIN_CORES_PER_SOCKET = 16

# slurm.conf parameters whose change ``scontrol reconfigure`` does not apply (slurm.conf(5) and
# scontrol(1) of Slurm 22.05: authentication, ports, hosts, state and spool locations, plugins
# loaded at start-up, and node definitions).  Everything else is applied by a reconfigure.
_RESTART_NAMES = (
    'AuthType', 'AuthAltTypes', 'CredType', 'CryptoType', 'ClusterName', 'SlurmctldHost', 'ControlMachine',
    'BackupController', 'SlurmctldPort', 'SlurmdPort', 'SlurmctldAddr', 'SlurmUser', 'SlurmdUser',
    'StateSaveLocation', 'SlurmdSpoolDir', 'PluginDir', 'SelectType', 'SelectTypeParameters', 'ProctrackType',
    'TaskPlugin', 'SwitchType', 'GresTypes', 'JobAcctGatherType', 'AccountingStorageType', 'AccountingStorageHost',
    'AccountingStoragePort', 'AccountingStorageTRES', 'AccountingStorageEnforce', 'MpiDefault', 'LaunchType', 'TopologyPlugin', 'PrologFlags',
    'PreemptType', 'PriorityType', 'SchedulerType', 'CliFilterPlugins', 'JobSubmitPlugins', 'TreeWidth',
    'FirstJobId', 'MaxJobCount', 'SlurmctldPidFile', 'SlurmdPidFile', 'CommunicationParameters',
)
RESTART_KEYS = dict((key.lower(), key) for key in _RESTART_NAMES)

_KEY_VALUE = re.compile(r'([A-Za-z][A-Za-z0-9]*)=(\S*)')
_SLURMD_C_LINE = re.compile(r'^NodeName=\S+(\s+[A-Za-z]+=\S+)+$')
_PARTITION_NAME = re.compile(r'^[A-Za-z0-9_.-]+$')
_FEATURE = re.compile(r'^[A-Za-z0-9_.-]+$')


def _natural(name):
    return hostlist_sort_key(name)


# ---------------------------------------------------------------------------
# slurmd -C
# ---------------------------------------------------------------------------

def parse_slurmd_c(text):
    """Parse ``slurmd -C``: ``NodeName=gpu01 CPUs=192 Boards=1 SocketsPerBoard=2 CoresPerSocket=48
    ThreadsPerCore=2 RealMemory=2063937`` (and an ``UpTime=`` line, ignored).

    Returns ``{'NodeName': 'gpu01', 'CPUs': 192, ...}`` with the hardware values as ints.
    Raises ParseError when the NodeName line or a hardware field is missing.
    """
    if not isinstance(text, str):
        raise ParseError('slurmd -C output must be text, not %s' % type(text).__name__)
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line.startswith('NodeName='):
            continue
        if not _SLURMD_C_LINE.match(line):
            raise ParseError('expected NodeName=... Key=Value fields', number, raw)
        fields = dict(_KEY_VALUE.findall(line))
        record = {'NodeName': fields['NodeName']}
        for key in HARDWARE_KEYS:
            value = fields.get(key)
            if value is None or not value.isdigit():
                raise ParseError('slurmd -C line lacks a numeric %s' % key, number, raw)
            record[key] = int(value)
        return record
    raise ParseError('no NodeName= line in slurmd -C output')


# ---------------------------------------------------------------------------
# One node's record: hardware from slurmd -C, gres from gpu_info
# ---------------------------------------------------------------------------

def _gpu_types(gpus):
    counts = {}
    order = []
    for gpu in gpus:
        if gpu.get('mig_enabled'):
            types = [mig.get('profile') for mig in gpu.get('mig_devices') or []]
        else:
            types = [gpu.get('type') or gpu_type_name(gpu.get('name') or '')]
        for gtype in types:
            if not gtype:
                raise ValueError('a MIG device of GPU %s has no profile' % gpu.get('index'))
            if gtype not in counts:
                order.append(gtype)
                counts[gtype] = 0
            counts[gtype] += 1
    return [(gtype, counts[gtype]) for gtype in order]


def usable_gpus(gpu_info, gpus=None):
    """The GPUs of ``gpu_info`` Slurm offers: all of them, or the first ``gpus`` by index.

    Raises ValueError when ``gpus`` is larger than the number found.
    """
    found = list((gpu_info or {}).get('gpus') or [])
    found.sort(key=lambda gpu: int(gpu.get('index', 0)))
    if gpus is None:
        return found
    gpus = int(gpus)
    if gpus < 0:
        raise ValueError('the GPU count must be 0 or more, got %d' % gpus)
    if gpus > len(found):
        raise ValueError('%d GPUs declared but %d found' % (gpus, len(found)))
    return found[:gpus]


def gpu_info_for_node(gpu_info, gpus=None, cpus=None):
    """gpu_info facts cut to the GPUs Slurm offers (usable_gpus()), for gres.conf.

    With ``cpus`` (the node's CPU count from ``slurmd -C``), a CPU affinity naming CPUs the node does not
    have is dropped from every GPU (slurmd rejects such ``Cores=`` as invalid GRES data) and the result
    carries ``affinity_dropped: True``; this happens when nvidia-smi and the kernel disagree, or on
    simulated hardware.
    """
    info = dict(gpu_info or {})
    selected = [dict(gpu) for gpu in usable_gpus(info, gpus)]
    info['affinity_dropped'] = False
    if cpus is not None:
        limit = int(cpus)
        for gpu in selected:
            listed = gpu.get('cpus') or cpulist_parse(gpu.get('cpu_affinity'))
            if any(int(cpu) >= limit for cpu in listed):
                info['affinity_dropped'] = True
        if info['affinity_dropped']:
            for gpu in selected:
                gpu['cpus'] = []
                gpu['cpu_affinity'] = None
    info['gpus'] = selected
    return info


def node_gres(gpu_info, gpus=None):
    """``Gres=`` value for a node: ``gpu:h100:8``; mixed types ``gpu:a100:4,gpu:h100:4``; MIG devices by profile
    (``gpu:1g.10gb:7``); ``''`` for a node without GPUs."""
    return ','.join('gpu:%s:%d' % (gtype, count) for gtype, count in _gpu_types(usable_gpus(gpu_info, gpus)))


def node_record(slurmd_c, gpu_info=None, gpus=None):
    """The record a compute node contributes to slurm.conf: its ``slurmd -C`` hardware and its ``Gres``.

    ``slurmd_c`` is the text of ``slurmd -C`` or its parsed dict; ``gpu_info`` the gpu_info facts
    (or None for a node without GPUs); ``gpus`` caps the GPUs offered (ValueError when more than found).
    """
    hardware = parse_slurmd_c(slurmd_c) if isinstance(slurmd_c, str) else dict(slurmd_c)
    record = {'NodeName': hardware['NodeName']}
    for key in HARDWARE_KEYS:
        record[key] = int(hardware[key])
    record['Gres'] = node_gres(gpu_info, gpus) if gpu_info else ''
    if not gpu_info and gpus:
        raise ValueError('%d GPUs declared but none found' % int(gpus))
    return record


# ---------------------------------------------------------------------------
# Inventory selections and the role's variables
# ---------------------------------------------------------------------------

def _as_list(value):
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return list(value)


def select_hosts(spec, groups, where):
    """Names selected by ``spec['nodes']`` (names or hostlist expressions) and ``spec['groups']`` (inventory groups).

    Raises ValueError naming ``where`` for an unknown group or a bad hostlist.
    """
    names = []
    for group in _as_list(spec.get('groups')):
        if group not in groups:
            raise ValueError('%s.groups: no inventory group %r' % (where, group))
        names.extend(groups[group])
    if spec.get('nodes'):
        try:
            names.extend(hostlist_expand(_as_list(spec.get('nodes'))))
        except ParseError as exc:
            raise ValueError('%s.nodes: %s' % (where, exc))
    seen = set()
    unique = []
    for name in names:
        if name not in seen:
            seen.add(name)
            unique.append(name)
    return unique


_SPEC_SETTINGS = ('slurm_mem_spec_limit', 'slurm_core_spec_count', 'slurm_def_mem_per_gpu', 'slurm_def_cpu_per_gpu')


def _spec_problem(value, where):
    try:
        _spec_value(value, where)
    except ValueError as exc:
        return str(exc)
    return None


def check_slurm_vars(partitions, node_groups, compute_nodes, groups, settings=None):
    """Problems with ``slurm_partitions`` and ``slurm_node_groups``, each message naming the variable.

    Checks: partition names valid and unique, at most one default partition, every partition and node group
    selects only known compute nodes (members of ``compute_nodes``), node group names unique, no node in two
    node groups, features and weights well formed; the resource settings (``settings``: the role's
    ``slurm_mem_spec_limit``, ``slurm_core_spec_count``, ``slurm_def_mem_per_gpu``, ``slurm_def_cpu_per_gpu``, and
    the same keys without the ``slurm_`` prefix in partitions and node groups) are ``auto`` or a whole number >= 0;
    two or more ``controllers`` need ``slurm_state_save_shared`` (their state directory on shared storage).
    Returns a list of messages (empty when all is well).
    """
    problems = []
    controllers = list((settings or {}).get('controllers') or [])
    if len(controllers) > 1 and not (settings or {}).get('slurm_state_save_shared'):
        problems.append(
            'slurm_controller has %d hosts (%s) but slurm_state_save_shared is false: the backup takes over from '
            "slurmctld's saved state, so slurm_state_save_location (%s) must be one directory on shared storage every "
            'controller mounts; mount it and set slurm_state_save_shared true, or list one controller'
            % (len(controllers), ', '.join(controllers), settings.get('slurm_state_save_location', '?')))
    for key in _SPEC_SETTINGS:
        if settings and key in settings:
            problem = _spec_problem(settings[key], key)
            if problem:
                problems.append(problem)
    compute = set(compute_nodes)
    names = set()
    defaults = []
    for index, part in enumerate(partitions or []):
        where = 'slurm_partitions[%d]' % index
        name = part.get('name')
        if not name or not _PARTITION_NAME.match(str(name)):
            problems.append('%s.name: %r is not a valid partition name' % (where, name))
        elif name in names:
            problems.append('%s.name: partition %r is defined twice' % (where, name))
        names.add(name)
        where = '%s (%s)' % (where, name)
        if part.get('default'):
            defaults.append(name)
        for key in ('def_mem_per_gpu', 'def_cpu_per_gpu'):
            if key in part:
                problem = _spec_problem(part[key], '%s.%s' % (where, key))
                if problem:
                    problems.append(problem)
        try:
            members = select_hosts(part, groups, where)
        except ValueError as exc:
            problems.append(str(exc))
            continue
        if not members:
            problems.append('%s: selects no node (give nodes or groups)' % where)
        unknown = [host for host in members if host not in compute]
        if unknown:
            problems.append('%s.nodes: %s not in slurm_compute' % (where, hostlist_compress(unknown)))
    if len(defaults) > 1:
        problems.append('slurm_partitions: more than one default partition (%s)' % ', '.join(defaults))
    owner = {}
    group_names = set()
    for index, group in enumerate(node_groups or []):
        where = 'slurm_node_groups[%d]' % index
        name = group.get('name')
        if not name or name in group_names:
            problems.append('%s.name: %r is missing or defined twice' % (where, name))
        group_names.add(name)
        where = '%s (%s)' % (where, name)
        for key in ('mem_spec_limit', 'core_spec_count'):
            if key in group:
                problem = _spec_problem(group[key], '%s.%s' % (where, key))
                if problem:
                    problems.append(problem)
        bad_features = [feature for feature in _as_list(group.get('features')) if not _FEATURE.match(str(feature))]
        if bad_features:
            problems.append('%s.features: %s are not valid feature names' % (where, bad_features))
        try:
            members = select_hosts(group, groups, where)
        except ValueError as exc:
            problems.append(str(exc))
            continue
        unknown = [host for host in members if host not in compute]
        if unknown:
            problems.append('%s.nodes: %s not in slurm_compute' % (where, hostlist_compress(unknown)))
        twice = [host for host in members if host in owner]
        if twice:
            problems.append('slurm_node_groups: %s in both %r and %r; a node belongs to one hardware group'
                            % (hostlist_compress(twice), owner[twice[0]], name))
        for host in members:
            owner.setdefault(host, name)
    return problems


def node_group_of(node_groups, host, groups):
    """The node group (dict) ``host`` belongs to, or None."""
    for index, group in enumerate(node_groups or []):
        if host in select_hosts(group, groups or {}, 'slurm_node_groups[%d]' % index):
            return group
    return None


def _group_index(node_groups, groups):
    index = {}
    for number, group in enumerate(node_groups or []):
        for host in select_hosts(group, groups, 'slurm_node_groups[%d]' % number):
            index.setdefault(host, group)
    return index


def gpu_fit(hosts, hostvars, node_groups, groups):
    """Which compute nodes of a play fall short of their hardware group's GPU count, and which groups fit none.

    ``hosts``: the compute nodes of the play; ``hostvars``: each one's ``__slurm_gpu_info`` (the gpu_info result,
    skipped or absent where nvidia-smi is missing). A node with fewer GPUs than its group's ``gpus`` is unfit (left
    out of the run and drained). A group with two or more nodes in the play, none of which fits, is a wrong
    variable, not broken nodes. Returns ``{'unfit': {node: reason}, 'wrong': [sentence per group]}``.
    """
    index = _group_index(node_groups, groups or {})
    unfit, members = {}, {}
    for host in hosts or []:
        group = index.get(host)
        if group is None or group.get('gpus') is None:
            continue
        declared = int(group['gpus'])
        host_vars = hostvars[host] if host in hostvars else {}
        info = host_vars.get('__slurm_gpu_info') if hasattr(host_vars, 'get') else None
        info = info if isinstance(info, Mapping) else {}
        found = len(info.get('gpus') or [])
        members.setdefault(group['name'], []).append(host)
        if found < declared:
            unfit[host] = '%d of %d GPUs (slurm_node_groups %s)%s' % (
                found, declared, group['name'], '' if 'gpus' in info else ', no nvidia-smi')
    wrong = []
    for group in node_groups or []:
        names = members.get(group['name'], [])
        if len(names) > 1 and all(name in unfit for name in names):
            wrong.append('slurm_node_groups (%s).gpus is %s but none of its %d nodes in this play has that many (%s)'
                         % (group['name'], group['gpus'], len(names), '; '.join(unfit[name] for name in names)))
    return {'unfit': unfit, 'wrong': wrong}


# ---------------------------------------------------------------------------
# The node table
# ---------------------------------------------------------------------------

def _spec_value(value, where):
    """``auto``, or an int >= 0; ValueError naming ``where`` otherwise."""
    if value is None or value == '' or str(value).strip().lower() == 'auto':
        return 'auto'
    try:
        number = int(str(value).strip())
    except ValueError:
        number = -1
    if number < 0:
        raise ValueError('%s must be auto or a whole number >= 0, got %r' % (where, value))
    return number


def node_spec(node, mem_spec_limit='auto', core_spec_count='auto'):
    """What a node keeps for itself: ``(CoreSpecCount, MemSpecLimit)`` for its hardware (a node table entry).

    ``auto`` (the default of both) reserves 2% of RealMemory for the node's daemons, at least 4 GiB and at most
    32 GiB but never half the node or more, and one core per socket on sockets of 16 cores or more (none on
    small nodes); a number is taken as it is, 0 reserves nothing.  Raises ValueError when what is reserved leaves
    the node no core or no memory.
    """
    name = node.get('NodeName', '?')
    mem = _spec_value(mem_spec_limit, 'mem_spec_limit')
    cores = _spec_value(core_spec_count, 'core_spec_count')
    real = int(node['RealMemory'])
    sockets = int(node.get('Boards', 1)) * int(node['SocketsPerBoard'])
    per_socket = int(node['CoresPerSocket'])
    if mem == 'auto':
        mem = int(min(max(real * AUTO_MEM_SPEC_FRACTION, AUTO_MEM_SPEC_MIN_MB), AUTO_MEM_SPEC_MAX_MB))
        mem = mem if mem < real // 2 else 0
    if cores == 'auto':
        cores = sockets if per_socket >= AUTO_CORE_SPEC_MIN_CORES_PER_SOCKET else 0
    if cores >= sockets * per_socket:
        raise ValueError('node %s: core_spec_count %d leaves none of its %d cores to jobs' % (name, cores, sockets * per_socket))
    if mem >= real:
        raise ValueError('node %s: mem_spec_limit %d MB leaves none of its %d MB to jobs' % (name, mem, real))
    return cores, mem


def node_gpu_count(node):
    """GPUs of a node table entry, from its ``Gres`` (``gpu:h100:8``, ``gpu:a100:4,gpu:h100:4``, ``gpu:8``)."""
    total = 0
    for item in (node.get('Gres') or '').split(','):
        parts = item.strip().split(':')
        if parts[0] == 'gpu' and len(parts) >= 2 and parts[-1].isdigit():
            total += int(parts[-1])
    return total


def slurm_nodes(names, records, node_groups=None, groups=None, known=None, allow_missing=False,
                mem_spec_limit='auto', core_spec_count='auto', optional=None):
    """The cluster's node table: one dict per compute node, in natural name order.

    ``names`` are the compute nodes; ``records`` their records (node_record()) in the same order, None where
    a host has no facts (not in this play and not in the fact cache); for those, ``known`` (the nodes parsed
    from the slurm.conf in service, parse_slurm_conf()['nodes']) is used.  ``node_groups`` add ``Feature``
    and ``Weight``, and may override ``mem_spec_limit``/``core_spec_count`` (node_spec(): what the node keeps
    for its own daemons, ``MemSpecLimit``/``CoreSpecCount``).  Raises ValueError naming every node without
    hardware facts, unless ``allow_missing`` (check mode on hosts without Slurm yet), which leaves them out;
    nodes in ``optional`` (left out of this run) are left out quietly when nothing is known of them.
    """
    names = list(names)
    records = list(records or [])
    if len(records) != len(names):
        raise ValueError('slurm_nodes: %d names but %d records' % (len(names), len(records)))
    known = known or {}
    groups = groups or {}
    optional = set(optional or [])
    membership = _group_index(node_groups, groups)
    table = []
    missing = []
    for name, record in zip(names, records):
        source = record if record else known.get(name)
        if not source:
            if name not in optional:
                missing.append(name)
            continue
        node = {'NodeName': name}
        for key in HARDWARE_KEYS:
            node[key] = int(source[key])
        node['Gres'] = source.get('Gres') or ''
        group = membership.get(name)
        features = _as_list(group.get('features')) if group else []
        node['Feature'] = ','.join(str(feature) for feature in features)
        weight = group.get('weight') if group else None
        node['Weight'] = '' if weight in (None, '') else str(int(weight))
        spec_cores, spec_mem = node_spec(node, (group or {}).get('mem_spec_limit', mem_spec_limit),
                                         (group or {}).get('core_spec_count', core_spec_count))
        node['CoreSpecCount'] = str(spec_cores) if spec_cores else ''
        node['MemSpecLimit'] = str(spec_mem) if spec_mem else ''
        table.append(node)
    if missing and not allow_missing:
        raise ValueError('no hardware facts for %s: run the slurm play on them (it records slurmd -C in the fact '
                         'cache) or keep their NodeName lines in the slurm.conf in service' % hostlist_compress(missing))
    table.sort(key=lambda node: _natural(node['NodeName']))
    return table


def slurm_node_lines(nodes, state='UNKNOWN'):
    """``NodeName=`` lines for slurm.conf: nodes with identical hardware, gres, features and weight share one line,
    their names compressed (``NodeName=gpu[001-128] CPUs=192 ... Gres=gpu:h100:8 State=UNKNOWN``).

    ``nodes``: dicts with ``NodeName`` and the keys of NODE_KEYS (empty values are left out).  Lines are
    ordered by their first node.  Raises ValueError on a node given twice or a missing hardware value.
    """
    groups = {}
    seen = set()
    for node in nodes:
        name = node.get('NodeName')
        if not name:
            raise ValueError('a node has no NodeName: %r' % (node,))
        if name in seen:
            raise ValueError('node %s is given twice' % name)
        seen.add(name)
        values = []
        for key in NODE_KEYS:
            value = node.get(key)
            if key in HARDWARE_KEYS and (value is None or value == ''):
                raise ValueError('node %s has no %s' % (name, key))
            if isinstance(value, (list, tuple)):
                value = ','.join(str(item) for item in value)
            values.append('' if value is None else str(value))
        groups.setdefault(tuple(values), []).append(name)
    lines = []
    for values, names in groups.items():
        ordered = sorted(names, key=_natural)
        fields = ['NodeName=%s' % hostlist_compress(ordered)]
        fields.extend('%s=%s' % (key, value) for key, value in zip(NODE_KEYS, values) if value != '')
        if state:
            fields.append('State=%s' % state)
        lines.append((_natural(ordered[0]), ' '.join(fields)))
    lines.sort(key=lambda item: item[0])
    return [line for _key, line in lines]


def _slurm_value(value):
    if isinstance(value, bool):
        return 'YES' if value else 'NO'
    if isinstance(value, (list, tuple)):
        return ','.join(str(item) for item in value)
    return str(value)


def gpu_defaults(members, nodes, def_mem_per_gpu='auto', def_cpu_per_gpu='auto'):
    """``DefMemPerGPU``/``DefCpuPerGPU`` for a partition of ``members`` (names) from the node table ``nodes``.

    ``auto``: what each GPU of the partition's smallest GPU node can have when every GPU is allocated, that is the
    node's memory and CPUs less what it keeps for itself (``MemSpecLimit``, ``CoreSpecCount`` x ThreadsPerCore),
    divided by its GPUs, rounded down.  Without it a GPU job that does not ask for memory gets the whole node
    (select/cons_tres with memory as a consumable) and a second job cannot share it.  No CPU default when a node
    has fewer CPUs than GPUs (a whole CPU per GPU would leave GPUs unallocatable).  A number is used as it is;
    0 or a partition without GPU nodes: none.  Returns ``{'DefMemPerGPU': int, 'DefCpuPerGPU': int}`` with only
    the keys that apply.
    """
    by_name = dict((node['NodeName'], node) for node in nodes or [])
    mem = _spec_value(def_mem_per_gpu, 'def_mem_per_gpu')
    cpu = _spec_value(def_cpu_per_gpu, 'def_cpu_per_gpu')
    mems, cpus = [], []
    for name in members:
        node = by_name.get(name)
        gpus = node_gpu_count(node) if node else 0
        if not gpus:
            continue
        spec_cores = int(node.get('CoreSpecCount') or 0)
        spec_mem = int(node.get('MemSpecLimit') or 0)
        mems.append((int(node['RealMemory']) - spec_mem) // gpus)
        cpus.append((int(node['CPUs']) - spec_cores * int(node.get('ThreadsPerCore') or 1)) // gpus)
    out = {}
    if mems:
        mem = min(mems) if mem == 'auto' else mem
        cpu = min(cpus) if cpu == 'auto' else cpu
        if mem:
            out['DefMemPerGPU'] = mem
        if cpu:
            out['DefCpuPerGPU'] = cpu
    return out


def slurm_partition_lines(partitions, groups, compute_nodes=None, nodes=None, def_mem_per_gpu='auto',
                          def_cpu_per_gpu='auto'):
    """``PartitionName=`` lines: ``PartitionName=gpu Nodes=gpu[001-128] Default=YES MaxTime=INFINITE State=UP``.

    Each partition: ``name``, ``nodes`` and/or ``groups`` (selecting compute nodes), ``default`` (bool),
    ``max_time``, ``state`` and ``options`` (more slurm.conf partition parameters, ``{'OverSubscribe': 'NO'}``).
    With ``nodes`` (the node table), GPU partitions get ``DefMemPerGPU``/``DefCpuPerGPU`` (gpu_defaults(); a
    partition's ``def_mem_per_gpu``/``def_cpu_per_gpu`` override the cluster's, and its ``options`` win over both).
    Raises ValueError with the messages of check_slurm_vars() when a partition is invalid.
    """
    if compute_nodes is not None:
        problems = check_slurm_vars(partitions, [], compute_nodes, groups)
        if problems:
            raise ValueError('; '.join(problems))
    lines = []
    for index, part in enumerate(partitions or []):
        members = select_hosts(part, groups, 'slurm_partitions[%d]' % index)
        if nodes is not None:
            # a node slurm.conf cannot define (no hardware facts: left out of this run, or a check run before Slurm
            # is installed) cannot be in a partition either: slurmctld refuses an undefined node
            defined = set(node['NodeName'] for node in nodes)
            members = [name for name in members if name in defined]
        fields = ['PartitionName=%s' % part['name'], 'Nodes=%s' % hostlist_compress(members)]
        fields.append('Default=%s' % ('YES' if part.get('default') else 'NO'))
        if part.get('max_time') not in (None, ''):
            fields.append('MaxTime=%s' % part['max_time'])
        fields.append('State=%s' % (part.get('state') or 'UP'))
        options = {}
        if nodes is not None:
            options.update(gpu_defaults(members, nodes, part.get('def_mem_per_gpu', def_mem_per_gpu),
                                        part.get('def_cpu_per_gpu', def_cpu_per_gpu)))
        options.update(part.get('options') or {})
        for key, value in sorted(options.items()):
            fields.append('%s=%s' % (key, _slurm_value(value)))
        lines.append(' '.join(fields))
    return lines


# ---------------------------------------------------------------------------
# Reading slurm.conf back: nodes in service, and what needs a restart
# ---------------------------------------------------------------------------

def parse_slurm_conf(text):
    """A slurm.conf's parameters, node definitions and partitions.

    Returns ``{'params': {lowercase key: [values]}, 'nodes': {name: {key: value}}, 'node_lines': [...],
    'partitions': {name: line}}``.  Comments, blank lines and ``Include`` are skipped; node lines are expanded
    to one entry per node (hardware values as ints).  Raises ParseError for text that is not Key=Value lines.
    """
    if not isinstance(text, str):
        raise ParseError('slurm.conf must be text, not %s' % type(text).__name__)
    params = {}
    nodes = {}
    node_lines = []
    partitions = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split('#', 1)[0].strip()
        if not line or line.lower().startswith('include '):
            continue
        fields = _KEY_VALUE.findall(line)
        if not fields or not line.startswith(fields[0][0] + '='):
            raise ParseError('expected Key=Value', number, raw)
        first_key, first_value = fields[0]
        if first_key.lower() == 'nodename':
            node_lines.append(' '.join(line.split()))
            if first_value in ('DEFAULT', 'ALL'):
                continue
            values = dict((key, value) for key, value in fields[1:])
            for key in HARDWARE_KEYS:
                if key in values and values[key].isdigit():
                    values[key] = int(values[key])
            try:
                names = hostlist_expand(first_value)
            except ParseError as exc:
                raise ParseError('bad NodeName %r: %s' % (first_value, exc), number, raw)
            for name in names:
                nodes[name] = dict(values)
        elif first_key.lower() == 'partitionname':
            partitions[first_value] = ' '.join(line.split())
        else:
            params.setdefault(first_key.lower(), []).append(line[len(first_key) + 1:].strip())
    return {'params': params, 'nodes': nodes, 'node_lines': node_lines, 'partitions': partitions}


def known_nodes(text):
    """Hardware records of the nodes a slurm.conf in service defines (for nodes without facts); {} for no text."""
    if not text:
        return {}
    nodes = parse_slurm_conf(text)['nodes']
    return dict((name, values) for name, values in nodes.items() if all(key in values for key in HARDWARE_KEYS))


# From Slurm 23.11 on, ``scontrol reconfigure`` re-reads the node definitions: nodes added to or removed from
# slurm.conf need no daemon restart (slurm.conf(5) "NodeName"; SchedMD's "Add/Remove Nodes" FAQ). Before it,
# slurmctld and every slurmd must restart, slurmd because it forwards messages along its own slurm.conf's node list.
RECONFIGURE_ADDS_NODES = (23, 11)
_VERSION = re.compile(r'(?<![0-9.])([0-9]{2})\.([0-9]{1,2})(?:\.([0-9]+))?')


def parse_slurm_version(text):
    """``slurmd -V``/``slurmctld -V`` (``slurm 22.05.8``, ``slurm-wlm 22.05.8``) -> ``(22, 5, 8)``; None when no
    version is printed."""
    match = _VERSION.search(text or '')
    if not match:
        return None
    return tuple(int(part) for part in match.groups() if part is not None)


def daemon_action(old_text, new_text, version=None):
    """What a daemon running with slurm.conf ``old_text`` needs to take ``new_text``, on Slurm ``version``
    (a tuple; None when unknown, read as the oldest supported, 22.05).

    Returns ``(action, reasons)``: ``('none', [])`` for the same bytes, ``('reconfigure', [])`` when
    ``scontrol reconfigure`` applies it (or there was no old file: the daemon starts with the new one), and
    ``('restart', reasons)`` otherwise. Node definitions alone need no restart from 23.11 on.
    """
    if old_text == new_text:
        return 'none', []
    reasons = restart_reasons(old_text, new_text)
    if version is not None and tuple(version[:2]) >= RECONFIGURE_ADDS_NODES:
        reasons = [reason for reason in reasons if reason != 'node definitions']
    return ('restart' if reasons else 'reconfigure'), reasons


def restart_reasons(old_text, new_text):
    """Why replacing slurm.conf ``old_text`` with ``new_text`` needs the daemons restarted, not reconfigured.

    Returns a sorted list such as ``['node definitions', 'SelectType']``; empty when ``scontrol reconfigure``
    is enough, when nothing changed, or when there was no old file (the daemons start with the new one).
    """
    if not old_text:
        return []
    old = parse_slurm_conf(old_text)
    new = parse_slurm_conf(new_text)
    reasons = []
    if old['node_lines'] != new['node_lines']:
        reasons.append('node definitions')
    for key in sorted(set(old['params']) | set(new['params'])):
        if key in RESTART_KEYS and old['params'].get(key) != new['params'].get(key):
            reasons.append(RESTART_KEYS[key])
    return reasons
