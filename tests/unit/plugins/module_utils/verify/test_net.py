# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""verify/net.py: each RDMA rail's MTU and a don't-fragment ping on it, each IPoIB rail's mode; the RDMA path MTU; never
the management address."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.aicluster.infra.plugins.filter import verify as vf
from ansible_collections.aicluster.infra.plugins.module_utils.verify import decide, document, net

IB = {'mtu': 9000, 'ipoib_mtu': 4092, 'rdma_mtu': 4096, 'hcas': ['mlx5_0', 'mlx5_3'], 'port': 1,
      'link_layer': 'InfiniBand', 'mtu_enabled': True}
ROCE = dict(IB, link_layer='Ethernet')
NETDEVS = {'InfiniBand': ('ibp24s0', 'ibp64s0'), 'Ethernet': ('enp24s0np0', 'enp64s0np0')}


def ib_info(link_layer='InfiniBand', active_mtu=4096):
    """A node's ib_info: mlx5_0 and mlx5_3 on the GPU fabric, mlx5_1 a storage NIC."""
    hcas = []
    for name, netdev in zip(('mlx5_0', 'mlx5_3'), NETDEVS[link_layer]):
        hcas.append({'name': name, 'firmware_version': '28.39.1002', 'ports': [{
            'port': 1, 'state': 'Active', 'physical_state': 'LinkUp', 'link_layer': link_layer, 'netdev': netdev,
            'active_mtu': active_mtu, 'max_mtu': 4096}]})
    hcas.append({'name': 'mlx5_1', 'ports': [{'port': 1, 'state': 'Active', 'link_layer': 'Ethernet',
                                              'netdev': 'enp170s0f0np0', 'active_mtu': 1024}]})
    return {'changed': False, 'hcas': hcas, 'ofed_version': None, 'errors': []}


def links(host, link_layer='InfiniBand', mtu=None, mode='datagram', addressed=(True, True)):
    """``ip -j -d addr show`` as registered: eth0 the management network at 1500, then the two rails."""
    rows = [{'ifname': 'eth0', 'mtu': 1500, 'operstate': 'UP',
             'addr_info': [{'family': 'inet', 'local': '192.168.1.%d' % host, 'prefixlen': 24}]}]
    for rail, (netdev, has_ip) in enumerate(zip(NETDEVS[link_layer], addressed)):
        row = {'ifname': netdev, 'mtu': mtu or (4092 if link_layer == 'InfiniBand' else 9000), 'operstate': 'UP',
               'addr_info': [{'family': 'inet6', 'local': 'fe80::1', 'prefixlen': 64}]}
        if has_ip:
            row['addr_info'].insert(0, {'family': 'inet', 'local': '10.100.%d.%d' % (rail, host), 'prefixlen': 24})
        if link_layer == 'InfiniBand':
            row['linkinfo'] = {'info_kind': 'ipoib', 'info_data': {'pkey': 32767, 'mode': mode, 'umcast': 0}}
        rows.append(row)
    return {'changed': False, 'rc': 0, 'stdout': json.dumps(rows), 'stderr': ''}


def ring(nodes, **kwargs):
    link_layer = kwargs.pop('link_layer', 'InfiniBand')
    out = {}
    for index, node in enumerate(nodes):
        out[node] = {'ib_info': ib_info(link_layer), 'links': links(index + 1, link_layer, **kwargs),
                     'peer': nodes[(index + 1) % len(nodes)]}
    return out


def ping_ok(item):
    return {'item': item, 'rc': 0, 'stdout': '3 packets transmitted, 3 received, 0% packet loss\n', 'stderr': ''}


def pinged(observations, expected, answer=ping_ok):
    """The observations with each node's registered ping loop, as the role's loop over the plan registers it."""
    plan = net.plan(observations, expected)
    for node, items in plan.items():
        observations[node]['pings'] = {'changed': False, 'results': [answer(item) for item in items]}
    return observations


def _by(results, check):
    return dict((r['subject'], r) for r in results if r['check'] == check)


def test_plan_pings_each_rail_interface_not_the_management_address():
    plan = net.plan(ring(['gpu01', 'gpu02', 'gpu03']), IB)
    assert [(p['netdev'], p['peer'], p['peer_netdev'], p['peer_address'], p['size']) for p in plan['gpu01']] == [
        ('ibp24s0', 'gpu02', 'ibp24s0', '10.100.0.2', 4064), ('ibp64s0', 'gpu02', 'ibp64s0', '10.100.1.2', 4064)]
    assert plan['gpu03'][0]['peer_address'] == '10.100.0.1'  # the ring closes
    assert not any(p['peer_address'].startswith('192.168.') for pings in plan.values() for p in pings)
    roce = net.plan(ring(['gpu01', 'gpu02'], link_layer='Ethernet'), ROCE)
    assert [(p['netdev'], p['size']) for p in roce['gpu01']] == [('enp24s0np0', 8972), ('enp64s0np0', 8972)]


def test_management_network_at_1500_drains_nobody():
    # the old check pinged the management address at 9000 and failed every node on a 1500 network
    outcome = decide.ib(pinged(ring(['gpu01', 'gpu02']), IB), IB)
    for node in ('gpu01', 'gpu02'):
        mtu = _by(outcome['nodes'][node], 'net.mtu')
        assert sorted(mtu) == ['mlx5_0:1 ibp24s0', 'mlx5_3:1 ibp64s0']
        assert all(r['passed'] and r['threshold'] == 4092 and r['measured'] == 4092 for r in mtu.values())
        assert 'ping -M do -s 4064 -I ibp24s0 10.100.0.' in mtu['mlx5_0:1 ibp24s0']['message']
        assert all(r['passed'] for r in outcome['nodes'][node])
    assert outcome['parameters']['ipoib_mtu'] == 4092 and outcome['parameters']['rdma_mtu'] == 4096


def test_roce_rail_configured_at_1500_fails_without_a_ping():
    observations = ring(['gpu01', 'gpu02'], link_layer='Ethernet')
    observations['gpu02']['links'] = links(2, 'Ethernet', mtu=1500)
    plan = net.plan(observations, ROCE)
    assert plan['gpu02'] == [] and len(plan['gpu01']) == 2
    results = net.decide_net(pinged(observations, ROCE), ROCE)
    bad = _by(results['gpu02'], 'net.mtu')['mlx5_0:1 enp24s0np0']
    assert not bad['passed'] and (bad['measured'], bad['threshold']) == (1500, 9000)
    assert 'enp24s0np0 (RoCE, rail 0) has MTU 1500, expected at least 9000' in bad['message']
    assert all(r['passed'] for r in _by(results['gpu01'], 'net.mtu').values())


def test_failing_ping_names_the_rail_and_the_path_mtu():
    def too_long(item):
        if item['netdev'] == 'ibp64s0':
            return {'item': item, 'rc': 1, 'stdout': '3 packets transmitted, 0 received, +3 errors\n',
                    'stderr': 'ping: local error: message too long, mtu=2044\n'}
        return ping_ok(item)
    results = net.decide_net(pinged(ring(['gpu01', 'gpu02']), IB, too_long), IB)
    bad = _by(results['gpu01'], 'net.mtu')['mlx5_3:1 ibp64s0']
    assert not bad['passed'] and bad['measured'] == 2044
    assert 'ping -M do -s 4064 -I ibp64s0 10.100.1.2 (gpu02 ibp64s0) failed (rc=1)' in bad['message']
    assert 'message too long' in bad['message'] and 'rail 1' in bad['message']
    assert _by(results['gpu01'], 'net.mtu')['mlx5_0:1 ibp24s0']['passed']


def test_rail_without_ipv4_is_skipped_with_its_reason():
    observations = ring(['gpu01', 'gpu02'])
    observations['gpu02']['links'] = links(2, addressed=(True, False))
    results = net.decide_net(pinged(observations, IB), IB)
    own = _by(results['gpu02'], 'net.mtu')['mlx5_3:1 ibp64s0']
    assert own['passed'] and own['skipped'] == 'ibp64s0 has no IPv4 address' and own['measured'] is None
    towards = _by(results['gpu01'], 'net.mtu')['mlx5_3:1 ibp64s0']
    assert towards['passed'] and towards['skipped'] == "gpu02's ibp64s0 (rail 1) has no IPv4 address"
    assert 'not checked' in towards['message']


def test_an_ipoib_rail_without_an_address_fails_where_the_fabric_stage_addresses_them():
    expected = dict(IB, ipoib_required=True)
    observations = ring(['gpu01', 'gpu02'])
    observations['gpu02']['links'] = links(2, addressed=(True, False))
    own = _by(net.decide_net(pinged(observations, expected), expected)['gpu02'], 'net.mtu')['mlx5_3:1 ibp64s0']
    assert not own['passed'] and own['message'] == ('ibp64s0 (IPoIB datagram, rail 1) has no IPv4 address, and ipoib_subnets '
                                                    'says every IPoIB rail has one; run the fabric stage (role ipoib)')


def test_a_rail_as_installed_fails_on_its_mtu_with_or_without_an_address():
    # a fresh node: IPoIB at 2044, no address; the MTU is judged, not skipped for the missing address
    for expected, tail in ((IB, ''), (dict(IB, ipoib_required=True),
                                      '; it has no IPv4 address either (the fabric stage, role ipoib, sets both)')):
        observations = ring(['gpu01', 'gpu02'])
        observations['gpu01']['links'] = links(1, mtu=2044, addressed=(False, False))
        results = _by(net.decide_net(pinged(observations, expected), expected)['gpu01'], 'net.mtu')
        bad = results['mlx5_0:1 ibp24s0']
        assert not bad['passed'] and bad['measured'] == 2044
        assert bad['message'] == ('ibp24s0 (IPoIB datagram, rail 0) has MTU 2044, expected at least 4092; set MTU 4092 on it '
                                  '(and on every switch port of the rail)' + tail)


def test_missing_netdev_single_node_and_unread_interfaces_are_skipped():
    observations = ring(['gpu01'])
    results = net.decide_net(pinged(observations, IB), IB)['gpu01']
    assert all(r['passed'] and r['skipped'] == 'no peer node to ping (one node in the play)' for r in results if r['check'] == 'net.mtu')
    observations['gpu01']['links'] = {'changed': False, 'rc': 1, 'stdout': '', 'stderr': 'Option "-j" is unknown'}
    skipped = [r['skipped'] for r in net.decide_net(observations, IB)['gpu01'] if r['check'] == 'net.mtu']
    assert skipped == ['the interfaces could not be read (ip -j -d addr show)'] * 2
    observations['gpu01']['ib_info']['hcas'][0]['ports'][0]['netdev'] = None
    assert net.rails(observations['gpu01']['ib_info'], links(1), IB)[0]['skip'].startswith('no netdev for mlx5_0 port 1')


def test_ipoib_connected_mode_passes_at_the_datagram_default():
    observations = ring(['gpu01', 'gpu02'], mtu=65520, mode='connected')
    results = net.decide_net(pinged(observations, IB), IB)['gpu01']
    good = _by(results, 'net.mtu')['mlx5_0:1 ibp24s0']
    assert good['passed'] and good['measured'] == 65520 and 'IPoIB connected' in good['message']


def test_rdma_path_mtu_from_ibv_devinfo():
    observations = ring(['gpu01', 'gpu02'], link_layer='Ethernet')
    observations['gpu02']['ib_info'] = ib_info('Ethernet', active_mtu=1024)
    observations['gpu02']['links'] = links(2, 'Ethernet', mtu=1500)
    results = net.decide_net(observations, ROCE)
    assert all(r['passed'] and r['measured'] == 4096 for r in _by(results['gpu01'], 'net.rdma_mtu').values())
    bad = _by(results['gpu02'], 'net.rdma_mtu')['mlx5_0:1']
    assert not bad['passed'] and (bad['measured'], bad['threshold']) == (1024, 4096)
    assert 'set MTU 9000 on enp24s0np0 (now 1500)' in bad['message']
    # the storage NIC (mlx5_1) is not on the GPU fabric: never judged
    assert sorted(_by(results['gpu02'], 'net.rdma_mtu')) == ['mlx5_0:1', 'mlx5_3:1']
    observations['gpu01']['ib_info'] = ib_info('Ethernet', active_mtu=None)
    skipped = _by(net.decide_net(observations, ROCE)['gpu01'], 'net.rdma_mtu')['mlx5_0:1']
    assert skipped['passed'] and 'ibv_devinfo' in skipped['skipped']


def test_ib_path_mtu_below_4096_points_at_the_partition():
    observations = ring(['gpu01', 'gpu02'])
    observations['gpu01']['ib_info'] = ib_info(active_mtu=2048)
    bad = _by(net.decide_net(observations, IB)['gpu01'], 'net.rdma_mtu')['mlx5_3:1']
    assert not bad['passed'] and 'partitions.conf mtu=5' in bad['message']


def test_mtu_checks_off():
    outcome = decide.ib(pinged(ring(['gpu01', 'gpu02']), IB), dict(IB, mtu_enabled=False))
    assert not any(r['area'] == 'net' for results in outcome['nodes'].values() for r in results)


def test_ping_that_could_not_start_says_why():
    def missing(item):
        return {'item': item, 'rc': 2, 'stdout': '', 'stderr': '', 'msg': '[Errno 2] No such file or directory: b\'ping\''}
    bad = _by(net.decide_net(pinged(ring(['gpu01', 'gpu02']), IB, missing), IB)['gpu01'], 'net.mtu')['mlx5_0:1 ibp24s0']
    assert not bad['passed'] and bad['measured'] is None and 'No such file or directory' in bad['message']


# The IPoIB mode: `grep -s -H . ROOT/class/net/*/mode` as the role runs it. The kernel's mode file holds "datagram\n"
# or "connected\n" (drivers/infiniband/ulp/ipoib, mode_show); grep -H prefixes each line with its path, -s hides
# the files it cannot read, and an empty or missing file prints nothing.
MODES_GREP = ('/sys/class/net/ibp24s0/mode:datagram\n'
              '/sys/class/net/ibp64s0/mode:connected\n'
              '/sys/class/net/enp170s0f0np0/mode:datagram\n')  # not an IPoIB interface: never taken


def modes(text=MODES_GREP, rc=0):
    """The registered grep, as the role's task registers it (failed_when: false)."""
    return {'changed': False, 'rc': rc, 'stdout': text, 'stderr': ''}


def grep_modes(rail_modes, root='/sys'):
    """The grep's output for the two rails of ``links``: netdev -> mode, None for a missing file."""
    return modes(''.join('%s/class/net/%s/mode:%s\n' % (root, netdev, mode)
                         for netdev, mode in zip(NETDEVS['InfiniBand'], rail_modes) if mode is not None),
                 rc=0 if all(mode is not None for mode in rail_modes) else 2)


def ring_with_modes(nodes, rail_modes=('datagram', 'datagram'), root='/sys', **kwargs):
    observations = ring(nodes, **kwargs)
    for observed in observations.values():
        observed['ipoib_modes'] = grep_modes(rail_modes, root)
    return observations


def test_ipoib_modes_parses_the_grep_lines():
    text = ('/run/hwsim/sys/class/net/ibp24s0/mode:datagram\n'
            '/run/hwsim/sys/class/net/ibp64s0.8001/mode:connected\n'
            'a line that is not the grep\'s\n'
            '/sys/class/net/ibp100s0/mode:\n')  # never printed by grep -H . (an empty file prints nothing): skipped
    assert net.ipoib_modes(text) == {'ibp24s0': 'datagram', 'ibp64s0.8001': 'connected'}
    # grep exits 2 where some file is missing (-s hides the message): the lines it printed still count
    assert net.ipoib_modes(modes(MODES_GREP, rc=2)) == {'ibp24s0': 'datagram', 'ibp64s0': 'connected',
                                                        'enp170s0f0np0': 'datagram'}
    # no mode file at all (a RoCE node): the pattern matches nothing, grep exits 2 with no output
    assert net.ipoib_modes(modes('', rc=2)) == {}
    # not run, or could not run (no grep): not read
    assert net.ipoib_modes({'changed': False, 'skipped': True}) is None
    assert net.ipoib_modes(modes('', rc=127)) is None
    assert net.ipoib_modes(None) is None


def test_the_mode_is_joined_only_to_ipoib_interfaces():
    table = net.interfaces(links(1))
    # ip -d calls the rails ipoib; eth0 (no kind) and the storage NIC take no mode even where a file names them
    rows = json.loads(links(1)['stdout']) + [{'ifname': 'enp170s0f0np0', 'mtu': 1500, 'linkinfo': {'info_kind': 'veth'}}]
    joined = net.with_ipoib_modes(net.interfaces(rows), net.ipoib_modes(MODES_GREP))
    assert [joined[name]['mode'] for name in ('ibp24s0', 'ibp64s0', 'eth0', 'enp170s0f0np0')] == [
        'datagram', 'connected', None, None]
    # the file wins over ip's info_data; a missing file leaves ip's mode and no reason
    joined = net.with_ipoib_modes(table, {'ibp64s0': 'connected'})
    assert (joined['ibp24s0']['mode'], joined['ibp24s0']['mode_unread']) == ('datagram', None)
    assert joined['ibp64s0']['mode'] == 'connected' and table['ibp64s0']['mode'] == 'datagram'  # a new table
    # the lab: veths stand in for the IPoIB rails, named by ib_info; hwsim's tree holds their mode files
    veths = [dict(row, linkinfo={'info_kind': 'veth'}) for row in json.loads(links(1)['stdout'])]
    joined = net.with_ipoib_modes(net.interfaces(veths), {'ibp24s0': 'datagram'}, ['ibp24s0', 'ibp64s0'], '/run/hwsim/sys/')
    assert joined['ibp24s0']['mode'] == 'datagram' and joined['ibp64s0']['mode'] is None
    assert joined['ibp64s0']['mode_unread'] == 'no /run/hwsim/sys/class/net/ibp64s0/mode'
    assert joined['eth0']['mode'] is None and joined['eth0']['mode_unread'] is None
    not_read = net.with_ipoib_modes(net.interfaces(veths), None, ['ibp24s0'])
    assert not_read['ibp24s0']['mode_unread'] == 'the IPoIB modes were not read (grep /sys/class/net/*/mode)'
    assert net.with_ipoib_modes(None, {}) is None


def test_datagram_expected_and_connected_found_fails_naming_both():
    expected = dict(IB, ipoib_mode='datagram')
    observations = ring_with_modes(['gpu01', 'gpu02'])
    observations['gpu02']['ipoib_modes'] = grep_modes(('datagram', 'connected'))
    results = net.decide_net(pinged(observations, expected), expected)
    bad = _by(results['gpu02'], 'net.mtu')['mlx5_3:1 ibp64s0']
    assert not bad['passed'] and (bad['measured'], bad['threshold'], bad['unit']) == ('connected', 'datagram', None)
    assert bad['message'].startswith('ibp64s0 (rail 1) is in IPoIB connected mode, expected datagram (verify_ib_ipoib_mode); '
                                     'set ipoib_mode: datagram and run the fabric stage (role ipoib); ping -M do -s 4064 ')
    assert 'MTU 4092 holds on rail 1 (IPoIB connected)' in bad['message']
    # one result per rail: the other rail and the other node pass
    assert len([r for r in results['gpu02'] if r['check'] == 'net.mtu']) == 2
    assert _by(results['gpu02'], 'net.mtu')['mlx5_0:1 ibp24s0']['passed']
    assert all(r['passed'] for r in results['gpu01'])


def test_connected_expected_and_datagram_found_points_at_enhanced_ipoib():
    expected = dict(IB, ipoib_mode='connected')
    results = net.decide_net(pinged(ring_with_modes(['gpu01', 'gpu02']), expected), expected)
    bad = _by(results['gpu01'], 'net.mtu')['mlx5_0:1 ibp24s0']
    assert not bad['passed'] and 'is in IPoIB datagram mode, expected connected' in bad['message']
    assert 'enhanced IPoIB, datagram only' in bad['message']


def test_the_matching_mode_passes_and_an_empty_expectation_judges_none():
    for wanted, found in (('datagram', ('datagram', 'datagram')), ('', ('connected', 'connected'))):
        expected = dict(IB, ipoib_mode=wanted)
        results = net.decide_net(pinged(ring_with_modes(['gpu01', 'gpu02'], found), expected), expected)
        mtu = _by(results['gpu01'], 'net.mtu')
        assert all(r['passed'] and r['measured'] == 4092 and not r.get('skipped') for r in mtu.values()), wanted
        assert 'not judged' not in mtu['mlx5_0:1 ibp24s0']['message']
        # the message is the one it was before the mode was judged
        assert mtu['mlx5_0:1 ibp24s0']['message'] == ('ping -M do -s 4064 -I ibp24s0 10.100.0.2 (gpu02 ibp24s0) passes: '
                                                      'MTU 4092 holds on rail 0 (IPoIB %s)' % found[0])


def test_a_mode_that_could_not_be_read_is_said_not_failed():
    expected = dict(IB, ipoib_mode='datagram', sysfs_root='/run/hwsim/sys')
    # the lab's veths: ip -d shows no mode; one rail's file is missing in hwsim's tree
    observations = ring_with_modes(['gpu01', 'gpu02'], ('datagram', None), root='/run/hwsim/sys')
    for index, observed in enumerate(observations.values()):
        rows = json.loads(links(index + 1)['stdout'])
        observed['links'] = dict(links(index + 1), stdout=json.dumps([dict(row, linkinfo={'info_kind': 'veth'}) for row in rows]))
    results = net.decide_net(pinged(observations, expected), expected)
    mtu = _by(results['gpu01'], 'net.mtu')
    assert all(r['passed'] for r in mtu.values())
    assert mtu['mlx5_0:1 ibp24s0']['message'].endswith('holds on rail 0 (IPoIB datagram)')
    assert mtu['mlx5_3:1 ibp64s0']['message'].endswith(
        'holds on rail 1 (IPoIB); IPoIB mode not judged: no /run/hwsim/sys/class/net/ibp64s0/mode')
    # a failing MTU stays the failure; the mode found wrong is added to it
    observations['gpu01']['links'] = links(1, mtu=2044)
    observations['gpu01']['ipoib_modes'] = grep_modes(('connected', 'datagram'))
    bad = _by(net.decide_net(pinged(observations, expected), expected)['gpu01'], 'net.mtu')['mlx5_0:1 ibp24s0']
    assert not bad['passed'] and (bad['measured'], bad['threshold']) == (2044, 4092)
    assert 'has MTU 2044, expected at least 4092' in bad['message']
    assert bad['message'].endswith('; ibp24s0 (rail 0) is in IPoIB connected mode, expected datagram (verify_ib_ipoib_mode); '
                                   'set ipoib_mode: datagram and run the fabric stage (role ipoib)')


def test_a_rail_in_the_wrong_mode_fails_even_where_its_mtu_is_not_checked():
    expected = dict(IB, ipoib_mode='datagram')
    observations = ring_with_modes(['gpu01', 'gpu02'], ('connected', 'datagram'))
    observations['gpu01']['links'] = links(1, addressed=(False, True))
    bad = _by(net.decide_net(pinged(observations, expected), expected)['gpu01'], 'net.mtu')['mlx5_0:1 ibp24s0']
    assert not bad['passed'] and 'skipped' not in bad
    assert bad['message'].endswith('(role ipoib); its MTU was not checked: ibp24s0 has no IPv4 address')


def test_roce_rails_have_no_mode():
    expected = dict(ROCE, ipoib_mode='datagram')
    observations = ring(['gpu01', 'gpu02'], link_layer='Ethernet')
    for observed in observations.values():
        observed['ipoib_modes'] = modes('/sys/class/net/enp24s0np0/mode:connected\n')
    results = net.decide_net(pinged(observations, expected), expected)
    assert all(r['passed'] and 'mode' not in r['message'] for r in results['gpu01'])


def test_the_mode_through_the_gate():
    # verify_ib's outcome (the filter the role calls) -> the gate's plan -> results.json: the rail's node is drained
    expected = dict(IB, ipoib_mode='datagram', ports=True, uniform=False, rate_gbps=0, firmware='', ofed='')
    observations = ring_with_modes(['gpu01', 'gpu02'])
    observations['gpu02']['ipoib_modes'] = grep_modes(('connected', 'datagram'))
    vf.verify_mtu_plan(observations, expected)
    outcome = vf.verify_ib(pinged(observations, expected), expected)
    slurm = [{'NodeName': node, 'State': 'IDLE'} for node in ('gpu01', 'gpu02')]
    plan = document.plan_gate({'verify_ib_outcome': outcome}, slurm, {'nodes': ['gpu01', 'gpu02'], 'mode': 'drain'})
    assert sorted(node for node, action in plan['actions'].items() if action['action'] == 'drain') == ['gpu02']
    assert plan['actions']['gpu02']['reason'] == 'aicluster: net.mtu mlx5_0:1 ibp24s0'
    doc = document.document(plan, {'started': 's', 'finished': 'f', 'inventory': 'inventories/example',
                                   'collection_version': '0.1.0', 'mode': 'drain'})
    assert doc['summary']['verdict'] == 'FAIL' and doc['nodes']['gpu01']['passed']
    failed = [r for r in doc['nodes']['gpu02']['results'] if not r['passed']]
    assert [(r['check'], r['measured'], r['threshold']) for r in failed] == [('net.mtu', 'connected', 'datagram')]
