# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""verify/perftest.py and perftest_blame.py: pair results from client output, rounds, and which side is at fault."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys
import threading
import time

import pytest

from _paths import REPO, own_fixture, real_fixture

from ansible_collections.aicluster.infra.plugins.module_utils.perftest import parse_perftest
from ansible_collections.aicluster.infra.plugins.module_utils.verify import perftest
from ansible_collections.aicluster.infra.plugins.module_utils.verify.perftest_blame import evaluate_perftest
from ansible_collections.aicluster.infra.plugins.module_utils.verify.results import drain_reason

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))
try:
    from hwsim.testing import make_lab  # pylint: disable=wrong-import-position
except ImportError:  # pragma: no cover
    make_lab = None

NDR_WRITE_BW = 'perftest/perftest-4.5-ib_write_bw-ndr-cx7-report-gbits-all-sizes-client-handmade.txt'
EXPECTED = {'fraction': 0.9, 'bidirectional': False, 'max_latency_us': None}


def _failed(results):
    return [r for r in results if not r['passed']]


def _by_check(results, check):
    return [r for r in results if r['check'] == check]


def _spec(client='gpu01', server='gpu02', rail=0, hca='mlx5_0', line_rate=400.0):
    return {'client': client, 'server': server, 'rail': rail, 'client_hca': hca, 'server_hca': hca, 'line_rate': line_rate}


def _run(stdout, rc=0, stderr=''):
    return {'stdout': stdout, 'rc': rc, 'stderr': stderr}


def _info(names=('mlx5_0', 'mlx5_3'), rate=400):
    return {'hcas': [{'name': name, 'ports': [{'port': 1, 'state': 'Active', 'rate_gbps': rate, 'link_layer': 'InfiniBand'}]}
                     for name in names]}


@pytest.mark.parametrize('rate, data', [(400, 400.0), (200, 200.0), (100, 100.0), (56, 54.55), (40, 32.0), (None, None), (7, None)])
def test_data_rate_from_ibstat_rate(rate, data):
    assert perftest.data_rate_gbps(rate) == data


def test_endpoint_per_rail_with_roce_gid():
    info = _info(('mlx5_0', 'mlx5_1'))
    info['hcas'][1]['ports'][0].update(link_layer='Ethernet', roce_v2_gid_index=3)
    point = perftest.endpoint(info, address='10.0.0.1')
    assert point['address'] == '10.0.0.1' and point['names'] == ['mlx5_0', 'mlx5_1']
    assert [(h['rail'], h['name'], h['rate_gbps'], h['gid_index']) for h in point['hcas']] == [
        (0, 'mlx5_0', 400, None), (1, 'mlx5_1', 400, 3)]


def test_perftest_pair_from_handmade_ndr_capture():
    text = own_fixture(NDR_WRITE_BW)
    parsed = parse_perftest(text)
    pair = perftest.pair_result(_run(text), 'write_bw', _spec(), EXPECTED, 0)
    assert pair['threshold'] == 360.0 and pair['unit'] == 'Gb/s' and pair['round'] == 0
    assert pair['measured'] == max(parsed['results'], key=lambda r: r['bytes'])['bw_average']
    assert pair['passed'] is (pair['measured'] >= 360.0)
    # bidirectional bandwidth is the sum of both directions: twice the threshold
    assert perftest.pair_result(_run(text), 'write_bw', _spec(), dict(EXPECTED, bidirectional=True))['threshold'] == 720.0


def test_perftest_pair_real_loopback_in_mb_per_sec_is_converted():
    text = real_fixture('perftest/superbench-ib_write_bw-loopback-8M-interleaved.txt')
    parsed = parse_perftest(text)
    pair = perftest.pair_result(_run(text), 'write_bw', _spec('a', 'b', line_rate=200.0), EXPECTED, 0)
    row = max(parsed['results'], key=lambda r: r['bytes'])
    assert parsed['units'] != 'Gb/sec'
    # perftest's MB is 2^20 bytes (its --report_gbits usage: "MB=2^20 byte, while Gb=10^9 bits"), as its newer MiB
    assert pair['measured'] > 0 and abs(pair['measured'] - row['bw_average'] * 1048576 * 8 / 1e9) < 0.01


@pytest.mark.parametrize('units', ['MB/sec', 'MiB/sec'])
def test_perftest_pair_mebibytes_either_way(units, monkeypatch):
    parsed = {'units': units, 'results': [{'bytes': 8388608, 'bw_average': 46000.0}], 'errors': []}
    monkeypatch.setattr(perftest, 'parse_perftest', lambda text: parsed)
    pair = perftest.pair_result(_run('(any output)'), 'write_bw', _spec('a', 'b'), EXPECTED, 0)
    assert pair['measured'] == 385.88 and pair['passed']  # 46,000 MiB/s is 385.88 Gb/s, not 368


def test_perftest_connection_refused_fails_with_the_tools_words():
    text = own_fixture('perftest/perftest-4.5-ib_write_bw-client-connection-refused-handmade.txt')
    pair = perftest.pair_result(_run(text, rc=1), 'write_bw', _spec('a', 'b'), EXPECTED, 0)
    assert pair['passed'] is False and pair['measured'] is None and pair['errors']


def test_perftest_timed_out_and_empty_output():
    pair = perftest.pair_result(_run('', rc=124, stderr=''), 'write_bw', _spec(), EXPECTED)
    assert pair['passed'] is False and pair['errors'][0] == 'timed out'
    pair = perftest.pair_result(_run(''), 'write_bw', _spec(), EXPECTED)
    assert pair['passed'] is False and pair['errors'] == ['ib_write_bw printed nothing']


def _pair(client, server, rail, measured, threshold=360.0):
    return {'test': 'write_bw', 'client': client, 'server': server, 'rail': rail, 'hca': 'mlx5_%d' % rail,
            'peer_hca': 'mlx5_%d' % rail, 'measured': measured, 'threshold': threshold, 'unit': 'Gb/s',
            'passed': measured is not None and measured >= threshold, 'errors': [], 'line_rate': 400.0}


def test_perftest_blames_the_node_failing_with_two_partners():
    pairs = [_pair('gpu01', 'gpu02', 1, 180.0), _pair('gpu03', 'gpu01', 1, 388.0), _pair('gpu02', 'gpu03', 1, 181.0),
             _pair('gpu01', 'gpu02', 0, 389.0), _pair('gpu03', 'gpu01', 0, 388.0)]
    nodes = dict((n, ['mlx5_0', 'mlx5_1']) for n in ('gpu01', 'gpu02', 'gpu03'))
    out = evaluate_perftest(pairs, nodes)
    assert not _failed(out['nodes']['gpu01']) and not _failed(out['nodes']['gpu03'])
    bad = _failed(out['nodes']['gpu02'])
    assert len(bad) == 1 and bad[0]['rail'] == 1 and bad[0]['partners'] == ['gpu01', 'gpu03']
    assert '180' in bad[0]['message'] and '360' in bad[0]['message']
    assert drain_reason(bad).startswith('aicluster: perftest.write_bw mlx5_1 -> gpu01 mlx5_1, gpu03 mlx5_1')
    assert 'faulty side' in _by_check(out['nodes']['gpu01'], 'perftest.write_bw')[1]['message']


def test_perftest_two_node_fleet_fails_both_when_final():
    nodes = {'a': ['mlx5_0'], 'b': ['mlx5_0']}
    out = evaluate_perftest([_pair('a', 'b', 0, 100.0)], nodes)
    assert _failed(out['nodes']['a']) and _failed(out['nodes']['b'])
    assert 'could not be re-tested' in out['nodes']['a'][0]['message']


def test_evaluate_perftest_at_2048_nodes_by_8_rails():
    """Scale smoke test: a fleet of 2,048 nodes x 8 rails, a few pairs measured (one of them slow)."""
    rails = ['mlx5_%d' % rail for rail in range(8)]
    nodes = dict(('gpu%04d' % n, rails) for n in range(2048))
    pairs = [_pair('gpu%04d' % (2 * n), 'gpu%04d' % (2 * n + 1), rail, 389.0) for n in range(8) for rail in range(8)]
    pairs.append(_pair('gpu2046', 'gpu2047', 3, 120.0))
    out = evaluate_perftest(pairs, nodes)
    # only nodes with a pair have results, one per rail measured
    assert len(out['nodes']) == 18 and all(len(out['nodes']['gpu%04d' % n]) == 8 for n in range(16))
    assert [r['subject'].split()[0] for r in _failed(out['nodes']['gpu2047'])] == ['mlx5_3']
    assert 'could not be re-tested' in out['nodes']['gpu2047'][0]['message']
    assert not _failed(out['nodes']['gpu0000'])


def test_plan_leaves_out_a_node_whose_adapters_could_not_be_read():
    observations = {'gpu01': {'ib_info': _info(), 'address': '10.0.0.1'}, 'gpu02': {'ib_info': _info()},
                    'gpu03': {'ib_info': {'failed': True, 'msg': 'no ibstat'}}}
    outcome = perftest.plan(observations, dict(EXPECTED, schedule='cover'))
    assert outcome['endpoints']['gpu03'] == {} and outcome['rails']['gpu03'] == []
    assert outcome['endpoints']['gpu02']['address'] == 'gpu02'
    assert 'gpu03' not in [node for rnd in outcome['summary']['rounds'] for pair in rnd for node in pair]
    assert outcome['tests'] == ['write_bw'] and outcome['retest'] == {'write_bw': []}
    assert outcome['summary']['pairs'] == [] and outcome['fleet'] == {}


def _round(monkeypatch, stdout_of):
    """A three-node plan, its first round's tests and every client's async result; parse_perftest counted."""
    observations = dict(('gpu%02d' % n, {'ib_info': _info()}) for n in (1, 2, 3))
    outcome = perftest.plan(observations, dict(EXPECTED, schedule='cover'))
    tests = perftest.round_tests(outcome['summary']['rounds'][0], outcome['endpoints'], 18515)
    done = [{'item': {'item': spec, 'ansible_job_id': 'j%d' % number}, 'finished': 1, 'rc': 0,
             'stdout': stdout_of(spec), 'stderr': ''} for number, spec in enumerate(tests)]
    calls = []

    def counting(text):
        calls.append(text)
        return parse_perftest(text)
    monkeypatch.setattr(perftest, 'parse_perftest', counting)
    return outcome, tests, done, calls


def test_record_round_parses_each_client_output_once(monkeypatch):
    text = own_fixture(NDR_WRITE_BW)
    outcome, tests, done, calls = _round(monkeypatch, lambda spec: text)
    assert tests and all(spec['port'] == 18515 + spec['rail'] for spec in tests)
    after = perftest.record_round(outcome, done, dict(EXPECTED, test='write_bw', round=0))
    assert len(calls) == len(done)
    assert len(after['summary']['pairs']) == len(tests) and all(p['round'] == 0 for p in after['summary']['pairs'])
    assert outcome['summary']['pairs'] == []  # the outcome handed in is left as it was
    assert set(after['fleet']) == set(spec['client'] for spec in tests) | set(spec['server'] for spec in tests)


@pytest.mark.skipif(make_lab is None, reason='lab/hwsim not importable')
def test_perftest_stand_in_hca_bw_low_between_two_lab_hosts(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=2)
    assert lab.run('gpu02', ['hwsim', 'fault', 'hca-bw-low', 'mlx5_3', '0.5'])[0] == 0
    outputs = {}

    def server():
        outputs['server'] = lab.run('gpu02', ['ib_write_bw', '-d', 'mlx5_3', '-p', '18601', '--report_gbits'])
    thread = threading.Thread(target=server)
    thread.start()
    status = None
    for dummy in range(50):
        status, out, err = lab.run('gpu01', ['ib_write_bw', '-d', 'mlx5_3', '-p', '18601', '--report_gbits', '127.0.0.1'])
        if status == 0:
            break
        time.sleep(0.1)
    thread.join(30)
    assert status == 0, err
    spec = _spec('gpu01', 'gpu02', 1, 'mlx5_3', perftest.data_rate_gbps(400))
    pair = perftest.pair_result(_run(out, status, err), 'write_bw', spec, EXPECTED, 0)
    assert pair['passed'] is False and pair['measured'] < 360.0


# ---------------------------------------------------------------------------
# issue 11: what NVIDIA measures (rate from the inventory or the fleet, MiB, NUMA, tclass, GPUDirect)
# ---------------------------------------------------------------------------

NDR_MB_SEC = 'perftest/perftest-3.4-ib_write_bw-ndr-cx7-mbsec-client-handmade.txt'


def _gbits(value, size=65536):
    """A minimal --report_gbits client report at ``value`` Gb/s."""
    return ('                    RDMA_Write BW Test\n'
            ' #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n'
            ' %d      100000           0.00               %.2f\t\t   0.185000\n' % (size, value))


def test_perftest_mb_per_sec_is_mebibytes_handmade():
    """43,500 MB/sec is 364.9 Gb/s (2^20 bytes): a pass at 360; read as 10^6 bytes it was 348 and failed."""
    text = own_fixture(NDR_MB_SEC)
    assert parse_perftest(text)['units'] == 'MB/sec'
    pair = perftest.pair_result(_run(text), 'write_bw', _spec(), EXPECTED, 0)
    assert pair["measured"] == 364.91 and pair['threshold'] == 360.0 and pair['passed'] is True


def _fleet(rates, **extra):
    """Observations of nodes gpu01.. with one HCA each at the given ibstat rates."""
    return dict(('gpu%02d' % (n + 1), dict({'ib_info': _info(('mlx5_0',), rate)}, **extra)) for n, rate in enumerate(rates))


def test_degraded_pair_fails_against_the_inventory_rate():
    """A pair over a 1X link (ibstat 100) at 97 Gb/s: judged against 0.9 x 400 from the inventory, not 0.9 x its own 100."""
    outcome = perftest.plan(_fleet([400, 100]), dict(EXPECTED, rate_gbps=400))
    assert outcome['summary']['line_rate_gbps'] == 400.0 and outcome['summary']['line_rate_source'] == 'inventory'
    spec = perftest.round_tests([['gpu01', 'gpu02']], outcome['endpoints'], 18515)[0]
    assert spec['line_rate'] == 400.0 and spec['negotiated'] == 100.0
    pair = perftest.pair_result(_run(_gbits(97.05)), 'write_bw', spec, EXPECTED, 0)
    assert pair['threshold'] == 360.0 and pair['passed'] is False and pair['negotiated'] == 100.0


@pytest.mark.parametrize('rates, expected_rate', [
    ([400, 400, 400, 100], 400.0),   # the most common rate
    ([200, 200, 400, 400], 400.0),   # a tie: the highest
    ([100, 100, 100, 400], 100.0),   # a fleet of 1X-or-EDR ports is judged as such
], ids=['majority', 'tie-highest', 'majority-low'])
def test_line_rate_from_the_fleet_without_an_inventory_rate(rates, expected_rate):
    outcome = perftest.plan(_fleet(rates), dict(EXPECTED, rate_gbps=0))
    assert outcome['summary']['line_rate_gbps'] == expected_rate and outcome['summary']['line_rate_source'] == 'fleet'
    specs = perftest.round_tests(outcome['summary']['rounds'][0], outcome['endpoints'], 18515)
    assert specs and all(spec['line_rate'] == expected_rate for spec in specs)


def test_degraded_pair_fails_against_the_fleet_rate():
    outcome = perftest.plan(_fleet([400, 100, 400, 400]), EXPECTED)
    spec = [s for s in perftest.round_tests(outcome['summary']['rounds'][0], outcome['endpoints'], 18515) if s['client'] == 'gpu01'][0]
    assert spec['server'] == 'gpu02'
    assert perftest.pair_result(_run(_gbits(97.05)), 'write_bw', spec, EXPECTED, 0)['passed'] is False


def test_fleet_rate_per_rail_storage_and_gpu_fabric_apart():
    """Storage NICs at 200G beside GPU-fabric HCAs at 400G: each rail is judged against its own fleet rate (the roce
    gate fixture drained a node whose 200G storage NICs were judged against 400)."""
    def info():
        both = _info(('mlx5_0', 'mlx5_1'), 400)
        both['hcas'][1]['ports'][0]['rate_gbps'] = 200
        return both
    outcome = perftest.plan(dict(('gpu%02d' % n, {'ib_info': info()}) for n in (1, 2, 3)), dict(EXPECTED, rate_gbps=0))
    specs = perftest.round_tests(outcome['summary']['rounds'][0], outcome['endpoints'], 18515)
    assert sorted(set((spec['client_hca'], spec['line_rate']) for spec in specs)) == [('mlx5_0', 400.0), ('mlx5_1', 200.0)]
    spec = [s for s in specs if s['client_hca'] == 'mlx5_1'][0]
    assert perftest.pair_result(_run(_gbits(190.0)), 'write_bw', spec, EXPECTED, 0)['passed'] is True


def test_numa_nodes_from_sysfs_grep():
    text = ('/sys/class/infiniband/mlx5_0/device/numa_node:0\n/sys/class/infiniband/mlx5_3/device/numa_node:1\n'
            '/sys/class/infiniband/mlx5_4/device/numa_node:-1\n')
    assert perftest.numa_nodes(text) == {'mlx5_0': 0, 'mlx5_3': 1}
    assert perftest.numa_nodes('') == {} and perftest.numa_nodes(None) == {}


@pytest.mark.parametrize('numa, numactl, prefix, why', [
    ('/sys/class/infiniband/mlx5_0/device/numa_node:1\n', True,
     ['numactl', '--cpunodebind=1', '--membind=1'], 'numa node 1'),
    ('/sys/class/infiniband/mlx5_0/device/numa_node:-1\n', True, [], 'not pinned: NUMA node of mlx5_0 unknown'),
    ('/sys/class/infiniband/mlx5_0/device/numa_node:1\n', False, [], 'not pinned: numactl absent'),
], ids=['pinned', 'numa-unknown', 'no-numactl'])
def test_tests_pinned_to_the_hca_numa_node(numa, numactl, prefix, why):
    outcome = perftest.plan(_fleet([400, 400], numa=numa, numactl=numactl), EXPECTED)
    spec = perftest.round_tests([['gpu01', 'gpu02']], outcome['endpoints'], 18515)[0]
    assert spec['client_prefix'] == prefix and spec['server_prefix'] == prefix
    pair = perftest.pair_result(_run(_gbits(390.0)), 'write_bw', spec, EXPECTED, 0)
    assert pair['client_pinning'] == why and pair['server_pinning'] == why


def _roce(names=('mlx5_0', 'mlx5_1')):
    info = _info(names)
    info['hcas'][1]['ports'][0].update(link_layer='Ethernet', roce_v2_gid_index=3)
    return info


def test_roce_tests_carry_the_traffic_class():
    observations = {'a': {'ib_info': _roce()}, 'b': {'ib_info': _roce()}}
    outcome = perftest.plan(observations, dict(EXPECTED, hcas=['mlx5_0', 'mlx5_1'], tclass=106))
    specs = perftest.round_tests([['a', 'b']], outcome['endpoints'], 18515)
    by_rail = dict((spec['rail'], spec) for spec in specs)
    assert by_rail[0]['client_args'] == [] and by_rail[0]['tclass'] is None  # InfiniBand: no tclass
    assert by_rail[1]['client_args'] == ['-x', '3', '--tclass=106'] and by_rail[1]['server_args'] == ['-x', '3', '--tclass=106']


def _gpus(*nearest):
    return {'gpus': [{'index': index, 'nearest_nic': nic} for index, nic in enumerate(nearest)]}


def test_nearest_gpu_per_hca():
    assert perftest.nearest_gpus(_gpus('mlx5_0', 'mlx5_0', 'mlx5_3', None)) == {'mlx5_0': 0, 'mlx5_3': 2}
    assert perftest.nearest_gpus({'failed': True}) == {} and perftest.nearest_gpus(None) == {}


def test_gpudirect_pass_uses_the_gpu_nearest_each_hca():
    observations = {'a': {'ib_info': _info(), 'gpu_info': _gpus('mlx5_3', 'mlx5_0')},
                    'b': {'ib_info': _info(), 'gpu_info': _gpus('mlx5_0')},
                    'c': {'ib_info': _info()}}
    outcome = perftest.plan(observations, dict(EXPECTED, gpudirect_bw_enabled=True))
    assert outcome['tests'] == ['write_bw', 'gpudirect_bw']
    specs = perftest.round_tests([['a', 'b']], outcome['endpoints'], 18515, test='gpudirect_bw')
    # rail 1 (mlx5_3): b has no GPU nearest it, so only rail 0 runs
    assert [(s['rail'], s['client_args'], s['server_args']) for s in specs] == [(0, ['--use_cuda=1'], ['--use_cuda=0'])]
    assert perftest.round_tests([['a', 'c']], outcome['endpoints'], 18515, test='gpudirect_bw') == []
    # the host-memory test of the same round has no --use_cuda
    assert all(s['client_args'] == [] for s in perftest.round_tests([['a', 'b']], outcome['endpoints'], 18515))
    # nodes without GPUs (or the pass turned off): no GPUDirect test planned
    assert perftest.plan({'c': observations['c']}, dict(EXPECTED, gpudirect_bw_enabled=True))['tests'] == ['write_bw']
    assert perftest.plan(observations, dict(EXPECTED, gpudirect_bw_enabled=False))['tests'] == ['write_bw']


def test_broken_gpudirect_fails_while_host_memory_passes():
    """Same pair, same threshold: host memory at 390 passes, --use_cuda at 120 fails as perftest.gpudirect_bw."""
    nodes = ['a', 'b', 'c']
    observations = dict((n, {'ib_info': _info(('mlx5_0',)), 'gpu_info': _gpus('mlx5_0')}) for n in nodes)
    expected = dict(EXPECTED, gpudirect_bw_enabled=True, rate_gbps=400)
    outcome = perftest.plan(observations, expected)
    for test, slow in (('write_bw', None), ('gpudirect_bw', 'b')):
        for index, pairs in enumerate(outcome['summary']['rounds']):
            specs = perftest.round_tests(pairs, outcome['endpoints'], 18515, test=test)
            done = [{'item': {'item': s}, 'finished': 1, 'rc': 0, 'stderr': '',
                     'stdout': _gbits(120.0 if slow in (s['client'], s['server']) else 390.0)} for s in specs]
            outcome = perftest.record_round(outcome, done, dict(expected, test=test, round=index))
        while outcome['retest'][test]:
            specs = perftest.round_tests(outcome['retest'][test], outcome['endpoints'], 18515, test=test)
            done = [{'item': {'item': s}, 'finished': 1, 'rc': 0, 'stderr': '',
                     'stdout': _gbits(120.0 if slow in (s['client'], s['server']) else 390.0)} for s in specs]
            outcome = perftest.record_round(outcome, done, dict(expected, test=test, round='retest-0'))
    failing = dict((node, [r['check'] for r in results if not r['passed']]) for node, results in outcome['fleet'].items())
    assert failing == {'a': [], 'b': ['perftest.gpudirect_bw'], 'c': []}
    gdr = [p for p in outcome['summary']['pairs'] if p['test'] == 'gpudirect_bw']
    assert gdr and all(p['threshold'] == 360.0 for p in gdr) and all('client_gpu' in p for p in gdr)


def test_round_commands_one_per_side_with_numa_tclass_and_options():
    numa = '/sys/class/infiniband/mlx5_1/device/numa_node:1\n'
    observations = {'a': {'ib_info': _roce(), 'numa': numa, 'numactl': True}, 'b': {'ib_info': _roce(), 'numa': numa, 'numactl': True}}
    outcome = perftest.plan(observations, dict(EXPECTED, hcas=['mlx5_0', 'mlx5_1'], tclass=106, size=65536, qps=2, duration_s=30,
                                               bidirectional=True, timeout_s=60, server_wait_s=10))
    assert outcome['options'] == {'size': 65536, 'qps': 2, 'duration_s': 30, 'bidirectional': True, 'timeout_s': 60, 'server_wait_s': 10}
    specs = perftest.round_tests([['a', 'b']], outcome['endpoints'], 18515, test='write_bw', options=outcome['options'])
    rail1 = [s for s in specs if s['rail'] == 1][0]
    common = ['--report_gbits', '-F', '-s', '65536', '-q', '2', '-D', '30', '-b']
    assert rail1['server_cmd']['argv'] == (['timeout', '--kill-after=5', '70', 'numactl', '--cpunodebind=1', '--membind=1',
                                            'ib_write_bw', '-d', 'mlx5_1', '-p', '18516'] + common + ['-x', '3', '--tclass=106'])
    assert rail1['client_cmd']['argv'] == (['timeout', '--kill-after=5', '60', 'numactl', '--cpunodebind=1', '--membind=1',
                                            'ib_write_bw', '-d', 'mlx5_1', '-p', '18516'] + common + ['-x', '3', '--tclass=106', 'b'])
    rail0 = [s for s in specs if s['rail'] == 0][0]
    assert rail0['client_cmd']['argv'][:4] == ['timeout', '--kill-after=5', '60', 'ib_write_bw']  # NUMA node unknown: not pinned
    assert rail1['client_cmd']['data']['client_hca'] == 'mlx5_1' and 'client_cmd' not in rail1['client_cmd']['data']
    lat = perftest.round_tests([['a', 'b']], outcome['endpoints'], 18515, test='write_lat', options=outcome['options'])
    assert lat[0]['client_cmd']['argv'][3:] == ['ib_write_lat', '-d', 'mlx5_0', '-p', '18515', '--report_gbits', '-F', 'b']


def test_record_round_from_one_perftest_run_per_node():
    """Each node's perftest_run result (clients and servers, data = the spec): one pair per client; a failing client
    carries its server's error lines."""
    observations = dict(('gpu%02d' % n, {'ib_info': _info()}) for n in (1, 2))
    expected = dict(EXPECTED, rate_gbps=400)
    outcome = perftest.plan(observations, expected)
    specs = perftest.round_tests(outcome['summary']['rounds'][0], outcome['endpoints'], 18515, test='write_bw', options=outcome['options'])
    by_rail = dict((s['rail'], s) for s in specs)
    done = [{'finished': 1, 'clients': [{'data': by_rail[0]['client_cmd']['data'], 'rc': 0, 'stdout': _gbits(390.0), 'stderr': ''},
                                        {'data': by_rail[1]['client_cmd']['data'], 'rc': 1, 'stdout': '',
                                         'stderr': ' Failed to exchange data between server and clients\n'}],
             'servers': []},
            {'finished': 1, 'clients': [], 'servers': [
                {'data': by_rail[0]['server_cmd']['data'], 'rc': 0, 'stdout': '', 'stderr': ''},
                {'data': by_rail[1]['server_cmd']['data'], 'rc': 1, 'stdout': '', 'stderr': "Couldn't allocate MR\n Couldn't create IB resources\n"}]}]
    after = perftest.record_round(outcome, done, dict(expected, test='write_bw', round=0))
    pairs = sorted(after['summary']['pairs'], key=lambda p: p['rail'])
    assert [(p['rail'], p['passed']) for p in pairs] == [(0, True), (1, False)]
    assert "server gpu02: Couldn't allocate MR" in pairs[1]['errors']


def test_busy_node_left_out_and_reported_not_tested():
    observations = dict(('gpu%02d' % n, {'ib_info': _info(), 'busy': n == 2}) for n in (1, 2, 3))
    outcome = perftest.plan(observations, EXPECTED)
    assert outcome['summary']['not_tested'] == ['gpu02']
    assert 'gpu02' not in [node for rnd in outcome['summary']['rounds'] for pair in rnd for node in pair]


def test_failed_client_reports_the_tools_words_first():
    stderr = own_fixture('perftest/perftest-4.5-ib_read_bw-client-mr-failed-memlock-handmade.txt')
    pair = perftest.pair_result(_run('', rc=1, stderr=stderr), 'gpudirect_bw', _spec(), EXPECTED, 0)
    assert pair['passed'] is False and pair['errors'][0] == "Couldn't allocate MR"
    assert pair['errors'][-1] == 'ib_write_bw printed nothing'


def test_gpudirect_blame_names_the_gpudirect_path():
    pairs = [dict(_pair('gpu01', 'gpu02', 0, 120.0), test='gpudirect_bw'), dict(_pair('gpu03', 'gpu02', 0, 121.0), test='gpudirect_bw'),
             dict(_pair('gpu01', 'gpu03', 0, 389.0), test='gpudirect_bw')]
    out = evaluate_perftest(pairs, dict((n, ['mlx5_0']) for n in ('gpu01', 'gpu02', 'gpu03')), 'gpudirect_bw')
    bad = _failed(out['nodes']['gpu02'])
    assert bad[0]['check'] == 'perftest.gpudirect_bw' and 'nvidia_peermem' in bad[0]['message']


def test_unattributed_pairs_fail_the_verdict_at_cluster_level():
    """Two nodes whose only pair fails: neither end can be blamed (no third node); that used to pass the verdict."""
    assert perftest.unattributed_results({'write_bw': []}) == []
    results = perftest.unattributed_results({'write_bw': [['gpu01', 'gpu02', 3]], 'read_bw': []})
    assert [(r['check'], r['subject'], r['passed']) for r in results] == [('perftest.write_bw', 'cluster', False)]
    assert 'gpu01 -> gpu02 rail 3' in results[0]['message']


def test_endpoint_leaves_the_nvswitch_bridges_out():
    """verify_perftest's default: no ib_write_bw through an HGX B200's bridge functions (VPD SW_MNG)."""
    info = _info(('mlx5_0', 'mlx5_1', 'mlx5_2'))
    info['hcas'][0]['nvswitch_bridge'] = True
    info['nvswitch_bridges'] = ['mlx5_1']
    point = perftest.endpoint(info, address='10.0.0.1')
    assert point['names'] == ['mlx5_2'] and [h['rail'] for h in point['hcas']] == [0]
