"""lab/hwsim/hwsim/smfaults.py: the faults that change a lab host when injected (sm-stop, sm-rogue,
partition-file-broken, ipoib-mtu), their validation, what they run and how ``hwsim clear`` undoes them. The commands
(systemctl, systemd-run, sminfo, ip) are recorded by a fake runner: the real ones need a lab host."""
import json
import os
import re
import signal
import sys

import pytest

from _paths import REPO

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))

# pylint: disable=wrong-import-position
from hwsim import fabric as fabrics, faults, ibsim, smfaults  # noqa: E402
from hwsim.testing import Lab  # noqa: E402

GPU01 = '0x946dae0300000100'   # gpu01's mlx5_0 (host index 1)
CTL01 = '0x946dae0300000300'   # the SM hosts come after gpu01 and gpu02
CTL02 = '0x946dae0300000400'
MASTER = 'sminfo: sm lid 1 sm guid %s, activity count 5129 priority 15 state 3 SMINFO_MASTER\n'


class Host(object):
    """A fake host: the commands run, the units active, sminfo's answer."""

    def __init__(self, active=(), master=CTL01, fail=()):
        self.calls, self.active, self.master, self.fail = [], set(active), master, fail

    def __call__(self, argv):
        self.calls.append(list(argv))
        if argv[0] in self.fail:
            return 1, '', '%s: failed' % argv[0]
        if argv[:2] == ['systemctl', 'is-active']:
            return (0 if argv[-1] in self.active else 3), '', ''
        if argv[0] == 'sminfo':
            return 0, MASTER % self.master if self.master else '', ''
        if argv[:2] == ['systemctl', 'stop']:
            self.active.discard(argv[2])
        if argv[:2] == ['systemctl', 'start']:
            self.active.add(argv[2])
        if argv[0] == 'systemd-run':
            self.active.add(argv[1].split('=', 1)[1])
        return 0, '', ''

    def acting(self):
        return [call for call in self.calls if call[:2] not in (['systemctl', 'is-active'],) and call[0] != 'sminfo']


@pytest.fixture
def lab(tmp_path):
    return Lab(tmp_path, [('gpu01', 'hgx-h100-ib'), ('gpu02', 'hgx-h100-ib'), ('ctl01', None), ('ctl02', None)],
               sm_hosts=['ctl01', 'ctl02'], ibsim_host='ctl01')


def _faults(lab, host):
    with open(os.path.join(lab.state_dir, host + '.json'), encoding='utf-8') as handle:
        return json.load(handle)['faults']


def test_kinds_arguments_and_usage():
    assert faults.parse('sm-rogue', ['gpu01', '13']) == {'kind': 'sm-rogue', 'args': {'host': 'gpu01', 'priority': 13}}
    assert faults.parse('sm-stop', []) == {'kind': 'sm-stop', 'args': {'host': '.'}}
    assert faults.parse('partition-file-broken', ['ctl01'])['args'] == {'host': 'ctl01'}
    assert faults.parse('ipoib-mtu', ['0', '2044'])['args'] == {'rail': 0, 'mtu': 2044}
    for kind, argv, message in (('sm-rogue', ['gpu01', '16'], 'must be 0-15'), ('sm-rogue', ['gpu01'], 'usage'),
                                ('ipoib-mtu', ['0', '70000'], 'must be 68-65520'), ('ipoib-mtu', ['x', '2044'], 'bad RAIL')):
        with pytest.raises(faults.FaultError, match=message):
            faults.parse(kind, argv)
    assert faults.usage('sm-stop') == 'sm-stop | sm-stop HOST'
    assert 'sm-rogue HOST PRIORITY' in faults.allowed_text() and 'ipoib-mtu RAIL MTU' in faults.allowed_text()


def test_sminfo_master_and_the_sm_to_stop(lab):
    assert smfaults.sminfo_master(MASTER % '0x946DAE0300000300') == CTL01
    assert smfaults.sminfo_master('sminfo: sm lid 1 sm guid 0x1, activity count 5 priority 14 state 2 SMINFO_STANDBY') is None
    assert smfaults.plan_sm_stop(lab.fabric, 'ctl01', {'ib0': CTL01}) == ['aicluster-opensm@%s.service' % CTL01]
    with pytest.raises(smfaults.ActionError, match='no master SM runs on ctl02 \\(ib0: master %s on ctl01\\)' % CTL01):
        smfaults.plan_sm_stop(lab.fabric, 'ctl02', {'ib0': CTL01})
    with pytest.raises(smfaults.ActionError, match='ib0: no master SM answers'):
        smfaults.plan_sm_stop(lab.fabric, 'ctl01', {'ib0': None})


def test_sm_stop_and_clear(lab, monkeypatch):
    unit = 'aicluster-opensm@%s.service' % CTL01
    host = Host(active=[unit])
    monkeypatch.setattr(smfaults, 'run', host)
    status, _out, err = lab.run('ctl01', ['hwsim', 'fault', 'sm-stop'])
    assert status == 0, err
    assert host.acting() == [['systemctl', 'stop', unit]]
    assert ['sminfo', '-C', 'mlx5_0'] in host.calls
    assert _faults(lab, 'ctl01') == [{'kind': 'sm-stop', 'args': {'host': 'ctl01'}, 'undo': {'units': [unit]}}]
    # once until cleared
    assert lab.run('ctl01', ['hwsim', 'fault', 'sm-stop'])[0] == 2
    status, out, err = lab.run('ctl01', ['hwsim', 'clear', 'sm-stop'])
    assert status == 0 and out == 'started %s\n' % unit, err
    assert _faults(lab, 'ctl01') == [] and unit in host.active


def test_sm_stop_where_the_master_is_not(lab, monkeypatch):
    monkeypatch.setattr(smfaults, 'run', Host())
    status, _out, err = lab.run('ctl02', ['hwsim', 'fault', 'sm-stop'])
    assert status == 1 and 'no master SM runs on ctl02 (ib0: master %s on ctl01)' % CTL01 in err
    assert not os.path.exists(os.path.join(lab.state_dir, 'ctl02.json'))


def test_action_faults_run_on_the_host_they_change(lab, monkeypatch):
    host = Host()
    monkeypatch.setattr(smfaults, 'run', host)
    for argv in (['sm-rogue', 'gpu02', '13'], ['sm-stop', 'ctl01'], ['gpu02', 'ipoib-mtu', '0', '2044']):
        status, _out, err = lab.run('gpu01', ['hwsim', 'fault'] + argv)
        assert status == 1 and 'run hwsim fault' in err and 'delegate_to' in err, (argv, err)
    assert host.calls == []


def test_sm_rogue_starts_opensm_on_the_first_port_under_umad2sim(lab, monkeypatch):
    host = Host()
    monkeypatch.setattr(smfaults, 'run', host)
    status, _out, err = lab.run('gpu01', ['hwsim', 'fault', 'sm-rogue', 'gpu01', '13'])
    assert status == 0, err
    env = ibsim.environment(lab.fabric, 'gpu01')
    assert env['SIM_HOST'] == GPU01
    [argv] = host.acting()
    assert argv[:3] == ['systemd-run', '--unit=opensmd.service', '--collect']
    assert '--property=WorkingDirectory=/run/hwsim-umad2sim/rogue' in argv
    for key in ('LD_PRELOAD', 'IBSIM_SERVER_NAME', 'IBSIM_SERVER_PORT', 'SIM_HOST'):
        assert '--setenv=%s=%s' % (key, env[key]) in argv
    assert argv[-7:] == ['/usr/sbin/opensm', '--guid', GPU01, '--priority', '13', '--log_file', '/var/log/opensm-rogue.log']
    # already running: refused, nothing stored twice
    assert lab.run('gpu01', ['hwsim', 'fault', 'sm-rogue', 'gpu01', '12'])[0] == 2
    status, out, _err = lab.run('gpu01', ['hwsim', 'clear'])
    assert status == 0 and out == 'stopped opensmd.service\n'
    assert host.acting()[-1] == ['systemctl', 'stop', 'opensmd.service'] and _faults(lab, 'gpu01') == []


def test_sm_rogue_without_ibsim_or_with_opensmd_running(tmp_path, monkeypatch):
    plain = Lab(tmp_path, [('gpu01', 'hgx-h100-ib')])
    monkeypatch.setattr(smfaults, 'run', Host())
    status, _out, err = plain.run('gpu01', ['hwsim', 'fault', 'sm-rogue', 'gpu01', '13'])
    assert status == 1 and 'runs no ibsim' in err
    monkeypatch.setattr(smfaults, 'run', Host(active=['opensmd.service']))
    status, _out, err = plain.run('gpu01', ['hwsim', 'fault', 'sm-rogue', 'gpu01', '13'])
    assert status == 1 and 'opensmd.service already runs on gpu01' in err


def test_clear_from_another_host_is_refused(lab, monkeypatch):
    monkeypatch.setattr(smfaults, 'run', Host())
    assert lab.run('gpu01', ['hwsim', 'fault', 'sm-rogue', 'gpu01', '13'])[0] == 0
    status, _out, err = lab.run('ctl01', ['hwsim', 'clear', 'gpu01', 'sm-rogue'])
    assert status == 2 and 'run hwsim clear on gpu01' in err
    assert [fault['kind'] for fault in _faults(lab, 'gpu01')] == ['sm-rogue']


def test_partition_file_broken_and_clear(lab, monkeypatch):
    unit = 'aicluster-opensm@%s.service' % CTL01
    host = Host(active=[unit])
    monkeypatch.setattr(smfaults, 'run', host)
    path = os.path.join(lab.root('ctl01'), smfaults.PARTITIONS_CONF.lstrip('/'))
    status, _out, err = lab.run('ctl01', ['hwsim', 'fault', 'partition-file-broken'])
    assert status == 1 and 'cannot read /etc/opensm/aicluster/partitions.conf (has the opensm role run on ctl01?)' in err
    os.makedirs(os.path.dirname(path))
    good = '# Ansible managed\nDefault=0x7fff, ipoib, mtu=5 : ALL=full;\n'
    with open(path, 'w', encoding='utf-8') as handle:
        handle.write(good)
    assert lab.run('ctl01', ['hwsim', 'fault', 'partition-file-broken'])[0] == 0
    with open(path, encoding='utf-8') as handle:
        broken = handle.read()
    assert broken.splitlines()[0] == smfaults.BROKEN_LINE and broken.endswith(good)
    assert ':' not in smfaults.BROKEN_LINE   # OpenSM: "no partition definition found"
    assert host.acting() == [['systemctl', 'reload', unit]]
    status, out, _err = lab.run('ctl01', ['hwsim', 'clear', 'partition-file-broken'])
    assert status == 0 and out.endswith('restored /etc/opensm/aicluster/partitions.conf\n')
    with open(path, encoding='utf-8') as handle:
        assert handle.read() == good
    # rewritten since (the opensm role's run): left alone
    assert lab.run('ctl01', ['hwsim', 'fault', 'partition-file-broken'])[0] == 0
    with open(path, 'w', encoding='utf-8') as handle:
        handle.write(good.replace('mtu=5', 'mtu=4'))
    status, out, _err = lab.run('ctl01', ['hwsim', 'clear'])
    assert status == 0 and 'left /etc/opensm/aicluster/partitions.conf as it is' in out
    with open(path, encoding='utf-8') as handle:
        assert 'mtu=4' in handle.read()


def test_ipoib_mtu_and_clear(lab, monkeypatch):
    host = Host()
    monkeypatch.setattr(smfaults, 'run', host)
    status, _out, err = lab.run('gpu01', ['hwsim', 'fault', 'ipoib-mtu', '0', '2044'])
    assert status == 1 and 'no netdev ibp24s0' in err
    sysfs = os.path.join(lab.root('gpu01'), 'sys', 'class', 'net', 'ibp24s0')
    os.makedirs(sysfs)
    with open(os.path.join(sysfs, 'mtu'), 'w', encoding='utf-8') as handle:
        handle.write('4092\n')
    assert lab.run('gpu01', ['hwsim', 'fault', 'ipoib-mtu', '0', '2044'])[0] == 0
    assert host.acting() == [['ip', 'link', 'set', 'dev', 'ibp24s0', 'mtu', '2044']]
    status, _out, err = lab.run('gpu01', ['hwsim', 'fault', 'ipoib-mtu', '9', '2044'])
    assert status == 1 and 'no IPoIB netdev on rail 9 (its InfiniBand rails: 0, 1, 2, 3, 4, 5, 6, 7)' in err
    status, out, _err = lab.run('gpu01', ['hwsim', 'clear', 'ipoib-mtu', '0'])
    assert status == 0 and out == 'ibp24s0 mtu 4092\n'
    assert host.acting()[-1] == ['ip', 'link', 'set', 'dev', 'ibp24s0', 'mtu', '4092']


def test_a_failed_undo_keeps_the_fault(lab, monkeypatch):
    monkeypatch.setattr(smfaults, 'run', Host(active=['aicluster-opensm@%s.service' % CTL01]))
    assert lab.run('ctl01', ['hwsim', 'fault', 'sm-stop'])[0] == 0
    monkeypatch.setattr(smfaults, 'run', Host(fail=('systemctl',)))
    status, _out, err = lab.run('ctl01', ['hwsim', 'clear'])
    assert status == 1 and 'clear sm-stop: systemctl start' in err
    assert [fault['kind'] for fault in _faults(lab, 'ctl01')] == ['sm-stop']


# ---- the real OpenSM under ibsim (skipped without Debian's ibsim-utils, opensm and infiniband-diags) -----------------

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable-next=wrong-import-order,unused-import
from test_hwsim_ibsim import _free_udp_port, _tool, _until, needs_real, processes, serve_ibsim  # noqa: E402,F401


@needs_real
def test_real_rogue_sm_and_broken_partitions_conf(tmp_path, processes):  # pylint: disable=redefined-outer-name
    """sm-rogue's OpenSM (rogue_command's argv and environment, without systemd-run) joins the subnet as an SM below
    the master and leaves it when stopped; after partition-file-broken's line OpenSM serves the default partition only."""
    fabric = fabrics_with_ibsim(_free_udp_port())
    env = serve_ibsim(fabric, tmp_path, processes)
    gpu01, ctl01 = ibsim.environment(fabric, 'gpu01')['SIM_HOST'], ibsim.environment(fabric, 'ctl01')['SIM_HOST']
    partitions = tmp_path / 'partitions.conf'
    good = 'Default=0x7fff, ipoib, mtu=5 : ALL=full;\ntenant1=0x0101, ipoib, mtu=5 : %s=full, SELF=full;\n' % gpu01
    partitions.write_text(good)
    (tmp_path / 'cache-ctl01').mkdir()
    master = processes.start(['opensm', '-g', ctl01, '-P', str(partitions), '-p', '15', '-s', '1',
                              '-f', str(tmp_path / 'opensm-ctl01.log')],
                             dict(env, OSM_CACHE_DIR=str(tmp_path / 'cache-ctl01'), **ibsim.environment(fabric, 'ctl01')),
                             str(tmp_path), str(tmp_path / 'opensm-ctl01.out'))
    assert _until(lambda: smfaults.sminfo_master(_tool(env, 'gpu01', ['sminfo'], str(tmp_path))) == ctl01, 20)

    def tenant_pkey():
        return '0x8101' in _tool(env, 'ctl01', ['smpquery', '-G', 'pkeys', gpu01], str(tmp_path))

    assert _until(tenant_pkey, 20)
    argv = smfaults.rogue_command(fabric, 'gpu01', 13)
    rogue_env = dict(env, **dict(item[len('--setenv='):].split('=', 1) for item in argv if item.startswith('--setenv=')))
    os.makedirs(rogue_env['OSM_CACHE_DIR'].replace('/var/cache', str(tmp_path)))
    rogue_env['OSM_CACHE_DIR'] = rogue_env['OSM_CACHE_DIR'].replace('/var/cache', str(tmp_path))
    opensm = argv[argv.index(smfaults.OPENSM):]
    opensm[-1] = str(tmp_path / 'opensm-rogue.log')
    rogue = processes.start(opensm, rogue_env, str(tmp_path), str(tmp_path / 'opensm-rogue.out'))

    def rogue_known():
        text = _tool(env, 'ctl01', ['saquery', 'SMIR'], str(tmp_path))
        return text if re.search(r'GUID\.+%s' % gpu01, text) else None

    smir = _until(rogue_known, 20)
    assert smir and re.search(r'GUID\.+%s\s+SM_Key\.+\S+\s+ActCount\.+\d+\s+Priority\.+13\b' % gpu01, smir), smir
    assert smfaults.sminfo_master(_tool(env, 'gpu01', ['sminfo'], str(tmp_path))) == ctl01
    processes.stop(rogue)
    assert _until(lambda: gpu01 not in _tool(env, 'ctl01', ['saquery', 'SMIR'], str(tmp_path)), 15)
    assert smfaults.sminfo_master(_tool(env, 'gpu01', ['sminfo'], str(tmp_path))) == ctl01
    # partition-file-broken: OpenSM 3.3.23 logs the parse error, drops the whole file for its default configuration,
    # and the tenant's P_Key leaves gpu01's table
    partitions.write_text(smfaults.BROKEN_LINE + '\n' + good)
    os.kill(master.pid, signal.SIGHUP)
    log = tmp_path / 'opensm-ctl01.log'
    assert _until(lambda: 'PARSE ERROR: line 1: no partition definition found' in log.read_text(), 10)
    assert _until(lambda: 'Partition configuration in error; retrying with default config' in log.read_text(), 10)
    assert _until(lambda: not tenant_pkey(), 20)


def fabrics_with_ibsim(port):
    fabric = fabrics.build_fabric([('ctl01', None), ('gpu01', 'hgx-h100-ib')], sm_hosts=['ctl01'], ibsim_host='ctl01',
                                  ibsim_port=port)
    fabric['ibsim']['host'] = '127.0.0.1'   # ctl01 is this machine here
    return fabric
