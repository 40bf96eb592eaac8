# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/gpu_burn.py on the real gpu-burn captures."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest
from hypothesis import given

from _fuzz import FUZZ_SETTINGS, texts_from, only_parse_error
from _paths import real_fixture, fixture_files, read_fixture

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.gpu_burn import parse_gpu_burn

CURRENT = 'gpu-burn/wilicc-issue124-rtx-a2000-no-progress-lines-ok.txt'
LEGACY = 'gpu-burn/wilicc-issue8-azure-k80-legacy-tab-summary-no-verdict.txt'

# Ours, not a capture: two GPUs in the current layout (carriage-return progress lines with the
# power part, as gpu_burn-drv.cpp listenClients() prints them), GPU 1 with errors and FAULTY.
OWN_TWO_GPUS = (
    'Burning for 60 seconds.\n'
    "\r10.0%  proc'd: 2 (15000 Gflop/s) - 2 (14900 Gflop/s)   errors: 0 - 3  (WARNING!)  temps: 50 C - 52 C   power: 300 W - -- "
    "\r20.0%  proc'd: 4 (15100 Gflop/s) - 3 (nan Gflop/s)   errors: 0 - 5  (WARNING!)  temps: 55 C - 57 C   power: 310 W - 305 W \n"
    'Killing processes with SIGTERM (soft kill)\ndone\n\nTested 2 GPUs:\n\tGPU 0: OK\n\tGPU 1: FAULTY\n')


def test_current_no_progress_lines_ok():
    result = parse_gpu_burn(real_fixture(CURRENT))
    assert (result['format'], result['run_length_s'], result['compare_file'], result['iterations']) == ('current', 10, 'compare.ptx', 25)
    assert result['listed'] == [{'index': 0, 'name': 'NVIDIA RTX A2000 Embedded GPU', 'uuid': 'GPU-cfc454d6-f42b-1ba2-c01a-bca141734c4b'}]
    assert (result['progress_lines'], result['tested_gpus'], result['verdict_present']) == (0, 1, True)
    assert result['gpus'] == [{'index': 0, 'memory_mb': {'total': 7866, 'available': 7765, 'used': 6989}, 'precision': 'FLOATS',
                               'processed': None, 'gflops': None, 'gflops_max': None, 'errors': None, 'faulty_seen': False,
                               'died': False, 'temp_c': None, 'power_w': None, 'verdict': 'OK'}]
    json.dumps(result)


def test_legacy_no_verdict():
    result = parse_gpu_burn(real_fixture(LEGACY))
    assert (result['format'], result['run_length_s'], result['compare_file'], result['iterations']) == ('legacy', 10, None, None)
    assert result['listed'] == [{'index': 0, 'name': 'Tesla K80', 'uuid': 'GPU-b57841d9-9b07-f573-b01c-c2e16694f1ae'}]
    assert (result['progress_lines'], result['percent'], result['summaries']) == (3, 100.0, 2)
    assert (result['tested_gpus'], result['verdict_present']) == (None, False)
    assert result['gpus'] == [{'index': 0, 'memory_mb': {'total': 11441, 'available': 11351, 'used': 10216}, 'precision': 'FLOATS',
                               'processed': 1908, 'gflops': 2273.0, 'gflops_max': 2273.0, 'errors': 0, 'faulty_seen': False,
                               'died': False, 'temp_c': 66, 'power_w': None, 'verdict': None}]
    json.dumps(result)


def test_own_two_gpus_faulty_with_power():
    result = parse_gpu_burn(OWN_TWO_GPUS)
    assert (result['format'], result['run_length_s'], result['progress_lines'], result['percent']) == ('current', 60, 2, 20.0)
    assert [(g['index'], g['processed'], g['gflops'], g['gflops_max'], g['errors'], g['faulty_seen'], g['temp_c'], g['power_w'],
             g['verdict']) for g in result['gpus']] == [
        (0, 4, 15100.0, 15100.0, 0, False, 55, 310, 'OK'), (1, 3, 14900.0, 14900.0, 5, True, 57, 305, 'FAULTY')]


def test_crlf_same_as_lf():
    text = real_fixture(LEGACY)
    assert parse_gpu_burn(text.replace('\n', '\r\n')) == parse_gpu_burn(text)


@pytest.mark.parametrize('text', [
    '', '\n', 'hello\n', 'GPU Burn\nUsage: gpu-burn [OPTIONS] [TIME]\n', 'ID 0: NVIDIA A100-SXM4-80GB, 85095MB\n',
], ids=['empty', 'blank', 'prose', 'help', 'list'])
def test_refused_with_parse_error(text):
    with pytest.raises(ParseError):
        parse_gpu_burn(text)


@FUZZ_SETTINGS
@given(texts_from([read_fixture(k, p) for k, p in fixture_files('gpu-burn')] + [OWN_TWO_GPUS]))
def test_parse_gpu_burn_never_raises_anything_but_parse_error(text):
    result = only_parse_error(parse_gpu_burn, text)
    if result is not None:
        json.dumps(result)
