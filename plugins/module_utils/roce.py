# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The roce role's decisions: one host's RoCE GPU-fabric ports, what is wrong with its variables, the QoS settings
module rdma_qos applies to each port, the settings file and the unit ordering that re-apply them at every boot and
driver start, and the interfaces (MTU, addresses) the OS's network configuration keeps (role fabric_netconf).

Sources (docs/fabric.md "RoCE" cites them in full):
- mlx5 starts every port at its defaults (trust pcp, PFC off, no DSCP entry; the ECN files and RDMA-CM's ToS at the
  driver's and firmware's values): what mlnx_qos, dcb, sysfs or configfs set is the driver's state, gone with a driver
  restart or a boot, so the settings are applied again then (lab/hwsim/README.md "RoCE QoS" has the defaults).
- DOCA-OFED and MLNX_OFED load the driver in ``openibd.service``; the inbox stack through udev, with rdma-core's
  ``rdma-load-modules@rdma.service`` loading rdma_cm (which makes RDMA-CM's configfs tree).
- The largest MTU of mlx5 Ethernet ports is 9978 (ConnectX-4 and later, ``ip -d link`` maxmtu); the IPv6 minimum is
  1280.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import posixpath
import re

from ansible_collections.aicluster.infra.plugins.module_utils import netconf, rdma_qos
from ansible_collections.aicluster.infra.plugins.module_utils.rdma_qos_host import SETTINGS_VERSION
from ansible_collections.aicluster.infra.plugins.module_utils.verify.ib import checked_hcas

STACKS = ('doca', 'mlnx_ofed', 'inbox')
TOOLS = ('auto', 'mlnx_qos', 'dcb')
MTU_RANGE = (1280, 9978)
# the module's parameter -> the role's variable, for the module's own checks (rdma_qos.wanted_settings)
VARIABLES = {'pfc_priorities': 'roce_pfc_priorities', 'ecn_priorities': 'roce_ecn_priorities',
             'dscp_map': 'roce_dscp_map', 'cnp_dscp': 'roce_cnp_dscp', 'cnp_prio': 'roce_cnp_prio',
             'roce_tos': 'roce_tos', 'traffic_class': 'roce_traffic_class', 'port': 'roce_port'}
INFINIBAND_SKIP = ('GPU-fabric ports are InfiniBand: lossless RoCE does not apply to them (the ipoib role and the '
                   'subnet manager serve them)')
NO_HCA_SKIP = 'no RDMA adapter found (ib_info lists no HCA)'
NO_PORT_SKIP = 'no Ethernet RDMA port with a netdev (ib_info): nothing to make lossless'
# The driver's unit on the NVIDIA stacks: its restart re-creates every netdev at mlx5's defaults (PartOf= restarts
# our unit after it). The inbox stack loads mlx5 through udev, and rdma_cm (RDMA-CM's configfs) in rdma-core's unit.
DRIVER_UNITS = {'doca': ['openibd.service'], 'mlnx_ofed': ['openibd.service'],
                'inbox': ['rdma-load-modules@rdma.service']}
_NETDEV = re.compile(r'^[A-Za-z0-9_.:-]{1,15}$')


def _is_list(value):
    return isinstance(value, (list, tuple))


def qos_tool(requested, stack):
    """``roce_qos_tool`` resolved: mlnx_qos (mlnx-tools) with DOCA-OFED or MLNX_OFED, iproute2's dcb on the inbox
    stack; an explicit choice wins."""
    if requested in ('mlnx_qos', 'dcb'):
        return requested
    return 'dcb' if stack == 'inbox' else 'mlnx_qos'


def _hcas(ib_info):
    """The host's HCAs (dicts), NVSwitch bridge functions left out."""
    bridges = set((ib_info or {}).get('nvswitch_bridges') or [])
    return [ca for ca in (ib_info or {}).get('hcas') or []
            if isinstance(ca, dict) and not ca.get('nvswitch_bridge') and ca.get('name') not in bridges]


def _port(ca, number):
    return next((item for item in ca.get('ports') or [] if isinstance(item, dict) and item.get('port') == number), None)


def _link_layer(ca, item):
    return (item or {}).get('link_layer') or ca.get('link_layer')


def _model(ca):
    return '%s %s' % (ca.get('ca_type') or 'unknown type', ca.get('board_id') or 'unknown PSID')


def find_ports(ib_info, names=None, port=1):
    """One host's RoCE GPU-fabric ports in rail order -> (ports, problems, skip).

    ``names`` (``roce_rails``): HCAs (``mlx5_0``) or their netdevs, in rail order; all of them InfiniBand means the
    GPU fabric is InfiniBand (a site's ``verify_ib_hcas`` on an InfiniBand fleet), and the host is skipped. Without
    names: a host with an InfiniBand port is skipped (its GPU fabric is InfiniBand; its Ethernet RDMA ports are
    storage or management); otherwise every Ethernet RDMA port with a netdev, by device number, when they are all of
    one adapter model (ibstat's CA type and the PSID); several models are refused: which of them is the GPU fabric
    and which the storage or management NIC is the site's to say, never guessed. Each port: ``rail``, ``hca``,
    ``port``, ``netdev``.
    """
    hcas = _hcas(ib_info)
    if not hcas:
        return [], [], NO_HCA_SKIP
    problems = []
    if names:
        lookup = netconf.rail_lookup(hcas, 'roce_rails')
        chosen, infiniband = [], []
        for name in names:
            ca, problem = lookup(name)
            if ca is None:
                problems.append(problem)
                continue
            item = _port(ca, port)
            if item is None:
                problems.append('roce_port: %s has no port %d' % (ca.get('name'), port))
                continue
            if _link_layer(ca, item) == 'InfiniBand':
                infiniband.append(ca.get('name'))
                continue
            if not item.get('netdev'):
                problems.append('roce_rails: %s port %d has no netdev (is mlx5_core loaded?)' % (ca.get('name'), port))
                continue
            chosen.append((ca, item))
        if infiniband and not chosen and not problems:
            return [], [], INFINIBAND_SKIP
        problems.extend('roce_rails: %s port %d is InfiniBand; RoCE needs an Ethernet port' % (name, port)
                        for name in infiniband)
    else:
        if any(_link_layer(ca, item) == 'InfiniBand' for ca in hcas for item in ca.get('ports') or []
               if isinstance(item, dict)):
            return [], [], INFINIBAND_SKIP
        order = dict((name, index) for index, name in enumerate(checked_hcas({'hcas': hcas}, None, 'Ethernet')))
        chosen = sorted(((ca, _port(ca, port)) for ca in hcas if ca.get('name') in order),
                        key=lambda pair: order[pair[0].get('name')])
        chosen = [(ca, item) for ca, item in chosen if item and item.get('netdev') and _link_layer(ca, item) == 'Ethernet']
        if not chosen:
            return [], [], NO_PORT_SKIP
        models = {}
        for ca, item in chosen:
            models.setdefault(_model(ca), []).append(ca.get('name'))
        if len(models) > 1:
            problems.append('roce_rails: this host\'s Ethernet RDMA ports are of %d adapter models (%s); list the '
                            'GPU-fabric ones in roce_rails (or verify_ib_hcas), so that no storage or management '
                            'port is taken for the GPU fabric'
                            % (len(models), '; '.join('%s: %s' % (model, ', '.join(members))
                                                      for model, members in sorted(models.items()))))
            chosen = []
    ports = [{'rail': index, 'hca': ca.get('name'), 'port': port, 'netdev': item['netdev']}
             for index, (ca, item) in enumerate(chosen)]
    return ports, problems, None


def _choice(settings, key, variable, allowed, default=None):
    value = settings.get(key, default)
    if value not in allowed:
        return ['%s must be one of %s, got %r' % (variable, ', '.join(str(a) for a in allowed), value)]
    return []


def _settings_problems(settings):
    problems = []
    problems += _choice(settings, 'trust', 'roce_trust', rdma_qos.TRUSTS, 'dscp')
    problems += _choice(settings, 'qos_tool', 'roce_qos_tool', TOOLS, 'auto')
    problems += _choice(settings, 'stack', 'roce_stack', STACKS, 'doca')
    mtu = netconf.as_int(settings.get('mtu', 9000))
    if mtu is None or not MTU_RANGE[0] <= mtu <= MTU_RANGE[1]:
        problems.append('roce_mtu must be an MTU in bytes (allowed: %d-%d; 9000 for RoCE, the switch ports at 9216 '
                        'or more), got %r' % (MTU_RANGE[0], MTU_RANGE[1], settings.get('mtu')))
    offset = settings.get('offset', 0)
    if netconf.as_int(offset) is None or netconf.as_int(offset) < 0:
        problems.append('roce_address_offset must be a non-negative integer, got %r' % (offset,))
    for key in ('pfc_priorities', 'ecn_priorities'):
        if not _is_list(settings.get(key, [])):
            problems.append('roce_%s must be a list of priorities (allowed: 0-7), got %r' % (key, settings.get(key)))
    if not isinstance(settings.get('dscp_map', {}), dict):
        problems.append('roce_dscp_map must be a dict of DSCP (0-63) -> priority (0-7), got %r'
                        % (settings.get('dscp_map'),))
    if not isinstance(settings.get('addresses') or {}, dict):
        problems.append('roce_addresses must be a dict of netdev -> address/prefix, got %r' % (settings.get('addresses'),))
    if not _is_list(settings.get('rails') or []):
        problems.append('roce_rails must be a list of HCA names or netdevs, got %r' % (settings.get('rails'),))
    for key in ('sysfs_root', 'configfs_root'):
        value = settings.get(key) or '/'
        if not isinstance(value, str) or not posixpath.isabs(value):
            problems.append('roce_%s must be an absolute path, got %r' % (key, settings.get(key)))
    for key in ('mlnx_qos_path', 'dcb_path'):
        value = settings.get(key)
        if value and (not isinstance(value, str) or not posixpath.isabs(value)):
            problems.append('roce_%s must be an absolute path or empty (found on the PATH), got %r' % (key, value))
    return problems


def _qos(settings, tool):
    """(module rdma_qos's parameters but netdev and port, problems naming the role's variables)."""
    params = {
        'trust': settings.get('trust', 'dscp'),
        'pfc_priorities': list(settings.get('pfc_priorities', [3]) or []),
        'dscp_map': dict(settings.get('dscp_map', {'26': 3, '48': 6}) or {}),
        'ecn_priorities': list(settings.get('ecn_priorities', [3]) or []),
        'cnp_dscp': settings.get('cnp_dscp', 48),
        'cnp_prio': settings.get('cnp_prio', 6),
        'roce_tos': settings.get('tos', 106),
        'roce_mode': settings.get('mode', 'RoCE v2'),
        'traffic_class': settings.get('traffic_class', 106),
        'port': settings.get('port', 1),
    }
    wanted, problems, _warnings = rdma_qos.wanted_settings(params, tool)
    renamed = []
    for line in problems:
        name, sep, rest = line.partition(':')
        renamed.append('%s:%s' % (VARIABLES.get(name, name), rest) if sep else line)
    if renamed:
        return None, renamed
    qos = {
        'trust': wanted['trust'],
        'pfc_priorities': wanted['pfc'],
        'dscp_map': dict((str(dscp), prio) for dscp, prio in sorted(
            (rdma_qos._integer(key), rdma_qos._integer(value)) for key, value in params['dscp_map'].items())),
        'ecn_priorities': wanted['ecn_np'],
        'cnp_dscp': wanted['cnp_dscp'], 'cnp_prio': wanted['cnp_prio'], 'roce_tos': wanted['roce_tos'],
        'roce_mode': wanted['roce_mode'], 'traffic_class': wanted['traffic_class'],
        'tool': tool,
        'mlnx_qos_path': settings.get('mlnx_qos_path') or None,
        'dcb_path': settings.get('dcb_path') or None,
        'sysfs_root': settings.get('sysfs_root') or '/sys',
        'configfs_root': settings.get('configfs_root') or '/sys/kernel/config',
    }
    return qos, []


def _interfaces(settings, ports):
    """The netdevs' network configuration: MTU, and an address where roce_subnets or roce_addresses gives one."""
    problems = []
    fleet = netconf.as_int(settings.get('fleet_size') or 0) or 0
    offset = netconf.as_int(settings.get('offset') or 0) or 0
    networks = []
    if settings.get('subnets'):
        found, networks = netconf.subnets_problems(settings['subnets'], 'roce_subnets', len(ports), fleet, offset)
        problems.extend(found)
    addresses = settings.get('addresses') if isinstance(settings.get('addresses'), dict) else {}
    unknown = sorted(set(addresses) - set(item['netdev'] for item in ports))
    if unknown and ports:
        problems.append('roce_addresses: %s %s not among this host\'s RoCE GPU-fabric netdevs (%s)'
                        % (', '.join(unknown), 'is' if len(unknown) == 1 else 'are',
                           ', '.join(item['netdev'] for item in ports)))
    interfaces = []
    for item in ports:
        network = networks[item['rail']] if item['rail'] < len(networks) else None
        address, problem = netconf.address(item['netdev'], network, settings, item['rail'], 'roce')
        if problem:
            problems.append(problem)
        interfaces.append({'name': item['netdev'], 'parent': None, 'pkey': None, 'hca': item['hca'],
                           'rail': item['rail'], 'address': address, 'mtu': netconf.as_int(settings.get('mtu', 9000))})
    return interfaces, problems


def unit_order(stack):
    """The persistence unit's ordering: ``after`` (the driver's unit, configfs, the network) and ``part_of`` (the
    driver's unit on the NVIDIA stacks: its restart restarts ours after it)."""
    after = list(DRIVER_UNITS.get(stack, [])) + ['sys-kernel-config.mount', 'network.target']
    return {'after': after, 'part_of': ['openibd.service'] if stack in ('doca', 'mlnx_ofed') else []}


def _plan(settings, ib_info):
    settings = settings or {}
    problems = _settings_problems(settings)
    port = netconf.as_int(settings.get('port', 1))
    if port is None or port < 1:
        problems.append('roce_port must be a positive integer (the RDMA port of the netdev, 1 for a single-port '
                        'function), got %r' % (settings.get('port'),))
        port = 1
    stack = settings.get('stack', 'doca')
    tool = qos_tool(settings.get('qos_tool', 'auto'), stack)
    qos = None
    shaped = _is_list(settings.get('pfc_priorities', [])) and _is_list(settings.get('ecn_priorities', [])) \
        and isinstance(settings.get('dscp_map', {}), dict)
    if shaped:  # the module's own range checks, naming the role's variables, whatever else is wrong
        qos, found = _qos(dict(settings, trust=settings.get('trust') if settings.get('trust') in rdma_qos.TRUSTS
                               else 'dscp', port=port), tool)
        problems.extend(found)
    if problems:
        qos = None
    rails = settings.get('rails') if _is_list(settings.get('rails')) else []
    ports, found, skip = find_ports(ib_info, list(rails or []), port)
    problems.extend(found)
    plan = {'problems': problems, 'skip': skip, 'ports': [], 'qos_ports': [], 'interfaces': [], 'qos': qos, 'tool': tool,
            'unit': unit_order(stack), 'settings_file': None}
    if skip:
        return plan
    for item in ports:
        if not _NETDEV.match(item['netdev']):
            problems.append('roce_rails: netdev %r is not an interface name' % item['netdev'])
    interfaces, found = _interfaces(settings, ports)
    problems.extend(found)
    # module rdma_qos's `ports` (one run for every port), and the boot script's
    qos_ports = [{'netdev': item['netdev'], 'port': item['port']} for item in ports]
    plan.update(ports=ports, interfaces=interfaces, qos_ports=qos_ports)
    if qos is not None:
        plan['settings_file'] = {'version': SETTINGS_VERSION, 'ports': qos_ports, 'qos': qos}
    return plan


def roce_problems(settings, ib_info):
    """One line per bad variable of one host, before anything changes; empty when the plan can be applied."""
    return _plan(settings, ib_info)['problems']


def roce_plan(settings, ib_info):
    """One host's RoCE plan; ValueError listing the problems.

    ``settings`` are the role's variables without the ``roce_`` prefix (roles/roce/vars/main.yml ``__roce_settings``):
    ``rails``, ``port``, ``trust``, ``pfc_priorities``, ``dscp_map``, ``ecn_priorities``, ``cnp_dscp``,
    ``cnp_prio``, ``tos``, ``mode``, ``traffic_class``, ``qos_tool``, ``stack``, ``mtu``, ``subnets``,
    ``addresses``, ``offset``, ``node_index``, ``fleet_size``, ``sysfs_root``, ``configfs_root``,
    ``mlnx_qos_path``, ``dcb_path``. The plan: ``skip`` (why nothing is done, or None), ``ports`` (``rail``,
    ``hca``, ``port``, ``netdev``), ``qos_ports`` (module rdma_qos's ``ports``: ``netdev``, ``port``),
    ``interfaces`` (fabric_netconf's: ``name``, ``address`` or None, ``mtu``, ...), ``qos`` (module rdma_qos's
    parameters but netdev and port), ``tool``, ``unit`` (``after``, ``part_of``) and ``settings_file``
    (what the boot-time script reads).
    """
    plan = _plan(settings, ib_info)
    if plan['problems']:
        raise ValueError('. '.join(plan['problems']))
    return dict((key, value) for key, value in plan.items() if key != 'problems')


def fleet_problems(plans):
    """host -> plan -> one line per address held by more than one RoCE netdev."""
    return netconf.fleet_problems(plans, 'roce')


def roce_renderer(facts, requested='auto'):
    """The network configuration that keeps the netdevs' MTU and addresses (module_utils/netconf.py ``renderer``)."""
    return netconf.renderer(facts, requested, 'roce', 'RoCE')
