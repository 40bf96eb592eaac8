"""ibdev2netdev, show_gids and ibv_devinfo stand-ins.

ibdev2netdev and show_gids follow the mlnx-tools scripts (``<dev> port <n>
==> <netdev> (Up)``; ``-v`` adds PCI address, ``(MT<id> - <part>)``, the
VPD description padded to 15, firmware and the ``%-6s`` port state; show_gids
prints a tab-separated table and ``n_gids_found=N``).  ibv_devinfo follows
rdma-core libibverbs/examples/devinfo.c (tab-separated ``key:<TABs>value``).
"""
from hwsim.tools.ibstat import SYSFS_STATE

VERBS_PORT_STATE = {'Down': 'PORT_DOWN', 'Initializing': 'PORT_INIT', 'Armed': 'PORT_ARMED', 'Active': 'PORT_ACTIVE'}
VERBS_PORT_STATE_NUM = {'Down': 1, 'Initializing': 2, 'Armed': 3, 'Active': 4}
MTU_ENUM = {256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}


def _carrier(view):
    return 'Up' if view.up else 'Down'


def run_ibdev2netdev(ctx, args):
    """ibdev2netdev [-v]."""
    if args and args[0] in ('-h', '--help'):
        ctx.write('ibdev2netdev <options>\n-h, --help                print help message\n'
                  '-v, --verbose             print more info\n')
        return 0
    if len(args) > 1 or (args and args[0] != '-v'):
        ctx.write('ibdev2netdev <options>\n-h, --help                print help message\n'
                  '-v, --verbose             print more info\n')
        return 255
    model = ctx.host_model()
    if not model.hcas:
        return 255
    for view in model.ports():
        if not view.netdev:
            continue
        if args:
            hca = view.hca
            ctx.write('%s %s (%s - %-11s) %-15s fw %s port %d (%-6s) ==> %s (%s)\n' % (
                hca['pci'], view.ca_name, hca['ca_type'], hca.get('part_number', 'NA'), hca.get('description', ''),
                hca['firmware'], view.number, SYSFS_STATE[view.state], view.netdev, _carrier(view)))
        else:
            ctx.write('%s port %d ==> %s (%s)\n' % (view.ca_name, view.number, view.netdev, _carrier(view)))
    return 0


def run_show_gids(ctx, args):
    """show_gids [DEV]."""
    model = ctx.host_model()
    ctx.write('DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\n')
    ctx.write('---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---\n')
    views = model.ports()
    if args:
        views = [view for view in views if view.ca_name == args[0]]
        if args[0] not in model.hca_names():
            ctx.error("ls: cannot access '/sys/class/infiniband/%s/ports/': No such file or directory\n" % args[0])
    count = 0
    for view in views:
        netdev = view.netdev if view.link_layer == 'Ethernet' else ''
        for index, gid, version, ipv4 in sorted(view.gids, key=lambda entry: str(entry[0])):
            if ipv4:
                ctx.write('%s\t%d\t%d\t%s\t%s  \t%s\t%s\n' % (view.ca_name, view.number, index, gid, ipv4, version, netdev))
            else:
                ctx.write('%s\t%d\t%d\t%s\t\t\t%s\t%s\n' % (view.ca_name, view.number, index, gid, version, netdev))
            count += 1
    ctx.write('n_gids_found=%d\n' % count)
    return 0


def _verbs_guid(value):
    digits = '%016x' % value
    return ':'.join(digits[i:i + 4] for i in range(0, 16, 4))


def _mtu(value):
    return '%d (%d)' % (value, MTU_ENUM.get(value, 5))


def hca_block(views, port_filter=0):
    """print_hca_cap() without -v: device lines, then per port the port lines and a blank line."""
    first = views[0]
    hca = first.hca
    lines = [
        'hca_id:\t%s' % first.ca_name,
        '\ttransport:\t\t\tInfiniBand (0)',
        '\tfw_ver:\t\t\t\t%s' % hca['firmware'],
        '\tnode_guid:\t\t\t%s' % _verbs_guid(first.node_guid),
        '\tsys_image_guid:\t\t\t%s' % _verbs_guid(first.system_image_guid),
        '\tvendor_id:\t\t\t0x02c9',
        '\tvendor_part_id:\t\t\t%s' % hca['ca_type'].replace('MT', ''),
        '\thw_ver:\t\t\t\t0x%X' % int(hca.get('hardware_version', '0'), 0),
        '\tboard_id:\t\t\t%s' % hca.get('board_id', 'MT_0000000000'),
        '\tphys_port_cnt:\t\t\t%d' % len(views),
    ]
    for view in views:
        if port_filter and view.number != port_filter:
            continue
        lines += [
            '\t\tport:\t%d' % view.number,
            '\t\t\tstate:\t\t\t%s (%d)' % (VERBS_PORT_STATE[view.state], VERBS_PORT_STATE_NUM[view.state]),
            '\t\t\tmax_mtu:\t\t%s' % _mtu(4096),
            '\t\t\tactive_mtu:\t\t%s' % _mtu(min(view.mtu, 4096)),
            '\t\t\tsm_lid:\t\t\t%d' % view.sm_lid,
            '\t\t\tport_lid:\t\t%d' % view.lid,
            '\t\t\tport_lmc:\t\t0x%02x' % view.lmc,
            '\t\t\tlink_layer:\t\t%s' % view.link_layer,
            '',
        ]
    return '\n'.join(lines) + '\n'


def _devinfo_usage(ctx):
    ctx.write('Usage: ibv_devinfo             print the ca attributes\n\nOptions:\n'
              '  -d, --ib-dev=<dev>     use IB device <dev> (default first device found)\n'
              '  -i, --ib-port=<port>   use port <port> of IB device (default all ports)\n'
              '  -l, --list             print only the IB devices names\n'
              '  -v, --verbose          print all the attributes of the IB device(s)\n')


def _devinfo_args(args):
    """(device, port, list) or None on bad usage."""
    device, port, listing = None, 0, False
    items = list(args)
    while items:
        arg = items.pop(0)
        if arg in ('-l', '--list'):
            listing = True
        elif arg in ('-d', '--ib-dev', '-i', '--ib-port') and items:
            value = items.pop(0)
            if arg in ('-d', '--ib-dev'):
                device = value
            else:
                port = int(value) if value.isdigit() else 0
                if port <= 0:
                    return None
        elif arg.startswith('--ib-dev='):
            device = arg.split('=', 1)[1]
        elif arg.startswith('-d') and len(arg) > 2:
            device = arg[2:]
        else:
            return None
    return device, port, listing


def run_ibv_devinfo(ctx, args):
    """ibv_devinfo [-d DEV] [-i PORT] [-l]."""
    parsed = _devinfo_args(args)
    if parsed is None:
        _devinfo_usage(ctx)
        return 255
    device, port, listing = parsed
    model = ctx.host_model()
    names = model.hca_names()
    if listing:
        ctx.write('%d HCA%s found:\n' % (len(names), '' if len(names) == 1 else 's'))
        ctx.write(''.join('\t%s\n' % name for name in names) + '\n')
        return 0
    if device is not None and device not in names:
        ctx.error("IB device '%s' wasn't found\n" % device)
        return 255
    if not names:
        ctx.error('No IB devices found\n')
        return 255
    for name in names:
        if device is None or name == device:
            ctx.write(hca_block(model.ports(name), port))
    return 0
