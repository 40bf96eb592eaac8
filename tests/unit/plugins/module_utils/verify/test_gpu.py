# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""verify/gpu.py: one node's GPUs judged from the raw output the verify_gpu role gathers.

Real captures, our fixtures and the lab's stand-ins (lab/hwsim) with faults injected.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys

import pytest

from _paths import REPO, own_fixture, real_fixture

from ansible_collections.aicluster.infra.plugins.module_utils.dcgm import parse_dcgmi_diag
from ansible_collections.aicluster.infra.plugins.module_utils.verify import gpu

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))
try:
    from hwsim.testing import make_lab  # pylint: disable=wrong-import-position
except ImportError:  # pragma: no cover
    make_lab = None

GROUPS = [group for group, dummy in gpu.GROUPS]
EXPECTED = {'count': 8, 'model': 'h100', 'fatal_xids': [48, 79, 94, 95], 'nvlink_error_max': {'recovery_errors': 0}}
XID_79 = '[  812.1] NVRM: Xid (PCI:0000:18:00): 79, pid=\'<unknown>\', name=<unknown>, GPU has fallen off the bus.\n'


def _failed(results):
    return [r for r in results if not r['passed']]


def _by_check(results, check):
    return [r for r in results if r['check'] == check]


def _only(*groups):
    """expected['enabled'] with only ``groups`` on."""
    return dict((group, group in groups) for group in GROUPS)


def _ran(stdout, rc=0, stderr=''):
    """A registered command result."""
    return {'changed': False, 'rc': rc, 'stdout': stdout, 'stderr': stderr}


def _gpu_info(count=8, health=None):
    model = {'name': 'NVIDIA H100 80GB HBM3', 'type': 'h100', 'persistence_mode': True, 'ecc_enabled': True,
             'ecc_errors_uncorrected_volatile': 0,
             'remapped_rows_pending': False, 'remapped_rows_failure': False}
    gpus = []
    for index in range(count):
        entry = dict(model, index=index, pci_bus_id='00000000:%02X:00.0' % (0x18 + index))
        entry.update((health or {}).get(index, {}))
        gpus.append(entry)
    return {'changed': False, 'gpus': gpus, 'driver_version': '535.183.01', 'count': count}


def test_enabled_checks_by_group():
    assert gpu.enabled_checks(None) == [check for dummy, checks in gpu.GROUPS for check in checks]
    assert gpu.enabled_checks(_only('memory', 'xid')) == ['gpu.ecc_mode', 'gpu.ecc', 'gpu.retired_pages', 'gpu.row_remap', 'gpu.xid']
    assert 'gpu.dcgm_diag' not in gpu.enabled_checks({'dcgm': False})


def test_gpus_healthy_node_passes_everything():
    observed = {'gpu_info': _gpu_info(), 'dmesg': _ran('[    1.0] nothing\n'), 'compute_apps': _ran(''),
                'dcgm_diag': {'changed': False, 'overall': 'pass', 'tests': [], 'errors': []}}
    results = gpu.evaluate_gpu(observed, dict(EXPECTED, dcgm_level=1))
    assert results and not _failed(results)
    assert set(r['check'] for r in results) == {
        'gpu.count', 'gpu.model', 'gpu.persistence', 'gpu.ecc_mode', 'gpu.ecc', 'gpu.row_remap', 'gpu.xid', 'gpu.processes',
        'gpu.dcgm_diag'}


def test_gpus_faults_named_per_gpu():
    info = _gpu_info(count=7, health={2: {'persistence_mode': False}, 4: {'ecc_errors_uncorrected_volatile': 2},
                                      5: {'remapped_rows_pending': True}})
    dmesg = XID_79 + '[  900.0] NVRM: Xid (PCI:0000:19:00): 13, Graphics Exception\n'
    apps = '00000000:1E:00.0, 4242, /usr/bin/python3, 1024\n'
    results = gpu.evaluate_gpu({'gpu_info': info, 'dmesg': _ran(dmesg), 'compute_apps': _ran(apps)}, EXPECTED)
    bad = dict(((r['check'], r['subject']), r) for r in _failed(results))
    assert set(bad) == {('gpu.count', 'node'), ('gpu.persistence', 'GPU 2'), ('gpu.ecc', 'GPU 4'),
                        ('gpu.row_remap', 'GPU 5'), ('gpu.xid', 'GPU 0'), ('gpu.processes', 'GPU 6')}
    assert bad[('gpu.count', 'node')]['measured'] == 7 and bad[('gpu.count', 'node')]['threshold'] == 8
    assert bad[('gpu.xid', 'GPU 0')]['measured'] == [79]
    assert 'pid 4242' in bad[('gpu.processes', 'GPU 6')]['message']


def test_gpus_nvlink_handmade_fixtures():
    observed = {'gpu_info': _gpu_info(),
                'nvlink_status': _ran(own_fixture('nvidia-smi/nvidia-smi-535-8xh100-nvlink-s-2inactive-handmade.txt')),
                'nvlink_errors': _ran(own_fixture('nvidia-smi/nvidia-smi-535-8xh100-nvlink-e-crc-handmade.txt'))}
    results = gpu.evaluate_gpu(observed, dict(EXPECTED, nvlink_error_max={'crc_errors': 0}))
    down = _failed(_by_check(results, 'gpu.nvlink'))
    assert down and all('down:' in r['message'] for r in down)
    assert _failed(_by_check(results, 'gpu.nvlink_errors'))


def test_gpus_real_nvlink_all_inactive():
    observed = {'gpu_info': _gpu_info(),
                'nvlink_status': _ran(real_fixture('nvidia-smi/azurehpc-nvlink-status-a100-all-links-inactive.txt'))}
    results = gpu.evaluate_gpu(observed, {'enabled': _only('nvlink')})
    assert set(r['check'] for r in results) == {'gpu.nvlink'}
    bad = _failed(results)
    assert bad and any(r['subject'] == 'node' and 'all links are inactive' in r['message'] for r in bad)


def test_gpus_nvlink_output_that_is_not_the_tools_is_one_failure():
    observed = {'gpu_info': _gpu_info(), 'nvlink_status': _ran('   \n')}
    results = gpu.evaluate_gpu(observed, {'enabled': _only('nvlink')})
    assert [(r['check'], r['subject'], r['passed']) for r in results] == [('gpu.nvlink', 'node', False)]
    assert 'printed nothing' in results[0]['message']


def test_dcgm_real_level1_and_handmade_fail():
    real = parse_dcgmi_diag(real_fixture('dcgmi/diag-r1-json-8gpu-dcgm3.1.0-nulls-warning-prefix.txt'))
    result = gpu.evaluate_gpu({'gpu_info': _gpu_info(), 'dcgm_diag': dict(real, changed=False)},
                              {'enabled': _only('dcgm'), 'dcgm_level': 1})[0]
    assert result['measured'] == real['overall'] and result['passed'] is (real['overall'] == 'pass')
    fail = parse_dcgmi_diag(own_fixture('dcgmi/dcgmi-3.3-8xh100-diag-r2-table-fail-handmade.txt'))
    result = gpu.evaluate_gpu({'gpu_info': _gpu_info(), 'dcgm_diag': dict(fail, changed=False)},
                              {'enabled': _only('dcgm'), 'dcgm_level': 2})[0]
    assert not result['passed'] and 'dcgmi diag -r 2: fail' in result['message']


def test_retired_pages_rows():
    text = '0, 0, 0, No\n1, 2, 1, Yes\n2, [N/A], [N/A], [N/A]\n'
    results = gpu.evaluate_gpu({'gpu_info': _gpu_info(), 'retired': _ran(text)},
                               {'enabled': _only('memory'), 'retired_pages_max': 0})
    results = _by_check(results, 'gpu.retired_pages')
    assert [r['passed'] for r in results] == [True, False, True]
    assert 'pending' in results[1]['message'] and results[1]['measured'] == 3


def test_failed_compute_apps_query_fails_processes_only():
    observed = {'gpu_info': _gpu_info(), 'dmesg': _ran('[    1.0] nothing\n'),
                'compute_apps': _ran('', rc=9, stderr='Failed to initialize NVML: Driver/library version mismatch\n')}
    results = gpu.evaluate_gpu(observed, EXPECTED)
    bad = _failed(results)
    assert [(r['check'], r['subject']) for r in bad] == [('gpu.processes', 'node')]
    assert 'rc 9' in bad[0]['message'] and 'Driver/library version mismatch' in bad[0]['message']
    # the other checks keep their results (before the refactor, one gpu.count failure replaced them all)
    assert {'gpu.count', 'gpu.model', 'gpu.persistence', 'gpu.ecc', 'gpu.row_remap', 'gpu.xid'} <= set(
        r['check'] for r in results if r['passed'])
    assert len(_by_check(results, 'gpu.persistence')) == 8


def test_failed_compute_apps_query_claims_nothing_about_processes():
    observed = {'gpu_info': _gpu_info(), 'compute_apps': _ran('', rc=9, stderr='Failed to initialize NVML\n')}
    results = _by_check(gpu.evaluate_gpu(observed, {'enabled': _only('processes')}), 'gpu.processes')
    assert [r['passed'] for r in results] == [False]


def test_failed_dmesg_fails_xid():
    observed = {'gpu_info': _gpu_info(), 'compute_apps': _ran(''),
                'dmesg': _ran('', rc=1, stderr='dmesg: read kernel buffer failed: Operation not permitted\n')}
    results = gpu.evaluate_gpu(observed, EXPECTED)
    bad = _failed(results)
    assert [(r['check'], r['subject']) for r in bad] == [('gpu.xid', 'node')]
    assert 'Operation not permitted' in bad[0]['message']
    assert _by_check(results, 'gpu.processes')[0]['passed']


def test_failed_gpu_info_is_one_count_failure():
    results = gpu.evaluate_gpu({'gpu_info': {'failed': True, 'msg': 'nvidia-smi: command not found'}}, EXPECTED)
    assert [(r['check'], r['passed'], r['threshold']) for r in results] == [('gpu.count', False, 8)]
    assert 'nvidia-smi: command not found' in results[0]['message']


def test_skipped_tools_skip_their_checks():
    skipped = {'changed': False, 'skipped': True}
    tools = ('nvlink_status', 'nvlink_errors', 'retired', 'compute_apps', 'dmesg', 'dcgm_diag')
    observed = dict((key, skipped) for key in tools)
    observed['gpu_info'] = _gpu_info()
    checks = set(r['check'] for r in gpu.evaluate_gpu(observed, EXPECTED))
    assert checks == {'gpu.count', 'gpu.model', 'gpu.persistence', 'gpu.ecc_mode', 'gpu.ecc', 'gpu.row_remap'}


def test_gpu_fleet_driver():
    out = gpu.evaluate_gpu_fleet({'a': {'driver_version': '535.183.01'}, 'b': {'driver_version': '535.183.01'},
                                  'c': {'driver_version': '550.54.15'}})
    assert _failed(out['c']) and not _failed(out['a'])


def test_decide_gpu_checks_each_node_against_its_own_expected_values():
    """A host with its own bill of materials (molecule/bringup: gpu03 on the 570 branch, gpu02 an HGX B200) is decided
    by the host that runs the decision: each node's own expected model and driver (``expected['nodes']``) count, and
    the driver pinned per host is no fleet split."""
    b200 = dict(_gpu_info(), driver_version='580.95.05')
    b200['gpus'] = [dict(entry, name='NVIDIA B200', type='b200') for entry in b200['gpus']]
    observations = {'gpu01': {'gpu_info': dict(_gpu_info(), driver_version='580.95.05')}, 'gpu02': {'gpu_info': b200},
                    'gpu03': {'gpu_info': dict(_gpu_info(), driver_version='570.195.03')}}
    fleet = dict(EXPECTED, driver='580.95.05', enabled=_only('inventory'))
    nodes = {'gpu01': fleet, 'gpu02': dict(fleet, model='b200-sxm'), 'gpu03': dict(fleet, driver='570.195.03')}
    out = gpu.decide_gpu(observations, dict(fleet, nodes=nodes))
    assert [node for node in sorted(out['nodes']) if _failed(out['nodes'][node])] == []
    assert [node for node in sorted(out['fleet']) if _failed(out['fleet'][node])] == [] and out['cluster'] == []
    assert _by_check(out['fleet']['gpu03'], 'gpu.driver_uniform')[0]['threshold'] == '570.195.03'
    # without them, every node is held to the deciding host's values: the B200's model and 570 fail
    out = gpu.decide_gpu(observations, fleet)
    assert _failed(out['nodes']['gpu02']) and _failed(out['fleet']['gpu03'])
    # a node off its own pin still fails
    observations['gpu03']['gpu_info'] = dict(_gpu_info(), driver_version='580.95.05')
    assert _failed(gpu.decide_gpu(observations, dict(fleet, nodes=nodes))['fleet']['gpu03'])


def test_decide_gpu_keeps_an_unreadable_node_out_of_the_fleet():
    observations = {'a': {'gpu_info': _gpu_info()}, 'b': {'gpu_info': _gpu_info()},
                    'c': {'gpu_info': {'failed': True, 'msg': 'no driver'}}}
    out = gpu.decide_gpu(observations, dict(EXPECTED, driver=None))
    assert set(out) == {'nodes', 'fleet', 'cluster', 'raw'}
    assert [r['check'] for r in out['nodes']['c']] == ['gpu.count']
    assert out['raw']['c'] == {'gpu_info': {}, 'dcgm_diag': {}}
    assert 'changed' not in out['raw']['a']['gpu_info'] and out['raw']['a']['gpu_info']['count'] == 8
    assert sorted(out['fleet']) == ['a', 'b'] and not _failed(out['fleet']['a'])
    assert gpu.decide_gpu(observations, dict(EXPECTED, enabled={'inventory': False}))['fleet'] == {}


@pytest.mark.skipif(make_lab is None, reason='lab/hwsim not importable')
@pytest.mark.parametrize('fault, check, subject', [
    (['nvlink-down', '2', '5'], 'gpu.nvlink', 'GPU 2'),
    (['xid', '0', '79'], 'gpu.xid', 'GPU 0'),
    (['gpu-process', '6', '4242', '/usr/bin/python3'], 'gpu.processes', 'GPU 6'),
    (['dcgm-diag-fail', 'Inforom'], 'gpu.dcgm_diag', 'node'),
    (['power-capped', '3', '500'], 'gpu.power_limit', 'GPU 3'),
    (['thermal-throttle', '2'], 'gpu.clock_events', 'GPU 2'),
    (['pcie-degraded', '4', '8'], 'gpu.pcie_link', 'GPU 4'),
    (['fabric-state', 'in-progress'], 'gpu.fabric_state', None),
])
def test_gpu_stand_in_faults(tmp_path, fault, check, subject):
    from ansible_collections.aicluster.infra.plugins.module_utils.gpu_facts import (
        BASE_FIELDS, HEALTH_FIELDS, condition_fields, fabric_states, merge_gpu_facts)
    from ansible_collections.aicluster.infra.plugins.module_utils.nvidia_smi import parse_nvidia_smi_q, parse_query_gpu_csv
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    fmt = '--format=csv,noheader,nounits'

    def facts():
        rows = parse_query_gpu_csv(lab.ok('gpu01', ['nvidia-smi', '--query-gpu=' + ','.join(BASE_FIELDS), fmt]), fields=list(BASE_FIELDS))
        health = parse_query_gpu_csv(lab.ok('gpu01', ['nvidia-smi', '--query-gpu=' + ','.join(HEALTH_FIELDS), fmt]),
                                     fields=list(HEALTH_FIELDS))
        cond = parse_query_gpu_csv(lab.ok('gpu01', ['nvidia-smi', '--query-gpu=' + ','.join(condition_fields()), fmt]),
                                   fields=list(condition_fields()))
        fabric = fabric_states(parse_nvidia_smi_q(lab.ok('gpu01', ['nvidia-smi', '-q'])))
        return merge_gpu_facts(rows, health_rows=health, condition_rows=cond, fabric=fabric)

    def command(argv):
        rc, out, err = lab.run('gpu01', argv)
        return _ran(out, rc, err)

    def run():
        dcgm = parse_dcgmi_diag(lab.run('gpu01', ['dcgmi', 'diag', '-r', '1', '-j'])[1])
        observed = {'gpu_info': facts(), 'nvlink_status': command(['nvidia-smi', 'nvlink', '-s']),
                    'nvlink_errors': command(['nvidia-smi', 'nvlink', '-e']), 'dcgm_diag': dcgm,
                    'dmesg': command(['dmesg']),
                    'compute_apps': command(['nvidia-smi', '--query-compute-apps=' + ','.join(gpu.APPS_FIELDS), fmt])}
        return gpu.evaluate_gpu(observed, dict(EXPECTED, nvlink_error_max={}, dcgm_level=1))
    assert not _failed(run())
    assert lab.run('gpu01', ['hwsim', 'fault'] + fault)[0] == 0
    bad = _failed(run())
    if subject is None:  # a node-wide fault: every GPU, nothing else
        assert [(r['check'], r['subject']) for r in bad] == [(check, 'GPU %d' % index) for index in range(8)]
        assert 'fabric manager not ready: start nvidia-fabricmanager' in bad[0]['message']
    else:
        assert [(r['check'], r['subject']) for r in bad] == [(check, subject)]


@pytest.mark.parametrize('enabled, passed, measured', [(True, True, 'Enabled'), (False, False, 'Disabled'), (None, True, 'N/A')],
                         ids=['enabled', 'disabled', 'not-reported'])
def test_ecc_mode(enabled, passed, measured):
    observed = {'gpu_info': _gpu_info(health={3: {'ecc_enabled': enabled}})}
    results = [r for r in gpu.evaluate_gpu(observed, dict(EXPECTED, enabled=_only('memory'))) if r['check'] == 'gpu.ecc_mode']
    assert len(results) == 8 and all(r['passed'] for r in results if r['subject'] != 'GPU 3')
    mine = [r for r in results if r['subject'] == 'GPU 3'][0]
    assert (mine['passed'], mine['measured'], mine['threshold']) == (passed, measured, 'Enabled')
    if not passed:
        assert 'nvidia-smi -i 3 -e 1' in mine['message'] and 'reboot' in mine['message']


def test_ecc_mode_off_with_the_memory_group():
    observed = {'gpu_info': _gpu_info(health={0: {'ecc_enabled': False}})}
    assert not [r for r in gpu.evaluate_gpu(observed, dict(EXPECTED, enabled=_only('inventory'))) if r['check'] == 'gpu.ecc_mode']


# issue 11, GPU health part B: model by form factor, power limit, clock events, PCIe link, NVSwitch fabric state.

H100_PCIE = {'name': 'NVIDIA H100 PCIe', 'type': 'h100', 'pci_device_id': '0x2331'}
H100_NVL = {'name': 'NVIDIA H100 NVL', 'type': 'h100', 'pci_device_id': '0x2321'}
H100_SXM = {'name': 'NVIDIA H100 80GB HBM3', 'type': 'h100', 'pci_device_id': '0x2330'}
HEALTHY = {'power_limit_w': 700.0, 'power_default_limit_w': 700.0, 'clock_events': ['gpu_idle'],
           'pcie_gen_current': 5, 'pcie_gen_max': 5, 'pcie_width_current': 16, 'pcie_width_max': 16,
           'fabric_state': 'Completed', 'fabric_status': 'Success', 'model_key': 'h100-sxm', 'form_factor': 'sxm'}


def _model_result(model, gpu_fields):
    info = _gpu_info(health=dict((index, gpu_fields) for index in range(8)))
    return _by_check(gpu.evaluate_gpu({'gpu_info': info}, dict(EXPECTED, model=model, enabled=_only('inventory'))), 'gpu.model')[0]


@pytest.mark.parametrize('model, fields, passed', [
    ('h100', H100_PCIE, False),              # passed before: substring/type match gave a PCIe card the SXM bar
    ('h100', H100_NVL, False),
    ('h100', H100_SXM, True),
    ('h100-pcie', H100_PCIE, True),
    ('NVIDIA H100 PCIe', H100_PCIE, True),   # an inventory may keep the nvidia-smi name
    ('NVIDIA H100 80GB HBM3', dict(H100_SXM, pci_device_id='0x2331'), False),   # the name says SXM, the device id does not
    ('h100-sxm', dict(H100_SXM, pci_device_id=None), True),                      # no device id gathered: the exact name decides
    ('l40s', {'name': 'NVIDIA L40S', 'type': 'l40s', 'pci_device_id': '0x26b9'}, True),  # not in the table: as before
], ids=['pcie-as-h100', 'nvl-as-h100', 'sxm-as-h100', 'pcie-key', 'pcie-name', 'sxm-name-pcie-id', 'no-device-id', 'unknown-model'])
def test_model_by_form_factor(model, fields, passed):
    result = _model_result(model, fields)
    assert result['passed'] is passed
    if not passed:
        assert 'GPU 0 ' in result['message'] and 'expected' in result['message']


def test_model_message_names_the_key_and_device():
    message = _model_result('h100', H100_PCIE)['message']
    assert 'h100-pcie' in message and '0x2331' in message and 'h100-sxm' in message


def _conditions(health, **expected):
    info = _gpu_info(health=dict((index, dict(HEALTHY, **health.get(index, {}))) for index in range(8)))
    exp = dict(EXPECTED, enabled=_only('power', 'pcie', 'fabric'))
    exp.update(expected)
    return gpu.evaluate_gpu({'gpu_info': info}, exp)


def test_conditions_healthy_node_passes():
    results = _conditions({})
    assert results and not _failed(results)
    assert set(r['check'] for r in results) == {'gpu.power_limit', 'gpu.clock_events', 'gpu.pcie_link', 'gpu.fabric_state'}
    assert len(results) == 32


@pytest.mark.parametrize('enforced, default, tolerance, passed', [
    (700.0, 700.0, None, True), (500.0, 700.0, None, False), (680.0, 700.0, None, True), (680.0, 700.0, 0, False),
    (None, 700.0, None, True),
], ids=['default', 'capped', 'within-5pct', 'zero-tolerance', 'not-reported'])
def test_power_limit(enforced, default, tolerance, passed):
    results = _by_check(_conditions({3: {'power_limit_w': enforced, 'power_default_limit_w': default}},
                                    power_limit_tolerance_pct=tolerance), 'gpu.power_limit')
    mine = [r for r in results if r['subject'] == 'GPU 3'][0]
    assert mine['passed'] is passed and all(r['passed'] for r in results if r['subject'] != 'GPU 3')
    if not passed:
        assert 'power-capped' in mine['message'] and '-pl 700' in mine['message']


@pytest.mark.parametrize('events, passed', [
    (['gpu_idle'], True), (['sw_power_cap'], True), (['applications_clocks_setting'], True), ([], True), (None, True),
    (['hw_slowdown', 'hw_thermal_slowdown'], False), (['hw_slowdown', 'hw_power_brake_slowdown'], False),
    (['sw_thermal_slowdown'], False),
], ids=['idle', 'sw-power-cap', 'app-clocks', 'none', 'not-reported', 'hw-thermal', 'power-brake', 'sw-thermal'])
def test_clock_events(events, passed):
    mine = [r for r in _by_check(_conditions({2: {'clock_events': events}}), 'gpu.clock_events') if r['subject'] == 'GPU 2'][0]
    assert mine['passed'] is passed
    if not passed:
        assert 'clocks held down' in mine['message']


@pytest.mark.parametrize('gen, width, strict, passed, words', [
    (5, 16, False, True, ''),
    (1, 16, False, True, 'idle GPUs train down'),   # an idle GPU's downtrained generation is not a fault
    (1, 16, True, False, 'under load'),
    (5, 8, False, False, 'reseat'),
], ids=['full', 'idle-gen1', 'gen1-strict', 'x8'])
def test_pcie_link(gen, width, strict, passed, words):
    results = _by_check(_conditions({4: {'pcie_gen_current': gen, 'pcie_width_current': width}}, pcie_gen_strict=strict),
                        'gpu.pcie_link')
    mine = [r for r in results if r['subject'] == 'GPU 4'][0]
    assert mine['passed'] is passed and words in mine['message']
    assert mine['threshold'] == 'gen 5 x16'


@pytest.mark.parametrize('fields, passed, words', [
    ({'fabric_state': 'In Progress', 'fabric_status': 'N/A'}, False, 'fabric manager not ready: start nvidia-fabricmanager'),
    ({'fabric_state': 'Not Started', 'fabric_status': None}, False, 'fabric manager not ready'),
    ({'fabric_state': 'Completed', 'fabric_status': 'Failure'}, False, 'fabric manager not ready'),
    ({'fabric_state': None, 'fabric_status': None, 'model_key': 'h100-pcie', 'form_factor': 'pcie'}, True, 'N/A'),
    ({'fabric_state': None, 'fabric_status': None}, True, 'not reported'),
], ids=['in-progress', 'not-started', 'failure', 'pcie-na', 'sxm-not-reported'])
def test_fabric_state(fields, passed, words):
    mine = [r for r in _by_check(_conditions({0: fields}), 'gpu.fabric_state') if r['subject'] == 'GPU 0'][0]
    assert mine['passed'] is passed and words in mine['message']


def test_condition_groups_switch_their_checks():
    bad = dict(HEALTHY, power_limit_w=300.0, clock_events=['hw_slowdown'], pcie_width_current=4, fabric_state='In Progress')
    info = _gpu_info(health={0: bad})
    for group, checks in (('power', {'gpu.power_limit', 'gpu.clock_events'}), ('pcie', {'gpu.pcie_link'}),
                          ('fabric', {'gpu.fabric_state'})):
        results = gpu.evaluate_gpu({'gpu_info': info}, dict(EXPECTED, enabled=_only(group)))
        assert set(r['check'] for r in _failed(results)) == checks
