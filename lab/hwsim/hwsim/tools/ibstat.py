"""ibstat and ibstatus stand-ins.

ibstat follows rdma-core infiniband-diags ibstat.c (ca_dump/port_dump:
tab-indented ``Key: value`` lines, ``CA 'name'`` headers, ``CA: 'name'`` and
unindented port lines for ``ibstat CA PORT``); ibstatus follows the
infiniband-diags ``ibstatus`` script, which prints the sysfs files of each
port (``state: 4: ACTIVE``, ``rate: 400 Gb/sec (4X NDR)``).
"""
from hwsim.model import pid

PORT_STATE_NUM = {'Down': 1, 'Initializing': 2, 'Armed': 3, 'Active': 4}
PHYS_STATE_NUM = {'Sleep': 1, 'Polling': 2, 'Disabled': 3, 'PortConfigurationTraining': 4, 'LinkUp': 5,
                  'LinkErrorRecovery': 6, 'PhyTest': 7}
SYSFS_STATE = {'Down': 'DOWN', 'Initializing': 'INIT', 'Armed': 'ARMED', 'Active': 'ACTIVE'}
IBSTAT_USAGE = 'Usage: ibstat [options] <ca_name> [portnum]\n'
NO_SUCH_FILE = 'No such file or directory'


def _panic(ctx, function, message, reason=NO_SUCH_FILE):
    """ibpanic line as libibmad prints it; ibstat then exits -1 (255)."""
    ctx.error('ibpanic: [%d] %s: %s: %s\n' % (pid(), function, message, reason))
    return 255


def _rate(view):
    return '%s' % view.rate


def ca_header(view, ports):
    """ca_dump(): CA header and the CA-level fields."""
    return ''.join([
        "CA '%s'\n" % view.ca_name,
        '\tCA type: %s\n' % view.hca['ca_type'],
        '\tNumber of ports: %d\n' % ports,
        '\tFirmware version: %s\n' % view.hca['firmware'],
        '\tHardware version: %s\n' % view.hca.get('hardware_version', '0'),
        '\tNode GUID: 0x%016x\n' % view.node_guid,
        '\tSystem image GUID: 0x%016x\n' % view.system_image_guid,
    ])


def port_block(view, alone=False):
    """port_dump(): ``Port N:`` and its fields, indented unless printed alone."""
    head, pre = ('', '') if alone else ('\t', '\t\t')
    lines = [
        '%sPort %d:' % (head, view.number),
        '%sState: %s' % (pre, view.state),
        '%sPhysical state: %s' % (pre, view.physical_state),
        '%sRate: %s' % (pre, _rate(view)),
        '%sBase lid: %d' % (pre, view.lid),
        '%sLMC: %d' % (pre, view.lmc),
        '%sSM lid: %d' % (pre, view.sm_lid),
        '%sCapability mask: %s' % (pre, view.capability_mask),
        '%sPort GUID: 0x%016x' % (pre, view.port_guid),
        '%sLink layer: %s' % (pre, view.link_layer),
    ]
    return '\n'.join(lines) + '\n'


def _port_number(text):
    """strtol(text, NULL, 0): garbage is 0."""
    try:
        return int(text, 0)
    except ValueError:
        return 0


def _parse_ibstat_args(args):
    """(flags, positionals) or None on a bad option."""
    flags = set()
    positionals = []
    for arg in args:
        if arg in ('-l', '--list_of_cas'):
            flags.add('l')
        elif arg in ('-s', '--short'):
            flags.add('s')
        elif arg in ('-p', '--port_list'):
            flags.add('p')
        elif arg in ('-h', '--help'):
            flags.add('h')
        elif arg.startswith('-') and len(arg) > 1:
            return None
        else:
            positionals.append(arg)
    return flags, positionals


def run_ibstat(ctx, args):
    """ibstat [-l|-s|-p] [CA [PORT]]."""
    parsed = _parse_ibstat_args(args)
    if parsed is None or 'h' in parsed[0] or len(parsed[1]) > 2:
        ctx.error(IBSTAT_USAGE)
        return 2 if parsed is None or len(parsed[1]) > 2 else 0
    flags, positionals = parsed
    model = ctx.host_model()
    if not model.hcas:
        return _panic(ctx, 'main', "can't list IB device names")
    hcas = model.hcas
    if positionals:
        hcas = [hca for hca in model.hcas if hca['name'] == positionals[0]]
        if not hcas:
            return _panic(ctx, 'main', "'%s' IB device can't be found" % positionals[0])
    if 'p' in flags:
        for hca in hcas:
            ctx.write(''.join('0x%016x\n' % view.port_guid for view in model.ports(hca['name']) if view.port_guid))
        return 0
    for hca in hcas:
        if 'l' in flags:
            ctx.write('%s\n' % hca['name'])
            continue
        views = model.ports(hca['name'])
        if len(positionals) == 2 and 's' not in flags:
            number = _port_number(positionals[1])
            chosen = [view for view in views if view.number == number]
            if not chosen:
                ctx.error("ibwarn: [%d] ca_stat: CA: '%s' has no port number %d - max (%d)\n" % (
                    pid(), hca['name'], number, len(views)))
                return _panic(ctx, 'main', "stat of IB device '%s' failed" % hca['name'])
            ctx.write("CA: '%s'\n" % hca['name'])
            ctx.write(port_block(chosen[0], alone=True))
            continue
        ctx.write(ca_header(views[0], len(views)))
        if 's' not in flags:
            ctx.write(''.join(port_block(view) for view in views))
    return 0


def _gid0(view):
    return view.gids[0][1] if view.gids else 'unknown'


def ibstatus_block(view):
    """port_status() of the ibstatus script: echo of ``<TAB>key:<TAB> value`` lines, then a blank line."""
    return ''.join([
        "Infiniband device '%s' port %d status:\n" % (view.ca_name, view.number),
        '\tdefault gid:\t %s\n' % _gid0(view),
        '\tbase lid:\t 0x%x\n' % view.lid,
        '\tsm lid:\t\t 0x%x\n' % view.sm_lid,
        '\tstate:\t\t %d: %s\n' % (PORT_STATE_NUM[view.state], SYSFS_STATE[view.state]),
        '\tphys state:\t %d: %s\n' % (PHYS_STATE_NUM[view.physical_state], view.physical_state),
        '\trate:\t\t %s\n' % view.rate_text,
        '\tlink_layer:\t %s\n' % view.link_layer,
        '\n',
    ])


def run_ibstatus(ctx, args):
    """ibstatus [DEV[:PORT] ...]."""
    if args and args[0] == '-h':
        ctx.write('Usage:  ibstatus  [-h] [devname[:portnum]]\n')
        return 255
    model = ctx.host_model()
    if not args:
        if not model.hcas:
            ctx.write('Fatal error:  No devices\n')
            return 255
        ctx.write(''.join(ibstatus_block(view) for view in model.ports()))
        return 0
    for arg in args:
        dev, _sep, port = arg.partition(':')
        if dev not in model.hca_names():
            ctx.write("Fatal error:  device '%s': sys files not found (/sys/class/infiniband/%s/ports)\n" % (dev, dev))
            return 255
        for view in model.ports(dev):
            if not port or str(view.number) == port:
                ctx.write(ibstatus_block(view))
    return 0
