"""The lab the lab checks share (make lab-check): ctl01 and three GPU hosts with simulated hardware, the demo lab's
shape, brought up once for the session as `lab.py up --name labcheck` (inventories/lab-labcheck/, its own fact cache
.cache/facts-labcheck) and taken down at the end."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)  # the tests import _labrun

from _labrun import GPU_LAB, REPO  # noqa: E402  pylint: disable=wrong-import-position

LAB = [sys.executable, os.path.join(REPO, 'lab', 'lab.py')]


def need_podman():
    if os.geteuid() != 0 or subprocess.run(['podman', '--version'], stdout=subprocess.DEVNULL, check=False).returncode != 0:
        pytest.fail('the lab tests need rootful podman (make setup)')


@pytest.fixture(scope='session')
def gpu_lab():
    """The lab's name and inventory directory."""
    need_podman()
    subprocess.run(LAB + ['down', '--name', GPU_LAB], cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    try:
        subprocess.run(LAB + ['up', '--name', GPU_LAB, '--compute', '3'], cwd=REPO, check=True, stdout=subprocess.DEVNULL)
        yield GPU_LAB, os.path.join(REPO, 'inventories', 'lab-%s' % GPU_LAB)
    finally:
        subprocess.run(LAB + ['down', '--name', GPU_LAB], cwd=REPO, check=False, stdout=subprocess.DEVNULL)
