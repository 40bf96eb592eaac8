"""The real OpenSM and infiniband-diags against a simulated fabric: ibsim (linux-rdma/ibsim) in the lab.

ibsim answers the fabric's MADs (SMPs, SA, PerfMgt) for the nodes of a net file; the real ``opensm`` and the real
diag tools (``sminfo``, ``saquery``, ``smpquery``, ``ibqueryerrors``, ``ibnetdiscover``, ``perfquery``) talk to it
through ``LD_PRELOAD=libumad2sim.so`` (Debian ``ibsim-utils`` 0.10), over UDP to a remote ibsim
(``IBSIM_SERVER_NAME``/``IBSIM_SERVER_PORT``), attached to the CA ``SIM_HOST`` names (a node id of the net file).

Net file (ibsim/sim_net.c): records separated by a blank line; ``switchguid=``/``caguid=`` before a record set its
GUID; ``Switch <ports> "<nodeid>"  # "<description>"`` / ``Ca <ports> "<nodeid>"  # "<description>"``, then one
``[<port>]  "<peer nodeid>"[<peer port>]`` line per cabled port. A CA's node id here is its port GUID as hwsim
prints it (``0x946dae0300000203``), so ``SIM_HOST=<port guid>`` and ``aicluster-opensm@<port guid>`` name the same port.
ibsim makes a CA's port GUID its node GUID + port number, so the node GUID is the port GUID - 1: on a real
single-port ConnectX function the node GUID equals port 1's GUID, which ibsim cannot do (hwsim's own stand-ins keep
them equal). ibsim has no subnet isolation: one ibsim, on its own UDP port, per subnet of the fabric.
"""
import errno
import os
import stat

from hwsim import profile as profiles

DEFAULT_PORT = 7070        # first subnet's UDP port; subnet i listens on DEFAULT_PORT + i
PRELOAD = '/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so'   # Debian ibsim-utils
SIM_CA = 'ibsim0'          # the one CA umad2sim shows a client (umad2sim.c umad2sim_dev_create)
DIAG_TOOLS = ('sminfo', 'saquery', 'smpquery', 'ibqueryerrors', 'ibnetdiscover')   # the lab's /usr/local/bin wrappers
EXEC_TOOLS = DIAG_TOOLS + ('perfquery',)   # perfquery keeps hwsim's stand-in in /usr/local/bin; this runs the real one
SBIN = '/usr/sbin'
MAX_CLIENTS = 10           # IBSIM_MAX_CLIENTS, ibsim include/ibsim.h: opensm instances and tool runs together
SPILL_DIR = '/run/hwsim/umad2sim'   # umad2sim writes ./sys-<pid> in the working directory; used when it is read-only


class IbsimError(Exception):
    """The fabric has no ibsim, or names no such subnet, switch or CA."""


def settings(fabric):
    """The fabric's ``ibsim`` dict (``host``, ``port``) or None when the lab runs no ibsim."""
    return fabric.get('ibsim') or None


def subnet_port(fabric, subnet_name):
    """UDP port of the ibsim serving ``subnet_name``: the base port + the subnet's position."""
    base = (settings(fabric) or {}).get('port', DEFAULT_PORT)
    for position, subnet in enumerate(fabric.get('subnets') or []):
        if subnet['name'] == subnet_name:
            return base + position
    raise IbsimError('no subnet %r in the fabric' % subnet_name)


def _ca_nodeids(fabric):
    """``host/mlx5_N`` -> the CA's node id (its port GUID text) for every IB HCA of the fabric."""
    hosts = (fabric.get('hosts') or {}).items()
    return dict(('%s/%s' % (host, name), hca['guid']) for host, entry in hosts for name, hca in (entry.get('hcas') or {}).items())


def _ca_description(fabric, host, hca_name, entry):
    """The node description hwsim's tools print for this CA (profile.node_description by the fabric's mode)."""
    mode = fabric.get('node_description') or {}
    hca = {'name': hca_name}
    if mode.get('mode') == 'anonymous':
        hca = profiles.find_hca(profiles.load(entry['profile'], profiles.profile_dir()), hca_name)
    return profiles.node_description(mode.get('mode', 'mlx5'), host, hca, mode.get('domain', 'lab.example'))


def ibsim_net(fabric):
    """{subnet name: net file text} for every subnet of the fabric (an empty dict when it has none)."""
    nodeids = _ca_nodeids(fabric)
    texts = {}
    for subnet in fabric.get('subnets') or []:
        records = []
        for switch in fabric['switches']:
            if switch.get('subnet', subnet['name']) != subnet['name']:
                continue
            lines = ['switchguid=%s' % switch['guid'],
                     'Switch %d "%s"  # "%s"' % (switch['port_count'], switch['name'], switch['description'])]
            for number, peer in sorted(switch['ports'].items()):
                lines.append('[%d]  "%s"[%d]' % (number, nodeids.get(peer['peer'], peer['peer']), peer['peer_port']))
            records.append('\n'.join(lines))
        for host, entry in sorted((fabric.get('hosts') or {}).items()):
            for hca_name, hca in sorted((entry.get('hcas') or {}).items()):
                if hca.get('subnet') != subnet['name']:
                    continue
                guid = int(hca['guid'], 16)
                records.append('\n'.join([
                    'caguid=0x%016x' % (guid - 1),
                    'Ca 1 "%s"  # "%s"' % (hca['guid'], _ca_description(fabric, host, hca_name, entry)),
                    '[1]  "%s"[%d]' % (hca['switch'], hca['switch_port'])]))
        texts[subnet['name']] = '# Written by hwsim (lab/hwsim/hwsim/ibsim.py): subnet %s for ibsim\n\n%s\n\n' % (
            subnet['name'], '\n\n'.join(records))
    return texts


def host_cas(fabric, host):
    """[(hca name, port guid text, subnet name)] of a host's IB HCAs on the fabric, in mlx5_N order."""
    hcas = (((fabric.get('hosts') or {}).get(host) or {}).get('hcas') or {})
    return [(name, hcas[name]['guid'], hcas[name]['subnet'])
            for name in sorted(hcas, key=profiles.hca_index)]


def environment(fabric, host, ca=None):
    """The variables a umad2sim client on ``host`` needs for CA ``ca`` (default: its first): LD_PRELOAD,
    IBSIM_SERVER_NAME, IBSIM_SERVER_PORT (its subnet's ibsim) and SIM_HOST (the CA's port GUID)."""
    config = settings(fabric)
    if not config:
        raise IbsimError('the fabric runs no ibsim (hwsim build-fabric --ibsim-host HOST)')
    cas = host_cas(fabric, host)
    if not cas:
        raise IbsimError('%s has no InfiniBand HCA on the fabric' % host)
    chosen = [item for item in cas if ca is None or item[0] == ca]
    if not chosen:
        raise IbsimError("%s has no HCA %s on the fabric; it has %s" % (host, ca, ', '.join(item[0] for item in cas)))
    name, guid, subnet = chosen[0]
    return {'LD_PRELOAD': PRELOAD, 'IBSIM_SERVER_NAME': config['host'],
            'IBSIM_SERVER_PORT': str(subnet_port(fabric, subnet)), 'SIM_HOST': guid}


def env_text(variables):
    """systemd EnvironmentFile / shell text, one VAR=value a line, sorted."""
    return ''.join('%s=%s\n' % (key, variables[key]) for key in sorted(variables))


ENV_FILE = '/etc/hwsim/ibsim.env'
PORT_ENV_FILE = '/etc/hwsim/ibsim-%s.env'   # per CA port GUID: the aicluster-opensm@<port guid> drop-in reads it after ENV_FILE


def host_files(fabric, host):
    """{path: text} of the client environment files install.yml writes on ``host`` (none without an IB HCA or an
    ibsim): ENV_FILE (the first HCA's server, no SIM_HOST: the unit or the wrapper sets it) and one PORT_ENV_FILE per
    HCA (its subnet's IBSIM_SERVER_PORT and SIM_HOST)."""
    if not settings(fabric) or not host_cas(fabric, host):
        return {}
    first = environment(fabric, host)
    first.pop('SIM_HOST')
    files = {ENV_FILE: env_text(first)}
    for name, guid, dummy in host_cas(fabric, host):
        variables = environment(fabric, host, name)
        files[PORT_ENV_FILE % guid] = env_text({'IBSIM_SERVER_PORT': variables['IBSIM_SERVER_PORT'], 'SIM_HOST': guid})
    return files


def split_ca_args(args):
    """(ca, port, the other arguments): ``-C``/``--Ca`` and ``-P``/``--Port`` taken out, as umad2sim shows one CA
    (``ibsim0``) and the CA is chosen by SIM_HOST instead."""
    ca, port, rest, args = None, None, [], list(args)
    while args:
        item = args.pop(0)
        for short, long_name in (('-C', '--Ca'), ('-P', '--Port')):
            value = None
            if item in (short, long_name) and args:
                value = args.pop(0)
            elif item.startswith(long_name + '='):
                value = item.split('=', 1)[1]
            elif item.startswith(short) and len(item) > 2 and not item.startswith('--'):
                value = item[2:]
            if value is not None:
                if short == '-C':
                    ca = value
                else:
                    port = value
                break
        else:
            rest.append(item)
    return ca, port, rest


def exec_tool(fabric, host, tool, args, environ, sbin=SBIN):
    """Replace this process by the real ``tool`` (/usr/sbin) under umad2sim, attached to the CA ``-C`` names."""
    ca, dummy, rest = split_ca_args(args)
    env = dict(environ)
    env.update(environment(fabric, host, ca))
    if not os.access(os.getcwd(), os.W_OK):
        os.makedirs(SPILL_DIR, exist_ok=True)
        os.chdir(SPILL_DIR)
    path = os.path.join(sbin, tool)
    os.execve(path, [path] + rest, env)


def command_fifo(state_dir, subnet_name):
    """The FIFO ibsim's console reads for ``subnet_name``: on the state volume every lab host shares."""
    return os.path.join(state_dir, 'ibsim', subnet_name + '.cmd')


def serve(fabric, subnet_name, state_dir, run_dir, ibsim='ibsim'):
    """Write the subnet's net file under ``run_dir``, make its command FIFO, then become ibsim on its UDP port
    (remote mode, network started, console on the FIFO, which this process also holds open for writing so ibsim
    never reads an end of file)."""
    texts = ibsim_net(fabric)
    if subnet_name not in texts:
        raise IbsimError('no subnet %r in the fabric; subnets: %s' % (subnet_name, ', '.join(texts) or 'none'))
    os.makedirs(run_dir, exist_ok=True)
    net = os.path.join(run_dir, subnet_name + '.net')
    with open(net, 'w', encoding='utf-8') as handle:
        handle.write(texts[subnet_name])
    fifo = command_fifo(state_dir, subnet_name)
    os.makedirs(os.path.dirname(fifo), exist_ok=True)
    if os.path.lexists(fifo) and not stat.S_ISFIFO(os.lstat(fifo).st_mode):
        os.unlink(fifo)
    if not os.path.lexists(fifo):
        os.mkfifo(fifo, 0o600)
    console = os.open(fifo, os.O_RDWR)
    os.dup2(console, 0)
    os.close(console)
    os.chdir(run_dir)
    port = str(subnet_port(fabric, subnet_name))
    os.execvp(ibsim, [ibsim, '-s', '-r', '-l', port, net])


def send_command(state_dir, subnet_name, line):
    """Write one console command to a running ibsim; IbsimError when none reads its FIFO."""
    fifo = command_fifo(state_dir, subnet_name)
    try:
        handle = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno in (errno.ENXIO, errno.ENOENT):
            raise IbsimError('no ibsim serves subnet %s (%s)' % (subnet_name, fifo)) from exc
        raise
    try:
        os.write(handle, (line.rstrip('\n') + '\n').encode())
    finally:
        os.close(handle)


def switch_port_errors_command(fabric, switch_name, port, count=100):
    """(subnet, ibsim console line) raising SymbolErrorCounter on a switch port (sim_cmd.c PerformanceSet)."""
    switch = next((item for item in fabric['switches'] if item['name'] == switch_name), None)
    if switch is None:
        raise IbsimError('no switch %r in the fabric' % switch_name)
    if not 1 <= int(port) <= switch['port_count']:
        raise IbsimError('switch %s has ports 1..%d' % (switch_name, switch['port_count']))
    subnet = switch.get('subnet') or fabric['subnets'][0]['name']
    return subnet, 'PerformanceSet "%s"[%d] PortCounters.SymbolErrorCounter=%d' % (switch_name, int(port), int(count))
