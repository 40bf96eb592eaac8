# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""perftest_run: one node's servers and clients of a round in one call; a client retried until its server listens."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import threading

from _paths import own_fixture

from ansible_collections.aicluster.infra.plugins.modules import perftest_run

REFUSED = own_fixture('perftest/perftest-4.5-ib_write_bw-client-connection-refused-handmade.txt')
NDR = own_fixture('perftest/perftest-4.5-ib_write_bw-ndr-cx7-report-gbits-all-sizes-client-handmade.txt')


class Clock(object):
    """A clock that advances only when the module sleeps."""

    def __init__(self):
        self.now = 0.0
        self.lock = threading.Lock()

    def time(self):
        return self.now

    def sleep(self, seconds):
        with self.lock:
            self.now += seconds


def test_run_round_retries_a_client_until_its_server_listens():
    calls = []
    refusals = {'client-a': 3}

    def runner(argv):
        calls.append(argv[0])
        if argv[0] in refusals and refusals[argv[0]] > 0:
            refusals[argv[0]] -= 1
            return 1, '', REFUSED
        return 0, NDR if argv[0].startswith('client') else '', ''
    clock = Clock()
    servers = [{'argv': ['server-x'], 'data': {'rail': 0}}]
    clients = [{'argv': ['client-a'], 'data': {'rail': 0}}, {'argv': ['client-b'], 'data': {'rail': 1}}]
    server_out, client_out = perftest_run.run_round(runner, servers, clients, 10, clock=clock.time, sleep=clock.sleep)
    assert [r['data'] for r in server_out] == [{'rail': 0}] and server_out[0]['rc'] == 0
    assert [(r['data'], r['rc'], r['attempts']) for r in client_out] == [({'rail': 0}, 0, 4), ({'rail': 1}, 0, 1)]
    assert calls.count('client-a') == 4 and calls.count('server-x') == 1


def test_run_round_gives_up_after_the_wait_and_keeps_other_failures():
    def runner(argv):
        if argv[0] == 'nobody-listens':
            return 1, '', REFUSED
        return 1, '', "Couldn't allocate MR\n"
    clock = Clock()
    dummy, client_out = perftest_run.run_round(runner, [], [{'argv': ['nobody-listens']}, {'argv': ['mr-fails']}], 2,
                                               clock=clock.time, sleep=clock.sleep)
    assert client_out[0]['rc'] == 1 and client_out[0]['attempts'] == 5  # 0, 0.5, 1.0, 1.5, 2.0 s
    assert client_out[1]['attempts'] == 1 and "Couldn't allocate MR" in client_out[1]['stderr']


def test_module_runs_every_process_once_with_c_locale(run_module):
    args = {'servers': [{'argv': ['timeout', '70', 'ib_write_bw', '-d', 'mlx5_0'], 'data': {'rail': 0}}],
            'clients': [{'argv': ['timeout', '60', 'ib_write_bw', '-d', 'mlx5_3', 'gpu03'], 'data': {'rail': 1}}]}
    result, calls = run_module(perftest_run, args, {'timeout': lambda argv: (0, NDR if argv[-1] == 'gpu03' else '', '')})
    assert 'failed' not in result and result['changed'] is False
    assert sorted(calls) == sorted([args['servers'][0]['argv'], args['clients'][0]['argv']])
    assert result['clients'][0]['stdout'] == NDR and result['clients'][0]['data'] == {'rail': 1}


def test_module_in_check_mode_runs_nothing(run_module):
    args = {'clients': [{'argv': ['ib_write_bw', 'gpu03'], 'data': {'rail': 0}}], '_ansible_check_mode': True}
    result, calls = run_module(perftest_run, args, {'ib_write_bw': (0, NDR, '')})
    assert calls == [] and result['clients'][0]['rc'] is None and result['changed'] is False


def test_module_refuses_an_argv_that_is_not_a_list(run_module):
    result, calls = run_module(perftest_run, {'clients': [{'argv': 'ib_write_bw gpu03'}]}, {})
    assert result['failed'] and 'argv' in result['msg'] and calls == []
