# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Role roce: its templates rendered from a plan (the unit per stack, the udev rule, the settings file, the RoCE
netdevs' network files through role fabric_netconf) and read back by systemd's and networkd's own key tables where this
machine has them; its defaults and argument_specs; its play in playbooks/fabric.yml; and the role itself run by
ansible-playbook on this machine against hwsim's stand-ins (ibstat, ibdev2netdev, show_gids, ibv_devinfo, mlnx_qos) and
tree, every path it writes redirected under tmp_path: a check run writes nothing, a run makes the ports lossless and a
second one changes nothing, the boot-time script then finds nothing to do, an InfiniBand host is left alone (said
once), and bad variables are refused one line each before anything changes."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import configparser
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml
from _paths import REPO
from _role_templates import render_template, render_template_text

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))

# pylint: disable=wrong-import-position
from ansible_collections.aicluster.infra.plugins.module_utils import rdma_qos_host, roce  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.mlnx_qos import parse_mlnx_qos  # noqa: E402
from hwsim import roce as hwsim_roce, sysfs  # noqa: E402
from hwsim.testing import HWSIM_ROOT, make_lab  # noqa: E402

ROLE = os.path.join(REPO, 'roles', 'roce')
NETCONF = os.path.join(REPO, 'roles', 'fabric_netconf')
SCRIPT = os.path.join(ROLE, 'files', 'aicluster-roce-qos')
NETWORKD = '/lib/systemd/systemd-networkd'
NETPLAN = shutil.which('netplan') or '/usr/sbin/netplan'
IFQUERY = shutil.which('ifquery') or '/usr/sbin/ifquery'
CORE = [os.path.join(folder, 'libsystemd-core-%s.so' % version)
        for folder in ('/usr/lib/x86_64-linux-gnu/systemd', '/usr/lib/systemd', '/lib/systemd')
        for version in ('252', '253', '254', '255', '256', '257')]
RAILS = ['mlx5_0', 'mlx5_3', 'mlx5_4', 'mlx5_5', 'mlx5_6', 'mlx5_7', 'mlx5_8', 'mlx5_9']
PATHS = {'__roce_unit_path': '/etc/systemd/system/aicluster-roce-qos.service',
         '__roce_settings_path': '/etc/aicluster/roce-qos.json',
         '__roce_udev_rule_path': '/etc/udev/rules.d/99-aicluster-roce-qos.rules',
         '__roce_script_path': '/usr/local/sbin/aicluster-roce-qos', '__roce_unit': 'aicluster-roce-qos.service'}


def _ib_info(profile='hgx-h100-roce'):
    with open(os.path.join(REPO, 'lab', 'hwsim', 'profiles', profile + '.yml'), encoding='utf-8') as handle:
        data = yaml.safe_load(handle)
    return {'hcas': [{'name': hca['name'], 'ca_type': hca['ca_type'], 'board_id': hca['board_id'],
                      'ports': [{'port': port['port'], 'link_layer': port['link_layer'], 'netdev': port['netdev']}
                                for port in hca['ports']]} for hca in data['hcas']]}


def _plan(**settings):
    return roce.roce_plan(dict({'rails': RAILS}, **settings), _ib_info())


def render(name, plan, role=ROLE, **variables):
    values = dict(PATHS, __roce_plan=plan, fabric_netconf_name='roce', fabric_netconf_kind='ethernet',
                  fabric_netconf_interfaces=plan['interfaces'])
    values.update(variables)
    return render_template(os.path.join(role, 'templates', name + '.j2'), values)


def _ini(text):
    """systemd unit/INI text -> {section: {key: [values]}}."""
    out, section = {}, None
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in '#;':
            continue
        if line.startswith('['):
            section = line.strip('[]')
            out.setdefault(section, {})
            continue
        key, sep, value = line.partition('=')
        assert section and sep, 'line outside a section or without =: %r' % line
        out[section].setdefault(key, []).append(value)
    return out


def _keys(path, pattern):
    """Section.Key names a systemd binary's gperf table holds (what its parser accepts)."""
    text = subprocess.run(['strings', path], capture_output=True, text=True, check=True).stdout
    return set(re.findall(pattern, text, re.M))


def _assert_known(parsed, keys, what):
    for section, values in parsed.items():
        for key in values:
            assert '%s.%s' % (section, key) in keys, '%s.%s is not a %s setting' % (section, key, what)


@pytest.mark.parametrize('stack, after, part_of', [
    ('doca', 'openibd.service sys-kernel-config.mount network.target', ['openibd.service']),
    ('inbox', 'rdma-load-modules@rdma.service sys-kernel-config.mount network.target', None),
], ids=['doca', 'inbox'])
def test_the_unit_follows_the_driver_and_reapplies_from_the_settings(stack, after, part_of):
    plan = _plan(stack=stack)
    unit = _ini(render('etc/systemd/system/aicluster-roce-qos.service', plan))
    expected = {'Description': ['Lossless RoCE QoS on the GPU-fabric ports (enp24s0np0 enp64s0np0 enp79s0np0 enp94s0np0 '
                                'enp154s0np0 enp192s0np0 enp206s0np0 enp220s0np0)'],
                'After': [after], 'ConditionPathExists': ['/etc/aicluster/roce-qos.json']}
    if part_of:
        expected['PartOf'] = part_of
    assert unit == {'Unit': expected,
                    'Service': {'Type': ['oneshot'], 'RemainAfterExit': ['yes'],
                                'ExecStart': ['/usr/local/sbin/aicluster-roce-qos --config /etc/aicluster/roce-qos.json']},
                    'Install': {'WantedBy': ['multi-user.target']}}
    core = next((path for path in CORE if os.path.exists(path)), None)
    if core is None:
        pytest.skip('libsystemd-core absent (Debian: systemd)')
    _assert_known(unit, _keys(core, r'^((?:Unit|Service|Install)\.[A-Z][A-Za-z]+)$'), 'systemd unit')


def test_the_udev_rule_restarts_the_unit_when_a_port_appears():
    lines = [line for line in render('etc/udev/rules.d/99-aicluster-roce-qos.rules', _plan()).splitlines()
             if line and not line.startswith('#')]
    assert len(lines) == 16
    assert lines[:2] == [
        'ACTION=="add", SUBSYSTEM=="net", NAME=="enp24s0np0", RUN+="/usr/bin/systemctl --no-block restart '
        'aicluster-roce-qos.service"',
        'ACTION=="add", SUBSYSTEM=="net", KERNEL=="enp24s0np0", RUN+="/usr/bin/systemctl --no-block restart '
        'aicluster-roce-qos.service"']
    for line in lines:   # udev(7): KEY=="match" or KEY+="assignment", comma separated
        for clause in line.split(', '):
            assert re.match(r'^(ACTION|SUBSYSTEM|NAME|KERNEL)=="[^"]+"$|^RUN\+="[^"]+"$', clause), clause


def test_the_settings_file_is_the_plans_and_the_script_reads_it():
    plan = _plan(sysfs_root='/run/hwsim/sys', configfs_root='/run/hwsim/config')
    data = json.loads(render('etc/aicluster/roce-qos.json', plan))
    assert data.pop('_comment').startswith('Ansible managed: the ports and settings /usr/local/sbin/aicluster-roce-qos')
    assert data == plan['settings_file']
    ports = rdma_qos_host.load_settings(data)
    assert [item['netdev'] for item in ports] == [item['netdev'] for item in plan['ports']]
    assert ports[0]['sysfs_root'] == '/run/hwsim/sys' and ports[0]['tool'] == 'mlnx_qos'


def test_every_template_starts_with_ansible_managed_or_carries_it():
    for root, _dirs, files in os.walk(os.path.join(ROLE, 'templates')):
        for name in files:
            with open(os.path.join(root, name), encoding='utf-8') as handle:
                first = handle.readline().strip()
            if name.endswith('.json.j2'):   # JSON has no comments: the text is the file's _comment
                assert first.startswith("{{ ({'_comment': ansible_managed ~"), name
            else:
                assert first == '{{ ansible_managed | comment }}', name


def _networkd_keys():
    if not os.path.exists(NETWORKD):
        pytest.skip('%s absent (Debian: systemd)' % NETWORKD)
    return _keys(NETWORKD, r'^([A-Z][A-Za-z]+\.[A-Z][A-Za-z]+)$')


def test_networkd_file_of_a_roce_netdev_with_and_without_an_address():
    keys = _networkd_keys()
    plan = _plan(subnets=['10.100.%d.0/24' % rail for rail in range(8)], node_index=0, fleet_size=4)
    parsed = _ini(render('etc/systemd/network/aicluster.network', plan, role=NETCONF, item=plan['interfaces'][1]))
    assert parsed == {'Match': {'Name': ['enp64s0np0']}, 'Link': {'MTUBytes': ['9000']},
                      'Network': {'Address': ['10.100.1.1/24'], 'LinkLocalAddressing': ['no'],
                                  'ConfigureWithoutCarrier': ['yes']}}
    _assert_known(parsed, keys, 'systemd-networkd')
    bare = _plan()
    parsed = _ini(render('etc/systemd/network/aicluster.network', bare, role=NETCONF, item=bare['interfaces'][0]))
    # no address of ours: networkd keeps the addresses configured elsewhere instead of flushing them
    assert parsed['Network'] == {'KeepConfiguration': ['yes'], 'LinkLocalAddressing': ['no'],
                                 'ConfigureWithoutCarrier': ['yes']}
    _assert_known(parsed, keys, 'systemd-networkd')
    assert parsed['Link'] == {'MTUBytes': ['9000']} and 'IPoIB' not in parsed


def test_netplan_ifupdown_and_networkmanager_files_of_roce_netdevs():
    plan = _plan(subnets=['10.100.%d.0/24' % rail for rail in range(8)], node_index=0, fleet_size=4)
    netplan = yaml.safe_load(render('etc/netplan/60-aicluster.yaml', plan, role=NETCONF))
    assert netplan['network']['ethernets']['enp24s0np0'] == {
        'match': {'name': 'enp24s0np0'}, 'dhcp4': False, 'dhcp6': False, 'link-local': [],
        'addresses': ['10.100.0.1/24'], 'mtu': 9000}
    bare = _plan()
    netplan = yaml.safe_load(render('etc/netplan/60-aicluster.yaml', bare, role=NETCONF))
    assert 'addresses' not in netplan['network']['ethernets']['enp24s0np0']
    assert netplan['network']['ethernets']['enp24s0np0']['critical'] is True   # networkd: keep others' addresses
    stanzas = render('etc/network/interfaces.d/aicluster', bare, role=NETCONF)
    assert 'iface enp24s0np0 inet manual\n    mtu 9000\n' in stanzas and 'mode' not in stanzas
    stanzas = render('etc/network/interfaces.d/aicluster', plan, role=NETCONF)
    assert 'iface enp24s0np0 inet static\n    address 10.100.0.1/24\n    mtu 9000\n' in stanzas
    keyfile = configparser.ConfigParser(interpolation=None)
    keyfile.read_string(render('etc/NetworkManager/system-connections/aicluster.nmconnection', bare, role=NETCONF,
                               item=bare['interfaces'][0]))
    assert dict(keyfile['connection']) == {'id': 'aicluster-roce-enp24s0np0', 'type': 'ethernet',
                                           'interface-name': 'enp24s0np0', 'autoconnect': 'true'}
    assert dict(keyfile['ethernet']) == {'mtu': '9000'} and dict(keyfile['ipv4']) == {'method': 'disabled'}


def test_netplan_generate_accepts_the_yaml(tmp_path):
    if not os.path.exists(NETPLAN):
        pytest.skip('%s absent (Debian: netplan.io)' % NETPLAN)
    plan = _plan(subnets=['10.100.%d.0/24' % rail for rail in range(8)], node_index=0, fleet_size=4)
    (tmp_path / 'etc' / 'netplan').mkdir(parents=True)
    path = tmp_path / 'etc' / 'netplan' / '60-aicluster-roce.yaml'
    path.write_text(render('etc/netplan/60-aicluster.yaml', plan, role=NETCONF))
    path.chmod(0o600)
    run = subprocess.run([NETPLAN, 'generate', '--root-dir', str(tmp_path)], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    parsed = _ini((tmp_path / 'run' / 'systemd' / 'network' / '10-netplan-enp64s0np0.network').read_text())
    assert parsed['Network']['Address'] == ['10.100.1.1/24'] and parsed['Link']['MTUBytes'] == ['9000']


def test_ifquery_reads_the_stanzas_with_and_without_an_address(tmp_path):
    if not os.path.exists(IFQUERY):
        pytest.skip('%s absent (Debian: ifupdown)' % IFQUERY)
    plan = _plan(addresses={'enp64s0np0': '10.100.1.1/24'})
    path = tmp_path / 'interfaces'
    path.write_text(render('etc/network/interfaces.d/aicluster', plan, role=NETCONF))
    options = {}
    for netdev in ('enp24s0np0', 'enp64s0np0'):
        done = subprocess.run([IFQUERY, '-i', str(path), '--state-dir', str(tmp_path), netdev], capture_output=True,
                              text=True, check=False)
        assert done.returncode == 0, done.stderr
        options[netdev] = dict(line.split(': ', 1) for line in done.stdout.splitlines())
    # interfaces(5) of ifupdown 0.8: the manual method takes mtu (ifup then runs ip link set dev X mtu 9000)
    assert options['enp24s0np0'] == {'mtu': '9000'}
    wanted = {'address': '10.100.1.1', 'netmask': '255.255.255.0', 'mtu': '9000', 'broadcast': None}
    assert dict(options['enp64s0np0'], broadcast=None) == wanted


def _defaults():
    with open(os.path.join(ROLE, 'defaults', 'main.yml'), encoding='utf-8') as handle:
        return yaml.safe_load(handle)


def test_argument_specs_and_defaults_name_the_same_variables():
    with open(os.path.join(ROLE, 'meta', 'argument_specs.yml'), encoding='utf-8') as handle:
        options = yaml.safe_load(handle)['argument_specs']['main']['options']
    defaults = _defaults()
    assert set(options) == set(defaults)
    for name, spec in options.items():
        if 'default' in spec:
            assert spec['default'] == defaults[name], name


def test_the_rails_default_to_the_verify_stages_and_the_stack_to_the_rdma_roles():
    defaults = _defaults()
    assert render_template_text(defaults['roce_rails'], {'verify_ib_hcas': RAILS}) == RAILS
    assert render_template_text(defaults['roce_rails'], {}) == []
    assert render_template_text(defaults['roce_stack'], {'rdma_stack': 'inbox'}) == 'inbox'
    assert render_template_text(defaults['roce_stack'], {}) == 'doca'
    fleet = render_template_text(defaults['roce_fleet'], {'groups': {'gpu_nodes': ['gpu01', 'gpu02']}})
    assert int(render_template_text(defaults['roce_node_index'], {'roce_fleet': fleet,
                                                                  'inventory_hostname': 'gpu02'})) == 1


def test_the_play_runs_after_ipoib_on_the_gpu_nodes():
    with open(os.path.join(REPO, 'playbooks', 'fabric.yml'), encoding='utf-8') as handle:
        plays = yaml.safe_load(handle)
    names = [play['name'] for play in plays]
    index = names.index('Lossless RoCE on the GPU-fabric ports')
    assert index > names.index('IPoIB on the GPU-fabric rails')
    play = plays[index]
    assert play['hosts'] == 'gpu_nodes' and play['tags'] == ['fabric', 'roce']
    assert play['roles'] == [{'role': 'aicluster.infra.roce'}]


# -- the role run by ansible-playbook ---------------------------------------------------------------------------------

class Host(object):
    """This machine as gpu01 of an hgx-h100-roce (or -ib) lab: hwsim's stand-ins first on the PATH, its tree as sysfs
    and configfs, and every file the role writes under tmp_path."""

    def __init__(self, tmp_path, profile='hgx-h100-roce'):
        self.tmp = tmp_path
        self.lab = make_lab(tmp_path, profile, compute=1)
        self.lab.ok('gpu01', ['hwsim', 'boot'])
        self.root = self.lab.root('gpu01')
        self.bin = tmp_path / 'bin'
        self.bin.mkdir()
        for tool in ('ibstat', 'ibdev2netdev', 'show_gids', 'ibv_devinfo', 'mlnx_qos', 'dcb'):
            os.symlink(os.path.join(HWSIM_ROOT, 'bin', 'hwsim'), str(self.bin / tool))
        self.etc = tmp_path / 'etc'
        (self.etc / 'systemd' / 'network').mkdir(parents=True)
        self.sys = os.path.join(self.root, sysfs.SYS_DIR)
        self.config = os.path.join(self.root, hwsim_roce.CONFIG_DIR)
        self.play = tmp_path / 'play.yml'
        self.play.write_text('- name: Lossless RoCE on the GPU-fabric ports\n  hosts: localhost\n  gather_facts: false\n'
                             '  roles:\n    - role: aicluster.infra.roce\n')
        self.extra = {
            'ansible_python_interpreter': sys.executable, 'verify_ib_hcas': RAILS[:2],
            'roce_sysfs_root': self.sys, 'roce_configfs_root': self.config, 'roce_renderer': 'networkd',
            'roce_subnets': ['10.100.0.0/24', '10.100.1.0/24'], 'roce_node_index': 0,
            '__roce_unit_path': str(self.etc / 'aicluster-roce-qos.service'),
            '__roce_settings_path': str(self.etc / 'roce-qos.json'),
            '__roce_udev_rule_path': str(self.etc / 'udev' / 'rules.d' / '99-aicluster-roce-qos.rules'),  # absent: a host without udev
            '__roce_script_path': str(tmp_path / 'sbin' / 'aicluster-roce-qos'),
            '__roce_lib_dir': str(tmp_path / 'lib'),
            '__fabric_netconf_networkd_dir': str(self.etc / 'systemd' / 'network')}

    def run(self, *args, **extra):
        env = dict(os.environ, PATH='%s:%s' % (self.bin, os.environ.get('PATH', '')), ANSIBLE_NOCOLOR='1',
                   ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.collections'), ANSIBLE_LOCALHOST_WARNING='0',
                   ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'), ANSIBLE_INVENTORY_UNPARSED_WARNING='0',
                   ANSIBLE_RETRY_FILES_ENABLED='0', **self.lab.env('gpu01'))
        env.pop('ANSIBLE_CALLBACKS_ENABLED', None)
        playbook = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
        done = subprocess.run([playbook, '-i', 'localhost,', '-c', 'local', str(self.play),
                               '-e', json.dumps(dict(self.extra, **extra))] + list(args),
                              cwd=str(self.tmp), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, timeout=300, check=False)
        recap = dict((key, int(value)) for key, value in
                     re.findall(r'\b(ok|changed|failed)=(\d+)', done.stdout.rsplit('PLAY RECAP', 1)[-1]))
        return done.returncode, recap, done.stdout

    def qos(self, netdev):
        return parse_mlnx_qos(self.lab.ok('gpu01', ['mlnx_qos', '-i', netdev]))

    def files(self):
        found = {}
        for base in (self.etc, self.tmp / 'sbin', self.tmp / 'lib', self.sys, self.config):
            for folder, _dirs, names in os.walk(str(base)):
                for name in names:
                    path = os.path.join(folder, name)
                    with open(path, 'rb') as handle:
                        found[path] = handle.read()
        return found


def test_the_role_in_check_mode_writes_nothing(tmp_path):
    host = Host(tmp_path)
    before = host.files()
    code, _recap, output = host.run('--check', '--diff')
    assert code == 0, output
    assert host.files() == before and host.qos('enp24s0np0')['trust'] == 'pcp'
    assert '+trust: dscp' in output and '+MTUBytes=9000' in output and '"dscp_map": {' in output


def test_the_role_makes_the_ports_lossless_once_and_the_boot_script_agrees(tmp_path):
    host = Host(tmp_path)
    # the network files are written, but nothing may reconfigure this machine's network: fabric_netconf off here
    code, recap, output = host.run(roce_network_enabled=False, __roce_persist=False)
    assert code == 0, output
    assert (host.qos('enp64s0np0')['trust'], host.qos('enp64s0np0')['pfc_enabled']) == ('dscp', [0, 0, 0, 1, 0, 0, 0, 0])
    assert host.qos('enp170s0f0np0')['trust'] == 'pcp'           # the storage NIC is not a rail: left alone
    code, recap, output = host.run(roce_network_enabled=False, __roce_persist=False)
    assert code == 0 and recap['changed'] == 0, output
    # the settings file of a check run with persistence on is what the script re-applies: nothing to do
    settings = roce.roce_plan({'rails': RAILS[:2], 'sysfs_root': host.sys, 'configfs_root': host.config},
                              _ib_info())['settings_file']
    (tmp_path / 'roce-qos.json').write_text(json.dumps(settings))
    env = dict(os.environ, PATH='%s:%s' % (host.bin, os.environ.get('PATH', '')), **host.lab.env('gpu01'))
    done = subprocess.run([SCRIPT, '--config', str(tmp_path / 'roce-qos.json'), '--lib',
                           os.path.join(REPO, '.collections')], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stdout.splitlines() == [
        'enp24s0np0 (mlx5_0, mlnx_qos): unchanged', 'enp64s0np0 (mlx5_3, mlnx_qos): unchanged'], done.stderr


def test_an_infiniband_host_is_left_alone_and_said_so_once(tmp_path):
    host = Host(tmp_path, profile='hgx-h100-ib')
    code, recap, output = host.run('--check', verify_ib_hcas=RAILS)
    assert code == 0 and recap['changed'] == 0, output
    assert output.count('roce: nothing to do on localhost: GPU-fabric ports are InfiniBand') == 1


def test_bad_variables_are_refused_one_line_each_before_any_change(tmp_path):
    host = Host(tmp_path)
    before = host.files()
    code, _recap, output = host.run(roce_pfc_priorities=[3, 9], roce_mtu=100, roce_dscp_map={'64': 3})
    assert code != 0
    assert ('roce on localhost: invalid variables. roce_mtu must be an MTU in bytes (allowed: 1280-9978; 9000 for '
            'RoCE, the switch ports at 9216 or more), got 100. roce_pfc_priorities: 9 is not a priority (allowed: 0-7). '
            'roce_dscp_map: 64 is not a DSCP (allowed: 0-63)') in ' '.join(output.split())  # however the callback wraps it
    assert host.files() == before


# -- the verify stage's net.roce_qos: the roce role's plan and its rdma_qos task in check mode ------------------------

def _verify_roce_qos(host, tmp_path):
    """Run roles/verify_ib/tasks/roce.yml on this machine as gpu01; the outcome it decided."""
    out = tmp_path / 'roce_qos.json'
    play = tmp_path / 'verify.yml'
    play.write_text(
        '- name: net.roce_qos\n  hosts: localhost\n  gather_facts: false\n  vars:\n'
        '    verify_ib_link_layer: Ethernet\n    verify_ib_mtu_enabled: false\n    verify_ib_roce_qos_enabled: true\n'
        '    __verify_ib_roce_wanted: true\n  tasks:\n'
        '    - ansible.builtin.import_tasks: %s\n'
        '    - ansible.builtin.copy:\n        content: "{{ verify_ib_roce_outcome | to_json }}"\n        dest: %s\n'
        % (os.path.join(ROLE, '..', 'verify_ib', 'tasks', 'roce.yml'), out))
    saved, host.play = host.play, play
    try:
        code, _recap, output = host.run()
    finally:
        host.play = saved
    assert code == 0, output
    return json.loads(out.read_text())['nodes']['localhost']


def test_net_roce_qos_fails_a_fresh_port_naming_the_setting_and_passes_once_the_role_ran(tmp_path):
    host = Host(tmp_path)
    results = _verify_roce_qos(host, tmp_path)
    assert [r['subject'] for r in results] == ['enp24s0np0 (mlx5_0:1)', 'enp64s0np0 (mlx5_3:1)']
    assert not any(r['passed'] for r in results)
    assert 'trust: pcp -> dscp' in results[0]['measured'] and 'trust: pcp -> dscp' in results[0]['message']
    assert host.qos('enp24s0np0')['trust'] == 'pcp'                 # check mode: the check wrote nothing
    code, _recap, output = host.run(roce_network_enabled=False, __roce_persist=False)
    assert code == 0, output
    results = _verify_roce_qos(host, tmp_path)
    assert all(r['passed'] for r in results), results
    host.lab.ok('gpu01', ['mlnx_qos', '-i', 'enp64s0np0', '--trust', 'pcp'])  # a hand change
    results = _verify_roce_qos(host, tmp_path)
    assert [r['passed'] for r in results] == [True, False] and 'trust: dscp -> ' not in results[1]['message']
    assert any(line.startswith('trust: pcp -> dscp') for line in results[1]['measured']), results[1]
