# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""fabric.switch_errors: switch-port counters across the tests; an ISL names both ends and drains nobody, a host
link blames the host's HCA."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from _paths import own_fixture, real_fixture

from ansible_collections.aicluster.infra.plugins.module_utils.verify import results as vr
from ansible_collections.aicluster.infra.plugins.module_utils.verify.switch_errors import decide_switch_errors

CLEAN = 'ibqueryerrors/guilbaults-issue48-clean-node-G-summary-only.txt'
SX6036 = 'ibqueryerrors/linux-rdma-ml-sx6036-mlx4-saturated-xmitwait.txt'
LEAF_SPINE = 'ibqueryerrors/ibqueryerrors-rdma-core-50-ndr-r-details-64bit-leaf-spine-handmade.txt'
LEAF, SPINE, GPU02 = '0xfc6a1c0300e0a100', '0xfc6a1c0300e0b200', '0x946dae0300cde72c'
IDENTITY = {'gpu01': {'mlx5_0': ['0x946dae0300cde700']}, 'gpu02': {'mlx5_0': [GPU02]}}


def _expected(**more):
    return dict({'identity': IDENTITY, 'error_max': {}, 'active': True, 'checked': ['gpu01', 'gpu02']}, **more)


def _valid(outcome):
    for results in list(outcome['nodes'].values()) + [outcome['cluster']]:
        for result in results:
            assert vr._problems_in_result('x', result) == []


def test_isl_names_both_ends_and_host_link_blames_the_host():
    outcome = decide_switch_errors({'reads': [{'subnet': 'ib0', 'before': real_fixture(CLEAN), 'after': own_fixture(LEAF_SPINE)}]},
                                   _expected())
    _valid(outcome)
    isl = [r for r in outcome['cluster'] if not r['passed']]
    assert len(isl) == 1   # the link seen from both ends is one result
    assert isl[0]['subject'] == 'link %s port 33 - %s port 1' % (LEAF, SPINE)
    assert isl[0]['ends'] == ['leaf-rail0 (%s) port 33' % LEAF, 'spine-01 (%s) port 1' % SPINE]
    assert isl[0]['measured'] == {isl[0]['ends'][0]: {'SymbolErrorCounter': 1250, 'LinkErrorRecoveryCounter': 1},
                                  isl[0]['ends'][1]: {'PortRcvErrors': 17, 'PortRcvRemotePhysicalErrors': 2}}
    assert 'no node is drained' in isl[0]['message']
    host = outcome['nodes']['gpu02']
    assert [r['passed'] for r in host] == [False]
    assert host[0]['subject'] == 'mlx5_0 (%s port 5)' % LEAF and host[0]['measured'] == {'PortXmitDiscards': 3}
    assert outcome['nodes']['gpu01'][0]['passed'] is True
    assert [(r['switch_guid'], r['port']) for r in outcome['summary']['rising']] == [(LEAF, 5), (LEAF, 33), (SPINE, 1)]


def test_host_link_found_through_the_fabric_peers():
    linked = ('Link info:      7   5[  ] ==( 4X  106.25 Gbps Active/  LinkUp)==>  '
              '0x0000000000000001      1    1[  ] "x" ( )\n#')
    after = own_fixture(LEAF_SPINE).replace('Link info:      7   5[  ]', linked)
    peers = {'gpu01': {'mlx5_0': {'switch_guid': LEAF, 'switch_port': 5}}}
    outcome = decide_switch_errors({'before': real_fixture(CLEAN), 'after': after}, _expected(peers=peers))
    assert outcome['nodes']['gpu01'][0]['passed'] is False and outcome['nodes']['gpu01'][0]['peer'] == 'leaf-rail0 (%s) port 5' % LEAF


def test_real_sx6036_saturated_counters_fail_without_a_visible_rise():
    capture = real_fixture(SX6036)
    outcome = decide_switch_errors({'before': capture, 'after': capture}, _expected())
    failed = [r for r in outcome['cluster'] if not r['passed']]
    # ports 5 and 7 hold SymbolErrorCounter 65535 in the 32-bit form: the 16-bit counter is pegged
    assert [r['subject'] for r in failed] == ['switch 0x0002c903006e29b0 port 5', 'switch 0x0002c903006e29b0 port 7']
    assert all(r['measured'] == ['SymbolErrorCounter'] and 'saturated' in r['message'] for r in failed)
    assert 'an unknown peer (run ibqueryerrors with -r to name it)' in failed[0]['message']


def test_relay_errors_are_not_judged_and_resets_read_as_rise():
    capture = real_fixture(SX6036)
    before = capture.replace('[SymbolErrorCounter == 65535] ', '')
    after = before.replace('port 6: [LinkDownedCounter == 9] [PortRcvSwitchRelayErrors == 2285]',
                           'port 6: [LinkDownedCounter == 2] [PortRcvSwitchRelayErrors == 9999]')
    outcome = decide_switch_errors({'before': before, 'after': after}, _expected())
    failed = [r for r in outcome['cluster'] if not r['passed']]
    assert len(failed) == 1 and failed[0]['measured'] == {'LinkDownedCounter': 2}
    assert 'reset between the reads: LinkDownedCounter' in failed[0]['message']


def test_quiet_counters_without_traffic_are_not_checked_and_a_missing_read_is_said():
    clean = real_fixture(CLEAN)
    outcome = decide_switch_errors({'reads': [{'subnet': 'ib0', 'before': clean, 'after': clean},
                                              {'subnet': 'ib1', 'before': clean,
                                               'after': {'failed': True, 'rc': 255, 'stderr': 'discover failed'}}]},
                                   _expected(active=False))
    assert [r.get('skipped') for r in outcome['cluster']] == ['not tested', 'a read is missing']
    assert outcome['summary']['errors'] == ['ibqueryerrors after the tests (ib1) failed: discover failed']
    assert all(r['skipped'] == 'not tested' for results in outcome['nodes'].values() for r in results)


def test_allowed_rise():
    outcome = decide_switch_errors({'before': real_fixture(CLEAN), 'after': own_fixture(LEAF_SPINE)},
                                   _expected(error_max={'PortXmitDiscards': 5}))
    assert outcome['nodes']['gpu02'][0]['passed'] is True
