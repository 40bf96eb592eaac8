# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cluster arithmetic: gres.conf lines, NCCL environment, IPoIB addresses and InfiniBand link rates."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.slurm import hostlist_compress, hostlist_sort_key


def _netaddr():
    """netaddr, imported on first use: it costs a tenth of a second, and this module is loaded by every Slurm filter
    call (docs/scale.md "What a task costs the control node")."""
    try:
        import netaddr
    except ImportError:  # pragma: no cover - netaddr is in requirements.txt
        raise AddressError('ipoib_address needs the Python netaddr library on the controller')
    return netaddr


class AddressError(ValueError):
    """An address cannot be handed out (subnet too small, bad index or subnet)."""


# ---------------------------------------------------------------------------
# GPU type names and gres.conf
# ---------------------------------------------------------------------------

_VENDOR_WORDS = ('nvidia', 'tesla', 'geforce', 'quadro', 'grid')
_MODEL = re.compile(r'^[a-z]{1,3}\d{1,4}[a-z]?$')
_CPULIST_ITEM = re.compile(r'^(\d+)(?:-(\d+))?$')
AUTODETECT_PLUGINS = ('nvml', 'rsmi', 'oneapi', 'nrt')


def gpu_type_name(product_name):
    """Slurm gres Type for a GPU product name: the lowercase model short name.

    ``'NVIDIA H100 80GB HBM3'`` -> ``'h100'``, ``'NVIDIA A100-SXM4-80GB'`` ->
    ``'a100'``, ``'NVIDIA L40S'`` -> ``'l40s'``, ``'NVIDIA GeForce RTX 4090'``
    -> ``'rtx4090'``.  A name without a recognisable model becomes its words in
    lowercase joined by ``_``.  Raises ValueError on an empty name.
    """
    if not isinstance(product_name, str) or not product_name.strip():
        raise ValueError('gpu_type_name: expected a GPU product name, got %r' % (product_name,))
    words = [word for word in re.split(r'[\s\-_/]+', product_name.strip().lower()) if word]
    words = [word for word in words if word not in _VENDOR_WORDS]
    for index, word in enumerate(words):
        if word in ('rtx', 'gtx') and index + 1 < len(words) and re.match(r'^\d{3,4}[a-z]*$', words[index + 1]):
            return word + words[index + 1]
        if _MODEL.match(word):
            return word
    fallback = re.sub(r'[^a-z0-9.]+', '_', '_'.join(words)).strip('_')
    if not fallback:
        raise ValueError('gpu_type_name: no model name in %r' % (product_name,))
    return fallback


def cpulist_parse(value):
    """``'0-47,96-143'`` (or a list of ints) -> sorted list of CPU ids; ``None``/``''``/``N/A`` -> []."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        try:
            return sorted(set(int(cpu) for cpu in value))
        except (TypeError, ValueError):
            raise ValueError('bad CPU list %r' % (value,))
    text = str(value).strip()
    if text.lower() in ('', 'n/a', 'none'):
        return []
    cpus = set()
    for item in text.split(','):
        match = _CPULIST_ITEM.match(item.strip())
        if not match:
            raise ValueError('bad CPU list %r (item %r)' % (value, item))
        low = int(match.group(1))
        high = int(match.group(2)) if match.group(2) is not None else low
        if high < low:
            raise ValueError('bad CPU list %r (reversed range %r)' % (value, item))
        cpus.update(range(low, high + 1))
    return sorted(cpus)


def _ranges_text(values):
    """Sorted ints -> ``'0-47,96-143'``."""
    out = []
    for value in values:
        if out and value == out[-1][1] + 1:
            out[-1][1] = value
        else:
            out.append([value, value])
    return ','.join(str(low) if low == high else '%d-%d' % (low, high) for low, high in out)


def _gpu_cpus(gpu):
    if gpu.get('cpus'):
        return cpulist_parse(gpu['cpus'])
    return cpulist_parse(gpu.get('cpu_affinity'))


def _looks_hyperthreaded(cpu_sets, total_cpus):
    """True when every GPU's CPU set is two equal halves N apart, N = total_cpus / 2 (Linux's usual HT
    enumeration), and at least one set is not every CPU (a set of all CPUs says nothing about threads)."""
    if total_cpus < 2 or total_cpus % 2:
        return False
    half = total_cpus // 2
    partial = False
    for cpus in cpu_sets:
        if not cpus:
            continue
        low = set(cpu for cpu in cpus if cpu < half)
        high = set(cpu - half for cpu in cpus if cpu >= half)
        if not low or low != high:
            return False
        partial = partial or len(cpus) < total_cpus
    return partial


def core_ids(cpus, threads_per_core, total_cores):
    """Map Linux CPU ids to Slurm core ids, assuming the common enumeration (sibling = cpu + total_cores)."""
    if threads_per_core <= 1 or not total_cores:
        return sorted(set(cpus))
    limit = total_cores * threads_per_core
    for cpu in cpus:
        if cpu >= limit:
            raise ValueError('CPU %d is beyond %d cores x %d threads' % (cpu, total_cores, threads_per_core))
    return sorted(set(cpu % total_cores for cpu in cpus))


def slurm_core_map(cpu_topology):
    """Linux CPU id -> Slurm core id, from the kernel's CPU topology (sysfs ``topology/physical_package_id`` and
    ``topology/core_id`` of every CPU: a list of ``{'cpu', 'package', 'core'}``).

    Slurm numbers cores as hwloc orders them: sockets by their lowest CPU id, then the cores of each socket by their
    lowest CPU id, counted from 0 across sockets.  This holds whatever the BIOS's numbering: socket-interleaved
    (CPU 0 on socket 0, CPU 1 on socket 1, ...) or siblings at ``cpu + total_cores`` as Linux usually does.
    Returns {} for no topology.
    """
    cores = {}
    for entry in cpu_topology or []:
        key = (int(entry['package']), int(entry['core']))
        cores.setdefault(key, []).append(int(entry['cpu']))
    packages = {}
    for (package, core), cpus in cores.items():
        packages.setdefault(package, []).append((min(cpus), core))
    mapping = {}
    index = 0
    for package in sorted(packages, key=lambda pkg: min(first for first, _core in packages[pkg])):
        for _first, core in sorted(packages[package]):
            for cpu in cores[(package, core)]:
                mapping[cpu] = index
            index += 1
    return mapping


def _core_layout(gpus, threads_per_core, sockets, cores_per_socket):
    """(threads_per_core, total_cores) from the arguments, or inferred from the GPUs' CPU sets."""
    total_cores = None
    if sockets is not None or cores_per_socket is not None:
        if sockets is None or cores_per_socket is None:
            raise ValueError('give both sockets and cores_per_socket, or neither')
        total_cores = int(sockets) * int(cores_per_socket)
        if total_cores <= 0:
            raise ValueError('sockets x cores_per_socket must be positive')
    cpu_sets = [_gpu_cpus(gpu) for gpu in gpus]
    all_cpus = [cpu for cpus in cpu_sets for cpu in cpus]
    if threads_per_core is not None:
        threads_per_core = int(threads_per_core)
        if threads_per_core < 1:
            raise ValueError('threads_per_core must be 1 or more, got %d' % threads_per_core)
        if threads_per_core > 1 and total_cores is None and all_cpus:
            total_cores = (max(all_cpus) + 1) // threads_per_core
        return threads_per_core, total_cores
    if total_cores is not None:
        # Cores known, threads not: CPUs past the last core are siblings.
        top = max(all_cpus) + 1 if all_cpus else total_cores
        return max(1, -(-top // total_cores)), total_cores
    if all_cpus and _looks_hyperthreaded(cpu_sets, max(all_cpus) + 1):
        return 2, (max(all_cpus) + 1) // 2
    if all_cpus and all(not cpus or cpus == list(range(max(all_cpus) + 1)) for cpus in cpu_sets):
        # Every GPU sees every CPU: nothing to bind, and the thread layout cannot be told.
        return None, None
    return 1, None


def _device_file(gpu):
    if gpu.get('device_file'):
        return gpu['device_file']
    minor = gpu.get('minor_number')
    if minor is None:
        minor = gpu.get('index')
    if minor is None:
        raise ValueError('GPU %r has neither device_file, minor_number nor index' % (gpu.get('uuid') or gpu,))
    return '/dev/nvidia%d' % int(minor)


def _gpu_type(gpu):
    if gpu.get('type'):
        return gpu['type']
    return gpu_type_name(gpu.get('name') or '')


def gres_conf_lines(gpu_info, node_name=None, autodetect=None, threads_per_core=None, sockets=None, cores_per_socket=None,
                    cpu_topology=None):
    """gres.conf lines for one node from its gpu_info facts.

    One ``Name=gpu Type=<type> File=/dev/nvidia[0-3] Cores=0-47`` line per
    group of whole GPUs sharing type and cores; one ``Name=gpu Type=<profile>
    MultipleFiles=<gpu device>,<GI cap>,<CI cap>`` line per MIG device (Slurm's
    gres.conf documents MIG devices this way: the parent GPU's device file and
    the MIG instance's nvidia-caps files).  A MIG-enabled GPU without MIG
    devices gives no line.

    ``Cores=`` holds Slurm core ids.  Slurm numbers cores 0..sockets x
    cores_per_socket - 1; the CPU ids of ``cpu_affinity`` are mapped to those
    assuming Linux's common enumeration where the second hyperthread of core
    ``c`` is CPU ``c + total_cores`` (CPUs 0-47 and 96-143 on a 2 x 48-core
    host are cores 0-47).  Pass threads_per_core and sockets/cores_per_socket
    from ``slurmd -C`` when known.  Otherwise 2 threads per core are assumed
    exactly when every GPU's CPU set is two equal halves (and some GPU does
    not see every CPU); when every GPU sees every CPU ``Cores=`` is left out
    (nothing to bind, and the thread layout cannot be told); else 1 thread.

    With ``cpu_topology`` (the kernel's, ``gpu_info``'s ``cpu_topology``: every CPU's package and core id) the CPU
    ids are mapped through slurm_core_map() instead, which is right for any numbering (socket-interleaved BIOS
    numbering included); a CPU the topology does not list leaves ``Cores=`` out of every line.

    ``autodetect`` ``'nvml'`` (or another AutoDetect plugin) returns just
    ``['AutoDetect=nvml']``; ``'off'`` puts ``AutoDetect=off`` before the
    lines.  ``node_name`` prefixes every line with ``NodeName=<name> ``.
    """
    prefix = 'NodeName=%s ' % node_name if node_name else ''
    if autodetect is not None:
        autodetect = str(autodetect).strip().lower()
        if autodetect in AUTODETECT_PLUGINS:
            return ['%sAutoDetect=%s' % (prefix, autodetect)]
        if autodetect != 'off':
            raise ValueError('autodetect must be one of %s or off, got %r' % (', '.join(AUTODETECT_PLUGINS), autodetect))
    if not isinstance(gpu_info, dict):
        raise ValueError('gpu_info must be a dict (the gpu_info facts), got %s' % type(gpu_info).__name__)
    gpus = gpu_info.get('gpus') or []
    if not isinstance(gpus, list) or not all(isinstance(gpu, dict) for gpu in gpus):
        raise ValueError('gpu_info.gpus must be a list of dicts')
    core_map = slurm_core_map(cpu_topology)
    if core_map:
        if any(cpu not in core_map for gpu in gpus for cpu in _gpu_cpus(gpu)):
            core_map, tpc, total_cores = {}, None, None
        else:
            tpc, total_cores = 1, None
    else:
        tpc, total_cores = _core_layout(gpus, threads_per_core, sockets, cores_per_socket)

    entries = []  # (sort key, kind, type, cores, files)
    for gpu in gpus:
        if core_map:
            cores = _ranges_text(sorted(set(core_map[cpu] for cpu in _gpu_cpus(gpu))))
        else:
            cores = _ranges_text(core_ids(_gpu_cpus(gpu), tpc, total_cores)) if tpc else ''
        device = _device_file(gpu)
        if gpu.get('mig_enabled'):
            for mig in gpu.get('mig_devices') or []:
                files = [path for path in (mig.get('device_files') or []) if path]
                if not files or not mig.get('profile'):
                    raise ValueError('MIG device %r of %s lacks a profile or device_files' % (mig, device))
                if device not in files:
                    files = [device] + files
                entries.append((hostlist_sort_key(device), 'mig', mig['profile'], cores, files))
            continue
        entries.append((hostlist_sort_key(device), 'gpu', _gpu_type(gpu), cores, [device]))

    lines = ['%sAutoDetect=off' % prefix] if autodetect == 'off' else []
    groups = {}
    order = []
    for _key, kind, gtype, cores, files in sorted(entries, key=lambda entry: entry[0]):
        if kind == 'mig':
            order.append(('mig', gtype, cores, files))
            continue
        group = groups.get((gtype, cores))
        if group is None:
            group = groups[(gtype, cores)] = ('gpu', gtype, cores, [])
            order.append(group)
        group[3].extend(files)
    for kind, gtype, cores, files in order:
        if kind == 'mig':
            line = '%sName=gpu Type=%s MultipleFiles=%s' % (prefix, gtype, ','.join(files))
        else:
            line = '%sName=gpu Type=%s File=%s' % (prefix, gtype, hostlist_compress(files))
        if cores:
            line += ' Cores=%s' % cores
        lines.append(line)
    return lines


# ---------------------------------------------------------------------------
# NCCL environment
# ---------------------------------------------------------------------------

_LINK_LAYERS = {'infiniband': 'InfiniBand', 'ib': 'InfiniBand', 'ethernet': 'Ethernet', 'eth': 'Ethernet', 'roce': 'Ethernet'}


def _link_layer(value):
    key = str(value or '').strip().lower()
    if key not in _LINK_LAYERS:
        raise ValueError('unknown link layer %r (expected InfiniBand or Ethernet)' % (value,))
    return _LINK_LAYERS[key]


def _is_active(port):
    state = str(port.get('state') or '').strip().lower()
    return 'active' in state and 'inactive' not in state


def _name_list(value, what):
    if value is None:
        return []
    if isinstance(value, str):
        value = value.split(',')
    if not isinstance(value, (list, tuple)):
        raise ValueError('%s must be a list of HCA names or a comma-separated string, got %r' % (what, value))
    return [str(item).strip().lstrip('=') for item in value if str(item).strip()]


def _matches(entries, hca, port):
    return any(entry == hca or entry == '%s:%s' % (hca, port) for entry in entries)


def nccl_env(ib_info, hca_include=None, hca_exclude=None, socket_ifname=None, link_layer=None, extra=None,
             gid_index='auto', active_only=True):
    """NCCL environment variables for the GPU fabric described by the ib_info facts.

    ``NCCL_IB_HCA`` is ``=mlx5_0:1,mlx5_1:1,...``: the active ports of the
    HCAs whose link layer is ``link_layer`` (default InfiniBand when any IB
    port is active, else Ethernet), minus ``hca_exclude`` (names or
    ``name:port``), or exactly ``hca_include``.  The leading ``=`` asks NCCL
    for exact names: without it ``mlx5_1`` also matches mlx5_10..mlx5_17.
    For RoCE (Ethernet) ``NCCL_IB_GID_INDEX`` is the ports' common RoCE v2
    GID index.  ``NCCL_SOCKET_IFNAME`` is set when ``socket_ifname`` is
    given; anything else (NCCL_IB_TC, NCCL_IB_SL, ...) only via ``extra``,
    which is applied last.  NVSwitch bridge functions (ib_info
    ``nvswitch_bridge``/``nvswitch_bridges``) are never candidates.  Raises
    ValueError when no port qualifies, an included HCA is missing or down, or
    RoCE ports disagree on the GID index.

    ``gid_index``: ``'auto'`` (the ports' common index, as above), an integer
    (written as given, any link layer), or None/``''`` (not set: NCCL 2.21 and
    later choose the RoCE v2 IPv4 GID per port themselves).  ``active_only``
    False takes every port of the link layer whatever its state (NCCL skips
    ports that are not Active when it starts, src/transport/net_ib/init.cc), so
    a port that comes back is used without a new file; the GID index is then
    read from the Active ones.
    """
    if not isinstance(ib_info, dict) or not isinstance(ib_info.get('hcas'), list):
        raise ValueError('ib_info must be the ib_info facts: a dict with an hcas list')
    include = _name_list(hca_include, 'hca_include')
    exclude = _name_list(hca_exclude, 'hca_exclude')
    ports = []
    bridges = set(ib_info.get('nvswitch_bridges') or [])
    for hca in ib_info['hcas']:
        if not isinstance(hca, dict) or not hca.get('name'):
            raise ValueError('every HCA in ib_info.hcas needs a name, got %r' % (hca,))
        if hca.get('nvswitch_bridge') or hca['name'] in bridges:
            continue  # an NVSwitch bridge function (HGX B200/B300) carries no NCCL traffic
        for port in hca.get('ports') or []:
            ports.append((hca['name'], port))
    active = [(name, port) for name, port in ports if _is_active(port)]
    pool = active if active_only else ports
    state = 'active ' if active_only else ''

    if include:
        known = set(name for name, _port in ports) | set('%s:%s' % (name, port.get('port')) for name, port in ports)
        missing = [entry for entry in include if entry not in known]
        if missing:
            raise ValueError('hca_include names HCAs/ports that ib_info does not have: %s' % ', '.join(missing))
        chosen = [(name, port) for name, port in pool if _matches(include, name, port.get('port'))]
        down = [entry for entry in include if not any(_matches([entry], name, port.get('port')) for name, port in chosen)]
        if down:
            raise ValueError('hca_include names HCAs/ports with no active port: %s' % ', '.join(down))
        layers = set(_link_layer(port.get('link_layer')) for _name, port in chosen)
        if link_layer is not None:
            layer = _link_layer(link_layer)
        elif len(layers) == 1:
            layer = layers.pop()
        else:
            raise ValueError('hca_include mixes InfiniBand and Ethernet ports; pass link_layer')
    else:
        if link_layer is not None:
            layer = _link_layer(link_layer)
        elif any(str(port.get('link_layer') or '').lower() == 'infiniband' for _name, port in pool):
            layer = 'InfiniBand'
        else:
            layer = 'Ethernet'
        chosen = [(name, port) for name, port in pool
                  if str(port.get('link_layer') or '').lower() == layer.lower()
                  and not _matches(exclude, name, port.get('port'))]
    if not chosen:
        raise ValueError('no %s%s port left for NCCL_IB_HCA (%d ports, %d active, excluded: %s)'
                         % (state, layer, len(ports), len(active), ', '.join(exclude) or 'none'))
    chosen.sort(key=lambda item: (hostlist_sort_key(item[0]), int(item[1].get('port') or 0)))
    env = {'NCCL_IB_HCA': '=' + ','.join('%s:%s' % (name, port.get('port')) for name, port in chosen)}
    if gid_index not in ('auto', None, ''):
        if isinstance(gid_index, bool) or not str(gid_index).strip().isdigit():
            raise ValueError('gid_index must be auto, an index (0 or more) or empty, got %r' % (gid_index,))
        env['NCCL_IB_GID_INDEX'] = str(int(str(gid_index).strip()))
    elif gid_index == 'auto' and layer == 'Ethernet':
        indexes = dict(('%s:%s' % (name, port.get('port')), port.get('roce_v2_gid_index')) for name, port in chosen
                       if active_only or _is_active(port))
        if not indexes:
            raise ValueError('no Active RoCE port to read the RoCE v2 GID index from')
        unknown = sorted(key for key, value in indexes.items() if value is None)
        if unknown:
            raise ValueError('RoCE v2 GID index unknown for %s' % ', '.join(unknown))
        values = set(int(value) for value in indexes.values())
        if len(values) > 1:
            raise ValueError('RoCE ports disagree on the RoCE v2 GID index: %s'
                             % ', '.join('%s=%s' % item for item in sorted(indexes.items())))
        env['NCCL_IB_GID_INDEX'] = str(values.pop())
    if socket_ifname:
        if isinstance(socket_ifname, (list, tuple)):
            socket_ifname = ','.join(str(item) for item in socket_ifname)
        env['NCCL_SOCKET_IFNAME'] = str(socket_ifname)
    if extra:
        if not isinstance(extra, dict):
            raise ValueError('extra must be a dict of environment variables, got %r' % (extra,))
        for key, value in extra.items():
            env[str(key)] = str(value)
    return env


# ---------------------------------------------------------------------------
# IPoIB addresses
# ---------------------------------------------------------------------------

def ipoib_address(index, subnet, offset=0):
    """The (index + offset)-th usable host address of ``subnet`` as ``'a.b.c.d/prefix'``.

    Index 0 is the first address after the network address; the network and
    broadcast addresses are never handed out (IPv4 /31 and /32 hold no such
    address).  For IPv6 the subnet-router anycast address (the network
    address) is skipped.  Raises AddressError (a ValueError) naming the
    subnet, its usable size and the index when the subnet is too small.
    """
    netaddr = _netaddr()
    if isinstance(index, bool) or isinstance(offset, bool):
        raise AddressError('ipoib_address: index and offset must be integers, not booleans')
    try:
        number = int(index) + int(offset)
    except (TypeError, ValueError):
        raise AddressError('ipoib_address: index and offset must be integers, got %r and %r' % (index, offset))
    try:
        network = netaddr.IPNetwork(str(subnet)).cidr
    except (netaddr.AddrFormatError, ValueError, TypeError) as exc:
        raise AddressError('ipoib_address: %r is not a subnet (%s)' % (subnet, exc))
    if network.version == 4:
        usable = max(0, network.size - 2)
    else:
        usable = network.size - 1
    if number < 0 or number >= usable:
        raise AddressError('ipoib_address: subnet %s has %d usable addresses; index %d%s is outside it'
                           % (network, usable, int(index), ' (+ offset %d)' % int(offset) if offset else ''))
    address = netaddr.IPAddress(network.first + 1 + number, network.version)
    return '%s/%d' % (address, network.prefixlen)


# ---------------------------------------------------------------------------
# InfiniBand link rates
# ---------------------------------------------------------------------------

# Signalling rate per lane (Gb/s, as ibstat/ibv_devinfo print it) -> data rate after encoding.
LANE_DATA_RATES = (
    ('SDR', 2.5, 2.0),                      # 8b/10b
    ('DDR', 5.0, 4.0),                      # 8b/10b
    ('QDR', 10.0, 8.0),                     # 8b/10b
    ('FDR10', 10.3125, 10.3125 * 64 / 66),  # 64b/66b -> 10
    ('FDR', 14.0625, 14.0625 * 64 / 66),    # 64b/66b -> 13.64
    ('EDR', 25.78125, 25.78125 * 64 / 66),  # 64b/66b -> 25
    ('HDR', 53.125, 50.0),                  # PAM4, 256b/257b + RS-FEC
    ('NDR', 106.25, 100.0),
    ('XDR', 212.5, 200.0),
)
LINK_WIDTHS = (1, 2, 4, 8, 12)
_NUMBER = re.compile(r'^\s*([0-9]+(?:\.[0-9]+)?)')


def _lane_data_rate(lane_speed):
    text = str(lane_speed).strip()
    for name, _signal, data in LANE_DATA_RATES:
        if text.upper() == name:
            return data
    match = _NUMBER.match(text)
    if match and not isinstance(lane_speed, bool):
        value = float(match.group(1))
        for name, signal, data in LANE_DATA_RATES:
            if abs(value - signal) < 1e-3:
                return data
    raise ValueError('unknown lane speed %r; known: %s' % (
        lane_speed, ', '.join('%s %s' % (name, signal) for name, signal, _data in LANE_DATA_RATES)))


def _lanes(width):
    if isinstance(width, bool):
        raise ValueError('unknown link width %r' % (width,))
    text = str(width).strip().upper()
    if text.endswith('X'):
        text = text[:-1]
    try:
        lanes = int(text)
    except ValueError:
        raise ValueError('unknown link width %r; known: %s' % (width, ', '.join('%dX' % lanes for lanes in LINK_WIDTHS)))
    if lanes not in LINK_WIDTHS:
        raise ValueError('unknown link width %r; known: %s' % (width, ', '.join('%dX' % lanes for lanes in LINK_WIDTHS)))
    return lanes


def expected_link_gbps(width, lane_speed_gbps):
    """Usable data rate in Gb/s of a link: lanes x per-lane data rate after encoding.

    ``width`` is ``'4X'`` (or 1X/2X/8X/12X, or a lane count); ``lane_speed_gbps``
    is the per-lane signalling rate (``53.125``, ``'106.25 Gbps'``) or the
    generation name (``'HDR'``).  4X 53.125 -> 200.0, 4X 106.25 -> 400.0,
    4X FDR -> 54.55.  Rounded to 2 decimals.  Raises ValueError on an unknown
    width or lane speed.
    """
    return round(_lanes(width) * _lane_data_rate(lane_speed_gbps), 2)


def link_rate_gbps(rate):
    """ibstat's ``Rate:`` (``400``, ``'400'``, ``'400 Gb/sec (4X NDR)'``) as a float in Gb/s."""
    if isinstance(rate, bool):
        raise ValueError('not a link rate: %r' % (rate,))
    if isinstance(rate, (int, float)):
        return float(rate)
    match = _NUMBER.match(str(rate))
    if not match:
        raise ValueError('not a link rate: %r' % (rate,))
    return float(match.group(1))
