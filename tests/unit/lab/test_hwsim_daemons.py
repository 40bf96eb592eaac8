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
    # SIGTERM ends it at once; the long timeout is for a CI machine whose two cores also run lint and molecule
    # (a 10 s wait ran out there once).
    try:
        status = proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    assert status == 0


def test_hold_usage():
    class Ctx(object):
        said = ''

        def error(self, text):
            self.said += text
    ctx = Ctx()
    assert daemons.cmd_hold(ctx, ['sshd']) == 2 and 'nvidia-persistenced|nv-hostengine' in ctx.said


class _Ctx(object):
    """What cmd_hold uses of a Context."""

    def __init__(self, root):
        self.root = root
        self.said = ''
        self.errors = ''

    def write(self, text):
        self.said += text

    def error(self, text):
        self.errors += text


def test_hold_writes_an_instance_id_while_it_runs_and_removes_it_on_stop(tmp_path):
    """The lab's dcgm-exporter stand-in tells an nv-hostengine restart by this id (lab/hwsim/README.md)."""
    ctx = _Ctx(str(tmp_path))
    path = daemons.instance_path(str(tmp_path), 'nv-hostengine')
    seen = []

    def sleep(seconds):
        with open(path, encoding='utf-8') as handle:
            seen.append(handle.read().strip())
        raise SystemExit(0)  # what SIGTERM does
    with pytest.raises(SystemExit):
        daemons.cmd_hold(ctx, ['nv-hostengine'], sleep=sleep)
    assert len(seen) == 1 and len(seen[0]) == 36
    assert not os.path.exists(path)
    assert ctx.said == 'nv-hostengine: holding 0 device files\n'


def test_each_start_is_a_new_instance_and_an_old_one_leaves_the_new_file(tmp_path):
    root = str(tmp_path)
    first = daemons.write_instance(root, 'nv-hostengine')
    second = daemons.write_instance(root, 'nv-hostengine')
    assert first != second
    daemons.remove_instance(root, 'nv-hostengine', first)
    with open(daemons.instance_path(root, 'nv-hostengine'), encoding='utf-8') as handle:
        assert handle.read().strip() == second
    daemons.remove_instance(root, 'nv-hostengine', second)
    assert not os.path.exists(daemons.instance_path(root, 'nv-hostengine'))


def test_hold_with_root_keeps_the_instance_file_under_it(tmp_path):
    ctx = _Ctx('/nonexistent-hwsim-root')

    def sleep(seconds):
        assert os.path.exists(daemons.instance_path(str(tmp_path), 'nvidia-persistenced'))
        raise SystemExit(0)
    with pytest.raises(SystemExit):
        daemons.cmd_hold(ctx, ['nvidia-persistenced', '--root', str(tmp_path)], sleep=sleep)
