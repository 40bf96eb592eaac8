# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

import pytest

from _paths import own_fixture, real_fixture

from ansible_collections.aicluster.infra.plugins.module_utils.gpu_facts import BASE_FIELDS, HEALTH_FIELDS, condition_fields
from ansible_collections.aicluster.infra.plugins.modules import gpu_info

# Real `nvidia-smi -q` of an 8x H100 node (driver 535.183.01, CUDA 12.2): it
# answers the `-q` call (CUDA version, Fabric sections), and the --query-gpu CSV
# below is built from its values, so the two agree.
TOPO = own_fixture('nvidia-smi/nvidia-smi-535-8xh100-8nic-topo-m-gpunumaid-handmade.txt')
BASE_ARGV = ['/usr/bin/nvidia-smi', '--query-gpu=' + ','.join(BASE_FIELDS), '--format=csv,noheader,nounits']
HEALTH_ARGV = ['/usr/bin/nvidia-smi', '--query-gpu=' + ','.join(HEALTH_FIELDS), '--format=csv,noheader,nounits']
COND_ARGV = ['/usr/bin/nvidia-smi', '--query-gpu=' + ','.join(condition_fields()), '--format=csv,noheader,nounits']
OLD_COND_ARGV = ['/usr/bin/nvidia-smi', '--query-gpu=' + ','.join(condition_fields('clocks_throttle_reasons')),
                 '--format=csv,noheader,nounits']


def _gpus_of_q(text):
    """(bus_id, name, uuid, memory MiB, persistence) of every GPU section of a real -q capture."""
    gpus = []
    for section in re.split(r'\n(?=GPU [0-9A-F]{8}:)', text)[1:]:
        bus = re.match(r'GPU (\S+)', section).group(1)
        name = re.search(r'Product Name\s+: (.+)', section).group(1).strip()
        uuid = re.search(r'GPU UUID\s+: (\S+)', section).group(1)
        total = re.search(r'FB Memory Usage\s+Total\s+: (\d+) MiB', section).group(1)
        persistence = re.search(r'Persistence Mode\s+: (\S+)', section).group(1)
        gpus.append((bus, name, uuid, total, persistence))
    return gpus


def _q_real():
    return real_fixture('nvidia-smi/gpud-q-8xh100-535.183.01.txt')


def _real_gpus():
    return _gpus_of_q(_q_real())


def _real_serials():
    return re.findall(r'Serial Number\s+: (\S+)', _q_real())


def _base_csv():
    return ''.join('%d, %s, %s, %s, %s, 535.183.01, %s, Disabled\n' % (index, name, uuid, bus, total, persistence)
                   for index, (bus, name, uuid, total, persistence) in enumerate(_real_gpus()))


def _health_csv():
    return ''.join('%d, Enabled, %d, [N/A], 0, No, No\n' % (index, 2 if index == 5 else 0) for index in range(len(_real_gpus())))


def _cond_csv(gpu5='700.00'):
    # values as the real -q prints them: 0x233010DE, 700 W, PCIe gen 5 x16, Idle active
    return ''.join('%d, 0x233010DE, %s, %s, 700.00, 5, 5, 16, 16, Active, Not Active, Not Active, Not Active, Not Active, '
                   'Not Active, Not Active\n' % (index, gpu5 if index == 5 else '700.00', gpu5 if index == 5 else '700.00')
                   for index in range(len(_real_gpus())))


def nvidia_smi(base=None, health=None, topo=(0, TOPO, ''), q=None, listing=None, cond=None, old_cond=None):
    base = base if base is not None else (0, _base_csv(), '')
    cond = cond if cond is not None else (0, _cond_csv(), '')
    health = health if health is not None else (0, _health_csv(), '')
    q = q if q is not None else (0, _q_real(), '')

    def answer(argv):
        if argv == BASE_ARGV:
            return base
        if argv == HEALTH_ARGV:
            return health
        if argv == COND_ARGV:
            return cond
        if argv == OLD_COND_ARGV and old_cond is not None:
            return old_cond
        if argv[1:] == ['topo', '-m']:
            return topo
        if argv[1:] == ['-q']:
            return q
        if argv[1:] == ['-L'] and listing is not None:
            return listing
        raise AssertionError('unexpected command %r' % (argv,))
    return answer


@pytest.fixture(autouse=True)
def no_proc(monkeypatch, tmp_path):
    """Point the /proc/driver/nvidia/gpus lookup at an empty folder unless a test fills it."""
    monkeypatch.setattr(gpu_info, 'PROC_GPUS', str(tmp_path))
    return tmp_path


@pytest.fixture(autouse=True)
def dmi(monkeypatch, tmp_path):
    """A DMI folder as /sys/class/dmi/id has it (never the test machine's own)."""
    root = tmp_path / 'dmi'
    root.mkdir()
    (root / 'sys_vendor').write_text('Supermicro\n')
    (root / 'product_name').write_text('SYS-821GE-TNHR\n')
    (root / 'product_serial').write_text('S501234X4A12345\n')
    monkeypatch.setattr(gpu_info, 'SYSFS_DMI', str(root))
    return root


def test_facts_of_an_8xh100_node(run_module):
    assert len(_real_gpus()) == 8
    result, calls = run_module(gpu_info, {}, {'nvidia-smi': nvidia_smi()})
    assert 'failed' not in result and result['changed'] is False
    assert [call[1:] for call in calls] == [BASE_ARGV[1:], HEALTH_ARGV[1:], COND_ARGV[1:], ['topo', '-m'], ['-q']]
    assert result['driver_version'] == '535.183.01'
    assert result['cuda_version'] == '12.2'
    assert result['count'] == 8
    gpu0 = result['gpus'][0]
    assert gpu0['index'] == 0
    assert gpu0['name'] == 'NVIDIA H100 80GB HBM3'
    assert gpu0['type'] == 'h100'
    assert gpu0['uuid'] == 'GPU-566e6f65-c38e-b12f-4824-6944218668b9'
    assert gpu0['pci_bus_id'] == '00000000:53:00.0'
    assert gpu0['memory_total_mib'] == 81559
    assert gpu0['persistence_mode'] is True
    assert gpu0['minor_number'] == 0 and gpu0['device_file'] == '/dev/nvidia0'
    assert gpu0['cpu_affinity'] == '0-47,96-143'
    assert gpu0['cpus'] == list(range(48)) + list(range(96, 144))
    assert gpu0['numa_node'] == 0
    assert gpu0['nearest_nic'] == 'mlx5_0'
    assert gpu0['mig_enabled'] is False and gpu0['mig_devices'] == []
    assert gpu0['ecc_enabled'] is True and gpu0['ecc_errors_uncorrected_volatile'] == 0
    assert gpu0['retired_pages_pending'] is None and gpu0['remapped_rows_pending'] is False
    assert [gpu['nearest_nic'] for gpu in result['gpus']] == ['mlx5_0', 'mlx5_3', 'mlx5_4', 'mlx5_5', 'mlx5_6', 'mlx5_9', 'mlx5_10', 'mlx5_11']
    assert [gpu['numa_node'] for gpu in result['gpus']] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert result['gpus'][5]['ecc_errors_uncorrected_volatile'] == 2
    assert result['topology']['nic_names']['NIC1'] == 'mlx5_3'
    assert result['topology']['matrix']['GPU0']['NIC0'] == 'PIX'
    assert gpu0['pci_device_id'] == '0x2330' and gpu0['model_key'] == 'h100-sxm' and gpu0['form_factor'] == 'sxm'
    assert gpu0['power_limit_w'] == 700.0 and gpu0['power_default_limit_w'] == 700.0
    assert (gpu0['pcie_gen_current'], gpu0['pcie_gen_max'], gpu0['pcie_width_current'], gpu0['pcie_width_max']) == (5, 5, 16, 16)
    assert gpu0['clock_events'] == ['gpu_idle']
    assert [(gpu['fabric_state'], gpu['fabric_status']) for gpu in result['gpus']] == [('Completed', 'Success')] * 8
    # the inventory, from the same -q: serials as the real capture prints them, one VBIOS, and the node's DMI
    assert (gpu0['serial'], gpu0['vbios_version'], gpu0['board_part_number']) == (
        '1655022005478', '96.00.74.00.01', '692-2G520-0200-000')
    assert [gpu['serial'] for gpu in result['gpus']] == _real_serials()
    assert result['system'] == {'vendor': 'Supermicro', 'product': 'SYS-821GE-TNHR', 'serial': 'S501234X4A12345'}


def test_conditions_fall_back_to_the_throttle_reason_names(run_module):
    refused = (2, '', 'Field "clocks_event_reasons.gpu_idle" is not a valid field to query.\n')
    old = (0, _cond_csv('500.00').replace('Active, Not Active, Not Active, Not Active, Not Active',
                                          'Not Active, Not Active, Not Active, Active, Active', 1), '')
    result, calls = run_module(gpu_info, {'topology': False}, {'nvidia-smi': nvidia_smi(cond=refused, old_cond=old)})
    assert OLD_COND_ARGV in calls and 'failed' not in result
    assert result['gpus'][0]['clock_events'] == ['hw_slowdown', 'hw_thermal_slowdown']
    assert result['gpus'][5]['power_limit_w'] == 500.0 and result['gpus'][5]['power_default_limit_w'] == 700.0


def test_conditions_refused_only_warn(run_module):
    refused = (2, '', 'Field "pci.device_id" is not a valid field to query.\n')
    result, dummy = run_module(gpu_info, {'topology': False}, {'nvidia-smi': nvidia_smi(cond=refused, old_cond=refused)})
    assert 'failed' not in result
    gpu0 = result['gpus'][0]
    assert gpu0['power_limit_w'] is None and gpu0['clock_events'] is None and gpu0['pci_device_id'] is None
    assert gpu0['model_key'] == 'h100-sxm'  # the exact name alone, with no device id to contradict it
    assert any('clock events' in warning for warning in result['warnings'])


def test_minor_numbers_from_proc(run_module, no_proc):
    # the kernel spells the bus id with a 4-digit, lower-case domain
    folder = no_proc / '0000:53:00.0'
    folder.mkdir()
    (folder / 'information').write_text('Model: \t\t NVIDIA H100 80GB HBM3\nBus Location: \t 0000:53:00.0\nDevice Minor: \t 6\n')
    result, dummy = run_module(gpu_info, {}, {'nvidia-smi': nvidia_smi()})
    assert result['gpus'][0]['minor_number'] == 6 and result['gpus'][0]['device_file'] == '/dev/nvidia6'
    assert result['gpus'][1]['minor_number'] == 1


def test_topology_false(run_module):
    result, calls = run_module(gpu_info, {'topology': False}, {'nvidia-smi': nvidia_smi()})
    assert ['topo', '-m'] not in [call[1:] for call in calls]
    assert result['topology'] is None
    assert all(gpu['nearest_nic'] is None and gpu['cpus'] == [] and gpu['numa_node'] is None for gpu in result['gpus'])


def test_check_mode_still_returns_facts(run_module):
    result, dummy = run_module(gpu_info, {'_ansible_check_mode': True}, {'nvidia-smi': nvidia_smi()})
    assert result['changed'] is False and result['count'] == 8


def test_mig_devices_listed_when_mig_is_on(run_module):
    base = '0, NVIDIA A100-SXM4-40GB, GPU-a, 00000000:07:00.0, 40960, 550.54.15, Enabled, Enabled\n'
    listing = ('GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-a)\n'
               '  MIG 3g.20gb     Device  0: (UUID: MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f)\n')
    result, calls = run_module(gpu_info, {'topology': False}, {
        'nvidia-smi': nvidia_smi(base=(0, base, ''), health=(0, '0, Enabled, 0, [N/A], 0, No, No\n', ''), listing=(0, listing, ''))})
    assert calls[-1][1:] == ['-L']
    gpu = result['gpus'][0]
    assert gpu['mig_enabled'] is True and gpu['type'] == 'a100'
    assert gpu['mig_devices'] == [{'index': 0, 'profile': '3g.20gb', 'uuid': 'MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f'}]


def test_health_query_refused_only_warns(run_module):
    refused = (2, '', 'Field "remapped_rows.uncorrectable" is not a valid field to query.\n')
    result, dummy = run_module(gpu_info, {}, {'nvidia-smi': nvidia_smi(health=refused)})
    assert 'failed' not in result
    assert result['gpus'][0]['remapped_rows_failure'] is None and result['gpus'][0]['ecc_enabled'] is None
    assert any('health counters' in warning for warning in result['warnings'])


def test_cuda_version_best_effort(run_module):
    result, dummy = run_module(gpu_info, {}, {'nvidia-smi': nvidia_smi(q=(9, '', 'Unable to determine the device handle\n'))})
    assert 'failed' not in result and result['cuda_version'] is None
    assert any('CUDA version' in warning for warning in result['warnings'])
    assert set((gpu['serial'], gpu['vbios_version']) for gpu in result['gpus']) == set([(None, None)])


def test_nvidia_smi_missing(run_module):
    result, calls = run_module(gpu_info, {}, {})
    assert result['failed'] is True and 'nvidia-smi' in result['msg']
    assert calls == []


def test_nvidia_smi_missing_skipped(run_module):
    result, calls = run_module(gpu_info, {'missing': 'skip'}, {})
    assert 'failed' not in result and result['skipped'] is True and 'gpus' not in result
    assert calls == []


def test_without_details_three_runs_fewer_and_the_same_gpus(run_module):
    full, dummy = run_module(gpu_info, {}, {'nvidia-smi': nvidia_smi()})
    result, calls = run_module(gpu_info, {'details': False, 'missing': 'skip'}, {'nvidia-smi': nvidia_smi()})
    assert [call[1:] for call in calls] == [BASE_ARGV[1:], ['topo', '-m']]
    assert result['cuda_version'] is None and 'warnings' not in result
    gpu0 = result['gpus'][0]
    assert gpu0['ecc_enabled'] is None and gpu0['remapped_rows_pending'] is None and gpu0['fabric_state'] is None
    assert gpu0['pci_device_id'] is None and gpu0['power_limit_w'] is None and gpu0['clock_events'] is None
    assert gpu0['serial'] is None and gpu0['vbios_version'] is None and result['system'] is None
    keep = ('index', 'name', 'type', 'pci_bus_id', 'device_file', 'cpus', 'cpu_affinity', 'numa_node', 'nearest_nic',
            'mig_enabled', 'mig_devices', 'minor_number', 'uuid')
    assert [{key: gpu[key] for key in keep} for gpu in result['gpus']] == [{key: gpu[key] for key in keep} for gpu in full['gpus']]


def test_query_fails(run_module):
    message = 'NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA driver.\n'
    result, calls = run_module(gpu_info, {}, {'nvidia-smi': nvidia_smi(base=(9, message, ''))})
    assert result['failed'] is True
    assert result['msg'].startswith('nvidia-smi --query-gpu failed with rc=9')
    assert result['cmd'] == BASE_ARGV and result['rc'] == 9
    assert result['stdout'] == message and result['stderr'] == ''
    assert len(calls) == 1


def test_topo_fails(run_module):
    result, dummy = run_module(gpu_info, {}, {'nvidia-smi': nvidia_smi(topo=(3, '', 'topo: not supported\n'))})
    assert result['failed'] is True and result['msg'].startswith('nvidia-smi topo -m failed with rc=3')
    assert result['cmd'] == ['/usr/bin/nvidia-smi', 'topo', '-m']


@pytest.mark.parametrize('which', ['base', 'topo'])
def test_unparseable_output(run_module, which):
    result, dummy = run_module(gpu_info, {}, {'nvidia-smi': nvidia_smi(**{which: (0, 'garbage\n', '')})})
    assert result['failed'] is True
    assert 'could not be parsed' in result['msg']
    assert result['stdout'] == 'garbage\n' and result['rc'] == 0


def test_cpu_topology_read_from_sysfs(tmp_path):
    """Each online CPU's package and core id; an offline CPU (no topology directory) and other entries are skipped."""
    for cpu, package, core in ((0, 0, 0), (1, 1, 0), (2, 0, 1), (3, 1, 1)):
        topology = tmp_path / ('cpu%d' % cpu) / 'topology'
        topology.mkdir(parents=True)
        (topology / 'physical_package_id').write_text('%d\n' % package)
        (topology / 'core_id').write_text('%d\n' % core)
    (tmp_path / 'cpu4').mkdir()
    (tmp_path / 'cpufreq').mkdir()
    assert gpu_info.read_cpu_topology(str(tmp_path)) == [
        {'cpu': 0, 'package': 0, 'core': 0}, {'cpu': 1, 'package': 1, 'core': 0},
        {'cpu': 2, 'package': 0, 'core': 1}, {'cpu': 3, 'package': 1, 'core': 1}]
    assert gpu_info.read_cpu_topology(str(tmp_path / 'missing')) is None


def test_system_identity_read_from_dmi(dmi):
    assert gpu_info.read_system_identity() == {'vendor': 'Supermicro', 'product': 'SYS-821GE-TNHR', 'serial': 'S501234X4A12345'}
    # the serial is root's (mode 0400): unreadable or absent, it is null and the others stay; an empty file too
    (dmi / 'product_serial').unlink()
    (dmi / 'product_name').write_text('\n')
    assert gpu_info.read_system_identity(str(dmi)) == {'vendor': 'Supermicro', 'product': None, 'serial': None}
    # no DMI at all (some ARM servers, containers without sysfs)
    assert gpu_info.read_system_identity(str(dmi / 'missing')) is None
