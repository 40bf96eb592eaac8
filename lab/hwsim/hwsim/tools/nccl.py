"""nccl-tests stand-ins: all_reduce_perf, all_gather_perf, reduce_scatter_perf, broadcast_perf, alltoall_perf.

Output in the nccl-tests 2.13 layout (src/common.cu run()/TimeTest()/BenchTime(),
the CUDACHECK/TESTCHECK macros of src/common.h, the getCollByteCount()/getBw()
of each collective's .cu file): version and "Collective test starting" lines,
the parameter line, "# Using devices" with one ``#  Rank`` line per rank, the
three-line table header, one row per size, "Out of bounds values", "Avg bus
bandwidth" and "Collective test concluded".

Launched under mpirun (OMPI_COMM_WORLD_*) or srun with a PMI plugin
(``--mpi=pmix``: PMIX_RANK; ``--mpi=pmi2``: PMI_RANK/PMI_SIZE; hosts from
SLURM_JOB_NODELIST) the run spans several hosts: as with real nccl-tests built
with MPI, only rank 0 prints, and it lists the ranks of every host. srun
without PMI (SLURM_PROCID alone) starts independent single-process runs, each
printing its own table, as real MPI singletons do.  Host names come from SLURM_JOB_NODELIST (Slurm hostlist syntax)
or $HWSIM_NCCL_HOSTS (``gpu01,gpu02``, for mpirun and PMI launches).

Bus bandwidth: busbw(size) = size x factor / (t0 + size x factor / peak), where
peak is the profile's ``nccl.<collective>_busbw_gbps`` x nccl-slow (the
slowest host's) and, across hosts, at most min over hosts of (sum of the
active GPU-fabric HCA ports NCCL_IB_HCA selects: rate x hca-bw-low x perftest
efficiency) / 8, or the socket figure on a host where it selects none (NCCL's
fall-back to sockets).

NCCL_IB_HCA as NCCL reads it (src/misc/utils.cc parseStringList/matchIfList):
a comma list of ``name[:port]``; a leading ``^`` excludes, a leading ``=``
(after the ``^``) matches names exactly; otherwise names are prefixes, so
``mlx5_1`` also selects mlx5_10 and mlx5_11 (NVIDIA/nccl PR #236).

NCCL's environment (``nccl_environment``) as NCCL src/misc/param.cc initEnv()/setEnvFile() builds it: the process's
environment first, then ``$NCCL_CONF_FILE`` (when set and not empty) or ``~/.nccl.conf``, then ``/etc/nccl.conf``,
all under the host's root ($HWSIM_ROOT: ``/`` in the lab, a temporary directory in tests). A line starting with ``#``
is a comment, a line without ``=`` is skipped, the name is what precedes the first ``=`` and the value the rest of
the line (nothing trimmed; both cut at 1023 characters), and each is set with setenv(name, value, 0): a variable
already set (the job's environment, or an earlier file) wins. Every process reads its own host's files; what a
process computes about another host of the run (its devices, its GID) uses this process's environment, as the
role writes the same variables on every node (the GID index aside, which the fault below models per host).

NCCL_DEBUG: VERSION or WARN print NCCL's bare ``NCCL version 2.21.5+cudaX.Y``
line (rank 0's process); INFO/TRACE print it as an INFO line plus, per process,
what NCCL logs about its network, each line only where NCCL_DEBUG_SUBSYS has its
subsystem (default INIT,BOOTSTRAP,ENV; ``^`` inverts, ALL):
- INIT|NET, src/transport/net_ib.cc ncclIbInit: ``NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_3:1/RoCE [RO]; OOB
  eth0:ADDR<0>`` (real: NVIDIA/nccl #1537 ``NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB
  primaryip:10.10.10.10<0>``), or ``NET/IB : No device found.`` then src/transport/net_socket.cc's ``NET/Socket :
  Using [0]eth0:ADDR<0>`` (real: NVIDIA/nccl #226 ``NET/Socket : Using [0]ens3:172.31.12.210<0>``);
- INIT|NET, src/init.cc: ``Using network IB`` / ``Using network Socket`` (real: NVIDIA/nccl #1537, #676);
- NET, src/graph/topo.cc ncclTopoGetSystem: ``NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'`` per device
  (format ``"NET/%s : GPU Direct RDMA %s for HCA %d '%s'"``; ``Disabled`` with fault ``gdr-broken 0``; real:
  NVIDIA/nccl #1537 ``NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'``);
- NET, multi-host runs only, src/transport/net_ib.cc ncclIbConnect, one line per device: RoCE ``NET/IB: NCCL Dev 0
  IbDev 0 Port 1 qpn 576 mtu 5 GID 3 (0/1064A8C0FFFF0000) fifoRkey=0x... fifoLkey=0x...`` (format ``"NET/IB: %s %d
  IbDev %d Port %d qpn %d mtu %d GID %ld (%lX/%lX) fifoRkey=0x%x fifoLkey=0x%x"``: the GID index used, then the GID's
  subnet prefix and interface id as x86 reads them), InfiniBand ``... mtu 5 LID 12 subnet-prefix 65152 FLID 0
  fifoRkey=...``.
The GID index NCCL uses on a RoCE port: NCCL_IB_GID_INDEX (environment, then the files) when set, else as NCCL 2.21+
chooses it (src/transport/net_ib.cc ncclIbGetGidIndex: the lowest RoCE v2 GID carrying an IPv4 address; 2.21.5-1,
"Automatically select RoCEv2/IPv4 interface by default"); fault ``gid-index-wrong`` makes it 0 on that host (the
link-local RoCE v1 GID: NCCL's default before 2.21). A multi-host run with a RoCE port whose GID is not RoCE v2 IPv4
(or an empty entry) fails as in NVIDIA/nccl #769, #1131 and #2013: every process of that host prints (NCCL_DEBUG WARN
or more) src/misc/ibvwrap.cc wrap_ibv_modify_qp's ``NCCL WARN Call to ibv_modify_qp failed with 110 Connection timed
out, on dev mlx5_0:1, curr state INIT, next state RTR, local GID index 0, local GID fe80::..., remote GID
::ffff:10.0.1.2`` (format ``"Call to ibv_modify_qp failed with %d %s, %s"`` and ibvModifyQpLog's ``"on dev %s:%d, curr
state %s, next state %s, local GID index %d, local GID %s, remote GID %s"``; real, NVIDIA/nccl #2013: ``ibvwrap.c:262
NCCL WARN Call to ibv_modify_qp failed with 110 Connection timed out, on dev mlx_x:1, curr state INIT, next state RTR,
local GID index 3, ...``) and ``HOST: Test NCCL failure`` with "unhandled system error"; the others the remote error;
exit 3.
nccl-rank-error GPU on a host fails the multi-node runs it is in: the process
of that GPU prints NCCL's WARN (NCCL_DEBUG WARN or more) and nccl-tests'
``HOST: Test NCCL failure`` with "unhandled system error", every other process
the "remote process exited or there was a network error" it then sees; exit 3.
"""
import ipaddress
import os
import re

from hwsim import faults as fault_kinds
from hwsim.model import pid

VERSION_LINE = '# nccl-tests version 2.13.11 nccl-headers=22105 nccl-library=22105\n'
WORD_SIZES = {'int8': 1, 'char': 1, 'uint8': 1, 'int32': 4, 'int': 4, 'uint32': 4, 'int64': 8, 'uint64': 8,
              'half': 2, 'float16': 2, 'float': 4, 'float32': 4, 'double': 8, 'float64': 8, 'bfloat16': 2}
TYPE_NAMES = {'char': 'int8', 'int': 'int32', 'float16': 'half', 'float32': 'float', 'float64': 'double'}
OPS = ('sum', 'prod', 'max', 'min', 'avg', 'mulsum')
# tool -> (profile key, bus factor kind, redop shown, printed size kind)
COLLECTIVES = {
    'all_reduce_perf': ('all_reduce_busbw_gbps', 'allreduce', None, 'same'),
    'all_gather_perf': ('all_gather_busbw_gbps', 'gather', 'none', 'gathered'),
    'reduce_scatter_perf': ('reduce_scatter_busbw_gbps', 'gather', None, 'gathered'),
    'broadcast_perf': ('all_gather_busbw_gbps', 'one', 'none', 'same'),
    'alltoall_perf': ('all_gather_busbw_gbps', 'gather', 'none', 'gathered'),
}
NCCL_VERSION = '2.21.5'   # nccl-library=22105 in VERSION_LINE
LATENCY_US = {True: 12.0, False: 30.0}
# GB/s of NCCL's socket transport when no GPU-fabric HCA is usable (a 10 GbE management network); the profile's
# nccl.socket_busbw_gbps overrides it
SOCKET_GBPS = 1.25
DEBUG_LEVELS = ('VERSION', 'WARN', 'INFO', 'TRACE')
# NCCL_DEBUG_SUBSYS names (src/debug.cc) and the default mask (NCCL_INIT | NCCL_BOOTSTRAP | NCCL_ENV)
SUBSYSTEMS = ('INIT', 'COLL', 'P2P', 'SHM', 'NET', 'GRAPH', 'TUNING', 'ENV', 'ALLOC', 'CALL', 'PROXY', 'NVLS',
              'BOOTSTRAP', 'REG', 'PROFILE', 'RAS')
DEFAULT_SUBSYSTEMS = ('INIT', 'BOOTSTRAP', 'ENV')
# setEnvFile() copies names and values into 1024-byte buffers
CONF_VALUE_MAX = 1023
USER_CONF, SYSTEM_CONF = '.nccl.conf', '/etc/nccl.conf'
# ibv_modify_qp to RTR with a GID the peer cannot reach: ETIMEDOUT (NVIDIA/nccl #769, #1131, #2013)
ETIMEDOUT_TEXT = '110 Connection timed out'
MODIFY_QP_WHERE = 'misc/ibvwrap.cc:262'
IB_MTU_ENUM = {256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}
# line numbers in the failure lines: cosmetic, in the range of an nccl-tests 2.13 build (common.cu)
NCCL_FAILURE_LINE = 1005
SYSTEM_ERROR = 'unhandled system error (run with NCCL_DEBUG=INFO for details)'
REMOTE_ERROR = 'remote process exited or there was a network error'
REG_MR_WARN = 'Call to ibv_reg_mr_iova2 failed with error Bad address'

LARGE_BYTES = 128 * 1024 * 1024
CUDA_FAILURE_LINE = 892
TEST_FAILURE_LINE = 1063
OPTIONS = {'-t': 'nthreads', '-g': 'ngpus', '-b': 'minbytes', '-e': 'maxbytes', '-i': 'stepbytes', '-f': 'stepfactor',
           '-n': 'iters', '-w': 'warmup_iters', '-c': 'check', '-o': 'op', '-d': 'datatype', '-r': 'root', '-m': 'agg_iters'}
LONG = {'--' + name: short for short, name in OPTIONS.items()}


class NcclError(Exception):
    """Ends the run: ``text`` on stdout (nccl-tests prints its failures with printf) and exit ``status``."""

    def __init__(self, text, status, stream='out'):
        super(NcclError, self).__init__(text)
        self.text = text
        self.status = status
        self.stream = stream


def read_conf_file(path):
    """[(name, value)] of one NCCL configuration file as src/misc/param.cc setEnvFile() reads it, [] when it cannot
    be opened: lines starting with ``#`` skipped, the line's newline removed, a line without ``=`` skipped, the name
    before the first ``=`` and the value after it, taken literally (no blanks trimmed, no quotes removed), each cut at
    1023 characters."""
    try:
        with open(path, encoding='utf-8', errors='replace', newline='') as handle:
            text = handle.read()
    except (IOError, OSError):
        return []
    found = []
    for line in text.split('\n'):
        if line.startswith('#') or '=' not in line:
            continue
        name, _sep, value = line.partition('=')
        found.append((name[:CONF_VALUE_MAX], value[:CONF_VALUE_MAX]))
    return found


def conf_files(environ):
    """The files NCCL reads, in order (src/misc/param.cc initEnvFunc): $NCCL_CONF_FILE when set and not empty, else the
    user's ~/.nccl.conf ($HOME), then /etc/nccl.conf."""
    files = []
    if environ.get('NCCL_CONF_FILE'):
        files.append(environ['NCCL_CONF_FILE'])
    elif environ.get('HOME'):
        files.append(os.path.join(environ['HOME'], USER_CONF))
    return files + [SYSTEM_CONF]


def nccl_environment(root, environ):
    """The environment NCCL sees: ``environ`` first, then each file of ``conf_files`` under the host's ``root``, every
    line set with setenv(name, value, 0) (a name already set keeps its value)."""
    merged = dict(environ)
    for path in conf_files(environ):
        for name, value in read_conf_file(os.path.join(root or '/', path.lstrip('/'))):
            merged.setdefault(name, value)
    return merged


def parse_size(text, name):
    """parsesize(): ``8``, ``128M``, ``8G``, ``1.5k``; a bad value ends the run as nccl-tests does (-1 -> 255)."""
    match = re.match(r'^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z]?)', text)
    units = {'': 1, 'k': 1024, 'm': 1024 ** 2, 'g': 1024 ** 3}
    if not match or match.group(2).lower() not in units:
        raise NcclError("invalid size specified for '%s'\n" % name, 255, 'err')
    return int(float(match.group(1)) * units[match.group(2).lower()])


def parse_args(args):
    opts = {'nthreads': 1, 'ngpus': 1, 'minbytes': 32 * 1024 ** 2, 'maxbytes': 32 * 1024 ** 2, 'stepbytes': 1024 ** 2,
            'stepfactor': 1, 'iters': 20, 'warmup_iters': 5, 'check': 1, 'op': 'sum', 'datatype': 'float', 'root': 0,
            'agg_iters': 1}
    position = 0
    while position < len(args):
        arg = args[position]
        position += 1
        value = None
        if arg.startswith('--') and '=' in arg:
            arg, value = arg.split('=', 1)
        arg = LONG.get(arg, arg)
        if arg in OPTIONS and value is None and len(arg) == 2 and position < len(args):
            value = args[position]
            position += 1
        elif len(arg) > 2 and arg[:2] in OPTIONS and not arg.startswith('--'):
            arg, value = arg[:2], arg[2:]
        if arg not in OPTIONS or value is None:
            raise NcclError("invalid option '%s'\n" % arg.lstrip('-')[:1], 0)
        _set_option(opts, OPTIONS[arg], value)
    if opts['minbytes'] > opts['maxbytes']:
        raise NcclError("invalid sizes for 'minbytes' and 'maxbytes': %d > %d\n" % (opts['minbytes'], opts['maxbytes']), 255, 'err')
    return opts


def _set_option(opts, name, value):
    if name in ('minbytes', 'maxbytes'):
        opts[name] = parse_size(value, name)
    elif name == 'op':
        opts[name] = value if value in OPS else 'sum'
    elif name == 'datatype':
        opts[name] = TYPE_NAMES.get(value, value) if value in WORD_SIZES else 'float'
    else:
        try:
            opts[name] = int(value, 0)
        except ValueError:
            opts[name] = 0


def expand_hostlist(expr):
    """Slurm hostlist ``gpu[01-03,07],ctl01`` -> names (bracket ranges keep their zero padding)."""
    names = []
    for part in re.findall(r'[^,\[]+(?:\[[^\]]*\][^,\[]*)*', expr):
        names.extend(_expand_part(part))
    return names


def _expand_part(part):
    match = re.match(r'^([^\[]*)\[([^\]]*)\](.*)$', part)
    if not match:
        return [part]
    prefix, ranges, rest = match.groups()
    names = []
    for item in ranges.split(','):
        low, _sep, high = item.partition('-')
        high = high or low
        for number in range(int(low), int(high) + 1):
            names.extend(prefix + '%0*d' % (len(low), number) + tail for tail in _expand_part(rest))
    return names


def wired(environ):
    """Whether MPI can join the processes into one job: mpirun's environment, or srun with a PMI plugin
    (``--mpi=pmix`` sets PMIX_RANK, ``--mpi=pmi2`` PMI_RANK). srun alone (SLURM_PROCID only) is not: each task of
    an nccl-tests build with MPI=1 then initialises as a singleton and runs on its own, as on a real cluster."""
    return any(environ.get(key) is not None for key in ('OMPI_COMM_WORLD_RANK', 'PMIX_RANK', 'PMI_RANK'))


def launch(environ, host):
    """(process rank, process count, hosts in process order): from the MPI/PMI environment, or one process here
    (also under srun without PMI)."""
    if not wired(environ):
        return 0, 1, [host]
    for rank_key, size_key in (('OMPI_COMM_WORLD_RANK', 'OMPI_COMM_WORLD_SIZE'), ('PMIX_RANK', 'SLURM_NTASKS'),
                               ('PMI_RANK', 'PMI_SIZE'), ('SLURM_PROCID', 'SLURM_NTASKS')):
        if environ.get(rank_key) is not None and environ.get(size_key) is not None:
            size = int(environ[size_key])
            if environ.get('SLURM_JOB_NODELIST') and environ.get('SLURM_PROCID') is not None:
                hosts = expand_hostlist(environ['SLURM_JOB_NODELIST'])
            else:
                hosts = [name for name in environ.get('HWSIM_NCCL_HOSTS', host).split(',') if name]
            per_host = max(1, size // len(hosts))
            return int(environ[rank_key]), size, [hosts[min(proc // per_host, len(hosts) - 1)] for proc in range(size)]
    return 0, 1, [host]


def hca_filter(value):
    """NCCL_IB_HCA -> (exclude, exact, [(name, port or None)]), or None when unset or empty (every device).

    The collection's nccl.env check reads the same variable (plugins/module_utils/verify/nccl_env.py hca_spec); both
    follow NCCL's src/misc/utils.cc parseStringList/matchIfList, written apart on purpose: a stand-in that imported the
    collection's decision code would agree with its bugs."""
    text = (value or '').strip()
    if not text:
        return None
    exclude = text.startswith('^')
    text = text[1:] if exclude else text
    exact = text.startswith('=')
    text = text[1:] if exact else text
    items = []
    for item in text.split(','):
        name, sep, port = item.strip().partition(':')
        if name:
            items.append((name, int(port) if sep and port.isdigit() else None))
    return exclude, exact, items


def hca_selected(ca_name, port, spec):
    """Whether NCCL_IB_HCA (``hca_filter``) lets NCCL use port ``port`` of ``ca_name``: prefix match unless exact."""
    if spec is None:
        return True
    exclude, exact, items = spec
    hit = any((ca_name == name if exact else ca_name.startswith(name)) and (wanted is None or wanted == port)
              for name, wanted in items)
    return not hit if exclude else hit


class Node(object):
    """One host of the run: visible GPUs, nccl-slow, fabric bound, the processes on it."""

    def __init__(self, model, environ=None):
        environ = environ or {}
        self.host = model.host
        self.profile = model.profile or {}
        faults = model.state['faults']
        missing = {fault['args']['index'] for fault in fault_kinds.of_kind(faults, 'gpu-missing')}
        devices = (self.profile.get('gpus') or {}).get('devices', [])
        self.devices = [device for device in devices if device['index'] not in missing]
        slow = fault_kinds.of_kind(faults, 'nccl-slow')
        self.slow = slow[-1]['args']['fraction'] if slow else 1.0
        wrong = fault_kinds.of_kind(faults, 'nccl-wrong')
        self.wrong = wrong[-1]['args']['count'] if wrong else 0
        self.rank_errors = [fault['args']['gpu'] for fault in fault_kinds.of_kind(faults, 'nccl-rank-error')]
        self.gid_wrong = bool(fault_kinds.of_kind(faults, 'gid-index-wrong'))
        self.gid_setting = gid_setting(environ.get('NCCL_IB_GID_INDEX'))
        gdr = fault_kinds.of_kind(faults, 'gdr-broken')
        # GPU memory registration fails (gdr-broken 0: no nvidia_peermem): NCCL reports GPU Direct RDMA disabled
        self.gdr = not (gdr and gdr[-1]['args']['fraction'] == 0)
        self.index = model.index
        efficiency = (self.profile.get('perftest') or {}).get('efficiency', 0.95)
        spec = hca_filter(environ.get('NCCL_IB_HCA'))
        # the devices NCCL's IB transport uses: Active ports of GPU-fabric HCAs that NCCL_IB_HCA selects (a storage or
        # management HCA adds nothing to the GPU fabric). src/transport/net_ib/init.cc ncclIbInit skips a port that is
        # not Active (``if (portAttr.state != IBV_PORT_ACTIVE) continue;``): an InfiniBand port still Initializing
        # (no master SM yet, hwsim/smstate.py) is no device, and with none NCCL falls back to sockets
        self.nets = [view for view in model.ports() if view.hca.get('role') == 'compute' and view.active
                     and hca_selected(view.ca_name, view.number, spec)]
        self.fabric_gbps = sum(view.rate * view.faults.get('hca-bw-low', {}).get('fraction', 1.0) * efficiency
                               for view in self.nets)
        self.socket_gbps = float((self.profile.get('nccl') or {}).get('socket_busbw_gbps', SOCKET_GBPS))

    def gid(self, view):
        """(index, (gid text, version, ipv4) or None for an empty entry) of the GID NCCL uses on a RoCE port:
        gid-index-wrong's 0, else NCCL_IB_GID_INDEX, else NCCL 2.21+'s choice (``auto_gid_index``)."""
        index = 0 if self.gid_wrong else self.gid_setting if self.gid_setting is not None else auto_gid_index(view)
        entry = next(((text, version, address) for number, text, version, address in view.gids if number == index), None)
        return index, entry

    def bad_gids(self):
        """[(view, index, entry)] of this host's RoCE ports (of NCCL's) whose GID is not RoCE v2 with an IPv4 address."""
        found = []
        for view in self.nets:
            if not view.is_ib:
                index, entry = self.gid(view)
                if not (entry and entry[1] == 'v2' and entry[2]):
                    found.append((view, index, entry))
        return found

    def network_gbps(self):
        """GB/s this host gives a multi-host run: its selected GPU-fabric ports, or sockets when it has none."""
        return self.fabric_gbps / 8.0 if self.nets else self.socket_gbps

    def peak(self, key, algorithm='auto'):
        """The NVLink figure of a collective; all_reduce with NVLS off (``algorithm`` ring) reads the profile's
        ``all_reduce_ring_busbw_gbps`` (H100 SXM: about 370 GB/s ring against 460-480 with NVLS)."""
        nccl = self.profile.get('nccl') or {}
        if algorithm == 'ring' and key == 'all_reduce_busbw_gbps':
            key = 'all_reduce_ring_busbw_gbps' if 'all_reduce_ring_busbw_gbps' in nccl else key
        return nccl.get(key, nccl.get('all_gather_busbw_gbps', 0.0)) * self.slow


def gid_setting(text):
    """NCCL_IB_GID_INDEX as ncclLoadParam reads it (strtoll, base 0): the index, or None for NCCL's own choice
    (unset, empty, negative: the 2.21+ default -1, or not a number)."""
    try:
        value = int((text or '').strip(), 0)
    except ValueError:
        return None
    return value if value >= 0 else None


def auto_gid_index(view):
    """NCCL 2.21+'s GID choice (ncclIbGetGidIndex, NCCL_IB_ADDR_FAMILY AF_INET and NCCL_IB_ROCE_VERSION_NUM 2 by
    default): the lowest RoCE v2 GID with an IPv4 address, else the lowest RoCE v2 one, else 0."""
    v2 = sorted((number, address) for number, _text, version, address in view.gids if version == 'v2')
    for number, address in v2:
        if address:
            return number
    return v2[0][0] if v2 else 0


def gid_bytes(text):
    return int(text.replace(':', ''), 16).to_bytes(16, 'big')


def gid_display(entry):
    """A GID as ibvGetGidStr() prints it (inet_ntop): ``fe80::a288:c2ff:fe6a:3b7a``, ``::ffff:10.0.1.2``; ``::`` for
    an empty entry."""
    if not entry:
        return '::'
    address = ipaddress.IPv6Address(gid_bytes(entry[0]))
    return '::ffff:%s' % address.ipv4_mapped if address.ipv4_mapped else address.compressed


def gid_words(entry):
    """(subnet prefix, interface id) of a GID as the %lX of ncclIbConnect's INFO line shows them (the GID's network
    order bytes read as little-endian 64-bit words on x86): ::ffff:192.168.100.16 -> (0, 0x1064A8C0FFFF0000)."""
    raw = gid_bytes(entry[0]) if entry else bytes(16)
    return int.from_bytes(raw[:8], 'little'), int.from_bytes(raw[8:], 'little')


def algorithm(environ):
    """``ring`` when NCCL cannot use NVLink SHARP: NCCL_ALGO without NVLS (``Ring``, ``Tree``, ``^NVLS``) or
    NCCL_NVLS_ENABLE=0; else ``auto`` (NCCL picks NVLS where the system has it)."""
    algo = (environ.get('NCCL_ALGO') or '').strip().lower()
    if environ.get('NCCL_NVLS_ENABLE', '').strip() == '0':
        return 'ring'
    if algo and (algo.startswith('^') and 'nvls' in algo or not algo.startswith('^') and 'nvls' not in algo):
        return 'ring'
    return 'auto'


def pci_text(device):
    """``00000000:1B:00.0`` -> ``0000:1b:00`` (the [%04x:%02x:%02x] of the rank line)."""
    domain, bus, rest = device['pci_bus_id'].split(':')
    return '%04x:%02x:%02x' % (int(domain, 16), int(bus, 16), int(rest.split('.')[0], 16))


def fake_pid(host_index, local_proc):
    return 4000 + 211 * host_index + local_proc


def rank_lines(run_info):
    """``#  Rank`` lines of every process, in rank order."""
    lines = []
    per_proc = run_info['per_proc']
    for proc, node in enumerate(run_info['proc_nodes']):
        local = run_info['local_ranks'][proc]
        proc_pid = pid() if proc == run_info['proc'] else fake_pid(run_info['host_index'][node.host], local)
        for offset in range(per_proc):
            device = node.devices[local * per_proc + offset]
            lines.append('#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s\n' % (
                proc * per_proc + offset, 0, proc_pid, node.host, local * per_proc + offset, pci_text(device),
                node.profile['gpus']['model']))
    return ''.join(lines)


def byte_counts(kind, size, word, nranks):
    """(printed size, printed count) of getCollByteCount(): gathered collectives round to a multiple of nranks."""
    count = size // word
    if kind == 'gathered':
        base = count // nranks
        return base * nranks * word, base
    return count * word, count


def bus_factor(kind, nranks):
    if kind == 'allreduce':
        return 2.0 * (nranks - 1) / nranks
    if kind == 'gather':
        return float(nranks - 1) / nranks
    return 1.0


def time_text(usec):
    if usec >= 10000.0:
        return '%7.0f' % usec
    if usec >= 100.0:
        return '%7.1f' % usec
    return '%7.2f' % usec


def sizes(opts):
    size = opts['minbytes']
    found = []
    while size <= opts['maxbytes']:
        found.append(size)
        size = size * opts['stepfactor'] if opts['stepfactor'] > 1 else size + opts['stepbytes']
        if opts['stepfactor'] <= 1 and opts['stepbytes'] <= 0:
            break
    return found


def header(name, opts):
    step = '%d(%s)' % ((opts['stepfactor'], 'factor') if opts['stepfactor'] > 1 else (opts['stepbytes'], 'bytes'))
    return ''.join([
        VERSION_LINE, '# Collective test starting: %s\n' % name,
        '# nThread %d nGpus %d minBytes %d maxBytes %d step: %s warmup iters: %d iters: %d agg iters: %d validation: %d graph: 0\n' % (
            opts['nthreads'], opts['ngpus'], opts['minbytes'], opts['maxbytes'], step, opts['warmup_iters'], opts['iters'],
            opts['agg_iters'], opts['check']),
        '#\n', '# Using devices\n'])


def table_header():
    return ''.join([
        '#\n',
        '# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n' % ('', '', '', '', ''),
        '# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n' % (
            'size', 'count', 'type', 'redop', 'root', 'time', 'algbw', 'busbw', '#wrong', 'time', 'algbw', 'busbw', '#wrong'),
        '# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n' % (
            '(B)', '(elements)', '', '', '', '(us)', '(GB/s)', '(GB/s)', '', '(us)', '(GB/s)', '(GB/s)', ''),
    ])


def peak_busbw(name, nodes, algo='auto'):
    """GB/s the run reaches at large sizes: slowest host's NVLink figure, bounded by the fabric across hosts."""
    key = COLLECTIVES[name][0]
    peak = min(node.peak(key, algo) for node in nodes)
    if len(nodes) > 1:
        peak = min([peak] + [node.network_gbps() for node in nodes])
    return peak


def table(name, opts, nodes, nranks, algo='auto'):
    """(rows text, out-of-bounds count, average busbw)."""
    _key, factor_kind, redop, size_kind = COLLECTIVES[name]
    word = WORD_SIZES[opts['datatype']]
    factor = bus_factor(factor_kind, nranks)
    peak = peak_busbw(name, nodes, algo)
    latency = LATENCY_US[len(nodes) == 1]
    large = min(LARGE_BYTES, opts['maxbytes'])
    wrong_total = sum(node.wrong for node in nodes)
    wrong_hosts = sum(1 for node in nodes if node.wrong)
    root = opts['root'] if factor_kind == 'one' else -1
    lines = []
    errors = 0
    busbws = []
    for size in sizes(opts):
        shown, count = byte_counts(size_kind, size, word, nranks)
        moved = shown * factor if factor else shown
        usec = latency + (moved / (peak * 1e3) if peak else 0.0)
        algbw = shown / usec / 1e3
        busbw = algbw * factor
        wrong = wrong_total if size >= large else 0
        errors += 2 * wrong_hosts if wrong else 0
        cell = '  %7s  %6.2f  %6.2f  %5s' % (time_text(usec), algbw, busbw, ('%g' % wrong) if opts['check'] else 'N/A')
        lines.append('%12d  %12d  %8s  %6s  %6d%s%s\n' % (shown, count, opts['datatype'], redop or opts['op'], root, cell, cell))
        busbws += [busbw, busbw]
    average = sum(busbws) / len(busbws) if busbws else 0.0
    return ''.join(lines), errors if opts['check'] else 0, average


def footer(name, errors, average):
    return ''.join(['# Out of bounds values : %d %s\n' % (errors, 'FAILED' if errors else 'OK'),
                    '# Avg bus bandwidth    : %g \n' % average, '#\n', '# Collective test concluded: %s\n' % name, '\n'])


def cuda_failure(host, reason):
    return ("%s: Test CUDA failure common.cu:%d '%s'\n .. %s pid %d: Test failure common.cu:%d\n"
            % (host, CUDA_FAILURE_LINE, reason, host, pid(), TEST_FAILURE_LINE))


def nccl_failure(host, reason):
    """NCCLCHECK's line (nccl-tests >= 2.13 with NCCL >= 2.13: ``'<error string> / <ncclGetLastError>'``) and TESTCHECK's."""
    return ("%s: Test NCCL failure common.cu:%d '%s'\n .. %s pid %d: Test failure common.cu:%d\n"
            % (host, NCCL_FAILURE_LINE, reason, host, pid(), TEST_FAILURE_LINE))


def build_run(ctx, opts, environ):
    """Processes, hosts and ranks of this launch; NcclError when a process lacks its GPUs."""
    proc, nprocs, proc_hosts = launch(environ, ctx.host)
    models = {}
    for host in proc_hosts:
        if host not in models:
            models[host] = Node(ctx.host_model(host), environ)
    per_proc = opts['nthreads'] * opts['ngpus']
    local_ranks = [proc_hosts[:index].count(host) for index, host in enumerate(proc_hosts)]
    hosts = list(dict.fromkeys(proc_hosts))
    return {'proc': proc, 'nprocs': nprocs, 'per_proc': per_proc, 'local_ranks': local_ranks,
            'proc_nodes': [models[host] for host in proc_hosts], 'nodes': [models[host] for host in hosts],
            'host_index': {host: index for index, host in enumerate(hosts)}}


def missing_gpus(run_info):
    """Hosts of processes that would ask for a device ordinal beyond the visible GPUs."""
    short = []
    for proc, node in enumerate(run_info['proc_nodes']):
        if (run_info['local_ranks'][proc] + 1) * run_info['per_proc'] > len(node.devices) and node.host not in short:
            short.append(node.host)
    return short


def debug_level(environ):
    """NCCL_DEBUG as a number: 0 unset (NCCL prints nothing), 1 VERSION, 2 WARN, 3 INFO, 4 TRACE."""
    level = (environ.get('NCCL_DEBUG') or '').strip().upper()
    return DEBUG_LEVELS.index(level) + 1 if level in DEBUG_LEVELS else 0


def debug_subsystems(environ):
    """NCCL_DEBUG_SUBSYS as a set of names: a comma list, ``^`` excludes the names that follow, ``ALL`` every one;
    unset, the default INIT,BOOTSTRAP,ENV."""
    text = (environ.get('NCCL_DEBUG_SUBSYS') or '').strip().upper()
    if not text:
        return set(DEFAULT_SUBSYSTEMS)
    invert = text.startswith('^')
    names = set(name.strip() for name in text.lstrip('^').split(',') if name.strip())
    if 'ALL' in names:
        names = set(SUBSYSTEMS)
    return set(SUBSYSTEMS) - names if invert else names


def oob_address(environ, node):
    """``IFNAME:ADDRESS<0>`` of NCCL's bootstrap interface: NCCL_SOCKET_IFNAME's first name, else eth0; the address is
    a documentation address (192.0.2.0/24), as hwsim does not know the container's."""
    wanted = (environ.get('NCCL_SOCKET_IFNAME') or '').strip()
    name = '' if wanted.startswith('^') else wanted.lstrip('=').split(',')[0].strip()
    return '%s:192.0.2.%d<0>' % (name or 'eth0', node.index % 254 + 1)


def debug_lines(run_info, environ):
    """What NCCL itself prints in this process at NCCL_DEBUG's level and NCCL_DEBUG_SUBSYS's subsystems: the version
    line (rank 0's process) and, from INFO on, the network it chose (IB with the devices, or the fall-back to
    sockets), GPU Direct RDMA per device and, across hosts, the connection of each device (its GID index on RoCE)."""
    level = debug_level(environ)
    proc = run_info['proc']
    node = run_info['proc_nodes'][proc]
    device = run_info['local_ranks'][proc] * run_info['per_proc']
    me = pid()
    main_thread, init_thread = '%s:%d:%d [%d] ' % (node.host, me, me, device), '%s:%d:%d [%d] ' % (node.host, me, me + 151, device)
    version = 'NCCL version %s+cuda%s' % (NCCL_VERSION, (node.profile.get('gpus') or {}).get('cuda_version', '12.4'))
    lines = []
    if proc == 0 and level in (1, 2):
        lines.append(version + '\n')
    if level < 3:
        return ''.join(lines)
    subsystems = debug_subsystems(environ)
    init, net = 'INIT' in subsystems, 'NET' in subsystems
    if proc == 0:  # showVersion(): INFO(NCCL_ALL, ...), whatever the subsystems
        lines.append(main_thread + 'NCCL INFO ' + version + '\n')
    oob = oob_address(environ, node)
    info = init_thread + 'NCCL INFO '
    if node.nets:
        used = ' '.join('[%d]%s:%d/%s' % (number, view.ca_name, view.number, 'IB' if view.is_ib else 'RoCE')
                        for number, view in enumerate(node.nets))
        if init or net:
            lines += [info + 'NET/IB : Using %s [RO]; OOB %s\n' % (used, oob), info + 'Using network IB\n']
        if net:
            lines += [info + "NET/IB : GPU Direct RDMA %s for HCA %d '%s'\n" % ('Enabled' if node.gdr else 'Disabled', number, view.ca_name)
                      for number, view in enumerate(node.nets)]
            if len(run_info['nodes']) > 1:
                lines += [info + connection_text(node, number, view) + '\n' for number, view in enumerate(node.nets)]
    else:
        if init or net:
            lines += [info + 'NET/IB : No device found.\n', info + 'NET/Socket : Using [0]%s\n' % oob,
                      info + 'Using network Socket\n']
        if net:
            lines.append(info + "NET/Socket : GPU Direct RDMA Disabled for HCA 0 '%s'\n" % oob.split(':')[0])
    return ''.join(lines)


def connection_text(node, number, view):
    """ncclIbConnect's INFO line for NCCL device ``number`` (NCCL 2.21+ layout; cosmetic qpn and keys)."""
    qpn = 0x200 + 64 * number + node.index
    mtu = IB_MTU_ENUM.get(min(int(view.mtu), 4096), 5)
    head = 'NET/IB: NCCL Dev %d IbDev %d Port %d qpn %d mtu %d' % (number, number, view.number, qpn, mtu)
    keys = 'fifoRkey=0x%x fifoLkey=0x%x' % (0x1b9e00 + qpn, 0x1b9e00 + qpn)
    if view.is_ib:
        return '%s LID %d subnet-prefix %d FLID 0 %s' % (head, view.lid, 0xfe80, keys)
    index, entry = node.gid(view)
    return '%s GID %d (%X/%X) %s' % (head, index, gid_words(entry)[0], gid_words(entry)[1], keys)


def gid_failures(run_info):
    """(failing ranks as ``failing_ranks`` gives them, proc -> (source, WARN text)) of a multi-host run in which a host's
    RoCE port uses a GID that is not RoCE v2 IPv4: every process of that host fails its QP's move to RTR."""
    if len(run_info['nodes']) < 2:
        return [], {}
    failing, cause = [], {}
    for proc, node in enumerate(run_info['proc_nodes']):
        bad = node.bad_gids()
        if not bad:
            continue
        view, index, entry = bad[0]
        peer = next(other for other in run_info['nodes'] if other.host != node.host)
        remote = next((peer.gid(net)[1] for net in peer.nets if not net.is_ib), None)
        failing.append((proc, node.host, run_info['local_ranks'][proc] * run_info['per_proc']))
        text = ('Call to ibv_modify_qp failed with %s, on dev %s:%d, curr state INIT, next state RTR, '
                'local GID index %d, local GID %s, remote GID %s'
                % (ETIMEDOUT_TEXT, view.ca_name, view.number, index, gid_display(entry), gid_display(remote)))
        cause[proc] = (MODIFY_QP_WHERE, text)
    return failing, cause


def failing_ranks(run_info):
    """(process, host, device ordinal) of each GPU with nccl-rank-error that this multi-host run drives."""
    if len(run_info['nodes']) < 2:
        return []
    found = []
    per_proc = run_info['per_proc']
    for proc, node in enumerate(run_info['proc_nodes']):
        for position in range(run_info['local_ranks'][proc] * per_proc, (run_info['local_ranks'][proc] + 1) * per_proc):
            if position < len(node.devices) and node.devices[position]['index'] in node.rank_errors:
                found.append((proc, node.host, position))
    return found


def rank_failure(run_info, failing, environ, cause=None):
    """NcclError of this process when a rank of the run fails: the failing rank's own error, or the remote error
    every other process then sees (nccl-tests prints both with the process's host name). ``cause``: proc -> (source,
    WARN text) of the failing processes (default: nccl-rank-error's registration error)."""
    proc = run_info['proc']
    me = run_info['proc_nodes'][proc]
    thread = me.host + ':%d:%d [%%d] ' % (pid(), pid() + 151)
    mine = [position for number, _host, position in failing if number == proc]
    if mine:
        where, text = (cause or {}).get(proc, ('misc/ibvwrap.cc:203', REG_MR_WARN))
        warn = thread % mine[0] + '%s NCCL WARN %s\n' % (where, text) if debug_level(environ) >= 2 else ''
        return NcclError(warn + nccl_failure(me.host, '%s / %s' % (SYSTEM_ERROR, text)), 3)
    last = 'socketProgress: Connection closed by remote peer %s<%d>' % (failing[0][1], 43000 + failing[0][0])
    device = run_info['local_ranks'][proc] * run_info['per_proc']
    warn = thread % device + 'misc/socket.cc:50 NCCL WARN %s\n' % last if debug_level(environ) >= 2 else ''
    return NcclError(warn + nccl_failure(me.host, '%s / %s' % (REMOTE_ERROR, last)), 3)


def run(ctx, args, name):
    """One nccl-tests binary; the launch (ranks, hosts) comes from the context's environment."""
    try:
        opts = parse_args(args)
        environ = nccl_environment(ctx.root, ctx.environ)
        run_info = build_run(ctx, opts, environ)
        me = run_info['proc_nodes'][run_info['proc']]
        main = run_info['proc'] == 0
        short = missing_gpus(run_info)
        if main:
            ctx.write(header(name, opts))
        if short:
            if me.host in short:
                reason = 'invalid device ordinal' if me.devices else 'no CUDA-capable device is detected'
                raise NcclError(cuda_failure(me.host, reason), 2)
            return 1
        # nccl-tests prints the ranks, then initialises NCCL (which logs as NCCL_DEBUG says), then runs the sizes
        ctx.write((rank_lines(run_info) if main else '') + debug_lines(run_info, environ))
        failing, cause = gid_failures(run_info)
        if failing:
            raise rank_failure(run_info, failing, environ, cause)
        failing = failing_ranks(run_info)
        if failing:
            raise rank_failure(run_info, failing, environ)
        nranks = run_info['nprocs'] * run_info['per_proc']
        rows, errors, average = table(name, opts, run_info['nodes'], nranks, algorithm(environ))
        if main:
            ctx.write(table_header() + rows + footer(name, errors, average))
        return 1 if errors else 0
    except NcclError as exc:
        (ctx.write if exc.stream == 'out' else ctx.error)(exc.text)
        return exc.status


def run_all_reduce(ctx, args):
    return run(ctx, args, 'all_reduce_perf')


def run_all_gather(ctx, args):
    return run(ctx, args, 'all_gather_perf')


def run_reduce_scatter(ctx, args):
    return run(ctx, args, 'reduce_scatter_perf')


def run_broadcast(ctx, args):
    return run(ctx, args, 'broadcast_perf')


def run_alltoall(ctx, args):
    return run(ctx, args, 'alltoall_perf')
