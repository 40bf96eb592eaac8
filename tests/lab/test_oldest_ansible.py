"""The oldest ansible-core the collection admits (meta/runtime.yml requires_ansible), for real (make lab-check).

A virtual environment of tests/lab/requirements-oldest.txt (kept in .cache/venv-oldest, made again when that file
changes) runs, first against the fresh lab check lab (ctl01, three GPU hosts with simulated hardware; conftest.py),
what an operator runs:
`aicluster run site` (bring-up and verify: the verdict PASS, with the subnet manager the fabric stage started on
ctl01, the real OpenSM against ibsim, checked by fabric.sm), then `aicluster run drift` (0 hosts drifted: every bring-up
stage, the fabric stage among them, in check mode, would change nothing). Then the unit tests that run real Ansible (the
drift callback, the command-line entry point, the Slurm scripts rendered by Ansible's templating) run on that ansible-core.
CI's own ansible-core (requirements.txt) runs everything else. About 12 minutes under make test's load.

A plain re-run of the bring-up stages (changed=0, nothing restarted) is proven on CI's ansible-core by
molecule/bringup's second site.yml and every scenario's idempotence step; this test ran the five stages again on the
oldest core too until 2026-12-07, which cost 200-300 s of make test's budget and proved what the drift run proves here.
"""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from _labrun import aicluster, lab_env, on_controller

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REQUIREMENTS = os.path.join(REPO, 'tests', 'lab', 'requirements-oldest.txt')
VENV = os.path.join(REPO, '.cache', 'venv-oldest')
PYTHON = os.path.join(VENV, 'bin', 'python')
WORK = os.path.join(REPO, '.cache', 'oldest-runs')


def _pinned():
    with open(REQUIREMENTS, encoding='utf-8') as handle:
        text = handle.read()
    return text, re.search(r'^ansible-core==(\S+)', text, re.M).group(1)


def _venv():
    """The oldest ansible-core's venv, made again only when requirements-oldest.txt changed."""
    text, _version = _pinned()
    stamp = os.path.join(VENV, 'requirements-oldest.txt')
    if os.path.isfile(stamp):
        with open(stamp, encoding='utf-8') as handle:
            if handle.read() == text:
                return
    shutil.rmtree(VENV, ignore_errors=True)
    subprocess.run([sys.executable, '-m', 'venv', VENV], check=True)
    subprocess.run([os.path.join(VENV, 'bin', 'python'), '-m', 'pip', 'install', '--quiet', '-r', REQUIREMENTS],
                   check=True)
    shutil.copy(REQUIREMENTS, stamp)


@pytest.fixture(scope='module')
def oldest_lab(gpu_lab):
    _venv()
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    return gpu_lab


def test_the_oldest_ansible_core_is_the_one_meta_runtime_admits():
    _text, version = _pinned()
    with open(os.path.join(REPO, 'meta', 'runtime.yml'), encoding='utf-8') as handle:
        runtime = handle.read()
    oldest = re.search(r'^requires_ansible: ">=(\S+)"', runtime, re.M).group(1)
    assert version.split('.')[:2] == oldest.split('.')[:2], (version, oldest)


def test_bring_up_verify_no_op_and_drift_on_the_oldest_ansible_core(oldest_lab):
    version = subprocess.run([os.path.join(VENV, 'bin', 'ansible-playbook'), '--version'], env=lab_env(PYTHON), text=True,
                             stdout=subprocess.PIPE, check=True).stdout.splitlines()[0]
    assert 'core %s]' % _pinned()[1] in version, version

    site = aicluster(PYTHON, WORK, 'site', '-e', 'verify_gate_artifacts_dir=%s' % WORK)
    assert site.returncode == 0, site.stdout[-4000:]
    assert 'verdict: PASS (0 of 3 nodes failed)' in site.stdout.splitlines(), site.stdout[-4000:]
    _subnet_manager_checked(site.stdout)

    drift = aicluster(PYTHON, WORK, 'drift')
    assert drift.returncode == 0, drift.stdout[-4000:]
    assert 'drift: 0 hosts drifted of 4' in drift.stdout.splitlines(), drift.stdout[-4000:]


def _subnet_manager_checked(output):
    """The site run's verify stage judged the lab's subnet manager (issue 32): one master, at priority 15, whose port is
    the one ctl01's OpenSM unit is bound to (aicluster-opensm@<port guid>); P_Keys and switch counters judged too."""
    path = [line.split(': ', 1)[1] for line in output.splitlines() if line.startswith('results: ')][-1]
    with open(os.path.join(WORK, path), encoding='utf-8') as handle:
        results = json.load(handle)
    cluster = results['cluster']['results']
    sm = [r for r in cluster if r['check'] == 'fabric.sm']
    assert len(sm) == 1 and sm[0]['passed'] and 'skipped' not in sm[0] and 'at priority 15' in sm[0]['message'], sm
    unit = 'aicluster-opensm@%s.service' % sm[0]['measured']
    assert on_controller(PYTHON, 'systemctl is-active %s' % unit).split()[-1] == 'active', unit
    switch = [r for r in cluster if r['check'] == 'fabric.switch_errors']
    assert switch and all(r['passed'] and 'skipped' not in r for r in switch), switch
    partition = [r for node in results['nodes'].values() for r in node['results'] if r['check'] == 'fabric.partition']
    assert partition and all(r['passed'] and 'skipped' not in r for r in partition), partition


def test_the_unit_tests_that_run_ansible_pass_on_the_oldest_ansible_core():
    _venv()
    # as make unit runs them: the collection from .collections, nothing else of Ansible's settings
    unit_env = dict((k, v) for k, v in os.environ.items() if not k.startswith('ANSIBLE_'))
    unit_env.update(PATH=os.path.join(VENV, 'bin') + os.pathsep + os.environ.get('PATH', ''),
                    ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.collections'))
    run = subprocess.run([os.path.join(VENV, 'bin', 'python'), '-m', 'pytest', '-q', '-p', 'no:cacheprovider',
                          'tests/unit/plugins/callback', 'tests/unit/bin', 'tests/unit/roles'],
                         cwd=REPO, env=unit_env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
    assert run.returncode == 0, run.stdout[-4000:]
