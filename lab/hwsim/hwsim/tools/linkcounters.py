"""Link-quality stand-ins: perfquery, mlxlink, ethtool -S and rdma (link show, statistic show link).

Layouts: perfquery follows rdma-core infiniband-diags/perfquery.c (``# Port
extended counters: Lid L port P (CapMask: 0x.. CapMask2: 0x.......)`` then
libibmad's ``Name:.....value`` lines padded with dots to column 33; with -x
and CapMask2 bit IsAddlPortCountersExtendedSupported the 64-bit error
counters follow the data counters). mlxlink follows mstflint
mlxlink_commander.cpp (``Title`` / dashes / ``Key<padding>: value`` records;
``-c`` adds "Physical Counters and BER Info", ``-e`` "EYE Opening Info").
ethtool -S prints mlx5's ``NIC statistics:`` list; rdma(8) prints one line per
port.

Counters: a healthy port keeps a small constant history (the counts since the
driver loaded). A ``link-errors`` port counts more errors on every read of
that port (each read is later in the port's life): the reads are kept per HCA
in the host's state (``link_counters``), so the same sequence of reads gives
the same figures. ``hwsim clear`` removes the fault, not the counts already
made (counters do not reset when an optic is replaced).
"""
import os
import subprocess
import sys

from hwsim import faults as fault_kinds, incast
from hwsim.model import pid
from hwsim.tools.ibstat import SYSFS_STATE

# where the real ethtool/rdma live when the lab image has them: what the stand-ins do not simulate goes there
REAL_DIRS = ('/usr/sbin', '/sbin', '/usr/bin', '/bin')

# perfquery -x field order (libibmad IB_PC_EXT_* from PortSelect to QP1Dropped)
EXT_DATA = ('PortSelect', 'CounterSelect', 'PortXmitData', 'PortRcvData', 'PortXmitPkts', 'PortRcvPkts',
            'PortUnicastXmitPkts', 'PortUnicastRcvPkts', 'PortMulticastXmitPkts', 'PortMulticastRcvPkts')
EXT_ERRORS = ('CounterSelect2', 'SymbolErrorCounter', 'LinkErrorRecoveryCounter', 'LinkDownedCounter', 'PortRcvErrors',
              'PortRcvRemotePhysicalErrors', 'PortRcvSwitchRelayErrors', 'PortXmitDiscards', 'PortXmitConstraintErrors',
              'PortRcvConstraintErrors', 'LocalLinkIntegrityErrors', 'ExcessiveBufferOverrunErrors', 'VL15Dropped',
              'PortXmitWait', 'QP1Dropped')
# perfquery (basic PortCounters, libibmad IB_PC_* order)
BASIC = ('PortSelect', 'CounterSelect', 'SymbolErrorCounter', 'LinkErrorRecoveryCounter', 'LinkDownedCounter', 'PortRcvErrors',
         'PortRcvRemotePhysicalErrors', 'PortRcvSwitchRelayErrors', 'PortXmitDiscards', 'PortXmitConstraintErrors',
         'PortRcvConstraintErrors', 'CounterSelect2', 'LocalLinkIntegrityErrors', 'ExcessiveBufferOverrunErrors', 'QP1Dropped',
         'VL15Dropped', 'PortXmitData', 'PortRcvData', 'PortXmitPkts', 'PortRcvPkts', 'PortXmitWait')
# basic counters saturate at their width (IBA PortCounters)
BASIC_BITS = {'SymbolErrorCounter': 16, 'LinkErrorRecoveryCounter': 8, 'LinkDownedCounter': 8, 'PortRcvErrors': 16,
              'PortRcvRemotePhysicalErrors': 16, 'PortRcvSwitchRelayErrors': 16, 'PortXmitDiscards': 16,
              'PortXmitConstraintErrors': 8, 'PortRcvConstraintErrors': 8, 'LocalLinkIntegrityErrors': 4,
              'ExcessiveBufferOverrunErrors': 4, 'QP1Dropped': 16, 'VL15Dropped': 16, 'PortXmitData': 32, 'PortRcvData': 32,
              'PortXmitPkts': 32, 'PortRcvPkts': 32, 'PortXmitWait': 32}
# what one read of a link-errors port adds
RISE = {'SymbolErrorCounter': 1250, 'LinkErrorRecoveryCounter': 1, 'PortRcvErrors': 3, 'LocalLinkIntegrityErrors': 0,
        'rx_symbol_err_phy': 1250, 'rx_crc_errors_phy': 3, 'rx_prio3_discards': 17, 'out_of_sequence': 40, 'packet_seq_err': 2}
FAULTY_BER = {'effective': '3E-11', 'raw': '4E-6', 'symbol': '3E-11'}
HEALTHY_BER = {'effective': '15E-255', 'raw': '2E-10', 'symbol': '15E-255'}
MLXLINK_SPEED = {106.25: 'IB-NDR', 53.125: 'IB-HDR', 25.78125: 'IB-EDR', 14.0625: 'IB-FDR'}
ETH_SPEED = {106.25: '400G', 53.125: '200G', 25.78125: '100G'}
ETHTOOL_NAMES = ('rx_packets', 'rx_bytes', 'tx_packets', 'tx_bytes', 'rx_out_of_buffer', 'rx_discards_phy', 'rx_crc_errors_phy',
                 'rx_symbol_err_phy', 'rx_corrected_bits_phy', 'link_down_events_phy', 'rx_prio3_bytes', 'rx_prio3_packets',
                 'rx_prio3_discards', 'tx_prio3_bytes', 'tx_prio3_packets', 'rx_prio3_pause', 'rx_prio3_pause_duration',
                 'tx_prio3_pause', 'tx_prio3_pause_duration', 'rx_prio3_pause_transition')
RDMA_COUNTERS = ('rx_write_requests', 'rx_read_requests', 'rx_atomic_requests', 'out_of_buffer', 'out_of_sequence',
                 'duplicate_request', 'rnr_nak_retry_err', 'packet_seq_err', 'implied_nak_seq_err', 'local_ack_timeout_err',
                 'resp_local_length_error', 'resp_cqe_error', 'req_cqe_error', 'req_remote_invalid_request',
                 'req_remote_access_errors', 'resp_remote_access_errors', 'resp_cqe_flush_error', 'req_cqe_flush_error',
                 'roce_adp_retrans', 'roce_adp_retrans_to', 'roce_slow_restart', 'roce_slow_restart_cnps',
                 'roce_slow_restart_trans', 'rp_cnp_ignored', 'rp_cnp_handled', 'np_ecn_marked_roce_packets', 'np_cnp_sent',
                 'rx_icrc_encapsulated')


def faulty(model, hca):
    return any(fault['args'].get('hca') == hca for fault in fault_kinds.of_kind(model.state['faults'], 'link-errors'))


def _read(ctx, model, hca):
    """How many reads of a link-errors port have been made (this one included); 0 for a healthy port."""
    if not faulty(model, hca):
        return (model.state.get('link_counters') or {}).get(hca, {}).get('reads', 0)
    data = ctx.load_state() if model.host == ctx.host else model.state
    counters = data.setdefault('link_counters', {}).setdefault(hca, {'reads': 0})
    counters['reads'] += 1
    if model.host == ctx.host:
        ctx.save_state(data)
    return counters['reads']


def counters(model, view, reads):
    """Every counter of one port: a constant history plus the link-errors rise of ``reads`` reads."""
    number = int(view.ca_name.rsplit('_', 1)[-1]) if view.ca_name.rsplit('_', 1)[-1].isdigit() else 0
    history = (model.index + number) % 3
    data = 10 ** 9 * (model.index + 1) + 7919 * number
    values = dict((name, 0) for name in set(EXT_DATA + EXT_ERRORS + BASIC + ETHTOOL_NAMES + RDMA_COUNTERS))
    values.update(PortSelect=view.number, SymbolErrorCounter=history, LinkDownedCounter=1, link_down_events_phy=1,
                  rx_symbol_err_phy=history, PortXmitData=data, PortRcvData=data + 4096, PortXmitPkts=data // 1024,
                  PortRcvPkts=data // 1024 + 1, PortUnicastXmitPkts=data // 1024, PortUnicastRcvPkts=data // 1024 + 1,
                  PortMulticastXmitPkts=12, PortMulticastRcvPkts=15, rx_bytes=data * 4, tx_bytes=data * 4,
                  rx_packets=data // 1024, tx_packets=data // 1024, rx_prio3_bytes=data * 3, tx_prio3_bytes=data * 3,
                  rx_prio3_packets=data // 1400, tx_prio3_packets=data // 1400, rx_write_requests=data // 4096,
                  rx_corrected_bits_phy=5 * history, np_cnp_sent=3 * number, rp_cnp_handled=3 * number)
    for name, rise in RISE.items():
        values[name] += rise * reads
    # what incasts through this port counted (hwsim/incast.py): pauses, CNPs, discards on the traffic's priority
    for name, value in incast.counters(model.state, view.netdev).items():
        values[name] = values.get(name, 0) + value
    return values


def _dots(name, value):
    return '%s:%s%s\n' % (name, '.' * max(1, 32 - len(name)), value)


def _find_port(model, ca, port):
    views = [view for view in model.ports(ca) if port is None or view.number == port]
    return views[0] if views else None


def _perfquery_usage(ctx):
    ctx.error('Usage: perfquery [-options] [<lid|guid> [[port(s)] [reset_mask]]]\n')
    return 255


def _parse_perfquery(args):
    opts = {'extended': False, 'ca': None, 'port': None, 'target': []}
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg in ('-x', '--extended'):
            opts['extended'] = True
        elif arg in ('-C', '--Ca') and rest:
            opts['ca'] = rest.pop(0)
        elif arg in ('-P', '--Port') and rest:
            opts['port'] = int(rest.pop(0))
        elif arg.startswith('-'):
            raise ValueError(arg)
        else:
            opts['target'].append(arg)
    return opts


def _remote(ctx, lid):
    """(model, hca) of the CA port with that LID in the fabric, or (None, None)."""
    for host, entry in ctx.fabric['hosts'].items():
        for hca, info in (entry.get('hcas') or {}).items():
            if info.get('lid') == lid:
                return ctx.host_model(host), hca
    return None, None


def run_perfquery(ctx, args):
    """perfquery [-x] [-C CA] [-P PORT] [LID [PORT]]: the PortCounters (or PortExtendedCounters) of one port."""
    try:
        opts = _parse_perfquery(args)
        target = [int(value, 0) for value in opts['target']]
    except ValueError:
        return _perfquery_usage(ctx)
    model = ctx.host_model()
    ca = opts['ca'] or (model.hca_names()[0] if model.hcas else None)
    view = _find_port(model, ca, opts['port'] or 1) if ca else None
    if view is None or not view.is_ib or not view.up:
        ctx.error("ibwarn: [%d] mad_rpc_open_port: can't open UMAD port ((%s):%s)\n" % (pid(), ca, opts['port'] or 0))
        ctx.error("perfquery: iberror: failed: Failed to open '%s' port '%s'\n" % (ca, opts['port'] or 0))
        return 255
    owner, hca, lid, port = model, view.ca_name, view.lid, view.number
    if target:
        lid = target[0]
        port = target[1] if len(target) > 1 else 1
        owner, hca = _remote(ctx, lid)
        if owner is None:
            # a switch port: no link-errors fault acts there in the lab
            owner, hca = model, None
    shown = _find_port(owner, hca, None) if hca else view
    values = counters(owner, shown, _read(ctx, owner, hca) if hca else 0)
    values['PortSelect'] = port
    values['CounterSelect'] = '0x0000'
    values['CounterSelect2'] = '0x00'
    if opts['extended']:
        ctx.write('# Port extended counters: Lid %d port %d (CapMask: 0x5A00 CapMask2: 0x0000002)\n' % (lid, port))
        names = EXT_DATA + EXT_ERRORS
    else:
        ctx.write('# Port counters: Lid %d port %d (CapMask: 0x5A00)\n' % (lid, port))
        names = BASIC
        for name, bits in BASIC_BITS.items():
            values[name] = min(values[name], 2 ** bits - 1)
    ctx.write(''.join(_dots(name, values[name]) for name in names))
    return 0


def _record(title, rows):
    out = ['', title, '-' * len(title)]
    out.extend('%-32s: %s' % (key, value) for key, value in rows)
    return '\n'.join(out) + '\n'


SHOW_FLAGS = {'-c': 'c', '--show_counters': 'c', '-e': 'e', '--show_eye': 'e', '-m': 'm', '--show_module': 'm'}


def run_mlxlink(ctx, args):
    """mlxlink -d DEV [-p PORT] [-c] [-e] [-m]: operational info, physical counters and BER, eye opening."""
    device, port, show = None, 1, set()
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg in ('-d', '--device') and rest:
            device = rest.pop(0)
        elif arg in ('-p', '--port') and rest:
            port = int(rest.pop(0)) if rest[0].isdigit() else 0
        elif arg in SHOW_FLAGS:
            show.add(SHOW_FLAGS[arg])
        else:
            ctx.error('-E- Invalid argument: %s\n' % arg)
            return 1
    model = ctx.host_model()
    view = _find_port(model, device, port) if device in model.hca_names() else None
    if view is None:
        ctx.error('-E- Failed to open device: "%s", No such file or directory\n' % device)
        return 1
    bad = faulty(model, view.ca_name)
    reads = _read(ctx, model, view.ca_name) if 'c' in show else 0
    values = counters(model, view, reads)
    speeds = MLXLINK_SPEED if view.is_ib else ETH_SPEED
    text = _record('Operational Info', [
        ('State', 'Active' if view.up else 'Disable'), ('Physical state', 'LinkUp' if view.up else 'Polling'),
        ('Speed', speeds.get(view.lane_speed, 'N/A') if view.up else 'N/A'),
        ('Width', '%sx' % view.width.rstrip('X') if view.up else 'N/A'),
        ('FEC', 'Standard LL RS-FEC - RS(271,257)' if view.is_ib else 'Standard RS-FEC - RS(544,514)'),
        ('Loopback Mode', 'No Loopback'), ('Auto Negotiation', 'ON')])
    text += _record('Troubleshooting Info', [
        ('Status Opcode', '0'), ('Group Opcode', 'N/A'),
        ('Recommendation', 'No issue was observed')])  # FEC hides a marginal optic from the recommendation too
    text += _record('Tool Information', [('Firmware Version', view.hca['firmware']), ('amBER Version', '3.1'),
                                         ('MFT Version', 'mft 4.26.1-3')])
    if 'c' in show:
        ber = FAULTY_BER if bad else HEALTHY_BER
        rows = [('Time Since Last Clear [Min]', '%.1f' % (2153.7 + 0.5 * reads))]
        if view.is_ib:
            rows += [('Symbol Errors', values['SymbolErrorCounter']), ('Symbol BER', ber['symbol'])]
        lanes = int(view.width.rstrip('X'))
        raw_lane = (values['SymbolErrorCounter'] * 40) // lanes
        rows += [('Effective Physical Errors', values['SymbolErrorCounter']), ('Effective Physical BER', ber['effective']),
                 ('Raw Physical Errors Per Lane', ','.join([str(raw_lane)] * lanes)), ('Raw Physical BER', ber['raw'])]
        if view.is_ib:
            rows += [('Link Down Counter', values['LinkDownedCounter']),
                     ('Link Error Recovery Counter', values['LinkErrorRecoveryCounter'])]
        text += _record('Physical Counters and BER Info', rows)
    if 'e' in show:
        lanes = int(view.width.rstrip('X'))
        text += _record('EYE Opening Info', [
            ('Physical Grade', ', '.join([' 9000' if not bad else ' 2100'] * lanes)),
            ('Height Eye Opening [mV]', ', '.join(['  120' if not bad else '   38'] * lanes)),
            ('Phase  Eye Opening [psec]', ', '.join(['   14' if not bad else '    6'] * lanes))])
    ctx.write(text)
    return 0


def delegate(ctx, name, args, message):
    """Run the real tool for what the stand-in does not simulate (eth0, the lab's veths), else say so (the dcb stand-in
    uses it too)."""
    own = os.path.realpath(sys.argv[0]) if sys.argv and sys.argv[0] else None
    for directory in REAL_DIRS:
        path = os.path.join(directory, name)
        if os.access(path, os.X_OK) and os.path.realpath(path) != own and os.path.basename(os.path.realpath(path)) != 'hwsim':
            proc = subprocess.run([path] + list(args), capture_output=True, text=True, check=False)
            ctx.write(proc.stdout)
            ctx.error(proc.stderr)
            return proc.returncode
    ctx.error(message)
    return 1


def run_ethtool(ctx, args):
    """ethtool -S NETDEV for the profile's netdevs (mlx5 counter names); anything else goes to the real ethtool."""
    model = ctx.host_model()
    view = model.port_by_netdev(args[1]) if len(args) == 2 and args[0] in ('-S', '--statistics') else None
    if view is None:
        return delegate(ctx, 'ethtool', args, 'netlink error: no device matches name (offset 24)\nnetlink error: No such device\n')
    values = counters(model, view, _read(ctx, model, view.ca_name))
    # other priorities' counters appear once an incast counted on them (mlx5 prints every priority's; hwsim the used ones)
    names = list(ETHTOOL_NAMES) + sorted(name for name in incast.counters(model.state, view.netdev)
                                         if name not in ETHTOOL_NAMES and name not in RDMA_COUNTERS)
    ctx.write('NIC statistics:\n' + ''.join('     %s: %d\n' % (name, values[name]) for name in names))
    return 0


def run_rdma(ctx, args):
    """rdma link show [DEV/PORT]; rdma statistic show link DEV/PORT (the port's hw_counters)."""
    model = ctx.host_model()
    if args[:2] == ['link', 'show'] or args[:1] == ['link'] and len(args) == 1:
        views = model.ports()
        if len(args) > 2:
            views = [view for view in views if '%s/%d' % (view.ca_name, view.number) == args[2]]
            if not views:
                ctx.error('Wrong device name\n')
                return 1
        for view in views:
            # the port state in the kernel's names (INIT before the subnet manager's sweep: hwsim/smstate.py)
            ctx.write('link %s/%d state %s physical_state %s%s\n' % (
                view.ca_name, view.number, SYSFS_STATE[view.state], 'LINK_UP' if view.up else 'POLLING',
                ' netdev %s' % view.netdev if view.netdev else ''))
        return 0
    if args[:3] in (['statistic', 'show', 'link'], ['stat', 'show', 'link']) and len(args) == 4:
        name, _sep, port = args[3].partition('/')
        view = _find_port(model, name, int(port) if port.isdigit() else None) if name in model.hca_names() else None
        if view is None:
            ctx.error('Wrong device name\n')
            return 1
        values = counters(model, view, _read(ctx, model, view.ca_name))
        ctx.write('link %s/%d %s \n' % (view.ca_name, view.number,
                                        ' '.join('%s %d' % (counter, values[counter]) for counter in RDMA_COUNTERS)))
        return 0
    return delegate(ctx, 'rdma', args, 'hwsim rdma: only "rdma link show [DEV/PORT]" and "rdma statistic show link DEV/PORT" '
                    'are simulated\n')
