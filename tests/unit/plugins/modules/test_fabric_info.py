# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from _paths import own_fixture

from ansible_collections.aicluster.infra.plugins.modules import fabric_info

# No real iblinkinfo capture exists in shared/fixtures/real: these are the
# parser engineers' fixtures in the iblinkinfo.c layout.
NDR_LEAF = own_fixture('iblinkinfo/iblinkinfo-2.x-ndr-leaf-1x-could-be-handmade.txt')
HDR_SPINE = own_fixture('iblinkinfo/iblinkinfo-2.x-hdr-spine-ca-blocks-down-handmade.txt')
DISCOVER_FAILED = own_fixture('iblinkinfo/iblinkinfo-2.x-ndr-leaf-ibwarn-discover-failed-handmade.txt')


def test_links_and_degraded(run_module):
    result, calls = run_module(fabric_info, {}, {'iblinkinfo': (0, NDR_LEAF, '')})
    assert calls == [['/usr/bin/iblinkinfo']]
    assert result['changed'] is False
    links = result['links']
    assert len(links) == 16
    first = links[0]
    assert first['node_type'] == 'Switch'
    assert first['node_guid'] == '0xfc6a1c0300e0a100'
    assert first['node_name'] == 'MF0;lab-leaf-01:MQM9790/U1'
    assert first['node_lid'] == 7 and first['port'] == 1
    assert first['width'] == '4X' and first['lane_speed_gbps'] == 106.25
    assert first['state'] == 'Active' and first['physical_state'] == 'LinkUp'
    assert first['peer_lid'] == 101 and first['peer_port'] == 1 and first['peer_name'] == 'gpu-node-01 mlx5_0'
    assert first['degraded'] is False
    degraded = result['degraded']
    assert [(link['port'], link['peer_name']) for link in degraded] == [(3, 'gpu-node-02 mlx5_0'), (6, 'gpu-node-03 mlx5_1')]
    assert degraded[0]['width'] == '1X' and degraded[0]['could_be'] == 'Could be 4X'
    assert result['errors'] == []


def test_switch_and_ca_blocks(run_module):
    result, dummy = run_module(fabric_info, {}, {'iblinkinfo': (0, HDR_SPINE, '')})
    types = set(link['node_type'] for link in result['links'])
    assert types == {'Switch', 'CA'}
    assert [link['node_name'] for link in result['degraded']] == ['Quantum Mellanox Technologies', 'hpc-a03 HCA-1']


@pytest.mark.parametrize('args, argv', [
    ({'switches_only': True}, ['--switches-only']),
    ({'cas_only': True, 'down_only': True}, ['--cas-only', '--down']),
    ({'ca': 'mlx5_0', 'port': 1}, ['-C', 'mlx5_0', '-P', '1']),
])
def test_options_build_argv(run_module, args, argv):
    dummy, calls = run_module(fabric_info, args, {'iblinkinfo': (0, NDR_LEAF, '')})
    assert calls == [['/usr/bin/iblinkinfo'] + argv]


def test_switches_only_and_cas_only_exclude_each_other(run_module):
    result, calls = run_module(fabric_info, {'switches_only': True, 'cas_only': True}, {'iblinkinfo': (0, NDR_LEAF, '')})
    assert result['failed'] is True and 'mutually exclusive' in result['msg']
    assert calls == []


def test_bad_port(run_module):
    result, calls = run_module(fabric_info, {'port': 0}, {'iblinkinfo': (0, NDR_LEAF, '')})
    assert result['failed'] is True and 'port' in result['msg']
    assert calls == []


def test_check_mode_still_returns_facts(run_module):
    result, calls = run_module(fabric_info, {'_ansible_check_mode': True}, {'iblinkinfo': (0, NDR_LEAF, '')})
    assert result['changed'] is False and len(result['links']) == 16
    assert len(calls) == 1


def test_iblinkinfo_missing(run_module):
    result, calls = run_module(fabric_info, {}, {})
    assert result['failed'] is True and 'iblinkinfo' in result['msg']
    assert calls == []


def test_partial_output_with_discover_failed(run_module):
    result, dummy = run_module(fabric_info, {}, {'iblinkinfo': (255, DISCOVER_FAILED, '')})
    assert 'failed' not in result
    assert len(result['links']) == 2
    assert 'discover failed' in result['errors']
    assert any('rc=255' in warning for warning in result['warnings'])


def test_failure_without_links(run_module):
    err = 'ibwarn: [1234] mad_rpc_open_port: client_register for mgmt 1 failed\nibpanic: [1234] main: Failed to open \'mlx5_0\' port \'1\'\n'
    result, dummy = run_module(fabric_info, {}, {'iblinkinfo': (255, '', err)})
    assert result['failed'] is True
    assert result['msg'].startswith('iblinkinfo failed with rc=255')
    assert result['cmd'] == ['/usr/bin/iblinkinfo'] and result['rc'] == 255
    assert result['stdout'] == '' and 'ibpanic' in result['stderr']


def test_unparseable_output(run_module):
    result, dummy = run_module(fabric_info, {}, {'iblinkinfo': (0, 'Usage: iblinkinfo [options]\n', '')})
    assert result['failed'] is True
    assert 'not iblinkinfo output' in result['msg']


def _subnet_per_ca(texts):
    """iblinkinfo answering per -C: a fabric of one subnet per adapter."""
    def answer(argv):
        ca = argv[argv.index('-C') + 1] if '-C' in argv else 'mlx5_0'
        return texts[ca]
    return answer


def _one_ca(guid, lid, switch_lid):
    return ('Switch: 0xfc6a1c03000100%02x MF0;leaf:MQM9790/U1:\n'
            '           %d    1[  ] ==( 4X       106.25 Gbps Active/  LinkUp)==>      %d    1[  ] "gpu01 x" ( )\n'
            'CA: gpu01 x:\n'
            '      %s %6d    1[  ] ==( 4X       106.25 Gbps Active/  LinkUp)==>      %d    1[  ] "MF0;leaf:MQM9790/U1" ( )\n'
            % (switch_lid, switch_lid, lid, guid, lid, switch_lid))


def test_reads_one_per_subnet_and_tags_each_link(run_module):
    texts = {'mlx5_0': (0, _one_ca('0x946dae0300010000', 101, 1), ''), 'mlx5_3': (0, _one_ca('0x946dae0300010003', 101, 1), '')}
    reads = [{'ca': 'mlx5_0', 'guid': '0x946dae0300010000'}, {'ca': 'mlx5_3', 'guid': '0x946dae0300010003'}]
    result, calls = run_module(fabric_info, {'reads': reads}, {'iblinkinfo': _subnet_per_ca(texts)})
    assert calls == [['/usr/bin/iblinkinfo', '-C', 'mlx5_0', '-P', '1'], ['/usr/bin/iblinkinfo', '-C', 'mlx5_3', '-P', '1']]
    assert [link['source'] for link in result['links']] == ['mlx5_0:1'] * 2 + ['mlx5_3:1'] * 2
    assert [(read['status'], read['links']) for read in result['reads']] == [('read', 2), ('read', 2)]


def test_reads_skip_a_subnet_already_read(run_module):
    # one subnet: the first read already printed the port of mlx5_3
    both = _one_ca('0x946dae0300010000', 101, 1) + _one_ca('0x946DAE0300010003', 104, 1).split('\n', 2)[2]
    reads = [{'ca': 'mlx5_0', 'guid': '0x946dae0300010000'}, {'ca': 'mlx5_3', 'guid': '0x946dae0300010003'}]
    result, calls = run_module(fabric_info, {'reads': reads}, {'iblinkinfo': (0, both, '')})
    assert len(calls) == 1
    assert [read['status'] for read in result['reads']] == ['read', 'skipped']


def test_reads_a_failed_read_is_reported_and_the_others_kept(run_module):
    texts = {'mlx5_0': (1, '', "ibwarn: [1] mad_rpc_open_port: can't open UMAD port ((mlx5_0):1)\n"),
             'mlx5_3': (0, _one_ca('0x946dae0300010003', 101, 1), '')}
    reads = [{'ca': 'mlx5_0'}, {'ca': 'mlx5_3'}]
    result, dummy = run_module(fabric_info, {'reads': reads}, {'iblinkinfo': _subnet_per_ca(texts)})
    assert 'failed' not in result and len(result['links']) == 2
    assert [read['status'] for read in result['reads']] == ['failed', 'read']
    assert any(line.startswith('mlx5_0:1: iblinkinfo failed') for line in result['errors'])
    every = dict(texts, mlx5_3=texts['mlx5_0'])
    result, dummy = run_module(fabric_info, {'reads': reads}, {'iblinkinfo': _subnet_per_ca(every)})
    assert result['failed'] is True and result['msg'].startswith('every fabric read failed')


def test_reads_exclude_ca(run_module):
    result, calls = run_module(fabric_info, {'reads': [{'ca': 'mlx5_0'}], 'ca': 'mlx5_0'}, {'iblinkinfo': (0, NDR_LEAF, '')})
    assert result['failed'] is True and calls == []
