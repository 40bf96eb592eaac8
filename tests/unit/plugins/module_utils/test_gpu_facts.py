# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from _paths import own_fixture

from ansible_collections.aicluster.infra.plugins.module_utils import gpu_facts
from ansible_collections.aicluster.infra.plugins.module_utils.nvidia_smi import parse_query_gpu_csv, parse_topo_matrix

# 8 GPUs, 8 NICs (mlx5_0, 3, 4, 5, 6, 9, 10, 11), each GPU PIX to one NIC and PXB to its neighbour's.
TOPO = 'nvidia-smi/nvidia-smi-535-8xh100-8nic-topo-m-gpunumaid-handmade.txt'

# `nvidia-smi --query-gpu=<BASE_FIELDS> --format=csv,noheader,nounits`, two GPUs.
BASE_CSV = (
    '0, NVIDIA H100 80GB HBM3, GPU-566e6f65-c38e-b12f-4824-6944218668b9, 00000000:18:00.0, 81559, 535.183.01, Enabled, Disabled\n'
    '1, NVIDIA H100 80GB HBM3, GPU-9930d717-21dd-7692-054e-3d0a2bae76b5, 00000000:2A:00.0, 81559, 535.183.01, Disabled, [N/A]\n'
)
HEALTH_CSV = (
    '0, Enabled, 0, [N/A], 0, No, No\n'
    '1, Enabled, 3, [N/A], 1, Yes, No\n'
)
PROC_INFORMATION = (
    'Model: \t\t NVIDIA H100 80GB HBM3\n'
    'IRQ:   \t\t 18\n'
    'GPU UUID: \t GPU-566e6f65-c38e-b12f-4824-6944218668b9\n'
    'Video BIOS: \t 96.00.74.00.01\n'
    'Bus Type: \t PCIe\n'
    'DMA Size: \t 52 bits\n'
    'DMA Mask: \t 0xfffffffffffff\n'
    'Bus Location: \t 0000:18:00.0\n'
    'Device Minor: \t 3\n'
    'GPU Excluded:\t No\n'
)
LIST_GPUS = (
    'GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77)\n'
    '  MIG 3g.20gb     Device  0: (UUID: MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f)\n'
    '  MIG 1g.5gb      Device  1: (UUID: MIG-0f3b3a51-2b8c-5c5e-a1f6-4f1b2d3c4e5f)\n'
    'GPU 1: NVIDIA A100-SXM4-40GB (UUID: GPU-9930d717-21dd-7692-054e-3d0a2bae76b5)\n'
)


def _topology():
    return parse_topo_matrix(own_fixture(TOPO))


@pytest.mark.parametrize('bus_id, expected', [
    ('00000000:18:00.0', '0000:18:00.0'),
    ('00000000:CA:00.0', '0000:ca:00.0'),
    ('00000001:00:00.0', '0001:00:00.0'),
    ('0000:3b:00.0', '0000:3b:00.0'),
    ('garbage', 'garbage'),
])
def test_sysfs_bus_id(bus_id, expected):
    assert gpu_facts.sysfs_bus_id(bus_id) == expected


def test_parse_device_minor():
    assert gpu_facts.parse_device_minor(PROC_INFORMATION) == 3
    assert gpu_facts.parse_device_minor('Model: x\n') is None
    assert gpu_facts.parse_device_minor('') is None


@pytest.mark.parametrize('value, expected', [
    ('81559', 81559), (81559, 81559), ('81559 MiB', 81559), ('[N/A]', None), ('N/A', None),
    (None, None), ('Not Supported', None), ('12.0', 12), ('abc', None), (True, None),
])
def test_to_int(value, expected):
    assert gpu_facts.to_int(value) == expected


@pytest.mark.parametrize('value, expected', [
    ('Enabled', True), ('Disabled', False), ('Yes', True), ('No', False), ('[N/A]', None),
    (None, None), (True, True), ('Maybe', None),
])
def test_to_bool(value, expected):
    assert gpu_facts.to_bool(value) is expected


def test_parse_mig_devices():
    found = gpu_facts.parse_mig_devices(LIST_GPUS)
    assert found == {
        0: [{'index': 0, 'profile': '3g.20gb', 'uuid': 'MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f'},
            {'index': 1, 'profile': '1g.5gb', 'uuid': 'MIG-0f3b3a51-2b8c-5c5e-a1f6-4f1b2d3c4e5f'}],
        1: [],
    }
    assert gpu_facts.parse_mig_devices('') == {}


def test_nearest_nic_picks_the_closest_relation():
    row = {'GPU0': 'X', 'GPU1': 'NV18', 'NIC0': 'SYS', 'NIC1': 'PXB', 'NIC2': 'PHB', 'NIC3': 'NODE'}
    assert gpu_facts.nearest_nic(row, {'NIC1': 'mlx5_1'}) == 'mlx5_1'


def test_nearest_nic_ties_go_to_the_lowest_nic_number():
    row = {'NIC10': 'PIX', 'NIC2': 'PIX', 'NIC3': 'PIX'}
    assert gpu_facts.nearest_nic(row, {'NIC2': 'mlx5_2', 'NIC3': 'mlx5_3', 'NIC10': 'mlx5_10'}) == 'mlx5_2'


def test_nearest_nic_without_legend_or_nics():
    assert gpu_facts.nearest_nic({'NIC0': 'NODE'}) == 'NIC0'
    assert gpu_facts.nearest_nic({'GPU1': 'NV18'}) is None
    assert gpu_facts.nearest_nic(None) is None
    assert gpu_facts.nearest_nic({'NIC0': 'X'}) is None


def test_nearest_nic_old_layout_with_device_names_as_columns():
    assert gpu_facts.nearest_nic({'GPU1': 'NV12', 'mlx5_0': 'SOC', 'mlx5_1': 'PHB'}) == 'mlx5_1'


def test_merge_with_topology_health_minor_and_cuda():
    rows = parse_query_gpu_csv(BASE_CSV, fields=list(gpu_facts.BASE_FIELDS))
    health = parse_query_gpu_csv(HEALTH_CSV, fields=list(gpu_facts.HEALTH_FIELDS))
    topology = _topology()
    facts = gpu_facts.merge_gpu_facts(rows, topology=topology, health_rows=health,
                                      minors={'00000000:18:00.0': 3}, cuda_version='12.2')
    assert facts['driver_version'] == '535.183.01'
    assert facts['cuda_version'] == '12.2'
    assert facts['count'] == 2
    assert facts['topology'] is topology
    gpu0, gpu1 = facts['gpus']
    assert gpu0 == {
        'index': 0,
        'name': 'NVIDIA H100 80GB HBM3',
        'type': 'h100',
        'uuid': 'GPU-566e6f65-c38e-b12f-4824-6944218668b9',
        'pci_bus_id': '00000000:18:00.0',
        'minor_number': 3,
        'device_file': '/dev/nvidia3',
        'memory_total_mib': 81559,
        'persistence_mode': True,
        'cpu_affinity': '0-47,96-143',
        'cpus': list(range(0, 48)) + list(range(96, 144)),
        'numa_node': 0,
        'nearest_nic': 'mlx5_0',
        'mig_enabled': False,
        'mig_devices': [],
        'ecc_enabled': True,
        'ecc_errors_uncorrected_volatile': 0,
        'retired_pages_pending': None,
        'remapped_rows_uncorrectable': 0,
        'remapped_rows_pending': False,
        'remapped_rows_failure': False,
        # no condition query, no -q: the exact name alone gives the model
        'pci_device_id': None,
        'model_key': 'h100-sxm',
        'form_factor': 'sxm',
        'power_limit_w': None,
        'power_default_limit_w': None,
        'pcie_gen_current': None,
        'pcie_gen_max': None,
        'pcie_width_current': None,
        'pcie_width_max': None,
        'clock_events': None,
        'fabric_state': None,
        'fabric_status': None,
        'serial': None,
        'vbios_version': None,
        'board_part_number': None,
    }
    # no /proc minor: the index stands in
    assert gpu1['minor_number'] == 1 and gpu1['device_file'] == '/dev/nvidia1'
    assert gpu1['persistence_mode'] is False
    assert gpu1['mig_enabled'] is False
    # PIX to NIC1 beats PXB to NIC0; the legend names NIC1 mlx5_3
    assert gpu1['nearest_nic'] == 'mlx5_3'
    assert gpu1['ecc_errors_uncorrected_volatile'] == 3
    assert gpu1['remapped_rows_pending'] is True


def test_merge_every_gpu_of_the_topology_fixture_gets_its_pix_nic():
    csv = ''.join('%d, NVIDIA H100 80GB HBM3, GPU-%d, 00000000:%02X:00.0, 81559, 535.183.01, Enabled, Disabled\n' % (i, i, 0x18 + i)
                  for i in range(8))
    facts = gpu_facts.merge_gpu_facts(parse_query_gpu_csv(csv, fields=list(gpu_facts.BASE_FIELDS)), topology=_topology())
    assert [gpu['nearest_nic'] for gpu in facts['gpus']] == ['mlx5_0', 'mlx5_3', 'mlx5_4', 'mlx5_5', 'mlx5_6', 'mlx5_9', 'mlx5_10', 'mlx5_11']
    assert [gpu['numa_node'] for gpu in facts['gpus']] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert facts['gpus'][7]['cpus'][0] == 48


def test_merge_without_topology_or_health():
    rows = parse_query_gpu_csv(BASE_CSV, fields=list(gpu_facts.BASE_FIELDS))
    facts = gpu_facts.merge_gpu_facts(rows)
    assert facts['topology'] is None
    assert facts['cuda_version'] is None
    gpu = facts['gpus'][0]
    assert gpu['cpus'] == [] and gpu['cpu_affinity'] is None
    assert gpu['numa_node'] is None and gpu['nearest_nic'] is None
    assert gpu['ecc_enabled'] is None and gpu['remapped_rows_failure'] is None


def test_merge_mig_devices_and_sorting():
    rows = [
        {'index': '1', 'name': 'NVIDIA A100-SXM4-40GB', 'uuid': 'GPU-b', 'pci.bus_id': '00000000:2A:00.0',
         'memory.total': '40960', 'driver_version': '550.54.15', 'persistence_mode': 'Enabled', 'mig.mode.current': 'Disabled'},
        {'index': '0', 'name': 'NVIDIA A100-SXM4-40GB', 'uuid': 'GPU-a', 'pci.bus_id': '00000000:18:00.0',
         'memory.total': '40960', 'driver_version': '550.54.15', 'persistence_mode': 'Enabled', 'mig.mode.current': 'Enabled'},
    ]
    facts = gpu_facts.merge_gpu_facts(rows, mig_devices=gpu_facts.parse_mig_devices(LIST_GPUS))
    assert [gpu['index'] for gpu in facts['gpus']] == [0, 1]
    assert facts['gpus'][0]['mig_enabled'] is True
    assert [dev['profile'] for dev in facts['gpus'][0]['mig_devices']] == ['3g.20gb', '1g.5gb']
    assert facts['gpus'][1]['mig_devices'] == []
    assert facts['gpus'][0]['type'] == 'a100'


def test_merge_bad_affinity_gives_no_cpus():
    rows = parse_query_gpu_csv(BASE_CSV, fields=list(gpu_facts.BASE_FIELDS))
    topology = {'matrix': {}, 'cpu_affinity': {'GPU0': 'junk'}, 'numa_affinity': {'GPU0': 'N/A'}, 'nic_names': {}}
    gpu = gpu_facts.merge_gpu_facts(rows, topology=topology)['gpus'][0]
    assert gpu['cpu_affinity'] == 'junk' and gpu['cpus'] == [] and gpu['numa_node'] is None


def test_clock_events_either_spelling():
    new = dict(('clocks_event_reasons.%s' % r, 'Not Active') for r in gpu_facts.CLOCK_REASONS)
    new['clocks_event_reasons.hw_power_brake_slowdown'] = 'Active'
    old = dict(('clocks_throttle_reasons.%s' % r, 'Not Active') for r in gpu_facts.CLOCK_REASONS)
    old['clocks_throttle_reasons.sw_power_cap'] = 'Active'
    assert gpu_facts.clock_events(new) == ['hw_power_brake_slowdown']
    assert gpu_facts.clock_events(old) == ['sw_power_cap']
    assert gpu_facts.clock_events({'clocks_event_reasons.gpu_idle': None}) is None


def test_fabric_states_of_the_real_h100_report():
    from ansible_collections.aicluster.infra.plugins.module_utils.nvidia_smi import parse_nvidia_smi_q
    from _paths import real_fixture
    states = gpu_facts.fabric_states(parse_nvidia_smi_q(real_fixture('nvidia-smi/gpud-q-8xh100-535.183.01.txt')))
    assert len(states) == 8 and set(states.values()) == {('Completed', 'Success')}
    assert states['00000000:53:00.0'] == ('Completed', 'Success')


def test_fabric_states_na_on_pcie():
    text = 'GPU 00000000:17:00.0\n    Product Name : NVIDIA H100 PCIe\n    Fabric\n        State : N/A\n        Status : N/A\n'
    from ansible_collections.aicluster.infra.plugins.module_utils.nvidia_smi import parse_nvidia_smi_q
    assert gpu_facts.fabric_states(parse_nvidia_smi_q(text)) == {'00000000:17:00.0': (None, None)}


def test_merge_conditions_and_model_by_device_id():
    rows = parse_query_gpu_csv('0, NVIDIA H100 PCIe, GPU-a, 00000000:17:00.0, 81559, 535.183.01, Enabled, Disabled\n',
                               fields=list(gpu_facts.BASE_FIELDS))
    fields = gpu_facts.condition_fields()
    cond = parse_query_gpu_csv('0, 0x233110DE, 250.00, 250.00, 350.00, 1, 5, 8, 16, Active, Not Active, Not Active, '
                               'Not Active, Not Active, Not Active, Not Active\n', fields=list(fields))
    gpu = gpu_facts.merge_gpu_facts(rows, condition_rows=cond, fabric={'00000000:17:00.0': (None, None)})['gpus'][0]
    assert gpu['pci_device_id'] == '0x2331' and gpu['model_key'] == 'h100-pcie' and gpu['form_factor'] == 'pcie'
    assert (gpu['power_limit_w'], gpu['power_default_limit_w']) == (250.0, 350.0)
    assert (gpu['pcie_gen_current'], gpu['pcie_gen_max'], gpu['pcie_width_current'], gpu['pcie_width_max']) == (1, 5, 8, 16)
    assert gpu['clock_events'] == ['gpu_idle'] and gpu['fabric_state'] is None


def test_identities_from_q_by_bus_id():
    """Serial, VBIOS and board part number of a parsed -q reach the GPU with the same bus id, however it is spelled."""
    q_result = {'gpus': [
        {'pci_bus_id': '00000000:2A:00.0', 'serial': '1654522012780', 'vbios_version': '96.00.74.00.01',
         'board_part_number': '692-2G520-0200-000'},
        {'pci_bus_id': None, 'serial': 'lost'}]}
    identities = gpu_facts.gpu_identities(q_result)
    assert identities == {'0000:2a:00.0': {'serial': '1654522012780', 'vbios_version': '96.00.74.00.01',
                                           'board_part_number': '692-2G520-0200-000'}}
    assert gpu_facts.gpu_identities(None) == {}
    rows = parse_query_gpu_csv(BASE_CSV, fields=list(gpu_facts.BASE_FIELDS))
    rows[1]['pci.bus_id'] = '0000:2a:00.0'
    gpus = gpu_facts.merge_gpu_facts(rows, identities=identities)['gpus']
    assert [(gpu['serial'], gpu['vbios_version']) for gpu in gpus] == [(None, None), ('1654522012780', '96.00.74.00.01')]
