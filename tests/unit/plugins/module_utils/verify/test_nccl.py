# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""verify/nccl.py: nccl-tests on each node alone (busbw, #wrong, slow node) and across nodes."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from _paths import own_fixture, real_fixture

from ansible_collections.aicluster.infra.plugins.module_utils.nccl_tests import parse_nccl_tests
from ansible_collections.aicluster.infra.plugins.module_utils.verify import nccl

H100_PASS = 'nccl-tests/nccl-tests-2.13-8xh100-allreduce-pass-handmade.txt'


def _failed(results):
    return [r for r in results if not r['passed']]


def _by_check(results, check):
    return [r for r in results if r['check'] == check]


def _one_row(busbw):
    return {'rows': [{'size': 8 << 30, 'oop_busbw': busbw, 'ip_busbw': busbw, 'oop_wrong': 0, 'ip_wrong': 0}], 'errors': []}


def test_nccl_real_a100_legacy_and_handmade_h100():
    legacy = parse_nccl_tests(real_fixture('nccl-tests/superbench-allreduce-8xa100-40gb-legacy-error-col.txt'))
    busbw, wrong, errors = nccl.measure(legacy, 1 << 30)
    assert busbw > 100 and wrong == 0 and errors == []
    threshold = nccl.threshold({'a100': 200, 'h100': 400}, 'NVIDIA A100-SXM4-40GB')
    assert threshold == 200.0
    results = nccl.evaluate_nccl(legacy, threshold, busbw, {'model': 'A100'})
    assert not _failed(results), results
    wrong = parse_nccl_tests(own_fixture('nccl-tests/nccl-tests-2.13-8xh100-allreduce-wrong-handmade.txt'))
    bad = _failed(nccl.evaluate_nccl(wrong, 400.0))
    assert 'nccl.wrong' in [r['check'] for r in bad]
    failure = parse_nccl_tests(own_fixture('nccl-tests/nccl-tests-2.13-8xh100-allreduce-ncclfailure-handmade.txt'))
    bad = _by_check(nccl.evaluate_nccl(failure, 400.0), 'nccl.wrong')[0]
    assert not bad['passed'] and 'failed' in bad['message']


def test_threshold_by_model_key_and_form_factor():
    """Substring matching gave an H100 PCIe/NVL and an A100 PCIe the SXM bar; the key is the exact name and device id."""
    table = {'h100-sxm': 330, 'a100': 200}
    assert nccl.threshold(table, 'NVIDIA H100 80GB HBM3', override=350) == 350.0
    assert nccl.threshold(table, {'name': 'NVIDIA H100 80GB HBM3', 'pci_device_id': '0x233010DE'}) == 330.0
    assert nccl.threshold(table, 'NVIDIA H100 NVL') is None
    assert nccl.threshold(table, {'name': 'NVIDIA H100 PCIe', 'pci_device_id': '0x233110DE'}) is None
    # a name that the device id contradicts is no known model
    assert nccl.threshold(table, {'name': 'NVIDIA H100 80GB HBM3', 'pci_device_id': '0x233110DE'}) is None
    # a family key means its SXM parts only
    assert nccl.threshold(table, 'NVIDIA A100-SXM4-80GB') == 200.0 and nccl.threshold(table, 'NVIDIA A100 80GB PCIe') is None
    assert nccl.threshold({'h100-nvl': 150}, 'NVIDIA H100 NVL') == 150.0
    assert nccl.threshold(table, 'NVIDIA B200') is None


def test_parse_says_why_when_there_is_nothing_to_parse():
    assert nccl.parse('') == {'rows': [], 'errors': ['all_reduce_perf printed nothing']}
    assert nccl.parse(own_fixture(H100_PASS))['rows']


def test_nccl_slow_node_against_the_median():
    values = [470.0, 468.0, 300.0]
    median = nccl.median(values)
    assert median == 468.0 and nccl.median([None, 2.0, 4.0]) == 3.0 and nccl.median([]) is None
    slow = nccl.evaluate_nccl(_one_row(300.0), 250.0, median, {'slow_fraction': 0.1})
    assert [r['check'] for r in _failed(slow)] == ['nccl.slow_node']
    assert _by_check(slow, 'nccl.slow_node')[0]['threshold'] == 421.2
    assert not _failed(nccl.evaluate_nccl(_one_row(470.0), 250.0, median))
    # no fleet median: no slow-node check
    assert not _by_check(nccl.evaluate_nccl(_one_row(300.0), 250.0), 'nccl.slow_node')


def test_nccl_unknown_model_without_threshold_fails_asking_for_one():
    result = _by_check(nccl.evaluate_nccl({'rows': [], 'errors': []}, None, None, {'model': 'NVIDIA B200'}), 'nccl.busbw')[0]
    assert not result['passed'] and 'verify_nccl_busbw_min_gbs' in result['message'] and 'NVIDIA B200' in result['message']


def test_nccl_real_multi_node_two_h100_nodes():
    parsed = parse_nccl_tests(real_fixture('nccl-tests/gcp-a3mega-2node-16xh100-tcpxo-allreduce.txt'))
    out = nccl.evaluate_multi_node(parsed, 100.0, ['a', 'b'], launched={'nodes': ['a', 'b'], 'ranks': 16})
    assert out['summary']['busbw'] > 0
    assert [(r['check'], r['subject']) for r in out['cluster']] == [('nccl.multi_node_launch', 'cluster'),
                                                                    ('nccl.multi_node_busbw', 'cluster')]
    # the capture's hosts are not a and b: the launch check names the nodes without a rank
    assert 'no rank on a, b' in out['cluster'][0]['message']


def _independent_runs(hosts, busbw=459.8):
    """What srun -N<n> --ntasks-per-node=1 all_reduce_perf -g 8 prints without PMI: one 8-rank table per node."""
    text = ''
    for host in hosts:
        text += '# nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1\n'
        text += '# Using devices\n'
        for rank in range(8):
            text += '#  Rank %2d Group  0 Pid  %d on %s device %2d [0x%02x] NVIDIA H100 80GB HBM3\n' % (rank, 4000 + rank, host, rank, rank)
        text += ('#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n'
                 '  8589934592    2147483648     float     sum      -1  37364.1  229.90  %.2f      0  37360.2  229.92  %.2f      0\n'
                 % (busbw, busbw))
    return text


def test_nccl_multi_node_without_pmi_is_not_one_job():
    """Field condition: srun without --mpi=pmix runs one nccl-tests job per node; the concatenated output read as
    one run passed at 459.8 GB/s on the old code. Now nccl.multi_node_launch and the busbw result fail, at cluster
    level (no node is drained for it)."""
    nodes = ['gpu01', 'gpu02', 'gpu03']
    run = {'rc': 0, 'stdout': _independent_runs(nodes), 'stderr': ''}
    out = nccl.decide_nccl_multi_node(run, {'participants': nodes, 'busbw_table': {'h100': 300}, 'node_ranks': 8,
                                            'model': 'NVIDIA H100 80GB HBM3'})
    launch, busbw = out['cluster']
    assert launch['check'] == 'nccl.multi_node_launch' and not launch['passed']
    assert '3 separate runs' in launch['message'] and '--mpi=pmix' in launch['message']
    assert launch['measured'] == '24 ranks on 3 hosts' and launch['threshold'] == '24 ranks on 3 hosts'
    assert not busbw['passed'] and busbw['measured'] == 459.8 and 'nccl.multi_node_launch' in busbw['message']
    assert out['fleet'] == {} and 'nodes' not in out  # nobody is drained for it (and no bisection: not a node fault)


def test_nccl_multi_node_one_job_passes_and_socket_fallback_fails():
    nodes = ['gpu01', 'gpu02']
    text = _independent_runs(['gpu01'], 355.8).replace('nGpus 8', 'nGpus 1')
    ranks = ''.join('#  Rank %2d Group  0 Pid  %d on %s device %2d [0x%02x] NVIDIA H100 80GB HBM3\n'
                    % (8 * n + r, 4000 + r, host, r, r) for n, host in enumerate(nodes) for r in range(8))
    text = text.replace(''.join(line + '\n' for line in text.splitlines() if line.startswith('#  Rank')), ranks)
    expected = {'participants': nodes, 'busbw_table': {'h100': 300}, 'node_ranks': 8, 'model': 'NVIDIA H100 80GB HBM3'}
    out = nccl.decide_nccl_multi_node({'rc': 0, 'stdout': 'gpu01:1:1 [0] NCCL INFO Using network IB\n' + text}, expected)
    assert [r['passed'] for r in out['cluster']] == [True, True]
    assert out['cluster'][0]['message'] == 'one job of 16 ranks on 2 hosts, network IB'
    out = nccl.decide_nccl_multi_node({'rc': 0, 'stdout': 'gpu01:1:1 [0] NCCL INFO Using network Socket\n' + text}, expected)
    assert [r['passed'] for r in out['cluster']] == [False, False]
    assert 'fell back to sockets' in out['cluster'][0]['message']


def test_nccl_multi_node_bar_from_the_network():
    """8 x 400 Gb/s HCAs: 0.75 x 400 GB/s = 300; 4 x 200 Gb/s: 75 (the model table would say 300)."""
    def outcome(hcas, rate):
        info = {'hcas': [{'name': 'mlx5_%d' % n, 'ports': [{'port': 1, 'rate_gbps': rate}]} for n in range(hcas)]}
        return {'raw': {'a': {'ib_info': info}, 'b': {'ib_info': info}},
                'checked': {'a': ['mlx5_%d' % n for n in range(hcas)], 'b': ['mlx5_%d' % n for n in range(hcas)]}}
    assert nccl.network_limit(outcome(8, 400.0), ['a', 'b'], 0.75) == 300.0
    assert nccl.network_limit(outcome(4, 200.0), ['a', 'b'], 0.75) == 75.0
    assert nccl.network_limit(None, ['a', 'b'], 0.75) is None and nccl.network_limit(outcome(8, 400.0), ['a'], 0) is None
    run = {'rc': 0, 'stdout': _independent_runs(['a'], 100.0)}
    out = nccl.decide_nccl_multi_node(run, {'participants': ['a', 'b'], 'busbw_table': {'h100': 300}, 'model': 'NVIDIA H100',
                                            'network_fraction': 0.75, 'ib_outcome': outcome(4, 200.0)})
    assert out['summary']['threshold'] == 75.0 and out['cluster'][-1]['passed']
    out = nccl.decide_nccl_multi_node(run, {'participants': ['a', 'b'], 'busbw_table': {'h100': 300}, 'model': 'NVIDIA H100',
                                            'network_fraction': 0.75, 'ib_outcome': outcome(4, 200.0), 'busbw_min_gbs': 120})
    assert out['summary']['threshold'] == 120.0


def test_nccl_multi_node_launch_error_comes_first():
    out = nccl.evaluate_multi_node({}, 300.0, ['a', 'b'], 1 << 24,
                                   'srun exited 1: srun: error: Unable to allocate resources: Requested node configuration is not available')
    result = out['cluster'][0]
    assert result['passed'] is False and result['measured'] is None and result['subject'] == 'cluster'
    assert 'Requested node configuration is not available' in result['message']
    assert out['summary']['errors'][0].startswith('srun exited 1: ')
    assert nccl.evaluate_multi_node({}, 300.0, ['a'], 1 << 24)['summary']['errors'] == []


def _h100_info():
    return {'changed': False, 'gpus': [{'index': 0, 'name': 'NVIDIA H100 80GB HBM3'}], 'count': 1}


def test_decide_nccl_parses_each_nodes_output_once(monkeypatch):
    calls = []

    def counting(text):
        calls.append(text)
        return parse_nccl_tests(text)
    monkeypatch.setattr(nccl, 'parse_nccl_tests', counting)
    text = own_fixture(H100_PASS)
    observations = dict(('gpu%02d' % n, {'gpu_info': _h100_info(), 'run': {'rc': 0, 'stdout': text, 'stderr': ''}})
                        for n in (1, 2, 3))
    out = nccl.decide_nccl(observations, {'busbw_table': {'h100': 1}, 'slow_node': True, 'slow_fraction': 0.1})
    assert len(calls) == len(observations)
    assert set(out) == {'nodes', 'raw', 'single_node', 'fleet_median', 'model'}
    assert out['model'] == 'NVIDIA H100 80GB HBM3' and out['fleet_median'] == out['raw']['gpu01']['busbw']
    assert all(not _failed(results) for results in out['nodes'].values())
    assert sorted(r['check'] for r in out['nodes']['gpu01']) == ['nccl.busbw', 'nccl.slow_node', 'nccl.wrong']


def test_decide_nccl_threshold_of_each_node():
    """A node's own busbw threshold (verify_nccl_busbw_min_gbs in its host_vars, e.g. a GPU model the table lacks)
    counts though another host decides for the fleet."""
    text = own_fixture(H100_PASS)
    b200 = {'changed': False, 'gpus': [{'index': 0, 'name': 'NVIDIA B200', 'pci_device_id': '2901'}], 'count': 1}
    observations = {'gpu01': {'gpu_info': _h100_info(), 'run': {'rc': 0, 'stdout': text}},
                    'gpu02': {'gpu_info': b200, 'run': {'rc': 0, 'stdout': text}}}
    fleet = {'busbw_table': {'h100': 1}, 'busbw_min_gbs': 0, 'slow_node': False}
    out = nccl.decide_nccl(observations, dict(fleet, nodes={'gpu01': fleet, 'gpu02': dict(fleet, busbw_min_gbs=1)}))
    assert not _failed(out['nodes']['gpu02']) and not _failed(out['nodes']['gpu01'])
    assert 'no busbw threshold' in _failed(nccl.decide_nccl(observations, fleet)['nodes']['gpu02'])[0]['message']


def test_decide_nccl_failed_gpu_info_and_skipped_run():
    observations = {'a': {'gpu_info': {'failed': True, 'msg': 'no driver'}},
                    'b': {'gpu_info': _h100_info(), 'run': {'changed': False, 'skipped': True}},
                    'c': {'gpu_info': _h100_info(), 'run': {'rc': 0, 'stdout': own_fixture(H100_PASS)}}}
    out = nccl.decide_nccl(observations, {'busbw_table': {'h100': 1}, 'slow_node': False})
    assert [(r['check'], r['passed']) for r in out['nodes']['a']] == [('nccl.wrong', False)]
    assert 'no driver' in out['nodes']['a'][0]['message']
    assert out['nodes']['b'] == [] and out['raw']['b'] == {}
    assert sorted(out['single_node']) == ['c'] and not _by_check(out['nodes']['c'], 'nccl.slow_node')


def test_decide_nccl_multi_node_skipped_and_run():
    out = nccl.decide_nccl_multi_node({'skipped': True}, {'participants': ['a'], 'slurm_error': None})
    assert out == {'cluster': [], 'fleet': {}, 'summary': {'nodes': ['a'], 'passed': None,
                                                           'skipped': 'fewer than two nodes passed and are in service'}}
    out = nccl.decide_nccl_multi_node({'skipped': True}, {'participants': [], 'slurm_error': 'scontrol: timeout'})
    assert out['summary']['skipped'] == 'Slurm unreachable: scontrol: timeout'
    run = {'rc': 1, 'stdout': '', 'stderr': 'srun: error: Unable to allocate resources\n'}
    out = nccl.decide_nccl_multi_node(run, {'participants': ['a', 'b'], 'busbw_table': {'h100': 300},
                                            'model': 'NVIDIA H100 80GB HBM3'})
    assert [r['check'] for r in out['cluster']] == ['nccl.multi_node_busbw'] and out['summary']['threshold'] == 300.0
    assert out['summary']['errors'][0] == 'srun exited 1: srun: error: Unable to allocate resources'


def test_a_failed_run_is_bisected_and_only_a_localised_node_is_blamed():
    """A slow HCA on gpu03 drags a 4-node run below the bar: halves, then pairs with a good node, blame gpu03 only."""
    nodes = ['gpu01', 'gpu02', 'gpu03', 'gpu04']

    def srun(members):
        text = _independent_runs(['x'], 250.0 if 'gpu03' in members else 360.0).replace('nGpus 8', 'nGpus 1')
        ranks = ''.join('#  Rank %2d Group  0 Pid  %d on %s device %2d [0x%02x] NVIDIA H100 80GB HBM3\n'
                        % (8 * n + r, 4000 + r, host, r, r) for n, host in enumerate(members) for r in range(8))
        text = text.replace(''.join(line + '\n' for line in text.splitlines() if line.startswith('#  Rank')), ranks)
        return {'rc': 0, 'stdout': text, 'nodes': list(members)}
    expected = {'participants': nodes, 'busbw_table': {'h100': 300}, 'node_ranks': 8, 'model': 'NVIDIA H100 80GB HBM3',
                'bisect': True, 'bisect_runs': []}
    reruns = []
    for dummy in range(6):
        out = nccl.decide_nccl_multi_node(srun(nodes), dict(expected, bisect_runs=reruns))
        state = out['summary']['bisect']
        if state['done']:
            break
        reruns += [srun(members) for members in state['pending']]
    assert state['culprits'] == ['gpu03'] and list(out['fleet']) == ['gpu03']
    blame = out['fleet']['gpu03'][0]
    assert blame['check'] == 'nccl.multi_node_busbw' and blame['subject'] == 'bisection' and not blame['passed']
    assert 'localised to gpu03' in out['cluster'][-1]['message'] and not out['cluster'][-1]['passed']
    # without bisection (or a launch problem) nobody is blamed
    assert nccl.decide_nccl_multi_node(srun(nodes), dict(expected, bisect=False))['fleet'] == {}
