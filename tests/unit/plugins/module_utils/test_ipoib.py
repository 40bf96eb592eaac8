# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ipoib role's decisions: the plan, every refusal, the fleet check, the renderer, gc_thresh and the mode check."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.aicluster.infra.plugins.module_utils import ipoib


def hca(index, link_layer='InfiniBand', netdev=None, **extra):
    port = {'port': 1, 'link_layer': link_layer, 'netdev': netdev or 'ib%d' % index}
    return dict({'name': 'mlx5_%d' % index, 'ports': [port]}, **extra)


# Two IB rails (listed out of order: the rail order is the device number), a RoCE storage port and an NVSwitch bridge.
INFO = {'hcas': [hca(1), hca(0), hca(2, 'Ethernet', 'eth2'), hca(3, netdev='ib3', nvswitch_bridge=True)]}
PARTITIONS = [{'name': 'Default', 'pkey': '0x7fff', 'mtu': 4096, 'ipoib': True},
              {'name': 'tenant', 'pkey': '0x0001', 'mtu': 2048, 'ipoib': True}]


def settings(**overrides):
    base = {'subnets': ['10.10.0.0/24', '10.11.0.0/24'], 'node_index': 3, 'fleet_size': 4, 'offset': 0,
            'mode': 'datagram', 'mtu': 0, 'partitions': PARTITIONS, 'pkeys': [], 'addresses': {}, 'rails': [],
            'port': 1}
    base.update(overrides)
    return base


def test_one_interface_per_ib_rail_in_device_order_with_the_partition_mtu():
    plan = ipoib.ipoib_plan(settings(), INFO)
    assert plan['skip'] is None
    assert plan['interfaces'] == [
        {'name': 'ib0', 'parent': None, 'pkey': None, 'hca': 'mlx5_0', 'rail': 0, 'address': '10.10.0.4/24',
         'mtu': 4092, 'mode': 'datagram'},
        {'name': 'ib1', 'parent': None, 'pkey': None, 'hca': 'mlx5_1', 'rail': 1, 'address': '10.11.0.4/24',
         'mtu': 4092, 'mode': 'datagram'}]


def test_the_address_is_the_ipoib_address_filters():
    from ansible_collections.aicluster.infra.plugins.module_utils.cluster_math import ipoib_address
    plan = ipoib.ipoib_plan(settings(offset=10, fleet_size=4), INFO)
    assert plan['interfaces'][1]['address'] == ipoib_address(3, '10.11.0.0/24', 10) == '10.11.0.14/24'


def test_listed_rails_by_netdev_or_hca_and_inventory_addresses():
    plan = ipoib.ipoib_plan(settings(rails=['ib1', 'mlx5_0'], node_index=-1,
                                     addresses={'ib1': '10.10.0.200/24', 'ib0': '10.11.0.201/24'}), INFO)
    assert [(i['name'], i['rail'], i['address']) for i in plan['interfaces']] == [
        ('ib1', 0, '10.10.0.200/24'), ('ib0', 1, '10.11.0.201/24')]


def test_a_2048_partition_gives_2044_and_no_partitions_gives_4092():
    assert ipoib.ipoib_plan(settings(partitions=[{'name': 'Default', 'pkey': '0x7fff', 'mtu': 2048}]),
                            INFO)['interfaces'][0]['mtu'] == 2044
    # a partitions list without a Default entry: OpenSM's default partition at mtu code 4 (2048)
    assert ipoib.ipoib_plan(settings(partitions=[PARTITIONS[1]]), INFO)['interfaces'][0]['mtu'] == 2044
    assert ipoib.ipoib_plan(settings(partitions=[]), INFO)['interfaces'][0]['mtu'] == 4092
    assert ipoib.datagram_mtu(4096) == 4092 and ipoib.datagram_mtu(2048) == 2044


def test_connected_mode_only_when_asked_at_65520():
    plan = ipoib.ipoib_plan(settings(mode='connected'), INFO)
    assert {(i['mode'], i['mtu']) for i in plan['interfaces']} == {('connected', 65520)}


def test_child_interfaces_for_a_non_default_pkey():
    plan = ipoib.ipoib_plan(settings(pkeys=[{'pkey': '0x0001', 'subnets': ['10.20.0.0/24', '10.21.0.0/24']}]), INFO)
    children = [i for i in plan['interfaces'] if i['parent']]
    assert [(c['name'], c['parent'], c['pkey'], c['address'], c['mtu']) for c in children] == [
        ('ib0.8001', 'ib0', '0x8001', '10.20.0.4/24', 2044), ('ib1.8001', 'ib1', '0x8001', '10.21.0.4/24', 2044)]


@pytest.mark.parametrize('parent, pkey, name', [('ib0', 0x0001, 'ib0.8001'), ('ib0', 0x8001, 'ib0.8001'),
                                                ('ibp24s0', 0x7ffe, 'ibp24s0.fffe'), ('ib1', 0x12, 'ib1.8012')])
def test_child_names_follow_the_kernel(parent, pkey, name):
    """ipoib.rst: 'echo 0x8001 > /sys/class/net/ib0/create_child' makes ib0.8001; the driver names it
    '%s.%04x' of the parent and the P_Key with the full-member bit."""
    assert ipoib.child_name(parent, pkey) == name


def test_an_ethernet_fabric_is_skipped_once_with_the_reason():
    plan = ipoib.ipoib_plan(settings(), {'hcas': [hca(0, 'Ethernet', 'eth0'), hca(1, 'Ethernet', 'eth1')]})
    assert plan == {'skip': ipoib.ETHERNET_SKIP, 'interfaces': []}
    assert ipoib.ipoib_plan(settings(), {'hcas': []})['skip'].startswith('no InfiniBand adapter')


def test_nothing_configured_is_left_alone_with_the_reason():
    # site.yml runs the role on every GPU node; a fleet without IPoIB sets no subnet and is not refused
    plan = ipoib.ipoib_plan(settings(subnets=[]), INFO)
    assert plan == {'skip': ipoib.UNSET_SKIP, 'interfaces': []}
    # rails or P_Keys named without subnets are a mistake, not a wish for no IPoIB
    assert any('ipoib_subnets has 0 subnet' in line for line in ipoib.ipoib_problems(settings(subnets=[], rails=['ib0']), INFO))


REFUSALS = [
    ('mode', settings(mode='cm'), "ipoib_mode must be one of datagram, connected, got 'cm'"),
    ('mtu-above-partition', settings(mtu=4092, partitions=[{'name': 'Default', 'pkey': '0x7fff', 'mtu': 2048}]),
     'ipoib_mtu 4092 does not fit ib0: partition 0x7fff carries IPoIB at IB MTU 2048'),
    ('mtu-above-ib', settings(mtu=9000, partitions=[]), 'ipoib_mtu 9000 is above 4092, the largest datagram-mode MTU'),
    ('mtu-not-a-number', settings(mtu='big'), "ipoib_mtu must be 0 (from the partition) or an MTU in bytes, got 'big'"),
    ('mtu-connected-too-big', settings(mode='connected', mtu=70000), 'ipoib_mtu 70000 is above 65520'),
    ('partition-mtu', settings(partitions=[{'name': 'Default', 'pkey': '0x7fff', 'mtu': 4092}]),
     'opensm_partitions Default: mtu 4092 is not an InfiniBand MTU (256, 512, 1024, 2048, 4096)'),
    ('partition-pkey', settings(partitions=[{'name': 'x', 'pkey': 'zz'}]), "opensm_partitions x: pkey 'zz' is not a P_Key"),
    ('subnet-too-small', settings(subnets=['10.10.0.0/29', '10.11.0.0/24'], fleet_size=6, offset=1),
     'ipoib_subnets[0]: 10.10.0.0/29 has 6 usable addresses, too few for 6 nodes + offset 1'),
    ('subnet-invalid', settings(subnets=['10.10.0.0/33', '10.11.0.0/24']), "ipoib_subnets[0]: '10.10.0.0/33' is not a subnet"),
    ('subnets-overlap', settings(subnets=['10.10.0.0/16', '10.10.5.0/24']),
     'ipoib_subnets[1] 10.10.5.0/24 overlaps ipoib_subnets[0] 10.10.0.0/16'),
    ('subnets-short', settings(subnets=['10.10.0.0/24']), 'ipoib_subnets has 1 subnet(s) for 2 rail(s)'),
    ('rail-missing', settings(rails=['mlx5_0', 'ib7']), 'ipoib_rails: ib7 is neither an HCA nor an HCA netdev'),
    ('rail-ethernet', settings(rails=['mlx5_0', 'eth2']), 'ipoib_rails: eth2 (mlx5_2) is Ethernet'),
    ('address-outside', settings(addresses={'ib0': '10.99.0.5/24'}), "ipoib_addresses[ib0]: 10.99.0.5/24 is outside rail 0's subnet"),
    ('address-broadcast', settings(addresses={'ib0': '10.10.0.255/24'}), 'is its subnet\'s network or broadcast address'),
    ('no-index', settings(node_index=-1), 'ipoib_node_index: this host has no index'),
    ('child-pkey', settings(pkeys=[{'pkey': '0x7fff', 'subnets': ['10.20.0.0/24', '10.21.0.0/24']}]),
     "ipoib_pkeys[0]: pkey '0x7fff' is not a child P_Key (0x0001-0x7ffe"),
    ('child-pkey-unknown', settings(pkeys=[{'pkey': '0x0002', 'subnets': ['10.20.0.0/24', '10.21.0.0/24']}]),
     'ipoib_pkeys[0]: P_Key 0x0002 is not in opensm_partitions'),
    ('child-overlaps-parent', settings(pkeys=[{'pkey': '0x0001', 'subnets': ['10.10.0.0/25', '10.21.0.0/24']}]),
     'ipoib_pkeys[0] 10.10.0.0/25 overlaps ipoib_subnets 10.10.0.0/24'),
    ('port', settings(port=0), 'ipoib_port must be a positive integer, got 0'),
]


@pytest.mark.parametrize('case, given, line', REFUSALS, ids=[case for case, _g, _l in REFUSALS])
def test_each_bad_variable_gets_one_line_naming_it(case, given, line):
    problems = ipoib.ipoib_problems(given, INFO)
    assert any(line in problem for problem in problems), problems
    with pytest.raises(ValueError):
        ipoib.ipoib_plan(given, INFO)


def test_a_child_name_over_15_characters_is_refused():
    info = {'hcas': [hca(0, netdev='ibp161s0f1np1')]}
    problems = ipoib.ipoib_problems(settings(subnets=['10.10.0.0/24'], pkeys=[
        {'pkey': 1, 'subnets': ['10.20.0.0/24']}]), info)
    assert any('ibp161s0f1np1.8001, longer than the kernel\'s 15 characters' in p for p in problems), problems


def test_a_clean_configuration_has_no_problem():
    assert ipoib.ipoib_problems(settings(pkeys=[{'pkey': '0x8001', 'subnets': ['10.20.0.0/24', '10.21.0.0/24']}]),
                                INFO) == []


def test_duplicate_addresses_across_the_fleet():
    one = ipoib.ipoib_plan(settings(node_index=0), INFO)
    two = ipoib.ipoib_plan(settings(node_index=1, addresses={'ib1': '10.11.0.1/24'}), INFO)
    assert ipoib.fleet_problems({'gpu01': one, 'gpu02': two}) == [
        'ipoib_addresses/ipoib_node_index: 10.11.0.1 is given to gpu01 ib1, gpu02 ib1; every interface needs its own '
        'address']
    assert ipoib.fleet_problems({'gpu01': one, 'gpu02': ipoib.ipoib_plan(settings(node_index=1), INFO)}) == []


def test_fleet_check_is_fast_for_a_large_fleet():
    plans = dict(('gpu%05d' % n, {'interfaces': [{'name': 'ib%d' % r, 'address': '10.%d.%d.%d/16' % (
        10 + r, n // 250, n % 250 + 1)} for r in range(8)]}) for n in range(8192))
    assert ipoib.fleet_problems(plans) == []


RENDERERS = [
    ({'distribution': 'Ubuntu', 'os_family': 'Debian', 'netplan': True, 'networkd_active': True}, 'netplan'),
    ({'distribution': 'Rocky', 'os_family': 'RedHat', 'networkmanager_active': True}, 'networkmanager'),
    ({'distribution': 'Debian', 'os_family': 'Debian', 'networkd_active': True, 'ifupdown': True}, 'networkd'),
    ({'distribution': 'Debian', 'os_family': 'Debian', 'networkd_active': False, 'ifupdown': True}, 'ifupdown'),
    ({'distribution': 'Debian', 'os_family': 'Debian', 'netplan': True}, 'netplan'),
]


@pytest.mark.parametrize('facts, renderer', RENDERERS, ids=[r for _f, r in RENDERERS])
def test_the_renderer_is_chosen_from_facts(facts, renderer):
    assert ipoib.ipoib_renderer(facts) == renderer


def test_renderer_refusals():
    with pytest.raises(ValueError, match='Debian with neither systemd-networkd'):
        ipoib.ipoib_renderer({'distribution': 'Debian', 'os_family': 'Debian'})
    with pytest.raises(ValueError, match='Ubuntu without netplan'):
        ipoib.ipoib_renderer({'distribution': 'Ubuntu', 'os_family': 'Debian'})
    with pytest.raises(ValueError, match='ipoib_renderer must be auto or one of'):
        ipoib.ipoib_renderer({}, 'wicked')
    with pytest.raises(ValueError, match='netplan cannot create IPoIB child interfaces'):
        ipoib.ipoib_renderer({}, 'netplan', [{'name': 'ib0.8001', 'parent': 'ib0'}])
    assert ipoib.ipoib_renderer({'distribution': 'Ubuntu'}, 'networkd') == 'networkd'


@pytest.mark.parametrize('nodes, subnets, expected', [
    (1000, 1, {}), (16, 8, {}),
    (1001, 1, (1024, 2048, 4096)),
    (2000, 2, (4096, 8192, 16384)),
    (4096, 1, (4096, 8192, 16384)),
])
def test_neighbour_table_sizes(nodes, subnets, expected):
    got = ipoib.neigh_gc_thresh(nodes, subnets)
    if expected == {}:
        assert got == {}
    else:
        assert got == {'net.ipv4.neigh.default.gc_thresh1': expected[0],
                       'net.ipv4.neigh.default.gc_thresh2': expected[1],
                       'net.ipv4.neigh.default.gc_thresh3': expected[2]}
        assert got['net.ipv4.neigh.default.gc_thresh1'] >= nodes * subnets
    with pytest.raises(ValueError):
        ipoib.neigh_gc_thresh(-1)


def test_the_mode_read_back():
    interfaces = ipoib.ipoib_plan(settings(mode='connected'), INFO)['interfaces']
    contents = {'/sys/class/net/ib0/mode': 'datagram\n', '/sys/class/net/ib0/mtu': '4092\n',
                '/sys/class/net/ib1/mode': 'connected\n', '/sys/class/net/ib1/mtu': '65520\n'}
    problems = ipoib.mode_problems(interfaces, contents)
    assert len(problems) == 2
    assert problems[0].startswith('ib0 is in datagram mode, ipoib_mode asks for connected. ConnectX-4 and later run '
                                  'enhanced IPoIB')
    assert problems[1] == 'ib0 has MTU 4092, the plan 65520'
    assert ipoib.mode_problems(interfaces, {'/sys/class/net/ib1/mode': None})[0].startswith('ib0: /sys/class/net/ib0/mode')
    good = dict((k, 'connected\n' if k.endswith('mode') else '65520\n') for k in contents)
    assert ipoib.mode_problems(interfaces, good) == []
    # the lab's mode files live in hwsim's tree (ipoib_sysfs_root), the MTU is the kernel's
    lab = dict((k.replace('/sys/', '/run/hwsim/sys/') if k.endswith('mode') else k, v) for k, v in good.items())
    assert ipoib.sysfs_observed(lab) == {'ib0': {'mode': 'connected\n', 'mtu': '65520\n'},
                                         'ib1': {'mode': 'connected\n', 'mtu': '65520\n'}}
    assert ipoib.mode_problems(interfaces, lab) == []


def test_the_filters_wrap_the_decisions():
    from ansible.errors import AnsibleFilterError
    from ansible_collections.aicluster.infra.plugins.filter.ipoib import FilterModule
    filters = FilterModule().filters()
    plan = filters['ipoib_plan'](dict(settings(), fleet_size='4', nodes_per_subnet='2000', node_index='3',
                                      mtu='0', port='1'), INFO)
    assert plan['problems'] == [] and len(plan['interfaces']) == 2
    assert plan['sysctl']['net.ipv4.neigh.default.gc_thresh1'] == 4096  # 2,000 nodes x 2 subnets
    assert filters['ipoib_plan'](settings(mode='x'), INFO)['sysctl'] == {}
    assert filters['ipoib_fleet_problems']({'a': plan, 'b': plan})[0].startswith('ipoib_addresses/ipoib_node_index')
    with pytest.raises(AnsibleFilterError, match='^ipoib_renderer: '):
        filters['ipoib_renderer']({}, 'auto', [])
    assert filters['ipoib_mode_problems'](plan['interfaces'], {}) != []


def _ip(name, mtu, address=None, mode='datagram'):
    link = {'ifname': name, 'mtu': mtu, 'operstate': 'UP', 'linkinfo': {'info_kind': 'ipoib', 'info_data': {'mode': mode}},
            'addr_info': [{'family': 'inet', 'local': address, 'prefixlen': 24}] if address else []}
    return link


def test_the_live_state_against_the_plan():
    """``ip -j -d addr show`` as iproute2 prints an IPoIB link (linkinfo info_kind ipoib, info_data mode)."""
    interfaces = ipoib.ipoib_plan(settings(), INFO)['interfaces']
    good = [_ip('ib0', 4092, '10.10.0.4'), _ip('ib1', 4092, '10.11.0.4')]
    assert ipoib.live_problems(interfaces, good) == []
    assert ipoib.live_problems(interfaces, {'rc': 0, 'stdout': __import__('json').dumps(good)}) == []
    bad = [_ip('ib0', 2044), _ip('ib2', 4092)]
    assert ipoib.live_problems(interfaces, bad) == ['ib0 has no IPv4 address, the plan 10.10.0.4',
                                                    'ib0 has MTU 2044, the plan 4092', 'ib1 does not exist']
    assert ipoib.live_problems(interfaces, [_ip('ib0', 4092, '10.10.0.4', 'connected'), good[1]]) == [
        'ib0 is in connected mode, the plan datagram']
    assert ipoib.live_problems(interfaces, 'not json') == ['the interfaces could not be read (ip -j -d addr show)']
