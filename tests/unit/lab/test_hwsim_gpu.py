"""lab/hwsim GPU stand-ins (nvidia-smi, dcgmi, dmesg), parsed back with the collection's own parsers.

For every profile, healthy and with each GPU fault kind, every stand-in runs
in-process on gpu01 of a small lab; its output must parse into the profile's
values and show the fault. Where a real capture of the command exists its
structure (keys, their order, indentation, key alignment) is compared too.
"""
import copy
import os
import re
import stat
import sys

import pytest

from _paths import REPO, own_fixture, real_fixture

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))

# pylint: disable=wrong-import-position
from ansible_collections.aicluster.infra.plugins.module_utils.dcgm import parse_dcgmi_diag, parse_dcgmi_discovery  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.gpu_facts import BASE_FIELDS, HEALTH_FIELDS, merge_gpu_facts  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.nvidia_smi import (  # noqa: E402
    parse_nvidia_smi_q, parse_nvlink_errors, parse_nvlink_status, parse_query_gpu_csv, parse_topo_matrix,
)
from hwsim import cli, fabric as fabrics, profile as profiles  # noqa: E402
from hwsim.testing import PROFILES, make_lab  # noqa: E402
from hwsim.tools import gpus as gpu_views  # noqa: E402

# scenario -> fault argv (slots, not NVML indices)
SCENARIOS = {
    'healthy': None,
    'gpu-missing': ['gpu-missing', '3'],
    'nvlink-down': ['nvlink-down', '2', '5'],
    'dcgm-diag-fail': ['dcgm-diag-fail', 'memory:1'],
    'ecc-pending': ['ecc-pending', '4'],
    'row-remap-pending': ['row-remap-pending', '5'],
    'xid': ['xid', '0', '79'],
    'gpu-process': ['gpu-process', '6', '4242', '/usr/bin/python3'],
}
Q_REAL = 'nvidia-smi/gpud-q-8xh100-535.183.01.txt'


class Expected(object):
    """What the tools must show on gpu01 for a profile and a scenario."""

    def __init__(self, prof, scenario):
        self.prof = prof
        self.scenario = scenario
        missing = {3} if scenario == 'gpu-missing' else set()
        self.devices = [device for device in prof['gpus']['devices'] if device['index'] not in missing]
        self.index = {device['index']: number for number, device in enumerate(self.devices)}
        self.links = prof['gpus']['nvlink']['links_per_gpu']

    def uuid(self, slot):
        return gpu_views.uuid(1, slot)

    def device(self, index):
        return self.devices[index]

    def links_up(self, slot):
        return self.links - 1 if self.scenario == 'nvlink-down' and slot == 2 else self.links

    def ecc_uncorrected(self, slot):
        return 2 if self.scenario == 'ecc-pending' and slot == 4 else 0

    def remap_pending(self, slot):
        return self.scenario == 'row-remap-pending' and slot == 5

    def processes(self, slot):
        return [(4242, '/usr/bin/python3')] if self.scenario == 'gpu-process' and slot == 6 else []


def _memoized(function):
    """``function`` (a YAML file loader) answered from a cache keyed by its arguments and the files' mtimes; copies out."""
    cache = {}

    def load(*args, **kwargs):
        stamps = tuple(os.stat(arg).st_mtime_ns if isinstance(arg, str) and os.path.isfile(arg) else arg for arg in args)
        key = (args, stamps, tuple(sorted(kwargs.items())))
        if key not in cache:
            cache[key] = function(*args, **kwargs)
        return copy.deepcopy(cache[key])
    return load


@pytest.fixture(scope='module', autouse=True)
def cached_yaml():
    """Every stand-in run loads fabric.yml and the profile with pure-Python PyYAML; cache them for this module's many runs."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(profiles, 'load', _memoized(profiles.load))
        patch.setattr(fabrics, 'load_fabric', _memoized(fabrics.load_fabric))
        yield


@pytest.fixture(scope='module', params=[(name, scenario) for name in PROFILES for scenario in SCENARIOS], ids=lambda param: '%s-%s' % param)
def gpu_lab(request, tmp_path_factory):
    name, scenario = request.param
    lab = make_lab(tmp_path_factory.mktemp(name), name)
    if SCENARIOS[scenario]:
        status, _out, err = lab.run('gpu01', ['hwsim', 'fault'] + SCENARIOS[scenario])
        assert status == 0, err
    return lab, Expected(profiles.load(name), scenario)


def test_list_gpus(gpu_lab):
    lab, expected = gpu_lab
    lines = lab.ok('gpu01', ['nvidia-smi', '-L']).splitlines()
    assert lines == ['GPU %d: %s (UUID: %s)' % (number, expected.prof['gpus']['model'], expected.uuid(device['index']))
                     for number, device in enumerate(expected.devices)]


def test_query_gpu_base_and_health_fields(gpu_lab):
    lab, expected = gpu_lab
    fmt = '--format=csv,noheader,nounits'
    rows = parse_query_gpu_csv(lab.ok('gpu01', ['nvidia-smi', '--query-gpu=' + ','.join(BASE_FIELDS), fmt]), fields=list(BASE_FIELDS))
    assert len(rows) == len(expected.devices)
    for row, device in zip(rows, expected.devices):
        assert row['index'] == str(expected.index[device['index']])
        assert (row['name'], row['uuid'], row['pci.bus_id']) == (expected.prof['gpus']['model'], expected.uuid(device['index']), device['pci_bus_id'])
        assert row['memory.total'] == str(expected.prof['gpus']['memory_mib'])
        assert (row['driver_version'], row['persistence_mode'], row['mig.mode.current']) == (
            expected.prof['gpus']['driver_version'], 'Enabled', 'Disabled')
    health = parse_query_gpu_csv(lab.ok('gpu01', ['nvidia-smi', '--query-gpu=' + ','.join(HEALTH_FIELDS), fmt]), fields=list(HEALTH_FIELDS))
    for row, device in zip(health, expected.devices):
        slot = device['index']
        assert row['ecc.errors.uncorrected.volatile.total'] == str(expected.ecc_uncorrected(slot))
        assert row['retired_pages.pending'] == ('Yes' if expected.ecc_uncorrected(slot) else None)
        assert row['remapped_rows.pending'] == ('Yes' if expected.remap_pending(slot) else 'No')
        assert row['remapped_rows.uncorrectable'] == ('1' if expected.remap_pending(slot) else '0')


def test_query_gpu_with_header_units_and_selection(gpu_lab):
    lab, expected = gpu_lab
    fields = 'index,temperature.gpu,power.draw,utilization.gpu,memory.used,clocks.sm,serial'
    out = lab.ok('gpu01', ['nvidia-smi', '--query-gpu=' + fields, '--format=csv', '-i', '1'])
    assert out.splitlines()[0] == 'index, temperature.gpu, power.draw [W], utilization.gpu [%], memory.used [MiB], clocks.sm [MHz], serial'
    rows = parse_query_gpu_csv(out)
    assert len(rows) == 1 and rows[0]['index'] == '1'
    assert re.match(r'^\d+\.\d\d$', rows[0]['power.draw']) and rows[0]['clocks.sm'].isdigit()
    assert re.match(r'^1654\d{9}$', rows[0]['serial'])
    slot = expected.device(1)['index']
    assert rows[0]['memory.used'] == ('1033' if expected.processes(slot) else '0')


def test_compute_apps(gpu_lab):
    lab, expected = gpu_lab
    out = lab.ok('gpu01', ['nvidia-smi', '--query-compute-apps=pid,process_name,gpu_uuid,used_memory', '--format=csv'])
    lines = out.splitlines()
    assert lines[0] == 'pid, process_name, gpu_uuid, used_gpu_memory [MiB]'
    wanted = ['%d, %s, %s, 1024 MiB' % (pid, name, expected.uuid(slot))
              for slot in sorted(expected.index) for pid, name in expected.processes(slot)]
    assert lines[1:] == wanted


def test_summary_table(gpu_lab):
    lab, expected = gpu_lab
    lines = lab.ok('gpu01', ['nvidia-smi']).splitlines()
    assert all(len(line) == 89 for line in lines[1:]), [line for line in lines[1:] if len(line) != 89]
    assert lines[2].startswith('| NVIDIA-SMI %s' % expected.prof['gpus']['driver_version'])
    gpu_lines = [line for line in lines if re.match(r'^\|\s+\d+\s+NVIDIA', line)]
    assert len(gpu_lines) == len(expected.devices)
    for line, device in zip(gpu_lines, expected.devices):
        assert device['pci_bus_id'] in line and line.rstrip(' |').endswith(str(expected.ecc_uncorrected(device['index'])))
    processes = [line for line in lines if re.match(r'^\|\s+\d+\s+N/A\s+N/A\s+\d+\s+C\s', line)]
    assert len(processes) == sum(len(expected.processes(slot)) for slot in expected.index)
    if not processes:
        assert any('No running processes found' in line for line in lines)


def test_topo_matrix_gives_nearest_nic_cpus_and_numa(gpu_lab):
    lab, expected = gpu_lab
    topo = parse_topo_matrix(lab.ok('gpu01', ['nvidia-smi', 'topo', '-m']))
    assert sorted(topo['nic_names'].values()) == sorted(hca['name'] for hca in expected.prof['hcas'])
    facts = merge_gpu_facts([{'index': str(number)} for number in range(len(expected.devices))], topology=topo)
    for gpu, device in zip(facts['gpus'], expected.devices):
        assert gpu['nearest_nic'] == device['nearest_hca']
        assert gpu['cpu_affinity'] == device['cpu_list'] and gpu['numa_node'] == device['numa_node']
    labels = ['GPU%d' % number for number in range(len(expected.devices))]
    for row_label, row_device in zip(labels, expected.devices):
        for column_label, column_device in zip(labels, expected.devices):
            cell = topo['matrix'][row_label][column_label]
            if row_label == column_label:
                assert cell == 'X'
            else:
                assert cell == 'NV%d' % min(expected.links_up(row_device['index']), expected.links_up(column_device['index']))
    assert set(topo['gpu_numa_id'].values()) == {'N/A'}


def test_nvidia_smi_q_parses_into_profile_and_faults(gpu_lab):
    lab, expected = gpu_lab
    parsed = parse_nvidia_smi_q(lab.ok('gpu01', ['nvidia-smi', '-q']))
    assert parsed['errors'] == []
    assert (parsed['driver_version'], parsed['cuda_version']) == (expected.prof['gpus']['driver_version'], str(expected.prof['gpus']['cuda_version']))
    assert parsed['attached_gpus'] == len(expected.devices)
    for gpu, device in zip(parsed['gpus'], expected.devices):
        slot = device['index']
        assert (gpu['pci_bus_id'], gpu['uuid'], gpu['minor_number']) == (device['pci_bus_id'], expected.uuid(slot), slot)
        assert (gpu['product_name'], gpu['persistence_mode'], gpu['ecc_mode']) == (expected.prof['gpus']['model'], 'Enabled', 'Enabled')
        assert gpu['ecc']['volatile']['uncorrectable'] == expected.ecc_uncorrected(slot)
        assert gpu['ecc']['volatile']['dram_uncorrectable'] == expected.ecc_uncorrected(slot)
        assert gpu['retired_pages']['pending'] is (True if expected.ecc_uncorrected(slot) else None)
        assert gpu['remapped_rows'] == {'correctable': 0, 'uncorrectable': 1 if expected.remap_pending(slot) else 0,
                                        'pending': expected.remap_pending(slot), 'failure': False}
        section = parsed['sections']['GPU ' + device['pci_bus_id']]
        assert section['FB Memory Usage']['Total'] == '%d MiB' % expected.prof['gpus']['memory_mib']
        processes = section['Processes']
        if expected.processes(slot):
            assert processes['Process ID']['_value'] == '4242' and processes['Process ID']['Name'] == '/usr/bin/python3'
        else:
            assert processes == 'None'


def test_nvidia_smi_q_display_subsets_and_selection(gpu_lab):
    lab, expected = gpu_lab
    out = lab.ok('gpu01', ['nvidia-smi', '-q', '-d', 'ECC,ROW_REMAPPER,PAGE_RETIREMENT,COMPUTE', '-i', '0'])
    parsed = parse_nvidia_smi_q(out)
    assert parsed['attached_gpus'] == len(expected.devices) and len(parsed['gpus']) == 1
    section = parsed['sections']['GPU ' + expected.devices[0]['pci_bus_id']]
    assert list(section) == ['Compute Mode', 'ECC Mode', 'ECC Errors', 'Retired Pages', 'Remapped Rows']
    compute = parse_nvidia_smi_q(lab.ok('gpu01', ['nvidia-smi', '-q', '-d', 'COMPUTE']))
    assert compute['cuda_version'] == str(expected.prof['gpus']['cuda_version'])


def test_nvlink_status_and_errors(gpu_lab):
    lab, expected = gpu_lab
    status = parse_nvlink_status(lab.ok('gpu01', ['nvidia-smi', 'nvlink', '-s']))
    speed = expected.prof['gpus']['nvlink']['link_speed_gbps']
    assert [gpu['uuid'] for gpu in status['gpus']] == [expected.uuid(device['index']) for device in expected.devices]
    for gpu, device in zip(status['gpus'], expected.devices):
        assert len(gpu['links']) == expected.links
        down = [link['link'] for link in gpu['links'] if not link['active']]
        assert down == ([5] if expected.links_up(device['index']) < expected.links else [])
        assert all(link['speed_gbs'] == speed for link in gpu['links'] if link['active'])
    one = parse_nvlink_status(lab.ok('gpu01', ['nvidia-smi', 'nvlink', '-s', '-i', '2']))
    assert [gpu['index'] for gpu in one['gpus']] == [2]
    errors = parse_nvlink_errors(lab.ok('gpu01', ['nvidia-smi', 'nvlink', '-e']))
    assert len(errors['gpus']) == len(expected.devices)
    assert all(len(gpu['links']) == expected.links and all(link['crc_errors'] == 0 for link in gpu['links']) for gpu in errors['gpus'])


def test_dcgmi_discovery(gpu_lab):
    lab, expected = gpu_lab
    gpus = parse_dcgmi_discovery(lab.ok('gpu01', ['dcgmi', 'discovery', '-l']))
    assert [(gpu['id'], gpu['pci_bus_id'], gpu['uuid']) for gpu in gpus] == [
        (number, device['pci_bus_id'], expected.uuid(device['index'])) for number, device in enumerate(expected.devices)]


def _expected_failures(expected, level):
    """{test name: failing GPU ids} dcgmi diag must report."""
    failures = {}
    if expected.scenario == 'dcgm-diag-fail' and level >= 2:
        failures['GPU Memory'] = [expected.index[1]]
    if expected.scenario == 'nvlink-down' and level >= 2:
        failures['PCIe'] = [expected.index[2]]
    if expected.scenario in ('ecc-pending', 'row-remap-pending'):
        failures['Page Retirement/Row Remap'] = None
    return failures


@pytest.mark.parametrize('level', [1, 2, 3])
@pytest.mark.parametrize('json_output', [False, True], ids=['table', 'json'])
def test_dcgmi_diag_levels_and_faults(gpu_lab, level, json_output):
    lab, expected = gpu_lab
    status, out, _err = lab.run('gpu01', ['dcgmi', 'diag', '-r', str(level)] + (['-j'] if json_output else []))
    parsed = parse_dcgmi_diag(out)
    assert parsed['format'] == ('json' if json_output else 'table')
    categories = {1: ['Deployment'], 2: ['Deployment', 'Integration', 'Hardware'], 3: ['Deployment', 'Integration', 'Hardware', 'Stress']}
    assert sorted(set(test['category'] for test in parsed['tests']), key=categories[3].index) == categories[level]
    assert len([test for test in parsed['tests'] if test['category'] == 'Deployment']) == 9
    failures = _expected_failures(expected, level)
    failed = {test['name']: test for test in parsed['tests'] if test['result'] == 'fail'}
    names = {'Page Retirement/Row Remap'} if 'Page Retirement/Row Remap' in failures else set()
    assert set(failed) == set(failures) | names
    for name, ids in failures.items():
        assert failed[name]['details'] and failed[name]['details'][0].startswith('Warning: ')
        if ids is not None:
            assert [gpu for gpu, result in failed[name]['gpu_results'].items() if result == 'fail'] == [str(gpu) for gpu in ids]
    assert (status != 0) == bool(failures) and parsed['overall'] == ('fail' if failures else 'pass')
    if not json_output:
        assert parsed['metadata']['Driver Version Detected'] == expected.prof['gpus']['driver_version']


def test_dcgmi_diag_gpu_list(gpu_lab):
    lab, expected = gpu_lab
    status, out, _err = lab.run('gpu01', ['dcgmi', 'diag', '-r', '2', '-j', '-i', '0,1'])
    parsed = parse_dcgmi_diag(out)
    pcie = [test for test in parsed['tests'] if test['name'] == 'PCIe'][0]
    assert sorted(pcie['gpu_results']) == ['0', '1']
    # only the memory failure of slot 1 is among GPUs 0 and 1 (ECC/row remap faults are on slots 4 and 5, NVLink on 2)
    assert (status == 226) == (expected.scenario == 'dcgm-diag-fail')


def test_dmesg_shows_xid_only_for_the_fault(gpu_lab):
    lab, expected = gpu_lab
    out = lab.ok('gpu01', ['dmesg'])
    assert all(re.match(r'^\[ {0,4}\d+\.\d{6}\] ', line) for line in out.splitlines())
    assert 'NVRM: loading NVIDIA UNIX x86_64 Kernel Module  %s' % expected.prof['gpus']['driver_version'] in out
    xids = re.findall(r'NVRM: Xid \(PCI:([0-9a-f:]+)\): (\d+), (.*)$', out, re.M)
    if expected.scenario == 'xid':
        bus = expected.prof['gpus']['devices'][0]['pci_bus_id'].lower()
        assert xids == [('0000:%s' % bus[9:14], '79', "pid='<unknown>', name=<unknown>, GPU has fallen off the bus.")]
    else:
        assert xids == []


def test_gpu_info_facts_from_the_stand_ins(gpu_lab):
    """The gpu_info module's flow (base + health query, topo -m, -q -d COMPUTE) with every answer from the stand-in."""
    lab, expected = gpu_lab
    fmt = '--format=csv,noheader,nounits'
    rows = parse_query_gpu_csv(lab.ok('gpu01', ['nvidia-smi', '--query-gpu=' + ','.join(BASE_FIELDS), fmt]), fields=list(BASE_FIELDS))
    health = parse_query_gpu_csv(lab.ok('gpu01', ['nvidia-smi', '--query-gpu=' + ','.join(HEALTH_FIELDS), fmt]), fields=list(HEALTH_FIELDS))
    topo = parse_topo_matrix(lab.ok('gpu01', ['nvidia-smi', 'topo', '-m']))
    cuda = parse_nvidia_smi_q(lab.ok('gpu01', ['nvidia-smi', '-q', '-d', 'COMPUTE']))['cuda_version']
    minors = dict((gpu['pci_bus_id'], gpu['minor_number']) for gpu in parse_nvidia_smi_q(lab.ok('gpu01', ['nvidia-smi', '-q']))['gpus'])
    facts = merge_gpu_facts(rows, topology=topo, health_rows=health, minors=minors, cuda_version=cuda)
    assert facts['count'] == len(expected.devices) and facts['cuda_version'] == str(expected.prof['gpus']['cuda_version'])
    for gpu, device in zip(facts['gpus'], expected.devices):
        slot = device['index']
        assert (gpu['device_file'], gpu['nearest_nic'], gpu['numa_node']) == ('/dev/nvidia%d' % slot, device['nearest_hca'], device['numa_node'])
        assert gpu['cpus'][0] == int(device['cpu_list'].split('-')[0]) and gpu['persistence_mode'] is True
        assert gpu['type'] == ('h100' if 'H100' in expected.prof['gpus']['model'] else 'a100')
        assert gpu['ecc_errors_uncorrected_volatile'] == expected.ecc_uncorrected(slot)
        assert gpu['retired_pages_pending'] is (True if expected.ecc_uncorrected(slot) else None)
        assert gpu['remapped_rows_pending'] is expected.remap_pending(slot)
        assert gpu['remapped_rows_uncorrectable'] == (1 if expected.remap_pending(slot) else 0)


# --------------------------------------------------------------------------
# layouts against real captures and our fixtures


def _structure(text):
    """(indent, key, column of the colon) of every line of a -q report, values dropped."""
    found = []
    for line in text.splitlines():
        if not line.strip() or line.startswith('GPU ') or 'NVSMI LOG' in line:
            continue
        indent = len(line) - len(line.lstrip(' '))
        key = line.split(':', 1)[0].strip() if ' : ' in line or line.rstrip().endswith(':') else line.strip()
        found.append((indent, key, line.find(' : ') if ' : ' in line else None))
    return found


def _first_gpu(text):
    blocks = re.split(r'\n(?=GPU [0-9A-F]{8}:)', text)
    return blocks[0], blocks[1].split('\n\n')[0]


def test_q_structure_matches_the_real_h100_capture(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    ours_head, ours_gpu = _first_gpu(lab.ok('gpu01', ['nvidia-smi', '-q']))
    real_head, real_gpu = _first_gpu(real_fixture(Q_REAL))
    assert ours_head.startswith('\n==============NVSMI LOG==============\n\n')
    assert _structure(ours_head) == _structure(real_head)
    assert _structure(ours_gpu) == _structure(real_gpu)


def test_q_page_retirement_subset_matches_the_real_capture(tmp_path):
    lab = make_lab(tmp_path, 'hgx-a100-ib')
    ours = lab.ok('gpu01', ['nvidia-smi', '-q', '-d', 'PAGE_RETIREMENT'])
    real = real_fixture('nvidia-smi/azurehpc-q-d-page_retirement-8gpu-535.86.10.txt')
    assert _structure(ours) == _structure(real)
    assert [line for line in ours.splitlines() if not line.strip()] == [line for line in real.splitlines() if not line.strip()]


def test_q_with_process_matches_the_real_process_block(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    lab.ok('gpu01', ['hwsim', 'fault', 'gpu-process', '2', '1002127', '/usr/bin/python'])
    ours = lab.ok('gpu01', ['nvidia-smi', '-q', '-d', 'PIDS', '-i', '2'])
    real = real_fixture(Q_REAL)
    start = real.index('    Processes\n')
    real_block = real[start:real.index('\n\n', start)]
    assert real_block.replace('9212 MiB', '1024 MiB') in ours


def test_topo_layout_matches_our_535_fixture(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    ours = lab.ok('gpu01', ['nvidia-smi', 'topo', '-m'])
    fixture = own_fixture('nvidia-smi/nvidia-smi-535-8xh100-8nic-topo-m-gpunumaid-handmade.txt')
    assert ours.split('\n')[0].replace('NIC8\tNIC9\t', '') == fixture.split('\n')[0]
    assert ours[ours.index('\nLegend:'):ours.index('NIC Legend:')] == fixture[fixture.index('\nLegend:'):fixture.index('NIC Legend:')]
    assert [line.count('\t') for line in ours.splitlines()[1:9]] == [22] * 8
    assert ours.endswith('  NIC9: mlx5_9\n\n')


def test_nvlink_layouts_match_our_535_fixtures(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    lab.ok('gpu01', ['hwsim', 'fault', 'nvlink-down', '0', '3'])
    status = lab.ok('gpu01', ['nvidia-smi', 'nvlink', '-s'])
    assert status.splitlines()[1:5] == ['\t Link 0: 26.562 GB/s', '\t Link 1: 26.562 GB/s', '\t Link 2: 26.562 GB/s', '\t Link 3: <inactive>']
    fixture = own_fixture('nvidia-smi/nvidia-smi-535-8xh100-nvlink-e-crc-handmade.txt')
    errors = lab.ok('gpu01', ['nvidia-smi', 'nvlink', '-e'])
    strip = re.compile(r'\(UUID: [^)]*\)|: \d+$', re.M)
    assert strip.sub('', errors).rstrip('\n') == strip.sub('', fixture).rstrip('\n')


def test_dcgmi_layouts_match_the_real_json_and_our_tables(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    _status, ours, _err = lab.run('gpu01', ['dcgmi', 'diag', '-r', '1', '-j'])
    real = real_fixture('dcgmi/diag-r1-json-8gpu-dcgm3.1.0-nulls-warning-prefix.txt')
    # the capture's first line is the test's garbage line, and its '{' carries one extra tab (see SOURCES.tsv)
    real_json = '\n'.join(line[1:] if number == 0 else line for number, line in enumerate(real.splitlines()[1:]))
    cut = real_json.index('\t\t\t},\n\t\t\t{\n\t\t\t\t"category" : "Custom"')
    ours_cut = ours.index('\t\t\t}\n\t\t],\n\t\t"version"')
    assert ours[:ours_cut] == real_json[:cut]
    table = lab.ok('gpu01', ['dcgmi', 'diag', '-r', '2'])
    fixture = own_fixture('dcgmi/dcgmi-3.3-8xh100-diag-r2-table-pass-handmade.txt')
    metadata = re.compile(r'^\| (DCGM Version|Driver Version Detected) .*$\n', re.M)
    assert metadata.sub('', table).split('| GPU Memory')[0] == metadata.sub('', fixture).split('| GPU Memory')[0]
    discovery = lab.ok('gpu01', ['dcgmi', 'discovery', '-l'])
    uuid_or_bus = re.compile(r'(GPU-[0-9a-f-]+|[0-9A-F]{8}:[0-9A-F]{2}:00\.0) +')
    assert [len(line) for line in discovery.splitlines()] == [len(line) for line in own_fixture(
        'dcgmi/dcgmi-3.3-8xh100-discovery-l-handmade.txt').splitlines()]
    assert uuid_or_bus.sub('', discovery) == uuid_or_bus.sub('', own_fixture('dcgmi/dcgmi-3.3-8xh100-discovery-l-handmade.txt'))


# --------------------------------------------------------------------------
# errors and hosts without GPUs


def test_errors_as_the_real_tool(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    status, out, _err = lab.run('gpu01', ['nvidia-smi', '--query-gpu=index,bogus', '--format=csv'])
    assert (status, out.splitlines()[0]) == (2, 'Field "bogus" is not a valid field to query.')
    status, out, _err = lab.run('gpu01', ['nvidia-smi', '-L', '-i', '9'])
    assert (status, out) == (6, 'No devices were found\n')
    status, out, _err = lab.run('ctl01', ['nvidia-smi'])
    assert status == 9 and out.startswith("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")
    status, out, _err = lab.run('gpu01', ['nvidia-smi', '--bogus'])
    assert status == 2 and 'Invalid combination of input arguments' in out
    status, _out, err = lab.run('gpu01', ['hwsim', 'fault', 'dcgm-diag-fail', 'bogus'])
    assert status == 2 and 'memorybandwidth' in err
    assert lab.ok('gpu01', ['nvidia-smi', '-pm', '1']).splitlines()[0] == 'Persistence mode is already Enabled for GPU 00000000:1B:00.0.'
    assert lab.ok('gpu01', ['nvidia-smi', '-pm', '1']).endswith('All done.\n')


def test_dmesg_levels_and_ctime(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    lab.ok('gpu01', ['hwsim', 'fault', 'gpu-process', '3', '31337', '/opt/train/bin/trainer'])
    for code in (13, 48, 63):
        lab.ok('gpu01', ['hwsim', 'fault', 'xid', '3', str(code)])
    errors = lab.ok('gpu01', ['dmesg', '--level=err,warn'])
    xids = [line for line in errors.splitlines() if 'Xid' in line]
    assert len(xids) == 1 and 'name=trainer' not in xids[0]  # a new xid fault on a GPU replaces the older one
    lab.ok('gpu01', ['hwsim', 'clear', 'xid'])
    lab.ok('gpu01', ['hwsim', 'fault', 'xid', '3', '13'])
    assert ': 13, pid=31337, name=trainer, Graphics SM Warp Exception' in lab.ok('gpu01', ['dmesg', '-l', 'err'])
    stamped = lab.ok('gpu01', ['dmesg', '-T'])
    assert all(re.match(r'^\[\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}\] ', line) for line in stamped.splitlines())
    assert lab.run('gpu01', ['dmesg', '--bogus'])[0] == 1


# --------------------------------------------------------------------------
# hwsim devices


def test_devices_wanted_minus_missing_gpus(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    lab.ok('gpu01', ['hwsim', 'fault', 'gpu-missing', '3'])
    ctx = cli.Context.from_env(lab.env('gpu01'), None, None)
    wanted = cli.wanted_devices(ctx.host_model())
    assert wanted == dict([('nvidia%d' % slot, (195, slot)) for slot in (0, 1, 2, 4, 5, 6, 7)]
                          + [('nvidiactl', (195, 255)), ('nvidia-uvm', (511, 0))])
    assert cli.wanted_devices(ctx.host_model('ctl01')) == {}


@pytest.mark.skipif(not hasattr(os, 'geteuid') or os.geteuid() != 0, reason='mknod of character devices needs CAP_MKNOD (root)')
def test_devices_creates_nodes_idempotently(tmp_path):
    lab = make_lab(tmp_path, 'hgx-a100-ib')
    root = tmp_path / 'root'
    (root / 'dev').mkdir(parents=True)
    (root / 'dev' / 'nvidia5').write_text('not a device')
    os.mknod(str(root / 'dev' / 'nvidia6'), stat.S_IFCHR | 0o600, os.makedev(195, 6))
    out = lab.ok('gpu01', ['hwsim', 'devices', '--root', str(root)])
    assert 'replaced %s/dev/nvidia5 (c 195:5)' % root in out and 'mode %s/dev/nvidia6 (c 195:6)' % root in out
    for name, (major, minor) in [('nvidia%d' % slot, (195, slot)) for slot in range(8)] + [('nvidiactl', (195, 255)), ('nvidia-uvm', (511, 0))]:
        info = os.lstat(str(root / 'dev' / name))
        assert stat.S_ISCHR(info.st_mode) and (os.major(info.st_rdev), os.minor(info.st_rdev)) == (major, minor)
        assert stat.S_IMODE(info.st_mode) == 0o666
    assert lab.ok('gpu01', ['hwsim', 'devices', '--root', str(root)]) == ''
    lab.ok('gpu01', ['hwsim', 'fault', 'gpu-missing', '2'])
    assert lab.ok('gpu01', ['hwsim', 'devices', '--root', str(root)]) == 'removed %s/dev/nvidia2\n' % root
    assert lab.run('gpu01', ['hwsim', 'devices', '--bogus'])[0] == 2


# --------------------------------------------------------------------------
# operating-condition faults (issue 11): power-capped, thermal-throttle, pcie-degraded, fabric-state


def test_condition_faults_keep_the_real_q_layout_and_show_in_both_outputs(tmp_path):
    from ansible_collections.aicluster.infra.plugins.module_utils.gpu_facts import condition_fields, fabric_states
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    for fault in (['power-capped', '0', '500'], ['thermal-throttle', '0'], ['pcie-degraded', '0', '8'], ['fabric-state', 'not-started']):
        assert lab.run('gpu01', ['hwsim', 'fault'] + fault)[0] == 0
    text = lab.ok('gpu01', ['nvidia-smi', '-q'])
    assert _structure(_first_gpu(text)[1]) == _structure(_first_gpu(real_fixture(Q_REAL))[1])
    gpu0 = _first_gpu(text)[1]
    assert re.search(r'Current Power Limit\s+: 500.00 W', gpu0) and re.search(r'Default Power Limit\s+: 700.00 W', gpu0)
    assert re.search(r'HW Thermal Slowdown\s+: Active', gpu0) and re.search(r'Idle\s+: Not Active', gpu0)
    assert re.search(r'Link Width\n\s+Max\s+: 16x\n\s+Current\s+: 8x', gpu0)
    assert set(fabric_states(parse_nvidia_smi_q(text)).values()) == {('Not Started', None)}
    fmt = '--format=csv,noheader,nounits'
    for prefix in ('clocks_event_reasons', 'clocks_throttle_reasons'):
        fields = condition_fields(prefix)
        rows = parse_query_gpu_csv(lab.ok('gpu01', ['nvidia-smi', '--query-gpu=' + ','.join(fields), fmt]), fields=list(fields))
        row = rows[0]
        assert (row['pci.device_id'], row['enforced.power.limit'], row['power.default_limit']) == ('0x233010DE', '500.00', '700.00')
        assert (row['pcie.link.width.current'], row['pcie.link.width.max'], row['pcie.link.gen.max']) == ('8', '16', '5')
        assert row['%s.hw_thermal_slowdown' % prefix] == 'Active' and rows[1]['%s.hw_thermal_slowdown' % prefix] == 'Not Active'


@pytest.mark.parametrize('argv', [['power-capped', '0', '0'], ['pcie-degraded', '0', '3'], ['fabric-state', 'done']],
                         ids=['zero-watts', 'odd-width', 'unknown-state'])
def test_condition_fault_arguments_checked(tmp_path, argv):
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    rc, dummy, err = lab.run('gpu01', ['hwsim', 'fault'] + argv)
    assert rc == 2 and ('allowed' in err or 'must be' in err)


def test_b200_profile_is_a_b200_sxm_with_a_completed_fabric(tmp_path):
    from ansible_collections.aicluster.infra.plugins.module_utils.gpu_facts import condition_fields, fabric_states
    from ansible_collections.aicluster.infra.plugins.module_utils.verify import gpu as verify_gpu
    lab = make_lab(tmp_path, 'hgx-b200-ib', compute=1)
    fmt = '--format=csv,noheader,nounits'
    rows = parse_query_gpu_csv(lab.ok('gpu01', ['nvidia-smi', '--query-gpu=' + ','.join(BASE_FIELDS), fmt]), fields=list(BASE_FIELDS))
    cond = parse_query_gpu_csv(lab.ok('gpu01', ['nvidia-smi', '--query-gpu=' + ','.join(condition_fields()), fmt]),
                               fields=list(condition_fields()))
    q = parse_nvidia_smi_q(lab.ok('gpu01', ['nvidia-smi', '-q']))
    facts = merge_gpu_facts(rows, condition_rows=cond, fabric=fabric_states(q), cuda_version=q['cuda_version'])
    assert facts['driver_version'] == '570.133.20' and facts['cuda_version'] == '12.8' and facts['count'] == 8
    assert set((g['name'], g['pci_device_id'], g['model_key'], g['memory_total_mib'], g['power_limit_w']) for g in facts['gpus']) == {
        ('NVIDIA B200', '0x2901', 'b200-sxm', 183359, 1000.0)}
    expected = {'count': 8, 'model': 'b200', 'enabled': {'inventory': True, 'power': True, 'pcie': True, 'fabric': True}}
    results = verify_gpu.evaluate_gpu({'gpu_info': dict(facts, changed=False)}, expected)
    assert results and all(r['passed'] for r in results)
    assert len([r for r in results if r['check'] == 'gpu.fabric_state']) == 8
    assert parse_nvlink_status(lab.ok('gpu01', ['nvidia-smi', 'nvlink', '-s']))['gpus'][0]['links'][0]['speed_gbs'] == 53.125
