# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/dcgmproftester.py on the real dcgmproftester captures."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest
from hypothesis import given

from _fuzz import FUZZ_SETTINGS, texts_from, only_parse_error
from _paths import real_fixture, fixture_files, read_fixture

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.dcgmproftester import parse_dcgmproftester

WORKER = 'dcgmproftester/dcgm-userguide-a100-40gb-t1004-worker-prefix-init-after.txt'
LEGACY = 'dcgmproftester/gpu-operator-docs-t4-dcgm2.0.10-legacy-no-worker-prefix.txt'
FAILED = 'dcgmproftester/nvidia-dcgm-issue76-dcgm3.1.7-t1004-runtests-error0.txt'

A100_GFLOPS = [250362.2, 252917.0, 253971.7, 253700.2, 252599.0, 253134.6, 252676.7, 252861.4, 252764.1, 253109.4]
T4_GFLOPS = [27334.5, 27795.5, 27846.0, 27865.9, 27837.6, 27709.7, 27615.3, 27620.3, 27530.7, 27477.4, 27461.1, 27454.6, 27381.2]


def test_worker_prefix_a100():
    result = parse_dcgmproftester(real_fixture(WORKER))
    assert (result['format'], result['test_id'], result['metric'], result['failed']) == ('worker', 1004, 'TensorEngineActive', False)
    worker, = result['workers']
    assert (worker['gpu'], worker['slice'], worker['test_id'], worker['unit']) == (0, 0, 1004, 'gflops')
    assert worker['values'] == A100_GFLOPS and worker['dcgm'] == [0.0] * 10
    assert (worker['max'], worker['mean'], worker['last']) == (253971.7, 252809.63, 253109.4)
    assert (worker['bus_id'], worker['cuda_device']) == ('00000000:00:04.0', 0)
    attributes, = result['device_attributes']
    assert (attributes['MULTIPROCESSOR_COUNT'], attributes['COMPUTE_CAPABILITY_MAJOR'], attributes['ECC_SUPPORT']) == (108, 8, True)
    assert result['max_memory_bandwidth_bytes'] == 1555200000000 and result['cuda_init'] is True
    assert len(result['skipped']) == 4 and result['errors'] == [] and result['warnings'] == []
    json.dumps(result)


def test_legacy_t4_no_test_id():
    result = parse_dcgmproftester(real_fixture(LEGACY))
    assert (result['format'], result['test_id'], result['metric'], result['failed']) == ('legacy', None, 'TensorEngineActive', False)
    worker, = result['workers']
    assert (worker['gpu'], worker['slice'], worker['unit'], worker['values']) == (None, None, 'gflops', T4_GFLOPS)
    assert (worker['max'], worker['mean'], worker['last']) == (27865.9, 27609.985, 27381.2)
    attributes, = result['device_attributes']
    assert (attributes['MULTIPROCESSOR_COUNT'], attributes['COMPUTE_CAPABILITY_MAJOR'], attributes['COMPUTE_CAPABILITY_MINOR']) == (40, 7, 5)
    assert result['max_memory_bandwidth_bytes'] == 320064000000 and result['cuda_init'] is True
    json.dumps(result)


def test_failed_run_error0():
    result = parse_dcgmproftester(real_fixture(FAILED))
    assert result['failed'] is True and result['workers'] == [] and result['format'] is None
    assert result['errors'] == [{'timestamp': '2023-04-18 03:46:10.915', 'level': 'ERROR', 'message': 'Error 0 from RunTests(). Exiting.',
                                 'source': '/workspaces/dcgm-rel_dcgm_3_1-postmerge@2/dcgmproftester/DcgmProfTester.cpp:1170',
                                 'function': 'main'}]
    assert len(result['skipped']) == 2


def test_own_two_gpus_and_trailing_dot():
    # Ours, not a capture: two workers, the current source's "(... gflops)." with its final dot.
    text = ('Worker 0:0[1004]: TensorEngineActive: generated ???, dcgm 0.912 (250000.0 gflops).\n'
            'Worker 1:0[1004]: TensorEngineActive: generated ???, dcgm 0.905 (248000.5 gflops).\n')
    result = parse_dcgmproftester(text)
    assert [(w['gpu'], w['values'], w['dcgm']) for w in result['workers']] == [(0, [250000.0], [0.912]), (1, [248000.5], [0.905])]
    assert result['test_id'] == 1004


def test_crlf_same_as_lf():
    text = real_fixture(WORKER)
    assert parse_dcgmproftester(text.replace('\n', '\r\n')) == parse_dcgmproftester(text)


@pytest.mark.parametrize('text', ['', '\n', 'hello\n', 'USAGE:\n\n   dcgmproftester12  [-h] [--cublas]\n'],
                         ids=['empty', 'blank', 'prose', 'usage'])
def test_refused_with_parse_error(text):
    with pytest.raises(ParseError):
        parse_dcgmproftester(text)


@FUZZ_SETTINGS
@given(texts_from([read_fixture(k, p) for k, p in fixture_files('dcgmproftester')]))
def test_parse_dcgmproftester_never_raises_anything_but_parse_error(text):
    result = only_parse_error(parse_dcgmproftester, text)
    if result is not None:
        json.dumps(result)
