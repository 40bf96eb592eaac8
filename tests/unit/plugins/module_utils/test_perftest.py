# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/perftest.py on real loopback captures and own fixtures."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest
from hypothesis import given

from _fuzz import FUZZ_SETTINGS, texts_from, only_parse_error
from _paths import real_fixture, own_fixture, fixture_files, read_fixture

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.perftest import parse_perftest

LOOPBACK_ALL = 'perftest/superbench-ib_write_bw-loopback-interleaved-server-client.txt'
LOOPBACK_8M = 'perftest/superbench-ib_write_bw-loopback-8M-interleaved.txt'
WRITE_GBITS = 'perftest/perftest-4.5-ib_write_bw-ndr-cx7-report-gbits-all-sizes-client-handmade.txt'
READ_BIDIR = 'perftest/perftest-4.5-ib_read_bw-bidirectional-roce-cx6dx-mibsec-cpufreq-handmade.txt'
WRITE_LAT = 'perftest/perftest-4.5-ib_write_lat-ndr-cx7-all-sizes-percentiles-client-handmade.txt'
SEND_LAT_OLD = 'perftest/perftest-3.x-ib_send_lat-roce-legacy-three-columns-handmade.txt'
REFUSED = 'perftest/perftest-4.5-ib_write_bw-client-connection-refused-handmade.txt'
MR_FAILED = 'perftest/perftest-4.5-ib_read_bw-client-mr-failed-memlock-handmade.txt'

HEADERS = [
    (LOOPBACK_ALL, 'real', dict(test='RDMA_Write BW Test', kind='bw', device='ib0', link_type='IB', mtu=4096,
                                bidirectional=False, units='MB/sec', connection_type='RC')),
    (LOOPBACK_8M, 'real', dict(test='RDMA_Write BW Test', kind='bw', device='ib0', link_type='IB', mtu=4096, units='MB/sec')),
    (WRITE_GBITS, 'own', dict(test='RDMA_Write BW Test', kind='bw', device='mlx5_0', link_type='IB', mtu=4096, units='Gb/sec')),
    (READ_BIDIR, 'own', dict(test='RDMA_Read Bidirectional BW Test', kind='bw', device='mlx5_1', link_type='Ethernet',
                             mtu=1024, bidirectional=True, units='MiB/sec')),
    (WRITE_LAT, 'own', dict(test='RDMA_Write Latency Test', kind='lat', device='mlx5_0', link_type='IB', mtu=4096, units=None)),
    (SEND_LAT_OLD, 'own', dict(test='Send Latency Test', kind='lat', device='mlx5_0', link_type='Ethernet', mtu=1024)),
]


@pytest.mark.parametrize('path,kind,expected', HEADERS, ids=[h[0].split('/')[1] for h in HEADERS])
def test_test_info_header(path, kind, expected):
    result = parse_perftest(read_fixture(kind, path))
    assert {key: result[key] for key in expected} == expected
    assert result['errors'] == []
    json.dumps(result)


def test_real_interleaved_all_sizes_loopback():
    result = parse_perftest(real_fixture(LOOPBACK_ALL))
    rows = result['results']
    assert [row['bytes'] for row in rows] == [2 ** n for n in range(1, 24)]
    assert rows[0] == {'bytes': 2, 'iterations': 2000, 'bw_peak': 5.32, 'bw_average': 5.30, 'msg_rate_mpps': 2.778732}
    assert rows[11] == {'bytes': 4096, 'iterations': 2000, 'bw_peak': 10034.02, 'bw_average': 9948.41,
                        'msg_rate_mpps': 2.546793}
    assert rows[-1] == {'bytes': 8388608, 'iterations': 2000, 'bw_peak': 23240.68, 'bw_average': 23240.68,
                        'msg_rate_mpps': 0.002905}
    assert max(row['bw_average'] for row in rows) == 23277.91


def test_real_8m_client_then_server_block():
    result = parse_perftest(real_fixture(LOOPBACK_8M))
    assert result['results'] == [{'bytes': 8388608, 'iterations': 20000, 'bw_peak': 24056.74, 'bw_average': 24056.72,
                                  'msg_rate_mpps': 0.003007}]
    assert (result['transport_type'], result['number_of_qps']) == ('IB', 1)


def test_write_bw_report_gbits_rows():
    rows = parse_perftest(own_fixture(WRITE_GBITS))['results']
    assert len(rows) == 23
    assert rows[0] == {'bytes': 2, 'iterations': 5000, 'bw_peak': 0.04, 'bw_average': 0.04, 'msg_rate_mpps': 2.4625}
    assert rows[-1] == {'bytes': 8388608, 'iterations': 5000, 'bw_peak': 394.62, 'bw_average': 394.61,
                        'msg_rate_mpps': 0.00588}
    assert all(row['bw_average'] <= row['bw_peak'] for row in rows)


def test_read_bw_bidirectional_with_cpu_frequency_warning():
    result = parse_perftest(own_fixture(READ_BIDIR))
    assert result['results'] == [{'bytes': 65536, 'iterations': 5000, 'bw_peak': 0.0, 'bw_average': 22718.45,
                                  'msg_rate_mpps': 0.363495}]
    assert result['warnings'] == [
        'Conflicting CPU frequency values detected: 2000.000000 != 3400.000000. CPU Frequency is not max.']


def test_write_lat_percentile_columns():
    rows = parse_perftest(own_fixture(WRITE_LAT))['results']
    assert len(rows) == 23
    assert rows[0] == {'bytes': 2, 'iterations': 1000, 't_min': 0.99, 't_max': 6.18, 't_typical': 1.02, 't_avg': 1.03,
                       't_stdev': 0.02, 'p99': 1.07, 'p99_9': 3.24}
    assert rows[-1]['bytes'] == 8388608 and rows[-1]['t_typical'] == 688.09 and rows[-1]['p99_9'] == 1514.8


def test_legacy_latency_columns_absent_are_none():
    rows = parse_perftest(own_fixture(SEND_LAT_OLD))['results']
    assert rows == [{'bytes': 2, 'iterations': 1000, 't_min': 1.31, 't_max': 6.52, 't_typical': 1.38, 't_avg': None,
                     't_stdev': None, 'p99': None, 'p99_9': None}]


@pytest.mark.parametrize('path,errors', [
    (REFUSED, ["Couldn't connect to 10.0.0.2:18515",
               'Unable to open file descriptor for socket connection Unable to init the socket connection']),
    (MR_FAILED, ["Couldn't allocate MR", 'failed to create mr', 'Failed to create MR', "Couldn't create IB resources"]),
], ids=['connection-refused', 'mr-failed'])
def test_failed_runs_return_errors_and_no_results(path, errors):
    result = parse_perftest(own_fixture(path))
    assert result['results'] == [] and result['errors'] == errors
    assert result['test'] is None and result['kind'] is None


def test_failure_after_header_keeps_header():
    text = own_fixture(WRITE_GBITS).split(' local address')[0] + ' Failed to modify QP 297 to RTR\n Unable to Connect the HCA\'s through the link\n'
    result = parse_perftest(text)
    assert result['test'] == 'RDMA_Write BW Test' and result['results'] == []
    assert result['errors'] == ['Failed to modify QP 297 to RTR', "Unable to Connect the HCA's through the link"]


def test_crlf_and_no_trailing_newline():
    text = real_fixture(LOOPBACK_ALL)
    assert parse_perftest(text.replace('\n', '\r\n').rstrip()) == parse_perftest(text)


@pytest.mark.parametrize('text', ['', '\n \n', 'hello\n', '2 4 6\n', 'DCBX mode: OS controlled\n'],
                         ids=['empty', 'blank', 'prose', 'numbers-without-header', 'mlnx_qos'])
def test_not_perftest_raises_parse_error(text):
    with pytest.raises(ParseError):
        parse_perftest(text)


@FUZZ_SETTINGS
@given(texts_from([read_fixture(k, p) for k, p in fixture_files('perftest')]))
def test_parse_perftest_never_raises_anything_but_parse_error(text):
    result = only_parse_error(parse_perftest, text)
    if result is not None:
        json.dumps(result)
