"""The README's real-cluster path, run as a user would from the README's own text (make lab-check): a fresh virtual
environment from requirements.txt, the collection built and installed into a new HOME, `aicluster` linked into the
virtual environment, the example inventory copied out of the installed collection, and every line of the run block
run verbatim from a directory outside the clone, against the lab check lab (ctl01 and three GPU hosts with simulated
hardware; conftest.py): bring-up and verification (`aicluster.infra.site`: PASS), the drift report, one stage alone,
a tagged and limited run, and the same through `aicluster run`.
"""
import json
import os
import re
import shutil
import subprocess

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MARKER = 'make lab-check (tests/lab/test_readme.py) runs this block'


def _readme_blocks():
    """The two sh blocks after the README's lab-check marker: install, then run."""
    with open(os.path.join(REPO, 'README.md')) as handle:
        text = handle.read()
    after = text[text.index(MARKER):]
    blocks = re.findall(r'```sh\n(.*?)```', after, re.S)[:2]
    return [[line.split('#')[0].strip() for line in block.splitlines() if line.split('#')[0].strip()] for block in blocks]


def test_the_readme_real_cluster_path_verbatim(gpu_lab):
    name, inventory = gpu_lab
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
    assert os.path.realpath(os.path.join(home, 'aicluster', 'bin', 'aicluster')) == os.path.join(installed, 'bin', 'aicluster')

    # "edit mycluster/hosts.yml and mycluster/group_vars/": the lab's hosts and its settings
    cluster = os.path.join(work, 'run')
    os.makedirs(cluster)
    copy = [line for line in runs if line.startswith('cp -r ')][0]
    subprocess.run(['bash', '-c', copy], cwd=cluster, env=env, check=True)
    shutil.copy(os.path.join(inventory, 'hosts.yml'), os.path.join(cluster, 'mycluster', 'hosts.yml'))
    # the lab's settings and its bill of materials (the lab mirror's URLs), as a site's group_vars would hold its own
    lab_vars = {}
    for name in ('main.yml', 'bom.yml'):
        with open(os.path.join(REPO, 'inventories', 'lab', 'group_vars', 'all', name)) as handle:
            lab_vars.update(yaml.safe_load(handle))
    # the example's debug partition names gpu[001-004]; this lab has gpu01..gpu03
    lab_vars['slurm_partitions'] = [{'name': 'gpu', 'groups': ['gpu_nodes'], 'default': True}]
    # the example names its cluster hgx; this lab's controller already runs as `cluster` (test_oldest_ansible.py
    # converged it), and slurmctld keeps its name (test_slurm_cluster_name.py)
    lab_vars['slurm_cluster_name'] = 'cluster'
    with open(os.path.join(cluster, 'mycluster', 'group_vars', 'all', 'zz-lab.yml'), 'w') as handle:
        yaml.safe_dump(lab_vars, handle)
    env.update(PATH=os.path.join(home, 'aicluster', 'bin') + os.pathsep + env['PATH'], PWD=cluster)

    ran = []
    for line in runs:
        if line.startswith('cp -r '):
            continue
        if line.startswith('export '):
            # `export VAR=...` as the user's shell would: for the lines after it
            key, value = line[len('export '):].split('=', 1)
            env[key] = subprocess.run(['bash', '-c', 'echo %s' % value], cwd=cluster, env=env, text=True, check=True,
                                      stdout=subprocess.PIPE).stdout.strip()
            continue
        result = subprocess.run(['bash', '-c', line], cwd=cluster, env=env, text=True, check=False,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        with open(os.path.join(work, 'output-%d.txt' % len(ran)), 'w', encoding='utf-8') as handle:
            handle.write('$ %s\n%s' % (line, result.stdout))
        ran.append(line)
        assert result.returncode == 0, '%s\n%s' % (line, result.stdout[-4000:])
        assert 'aicluster.infra' in result.stdout
        if 'drift' in line:
            assert re.search(r'\b0 hosts drifted of 4\b', result.stdout), result.stdout[-3000:]
        if line.startswith('aicluster run '):
            # progress as tasks end, then the recap and ansible-playbook's status
            assert re.search(r'^  \[  1\] .* ok=\d+ failed=0  \d+\.\ds$', result.stdout, re.M), result.stdout[-3000:]
            assert result.stdout.splitlines()[-1] == 'successful: rc 0 (ok)'
    assert len(ran) == len([line for line in runs if not line.startswith(('cp -r ', 'export '))]) >= 5
    # the site runs' verification (rc 0: the verdict PASS) wrote its results where the user ran it
    verify_runs = sorted(path for path in os.listdir(os.path.join(cluster, 'artifacts')) if path.startswith('verify-'))
    assert verify_runs
    with open(os.path.join(cluster, 'artifacts', verify_runs[0], 'results.json'), encoding='utf-8') as handle:
        summary = json.load(handle)['summary']
    assert (summary['verdict'], summary['nodes'], summary['failed']) == ('PASS', 3, 0)
