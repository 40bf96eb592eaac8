# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for the cluster filters: values through, errors turned into AnsibleFilterError, docs present."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from _paths import REPO, own_fixture

from ansible_collections.aicluster.infra.plugins.filter.cluster import FilterModule

FILTERS = FilterModule().filters()
NAMES = ['hostlist_compress', 'hostlist_expand', 'parse_scontrol_show_node', 'gres_conf', 'nccl_env', 'ipoib_address',
         'expected_link_gbps']

GPU_INFO = {'gpus': [
    {'index': index, 'name': 'NVIDIA H100 80GB HBM3', 'minor_number': index, 'device_file': '/dev/nvidia%d' % index,
     'cpu_affinity': '0-47,96-143' if index < 4 else '48-95,144-191', 'mig_enabled': False, 'mig_devices': []}
    for index in range(8)]}
IB_INFO = {'hcas': [
    {'name': 'mlx5_%d' % index, 'ports': [{'port': 1, 'state': 'Active', 'link_layer': 'InfiniBand', 'roce_v2_gid_index': None}]}
    for index in (0, 1, 10)]}


def test_all_filters_exposed():
    assert sorted(FILTERS) == sorted(NAMES)


@pytest.mark.parametrize('name, args, kwargs, expected', [
    ('hostlist_compress', (['gpu03', 'gpu01', 'gpu02'],), {}, 'gpu[01-03]'),
    ('hostlist_expand', ('a[1-2],b3',), {}, ['a1', 'a2', 'b3']),
    ('gres_conf', (GPU_INFO,), {}, ['Name=gpu Type=h100 File=/dev/nvidia[0-3] Cores=0-47',
                                    'Name=gpu Type=h100 File=/dev/nvidia[4-7] Cores=48-95']),
    ('gres_conf', (GPU_INFO,), {'autodetect': 'nvml'}, ['AutoDetect=nvml']),
    ('nccl_env', (IB_INFO,), {'hca_exclude': ['mlx5_1']}, {'NCCL_IB_HCA': '=mlx5_0:1,mlx5_10:1'}),
    ('ipoib_address', (3, '10.10.0.0/16'), {'offset': 100}, '10.10.0.104/16'),
    ('expected_link_gbps', ('4X', 106.25), {}, 400.0),
    ('parse_scontrol_show_node', ('No nodes in the system\n',), {}, []),
    ('parse_scontrol_show_node', ('Node gpu9 not found\n',), {'with_errors': True}, {'nodes': [], 'errors': ['Node gpu9 not found']}),
], ids=['compress', 'expand', 'gres', 'gres-nvml', 'nccl', 'ipoib', 'link', 'scontrol-empty', 'scontrol-with-errors'])
def test_filter_values(name, args, kwargs, expected):
    assert FILTERS[name](*args, **kwargs) == expected


def test_parse_scontrol_fixture():
    nodes = FILTERS['parse_scontrol_show_node'](own_fixture('scontrol/scontrol-22.05-h100-nodes-drained-handmade.txt'))
    assert [(node['NodeName'], node['State']) for node in nodes] == [
        ('gpu01', 'IDLE'), ('gpu02', 'IDLE+DRAIN'), ('gpu03', 'DOWN+NOT_RESPONDING')]


@pytest.mark.parametrize('name, args, message', [
    ('hostlist_expand', ('gpu[5-3]',), "hostlist_expand: invalid hostlist 'gpu\\[5-3\\]': reversed range"),
    ('hostlist_expand', ('gpu[1-3',), 'unbalanced'),
    ('hostlist_expand', (None,), 'must be a string'),
    ('hostlist_compress', (['a,b'],), "hostlist_compress: invalid host name 'a,b'"),
    ('parse_scontrol_show_node', ('Node gpu9 not found\n',), 'parse_scontrol_show_node: scontrol reported: Node gpu9 not found'),
    ('parse_scontrol_show_node', ('garbage\n',), 'expected a line beginning NodeName='),
    ('gres_conf', ('x',), 'gres_conf: gpu_info must be a dict'),
    ('nccl_env', ({'hcas': []},), 'nccl_env: no active'),
    ('ipoib_address', (300, '10.0.0.0/24'), 'ipoib_address: subnet 10.0.0.0/24 has 254 usable addresses; index 300'),
    ('expected_link_gbps', ('4X', 42), 'expected_link_gbps: unknown lane speed 42'),
], ids=['reversed', 'unbalanced', 'not-text', 'bad-name', 'not-found', 'garbage', 'gres', 'nccl', 'ipoib', 'link'])
def test_filter_errors(name, args, message):
    with pytest.raises(AnsibleFilterError, match=message):
        FILTERS[name](*args)


@pytest.mark.parametrize('name', NAMES, ids=NAMES)
def test_sidecar_doc(name):
    path = os.path.join(REPO, 'plugins', 'filter', name + '.yml')
    with open(path, encoding='utf-8') as handle:
        doc = yaml.safe_load(handle)
    assert sorted(doc) == ['DOCUMENTATION', 'EXAMPLES', 'RETURN']
    assert doc['DOCUMENTATION']['name'] == name
    assert '_input' in doc['DOCUMENTATION']['options']
    assert '_value' in doc['RETURN']
    assert 'aicluster.infra.%s' % name in doc['EXAMPLES']


ANSIBLE = shutil.which('ansible', path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get('PATH', ''))


def _ansible_env():
    # Not the repository's ansible.cfg (the Makefile exports it): its YAML result format is not JSON.
    env = {key: value for key, value in os.environ.items() if key != 'ANSIBLE_CONFIG'}
    env['ANSIBLE_CALLBACK_RESULT_FORMAT'] = 'json'
    env['ANSIBLE_COLLECTIONS_PATH'] = os.path.join(REPO, '.collections')
    env['ANSIBLE_LOCALHOST_WARNING'] = 'false'
    env['ANSIBLE_INVENTORY_UNPARSED_WARNING'] = 'false'
    env['ANSIBLE_STDOUT_CALLBACK'] = 'ansible.builtin.minimal'
    env['ANSIBLE_NOCOLOR'] = 'true'
    return env


def _adhoc(tmp_path, template):
    """``ansible localhost -m debug -a msg=<template>``, run outside the repository (its ansible.cfg is not ours)."""
    return subprocess.run([ANSIBLE, 'localhost', '-c', 'local', '-i', 'localhost,', '-m', 'ansible.builtin.debug',
                           '-a', 'msg=%s' % template], env=_ansible_env(), cwd=str(tmp_path), check=False, timeout=300,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)


@pytest.mark.skipif(ANSIBLE is None, reason='ansible is not installed')
def test_filters_in_a_real_template(tmp_path):
    """One ad-hoc run: the filters load by FQCN and render through Jinja."""
    template = ("{{ {'c': ['gpu2', 'gpu1'] | aicluster.infra.hostlist_compress, "
                "'e': 'rack[1-2]-n[1-2]' | aicluster.infra.hostlist_expand, "
                "'a': 7 | aicluster.infra.ipoib_address('10.1.0.0/16'), "
                "'l': '4X' | aicluster.infra.expected_link_gbps('HDR')} }}")
    done = _adhoc(tmp_path, template)
    assert done.returncode == 0, done.stdout + done.stderr
    msg = json.loads(done.stdout.split('=>', 1)[1])['msg']
    assert msg == {'c': 'gpu[1-2]', 'e': ['rack1-n1', 'rack1-n2', 'rack2-n1', 'rack2-n2'], 'a': '10.1.0.8/16', 'l': 200.0}


@pytest.mark.skipif(ANSIBLE is None, reason='ansible is not installed')
def test_filter_error_in_a_real_template(tmp_path):
    done = _adhoc(tmp_path, "{{ 'gpu[5-3]' | aicluster.infra.hostlist_expand }}")
    assert done.returncode != 0
    assert "reversed range '5-3'" in done.stdout + done.stderr


def test_nccl_env_leaves_the_nvswitch_bridges_out():
    """An HGX B200's bridge functions (ib_info nvswitch_bridge / nvswitch_bridges) carry no NCCL traffic."""
    info = {'hcas': [dict(hca, nvswitch_bridge=hca['name'] == 'mlx5_10') for hca in IB_INFO['hcas']],
            'nvswitch_bridges': ['mlx5_1']}
    assert FILTERS['nccl_env'](info) == {'NCCL_IB_HCA': '=mlx5_0:1'}
