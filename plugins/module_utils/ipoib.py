# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ipoib role's decisions: one host's IPoIB interfaces, what is wrong with its variables, the fleet's duplicate
addresses, the network configuration that persists them, the neighbour-table sizes, and the mode read back.

Sources (docs/ipoib.md cites them in full):
- Linux Documentation/infiniband/ipoib.rst: ``echo 0x8001 > /sys/class/net/ib0/create_child`` makes ``ib0.8001``;
  datagram MTU = IB MTU - 4 (the IPoIB header); the mode is read and set in ``/sys/class/net/<if>/mode``.
  drivers/infiniband/ulp/ipoib: the child's name is ``"%s.%04x"`` of the parent and the P_Key with the full-member
  bit set (``create_child`` ORs in 0x8000), in a buffer of IFNAMSIZ (16) bytes, so a name over 15 characters is cut.
- Red Hat, "Configuring InfiniBand and RDMA networks", "Configuring IPoIB": connected-mode MTU 65520; ConnectX-4 and
  later use enhanced IPoIB (datagram only); connected mode is not supported there.
- NVIDIA MLNX_OFED, "Upper Layer Protocol (ULP)", "Enhanced IPoIB": UD mode only; ib_ipoib's ``ipoib_enhanced``
  module parameter switches it off.
- linux-rdma/opensm doc/partition-config.txt: a partition's IPoIB group MTU defaults to code 4 (2048).
- Linux Documentation/networking/ip-sysctl.rst, neigh/default/gc_thresh1/2/3 (defaults 128, 512, 1024).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils import netconf
from ansible_collections.aicluster.infra.plugins.module_utils.verify.ib import checked_hcas

MODES = ('datagram', 'connected')
RENDERERS = netconf.RENDERERS
IB_MTUS = (256, 512, 1024, 2048, 4096)
IPOIB_HEADER = 4
CONNECTED_MTU = 65520
# partition-config.txt: "mtu=<val> - specifies MTU for this IPoIB MC group (default is 4 (2048))"
PARTITION_DEFAULT_MTU = 2048
DEFAULT_PKEY = 0x7fff
FULL_MEMBER = 0x8000
IFNAMSIZ = 16
# ip-sysctl.rst defaults, and the fleet size above which the role raises them (issue 32).
KERNEL_GC_THRESH = (128, 512, 1024)
GC_NODES_LIMIT = 1000
ETHERNET_SKIP = ('GPU-fabric ports are Ethernet (RoCE): IPoIB does not apply to them; '
                 'the fabric stage configures RoCE separately')
# site.yml runs the role on every GPU node: a fleet that wants no IPoIB (NCCL and perftest use verbs, not IP) sets
# nothing and is left alone, said once; a site that names rails or P_Keys without subnets is told what is missing.
UNSET_SKIP = ('ipoib_subnets and ipoib_addresses are empty: no IPoIB address is managed '
              '(set ipoib_subnets, one subnet per rail, to manage them)')
_NAME = re.compile(r'^[A-Za-z0-9_.:-]{1,15}$')


# The shared helpers (module_utils/netconf.py, also role roce's), under the names this module has always used.
_int = netconf.as_int


def child_name(parent, pkey):
    """The kernel's name for the child of ``parent`` with ``pkey``: ``ib0.8001`` (the full-member bit set)."""
    return '%s.%04x' % (parent, (int(pkey) | FULL_MEMBER) & 0xffff)


def datagram_mtu(ib_mtu):
    """The IPoIB MTU of datagram mode on a partition whose IPoIB group has ``ib_mtu``: 4096 -> 4092, 2048 -> 2044."""
    return int(ib_mtu) - IPOIB_HEADER


def partition_mtus(partitions):
    """opensm_partitions -> ({P_Key without the membership bit: IB MTU}, [problems]).

    Each partition is a dict with ``pkey`` and ``mtu`` in bytes (the IPoIB group's MTU, 256 to 4096); a partition
    without ``mtu`` gets OpenSM's default, 2048. A dict of name -> partition is taken too. The default partition
    (0x7fff) is there even when not listed (OpenSM creates it unconditionally). No partitions: an empty dict.
    """
    problems = []
    if partitions in (None, '', [], {}):
        return {}, problems  # no partitions known (a switch or UFM SM): datagram at IB MTU 4096
    mtus = {DEFAULT_PKEY: PARTITION_DEFAULT_MTU}
    items = list(partitions.items()) if isinstance(partitions, dict) else list(enumerate(partitions)) \
        if isinstance(partitions, list) else None
    if items is None:
        return mtus, ['opensm_partitions must be a list of partitions ({name, pkey, mtu, ...}), got %r' % (partitions,)]
    for key, item in items:
        if not isinstance(item, dict):
            problems.append('opensm_partitions[%s] must be a dict with pkey and mtu, got %r' % (key, item))
            continue
        name = item.get('name', key)
        pkey = _int(item.get('pkey', DEFAULT_PKEY if name == 'Default' else None))
        if pkey is None or not 0 < (pkey & 0x7fff):
            problems.append('opensm_partitions %s: pkey %r is not a P_Key (0x0001-0x7fff)' % (name, item.get('pkey')))
            continue
        mtu = _int(item.get('mtu', PARTITION_DEFAULT_MTU))
        if mtu not in IB_MTUS:
            problems.append('opensm_partitions %s: mtu %r is not an InfiniBand MTU (%s)'
                            % (name, item.get('mtu'), ', '.join(str(m) for m in IB_MTUS)))
            continue
        mtus[pkey & 0x7fff] = mtu
    return mtus, problems


def _subnets_problems(subnets, variable, rails, fleet_size, offset):
    return netconf.subnets_problems(subnets, variable, rails, fleet_size, offset)


def find_rails(ib_info, names=None, port=1):
    """One host's rails in rail order -> (rails, problems).

    Default: every HCA with an InfiniBand port, by device number, NVSwitch bridge functions left out (the rule of
    the verify stage, ``verify.ib.checked_hcas``). ``names``: the rails listed, each an HCA (``mlx5_0``) or its
    port's netdev (``ib0``). Each rail: ``rail``, ``hca``, ``port``, ``netdev``, ``link_layer``.
    """
    hcas = [ca for ca in (ib_info or {}).get('hcas') or [] if isinstance(ca, dict)]
    found, problems = [], []
    lookup = netconf.rail_lookup(hcas, 'ipoib_rails')
    wanted = list(names) if names else checked_hcas(ib_info, None, 'InfiniBand')
    for name in wanted:
        ca, problem = lookup(name)
        if ca is None:
            problems.append(problem)
            continue
        item = next((p for p in ca.get('ports') or [] if p.get('port') == port), None)
        if item is None:
            problems.append('ipoib_port: %s has no port %d' % (ca.get('name'), port))
            continue
        if not item.get('netdev'):
            problems.append('ipoib_rails: %s port %d has no netdev (ib_ipoib not loaded?)' % (ca.get('name'), port))
            continue
        found.append({'rail': len(found), 'hca': ca.get('name'), 'port': port, 'netdev': item['netdev'],
                      'link_layer': item.get('link_layer')})
    return found, problems


def _settings_problems(settings):
    problems = []
    mode = settings.get('mode', 'datagram')
    if mode not in MODES:
        problems.append('ipoib_mode must be one of %s, got %r' % (', '.join(MODES), mode))
    mtu = settings.get('mtu') or 0
    if _int(mtu) is None or _int(mtu) < 0:
        problems.append('ipoib_mtu must be 0 (from the partition) or an MTU in bytes, got %r' % (mtu,))
    elif mode == 'connected' and _int(mtu) > CONNECTED_MTU:
        problems.append('ipoib_mtu %d is above %d, the largest connected-mode MTU' % (_int(mtu), CONNECTED_MTU))
    for variable in ('offset', 'port'):
        value = settings.get(variable, 0 if variable == 'offset' else 1)
        if _int(value) is None or _int(value) < (0 if variable == 'offset' else 1):
            problems.append('ipoib_%s must be a %s integer, got %r'
                            % (variable, 'non-negative' if variable == 'offset' else 'positive', value))
    if not isinstance(settings.get('addresses') or {}, dict):
        problems.append('ipoib_addresses must be a dict of interface name -> address/prefix, got %r'
                        % (settings.get('addresses'),))
    if not isinstance(settings.get('pkeys') or [], list):
        problems.append('ipoib_pkeys must be a list of {pkey, subnets}, got %r' % (settings.get('pkeys'),))
    return problems


def _wanted_mtu(mode, configured, ib_mtu, name, pkey):
    """(MTU, problem) of one interface: from the partition's IB MTU in datagram mode (None: no partition known, the
    largest IB MTU), refusing one that does not fit."""
    if mode == 'connected':
        return configured or CONNECTED_MTU, None
    fits = datagram_mtu(ib_mtu or max(IB_MTUS))
    if not configured:
        return fits, None
    if configured > fits and ib_mtu is None:
        return fits, ('ipoib_mtu %d is above %d, the largest datagram-mode MTU (IB MTU 4096 - 4); use connected mode '
                      'for more' % (configured, fits))
    if configured > fits:
        return fits, ('ipoib_mtu %d does not fit %s: partition 0x%04x carries IPoIB at IB MTU %d, so datagram mode '
                      'allows at most %d (set ipoib_mtu to %d or 0, or raise the partition\'s mtu in opensm_partitions)'
                      % (configured, name, pkey, ib_mtu, fits, fits))
    return configured, None


def _address(name, subnet, settings, rail):
    """(address/prefix, problem) of one interface: ipoib_addresses[name], else ipoib_address(node index, subnet)."""
    return netconf.address(name, subnet, settings, rail, 'ipoib')


def _interfaces(settings, rails, mtus):
    """The interface list and the problems met while building it (parents first, then their children)."""
    problems = []
    mode = settings.get('mode', 'datagram')
    configured = _int(settings.get('mtu') or 0) or 0
    fleet, offset = _int(settings.get('fleet_size') or 0) or 0, _int(settings.get('offset') or 0) or 0
    found, networks = _subnets_problems(settings.get('subnets') or [], 'ipoib_subnets', len(rails), fleet, offset)
    problems.extend(found)
    groups = [(DEFAULT_PKEY, networks, None)]
    for index, child in enumerate(settings.get('pkeys') or []):
        variable = 'ipoib_pkeys[%d]' % index
        if not isinstance(child, dict):
            problems.append('%s must be a dict {pkey, subnets}, got %r' % (variable, child))
            continue
        pkey = _int(child.get('pkey'))
        if pkey is None or not 0x0001 <= (pkey & 0x7fff) <= 0x7ffe:
            problems.append('%s: pkey %r is not a child P_Key (0x0001-0x7ffe; 0x7fff is the parent\'s default)'
                            % (variable, child.get('pkey')))
            continue
        found, child_networks = _subnets_problems(child.get('subnets') or [], variable + '.subnets', len(rails),
                                                  fleet, offset)
        problems.extend(found)
        groups.append((pkey & 0x7fff, child_networks, variable))
    everything = [(variable or 'ipoib_subnets', network) for _pkey, nets, variable in groups for network in nets]
    for position, (variable, network) in enumerate(everything):
        for other_variable, other in everything[:position]:
            if variable != other_variable and network.first <= other.last and other.first <= network.last:
                problems.append('%s %s overlaps %s %s; each interface needs its own subnet'
                                % (variable, network, other_variable, other))
    interfaces = []
    for pkey, nets, variable in groups:
        if pkey not in mtus and variable is not None and settings.get('partitions'):
            problems.append('%s: P_Key 0x%04x is not in opensm_partitions' % (variable, pkey))
        ib_mtu = mtus.get(pkey, PARTITION_DEFAULT_MTU if settings.get('partitions') else None)
        for rail in rails:
            if pkey == DEFAULT_PKEY:
                name, parent, pkey_text = rail['netdev'], None, None
            else:
                name, parent, pkey_text = child_name(rail['netdev'], pkey), rail['netdev'], '0x%04x' % (pkey | FULL_MEMBER)
                if len(name) >= IFNAMSIZ:
                    problems.append('%s: the child of %s would be %s, longer than the kernel\'s 15 characters '
                                    '(IFNAMSIZ); rename the parent interface' % (variable, rail['netdev'], name))
            subnet = nets[rail['rail']] if rail['rail'] < len(nets) else None
            address, problem = _address(name, subnet, settings, rail['rail'])
            if problem:
                problems.append(problem)
            mtu, problem = _wanted_mtu(mode, configured, ib_mtu, name, pkey)
            if problem:
                problems.append(problem)
            interfaces.append({'name': name, 'parent': parent, 'pkey': pkey_text, 'hca': rail['hca'],
                               'rail': rail['rail'], 'address': address, 'mtu': mtu, 'mode': mode})
    return interfaces, problems


def _plan(settings, ib_info):
    settings = settings or {}
    problems = _settings_problems(settings)
    mtus, found = partition_mtus(settings.get('partitions'))
    problems.extend(found)
    if not (ib_info or {}).get('hcas'):
        return {'skip': 'no InfiniBand adapter found (ib_info lists no HCA)', 'interfaces': [], 'problems': problems}
    port = _int(settings.get('port') or 1) or 1
    rails, found = find_rails(ib_info, settings.get('rails') or None, port)
    problems.extend(found)
    if not rails and not found and not settings.get('rails'):
        return {'skip': ETHERNET_SKIP, 'interfaces': [], 'problems': problems}
    if not settings.get('subnets') and not settings.get('addresses') and not settings.get('pkeys') \
            and not settings.get('rails'):
        return {'skip': UNSET_SKIP, 'interfaces': [], 'problems': problems}
    for rail in rails:
        if rail['link_layer'] != 'InfiniBand':
            problems.append('ipoib_rails: %s (%s) is %s; IPoIB needs an InfiniBand port'
                            % (rail['netdev'], rail['hca'], rail['link_layer']))
    interfaces, found = _interfaces(settings, rails, mtus)
    problems.extend(found)
    return {'skip': None, 'interfaces': interfaces, 'problems': problems}


def ipoib_problems(settings, ib_info):
    """One line per bad variable of one host, before anything changes; empty when the plan can be applied."""
    return _plan(settings, ib_info)['problems']


def ipoib_plan(settings, ib_info):
    """One host's IPoIB plan: ``{'skip': reason or None, 'interfaces': [...]}``; ValueError listing the problems.

    ``settings`` are the role's variables without the ``ipoib_`` prefix: ``rails``, ``port``, ``subnets`` (one per
    rail), ``offset``, ``node_index``, ``fleet_size``, ``addresses``, ``mode``, ``mtu`` (0: from the partition),
    ``partitions`` (opensm_partitions), ``pkeys`` (child interfaces, ``{pkey, subnets}``). Each interface: ``name``,
    ``parent`` and ``pkey`` (children only), ``hca``, ``rail``, ``address`` (a.b.c.d/prefix), ``mtu``, ``mode``.
    """
    plan = _plan(settings, ib_info)
    if plan['problems']:
        raise ValueError('. '.join(plan['problems']))
    return {'skip': plan['skip'], 'interfaces': plan['interfaces']}


def fleet_problems(plans):
    """host -> plan (or the problems-and-plan dict) -> one line per address held by more than one interface."""
    return netconf.fleet_problems(plans, 'ipoib')


def ipoib_renderer(facts, requested='auto', interfaces=None):
    """The network configuration that persists the plan on this host (docs/ipoib.md "Which renderer").

    ``facts``: ``distribution``, ``os_family``, ``networkd_active``, ``networkmanager_active``, ``netplan`` (the
    netplan command is installed), ``ifupdown`` (``ifup`` is installed). Ubuntu: netplan; Red Hat family:
    NetworkManager keyfiles; Debian: systemd-networkd when it is running, else ifupdown when installed, else netplan
    when installed. ``requested`` other than ``auto`` wins. ValueError when nothing fits, or when the plan has P_Key
    child interfaces and the renderer is netplan (netplan has no IPoIB child type).
    """
    renderer = _renderer(facts, requested)
    children = [item['name'] for item in interfaces or [] if item.get('parent')]
    if renderer == 'netplan' and children:
        raise ValueError('netplan cannot create IPoIB child interfaces (%s); set ipoib_renderer: networkd (netplan\'s '
                         'own backend on Ubuntu) or drop ipoib_pkeys' % ', '.join(children))
    return renderer


def _renderer(facts, requested):
    return netconf.renderer(facts, requested, 'ipoib', 'IPoIB')


def _power_of_two(number):
    return 1 << max(0, int(number) - 1).bit_length()


def neigh_gc_thresh(nodes_per_subnet, subnets=1):
    """net.ipv4.neigh.default.gc_thresh1/2/3 for a fleet of ``nodes_per_subnet`` on ``subnets`` IPoIB subnets.

    Empty (keep the kernel's 128/512/1024) up to 1,000 nodes per subnet. Above: the neighbour table is one table for
    every interface, so it must hold nodes x subnets entries without garbage collection (gc_thresh1 = that, rounded
    up to a power of two), with gc_thresh2 and gc_thresh3 two and four times it (the kernel defaults' ratio above
    gc_thresh1, and "3 or 4 times the number of IPoIB interfaces" of NVIDIA's large-cluster note); never below the
    kernel's defaults.
    """
    nodes, count = _int(nodes_per_subnet), _int(subnets)
    if nodes is None or nodes < 0 or count is None or count < 1:
        raise ValueError('nodes_per_subnet must be a non-negative integer and subnets a positive one, got %r and %r'
                         % (nodes_per_subnet, subnets))
    if nodes <= GC_NODES_LIMIT:
        return {}
    first = _power_of_two(nodes * count)
    values = (max(first, KERNEL_GC_THRESH[0]), max(2 * first, KERNEL_GC_THRESH[1]), max(4 * first, KERNEL_GC_THRESH[2]))
    return dict(('net.ipv4.neigh.default.gc_thresh%d' % (index + 1), value) for index, value in enumerate(values))


def sysfs_observed(contents):
    """``<sysfs root>/class/net/<if>/mode`` and ``/sys/class/net/<if>/mtu`` path -> text (host_state_info
    ``contents``) -> name -> {mode, mtu}. The mode's root is ``ipoib_sysfs_root`` (hwsim's tree in the lab, where a
    rail is a veth without a mode file); the MTU is always the kernel's."""
    observed = {}
    for path, text in (contents or {}).items():
        match = re.match(r'^(?:/.*)?/class/net/([^/]+)/(mode|mtu)$', str(path))
        if match:
            observed.setdefault(match.group(1), {})[match.group(2)] = text
    return observed


def mode_problems(interfaces, observed):
    """The plan against what the kernel shows after the change: one line per interface whose mode or MTU differs.

    ``observed``: interface name -> {'mode': the text of /sys/class/net/<if>/mode, 'mtu': that of .../mtu}, or the
    paths -> texts themselves; None for a file that could not be read. Connected mode asked and datagram read is
    enhanced IPoIB (ConnectX-4 and later), which refuses the write.
    """
    if any(str(key).startswith('/') for key in (observed or {})):
        observed = sysfs_observed(observed)
    problems = []
    for item in interfaces or []:
        seen = (observed or {}).get(item['name']) or {}
        mode = (seen.get('mode') or '').strip() or None
        mtu = _int((seen.get('mtu') or '').strip()) if seen.get('mtu') is not None else None
        if mode is None:
            problems.append('%s: /sys/class/net/%s/mode could not be read; the interface does not exist'
                            % (item['name'], item['name']))
            continue
        if mode != item['mode']:
            hint = (' ConnectX-4 and later run enhanced IPoIB, which supports datagram mode only: set ipoib_mode: '
                    'datagram, or load ib_ipoib with ipoib_enhanced=0 (NVIDIA MLNX_OFED/DOCA only)'
                    if item['mode'] == 'connected' else '')
            problems.append('%s is in %s mode, ipoib_mode asks for %s.%s' % (item['name'], mode, item['mode'], hint))
        if mtu is not None and mtu != item['mtu']:
            problems.append('%s has MTU %d, the plan %d' % (item['name'], mtu, item['mtu']))
    return problems


def live_problems(interfaces, links):
    """The plan against the live interfaces (``ip -j -d addr show``): one line per interface that is missing, lacks
    its address, or runs another MTU or mode (module_utils/netconf.py, shared with role roce)."""
    return netconf.live_problems(interfaces, links)
