"""Fault kinds: their arguments, validation, and what the InfiniBand ones do to a port.

Every kind any stand-in understands is registered in KINDS so that
``hwsim fault`` can validate it, even before the stand-in that acts on it
exists.  A fault is stored as ``{"kind": ..., "args": {name: value}}``.
"""
import re
import time

from hwsim import links


class FaultError(Exception):
    """Unknown fault kind or bad arguments (the CLI exits 2 with this message)."""


def _fraction(text):
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise ValueError('must be between 0 and 1')
    return value


def _non_negative_int(text):
    value = int(text)
    if value < 0:
        raise ValueError('must be >= 0')
    return value


def _width(text):
    value = text.upper()
    if value not in links.WIDTHS:
        raise ValueError('allowed widths: %s' % ', '.join(links.WIDTHS))
    return value


def _speed(text):
    return links.lane_speed(text)


def _text(text):
    if not text.strip():
        raise ValueError('must not be empty')
    return text


def _positive_int(text):
    value = int(text)
    if value <= 0:
        raise ValueError('must be > 0')
    return value


# fault argument -> the nvidia-smi -q Fabric State it prints (Status follows: Success when Completed, else N/A)
FABRIC_STATES = {'completed': 'Completed', 'in-progress': 'In Progress', 'not-started': 'Not Started'}


def _pcie_width(text):
    value = int(text.lower().rstrip('x'))
    if value not in (1, 2, 4, 8, 16):
        raise ValueError('allowed widths: 1, 2, 4, 8, 16')
    return value


def _firmware(text):
    """An HCA firmware version as ibstat prints it: ``28.39.1002`` (numbers and dots)."""
    if not re.match(r'^[0-9]+(?:\.[0-9]+){1,3}$', text.strip()):
        raise ValueError('expected a version such as 28.40.1000')
    return text.strip()


def _vbios(text):
    """A VBIOS version as nvidia-smi prints it: five two-digit hex fields, ``96.00.99.00.01``."""
    if not re.match(r'^[0-9A-Fa-f]{2}(?:\.[0-9A-Fa-f]{2}){4}$', text.strip()):
        raise ValueError('expected a VBIOS version such as 96.00.99.00.01')
    return text.strip().upper()


def _fabric_state(text):
    if text.lower() not in FABRIC_STATES:
        raise ValueError('allowed states: %s' % ', '.join(FABRIC_STATES))
    return text.lower()


def _diag_test(text):
    """``TEST`` or ``TEST:GPU``: a dcgmi diag test (table, JSON or plugin name, any case) and optionally the GPU slot."""
    # imported here: the tools import this module
    from hwsim.tools import dcgmi  # pylint: disable=import-outside-toplevel
    name, sep, gpu = text.partition(':')
    if sep:
        _non_negative_int(gpu)
    key = ''.join(char for char in name.lower() if char.isalnum())
    if key not in dcgmi.test_names():
        raise ValueError('unknown test; allowed (any case, spaces optional, optional :GPU): %s' % ', '.join(sorted(dcgmi.test_names())))
    return text


def _sm_priority(text):
    value = int(text)
    if not 0 <= value <= 15:
        raise ValueError('must be 0-15 (opensm --priority)')
    return value


def _ipoib_mtu(text):
    value = int(text)
    if not 68 <= value <= 65520:
        raise ValueError('must be 68-65520 (4092 datagram at IB MTU 4096, 2044 at 2048, up to 65520 connected)')
    return value


# kind -> (argument names and converters, one-line description).  'hca' arguments are checked
# against the host's profile when it is known.
KINDS = {
    'port-down': ((('hca', _text),), 'HCA port State Down, Physical state Polling (InfiniBand) / Disabled (Ethernet)'),
    'link-width': ((('hca', _text), ('width', _width)), 'link trained at a narrower width, e.g. 1X'),
    'link-speed': ((('hca', _text), ('gbps', _speed)), 'link trained at a lower lane speed, e.g. 53.125'),
    'hca-bw-low': ((('hca', _text), ('fraction', _fraction)), 'perftest bandwidth through the HCA at FRACTION of normal'),
    'link-errors': ((('hca', _text),), 'a marginal optic: full width and speed, but the port counts symbol errors and link '
                    'recoveries on every read (perfquery, mlxlink -c, ethtool -S, rdma statistic) and its effective BER is 3E-11'),
    'gdr-broken': ((('fraction', _fraction),), 'perftest --use_cuda (GPUDirect RDMA) at FRACTION of normal; 0: GPU memory registration '
                   'fails (no nvidia_peermem); host memory unaffected'),
    'memlock': ((('kib', _non_negative_int),), "locked-memory limit KIB: perftest buffers above it fail with \"Couldn't allocate MR\""),
    'gpu-missing': ((('index', _non_negative_int),), 'GPU INDEX not visible to the driver'),
    'nvlink-down': ((('gpu', _non_negative_int), ('link', _non_negative_int)), 'NVLink LINK of GPU inactive'),
    'dcgm-diag-fail': ((('test', _diag_test),), 'dcgmi diag reports TEST (e.g. memory, pcie, "GPU Memory", memory:3) failed on GPU 0 or GPU'),
    'power-capped': ((('gpu', _non_negative_int), ('watts', _positive_int)), 'enforced power limit of GPU set to WATTS (below its default)'),
    'thermal-throttle': ((('gpu', _non_negative_int),), 'GPU held down by HW slowdown + HW thermal slowdown clock events'),
    'pcie-degraded': ((('gpu', _non_negative_int), ('width', _pcie_width)), 'PCIe link of GPU trained at WIDTH lanes (e.g. 8) instead of 16'),
    'fabric-state': ((('state', _fabric_state),), 'NVSwitch fabric state of every GPU: completed, in-progress or not-started'),
    'ecc-pending': ((('gpu', _non_negative_int),), 'volatile uncorrectable ECC errors, page retirement pending on GPU'),
    'row-remap-pending': ((('gpu', _non_negative_int),), 'row remapping pending on GPU'),
    'xid': ((('gpu', _non_negative_int), ('code', _non_negative_int)), 'Xid CODE logged for GPU'),
    'dmesg-wrapped': ((), 'the kernel ring buffer has wrapped: dmesg keeps only its last 10 minutes (boot lines and older Xids gone)'),
    'nvlink-errors': ((('gpu', _non_negative_int), ('link', _non_negative_int), ('count', _non_negative_int)),
                      'NVLink LINK of GPU counts COUNT more errors (legacy: replay and CRC; R570+: Rx errors and symbol errors)'),
    'dcgm-plugin-missing': ((), 'DCGM 4 without its CUDA plugin package: dcgmi diag tests other than software report Skip'),
    'gpu-process': ((('gpu', _non_negative_int), ('pid', _non_negative_int), ('name', _text)), 'a leftover process holds GPU'),
    'nccl-wrong': ((('count', _non_negative_int),), 'nccl-tests report COUNT wrong results'),
    'nccl-slow': ((('fraction', _fraction),), 'nccl-tests bus bandwidth at FRACTION of normal'),
    'nccl-rank-error': ((('gpu', _non_negative_int),), 'multi-node nccl-tests: the rank on GPU fails (its GPU memory cannot be '
                        'registered with the HCA: "unhandled system error"), naming this host; single-node runs unaffected'),
    'gid-index-wrong': ((), 'nccl-tests: NCCL uses GID index 0 (link-local RoCE v1) on the RoCE ports whatever NCCL_IB_GID_INDEX '
                        'says; a multi-node run fails on this host: "Call to ibv_modify_qp failed with 110 Connection timed out"'),
    'firmware': ((('hca', _text), ('version', _firmware)),
                 'the HCA (and the other ports of its adapter) reports firmware VERSION (a board flashed apart from the rest); '
                 'without HCA every HCA of the host does (a rolling upgrade half done)'),
    'vbios': ((('gpu', _non_negative_int), ('version', _vbios)),
              'GPU reports VBIOS VERSION (a board reflashed or swapped for one with another VBIOS)'),
    # These four change the host when injected (hwsim/smfaults.py): run on the host they act on; HOST is that host.
    'sm-stop': ((('host', _text),), "stop the master SM's unit (aicluster-opensm@<port guid>) on HOST, which runs it"),
    'sm-rogue': ((('host', _text), ('priority', _sm_priority)),
                 'start OpenSM on HOST (a GPU node) on its first InfiniBand port at PRIORITY, as transient opensmd.service'),
    'partition-file-broken': ((('host', _text),), "a line OpenSM cannot parse at the top of HOST's "
                              '/etc/opensm/aicluster/partitions.conf, its SMs reloaded'),
    'ipoib-mtu': ((('rail', _non_negative_int), ('mtu', _ipoib_mtu)), "the MTU of the rail's IPoIB netdev set to MTU"),
    # These two are done at once and not kept (hwsim/roce.py): qos-reset on the host it resets (its /run files).
    'qos-reset': ((('host', _text),), "a restart of HOST's mlx5 driver: every Ethernet netdev's trust, PFC, DSCP map, ECN, "
                  'CNP marking, RDMA-CM ToS and mode and verbs traffic class back at the driver defaults'),
    'fan-fail': ((('fan', _positive_int),), 'chassis fan FAN stopped: ipmitool sdr 0 RPM below its lower critical threshold (lcr), '
                 'Fan Redundancy lost'),
    'psu-fail': ((('psu', _positive_int),), 'power supply PSU failed: its ipmitool Status sensor asserts Failure detected '
                 '(status ok, as a discrete sensor stays), PS Redundancy lost'),
    'pfc-off': ((('netdev', _text),), 'PFC off on every priority of NETDEV (as mlnx_qos -i NETDEV --pfc 0,0,0,0,0,0,0,0)'),
}
# Kinds whose first argument may be left out: the value it then takes (``firmware VERSION`` is ``firmware * VERSION``,
# every HCA; ``sm-stop`` is ``sm-stop .``, this host).
OPTIONAL_FIRST = {'firmware': '*', 'sm-stop': '.', 'partition-file-broken': '.', 'qos-reset': '.'}
# Kinds stamped with the time they were injected (``at``): the dmesg stand-in logs an Xid at that time.
TIMED_KINDS = ('xid',)
IB_KINDS = ('port-down', 'link-width', 'link-speed')
# Per-HCA kinds a PortView carries: the IB ones plus hca-bw-low (read by the perftest stand-ins).
HCA_KINDS = IB_KINDS + ('hca-bw-low',)


def usage(kind):
    names = [name.upper() for name, _convert in KINDS[kind][0]]
    if kind in OPTIONAL_FIRST:
        return '%s | %s' % (' '.join([kind] + names[1:]), ' '.join([kind] + names))
    return ' '.join([kind] + names)


def allowed_text():
    """Every kind with its arguments, for error messages."""
    return '; '.join(usage(kind) for kind in KINDS)


def parse(kind, argv, hca_names=None):
    """Validate ``hwsim fault KIND ARGS``; returns the fault dict or raises FaultError."""
    if kind not in KINDS:
        raise FaultError('unknown fault kind %r; allowed kinds: %s' % (kind, ', '.join(KINDS)))
    spec = KINDS[kind][0]
    if kind in OPTIONAL_FIRST and len(argv) == len(spec) - 1:
        argv = [OPTIONAL_FIRST[kind]] + list(argv)
    if len(argv) != len(spec):
        raise FaultError('usage: hwsim fault %s' % usage(kind))
    args = {}
    for (name, convert), text in zip(spec, argv):
        try:
            args[name] = convert(text)
        except ValueError as exc:
            raise FaultError('fault %s: bad %s %r: %s (usage: hwsim fault %s)' % (kind, name.upper(), text, exc, usage(kind)))
    if 'hca' in args and hca_names is not None and args['hca'] not in hca_names and args['hca'] != OPTIONAL_FIRST.get(kind):
        raise FaultError('fault %s: unknown HCA %r; allowed: %s' % (kind, args['hca'], ', '.join(sorted(hca_names))))
    return {'kind': kind, 'args': args}


def target(fault):
    """What a fault acts on (its first argument): a new fault replaces an older one with the same kind and target."""
    names = KINDS[fault['kind']][0]
    if not names:
        return None
    return fault['args'].get(names[0][0], OPTIONAL_FIRST.get(fault['kind']))


def add(faults, fault):
    """Faults with ``fault`` added, replacing one of the same kind and target; TIMED_KINDS stamped with the time
    they were injected (``at``)."""
    kept = [old for old in faults if not (old['kind'] == fault['kind'] and target(old) == target(fault))]
    return kept + [dict(fault, at=fault.get('at', time.time())) if fault['kind'] in TIMED_KINDS else fault]


def remove(faults, kind=None, first_arg=None):
    """Faults without those of ``kind`` (all when None), optionally only for one target."""
    if kind is not None and kind not in KINDS:
        raise FaultError('unknown fault kind %r; allowed kinds: %s' % (kind, ', '.join(KINDS)))
    kept = []
    for fault in faults:
        matches = kind is None or fault['kind'] == kind
        if matches and first_arg is not None:
            matches = str(target(fault)) == str(first_arg)
        if not matches:
            kept.append(fault)
    return kept


def of_kind(faults, kind):
    """The faults of one kind, in the order they were injected."""
    return [fault for fault in faults if fault['kind'] == kind]


def for_hca(faults, hca_name):
    """{kind: args} of the per-HCA faults (HCA_KINDS) on one HCA."""
    found = {}
    for fault in faults:
        if fault['kind'] in HCA_KINDS and fault['args'].get('hca') == hca_name:
            found[fault['kind']] = fault['args']
    return found
