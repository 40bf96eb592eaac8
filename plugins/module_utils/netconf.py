# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the fabric stage's IPoIB and RoCE interfaces share in the OS's network configuration (role fabric_netconf,
called by roles ipoib and roce): the rails' subnets and addresses, the fleet's duplicate addresses, the renderer a
host uses, and the live interfaces against the plan.

``prefix`` is the calling role's variable prefix (``ipoib``, ``roce``): every message names the role's own variable.
An interface of a plan: ``name``, ``address`` (``a.b.c.d/prefix`` or None: no address managed), ``mtu``, and for
IPoIB ``mode``, ``parent`` and ``pkey``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils.cluster_math import AddressError, _netaddr, ipoib_address
from ansible_collections.aicluster.infra.plugins.module_utils.verify.net import interfaces as ip_interfaces

RENDERERS = ('netplan', 'networkd', 'ifupdown', 'networkmanager')


def as_int(value):
    """An int from an int or a decimal/hex string; None for anything else (booleans included)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    text = str(value).strip().lower() if value is not None else ''
    try:
        return int(text, 16) if text.startswith('0x') else int(text)
    except ValueError:
        return None


def subnet(value, name):
    """(netaddr network, None) or (None, a line naming ``name``)."""
    netaddr = _netaddr()
    try:
        return netaddr.IPNetwork(str(value)).cidr, None
    except (netaddr.AddrFormatError, ValueError, TypeError) as exc:
        return None, '%s: %r is not a subnet in CIDR form such as 10.10.0.0/16 (%s)' % (name, value, exc)


def usable(network):
    return max(0, network.size - 2) if network.version == 4 else network.size - 1


def subnets_problems(subnets, variable, rails, fleet_size, offset):
    """Subnets one per rail: valid, distinct, not overlapping, large enough for fleet_size + offset.
    -> (problems, networks)."""
    problems, networks = [], []
    if not isinstance(subnets, list):
        return ['%s must be a list of subnets, one per rail, got %r' % (variable, subnets)], []
    if len(subnets) < rails:
        problems.append('%s has %d subnet(s) for %d rail(s); give one subnet per rail'
                        % (variable, len(subnets), rails))
    for index, value in enumerate(subnets):
        network, problem = subnet(value, '%s[%d]' % (variable, index))
        if problem:
            problems.append(problem)
            continue
        if usable(network) < fleet_size + offset:
            problems.append('%s[%d]: %s has %d usable addresses, too few for %d nodes + offset %d; use a larger subnet'
                            % (variable, index, network, usable(network), fleet_size, offset))
        for other_index, other in networks:
            if network.first <= other.last and other.first <= network.last:
                problems.append('%s[%d] %s overlaps %s[%d] %s; each rail needs its own subnet'
                                % (variable, index, network, variable, other_index, other))
        networks.append((index, network))
    return problems, [network for _index, network in networks]


def address(name, network, settings, rail, prefix):
    """(address/prefix, problem) of one interface: ``<prefix>_addresses[name]``, else the node index's address in
    ``network`` (the ipoib_address filter's rule); (None, None) where neither is set."""
    given = (settings.get('addresses') or {}).get(name) if isinstance(settings.get('addresses'), dict) else None
    if given:
        netaddr = _netaddr()
        try:
            interface = netaddr.IPNetwork(str(given))
        except (netaddr.AddrFormatError, ValueError, TypeError) as exc:
            return None, '%s_addresses[%s]: %r is not an address/prefix (%s)' % (prefix, name, given, exc)
        if network is not None and (interface.ip not in network or interface.prefixlen != network.prefixlen):
            return None, ('%s_addresses[%s]: %s is outside rail %d\'s subnet %s (or has another prefix length)'
                          % (prefix, name, given, rail, network))
        if interface.ip in (interface.network, interface.broadcast) and interface.version == 4 \
                and interface.prefixlen < 31:
            return None, '%s_addresses[%s]: %s is its subnet\'s network or broadcast address' % (prefix, name, given)
        return '%s/%d' % (interface.ip, interface.prefixlen), None
    if network is None:
        return None, None  # no subnet for this rail (or the subnet's own problem names it)
    index = settings.get('node_index')
    if as_int(index) is None or as_int(index) < 0:
        return None, ('%s_node_index: this host has no index (not in %s_fleet) and %s_addresses has no '
                      'address for %s; set one of them' % (prefix, prefix, prefix, name))
    try:
        return ipoib_address(as_int(index), str(network), as_int(settings.get('offset') or 0)), None
    except AddressError as exc:
        return None, str(exc)


def rail_lookup(hcas, variable):
    """A function: a listed rail (an HCA such as ``mlx5_0``, or its port's netdev) -> (the ib_info HCA, None), or
    (None, the line naming ``variable`` and the HCAs the host has). Roles ipoib and roce list their rails this way."""
    by_name = dict((ca.get('name'), ca) for ca in hcas)
    by_netdev = dict((item['netdev'], ca) for ca in hcas for item in ca.get('ports') or []
                     if isinstance(item, dict) and item.get('netdev'))

    def lookup(name):
        ca = by_name.get(name) or by_netdev.get(name)
        if ca is not None:
            return ca, None
        return None, ('%s: %s is neither an HCA nor an HCA netdev on this host (ib_info has %s)'
                      % (variable, name, ', '.join(sorted(n for n in by_name if n)) or 'no HCA'))
    return lookup


def fleet_problems(plans, prefix):
    """host -> plan (a dict with ``interfaces``) -> one line per address held by more than one interface."""
    owners = {}
    for host, plan in sorted((plans or {}).items()):
        for item in (plan or {}).get('interfaces') or []:
            if item.get('address'):
                owners.setdefault(item['address'].split('/')[0], []).append('%s %s' % (host, item['name']))
    return ['%s_addresses/%s_node_index: %s is given to %s; every interface needs its own address'
            % (prefix, prefix, address_, ', '.join(holders)) for address_, holders in sorted(owners.items())
            if len(holders) > 1]


def renderer(facts, requested, prefix, what):
    """The network configuration that persists a plan on this host (docs/ipoib.md "Which renderer").

    ``facts``: ``distribution``, ``os_family``, ``networkd_active``, ``networkmanager_active``, ``netplan`` (the
    netplan command is installed), ``ifupdown`` (``ifup`` is installed). Ubuntu: netplan; Red Hat family:
    NetworkManager keyfiles; Debian: systemd-networkd when it is running, else ifupdown when installed, else netplan
    when installed. ``requested`` other than ``auto`` wins. ValueError naming ``<prefix>_renderer`` when nothing
    fits; ``what`` (IPoIB, RoCE) names the interfaces.
    """
    variable = '%s_renderer' % prefix
    if requested not in ('auto',) + RENDERERS:
        raise ValueError('%s must be auto or one of %s, got %r' % (variable, ', '.join(RENDERERS), requested))
    if requested != 'auto':
        return requested
    facts = facts or {}
    distribution, family = facts.get('distribution'), facts.get('os_family')
    if distribution == 'Ubuntu':
        if not facts.get('netplan'):
            raise ValueError('Ubuntu without netplan: install netplan.io or set %s' % variable)
        return 'netplan'
    if family == 'RedHat':
        if not facts.get('networkmanager_active'):
            raise ValueError('%s without a running NetworkManager: start it or set %s' % (distribution, variable))
        return 'networkmanager'
    if family == 'Debian':
        if facts.get('networkd_active'):
            return 'networkd'
        if facts.get('ifupdown'):
            return 'ifupdown'
        if facts.get('netplan'):
            return 'netplan'
        raise ValueError('Debian with neither systemd-networkd running nor ifupdown or netplan installed; '
                         'set %s' % variable)
    raise ValueError('no %s renderer for %s (%s); set %s to one of %s'
                     % (what, distribution, family, variable, ', '.join(RENDERERS)))


def live_problems(interfaces, links):
    """The plan against the live interfaces (``ip -j -d addr show``, read by ``verify.net.interfaces``): one line per
    interface that is missing, lacks its address, or runs another MTU or (IPoIB) mode; empty when the host is as
    planned. An interface without ``address`` in the plan is not judged on its address.

    A drift run (``--check``) reports these as changes, and a plain run applies the configuration again.
    """
    table = ip_interfaces(links)
    if table is None:
        return ['the interfaces could not be read (ip -j -d addr show)']
    problems = []
    for item in interfaces or []:
        live = table.get(item['name'])
        if live is None:
            problems.append('%s does not exist' % item['name'])
            continue
        wanted = (item.get('address') or '').split('/')[0]
        if wanted and live['ipv4'] != wanted:
            problems.append('%s has %s, the plan %s' % (item['name'], live['ipv4'] or 'no IPv4 address', wanted))
        if live['mtu'] is not None and live['mtu'] != item['mtu']:
            problems.append('%s has MTU %d, the plan %d' % (item['name'], live['mtu'], item['mtu']))
        if item.get('mode') and live['mode'] and live['mode'] != item['mode']:
            problems.append('%s is in %s mode, the plan %s' % (item['name'], live['mode'], item['mode']))
    return problems
