# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for dcgm_stack: the dcgm role's variable checks, DCGM against the driver, the exporter's liveness."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml

from ansible_collections.aicluster.infra.plugins.module_utils.dcgm_stack import (
    dcgm_problems, dcgm_version_major, driver_branch, driver_check, driver_cuda_major, exporter_liveness,
    parse_gpu_list, parse_metrics)
from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError

from _paths import REPO

with open(os.path.join(REPO, 'roles', 'dcgm', 'defaults', 'main.yml'), encoding='utf-8') as _handle:
    DEFAULTS = yaml.safe_load(_handle)


def settings(**changes):
    """The role's defaults with the default BOM's versions, with changes."""
    base = {
        'version': '1:4.4.1-1', 'cuda_major': '13', 'cuda_major_check': 'fail',
        'packages': [{'name': 'datacenter-gpu-manager-4-core', 'version': '1:4.4.1-1'},
                     {'name': 'datacenter-gpu-manager-4-cuda13', 'version': '1:4.4.1-1'}],
        'health_watches_enabled': True, 'health_watches': 'a',
        'exporter_enabled': True, 'exporter_version': '4.6.0-1', 'exporter_port': 9400,
        'exporter_hostengine': 'localhost:5555', 'exporter_counters': DEFAULTS['dcgm_exporter_counters'],
        'exporter_labels': DEFAULTS['dcgm_exporter_labels'], 'exporter_liveness_enabled': True,
        'exporter_liveness_interval': 7, 'exporter_collect_interval_ms': 5000, 'exporter_expected_gpus': 0,
    }
    base.update(changes)
    return base


def test_the_defaults_pass():
    assert dcgm_problems(settings()) == []


def test_templated_numbers_as_strings_pass():
    assert dcgm_problems(settings(exporter_port='9400', exporter_liveness_interval='7', exporter_expected_gpus='8')) == []


def test_the_default_counters_hold_the_contract_fields():
    fields = {entry['field']: entry['type'] for entry in DEFAULTS['dcgm_exporter_counters']}
    assert fields['DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION'] == 'counter'
    assert fields['DCGM_FI_DEV_XID_ERRORS'] == 'gauge'
    assert fields['DCGM_FI_DEV_ROW_REMAP_PENDING'] == 'gauge'
    assert fields['DCGM_FI_DEV_PCIE_REPLAY_COUNTER'] == 'counter'
    assert 'DCGM_FI_DEV_NVLINK_COUNT_RX_SYMBOL_ERRORS' in fields and 'DCGM_FI_DEV_CLOCKS_EVENT_REASONS' in fields


@pytest.mark.parametrize('changes, words', [
    ({'version': '4.4.1'}, 'dcgm_version'),
    ({'version': '1:3.3.9-1'}, 'DCGM 3'),
    ({'cuda_major': '10'}, 'dcgm_cuda_major'),
    ({'packages': [{'name': 'datacenter-gpu-manager-4-core', 'version': '1:4.4.1-1'}]}, 'cuda13'),
    ({'packages': [{'name': 'datacenter-gpu-manager-4-cuda13', 'version': '1:4.4.1-1'}]}, '4-core'),
    ({'packages': [{'name': 'datacenter-gpu-manager-4-core', 'version': 'latest'}]}, 'dcgm_packages[0]'),
    ({'cuda_major_check': 'ignore'}, 'dcgm_cuda_major_check'),
    ({'health_watches': 'xyz'}, 'dcgm_health_watches'),
    ({'exporter_version': 'latest'}, 'dcgm_exporter_version'),
    ({'exporter_version': '4.4.1-4.6.0-1'}, 'release tag'),
    ({'exporter_version': '4.4.1-4.6.0'}, 'release tag'),
    ({'exporter_port': 0}, 'dcgm_exporter_port'),
    ({'exporter_port': True}, 'dcgm_exporter_port'),
    ({'exporter_hostengine': 'localhost'}, 'dcgm_exporter_hostengine'),
    ({'exporter_counters': []}, 'dcgm_exporter_counters'),
    ({'exporter_counters': [{'field': 'GPU_UTIL', 'type': 'gauge', 'help': 'x'}]}, 'not a DCGM field'),
    ({'exporter_counters': [{'field': 'DCGM_FI_DEV_GPU_UTIL', 'type': 'histogram', 'help': 'x'}]}, 'type'),
    ({'exporter_counters': [{'field': 'DCGM_FI_DEV_GPU_UTIL', 'type': 'gauge', 'help': 'a, b'}]}, 'comma'),
    ({'exporter_counters': [{'field': 'DCGM_FI_DEV_GPU_UTIL', 'type': 'gauge', 'help': 'x'}] * 2}, 'twice'),
    ({'exporter_counters': [{'field': 'DCGM_FI_DEV_GPU_UTIL', 'type': 'gauge', 'help': 'x'}]},
     'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION'),
    ({'exporter_labels': ['driver']}, 'dcgm_exporter_labels'),
    ({'exporter_nvswitch_enabled': 'yes'}, 'dcgm_exporter_nvswitch_enabled'),
    ({'exporter_nvswitch_enabled': True, 'exporter_nvswitch_counters': []}, 'dcgm_exporter_nvswitch_counters'),
    ({'exporter_liveness_interval': 0}, 'dcgm_exporter_liveness_interval'),
    ({'exporter_expected_gpus': -1}, 'dcgm_exporter_expected_gpus'),
])
def test_bad_variables_are_named(changes, words):
    problems = dcgm_problems(settings(**changes))
    assert problems and any(words in problem for problem in problems), problems


def test_the_nvswitch_counters_are_checked_only_when_served():
    assert dcgm_problems(settings(exporter_nvswitch_enabled=False, exporter_nvswitch_counters=[])) == []
    assert dcgm_problems(settings(exporter_nvswitch_enabled=True,
                                  exporter_nvswitch_counters=DEFAULTS['dcgm_exporter_nvswitch_counters'])) == []
    # the fabric manager's per-GPU status is served by default; the switch entities are opt-in (dcgm-exporter #728)
    fields = [entry['field'] for entry in DEFAULTS['dcgm_exporter_counters']]
    assert 'DCGM_FI_DEV_FABRIC_MANAGER_STATUS' in fields and DEFAULTS['dcgm_exporter_nvswitch_enabled'] is False


def test_exporter_variables_are_not_checked_when_it_is_off():
    assert dcgm_problems(settings(exporter_enabled=False, exporter_version='x', exporter_counters=[])) == []


@pytest.mark.parametrize('version, major', [('1:4.4.1-1', 4), ('4.2.3-1', 4), ('1:3.3.9-1', 3), ('4.4.1', None), ('', None)])
def test_dcgm_version_major(version, major):
    assert dcgm_version_major(version) == major


@pytest.mark.parametrize('driver, branch, cuda', [
    ('580.95.05', 580, 13), ('575.57.08', 575, 12), ('525.60.13', 525, 12), ('535.183.01', 535, 12),
    ('470.256.02', 470, 11), ('450.80.02', 450, 11), ('418.87.01', 418, None), ('N/A', None, None)])
def test_driver_branch_and_cuda_major(driver, branch, cuda):
    assert driver_branch(driver) == branch
    assert driver_cuda_major(driver) == cuda


def smi(driver='580.95.05', gpus=2, rc=0):
    lines = ''.join('%s, GPU-4857534d-0001-4000-8000-%012x\n' % (driver, slot) for slot in range(gpus))
    return {'rc': rc, 'stdout': lines}


def test_a_matching_driver_passes_and_lists_the_gpus():
    result = driver_check(settings(), smi())
    assert result['problems'] == [] and result['warnings'] == []
    assert result['driver_version'] == '580.95.05' and result['driver_cuda_major'] == 13
    assert result['gpus'] == ['GPU-4857534d-0001-4000-8000-000000000000', 'GPU-4857534d-0001-4000-8000-000000000001']


def test_cuda13_plugins_on_an_r535_driver_fail():
    result = driver_check(settings(), smi('535.183.01'))
    assert len(result['problems']) == 1
    assert 'needs driver R580' in result['problems'][0] and 'cuda_major to 12' in result['problems'][0]


def test_cuda12_plugins_on_an_r580_driver_fail_as_diagnostics_would_skip():
    result = driver_check(settings(cuda_major='12'), smi('580.95.05'))
    assert 'Skip' in result['problems'][0]


def test_a_mismatch_only_warns_when_asked():
    result = driver_check(settings(cuda_major_check='warn'), smi('535.183.01'))
    assert result['problems'] == [] and 'R580' in result['warnings'][0]


def test_a_driver_older_than_dcgm_4s_minimum_fails():
    result = driver_check(settings(cuda_major='11'), smi('418.87.01'))
    assert any('R450' in problem for problem in result['problems'])


@pytest.mark.parametrize('observed', [
    {'rc': 9, 'stdout': "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."},
    {'rc': 2, 'stdout': ''},
    {'rc': 0, 'stdout': 'Failed to initialize NVML: Driver/library version mismatch\n'},
    {'rc': 0, 'stdout': 'garbage, GPU-1\n'},
    None,
])
def test_an_unreadable_driver_only_warns(observed):
    result = driver_check(settings(), observed)
    assert result['problems'] == [] and len(result['warnings']) == 1


def test_parse_gpu_list_refuses_other_text():
    with pytest.raises(ParseError):
        parse_gpu_list('No devices were found\n')
    assert parse_gpu_list('') == {'driver_version': None, 'uuids': []}


def metrics(energies, frozen=False):
    """A /metrics body with one energy sample per (uuid, value)."""
    lines = ['# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).',
             '# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter']
    for index, (uuid, value) in enumerate(energies):
        lines.append('DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="%d",UUID="%s",pci_bus_id="00000000:1B:00.0",'
                     'device="nvidia%d",modelName="NVIDIA H100 80GB HBM3",Hostname="gpu01",'
                     'DCGM_FI_DRIVER_VERSION="580.95.05"} %s' % (index, uuid, index, value))
    lines.append('DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="%s"} 0' % energies[0][0] if energies and not frozen else '')
    return '\n'.join(lines) + '\n'


def test_parse_metrics_reads_labels_and_values():
    parsed = parse_metrics(metrics([('GPU-a', '259092000')]) + 'broken line\nx{a="1"} NaNx\n')
    sample = parsed['DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION'][0]
    assert sample['value'] == 259092000.0
    assert sample['labels']['modelName'] == 'NVIDIA H100 80GB HBM3' and sample['labels']['gpu'] == '0'
    assert parse_metrics('m{a="q\\"uote",b="x"} 1.5\n')['m'][0]['labels'] == {'a': 'q"uote', 'b': 'x'}


def test_growing_counters_on_every_gpu_pass():
    result = exporter_liveness(metrics([('GPU-a', 100), ('GPU-b', 200)]), metrics([('GPU-a', 150), ('GPU-b', 260)]),
                               ['GPU-a', 'GPU-b'], 2)
    assert result['passed'] and result['missing'] == [] and result['stale'] == []
    assert result['measured'] == {'gpus': 2, 'fresh': 2}
    assert result['check'] == 'dcgm_exporter.liveness'


def test_a_frozen_counter_fails_as_stale():
    result = exporter_liveness(metrics([('GPU-a', 100), ('GPU-b', 200)]), metrics([('GPU-a', 100), ('GPU-b', 260)]))
    assert not result['passed'] and result['stale'] == ['GPU-a'] and 'frozen' in result['message']


def test_a_gpu_nvidia_smi_lists_but_the_exporter_misses_fails():
    result = exporter_liveness(metrics([('GPU-a', 1)]), metrics([('GPU-a', 2)]), ['GPU-a', 'GPU-b'])
    assert not result['passed'] and result['missing'] == ['GPU-b']


def test_fewer_gpus_than_the_expected_count_fail():
    result = exporter_liveness(metrics([('GPU-a', 1)]), metrics([('GPU-a', 2)]), ['GPU-a'], 8)
    assert not result['passed'] and '1 GPUs on /metrics, 8 expected' in result['message']


def test_an_empty_body_fails():
    result = exporter_liveness('', '')
    assert not result['passed'] and 'no DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION' in result['message']


def test_the_liveness_scrapes_must_be_further_apart_than_the_exporters_collect_interval():
    # dcgm-exporter's own default -c 30000: two scrapes 5 s apart would read the same energy on a healthy exporter
    assert dcgm_problems(settings(exporter_collect_interval_ms=30000, exporter_liveness_interval=5)) == [
        'dcgm_exporter_liveness_interval 5 s must be longer than dcgm_exporter_collect_interval_ms (30000 ms): the '
        'exporter refreshes its values once per collect interval']
    assert dcgm_problems(settings(exporter_collect_interval_ms=30000, exporter_liveness_interval=31)) == []
    assert dcgm_problems(settings(exporter_collect_interval_ms=50)) == [
        'dcgm_exporter_collect_interval_ms 50 must be 100-300000 milliseconds']
