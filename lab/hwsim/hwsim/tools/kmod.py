"""lsmod, modprobe and modinfo stand-ins over the driver model (hwsim/driver.py).

lsmod prints kmod's layout (``%-19s %8ld  %d`` and the users, newest module
first) for the simulated modules that are loaded. modprobe loads and removes
the simulated modules (driver.MODULES: the NVIDIA ones DKMS builds, the RDMA
ones) with their dependencies and kmod's messages; a name hwsim does not
simulate goes to the real modprobe (/usr/sbin/modprobe or /sbin/modprobe),
which in a container usually fails as it would. modinfo answers what modprobe would load for the running kernel
(DOCA's RDMA modules carry their OFED version, the inbox ones none; NVIDIA's the DKMS version): ``modinfo -F version
ib_core`` tells a node that will boot DOCA's ib_core from one that runs it now (/run/hwsim/module/ib_core/version).
Loading mlx5_core again after ``modprobe -r`` is a driver restart: the RoCE QoS goes back to the driver's defaults
(hwsim/roce.py).
"""
import os
import subprocess

from hwsim import driver, fabric as fabrics, profile as profiles, roce
from hwsim.model import SimError

REAL_MODPROBE = ('/usr/sbin/modprobe', '/sbin/modprobe')
REAL_MODINFO = ('/usr/sbin/modinfo', '/sbin/modinfo')
FLAGS = {'-r': 'remove', '--remove': 'remove', '-q': 'quiet', '--quiet': 'quiet', '-v': 'verbose', '--verbose': 'verbose',
         '-n': 'dry_run', '--dry-run': 'dry_run', '--show': 'dry_run', '-a': 'all', '--all': 'all',
         '-b': None, '--use-blacklist': None, '-s': None, '--syslog': None, '--first-time': 'first_time'}
_exec = os.execv


def hardware(ctx):
    """(has GPUs, has HCAs) of this host; a host hwsim does not know has neither."""
    try:
        model = ctx.host_model()
    except (SimError, fabrics.FabricError, profiles.ProfileError):
        return False, False
    profile = model.profile or {}
    return bool(profile.get('gpus')), bool(profile.get('hcas'))


def run_lsmod(ctx, args):
    """lsmod: the loaded simulated modules, newest first."""
    if args:
        ctx.error('Usage: lsmod\n')
        return 1
    present = driver.loaded(ctx.root)
    lines = ['Module                  Size  Used by\n']
    for name, _version in reversed(present):
        users = driver.holders(ctx.root, name, present)
        line = '%-19s %8d  %d' % (name, driver.module_size(ctx.root, ctx.kernel, name), driver.refcount(ctx.root, name, present))
        lines.append(line + (' ' + ','.join(users) if users else '') + '\n')
    ctx.write(''.join(lines))
    return 0


def _parse(args):
    """(flags, names) or None for an option the stand-in leaves to the real modprobe."""
    flags, names = set(), []
    for arg in args:
        if arg.startswith('--') or (arg.startswith('-') and len(arg) == 2):
            if arg not in FLAGS:
                return None
            if FLAGS[arg]:
                flags.add(FLAGS[arg])
        elif arg.startswith('-') and len(arg) > 2:
            for char in arg[1:]:
                if '-' + char not in FLAGS:
                    return None
                if FLAGS['-' + char]:
                    flags.add(FLAGS['-' + char])
        else:
            names.append(arg)
    return flags, names


def _real_modprobe(paths=None):
    """The real kmod tool (modprobe, or modinfo with ``paths`` REAL_MODINFO) that is not a link to hwsim, or None."""
    own = os.path.realpath(os.path.join(os.path.dirname(__file__), '..', '..', 'bin', 'hwsim'))
    for path in REAL_MODPROBE if paths is None else paths:
        if os.path.exists(path) and os.path.realpath(path) != own:
            return path
    return None


def _pass_through(ctx, args, names):
    """Hand ``args`` to the real modprobe (exec: its output and status are the command's)."""
    real = _real_modprobe()
    if real is None:
        if not names:
            ctx.error('modprobe: ERROR: missing parameters. See -h.\n')
        else:
            ctx.error('modprobe: FATAL: Module %s not found in directory /lib/modules/%s\n' % (names[0], ctx.kernel))
        return 1
    ctx.out.flush()
    ctx.err.flush()
    _exec(real, [real] + list(args))
    return 1  # only when _exec is replaced (tests)


def run_modprobe(ctx, args):
    """modprobe [-r] [-q] [-v] [-n] [-a] NAME... (without -r or -a: NAME [PARAMETERS])."""
    parsed = _parse(args)
    if parsed is None:
        return _pass_through(ctx, args, [])
    flags, names = parsed
    if not names:
        return _pass_through(ctx, args, names)
    if 'remove' not in flags and 'all' not in flags:
        names = names[:1]  # the rest are module parameters
    simulated = [name for name in names if driver.canonical(name) in driver.MODULES]
    if not simulated:
        return _pass_through(ctx, args, names)
    status = 0
    has_gpus, _has_hcas = hardware(ctx)
    for name in names:
        if name not in simulated:
            real = _real_modprobe()
            if real is None:
                if 'quiet' not in flags:
                    ctx.error('modprobe: FATAL: Module %s not found in directory /lib/modules/%s\n' % (name, ctx.kernel))
                status = 1
            else:
                status = subprocess.call([real] + [arg for arg in args if arg.startswith('-')] + [name]) or status
            continue
        status = _one(ctx, driver.canonical(name), name, flags, has_gpus) or status
        if status and 'remove' not in flags and 'all' not in flags:
            break
    return status


def _driver_start(ctx):
    """mlx5_core loaded again (a driver restart): the RoCE QoS back at the driver's defaults (hwsim/roce.py)."""
    try:
        roce.driver_start(ctx)
    except (SimError, fabrics.FabricError, profiles.ProfileError):
        pass  # a host hwsim has no hardware for


def _one(ctx, name, given, flags, has_gpus):
    try:
        if 'remove' in flags:
            if not driver.is_loaded(ctx.root, name):
                # modprobe(8): removing a module that is not there succeeds and does nothing, unless --first-time
                if 'first_time' in flags:
                    raise driver.ModuleError('modprobe: FATAL: Module %s is not in kernel.\n' % given)
                return 0
            if 'dry_run' in flags:
                removed = [name] if driver.is_loaded(ctx.root, name) else []
            else:
                removed = driver.unload(ctx.root, name, given)
            if 'verbose' in flags:
                ctx.write(''.join('rmmod %s\n' % item for item in removed))
            return 0
        if driver.is_loaded(ctx.root, name):
            if 'first_time' in flags:
                raise driver.ModuleError('modprobe: FATAL: Module %s already in kernel.\n' % given)
            return 0
        if 'dry_run' in flags:
            newly = list(driver.plan(ctx.root, ctx.kernel, name, given))
        else:
            newly = driver.load(ctx.root, ctx.kernel, name, has_gpus, given)
            if roce.DRIVER in newly:
                _driver_start(ctx)
        if 'verbose' in flags:
            ctx.write(''.join('insmod %s \n' % driver.kernel_path(ctx.root, ctx.kernel, driver.MODULES[item]) for item in newly))
        return 0
    except driver.ModuleError as exc:
        if not ('quiet' in flags and 'not found in directory' in str(exc)):
            ctx.error(str(exc))
        return 1
    except OSError as exc:
        ctx.error("modprobe: ERROR: could not insert '%s': %s\n" % (name, exc.strerror or exc))
        return 1


def run_modinfo(ctx, args):
    """modinfo [-F FIELD] [-k KERNEL] NAME: filename, version (DOCA's RDMA modules and NVIDIA's; none for an inbox one)
    and name of what modprobe would load, in kmod's ``%-16s%s`` layout; a name hwsim does not simulate goes to the real
    modinfo. Not built for the kernel: ``modinfo: ERROR: Module NAME not found.``, exit 1."""
    field, kernel, names, position = None, ctx.kernel, [], 0
    while position < len(args):
        arg = args[position]
        if arg in ('-F', '--field', '-k') and position + 1 < len(args):
            position += 1
            if arg == '-k':
                kernel = args[position]
            else:
                field = args[position]
        elif arg.startswith('--field='):
            field = arg.split('=', 1)[1]
        elif arg.startswith('-'):
            names = None
            break
        else:
            names.append(arg)
        position += 1
    if not names or any(driver.canonical(name) not in driver.MODULES for name in names):
        real = _real_modprobe(REAL_MODINFO)
        if real is None:
            ctx.error('modinfo: ERROR: missing module or filename.\n' if not names else
                      'modinfo: ERROR: Module %s not found.\n' % names[0])
            return 1
        ctx.out.flush()
        ctx.err.flush()
        _exec(real, [real] + list(args))
        return 1
    status = 0
    for name in names:
        module = driver.MODULES[driver.canonical(name)]
        if module.family == 'nvidia':
            version = driver.built_version(ctx.root, kernel, module)
            if version is None:
                ctx.error('modinfo: ERROR: Module %s not found.\n' % name)
                status = 1
                continue
        else:
            build = driver.ofed_build(ctx.root, kernel)
            version = driver.ofed_module_version(build) if build else None
        fields = [('filename', driver.kernel_path(ctx.root, kernel, module))]
        fields += [('version', version)] if version else []
        fields.append(('name', module.name))
        if field is None:
            ctx.write(''.join('%-16s%s\n' % (key + ':', value) for key, value in fields))
        else:
            ctx.write(''.join('%s\n' % value for key, value in fields if key == field))
    return status
