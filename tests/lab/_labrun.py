"""Running the collection against the lab check lab (conftest.py's gpu_lab), as an operator does: `aicluster run`
with a given virtual environment's Python and the repository's ansible.cfg, each run's output kept."""
import os
import re
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GPU_LAB = 'labcheck'
INVENTORY = os.path.join(REPO, 'inventories', 'lab-%s' % GPU_LAB)
FACTS = os.path.join(REPO, '.cache', 'facts-%s' % GPU_LAB)


def lab_env(python):
    """The environment of a run: that Python's venv first on PATH, nothing of the caller's Ansible settings."""
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith('ANSIBLE_') and k != 'VIRTUAL_ENV')
    env.update(PATH=os.path.dirname(python) + os.pathsep + '/usr/local/bin:/usr/bin:/bin',
               ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.collections'),
               ANSIBLE_CACHE_PLUGIN_CONNECTION=FACTS, ANSIBLE_NOCOLOR='1')
    return env


def aicluster(python, work, *args):
    """`aicluster run ARGS -i <the lab>` from ``work`` (its artifacts land there); the output is appended to
    work/<stage>.txt."""
    os.makedirs(work, exist_ok=True)
    run = subprocess.run([python, os.path.join(REPO, 'bin', 'aicluster'), 'run'] + list(args)
                         + ['-i', INVENTORY, '--runner-dir', os.path.join(work, 'runner')],
                         cwd=work, env=dict(lab_env(python), PWD=work), text=True, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, check=False)
    with open(os.path.join(work, '%s.txt' % args[0]), 'a', encoding='utf-8') as handle:
        handle.write(run.stdout)
    return run


def recap_changed(output):
    """Host -> changed count from aicluster run's recap."""
    recap = output[output.rindex('\nRECAP\n'):]
    return dict((host, int(changed)) for host, changed in re.findall(r'^  (\S+) +ok=\d+ changed=(\d+) ', recap, re.M))


def on_controller(python, command):
    """A shell command on the lab's ctl01 (ansible ad hoc, as root); its output."""
    run = subprocess.run([os.path.join(os.path.dirname(python), 'ansible'), '-i', INVENTORY, 'ctl01', '-b', '-m',
                          'ansible.builtin.shell', '-a', command], cwd=REPO, env=lab_env(python), text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
    assert run.returncode == 0, run.stdout
    return run.stdout
