"""Faults that change a lab host when injected (issue 32): sm-stop, sm-rogue, partition-file-broken, ipoib-mtu.

The stand-ins' faults are read from the state file whenever a tool runs; these act at once on the host's services,
files and netdevs (the real OpenSM under ibsim, the rail interfaces), so ``hwsim fault`` must run on the host they act
on (in a play: ``delegate_to``). What undoes each is kept with the fault in the host's state file (``undo``), and
``hwsim clear`` undoes it (on that host too).

- ``sm-stop [HOST]``: asks the fabric which SM is master (the real ``sminfo`` of each subnet the host is on) and
  stops its unit, ``aicluster-opensm@<port guid>.service``, when it runs on this host; clear starts it again.
- ``sm-rogue HOST PRIORITY``: starts the real OpenSM on the host's first InfiniBand port, under umad2sim against the
  subnet's ibsim as the SM hosts' units are (hwsim/ibsim.py), at PRIORITY, as the transient unit
  ``opensmd.service`` (DOCA's and MLNX_OFED's SM unit name; Debian's ``opensm.service`` and ``opensm@.service`` are
  installed on every lab host with an HCA, and systemd refuses a transient unit whose name has a unit file); clear
  stops it.
- ``partition-file-broken [HOST]``: puts a line without a partition definition at the top of the opensm role's
  partitions.conf and reloads the host's running SMs (SIGHUP: OpenSM re-reads the file); OpenSM 3.3.23 logs ``PARSE
  ERROR: line 1: no partition definition found`` and ``Partition configuration in error; retrying with default config``
  and serves the default partition only. Clear puts the old text back, unless the file was rewritten since (the opensm
  role's next run does).
- ``ipoib-mtu RAIL MTU``: sets the MTU of the host's IPoIB netdev of that rail (``ip link set``); clear sets the MTU
  it had.
"""
import os
import re
import subprocess

from hwsim import ibsim

KINDS = ('sm-stop', 'sm-rogue', 'partition-file-broken', 'ipoib-mtu')
THIS_HOST = '.'   # the optional HOST of sm-stop and partition-file-broken left out
OPENSM_UNIT = 'aicluster-opensm@%s.service'   # the collection's opensm role, one per port GUID
PARTITIONS_CONF = '/etc/opensm/aicluster/partitions.conf'   # the opensm role's (roles/opensm/vars/main.yml)
ROGUE_UNIT = 'opensmd.service'
ROGUE_LOG = '/var/log/opensm-rogue.log'
OPENSM = '/usr/sbin/opensm'
# no ':' - osm_prtn_config.c parse_part_conf(): "PARSE ERROR: line N: no partition definition found"; 3.3.23 then drops
# the file for its default configuration
BROKEN_LINE = 'hwsim-fault partition-file-broken = 0x0bad ALL=full;'
MTU_RANGE = (68, 65520)   # IPv4's minimum; IPoIB connected mode's maximum
_MASTER = re.compile(r'sm guid (?P<guid>0x[0-9a-fA-F]+),.*\bSMINFO_MASTER\b')


class ActionError(Exception):
    """The fault cannot be injected or cleared here (the CLI exits 1 with this message, state unchanged)."""


def run(argv):
    """(rc, stdout, stderr) of a command; tests replace this function."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60,
                              env=dict(os.environ, LANG='C', LC_ALL='C'))
    except OSError as exc:
        return 127, '', str(exc)
    return done.returncode, done.stdout, done.stderr


def _check(argv, what):
    status, out, err = run(argv)
    if status != 0:
        raise ActionError('%s: %s failed (exit status %d): %s' % (what, ' '.join(argv), status, (err or out).strip()))
    return out


def _active(unit):
    return run(['systemctl', 'is-active', '--quiet', unit])[0] == 0


def check_local(kind, host, local):
    """These faults act on the host hwsim runs on: HOST (given or retargeted) must be it."""
    if host != local:
        raise ActionError('fault %s changes %s itself (its services, files or netdevs): run hwsim fault %s on %s '
                          '(in a play: delegate_to: %s), not on %s' % (kind, host, kind, host, host, local))


def sminfo_master(text):
    """The master SM's port GUID in ``sminfo`` output (``sm lid 1 sm guid 0x..., activity count N priority 15 state 3
    SMINFO_MASTER``), else None."""
    match = _MASTER.search(text or '')
    return '0x%016x' % int(match.group('guid'), 16) if match else None


def _owner(fabric, guid):
    for host, entry in sorted((fabric.get('hosts') or {}).items()):
        for hca in (entry.get('hcas') or {}).values():
            if int(hca['guid'], 16) == int(guid, 16):
                return host
    return 'no lab host'


def plan_sm_stop(fabric, host, masters):
    """The units to stop: this host's SM units whose port is its subnet's master. ``masters``: subnet -> master GUID
    (None: no master answered)."""
    own = dict((int(guid, 16), guid) for dummy, guid, dummy_subnet in ibsim.host_cas(fabric, host))
    units, elsewhere = [], []
    for subnet in sorted(masters):
        master = masters[subnet]
        if master is not None and int(master, 16) in own:
            units.append(OPENSM_UNIT % own[int(master, 16)])
        else:
            elsewhere.append('%s: %s' % (subnet, 'no master SM answers' if master is None else
                                         'master %s on %s' % (master, _owner(fabric, master))))
    if not units:
        raise ActionError('sm-stop: no master SM runs on %s (%s)' % (host, '; '.join(elsewhere) or 'it has no HCA on the fabric'))
    return units


def rogue_command(fabric, host, priority):
    """systemd-run argv: the real OpenSM on the host's first InfiniBand port at ``priority``, as transient
    ROGUE_UNIT, under umad2sim with the client environment the SM hosts' units get."""
    env = ibsim.environment(fabric, host)
    env['OSM_CACHE_DIR'] = '/var/cache/opensm-rogue'
    argv = ['systemd-run', '--unit=' + ROGUE_UNIT, '--collect', '--description=OpenSM on a compute node (hwsim fault sm-rogue)',
            '--property=RuntimeDirectory=hwsim-umad2sim/rogue', '--property=WorkingDirectory=/run/hwsim-umad2sim/rogue',
            '--property=CacheDirectory=opensm-rogue']
    argv += ['--setenv=%s=%s' % (key, env[key]) for key in sorted(env)]
    return argv + [OPENSM, '--guid', env['SIM_HOST'], '--priority', str(priority), '--log_file', ROGUE_LOG]


def rail_netdev(model, rail):
    """The netdev of the host's InfiniBand port on ``rail``."""
    for hca in model.hcas:
        if hca.get('rail') == rail:
            for port in hca.get('ports') or []:
                if port.get('link_layer') == 'InfiniBand' and port.get('netdev'):
                    return port['netdev']
    rails = sorted(set(hca['rail'] for hca in model.hcas if hca.get('rail') is not None and any(
        port.get('link_layer') == 'InfiniBand' for port in hca.get('ports') or [])))
    raise ActionError('ipoib-mtu: %s has no IPoIB netdev on rail %d (its InfiniBand rails: %s)' % (
        model.host, rail, ', '.join(str(item) for item in rails) or 'none'))


def _path(root, path):
    return os.path.join(root, path.lstrip('/')) if root and root != '/' else path


def _reload_sms(fabric, host):
    """Reload (SIGHUP) this host's running opensm role units; returns the units reloaded."""
    reloaded = []
    for dummy, guid, dummy_subnet in ibsim.host_cas(fabric, host):
        unit = OPENSM_UNIT % guid
        if _active(unit):
            _check(['systemctl', 'reload', unit], 'partition-file-broken')
            reloaded.append(unit)
    return reloaded


def apply(ctx, fault):
    """Inject ``fault`` on ctx.host; returns the fault with what undoes it (``undo``)."""
    kind, args, host = fault['kind'], fault['args'], ctx.host
    if kind == 'sm-stop':
        masters = {}
        for ca, dummy, subnet in ibsim.host_cas(ctx.fabric, host):
            if subnet not in masters:
                masters[subnet] = sminfo_master(run(['sminfo', '-C', ca])[1])
        units = plan_sm_stop(ctx.fabric, host, masters)
        for unit in units:
            _check(['systemctl', 'stop', unit], 'sm-stop')
        undo = {'units': units}
    elif kind == 'sm-rogue':
        if _active(ROGUE_UNIT):
            raise ActionError('sm-rogue: %s already runs on %s (hwsim clear sm-rogue first)' % (ROGUE_UNIT, host))
        _check(rogue_command(ctx.fabric, host, args['priority']), 'sm-rogue')
        undo = {'unit': ROGUE_UNIT}
    elif kind == 'partition-file-broken':
        path = _path(ctx.root, PARTITIONS_CONF)
        try:
            with open(path, encoding='utf-8') as handle:
                old = handle.read()
        except OSError as exc:
            raise ActionError('partition-file-broken: cannot read %s (has the opensm role run on %s?): %s' % (
                PARTITIONS_CONF, host, exc.strerror))
        with open(path, 'w', encoding='utf-8') as handle:
            handle.write(BROKEN_LINE + '\n' + old)
        undo = {'text': old, 'reloaded': _reload_sms(ctx.fabric, host)}
    elif kind == 'ipoib-mtu':
        netdev = rail_netdev(ctx.host_model(), args['rail'])
        try:
            with open(_path(ctx.root, '/sys/class/net/%s/mtu' % netdev), encoding='utf-8') as handle:
                old = int(handle.read().strip())
        except (OSError, ValueError) as exc:
            raise ActionError('ipoib-mtu: %s has no netdev %s (rail %d): %s' % (host, netdev, args['rail'], exc))
        _check(['ip', 'link', 'set', 'dev', netdev, 'mtu', str(args['mtu'])], 'ipoib-mtu')
        undo = {'netdev': netdev, 'mtu': old}
    else:
        raise ActionError('%s is not a fault that changes the host' % kind)
    return dict(fault, undo=undo)


def clear(ctx, fault):
    """Undo an injected ``fault`` (its ``undo``) on ctx.host; returns lines saying what was done."""
    kind, undo = fault['kind'], fault.get('undo') or {}
    lines = []
    if kind == 'sm-stop':
        for unit in undo.get('units') or []:
            _check(['systemctl', 'start', unit], 'clear sm-stop')
            lines.append('started %s\n' % unit)
    elif kind == 'sm-rogue':
        unit = undo.get('unit') or ROGUE_UNIT
        if _active(unit):
            _check(['systemctl', 'stop', unit], 'clear sm-rogue')
            lines.append('stopped %s\n' % unit)
    elif kind == 'partition-file-broken':
        path = _path(ctx.root, PARTITIONS_CONF)
        try:
            with open(path, encoding='utf-8') as handle:
                now = handle.read()
        except OSError:
            now = None
        if now is not None and now == BROKEN_LINE + '\n' + undo.get('text', ''):
            with open(path, 'w', encoding='utf-8') as handle:
                handle.write(undo.get('text', ''))
            lines.extend('reloaded %s\n' % unit for unit in _reload_sms(ctx.fabric, ctx.host))
            lines.append('restored %s\n' % PARTITIONS_CONF)
        else:
            lines.append('left %s as it is (rewritten since the fault)\n' % PARTITIONS_CONF)
    elif kind == 'ipoib-mtu' and undo.get('netdev'):
        _check(['ip', 'link', 'set', 'dev', undo['netdev'], 'mtu', str(undo['mtu'])], 'clear ipoib-mtu')
        lines.append('%s mtu %d\n' % (undo['netdev'], undo['mtu']))
    return lines
