"""lab/lab.py: the pure parts (inventory, podman settings, image cache key)."""
import importlib.util
import ipaddress
import os
import subprocess
import sys

import pytest
import yaml

from _paths import REPO


def _lab():
    spec = importlib.util.spec_from_file_location('aicluster_lab', os.path.join(REPO, 'lab', 'lab.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_host_names_default_shape():
    lab = _lab()
    assert lab.host_names(3) == ['ctl01', 'gpu01', 'gpu02', 'gpu03']
    assert lab.host_names(12)[-1] == 'gpu12'


def test_inventory_reaches_hosts_over_ssh_with_the_lab_key():
    lab = _lab()
    data = yaml.safe_load(lab.inventory_text('demo', {'ctl01': '10.89.0.2', 'gpu01': '10.89.0.3'}))
    assert data['all']['vars']['ansible_ssh_private_key_file'] == lab.SSH_KEY
    assert 'StrictHostKeyChecking=no' in data['all']['vars']['ansible_ssh_common_args']
    assert data['all']['hosts']['gpu01'] == {'ansible_host': '10.89.0.3'}
    assert set(data['all']['children']['gpu_nodes']['hosts']) == {'gpu01'}


def test_recipe_hash_follows_the_recipe_file(tmp_path, monkeypatch):
    lab = _lab()
    recipe = tmp_path / 'recipe.sh'
    recipe.write_text('echo one\n')
    monkeypatch.setattr(lab, 'IMAGE_RECIPE', str(recipe))
    first = lab.recipe_hash()
    assert lab.recipe_hash() == first
    recipe.write_text('echo two\n')
    assert lab.recipe_hash() != first
    assert lab.image_ref().startswith('localhost/aicluster-lab:%s-' % lab.SUITE)


def test_podman_settings_use_runc_and_cap_ulimits():
    lab = _lab()
    text = lab.containers_conf_text()
    assert 'runtime = "runc"' in text
    nofile, nproc = lab.host_limits()
    assert nproc == 32768 and 0 < nofile <= 1048576
    assert 'nofile=%d:%d' % (nofile, nofile) in text


def test_write_if_changed_is_idempotent(tmp_path):
    lab = _lab()
    path = str(tmp_path / 'sub' / 'f.yml')
    assert lab.write_if_changed(path, 'a\n') is True
    mtime = os.stat(path).st_mtime_ns
    assert lab.write_if_changed(path, 'a\n') is False
    assert os.stat(path).st_mtime_ns == mtime


def test_compute_hosts_get_the_default_profile_and_overrides():
    lab = _lab()
    hosts = lab.host_names(3)
    profiles = lab.host_profiles(hosts, 'hgx-h100-ib', ['gpu02=hgx-a100-ib'])
    assert profiles == {'gpu01': 'hgx-h100-ib', 'gpu02': 'hgx-a100-ib', 'gpu03': 'hgx-h100-ib'}
    data = yaml.safe_load(lab.inventory_text('demo', {'ctl01': '10.0.0.2', 'gpu01': '10.0.0.3'}, profiles))
    assert data['all']['hosts']['gpu01']['hwsim_profile'] == 'hgx-h100-ib'
    assert 'hwsim_profile' not in data['all']['hosts']['ctl01']


@pytest.mark.parametrize('override', ['gpu09=hgx-h100-ib', 'ctl01=hgx-h100-ib', 'gpu01', 'gpu01=no-such-profile'])
def test_bad_profile_choices_are_refused_by_name(override):
    lab = _lab()
    with pytest.raises(SystemExit) as exc:
        lab.host_profiles(lab.host_names(2), 'hgx-h100-ib', [override])
    assert 'profile' in str(exc.value)


def test_rail_networks_from_the_profiles_ib_and_roce():
    lab = _lab()
    networks, attachments = lab.rail_plan('demo', {'gpu01': 'hgx-h100-ib', 'gpu02': 'hgx-h100-ib'})
    assert sorted(networks) == ['demo-rail%d-ib' % rail for rail in range(8)]
    assert networks['demo-rail0-ib'] == {'subnet': '10.110.0.0/24', 'gateway': '10.110.0.254', 'mtu': 4092,
                                         'link_layer': 'InfiniBand', 'rail': 0}
    # hwsim's address (ipv4_network + host index) on the profile's netdev name; the storage NIC has no rail network
    assert attachments['gpu02'][:2] == [('demo-rail0-ib', '10.110.0.2', 'ibp24s0'), ('demo-rail1-ib', '10.110.1.2', 'ibp64s0')]
    assert len(attachments['gpu01']) == 8
    networks, attachments = lab.rail_plan('demo', {'gpu01': 'hgx-h100-roce', 'gpu02': 'hgx-h100-roce'})
    assert networks['demo-rail7-roce']['mtu'] == 9000 and networks['demo-rail7-roce']['subnet'] == '10.100.7.0/24'
    assert ('demo-rail0-roce', '10.100.0.1', 'enp24s0np0') in attachments['gpu01']
    assert not any(net.endswith('storage') or address.startswith('10.10.') for net, address, dummy in attachments['gpu01'])


def test_rail_networks_mixed_lab_and_the_management_network_at_1500():
    lab = _lab()
    assert lab.MANAGEMENT_MTU == 1500
    networks, attachments = lab.rail_plan('demo', {'gpu01': 'hgx-h100-ib', 'gpu02': 'hgx-h100-roce'})
    assert len(networks) == 16 and attachments['gpu02'][0] == ('demo-rail0-roce', '10.100.0.2', 'enp24s0np0')
    argv = lab.network_args('demo-net', 'gpu02', attachments['gpu02'][:1])
    assert argv == ['--network', 'demo-net:alias=gpu02', '--network', 'demo-rail0-roce:ip=10.100.0.2,interface_name=enp24s0np0']


def test_the_ipoib_subnets_of_a_lab_whose_ib_rails_all_have_a_network():
    lab = _lab()
    profiles = {'gpu01': 'hgx-h100-ib', 'gpu02': 'hgx-h100-roce'}
    networks, attachments = lab.rail_plan('demo', profiles)
    # one subnet per IPoIB rail in rail order; the RoCE host has no IPoIB rail and does not matter
    assert lab.ipoib_subnets(networks, attachments, profiles) == ['10.110.%d.0/24' % rail for rail in range(8)]
    data = yaml.safe_load(lab.inventory_text('demo', {'ctl01': '10.0.0.2', 'gpu01': '10.0.0.3'}, profiles, None,
                                             lab.ipoib_subnets(networks, attachments, profiles)))
    assert data['all']['vars']['hwsim_fresh_rails'] is True and len(data['all']['vars']['ipoib_subnets']) == 8
    roce = {'gpu01': 'hgx-h100-roce'}
    assert lab.ipoib_subnets(*(lab.rail_plan('demo', roce) + (roce,))) is None
    # the B200 profile gives one of its eight IB rails a network: the role could not address the others
    b200 = {'gpu01': 'hgx-h100-ib', 'gpu02': 'hgx-b200-ib'}
    assert lab.ipoib_subnets(*(lab.rail_plan('demo', b200) + (b200,))) is None
    assert 'hwsim_fresh_rails' not in yaml.safe_load(lab.inventory_text('aic', {'ctl01': '10.0.0.2'}))['all']['vars']


def test_a_roce_lab_comes_up_fresh_and_gives_the_roce_role_its_subnets():
    lab = _lab()
    roce = {'gpu01': 'hgx-h100-roce', 'gpu02': 'hgx-h100-roce'}
    networks, attachments = lab.rail_plan('demo', roce)
    subnets = lab.ipoib_subnets(networks, attachments, roce, layer='Ethernet')
    assert len(subnets) == 8 and subnets == sorted(subnets, key=lambda net: int(net.split('.')[2]))
    # the address podman gives gpu02 on rail 0 is the one the roce role plans: the subnet's second
    rail0 = [address for net, address, dummy in attachments['gpu02'] if net == 'demo-rail0-roce']
    assert rail0 == [str(ipaddress.ip_network(subnets[0]).network_address + 2)]
    data = yaml.safe_load(lab.inventory_text('demo', {'ctl01': '10.0.0.2', 'gpu01': '10.0.0.3', 'gpu02': '10.0.0.4'},
                                             roce, None, None, [], True, subnets))['all']['vars']
    assert data['hwsim_fresh_rails'] is True and data['roce_network_enabled'] is True and data['roce_subnets'] == subnets
    assert data['verify_ib_link_layer'] == 'Ethernet' and 'ipoib_subnets' not in data
    # an InfiniBand lab has no RoCE subnets
    ib = {'gpu01': 'hgx-h100-ib'}
    assert lab.ipoib_subnets(*(lab.rail_plan('demo', ib) + (ib,)), layer='Ethernet') is None


def test_an_infiniband_lab_runs_its_subnet_manager_on_ctl01():
    lab = _lab()
    hosts = lab.host_names(3)
    ib = lab.host_profiles(hosts, 'hgx-h100-ib', [])
    assert lab.subnet_manager_hosts(hosts, ib) == ['ctl01']
    # a lab with one InfiniBand compute host among RoCE ones has a subnet too; the B200 profile is InfiniBand
    assert lab.subnet_manager_hosts(hosts, lab.host_profiles(hosts, 'hgx-h100-roce', ['gpu02=hgx-h100-ib'])) == ['ctl01']
    assert lab.subnet_manager_hosts(hosts, lab.host_profiles(hosts, 'hgx-b200-ib', [])) == ['ctl01']
    networks, attachments = lab.rail_plan('demo', ib)
    ipoib = lab.ipoib_subnets(networks, attachments, ib)
    addresses = dict((host, '10.0.0.%d' % (n + 2)) for n, host in enumerate(hosts))
    data = yaml.safe_load(lab.inventory_text('demo', addresses, ib, None, ipoib, ['ctl01']))
    assert data['all']['children']['ib_subnet_manager']['hosts'] == {'ctl01': {}}
    assert data['all']['vars']['hwsim_fabric_options'] == [
        '--descriptions', 'ofed', '--switch-names', 'identical', '--scalable-units', '2',
        '--sm-hosts', 'ctl01', '--ibsim-host', 'ctl01']
    # ctl01's HCA has no rail network (no IPoIB netdev in its container): the ipoib role leaves it alone
    assert data['all']['hosts']['ctl01'] == {'ansible_host': '10.0.0.2', 'ipoib_subnets': []}
    assert len(data['all']['vars']['ipoib_subnets']) == 8 and 'ipoib_subnets' not in data['all']['hosts']['gpu01']
    # ctl01 stays without a hwsim_profile: hwsim's --sm-hosts gives it profile sm-host-ib in the fabric
    assert 'hwsim_profile' not in data['all']['hosts']['ctl01']


@pytest.mark.parametrize('profile', ['hgx-h100-roce', None])
def test_a_roce_lab_or_one_without_hardware_has_no_subnet_manager(profile):
    lab = _lab()
    hosts = lab.host_names(2)
    profiles = lab.host_profiles(hosts, profile, []) if profile else {}
    assert lab.subnet_manager_hosts(hosts, profiles) == []
    data = yaml.safe_load(lab.inventory_text('demo', {'ctl01': '10.0.0.2', 'gpu01': '10.0.0.3'}, profiles, None, None,
                                             lab.subnet_manager_hosts(hosts, profiles)))
    assert data['all']['children']['ib_subnet_manager']['hosts'] == {}
    assert data['all']['vars']['hwsim_fabric_options'] == lab.FABRIC_OPTIONS
    assert data['all']['hosts']['ctl01'] == {'ansible_host': '10.0.0.2'}
    # a lab without its controller (never made by `up`, which always starts ctl01) has nowhere to run one
    assert lab.subnet_manager_hosts(['gpu01'], {'gpu01': 'hgx-h100-ib'}) == []


def test_the_fabric_options_build_the_labs_fabric_with_ibsim_on_ctl01(tmp_path):
    """The options lab.py writes, given to hwsim build-fabric as lab/hwsim/install.yml does."""
    lab = _lab()
    out = tmp_path / 'fabric.yml'
    argv = [sys.executable, os.path.join(REPO, 'lab', 'hwsim', 'bin', 'hwsim'), 'build-fabric'] + lab.fabric_options(['ctl01'])
    argv += [str(out), 'ctl01=none'] + ['gpu%02d=hgx-h100-ib' % n for n in (1, 2, 3)]
    subprocess.run(argv, check=True, env=dict(os.environ, PYTHONPATH=''))
    fabric = yaml.safe_load(out.read_text())
    assert fabric['ibsim'] == {'host': 'ctl01', 'port': 7070} and fabric['sm_hosts'] == ['ctl01']
    assert fabric['hosts']['ctl01']['profile'] == 'sm-host-ib' and fabric['hosts']['ctl01']['index'] == 4
    assert fabric['scalable_units'] == 2 and fabric['node_description']['mode'] == 'ofed'


def test_rail_networks_with_conflicting_subnets_stop():
    lab = _lab()

    def loader(name):
        module, data = lab._load_profile('hgx-h100-roce')
        if name == 'other':
            data['hcas'][0]['ports'][0]['ipv4_network'] = '10.101.0.0/24'
        return module, data
    with pytest.raises(SystemExit, match='demo-rail0-roce'):
        lab.rail_plan('demo', {'gpu01': 'hgx-h100-roce', 'gpu02': 'other'}, loader=loader)


def test_each_lab_has_its_own_inventory_and_fact_cache():
    lab = _lab()
    assert lab.lab_inventory('aic') == os.path.join(REPO, 'inventories', 'lab', 'hosts.yml')
    assert lab.lab_inventory('other') == os.path.join(REPO, 'inventories', 'lab-other', 'hosts.yml')
    assert lab.lab_fact_cache('aic') == os.path.join(REPO, '.cache', 'facts')
    assert lab.lab_fact_cache('other') == os.path.join(REPO, '.cache', 'facts-other')


def test_another_labs_inventory_directory_gets_the_lab_group_vars(tmp_path, monkeypatch):
    lab = _lab()
    monkeypatch.setattr(lab, 'REPO', str(tmp_path))
    monkeypatch.setattr(lab, 'INVENTORY', str(tmp_path / 'inventories' / 'lab' / 'hosts.yml'))
    (tmp_path / 'inventories' / 'lab' / 'group_vars').mkdir(parents=True)
    inventory = str(tmp_path / 'inventories' / 'lab-other' / 'hosts.yml')
    lab.prepare_inventory_dir(inventory)
    link = tmp_path / 'inventories' / 'lab-other' / 'group_vars'
    assert os.readlink(str(link)) == os.path.join('..', 'lab', 'group_vars') and link.is_dir()
    lab.prepare_inventory_dir(inventory)  # again: left as it is
    lab.prepare_inventory_dir(lab.INVENTORY)  # the default lab's directory holds the group_vars themselves
    assert not os.path.islink(str(tmp_path / 'inventories' / 'lab' / 'group_vars'))


def test_a_lab_alone_keeps_the_profiles_rail_subnets():
    lab = _lab()
    subnets = ['10.110.%d.0/24' % rail for rail in range(8)]
    assert lab.rail_renumbering(subnets, ['10.213.74.0/24', '10.88.0.0/16']) == {}


def test_a_lab_beside_another_moves_its_rail_subnets_past_every_taken_one():
    """make demo, then make test: the demo lab holds 10.110.0-7.0/24 (and another lab 10.111.0.0/24)."""
    lab = _lab()
    subnets = ['10.110.%d.0/24' % rail for rail in range(8)]
    taken = ['10.110.%d.0/24' % rail for rail in range(8)] + ['10.111.3.0/24']
    moved = lab.rail_renumbering(subnets, taken)
    assert moved['10.110.0.0/24'] == '10.112.0.0/24' and moved['10.110.7.0/24'] == '10.112.7.0/24'
    assert len(moved) == 8
    # a host interface inside a subnet counts as well (podman: "already used on the host")
    assert lab.rail_renumbering(['10.100.0.0/24'], ['10.100.0.17/24'])['10.100.0.0/24'] == '10.101.0.0/24'


def test_a_lab_that_is_up_keeps_its_rail_subnets():
    lab = _lab()
    own = {'10.110.0.0/24': '10.112.0.0/24', '10.110.1.0/24': '10.112.1.0/24'}
    assert lab.rail_renumbering(list(own), ['10.110.0.0/24'], own) == own
    assert lab.rail_renumbering(['10.110.0.0/24'], [], {'10.110.0.0/24': '10.110.0.0/24'}) == {}


def test_no_free_rail_subnets_stop_with_a_message():
    lab = _lab()
    with pytest.raises(SystemExit) as exc:
        lab.rail_renumbering(['10.110.0.0/24'], ['10.0.0.0/8', '11.0.0.0/8'])
    assert 'no free subnets for the rail networks 10.110.0.0/24' in str(exc.value)


def test_renumbered_rail_plan_addresses_and_inventory():
    lab = _lab()
    renumber = {'10.100.%d.0/24' % rail: '10.101.%d.0/24' % rail for rail in range(8)}
    networks, attachments = lab.rail_plan('two', {'gpu01': 'hgx-h100-roce'}, renumber=renumber)
    assert networks['two-rail0-roce']['subnet'] == '10.101.0.0/24' and networks['two-rail0-roce']['gateway'] == '10.101.0.254'
    assert ('two-rail0-roce', '10.101.0.1', 'enp24s0np0') in attachments['gpu01']
    data = yaml.safe_load(lab.inventory_text('two', {'ctl01': '10.0.0.2', 'gpu01': '10.0.0.3'}, {'gpu01': 'hgx-h100-roce'},
                                             {'10.100.0.0/24': '10.101.0.0/24'}))
    assert data['all']['vars']['hwsim_ipv4_networks'] == ['10.100.0.0/24=10.101.0.0/24']
    assert 'hwsim_ipv4_networks' not in yaml.safe_load(lab.inventory_text('aic', {'ctl01': '10.0.0.2'}))['all']['vars']


def test_lab_renumbering_reads_podman_and_the_host(monkeypatch):
    """Other labs' networks and host interfaces are taken; the lab's own management bridge is not; a lab whose rail
    networks all exist keeps them; one with some of them stops with what to do."""
    lab = _lab()
    networks, dummy = lab.rail_plan('two', {'gpu01': 'hgx-h100-roce'})
    podman = {'aic-rail0-roce': ('aic', ['10.100.0.0/24']), 'two-net': ('two', ['10.89.3.0/24'])}
    monkeypatch.setattr(lab, 'podman_networks', lambda: dict(podman))
    monkeypatch.setattr(lab, 'host_subnets', lambda: ['10.89.3.1/24', '10.101.5.7/24', '127.0.0.1/8'])
    moved = lab.lab_renumbering('two', networks)
    assert moved['10.100.0.0/24'] == '10.102.0.0/24' and len(moved) == len(networks)
    podman.update(('two-rail%d-roce' % rail, ('two', ['10.105.%d.0/24' % rail])) for rail in range(8))
    assert lab.lab_renumbering('two', networks)['10.100.7.0/24'] == '10.105.7.0/24'
    del podman['two-rail7-roce']
    with pytest.raises(SystemExit) as exc:
        lab.lab_renumbering('two', networks)
    assert 'has 7 of its 8 rail networks' in str(exc.value)


def test_a_roce_lab_inventory_has_the_verify_stage_judge_its_rails_as_ethernet():
    """A RoCE lab's verify stage judged its rails against the default link layer (InfiniBand) and failed every port
    with ib.link_layer; a RoCE site's inventory says Ethernet, and so does the lab's."""
    lab = _lab()
    roce = yaml.safe_load(lab.inventory_text('two', {'ctl01': '10.0.0.2', 'gpu01': '10.0.0.3'}, {'gpu01': 'hgx-h100-roce'},
                                             None, None, None, True))
    assert roce['all']['vars']['verify_ib_link_layer'] == 'Ethernet'
    ib = yaml.safe_load(lab.inventory_text('demo', {'ctl01': '10.0.0.2', 'gpu01': '10.0.0.3'}, {'gpu01': 'hgx-h100-ib'}))
    assert 'verify_ib_link_layer' not in ib['all']['vars']
