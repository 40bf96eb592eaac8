"""perftest stand-ins: ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat, ib_read_lat, ib_send_lat.

A real server/client pair over TCP, like perftest's out-of-band connection
("Data ex. method : Ethernet"): started without a server name the tool is
the server (binds the perftest port, default 18515, prints the "Waiting for
client" banner, accepts ONE client, then exits); started with a server name
it is the client.  The two exchange their host name and the chosen HCA
port's simulated state (rate, link layer, LID, GID, hca-bw-low fraction,
profile efficiency) as JSON lines over the socket; the client computes the
result rows and sends them to the server, which prints them as perftest's
server prints the client's report.

Layouts follow linux-rdma/perftest: perftest_parameters.h (RESULT_LINE,
RESULT_FMT, RESULT_FMT_G, RESULT_FMT_LAT, RESULT_FMT_LAT_DUR, REPORT_FMT,
REPORT_FMT_LAT, REPORT_FMT_LAT_DUR), perftest_parameters.c
ctx_print_test_info(), perftest_communication.c ctx_print_pingpong_data()
(BASIC_ADDR_FMT, READ_FMT, RDMA_FMT, PERF_GID_FMT) and the error paths of
write_bw.c main(), ctx_find_dev(), set_link_layer()/check_link(),
ethernet_client_connect()/ethernet_server_connect()/establish_connection().

A server waits at most $HWSIM_PERFTEST_TIMEOUT seconds (default 60) for its
client and for each message; a client waits as long for the server's answers.

Field behaviour (issue 11):

- one QP with messages of 1 MiB or more reaches 75-90% of the line rate
  (ConnectX-7 at NDR: 284-365 Gb/s, NVIDIA/nccl #2409), the figure varying
  with the pair and TCP port (seeded, so a rerun gives the same number); 2 or
  more QPs reach the profile's ``perftest.efficiency``;
- a ``-x`` GID index whose entry is empty fails as the QP transition does
  ("Failed to modify QP <qpn> to RTR", " Unable to Connect the HCA's through
  the link"); RoCE v1 against v2 fails with a completion error;
- ``--use_cuda=N`` prints perftest's CUDA start-up lines and uses GPU N; the
  ``gdr-broken FRACTION`` fault makes it reach FRACTION of the bandwidth (0: the
  memory registration fails, as without nvidia_peermem); host memory is not
  affected;
- ``memlock KIB``: buffers larger than the locked-memory limit fail with
  "Couldn't allocate MR" (the memory lock limit of a container or service);
- ``--tclass=N`` marks the data packets: the receiving netdev maps it to a priority through its DSCP entries (trust
  dscp; else priority 0), and when 2 or more servers of one HCA run at once (an incast, hwsim/incast.py) each sender
  gets its share of the port; with PFC off on that priority the receiver's ``rx_prio<P>_discards`` rise and the
  bandwidth falls further, with PFC on the pause and CNP counters rise and nothing drops (``ethtool -S`` shows them).
"""
import json
import os
import random
import socket
import time

from hwsim import faults as fault_kinds, incast
from hwsim.model import pid
from hwsim.tools import gpus as gpu_views

DEF_PORT = 18515
DEFAULT_TIMEOUT = 60.0
RESULT_LINE = '-' * 87 + '\n'
BANNER = '\n' + '*' * 36 + '\n* Waiting for client to connect... *\n' + '*' * 36 + '\n'
RESULT_FMT = ' #bytes     #iterations    BW peak[%s]    BW average[%s]   MsgRate[Mpps]\n'
RESULT_FMT_LAT = (' #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   '
                  '99% percentile[usec]   99.9% percentile[usec] \n')
RESULT_FMT_LAT_DUR = ' #bytes        #iterations       t_avg[usec]    tps average\n'
REPORT_FMT = ' %-7d    %-10d       %-7.2f            %-7.2f\t\t   %-7.6f\n'
REPORT_FMT_LAT = ' %-7d %d          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f\n'
REPORT_FMT_LAT_DUR = ' %-7d       %d            %-7.2f        %-7.2f\n'
INIT_FAILED = 'Unable to open file descriptor for socket connection Unable to init the socket connection\n'

# tool -> (verb title, bw|lat, verb)
TESTS = {
    'ib_write_bw': ('RDMA_Write', 'bw', 'write'),
    'ib_read_bw': ('RDMA_Read', 'bw', 'read'),
    'ib_send_bw': ('Send', 'bw', 'send'),
    'ib_write_lat': ('RDMA_Write', 'lat', 'write'),
    'ib_read_lat': ('RDMA_Read', 'lat', 'read'),
    'ib_send_lat': ('Send', 'lat', 'send'),
}
# Message rate one QP reaches with small messages (Mpps), and the one-way latency floor (usec).
MSG_RATE_MPPS = 2.77
BASE_LATENCY_US = {('InfiniBand', 'write'): 0.99, ('InfiniBand', 'send'): 1.05, ('InfiniBand', 'read'): 1.93,
                   ('Ethernet', 'write'): 1.52, ('Ethernet', 'send'): 1.61, ('Ethernet', 'read'): 2.88}
PORT_STATES = {'Down': 'Down', 'Initializing': 'Init', 'Armed': 'Armed', 'Active': 'Active'}
DEFAULT_EFFICIENCY = 0.95
# One QP with messages of at least this size stays below line rate: between these fractions of it.
SINGLE_QP_MIN_BYTES = 1048576
SINGLE_QP_EFFICIENCY = (0.75, 0.90)
MR_FAILED = "Couldn't allocate MR\nfailed to create mr\nFailed to create MR\n Couldn't create IB resources\n"
# (argument-taking short options, long option -> short option)
WITH_VALUE = {'-d': 'device', '-i': 'ib_port', '-x': 'gid_index', '-s': 'size', '-n': 'iters', '-D': 'duration',
              '-q': 'qps', '-p': 'port'}
LONG = {'--ib-dev': '-d', '--ib-port': '-i', '--gid-index': '-x', '--size': '-s', '--iters': '-n',
        '--duration': '-D', '--qp': '-q', '--port': '-p', '--all': '-a', '--bidirectional': '-b', '--CPU-freq': '-F'}
# long options taking a value (``--use_cuda=0`` or ``--use_cuda 0``)
LONG_VALUE = {'--use_cuda': 'use_cuda', '--tclass': 'tclass'}
FLAGS = {'-a': 'all', '-b': 'bidirectional', '-F': 'cpu_freq', '--report_gbits': 'report_gbits'}
INT_OPTIONS = ('ib_port', 'gid_index', 'size', 'iters', 'duration', 'qps', 'port', 'use_cuda', 'tclass')


class PerftestError(Exception):
    """Ends the run: ``text`` goes to stderr and the tool exits 1."""

    def __init__(self, text):
        super(PerftestError, self).__init__(text)
        self.text = text


def timeout_seconds(environ):
    """$HWSIM_PERFTEST_TIMEOUT (seconds; the tool's environment, else the process's), default 60."""
    try:
        return float(environ.get('HWSIM_PERFTEST_TIMEOUT') or os.environ.get('HWSIM_PERFTEST_TIMEOUT', DEFAULT_TIMEOUT))
    except ValueError:
        return DEFAULT_TIMEOUT


def _defaults(kind):
    return {'device': None, 'ib_port': 1, 'gid_index': -1, 'size': 65536 if kind == 'bw' else 2,
            'iters': 5000 if kind == 'bw' else 1000, 'duration': None, 'qps': 1, 'port': DEF_PORT,
            'all': False, 'bidirectional': False, 'cpu_freq': False, 'report_gbits': False,
            'output': None, 'server': None, 'use_cuda': None, 'tclass': None}


def _split_long(arg):
    """``--port=18516`` -> ('--port', '18516'); others (arg, None)."""
    if arg.startswith('--') and '=' in arg:
        name, value = arg.split('=', 1)
        return name, value
    return arg, None


def parse_args(name, args):
    """Options dict, or raises PerftestError with perftest's parser complaint."""
    kind = TESTS[name][1]
    opts = _defaults(kind)
    position = 0
    while position < len(args):
        arg, inline = _split_long(args[position])
        position += 1
        if arg == '--output':
            opts['output'] = inline
            continue
        if arg in LONG_VALUE:
            if inline is None:
                if position >= len(args):
                    raise PerftestError("%s: option '%s' requires an argument\n Parser function exited with Error\n" % (name, arg))
                inline = args[position]
                position += 1
            opts[LONG_VALUE[arg]] = inline
            continue
        arg = LONG.get(arg, arg)
        if arg in FLAGS:
            opts[FLAGS[arg]] = True
        elif arg in WITH_VALUE:
            if inline is None:
                if position >= len(args):
                    raise PerftestError("%s: option requires an argument -- '%s'\n Parser function exited with Error\n" % (name, arg[1:]))
                inline = args[position]
                position += 1
            opts[WITH_VALUE[arg]] = inline
        elif arg.startswith('-'):
            raise PerftestError("%s: invalid option -- '%s'\n Invalid Command or flag.\n Please check command line and run again.\n\n"
                                " Parser function exited with Error\n" % (name, arg.lstrip('-')))
        else:
            opts['server'] = arg
    for key in INT_OPTIONS:
        if opts[key] is not None and not isinstance(opts[key], int):
            try:
                opts[key] = int(opts[key], 0)
            except ValueError:
                raise PerftestError(' Invalid value for %s: %s\n Parser function exited with Error\n' % (key, opts[key]))
    if opts['output'] not in (None, 'bandwidth', 'message_rate', 'latency'):
        raise PerftestError(' Invalid output type. Please choose bandwidth, message_rate or latency\n Parser function exited with Error\n')
    return opts


def find_port(ctx, opts):
    """ctx_find_dev() + check_link(): the PortView used, or PerftestError with perftest's lines."""
    model = ctx.host_model()
    names = model.hca_names()
    if not names:
        raise PerftestError(' Did not detect devices \n If device exists, check if driver is up\n'
                            ' Unable to find the Infiniband/RoCE device\n')
    device = opts['device'] or names[0]
    if device not in names:
        raise PerftestError('IB device %s not found\n Unable to find the Infiniband/RoCE device\n' % device)
    views = [view for view in model.ports(device) if view.number == opts['ib_port']]
    if not views:
        raise PerftestError(' Unable to query port %d attributes\n Couldn\'t set the link layer\n'
                            ' Couldn\'t get context for the device\n' % opts['ib_port'])
    view = views[0]
    if view.state != 'Active':
        raise PerftestError(' Port number %d state is %s\n Couldn\'t set the link layer\n'
                            ' Couldn\'t get context for the device\n' % (view.number, PORT_STATES.get(view.state, view.state)))
    efficiency = (model.profile.get('perftest') or {}).get('efficiency', DEFAULT_EFFICIENCY)
    return device, view, efficiency


def _best_gid_index(view):
    """get_best_gid_index(): IPv4-mapped over link-local, then RoCE v2 over v1."""
    best = None
    for index, _gid, version, address in view.gids:
        key = (bool(address), version == 'v2')
        if best is None or key > best[0]:
            best = (key, index)
    return best[1] if best else 0


def _gid_bytes(view, index):
    """The 16 GID bytes at ``index`` (all zero for an empty entry, as ibv_query_gid returns it)."""
    for number, text, _version, _address in view.gids:
        if number == index:
            return list(bytes.fromhex(text.replace(':', '')))
    return [0] * 16


def local_dest(ctx, device, view, efficiency, opts):
    """What this side tells the other: host, port state and its QP addresses (pingpong_dest)."""
    gid_index = opts['gid_index']
    if gid_index == -1 and view.link_layer == 'Ethernet':
        gid_index = _best_gid_index(view)
    seed = '%s/%s/%d/%d' % (ctx.host, device, pid(), time.time_ns())
    rng = random.Random(seed)
    qps = []
    for number in range(opts['qps']):
        qps.append({'qpn': 0x100 + rng.randrange(0x3e00) + number, 'psn': rng.randrange(1 << 24),
                    'rkey': 0x180000 + rng.randrange(0x10000), 'vaddr': 0x7f0000000000 + rng.randrange(1 << 28) * 0x1000})
    fraction = view.faults.get('hca-bw-low', {}).get('fraction', 1.0)
    return {'host': ctx.host, 'device': device, 'netdev': view.netdev, 'tclass': opts['tclass'],
            'link_layer': view.link_layer, 'rate': view.rate, 'lid': view.lid,
            'mtu': min(int(view.mtu), 4096), 'gid_index': gid_index,
            'gid': _gid_bytes(view, gid_index) if gid_index > -1 else None, 'gid_version': _gid_version(view, gid_index),
            'efficiency': efficiency, 'bw_fraction': fraction, 'gdr_fraction': 1.0, 'qps': qps}


def _gid_version(view, index):
    """RoCE version of the GID table entry at ``index`` ('v1', 'v2'), or None."""
    for number, _text, version, _address in view.gids:
        if number == index:
            return version
    return None


def _last_fault(ctx, kind):
    """The arguments of the latest fault of ``kind`` on this host, or None."""
    found = fault_kinds.of_kind(ctx.host_model().state['faults'], kind)
    return found[-1]['args'] if found else None


def cuda_lines(ctx, opts, dest):
    """--use_cuda: perftest's CUDA start-up lines (stdout) and the GPU's GPUDirect fraction, or PerftestError.

    perftest's cuda_memory.c: the device list, "Picking device No. N", the
    context and the cuMemAlloc() of the buffer; with ``gdr-broken 0`` the
    memory registration of GPU memory fails (no nvidia_peermem).
    """
    model = ctx.host_model()
    views = gpu_views.visible(model)
    lines = ['initializing CUDA\n']
    if not views:
        raise PerftestError('There are no available device(s) that support CUDA\n Couldn\'t create IB resources\n')
    if opts['use_cuda'] >= len(views):
        raise PerftestError('No such device ID (%d) exists in system\n Couldn\'t create IB resources\n' % opts['use_cuda'])
    lines.append('Listing all CUDA devices in system:\n')
    for view in views:
        bus = view.pci_bus_id.split(':')
        lines.append('CUDA device %d: PCIe address is %s:%s\n' % (view.index, bus[-2].upper(), bus[-1].split('.')[0].upper()))
    chosen = views[opts['use_cuda']]
    size = opts['size'] * opts['qps'] * (2 if opts['bidirectional'] else 1)
    address = 0x7f3c00000000 + chosen.index * 0x200000000
    lines += ['\nPicking device No. %d\n' % chosen.index, '[pid = %d, dev = %d] device name = [%s]\n' % (pid(), chosen.index, chosen.name),
              'creating CUDA Ctx\n', 'making it the current CUDA Ctx\n', 'cuMemAlloc() of a %d bytes GPU buffer\n' % size,
              'allocated GPU buffer address at %016x pointer=%#x\n' % (address, address)]
    broken = _last_fault(ctx, 'gdr-broken')
    if broken is not None and broken['fraction'] == 0:
        if opts['output'] is None:
            _write(ctx, ''.join(lines))  # perftest's start-up lines are on stdout, the failure on stderr
        raise PerftestError(MR_FAILED)
    dest['gdr_fraction'] = broken['fraction'] if broken is not None else 1.0
    return ''.join(lines)


def check_memlock(ctx, opts):
    """The host-memory buffers against the ``memlock KIB`` fault's limit; PerftestError as perftest's MR failure."""
    limit = _last_fault(ctx, 'memlock')
    if limit is None or opts['use_cuda'] is not None:
        return
    size = opts['size'] * opts['qps'] * (2 if opts['bidirectional'] else 1)
    if size > limit['kib'] * 1024:
        raise PerftestError(MR_FAILED)


def connect_qps(local, remote, side):
    """ctx_connect(): the QPs' move to RTR with the local GID against the remote one, or PerftestError.

    An empty (all-zero) local GID entry makes ibv_modify_qp fail as a wrong
    ``-x`` does; RoCE v1 against v2 connects but no packet arrives (transport
    retry counter exceeded on the first completion).
    """
    if local['gid_index'] > -1 and not any(local['gid'] or []):
        raise PerftestError("Failed to modify QP %d to RTR\n Unable to Connect the HCA's through the link\n" % local['qps'][0]['qpn'])
    if remote['gid_index'] > -1 and not any(remote.get('gid') or []):
        raise PerftestError(' Failed to exchange data between server and clients\n')
    if local['link_layer'] == 'Ethernet' and local.get('gid_version') and remote.get('gid_version') \
            and local['gid_version'] != remote['gid_version']:
        raise PerftestError('Completion with error at %s\nFailed status 12: wr_id 0 syndrom 0x81\nscnt=128, ccnt=0\n' % side)


def _c_alt_hex(value, width):
    """C's ``%#0<width>x``: no 0x prefix for zero."""
    if value == 0:
        return '%0*x' % (width, 0)
    return '%#0*x' % (width, value)


def address_lines(side, dest, verb):
    """ctx_print_pingpong_data() for every QP of one side."""
    lines = []
    for qp in dest['qps']:
        line = ' %s address: LID %s QPN %s PSN %s' % (
            side, _c_alt_hex(dest['lid'], 4), _c_alt_hex(qp['qpn'], 6), _c_alt_hex(qp['psn'], 6))
        if verb == 'read':
            line += ' OUT %s' % _c_alt_hex(16, 4)
        if verb != 'send':
            line += ' RKey %s VAddr %s' % (_c_alt_hex(qp['rkey'], 8), _c_alt_hex(qp['vaddr'], 16))
        lines.append(line + '\n')
        if dest['gid'] is not None:
            lines.append(' GID: %s\n' % ':'.join('%02d' % byte for byte in dest['gid']))
    return ''.join(lines)


def title(name, opts):
    verb_title, kind, _verb = TESTS[name]
    if kind == 'lat':
        return '%s Latency Test' % verb_title
    return '%s %sBW Test' % (verb_title, 'Bidirectional ' if opts['bidirectional'] else '')


def test_info(name, opts, local, remote, server):
    """ctx_print_test_info()."""
    _title, kind, verb = TESTS[name]
    duplex = opts['bidirectional'] or kind == 'lat'
    lines = [RESULT_LINE, '                    %s\n' % title(name, opts),
             ' Dual-port       : OFF\t\tDevice         : %s\n' % local['device'],
             ' Number of qps   : %d\t\tTransport type : IB\n' % opts['qps'],
             ' Connection type : RC\t\tUsing SRQ      : OFF\n',
             ' PCIe relax order: ON\n', ' ibv_wr* API     : ON\n']
    if not server or duplex:
        lines.append(' TX depth        : %d\n' % (128 if kind == 'bw' else 1))
    if verb == 'send' and (server or duplex):
        lines.append(' RX depth        : 512\n')
    if kind == 'bw':
        lines.append(' CQ Moderation   : 100\n')
    lines.append(' Mtu             : %d[B]\n' % min(local['mtu'], remote['mtu']))
    lines.append(' Link type       : %s\n' % ('IB' if local['link_layer'] == 'InfiniBand' else 'Ethernet'))
    if local['gid_index'] > -1:
        lines.append(' GID index       : %d\n' % local['gid_index'])
    if verb == 'read':
        lines.append(' Outstand reads  : 16\n')
    else:
        inline = 0 if kind == 'bw' else (220 if verb == 'write' else 236)
        lines.append(' Max inline data : %d[B]\n' % inline)
    lines += [' rdma_cm QPs\t : OFF\n', ' Data ex. method : Ethernet\n', RESULT_LINE]
    return ''.join(lines)


def link_gbps(local, remote):
    """Bandwidth both ends allow (Gb/s): min(rates) x min(efficiencies) x hca-bw-low (and gdr-broken) fractions of both ends,
    and the receiver's incast share (hwsim/incast.py; 1 for a single pair)."""
    rate = min(local['rate'], remote['rate'])
    fractions = [dest.get(key, 1.0) for dest in (local, remote) for key in ('bw_fraction', 'gdr_fraction', 'share')]
    product = 1.0
    for fraction in fractions:
        product *= fraction
    return rate * min(local['efficiency'], remote['efficiency']) * product


def qp_efficiency(opts, size, local, remote):
    """The share of the line rate one run reaches for its QP count: 1.0 with 2+ QPs or below 1 MiB; with 1 QP at
    MB sizes a figure in SINGLE_QP_EFFICIENCY, seeded by both hosts, the HCA, the TCP port and the size."""
    if opts['qps'] >= 2 or size < SINGLE_QP_MIN_BYTES:
        return 1.0
    rng = random.Random('%s/%s/%s/%d/%d' % (local['host'], remote['host'], local['device'], opts['port'], size))
    low, high = SINGLE_QP_EFFICIENCY
    return (low + (high - low) * rng.random()) / max(local['efficiency'], remote['efficiency'], 1e-9)


def bw_at(size, line_gbps, qps):
    """Average Gb/s for one message size: message-rate bound below the knee, line rate above it."""
    cap = size * 8 * MSG_RATE_MPPS * qps / 1000.0
    ratio = cap / line_gbps if line_gbps else 0.0
    if ratio >= 3.0:
        return line_gbps
    return line_gbps * ratio / (1.0 + ratio ** 8) ** 0.125


def sizes(opts):
    if opts['all'] and opts['duration'] is None:
        return [1 << exponent for exponent in range(1, 24)]
    return [opts['size']]


def bw_rows(opts, gbps, local=None, remote=None):
    """(size, iterations, peak, average, msg rate) rows in the report's units."""
    rows = []
    for size in sizes(opts):
        share = qp_efficiency(opts, size, local, remote) if local and remote else 1.0
        average = bw_at(size, gbps, opts['qps']) * share * (2 if opts['bidirectional'] else 1)
        msg_rate = average * 1e9 / 8 / size / 1e6
        iterations = opts['iters']
        peak = average * 1.0003
        if opts['duration'] is not None:
            iterations = int(msg_rate * 1e6 * opts['duration'])
            peak = 0.0
        if not opts['report_gbits']:
            average, peak = average * 1e9 / 8 / 1048576, peak * 1e9 / 8 / 1048576
        rows.append((size, iterations, peak, average, msg_rate))
    return rows


def lat_rows(opts, gbps, local, verb):
    """Latency rows (usec): floor of the link layer/verb plus the time on the wire."""
    rows = []
    base = BASE_LATENCY_US[(local['link_layer'], verb)]
    for size in sizes(opts):
        typical = base + size * 8 / (gbps * 1000.0) if gbps else base
        if opts['duration'] is not None:
            rows.append((size, int(opts['duration'] * 1e6 / typical), typical + 0.01, 1e6 / typical))
            continue
        rows.append((size, opts['iters'], typical - 0.03, typical * 6.0, typical, typical + 0.01, 0.02,
                     typical + 0.05, typical * 3.2))
    return rows


def report(name, opts, local, remote):
    """The whole result block (table header, rows, closing rule) as the client measures it."""
    _title, kind, verb = TESTS[name]
    gbps = link_gbps(local, remote)
    if kind == 'bw':
        rows = bw_rows(opts, gbps, local, remote)
        if opts['output'] == 'bandwidth':
            return ''.join('%f\n' % row[3] for row in rows)
        if opts['output'] == 'message_rate':
            return ''.join('%f\n' % row[4] for row in rows)
        units = 'Gb/sec' if opts['report_gbits'] else 'MB/sec'
        return RESULT_FMT % (units, units) + ''.join(REPORT_FMT % row for row in rows) + RESULT_LINE
    rows = lat_rows(opts, gbps, local, verb)
    if opts['output'] is not None:
        return ''.join('%f\n' % row[4 if opts['duration'] is None else 2] for row in rows)
    if opts['duration'] is not None:
        return RESULT_FMT_LAT_DUR + ''.join(REPORT_FMT_LAT_DUR % row for row in rows) + RESULT_LINE
    return RESULT_FMT_LAT + ''.join(REPORT_FMT_LAT % row for row in rows) + RESULT_LINE


class Channel(object):
    """JSON lines over the out-of-band TCP socket."""

    def __init__(self, sock):
        self.sock = sock
        self.reader = sock.makefile('rb')

    def send(self, message):
        self.sock.sendall(json.dumps(message).encode() + b'\n')

    def receive(self):
        line = self.reader.readline()
        if not line:
            raise PerftestError(' Failed to exchange data between server and clients\n')
        return json.loads(line.decode())

    def close(self):
        self.reader.close()
        self.sock.close()


def _write(ctx, text):
    ctx.write(text)
    flush = getattr(ctx.out, 'flush', None)
    if flush:
        flush()


def _hello(name, opts, dest):
    return {'test': name, 'bidirectional': opts['bidirectional'], 'dest': dest}


def _check_peer(name, opts, hello):
    if hello.get('test') != name or hello.get('bidirectional') != opts['bidirectional']:
        raise PerftestError(' Failed to exchange data between server and clients\n')
    return hello['dest']


def _header(name, opts, local, remote, server):
    if opts['output'] is not None:
        return ''
    verb = TESTS[name][2]
    return (test_info(name, opts, local, remote, server) + address_lines('local', local, verb)
            + address_lines('remote', remote, verb) + RESULT_LINE)


def connect(opts, timeout):
    """ethernet_client_connect(): the connected socket, or perftest's failure lines."""
    host, port = opts['server'], opts['port']
    try:
        infos = socket.getaddrinfo(host, port, socket.AF_INET, socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise PerftestError('%s for %s:%d\nProblem in resolving basic address and port\n%s' % (exc.strerror, host, port, INIT_FAILED))
    for family, kind, proto, _name, address in infos:
        sock = socket.socket(family, kind, proto)
        sock.settimeout(timeout)
        try:
            sock.connect(address)
            return sock
        except OSError:
            sock.close()
    raise PerftestError("Couldn't connect to %s:%d\n%s" % (host, port, INIT_FAILED))


def listen(opts, timeout):
    """The bound, listening socket of ethernet_server_connect(), or its failure lines."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(('', opts['port']))
    except OSError:
        sock.close()
        raise PerftestError("Couldn't listen to port %d\n%s" % (opts['port'], INIT_FAILED))
    sock.listen(1)
    sock.settimeout(timeout)
    return sock


def accept(listener, timeout):
    """One client (the listener is closed after it, as perftest does)."""
    try:
        conn, _address = listener.accept()
    except socket.timeout:
        raise PerftestError('server accept: Connection timed out\naccept() failed\n%s' % INIT_FAILED)
    finally:
        listener.close()
    conn.settimeout(timeout)
    return conn


def _resources(ctx, opts, dest):
    """ctx_init() after the connection: the memory region (memlock) and, with --use_cuda, the GPU buffer."""
    check_memlock(ctx, opts)
    if opts['use_cuda'] is not None:
        text = cuda_lines(ctx, opts, dest)
        if opts['output'] is None:
            _write(ctx, text)


def _packets(opts, local, remote):
    """Packets one run carried (for the incast counters): size x iterations, or the rate over the duration."""
    if opts['duration'] is not None:
        volume = link_gbps(local, remote) * 1e9 / 8 * opts['duration']
    else:
        volume = opts['size'] * opts['iters']
    return int(volume // max(int(local.get('mtu') or 4096), 1))


def run_client(ctx, name, opts, dest, timeout):
    channel = Channel(connect(opts, timeout))
    try:
        _resources(ctx, opts, dest)
        channel.send(_hello(name, opts, dest))
        remote = _check_peer(name, opts, channel.receive())
        _write(ctx, _header(name, opts, dest, remote, False))
        connect_qps(dest, remote, 'client')
        if opts['duration'] is not None:
            time.sleep(min(opts['duration'], 0.2))
        text = report(name, opts, dest, remote)
        channel.send({'report': text})
        channel.receive()
        _write(ctx, text)
        if remote.get('incast'):
            incast.add(ctx, dest.get('netdev'), incast.rises(remote['incast'], _packets(opts, dest, remote), 'sender'))
    except OSError:
        raise PerftestError(' Failed to exchange data between server and clients\n')
    finally:
        channel.close()
    return 0


def run_server(ctx, name, opts, dest, timeout):
    listener = listen(opts, timeout)
    run = incast.register(ctx, dest['device'], opts['port'])
    try:
        if opts['output'] is None:
            _write(ctx, BANNER)
        channel = Channel(accept(listener, timeout))
        try:
            _resources(ctx, opts, dest)
            remote = _check_peer(name, opts, channel.receive())
            # the receiving port: how many flows it carries now, on which priority, with or without PFC
            view = incast.receiver_view(ctx, dest.get('netdev'), remote.get('tclass'), incast.fan_in(ctx, run))
            # InfiniBand is lossless by its credit-based link-level flow control: no PFC, no drop, so no incast model
            if view['senders'] >= 2 and dest.get('link_layer') == 'Ethernet':
                dest['incast'], dest['share'] = view, view['share']
            channel.send(_hello(name, opts, dest))
            _write(ctx, _header(name, opts, dest, remote, True))
            connect_qps(dest, remote, 'server')
            text = channel.receive()['report']
            _write(ctx, text)
            channel.send({'done': True})
            if dest.get('link_layer') == 'Ethernet':
                incast.add(ctx, dest.get('netdev'), incast.rises(view, _packets(opts, dest, remote), 'receiver'))
        except OSError:
            raise PerftestError(' Failed to exchange data between server and clients\n')
        finally:
            channel.close()
    finally:
        incast.finish(run)
    return 0


def run(ctx, args, name):
    """One perftest tool; server without a server name, client with one."""
    try:
        opts = parse_args(name, args)
        device, view, efficiency = find_port(ctx, opts)
        dest = local_dest(ctx, device, view, efficiency, opts)
        timeout = timeout_seconds(ctx.environ)
        if opts['server']:
            return run_client(ctx, name, opts, dest, timeout)
        return run_server(ctx, name, opts, dest, timeout)
    except PerftestError as exc:
        ctx.error(exc.text)
        return 1


def run_ib_write_bw(ctx, args):
    return run(ctx, args, 'ib_write_bw')


def run_ib_read_bw(ctx, args):
    return run(ctx, args, 'ib_read_bw')


def run_ib_send_bw(ctx, args):
    return run(ctx, args, 'ib_send_bw')


def run_ib_write_lat(ctx, args):
    return run(ctx, args, 'ib_write_lat')


def run_ib_read_lat(ctx, args):
    return run(ctx, args, 'ib_read_lat')


def run_ib_send_lat(ctx, args):
    return run(ctx, args, 'ib_send_lat')
