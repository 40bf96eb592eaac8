"""Entry point: busybox-style dispatch on argv[0], and the ``hwsim`` control command.

    <tool> ARGS                      run a stand-in (argv[0] is a link named after it)
    hwsim <tool> ARGS                the same, without a link
    hwsim fault [HOST] KIND ARGS     inject a fault on this host, or on another lab host
                                     (the state directory is shared by the lab)
    hwsim clear [HOST] [KIND [TARGET]]
                                     remove faults (all, of a kind, of a kind on one target)
    hwsim show                       print this host's state as JSON
    hwsim tools                      list the tool names (the lab links each to bin/hwsim)
    hwsim build-fabric [--descriptions M] [--switch-names M] [--scalable-units N] [--subnet-per-rail] OUT HOST=PROFILE ...
                                     write fabric.yml for these hosts (PROFILE may be "none")
    hwsim devices [--root DIR]       create this host's NVIDIA device nodes under DIR/dev (default /dev)
    hwsim hold NAME [--root DIR]     hold DIR/dev/nvidia* open as daemon NAME (nvidia-persistenced, nv-hostengine)
"""
import json
import os
import stat
import sys

from hwsim import daemons, faults as fault_kinds, fabric as fabrics, profile as profiles, tools
from hwsim.model import Context, SimError

USAGE = __doc__.split('\n', 2)[2]
SIM_ERRORS = (SimError, fabrics.FabricError, profiles.ProfileError)


def _hca_names(ctx):
    """HCA names of this host when its profile is known, else None (no check)."""
    try:
        return ctx.host_model().hca_names()
    except SIM_ERRORS:
        return None


def _retarget(ctx, args):
    """``hwsim fault gpu02 KIND ...``: act on another host of the fabric (its state file is shared)."""
    if args and args[0] not in fault_kinds.KINDS:
        try:
            known = args[0] in ctx.fabric['hosts']
        except SIM_ERRORS:
            known = False
        if known:
            ctx.host = args[0]
            return args[1:]
    return args


def cmd_fault(ctx, args):
    args = _retarget(ctx, args)
    if not args:
        ctx.error('usage: hwsim fault KIND ARGS; allowed kinds: %s\n' % fault_kinds.allowed_text())
        return 2
    try:
        fault = fault_kinds.parse(args[0], args[1:], _hca_names(ctx))
    except fault_kinds.FaultError as exc:
        ctx.error('hwsim: %s\n' % exc)
        return 2
    data = ctx.load_state()
    data['faults'] = fault_kinds.add(data['faults'], fault)
    ctx.save_state(data)
    return 0


def cmd_clear(ctx, args):
    args = _retarget(ctx, args)
    if len(args) > 2:
        ctx.error('usage: hwsim clear [KIND [TARGET]]\n')
        return 2
    data = ctx.load_state()
    try:
        data['faults'] = fault_kinds.remove(data['faults'], args[0] if args else None, args[1] if len(args) > 1 else None)
    except fault_kinds.FaultError as exc:
        ctx.error('hwsim: %s\n' % exc)
        return 2
    ctx.save_state(data)
    return 0


def cmd_show(ctx, args):
    if args:
        ctx.error('usage: hwsim show\n')
        return 2
    ctx.write(json.dumps(ctx.load_state(), indent=2, sort_keys=True) + '\n')
    return 0


def cmd_tools(ctx, args):
    if args:
        ctx.error('usage: hwsim tools\n')
        return 2
    ctx.write(''.join(name + '\n' for name in sorted(tools.TOOLS)))
    return 0


BUILD_FABRIC_USAGE = ('usage: hwsim build-fabric [--descriptions mlx5|ofed|anonymous|fqdn] [--switch-names unique|identical]'
                      ' [--scalable-units N] [--subnet-per-rail] OUT HOST=PROFILE ...\n')
BUILD_FABRIC_OPTIONS = {'--descriptions': ('descriptions', str), '--switch-names': ('switch_names', str),
                        '--scalable-units': ('scalable_units', int)}


def cmd_build_fabric(ctx, args):
    options, rest, args = {}, [], list(args)
    while args:
        item = args.pop(0)
        if item == '--subnet-per-rail':
            options['subnet_per_rail'] = True
        elif item in BUILD_FABRIC_OPTIONS and args:
            key, kind = BUILD_FABRIC_OPTIONS[item]
            try:
                options[key] = kind(args.pop(0))
            except ValueError:
                ctx.error(BUILD_FABRIC_USAGE)
                return 2
        else:
            rest.append(item)
    if len(rest) < 2 or not all('=' in item for item in rest[1:]):
        ctx.error(BUILD_FABRIC_USAGE)
        return 2
    hosts = []
    for item in rest[1:]:
        host, name = item.split('=', 1)
        hosts.append((host, None if name in ('', 'none') else name))
    try:
        fabric = fabrics.build_fabric(hosts, profile_dir=ctx.profile_dir, **options)
    except fabrics.FabricError as exc:
        ctx.error('hwsim build-fabric: %s\n' % exc)
        return 2
    fabrics.write_fabric(fabric, rest[0])
    return 0


NVIDIA_MAJOR = 195
UVM_MAJOR = 511  # dynamic on real systems; the dmesg stand-in prints the same number
CTL_MINOR = 255
DEVICE_MODE = 0o666


def wanted_devices(model):
    """{name under /dev: (major, minor)} for the host's GPUs the driver sees (none without GPUs)."""
    from hwsim.tools import gpus as gpu_views  # pylint: disable=import-outside-toplevel
    if not gpu_views.has_gpus(model):
        return {}
    nodes = {'nvidia%d' % view.minor: (NVIDIA_MAJOR, view.minor) for view in gpu_views.visible(model)}
    nodes['nvidiactl'] = (NVIDIA_MAJOR, CTL_MINOR)
    nodes['nvidia-uvm'] = (UVM_MAJOR, 0)
    return nodes


def _node_matches(path, major, minor):
    info = os.lstat(path)
    return stat.S_ISCHR(info.st_mode) and os.major(info.st_rdev) == major and os.minor(info.st_rdev) == minor


def ensure_node(path, major, minor):
    """Create (or replace a wrong) character device node, mode 0666; returns 'created', 'replaced', 'mode' or None."""
    action = 'created'
    if os.path.lexists(path):
        if _node_matches(path, major, minor):
            if stat.S_IMODE(os.lstat(path).st_mode) == DEVICE_MODE:
                return None
            os.chmod(path, DEVICE_MODE)
            return 'mode'
        if os.path.isdir(path) and not os.path.islink(path):
            os.rmdir(path)
        else:
            os.unlink(path)
        action = 'replaced'
    os.mknod(path, stat.S_IFCHR | DEVICE_MODE, os.makedev(major, minor))
    os.chmod(path, DEVICE_MODE)
    return action


def stale_nodes(model, directory, wanted):
    """/dev/nvidiaN of the profile's GPUs that the driver no longer sees (gpu-missing)."""
    stale = []
    if not (model.profile and model.profile.get('gpus')):
        return stale
    for device in model.profile['gpus']['devices']:
        name = 'nvidia%d' % device['index']
        path = os.path.join(directory, name)
        if name not in wanted and os.path.lexists(path) and _node_matches(path, NVIDIA_MAJOR, device['index']):
            stale.append(path)
    return stale


def cmd_devices(ctx, args):
    if args not in ([], ) and not (len(args) == 2 and args[0] == '--root'):
        ctx.error('usage: hwsim devices [--root DIR]\n')
        return 2
    directory = os.path.join(args[1] if args else '/', 'dev')
    model = ctx.host_model()
    wanted = wanted_devices(model)
    try:
        os.makedirs(directory, exist_ok=True)
        for name in sorted(wanted):
            major, minor = wanted[name]
            action = ensure_node(os.path.join(directory, name), major, minor)
            if action:
                ctx.write('%s %s (c %d:%d)\n' % (action, os.path.join(directory, name), major, minor))
        for path in stale_nodes(model, directory, wanted):
            os.unlink(path)
            ctx.write('removed %s\n' % path)
    except OSError as exc:
        ctx.error('hwsim: devices: %s\n' % exc)
        return 1
    return 0


COMMANDS = {
    'fault': cmd_fault,
    'clear': cmd_clear,
    'show': cmd_show,
    'tools': cmd_tools,
    'build-fabric': cmd_build_fabric,
    'devices': cmd_devices,
    'hold': daemons.cmd_hold,
}


def run_tool(ctx, name, args):
    """Run one stand-in; simulator problems (no fabric, unknown host) exit 1 with a ``hwsim:`` message."""
    function = tools.lookup(name)
    try:
        return function(ctx, args)
    except SIM_ERRORS as exc:
        ctx.error('hwsim: %s: %s\n' % (name, exc))
        return 1


def main(argv=None, environ=None, stdout=None, stderr=None):
    """Dispatch on the program name; returns the exit status."""
    argv = list(sys.argv if argv is None else argv)
    ctx = Context.from_env(os.environ if environ is None else environ,
                           stdout or sys.stdout, stderr or sys.stderr)
    name = os.path.basename(argv[0])
    if tools.lookup(name) is not None:
        return run_tool(ctx, name, argv[1:])
    if len(argv) < 2 or argv[1] in ('-h', '--help'):
        ctx.error(USAGE)
        return 2
    command, args = argv[1], argv[2:]
    if tools.lookup(command) is not None:
        return run_tool(ctx, command, args)
    if command not in COMMANDS:
        ctx.error('hwsim: unknown command %r; commands: %s; tools: %s\n' % (
            command, ', '.join(COMMANDS), ', '.join(sorted(tools.TOOLS))))
        return 2
    try:
        return COMMANDS[command](ctx, args)
    except SIM_ERRORS as exc:
        ctx.error('hwsim: %s\n' % exc)
        return 1
