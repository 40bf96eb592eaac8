# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Link quality: error counters that rise during the tests, BER, RoCE drops; both ends named."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils.verify import decide, link

PEERS = {'gpu01': {'mlx5_0': {'switch': 'leaf-rail0', 'switch_guid': '0xfc6a1c0300010000', 'switch_port': 1,
                              'text': 'leaf-rail0 (0xfc6a1c0300010000) port 1'}}}


def _read(counters, ber=None, missing=None, layer='InfiniBand', hca='mlx5_0'):
    return {'changed': False, 'ports': [{'hca': hca, 'port': 1, 'link_layer': layer, 'counters': counters, 'ber': ber or {},
                                         'missing': missing or [], 'errors': []}]}


def _expected(**more):
    return dict({'checked': {'gpu01': ['mlx5_0']}, 'port': 1, 'peers': PEERS, 'error_max': {}, 'ber_max': 1e-12,
                 'roce_priority': 3, 'active': True, 'busy': []}, **more)


def _by_check(outcome, node='gpu01'):
    return dict((r['check'], r) for r in outcome['nodes'][node])


def test_a_rising_symbol_error_counter_fails_the_link_naming_both_ends():
    healthy_history = {'SymbolErrorCounter': 7, 'LinkDownedCounter': 1, 'LinkErrorRecoveryCounter': 0}
    outcome = decide.link({'gpu01': {'before': _read(healthy_history),
                                     'after': _read(dict(healthy_history, SymbolErrorCounter=2507, LinkErrorRecoveryCounter=2),
                                                    ber={'effective_ber': 3e-11, 'raw_ber': 4e-6})}}, _expected())
    results = _by_check(outcome)
    errors = results['ib.link_errors']
    assert errors['passed'] is False
    assert errors['subject'] == 'mlx5_0:1 (0xfc6a1c0300010000 port 1)'
    assert errors['measured'] == {'SymbolErrorCounter': 2500, 'LinkErrorRecoveryCounter': 2}
    assert 'leaf-rail0 (0xfc6a1c0300010000) port 1' in errors['message'] and 'SymbolErrorCounter +2500' in errors['message']
    ber = results['ib.ber']
    assert ber['passed'] is False and ber['measured'] == 3e-11 and ber['threshold'] == 1e-12
    assert outcome['raw']['gpu01']['mlx5_0']['after']['SymbolErrorCounter'] == 2507
    assert outcome['parameters']['ib_ber_max'] == 1e-12


def test_counts_since_the_driver_loaded_pass_when_they_do_not_rise():
    history = {'SymbolErrorCounter': 40000, 'LinkDownedCounter': 3}
    outcome = decide.link({'gpu01': {'before': _read(history), 'after': _read(history, ber={'effective_ber': 1.5e-254})}},
                          _expected())
    results = _by_check(outcome)
    assert results['ib.link_errors']['passed'] and results['ib.ber']['passed']
    assert 'none counted' in results['ib.ber']['message']


def test_allowed_rise_and_a_counter_reset_between_the_reads():
    outcome = decide.link({'gpu01': {'before': _read({'SymbolErrorCounter': 500, 'PortRcvErrors': 0}),
                                     'after': _read({'SymbolErrorCounter': 3, 'PortRcvErrors': 0})}},
                          _expected(error_max={'SymbolErrorCounter': 5}))
    result = _by_check(outcome)['ib.link_errors']
    assert result['passed'] is True and 'reset between the reads: SymbolErrorCounter' in result['message']


def test_switch_relay_errors_an_hca_counts_for_multicast_are_kept_as_evidence_not_judged():
    """The real CX-6 HDR capture (perfquery/brev-a100-cx6-hdr-plain-C-mlx5_0-lid1-port0.txt) counts
    PortRcvSwitchRelayErrors 6 with every other error counter 0: multicast, which ibqueryerrors suppresses by default."""
    before = {'SymbolErrorCounter': 0, 'PortRcvErrors': 0, 'PortRcvSwitchRelayErrors': 6}
    outcome = decide.link({'gpu01': {'before': _read(before), 'after': _read(dict(before, PortRcvSwitchRelayErrors=42))}},
                          _expected())
    result = _by_check(outcome)['ib.link_errors']
    assert result['passed'] is True and 'PortRcvSwitchRelayErrors' not in result['message']
    assert outcome['raw']['gpu01']['mlx5_0']['after']['PortRcvSwitchRelayErrors'] == 42


def test_missing_mlxlink_is_not_checked_not_failed():
    outcome = decide.link({'gpu01': {'before': _read({'SymbolErrorCounter': 0}),
                                     'after': _read({'SymbolErrorCounter': 0}, missing=['mlxlink'])}}, _expected())
    ber = _by_check(outcome)['ib.ber']
    assert ber['passed'] is True and 'mlxlink not installed' in ber['skipped']


def test_missing_perfquery_and_unread_nodes():
    outcome = decide.link({'gpu01': {'before': _read({}, missing=['perfquery']), 'after': _read({}, missing=['perfquery', 'mlxlink'])},
                           'gpu02': {'before': {'skipped': True}, 'after': {'skipped': True}}}, _expected())
    assert 'gpu02' not in outcome['nodes']
    errors = _by_check(outcome)['ib.link_errors']
    assert errors['passed'] is True and errors['skipped'] == 'perfquery not installed'


def test_no_active_test_between_the_reads_is_said():
    outcome = decide.link({'gpu01': {'before': _read({'SymbolErrorCounter': 0}), 'after': _read({'SymbolErrorCounter': 0})}},
                          _expected(active=False))
    result = _by_check(outcome)['ib.link_errors']
    assert 'no bandwidth test ran' in result['message']
    # quiet counters with no traffic prove nothing: not checked (a drain for it is kept), never a pass
    assert result['passed'] is True and result['skipped'] and result['message'].startswith('not checked')
    # a counter that rises even without traffic still fails
    outcome = decide.link({'gpu01': {'before': _read({'SymbolErrorCounter': 0}), 'after': _read({'SymbolErrorCounter': 9})}},
                          _expected(active=False))
    result = _by_check(outcome)['ib.link_errors']
    assert result['passed'] is False and 'no bandwidth test ran' in result['message']


def test_roce_drops_and_physical_errors():
    before = {'rx_prio3_discards': 14, 'out_of_sequence': 12, 'rx_symbol_err_phy': 0, 'rx_crc_errors_phy': 0, 'np_cnp_sent': 10,
              'rx_prio3_pause': 5}
    after = dict(before, rx_prio3_discards=31, out_of_sequence=52, np_cnp_sent=9000, rx_prio3_pause=8000)
    outcome = decide.link({'gpu01': {'before': _read(before, layer='Ethernet'), 'after': _read(after, layer='Ethernet')}},
                          _expected(peers={}))
    results = _by_check(outcome)
    assert results['ib.link_errors']['passed'] is True   # the physical layer is clean; pause and CNPs are normal
    drops = results['ib.roce_drops']
    assert drops['passed'] is False and drops['measured'] == {'rx_prio3_discards': 17, 'out_of_sequence': 40}
    assert drops['subject'] == 'mlx5_0:1 (switch port unknown)'
    # a buffer drop (rx_prio3_discards) is congestion, not an optic; out_of_sequence keeps the optic advice
    assert 'a marginal optic or cable' in drops['message'] and 'rx_prio3_discards: dropped for lack of buffer' in drops['message']
    only = dict(before, rx_prio3_discards=31)
    drops = _by_check(decide.link({'gpu01': {'before': _read(before, layer='Ethernet'), 'after': _read(only, layer='Ethernet')}},
                                  _expected(peers={})))['ib.roce_drops']
    assert drops['passed'] is False and 'optic' not in drops['message'] and 'PFC off on the priority' in drops['message']
    assert outcome['raw']['gpu01']['mlx5_0']['after']['np_cnp_sent'] == 9000


def test_link_check_ids_are_known_records():
    outcome = link.decide_link({'gpu01': {'before': _read({'LinkDownedCounter': 1}), 'after': _read({'LinkDownedCounter': 2})}},
                               _expected())
    assert [r['area'] for r in outcome['nodes']['gpu01']] == ['ib', 'ib']
