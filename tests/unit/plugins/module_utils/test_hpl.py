# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/hpl.py on the real HPL captures."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest
from hypothesis import given

from _fuzz import FUZZ_SETTINGS, texts_from, only_parse_error
from _paths import real_fixture, fixture_files, read_fixture

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.hpl import parse_hpl

NVIDIA_4090 = 'hpl/kinghorn-hpl-nvidia-1.0.0-2x-rtx4090-xeon-system-test-tabs-progress.txt'
NVIDIA_TAIL = 'hpl/kinghorn-hpl-nvidia-1.0.0-2x-rtx6000ada-clock-warnings-tail.txt'
CLASSIC = 'hpl/kinghorn-hpl2.3-ryzen5800x-8c-passed-wrapper-banner.txt'
ONE_PASSED = {'tests': 1, 'passed': 1, 'failed': 0, 'skipped': 0, 'unchecked': None}
RESIDUAL_EXPR = '||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N)'

CAPTURES = [
    (CLASSIC, dict(flavour='hpl', version='2.3', nvidia_version=None, banner_present=True, eps=1.110223e-16, threshold=16.0,
                   last_progress=None, warnings=[]),
     {'tv': 'WR12R2R4', 'n': 32000, 'nb': 768, 'p': 1, 'q': 1, 'time': 54.72, 'gflops': 399.22, 'residual': 4.31931125e-03,
      'check': 'PASSED'}),
    (NVIDIA_4090, dict(flavour='hpl-nvidia', version='2.1', nvidia_version='1.0.0', banner_present=True, threshold=16.0,
                       last_progress={'percent': 100.0, 'n_left': 288, 'time': 110.43, 'gflops': 2253.29}),
     {'tv': 'WR03L2L2', 'n': 72000, 'nb': 288, 'p': 1, 'q': 2, 'time': 111.21, 'gflops': 2238.0, 'residual': 0.0029328,
      'check': 'PASSED'}),
    (NVIDIA_TAIL, dict(flavour='hpl-nvidia', version=None, nvidia_version=None, banner_present=False, eps=None, threshold=None,
                       last_progress={'percent': 100.0, 'n_left': 288, 'time': 438.14, 'gflops': 567.93}),
     {'tv': 'WR03L2L2', 'n': 72000, 'nb': 288, 'p': 1, 'q': 2, 'time': 438.75, 'gflops': 567.2, 'residual': 0.0029996,
      'check': 'PASSED'}),
]


@pytest.mark.parametrize('path,expected,row', CAPTURES, ids=[c[0].split('/')[1] for c in CAPTURES])
def test_real_capture_figures(path, expected, row):
    result = parse_hpl(real_fixture(path))
    assert {key: result[key] for key in expected} == expected
    assert result['results'] == [row]
    assert result['residual_checks'] == [{'expression': RESIDUAL_EXPR, 'value': row['residual'], 'verdict': 'PASSED'}]
    assert result['summary'] == ONE_PASSED and result['end_of_tests'] is True
    assert result['errors'] == []
    json.dumps(result)


def test_nvidia_system_test_warning():
    warnings = parse_hpl(real_fixture(NVIDIA_4090))['warnings']
    assert warnings == [{'kind': 'system_test', 'rank': 1, 'host': 'xeon33', 'gpu': '0000:c3:00.0',
                         'detail': 'GPU_FP [GFLPS] @NB= 128 935',
                         'text': '!!!! WARNING: RANK: 1 HOST: xeon33 GPU: 0000:c3:00.0 GPU_FP [GFLPS] @NB= 128 935'}]


def test_tail_throttle_warnings():
    warnings = parse_hpl(real_fixture(NVIDIA_TAIL))['warnings']
    assert [(w['kind'], w['rank'], w['gpu'], w['clock_mhz'], w['temp_c'], w['power_w']) for w in warnings] == [
        ('throttle', 1, '0000:61:00.0', 626, 61, 76), ('throttle', 0, '0000:41:00.0', 626, 62, 71),
        ('throttle', 1, '0000:61:00.0', 626, 61, 76), ('throttle', 0, '0000:41:00.0', 626, 62, 71),
        ('throttle', 1, '0000:61:00.0', 626, 61, 76), ('throttle', 0, '0000:41:00.0', 626, 62, 63)]
    assert all(w['host'] == 'trp64' and (w['pcie_gen'], w['pcie_width']) == (4, 16) for w in warnings)


def test_cut_before_summary_parses_without_it():
    text = real_fixture(NVIDIA_4090).split('Finished')[0]
    result = parse_hpl(text)
    assert result['summary'] is None and result['end_of_tests'] is False
    assert result['results'][0]['gflops'] == 2238.0


def test_cut_mid_run_has_progress_only():
    text = real_fixture(NVIDIA_4090).split(' Prog= 91.25%')[0]
    result = parse_hpl(text)
    assert result['results'] == [] and result['summary'] is None
    assert result['last_progress'] == {'percent': 8.17, 'n_left': 69984, 'time': 8.82, 'gflops': 2303.81}


def test_failed_residual_and_counts():
    text = real_fixture(CLASSIC).replace('...... PASSED', '...... FAILED').replace(
        '1 tests completed and passed', '0 tests completed and passed').replace(
        '0 tests completed and failed', '1 tests completed and failed')
    result = parse_hpl(text)
    assert result['results'][0]['check'] == 'FAILED'
    assert result['summary'] == {'tests': 1, 'passed': 0, 'failed': 1, 'skipped': 0, 'unchecked': None}


def test_crlf_same_as_lf():
    text = real_fixture(CLASSIC)
    assert parse_hpl(text.replace('\n', '\r\n')) == parse_hpl(text)


@pytest.mark.parametrize('text', [
    '', '\n\n', 'hello\n', 'HPL-AI  -- High Performance LINPACK benchmark mixed precision\n',
    'WR03L2L2       72000   288     1     2             111.21              2.238e+03 ( 1.119e+03)\n',
], ids=['empty', 'blank', 'prose', 'hpl-ai', 'extra-column'])
def test_refused_with_parse_error(text):
    with pytest.raises(ParseError):
        parse_hpl(text)


@FUZZ_SETTINGS
@given(texts_from([read_fixture(k, p) for k, p in fixture_files('hpl')]))
def test_parse_hpl_never_raises_anything_but_parse_error(text):
    result = only_parse_error(parse_hpl, text)
    if result is not None:
        json.dumps(result)
