"""lab/hwsim/hwsim/ibsim.py: the ibsim net file from hwsim's fabric, the client environment, and the REAL OpenSM and
infiniband-diags tools against it (Debian ibsim-utils, opensm, infiniband-diags; skipped where absent), parsed back
with the collection's own parsers."""
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

from _paths import REPO

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))

# pylint: disable=wrong-import-position
from ansible_collections.aicluster.infra.plugins.module_utils.ib_sm import (  # noqa: E402
    parse_saquery_issm, parse_sminfo)
from ansible_collections.aicluster.infra.plugins.module_utils.smpquery import parse_smpquery  # noqa: E402
from hwsim import cli, fabric as fabrics, ibsim, profile as profiles  # noqa: E402

HWSIM = os.path.join(REPO, 'lab', 'hwsim', 'bin', 'hwsim')
TWO_HOSTS_NET = '''# Written by hwsim (lab/hwsim/hwsim/ibsim.py): subnet ib0 for ibsim

switchguid=0xfc6a1c0300010000
Switch 64 "leaf-rail0"  # "MF0;leaf-rail0:MQM9790/U1"
[1]  "0x946dae0300000100"[1]
[2]  "0x946dae0300000200"[1]
[61]  "spine0"[1]
[62]  "spine0"[2]
[63]  "spine1"[1]
[64]  "spine1"[2]

switchguid=0xfc6a1c0300020000
Switch 64 "spine0"  # "MF0;spine0:MQM9790/U1"
[1]  "leaf-rail0"[61]
[2]  "leaf-rail0"[62]

switchguid=0xfc6a1c0300020001
Switch 64 "spine1"  # "MF0;spine1:MQM9790/U1"
[1]  "leaf-rail0"[63]
[2]  "leaf-rail0"[64]

caguid=0x946dae03000000ff
Ca 1 "0x946dae0300000100"  # "ctl01 mlx5_0"
[1]  "leaf-rail0"[1]

caguid=0x946dae03000001ff
Ca 1 "0x946dae0300000200"  # "ctl02 mlx5_0"
[1]  "leaf-rail0"[2]

'''


def _two_sm_hosts(**options):
    return fabrics.build_fabric([('ctl01', None), ('ctl02', None)], sm_hosts=['ctl01', 'ctl02'], **options)


def test_net_file_of_two_hosts():
    assert ibsim.ibsim_net(_two_sm_hosts()) == {'ib0': TWO_HOSTS_NET}


def test_sm_hosts_come_after_the_compute_hosts():
    fabric = fabrics.build_fabric([('ctl01', None), ('gpu01', 'hgx-h100-ib'), ('gpu02', 'hgx-h100-ib')],
                                  sm_hosts=['ctl01'], ibsim_host='ctl01')
    assert [fabric['hosts'][host]['index'] for host in ('gpu01', 'gpu02', 'ctl01')] == [1, 2, 3]
    assert fabric['hosts']['ctl01']['profile'] == 'sm-host-ib'
    assert list(fabric['hosts']['ctl01']['hcas']) == ['mlx5_0']
    assert fabric['hosts']['ctl01']['hcas']['mlx5_0']['switch'] == 'leaf-rail0'
    assert fabric['ibsim'] == {'host': 'ctl01', 'port': 7070}
    plain = fabrics.build_fabric([('ctl01', None), ('gpu01', 'hgx-h100-ib')])
    assert 'ibsim' not in plain and 'sm_hosts' not in plain and plain['hosts']['ctl01']['hcas'] == {}


@pytest.mark.parametrize('compute', [1, 2, 3, 4])
def test_sm_hosts_move_no_compute_host_in_two_scalable_units(compute):
    """The lab's layout (lab.py FABRIC_OPTIONS: two scalable units) with and without ctl01 as SM host: every compute
    host keeps its index, scalable unit, leaf and leaf port; ctl01 joins the first unit after the compute hosts."""
    hosts = [('ctl01', None)] + [('gpu%02d' % n, 'hgx-h100-ib') for n in range(1, compute + 1)]
    plain = fabrics.build_fabric(hosts, scalable_units=2)
    with_sm = fabrics.build_fabric(hosts, scalable_units=2, sm_hosts=['ctl01'], ibsim_host='ctl01')
    for host, entry in plain['hosts'].items():
        if host != 'ctl01':
            assert with_sm['hosts'][host] == entry, host
    ctl01 = with_sm['hosts']['ctl01']
    assert (ctl01['index'], ctl01['su']) == (compute + 1, 0)
    assert ctl01['hcas']['mlx5_0']['switch'] == 'su1-leaf-rail0' and ctl01['hcas']['mlx5_0']['switch_port'] == compute + 1


def test_bad_sm_and_ibsim_hosts():
    with pytest.raises(fabrics.FabricError, match='sm_hosts names hosts the lab does not have: ctl09'):
        fabrics.build_fabric([('ctl01', None)], sm_hosts=['ctl09'])
    with pytest.raises(fabrics.FabricError, match='ibsim_host ctl09'):
        fabrics.build_fabric([('ctl01', None)], ibsim_host='ctl09')


def test_one_net_file_and_port_per_subnet():
    fabric = fabrics.build_fabric([('ctl01', None), ('gpu01', 'hgx-h100-ib')], sm_hosts=['ctl01'], ibsim_host='ctl01',
                                  ibsim_port=7100, subnet_per_rail=True)
    texts = ibsim.ibsim_net(fabric)
    assert sorted(texts) == ['ib-rail%d' % rail for rail in range(8)]
    assert '"0x946dae0300000200"' in texts['ib-rail0'] and '"0x946dae0300000103"' not in texts['ib-rail0']
    assert '"rail0-spine0"' in texts['ib-rail0'] and 'leaf-rail1' not in texts['ib-rail0']
    assert ibsim.environment(fabric, 'gpu01', 'mlx5_3') == {
        'LD_PRELOAD': ibsim.PRELOAD, 'IBSIM_SERVER_NAME': 'ctl01', 'IBSIM_SERVER_PORT': '7101',
        'SIM_HOST': '0x946dae0300000103'}
    assert ibsim.environment(fabric, 'ctl01')['SIM_HOST'] == '0x946dae0300000200'


def test_descriptions_follow_the_fabric_mode():
    text = ibsim.ibsim_net(_two_sm_hosts(descriptions='anonymous'))['ib0']
    assert '# "MT4129 ConnectX7 Mellanox Technologies"' in text
    assert '# "ctl01.lab.example mlx5_0"' in ibsim.ibsim_net(_two_sm_hosts(descriptions='fqdn'))['ib0']


def test_environment_errors_and_ca_arguments():
    with pytest.raises(ibsim.IbsimError, match='runs no ibsim'):
        ibsim.environment(_two_sm_hosts(), 'ctl01')
    fabric = _two_sm_hosts(ibsim_host='ctl01')
    with pytest.raises(ibsim.IbsimError, match='ctl01 has no HCA mlx5_4 on the fabric; it has mlx5_0'):
        ibsim.environment(fabric, 'ctl01', 'mlx5_4')
    assert ibsim.split_ca_args(['-C', 'mlx5_0', '-P', '1', 'pkeys', '3']) == ('mlx5_0', '1', ['pkeys', '3'])
    assert ibsim.split_ca_args(['-Cmlx5_3', '--Port=1', '-s']) == ('mlx5_3', '1', ['-s'])
    assert ibsim.env_text({'B': '2', 'A': '1'}) == 'A=1\nB=2\n'


def test_host_files():
    fabric = fabrics.build_fabric([('ctl01', None), ('gpu01', 'hgx-h100-ib')], sm_hosts=['ctl01'], ibsim_host='ctl01',
                                  subnet_per_rail=True)
    files = ibsim.host_files(fabric, 'gpu01')
    assert files['/etc/hwsim/ibsim.env'] == (
        'IBSIM_SERVER_NAME=ctl01\nIBSIM_SERVER_PORT=7070\nLD_PRELOAD=%s\n' % ibsim.PRELOAD)
    assert files['/etc/hwsim/ibsim-0x946dae0300000109.env'] == 'IBSIM_SERVER_PORT=7077\nSIM_HOST=0x946dae0300000109\n'
    assert len(files) == 9
    assert ibsim.host_files(fabric, 'ctl09') == {} and ibsim.host_files(_two_sm_hosts(), 'ctl01') == {}


def test_switch_link_errors_command():
    assert ibsim.switch_port_errors_command(_two_sm_hosts(), 'spine0', 2) == (
        'ib0', 'PerformanceSet "spine0"[2] PortCounters.SymbolErrorCounter=100')
    with pytest.raises(ibsim.IbsimError, match='ports 1..64'):
        ibsim.switch_port_errors_command(_two_sm_hosts(), 'spine0', 65)


def test_sm_host_tools(tmp_path):
    """hwsim's own stand-ins on an SM host: one Active NDR HCA, no GPUs."""
    fabric_path = str(tmp_path / 'fabric.yml')
    fabrics.write_fabric(_two_sm_hosts(), fabric_path)
    env = {'HWSIM_FABRIC': fabric_path, 'HWSIM_STATE_DIR': str(tmp_path / 'state'), 'HWSIM_HOST': 'ctl02'}
    for argv, wanted in ((['ibstat', 'mlx5_0'], 'Port GUID: 0x946dae0300000200'),
                         (['ibdev2netdev'], 'mlx5_0 port 1 ==> ibp24s0 (Up)')):
        out, err = _Stream(), _Stream()
        assert cli.main(['hwsim'] + argv, environ=env, stdout=out, stderr=err) == 0, err.text
        assert wanted in out.text
    assert profiles.load('sm-host-ib')['gpus'] == {}


class _Stream:
    def __init__(self):
        self.text = ''

    def write(self, text):
        self.text += text


# ---- the real tools -------------------------------------------------------------------------------------------------

REAL = ('ibsim', 'opensm', 'sminfo', 'saquery', 'smpquery', 'perfquery')
needs_real = pytest.mark.skipif(not all(shutil.which(tool) or os.path.exists('/usr/sbin/' + tool) for tool in REAL)
                                or not os.path.exists(ibsim.PRELOAD),
                                reason='needs Debian ibsim-utils, opensm and infiniband-diags')


def _free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class _Processes:
    """Processes started in their own process group, all killed (group by group) at the end."""

    def __init__(self):
        self.started = []

    def start(self, argv, env, cwd, log):
        with open(log, 'w', encoding='utf-8') as handle:
            process = subprocess.Popen(argv, env=env, cwd=cwd, stdout=handle, stderr=subprocess.STDOUT,
                                       start_new_session=True)
        self.started.append(process)
        return process

    def stop(self, process):
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(5)

    def stop_all(self):
        for process in reversed(self.started):
            self.stop(process)


@pytest.fixture
def processes():
    started = _Processes()
    yield started
    started.stop_all()


def _tool(env, host, argv, cwd):
    """Run a diag tool on ``host`` through ``hwsim ibsim-exec`` (the lab's /usr/local/bin wrappers)."""
    result = subprocess.run([sys.executable, HWSIM, 'ibsim-exec'] + argv, env=dict(env, HWSIM_HOST=host), cwd=cwd,
                            capture_output=True, text=True, timeout=20, check=False)
    return result.stdout + result.stderr


def _until(function, seconds=15):
    deadline = time.monotonic() + seconds
    while True:
        value = function()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.3)


def serve_ibsim(fabric, tmp_path, processes):  # pylint: disable=redefined-outer-name
    """Write ``fabric``, start its subnet ib0's ibsim (hwsim ibsim-serve), wait until it answers; the environment of
    the hwsim commands."""
    fabric_path = str(tmp_path / 'fabric.yml')
    fabrics.write_fabric(fabric, fabric_path)
    env = dict(os.environ, HWSIM_FABRIC=fabric_path, HWSIM_STATE_DIR=str(tmp_path / 'state'),
               HWSIM_IBSIM_RUN_DIR=str(tmp_path / 'run'))
    env.pop('LD_PRELOAD', None)
    processes.start([sys.executable, HWSIM, 'ibsim-serve', 'ib0'], env, str(tmp_path), str(tmp_path / 'ibsim.log'))
    assert _until(lambda: 'Node Description' in _tool(env, 'gpu01', ['smpquery', '-D', 'nodedesc', '0'], str(tmp_path)))
    return env


@needs_real
def test_real_opensm_and_diags_on_ibsim(tmp_path, processes):
    fabric = fabrics.build_fabric([('ctl01', None), ('ctl02', None), ('gpu01', 'hgx-h100-ib')],
                                  sm_hosts=['ctl01', 'ctl02'], ibsim_host='ctl01', ibsim_port=_free_udp_port())
    fabric['ibsim']['host'] = '127.0.0.1'   # ctl01 is this machine here
    env = serve_ibsim(fabric, tmp_path, processes)
    partitions = tmp_path / 'partitions.conf'
    partitions.write_text('Default=0x7fff, ipoib, mtu=5 : ALL=full;\nstorage=0x8002 : %s=full;\n'
                          % ibsim.environment(fabric, 'ctl01')['SIM_HOST'])
    sms = {}
    for host, priority in (('ctl01', 15), ('ctl02', 14)):
        cache = tmp_path / ('cache-' + host)
        cache.mkdir()
        sm_env = dict(env, OSM_CACHE_DIR=str(cache), **ibsim.environment(fabric, host))
        sms[host] = sm_env['SIM_HOST']
        processes.start(['opensm', '-g', sm_env['SIM_HOST'], '-P', str(partitions), '-p', str(priority), '-s', '1',
                         '-f', str(tmp_path / ('opensm-%s.log' % host))], sm_env, str(tmp_path),
                        str(tmp_path / ('opensm-%s.out' % host)))

    def master():   # both start at once: priority 14 may win the first election and hand over to 15 then
        parsed = parse_sminfo(_tool(env, 'gpu01', ['sminfo', '-C', 'mlx5_0'], str(tmp_path)))['sm']
        return parsed if parsed and parsed['state_name'] == 'MASTER' and parsed['guid'] == sms['ctl01'] else None

    started = time.monotonic()
    sm = _until(master, 20)
    assert sm and sm['priority'] == 15, _tool(env, 'gpu01', ['sminfo'], str(tmp_path))
    print('ctl01 master after %.1f s' % (time.monotonic() - started))

    def both_sms():
        ports = parse_saquery_issm(_tool(env, 'gpu01', ['saquery', '-s'], str(tmp_path)))['ports']
        return ports if len([port for port in ports if not port['sm_disabled']]) == 2 else None

    ports = _until(both_sms)
    assert ports and all(port['master_sm_base_lid'] == sm['lid'] for port in ports)
    # ctl01's port is a full member of 0x8002 (partitions.conf), gpu01's only of the default partition

    def pkeys(lid):
        members = parse_smpquery(_tool(env, 'gpu01', ['smpquery', 'pkeys', str(lid)], str(tmp_path)))['members']
        return [(entry['pkey'], entry['full']) for entry in members]

    assert _until(lambda: pkeys(sm['lid']) == [(0x7fff, True), (0x0002, True)], 10), pkeys(sm['lid'])
    gpu01 = next(port['lid'] for port in ports if port['sm_disabled'] is False and port['lid'] != sm['lid'])
    assert gpu01 != sm['lid']   # the standby (ctl02): only the default partition
    assert pkeys(gpu01) == [(0x7fff, True)]
    # a switch port's error counter raised through ibsim's console (hwsim fault switch-link-errors)
    faulted = subprocess.run([sys.executable, HWSIM, 'fault', 'switch-link-errors', 'spine0', '1', '7'],
                             env=dict(env, HWSIM_HOST='gpu01'), capture_output=True, text=True, check=False)
    assert faulted.returncode == 0, faulted.stderr
    spine_lid = _switch_lid(env, tmp_path)
    assert _until(lambda: 'SymbolErrorCounter:..............7' in _tool(
        env, 'gpu01', ['perfquery', str(spine_lid), '1'], str(tmp_path)), 5)


def _switch_lid(env, tmp_path):
    """spine0's LID as OpenSM gave it (ibnetdiscover's switch lines)."""
    text = _tool(env, 'gpu01', ['ibnetdiscover'], str(tmp_path))
    for line in text.splitlines():
        if line.startswith('Switch') and '"MF0;spine0:MQM9790/U1"' in line:
            return int(line.split(' lid ')[1].split()[0])
    raise AssertionError(text)
