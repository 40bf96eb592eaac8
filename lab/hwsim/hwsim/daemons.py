"""Stand-ins for the daemons that hold the GPUs on a real node: nvidia-persistenced and nv-hostengine.

On a real HGX node nvidia-persistenced keeps every /dev/nvidiaN (and
/dev/nvidiactl) open for its whole life, and nv-hostengine (DCGM) holds NVML
handles: "nobody holds the GPU" never happens. ``hwsim hold NAME`` opens the
simulated device nodes and sleeps until it is stopped, so that lsof, fuser and
/proc/PID/fd show them held, as on a real node. The device nodes have no
driver behind them, so they are opened with O_PATH (a reference to the node
that does not call a driver's open); readlink of /proc/PID/fd/N still gives
/dev/nvidiaN.
"""
import os
import signal
import time

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


def _stop(signum, frame):
    raise SystemExit(0)


def cmd_hold(ctx, args, sleep=time.sleep, forever=True):
    """``hwsim hold NAME [--root DIR]``: hold the GPUs as daemon NAME until SIGTERM."""
    if not args or args[0] not in DAEMONS or len(args) not in (1, 3) or (len(args) == 3 and args[1] != '--root'):
        ctx.error('usage: hwsim hold {%s} [--root DIR]\n' % '|'.join(DAEMONS))
        return 2
    signal.signal(signal.SIGTERM, _stop)
    held = hold(device_paths(args[2] if len(args) == 3 else '/'))
    ctx.write('%s: holding %d device files\n' % (args[0], len(held)))
    try:
        while forever:
            sleep(3600)
    finally:
        for descriptor in held:
            os.close(descriptor)
    return 0
