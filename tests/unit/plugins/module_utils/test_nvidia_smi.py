# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for the nvidia-smi parsers, on real captures and our own fixtures."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest
from hypothesis import given

from _fuzz import FUZZ_SETTINGS, texts_from, only_parse_error
from _paths import fixture_files, own_fixture, read_fixture, real_fixture

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.nvidia_smi import (
    cpulist_expand, parse_nvidia_smi_q, parse_nvlink_errors, parse_nvlink_status, parse_query_gpu_csv,
    parse_topo_matrix)

Q_REAL = 'nvidia-smi/gpud-q-8xh100-535.183.01.txt'
TOPO_H100_NUMAID = 'nvidia-smi/nvidia-smi-535-8xh100-8nic-topo-m-gpunumaid-handmade.txt'
TOPO_H100 = 'nvidia-smi/nvidia-smi-525-8xh100-8nic-topo-m-handmade.txt'
TOPO_A100 = 'nvidia-smi/nvidia-smi-470-8xa100-4nic-topo-m-handmade.txt'
# Printed inside a Slurm job whose cpuset is socket 0 (CPU Affinity empty for GPU4-7), stdout not a terminal, tabs
# expanded to spaces in the job's log.
TOPO_SLURM_JOB = 'nvidia-smi/nvidia-smi-535-8xh100-8nic-topo-m-slurm-job-expanded-handmade.txt'
ALL_TEXTS = [read_fixture(kind, path) for kind, path in fixture_files('nvidia-smi')]


def _real_head(text):
    """``real:N``: the first N characters of the real -q capture (read in the test, so its absence skips only it)."""
    return real_fixture(Q_REAL)[:int(text[5:])] if text.startswith('real:') else text


# ---------------------------------------------------------------- cpulist

@pytest.mark.parametrize('text, expected', [
    ('0-3,8', [0, 1, 2, 3, 8]), ('0', [0]), ('0-47,96-143', list(range(48)) + list(range(96, 144))),
    ('', []), ('N/A', []), (' 5-5 ', [5]),
], ids=['range-and-single', 'single', 'h100-node', 'empty', 'na', 'spaces'])
def test_cpulist_expand(text, expected):
    assert cpulist_expand(text) == expected


@pytest.mark.parametrize('text', ['0-', 'a-b', '3-1', '1,,2', '0-99999999', None],
                         ids=['open-range', 'letters', 'reversed', 'empty-part', 'huge', 'none'])
def test_cpulist_expand_junk(text):
    with pytest.raises(ParseError):
        cpulist_expand(text)


# ---------------------------------------------------------------- topo -m

@pytest.mark.parametrize('path, ndev, nv, gpu_numa', [
    (TOPO_H100_NUMAID, 16, 'NV18', True), (TOPO_H100, 16, 'NV18', False), (TOPO_A100, 12, 'NV12', False),
], ids=['h100-535-gpu-numa-id', 'h100-525', 'a100-470'])
def test_topo_fixtures(path, ndev, nv, gpu_numa):
    result = parse_topo_matrix(own_fixture(path))
    assert len(result['devices']) == ndev
    assert result['devices'][0] == 'GPU0' and result['devices'][8] == 'NIC0'
    assert set(result['matrix']) == set(result['devices'])
    for dev in result['devices']:
        assert result['matrix'][dev][dev] == 'X'
    assert result['matrix']['GPU0']['GPU7'] == nv
    assert result['matrix']['GPU0']['NIC0'] == 'PIX'
    assert ('gpu_numa_id' in result) is gpu_numa
    assert set(result['cpu_affinity']) == set('GPU%d' % i for i in range(8))
    assert result['errors'] == []
    json.dumps(result)


def test_topo_h100_values():
    result = parse_topo_matrix(own_fixture(TOPO_H100_NUMAID))
    assert result['cpu_affinity']['GPU0'] == '0-47,96-143'
    assert result['cpu_affinity']['GPU7'] == '48-95,144-191'
    assert result['numa_affinity'] == dict(('GPU%d' % i, '0' if i < 4 else '1') for i in range(8))
    assert result['gpu_numa_id']['GPU3'] == 'N/A'
    assert result['nic_names']['NIC1'] == 'mlx5_3' and result['nic_names']['NIC7'] == 'mlx5_11'
    assert result['matrix']['NIC3'] == {'GPU0': 'NODE', 'GPU1': 'NODE', 'GPU2': 'PXB', 'GPU3': 'PIX', 'GPU4': 'SYS',
                                        'GPU5': 'SYS', 'GPU6': 'SYS', 'GPU7': 'SYS', 'NIC0': 'NODE', 'NIC1': 'NODE',
                                        'NIC2': 'PXB', 'NIC3': 'X', 'NIC4': 'SYS', 'NIC5': 'SYS', 'NIC6': 'SYS', 'NIC7': 'SYS'}
    assert cpulist_expand(result['cpu_affinity']['GPU0'])[-1] == 143


def test_topo_a100_values():
    result = parse_topo_matrix(own_fixture(TOPO_A100))
    assert result['numa_affinity']['GPU5'] == '3'
    assert result['cpu_affinity']['GPU5'] == '72-95,168-191'
    assert result['nic_names'] == {'NIC0': 'mlx5_0', 'NIC1': 'mlx5_1', 'NIC2': 'mlx5_2', 'NIC3': 'mlx5_3'}
    assert result['matrix']['GPU2']['NIC1'] == 'PIX'


def test_topo_spaces_instead_of_tabs():
    tabs = parse_topo_matrix(own_fixture(TOPO_H100_NUMAID))
    spaces = parse_topo_matrix(own_fixture(TOPO_H100_NUMAID).replace('\t', '    ').replace('\n', '\r\n'))
    assert spaces['matrix'] == tabs['matrix']
    assert spaces['cpu_affinity'] == tabs['cpu_affinity']
    assert spaces['numa_affinity'] == tabs['numa_affinity']
    assert spaces['gpu_numa_id'] == tabs['gpu_numa_id']


def test_topo_empty_cpu_affinity_cell_with_tabs():
    # Layout of a Grace-based node: CPU Affinity printed empty for the second socket's GPUs.
    text = ('\t\x1b[4mGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n'
            'GPU0\t X \tNV18\tNODE\t0-71\t0\t\t4\n'
            'GPU1\tNV18\t X \tNODE\t\t1\t\t12\n'
            'NIC0\tNODE\tNODE\t X \t\t\t\t\n\nNIC Legend:\n\n  NIC0: mlx5_0\n')
    result = parse_topo_matrix(text)
    assert result['cpu_affinity'] == {'GPU0': '0-71', 'GPU1': ''}
    assert result['numa_affinity'] == {'GPU0': '0', 'GPU1': '1'}
    assert result['gpu_numa_id'] == {'GPU0': '4', 'GPU1': '12'}


def test_topo_in_a_slurm_job_tabs_expanded():
    # The bug: with the tabs expanded and CPU Affinity empty, the NUMA node was read as the CPU affinity ('1') and
    # the GPU NUMA ID as the NUMA node ('N/A').
    result = parse_topo_matrix(own_fixture(TOPO_SLURM_JOB))
    assert result['cpu_affinity'] == dict(('GPU%d' % i, '0-47' if i < 4 else '') for i in range(8))
    assert result['numa_affinity'] == dict(('GPU%d' % i, '0' if i < 4 else '1') for i in range(8))
    assert result['gpu_numa_id'] == dict(('GPU%d' % i, 'N/A') for i in range(8))
    assert result['matrix']['GPU4']['NIC4'] == 'PIX' and len(result['devices']) == 16


def _topo_fixtures():
    return [(kind, path) for kind, path in fixture_files('nvidia-smi') if 'topo' in path]


@pytest.mark.parametrize('kind, path', _topo_fixtures(), ids=lambda value: os.path.basename(str(value)))
@pytest.mark.parametrize('tabsize', [4, 8])
def test_topo_same_parse_with_tabs_expanded(kind, path, tabsize):
    """Any topo -m, its tabs expanded (a terminal, a pager, a job log), parses the same: the matrix, the CPU and NUMA
    affinities, the GPU NUMA IDs and the NIC names."""
    text = read_fixture(kind, path)
    expected = parse_topo_matrix(text)
    expanded = parse_topo_matrix('\n'.join(line.expandtabs(tabsize) for line in text.split('\n')))
    for key in ('devices', 'matrix', 'cpu_affinity', 'numa_affinity', 'gpu_numa_id', 'nic_names'):
        assert expanded.get(key) == expected.get(key), key


def test_topo_empty_cpu_affinity_with_spaces_and_no_gpu_numa_id():
    text = ('        GPU0    GPU1    CPU Affinity    NUMA Affinity\n'
            'GPU0     X      NV12    0-23            0\n'
            'GPU1    NV12     X                      1\n')
    result = parse_topo_matrix(text)
    assert result['cpu_affinity'] == {'GPU0': '0-23', 'GPU1': ''}
    assert result['numa_affinity'] == {'GPU0': '0', 'GPU1': '1'}


@pytest.mark.parametrize('text', ['', 'GPU0 GPU1\n', 'hello\n', 'real:3000'],
                         ids=['empty', 'header-only', 'prose', 'nvidia-smi-q'])
def test_topo_not_topo_raises(text):
    text = _real_head(text)
    with pytest.raises(ParseError):
        parse_topo_matrix(text)


# ---------------------------------------------------------------- query-gpu csv

def test_query_gpu_csv_with_header_and_units():
    rows = parse_query_gpu_csv(own_fixture('nvidia-smi/nvidia-smi-535-8xh100-query-gpu-csv-handmade.txt'))
    assert len(rows) == 8
    assert rows[0]['memory.total'] == '81559'
    assert rows[0]['power.draw'] == '68.50'
    assert rows[0]['utilization.gpu'] == '0'
    assert rows[0]['clocks.sm'] == '1980'
    assert rows[3]['memory.used'] == '1234'
    assert rows[5]['ecc.errors.uncorrected.volatile.total'] == '2'
    assert rows[7]['retired_pages.pending'] is None
    assert rows[2]['pci.bus_id'] == '00000000:3A:00.0'
    assert rows[2]['name'] == 'NVIDIA H100 80GB HBM3'


def test_query_gpu_csv_noheader_nounits_with_fields():
    fields = ['index', 'name', 'pci.bus_id', 'uuid', 'driver_version', 'memory.total', 'memory.used', 'temperature.gpu',
              'power.draw', 'clocks.sm', 'utilization.gpu', 'ecc.errors.uncorrected.volatile.total', 'retired_pages.pending']
    rows = parse_query_gpu_csv(own_fixture('nvidia-smi/nvidia-smi-535-8xh100-query-gpu-csv-noheader-nounits-handmade.txt'), fields=fields)
    with_header = parse_query_gpu_csv(own_fixture('nvidia-smi/nvidia-smi-535-8xh100-query-gpu-csv-handmade.txt'))
    assert rows == with_header


def test_query_gpu_csv_noheader_with_units_and_fields():
    rows = parse_query_gpu_csv('0, 81559 MiB, 700.00 W, [N/A]\r\n1, 81559 MiB, 699.10 W, 3', fields=['index', 'memory.total', 'power.limit', 'x'])
    assert rows == [{'index': '0', 'memory.total': '81559', 'power.limit': '700.00', 'x': None},
                    {'index': '1', 'memory.total': '81559', 'power.limit': '699.10', 'x': '3'}]


@pytest.mark.parametrize('text, fields', [('', None), ('No devices were found\n', None), ('index, name\n', None),
                                          ('a, b\n', ['only_one']), ('0, x\n', 'index')],
                         ids=['empty', 'no-devices', 'header-only', 'count-mismatch', 'fields-not-list'])
def test_query_gpu_csv_raises(text, fields):
    with pytest.raises(ParseError):
        parse_query_gpu_csv(text, fields=fields)


# ---------------------------------------------------------------- nvidia-smi -q

def test_q_real_h100():
    result = parse_nvidia_smi_q(real_fixture(Q_REAL))
    assert result['driver_version'] == '535.183.01'
    assert result['cuda_version'] == '12.2'
    assert result['attached_gpus'] == 8
    assert len(result['gpus']) == 8
    first = result['gpus'][0]
    assert first['pci_bus_id'] == '00000000:53:00.0'
    assert first['product_name'] == 'NVIDIA H100 80GB HBM3'
    assert first['uuid'] == 'GPU-566e6f65-c38e-b12f-4824-6944218668b9'
    assert (first['serial'], first['vbios_version'], first['board_part_number']) == (
        '1655022005478', '96.00.74.00.01', '692-2G520-0200-000')
    assert len(set(gpu['serial'] for gpu in result['gpus'])) == 8
    assert set(gpu['vbios_version'] for gpu in result['gpus']) == set(['96.00.74.00.01'])
    assert first['minor_number'] == 0
    assert first['persistence_mode'] == 'Enabled'
    assert first['ecc']['volatile']['uncorrectable'] == 0
    assert first['ecc']['aggregate']['sram_uncorrectable_sec_ded'] == 0
    assert first['retired_pages'] == {'single_bit': None, 'double_bit': None, 'pending': None}
    assert first['remapped_rows'] == {'correctable': 0, 'uncorrectable': 0, 'pending': False, 'failure': False}
    assert [gpu['minor_number'] for gpu in result['gpus']] == list(range(8))
    assert result['gpus'][-1]['pci_bus_id'] == '00000000:CA:00.0'
    sections = result['sections']
    assert sections['GPU 00000000:53:00.0']['FB Memory Usage']['Total'] == '81559 MiB'
    assert sections['GPU 00000000:53:00.0']['PCI']['GPU Link Info']['Link Width']['Max'] == '16x'
    assert sections['GPU 00000000:53:00.0']['Clocks Event Reasons']['HW Slowdown']['HW Thermal Slowdown'] == 'Not Active'
    process = sections['GPU 00000000:75:00.0']['Processes']['Process ID']
    assert process == {'_value': '1002127', 'Type': 'C', 'Name': '/usr/bin/python', 'Used GPU Memory': '9212 MiB'}
    assert sections['GPU 00000000:53:00.0']['Processes'] == 'None'
    assert result['errors'] == []
    json.dumps(result)


def test_q_real_page_retirement_subset():
    result = parse_nvidia_smi_q(real_fixture('nvidia-smi/azurehpc-q-d-page_retirement-8gpu-535.86.10.txt'))
    assert result['driver_version'] == '535.86.10'
    assert [gpu['pci_bus_id'] for gpu in result['gpus']] == ['0000000%d:00:00.0' % i for i in range(1, 9)]
    for gpu in result['gpus']:
        assert gpu['retired_pages'] == {'single_bit': 0, 'double_bit': 0, 'pending': False}
        assert gpu['product_name'] is None and gpu['remapped_rows'] is None
        assert gpu['serial'] is None and gpu['vbios_version'] is None and gpu['board_part_number'] is None


def test_q_handmade_remap_pending():
    result = parse_nvidia_smi_q(own_fixture('nvidia-smi/nvidia-smi-470-2xa100-q-d-ecc-remap-pending-handmade.txt'))
    assert result['driver_version'] == '470.239.06'
    bad = result['gpus'][1]
    assert bad['remapped_rows'] == {'correctable': 6, 'uncorrectable': 2, 'pending': True, 'failure': False}
    assert bad['ecc']['volatile']['uncorrectable'] == 4
    assert bad['ecc']['volatile']['correctable'] == 22
    assert bad['ecc']['aggregate']['dram_uncorrectable'] == 12
    assert bad['retired_pages'] == {'single_bit': None, 'double_bit': None, 'pending': None}
    assert result['gpus'][0]['remapped_rows']['pending'] is False


def test_q_old_single_double_bit_layout_and_errors():
    text = ('==============NVSMI LOG==============\n\nDriver Version                            : 450.80.02\n'
            'GPU 00000000:3B:00.0\n    Product Name                          : Tesla V100-SXM2-32GB\n'
            '    ECC Errors\n        Volatile\n            Single Bit\n                Device Memory             : 3\n'
            '                Total                     : 3\n            Double Bit\n                Device Memory             : 1\n'
            '                Total                     : 1\n'
            '    Retired Pages\n        Single Bit ECC                    : 2\n        Double Bit ECC                    : 1\n'
            '        Pending Page Blacklist            : Yes\n'
            'Unable to determine the device handle for GPU 0000:86:00.0: Unknown Error\n')
    result = parse_nvidia_smi_q(text)
    gpu = result['gpus'][0]
    assert gpu['ecc']['volatile']['correctable'] == 3 and gpu['ecc']['volatile']['uncorrectable'] == 1
    assert gpu['serial'] is None
    assert gpu['retired_pages'] == {'single_bit': 2, 'double_bit': 1, 'pending': True}
    assert result['errors'] == ['Unable to determine the device handle for GPU 0000:86:00.0: Unknown Error']


def test_q_identity_not_available():
    # a consumer board prints no serial; a section whose key has children is not a value
    text = ('==============NVSMI LOG==============\n\nDriver Version                            : 535.183.01\n'
            'GPU 00000000:01:00.0\n    Product Name                          : NVIDIA GeForce RTX 4090\n'
            '    Serial Number                         : N/A\n    VBIOS Version                         : 95.02.18.80.5F\n'
            '    Board Part Number\n        Current                           : 900-1G136-2530-000\n')
    gpu = parse_nvidia_smi_q(text)['gpus'][0]
    assert (gpu['serial'], gpu['vbios_version'], gpu['board_part_number']) == (None, '95.02.18.80.5F', None)


@pytest.mark.parametrize('text', ['', 'hello world\n', 'GPU0\tGPU1\n'], ids=['empty', 'prose', 'topo-header'])
def test_q_not_q_raises(text):
    with pytest.raises(ParseError):
        parse_nvidia_smi_q(text)


# ---------------------------------------------------------------- nvlink

def test_nvlink_status_real_all_inactive():
    result = parse_nvlink_status(real_fixture('nvidia-smi/azurehpc-nvlink-status-a100-all-links-inactive.txt'))
    assert result['gpus'] == [{'index': 6, 'name': 'NVIDIA A100-SXM4-80GB', 'uuid': 'GPU-9667d95e-6d22-0c22-1f57-c481f13e7c44', 'links': []}]
    assert result['errors'] == ['NVML: Unable to retrieve NVLink information as all links are inactive']


def test_nvlink_status_handmade():
    result = parse_nvlink_status(own_fixture('nvidia-smi/nvidia-smi-535-8xh100-nvlink-s-2inactive-handmade.txt'))
    assert len(result['gpus']) == 8
    assert all(len(gpu['links']) == 18 for gpu in result['gpus'])
    assert result['gpus'][0]['links'][0] == {'link': 0, 'speed_gbs': 26.562, 'active': True, 'state': '26.562 GB/s'}
    inactive = [(gpu['index'], link['link']) for gpu in result['gpus'] for link in gpu['links'] if not link['active']]
    assert inactive == [(3, 4), (3, 11)]
    assert result['gpus'][3]['links'][4]['speed_gbs'] is None
    assert result['errors'] == []


def test_nvlink_errors_handmade():
    result = parse_nvlink_errors(own_fixture('nvidia-smi/nvidia-smi-535-8xh100-nvlink-e-crc-handmade.txt'))
    assert len(result['gpus']) == 8
    assert all(len(gpu['links']) == 18 for gpu in result['gpus'])
    link = result['gpus'][3]['links'][4]
    assert (link['replay_errors'], link['recovery_errors'], link['crc_errors']) == (37, 2, 1590)
    assert link['counters'] == {'Replay Errors': 37, 'Recovery Errors': 2, 'CRC Errors': 1590}
    total = sum(link['crc_errors'] for gpu in result['gpus'] for link in gpu['links'])
    assert total == 1590


def test_nvlink_errors_real_inactive_has_error_line():
    result = parse_nvlink_errors(real_fixture('nvidia-smi/azurehpc-nvlink-status-a100-all-links-inactive.txt'))
    assert result['gpus'][0]['index'] == 6 and result['gpus'][0]['links'] == []
    assert len(result['errors']) == 1


@pytest.mark.parametrize('parser', [parse_nvlink_status, parse_nvlink_errors], ids=['status', 'errors'])
@pytest.mark.parametrize('text', ['', 'hello\n', 'real:2000'], ids=['empty', 'prose', 'nvidia-smi-q'])
def test_nvlink_not_nvlink_raises(parser, text):
    text = _real_head(text)
    with pytest.raises(ParseError):
        parser(text)


# ---------------------------------------------------------------- fuzz

def _small_samples():
    """Every fixture, the 1652-line -q capture cut into slices so a fuzz run stays short."""
    samples = []
    for text in ALL_TEXTS:
        if len(text) > 8000:
            lines = text.split('\n')
            samples.extend('\n'.join(lines[start:start + 120]) for start in range(0, len(lines), 120))
        else:
            samples.append(text)
    return samples


SAMPLES = _small_samples()


@FUZZ_SETTINGS
@given(texts_from(SAMPLES))
def test_parse_topo_matrix_never_raises_anything_but_parse_error(text):
    result = only_parse_error(parse_topo_matrix, text)
    if result is not None:
        json.dumps(result)


@FUZZ_SETTINGS
@given(texts_from(SAMPLES))
def test_parse_nvidia_smi_q_never_raises_anything_but_parse_error(text):
    result = only_parse_error(parse_nvidia_smi_q, text)
    if result is not None:
        json.dumps(result)


@FUZZ_SETTINGS
@given(texts_from(SAMPLES))
def test_parse_query_gpu_csv_never_raises_anything_but_parse_error(text):
    result = only_parse_error(parse_query_gpu_csv, text)
    if result is not None:
        json.dumps(result)


@FUZZ_SETTINGS
@given(texts_from(SAMPLES))
def test_parse_nvlink_status_never_raises_anything_but_parse_error(text):
    result = only_parse_error(parse_nvlink_status, text)
    if result is not None:
        json.dumps(result)


@FUZZ_SETTINGS
@given(texts_from(SAMPLES))
def test_parse_nvlink_errors_never_raises_anything_but_parse_error(text):
    result = only_parse_error(parse_nvlink_errors, text)
    if result is not None:
        json.dumps(result)


@FUZZ_SETTINGS
@given(texts_from(['0-3,8', '0-47,96-143', '', 'N/A', '1,2,3-5']))
def test_cpulist_expand_never_raises_anything_but_parse_error(text):
    result = only_parse_error(cpulist_expand, text)
    if result is not None:
        json.dumps(result)
