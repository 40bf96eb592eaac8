# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from _paths import own_fixture, real_fixture

from ansible_collections.aicluster.infra.plugins.modules import dcgm_diag

JSON_FAIL = own_fixture('dcgmi/dcgmi-4.1-4xh100-diag-r3-json-fail-handmade.txt')
NO_HOSTENGINE = ('Error: Unable to establish a connection to the specified host: localhost\n'
                 'Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n')


# DCGM 3.1.0 `dcgmi diag -r 1 -j`-style JSON from NVIDIA's own tests, with a
# garbage line before the JSON.
def _real_pass():
    return real_fixture('dcgmi/diag-r1-json-8gpu-dcgm3.1.0-nulls-warning-prefix.txt')


def test_passing_diag(run_module):
    result, calls = run_module(dcgm_diag, {}, {'dcgmi': (0, _real_pass(), '')})
    assert calls == [['/usr/bin/dcgmi', 'diag', '-r', '1', '-j']]
    assert 'failed' not in result and result['changed'] is False
    assert result['overall'] == 'pass'
    assert result['rc'] == 0
    assert result['cmd'] == ['/usr/bin/dcgmi', 'diag', '-r', '1', '-j']
    assert len(result['tests']) == 10
    first = result['tests'][0]
    assert first['name'] == 'Denylist' and first['category'] == 'Deployment' and first['result'] == 'pass'
    assert first['gpu_results'] == dict((str(gpu), 'pass') for gpu in range(8))
    assert result['tests'][-1]['category'] == 'Custom'
    assert result['metadata'] == {'version': '3.1.0'}
    assert result['errors'] == []


def test_failing_diag_is_a_result_not_a_failure(run_module):
    result, calls = run_module(dcgm_diag, {'level': 3, 'gpu_ids': [0, 1, 2, 3]}, {'dcgmi': (226, JSON_FAIL, '')})
    assert calls == [['/usr/bin/dcgmi', 'diag', '-r', '3', '-j', '-i', '0,1,2,3']]
    assert 'failed' not in result and result['changed'] is False
    assert result['overall'] == 'fail' and result['rc'] == 226
    failing = [test for test in result['tests'] if test['result'] == 'fail']
    assert [test['name'] for test in failing] == ['memory']
    assert failing[0]['gpu_results']['3'] == 'fail'
    assert any('uncorrectable memory error' in detail for detail in failing[0]['details'])


def test_check_mode_runs_level_1_only(run_module):
    result, calls = run_module(dcgm_diag, {'_ansible_check_mode': True, 'level': 1}, {'dcgmi': (0, _real_pass(), '')})
    assert calls == [['/usr/bin/dcgmi', 'diag', '-r', '1', '-j']]
    assert result['changed'] is False and result['overall'] == 'pass'


@pytest.mark.parametrize('level', [2, 3, 4])
def test_check_mode_skips_the_loading_levels(run_module, level):
    result, calls = run_module(dcgm_diag, {'_ansible_check_mode': True, 'level': level}, {'dcgmi': (0, _real_pass(), '')})
    assert calls == [] and result['skipped'] is True and 'overall' not in result


def test_level_4_runs(run_module):
    dummy, calls = run_module(dcgm_diag, {'level': 4}, {'dcgmi': (0, _real_pass(), '')})
    assert calls == [['/usr/bin/dcgmi', 'diag', '-r', '4', '-j']]


def test_dcgmi_missing(run_module):
    result, calls = run_module(dcgm_diag, {}, {})
    assert result['failed'] is True and 'dcgmi' in result['msg']
    assert calls == []


def test_host_engine_down_fails(run_module):
    result, dummy = run_module(dcgm_diag, {}, {'dcgmi': (255, NO_HOSTENGINE, '')})
    assert result['failed'] is True
    assert result['msg'].startswith('dcgmi diag ran no diagnostic (rc=255)')
    assert 'Unable to connect to host engine' in result['msg']
    assert result['cmd'] == ['/usr/bin/dcgmi', 'diag', '-r', '1', '-j']
    assert result['rc'] == 255 and result['stdout'] == NO_HOSTENGINE and result['stderr'] == ''


@pytest.mark.parametrize('rc', [0, 1])
def test_unparseable_output(run_module, rc):
    result, dummy = run_module(dcgm_diag, {}, {'dcgmi': (rc, 'Usage: dcgmi diag [options]\n\n', 'oops\n')})
    assert result['failed'] is True
    assert 'dcgmi diag' in result['msg']
    assert result['rc'] == rc and result['stderr'] == 'oops\n'


def test_empty_output_fails(run_module):
    result, dummy = run_module(dcgm_diag, {}, {'dcgmi': (0, '', '')})
    assert result['failed'] is True and 'not a JSON diagnostic report' in result['msg']


@pytest.mark.parametrize('args, msg', [
    ({'level': 5}, 'value of level must be one of'),
    ({'gpu_ids': [-1]}, 'gpu_ids must be 0 or more'),
])
def test_bad_options(run_module, args, msg):
    result, calls = run_module(dcgm_diag, args, {'dcgmi': (0, _real_pass(), '')})
    assert result['failed'] is True and msg in result['msg']
    assert calls == []
