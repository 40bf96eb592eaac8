"""The verify stage's expected versions follow the bill of materials (issue 31, item 8).

Each shipped inventory's group_vars are layered over the role defaults the way Ansible layers them (role defaults,
then inventory group_vars/all) and the verify roles' expectations are rendered by Ansible's own templating with the
collection's filters (in a fresh interpreter with Ansible's collection loader: this one imports the collection as a
plain package). Then a rolling BOM bump (the driver moves) is replayed: the upgraded batch must pass
gpu.driver_uniform against what verify now expects. A version copied into an inventory would pin the old driver.
"""
import glob
import json
import os
import subprocess
import sys

import pytest
import yaml

from _paths import REPO
from ansible_collections.aicluster.infra.plugins.module_utils.verify.gpu import evaluate_gpu_fleet
from ansible_collections.aicluster.infra.plugins.module_utils.verify.ib import evaluate_ib_fleet

# Variables that carry an expected version and must not be copied into an inventory.
EXPECTATIONS = ('verify_gpu_driver', 'verify_gpu_cuda_major', 'verify_ib_firmware', 'verify_ib_ofed')
INVENTORIES = ('example', 'lab')
BUMPED_DRIVER = '580.105.08-1'   # a later R580 release (docs.nvidia.com/datacenter/tesla/tesla-release-notes-580-105-08/)

# Runs in a fresh interpreter: argv[1] is JSON {repo, cases: [{inventory, roles, driver, overrides, expressions}]}.
_RENDER = r'''
import copy, glob, json, os, sys
from ansible.plugins.loader import init_plugin_loader
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
try:
    from ansible.template import trust_as_template
except ImportError:
    def trust_as_template(text):
        return text
args = json.loads(sys.argv[1])
repo = args['repo']
init_plugin_loader([os.path.join(repo, '.collections')])

def trusted(value):  # as Ansible trusts the role defaults and group_vars files it reads
    if isinstance(value, dict):
        return dict((key, trusted(item)) for key, item in value.items())
    if isinstance(value, list):
        return [trusted(item) for item in value]
    return trust_as_template(value) if isinstance(value, str) else value

out = []
for case in args['cases']:
    loader = DataLoader()
    variables = {}
    for role in case['roles']:
        variables.update(trusted(loader.load_from_file(os.path.join(repo, 'roles', role, 'defaults', 'main.yml')) or {}))
    if case['inventory']:
        for path in sorted(glob.glob(os.path.join(repo, 'inventories', case['inventory'], 'group_vars', 'all', '*.yml'))):
            variables.update(trusted(loader.load_from_file(path) or {}))
    if case.get('driver'):  # the site edits its copy of the BOM (group_vars/all/bom.yml) and runs the rolling procedure
        bom = copy.deepcopy(variables['aicluster_bom'])
        bom['nvidia_driver']['version'] = case['driver']
        variables['aicluster_bom'] = bom
    variables.update(trusted(case.get('overrides') or {}))
    variables.update({'groups': {'all': ['ctl01', 'gpu01', 'gpu02'], 'slurm_controller': ['ctl01'],
                                 'gpu_nodes': ['gpu01', 'gpu02']}, 'inventory_hostname': 'gpu01'})
    templar = Templar(loader=loader, variables=variables)
    out.append(dict((name, templar.template(trust_as_template('{{ %s | default(none) }}' % name))) for name in case['expressions']))
print(json.dumps(out))
'''
# The role defaults a rolling_upgrade play sees: the BOM's default (role bom), rdma's and the verify roles'.
PLAY_ROLES = ['bom', 'rdma', 'verify_gpu', 'verify_ib']
NAMES = list(EXPECTATIONS) + ['aicluster_bom']


def _render(cases):
    env = dict(os.environ, PYTHONPATH='')
    proc = subprocess.run([sys.executable, '-c', _RENDER, json.dumps({'repo': REPO, 'cases': cases})],
                          capture_output=True, text=True, env=env, cwd=REPO, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


@pytest.fixture(scope='module')
def rendered():
    cases = []
    for inventory in INVENTORIES:
        cases.append({'inventory': inventory, 'roles': PLAY_ROLES, 'expressions': NAMES})
        cases.append({'inventory': inventory, 'roles': PLAY_ROLES, 'driver': BUMPED_DRIVER, 'expressions': NAMES})
    cases.append({'inventory': '', 'roles': ['verify_gpu', 'verify_ib'], 'expressions': EXPECTATIONS})
    cases.append({'inventory': 'example', 'roles': PLAY_ROLES, 'driver': BUMPED_DRIVER,
                  'overrides': {'verify_gpu_driver': '580.95.05'}, 'expressions': ['verify_gpu_driver']})
    results = _render(cases)
    return {'example': results[0:2], 'lab': results[2:4], 'no_bom': results[4], 'override': results[5]}


@pytest.mark.parametrize('inventory', INVENTORIES)
def test_a_rolling_bom_bump_moves_verifys_expected_driver(rendered, inventory):
    before, after = rendered[inventory]
    assert before['verify_gpu_driver'] == '580.95.05'
    assert after['verify_gpu_driver'] == '580.105.08', (
        'verify still expects %r after the BOM moved the driver to %s' % (after['verify_gpu_driver'], BUMPED_DRIVER))
    # the first batch of the rolling upgrade: upgraded, rebooted, and judged against what verify now expects
    batch = dict((node, {'driver_version': '580.105.08'}) for node in ('gpu01', 'gpu02'))
    results = evaluate_gpu_fleet(batch, {'driver': after['verify_gpu_driver']}, [])
    assert all(result['passed'] for node in batch for result in results[node]), results


@pytest.mark.parametrize('inventory', INVENTORIES)
def test_verify_expects_the_boms_firmware_ofed_and_cuda(rendered, inventory):
    values = rendered[inventory][0]
    bom = values['aicluster_bom']
    assert values['verify_ib_firmware'] == bom['rdma']['firmware'] and values['verify_ib_firmware']
    assert values['verify_ib_ofed'] == 'OFED-internal-24.10-1.1.4'
    assert values['verify_gpu_cuda_major'] == bom['dcgm']['cuda_major']
    # the firmware pin is by PSID (each adapter's board_id): one on another version is the odd one out by name
    psid, version = sorted(values['verify_ib_firmware'].items())[0]
    infos = {
        'gpu01': {'hcas': [{'name': 'mlx5_0', 'board_id': psid, 'firmware_version': version}]},
        'gpu02': {'hcas': [{'name': 'mlx5_0', 'board_id': psid, 'firmware_version': '28.1.1000'}]},
    }
    results = evaluate_ib_fleet(infos, {'hcas': ['mlx5_0'], 'firmware': values['verify_ib_firmware'],
                                        'fleet_checks': ['ib.firmware_uniform']}, [])
    assert [r['passed'] for r in results['gpu01']] == [True] and [r['passed'] for r in results['gpu02']] == [False]


def test_without_a_bom_verify_judges_against_the_fleets_majority(rendered):
    assert rendered['no_bom'] == {'verify_gpu_driver': '', 'verify_gpu_cuda_major': '', 'verify_ib_firmware': {},
                                  'verify_ib_ofed': ''}


def test_an_explicit_variable_still_overrides_the_bom(rendered):
    assert rendered['override'] == {'verify_gpu_driver': '580.95.05'}


def test_no_inventory_copies_an_expected_version():
    """The expected versions come from the BOM: an inventory that copies one pins the fleet to the old version."""
    for path in glob.glob(os.path.join(REPO, 'inventories', '*', 'group_vars', '**', '*.yml'), recursive=True):
        with open(path, encoding='utf-8') as handle:
            data = yaml.safe_load(handle) or {}
        copied = set(EXPECTATIONS) & set(data)
        assert not copied, '%s sets %s' % (os.path.relpath(path, REPO), sorted(copied))
