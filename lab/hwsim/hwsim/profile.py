"""Hardware profiles (one YAML file per node type) and the identifiers derived from them.

A profile says what a node type has; everything that must differ between
nodes (GUIDs, LIDs, MACs, RoCE GIDs, IPv4 addresses) is derived here from
the host's index in the lab (1 for gpu01, from fabric.yml) and the HCA's
index (N of mlx5_N), so every stand-in on every host computes the same
values.  The scheme is documented in ../README.md ("Derived identifiers").
"""
import copy
import ipaddress
import os

import yaml

from hwsim import links

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROFILE_DIR = os.path.join(HERE, 'profiles')

CA_OUI = 0x946dae          # NVIDIA (Mellanox) OUI used for adapters
SWITCH_OUI = 0xfc6a1c      # NVIDIA OUI used for switches
MAX_HOST_INDEX = 490       # 100 * 490 + 99 stays below the unicast LID limit 0xbfff
MAX_HCA_INDEX = 98

REQUIRED_HCA_KEYS = ('name', 'ca_type', 'firmware', 'link_layer', 'ports', 'pci', 'numa_node')


class ProfileError(Exception):
    """A profile file is missing or malformed."""


def profile_dir(environ=None):
    """Where profiles are read from: $HWSIM_PROFILE_DIR or lab/hwsim/profiles."""
    environ = os.environ if environ is None else environ
    return environ.get('HWSIM_PROFILE_DIR') or PROFILE_DIR


def available(directory=None):
    """Names of the profiles in a directory (file names without .yml), sorted."""
    directory = directory or PROFILE_DIR
    return sorted(name[:-4] for name in os.listdir(directory) if name.endswith('.yml'))


def load(name, directory=None):
    """Load and check one profile by name; raises ProfileError."""
    directory = directory or PROFILE_DIR
    path = os.path.join(directory, name + '.yml')
    if not os.path.isfile(path):
        raise ProfileError('unknown hardware profile %r; available: %s' % (name, ', '.join(available(directory))))
    with open(path, encoding='utf-8') as handle:
        data = yaml.safe_load(handle)
    if isinstance(data, dict) and data.get('extends'):
        data = derive(load(data['extends'], directory), data, path)
    check(data, path)
    return data


def derive(base, spec, where='profile'):
    """A profile made from another (``extends``): its own keys replace the base's; ``rename_hcas``
    (old -> new, applied at once, GPUs' nearest_hca too) and ``copy_hcas`` (``from``: an HCA of the
    base; ``name``, ``adapter``, ``pci``, ``netdev``; the copy has no IPv4 network) change the HCAs.
    Used for the 12-device node (mlx5_0..mlx5_11: lexical order and name prefixes exercised)."""
    data = copy.deepcopy(base)
    renames = spec.get('rename_hcas') or {}
    for hca in data['hcas']:
        hca['name'] = renames.get(hca['name'], hca['name'])
    for device in data['gpus']['devices']:
        device['nearest_hca'] = renames.get(device.get('nearest_hca'), device.get('nearest_hca'))
    for item in spec.get('copy_hcas') or []:
        source = find_hca(data, item['from'])
        if source is None:
            raise ProfileError('%s: copy_hcas: no HCA %s in %s' % (where, item['from'], spec['extends']))
        hca = copy.deepcopy(source)
        hca.update(name=item['name'], adapter=item.get('adapter', hca.get('adapter')), pci=item.get('pci', hca['pci']))
        for port in hca['ports']:
            port.pop('ipv4_network', None)
            if item.get('netdev'):
                port['netdev'] = item['netdev']
        data['hcas'].append(hca)
    data['hcas'].sort(key=lambda hca: hca_index(hca['name']))
    for key, value in spec.items():
        if key not in ('extends', 'rename_hcas', 'copy_hcas'):
            data[key] = value
    return data


def check(data, where='profile'):
    """Raise ProfileError unless the profile has what the stand-ins read."""
    if not isinstance(data, dict):
        raise ProfileError('%s: not a mapping' % where)
    for key in ('name', 'system', 'gpus', 'hcas', 'perftest', 'nccl'):
        if key not in data:
            raise ProfileError('%s: missing key %r' % (where, key))
    names = set()
    for hca in data['hcas']:
        for key in REQUIRED_HCA_KEYS:
            if key not in hca:
                raise ProfileError('%s: HCA %s lacks %r' % (where, hca.get('name', '?'), key))
        if hca['name'] in names:
            raise ProfileError('%s: HCA %s listed twice' % (where, hca['name']))
        names.add(hca['name'])
        if hca.get('nvswitch_bridge') and hca.get('rail') is not None:
            raise ProfileError('%s: HCA %s is an NVSwitch bridge function and cannot be on a rail' % (where, hca['name']))
        if hca_index(hca['name']) > MAX_HCA_INDEX:
            raise ProfileError('%s: HCA index of %s above %d' % (where, hca['name'], MAX_HCA_INDEX))
        for port in hca['ports']:
            if links.rate(port['width'], port['lane_speed_gbps']) != port['rate']:
                raise ProfileError('%s: %s port %s: rate %s does not match %s x %s Gbps' % (
                    where, hca['name'], port['port'], port['rate'], port['width'], port['lane_speed_gbps']))
    if not data['gpus']:
        return  # a host without GPUs (sm-host-ib): ``gpus: {}``
    if len(data['gpus']['devices']) != data['gpus']['count']:
        raise ProfileError('%s: gpus.count does not match the device list' % where)
    device = data['gpus'].get('nvswitch_pci_device')
    if device is not None and not (isinstance(device, str) and len(device) == 4
                                   and all(char in '0123456789abcdef' for char in device)):
        raise ProfileError('%s: gpus.nvswitch_pci_device must be 4 lowercase hex digits (22a3)' % where)
    switches = data['gpus'].get('nvswitches', 0)
    if not isinstance(switches, int) or isinstance(switches, bool) or not 0 <= switches <= 64:
        raise ProfileError('%s: gpus.nvswitches must be a number of NVSwitches (0..64)' % where)


def hca_index(name):
    """``mlx5_7`` -> 7."""
    return int(name.rsplit('_', 1)[1])


def check_host_index(host_index):
    if not 1 <= host_index <= MAX_HOST_INDEX:
        raise ProfileError('host index %d outside 1..%d' % (host_index, MAX_HOST_INDEX))


def node_guid(host_index, hca_name):
    """OUI 94:6d:ae, then 03:00, then the 16-bit host index and the 8-bit HCA index."""
    check_host_index(host_index)
    return (CA_OUI << 40) | (0x0300 << 24) | (host_index << 8) | hca_index(hca_name)


def mac(host_index, hca_name):
    """MAC address of an Ethernet port: OUI + the last three bytes of its node GUID."""
    guid = node_guid(host_index, hca_name)
    octets = [CA_OUI >> 16, (CA_OUI >> 8) & 0xff, CA_OUI & 0xff, (guid >> 16) & 0xff, (guid >> 8) & 0xff, guid & 0xff]
    return ':'.join('%02x' % octet for octet in octets)


def eui64(mac_address):
    """Modified EUI-64 interface identifier of a MAC (U/L bit flipped, ff:fe inserted) as an int."""
    octets = [int(part, 16) for part in mac_address.split(':')]
    octets[0] ^= 0x02
    return int(''.join('%02x' % octet for octet in octets[:3] + [0xff, 0xfe] + octets[3:]), 16)


def port_guid(host_index, hca, port):
    """IB: the node GUID (single-port mlx5 functions); Ethernet: EUI-64 of the MAC."""
    if port['link_layer'] == 'Ethernet':
        return eui64(mac(host_index, hca['name']))
    return node_guid(host_index, hca['name'])


def system_image_guid(host_index, profile, hca):
    """Node GUID of the first HCA on the same physical adapter (``adapter`` key)."""
    for other in profile['hcas']:
        if other.get('adapter', other['name']) == hca.get('adapter', hca['name']):
            return node_guid(host_index, other['name'])
    return node_guid(host_index, hca['name'])


def lid(host_index, hca_name):
    """Base LID of an InfiniBand CA port: 100 * host index + HCA index + 1 (gpu02 mlx5_3 -> 204)."""
    check_host_index(host_index)
    return 100 * host_index + hca_index(hca_name) + 1


def ipv4(host_index, port):
    """IPv4 interface address of a netdev: the port's ``ipv4_network`` plus the host index, or None."""
    network = port.get('ipv4_network')
    if not network:
        return None
    net = ipaddress.ip_network(network)
    return '%s/%d' % (net.network_address + host_index, net.prefixlen)


def renumber_ipv4(profile, networks):
    """A copy of ``profile`` whose ports' ``ipv4_network`` is replaced through ``networks`` (old -> new, CIDR text).

    A lab beside another takes its rail subnets elsewhere (lab/lab.py rail_networks_for): podman refuses a subnet
    two networks share. The profile keeps the subnets a lab alone uses; the fabric file carries the renumbering
    (``hwsim build-fabric --ipv4-network OLD=NEW``), so hwsim's addresses and RoCE GIDs match the interfaces."""
    if not profile or not networks:
        return profile
    data = copy.deepcopy(profile)
    for hca in data.get('hcas') or []:
        for port in hca.get('ports') or []:
            if port.get('ipv4_network') in networks:
                port['ipv4_network'] = networks[port['ipv4_network']]
    return data


def gid_text(value):
    """128-bit int -> ``fe80:0000:...`` (sysfs spelling, 8 groups of 4 hex digits)."""
    digits = '%032x' % value
    return ':'.join(digits[i:i + 4] for i in range(0, 32, 4))


def node_description(mode, host, hca, domain='lab.example'):
    """The CA node description rdma-ndd (or the driver) sets, by the fabric's description mode.

    ``mlx5``: ``gpu01 mlx5_3`` (rdma-core rdma-ndd); ``ofed``: ``gpu01 HCA-4`` (MLNX_OFED style,
    N+1 of mlx5_N); ``anonymous``: ``MT4129 ConnectX7 Mellanox Technologies`` (no rdma-ndd: the
    firmware's default); ``fqdn``: ``gpu01.lab.example mlx5_3``.
    """
    if mode == 'ofed':
        return '%s HCA-%d' % (host, hca_index(hca['name']) + 1)
    if mode == 'anonymous':
        generation = (hca.get('generation') or 'ConnectX').replace('-', '').replace(' ', '')
        return '%s %s Mellanox Technologies' % (hca['ca_type'], generation)
    if mode == 'fqdn':
        return '%s.%s %s' % (host, domain, hca['name'])
    return '%s %s' % (host, hca['name'])


def gids(host_index, hca, port, prefix=None):
    """The port's non-zero GID table as (index, gid text, type, ipv4 or '') tuples.

    InfiniBand: index 0, the subnet prefix (default fe80::/64; ``prefix`` as
    ``fec0:0000:0000:0001`` on a subnet of its own) + port GUID, type v1.
    Ethernet (RoCE): 0/1 link-local from the MAC (v1, v2), then 2/3 IPv4-mapped
    when the netdev has an address (v1, v2).
    """
    link_local = (0xfe80 << 112) | port_guid(host_index, hca, port)
    if port['link_layer'] != 'Ethernet':
        subnet = int(prefix.replace(':', ''), 16) << 64 if prefix else 0xfe80 << 112
        return [(0, gid_text(subnet | port_guid(host_index, hca, port)), 'v1', '')]
    table = [(0, gid_text(link_local), 'v1', ''), (1, gid_text(link_local), 'v2', '')]
    address = ipv4(host_index, port)
    if address:
        ip = ipaddress.ip_interface(address).ip
        mapped = (0xffff << 32) | int(ip)
        table += [(2, gid_text(mapped), 'v1', str(ip)), (3, gid_text(mapped), 'v2', str(ip))]
    return table


def find_hca(profile, name):
    """The HCA dict named ``name`` or None."""
    for hca in profile['hcas']:
        if hca['name'] == name:
            return hca
    return None


def sorted_hcas(profile):
    """HCAs in the order sysfs lists them (lexical: mlx5_0, mlx5_1, mlx5_10, mlx5_2 ...)."""
    return sorted(profile['hcas'], key=lambda hca: hca['name'])


def switch_guid(kind, number):
    """Switch node GUID: OUI fc:6a:1c, 03:00, type byte (1 leaf, 2 spine), 16-bit number."""
    return (SWITCH_OUI << 40) | (0x0300 << 24) | ({'leaf': 1, 'spine': 2}[kind] << 16) | number
