"""lab/hwsim/hwsim/smstate.py: in a lab whose fabric runs ibsim, InfiniBand ports are Initializing (LID 0, SM LID 0)
until a master SM's sweep, and every stand-in that prints a port state agrees; labs without ibsim keep Active ports.

The query of ibsim (the real smpquery under umad2sim) is replaced by a stub here; the last test runs it for real
against ibsim and the real OpenSM (skipped without Debian's ibsim-utils, opensm and infiniband-diags)."""
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from _paths import REPO

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # the ibsim helpers of test_hwsim_ibsim

# pylint: disable=wrong-import-position
from ansible_collections.aicluster.infra.plugins.module_utils.ibstat import parse_ibstat  # noqa: E402
from hwsim import cli, fabric as fabrics, ibsim, profile as profiles, smstate  # noqa: E402
from hwsim.testing import make_lab  # noqa: E402
# pylint: disable-next=wrong-import-order,unused-import
from test_hwsim_ibsim import HWSIM, _free_udp_port, _until, needs_real, processes, serve_ibsim  # noqa: E402,F401

# ``smpquery -D portinfo 0 1`` of a CA port against ibsim 0.10 with infiniband-diags 44.0 (Debian bookworm), before any
# SM (the head of its output; the other fields do not matter here)
PORTINFO_NO_SM = '''# Port info: DR path slid 65535; dlid 65535; 0 port 1
Mkey:............................<not displayed>
GidPrefix:.......................0x0000000000000000
Lid:.............................0
SMLid:...........................0
CapMask:.........................0x50c048
\t\t\t\tIsTrapSupported
LocalPort:.......................1
LinkWidthActive:.................4X
LinkState:.......................Initialize
PhysLinkState:...................LinkUp
LinkDownDefState:................Polling
'''
NO_SM = dict(smstate.UNCONFIGURED)
MASTER = {'state': 'Active', 'physical_state': 'LinkUp', 'lid': 10, 'sm_lid': 1}


class Stub(object):
    """Replaces smstate.query_port: answers from ``self.answer`` (or fails) and records each query."""

    def __init__(self, answer):
        self.answer = answer
        self.calls = []

    def __call__(self, fabric, host, ca, environ, work_dir, **_options):
        self.calls.append((host, ca))
        return dict(self.answer)


@pytest.fixture
def ibsim_lab(tmp_path):
    return make_lab(tmp_path, 'hgx-h100-ib', sm_hosts=['ctl01'], ibsim_host='ctl01')


def _stub(monkeypatch, answer):
    stub = Stub(answer)
    monkeypatch.setattr(smstate, 'query_port', stub)
    return stub


def test_portinfo_parse():
    assert smstate.parse_portinfo(PORTINFO_NO_SM) == NO_SM
    active = PORTINFO_NO_SM.replace('Initialize', 'Active')
    active = active.replace('Lid:.............................0', 'Lid:.............................10')
    assert smstate.parse_portinfo(active.replace('SMLid:...........................0',
                                                 'SMLid:...........................1')) == MASTER
    assert smstate.parse_portinfo('ibwarn: [1] mad_rpc: _do_madrpc failed; dport (DR path slid 0; dlid 0; 0)\n') is None
    assert smstate.parse_portinfo(PORTINFO_NO_SM.replace('Initialize', '?(9)')) is None


def test_no_master_sm_every_stand_in_says_initializing(ibsim_lab, monkeypatch):
    stub = _stub(monkeypatch, NO_SM)
    lab = ibsim_lab
    parsed = parse_ibstat(lab.ok('gpu01', ['ibstat']))
    ib_ports = [port for ca in parsed['cas'] for port in ca['ports'] if port['link_layer'] == 'InfiniBand']
    assert len(ib_ports) == 8
    assert {(p['state'], p['physical_state'], p['base_lid'], p['sm_lid']) for p in ib_ports} == {('Initializing', 'LinkUp', 0, 0)}
    assert {port['state'] for ca in parsed['cas'] for port in ca['ports'] if port['link_layer'] == 'Ethernet'} == {'Active'}
    alone = lab.ok('ctl01', ['ibstat', 'mlx5_0', '1'])   # the SM host's own port, before its OpenSM runs
    assert 'State: Initializing\nPhysical state: LinkUp\n' in alone and 'Base lid: 0\n' in alone and 'SM lid: 0\n' in alone
    status = lab.ok('gpu01', ['ibstatus', 'mlx5_0:1'])
    assert '\tbase lid:\t 0x0\n\tsm lid:\t\t 0x0\n\tstate:\t\t 2: INIT\n\tphys state:\t 5: LinkUp\n' in status
    devinfo = lab.ok('gpu01', ['ibv_devinfo', '-d', 'mlx5_0'])
    assert '\t\t\tstate:\t\t\tPORT_INIT (2)\n' in devinfo and '\t\t\tsm_lid:\t\t\t0\n\t\t\tport_lid:\t\t0\n' in devinfo
    assert re.search(r' mlx5_0 \(MT4129 .* port 1 \(INIT  \) ==> ', lab.ok('gpu01', ['ibdev2netdev', '-v']))
    assert 'link mlx5_0/1 state INIT physical_state LINK_UP' in lab.ok('gpu01', ['rdma', 'link', 'show'])
    links = lab.ok('gpu01', ['iblinkinfo'])
    assert 'Active' not in links and '==( 4X        106.25 Gbps Initialize/  LinkUp)==>' in links
    assert re.search(r'^\s+0\s+1\[  \] ==\( 4X .* Initialize/  LinkUp\)==>\s+0\s+1\[  \] "gpu01 mlx5_0"', links, re.M)
    assert re.search(r'^\s+0\s+61\[  \] ==\( 4X .* Initialize/  LinkUp\)==>\s+0\s+1\[  \] "MF0;spine0:MQM9790/U1"', links, re.M)
    # one query of ibsim for the whole burst (one subnet, cached TTL seconds in the host's /run/hwsim)
    assert stub.calls == [('gpu01', 'mlx5_0'), ('ctl01', 'mlx5_0')]
    with open(os.path.join(lab.root('gpu01'), smstate.CACHE), encoding='utf-8') as handle:
        assert '"state": "Initializing"' in handle.read()


def test_no_master_sm_the_links_carry_nothing(ibsim_lab, monkeypatch):
    """perftest refuses a port that is not Active (perftest_parameters.c set_link_layer(): " Port number %d state is
    %s", portStates[2] = "Init"); NCCL skips it (net_ib/init.cc) and falls back to sockets."""
    _stub(monkeypatch, NO_SM)
    status, out, err = ibsim_lab.run('gpu01', ['ib_write_bw', '-d', 'mlx5_3'])
    assert (status, out) == (1, '')
    assert err == " Port number 1 state is Init\n Couldn't set the link layer\n Couldn't get context for the device\n"
    outs = []
    for number, host in enumerate(['gpu01', 'gpu02']):
        env = dict(ibsim_lab.env(host), SLURM_PROCID=str(number), PMIX_RANK=str(number), SLURM_LOCALID='0',
                   SLURM_NTASKS='2', SLURM_JOB_NODELIST='gpu01,gpu02', NCCL_DEBUG='INFO')
        out, err = io.StringIO(), io.StringIO()
        assert cli.main(['all_reduce_perf', '-b', '8', '-e', '8G', '-f', '2', '-g', '8'], environ=env, stdout=out,
                        stderr=err) == 0, err.getvalue()
        outs.append(out.getvalue())
    assert re.search(r'^gpu01:\d+:\d+ \[0\] NCCL INFO NET/IB : No device found\.$', outs[0], re.M)
    assert 'NCCL INFO Using network Socket' in outs[0] and 'NCCL INFO Using network Socket' in outs[1]


def test_master_sm_ports_active(ibsim_lab, monkeypatch):
    _stub(monkeypatch, MASTER)
    lab = ibsim_lab
    text = lab.ok('gpu01', ['ibstat', 'mlx5_3', '1'])
    lid = profiles.lid(1, 'mlx5_3')
    assert 'State: Active\nPhysical state: LinkUp\n' in text and 'Base lid: %d\n' % lid in text
    assert 'SM lid: %d\n' % lab.fabric['subnets'][0]['sm_lid'] in text
    assert 'PORT_ACTIVE (4)' in lab.ok('gpu01', ['ibv_devinfo', '-d', 'mlx5_3'])
    assert 'Initialize' not in lab.ok('gpu01', ['iblinkinfo'])
    # past the port check to the connection (nothing listens on TCP port 1 here)
    status, _out, err = lab.run('gpu01', ['ib_write_bw', '-d', 'mlx5_3', '-p', '1', '127.0.0.1'])
    assert status == 1 and ' Port number' not in err and "Couldn't connect to 127.0.0.1:1" in err
    # port-down still wins over the SM's answer
    assert lab.run('gpu01', ['hwsim', 'fault', 'port-down', 'mlx5_3'])[0] == 0
    assert 'State: Down\nPhysical state: Polling\n' in lab.ok('gpu01', ['ibstat', 'mlx5_3', '1'])


def test_sysfs_port_files_follow_the_sm(ibsim_lab, monkeypatch):
    """``hwsim devices`` writes ports/N/{state,...}; a later query whose answer differs rewrites them."""
    lab = ibsim_lab
    stub = _stub(monkeypatch, NO_SM)
    root = lab.root('gpu01')
    assert lab.run('gpu01', ['hwsim', 'devices'])[0] == 0
    port = os.path.join(root, 'run', 'hwsim', 'sys', 'class', 'infiniband', 'mlx5_0', 'ports', '1')

    def files():
        return dict((name, open(os.path.join(port, name), encoding='utf-8').read())
                    for name in ('state', 'phys_state', 'lid', 'sm_lid', 'rate', 'link_layer'))

    assert files() == {'state': '2: INIT\n', 'phys_state': '5: LinkUp\n', 'lid': '0x0\n', 'sm_lid': '0x0\n',
                       'rate': '400 Gb/sec (4X NDR)\n', 'link_layer': 'InfiniBand\n'}
    with open(os.path.join(root, 'run', 'hwsim', 'sys', 'class', 'infiniband', 'mlx5_1', 'ports', '1', 'state'),
              encoding='utf-8') as handle:
        assert handle.read() == '4: ACTIVE\n'   # the Ethernet (storage) port: no SM involved
    # the SM sweeps: the next query (after TTL) sees Active and the files follow
    stub.answer = MASTER
    cache = os.path.join(root, smstate.CACHE)
    with open(cache, encoding='utf-8') as handle:
        data = json.load(handle)
    data['subnets']['ib0']['time'] -= 60   # the cached answer is a minute old
    with open(cache, 'w', encoding='utf-8') as handle:
        json.dump(data, handle)
    assert 'State: Active' in lab.ok('gpu01', ['ibstat', 'mlx5_0', '1'])
    assert files()['state'] == '4: ACTIVE\n' and files()['lid'] == '0x%x\n' % profiles.lid(1, 'mlx5_0')


def test_cache_ttl_and_a_failed_query(tmp_path, monkeypatch):
    fabric = fabrics.build_fabric([('ctl01', None), ('gpu01', 'hgx-h100-ib')], sm_hosts=['ctl01'], ibsim_host='ctl01')
    stub = _stub(monkeypatch, NO_SM)
    now = [1000.0]
    changes = []
    states = smstate.SubnetStates(fabric, 'gpu01', str(tmp_path), {}, on_change=lambda: changes.append(now[0]),
                                  clock=lambda: now[0])
    assert states.answer('ib0') == NO_SM and len(stub.calls) == 1 and changes == [1000.0]
    now[0] += smstate.TTL_UNCONFIGURED - 0.1
    assert states.answer('ib0') == NO_SM and len(stub.calls) == 1
    # a new reader (another tool run) uses the file
    other = smstate.SubnetStates(fabric, 'gpu01', str(tmp_path), {}, clock=lambda: now[0])
    assert other.answer('ib0') == NO_SM and len(stub.calls) == 1
    # not Active: asked again after TTL_UNCONFIGURED (the master's first sweep shows at once)
    now[0] += 0.2
    stub.answer = MASTER
    assert states.answer('ib0') == MASTER and len(stub.calls) == 2 and changes == [1000.0, now[0]]
    # Active: kept TTL seconds
    now[0] += smstate.TTL - 0.1
    assert states.answer('ib0') == MASTER and len(stub.calls) == 2
    # ibsim does not answer: the last answer stands (no flapping), and the error is kept in the cache
    now[0] += smstate.TTL
    stub.answer = {'error': 'smpquery: exit status 255: ibpanic: [1] sim_init: connect failed: Connection refused'}
    assert states.answer('ib0') == MASTER and len(changes) == 2
    with open(os.path.join(str(tmp_path), smstate.CACHE), encoding='utf-8') as handle:
        assert 'Connection refused' in handle.read()
    # no answer ever: Initializing
    fresh = smstate.SubnetStates(fabric, 'gpu01', str(tmp_path / 'other'), {}, clock=lambda: now[0])
    assert fresh.answer('ib0') == NO_SM
    assert fresh.answer('no-such-subnet') == NO_SM


def test_query_argv_and_environment(tmp_path, monkeypatch):
    fabric = fabrics.build_fabric([('ctl01', None), ('gpu01', 'hgx-h100-ib')], sm_hosts=['ctl01'], ibsim_host='ctl01')
    seen = {}

    def fake_run(argv, **kwargs):
        seen.update(argv=argv, env=kwargs['env'], cwd=kwargs['cwd'], timeout=kwargs['timeout'])
        return subprocess.CompletedProcess(argv, 0, PORTINFO_NO_SM, '')

    monkeypatch.setattr(smstate.subprocess, 'run', fake_run)
    work = str(tmp_path / 'work')
    assert smstate.query_port(fabric, 'gpu01', 'mlx5_3', {'PATH': '/bin'}, work, sbin='/sbin') == NO_SM
    assert seen['argv'] == ['/sbin/smpquery', '-D', 'portinfo', '0', '1'] and seen['cwd'] == work
    assert seen['env']['SIM_HOST'] == '0x946dae0300000103' and seen['env']['LD_PRELOAD'] == ibsim.PRELOAD
    assert seen['env']['PATH'] == '/bin' and seen['timeout'] == smstate.QUERY_TIMEOUT
    monkeypatch.setattr(smstate.subprocess, 'run', lambda argv, **kwargs: subprocess.CompletedProcess(
        argv, 255, '', 'ibpanic: [7] sim_init: connect failed: Connection refused\n'))
    assert 'Connection refused' in smstate.query_port(fabric, 'gpu01', 'mlx5_3', {}, work)['error']

    def hang(argv, **kwargs):
        raise subprocess.TimeoutExpired(argv, kwargs['timeout'])

    monkeypatch.setattr(smstate.subprocess, 'run', hang)
    assert 'no answer in' in smstate.query_port(fabric, 'gpu01', 'mlx5_3', {}, work)['error']


def test_lab_without_ibsim_keeps_active_ports(tmp_path, monkeypatch):
    """No ibsim, no SM that could act: hwsim stands in for it and never asks."""
    stub = _stub(monkeypatch, NO_SM)
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    text = lab.ok('gpu01', ['ibstat', 'mlx5_0', '1'])
    assert 'State: Active\n' in text and 'Base lid: %d\n' % profiles.lid(1, 'mlx5_0') in text
    assert 'Initialize' not in lab.ok('gpu01', ['iblinkinfo'])
    assert lab.run('gpu01', ['hwsim', 'devices'])[0] == 0
    with open(os.path.join(lab.root('gpu01'), 'run', 'hwsim', 'sys', 'class', 'infiniband', 'mlx5_0', 'ports', '1',
                           'state'), encoding='utf-8') as handle:
        assert handle.read() == '4: ACTIVE\n'
    assert stub.calls == [] and not os.path.exists(os.path.join(lab.root('gpu01'), smstate.CACHE))


# ---- the real query ---------------------------------------------------------------------------------------------------

@needs_real
def test_real_query_before_and_after_opensm(tmp_path, processes):  # pylint: disable=redefined-outer-name
    """ibsim cables every port at Initialize; the stand-in ibstat says so through the real smpquery, and says Active
    once the real OpenSM is master; its query's cost is printed (pytest -s)."""
    fabric = fabrics.build_fabric([('ctl01', None), ('gpu01', 'hgx-h100-ib')], sm_hosts=['ctl01'], ibsim_host='ctl01',
                                  ibsim_port=_free_udp_port())
    fabric['ibsim']['host'] = '127.0.0.1'
    env = serve_ibsim(fabric, tmp_path, processes)
    env.update(HWSIM_ROOT=str(tmp_path / 'root-gpu01'), HWSIM_HOST='gpu01')

    def ibstat():
        done = subprocess.run([sys.executable, HWSIM, 'ibstat', 'mlx5_3', '1'], env=env, capture_output=True, text=True,
                              timeout=30, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert 'State: Initializing\n' in ibstat() and 'Base lid: 0\n' in ibstat()
    timings = []
    for dummy in range(10):
        started = time.monotonic()
        answer = smstate.query_port(fabric, 'gpu01', 'mlx5_3', env, str(tmp_path / 'work'))
        timings.append(time.monotonic() - started)
    assert answer == NO_SM
    print('smpquery portinfo through umad2sim: median %.1f ms, max %.1f ms' % (
        sorted(timings)[5] * 1000, max(timings) * 1000))
    sm_env = dict(env, OSM_CACHE_DIR=str(tmp_path / 'cache'), **ibsim.environment(fabric, 'ctl01'))
    os.makedirs(sm_env['OSM_CACHE_DIR'])
    sm_env.pop('HWSIM_ROOT')
    processes.start([shutil.which('opensm') or '/usr/sbin/opensm', '-g', sm_env['SIM_HOST'], '-p', '15',
                     '-f', str(tmp_path / 'opensm.log')], sm_env, str(tmp_path), str(tmp_path / 'opensm.out'))
    assert _until(lambda: smstate.query_port(fabric, 'gpu01', 'mlx5_3', env, str(tmp_path / 'work')).get('state')
                  == 'Active', 20)
    assert _until(lambda: 'State: Active\n' in ibstat(), smstate.TTL + 5)
    assert 'Base lid: %d\n' % profiles.lid(1, 'mlx5_3') in ibstat()
