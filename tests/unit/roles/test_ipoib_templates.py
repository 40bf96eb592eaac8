# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ipoib role's templates (the network files are role fabric_netconf's, shared with role roce) rendered from a plan
and read back by the real parsers where this machine has them:
systemd-networkd's own key table (the Section.Key names in its binary), `netplan generate --root-dir`, `ifquery -i`;
NetworkManager keyfiles with configparser (NM's keyfile format is a GKeyFile)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import configparser
import os
import re
import shutil
import subprocess

import pytest
from _role_templates import render_template, render_template_text

from ansible_collections.aicluster.infra.plugins.module_utils import ipoib

ROLE = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'roles', 'ipoib')
NETCONF = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'roles', 'fabric_netconf')
# the ipoib role's files, by the names they had before fabric_netconf: role, template
TEMPLATES = {
    'etc/systemd/network/aicluster-ipoib.network': (NETCONF, 'etc/systemd/network/aicluster.network'),
    'etc/systemd/network/aicluster-ipoib.netdev': (NETCONF, 'etc/systemd/network/aicluster.netdev'),
    'etc/netplan/60-aicluster-ipoib.yaml': (NETCONF, 'etc/netplan/60-aicluster.yaml'),
    'etc/network/interfaces.d/aicluster-ipoib': (NETCONF, 'etc/network/interfaces.d/aicluster'),
    'etc/NetworkManager/system-connections/aicluster-ipoib.nmconnection':
        (NETCONF, 'etc/NetworkManager/system-connections/aicluster.nmconnection'),
}
NETWORKD = '/lib/systemd/systemd-networkd'
NETPLAN = shutil.which('netplan') or '/usr/sbin/netplan'
IFQUERY = shutil.which('ifquery') or '/usr/sbin/ifquery'

INFO = {'hcas': [{'name': 'mlx5_%d' % n, 'ports': [{'port': 1, 'link_layer': 'InfiniBand', 'netdev': 'ib%d' % n}]}
                 for n in range(2)]}
SETTINGS = {'subnets': ['10.10.0.0/24', '10.11.0.0/24'], 'node_index': 2, 'fleet_size': 4,
            'partitions': [{'name': 'Default', 'pkey': '0x7fff', 'mtu': 4096}, {'name': 't', 'pkey': 1, 'mtu': 2048}],
            'pkeys': [{'pkey': '0x0001', 'subnets': ['10.20.0.0/24', '10.21.0.0/24']}]}


def _plan(**overrides):
    return ipoib.ipoib_plan(dict(SETTINGS, **overrides), INFO)


def render(name, plan, **variables):
    """A template of the role rendered as the template module would (``item`` for the per-interface ones)."""
    values = {'__ipoib_plan': dict(plan, sysctl={}), 'ipoib_nodes_per_subnet': 4,
              # role fabric_netconf's variables, as tasks/main.yml passes them
              'fabric_netconf_name': 'ipoib', 'fabric_netconf_kind': 'ipoib',
              'fabric_netconf_interfaces': plan['interfaces']}
    values.update(variables)
    role, template = TEMPLATES.get(name, (ROLE, name))
    return render_template(os.path.join(role, 'templates', template + '.j2'), values)


def _ini(text):
    """systemd unit/INI text -> {section: {key: [values]}} (repeated keys kept, as systemd does)."""
    out, section = {}, None
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in '#;':
            continue
        if line.startswith('['):
            section = line.strip('[]')
            out.setdefault(section, {})
            continue
        key, _sep, value = line.partition('=')
        assert section and _sep, 'line outside a section or without =: %r' % line
        out[section].setdefault(key, []).append(value)
    return out


def _networkd_keys():
    if not os.path.exists(NETWORKD):
        pytest.skip('%s absent (Debian: systemd)' % NETWORKD)
    text = subprocess.run(['strings', NETWORKD], capture_output=True, text=True, check=True).stdout
    return set(re.findall(r'^([A-Z][A-Za-z]+\.[A-Z][A-Za-z]+)$', text, re.M))


def test_networkd_files_use_only_keys_networkd_knows():
    plan = _plan()
    keys = _networkd_keys()
    parent = _ini(render('etc/systemd/network/aicluster-ipoib.network', plan, item=plan['interfaces'][0]))
    assert parent == {'Match': {'Name': ['ib0']}, 'Link': {'MTUBytes': ['4092']},
                      'Network': {'Address': ['10.10.0.3/24'], 'LinkLocalAddressing': ['no'],
                                  'ConfigureWithoutCarrier': ['yes'], 'IPoIB': ['ib0.8001']},
                      'IPoIB': {'Mode': ['datagram']}}
    child = plan['interfaces'][2]
    netdev = _ini(render('etc/systemd/network/aicluster-ipoib.netdev', plan, item=child))
    assert netdev == {'NetDev': {'Name': ['ib0.8001'], 'Kind': ['ipoib']},
                      'IPoIB': {'PartitionKey': ['0x8001'], 'Mode': ['datagram']}}
    network = _ini(render('etc/systemd/network/aicluster-ipoib.network', plan, item=child))
    assert network['Link'] == {'MTUBytes': ['2044']} and 'IPoIB' not in network['Network']
    for parsed in (parent, netdev, network):
        for section, values in parsed.items():
            for key in values:
                assert '%s.%s' % (section, key) in keys, '%s.%s is not a systemd-networkd setting' % (section, key)


def test_netplan_generate_accepts_the_yaml(tmp_path):
    if not os.path.exists(NETPLAN):
        pytest.skip('%s absent (Debian: netplan.io)' % NETPLAN)
    plan = _plan(pkeys=[])
    text = render('etc/netplan/60-aicluster-ipoib.yaml', plan)
    (tmp_path / 'etc' / 'netplan').mkdir(parents=True)
    path = tmp_path / 'etc' / 'netplan' / '60-aicluster-ipoib.yaml'
    path.write_text(text)
    path.chmod(0o600)
    run = subprocess.run([NETPLAN, 'generate', '--root-dir', str(tmp_path)], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    generated = tmp_path / 'run' / 'systemd' / 'network' / '10-netplan-ib0.network'
    parsed = _ini(generated.read_text())
    assert parsed['Network']['Address'] == ['10.10.0.3/24']
    assert parsed['Link']['MTUBytes'] == ['4092']
    assert parsed['IPoIB']['Mode'] == ['datagram']


def test_ifquery_reads_the_stanzas(tmp_path):
    if not os.path.exists(IFQUERY):
        pytest.skip('%s absent (Debian: ifupdown)' % IFQUERY)
    plan = _plan()
    path = tmp_path / 'interfaces'
    path.write_text(render('etc/network/interfaces.d/aicluster-ipoib', plan))
    listed = subprocess.run([IFQUERY, '-i', str(path), '--list', '--allow', 'auto', '--state-dir', str(tmp_path)],
                            capture_output=True, text=True, check=False)
    assert listed.returncode == 0, listed.stderr
    assert [name for name in listed.stdout.split() if name != 'lo'] == ['ib0', 'ib1', 'ib0.8001', 'ib1.8001']
    child = subprocess.run([IFQUERY, '-i', str(path), '--state-dir', str(tmp_path), 'ib0.8001'],
                           capture_output=True, text=True, check=False)
    assert child.returncode == 0, child.stderr
    options = {}
    for line in child.stdout.splitlines():
        key, _sep, value = line.partition(': ')
        options.setdefault(key, []).append(value)
    assert options['address'] == ['10.20.0.3'] and options['netmask'] == ['255.255.255.0']
    assert options['mtu'] == ['2044']
    # the child is made before its mode is set
    assert options['pre-up'] == ['[ -e /sys/class/net/ib0.8001 ] || echo 0x8001 > /sys/class/net/ib0/create_child',
                                 'echo datagram > /sys/class/net/ib0.8001/mode']
    assert options['post-down'] == ['echo 0x8001 > /sys/class/net/ib0/delete_child']


def test_networkmanager_keyfiles():
    plan = _plan()
    parent = configparser.ConfigParser(interpolation=None)
    parent.read_string(render('etc/NetworkManager/system-connections/aicluster-ipoib.nmconnection', plan,
                              item=plan['interfaces'][1]))
    assert dict(parent['infiniband']) == {'transport-mode': 'datagram', 'mtu': '4092'}
    assert parent['connection']['type'] == 'infiniband' and parent['connection']['interface-name'] == 'ib1'
    assert parent['ipv4']['address1'] == '10.11.0.3/24'
    child = configparser.ConfigParser(interpolation=None)
    child.read_string(render('etc/NetworkManager/system-connections/aicluster-ipoib.nmconnection', plan,
                             item=plan['interfaces'][3]))
    # NM's p-key: a 16-bit integer with the full-membership bit; the interface name <parent>.<p-key in 4 hex digits>
    assert dict(child['infiniband']) == {'transport-mode': 'datagram', 'mtu': '2044', 'parent': 'ib1', 'p-key': '32769'}
    assert child['connection']['interface-name'] == 'ib1.8001'


def test_the_sysctl_file():
    plan = dict(_plan(), sysctl=ipoib.neigh_gc_thresh(2000, 2))
    text = render('etc/sysctl.d/60-aicluster-ipoib.conf', plan, __ipoib_plan=plan, ipoib_nodes_per_subnet=2000)
    lines = [line for line in text.splitlines() if line and not line.startswith('#')]
    assert lines == ['net.ipv4.neigh.default.gc_thresh1 = 4096', 'net.ipv4.neigh.default.gc_thresh2 = 8192',
                     'net.ipv4.neigh.default.gc_thresh3 = 16384']


@pytest.mark.parametrize('role', [ROLE, NETCONF], ids=['ipoib', 'fabric_netconf'])
def test_every_template_starts_with_ansible_managed(role):
    for root, _dirs, files in os.walk(os.path.join(role, 'templates')):
        for name in files:
            with open(os.path.join(root, name), encoding='utf-8') as handle:
                assert handle.readline().strip() == '{{ ansible_managed | comment }}', name


def test_the_default_fleet_numbers_a_host_in_both_groups_once():
    import yaml
    with open(os.path.join(ROLE, 'defaults', 'main.yml'), encoding='utf-8') as handle:
        defaults = yaml.safe_load(handle)
    groups = {'gpu_nodes': ['gpu01', 'gpu02'], 'ib_subnet_manager': ['ctl01', 'gpu02']}
    fleet = render_template_text(defaults['ipoib_fleet'], {'groups': groups})
    assert fleet == ['gpu01', 'gpu02', 'ctl01']
    index = render_template_text(defaults['ipoib_node_index'], {'ipoib_fleet': fleet, 'inventory_hostname': 'ctl01'})
    assert int(index) == 2
    assert int(render_template_text(defaults['ipoib_node_index'], {'ipoib_fleet': fleet,
                                                                   'inventory_hostname': 'st01'})) == -1
