"""Stand-ins for the daemons that hold the GPUs on a real node: nvidia-persistenced and nv-hostengine.

On a real HGX node nvidia-persistenced keeps every /dev/nvidiaN (and
/dev/nvidiactl) open for its whole life, and nv-hostengine (DCGM) holds NVML
handles: "nobody holds the GPU" never happens. ``hwsim hold NAME`` opens the
simulated device nodes and sleeps until it is stopped, so that lsof, fuser and
/proc/PID/fd show them held, as on a real node. The device nodes have no
driver behind them, so they are opened with O_PATH (a reference to the node
that does not call a driver's open); readlink of /proc/PID/fd/N still gives
/dev/nvidiaN.

Each run is one *instance* of the daemon: ``hold`` writes a new random id to
``<root>/run/hwsim/<NAME>.instance`` when it starts and removes the file when
it stops. The lab's dcgm-exporter stand-in (lab/mirror) reads nv-hostengine's
at its own start and freezes its values once the file changes or is gone, as a
real exporter stays connected to the host engine that ran when it started.

nvidia-persistenced takes its real options (NVIDIA/nvidia-persistenced option-table.h,
options.c @410f354): ``--persistence-mode`` / ``--no-persistence-mode`` (persistence
mode on or off for every device at its start; on by default, the last one given wins),
``--verbose``/``-V``, ``--user``/``-u NAME`` and ``--group``/``-g NAME`` (accepted,
ignored). Ubuntu's packaged unit starts it with ``--user nvidia-persistenced
--no-persistence-mode --verbose`` (lab/hwsim/install.yml, hwsim_persistenced_ubuntu).
While it runs, ``<root>/run/hwsim/nvidia-persistenced.persistence-mode`` says
``Enabled`` or ``Disabled``; hwsim's nvidia-smi reports it (driver.persistence_mode).
"""
import os
import signal
import time
import uuid

DAEMONS = ('nvidia-persistenced', 'nv-hostengine')
PERSISTENCED = 'nvidia-persistenced'
# nvidia-persistenced's options that take a value, and its flags (option-table.h); the others are refused.
PERSISTENCED_VALUE_OPTIONS = ('--user', '-u', '--group', '-g')
PERSISTENCED_FLAGS = {'--persistence-mode': 'Enabled', '--no-persistence-mode': 'Disabled', '--verbose': None, '-V': None}


def device_paths(root='/'):
    """/dev/nvidia<N> and /dev/nvidiactl under ``root``, sorted."""
    directory = os.path.join(root, 'dev')
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    wanted = [name for name in names if name == 'nvidiactl' or (name.startswith('nvidia') and name[6:].isdigit())]
    return [os.path.join(directory, name) for name in sorted(wanted)]


def hold(paths):
    """Open each path with O_PATH; returns the descriptors (paths that vanished are skipped)."""
    flags = getattr(os, 'O_PATH', os.O_RDONLY)
    held = []
    for path in paths:
        try:
            held.append(os.open(path, flags))
        except OSError:
            continue
    return held


def instance_path(root, name):
    """Where daemon ``name`` keeps the id of its running instance: ``<root>/run/hwsim/<name>.instance``."""
    return os.path.join(root, 'run', 'hwsim', '%s.instance' % name)


def write_instance(root, name):
    """A new instance id for daemon ``name``, written atomically; returns it."""
    path = instance_path(root, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    ident = str(uuid.uuid4())
    tmp = '%s.%d.tmp' % (path, os.getpid())
    with open(tmp, 'w', encoding='utf-8') as handle:
        handle.write(ident + '\n')
    os.replace(tmp, path)
    return ident


def remove_instance(root, name, ident):
    """Remove the instance file when it still names ``ident`` (a newer instance keeps its own)."""
    path = instance_path(root, name)
    try:
        with open(path, encoding='utf-8') as handle:
            if handle.read().strip() != ident:
                return
        os.unlink(path)
    except OSError:
        pass


def mode_path(root, name):
    """Where daemon ``name`` says the persistence mode it set at its start (nvidia-persistenced only)."""
    return os.path.join(root, 'run', 'hwsim', '%s.persistence-mode' % name)


def parse_hold_args(args):
    """(name, root or None, persistence mode or None) of ``hold``'s arguments, or None when they are not valid."""
    if not args or args[0] not in DAEMONS:
        return None
    name, rest, root, mode = args[0], list(args[1:]), None, None
    if name == PERSISTENCED:
        mode = 'Enabled'  # the daemon's default (options.c: persistence_mode = NV_PERSISTENCE_MODE_ENABLED)
    while rest:
        arg = rest.pop(0)
        if arg == '--root' and rest:
            root = rest.pop(0)
        elif name == PERSISTENCED and arg in PERSISTENCED_VALUE_OPTIONS and rest:
            rest.pop(0)
        elif name == PERSISTENCED and arg in PERSISTENCED_FLAGS:
            mode = PERSISTENCED_FLAGS[arg] or mode
        else:
            return None
    return name, root, mode


def _write_mode(root, name, mode):
    path = mode_path(root, name)
    tmp = '%s.%d.tmp' % (path, os.getpid())
    with open(tmp, 'w', encoding='utf-8') as handle:
        handle.write(mode + '\n')
    os.replace(tmp, path)


def _remove_mode(root, name, ident):
    """Remove the mode file unless a newer instance runs (its instance file names another id)."""
    try:
        with open(instance_path(root, name), encoding='utf-8') as handle:
            if handle.read().strip() != ident:
                return
    except OSError:
        pass
    try:
        os.unlink(mode_path(root, name))
    except OSError:
        pass


def _stop(signum, frame):
    raise SystemExit(0)


def cmd_hold(ctx, args, sleep=time.sleep, forever=True):
    """``hwsim hold NAME [--root DIR] [nvidia-persistenced's options]``: hold the GPUs as daemon NAME until
    SIGTERM; the instance file (module docstring) lives under DIR, else under $HWSIM_ROOT (``/`` in the lab)."""
    parsed = parse_hold_args(args)
    if parsed is None:
        ctx.error('usage: hwsim hold {%s} [--root DIR] (nvidia-persistenced also: [--persistence-mode|'
                  '--no-persistence-mode] [--verbose] [--user NAME] [--group NAME])\n' % '|'.join(DAEMONS))
        return 2
    name, root, mode = parsed
    signal.signal(signal.SIGTERM, _stop)
    held = hold(device_paths(root or '/'))
    instance_root = root or getattr(ctx, 'root', '/')
    try:
        if mode:  # before the instance file: a running instance always has its mode
            os.makedirs(os.path.dirname(mode_path(instance_root, name)), exist_ok=True)
            _write_mode(instance_root, name, mode)
        ident = write_instance(instance_root, name)
    except OSError as exc:
        for descriptor in held:
            os.close(descriptor)
        ctx.error('hwsim: hold: %s\n' % exc)
        return 1
    try:
        ctx.write('%s: holding %d device files\n' % (name, len(held)))
        flush = getattr(getattr(ctx, 'out', None), 'flush', None)
        if flush:  # a pipe is block-buffered: whoever waits for this line must get it now, not at exit
            flush()
        while forever:
            sleep(3600)
    finally:
        if mode:
            _remove_mode(instance_root, name, ident)
        remove_instance(instance_root, name, ident)
        for descriptor in held:
            os.close(descriptor)
    return 0
