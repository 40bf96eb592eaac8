"""The inventory contract: the group names every role uses, in both shipped inventories."""
import glob
import importlib.util
import json
import os
import subprocess
import sys

import pytest
import yaml

from _paths import REPO

CONTRACT_GROUPS = {'slurm_controller', 'slurm_dbd', 'slurm_compute', 'login', 'ib_subnet_manager', 'gpu_nodes',
                   'monitoring'}


def _lab_module():
    spec = importlib.util.spec_from_file_location('aicluster_lab', os.path.join(REPO, 'lab', 'lab.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _inventory(path):
    env = {k: v for k, v in os.environ.items() if k != 'ANSIBLE_CONFIG'}
    # Next to this interpreter when run from the venv without activating it, else from PATH.
    tool = os.path.join(os.path.dirname(sys.executable), 'ansible-inventory')
    tool = tool if os.path.exists(tool) else 'ansible-inventory'
    out = subprocess.run([tool, '-i', path, '--list'], check=True, capture_output=True, text=True,
                         env=env, cwd=os.path.dirname(path)).stdout
    return json.loads(out)


def _members(inventory, group):
    hosts = set(inventory.get(group, {}).get('hosts', []))
    for child in inventory.get(group, {}).get('children', []):
        hosts |= _members(inventory, child)
    return hosts


def test_example_inventory_is_a_32_node_hgx_cluster_with_every_contract_group():
    inventory = _inventory(os.path.join(REPO, 'inventories', 'example'))
    assert CONTRACT_GROUPS <= set(inventory['all']['children']) | {
        child for group in inventory.values() if isinstance(group, dict) for child in group.get('children', [])}
    gpu = _members(inventory, 'gpu_nodes')
    assert len(gpu) == 32 and 'gpu001' in gpu and 'gpu032' in gpu
    assert _members(inventory, 'slurm_compute') == gpu
    assert _members(inventory, 'slurm_controller') == {'mgmt01'}


@pytest.mark.parametrize('profile', ['hgx-h100-ib', 'hgx-h100-roce'])
def test_lab_inventory_has_the_same_groups_as_a_real_cluster(tmp_path, profile):
    """The inventory lab.py up writes, read by Ansible with the lab's group_vars (linked as for a lab-<name>)."""
    lab = _lab_module()
    addresses = {'ctl01': '10.0.0.2', 'gpu01': '10.0.0.3', 'gpu02': '10.0.0.4'}
    profiles = lab.host_profiles(list(addresses), profile, [])
    networks, attachments = lab.rail_plan('t', profiles)
    ipoib = lab.ipoib_subnets(networks, attachments, profiles)
    sm_hosts = lab.subnet_manager_hosts(list(addresses), profiles)
    text = lab.inventory_text('t', addresses, profiles, None, ipoib, sm_hosts)
    (tmp_path / 'hosts.yml').write_text(text)
    (tmp_path / 'group_vars').symlink_to(os.path.join(REPO, 'inventories', 'lab', 'group_vars'))
    inventory = _inventory(str(tmp_path))
    infiniband = profile.endswith('-ib')
    for group in CONTRACT_GROUPS:
        assert group in inventory['all']['children'], group
        # a RoCE lab runs no subnet manager (lab.py subnet_manager_hosts): every other group has members
        assert _members(inventory, group) or (group == 'ib_subnet_manager' and not infiniband), group
    assert _members(inventory, 'ib_subnet_manager') == ({'ctl01'} if infiniband else set())
    assert _members(inventory, 'gpu_nodes') == {'gpu01', 'gpu02'}
    assert _members(inventory, 'slurm_controller') == {'ctl01'}
    hostvars = inventory['_meta']['hostvars']
    assert hostvars['gpu02']['ansible_host'] == '10.0.0.4'
    assert hostvars['ctl01']['ansible_user'] == 'root'
    # hosts.yml's fabric options reach the hosts: group_vars/all outranks the inventory file's `all: vars:`, so the
    # lab's group_vars must not set hwsim_fabric_options (lab.py writes them whole)
    sm_options = ['--sm-hosts', 'ctl01', '--ibsim-host', 'ctl01'] if infiniband else []
    for host in addresses:
        assert hostvars[host]['hwsim_fabric_options'] == lab.FABRIC_OPTIONS + sm_options, host
    # the SM host has no IPoIB netdev in the lab: no subnet for it, the GPU nodes keep the lab's
    assert hostvars['ctl01'].get('ipoib_subnets') == ([] if infiniband else None)
    assert len(hostvars['gpu01'].get('ipoib_subnets') or []) == (8 if infiniband else 0)


def _documented_role_variables():
    names = set()
    for spec_file in glob.glob(os.path.join(REPO, 'roles', '*', 'meta', 'argument_specs.yml')):
        with open(spec_file, encoding='utf-8') as handle:
            specs = yaml.safe_load(handle)['argument_specs']
        for entry in specs.values():
            names |= set(entry.get('options', {}))
    return names


# Read by the lab's test equipment (lab/hwsim/install.yml), never by a role: allowed in the lab inventory only.
LAB_EQUIPMENT_VARIABLES = ('hwsim_profile', 'hwsim_fabric_options', 'hwsim_ipv4_networks', 'hwsim_fresh_rails')
GROUP_VARS = sorted(glob.glob(os.path.join(REPO, 'inventories', '*', 'group_vars', '**', '*.yml'), recursive=True))


@pytest.mark.parametrize('path', GROUP_VARS, ids=[os.path.relpath(p, REPO) for p in GROUP_VARS])
def test_every_inventory_variable_is_a_documented_role_variable(path):
    """A variable set in an inventory but read by no role is a typo that silently does nothing."""
    with open(path, encoding='utf-8') as handle:
        data = yaml.safe_load(handle) or {}
    documented = _documented_role_variables()
    if os.path.relpath(path, REPO).startswith(os.path.join('inventories', 'lab') + os.sep):
        documented |= set(LAB_EQUIPMENT_VARIABLES)
    unknown = [name for name in data if not name.startswith('ansible_') and name not in documented]
    assert not unknown, 'not an argument of any role: %s' % unknown


def test_molecule_services_uses_the_labs_bill_of_materials():
    with open(os.path.join(REPO, 'inventories', 'lab', 'group_vars', 'all', 'bom.yml'), encoding='utf-8') as handle:
        lab = yaml.safe_load(handle)['aicluster_bom']
    with open(os.path.join(REPO, 'molecule', 'services', 'molecule.yml'), encoding='utf-8') as handle:
        scenario = yaml.safe_load(handle)
    bom = scenario['provisioner']['inventory']['group_vars']['all']['aicluster_bom']
    # but for the container toolkit, which its verify.yml upgrades to the lab's through the rolling procedure
    assert bom['container_toolkit'] == {'version': '1.17.8-1'} and lab['container_toolkit'] == {'version': '1.18.0-1'}
    assert dict(bom, container_toolkit=None) == dict(lab, container_toolkit=None)
