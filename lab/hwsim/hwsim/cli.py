"""Entry point: busybox-style dispatch on argv[0], and the ``hwsim`` control command.

    <tool> ARGS                      run a stand-in (argv[0] is a link named after it)
    hwsim <tool> ARGS                the same, without a link
    hwsim fault [HOST] KIND ARGS     inject a fault on this host, or on another lab host
                                     (the state directory is shared by the lab); qos-reset and pfc-off are done at
                                     once and not kept (hwsim/roce.py)
    hwsim clear [HOST] [KIND [TARGET]]
                                     remove faults (all, of a kind, of a kind on one target); the faults that
                                     changed the host (sm-stop, sm-rogue, partition-file-broken, ipoib-mtu:
                                     hwsim/smfaults.py) are undone, on the host they were injected on
    hwsim show                       print this host's state as JSON
    hwsim tools                      list the tool names (the lab links each to bin/hwsim)
    hwsim build-fabric [--descriptions M] [--switch-names M] [--scalable-units N] [--subnet-per-rail] OUT HOST=PROFILE ...
                                     write fabric.yml for these hosts (PROFILE may be "none")
    hwsim devices [--root DIR]       create this host's NVIDIA device nodes (GPUs, NVSwitches) under DIR/dev
                                     (default $HWSIM_ROOT/dev, /dev), and its PCI functions as sysfs/proc trees
                                     under DIR/run/hwsim/sys and DIR/run/hwsim/proc (hwsim/sysfs.py), with each HCA
                                     port's state files (in an ibsim lab as the subnet manager left it: smstate.py)
    hwsim hold NAME [--root DIR]     hold DIR/dev/nvidia* open as daemon NAME (nvidia-persistenced, nv-hostengine)
    hwsim boot                       what a boot does: boot id (kept when there is one), pending HCA firmware, modules
    hwsim reboot                     the lab's reboot: unload every module, new boot id, boot, restart the enabled
                                     NVIDIA services (mlx5_core's start resets the RoCE QoS: hwsim/roce.py)
    hwsim boot-id                    print the boot id (/run/hwsim/boot_id)
    hwsim rails-fresh                the rail netdevs as a fresh node has them: no address, MTU 2044 (IPoIB), 1500 (RoCE)
    hwsim ibsim-net [SUBNET]         print the ibsim net file of a subnet (default: the first) (hwsim/ibsim.py)
    hwsim ibsim-env [HCA]            print the umad2sim client variables of this host's HCA (default: its first)
    hwsim ibsim-files                JSON {path: text}: this host's /etc/hwsim/ibsim.env and ibsim-<port guid>.env
    hwsim ibsim-exec TOOL ARGS       run the real /usr/sbin/TOOL under umad2sim, attached to the HCA -C names
    hwsim ibsim-serve SUBNET         become the subnet's ibsim (net file, command FIFO, UDP port from fabric.yml)
    hwsim ibsim-cmd SUBNET LINE      write one command to a running ibsim's console (sim_cmd.c)
"""
import json
import os
import stat
import sys

from hwsim import daemons, driver, faults as fault_kinds, fabric as fabrics, ibsim, model as models
from hwsim import profile as profiles, rails, roce, smfaults, sysfs, tools
from hwsim.model import Context, SimError

USAGE = __doc__.split('\n', 2)[2]
SIM_ERRORS = (SimError, fabrics.FabricError, profiles.ProfileError, ibsim.IbsimError, smfaults.ActionError)
# Faults ibsim carries out (its console, hwsim/ibsim.py), not a host's state file: kind -> (arguments, usage).
IBSIM_FAULTS = {'switch-link-errors': 'SWITCH PORT [COUNT]'}


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


def _ibsim_fault(ctx, args):
    """``hwsim fault switch-link-errors SWITCH PORT [COUNT]``: ibsim raises the switch port's SymbolErrorCounter."""
    if not 3 <= len(args) <= 4 or not all(item.isdigit() for item in args[2:]):
        ctx.error('usage: hwsim fault %s %s\n' % (args[0], IBSIM_FAULTS[args[0]]))
        return 2
    counts = [int(item) for item in args[3:]]
    subnet, line = ibsim.switch_port_errors_command(ctx.fabric, args[1], int(args[2]), *counts)
    ibsim.send_command(ctx.state_dir, subnet, line)
    return 0


def _action_fault(ctx, local, fault):
    """A fault that changes the host now (hwsim/smfaults.py): on this host only, once until cleared; what undoes it
    is kept with it in the state file."""
    host = fault['args'].get('host', smfaults.THIS_HOST)
    if host != smfaults.THIS_HOST:
        ctx.host = host
    smfaults.check_local(fault['kind'], ctx.host, local)
    if 'host' in fault['args']:
        fault = dict(fault, args=dict(fault['args'], host=ctx.host))
    data = ctx.load_state()
    if any(old['kind'] == fault['kind'] and fault_kinds.target(old) == fault_kinds.target(fault) for old in data['faults']):
        ctx.error('hwsim: fault %s %s is injected already: hwsim clear %s first\n' % (
            fault['kind'], fault_kinds.target(fault), fault['kind']))
        return 2
    fault = smfaults.apply(ctx, fault)
    data['faults'] = fault_kinds.add(data['faults'], fault)
    ctx.save_state(data)
    return 0


def cmd_fault(ctx, args):
    local = ctx.host
    args = _retarget(ctx, args)
    if args and args[0] in IBSIM_FAULTS:
        return _ibsim_fault(ctx, args)
    if not args:
        ctx.error('usage: hwsim fault KIND ARGS; allowed kinds: %s\n' % fault_kinds.allowed_text())
        return 2
    try:
        fault = fault_kinds.parse(args[0], args[1:], _hca_names(ctx))
    except fault_kinds.FaultError as exc:
        ctx.error('hwsim: %s\n' % exc)
        return 2
    if fault['kind'] in smfaults.KINDS:
        return _action_fault(ctx, local, fault)
    if fault['kind'] in roce.KINDS:
        try:
            roce.inject(ctx, local, fault)
        except roce.RoceError as exc:
            ctx.error('hwsim: %s\n' % exc)
            return exc.status
        return 0
    data = ctx.load_state()
    data['faults'] = fault_kinds.add(data['faults'], fault)
    ctx.save_state(data)
    return 0


def cmd_clear(ctx, args):
    local = ctx.host
    args = _retarget(ctx, args)
    if len(args) > 2:
        ctx.error('usage: hwsim clear [KIND [TARGET]]\n')
        return 2
    data = ctx.load_state()
    try:
        kept = fault_kinds.remove(data['faults'], args[0] if args else None, args[1] if len(args) > 1 else None)
    except fault_kinds.FaultError as exc:
        ctx.error('hwsim: %s\n' % exc)
        return 2
    undone = [fault for fault in data['faults'] if fault not in kept and fault['kind'] in smfaults.KINDS]
    if undone and ctx.host != local:
        ctx.error('hwsim: %s changed %s itself: run hwsim clear on %s\n' % (
            ', '.join(fault['kind'] for fault in undone), ctx.host, ctx.host))
        return 2
    status = 0
    for fault in undone:
        try:
            ctx.write(''.join(smfaults.clear(ctx, fault)))
        except smfaults.ActionError as exc:
            ctx.error('hwsim: %s\n' % exc)
            kept.append(fault)   # still in place: kept, so that a later clear can undo it
            status = 1
    data['faults'] = kept
    if data.get('firmware_flash') and (not args or args[0] == 'firmware'):
        data['firmware_flash'] = _unflashed(ctx, data['firmware_flash'], args[1] if len(args) > 1 else None)
    ctx.save_state(data)
    return status


def _unflashed(ctx, pending, target):
    """Pending mlxfwmanager flashes left after ``hwsim clear [firmware [HCA]]``: none, or those of other adapters."""
    if target is None or target == '*':
        return {}
    try:
        hcas = ctx.host_model().hcas
    except SIM_ERRORS:
        hcas = []
    adapters = dict((hca['name'], models.adapter_of(hca)) for hca in hcas)
    return dict((name, version) for name, version in pending.items()
                if name != target and (target not in adapters or adapters.get(name) != adapters[target]))


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
                      ' [--scalable-units N] [--subnet-per-rail] [--ipv4-network OLD=NEW ...] [--sm-hosts H1,H2]'
                      ' [--ibsim-host HOST] [--ibsim-port PORT] OUT HOST=PROFILE ...\n')
BUILD_FABRIC_OPTIONS = {'--descriptions': ('descriptions', str), '--switch-names': ('switch_names', str),
                        '--scalable-units': ('scalable_units', int), '--ibsim-host': ('ibsim_host', str),
                        '--ibsim-port': ('ibsim_port', int),
                        '--sm-hosts': ('sm_hosts', lambda text: [item for item in text.split(',') if item])}


def cmd_build_fabric(ctx, args):
    options, rest, args = {}, [], list(args)
    while args:
        item = args.pop(0)
        if item == '--subnet-per-rail':
            options['subnet_per_rail'] = True
        elif item.startswith('--ipv4-network=') or (item == '--ipv4-network' and args):
            pair = item.split('=', 1)[1] if '=' in item else args.pop(0)
            old, sep, new = pair.partition('=')
            if not sep:
                ctx.error(BUILD_FABRIC_USAGE)
                return 2
            options.setdefault('ipv4_networks', {})[old] = new
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
# nvidia.ko registers "nvidia-nvswitch" with a dynamic major too (nvidia-modprobe reads it from /proc/devices); the
# lab takes the next one down from nvidia-nvlink's 510 (dmesg stand-in), as the kernel hands dynamic majors out
# from 511 downwards. Control node minor 255, switch N minor N, as nvidia-modprobe makes them.
NVSWITCH_MAJOR = 509
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


def wanted_nvswitch_devices(model):
    """{name under /dev: (major, minor)} for the NVSwitches of the baseboard (profile ``gpus.nvswitches``); none on
    NVLink 5 (HGX B200/B300), whose switches are reached through ConnectX bridge functions, not nvidia-nvswitch."""
    gpus = (model.profile or {}).get('gpus') or {}
    count = gpus.get('nvswitches') or 0
    if not count or ((gpus.get('nvlink') or {}).get('generation') or 0) >= 5:
        return {}
    nodes = dict(('nvidia-nvswitch%d' % number, (NVSWITCH_MAJOR, number)) for number in range(count))
    nodes['nvidia-nvswitchctl'] = (NVSWITCH_MAJOR, CTL_MINOR)
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
    """/dev/nvidiaN of the profile's GPUs that the driver no longer sees (gpu-missing), and NVSwitch nodes (major
    NVSWITCH_MAJOR) a profile without (as many) NVSwitches does not have."""
    stale = []
    if model.profile and model.profile.get('gpus'):
        for device in model.profile['gpus']['devices']:
            name = 'nvidia%d' % device['index']
            path = os.path.join(directory, name)
            if name not in wanted and os.path.lexists(path) and _node_matches(path, NVIDIA_MAJOR, device['index']):
                stale.append(path)
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        names = []
    for name in names:
        path = os.path.join(directory, name)
        if name.startswith('nvidia-nvswitch') and name not in wanted and not os.path.isdir(path):
            info = os.lstat(path)
            if stat.S_ISCHR(info.st_mode) and os.major(info.st_rdev) == NVSWITCH_MAJOR:
                stale.append(path)
    return stale


def cmd_devices(ctx, args):
    if args not in ([], ) and not (len(args) == 2 and args[0] == '--root'):
        ctx.error('usage: hwsim devices [--root DIR]\n')
        return 2
    root = args[1] if args else ctx.root
    directory = os.path.join(root, 'dev')
    model = ctx.host_model()
    wanted = wanted_devices(model)
    wanted.update(wanted_nvswitch_devices(model))
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
        sysfs.write_tree(root, model)
    except OSError as exc:
        ctx.error('hwsim: devices: %s\n' % exc)
        return 1
    return 0


def _boot(ctx, new_id):
    """Boot steps shared by ``hwsim boot`` and ``hwsim reboot``; returns the exit status."""
    from hwsim.tools import kmod, mlxfw  # pylint: disable=import-outside-toplevel
    try:
        ctx.write('boot id %s\n' % driver.boot_id(ctx.root, new=new_id))
        try:
            ctx.write(''.join(mlxfw.apply_pending(ctx)))
        except SIM_ERRORS:
            pass  # a host hwsim has no hardware for: nothing was flashed
        has_gpus, has_hcas = kmod.hardware(ctx)
        started = not driver.is_loaded(ctx.root, roce.DRIVER)
        lines, errors = driver.boot_modules(ctx.root, ctx.kernel, has_gpus, has_hcas)
        try:
            model = ctx.host_model()
            sysfs.write_tree(ctx.root, model)  # the proc tree follows the nvidia module just loaded
            if started and driver.is_loaded(ctx.root, roce.DRIVER):
                roce.driver_start(ctx, model)  # mlx5 comes up with its own QoS defaults, nothing kept
        except SIM_ERRORS:
            pass
    except OSError as exc:
        ctx.error('hwsim: boot: %s\n' % exc)
        return 1
    ctx.write(''.join(lines))
    ctx.error(''.join(errors))
    return 0


def cmd_boot(ctx, args):
    if args:
        ctx.error('usage: hwsim boot\n')
        return 2
    return _boot(ctx, new_id=False)


def cmd_reboot(ctx, args, run=None):
    """The lab's reboot_command: modules unloaded, a new boot id, what a boot loads, the enabled NVIDIA services
    restarted (they would start again on a real boot). Exit status 0 unless the simulator itself fails."""
    if args:
        ctx.error('usage: hwsim reboot\n')
        return 2
    try:
        unloaded = driver.unload_all(ctx.root)
    except OSError as exc:
        ctx.error('hwsim: reboot: %s\n' % exc)
        return 1
    ctx.write(''.join('unloaded %s\n' % name for name in reversed(unloaded)))
    status = _boot(ctx, new_id=True)
    if status:
        return status
    systemctl = driver.systemctl_command(ctx.environ, ctx.root)
    lines, errors = driver.restart_services(systemctl, **({'run': run} if run else {}))
    ctx.write(''.join(lines))
    ctx.error(''.join(errors))
    return 0


def cmd_rails_fresh(ctx, args, run=None):
    if args:
        ctx.error('usage: hwsim rails-fresh\n')
        return 2
    try:
        model = ctx.host_model()
    except SIM_ERRORS:
        return 0  # a host without simulated hardware has no rails
    lines, errors = rails.fresh(model, ctx.root, **({'run': run} if run else {}))
    ctx.write(''.join(lines))
    ctx.error(''.join(errors))
    return 1 if errors else 0


def cmd_boot_id(ctx, args):
    if args:
        ctx.error('usage: hwsim boot-id\n')
        return 2
    try:
        ctx.write(driver.boot_id(ctx.root) + '\n')
    except OSError as exc:
        ctx.error('hwsim: boot-id: %s\n' % exc)
        return 1
    return 0


def cmd_ibsim_net(ctx, args):
    texts = ibsim.ibsim_net(ctx.fabric)
    if len(args) > 1 or not texts or (args and args[0] not in texts):
        ctx.error('usage: hwsim ibsim-net [SUBNET]; subnets: %s\n' % (', '.join(texts) or 'none'))
        return 2
    ctx.write(texts[args[0] if args else next(iter(texts))])
    return 0


def cmd_ibsim_env(ctx, args):
    if len(args) > 1:
        ctx.error('usage: hwsim ibsim-env [HCA]\n')
        return 2
    ctx.write(ibsim.env_text(ibsim.environment(ctx.fabric, ctx.host, args[0] if args else None)))
    return 0


def cmd_ibsim_files(ctx, args):
    """JSON {path: text} of this host's umad2sim client environment files (install.yml writes them)."""
    if args:
        ctx.error('usage: hwsim ibsim-files\n')
        return 2
    ctx.write(json.dumps(ibsim.host_files(ctx.fabric, ctx.host), indent=2, sort_keys=True) + '\n')
    return 0


def cmd_ibsim_exec(ctx, args):
    if not args or args[0] not in ibsim.EXEC_TOOLS:
        ctx.error('usage: hwsim ibsim-exec TOOL ARGS; tools: %s\n' % ', '.join(ibsim.EXEC_TOOLS))
        return 2
    ibsim.exec_tool(ctx.fabric, ctx.host, args[0], args[1:], ctx.environ,
                    sbin=ctx.environ.get('HWSIM_IBSIM_SBIN') or ibsim.SBIN)
    return 127  # not reached: exec_tool replaces the process


def cmd_ibsim_serve(ctx, args):
    if len(args) != 1:
        ctx.error('usage: hwsim ibsim-serve SUBNET\n')
        return 2
    ibsim.serve(ctx.fabric, args[0], ctx.state_dir, ctx.environ.get('HWSIM_IBSIM_RUN_DIR') or '/run/hwsim/ibsim',
                ctx.environ.get('HWSIM_IBSIM') or 'ibsim')
    return 127  # not reached


def cmd_ibsim_cmd(ctx, args):
    if len(args) != 2:
        ctx.error('usage: hwsim ibsim-cmd SUBNET LINE\n')
        return 2
    ibsim.send_command(ctx.state_dir, args[0], args[1])
    return 0


COMMANDS = {
    'ibsim-net': cmd_ibsim_net,
    'ibsim-env': cmd_ibsim_env,
    'ibsim-files': cmd_ibsim_files,
    'ibsim-exec': cmd_ibsim_exec,
    'ibsim-serve': cmd_ibsim_serve,
    'ibsim-cmd': cmd_ibsim_cmd,
    'fault': cmd_fault,
    'clear': cmd_clear,
    'show': cmd_show,
    'tools': cmd_tools,
    'build-fabric': cmd_build_fabric,
    'devices': cmd_devices,
    'hold': daemons.cmd_hold,
    'boot': cmd_boot,
    'reboot': cmd_reboot,
    'boot-id': cmd_boot_id,
    'rails-fresh': cmd_rails_fresh,
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
