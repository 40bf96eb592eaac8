"""iproute2 ``dcb`` stand-in (the inbox stack's DCB tool) for the simulated mlx5 Ethernet netdevs: the APP table's
DSCP entries and PFC, sharing each netdev's DCB state with the mlnx_qos stand-in (``adapters`` in the host's state file:
one dcbnl state per netdev, whichever tool sets it).

    dcb [-j [-p]] [-N] app show dev DEV [dscp-prio | other selectors]   {"dscp_prio":[[DSCP,PRIO],...]}, sorted
    dcb app { add | del | replace } dev DEV dscp-prio DSCP:PRIO ...     DSCP a number, a name (CS0-7, AF11-43, EF) or all
    dcb app flush dev DEV [dscp-prio]
    dcb [-j [-p]] pfc show dev DEV [prio-pfc | pfc-cap | macsec-bypass | delay]
    dcb pfc set dev DEV [prio-pfc { PRIO | all }:{ on | off } ...] [delay N] [macsec-bypass { on | off }]

Layouts from iproute2's source: dcb/dcb_app.c (dcb_cmd_app_show: the table sorted by DSCP then priority,
dcb_app_print_filtered: ``[DSCP, PRIO]`` pairs under ``dscp_prio``, the key left out when there is none; text
``dscp-prio 26:3 48:6 ``, here with numbers as ``-N`` prints them, where the real tool names DSCPs from
/etc/iproute2/rt_dsfield), dcb/dcb_pfc.c (``pfc_cap``, ``macsec_bypass``, ``delay``, ``prio_pfc``: 8 JSON booleans,
print_on_off), dcb/dcb.c (-j, -p, -N; ``perror("Attribute read")``; exit 1 on an error). The driver underneath is mlx5's
en_dcbnl.c: pfc_cap 8, delay = the cable length (mlnx_qos --cable_len; 7), macsec-bypass not kept (always off); one
APP entry per DSCP, since mlx5e_dcbnl_ieee_setapp replaces the DSCP's old entry and the first entry switches trust to
DSCP; mlx5e_dcbnl_ieee_delapp refuses an entry that is not the DSCP's current one (-ENOENT, which dcbnl hands back as a
u8 status: ``Error when attempting to set attribute: Unknown error 254``; the ``Attribute write`` line perror() adds
after it is not printed here) and the last one switches trust back to PCP.
So ``app replace`` of a DSCP that had another priority adds the new entry (which replaces the old) and then fails to
delete the old one, with that message and ``Could not remove replaced APP entries``, exit 0 (dcb_cmd_app_replace always
returns 0); the table is right.

A netdev hwsim does not simulate (eth0, the lab's veths) goes to the real dcb (/usr/sbin/dcb, iproute2) with the same
arguments; a simulated InfiniBand netdev (IPoIB) has no dcbnl: ``Attribute read: Operation not supported``, 1.
"""
import json

from hwsim import fabric as fabrics, profile as profiles
from hwsim.model import SimError
from hwsim.tools import linkcounters, mlnx_qos

NO_DCB = 'Attribute read: Operation not supported\n'
NO_DEVICE = 'Attribute read: No such device\n'
# The keywords of each command in the order dcb_app.c / dcb_pfc.c try them (matches(): a prefix; pcp-prio: exact)
APP_SHOW_WORDS = ('help', 'ethtype-prio', 'dscp-prio', 'stream-port-prio', 'dgram-port-prio', 'port-prio', 'default-prio',
                  'pcp-prio')
APP_FLUSH_WORDS = ('help', 'ethtype-prio', 'default-prio', 'dscp-prio', 'pcp-prio')
APP_SET_WORDS = ('help', 'ethtype-prio', 'default-prio', 'dscp-prio', 'stream-port-prio', 'dgram-port-prio', 'port-prio',
                 'pcp-prio')
PFC_SHOW_WORDS = ('help', 'prio-pfc', 'pfc-cap', 'macsec-bypass', 'delay', 'requests', 'indications')
PFC_SET_WORDS = ('help', 'prio-pfc', 'macsec-bypass', 'delay')
PFC_CAP = 8   # mlx5e_dcbnl_ieee_getpfc: mlx5_max_tc() + 1
ENOENT_STATUS = 'Error when attempting to set attribute: Unknown error 254\n'   # -ENOENT as dcbnl's u8 status
# rt_dsfield names dcb accepts for a DSCP (the dsfield value >> 2)
DSCP_NAMES = dict([('CS%d' % n, 8 * n) for n in range(8)]
                  + [('AF%d%d' % (x, y), 8 * x + 2 * y) for x in range(1, 5) for y in range(1, 4)] + [('EF', 46)])
USAGE = ('Usage: dcb [ OPTIONS ] OBJECT { COMMAND | help }\n'
         '       dcb [ -f | --force ] { -b | --batch } filename [ -n | --netns ] netnsname\n'
         'where  OBJECT := { app | buffer | dcbx | ets | maxrate | pfc }\n'
         '       OPTIONS := [ -V | --Version | -i | --iec | -j | --json\n'
         '                  | -N | --Numeric | -p | --pretty\n'
         '                  | -s | --statistics | -v | --verbose]\n')
APP_HELP = ('Usage: dcb app { show | flush } dev STRING\n'
            '           [ default-prio ]\n           [ ethtype-prio ]\n           [ stream-port-prio ]\n'
            '           [ dgram-port-prio ]\n           [ port-prio ]\n           [ dscp-prio ]\n           [ pcp-prio ]\n\n'
            'Usage: dcb app { add | del | replace } dev STRING\n'
            '           [ dscp-prio INTEGER:PRIO ]\n\n where PRIO := { 0 .. 7 }\n       DSCP := { 0 .. 63 }\n\n')
PFC_HELP = ('Usage: dcb [ -s ] pfc show dev STRING\n'
            '           [ pfc-cap ] [ prio-pfc ] [ macsec-bypass ]\n           [ delay ] [ requests ] [ indications ]\n\n'
            'Usage: dcb pfc set dev STRING\n           [ prio-pfc PFC-MAP ]\n           [ macsec-bypass { on | off } ]\n'
            '           [ delay INTEGER ]\n\n where PFC-MAP := [ PFC-MAP ] PFC-MAPPING\n'
            '       PFC-MAPPING := { all | TC }:PFC\n       TC := { 0 .. 7 }\n       PFC := { on | off }\n\n')
INCOMPLETE = 'Command line is not complete. Try option "help"\n'


class _Done(Exception):
    """Ends the command: ``status`` with ``err`` on stderr (what dcb prints before returning)."""

    def __init__(self, status, err=''):
        super(_Done, self).__init__(err)
        self.status = status
        self.err = err


def _matches(arg, word):
    """iproute2's matches(): ``arg`` is a non-empty prefix of ``word``."""
    return bool(arg) and word.startswith(arg)


def _first(word, names):
    """The first of ``names`` that ``word`` selects, as the tool's if/else chain tries them, or None."""
    for name in names:
        if (word == name) if name == 'pcp-prio' else _matches(word, name):
            return name
    return None


def _options(args):
    """(options, rest) or None for an option the stand-in leaves to the real dcb."""
    options = {'json': False, 'pretty': False}
    rest = list(args)
    while rest and rest[0].startswith('-') and len(rest[0]) > 1:
        arg = rest.pop(0)
        if arg in ('--json', '--pretty', '--Numeric'):
            letters = {'--json': 'j', '--pretty': 'p', '--Numeric': 'N'}[arg]
        elif not arg.startswith('--') and all(char in 'jpN' for char in arg[1:]):
            letters = arg[1:]
        else:
            return None
        options['json'] = options['json'] or 'j' in letters
        options['pretty'] = options['pretty'] or 'p' in letters
    return options, rest


def _dump(options, data):
    if options['pretty']:
        return json.dumps(data, indent=4) + '\n'
    return json.dumps(data, separators=(',', ':')) + '\n'


def _netdev_view(ctx, netdev):
    """The PortView of a simulated netdev, or None (a host or netdev hwsim does not simulate)."""
    try:
        return ctx.host_model().port_by_netdev(netdev)
    except (SimError, fabrics.FabricError, profiles.ProfileError):
        return None


def _dscp(text):
    """dcb_app_parse_dscp(): a number, ``all`` (-1: every DSCP) or an rt_dsfield name; None if none of these."""
    if text == 'all':
        return -1
    try:
        value = int(text, 0)   # get_u32(..., 0): decimal, 0x hex, 0 octal
    except ValueError:
        return DSCP_NAMES.get(text)
    return value if value >= 0 else None


def _prio(text):
    """get_u8()."""
    try:
        value = int(text, 0)
    except ValueError:
        return None
    return value if 0 <= value <= 255 else None


def _dscp_mappings(items):
    """parse_mapping_gen() over ``DSCP:PRIO`` items: (pairs, items left). Raises _Done with dcb's messages; the item
    printed is its key (parse_mapping_gen cuts the item at its colon before parsing)."""
    pairs = []
    while items and ':' in items[0]:
        key, value = items[0].split(':', 1)
        dscp, prio = _dscp(key), _prio(value)
        if dscp is None or prio is None:
            raise _Done(1, 'Invalid mapping %s\n' % key)
        if dscp > 63:
            raise _Done(1, 'In DSCP:PRIO mapping, DSCP is expected to be 0..63\nInvalid mapping %s\n' % key)
        if prio > 7:
            raise _Done(1, 'In DSCP:PRIO mapping, PRIO is expected to be 0..7\nInvalid mapping %s\n' % key)
        pairs.extend([[number, prio] for number in range(64)] if dscp == -1 else [[dscp, prio]])
        items = items[1:]
    return pairs, items


def _app_table(items):
    """The ``dscp-prio D:P ...`` groups of ``app add/del/replace`` (dcb_cmd_app_parse_add_del)."""
    table = []
    while items:
        word = items.pop(0)
        name = _first(word, APP_SET_WORDS)
        if name == 'help':
            raise _Done(0, APP_HELP)
        if name == 'dscp-prio':
            if not items:
                raise _Done(255, INCOMPLETE)
            pairs, items = _dscp_mappings(items)
            table.extend(pairs)
        elif name:
            raise _Done(2, 'hwsim dcb: only dscp-prio entries are simulated (mlx5 takes no other selector)\n')
        else:
            raise _Done(1, 'What is "%s"?\n%s' % (word, APP_HELP))
    return table


def _selected(items, names):
    """The keywords ``items`` select among ``names`` (show, flush); help and unknown words end the command."""
    chosen = []
    for word in items:
        name = _first(word, names)
        if name == 'help':
            raise _Done(0, APP_HELP)
        if name is None:
            raise _Done(1, 'What is "%s"?\n%s' % (word, APP_HELP))
        chosen.append(name)
    return chosen


def _app_show(options, adapter, items):
    wanted = _selected(items, APP_SHOW_WORDS)
    entries = sorted(adapter['apps'])
    show = entries and (not wanted or 'dscp-prio' in wanted)
    if options['json']:
        return _dump(options, {'dscp_prio': entries} if show else {})
    return 'dscp-prio %s\n' % ''.join('%d:%d ' % (dscp, prio) for dscp, prio in entries) if show else ''


def _setapp(adapter, dscp, prio):
    """mlx5e_dcbnl_ieee_setapp(): the DSCP's entry replaced (the first one switches trust to DSCP)."""
    mlnx_qos.set_dscp(adapter, dscp, prio)


def _delapp(adapter, dscp, prio):
    """mlx5e_dcbnl_ieee_delapp(): only the DSCP's current entry; False (-ENOENT) otherwise."""
    if [dscp, prio] not in adapter['apps']:
        return False
    mlnx_qos.del_dscp(adapter, dscp, prio)
    return True


def _delete(adapter, entries):
    """One DCB_CMD_IEEE_DEL: stops at the first entry the driver refuses; returns dcb's message for it, or ''."""
    for dscp, prio in entries:
        if not _delapp(adapter, dscp, prio):
            return ENOENT_STATUS
    return ''


def _app(ctx, options, data, netdev, command, items):
    adapter = mlnx_qos.load_adapter(data, netdev)
    if _matches(command, 'show'):
        ctx.write(_app_show(options, adapter, items))
        return 0
    if _matches(command, 'flush'):
        wanted = _selected(items, APP_FLUSH_WORDS)
        if not wanted or 'dscp-prio' in wanted:
            adapter['apps'] = []
        mlnx_qos.store_adapter(ctx, data, netdev, adapter)
        return 0
    if not items:
        raise _Done(0, APP_HELP)
    table = _app_table(list(items))
    status, err = 0, ''
    if _matches(command, 'add'):
        for dscp, prio in table:
            _setapp(adapter, dscp, prio)
    elif _matches(command, 'del'):
        err = _delete(adapter, table)
        status = 1 if err else 0
    else:   # replace: add what is new, then delete the other priorities of those DSCPs (dcb_cmd_app_replace)
        orig = [list(entry) for entry in adapter['apps']]
        for dscp, prio in [entry for entry in table if entry not in orig]:
            _setapp(adapter, dscp, prio)
        keys = set(dscp for dscp, _prio in table)
        err = _delete(adapter, [entry for entry in orig if entry[0] in keys and entry not in table])
        err += 'Could not remove replaced APP entries\n' if err else ''
    mlnx_qos.store_adapter(ctx, data, netdev, adapter)
    ctx.error(err)
    return status


def _on_off(text):
    """parse_on_off()."""
    if text in ('on', 'off'):
        return text == 'on'
    return None


def _pfc_show(options, adapter, items):
    prio_pfc = [bool(enabled) for enabled in adapter['pfc']]
    pfc_text = ''.join('%d:%s ' % (prio, 'on' if on else 'off') for prio, on in enumerate(prio_pfc))
    fields = {'pfc-cap': ('pfc_cap', PFC_CAP, 'pfc-cap %d ' % PFC_CAP),
              'macsec-bypass': ('macsec_bypass', False, 'macsec-bypass off '),
              'delay': ('delay', adapter['cable_len'], 'delay %d ' % adapter['cable_len']),
              'prio-pfc': ('prio_pfc', prio_pfc, 'prio-pfc ' + pfc_text)}
    if not items:   # dcb_pfc_print(): three on one line, then prio-pfc
        chosen = [fields[name] for name in ('pfc-cap', 'macsec-bypass', 'delay', 'prio-pfc')]
        lines = [''.join(text for _key, _value, text in chosen[:3]), chosen[3][2]]
    else:
        chosen, lines = [], []
        for word in items:
            name = _first(word, PFC_SHOW_WORDS)
            if name == 'help':
                raise _Done(0, PFC_HELP)
            if name in ('requests', 'indications'):
                raise _Done(2, 'hwsim dcb: the pause counters (requests, indications) are not simulated\n')
            if name is None:
                raise _Done(1, 'What is "%s"?\n%s' % (word, PFC_HELP))
            chosen.append(fields[name])
            lines.append(fields[name][2])
    if options['json']:
        return _dump(options, dict((key, value) for key, value, _text in chosen))
    return ''.join(line + '\n' for line in lines)


def _pfc_set(adapter, items):
    if not items:
        raise _Done(0, PFC_HELP)
    while items:
        word = items.pop(0)
        name = _first(word, PFC_SET_WORDS)
        if name == 'help':
            raise _Done(0, PFC_HELP)
        if name == 'prio-pfc':
            if not items:
                raise _Done(255, INCOMPLETE)
            while items and ':' in items[0]:
                key, value = items.pop(0).split(':', 1)
                enabled = _on_off(value)
                if enabled is None:
                    raise _Done(1, 'Error: argument of "PFC" must be "on" or "off", not "%s"\nInvalid pfc mapping %s\n'
                                % (value, key))
                if key == 'all':
                    adapter['pfc'] = [1 if enabled else 0] * 8
                elif key.isdigit() and int(key) <= 7:
                    adapter['pfc'] = [int(enabled) if prio == int(key) else old for prio, old in enumerate(adapter['pfc'])]
                else:
                    raise _Done(1, ('In PRIO:PFC mapping, PRIO is expected to be 0..7\n' if key.isdigit() else '')
                                + 'Invalid pfc mapping %s\n' % key)
        elif name == 'macsec-bypass':
            if not items or _on_off(items[0]) is None:
                raise _Done(1, 'Error: argument of "macsec-bypass" must be "on" or "off", not "%s"\n'
                            % (items[0] if items else ''))
            items.pop(0)   # mlx5 does not keep it
        elif name == 'delay':
            value = items.pop(0) if items else ''
            if not value.isdigit() or int(value) > 65535:
                raise _Done(1, "Invalid delay `%s', expected an integer 0..65535\n" % value)
            adapter['cable_len'] = int(value)   # mlx5e_dcbnl_ieee_setpfc: the delay is the cable length
        else:
            raise _Done(1, 'What is "%s"?\n%s' % (word, PFC_HELP))


def _pfc(ctx, options, data, netdev, command, items):
    adapter = mlnx_qos.load_adapter(data, netdev)
    if _matches(command, 'show'):
        ctx.write(_pfc_show(options, adapter, items))
        return 0
    _pfc_set(adapter, list(items))
    mlnx_qos.store_adapter(ctx, data, netdev, adapter)
    return 0


OBJECTS = ('app', 'buffer', 'dcbx', 'ets', 'maxrate', 'pfc')   # dcb.c dcb_cmd(), in its order
COMMANDS = {'app': ('show', 'flush', 'add', 'del', 'replace'), 'pfc': ('show', 'set')}
HELPS = {'app': APP_HELP, 'pfc': PFC_HELP}


def run(ctx, args):
    """dcb [-j] [-p] [-N] app|pfc COMMAND dev DEV ... (module docstring)."""
    parsed = _options(args)
    if parsed is None:
        return linkcounters.delegate(ctx, 'dcb', args, 'hwsim dcb: only -j, -p and -N are simulated\n')
    options, rest = parsed
    if len(rest) < 4 or not _matches(rest[2], 'dev'):
        return linkcounters.delegate(ctx, 'dcb', args, USAGE)
    view = _netdev_view(ctx, rest[3])
    if view is None:   # eth0, the lab's veths: the real tool answers for them
        return linkcounters.delegate(ctx, 'dcb', args, NO_DEVICE)
    obj = _first(rest[0], OBJECTS)
    if obj is None:
        ctx.error('Object "%s" is unknown\n' % rest[0])
        return 1
    if obj not in COMMANDS:
        ctx.error('hwsim dcb: only "app" and "pfc" are simulated, not "%s"\n' % obj)
        return 2
    command, netdev, items = rest[1], rest[3], rest[4:]
    commands = [name for name in COMMANDS[obj] if _matches(command, name)]
    if not commands:
        ctx.error('What is "%s"?\n%s' % (command, HELPS[obj]))
        return 1
    if view.link_layer != 'Ethernet':
        # no dcbnl_ops: -EOPNOTSUPP on the first netlink request (a read for show, flush, replace and pfc set)
        ctx.error(NO_DCB if commands[0] in ('show', 'flush', 'replace', 'set')
                  else 'Attribute write: Operation not supported\n')
        return 1
    data = ctx.load_state()
    try:
        if obj == 'app':
            return _app(ctx, options, data, netdev, commands[0], items)
        return _pfc(ctx, options, data, netdev, commands[0], items)
    except _Done as done:
        ctx.error(done.err)
        return done.status
