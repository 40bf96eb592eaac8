# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/verify/burnin.py: a node's burn-in samples judged over the whole run.

The samples are ours (the schema is the collection's own, docs/burnin.md); the figures in them are those of real
hardware: an H100's T.Limit headroom as nvidia-smi -q prints it (gpud-q-8xh100-535.183.01: 50 C idle), NDR ports
at 400 Gb/s, a Dell R740's inlet and PSU sensors as ipmitool sdr elist names them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json

from ansible_collections.aicluster.infra.plugins.module_utils.verify import burnin
from ansible_collections.aicluster.infra.plugins.module_utils.verify.checks import CHECKS, of_area

INTERVAL = 60


def _sample(seq, node='gpu01', gpus=2, headroom=20, ports=1, **changes):
    sample = {
        'schema': burnin.SCHEMA, 'run': 'r1', 'node': node, 'seq': seq, 'elapsed_s': seq * INTERVAL,
        'time': '2026-12-07T10:%02d:00Z' % seq,
        'gpus': [{'index': index, 'uuid': 'GPU-%d' % index, 'temp_c': 80 - headroom, 'temp_headroom_c': headroom,
                  'power_w': 690.0, 'power_limit_w': 700.0, 'sm_clock_mhz': 1980, 'clock_events': ['sw_power_cap'],
                  'ecc_uncorrected': 0, 'remap_pending': False, 'remap_failure': False} for index in range(gpus)],
        'ports': [{'name': 'mlx5_%d:1' % index, 'link_layer': 'InfiniBand', 'state': 'Active', 'rate_gbps': 400,
                   'counters': {'SymbolErrorCounter': 0, 'LinkDownedCounter': 0, 'PortRcvErrors': 0}} for index in range(ports)],
        'xids': [],
        'bmc': {'valid': True, 'inlet_c': 24.0, 'exhaust_c': 45.0, 'power_w': 5200.0,
                'psus': [{'name': 'PS Redundancy', 'status': 'ok', 'text': 'Fully Redundant'}],
                'fans': [{'name': 'Fan1', 'status': 'ok', 'reading': 9000.0}]},
        'loads': [], 'errors': [],
    }
    sample.update(changes)
    return sample


def _run(count=6, **kwargs):
    return [_sample(seq, **kwargs) for seq in range(1, count + 1)]


def _by(results, check):
    return [result for result in results if result['check'] == check]


def _failed(results):
    return [result for result in results if not result['passed']]


def test_every_burnin_result_is_a_known_burnin_check_and_a_healthy_run_passes_them_all():
    results = burnin.judge_node(_run(), {'interval_s': INTERVAL})
    assert _failed(results) == []
    made = set(result['check'] for result in results)
    assert made == set(of_area('burnin')) - {'burnin.load', 'burnin.roce_drops'}
    assert all(CHECKS[check].area == 'burnin' for check in made)
    thermal = _by(results, 'burnin.gpu_thermal')
    assert [result['subject'] for result in thermal] == ['GPU 0', 'GPU 1'] and thermal[0]['measured'] == 20
    assert 'headroom to its max operating temperature 20 C' in thermal[0]['message']
    assert burnin.fatal(results) == []


def test_read_samples_skips_blank_lines_counts_a_resent_line_once_and_names_bad_lines():
    lines = [json.dumps(_sample(2)), '', json.dumps(_sample(1)), json.dumps(_sample(2)), '{not json',
             json.dumps({'schema': 'other'}), json.dumps(_sample(3, node='gpu02')), json.dumps(dict(_sample(4), seq='4'))]
    samples, problems = burnin.read_samples('\n'.join(lines) + '\n', node='gpu01')
    assert [sample['seq'] for sample in samples] == [1, 2]
    assert [problem.split(':')[0] for problem in problems] == ['line 5', 'line 6', 'line 7', 'line 8']
    assert 'sample of node gpu02 in the file of gpu01' in problems[2]


def test_thermal_runaway_fails_that_gpu_from_the_sample_it_passed_its_limit_with_time_and_temperature():
    samples = _run()
    for sample in samples[3:]:
        sample['gpus'][1].update(temp_headroom_c=-3, temp_c=91)
    results = burnin.judge_node(samples, {'interval_s': INTERVAL})
    failed = _failed(results)
    assert [(result['check'], result['subject']) for result in failed] == [('burnin.gpu_thermal', 'GPU 1')]
    assert failed[0]['measured'] == -3 and failed[0]['first_seen'] == '2026-12-07T10:04:00Z'
    assert 'headroom to its max operating temperature -3 C 2026-12-07T10:04:00Z (limit 0 C)' in failed[0]['message']
    assert burnin.fatal(results) == []  # hot is not fatal: the node goes on until the end (or its slowdown)


def test_a_thermal_slowdown_fails_even_with_headroom_and_the_power_cap_alone_does_not():
    samples = _run()
    samples[2]['gpus'][0]['clock_events'] = ['hw_thermal_slowdown', 'sw_power_cap']
    failed = _failed(burnin.judge_node(samples, {'interval_s': INTERVAL}))
    assert [(result['subject'], result['first_seen']) for result in failed] == [('GPU 0', '2026-12-07T10:03:00Z')]
    assert 'GPU 0 hw_thermal_slowdown from 2026-12-07T10:03:00Z (1 samples)' in failed[0]['message']


def test_without_t_limit_an_absolute_limit_judges_and_without_one_the_temperature_is_reported_only():
    samples = _run()
    for sample in samples:
        for gpu in sample['gpus']:
            gpu.update(temp_headroom_c=None, temp_c=88)
    assert _failed(burnin.judge_node(samples, {'interval_s': INTERVAL})) == []
    assert 'not judged' in _by(burnin.judge_node(samples, {'interval_s': INTERVAL}), 'burnin.gpu_thermal')[0]['message']
    failed = _failed(burnin.judge_node(samples, {'interval_s': INTERVAL, 'gpu_temp_max_c': 85}))
    assert [result['measured'] for result in failed] == [88, 88]


def test_a_gpu_lost_under_load_is_fatal_and_named():
    samples = _run()
    samples[4]['gpus'] = samples[4]['gpus'][:1]
    results = burnin.judge_node(samples, {'interval_s': INTERVAL})
    fatal = burnin.fatal(results)
    assert [(result['check'], result['subject'], result['first_seen']) for result in fatal] == [
        ('burnin.gpu_present', 'GPU 1', '2026-12-07T10:05:00Z')]
    assert '1 of 2 GPUs answered' in fatal[0]['message']


def test_a_sample_whose_gpu_read_failed_is_no_gpu_lost_and_no_read_at_all_fails():
    samples = _run()
    samples[0]['gpus'] = None
    samples[3]['gpus'] = None
    samples[3]['errors'] = ['nvidia-smi --query-gpu: no --query-gpu csv rows found']
    assert _by(burnin.judge_node(samples, {'interval_s': INTERVAL}), 'burnin.gpu_present')[0]['passed']
    for sample in samples:
        sample['gpus'] = None
    result = _by(burnin.judge_node(samples, {'interval_s': INTERVAL}), 'burnin.gpu_present')[0]
    assert not result['passed'] and 'no csv rows' not in result['message'] and 'no --query-gpu csv rows' in result['message']


def test_xids_by_the_catalog_a_fatal_one_stops_the_node_and_an_application_one_is_only_named():
    samples = _run()
    event = {'code': 79, 'pci': '0000:1b:00', 'time': '2026-12-07T10:02:30+00:00', 'text': 'GPU has fallen off the bus.'}
    app = {'code': 13, 'pci': '0000:1b:00', 'time': '2026-12-07T10:01:30+00:00', 'text': 'Graphics Exception'}
    for sample in samples[1:]:
        sample['xids'] = [app]
    for sample in samples[2:]:
        sample['xids'] = [app, event]
    results = burnin.judge_node(samples, {'interval_s': INTERVAL})
    fatal = burnin.fatal(results)
    assert [(result['check'], result['measured'], result['first_seen']) for result in fatal] == [
        ('burnin.xid', 79, '2026-12-07T10:03:00Z')]
    samples_app = _run()
    samples_app[3]['xids'] = [app]
    passed = _by(burnin.judge_node(samples_app, {'interval_s': INTERVAL}), 'burnin.xid')
    assert passed[0]['passed'] and 'Xid 13' in passed[0]['message']
    assert not _by(burnin.judge_node(samples_app, {'interval_s': INTERVAL, 'fatal_xids': [13]}), 'burnin.xid')[0]['passed']


def test_new_uncorrectable_ecc_and_a_pending_remap_fail_the_gpu():
    samples = _run()
    for sample in samples:
        sample['gpus'][0]['ecc_uncorrected'] = 2  # counted before the run: not judged
    for sample in samples[3:]:
        sample['gpus'][0]['ecc_uncorrected'] = 3
        sample['gpus'][1]['remap_pending'] = True
    failed = _failed(burnin.judge_node(samples, {'interval_s': INTERVAL}))
    assert [(result['subject'], result['measured'], result['first_seen']) for result in failed] == [
        ('GPU 0', 1, '2026-12-07T10:04:00Z'), ('GPU 1', 0, '2026-12-07T10:04:00Z')]
    assert 'remap pending' in failed[1]['message']


def test_a_port_down_is_fatal_and_a_link_downed_rise_fails_with_the_first_sample():
    samples = _run(ports=2)
    samples[3]['ports'][0]['state'] = 'Down'
    for sample in samples[3:]:
        sample['ports'][0]['counters']['LinkDownedCounter'] = 1
        sample['ports'][1]['counters']['LinkDownedCounter'] = 1
    results = burnin.judge_node(samples, {'interval_s': INTERVAL})
    failed = _by(_failed(results), 'burnin.link_errors')
    assert [(result['subject'], result.get('fatal', False)) for result in failed] == [('mlx5_0:1', True), ('mlx5_1:1', False)]
    assert 'LinkDownedCounter +1' in failed[0]['message'] and 'first 2026-12-07T10:04:00Z' in failed[1]['message']


def test_switch_relay_errors_of_multicast_do_not_fail_a_link_as_in_verify():
    samples = _run()
    for sample in samples:
        sample['ports'][0]['counters']['PortRcvSwitchRelayErrors'] = 6 * sample['seq']
    assert _by(burnin.judge_node(samples, {'interval_s': INTERVAL}), 'burnin.link_errors')[0]['passed']


def test_symbol_errors_are_judged_as_a_ratio_of_the_bits_the_port_carried():
    samples = _run(count=61)  # an hour at 400 Gb/s: 1.44e15 bits
    samples[-1]['ports'][0]['counters']['SymbolErrorCounter'] = 1000  # 6.9e-13
    ber = _by(burnin.judge_node(samples, {'interval_s': INTERVAL}), 'burnin.ber')[0]
    assert ber['passed'] and abs(ber['measured'] - 1000 / (400e9 * 3600)) < 1e-20
    samples[-1]['ports'][0]['counters']['SymbolErrorCounter'] = 2000  # 1.4e-12
    ber = _by(burnin.judge_node(samples, {'interval_s': INTERVAL}), 'burnin.ber')[0]
    assert not ber['passed'] and ber['threshold'] == 1e-12 and ber['first_seen'] == samples[-1]['time']
    samples[-1]['ports'][0]['counters']['SymbolErrorCounter'] = 65535  # perfquery's 16-bit counter, saturated
    assert 'saturated' in _by(burnin.judge_node(samples, {'interval_s': INTERVAL}), 'burnin.ber')[0]['message']


def test_a_counter_that_falls_was_reset_and_counts_again_from_zero():
    assert burnin.rise([5, 7, 2, 4, None, 4]) == 2 + 2 + 2
    assert burnin.rise([]) == 0 and burnin.rise([None, 3]) == 0


def test_roce_drops_fail_and_pauses_do_not():
    samples = _run()
    for sample in samples:
        sample['ports'][0].update(link_layer='Ethernet', name='mlx5_0:1', counters={
            'rx_prio3_pause': sample['seq'] * 100, 'rx_prio3_discards': 0, 'rx_discards_phy': 0, 'rx_symbol_err_phy': 0})
    assert _by(burnin.judge_node(samples, {'interval_s': INTERVAL}), 'burnin.roce_drops')[0]['passed']
    samples[5]['ports'][0]['counters']['rx_prio3_discards'] = 12
    failed = _by(_failed(burnin.judge_node(samples, {'interval_s': INTERVAL})), 'burnin.roce_drops')
    assert failed[0]['measured'] == 12 and 'rx_prio3_discards +12' in failed[0]['message']


def test_bmc_a_failed_psu_and_a_hot_inlet_fail_and_a_bmc_that_does_not_measure_is_not_judged():
    samples = _run()
    samples[2]['bmc']['psus'][0].update(status='cr', text='Redundancy Lost')
    for sample in samples[4:]:
        sample['bmc']['inlet_c'] = 38.0
    failed = _failed(burnin.judge_node(samples, {'interval_s': INTERVAL}))
    assert [(result['subject'], result['first_seen']) for result in failed] == [
        ('PS Redundancy', '2026-12-07T10:03:00Z'), ('inlet', '2026-12-07T10:05:00Z')]
    quiet = _run()
    for sample in quiet:
        sample['bmc'] = {'valid': False, 'inlet_c': 0.0}  # OpenBMC's deactivated power reading: no figure
    bmc = _by(burnin.judge_node(quiet, {'interval_s': INTERVAL}), 'burnin.bmc')
    assert bmc[0]['passed'] and 'not judged' in bmc[0]['message'] and '6 samples without a BMC read' in bmc[0]['message']


def test_a_discrete_psu_sensor_that_asserts_a_failure_with_status_ok_fails():
    """ipmitool prints a discrete sensor's status ok whatever state it asserts: the states decide (ipmi_sel.h)."""
    samples = _run()
    samples[3]['bmc']['psus'] = [{'name': 'PS2 Status', 'status': 'ok', 'text': 'Presence detected, Power Supply AC lost'},
                                 {'name': 'PS Redundancy', 'status': 'ok', 'text': 'Redundancy Lost'}]
    failed = _failed(burnin.judge_node(samples, {'interval_s': INTERVAL}))
    assert [(result['subject'], result['first_seen']) for result in failed] == [
        ('PS Redundancy', '2026-12-07T10:04:00Z'), ('PS2 Status', '2026-12-07T10:04:00Z')]
    assert 'Power Supply AC lost' in failed[1]['message']
    for text in ('Presence detected', 'Fully Redundant', 'Predictive Failure Deasserted'):
        fine = _run()
        fine[2]['bmc']['psus'] = [{'name': 'PS1 Status', 'status': 'ok', 'text': text}]
        assert _failed(burnin.judge_node(fine, {'interval_s': INTERVAL})) == [], text


def test_missing_samples_and_a_sampler_that_stopped_early_fail_burnin_samples():
    samples = _run(count=10)
    del samples[3:6]
    result = _by(burnin.judge_node(samples, {'interval_s': INTERVAL}), 'burnin.samples')[0]
    assert not result['passed'] and result['measured'] == 4 * INTERVAL and result['threshold'] == 2 * INTERVAL
    early = _by(burnin.judge_node(_run(count=5), {'interval_s': INTERVAL}, planned_s=600), 'burnin.samples')[0]
    assert not early['passed'] and early['measured'] == 300
    none = burnin.judge_node([], {'interval_s': INTERVAL}, problems=['line 1: not JSON'])
    assert len(none) == 1 and not none[0]['passed'] and 'not JSON' in none[0]['message']


def _loads(figures, kind='gpu_burn', unit='Gflop/s'):
    """node -> samples whose load entries carry the given figures per iteration."""
    out = {}
    for node, values in figures.items():
        samples = []
        for iteration, value in enumerate(values, 1):
            load = {'kind': kind, 'iteration': iteration, 'figure': value, 'unit': unit, 'ok': value is not None}
            samples.append(_sample(iteration, node=node, loads=[load]))
        out[node] = samples
    return out


def test_load_a_node_that_slows_at_one_iteration_fails_at_that_iteration():
    figures = {'gpu01': [15000, 15000, 15000], 'gpu02': [15100, 15050, 15000], 'gpu03': [14900, 15000, 15000],
               'gpu04': [15000, 15000, 12000]}
    results = burnin.judge_fleet(_loads(figures), {'interval_s': INTERVAL})
    load = dict((node, _by(found, 'burnin.load')[0]) for node, found in results.items())
    assert [node for node, result in sorted(load.items()) if not result['passed']] == ['gpu04']
    assert load['gpu04']['first_seen'] == '2026-12-07T10:03:00Z' and load['gpu04']['threshold'] == 13500
    assert 'worst iteration 3, 12000 Gflop/s = 80% of the fleet median 15000' in load['gpu04']['message']


def test_load_a_failed_iteration_fails_and_two_nodes_are_not_judged_against_a_median():
    samples = _loads({'gpu01': [15000, None], 'gpu02': [15000, 15000]})
    results = burnin.load_results(dict((node, burnin.load_figures(found)) for node, found in samples.items()), {})
    assert not results['gpu01'][0]['passed'] and 'iteration 2 failed' in results['gpu01'][0]['message']
    assert results['gpu02'][0]['passed'] and 'fewer than 3 nodes' in results['gpu02'][0]['message']


def test_judging_does_not_change_the_samples():
    samples = _run()
    before = copy.deepcopy(samples)
    burnin.judge_fleet({'gpu01': samples}, {'interval_s': INTERVAL})
    assert samples == before
