# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from _paths import own_fixture

from ansible_collections.aicluster.infra.plugins.modules import cdi_info

UUIDS = ['GPU-8c3f0d6e-31a2-4b7e-9f10-2a6b5c4d3e01', 'GPU-1d2e3f40-5a6b-4c7d-8e9f-0a1b2c3d4e02',
         'GPU-6b7c8d9e-0f1a-4b2c-9d3e-4f5a6b7c8d03', 'GPU-a0b1c2d3-e4f5-4a6b-8c7d-9e0f1a2b3c04']
BUSES = ['18', '2A', '3A', '5D']


def _smi_q(minors=(0, 1, 2, 3), driver='570.133.20'):
    """A short `nvidia-smi -q` in its layout: the header, the driver and one section per GPU."""
    text = ('\n==============NVSMI LOG==============\n\n'
            'Timestamp                                 : Mon Mar  2 10:15:04 2026\n'
            'Driver Version                            : %s\n'
            'CUDA Version                              : 12.8\n\n'
            'Attached GPUs                             : %d\n' % (driver, len(minors)))
    for minor in minors:
        text += ('GPU 00000000:%s:00.0\n    Product Name                          : NVIDIA H100 80GB HBM3\n'
                 '    GPU UUID                              : %s\n    Minor Number                          : %d\n'
                 % (BUSES[minor], UUIDS[minor], minor))
    return text


def _host(tmp_path, nodes=('nvidia0', 'nvidia1', 'nvidia2', 'nvidia3', 'nvidiactl', 'nvidia-uvm', 'nvidia-uvm-tools',
                           'nvidia-modeset'), static=False, managed=True):
    dev = tmp_path / 'dev'
    (dev / 'dri').mkdir(parents=True)
    for node in nodes:
        (dev / node).write_text('')
    for card in range(1, 5):
        (dev / 'dri' / ('card%d' % card)).write_text('')
        (dev / 'dri' / ('renderD%d' % (127 + card))).write_text('')
    etc, run = tmp_path / 'etc-cdi', tmp_path / 'run-cdi'
    etc.mkdir()
    run.mkdir()
    spec = own_fixture('nvidia-ctk/cdi-spec-1.17.8-4xh100-handmade.yaml')
    if static:
        (etc / 'nvidia.yaml').write_text(spec)
    if managed:
        (run / 'nvidia.yaml').write_text(spec)
    return {'dev_dir': str(dev), 'spec_dirs': [str(etc), str(run)], 'managed_spec': str(run / 'nvidia.yaml')}


LIST = (0, own_fixture('nvidia-ctk/cdi-list-1.17.8-4xh100-tty-handmade.txt').split('\n', 1)[1],
        'time="2026-03-02T10:15:04Z" level=info msg="Found 9 CDI devices"\n')


def test_converged_node(run_module, tmp_path):
    args = _host(tmp_path)
    result, calls = run_module(cdi_info, args, {'nvidia-ctk': LIST, 'nvidia-smi': (0, _smi_q(), '')})
    assert not result.get('failed') and result['changed'] is False
    assert calls == [['/usr/bin/nvidia-ctk', 'cdi', 'list'], ['/usr/bin/nvidia-smi', '-q']]
    assert result['messages'] == [] and result['refresh_needed'] is False
    assert result['live_nodes'] == ['/dev/nvidia0', '/dev/nvidia1', '/dev/nvidia2', '/dev/nvidia3']
    assert result['gpus'][3] == {'index': 3, 'uuid': UUIDS[3], 'minor': 3, 'driver_version': '570.133.20'}
    assert result['specs'][0]['devices'][-1] == 'all' and result['specs'][0]['driver_version'] == '570.133.20'


def test_gpu_gone_and_static_duplicate(run_module, tmp_path):
    args = _host(tmp_path, nodes=('nvidia0', 'nvidia1', 'nvidia3', 'nvidiactl', 'nvidia-uvm', 'nvidia-uvm-tools',
                                  'nvidia-modeset'), static=True)
    result, _calls = run_module(cdi_info, args, {'nvidia-ctk': LIST, 'nvidia-smi': (0, _smi_q((0, 1, 3)), '')})
    checks = [p['check'] for p in result['problems']]
    assert checks == ['duplicate', 'node-missing', 'node-missing', 'all-stale', 'gpu-stale']
    assert result['refresh_needed'] is True
    assert result['messages'][1].endswith('names /dev/nvidia2 (device 2, %s, all), which does not exist' % UUIDS[2])
    assert [p['refresh'] for p in result['problems']] == [False, False, True, True, True]


def test_nvidia_smi_fails(run_module, tmp_path):
    args = _host(tmp_path)
    mismatch = (18, 'Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 580.95\n', '')
    result, _calls = run_module(cdi_info, args, {'nvidia-ctk': LIST, 'nvidia-smi': mismatch})
    assert result['messages'] == ['nvidia-smi cannot read the GPUs, so the specs cannot be compared with them: Failed '
                                  'to initialize NVML: Driver/library version mismatch NVML library version: 580.95 '
                                  '(rc 18)']


def test_no_spec_anywhere(run_module, tmp_path):
    args = _host(tmp_path, managed=False)
    empty = (0, '', 'time="2026-03-02T10:15:04Z" level=info msg="Found 0 CDI devices"\n')
    result, _calls = run_module(cdi_info, args, {'nvidia-ctk': empty, 'nvidia-smi': (0, _smi_q(), '')})
    assert [p['check'] for p in result['problems']] == ['no-spec']
    assert result['refresh_needed'] is True


def test_unreadable_spec_is_a_problem_not_a_failure(run_module, tmp_path):
    args = _host(tmp_path)
    with open(os.path.join(args['spec_dirs'][0], 'broken.yaml'), 'w', encoding='utf-8') as handle:
        handle.write('cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: [unterminated\n')
    result, _calls = run_module(cdi_info, args, {'nvidia-ctk': LIST, 'nvidia-smi': (0, _smi_q(), '')})
    assert not result.get('failed')
    assert [p['check'] for p in result['problems']] == ['spec-unreadable']


def test_nvidia_ctk_missing_fails(run_module, tmp_path):
    result, _calls = run_module(cdi_info, _host(tmp_path), {'nvidia-smi': (0, _smi_q(), '')})
    assert result['failed'] and 'nvidia-ctk' in result['msg']


def test_cdi_list_error_fails_with_the_output(run_module, tmp_path):
    result, _calls = run_module(cdi_info, _host(tmp_path), {'nvidia-ctk': (1, '', 'Incorrect Usage: x\n'),
                                                            'nvidia-smi': (0, _smi_q(), '')})
    assert result['failed'] and result['rc'] == 1 and result['stderr'] == 'Incorrect Usage: x\n'
