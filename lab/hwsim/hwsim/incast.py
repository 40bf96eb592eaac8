"""RoCE incast and PFC for the perftest stand-ins (issue 33 item 5): what a receiving port does when several senders
write to it at once in one traffic class, with and without PFC on that class's priority.

**Which runs are an incast.** hwsim has no switch and no clock shared with the traffic, so it counts what it can see
honestly: every perftest *server* registers a run file (``<state dir>/perftest-runs/<host>/<HCA>-<TCP port>-<pid>``,
its start time and process id, and its end time once it exits; a run whose server was killed before it could end it
counts as ended). When a client connects, the server counts the runs on the same HCA
of its host whose lifetimes overlap its own (started before it ended, ended after it started, or still running): that
is the number of flows the receiving port carries at once, the incast's fan-in N. A single pair (N = 1) is never an
incast, and nothing below changes it. verify_perftest's incast round starts the receiver's N servers first, then the N
clients (perftest_run), so every server sees the others.

**The priority.** The data of ``ib_write_bw`` goes from the client to the server, marked with the client's
``--tclass`` (perftest: ``--tclass=<value>``, the GRH traffic class; no ``--tclass``: 0). The receiving netdev
classifies it as the mlx5 driver does (NVIDIA "RoCE Configuration for ConnectX", "Lossless RoCE Configuration";
mlnx_qos ``--trust``): trust ``dscp`` (DSCP application entries exist) maps DSCP = tclass >> 2 through the entries
(the newest first, as the driver looks them up); a DSCP without an entry, trust ``pcp``, or an untagged frame lands on
priority 0. PFC on that priority is the receiving adapter's ``pfc`` (the mlnx_qos and dcb stand-ins' shared state,
which ``pfc-off`` and ``qos-reset`` change). hwsim has no switch port: the host's PFC stands for the whole path (the
switch must match the host: docs/fabric.md "RoCE - what the switch must match").

**What happens (N >= 2).** The receiving port is shared: each sender gets 1/N of the line rate. Then:

- PFC on: nothing is dropped. The receiving port pauses its link partner (``tx_prio<P>_pause``), the senders are paused
  (``rx_prio<P>_pause``), and DCQCN runs where ECN's notification point is on for the priority (the receiver's
  ``ecn/roce_np/enable/<P>``): the receiver sends CNPs (``np_cnp_sent``) and the senders' reaction points handle
  them (``rp_cnp_handled``). NVIDIA: "PFC ... pauses the traffic of a specific priority instead of dropping it",
  "Understanding mlx5 ethtool Counters" (``rx_prio<N>_pause``: pause frames received on priority N,
  ``tx_prio<N>_pause``: sent), "DCQCN" (np_cnp_sent, rp_cnp_handled in the port's hw_counters).
- PFC off: the receive buffer overflows and the NIC drops on the priority (``rx_prio<P>_discards``, and the port's
  total ``rx_discards_phy``: "the number of received packets dropped due to lack of buffers on a physical port",
  NVIDIA's ethtool counters page and the kernel's mlx5 counters.rst); RoCE's go-back-N retransmits everything after
  a loss, so each sender's bandwidth falls far below its fair share (``LOSSY_SHARE`` of it). CNPs still go where ECN
  is on.

The amounts are a model, not a capture: one pause frame per ``PAUSE_EVERY`` packets beyond one sender's share, one CNP
per ``CNP_EVERY`` packets, and ``DROP_FRACTION`` of the excess packets dropped (the delivery plan's "more than 5% loss
under small-packet bursts" without PFC and ECN, issue 33). The verify stage judges only whether discards rose, never
the amounts. The counters are kept per netdev in the host's state (``roce_traffic``) under a lock, and ``ethtool -S``
(tools/linkcounters.py) adds them to the port's history.
"""
import fcntl
import glob
import json
import os
import time

from hwsim import roce, sysfs
from hwsim.tools import mlnx_qos

RUNS_DIR = 'perftest-runs'
KEEP_S = 600            # run files older than this (ended) are removed
PAUSE_EVERY = 32
CNP_EVERY = 256
DROP_FRACTION = 0.05
LOSSY_SHARE = 0.3


def _runs_dir(ctx):
    return os.path.join(ctx.state_dir, RUNS_DIR, ctx.host)


def register(ctx, device, port):
    """A server's run file (returned; ``finish`` ends it). Old ended runs are removed on the way."""
    folder = _runs_dir(ctx)
    os.makedirs(folder, exist_ok=True)
    now = time.time()
    for path in glob.glob(os.path.join(folder, '*.json')):
        run = _load(path)
        if run is None or (run.get('ended') is not None and now - run['ended'] > KEEP_S) \
                or (run.get('ended') is None and not _alive(run.get('pid'))):
            _remove(path)
    path = os.path.join(folder, '%s-%d-%d.json' % (device, port, os.getpid()))
    _store(path, {'device': device, 'port': port, 'started': now, 'ended': None, 'pid': os.getpid()})
    return path


def _alive(pid):
    """Whether process ``pid`` of this host still runs: a server killed by timeout(1) never ends its run file, and a
    dead server must not count as a flow (it made every later server of the HCA an incast)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def finish(path):
    run = _load(path) if path else None
    if run is not None:
        run['ended'] = time.time()
        _store(path, run)


def fan_in(ctx, path):
    """How many server runs on this run's HCA overlap it in time (itself included)."""
    mine = _load(path) if path else None
    if mine is None:
        return 1
    count = 0
    for other in glob.glob(os.path.join(_runs_dir(ctx), '*.json')):
        run = _load(other)
        if run is None or run.get('device') != mine['device']:
            continue
        if run.get('ended') is None and other != path and not _alive(run.get('pid')):
            continue  # killed before it could end its run (timeout(1)): no flow
        if run['started'] <= (mine.get('ended') or time.time()) and (run.get('ended') is None or run['ended'] >= mine['started']):
            count += 1
    return max(count, 1)


def priority(adapter, tclass):
    """The priority a frame with ``tclass`` lands on at an adapter (trust dscp: its DSCP entry; else 0)."""
    if tclass is None or mlnx_qos.trust(adapter) != 'dscp':
        return 0
    dscp = int(tclass) >> 2
    for entry_dscp, prio in adapter['apps']:
        if entry_dscp == dscp:
            return int(prio)
    return 0


def _ecn_np(ctx, netdev, prio):
    path = os.path.join(ctx.root, sysfs.SYS_DIR, 'class', 'net', netdev, 'ecn', 'roce_np', 'enable', str(prio))
    try:
        with open(path, encoding='utf-8') as handle:
            return handle.read().strip() == '1'
    except OSError:
        return roce.ECN_DEFAULT == 1


def receiver_view(ctx, netdev, tclass, senders):
    """What the receiving port tells the senders: ``senders``, ``priority``, ``pfc``, ``ecn`` and ``share`` (the
    fraction of the line rate each sender reaches)."""
    adapter = mlnx_qos.load_adapter(ctx.load_state(), netdev) if netdev else mlnx_qos.defaults()
    prio = priority(adapter, tclass)
    pfc = bool(adapter['pfc'][prio])
    share = 1.0
    if senders >= 2:
        share = (1.0 if pfc else LOSSY_SHARE) / senders
    return {'senders': senders, 'priority': prio, 'pfc': pfc, 'ecn': _ecn_np(ctx, netdev, prio) if netdev else False,
            'share': share, 'netdev': netdev}


def rises(view, packets, side):
    """Counter -> rise on one side ('receiver' or 'sender') for ``packets`` packets of one sender's flow."""
    senders = view.get('senders') or 1
    if senders < 2 or packets <= 0:
        return {}
    prio = view['priority']
    excess = packets * (senders - 1) // senders
    cnps = packets // CNP_EVERY + 1 if view.get('ecn') else 0
    if side == 'receiver':
        out = {'np_cnp_sent': cnps}
        if view['pfc']:
            out['tx_prio%d_pause' % prio] = excess // PAUSE_EVERY + 1
        else:
            out['rx_prio%d_discards' % prio] = out['rx_discards_phy'] = int(excess * DROP_FRACTION) + 1
        return out
    out = {'rp_cnp_handled': cnps}
    if view['pfc']:
        out['rx_prio%d_pause' % prio] = excess // PAUSE_EVERY + 1
    return out


def add(ctx, netdev, counters):
    """Add ``counters`` to the netdev's incast counters in the host's state (under a lock: servers run at once)."""
    counters = dict((name, value) for name, value in counters.items() if value)
    if not netdev or not counters:
        return
    os.makedirs(ctx.state_dir, exist_ok=True)
    with open(os.path.join(ctx.state_dir, '%s.roce-traffic.lock' % ctx.host), 'a', encoding='utf-8') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = ctx.load_state()
        kept = data.setdefault('roce_traffic', {}).setdefault(netdev, {})
        for name, value in counters.items():
            kept[name] = kept.get(name, 0) + int(value)
        ctx.save_state(data)


def counters(state, netdev):
    """The incast counters a netdev has made so far (name -> value)."""
    return dict(((state or {}).get('roce_traffic') or {}).get(netdev) or {})


def _load(path):
    try:
        with open(path, encoding='utf-8') as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def _store(path, data):
    tmp = '%s.tmp.%d' % (path, os.getpid())
    with open(tmp, 'w', encoding='utf-8') as handle:
        json.dump(data, handle)
    os.replace(tmp, path)


def _remove(path):
    try:
        os.unlink(path)
    except OSError:
        pass
