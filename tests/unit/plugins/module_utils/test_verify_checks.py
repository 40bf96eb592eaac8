# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""verify_checks on real captures, our fixtures and the lab's stand-ins (lab/hwsim) with faults injected."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys

import pytest

from _paths import REPO, own_fixture, real_fixture

from ansible_collections.aicluster.infra.plugins.module_utils import verify_checks as vc
from ansible_collections.aicluster.infra.plugins.module_utils.dcgm import parse_dcgmi_diag
from ansible_collections.aicluster.infra.plugins.module_utils.iblinkinfo import parse_iblinkinfo
from ansible_collections.aicluster.infra.plugins.module_utils.ibstat import parse_ibstat
from ansible_collections.aicluster.infra.plugins.module_utils.nccl_tests import parse_nccl_tests
from ansible_collections.aicluster.infra.plugins.module_utils.nvidia_smi import parse_nvlink_errors, parse_nvlink_status
from ansible_collections.aicluster.infra.plugins.module_utils.perftest import parse_perftest
from ansible_collections.aicluster.infra.plugins.module_utils.verify.results import validate_results, drain_reason

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))
try:
    from hwsim.testing import make_lab  # pylint: disable=wrong-import-position
except ImportError:  # pragma: no cover
    make_lab = None

NDR_HCAS = ['mlx5_0', 'mlx5_3', 'mlx5_4', 'mlx5_5', 'mlx5_6', 'mlx5_7', 'mlx5_8', 'mlx5_9']


def _failed(results):
    return [r for r in results if not r['passed']]


def _by_check(results, check):
    return [r for r in results if r['check'] == check]


# ports --------------------------------------------------------------------

def test_ports_real_h100_with_three_ports_down():
    ib_info = {'hcas': parse_ibstat(real_fixture('ibstat/gpud-h100-ib-ndr-cx7-eth-cx6dx-3down.txt'))['cas']}
    # the InfiniBand ports (GPU fabric) are all up; the three down ones are Ethernet
    assert not _failed(vc.evaluate_ports(ib_info, {'link_layer': 'InfiniBand', 'rate_gbps': 400}))
    results = vc.evaluate_ports(ib_info, {'rate_gbps': 400})
    states = _failed(_by_check(results, 'ib.port_state'))
    assert sorted(r['subject'] for r in states) == ['mlx5_2:1', 'mlx5_7:1', 'mlx5_8:1']
    assert all('expected Active/LinkUp' in r['message'] for r in states)
    assert all(r['threshold'] == 'Active/LinkUp' for r in states)
    # a down port's rate is not 400 either
    assert set(r['subject'] for r in _failed(_by_check(results, 'ib.port_rate'))) >= set(r['subject'] for r in states)


def test_ports_missing_hca_and_wrong_link_layer():
    ib_info = {'hcas': parse_ibstat(real_fixture('ibstat/gpud-h100-roce400-cx7-all-active.txt'))['cas']}
    names = [ca['name'] for ca in ib_info['hcas']]
    results = vc.evaluate_ports(ib_info, {'hcas': names[:2] + ['mlx5_99'], 'link_layer': 'InfiniBand'})
    missing = _failed(_by_check(results, 'ib.hca_present'))
    assert [r['subject'] for r in missing] == ['mlx5_99']
    layers = _failed(_by_check(results, 'ib.link_layer'))
    assert len(layers) == 2 and layers[0]['measured'] == 'Ethernet' and 'mlxconfig' in layers[0]['message']


def test_ports_no_hca_at_all():
    results = vc.evaluate_ports({'hcas': []}, {'link_layer': 'InfiniBand'})
    assert results[0]['check'] == 'ib.hca_present' and not results[0]['passed']


def test_fleet_firmware_and_ofed_odd_ones_out():
    def info(firmware, ofed):
        return {'hcas': [{'name': 'mlx5_0', 'firmware_version': firmware,
                          'ports': [{'port': 1, 'state': 'Active', 'rate_gbps': 400.0, 'link_layer': 'InfiniBand'}]}],
                'ofed_version': ofed}
    fleet = {'gpu01': info('28.39.1002', 'OFED-24.04'), 'gpu02': info('28.39.1002', 'OFED-24.04'),
             'gpu03': info('28.37.1014', 'OFED-23.10')}
    out = vc.evaluate_ib_fleet(fleet, {'link_layer': 'InfiniBand'})
    assert not _failed(out['gpu01']) and not _failed(out['gpu02'])
    odd = _failed(out['gpu03'])
    assert sorted(r['check'] for r in odd) == ['ib.firmware_uniform', 'ib.ofed_uniform']
    firmware = _by_check(odd, 'ib.firmware_uniform')[0]
    assert firmware['measured'] == '28.37.1014' and firmware['threshold'] == '28.39.1002'
    assert 'mlxfwmanager' in firmware['message']
    # two nodes, two versions: no majority, both fail
    out = vc.evaluate_ib_fleet({'a': fleet['gpu01'], 'b': fleet['gpu03']}, {'link_layer': 'InfiniBand', 'checks': ['ib.ofed_uniform']})
    assert _failed(out['a']) and _failed(out['b']) and 'no majority' in out['a'][0]['message']


def test_fleet_rate_without_expected_rate():
    def info(rate):
        return {'hcas': [{'name': 'mlx5_0', 'ports': [{'port': 1, 'state': 'Active', 'rate_gbps': rate, 'link_layer': 'InfiniBand'}]}]}
    out = vc.evaluate_ib_fleet({'a': info(400.0), 'b': info(400.0), 'c': info(100.0)}, {'checks': ['ib.port_rate']})
    assert _failed(out['c'])[0]['measured'] == 100.0 and not _failed(out['a'])


# fabric -------------------------------------------------------------------

def test_fabric_handmade_ndr_leaf_with_1x_and_slow_link():
    parsed = parse_iblinkinfo(own_fixture('iblinkinfo/iblinkinfo-2.x-ndr-leaf-1x-could-be-handmade.txt'))
    degraded = [link for link in parsed['links'] if link['degraded']]
    assert degraded
    owners = set()
    for link in degraded:
        name = link['peer_name'] if link['node_type'] == 'Switch' else link['node_name']
        owners.add((name or '').split()[0] if name else None)
    nodes = dict((owner, ['mlx5_0']) for owner in owners if owner)
    out = vc.evaluate_fabric(parsed, nodes, {'rail_check': False})
    assert out['degraded']
    failing = [r for results in out['nodes'].values() for r in _failed(results)]
    assert failing
    for result in failing:
        assert result['check'] in ('fabric.link_width', 'fabric.link_speed')
        assert result['peer'] and 'port' in result['peer']


@pytest.mark.skipif(make_lab is None, reason='lab/hwsim not importable')
def test_fabric_from_the_stand_in_1x_link_names_both_ends(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=3)
    assert lab.run('gpu02', ['hwsim', 'fault', 'link-width', 'mlx5_3', '1X'])[0] == 0
    assert lab.run('gpu03', ['hwsim', 'fault', 'link-speed', 'mlx5_5', '53.125'])[0] == 0
    parsed = parse_iblinkinfo(lab.ok('gpu01', ['iblinkinfo']))
    nodes = dict(('gpu%02d' % n, NDR_HCAS) for n in (1, 2, 3))
    out = vc.evaluate_fabric(parsed, nodes, {'rail_check': True})
    assert not _failed(out['nodes']['gpu01'])
    width = _failed(out['nodes']['gpu02'])
    assert [(r['check'], r['subject'], r['measured']) for r in width] == [('fabric.link_width', 'mlx5_3:1', '1X')]
    assert 'leaf-rail1' in width[0]['peer']
    speed = _failed(out['nodes']['gpu03'])
    assert [(r['check'], r['subject']) for r in speed] == [('fabric.link_speed', 'mlx5_5:1')]
    assert 'Could be' in speed[0]['message']
    rails = _by_check(out['nodes']['gpu01'], 'fabric.rail')
    assert len(rails) == 8 and all(r['passed'] for r in rails)


def test_rail_check_finds_a_crossed_cable():
    def ca(node, hca, switch):
        return {'node_type': 'CA', 'node_name': '%s %s' % (node, hca), 'port': 1, 'width': '4X', 'lane_speed_gbps': 106.25,
                'state': 'Active', 'peer_name': 'MF0;%s:MQM9790/U1' % switch, 'peer_port': 1, 'could_be': None}
    links = [ca('a', 'mlx5_0', 'leaf0'), ca('a', 'mlx5_1', 'leaf1'), ca('b', 'mlx5_0', 'leaf0'), ca('b', 'mlx5_1', 'leaf1'),
             ca('c', 'mlx5_0', 'leaf1'), ca('c', 'mlx5_1', 'leaf0')]
    nodes = dict((n, ['mlx5_0', 'mlx5_1']) for n in 'abc')
    out = vc.evaluate_fabric({'links': links}, nodes, {'rail_check': True})
    assert not _failed(out['nodes']['a'])
    crossed = _failed(out['nodes']['c'])
    assert sorted(r['rail'] for r in crossed) == [0, 1] and crossed[0]['check'] == 'fabric.rail'


# perftest -------------------------------------------------------------------

@pytest.mark.parametrize('rate, data', [(400, 400.0), (200, 200.0), (100, 100.0), (56, 54.55), (40, 32.0), (None, None), (7, None)])
def test_data_rate_from_ibstat_rate(rate, data):
    assert vc.data_rate_gbps(rate) == data


def test_perftest_pair_from_handmade_ndr_capture():
    parsed = parse_perftest(own_fixture('perftest/perftest-4.5-ib_write_bw-ndr-cx7-report-gbits-all-sizes-client-handmade.txt'))
    pair = vc.perftest_pair_result(parsed, 'write_bw', 'gpu01', 'gpu02', 0, 'mlx5_0', 'mlx5_0', 400.0, 0.9)
    assert pair['threshold'] == 360.0 and pair['unit'] == 'Gb/s'
    assert pair['measured'] == max(parsed['results'], key=lambda r: r['bytes'])['bw_average']
    assert pair['passed'] is (pair['measured'] >= 360.0)


def test_perftest_pair_real_loopback_in_mb_per_sec_is_converted():
    parsed = parse_perftest(real_fixture('perftest/superbench-ib_write_bw-loopback-8M-interleaved.txt'))
    pair = vc.perftest_pair_result(parsed, 'write_bw', 'a', 'b', 0, 'mlx5_0', 'mlx5_0', 200.0, 0.9)
    row = max(parsed['results'], key=lambda r: r['bytes'])
    assert parsed['units'] != 'Gb/sec'
    assert pair['measured'] > 0 and abs(pair['measured'] - row['bw_average'] * 8 / (1000.0 if parsed['units'] == 'MB/sec'
                                                                                    else 1000 / 1.048576)) < 0.1


def test_perftest_connection_refused_fails_with_the_tools_words():
    parsed = parse_perftest(own_fixture('perftest/perftest-4.5-ib_write_bw-client-connection-refused-handmade.txt'))
    pair = vc.perftest_pair_result(parsed, 'write_bw', 'a', 'b', 0, 'mlx5_0', 'mlx5_0', 400.0, 0.9)
    assert pair['passed'] is False and pair['measured'] is None and pair['errors']


def _pair(client, server, rail, measured, threshold=360.0):
    return {'test': 'write_bw', 'client': client, 'server': server, 'rail': rail, 'hca': 'mlx5_%d' % rail,
            'peer_hca': 'mlx5_%d' % rail, 'measured': measured, 'threshold': threshold, 'unit': 'Gb/s',
            'passed': measured is not None and measured >= threshold, 'errors': [], 'line_rate': 400.0}


def test_perftest_blames_the_node_failing_with_two_partners():
    pairs = [_pair('gpu01', 'gpu02', 1, 180.0), _pair('gpu03', 'gpu01', 1, 388.0), _pair('gpu02', 'gpu03', 1, 181.0),
             _pair('gpu01', 'gpu02', 0, 389.0), _pair('gpu03', 'gpu01', 0, 388.0)]
    nodes = dict((n, ['mlx5_0', 'mlx5_1']) for n in ('gpu01', 'gpu02', 'gpu03'))
    out = vc.evaluate_perftest(pairs, nodes)
    assert not _failed(out['nodes']['gpu01']) and not _failed(out['nodes']['gpu03'])
    bad = _failed(out['nodes']['gpu02'])
    assert len(bad) == 1 and bad[0]['rail'] == 1 and bad[0]['partners'] == ['gpu01', 'gpu03']
    assert '180' in bad[0]['message'] and '360' in bad[0]['message']
    assert drain_reason(bad).startswith('aicluster: perftest.write_bw mlx5_1 -> gpu01 mlx5_1, gpu03 mlx5_1')
    assert 'faulty side' in _by_check(out['nodes']['gpu01'], 'perftest.write_bw')[1]['message']


def test_perftest_two_node_fleet_fails_both_when_final():
    nodes = {'a': ['mlx5_0'], 'b': ['mlx5_0']}
    out = vc.evaluate_perftest([_pair('a', 'b', 0, 100.0)], nodes)
    assert _failed(out['nodes']['a']) and _failed(out['nodes']['b'])
    assert 'could not be re-tested' in out['nodes']['a'][0]['message']


@pytest.mark.skipif(make_lab is None, reason='lab/hwsim not importable')
def test_perftest_stand_in_hca_bw_low_between_two_lab_hosts(tmp_path):
    import threading
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=2)
    assert lab.run('gpu02', ['hwsim', 'fault', 'hca-bw-low', 'mlx5_3', '0.5'])[0] == 0
    outputs = {}

    def server():
        outputs['server'] = lab.run('gpu02', ['ib_write_bw', '-d', 'mlx5_3', '-p', '18601', '--report_gbits'])
    thread = threading.Thread(target=server)
    thread.start()
    status = None
    for dummy in range(50):
        status, out, err = lab.run('gpu01', ['ib_write_bw', '-d', 'mlx5_3', '-p', '18601', '--report_gbits', '127.0.0.1'])
        if status == 0:
            break
        import time
        time.sleep(0.1)
    thread.join(30)
    assert status == 0, err
    pair = vc.perftest_pair_result(parse_perftest(out), 'write_bw', 'gpu01', 'gpu02', 1, 'mlx5_3', 'mlx5_3',
                                   vc.data_rate_gbps(400), 0.9)
    assert pair['passed'] is False and pair['measured'] < 360.0


# mtu ------------------------------------------------------------------------

def test_mtu_pass_and_fail():
    ok = vc.evaluate_mtu(0, '3 packets transmitted, 3 received', '', 'gpu02', 9000)[0]
    assert ok['passed'] and ok['measured'] == 9000
    bad = vc.evaluate_mtu(1, 'PING gpu02 (10.0.0.2) 8972(9000) bytes of data.\n'
                             'ping: local error: message too long, mtu=1500\n', '', 'gpu02', 9000)[0]
    assert not bad['passed'] and bad['measured'] == 1500 and 'message too long' in bad['message']
    assert 'ping -M do -s 8972' in bad['message']


# gpus -----------------------------------------------------------------------

def _gpu_info(count=8, health=None):
    gpu = {'name': 'NVIDIA H100 80GB HBM3', 'type': 'h100', 'persistence_mode': True, 'ecc_errors_uncorrected_volatile': 0,
           'remapped_rows_pending': False, 'remapped_rows_failure': False}
    gpus = []
    for index in range(count):
        entry = dict(gpu, index=index, pci_bus_id='00000000:%02X:00.0' % (0x18 + index))
        entry.update((health or {}).get(index, {}))
        gpus.append(entry)
    return {'gpus': gpus, 'driver_version': '535.183.01', 'count': count}


EXPECTED = {'count': 8, 'model': 'h100', 'fatal_xids': [48, 79, 94, 95], 'nvlink_error_max': {'recovery_errors': 0}}


def test_gpus_healthy_node_passes_everything():
    results = vc.evaluate_gpus(_gpu_info(), EXPECTED, dmesg_text='[    1.0] nothing\n', compute_apps=[],
                               dcgm={'overall': 'pass', 'tests': [], 'level': 1})
    assert results and not _failed(results)


def test_gpus_faults_named_per_gpu():
    info = _gpu_info(count=7, health={2: {'persistence_mode': False}, 4: {'ecc_errors_uncorrected_volatile': 2},
                                      5: {'remapped_rows_pending': True}})
    dmesg = ('[  812.1] NVRM: Xid (PCI:0000:18:00): 79, pid=\'<unknown>\', name=<unknown>, GPU has fallen off the bus.\n'
             '[  900.0] NVRM: Xid (PCI:0000:19:00): 13, Graphics Exception\n')
    apps = [{'gpu_bus_id': '00000000:1E:00.0', 'pid': '4242', 'process_name': '/usr/bin/python3', 'used_memory': '1024'}]
    results = vc.evaluate_gpus(info, EXPECTED, dmesg_text=dmesg, compute_apps=apps)
    bad = dict(((r['check'], r['subject']), r) for r in _failed(results))
    assert set(bad) == {('gpu.count', 'node'), ('gpu.persistence', 'GPU 2'), ('gpu.ecc', 'GPU 4'),
                        ('gpu.row_remap', 'GPU 5'), ('gpu.xid', 'GPU 0'), ('gpu.processes', 'GPU 6')}
    assert bad[('gpu.count', 'node')]['measured'] == 7 and bad[('gpu.count', 'node')]['threshold'] == 8
    assert bad[('gpu.xid', 'GPU 0')]['measured'] == [79]
    assert 'pid 4242' in bad[('gpu.processes', 'GPU 6')]['message']


def test_gpus_nvlink_handmade_fixtures():
    status = parse_nvlink_status(own_fixture('nvidia-smi/nvidia-smi-535-8xh100-nvlink-s-2inactive-handmade.txt'))
    errors = parse_nvlink_errors(own_fixture('nvidia-smi/nvidia-smi-535-8xh100-nvlink-e-crc-handmade.txt'))
    results = vc.evaluate_gpus(_gpu_info(), dict(EXPECTED, nvlink_error_max={'crc_errors': 0}), nvlink=status,
                               nvlink_errors=errors)
    down = _failed(_by_check(results, 'gpu.nvlink'))
    assert down and all('down:' in r['message'] for r in down)
    assert _failed(_by_check(results, 'gpu.nvlink_errors'))


def test_gpus_real_nvlink_all_inactive():
    status = parse_nvlink_status(real_fixture('nvidia-smi/azurehpc-nvlink-status-a100-all-links-inactive.txt'))
    results = vc.evaluate_gpus(_gpu_info(), {'checks': ['gpu.nvlink']}, nvlink=status)
    bad = _failed(results)
    assert bad and any(r['subject'] == 'node' and 'all links are inactive' in r['message'] for r in bad)


def test_dcgm_real_level1_and_handmade_fail():
    real = parse_dcgmi_diag(real_fixture('dcgmi/diag-r1-json-8gpu-dcgm3.1.0-nulls-warning-prefix.txt'))
    result = vc.evaluate_gpus(_gpu_info(), {'checks': ['gpu.dcgm_diag']}, dcgm=dict(real, level=1))[0]
    assert result['measured'] == real['overall'] and result['passed'] is (real['overall'] == 'pass')
    fail = parse_dcgmi_diag(own_fixture('dcgmi/dcgmi-3.3-8xh100-diag-r2-table-fail-handmade.txt'))
    result = vc.evaluate_gpus(_gpu_info(), {'checks': ['gpu.dcgm_diag']}, dcgm=dict(fail, level=2))[0]
    assert not result['passed'] and 'dcgmi diag -r 2: fail' in result['message']


def test_retired_pages_rows():
    rows = [{'index': '0', 'retired_pages.sbe': '0', 'retired_pages.dbe': '0', 'retired_pages.pending': 'No'},
            {'index': '1', 'retired_pages.sbe': '2', 'retired_pages.dbe': '1', 'retired_pages.pending': 'Yes'},
            {'index': '2', 'retired_pages.sbe': '[N/A]', 'retired_pages.dbe': '[N/A]', 'retired_pages.pending': '[N/A]'}]
    results = vc.evaluate_gpus(_gpu_info(), {'checks': ['gpu.retired_pages'], 'retired_pages_max': 0}, retired=rows)
    assert [r['passed'] for r in results] == [True, False, True]
    assert 'pending' in results[1]['message'] and results[1]['measured'] == 3


def test_gpu_fleet_driver():
    out = vc.evaluate_gpu_fleet({'a': {'driver_version': '535.183.01'}, 'b': {'driver_version': '535.183.01'},
                                 'c': {'driver_version': '550.54.15'}})
    assert _failed(out['c']) and not _failed(out['a'])


@pytest.mark.skipif(make_lab is None, reason='lab/hwsim not importable')
@pytest.mark.parametrize('fault, check, subject', [
    (['nvlink-down', '2', '5'], 'gpu.nvlink', 'GPU 2'),
    (['xid', '0', '79'], 'gpu.xid', 'GPU 0'),
    (['gpu-process', '6', '4242', '/usr/bin/python3'], 'gpu.processes', 'GPU 6'),
    (['dcgm-diag-fail', 'Inforom'], 'gpu.dcgm_diag', 'node'),
])
def test_gpu_stand_in_faults(tmp_path, fault, check, subject):
    from ansible_collections.aicluster.infra.plugins.filter.verify import verify_gpus
    from ansible_collections.aicluster.infra.plugins.module_utils.gpu_facts import BASE_FIELDS, HEALTH_FIELDS, merge_gpu_facts
    from ansible_collections.aicluster.infra.plugins.module_utils.nvidia_smi import parse_query_gpu_csv
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)

    def facts():
        fmt = '--format=csv,noheader,nounits'
        rows = parse_query_gpu_csv(lab.ok('gpu01', ['nvidia-smi', '--query-gpu=' + ','.join(BASE_FIELDS), fmt]), fields=list(BASE_FIELDS))
        health = parse_query_gpu_csv(lab.ok('gpu01', ['nvidia-smi', '--query-gpu=' + ','.join(HEALTH_FIELDS), fmt]),
                                     fields=list(HEALTH_FIELDS))
        return merge_gpu_facts(rows, health_rows=health)

    def run():
        dcgm = parse_dcgmi_diag(lab.run('gpu01', ['dcgmi', 'diag', '-r', '1', '-j'])[1])
        dcgm['level'] = 1
        return verify_gpus(
            facts(), dict(EXPECTED, nvlink_error_max={}), nvlink_status=lab.ok('gpu01', ['nvidia-smi', 'nvlink', '-s']),
            nvlink_errors=lab.ok('gpu01', ['nvidia-smi', 'nvlink', '-e']), dcgm=dcgm, dmesg=lab.ok('gpu01', ['dmesg']),
            compute_apps=lab.ok('gpu01', ['nvidia-smi', '--query-compute-apps=gpu_bus_id,pid,process_name,used_memory',
                                          '--format=csv,noheader,nounits']))
    assert not _failed(run())
    assert lab.run('gpu01', ['hwsim', 'fault'] + fault)[0] == 0
    bad = _failed(run())
    assert [(r['check'], r['subject']) for r in bad] == [(check, subject)]


# nccl -----------------------------------------------------------------------

def test_nccl_real_a100_legacy_and_handmade_h100():
    legacy = parse_nccl_tests(real_fixture('nccl-tests/superbench-allreduce-8xa100-40gb-legacy-error-col.txt'))
    busbw, wrong, errors = vc.nccl_measure(legacy, 1 << 30)
    assert busbw > 100 and wrong == 0 and errors == []
    threshold = vc.nccl_threshold({'a100': 200, 'h100': 400}, 'NVIDIA A100-SXM4-40GB')
    assert threshold == 200.0
    results = vc.evaluate_nccl(legacy, threshold, median=busbw, model='A100')
    assert not _failed(results), results
    wrong = parse_nccl_tests(own_fixture('nccl-tests/nccl-tests-2.13-8xh100-allreduce-wrong-handmade.txt'))
    bad = _failed(vc.evaluate_nccl(wrong, 400.0))
    assert 'nccl.wrong' in [r['check'] for r in bad]
    failure = parse_nccl_tests(own_fixture('nccl-tests/nccl-tests-2.13-8xh100-allreduce-ncclfailure-handmade.txt'))
    bad = _by_check(vc.evaluate_nccl(failure, 400.0), 'nccl.wrong')[0]
    assert not bad['passed'] and 'failed' in bad['message']


def test_nccl_slow_node_against_the_median():
    def run(busbw):
        return {'rows': [{'size': 8 << 30, 'oop_busbw': busbw, 'ip_busbw': busbw, 'oop_wrong': 0, 'ip_wrong': 0}], 'errors': []}
    values = [470.0, 468.0, 300.0]
    median = vc.nccl_fleet_median(values)
    assert median == 468.0
    slow = vc.evaluate_nccl(run(300.0), 250.0, median=median, slow_fraction=0.1)
    assert [r['check'] for r in _failed(slow)] == ['nccl.slow_node']
    assert _by_check(slow, 'nccl.slow_node')[0]['threshold'] == 421.2
    assert not _failed(vc.evaluate_nccl(run(470.0), 250.0, median=median))


def test_nccl_unknown_model_without_threshold_fails_asking_for_one():
    result = _by_check(vc.evaluate_nccl({'rows': [], 'errors': []}, None, model='NVIDIA B200'), 'nccl.busbw')[0]
    assert not result['passed'] and 'verify_nccl_busbw_min_gbs' in result['message']


def test_nccl_real_multi_node_two_h100_nodes():
    parsed = parse_nccl_tests(real_fixture('nccl-tests/gcp-a3mega-2node-16xh100-tcpxo-allreduce.txt'))
    out = vc.evaluate_nccl_multi_node(parsed, 100.0, ['a', 'b'])
    assert set(out['nodes']) == {'a', 'b'} and out['summary']['busbw'] > 0
    assert out['nodes']['a'][0]['check'] == 'nccl.multi_node_busbw'


# collecting and the gate ----------------------------------------------------

def test_collect_and_gate():
    fail = {'gpu02': [vc.new_result('fabric.link_width', 'mlx5_3:1', '1X', '4X', False, 'trained at 1X')]}
    ok = {'gpu01': [vc.new_result('gpu.count', 'node', 8, 8, True, '8 GPUs')],
          'gpu03': [vc.new_result('gpu.count', 'node', 8, 8, True, '8 GPUs')],
          'gpu04': [vc.new_result('gpu.count', 'node', 8, 8, True, '8 GPUs')],
          'gpu02': [vc.new_result('gpu.count', 'node', 8, 8, True, '8 GPUs')]}
    nodes = vc.collect_nodes(['gpu01', 'gpu02', 'gpu03', 'gpu04', 'gpu05'], [ok, fail])
    assert nodes['gpu01']['passed'] and not nodes['gpu02']['passed']
    assert nodes['gpu05']['results'][0]['check'] == 'node.reachable' and not nodes['gpu05']['passed']
    slurm = [{'NodeName': 'gpu01', 'State': 'IDLE'},
             {'NodeName': 'gpu02', 'State': 'IDLE'},
             {'NodeName': 'gpu03', 'State': 'IDLE+DRAIN', 'Reason': 'aicluster: gpu.xid GPU 3 [root@2026-01-06T10:02:33]'},
             {'NodeName': 'gpu04', 'State': 'IDLE+DRAIN', 'Reason': 'cable swap, ticket 12 [ops@2026-01-06T10:02:33]'}]
    actions = vc.gate_actions(nodes, slurm, 'drain')
    assert actions['gpu01']['action'] == 'none'
    assert actions['gpu02'] == dict(actions['gpu02'], action='drain', reason='aicluster: fabric.link_width mlx5_3:1')
    assert actions['gpu03']['action'] == 'resume'
    assert actions['gpu04']['action'] == 'none' and 'someone else' in actions['gpu04']['note']
    assert actions['gpu05']['action'] == 'none' and 'not a Slurm node' in actions['gpu05']['note']
    assert vc.gate_actions(nodes, slurm, 'report')['gpu02']['action'] == 'none'
    assert vc.gate_actions(nodes, slurm, 'fail')['gpu03']['action'] == 'resume'
    # already drained by the gate for the same reason: nothing to do
    slurm[1] = {'NodeName': 'gpu02', 'State': 'IDLE+DRAIN', 'Reason': 'aicluster: fabric.link_width mlx5_3:1 [root@x]'}
    assert vc.gate_actions(nodes, slurm, 'drain')['gpu02']['action'] == 'none'
    # a failing node drained by an operator keeps the operator's reason
    fail4 = {'gpu04': [vc.new_result('gpu.xid', 'GPU 1', [79], 'none', False, 'xid')]}
    nodes = vc.collect_nodes(['gpu04'], [fail4])
    assert vc.gate_actions(nodes, slurm, 'drain')['gpu04']['action'] == 'none'


def test_collected_nodes_validate_in_a_document():
    from ansible_collections.aicluster.infra.plugins.filter.verify import verify_document
    nodes = vc.collect_nodes(['a'], [{'a': [vc.new_result('gpu.count', 'node', 8, 8, True, '8 GPUs')]}])
    doc = verify_document(nodes, {'started': 'x', 'finished': 'y', 'inventory': 'i', 'collection_version': '0.1.0',
                                  'mode': 'drain'})
    assert validate_results(doc) == [] and doc['summary']['verdict'] == 'PASS'


@pytest.mark.parametrize('state, drained', [('IDLE+DRAIN', True), ('DRAINED', True), ('MIXED+DRAIN', True), ('DOWN+DRAIN+NOT_RESPONDING', True),
                                            ('IDLE', False), ('DOWN', False), (None, False)])
def test_is_drained(state, drained):
    assert vc.is_drained(state) is drained


def test_nccl_multi_node_launch_error_comes_first():
    out = vc.evaluate_nccl_multi_node({}, 300.0, ['a', 'b'], 1 << 24,
                                      'srun exited 1: srun: error: Unable to allocate resources: Requested node configuration is not available')
    result = out['nodes']['a'][0]
    assert result['passed'] is False and result['measured'] is None
    assert 'Requested node configuration is not available' in result['message']
    assert out['summary']['errors'][0].startswith('srun exited 1: ')
    assert vc.evaluate_nccl_multi_node({}, 300.0, ['a'], 1 << 24)['summary']['errors'] == []
