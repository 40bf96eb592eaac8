"""lab/hwsim ``dcgmi health``: watches set with ``-s``, ``-c`` follows the host's GPU faults, parsed back with parse_dcgmi_health.

For every profile, healthy and with each GPU fault kind, ``dcgmi health -c`` (table and ``-j``) on
gpu01 of a small lab must parse into the incidents modules/health/DcgmHealthWatch.cpp raises for
that fault: ``ecc-pending`` a Memory failure (volatile DBEs, plus the pending page retirement
warning), ``nvlink-down`` an NVLINK failure, Xid 95 a Memory failure (uncontained error), and
nothing for ``row-remap-pending`` (DCGM's health watch checks row remap failures, not pending
remaps) or any other Xid.
"""
import os
import sys

import pytest

from _paths import REPO

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))

# pylint: disable=wrong-import-position
from ansible_collections.aicluster.infra.plugins.module_utils.dcgm import parse_dcgmi_health  # noqa: E402
from hwsim.testing import PROFILES, make_lab  # noqa: E402

TRIAGE = 'Check DCGM and system logs for errors. Reset GPU. Restart DCGM. Rerun diagnostics.'
DBE = ('Detected 2 volatile double-bit ECC error(s) in GPU {gpu}. Drain the GPU and reset it or reboot the node., '
       'A pending retired page has been detected in GPU {gpu}. Monitor - this GPU can still perform workload')
WIDTH = 88

# scenario -> (fault argvs, {NVML index: [(system, health, message)]}); every scenario runs with all watches set
SCENARIOS = {
    'healthy': ([], {}),
    'ecc-pending': ([['ecc-pending', '4']], {4: [('Memory', 'failure', DBE.format(gpu=4))]}),
    'row-remap-pending': ([['row-remap-pending', '5']], {}),
    'nvlink-down': ([['nvlink-down', '2', '5']], {2: [('NVLINK', 'failure', "GPU 2's NvLink link 5 is currently down " + TRIAGE)]}),
    'nvlink-down-replaced': ([['nvlink-down', '2', '5'], ['nvlink-down', '2', '1']], {2: [(
        'NVLINK', 'failure', "GPU 2's NvLink link 1 is currently down " + TRIAGE)]}),
    'xid-79': ([['xid', '0', '79']], {}),
    'xid-95': ([['xid', '6', '95']], {6: [('Memory', 'failure', 'GPU had an uncontained error (XID 95) Drain the GPU and reset it or reboot the node.')]}),
    'gpu-missing': ([['gpu-missing', '3']], {}),
    'gpu-missing-ecc': ([['gpu-missing', '3'], ['ecc-pending', '4']], {3: [('Memory', 'failure', DBE.format(gpu=3))]}),
    'ecc-and-nvlink': ([['ecc-pending', '1'], ['nvlink-down', '5', '0']], {
        1: [('Memory', 'failure', DBE.format(gpu=1))], 5: [('NVLINK', 'failure', "GPU 5's NvLink link 0 is currently down " + TRIAGE)]}),
}


@pytest.fixture(scope='module', params=PROFILES)
def lab(request, tmp_path_factory):
    return make_lab(tmp_path_factory.mktemp(request.param), request.param)


def _fault(lab, argvs):
    lab.ok('gpu01', ['hwsim', 'clear'])
    for argv in argvs:
        lab.ok('gpu01', ['hwsim', 'fault'] + argv)


def _expected_gpus(expected):
    return [{'id': index, 'health': max((health for _system, health, _message in rows), key=['warning', 'failure'].index),
             'incidents': [{'system': system, 'health': health, 'message': message} for system, health, message in rows]}
            for index, rows in sorted(expected.items())]


@pytest.mark.parametrize('scenario', list(SCENARIOS))
def test_health_check_follows_faults(lab, scenario):
    argvs, expected = SCENARIOS[scenario]
    _fault(lab, argvs)
    assert lab.ok('gpu01', ['dcgmi', 'health', '-s', 'a']) == 'Health monitor systems set successfully.\n'
    table = lab.ok('gpu01', ['dcgmi', 'health', '-c'])
    document = lab.ok('gpu01', ['dcgmi', 'health', '-c', '-j'])
    parsed = parse_dcgmi_health(table)
    assert parsed['overall'] == ('failure' if expected else 'healthy')
    assert parsed['gpus'] == _expected_gpus(expected)
    assert (parsed['others'], parsed['errors'], parsed['format']) == ([], [], 'table')
    assert dict(parse_dcgmi_health(document), format='table') == parsed
    assert all(len(line) == WIDTH for line in table.splitlines())
    assert table.splitlines()[1].startswith('| Health Monitor Report ') and table.splitlines()[2].startswith('+====')


def test_health_watches_decide_what_is_checked(lab):
    _fault(lab, [['ecc-pending', '4'], ['nvlink-down', '2', '5']])
    lab.ok('gpu01', ['dcgmi', 'health', '--clear'])
    status, out, _err = lab.run('gpu01', ['dcgmi', 'health', '-c'])
    assert status == 255 and out == 'Error: Health watches not enabled. Please enable watches. \n'
    assert parse_dcgmi_health(out)['errors'] == ['Error: Health watches not enabled. Please enable watches.']
    lab.ok('gpu01', ['dcgmi', 'health', '-s', 'n'])
    parsed = parse_dcgmi_health(lab.ok('gpu01', ['dcgmi', 'health', '-c']))
    assert [(gpu['id'], [incident['system'] for incident in gpu['incidents']]) for gpu in parsed['gpus']] == [(2, ['NVLINK'])]
    lab.ok('gpu01', ['dcgmi', 'health', '-s', 'pmit'])
    parsed = parse_dcgmi_health(lab.ok('gpu01', ['dcgmi', 'health', '-c']))
    assert [(gpu['id'], [incident['system'] for incident in gpu['incidents']]) for gpu in parsed['gpus']] == [(4, ['Memory'])]
    fetched = lab.ok('gpu01', ['dcgmi', 'health', '-f']).splitlines()
    assert fetched[0] == 'Health monitor systems report' and len(fetched) == 13
    assert [line.split('|')[1].strip() + '=' + line.split('|')[2].strip() for line in fetched[2:12]] == [
        'PCIe=On', 'NVLINK=Off', 'Memory=On', 'SM=Off', 'InfoROM=On', 'Thermal=On', 'Power=On', 'Driver=Off',
        'NvSwitch NF=Off', 'NvSwitch F=Off']
    assert '"PCIe" :' in lab.ok('gpu01', ['dcgmi', 'health', '-f', '-j'])
    # the other host's watches and faults are its own
    status, out, _err = lab.run('gpu02', ['dcgmi', 'health', '-c'])
    assert status == 255 and parse_dcgmi_health(out)['overall'] is None
    _fault(lab, [])


@pytest.mark.parametrize('argv', [['-s', 'x'], ['-s', 'pp'], ['-s', 'ap'], ['-s'], ['-c', '-f'], [], ['-q']],
                         ids=['unknown-flag', 'repeated-flag', 'a-with-others', 'no-flags', 'two-actions', 'no-action', 'unknown-option'])
def test_health_bad_arguments(lab, argv):
    status, out, err = lab.run('gpu01', ['dcgmi', 'health'] + argv)
    assert status == 2 and out == '' and err.startswith('Usage: dcgmi health')


def test_health_group_and_intervals_accepted(lab):
    assert lab.ok('gpu01', ['dcgmi', 'health', '-g', '0', '-s', 'mn', '-u', '10', '-m', '3600']).startswith('Health monitor systems set')
    assert parse_dcgmi_health(lab.ok('gpu01', ['dcgmi', 'health', '-g', '0', '-c']))['overall'] == 'healthy'


def test_health_host_without_gpus(lab):
    status, out, err = lab.run('ctl01', ['dcgmi', 'health', '-c'])
    assert status == 255 and out == ''
    assert parse_dcgmi_health(err)['errors'][-1] == 'Error: Unable to connect to host engine. Host engine connection invalid/disconnected.'
