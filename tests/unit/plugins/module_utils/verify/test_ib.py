# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""verify/ib.py: ports per node, firmware/OFED/rate across the fleet, and the role's one call (decide_ib)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from _paths import real_fixture

from ansible_collections.aicluster.infra.plugins.module_utils.ibstat import parse_ibstat
from ansible_collections.aicluster.infra.plugins.module_utils.verify import ib


def _failed(results):
    return [r for r in results if not r['passed']]


def _by_check(results, check):
    return [r for r in results if r['check'] == check]


def _info(firmware='28.39.1002', ofed='OFED-24.04', rate=400.0, names=('mlx5_0',)):
    return {'hcas': [{'name': name, 'firmware_version': firmware,
                      'ports': [{'port': 1, 'state': 'Active', 'physical_state': 'LinkUp', 'rate_gbps': rate,
                                 'link_layer': 'InfiniBand'}]} for name in names],
            'ofed_version': ofed}


def test_ports_real_h100_with_three_ports_down():
    ib_info = {'hcas': parse_ibstat(real_fixture('ibstat/gpud-h100-ib-ndr-cx7-eth-cx6dx-3down.txt'))['cas']}
    # the InfiniBand ports (GPU fabric) are all up; the three down ones are Ethernet
    assert not _failed(ib.evaluate_ib(ib_info, {'link_layer': 'InfiniBand', 'rate_gbps': 400}))
    results = ib.evaluate_ib(ib_info, {'rate_gbps': 400})
    states = _failed(_by_check(results, 'ib.port_state'))
    assert sorted(r['subject'] for r in states) == ['mlx5_2:1', 'mlx5_7:1', 'mlx5_8:1']
    assert all('expected Active/LinkUp' in r['message'] for r in states)
    assert all(r['threshold'] == 'Active/LinkUp' for r in states)
    # a down port's rate is not 400 either
    assert set(r['subject'] for r in _failed(_by_check(results, 'ib.port_rate'))) >= set(r['subject'] for r in states)


def test_ports_missing_hca_and_wrong_link_layer():
    ib_info = {'hcas': parse_ibstat(real_fixture('ibstat/gpud-h100-roce400-cx7-all-active.txt'))['cas']}
    names = [ca['name'] for ca in ib_info['hcas']]
    results = ib.evaluate_ib(ib_info, {'hcas': names[:2] + ['mlx5_99'], 'link_layer': 'InfiniBand'})
    missing = _failed(_by_check(results, 'ib.hca_present'))
    assert [r['subject'] for r in missing] == ['mlx5_99']
    layers = _failed(_by_check(results, 'ib.link_layer'))
    assert len(layers) == 2 and layers[0]['measured'] == 'Ethernet' and 'mlxconfig' in layers[0]['message']


def test_ports_no_hca_at_all():
    results = ib.evaluate_ib({'hcas': []}, {'link_layer': 'InfiniBand'})
    assert results[0]['check'] == 'ib.hca_present' and not results[0]['passed']


def test_checked_hcas_configured_first_else_by_link_layer():
    info = _info(names=('mlx5_0', 'mlx5_1'))
    info['hcas'].append({'name': 'mlx5_2', 'ports': [{'port': 1, 'link_layer': 'Ethernet'}]})
    assert ib.checked_hcas(info, ['mlx5_1']) == ['mlx5_1']
    assert ib.checked_hcas(info, None, 'InfiniBand') == ['mlx5_0', 'mlx5_1']
    assert ib.checked_hcas(info) == ['mlx5_0', 'mlx5_1', 'mlx5_2']
    assert ib.checked_hcas(None) == []


def test_fleet_firmware_and_ofed_odd_ones_out():
    fleet = {'gpu01': _info(), 'gpu02': _info(), 'gpu03': _info('28.37.1014', 'OFED-23.10')}
    out = ib.evaluate_ib_fleet(fleet, {'link_layer': 'InfiniBand'})
    assert not _failed(out['gpu01']) and not _failed(out['gpu02'])
    odd = _failed(out['gpu03'])
    assert sorted(r['check'] for r in odd) == ['ib.firmware_uniform', 'ib.ofed_uniform']
    firmware = _by_check(odd, 'ib.firmware_uniform')[0]
    assert firmware['measured'] == '28.37.1014' and firmware['threshold'] == '28.39.1002'
    assert 'mlxfwmanager' in firmware['message']
    # two nodes, two versions: no majority, both fail
    out = ib.evaluate_ib_fleet({'a': fleet['gpu01'], 'b': fleet['gpu03']},
                               {'link_layer': 'InfiniBand', 'fleet_checks': ['ib.ofed_uniform']})
    assert _failed(out['a']) and _failed(out['b']) and 'no majority' in out['a'][0]['message']


def test_fleet_rate_without_expected_rate():
    out = ib.evaluate_ib_fleet({'a': _info(rate=400.0), 'b': _info(rate=400.0), 'c': _info(rate=100.0)},
                               {'fleet_checks': ['ib.port_rate']})
    assert _failed(out['c'])[0]['measured'] == 100.0 and not _failed(out['a'])


def test_decide_ib_with_a_failed_ib_info():
    observations = {
        'gpu01': {'ib_info': dict(_info(names=('mlx5_0', 'mlx5_3')), changed=False)},
        'gpu02': {'ib_info': {'failed': True, 'msg': 'ibstat: command not found'}},
    }
    expected = {'hcas': ['mlx5_0', 'mlx5_3'], 'port': 1, 'rate_gbps': 400, 'link_layer': 'InfiniBand'}
    out = ib.decide_ib(observations, expected)
    assert {'nodes', 'fleet', 'raw', 'checked', 'identity', 'fabric_reads'} <= set(out)
    bad = out['nodes']['gpu02']
    assert len(bad) == 1 and bad[0]['check'] == 'ib.hca_present' and bad[0]['passed'] is False
    assert 'ibstat: command not found' in bad[0]['message']
    assert out['raw']['gpu02'] == {'ib_info': None}
    assert out['checked']['gpu02'] == ['mlx5_0', 'mlx5_3']
    # the readable node is judged as usual and the failed one stays out of the fleet comparison
    assert out['nodes']['gpu01'] and not _failed(out['nodes']['gpu01'])
    assert out['raw']['gpu01'] == {'ib_info': {'hcas': observations['gpu01']['ib_info']['hcas'], 'ofed_version': 'OFED-24.04'}}
    assert 'gpu02' not in out['fleet'] and not _failed(out['fleet']['gpu01'])


def test_decide_ib_switches_and_unread_nodes():
    observations = {'a': {'ib_info': _info()}, 'b': {'ib_info': _info()}, 'c': {}}
    out = ib.decide_ib(observations, {'ports': False, 'uniform': True})
    assert out['nodes'] == {'a': [], 'b': [], 'c': []}
    assert sorted(r['check'] for r in out['fleet']['a']) == ['ib.firmware_uniform', 'ib.ofed_uniform']
    assert out['checked'] == {'a': ['mlx5_0'], 'b': ['mlx5_0'], 'c': []}
    out = ib.decide_ib(observations, {'ports': False, 'uniform': False})
    assert out['fleet'] == {} and out['raw']['a'] == {'ib_info': None}


def test_decide_ib_maps_each_hca_to_its_guids_and_plans_the_fabric_read():
    def info(node):
        out = _info(names=('mlx5_0', 'mlx5_3'))
        for number, ca in enumerate(out['hcas']):
            ca['node_guid'] = '0x946DAE03000%d000%d' % (node, number)
            ca['ports'][0].update(port_guid='0x946dae03000%d000%d' % (node, number), sm_lid=1)
        return out
    observations = {'gpu01': {'ib_info': info(1)}, 'gpu02': {'ib_info': info(2)}}
    out = ib.decide_ib(observations, {'port': 1, 'link_layer': 'InfiniBand', 'fabric_host': 'gpu02'})
    assert out['identity']['gpu01'] == {'mlx5_0': ['0x946dae0300010000'], 'mlx5_3': ['0x946dae0300010001']}
    assert out['fabric_reads']['host'] == 'gpu02'
    assert [(read['ca'], read['guid']) for read in out['fabric_reads']['reads']] == [
        ('mlx5_0', '0x946dae0300020000'), ('mlx5_3', '0x946dae0300020001')]


def test_decide_ib_reads_identity_for_the_fabric_with_port_checks_off():
    info = _info(names=('mlx5_0',))
    info['hcas'][0]['ports'][0]['port_guid'] = '0x1'
    out = ib.decide_ib({'gpu01': {'ib_info': info}}, {'ports': False, 'uniform': False, 'link_layer': 'InfiniBand'})
    assert out['nodes'] == {'gpu01': []} and out['fleet'] == {}
    assert out['identity'] == {'gpu01': {'mlx5_0': ['0x0000000000000001']}} and out['checked'] == {'gpu01': ['mlx5_0']}
    assert out['fabric_reads']['host'] == 'gpu01'


def test_checked_hcas_in_device_order_not_lexical():
    info = _info(names=('mlx5_0', 'mlx5_10', 'mlx5_11', 'mlx5_3', 'mlx5_9'))
    assert ib.checked_hcas(info, None, 'InfiniBand') == ['mlx5_0', 'mlx5_3', 'mlx5_9', 'mlx5_10', 'mlx5_11']


def _b200_info(flag=True):
    """A DGX B200's RDMA devices as ib_info returns them with nvswitch_bridges=include: the four NVSwitch bridge
    functions mlx5_0..mlx5_3 first (siderolabs/extensions #895), then the compute HCAs, all InfiniBand and Active."""
    info = _info(names=tuple('mlx5_%d' % n for n in range(6)))
    for hca in info['hcas'][:4]:
        hca['nvswitch_bridge'] = flag
    if not flag:
        info['nvswitch_bridges'] = ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3']
    return info


@pytest.mark.parametrize('flag', [True, False], ids=['hca-flag', 'bridges-list'])
def test_checked_hcas_leave_the_nvswitch_bridges_out(flag):
    """verify_ib's default (every InfiniBand HCA): rail 0 is the first compute HCA, not a bridge."""
    info = _b200_info(flag)
    assert ib.checked_hcas(info, None, 'InfiniBand') == ['mlx5_4', 'mlx5_5']
    assert ib.checked_hcas(info, ['mlx5_0']) == ['mlx5_0']  # named explicitly: the operator's choice
