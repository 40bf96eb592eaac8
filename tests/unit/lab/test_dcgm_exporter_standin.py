"""lab/mirror's dcgm-exporter stand-in: the fields of its CSV from hwsim's simulated GPUs, faults, and staleness.

The program is built from its template as lab/mirror/build.py builds it and run as a subprocess against a
temporary hwsim lab (hwsim.testing.make_lab); nv-hostengine's instance file is written as `hwsim hold` writes it.
"""
import importlib.machinery
import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
import yaml

from _paths import REPO

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))

# pylint: disable=wrong-import-position
from hwsim import daemons  # noqa: E402
from hwsim.testing import make_lab  # noqa: E402

from ansible_collections.aicluster.infra.plugins.module_utils.dcgm_stack import (  # noqa: E402
    exporter_liveness, parse_metrics)


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(REPO, path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BUILD = _load('lab/mirror/build.py', 'aicluster_lab_mirror_build_dcgm')
DCGM = _load('lab/mirror/dcgm_packages.py', 'aicluster_lab_mirror_dcgm')
with open(os.path.join(REPO, 'roles', 'dcgm', 'defaults', 'main.yml'), encoding='utf-8') as _handle:
    DEFAULTS_ALL = yaml.safe_load(_handle)
COUNTERS = DEFAULTS_ALL['dcgm_exporter_counters']


@pytest.fixture(name='program')
def fixture_program(tmp_path):
    body = BUILD.template('dcgm/dcgm-exporter.py', package='datacenter-gpu-manager-exporter', version='4.6.0-1',
                          release='4.4.1-4.6.0')
    path = tmp_path / 'dcgm-exporter'
    path.write_bytes(body)
    return str(path)


def _csv(tmp_path, counters=None, labels=('DCGM_FI_DRIVER_VERSION',)):
    lines = ['# written by the test', '']
    lines += ['%s, %s, %s' % (entry['field'], entry['type'], entry['help']) for entry in counters or COUNTERS]
    lines += ['%s, label, %s' % (field, field) for field in labels]
    path = tmp_path / 'counters.csv'
    path.write_text('\n'.join(lines) + '\n')
    return str(path)


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class Running(object):
    def __init__(self, proc, port):
        self.proc, self.port = proc, port

    def get(self, path='/metrics'):
        with urllib.request.urlopen('http://127.0.0.1:%d%s' % (self.port, path), timeout=10) as response:
            return response.status, response.read().decode()

    def metrics(self):
        return parse_metrics(self.get()[1])


def _start(program, lab, host, csv, remote=True, interval_ms=1000):
    """The exporter on a free port; it samples every ``interval_ms`` (-c; None: its own default, 30 s)."""
    port = _free_port()
    env = dict(os.environ, AICLUSTER_LAB_HWSIM_DIR=os.path.join(REPO, 'lab', 'hwsim'), **lab.env(host))
    argv = [sys.executable, program, '-f', csv, '-a', '127.0.0.1:%d' % port] + (['-r', 'localhost:5555'] if remote else [])
    argv += ['-c', str(interval_ms)] if interval_ms else []
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    running = Running(proc, port)
    for dummy in range(100):
        if proc.poll() is not None:
            break
        try:
            running.get('/health')
            return running
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError('exporter did not start: %s' % proc.communicate()[1])


@pytest.fixture(name='lab')
def fixture_lab(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    daemons.write_instance(lab.root('gpu01'), 'nv-hostengine')
    return lab


@pytest.fixture(name='exporter')
def fixture_exporter(program, lab, tmp_path):
    running = _start(program, lab, 'gpu01', _csv(tmp_path))
    yield running
    running.proc.terminate()
    running.proc.wait(timeout=10)


def _values(metrics, field):
    return dict((sample['labels']['gpu'], sample['value']) for sample in metrics[field])


def test_serves_exactly_the_csv_fields_for_every_gpu_with_real_labels(exporter):
    status, body = exporter.get()
    assert status == 200
    metrics = parse_metrics(body)
    assert set(metrics) == set(entry['field'] for entry in COUNTERS)
    assert '# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter' in body and '# TYPE DCGM_FI_DEV_GPU_UTIL gauge' in body
    samples = metrics['DCGM_FI_DEV_GPU_TEMP']
    assert len(samples) == 8
    labels = samples[0]['labels']
    assert labels['gpu'] == '0' and labels['device'] == 'nvidia0' and labels['modelName'] == 'NVIDIA H100 80GB HBM3'
    assert labels['UUID'] == 'GPU-4857534d-0001-4000-8000-000000000000'
    assert labels['pci_bus_id'].endswith(':00.0') and labels['Hostname'] and labels['DCGM_FI_DRIVER_VERSION']
    assert exporter.get('/health') == (200, 'OK')


def test_energy_grows_while_fresh_and_the_role_check_passes(exporter):
    first = exporter.get()[1]
    time.sleep(1.2)
    second = exporter.get()[1]
    uuids = ['GPU-4857534d-0001-4000-8000-%012x' % slot for slot in range(8)]
    assert exporter_liveness(first, second, uuids, 8)['passed']


def test_within_one_collect_interval_a_healthy_exporter_serves_the_same_values(program, lab, tmp_path):
    # the exporter's own default (-c 30000) against scrapes 1.2 s apart: the condition that made a liveness check of
    # two scrapes 5 s apart fail every healthy node (docs/monitoring.md); the role passes -c and a longer interval
    running = _start(program, lab, 'gpu01', _csv(tmp_path), interval_ms=None)
    try:
        first = running.get()[1]
        time.sleep(1.2)
        second = running.get()[1]
        assert second == first
        assert not exporter_liveness(first, second)['passed']
    finally:
        running.proc.terminate()
        running.proc.wait(timeout=10)
    running = _start(program, lab, 'gpu01', _csv(tmp_path), interval_ms=2000)
    try:
        first = running.get()[1]
        time.sleep(0.3)
        assert running.get()[1] == first  # still the same sample
        time.sleep(2.0)
        assert exporter_liveness(first, running.get()[1])['passed']  # the next one
    finally:
        running.proc.terminate()
        running.proc.wait(timeout=10)


def test_faults_show_on_the_matching_gpu(exporter, lab):
    lab.ok('gpu01', ['hwsim', 'fault', 'xid', '2', '79'])
    lab.ok('gpu01', ['hwsim', 'fault', 'ecc-pending', '3'])
    lab.ok('gpu01', ['hwsim', 'fault', 'row-remap-pending', '4'])
    lab.ok('gpu01', ['hwsim', 'fault', 'nvlink-down', '5', '0'])
    lab.ok('gpu01', ['hwsim', 'fault', 'thermal-throttle', '6'])
    time.sleep(1.1)  # the next collect interval
    first = exporter.metrics()
    time.sleep(1.1)
    metrics = exporter.metrics()
    assert _values(metrics, 'DCGM_FI_DEV_XID_ERRORS') == dict((str(g), 79.0 if g == 2 else 0.0) for g in range(8))
    assert _values(metrics, 'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL')['3'] == 2 and _values(metrics, 'DCGM_FI_DEV_RETIRED_PENDING')['3'] == 1
    assert _values(metrics, 'DCGM_FI_DEV_RETIRED_PENDING')['2'] == 0
    assert _values(metrics, 'DCGM_FI_DEV_ROW_REMAP_PENDING')['4'] == 1
    assert _values(metrics, 'DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS')['4'] == 1
    for field in ('DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL', 'DCGM_FI_DEV_NVLINK_COUNT_RX_ERRORS'):
        assert _values(metrics, field)['5'] > _values(first, field)['5'] > 0
        assert _values(metrics, field)['4'] == 0
    assert int(_values(metrics, 'DCGM_FI_DEV_CLOCKS_EVENT_REASONS')['6']) & 0x48 == 0x48
    assert _values(metrics, 'DCGM_FI_DEV_THERMAL_VIOLATION')['6'] > 0


def test_the_fabric_manager_status_follows_the_fabric_state(exporter, lab):
    # dcgmFabricManagerStatus_t: 3 success on a registered HGX H100; 2 while the fabric is in progress (a node that
    # just booted, or a fabric manager that is not running), 1 not started
    assert set(_values(exporter.metrics(), 'DCGM_FI_DEV_FABRIC_MANAGER_STATUS').values()) == {3.0}
    lab.ok('gpu01', ['hwsim', 'fault', 'fabric-state', 'in-progress'])
    time.sleep(1.1)
    assert set(_values(exporter.metrics(), 'DCGM_FI_DEV_FABRIC_MANAGER_STATUS').values()) == {2.0}
    lab.ok('gpu01', ['hwsim', 'fault', 'fabric-state', 'not-started'])
    time.sleep(1.1)
    assert set(_values(exporter.metrics(), 'DCGM_FI_DEV_FABRIC_MANAGER_STATUS').values()) == {1.0}


def test_nvswitch_fields_are_served_once_per_switch(program, lab, tmp_path):
    counters = COUNTERS + DEFAULTS_ALL['dcgm_exporter_nvswitch_counters']
    running = _start(program, lab, 'gpu01', _csv(tmp_path, counters))
    try:
        metrics = running.metrics()
        # an HGX H100 baseboard has four NVSwitches (third generation), each its own entity with its own label
        temperature = metrics['DCGM_FI_DEV_NVSWITCH_TEMPERATURE_CURRENT']
        assert sorted(sample['labels']['nvswitch'] for sample in temperature) == ['nvswitch%d' % n for n in range(4)]
        assert all('gpu' not in sample['labels'] for sample in temperature)
        assert [sample['value'] for sample in metrics['DCGM_FI_DEV_NVSWITCH_FATAL_ERRORS']] == [0.0] * 4
        assert len(metrics['DCGM_FI_DEV_GPU_TEMP']) == 8 and all('nvswitch' not in sample['labels']
                                                                 for sample in metrics['DCGM_FI_DEV_GPU_TEMP'])
    finally:
        running.proc.terminate()
        running.proc.wait(timeout=10)


def test_a_missing_gpu_is_absent(exporter, lab):
    lab.ok('gpu01', ['hwsim', 'fault', 'gpu-missing', '7'])
    time.sleep(1.1)
    samples = exporter.metrics()['DCGM_FI_DEV_GPU_UTIL']
    assert len(samples) == 7
    assert 'GPU-4857534d-0001-4000-8000-000000000007' not in [sample['labels']['UUID'] for sample in samples]


def test_values_freeze_once_nv_hostengine_restarts_while_health_says_ok(exporter, lab):
    before = exporter.get()[1]
    daemons.write_instance(lab.root('gpu01'), 'nv-hostengine')  # a new instance: the service restarted
    time.sleep(0.3)
    frozen = exporter.get()[1]
    lab.ok('gpu01', ['hwsim', 'fault', 'xid', '0', '48'])
    time.sleep(1.1)
    assert exporter.get()[1] == frozen
    assert exporter.get('/health') == (200, 'OK')
    assert not exporter_liveness(frozen, exporter.get()[1])['passed']
    assert parse_metrics(before).keys() == parse_metrics(frozen).keys()


def test_values_freeze_when_nv_hostengine_stops(exporter, lab):
    os.unlink(daemons.instance_path(lab.root('gpu01'), 'nv-hostengine'))
    first = exporter.get()[1]
    time.sleep(1.1)
    assert exporter.get()[1] == first


def test_a_restarted_exporter_is_fresh_again(program, lab, tmp_path):
    daemons.write_instance(lab.root('gpu01'), 'nv-hostengine')
    running = _start(program, lab, 'gpu01', _csv(tmp_path))
    try:
        first = running.get()[1]
        time.sleep(1.1)
        assert exporter_liveness(first, running.get()[1])['passed']
    finally:
        running.proc.terminate()
        running.proc.wait(timeout=10)


def test_an_unknown_field_exits_1_naming_it(program, lab, tmp_path):
    csv = _csv(tmp_path, COUNTERS + [{'field': 'DCGM_FI_DEV_NO_SUCH_FIELD', 'type': 'gauge', 'help': 'x'}])
    env = dict(os.environ, AICLUSTER_LAB_HWSIM_DIR=os.path.join(REPO, 'lab', 'hwsim'), **lab.env('gpu01'))
    result = subprocess.run([sys.executable, program, '-f', csv, '-a', ':0'], env=env, capture_output=True, text=True,
                            timeout=30, check=False)
    assert result.returncode == 1
    assert 'could not find DCGM field; err: unknown ExporterCounter field DCGM_FI_DEV_NO_SUCH_FIELD' in result.stderr


def test_without_a_running_nv_hostengine_a_remote_exporter_fails(program, lab, tmp_path):
    os.unlink(daemons.instance_path(lab.root('gpu01'), 'nv-hostengine'))
    env = dict(os.environ, AICLUSTER_LAB_HWSIM_DIR=os.path.join(REPO, 'lab', 'hwsim'), **lab.env('gpu01'))
    argv = [sys.executable, program, '-f', _csv(tmp_path), '-a', ':0', '-r', 'localhost:5555']
    result = subprocess.run(argv, env=dict(env, AICLUSTER_LAB_DCGM_START_WAIT='0.5'), capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 1 and 'Error connecting to nv-hostengine' in result.stderr


def _load_program(path):
    spec = importlib.util.spec_from_loader('dcgm_exporter_standin', importlib.machinery.SourceFileLoader(
        'dcgm_exporter_standin', path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_default_counter_is_one_the_standin_knows(program):
    module = _load_program(program)
    assert [entry['field'] for entry in COUNTERS if entry['field'] not in module.KNOWN] == []
    assert module.main(['--version']) == 0


def test_the_packages_have_the_real_names_versions_and_dependencies():
    specs = DCGM.packages(BUILD.package, BUILD.template)
    names = sorted((spec['name'], spec['version']) for spec in specs)
    assert ('datacenter-gpu-manager-4-core', '1:4.4.1-1') in names
    assert ('datacenter-gpu-manager-4-cuda13', '1:4.4.1-1') in names
    assert ('datacenter-gpu-manager-exporter', '4.6.0-1') in names
    assert len(names) == 8
    core = [spec for spec in specs if spec['name'] == 'datacenter-gpu-manager-4-core'][0]
    assert b'ExecStart=/usr/bin/nv-hostengine -n --service-account nvidia-dcgm' in core['files']['/lib/systemd/system/nvidia-dcgm.service'][1]
    assert core['files']['/usr/bin/nv-hostengine'][1].startswith(b'#!/bin/sh\n')
    cuda = [spec for spec in specs if spec['name'] == 'datacenter-gpu-manager-4-cuda13' and spec['version'] == '1:4.4.1-1'][0]
    assert cuda['depends'] == ['datacenter-gpu-manager-4-core (= 1:4.4.1-1)']
    exporter = [spec for spec in specs if spec['name'] == 'datacenter-gpu-manager-exporter'][0]
    assert exporter['files']['/usr/bin/dcgm-exporter'][1].startswith(b'#!/usr/bin/python3\n')
