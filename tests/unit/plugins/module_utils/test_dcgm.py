# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for the dcgmi diag and discovery parsers, on a real capture and our own fixtures."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest
from hypothesis import given

from _fuzz import FUZZ_SETTINGS, texts_from, only_parse_error
from _paths import fixture_files, own_fixture, read_fixture, real_fixture

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.dcgm import parse_dcgmi_diag, parse_dcgmi_discovery, parse_dcgmi_health

REAL_JSON = 'dcgmi/diag-r1-json-8gpu-dcgm3.1.0-nulls-warning-prefix.txt'
TABLE_PASS = 'dcgmi/dcgmi-3.3-8xh100-diag-r2-table-pass-handmade.txt'
TABLE_FAIL = 'dcgmi/dcgmi-3.3-8xh100-diag-r2-table-fail-handmade.txt'
TABLE_4X = 'dcgmi/dcgmi-4.1-4xh100-diag-r3-table-warn-handmade.txt'
JSON_4X = 'dcgmi/dcgmi-4.1-4xh100-diag-r3-json-fail-handmade.txt'
DISCOVERY = 'dcgmi/dcgmi-3.3-8xh100-discovery-l-handmade.txt'
ALL_TEXTS = [read_fixture(kind, path) for kind, path in fixture_files('dcgmi')]


@pytest.mark.parametrize('kind, path, overall, fmt, ntests, version', [
    ('real', REAL_JSON, 'pass', 'json', 10, '3.1.0'),
    ('own', TABLE_PASS, 'pass', 'table', 12, '3.3.9'),
    ('own', TABLE_FAIL, 'fail', 'table', 13, '3.3.9'),
    ('own', TABLE_4X, 'warn', 'table', 6, '4.1.1'),
    ('own', JSON_4X, 'fail', 'json', 3, '4.1.1'),
], ids=['real-json-dcgm3.1', 'table-3.3-pass', 'table-3.3-fail', 'table-4.1-warn', 'json-4.1-fail'])
def test_diag_fixtures(kind, path, overall, fmt, ntests, version):
    result = parse_dcgmi_diag(read_fixture(kind, path))
    assert result['overall'] == overall
    assert result['format'] == fmt
    assert len(result['tests']) == ntests
    assert result['metadata'].get('DCGM Version', result['metadata'].get('version')) == version
    json.dumps(result)


def test_diag_real_json_dcgm31():
    result = parse_dcgmi_diag(real_fixture(REAL_JSON))
    names = [test['name'] for test in result['tests']]
    assert names[0] == 'Denylist' and names[-2] == 'Inforom' and names[-1] == 'software'
    assert all(test['result'] == 'pass' for test in result['tests'])
    assert result['tests'][0]['category'] == 'Deployment'
    assert result['tests'][0]['gpu_results'] == dict((str(i), 'pass') for i in range(8))
    assert result['tests'][-1]['category'] == 'Custom'
    assert result['tests'][-1]['gpu_results'] == dict((str(i), 'pass') for i in range(8))
    assert result['errors'] == []


def test_diag_table_fail_details():
    result = parse_dcgmi_diag(own_fixture(TABLE_FAIL))
    memory = [test for test in result['tests'] if test['name'] == 'GPU Memory'][0]
    assert memory['category'] == 'Hardware'
    assert memory['result'] == 'fail'
    assert memory['gpu_results']['5'] == 'fail' and memory['gpu_results']['0'] == 'pass'
    assert memory['details'] == ['Warning: GPU 5 Found 2 uncorrectable memory error(s) during the memory test, '
                                 'volatile DBE count is 2. Drain the GPU and run a field diagnostic.']
    eud = result['tests'][-1]
    assert (eud['name'], eud['result'], eud['gpu_results']) == ('EUD Test', 'skip', {'all': 'skip'})
    assert result['tests'][0] == {'name': 'Denylist', 'category': 'Deployment', 'result': 'pass', 'details': [], 'gpu_results': {}}
    assert result['metadata']['Driver Version Detected'] == '550.127.05'


def test_diag_table_dcgm4_per_gpu_lines():
    result = parse_dcgmi_diag(own_fixture(TABLE_4X))
    diagnostic = [test for test in result['tests'] if test['name'] == 'diagnostic'][0]
    assert diagnostic['result'] == 'warn'
    assert diagnostic['gpu_results'] == {'0': 'pass', '1': 'pass', '2': 'warn', '3': 'pass'}
    assert diagnostic['details'][0].startswith('Warning: GPU 2 Thermal violations totaling 4.2 seconds started at')
    power = result['tests'][-1]
    assert power['gpu_results']['3'] == 'skip' and power['result'] == 'pass'


def test_diag_json_dcgm4_shape():
    result = parse_dcgmi_diag(own_fixture(JSON_4X))
    memory = result['tests'][1]
    assert (memory['name'], memory['category'], memory['result']) == ('memory', 'Hardware', 'fail')
    assert memory['gpu_results'] == {'0': 'pass', '1': 'pass', '2': 'pass', '3': 'fail'}
    assert memory['details'] == ['Warning: GPU 3 Found 1 uncorrectable memory error(s) during the memory test.']
    assert result['tests'][2]['details'] == ['Info: Test skipped: prerequisite memory test failed']
    assert result['errors'] == ['Error: Unable to load the CUDA module for the profiling plugin, continuing.']


def test_diag_table_crlf_and_error_line():
    text = own_fixture(TABLE_PASS).replace('\n', '\r\n') + 'Error: Diagnostic could not be run while DCGM is paused.\r\n'
    result = parse_dcgmi_diag(text)
    assert result['overall'] == 'pass' and len(result['tests']) == 12
    assert result['errors'] == ['Error: Diagnostic could not be run while DCGM is paused.']


def test_diag_error_only_is_fail():
    result = parse_dcgmi_diag('Error: Unable to complete diagnostic for group 2147483647. Return: (-37) Timeout\n')
    assert result['overall'] == 'fail' and result['tests'] == [] and len(result['errors']) == 1


@pytest.mark.parametrize('text', ['', 'hello\n', '{"a": [1, 2]}', '{not json', own_fixture(DISCOVERY)],
                         ids=['empty', 'prose', 'other-json', 'broken-json', 'discovery-table'])
def test_diag_not_diag_raises(text):
    with pytest.raises(ParseError):
        parse_dcgmi_diag(text)


def test_discovery():
    gpus = parse_dcgmi_discovery(own_fixture(DISCOVERY))
    assert len(gpus) == 8
    assert gpus[0] == {'id': 0, 'name': 'NVIDIA H100 80GB HBM3', 'pci_bus_id': '00000000:18:00.0',
                       'uuid': 'GPU-3f0c1a52-8d1e-4b7a-9c21-5a17c0de0000'}
    assert gpus[7]['pci_bus_id'] == '00000000:DB:00.0'
    assert [gpu['id'] for gpu in gpus] == list(range(8))


def test_discovery_without_uuid_and_zero_gpus():
    text = ('1 GPU found.\n+--------+-----------+\n| GPU ID | Device Information |\n+--------+-----------+\n'
            '| 0      | Name: NVIDIA A10G |\n|        | PCI Bus ID: 00000000:00:1E.0 |\n+--------+-----------+\n')
    assert parse_dcgmi_discovery(text) == [{'id': 0, 'name': 'NVIDIA A10G', 'pci_bus_id': '00000000:00:1E.0', 'uuid': None}]
    assert parse_dcgmi_discovery('0 GPUs found.\n') == []


@pytest.mark.parametrize('text', ['', 'Error: unable to establish a connection to the specified host: localhost\n',
                                  own_fixture(TABLE_PASS)], ids=['empty', 'connection-error', 'diag-table'])
def test_discovery_not_discovery_raises(text):
    with pytest.raises(ParseError):
        parse_dcgmi_discovery(text)


@FUZZ_SETTINGS
@given(texts_from(ALL_TEXTS))
def test_parse_dcgmi_diag_never_raises_anything_but_parse_error(text):
    result = only_parse_error(parse_dcgmi_diag, text)
    if result is not None:
        json.dumps(result)


@FUZZ_SETTINGS
@given(texts_from(ALL_TEXTS))
def test_parse_dcgmi_discovery_never_raises_anything_but_parse_error(text):
    result = only_parse_error(parse_dcgmi_discovery, text)
    if result is not None:
        json.dumps(result)


# --------------------------------------------------------------------------
# dcgmi health -c

HEALTH_HEALTHY = 'dcgmi/dcgmi-3.3-8xh100-health-healthy-handmade.txt'
HEALTH_WARNING = 'dcgmi/dcgmi-3.3-8xh100-health-warning-pcie-handmade.txt'
HEALTH_FAILURE = 'dcgmi/dcgmi-3.3-8xh100-health-failure-ecc-nvlink-handmade.txt'
HEALTH_FAILURE_JSON = 'dcgmi/dcgmi-3.3-8xh100-health-failure-json-handmade.txt'
HEALTH_NO_WATCHES = 'dcgmi/dcgmi-3.3-8xh100-health-nowatches-handmade.txt'
HEALTH_DBE = 'Detected 1 volatile double-bit ECC error(s) in GPU 1. Drain the GPU and reset it or reboot the node.'
HEALTH_LINKS = ("GPU 5's NvLink link 3 is currently down Check DCGM and system logs for errors. Reset GPU. Restart DCGM. "
                "Rerun diagnostics., GPU 5's NvLink link 11 is currently down Check DCGM and system logs for errors. "
                "Reset GPU. Restart DCGM. Rerun diagnostics.")


def test_health_healthy():
    result = parse_dcgmi_health(own_fixture(HEALTH_HEALTHY))
    assert result == {'overall': 'healthy', 'gpus': [], 'others': [], 'errors': [], 'format': 'table'}


def test_health_warning_pcie_replays():
    result = parse_dcgmi_health(own_fixture(HEALTH_WARNING))
    assert result['overall'] == 'warning' and result['errors'] == []
    assert [(gpu['id'], gpu['health']) for gpu in result['gpus']] == [(3, 'warning')]
    incident = result['gpus'][0]['incidents'][0]
    assert (incident['system'], incident['health']) == ('PCIe', 'warning')
    # DCGM drops the full stop where it wraps a line right after a word ("board" / "If")
    assert incident['message'] == ('Detected more than 31 PCIe replays per minute for GPU 3 : 57 Reconnect PCIe card. Run system side '
                                   'PCIE diagnostic utilities to verify hops off the GPU board If issue is on the board, run the field '
                                   'diagnostic.')


@pytest.mark.parametrize('path, fmt', [(HEALTH_FAILURE, 'table'), (HEALTH_FAILURE_JSON, 'json')], ids=['table', 'json'])
def test_health_failure_dbe_and_nvlink(path, fmt):
    result = parse_dcgmi_health(own_fixture(path))
    assert result['overall'] == 'failure' and result['format'] == fmt and result['errors'] == [] and result['others'] == []
    assert result['gpus'] == [
        {'id': 1, 'health': 'failure', 'incidents': [{'system': 'Memory', 'health': 'failure', 'message': HEALTH_DBE}]},
        {'id': 5, 'health': 'failure', 'incidents': [{'system': 'NVLINK', 'health': 'failure', 'message': HEALTH_LINKS}]},
    ]
    json.dumps(result)


def test_health_table_and_json_agree():
    table = parse_dcgmi_health(own_fixture(HEALTH_FAILURE))
    document = parse_dcgmi_health(own_fixture(HEALTH_FAILURE_JSON))
    assert dict(table, format=None) == dict(document, format=None)


def test_health_no_watches_is_an_error_not_a_report():
    result = parse_dcgmi_health(own_fixture(HEALTH_NO_WATCHES))
    assert result == {'overall': None, 'gpus': [], 'others': [],
                      'errors': ['Error: Health watches not enabled. Please enable watches.'], 'format': None}


def test_health_host_engine_unreachable_and_check_error():
    text = ('Error: unable to establish a connection to the specified host: localhost\n'
            'Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n')
    result = parse_dcgmi_health(text)
    assert result['overall'] is None and len(result['errors']) == 2
    result = parse_dcgmi_health('Error: Unable to check health watches. Return: The Group is not found\r\n')
    assert result['errors'] == ['Error: Unable to check health watches. Return: The Group is not found']


def test_health_crlf_and_nvswitch_entity():
    text = own_fixture(HEALTH_WARNING).replace('\n', '\r\n')
    text = text.replace('+---------------------------+------------------------------------------------------'
                        '----+\r\n', '', 1)
    assert parse_dcgmi_health(text)['gpus'][0]['id'] == 3
    lines = own_fixture(HEALTH_WARNING).splitlines(True)
    switch = ['| NvSwitch                  | %-56s |\n' % '', '| -> 0                      | %-56s |\n' % 'Failure',
              '|    -> Errors              | %-56s |\n' % '', '|       -> Internal error   | %-56s |\n' % 'Failure',
              '|                           | %-56s |\n' % 'Detected 1 fatal error on NvSwitch 0 link 0']
    result = parse_dcgmi_health(''.join(lines[:-1] + switch + lines[-1:]))
    assert [gpu['id'] for gpu in result['gpus']] == [3]
    assert result['others'] == [{'group': 'NvSwitch', 'id': 0, 'health': 'failure', 'incidents': [
        {'system': 'Internal error', 'health': 'failure', 'message': 'Detected 1 fatal error on NvSwitch 0 link 0'}]}]


@pytest.mark.parametrize('text', ['', 'hello\n', '{"body": {}}', own_fixture(DISCOVERY), own_fixture(TABLE_PASS),
                                  '+----+----+\n| Health Monitor Report |\n+====+====+\n+----+----+\n'],
                         ids=['empty', 'prose', 'other-json', 'discovery-table', 'diag-table', 'header-only'])
def test_health_not_health_raises(text):
    with pytest.raises(ParseError):
        parse_dcgmi_health(text)


@FUZZ_SETTINGS
@given(texts_from(ALL_TEXTS))
def test_parse_dcgmi_health_never_raises_anything_but_parse_error(text):
    result = only_parse_error(parse_dcgmi_health, text)
    if result is not None:
        assert result['overall'] in (None, 'healthy', 'warning', 'failure') or isinstance(result['overall'], str)
        json.dumps(result)
