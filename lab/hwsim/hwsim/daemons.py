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
"""
import os
import signal
import time
import uuid

DAEMONS = ('nvidia-persistenced', 'nv-hostengine')


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


def _stop(signum, frame):
    raise SystemExit(0)


def cmd_hold(ctx, args, sleep=time.sleep, forever=True):
    """``hwsim hold NAME [--root DIR]``: hold the GPUs as daemon NAME until SIGTERM; the instance file (module
    docstring) lives under DIR, else under $HWSIM_ROOT (``/`` in the lab)."""
    if not args or args[0] not in DAEMONS or len(args) not in (1, 3) or (len(args) == 3 and args[1] != '--root'):
        ctx.error('usage: hwsim hold {%s} [--root DIR]\n' % '|'.join(DAEMONS))
        return 2
    signal.signal(signal.SIGTERM, _stop)
    held = hold(device_paths(args[2] if len(args) == 3 else '/'))
    instance_root = args[2] if len(args) == 3 else getattr(ctx, 'root', '/')
    try:
        ident = write_instance(instance_root, args[0])
    except OSError as exc:
        for descriptor in held:
            os.close(descriptor)
        ctx.error('hwsim: hold: %s\n' % exc)
        return 1
    ctx.write('%s: holding %d device files\n' % (args[0], len(held)))
    try:
        while forever:
            sleep(3600)
    finally:
        remove_instance(instance_root, args[0], ident)
        for descriptor in held:
            os.close(descriptor)
    return 0
