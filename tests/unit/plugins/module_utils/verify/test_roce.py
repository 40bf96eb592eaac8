# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""net.roce_qos and net.lossless (module_utils/verify/roce.py): the decisions on made-up reads."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.aicluster.infra.plugins.module_utils.verify import decide, perftest, roce
from ansible_collections.aicluster.infra.plugins.module_utils.verify.checks import CHECKS
from ansible_collections.aicluster.infra.plugins.module_utils.verify.gate import OUTCOME_FACTS

PORTS = [{'rail': 0, 'hca': 'mlx5_0', 'port': 1, 'netdev': 'enp24s0np0'},
         {'rail': 1, 'hca': 'mlx5_3', 'port': 1, 'netdev': 'enp64s0np0'}]
PLAN = {'problems': [], 'skip': None, 'ports': PORTS,
        'interfaces': [{'name': 'enp24s0np0', 'mtu': 9000}, {'name': 'enp64s0np0', 'mtu': 9000}],
        'qos': {'trust': 'dscp', 'dscp_map': {'26': 3, '48': 6}}}


def _qos(changes=None, failed=None):
    """module rdma_qos's result with `ports` (one run for every port; a port it could not read fails the run)."""
    entries = []
    for port in PORTS:
        entry = {'netdev': port['netdev'], 'port': 1, 'changed': bool((changes or {}).get(port['netdev'])),
                 'changes': (changes or {}).get(port['netdev'], []), 'unavailable': []}
        if failed and port['netdev'] in failed:
            entry = {'netdev': port['netdev'], 'port': 1, 'failed': True, 'msg': failed[port['netdev']]}
        entries.append(entry)
    return {'ports': entries, 'changed': any(e.get('changed') for e in entries), 'failed': bool(failed)}


def _links(mtus):
    return {'rc': 0, 'stdout': json.dumps([{'ifname': name, 'mtu': mtu, 'addr_info': []} for name, mtu in mtus.items()])}


def test_the_checks_are_recorded_and_their_outcomes_reach_the_gate():
    assert CHECKS['net.roce_qos'].area == 'net' and CHECKS['net.lossless'].area == 'net'
    assert ('roce', 'verify_ib_roce_outcome') in OUTCOME_FACTS
    assert ('lossless', 'verify_perftest_lossless_outcome') in OUTCOME_FACTS


def test_ports_as_the_roce_role_sets_them_pass():
    outcome = decide.roce_qos({'gpu01': {'plan': PLAN, 'qos': _qos(), 'links': _links({'enp24s0np0': 9000, 'enp64s0np0': 9000})}},
                              {'link_layer': 'Ethernet'})
    results = outcome['nodes']['gpu01']
    assert [r['passed'] for r in results] == [True, True]
    assert results[0]['subject'] == 'enp24s0np0 (mlx5_0:1)' and 'MTU 9000' in results[0]['message']
    assert outcome['parameters'] == {'roce_link_layer': 'Ethernet'}


def test_a_difference_fails_the_port_naming_the_setting_before_and_wanted():
    qos = _qos({'enp64s0np0': ['trust: pcp -> dscp', 'pfc: none -> 3']})
    results = roce.decide_roce_qos({'gpu01': {'plan': PLAN, 'qos': qos, 'links': _links({'enp24s0np0': 1500, 'enp64s0np0': 9000})}},
                                   {'link_layer': 'Ethernet'})['nodes']['gpu01']
    assert [r['passed'] for r in results] == [False, False]
    assert results[0]['measured'] == ['mtu: 1500 -> 9000']
    assert results[1]['measured'] == ['trust: pcp -> dscp', 'pfc: none -> 3']
    assert 'enp64s0np0 (mlx5_3 port 1, rail 1) differs' in results[1]['message'] and 'trust: pcp -> dscp' in results[1]['message']


def test_a_port_rdma_qos_cannot_read_fails_and_an_unread_mtu_is_said():
    qos = _qos(failed={'enp24s0np0': 'enp24s0np0 has no DCB support'})
    results = roce.decide_roce_qos({'gpu01': {'plan': PLAN, 'qos': qos, 'links': {'skipped': True}}},
                                   {'link_layer': 'Ethernet'})['nodes']['gpu01']
    assert not results[0]['passed'] and 'no DCB support' in results[0]['message']
    assert results[1]['passed'] and 'the MTU was not read' in results[1]['message']


def test_a_run_refused_as_a_whole_fails_every_port_with_its_message():
    qos = {'failed': True, 'msg': 'Unsupported parameters for (aicluster.infra.rdma_qos) module: ports'}
    results = roce.decide_roce_qos({'gpu01': {'plan': PLAN, 'qos': qos, 'links': {'skipped': True}}},
                                   {'link_layer': 'Ethernet'})['nodes']['gpu01']
    assert [r['passed'] for r in results] == [False, False] and all('Unsupported parameters' in r['message'] for r in results)


def test_infiniband_fleets_skipped_hosts_and_bad_variables_are_not_checked_with_the_reason():
    ib = roce.decide_roce_qos({'gpu01': {'plan': {'skipped': True}}}, {'link_layer': 'InfiniBand'})['nodes']['gpu01']
    assert ib[0]['passed'] and ib[0]['skipped'].startswith('verify_ib_link_layer is InfiniBand')
    skipped = roce.decide_roce_qos({'gpu01': {'plan': dict(PLAN, skip='GPU-fabric ports are InfiniBand', ports=[])}},
                                   {'link_layer': 'Ethernet'})['nodes']['gpu01']
    assert skipped[0]['skipped'] == 'GPU-fabric ports are InfiniBand'
    bad = roce.decide_roce_qos({'gpu01': {'plan': dict(PLAN, problems=['roce_tos must be 0-255'])}},
                               {'link_layer': 'Ethernet'})['nodes']['gpu01']
    assert 'roce_tos must be 0-255' in bad[0]['skipped']


def test_the_lossless_priority_comes_from_the_roce_plans_dscp_map():
    assert roce.lossless_priority(106, PLAN) == 3
    assert roce.lossless_priority(106, {'qos': {'trust': 'dscp', 'dscp_map': {'26': 5}}}) == 5
    assert roce.lossless_priority(106, None, 4) == 4
    assert roce.lossless_priority(106, {'qos': {'trust': 'pcp', 'dscp_map': {'26': 5}}}, 3) == 3


def _ib_info(rails=2):
    names = ['mlx5_0', 'mlx5_3'][:rails]
    netdevs = ['enp24s0np0', 'enp64s0np0']
    return {'hcas': [{'name': name, 'ports': [{'port': 1, 'link_layer': 'Ethernet', 'netdev': netdevs[i], 'rate_gbps': 400,
                                               'state': 'Active', 'roce_v2_gid_index': 3}]}
                     for i, name in enumerate(names)]}


def _perftest_outcome(nodes):
    observations = dict((node, {'ib_info': _ib_info(), 'address': node}) for node in nodes)
    return observations, perftest.plan(observations, {'link_layer': 'Ethernet', 'tclass': 106, 'duration_s': 5})


def test_one_incast_round_per_rail_the_first_node_receives():
    nodes = ['gpu01', 'gpu02', 'gpu03', 'gpu04']
    observations, outcome = _perftest_outcome(nodes)
    plan = roce.lossless_plan(observations, outcome, {'link_layer': 'Ethernet', 'nodes': nodes, 'base_port': 18515,
                                                      'tclass': 106, 'roce_plan': PLAN})
    assert plan['skip'] is None and plan['priority'] == 3
    assert [(r['rail'], r['receiver'], r['senders']) for r in plan['rounds']] == [
        (0, 'gpu01', ['gpu02', 'gpu03', 'gpu04']), (1, 'gpu01', ['gpu02', 'gpu03', 'gpu04'])]
    tests = plan['rounds'][0]['tests']
    assert [t['port'] for t in tests] == [18579, 18580, 18581]
    assert [t['port'] for t in plan['rounds'][1]['tests']] == [18582, 18583, 18584]   # every rail's at once: apart
    assert plan['tests'] == plan['rounds'][0]['tests'] + plan['rounds'][1]['tests']
    client = tests[0]['client_cmd']['argv']
    assert 'ib_write_bw' in client and '--tclass=106' in client and '-b' not in client and client[-1] == 'gpu01'
    assert '-p' in tests[0]['server_cmd']['argv'] and '18579' in tests[0]['server_cmd']['argv']
    assert plan['reads'] == {'gpu01': ['mlx5_0', 'mlx5_3'], 'gpu02': ['mlx5_0', 'mlx5_3'],
                             'gpu03': ['mlx5_0', 'mlx5_3'], 'gpu04': ['mlx5_0', 'mlx5_3']}


def test_an_incast_needs_three_nodes_and_ethernet():
    observations, outcome = _perftest_outcome(['gpu01', 'gpu02'])
    plan = roce.lossless_plan(observations, outcome, {'link_layer': 'Ethernet', 'nodes': ['gpu01', 'gpu02']})
    assert plan['skip'].startswith('an incast needs 2 or more senders')
    decided = roce.decide_lossless(plan, {}, {'nodes': ['gpu01', 'gpu02']})
    assert decided['nodes']['gpu01'][0]['skipped'] == plan['skip']
    assert roce.lossless_plan(observations, outcome, {'link_layer': 'InfiniBand'})['skip'] == roce.NOT_ETHERNET


NETDEVS = {'mlx5_0': 'enp24s0np0', 'mlx5_3': 'enp64s0np0'}


def _stats(**values):
    base = {'rx_prio3_discards': 0, 'rx_discards_phy': 0, 'rx_prio3_pause': 0, 'tx_prio3_pause': 0, 'np_cnp_sent': 0,
            'rp_cnp_handled': 0}
    base.update(values)
    return base


def _port(hca, **values):
    """One port of an ib_counters_info read (link layer Ethernet, no BER), as the module returns it."""
    return {'hca': hca, 'port': 1, 'link_layer': 'Ethernet', 'netdev': NETDEVS[hca], 'lid': None,
            'counters': _stats(**values), 'ber': {}, 'missing': [], 'errors': [], 'saturating': False}


def _reads(plan, after):
    """node -> {before, after} ib_counters_info reads: every counter 0 before, ``after[(node, netdev)]`` after."""
    out = {}
    for node, hcas in plan['reads'].items():
        out[node] = {'before': {'changed': False, 'ports': [_port(hca) for hca in hcas]},
                     'after': {'changed': False, 'ports': [_port(hca, **after.get((node, NETDEVS[hca]), {})) for hca in hcas]}}
    return out


def _runs(plan):
    return [{'clients': [{'rc': 0, 'data': spec} for spec in rnd['tests']]} for rnd in plan['rounds']]


def test_pauses_and_cnps_pass_drops_fail_naming_the_receivers_port():
    nodes = ['gpu01', 'gpu02', 'gpu03']
    observations, outcome = _perftest_outcome(nodes)
    plan = roce.lossless_plan(observations, outcome, {'link_layer': 'Ethernet', 'nodes': nodes, 'tclass': 106})
    after = {('gpu01', 'enp24s0np0'): {'tx_prio3_pause': 40, 'np_cnp_sent': 12},
             ('gpu02', 'enp24s0np0'): {'rx_prio3_pause': 20, 'rp_cnp_handled': 6},
             ('gpu01', 'enp64s0np0'): {'rx_prio3_discards': 1733, 'np_cnp_sent': 12}}
    outcome = decide.lossless(plan, _reads(plan, after), {'nodes': nodes, 'runs': _runs(plan), 'tclass': 106})
    receiver = dict((r['subject'], r) for r in outcome['nodes']['gpu01'])
    assert receiver['enp24s0np0 rail 0 (receiver)']['passed']
    assert receiver['enp24s0np0 rail 0 (receiver)']['evidence'] == {'tx_prio3_pause': 40, 'np_cnp_sent': 12}
    failed = receiver['enp64s0np0 rail 1 (receiver)']
    assert not failed['passed'] and failed['measured'] == {'rx_prio3_discards': 1733}
    assert 'gpu01 enp64s0np0, rail 1 dropped lossless traffic' in failed['message']
    assert all(r['passed'] for r in outcome['nodes']['gpu02'])
    assert outcome['parameters'] == {'lossless_priority': 3, 'lossless_tclass': 106}


def test_a_round_with_fewer_than_two_senders_that_ran_is_not_checked():
    nodes = ['gpu01', 'gpu02', 'gpu03']
    observations, outcome = _perftest_outcome(nodes)
    plan = roce.lossless_plan(observations, outcome, {'link_layer': 'Ethernet', 'nodes': nodes})
    runs = [{'clients': [{'rc': 0 if index == 0 else 1, 'stderr': 'Couldn\'t connect', 'data': spec}
                         for index, spec in enumerate(rnd['tests'])]} for rnd in plan['rounds']]
    outcome = roce.decide_lossless(plan, _reads(plan, {}), {'nodes': nodes, 'runs': runs})
    receiver = outcome['nodes']['gpu01'][0]
    assert receiver['skipped'].startswith('only 1 of 2 senders ran') and "gpu03: Couldn't connect" in receiver['skipped']
    assert outcome['nodes']['gpu02'][0]['passed'] and not outcome['nodes']['gpu02'][0].get('skipped')
    assert outcome['nodes']['gpu03'][0]['skipped'].startswith('its ib_write_bw to gpu01 did not run (rc 1)')


def test_a_port_whose_ethtool_read_failed_is_left_out_so_it_is_not_checked():
    failed = dict(_port('mlx5_0'), counters={'np_cnp_sent': 0},
                  errors=['ethtool -S enp24s0np0: rc=94: netlink error: Operation not supported'])
    assert roce._counter_reads({'ports': [failed, _port('mlx5_3', rx_prio3_discards=5)]}) == {
        'mlx5_3': _stats(rx_prio3_discards=5)}
    assert roce._counter_reads({'ports': [dict(_port('mlx5_0'), netdev=None)]}) == {}
    assert roce._counter_reads({'skipped': True}) == {}

    nodes = ['gpu01', 'gpu02', 'gpu03']
    observations, outcome = _perftest_outcome(nodes)
    plan = roce.lossless_plan(observations, outcome, {'link_layer': 'Ethernet', 'nodes': nodes})
    reads = _reads(plan, {})
    reads['gpu01']['after']['ports'][0] = dict(failed)
    result = roce.decide_lossless(plan, reads, {'nodes': nodes, 'runs': _runs(plan)})['nodes']['gpu01'][0]
    assert result['skipped'] == 'the counters of enp24s0np0 were not read before and after the incast'


def test_drops_on_another_priority_fail_too_and_say_the_class_landed_elsewhere():
    nodes = ['gpu01', 'gpu02', 'gpu03']
    observations, outcome = _perftest_outcome(nodes)
    plan = roce.lossless_plan(observations, outcome, {'link_layer': 'Ethernet', 'nodes': nodes, 'tclass': 106})
    reads = _reads(plan, {})
    reads['gpu01']['after']['ports'][0]['counters']['rx_prio0_discards'] = 90  # printed once it counted (none before)
    result = roce.decide_lossless(plan, reads, {'nodes': nodes, 'runs': _runs(plan)})['nodes']['gpu01'][0]
    assert not result['passed'] and result['measured'] == {'rx_prio0_discards': 90}
    assert 'dropped on rx_prio0_discards, not priority 3' in result['message']
