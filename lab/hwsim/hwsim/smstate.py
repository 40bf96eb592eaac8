"""InfiniBand port states from the subnet manager, in a lab whose fabric runs ibsim (issue 32).

A port whose link is up stays ``Initializing`` until a master SM's sweep gives it a LID and moves it through Armed to
Active; until then it has LID 0 and SM LID 0 and carries no data (only SMPs). ibsim models exactly that:
ibsim/sim_net.c link_ports() cables every port at LinkState 2 (Initialize), PhysLinkState 5 (LinkUp), and only a
PortInfo Set (sim_mad.c do_portinfo(), which OpenSM sends) changes the state, LID and SM LID. So in a lab where the
real OpenSM runs against ibsim (fabric option ``ibsim_host``), hwsim's stand-ins ask ibsim, through the real tool:

    LD_PRELOAD=libumad2sim.so SIM_HOST=<port guid> ... /usr/sbin/smpquery -D portinfo 0 1

a directed-route PortInfo Get of the CA's own port (path ``0``: no hop, answered even with no SM and no LID), whose
``LinkState:``, ``PhysLinkState:``, ``Lid:`` and ``SMLid:`` lines (libibmad fields.c, dump.c mad_dump_portstate():
``Initialize``, ``Armed``, ``Active``) say what OpenSM made of the port. It is what the port holds, not whether an SM
runs now: as on a real fabric, ports an SM brought up stay Active after it stops (``sm-stop``), and a restarted ibsim
starts every port at Initialize again until an SM sweeps.

One query per subnet, not per port: OpenSM brings up every port of a subnet in one sweep, so the port of this host on
that subnet (else the first CA of the fabric on it) answers for all its CA ports, switches and switch links. Measured
against ibsim 0.10 with infiniband-diags 44.0: 16-22 ms median, 41 ms at worst per query (the smpquery process,
umad2sim's attach and one SMP). Answers are cached in ``<root>/run/hwsim/sm-state.json`` (host-local /run) for
``TTL`` seconds, so a burst of tool calls (ibstat, ibv_devinfo, iblinkinfo from one Ansible task) costs one query per
subnet (Active answers; any other for TTL_UNCONFIGURED, so a master's first sweep shows within a second). A query
that fails (ibsim down, its 10-client limit, a timeout) keeps the last answer, so a transient failure
does not flap the ports; with none yet the port is Initializing (all a port can be before an SM reached it).

Where the answer says Active (or Armed), the stand-ins print hwsim's own LIDs and SM LID (fabric.yml), so that
ibstat, iblinkinfo and perfquery keep agreeing with each other; the LIDs OpenSM gave in ibsim are the real diag
tools' (lab/hwsim/README.md "ibsim", Limits). Where it says LID 0 / SM LID 0, they print 0.

Labs without ibsim have no SM that could bring a port up: there hwsim stands in for one, and ports are Active as the
profile says (PortView).
"""
import json
import os
import re
import subprocess
import tempfile
import time

from hwsim import ibsim

CACHE = os.path.join('run', 'hwsim', 'sm-state.json')   # under the host's root
WORK_DIR = os.path.join('run', 'hwsim', 'umad2sim')    # umad2sim writes ./sys-<pid> in its working directory
TTL = 5.0              # seconds an Active answer is reused
# seconds any other answer is reused: a master's first sweep is what the fabric stage waits for (the opensm role reads
# the fabric right after its SM settled), so the move to Active must show at once
TTL_UNCONFIGURED = 1.0
QUERY_TIMEOUT = 3.0    # seconds one query may take (an unreachable ibsim host)
# smpquery's LinkState text (libibmad dump.c mad_dump_portstate) -> ibstat's (infiniband-diags ibstat.c port_state_str)
LINK_STATES = {'Down': 'Down', 'Initialize': 'Initializing', 'Armed': 'Armed', 'Active': 'Active'}
# mad_dump_physportstate's texts, the same as ibstat's port_phy_state_str (1-7)
PHYS_STATES = ('Sleep', 'Polling', 'Disabled', 'PortConfigurationTraining', 'LinkUp', 'LinkErrorRecovery', 'PhyTest')
FIELD_RE = re.compile(r'^(?P<name>Lid|SMLid|LinkState|PhysLinkState):\.*(?P<value>\S*)\s*$', re.M)
# What a cabled port is before any SM reached it (ibsim sim_net.c link_ports())
UNCONFIGURED = {'state': 'Initializing', 'physical_state': 'LinkUp', 'lid': 0, 'sm_lid': 0}


def applies(fabric):
    """Whether port states come from the SM: the fabric runs ibsim."""
    return bool(ibsim.settings(fabric))


def parse_portinfo(text):
    """``smpquery portinfo`` output -> {'state', 'physical_state', 'lid', 'sm_lid'}; None without a known LinkState."""
    fields = dict((match.group('name'), match.group('value')) for match in FIELD_RE.finditer(text or ''))
    state = LINK_STATES.get(fields.get('LinkState'))
    if state is None:
        return None
    try:
        lid, sm_lid = int(fields.get('Lid', '0'), 0), int(fields.get('SMLid', '0'), 0)
    except ValueError:
        return None
    physical = fields.get('PhysLinkState')
    return {'state': state, 'physical_state': physical if physical in PHYS_STATES else 'LinkUp', 'lid': lid, 'sm_lid': sm_lid}


def query_port(fabric, host, ca, environ, work_dir, sbin=ibsim.SBIN, timeout=QUERY_TIMEOUT):
    """Ask ibsim for the CA's port through the real smpquery: the parsed answer, or {'error': text}."""
    env = dict(environ)
    env.update(ibsim.environment(fabric, host, ca), LANG='C', LC_ALL='C')
    argv = [os.path.join(sbin, 'smpquery'), '-D', 'portinfo', '0', '1']
    try:
        os.makedirs(work_dir, exist_ok=True)
        done = subprocess.run(argv, env=env, cwd=work_dir, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {'error': '%s: no answer in %s s' % (' '.join(argv), timeout)}
    except OSError as exc:
        return {'error': '%s: %s' % (' '.join(argv), exc)}
    answer = parse_portinfo(done.stdout)
    if done.returncode != 0 or answer is None:
        return {'error': '%s: exit status %d: %s' % (' '.join(argv), done.returncode, (done.stderr or done.stdout).strip()[:300])}
    return answer


def _query_ca(fabric, host, subnet):
    """(host, HCA) whose port answers for ``subnet``: this host's first HCA on it, else the fabric's first."""
    for name, _guid, on in ibsim.host_cas(fabric, host):
        if on == subnet:
            return host, name
    for other in sorted(fabric.get('hosts') or {}):
        for name, _guid, on in ibsim.host_cas(fabric, other):
            if on == subnet:
                return other, name
    return None, None


def _read_cache(path):
    try:
        with open(path, encoding='utf-8') as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    return data.get('subnets') or {} if isinstance(data, dict) else {}


def _write_cache(path, subnets):
    """Atomic write (temp file + rename); a root that cannot be written only loses the cache."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        handle, tmp = tempfile.mkstemp(prefix='.sm-state.', dir=os.path.dirname(path))
        with os.fdopen(handle, 'w', encoding='utf-8') as stream:
            json.dump({'subnets': subnets}, stream, indent=2, sort_keys=True)
            stream.write('\n')
        os.replace(tmp, path)
    except OSError:
        pass


class SubnetStates(object):
    """What the SM made of each subnet, as this host reads it (one per Context: every HostModel of a run shares it).

    ``answer(subnet)`` is the cached answer while younger than TTL, else a new query (``query_port``, looked up at call
    time so tests can replace it). ``on_change()`` runs after a new answer differs from the cached one (or there was
    none): the Context rewrites the host's sysfs port files with it."""

    def __init__(self, fabric, host, root, environ, on_change=None, clock=None):
        self.fabric = fabric
        self.host = host
        self.root = root
        self.environ = environ
        self.on_change = on_change
        self.clock = clock
        self.path = os.path.join(root, CACHE)
        self._subnets = None

    def answer(self, subnet):
        """{'state', 'physical_state', 'lid', 'sm_lid'} of the CA ports of ``subnet``."""
        if self._subnets is None:
            self._subnets = _read_cache(self.path)
        now = (self.clock or time.time)()
        cached = self._subnets.get(subnet)
        ttl = TTL if cached and cached.get('state') == 'Active' else TTL_UNCONFIGURED
        if cached and 0 <= now - cached.get('time', 0) < ttl:
            return dict((key, cached[key]) for key in UNCONFIGURED)
        host, ca = _query_ca(self.fabric, self.host, subnet)
        if ca is None:
            return dict(UNCONFIGURED)
        got = query_port(self.fabric, host, ca, self.environ, os.path.join(self.root, WORK_DIR),
                         sbin=self.environ.get('HWSIM_IBSIM_SBIN') or ibsim.SBIN)
        if 'error' in got:
            kept = dict((key, cached[key]) for key in UNCONFIGURED) if cached else dict(UNCONFIGURED)
            entry = dict(kept, error=got['error'])
        else:
            entry = dict(got, error=None)
        entry.update(time=now, via='%s/%s' % (host, ca))
        changed = cached is None or any(cached.get(key) != entry[key] for key in UNCONFIGURED)
        self._subnets[subnet] = entry
        _write_cache(self.path, self._subnets)
        if changed and self.on_change is not None:
            self.on_change()
        return dict((key, entry[key]) for key in UNCONFIGURED)
