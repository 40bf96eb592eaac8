# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Area net: the MTU of each GPU-fabric rail, and the RDMA path MTU of each port.

A rail is the netdev of one GPU-fabric HCA port: the RoCE netdev on Ethernet
ports, the IPoIB interface on InfiniBand ports. ``net.mtu`` judges its
configured MTU (``ip -j -d addr show``) against the MTU expected for its link
layer, then a don't-fragment ping of that size from the rail's interface to
the same rail of the next node in the ring (``ping -M do -s MTU-28 -I NETDEV``).
On InfiniBand it also judges the rail's IPoIB mode (``<sysfs root>/class/net/<if>/mode``,
read with ``grep -s -H``) against the expected one (``ipoib_mode``; empty: not judged).
The management address is never pinged: a 1500-byte management network is the
norm, jumbo frames live on the RDMA interfaces. ``net.rdma_mtu`` judges each
port's ``active_mtu`` (ibv_devinfo through ib_info).

``plan`` runs before the pings (which rails ping which address), ``decide_net``
after them; both read the same observations, so the plan is computed the same
way twice and never crosses into Jinja as anything but a loop.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.aicluster.infra.plugins.module_utils.verify._common import int_or_none, ran
from ansible_collections.aicluster.infra.plugins.module_utils.verify.ib import checked_hcas
from ansible_collections.aicluster.infra.plugins.module_utils.verify.results import new_result

_PING_MTU_RE = re.compile(r'(?:mtu\s*=\s*|mtu\s+)(?P<mtu>\d+)', re.IGNORECASE)
# 20-byte IPv4 header + 8-byte ICMP header (ping(8) -s is the ICMP payload)
IP_ICMP_HEADERS = 28
KINDS = {'Ethernet': 'RoCE', 'InfiniBand': 'IPoIB'}
# ``grep -s -H . ROOT/class/net/*/mode``: "<root>/class/net/<if>/mode:<value>"; a netdev name holds no '/', ':' or
# blank (the kernel's dev_valid_name), so the first ':' after /mode ends the path
_MODE_LINE_RE = re.compile(r'^(?P<root>.*)/class/net/(?P<name>[^/:\s]+)/mode:(?P<mode>.*)$')


def interfaces(links):
    """``ip -j -d addr show`` (a registered command, its stdout, or the parsed list) -> name -> interface.

    Each interface: ``mtu``, ``ipv4`` (the first IPv4 address, without its
    prefix length; None without one), ``operstate``, ``kind`` (``ipoib``,
    ...; None for a plain device) and ``mode`` (IPoIB ``datagram`` or
    ``connected``). None when the command did not run or printed no JSON.
    """
    if isinstance(links, dict):
        if not ran(links) or links.get('rc') not in (0, None):
            return None
        links = links.get('stdout')
    if isinstance(links, str):
        try:
            links = json.loads(links) if links.strip() else None
        except ValueError:
            return None
    if not isinstance(links, list):
        return None
    out = {}
    for link in links:
        if not isinstance(link, dict) or not link.get('ifname'):
            continue
        inet = [a for a in link.get('addr_info') or [] if isinstance(a, dict) and a.get('family') == 'inet' and a.get('local')]
        info = link.get('linkinfo') or {}
        data = info.get('info_data') or {}
        out[link['ifname']] = {'mtu': int_or_none(link.get('mtu')), 'ipv4': inet[0]['local'] if inet else None,
                               'operstate': link.get('operstate'), 'kind': info.get('info_kind'),
                               'mode': data.get('mode') if isinstance(data, dict) else None}
    return out


def ipoib_modes(grep):
    """``grep -s -H . ROOT/class/net/*/mode`` (a registered command, or its stdout) -> interface name -> mode text.

    Each line is ``<root>/class/net/<if>/mode:<value>`` (``datagram`` or
    ``connected``; any other text is kept as read); other lines are skipped.
    grep exits 1 or 2 where a file is empty or missing (no IPoIB interface at
    all: the pattern matches nothing), so the text is read whatever that exit
    status. None when the command did not run, or could not (sh or grep
    missing: 126, 127).
    """
    if isinstance(grep, dict):
        if not ran(grep) or grep.get('stdout') is None or grep.get('rc') not in (0, 1, 2, None):
            return None
        grep = grep.get('stdout')
    if not isinstance(grep, str):
        return None
    out = {}
    for line in grep.splitlines():
        match = _MODE_LINE_RE.match(line.strip())
        if match and match.group('mode').strip():
            out.setdefault(match.group('name'), match.group('mode').strip())
    return out


def with_ipoib_modes(table, modes, ipoib_netdevs=(), sysfs_root='/sys'):
    """The interfaces (``interfaces``) with each IPoIB interface's mode file (``ipoib_modes``) joined in.

    Only IPoIB interfaces take a mode: those ``ip -d`` shows as ``ipoib``
    (info_kind), and the netdevs ib_info names for InfiniBand ports
    (``ipoib_netdevs``: in the lab a veth stands in for each, and hwsim's tree
    under ``sysfs_root`` holds its mode file). The file's text wins over ip's
    info_data; an IPoIB interface with neither gets ``mode_unread``, the
    reason. A new table; None when the interfaces could not be read.
    """
    if table is None:
        return None
    root = str(sysfs_root or '/sys').rstrip('/')
    out = {}
    for name, iface in table.items():
        iface = dict(iface, mode_unread=None)
        if iface.get('kind') == 'ipoib' or name in (ipoib_netdevs or ()):
            if modes and name in modes:
                iface['mode'] = modes[name]
            elif not iface.get('mode'):
                iface['mode'] = None
                iface['mode_unread'] = ('the IPoIB modes were not read (grep %s/class/net/*/mode)' % root if modes is None
                                        else 'no %s/class/net/%s/mode' % (root, name))
        out[name] = iface
    return out


def _ipoib_netdevs(ib_info):
    return [port.get('netdev') for ca in ib_info.get('hcas') or [] for port in ca.get('ports') or []
            if port.get('link_layer') == 'InfiniBand' and port.get('netdev')]


def expected_mtu(link_layer, expected):
    """The interface MTU a rail must carry: ``mtu`` on RoCE (Ethernet) ports, ``ipoib_mtu`` on InfiniBand ports."""
    if link_layer == 'InfiniBand':
        return int(expected.get('ipoib_mtu') or 4092)
    return int(expected.get('mtu') or 9000)


def rails(ib_info, links, expected, modes=None):
    """One node's rails in rail order: the netdev of each GPU-fabric HCA's port, its MTU, IPv4 address and IPoIB mode.

    ``modes``: the registered ``grep -s -H . ROOT/class/net/*/mode`` (None:
    not read). A rail that cannot be pinged carries ``skip`` (the reason); an
    IPoIB rail whose mode could not be read, ``mode_unread``; the HCAs and
    ports ib.* reports missing are left out.
    """
    if not ran(ib_info) or ib_info.get('failed'):
        return []
    port_number = int(expected.get('port') or 1)
    by_name = dict((ca.get('name'), ca) for ca in ib_info.get('hcas') or [])
    table = with_ipoib_modes(interfaces(links), ipoib_modes(modes), _ipoib_netdevs(ib_info),
                             expected.get('sysfs_root') or '/sys')
    out = []
    for index, name in enumerate(checked_hcas(ib_info, expected.get('hcas'), expected.get('link_layer') or None)):
        port = next((p for p in (by_name.get(name) or {}).get('ports') or [] if p.get('port') == port_number), None)
        if port is None:
            continue
        link_layer = port.get('link_layer')
        rail = {'rail': index, 'hca': name, 'port': port_number, 'netdev': port.get('netdev'), 'link_layer': link_layer,
                'kind': KINDS.get(link_layer, link_layer), 'expected_mtu': expected_mtu(link_layer, expected),
                'mtu': None, 'mode': None, 'mode_unread': None, 'address': None, 'skip': None}
        iface = (table or {}).get(rail['netdev']) if rail['netdev'] else None
        if not rail['netdev']:
            rail['skip'] = 'no netdev for %s port %d (ibdev2netdev and show_gids name none)' % (name, port_number)
        elif table is None:
            rail['skip'] = 'the interfaces could not be read (ip -j -d addr show)'
        elif iface is None:
            rail['skip'] = '%s is not a network interface on this node (ip addr)' % rail['netdev']
        else:
            rail.update(mtu=iface['mtu'], mode=iface['mode'], address=iface['ipv4'],
                        mode_unread=iface['mode_unread'] if link_layer == 'InfiniBand' else None)
            if not iface['ipv4']:
                rail['skip'] = '%s has no IPv4 address' % rail['netdev']
                # the fabric stage addresses every IPoIB rail (ipoib_subnets): a rail without one is a failure
                rail['missing_address'] = bool(expected.get('ipoib_required')) and link_layer == 'InfiniBand'
        out.append(rail)
    return out


def _all_rails(observations, expected):
    return dict((node, rails((observed or {}).get('ib_info'), (observed or {}).get('links'), expected,
                             (observed or {}).get('ipoib_modes')))
                for node, observed in observations.items())


def _with_peer(rail, peer, peer_rails):
    """The rail with its ping: ``peer``, ``peer_netdev``, ``peer_address``, ``size``; or a ``skip`` reason."""
    rail = dict(rail, peer=peer, peer_netdev=None, peer_address=None, size=rail['expected_mtu'] - IP_ICMP_HEADERS)
    if rail['skip']:
        return rail
    if rail['mtu'] is not None and rail['mtu'] < rail['expected_mtu']:
        return rail  # fails on its configured MTU; a ping of the expected size could not leave the node
    if not peer:
        rail['skip'] = 'no peer node to ping (one node in the play)'
        return rail
    other = next((r for r in peer_rails or [] if r['rail'] == rail['rail']), None)
    if other is None:
        rail['skip'] = '%s has no rail %d (its HCAs could not be read)' % (peer, rail['rail'])
    elif not other['address']:
        rail['skip'] = "%s's %s (rail %d) has no IPv4 address" % (peer, other['netdev'] or other['hca'], rail['rail'])
    else:
        rail.update(peer_netdev=other['netdev'], peer_address=other['address'])
    return rail


def plan(observations, expected):
    """node -> {ib_info, links, ipoib_modes, peer} in; node -> the pings to run (one per rail with an address on both ends).

    Each ping: ``netdev``, ``peer_address``, ``size`` (MTU - 28) and the
    rail's names, for ``ping -M do -s SIZE -I NETDEV PEER_ADDRESS``.
    """
    by_node = _all_rails(observations, expected)
    out = {}
    for node, observed in observations.items():
        peer = (observed or {}).get('peer')
        peer = peer if peer and peer != node else None
        out[node] = [rail for rail in (_with_peer(r, peer, by_node.get(peer)) for r in by_node[node])
                     if not rail['skip'] and rail['peer_address']]
    return out


def _ping_results(pings):
    """The registered ping loop -> netdev -> that item's result."""
    out = {}
    if not ran(pings):
        return out
    for result in pings.get('results') or []:
        item = result.get('item') or {}
        if item.get('netdev') and not result.get('skipped'):
            out[item['netdev']] = result
    return out


def _subject(rail):
    return '%s:%d %s' % (rail['hca'], rail['port'], rail['netdev'] or '-')


def _what(rail):
    return '%s %s' % (rail['kind'], rail['mode']) if rail['mode'] else rail['kind']


def _skipped(check, subject, threshold, reason, unit='bytes'):
    return new_result(check, subject, None, threshold, True, 'not checked: %s' % reason, unit=unit, skipped=reason)


def _ping_said(ping):
    exception = ping.get('exception')
    parts = (ping.get('stdout'), ping.get('stderr'), ping.get('msg'), exception if isinstance(exception, str) else None)
    text = '\n'.join(str(part) for part in parts if part)
    found = _PING_MTU_RE.search(text)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    said = next((line for line in lines if 'too long' in line or 'Frag' in line or 'unknown host' in line.lower()
                 or 'Name or service' in line or 'Cannot assign' in line or 'unreachable' in line.lower()
                 or 'No such file' in line or 'Operation not permitted' in line),
                lines[-1] if lines else 'no output')
    return (int(found.group('mtu')) if found else None), said


def _evaluate_mtu(rail, ping):
    """net.mtu for one rail's MTU alone: its configured MTU, its address, its ping."""
    mtu, subject = rail['expected_mtu'], _subject(rail)
    # the interface's own MTU is judged whenever it was read, with or without an address (a node as installed: IPoIB
    # at 2044 and no address fails on both counts)
    if rail['mtu'] is not None and rail['mtu'] < mtu:
        return new_result('net.mtu', subject, rail['mtu'], mtu, False,
                          '%s (%s, rail %d) has MTU %d, expected at least %d; set MTU %d on it (and on every switch port '
                          'of the rail)%s' % (rail['netdev'], _what(rail), rail['rail'], rail['mtu'], mtu, mtu,
                                              '; it has no IPv4 address either (the fabric stage, role ipoib, sets both)'
                                              if rail.get('missing_address') else ''), unit='bytes')
    if rail.get('missing_address'):
        return new_result('net.mtu', subject, None, mtu, False,
                          '%s (%s, rail %d) has no IPv4 address, and ipoib_subnets says every IPoIB rail has one; run the '
                          'fabric stage (role ipoib)' % (rail['netdev'], _what(rail), rail['rail']), unit='bytes')
    if rail['skip']:
        return _skipped('net.mtu', subject, mtu, rail['skip'])
    command = 'ping -M do -s %d -I %s %s (%s %s)' % (
        rail['size'], rail['netdev'], rail['peer_address'], rail['peer'], rail['peer_netdev'])
    if ping is None:
        return _skipped('net.mtu', subject, mtu, '%s did not run' % command)
    if ping.get('rc') == 0:
        return new_result('net.mtu', subject, rail['mtu'] if rail['mtu'] is not None else mtu, mtu, True,
                          '%s passes: MTU %d holds on rail %d (%s)' % (command, mtu, rail['rail'], _what(rail)), unit='bytes')
    measured, said = _ping_said(ping)
    return new_result('net.mtu', subject, measured, mtu, False,
                      '%s failed (rc=%s): %s; set MTU %d on both ends of rail %d and on every switch port between them'
                      % (command, ping.get('rc'), said, mtu, rail['rail']), unit='bytes')


def _mode_judged(rail, wanted):
    """(problem, note) of an IPoIB rail's mode against ``wanted`` ('' or None: not judged); (None, None) on RoCE."""
    if not wanted or rail['link_layer'] != 'InfiniBand':
        return None, None
    if rail['mode'] is None:
        return None, ('IPoIB mode not judged: %s' % rail['mode_unread']) if rail.get('mode_unread') else None
    if rail['mode'] == wanted:
        return None, None
    hint = (' (ConnectX-4 and later run enhanced IPoIB, datagram only: load ib_ipoib with ipoib_enhanced=0, NVIDIA '
            'MLNX_OFED/DOCA only, or expect datagram)' if wanted == 'connected' else '')
    return ('%s (rail %d) is in IPoIB %s mode, expected %s (verify_ib_ipoib_mode); set ipoib_mode: %s and run the '
            'fabric stage (role ipoib)%s' % (rail['netdev'], rail['rail'], rail['mode'], wanted, wanted, hint)), None


def evaluate_rail(rail, ping, mode=None):
    """net.mtu for one rail (with its peer from ``plan``) and its registered ping (None: not run).

    ``mode``: the IPoIB mode an InfiniBand rail must be in ('' or None: not
    judged). A rail in another mode fails, in the same result as its MTU; a
    rail whose mode could not be read is judged on its MTU alone and says so.
    """
    result = _evaluate_mtu(rail, ping)
    problem, note = _mode_judged(rail, mode)
    if problem and not result['passed']:
        result['message'] = '%s; %s' % (result['message'], problem)
    elif problem:
        # the MTU holds, or could not be judged: the mode alone fails the rail
        said = ('its MTU was not checked: %s' % result['skipped']) if result.get('skipped') else result['message']
        result = new_result('net.mtu', _subject(rail), rail['mode'], mode, False, '%s; %s' % (problem, said))
    elif note:
        result['message'] = '%s; %s' % (result['message'], note)
    return result


def evaluate_rdma_mtu(ib_info, links, expected):
    """net.rdma_mtu for one node: each GPU-fabric port's ``active_mtu`` (ibv_devinfo) against ``rdma_mtu`` (4096)."""
    wanted = int(expected.get('rdma_mtu') or 4096)
    results = []
    for rail in rails(ib_info, links, expected):
        ca = next(c for c in ib_info.get('hcas') or [] if c.get('name') == rail['hca'])
        port = next(p for p in ca.get('ports') or [] if p.get('port') == rail['port'])
        subject = '%s:%d' % (rail['hca'], rail['port'])
        active = port.get('active_mtu')
        if port.get('state') not in (None, 'Active'):
            results.append(_skipped('net.rdma_mtu', subject, wanted, 'the port is %s (ib.port_state)' % port.get('state')))
        elif active is None:
            results.append(_skipped('net.rdma_mtu', subject, wanted, 'no active_mtu (ibv_devinfo not installed or silent)'))
        elif int(active) >= wanted:
            results.append(new_result('net.rdma_mtu', subject, int(active), wanted, True,
                                      '%s port %d active_mtu %d' % (rail['hca'], rail['port'], int(active)), unit='bytes'))
        else:
            if rail['link_layer'] == 'Ethernet':
                why = ('on RoCE the path MTU is the largest IB MTU below the netdev MTU: set MTU 9000 on %s (now %s)'
                       % (rail['netdev'], rail['mtu'] if rail['mtu'] is not None else 'unknown'))
            else:
                why = ('on InfiniBand it is capped by the partition MTU (opensm partitions.conf mtu=5 for 4096) '
                       'and by the switch port')
            results.append(new_result('net.rdma_mtu', subject, int(active), wanted, False,
                                      '%s port %d active_mtu %d, expected %d; %s'
                                      % (rail['hca'], rail['port'], int(active), wanted, why), unit='bytes'))
    return results


def decide_net(observations, expected):
    """node -> {ib_info, links, ipoib_modes, pings, peer} in; node -> [net.mtu per rail, net.rdma_mtu per port]."""
    by_node = _all_rails(observations, expected)
    out = {}
    for node, observed in observations.items():
        observed = observed or {}
        peer = observed.get('peer')
        peer = peer if peer and peer != node else None
        pings = _ping_results(observed.get('pings'))
        results = [evaluate_rail(rail, pings.get(rail['netdev']), expected.get('ipoib_mode'))
                   for rail in (_with_peer(r, peer, by_node.get(peer)) for r in by_node[node])]
        if ran(observed.get('ib_info')) and not observed['ib_info'].get('failed'):
            results.extend(evaluate_rdma_mtu(observed['ib_info'], observed.get('links'), expected))
        out[node] = results
    return out
