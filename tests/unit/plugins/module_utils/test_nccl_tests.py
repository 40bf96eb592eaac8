# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for the nccl-tests output parser, on real captures and our own fixtures."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest
from hypothesis import given

from _fuzz import FUZZ_SETTINGS, texts_from, only_parse_error
from _paths import fixture_files, own_fixture, read_fixture, real_fixture

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.nccl_tests import parse_nccl_tests

EIGHT_GB = 8589934592


def _row(result, size):
    return [row for row in result['rows'] if row['size'] == size][-1]


# (kind, path, collective, rows, first size, last size, busbw oop @8GB, avg, max, ranks, first rank name, redop, wrong)
CASES = [
    ('real', 'nccl-tests/superbench-allreduce-8xa100-40gb-legacy-error-col.txt',
     None, 34, 0, EIGHT_GB, 235.26, 68.4048, 235.26, 8, 'A100-SXM4-40GB', 'sum', None),
    ('real', 'nccl-tests/superbench-allgather-8xa100-40gb-legacy-error-col.txt',
     None, 34, 0, EIGHT_GB, 223.39, 58.2651, 230.07, 8, 'A100-SXM4-40GB', None, None),
    ('real', 'nccl-tests/superbench-reducescatter-8xa100-40gb-legacy-error-col.txt',
     None, 34, 0, EIGHT_GB, 231.52, 60.168, 231.52, 8, 'A100-SXM4-40GB', 'sum', None),
    ('real', 'nccl-tests/gcp-a3mega-2node-16xh100-tcpxo-allreduce.txt',
     None, 31, 8, EIGHT_GB, 338.82, 70.742, 338.82, 16, 'NVIDIA H100 80GB HBM3', 'sum', 0),
    ('own', 'nccl-tests/nccl-tests-2.13-8xh100-allreduce-pass-handmade.txt',
     'all_reduce_perf', 14, 1048576, EIGHT_GB, 479.72, 378.296, 479.72, 8, 'NVIDIA H100 80GB HBM3', 'sum', 0),
    ('own', 'nccl-tests/nccl-tests-2.13-8xh100-allreduce-wrong-handmade.txt',
     'all_reduce_perf', 14, 1048576, EIGHT_GB, 479.72, 378.296, 479.72, 8, 'NVIDIA H100 80GB HBM3', 'sum', 2048),
]


@pytest.mark.parametrize(
    'kind, path, collective, nrows, first, last, busbw8g, avg, maxbw, nranks, gpu, redop, wrong8g',
    CASES, ids=[case[1].split('/')[-1] for case in CASES])
def test_fixtures_parse_with_values(kind, path, collective, nrows, first, last, busbw8g, avg, maxbw, nranks, gpu, redop, wrong8g):
    result = parse_nccl_tests(read_fixture(kind, path))
    assert result['collective'] == collective
    assert len(result['rows']) == nrows
    assert result['rows'][0]['size'] == first
    assert result['rows'][-1]['size'] == last
    assert _row(result, EIGHT_GB)['oop_busbw'] == pytest.approx(busbw8g)
    assert _row(result, EIGHT_GB)['oop_wrong'] == wrong8g
    assert result['avg_busbw'] == pytest.approx(avg)
    assert result['max_busbw'] == pytest.approx(maxbw)
    assert len(result['ranks']) == nranks
    assert result['ranks'][0]['name'] == gpu
    assert result['rows'][0]['redop'] == redop
    assert result['errors'] == []
    json.dumps(result)


def test_legacy_layout_details():
    result = parse_nccl_tests(real_fixture('nccl-tests/superbench-allreduce-8xa100-40gb-legacy-error-col.txt'))
    assert result['nccl_tests_version'] is None
    assert result['nccl_version'] is None
    assert result['out_of_bounds'] == 0
    assert result['ngpus'] == 8
    first = result['rows'][0]
    assert first == {
        'size': 0, 'count': 0, 'type': 'float', 'redop': 'sum', 'root': None,
        'oop_time_us': 35.20, 'oop_algbw': 0.0, 'oop_busbw': 0.0, 'oop_wrong': None,
        'ip_time_us': 34.05, 'ip_algbw': 0.0, 'ip_busbw': 0.0, 'ip_wrong': None,
    }
    assert result['ranks'][3] == {'rank': 3, 'group': None, 'pid': 112424, 'host': 'localhost',
                                  'device': 3, 'busid': '0x00', 'name': 'A100-SXM4-40GB'}
    # the NCCL INFO line inside the table is skipped, not a row
    assert _row(result, 2147483648)['oop_time_us'] == 16215.0


def test_allgather_has_no_redop_or_root_column():
    result = parse_nccl_tests(real_fixture('nccl-tests/superbench-allgather-8xa100-40gb-legacy-error-col.txt'))
    assert all(row['redop'] is None and row['root'] is None for row in result['rows'])
    assert result['rows'][5]['size'] == 32 and result['rows'][5]['count'] == 1


def test_two_node_ranks_and_groups():
    result = parse_nccl_tests(real_fixture('nccl-tests/gcp-a3mega-2node-16xh100-tcpxo-allreduce.txt'))
    assert {rank['host'] for rank in result['ranks']} == {'ztan-mig-235z', 'ztan-mig-gq73'}
    assert result['ranks'][15] == {'rank': 15, 'group': 0, 'pid': 6740, 'host': 'ztan-mig-gq73',
                                   'device': 7, 'busid': '0000:8c:00', 'name': 'NVIDIA H100 80GB HBM3'}
    assert result['rows'][0]['root'] == -1


def test_current_header_versions():
    result = parse_nccl_tests(own_fixture('nccl-tests/nccl-tests-2.13-8xh100-allreduce-pass-handmade.txt'))
    assert result['nccl_tests_version'] == '2.13.11'
    assert result['nccl_version'] == '2.21.5'
    assert result['out_of_bounds'] == 0
    assert result['warnings'] == []


def test_wrong_values_are_counted():
    result = parse_nccl_tests(own_fixture('nccl-tests/nccl-tests-2.13-8xh100-allreduce-wrong-handmade.txt'))
    assert result['out_of_bounds'] == 36864
    wrong_rows = [row for row in result['rows'] if row['oop_wrong'] or row['ip_wrong']]
    assert len(wrong_rows) == 6
    assert sum(row['oop_wrong'] + row['ip_wrong'] for row in wrong_rows) == 36864


def test_test_failure_is_reported_with_rows_before_it():
    result = parse_nccl_tests(own_fixture('nccl-tests/nccl-tests-2.13-8xh100-allreduce-ncclfailure-handmade.txt'))
    assert len(result['rows']) == 9
    assert result['rows'][-1]['size'] == 268435456
    assert result['avg_busbw'] is None
    assert result['out_of_bounds'] is None
    assert len(result['errors']) == 2
    assert 'Test NCCL failure common.cu:1005' in result['errors'][0]
    assert 'Test failure common.cu:1063' in result['errors'][1]
    assert len(result['warnings']) == 1 and 'NCCL WARN NET/IB' in result['warnings'][0]


def test_failures_name_their_host_and_mark_the_remote_echo():
    result = parse_nccl_tests(own_fixture('nccl-tests/nccl-tests-2.13-8xh100-allreduce-ncclfailure-handmade.txt'))
    assert result['failures'] == [{'host': 'hgx-node-07', 'kind': 'NCCL', 'where': 'common.cu:1005', 'remote': True,
                                   'reason': 'remote process exited or there was a network error / NET/IB : Got completion '
                                             'from peer with error 12'}]
    # common.h: CUDACHECK and NCCLCHECK print in every process, with its (short) host name; TESTCHECK's trace line is
    # an error but not a failure of its own
    text = ("gpu02: Test CUDA failure common.cu:892 'an illegal memory access was encountered'\n"
            " .. gpu02 pid 4211: Test failure common.cu:1063\n"
            "gpu03: Test NCCL failure common.cu:1005 'unhandled system error (run with NCCL_DEBUG=INFO for details) / '\n")
    result = parse_nccl_tests(text)
    assert [(f['host'], f['kind'], f['remote'], f['reason']) for f in result['failures']] == [
        ('gpu02', 'CUDA', False, 'an illegal memory access was encountered'),
        ('gpu03', 'NCCL', False, 'unhandled system error (run with NCCL_DEBUG=INFO for details) / ')]
    assert len(result['errors']) == 3
    # no failure line: no failures key (results.json keeps its shape)
    assert 'failures' not in parse_nccl_tests(own_fixture('nccl-tests/nccl-tests-2.13-8xh100-allreduce-pass-handmade.txt'))


def test_nccl_version_line_bare_or_as_info():
    assert parse_nccl_tests('NCCL version 2.19.3+cuda12.3\n# Using devices\n#  Rank  0 Group  0 Pid  1 on a device  0 '
                            '[0x1b] NVIDIA H100 80GB HBM3\n')['nccl_version'] == '2.19.3'
    assert parse_nccl_tests('puente:21488:21488 [0] NCCL INFO NCCL version 2.22.3+cuda12.4\n# Using devices\n#  Rank  0 '
                            'Group  0 Pid  1 on a device  0 [0x1b] NVIDIA H100 80GB HBM3\n')['nccl_version'] == '2.22.3'


def test_crlf_and_tabs_parse_the_same():
    text = own_fixture('nccl-tests/nccl-tests-2.13-8xh100-allreduce-pass-handmade.txt')
    mangled = text.replace('  ', '\t').replace('\n', '\r\n').rstrip()
    assert parse_nccl_tests(mangled)['rows'] == parse_nccl_tests(text)['rows']


def test_only_error_line_is_not_a_parse_error():
    result = parse_nccl_tests('Cuda failure common.cu:892 \'out of memory\'\n')
    assert result['rows'] == [] and len(result['errors']) == 1


@pytest.mark.parametrize('text', ['', '   \n', 'hello world\n', 'NCCL INFO x\n', '# just a comment\n', '{"a": 1}'],
                         ids=['empty', 'blank', 'prose', 'nccl-info-only', 'comment', 'json'])
def test_not_nccl_tests_output_raises(text):
    with pytest.raises(ParseError):
        parse_nccl_tests(text)


@FUZZ_SETTINGS
@given(texts_from([read_fixture(kind, path) for kind, path in fixture_files('nccl-tests')]))
def test_parse_nccl_tests_never_raises_anything_but_parse_error(text):
    result = only_parse_error(parse_nccl_tests, text)
    if result is not None:
        json.dumps(result)
