"""lab/hwsim daemons: nvidia-persistenced and nv-hostengine stand-ins hold the simulated GPUs, as on a real node."""
import os
import stat
import subprocess
import sys
import time

import pytest

from _paths import REPO

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))

# pylint: disable=wrong-import-position
from hwsim import daemons  # noqa: E402

ROOT_ONLY = pytest.mark.skipif(not hasattr(os, 'geteuid') or os.geteuid() != 0,
                               reason='mknod of character devices needs CAP_MKNOD (root)')


def _devices(tmp_path, count=2):
    root = tmp_path / 'root'
    (root / 'dev').mkdir(parents=True)
    for index in range(count):
        os.mknod(str(root / 'dev' / ('nvidia%d' % index)), stat.S_IFCHR | 0o666, os.makedev(195, index))
    os.mknod(str(root / 'dev' / 'nvidiactl'), stat.S_IFCHR | 0o666, os.makedev(195, 255))
    (root / 'dev' / 'nvidia-uvm-tools').write_text('not a GPU')
    return root


@ROOT_ONLY
def test_device_nodes_without_a_driver_are_held_with_o_path(tmp_path):
    root = _devices(tmp_path)
    paths = daemons.device_paths(str(root))
    assert [os.path.basename(path) for path in paths] == ['nvidia0', 'nvidia1', 'nvidiactl']
    held = daemons.hold(paths)
    try:
        assert sorted(os.readlink('/proc/self/fd/%d' % fd) for fd in held) == sorted(paths)
    finally:
        for descriptor in held:
            os.close(descriptor)


@ROOT_ONLY
def test_hwsim_hold_runs_until_sigterm_and_shows_in_proc(tmp_path):
    """What the Slurm epilog and gpu.processes see on a real node: a daemon's open /dev/nvidiaN."""
    root = _devices(tmp_path)
    proc = subprocess.Popen([sys.executable, os.path.join(REPO, 'lab', 'hwsim', 'bin', 'hwsim'), 'hold',
                             'nvidia-persistenced', '--root', str(root)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == 'nvidia-persistenced: holding 3 device files\n'
        targets = []
        for dummy in range(50):
            targets = sorted(os.readlink('/proc/%d/fd/%s' % (proc.pid, fd)) for fd in os.listdir('/proc/%d/fd' % proc.pid))
            if str(root / 'dev' / 'nvidia1') in targets:
                break
            time.sleep(0.1)
        assert str(root / 'dev' / 'nvidia0') in targets and str(root / 'dev' / 'nvidiactl') in targets
    finally:
        proc.terminate()
    assert proc.wait(timeout=10) == 0


def test_hold_usage():
    class Ctx(object):
        said = ''

        def error(self, text):
            self.said += text
    ctx = Ctx()
    assert daemons.cmd_hold(ctx, ['sshd']) == 2 and 'nvidia-persistenced|nv-hostengine' in ctx.said
