"""The lab's InfiniBand fabric: which CA port is cabled to which switch port.

``build_fabric`` makes the description from the lab's hosts; the lab writes
it to /etc/hwsim/fabric.yml in every host.  Default topology is
rail-optimized: one leaf switch per rail (``leaf-rail<k>``), the HCA of rail
k of every node on leaf k, switch port = the node's index in the lab, and
every leaf wired to every spine on its top ports.

Field layouts (issue 11), each an option of ``build_fabric``:
``scalable_units`` N splits the nodes into N SUs with a leaf per rail each
(``su<u>-leaf-rail<k>``), the spines joining them; ``subnet_per_rail`` makes
every rail a subnet of its own (own GID prefix, own SM, own spines), so
iblinkinfo through one port shows only that rail; ``descriptions`` picks the
CA node description (``mlx5``: ``host mlx5_N``, ``ofed``: ``host HCA-<N+1>``,
``anonymous``: ``MT4129 ConnectX7 Mellanox Technologies``, ``fqdn``:
``host.<domain> mlx5_N``); ``switch_names`` ``identical`` gives every switch
the one name unmanaged switches print.

Subnet manager hosts (issue 32): ``sm_hosts`` gives hosts without a profile (ctl01, ctl02) the profile
``sm-host-ib`` (one ConnectX-7 NDR HCA on rail 0, no GPUs), indexed after every other host so the compute hosts'
GUIDs, LIDs, ports and addresses do not move; ``ibsim_host`` names the host that runs ibsim (hwsim/ibsim.py: the
real OpenSM and diag tools against the simulated fabric), ``ibsim_port`` its first UDP port. Both are opt-in: without
them the fabric is as before.
"""
import os

import yaml

from hwsim import links, profile as profiles

DEFAULT_PATH = '/etc/hwsim/fabric.yml'
# Quantum-2 (NDR) and Quantum (HDR) 1U switches: model, ports, fastest lane speed.
SWITCH_MODELS = {
    'NDR': {'model': 'MQM9790', 'ports': 64, 'lane_speed_gbps': 106.25},
    'HDR': {'model': 'MQM8790', 'ports': 40, 'lane_speed_gbps': 53.125},
}
LEAF_LID_BASE = 1          # leaf-rail<k> has LID k + 1
SPINE_LID_BASE = 51        # spine<s> has LID 51 + s
MAX_RAILS = SPINE_LID_BASE - LEAF_LID_BASE   # leaves in all (rails x scalable units)
DESCRIPTIONS = ('mlx5', 'ofed', 'anonymous', 'fqdn')
SWITCH_NAMES = ('unique', 'identical')
# What an unmanaged Quantum switch prints as its node description (no name set on it).
UNMANAGED_NAME = {'MQM9790': 'Quantum2 Mellanox Technologies', 'MQM8790': 'Quantum Mellanox Technologies'}
DEFAULT_PREFIX = 'fe80:0000:0000:0000'
SM_HOST_PROFILE = 'sm-host-ib'


class FabricError(Exception):
    """fabric.yml is missing, malformed or cannot be built."""


def fabric_path(environ=None):
    """$HWSIM_FABRIC or /etc/hwsim/fabric.yml."""
    environ = os.environ if environ is None else environ
    return environ.get('HWSIM_FABRIC') or DEFAULT_PATH


def _switch(kind, number, name, model, lid, identical=False):
    return {
        'name': name,
        'kind': kind,
        'guid': '0x%016x' % profiles.switch_guid(kind, number),
        'lid': lid,
        'description': UNMANAGED_NAME[model['model']] if identical else 'MF0;%s:%s/U1' % (name, model['model']),
        'model': model['model'],
        'port_count': model['ports'],
        'lane_speed_gbps': model['lane_speed_gbps'],
        'ports': {},
    }


def _ib_compute_hcas(prof):
    """InfiniBand HCAs of a profile that carry a rail index."""
    return [hca for hca in prof['hcas'] if hca['link_layer'] == 'InfiniBand' and hca.get('rail') is not None]


def _host_entries(hosts, profile_dir):
    """fabric.yml ``hosts``: index, profile and the IB HCAs (lid, guid, rail) of every host."""
    entries = {}
    loaded = {}
    position = 0
    for item in hosts:
        hostname, profile_name = item[0], item[1]
        if profile_name:
            position += 1
        index = item[2] if len(item) > 2 else (position if profile_name else None)
        entry = {'index': index, 'profile': profile_name, 'hcas': {}}
        if profile_name:
            if profile_name not in loaded:
                loaded[profile_name] = profiles.load(profile_name, profile_dir)
            for hca in _ib_compute_hcas(loaded[profile_name]):
                entry['hcas'][hca['name']] = {
                    'rail': hca['rail'],
                    'lid': profiles.lid(index, hca['name']),
                    'guid': '0x%016x' % profiles.node_guid(index, hca['name']),
                    'lane_speed_gbps': hca['ports'][0]['lane_speed_gbps'],
                }
        entries[hostname] = entry
    taken = [entry['index'] for entry in entries.values() if entry['index'] is not None]
    if len(taken) != len(set(taken)):
        raise FabricError('two hosts share an index: %s' % sorted(taken))
    return entries


def _with_sm_hosts(hosts, sm_hosts):
    """hosts with each SM host given profile ``sm-host-ib`` and an index after every other host's."""
    if not sm_hosts:
        return hosts
    names = [item[0] for item in hosts]
    unknown = [name for name in sm_hosts if name not in names]
    if unknown:
        raise FabricError('sm_hosts names hosts the lab does not have: %s' % ', '.join(unknown))
    given = [item[2] for item in hosts if len(item) > 2 and item[2] is not None]
    last = max(given + [sum(1 for item in hosts if item[1] and item[0] not in sm_hosts)])
    result, number = [], 0
    for item in hosts:
        if item[0] in sm_hosts:
            if item[1] not in (None, SM_HOST_PROFILE):
                raise FabricError('SM host %s already has profile %s' % (item[0], item[1]))
            number += 1
            result.append((item[0], SM_HOST_PROFILE, last + number))
        elif item[1] and len(item) < 3:
            result.append((item[0], item[1], 1 + sum(1 for other in result if other[1] and other[0] not in sm_hosts)))
        else:
            result.append(tuple(item))
    return result


def _units(host_entries, scalable_units):
    """Each host with HCAs gets its scalable unit (0-based), the hosts split in index order into equal runs. SM hosts
    (profile sm-host-ib) join the first unit and do not count in the split: adding them moves no compute host to
    another unit (a lab of 2 or 4 compute hosts in 2 units would otherwise see one move)."""
    sm = set(host for host, entry in host_entries.items() if entry.get('profile') == SM_HOST_PROFILE)
    members = sorted((entry['index'], host) for host, entry in host_entries.items() if entry['hcas'] and host not in sm)
    for position, (dummy, host) in enumerate(members):
        host_entries[host]['su'] = position * scalable_units // len(members)
    for host in sm:
        if host_entries[host]['hcas']:
            host_entries[host]['su'] = 0


def _check_options(descriptions, switch_names, scalable_units):
    if descriptions not in DESCRIPTIONS:
        raise FabricError('descriptions must be one of %s, got %r' % (', '.join(DESCRIPTIONS), descriptions))
    if switch_names not in SWITCH_NAMES:
        raise FabricError('switch_names must be one of %s, got %r' % (', '.join(SWITCH_NAMES), switch_names))
    if int(scalable_units) < 1:
        raise FabricError('scalable_units must be 1 or more')


def _subnets(rails, subnet_per_rail):
    """Subnet name -> its rails and GID prefix: one subnet, or one per rail (prefix fec0:0:0:<rail>)."""
    if not subnet_per_rail:
        return [{'name': 'ib0', 'rails': list(rails), 'prefix': DEFAULT_PREFIX}]
    return [{'name': 'ib-rail%d' % rail, 'rails': [rail], 'prefix': 'fec0:0000:0000:%04x' % rail} for rail in rails]


def build_fabric(hosts, spines=2, uplinks_per_spine=2, profile_dir=None, switch_ports=None, descriptions='mlx5',
                 switch_names='unique', scalable_units=1, subnet_per_rail=False, domain='lab.example',
                 ipv4_networks=None, sm_hosts=None, ibsim_host=None, ibsim_port=None):
    """Describe the lab fabric for ``hosts``, a list of (hostname, profile name or None[, index]).

    A host's index is the derivation key for its GUIDs and LIDs and its port
    number on every leaf: given as a third item, or else its 1-based position
    among the hosts that have a profile (hosts without one, like ctl01, get
    None and have no adapters).  Returns a
    dict ready for yaml (see write_fabric): ``hosts``, ``switches``, ``links``
    (one per cable, CA or leaf end first), ``subnets`` (each with its SM) and
    ``subnet_manager`` (the first subnet's).  The options are described in the
    module docstring. ``ipv4_networks`` (old -> new CIDR) renumbers the profiles' rail subnets for this lab
    (profile.renumber_ipv4); the fabric file carries it only when given.
    """
    _check_options(descriptions, switch_names, scalable_units)
    hosts = _with_sm_hosts(hosts, list(sm_hosts or []))
    if ibsim_host is not None and ibsim_host not in [item[0] for item in hosts]:
        raise FabricError('ibsim_host %s is not a host of the lab' % ibsim_host)
    identical = switch_names == 'identical'
    host_entries = _host_entries(hosts, profile_dir)
    rails = sorted({hca['rail'] for entry in host_entries.values() for hca in entry['hcas'].values()})
    speeds = [hca['lane_speed_gbps'] for entry in host_entries.values() for hca in entry['hcas'].values()]
    model = dict(SWITCH_MODELS['NDR' if any(speed >= 106.25 for speed in speeds) else 'HDR'])
    if switch_ports:
        model['ports'] = switch_ports
    uplinks = spines * uplinks_per_spine if rails else 0
    rail_count = rails[-1] + 1 if rails else 0
    if rail_count * scalable_units > MAX_RAILS:
        raise FabricError('at most %d leaves (rails x scalable units)' % MAX_RAILS)
    indexes = [entry['index'] for entry in host_entries.values() if entry['hcas']]
    if indexes and max(indexes) + uplinks > model['ports']:
        raise FabricError('host index %d and %d uplinks do not fit %d-port leaf switches' % (max(indexes), uplinks, model['ports']))
    if indexes:
        _units(host_entries, scalable_units)
    subnets = _subnets(range(rail_count), subnet_per_rail)
    subnet_of_rail = dict((rail, subnet['name']) for subnet in subnets for rail in subnet['rails'])
    switches, cables, leaves = [], [], {}
    for unit in range(scalable_units):
        for rail in range(rail_count):
            name = 'leaf-rail%d' % rail if scalable_units == 1 else 'su%d-leaf-rail%d' % (unit + 1, rail)
            leaf = _switch('leaf', unit * 256 + rail, name, model, LEAF_LID_BASE + unit * rail_count + rail, identical)
            leaf['subnet'] = subnet_of_rail[rail]
            leaves[(unit, rail)] = leaf
            switches.append(leaf)
    for hostname, entry in host_entries.items():
        for hca_name, hca in sorted(entry['hcas'].items()):
            leaf = leaves[(entry.get('su', 0), hca['rail'])]
            port = entry['index']
            leaf['ports'][port] = {'peer': '%s/%s' % (hostname, hca_name), 'peer_port': 1}
            hca['switch'] = leaf['name']
            hca['switch_port'] = port
            hca['subnet'] = leaf['subnet']
            cables.append({'a': '%s/%s:1' % (hostname, hca_name), 'b': '%s:%d' % (leaf['name'], port)})
    for plane, subnet in enumerate(subnets if rails else []):
        plane_leaves = [leaves[(unit, rail)] for unit in range(scalable_units) for rail in subnet['rails']]
        for number in range(spines):
            name = 'spine%d' % number if len(subnets) == 1 else 'rail%d-spine%d' % (subnet['rails'][0], number)
            spine = _switch('spine', plane * 256 + number, name, model, SPINE_LID_BASE + plane * spines + number, identical)
            spine['subnet'] = subnet['name']
            switches.append(spine)
            for position, leaf in enumerate(plane_leaves):
                for link in range(uplinks_per_spine):
                    leaf_port = model['ports'] - uplinks + number * uplinks_per_spine + link + 1
                    spine_port = position * uplinks_per_spine + link + 1
                    if spine_port > model['ports']:
                        raise FabricError('too many leaves for %d-port spines' % model['ports'])
                    leaf['ports'][leaf_port] = {'peer': spine['name'], 'peer_port': spine_port}
                    spine['ports'][spine_port] = {'peer': leaf['name'], 'peer_port': leaf_port}
                    cables.append({'a': '%s:%d' % (leaf['name'], leaf_port), 'b': '%s:%d' % (spine['name'], spine_port)})
    for subnet in subnets:
        first = next((leaf for key, leaf in sorted(leaves.items()) if leaf['subnet'] == subnet['name']), None)
        subnet['sm_lid'], subnet['sm_node'] = (first['lid'], first['name']) if first else (0, None)
    fabric = {
        'version': 1,
        'topology': 'rail-optimized',
        'node_description': {'mode': descriptions, 'domain': domain},
        'scalable_units': scalable_units,
        'subnets': subnets if rails else [],
        'subnet_manager': {'lid': subnets[0]['sm_lid'], 'node': subnets[0]['sm_node']} if rails else {'lid': 0, 'node': None},
        'hosts': host_entries,
        'switches': switches,
        'links': cables,
    }
    if ipv4_networks:
        fabric['ipv4_networks'] = dict(ipv4_networks)
    if sm_hosts:
        fabric['sm_hosts'] = list(sm_hosts)
    if ibsim_host:
        fabric['ibsim'] = {'host': ibsim_host, 'port': int(ibsim_port or 7070)}
    return fabric


def subnet_of(fabric, host, ca_name):
    """The subnet dict of a host's HCA, or None (Ethernet HCAs, hosts outside the fabric, old fabric.yml)."""
    hca = ((fabric.get('hosts') or {}).get(host) or {}).get('hcas', {}).get(ca_name) or {}
    return next((subnet for subnet in fabric.get('subnets') or [] if subnet['name'] == hca.get('subnet')), None)


def write_fabric(fabric, path):
    """Write fabric.yml atomically (temp file + rename)."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    tmp = '%s.tmp.%d' % (path, os.getpid())
    with open(tmp, 'w', encoding='utf-8') as handle:
        handle.write('# Written by hwsim build_fabric: the simulated InfiniBand fabric of the lab.\n')
        yaml.safe_dump(fabric, handle, sort_keys=False, default_flow_style=False)
    os.replace(tmp, path)


def load_fabric(path):
    """Read fabric.yml; FabricError when absent or malformed."""
    if not os.path.isfile(path):
        raise FabricError('no fabric description at %s (set HWSIM_FABRIC)' % path)
    with open(path, encoding='utf-8') as handle:
        data = yaml.safe_load(handle)
    if not isinstance(data, dict) or 'hosts' not in data or 'switches' not in data:
        raise FabricError('%s is not a hwsim fabric description' % path)
    for switch in data['switches']:
        switch['ports'] = {int(number): peer for number, peer in switch['ports'].items()}
    return data


def switch_by_name(fabric, name):
    for switch in fabric['switches']:
        if switch['name'] == name:
            return switch
    return None


def max_lane_speed(a_speed, b_speed):
    """Fastest lane speed both ends support."""
    return links.lane_speed(min(a_speed, b_speed))
