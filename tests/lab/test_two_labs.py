"""Two labs side by side (make lab-check): each has its own inventory, hosts and fact cache, and taking one down
leaves the other's inventory and hosts alone. Brings up two one-compute labs without simulated hardware (~1 min).

One of them then serves the README's real-cluster path, run as a user would from the README's own text: a fresh
virtual environment from requirements.txt, the collection built and installed into a new HOME, the example
inventory copied out of the installed collection, and playbooks run by FQCN from a directory outside the clone.
"""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAB = [sys.executable, os.path.join(REPO, 'lab', 'lab.py')]
VENV_BIN = os.path.dirname(sys.executable)
NAMES = ('pairone', 'pairtwo')


def _lab(*args):
    return subprocess.run(LAB + list(args), cwd=REPO, check=True, text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT).stdout


def _inventory(name):
    return os.path.join(REPO, 'inventories', 'lab-%s' % name)


def _addresses(name):
    with open(os.path.join(_inventory(name), 'hosts.yml')) as handle:
        hosts = yaml.safe_load(handle)['all']['hosts']
    return dict((host, values['ansible_host']) for host, values in hosts.items())


def _ping(name):
    """ctl01's own address, as the lab's inventory reaches it with the lab's fact cache."""
    env = dict(os.environ, PATH=VENV_BIN + os.pathsep + os.environ['PATH'], ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'),
               ANSIBLE_CACHE_PLUGIN_CONNECTION=os.path.join(REPO, '.cache', 'facts-%s' % name),
               ANSIBLE_LOAD_CALLBACK_PLUGINS='1', ANSIBLE_STDOUT_CALLBACK='ansible.builtin.json')
    out = subprocess.run(['ansible', '-i', _inventory(name), 'ctl01', '-m', 'ansible.builtin.setup', '-a',
                          'gather_subset=!all,!min,network'], cwd=REPO, env=env, check=True, text=True,
                         stdout=subprocess.PIPE).stdout
    facts = json.loads(out)['plays'][0]['tasks'][0]['hosts']['ctl01']['ansible_facts']
    return facts['ansible_all_ipv4_addresses']


@pytest.fixture(scope='module')
def two_labs():
    if os.geteuid() != 0 or subprocess.run(['podman', '--version'], stdout=subprocess.DEVNULL, check=False).returncode != 0:
        pytest.fail('the lab tests need rootful podman (make setup)')
    for name in NAMES:
        _lab('down', '--name', name)
    try:
        for name in NAMES:
            _lab('up', '--name', name, '--compute', '1', '--no-hwsim')
        yield
    finally:
        for name in NAMES:
            _lab('down', '--name', name)


def test_two_labs_side_by_side(two_labs):
    one, two = (_addresses(name) for name in NAMES)
    assert set(one) == set(two) == {'ctl01', 'gpu01'}
    assert one['ctl01'] != two['ctl01']
    # the default lab's inventory is not touched
    assert os.path.islink(os.path.join(_inventory('pairone'), 'group_vars'))
    for name, addresses in zip(NAMES, (one, two)):
        assert addresses['ctl01'] in _ping(name), name
        assert os.path.isfile(os.path.join(REPO, '.cache', 'facts-%s' % name, 's1_ctl01')), name

    _readme_real_cluster_path('pairone')

    _lab('down', '--name', 'pairone')
    assert not os.path.exists(_inventory('pairone')) and not os.path.exists(os.path.join(REPO, '.cache', 'facts-pairone'))
    assert _addresses('pairtwo') == two
    assert two['ctl01'] in _ping('pairtwo')


def _readme_blocks():
    """The two sh blocks after the README's lab-check marker: install, then run."""
    with open(os.path.join(REPO, 'README.md')) as handle:
        text = handle.read()
    after = text[text.index('make lab-check (tests/lab/test_two_labs.py) runs this block'):]
    blocks = re.findall(r'```sh\n(.*?)```', after, re.S)[:2]
    return [[line.split('#')[0].strip() for line in block.splitlines() if line.split('#')[0].strip()] for block in blocks]


def _readme_real_cluster_path(name):
    install, runs = _readme_blocks()
    work = os.path.join(REPO, '.cache', 'readme-%s' % name)
    shutil.rmtree(work, ignore_errors=True)
    home = os.path.join(work, 'home')
    os.makedirs(home)
    # the user's shell: a new HOME, the clone as the working directory for the install block, nothing of ours on PATH
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith('ANSIBLE_') and k != 'VIRTUAL_ENV')
    env.update(HOME=home, PATH='/usr/local/bin:/usr/bin:/bin')
    script = 'set -eu\n' + '\n'.join(line.replace('/tmp', work) for line in install) + '\n'
    subprocess.run(['bash', '-c', script], cwd=REPO, env=env, check=True)
    installed = os.path.join(home, '.ansible', 'collections', 'ansible_collections', 'aicluster', 'infra')
    assert os.path.isfile(os.path.join(installed, 'playbooks', 'site.yml'))
    assert not os.path.exists(os.path.join(installed, 'lab')) and not os.path.exists(os.path.join(installed, 'molecule'))

    # "edit mycluster/hosts.yml and mycluster/group_vars/": the lab's hosts and its settings
    cluster = os.path.join(work, 'run')
    os.makedirs(cluster)
    copy = [line for line in runs if line.startswith('cp -r ')][0]
    subprocess.run(['bash', '-c', copy], cwd=cluster, env=env, check=True)
    shutil.copy(os.path.join(_inventory(name), 'hosts.yml'), os.path.join(cluster, 'mycluster', 'hosts.yml'))
    with open(os.path.join(REPO, 'inventories', 'lab', 'group_vars', 'all.yml')) as handle:
        lab_vars = yaml.safe_load(handle)
    # the example's debug partition names gpu[001-004]; this lab has gpu01
    lab_vars['slurm_partitions'] = [{'name': 'gpu', 'groups': ['gpu_nodes'], 'default': True}]
    with open(os.path.join(cluster, 'mycluster', 'group_vars', 'all', 'zz-lab.yml'), 'w') as handle:
        yaml.safe_dump(lab_vars, handle)
    env.update(PATH=os.path.join(home, 'aicluster', 'bin') + os.pathsep + env['PATH'],
               ANSIBLE_CONFIG=os.path.join(cluster, 'mycluster', 'ansible.cfg'))
    # the stages that run on a lab without simulated GPUs: preflight alone, and the drift report of every stage
    for line in runs:
        if 'aicluster.infra.preflight' in line or 'aicluster.infra.drift' in line:
            result = subprocess.run(['bash', '-c', line], cwd=cluster, env=env, text=True, check=False,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            assert result.returncode == 0, '%s\n%s' % (line, result.stdout[-3000:])
            assert 'aicluster.infra' in result.stdout
