"""Two labs side by side (make lab-check): each has its own inventory, hosts, fact cache and rail subnets, and taking
one down leaves the other's inventory and hosts alone. Brings up two one-compute RoCE labs with simulated hardware
and no package mirror (~3 min): both profiles give rail 0 10.100.0.0/24, so the second lab moves its rails (the
README's `make demo` then `make test` failed with "subnet ... is already used" before). The rails come up fresh (no
address, MTU 1500) and the inventory's roce_subnets holds each lab's own subnets for the fabric stage.
"""
import ipaddress
import json
import os
import re
import subprocess
import sys
import time

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAB = [sys.executable, os.path.join(REPO, 'lab', 'lab.py')]
VENV_BIN = os.path.dirname(sys.executable)
NAMES = ('pairone', 'pairtwo')
UP = ('up', '--compute', '1', '--profile', 'hgx-h100-roce', '--no-mirror', '--name')
RAIL = 'enp24s0np0'  # rail 0's netdev in hgx-h100-roce


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
            _lab(*UP + (name,))
        yield
    finally:
        for name in NAMES:
            _lab('down', '--name', name)


def _rail_subnet(name):
    out = subprocess.run(['podman', 'network', 'inspect', '%s-rail0-roce' % name], check=True, text=True,
                         stdout=subprocess.PIPE).stdout
    return json.loads(out)[0]['subnets'][0]['subnet']


def _exec(name, argv):
    return subprocess.run(['podman', 'exec', '%s-gpu01' % name] + argv, check=True, text=True, stdout=subprocess.PIPE).stdout


def _rail_address(name):
    """gpu01's rail 0 address as the lab plans it (the first of the rail's subnet in the inventory's roce_subnets, the
    address the fabric stage's roce role gives it) and as hwsim's show_gids prints it in the RoCE v2 IPv4 GID. The
    rail itself comes up fresh (no address, MTU 1500: hwsim/rails.py) until the fabric stage runs."""
    with open(os.path.join(_inventory(name), 'hosts.yml'), encoding='utf-8') as handle:
        subnet = yaml.safe_load(handle)['all']['vars']['roce_subnets'][0]
    link = json.loads(_exec(name, ['ip', '-j', '-4', 'addr', 'show', RAIL]))
    mtu = json.loads(_exec(name, ['ip', '-j', 'link', 'show', RAIL]))[0]['mtu']
    assert (link[0]['addr_info'] if link else [], mtu) == ([], 1500), (name, link, mtu)
    gids = [line.split() for line in _exec(name, ['show_gids', 'mlx5_0']).splitlines()]
    mapped = [row[4] for row in gids if len(row) == 7 and row[5] == 'v2']
    return str(ipaddress.ip_network(subnet).network_address + 1), mapped


def test_two_labs_side_by_side(two_labs):
    one, two = (_addresses(name) for name in NAMES)
    assert set(one) == set(two) == {'ctl01', 'gpu01'}
    assert one['ctl01'] != two['ctl01']
    # the default lab's inventory is not touched
    assert os.path.islink(os.path.join(_inventory('pairone'), 'group_vars'))
    for name, addresses in zip(NAMES, (one, two)):
        assert addresses['ctl01'] in _ping(name), name
        assert os.path.isfile(os.path.join(REPO, '.cache', 'facts-%s' % name, 's1_ctl01')), name
    subnets = [_rail_subnet(name) for name in NAMES]
    assert subnets[0] != subnets[1]
    for name, subnet in zip(NAMES, subnets):
        address, mapped = _rail_address(name)
        assert address.rsplit('.', 1)[0] == subnet.rsplit('.', 1)[0] and mapped == [address], (name, subnet, address, mapped)

    _lab('down', '--name', 'pairone')
    assert not os.path.exists(_inventory('pairone')) and not os.path.exists(os.path.join(REPO, '.cache', 'facts-pairone'))
    assert _addresses('pairtwo') == two
    assert two['ctl01'] in _ping('pairtwo')
    # up again with the other lab gone: the lab keeps the rail subnets its hosts are on
    _lab(*UP + ('pairtwo',))
    assert _rail_subnet('pairtwo') == subnets[1] and _rail_address('pairtwo')[1] == [_rail_address('pairtwo')[0]]


def _playbook(name, *args):
    """ansible-playbook ARGS against lab ``name`` (its inventory and fact cache); the run."""
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith('ANSIBLE_'))
    env.update(PATH=VENV_BIN + os.pathsep + os.environ['PATH'], ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.collections'), ANSIBLE_NOCOLOR='1',
               ANSIBLE_CACHE_PLUGIN_CONNECTION=os.path.join(REPO, '.cache', 'facts-%s' % name))
    return subprocess.run(['ansible-playbook', '-i', _inventory(name)] + list(args), cwd=REPO, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)


def _recap_changed(output):
    return dict((host, int(changed)) for host, changed in re.findall(r'^(\S+) +: ok=\d+ +changed=(\d+) ', output, re.M))


def _rail_state(name):
    """gpu01's rail 0: (IPv4 addresses, MTU, mlnx_qos's trust line, the PFC line)."""
    link = json.loads(_exec(name, ['ip', '-j', '-4', 'addr', 'show', RAIL]))
    mtu = json.loads(_exec(name, ['ip', '-j', 'link', 'show', RAIL]))[0]['mtu']
    qos = _exec(name, ['mlnx_qos', '-i', RAIL]).splitlines()
    trust = [line.strip() for line in qos if line.startswith('Priority trust state')]
    enabled = [line.strip() for line in qos if line.strip().startswith('enabled')]
    return [a['local'] for a in (link[0]['addr_info'] if link else [])], mtu, trust, enabled[:1]


def test_the_fabric_stage_makes_a_fresh_roce_rail_lossless_at_9000_and_keeps_it(two_labs):
    """Issue 33 on the lab left up (pairtwo, one RoCE GPU node, its rails fresh): the fabric stage gives each rail MTU
    9000, its address and the lossless class; a re-run changes nothing; a reboot (hwsim reboot: the driver's start
    resets the QoS, the rails come up fresh) brings all of it back with no Ansible run; a hand change
    (`mlnx_qos --trust pcp`) is drift that a check run names and a plain run corrects."""
    name = 'pairtwo'
    address = _rail_address(name)[0]  # the planned address; the rail has none yet
    fresh = _rail_state(name)
    assert fresh[:3] == ([], 1500, ['Priority trust state: pcp']), fresh

    first = _playbook(name, 'playbooks/fabric.yml')
    assert first.returncode == 0 and _recap_changed(first.stdout)['gpu01'] > 0, first.stdout[-4000:]
    converged = _rail_state(name)
    assert converged[:3] == ([address], 9000, ['Priority trust state: dscp']), converged
    again = _playbook(name, 'playbooks/fabric.yml')
    assert again.returncode == 0 and set(_recap_changed(again.stdout).values()) == {0}, again.stdout[-4000:]

    out = _exec(name, ['/opt/hwsim/bin/hwsim', 'reboot'])
    assert 'restarted aicluster-roce-qos.service' in out and 'restarted systemd-networkd.service' in out, out
    deadline = time.time() + 60
    while _rail_state(name) != converged and time.time() < deadline:
        time.sleep(2)
    assert _rail_state(name) == converged

    _exec(name, ['mlnx_qos', '-i', RAIL, '--trust', 'pcp'])
    drift = _playbook(name, 'playbooks/drift.yml', '--check', '--diff', '--tags', 'fabric')
    assert drift.returncode == 0 and '1 hosts drifted of 2' in drift.stdout, drift.stdout[-4000:]
    assert '-trust: pcp' in drift.stdout and '+trust: dscp' in drift.stdout, drift.stdout[-4000:]
    assert _rail_state(name)[2] == ['Priority trust state: pcp']  # the check run changed nothing
    fixed = _playbook(name, 'playbooks/fabric.yml', '--tags', 'roce')
    assert fixed.returncode == 0 and _recap_changed(fixed.stdout)['gpu01'] > 0, fixed.stdout[-4000:]
    assert _rail_state(name) == converged
