"""iblinkinfo stand-in: the whole fabric from fabric.yml plus every host's state file.

Layout from rdma-core infiniband-diags iblinkinfo.c (print_node_header,
print_port) and ibdiag_common.c (get_max_msg): a ``Switch: 0x<guid> <desc>:``
or ``CA: <desc>:`` header per node, then one line per port, ``(%3s %18s %6s/%8s)``
link part, peer ``%6d %4d[%2s] "<desc>" (<width msg> <speed msg>)``.  A CA
whose link is down is not reachable, so it is not printed; the switch port
it is cabled to prints as Down.  On a fabric with one subnet per rail, only
the subnet of the port the tool opens (``-C``/``-P``, else the first active
one) is printed, as the real tool's SMPs reach no further.

In a lab whose fabric runs ibsim, the subnet manager decides (hwsim/smstate.py): before a master SM's first sweep
every port of the subnet, switch ports and switch-to-switch links too, is ``Initialize``/``LinkUp`` with LID 0 (the
tool walks the fabric by directed route, which needs no SM), as ibsim/sim_net.c link_ports() cables them.
"""
from hwsim import fabric as fabrics, links
from hwsim.model import SimError, pid

STATE_TEXT = {'Down': 'Down', 'Initializing': 'Initialize', 'Armed': 'Armed', 'Active': 'Active'}
USAGE = ('Usage: iblinkinfo [options]\n'
         'Options: -l/--line, -d/--down, --switches-only, --cas-only, -C/--Ca <ca>, -P/--Port <port>\n')


class Link(object):
    """The state of one cable as both of its ends report it."""

    def __init__(self, width, speed, state, phys, max_width='4X', max_speed=None):
        self.width = width
        self.speed = speed
        self.state = state
        self.phys = phys
        self.max_width = max_width
        self.max_speed = speed if max_speed is None else max_speed

    @property
    def down(self):
        return self.state == 'Down'

    def link_text(self):
        if self.down:
            return '(              %6s/%8s)' % ('Down', self.phys)
        return '(%3s %18s %6s/%8s)' % (self.width, links.format_speed(self.speed) + ' Gbps', STATE_TEXT[self.state], self.phys)

    def could_be(self):
        """``(width msg speed msg)`` contents: "Could be 4X" / "Could be 106.25 Gbps" when trained below both ends' best."""
        width_msg = 'Could be %s' % self.max_width if links.lanes(self.width) < links.lanes(self.max_width) else ''
        speed_msg = 'Could be %s Gbps' % links.format_speed(self.max_speed) if self.speed < self.max_speed else ''
        return width_msg, speed_msg


class Fabric(object):
    """Nodes and ports of the simulated subnet."""

    def __init__(self, ctx, subnet=None):
        self.ctx = ctx
        self.data = ctx.fabric
        self.sm = ctx.sm   # smstate.SubnetStates in an ibsim lab, else None (every link Active)
        self.switches = [switch for switch in self.data['switches'] if subnet is None or switch.get('subnet') == subnet]
        self.ca_ports = {}      # 'host/mlx5_N' -> PortView (only hosts with IB HCAs in the fabric)
        for host, entry in sorted(self.data['hosts'].items(), key=lambda item: (item[1]['index'] or 0, item[0])):
            if not entry.get('hcas'):
                continue
            model = ctx.host_model(host)
            for view in model.ports():
                hca = entry['hcas'].get(view.ca_name)
                if hca is not None and (subnet is None or hca.get('subnet') == subnet):
                    self.ca_ports['%s/%s' % (host, view.ca_name)] = (view, hca)

    def switch(self, name):
        return fabrics.switch_by_name(self.data, name)

    def ca_link(self, view, switch):
        max_speed = fabrics.max_lane_speed(view.max_lane_speed, switch['lane_speed_gbps'])
        speed = min(view.lane_speed, max_speed)
        return Link(view.width, speed, view.state, view.physical_state, view.max_width, max_speed)

    def _answer(self, switch):
        if self.sm is None:
            return None
        return self.sm.answer(switch.get('subnet') or self.data['subnets'][0]['name'])

    def switch_lid(self, switch):
        """The switch's LID: fabric.yml's, or 0 where no SM has assigned LIDs yet."""
        answer = self._answer(switch)
        return switch['lid'] if answer is None or answer['lid'] != 0 else 0

    def switch_link(self, switch, peer_switch):
        speed = fabrics.max_lane_speed(switch['lane_speed_gbps'], peer_switch['lane_speed_gbps'])
        answer = self._answer(switch)
        state = 'Active' if answer is None or answer['state'] == 'Down' else answer['state']
        return Link('4X', speed, state, 'LinkUp')


def _remote(lid, port, desc, link, guid=None):
    width_msg, speed_msg = link.could_be()
    prefix = '0x%s ' % guid[2:] if guid else ''
    return '%s%6d %4d[%2s] "%s" (%s %s)' % (prefix, lid, port, '', desc, width_msg, speed_msg)


NO_PEER_DOWN = '           [  ] "" ( )'


def switch_lines(fab, switch, options):
    """Header and port lines of one switch."""
    lines = []
    for number in range(1, switch['port_count'] + 1):
        peer = switch['ports'].get(number)
        remote = NO_PEER_DOWN
        link = Link('4X', switch['lane_speed_gbps'], 'Down', 'Polling')
        if peer and peer['peer'] in fab.ca_ports:
            view, _entry = fab.ca_ports[peer['peer']]
            link = fab.ca_link(view, switch)
            if not link.down:
                guid = '0x%016x' % view.port_guid if options['line'] else None
                remote = _remote(view.lid, view.number, view.description, link, guid)
        elif peer:
            other = fab.switch(peer['peer'])
            link = fab.switch_link(switch, other)
            remote = _remote(fab.switch_lid(other), peer['peer_port'], other['description'], link,
                             other['guid'] if options['line'] else None)
        if options['down'] and not link.down:
            continue
        if options['line']:
            start = '%s "%30s" ' % (switch['guid'], switch['description'])
        else:
            start = '      '
        lines.append('%s%6d %4d[%2s] ==%s==>  %s' % (start, fab.switch_lid(switch), number, '', link.link_text(), remote))
    if lines and not options['line']:
        lines.insert(0, 'Switch: %s %s:' % (switch['guid'], switch['description']))
    return lines


def ca_lines(fab, key, options):
    """Header and port line of one reachable CA."""
    view, entry = fab.ca_ports[key]
    switch = fab.switch(entry['switch'])
    link = fab.ca_link(view, switch)
    if link.down or options['down']:
        return []
    guid = switch['guid'] if options['line'] else None
    remote = _remote(fab.switch_lid(switch), entry['switch_port'], switch['description'], link, guid)
    if options['line']:
        start = '0x%016x "%30s" ' % (view.port_guid, view.description)
        return ['%s%6d %4d[%2s] ==%s==>  %s' % (start, view.lid, view.number, '', link.link_text(), remote)]
    return ['CA: %s:' % view.description,
            '      0x%016x %6d %4d[%2s] ==%s==>  %s' % (view.port_guid, view.lid, view.number, '', link.link_text(), remote)]


def _parse(args):
    """Options dict, or None on a bad option."""
    options = {'line': False, 'down': False, 'switches': True, 'cas': True, 'ca': None, 'port': None}
    pending = None
    for arg in args:
        if pending:
            options[pending] = arg
            pending = None
        elif arg in ('-l', '--line'):
            options['line'] = True
        elif arg in ('-d', '--down'):
            options['down'] = True
        elif arg == '--switches-only':
            options['cas'] = False
        elif arg == '--cas-only':
            options['switches'] = False
        elif arg in ('-C', '--Ca'):
            pending = 'ca'
        elif arg in ('-P', '--Port'):
            pending = 'port'
        else:
            return None
    return None if pending else options


def _local_port(ctx, options):
    """The port the tool would send its SMPs from: the requested one, or the first active IB port."""
    model = ctx.host_model()
    for view in model.ports(options['ca']):
        if view.is_ib and view.up and (options['port'] is None or str(view.number) == options['port']):
            return view
    return None


def run(ctx, args):
    """iblinkinfo [-l] [-d] [--switches-only|--cas-only] [-C CA] [-P PORT]."""
    options = _parse(args)
    if options is None:
        ctx.error(USAGE)
        return 2
    try:
        local = _local_port(ctx, options)
    except SimError:
        local = None
    if local is None:
        ctx.error('ibwarn: [%d] mad_rpc_open_port: can\'t open UMAD port ((%s):%s)\n' % (
            pid(), options['ca'] or 'null', options['port'] or 0))
        ctx.error('Failed to open %s port %s\n' % (options['ca'] or '(null)', options['port'] or 0))
        return 1
    subnet = fabrics.subnet_of(ctx.fabric, ctx.host, local.ca_name)
    fab = Fabric(ctx, subnet['name'] if subnet and len(ctx.fabric.get('subnets') or []) > 1 else None)
    lines = []
    if options['switches']:
        for switch in fab.switches:
            lines.extend(switch_lines(fab, switch, options))
    if options['cas']:
        for key in fab.ca_ports:
            lines.extend(ca_lines(fab, key, options))
    ctx.write(''.join(line + '\n' for line in lines))
    return 0
