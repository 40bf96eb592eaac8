"""mlnx_qos stand-in: a stateful DCB configuration per Ethernet netdev, kept in the host's state file.

Options and report layout follow mlnx-tools python/mlnx_qos (pretty_print)
and dcbnetlink.py (DcbAppTable.printAppSelector) on an upstream mlx5 kernel,
where trust is "dscp" exactly when DSCP application entries exist, the DSCP
app list is newest first, and the driver defaults are: DCBX OS controlled,
trust pcp, PFC off, cable length 7, priority 0 on TC 1 and priority 1 on
TC 0, every TC "vendor" with no rate limit.
"""
import argparse
import copy

TSA_NAMES = ('strict', 'ets', 'vendor')
NOT_SUPPORTED = ('Priority trust state is not supported on your system\n'
                 'Buffers commands are not supported on your system\n'
                 'Rate limit is not supported on your system!\n'
                 'ETS features are not supported on your system\n')
BUFFER_TOTAL = 1048576


def defaults():
    """The adapter as the mlx5 driver leaves it after boot."""
    return {
        'dcbx': 'os',
        'apps': [],
        'pfc': [0] * 8,
        'cable_len': 7,
        'prio_tc': [1, 0, 2, 3, 4, 5, 6, 7],
        'tsa': ['vendor'] * 8,
        'tcbw': [0] * 8,
        'ratelimit': [0] * 8,
        'default_priority': None,
    }


def load_adapter(data, netdev):
    """The netdev's DCB settings from a host state (``adapters``), defaults where none were changed. The dcb stand-in
    (tools/dcb.py) reads and writes the same: one DCB state per netdev, the kernel's dcbnl underneath both tools."""
    adapter = defaults()
    adapter.update(copy.deepcopy(data['adapters'].get(netdev, {})))
    return adapter


def store_adapter(ctx, data, netdev, adapter):
    """Save ``adapter`` into the host's state when it differs from what is stored; returns whether it was saved."""
    if adapter == load_adapter(data, netdev):
        return False
    data['adapters'][netdev] = adapter
    ctx.save_state(data)
    return True


def trust(adapter):
    return 'dscp' if adapter['apps'] else 'pcp'


def default_dscp_apps():
    """What ``--trust dscp`` installs (dscp d -> priority d >> 3), newest (63) first as the kernel lists them."""
    return [[dscp, dscp >> 3] for dscp in range(63, -1, -1)]


def set_dscp(adapter, dscp, prio):
    """``--dscp2prio set,D,P``: the driver drops the old entry of D, the new one goes first."""
    adapter['apps'] = [[dscp, prio]] + [entry for entry in adapter['apps'] if entry[0] != dscp]


def del_dscp(adapter, dscp, prio):
    adapter['apps'] = [entry for entry in adapter['apps'] if entry != [dscp, prio]]


def buffers(adapter):
    """(receive buffer sizes, prio2buffer): lossless priorities get buffer 1 once PFC is on."""
    if any(adapter['pfc']):
        return [130944, 130944, 0, 0, 0, 0, 0, 0], [1 if enabled else 0 for enabled in adapter['pfc']]
    return [262016, 0, 0, 0, 0, 0, 0, 0], [0] * 8


def _dscp_lines(adapter):
    """printAppSelector(): per priority, 8 DSCP values (3 characters each) per line."""
    per_prio = [''] * 8
    for dscp, prio in adapter['apps']:
        per_prio[prio] += '%02d,' % dscp
    lines = []
    for prio in range(8):
        text = per_prio[prio]
        pad = '\tprio:%d dscp:' % prio
        while len(text) > 24:
            lines.append(pad + text[:24])
            text = text[24:]
        if text:
            lines.append(pad + text)
    return lines


def report(adapter, printall=False):
    """pretty_print() of mlnx_qos."""
    lines = ['DCBX mode: %s' % ('OS controlled' if adapter['dcbx'] == 'os' else 'Firmware controlled'),
             'Priority trust state: ' + trust(adapter)]
    if trust(adapter) == 'dscp':
        lines.append('dscp2prio mapping:')
        lines.extend(_dscp_lines(adapter))
    lines.append('default priority:')
    if adapter.get('default_priority') is not None:
        lines.append('\tprio:%d' % adapter['default_priority'])
    sizes, prio2buffer = buffers(adapter)
    lines.append('Receive buffer size (bytes): ' + ''.join('%d,' % size for size in sizes) + 'total_size=%d' % BUFFER_TOTAL)
    lines.append('Cable len: %d' % adapter['cable_len'])
    lines.append('PFC configuration:')
    lines.append('\tpriority    0   1   2   3   4   5   6   7')
    lines.append('\tenabled     ' + ''.join('%d   ' % enabled for enabled in adapter['pfc']))
    lines.append('\tbuffer      ' + ''.join('%d   ' % buf for buf in prio2buffer))
    tc2up = {tc: [] for tc in range(8)} if printall else {}
    for prio, tc in enumerate(adapter['prio_tc']):
        tc2up.setdefault(tc, []).append(prio)
    for tc, prios in tc2up.items():
        rate = adapter['ratelimit'][tc]
        text = 'tc: %d ratelimit: %s, tsa: ' % (tc, '%.1f Gbps' % rate if rate > 0 else 'unlimited')
        tsa = adapter['tsa'][tc]
        text += 'ets, bw: %s%%' % adapter['tcbw'][tc] if tsa == 'ets' else tsa
        lines.append(text)
        lines.extend('\t priority:  %d' % prio for prio in prios)
    return '\n'.join(lines) + '\n'


class _Parser(argparse.ArgumentParser):
    """optparse-like errors: usage and ``mlnx_qos: error: ...`` on stderr, exit 2."""

    def __init__(self, ctx):
        super().__init__(prog='mlnx_qos', usage='%(prog)s -i <interface> [options]', add_help=False)
        self.ctx = ctx

    def error(self, message):
        raise _UsageError('Usage: mlnx_qos -i <interface> [options]\n\nmlnx_qos: error: %s\n' % message)


class _UsageError(Exception):
    pass


class _Fail(Exception):
    """A message mlnx_qos prints on stdout before exiting 1."""


def _parser(ctx):
    parser = _Parser(ctx)
    parser.add_argument('-i', '--interface', dest='intf')
    parser.add_argument('-f', '--pfc', dest='pfc')
    parser.add_argument('-p', '--prio_tc', dest='prio_tc')
    parser.add_argument('-s', '--tsa', dest='tsa')
    parser.add_argument('-t', '--tcbw', dest='tc_bw')
    parser.add_argument('-r', '--ratelimit', dest='ratelimit')
    parser.add_argument('-d', '--dcbx', dest='dcbx')
    parser.add_argument('--trust', dest='trust')
    parser.add_argument('--dscp2prio', dest='dscp2prio', action='append')
    parser.add_argument('--defltprio', dest='defltprio')
    parser.add_argument('--cable_len', dest='cable_len')
    parser.add_argument('-a', action='store_true', dest='printall', default=False)
    parser.add_argument('args', nargs='*')
    return parser


def _int(item, low, high, what):
    """parse_int() of mlnx_qos."""
    try:
        value = int(item)
    except ValueError:
        raise _Fail("Bad value for %s: invalid literal for int() with base 10: '%s'" % (what, item))
    if not low <= value <= high:
        raise _Fail('Bad value for %s: %d is not in the range %d..%d' % (what, value, low, high))
    return value


def _int_list(text, low, high, what, list_name):
    """Eight comma-separated integers, with mlnx_qos's messages for too many / too few."""
    values = []
    for item in text.split(','):
        if len(values) >= 8:
            raise _Fail('Too many items for %s' % what)
        values.append(_int(item, low, high, what))
    if len(values) != 8:
        raise _Fail('%s must have 8 items' % list_name)
    return values


def _dscp2prio(adapter, items):
    entries = []
    for item in items:
        if item == 'flush':
            entries.append(('flush', None, None))
            continue
        parts = item.split(',')
        if len(parts) != 3 or parts[0] not in ('set', 'del') or not parts[1].isdigit() or not parts[2].isdigit() \
                or int(parts[1]) > 63 or int(parts[2]) > 7:
            raise _Fail('Invalid dscp2prio command. Refer to the help.')
        entries.append((parts[0], int(parts[1]), int(parts[2])))
    for action, dscp, prio in entries:
        if action == 'set':
            set_dscp(adapter, dscp, prio)
        elif action == 'del':
            del_dscp(adapter, dscp, prio)
        else:
            adapter['apps'] = []


def apply_options(adapter, options):
    """Change the adapter as mlnx_qos would, in its order; raises _Fail."""
    if options.dcbx is not None:
        if options.dcbx not in ('os', 'fw', 'get'):
            raise _Fail('Invalid dcbx mode command. Refer to the help.')
        if options.dcbx != 'get':
            adapter['dcbx'] = options.dcbx
    if options.cable_len:
        adapter['cable_len'] = _int(options.cable_len, 0, 0xffff, 'cable_len')
    if options.pfc:
        adapter['pfc'] = _int_list(options.pfc, 0, 1, 'PFC', 'pfc list')
    if options.dscp2prio and options.trust:
        raise _Fail('trust and dscp2prio commands cannot be used at the same time.')
    if options.dscp2prio:
        _dscp2prio(adapter, options.dscp2prio)
    if options.defltprio:
        parts = options.defltprio.split(',')
        if len(parts) != 2 or parts[0] not in ('set', 'del') or not parts[1].isdigit() or int(parts[1]) > 7:
            raise _Fail('Invalid defltprio command. Refer to the help.')
        adapter['default_priority'] = int(parts[1]) if parts[0] == 'set' else None
    if options.trust:
        if options.trust not in ('dscp', 'pcp'):
            raise _Fail('Invalid trust state command. Refer to the help.')
        if options.trust != trust(adapter):
            adapter['apps'] = default_dscp_apps() if options.trust == 'dscp' else []
    if options.ratelimit:
        adapter['ratelimit'] = _int_list(options.ratelimit, 0, 1000000, 'ratelimit', 'ratelimit')
    if options.tsa:
        values = options.tsa.split(',')
        for value in values:
            if value not in TSA_NAMES:
                raise _Fail("('Bad TSA value: ', '%s')" % value)
        if len(values) != 8:
            raise _Fail('tsa list must have 8 items')
        adapter['tsa'] = values
    if options.tc_bw:
        bws = _int_list(options.tc_bw, 0, 100, 'ETS BW', 'tcbw list')
        for tsa, bw in zip(adapter['tsa'], bws):
            if tsa != 'ets' and bw != 0:
                raise _Fail('ETS BW for a strict/vendor TC must be 0')
        adapter['tcbw'] = bws
    if options.prio_tc:
        adapter['prio_tc'] = _int_list(options.prio_tc, 0, 7, 'UP => TC mapping', 'prio_tc list')


def run(ctx, args):
    """mlnx_qos -i NETDEV [--trust dscp|pcp] [--pfc LIST] [--dscp2prio set|del,D,P] ..."""
    parser = _parser(ctx)
    try:
        options = parser.parse_args(args)
    except _UsageError as exc:
        ctx.error(str(exc))
        return 2
    if options.args:
        ctx.write('Bad arguments\nUsage: mlnx_qos -i <interface> [options]\n')
        return 1
    if options.intf is None:
        ctx.write('Interface name is required\nUsage: mlnx_qos -i <interface> [options]\n')
        return 1
    model = ctx.host_model()
    view = model.port_by_netdev(options.intf)
    if view is None or view.link_layer != 'Ethernet':
        ctx.write(NOT_SUPPORTED)
        return 1
    data = ctx.load_state()
    adapter = load_adapter(data, options.intf)
    try:
        apply_options(adapter, options)
    except _Fail as exc:
        ctx.write('%s\n' % exc)
        return 1
    store_adapter(ctx, data, options.intf, adapter)
    ctx.write(report(adapter, options.printall))
    return 0
