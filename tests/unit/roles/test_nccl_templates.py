# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nccl role's /etc/nccl.conf rendered as the template module renders it, from the role's own defaults and the
facts the collection's ib_info module reads on hwsim's InfiniBand and RoCE nodes; read back as NCCL reads it, and its
NCCL_IB_HCA matched against the ports the way NCCL (and hwsim's nccl-tests) match it. And enroot's mount of the file."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import io
import os
import sys

import pytest
import yaml
from _module_runner import run_main
from _paths import REPO
from _role_templates import render_template, render_template_text

from ansible_collections.aicluster.infra.plugins.module_utils import nccl_conf
from ansible_collections.aicluster.infra.plugins.modules import ib_info

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))

# pylint: disable=wrong-import-position
from hwsim import cli  # noqa: E402
from hwsim.testing import make_lab  # noqa: E402
from hwsim.tools import nccl as hwsim_nccl  # noqa: E402

ROLE = os.path.join(REPO, 'roles', 'nccl')
LAB_VARS = os.path.join(REPO, 'inventories', 'lab', 'group_vars', 'all', 'main.yml')
COMPUTE = ['mlx5_0', 'mlx5_3', 'mlx5_4', 'mlx5_5', 'mlx5_6', 'mlx5_7', 'mlx5_8', 'mlx5_9']


def _facts(tmp_path, profile):
    lab = make_lab(tmp_path, profile, compute=1)
    lab.ok('gpu01', ['hwsim', 'boot'])

    def tool(argv):
        out, err = io.StringIO(), io.StringIO()
        rc = cli.main([os.path.basename(argv[0])] + list(argv[1:]), environ=lab.env('gpu01'), stdout=out, stderr=err)
        return rc, out.getvalue(), err.getvalue()
    tools = dict((name, tool) for name in ('ibstat', 'ibdev2netdev', 'show_gids', 'ibv_devinfo'))
    result = run_main(ib_info, {'sysfs_root': os.path.join(lab.root('gpu01'), 'sys')}, tools)[0]
    assert not result.get('failed'), result
    return lab, result


def _settings(**inventory):
    """__nccl_settings from the role's defaults and vars, rendered with the lab inventory's variables."""
    with open(LAB_VARS, encoding='utf-8') as handle:
        lab = yaml.safe_load(handle)
    variables = dict({'verify_ib_hcas': lab['verify_ib_hcas']}, **inventory)
    with open(os.path.join(ROLE, 'defaults', 'main.yml'), encoding='utf-8') as handle:
        for key, value in yaml.safe_load(handle).items():
            variables.setdefault(key, render_template_text(value, variables) if isinstance(value, str) else value)
    with open(os.path.join(ROLE, 'vars', 'main.yml'), encoding='utf-8') as handle:
        template = yaml.safe_load(handle)['__nccl_settings']
    return dict((key, render_template_text(value, variables)) for key, value in template.items())


def _render(plan):
    return render_template(os.path.join(ROLE, 'templates', 'etc', 'nccl.conf.j2'), {'__nccl_plan': plan})


def _settings_lines(text):
    """The file's lines that are not comments; every other line is a comment NCCL skips (# in the first column)."""
    lines = text.splitlines()
    assert all(line.startswith('#') for line in lines if '=' not in line or line.startswith('#')), lines
    return [line for line in lines if not line.startswith('#')]


def _nccl_selects(conf_text):
    """The GPU-fabric ports hwsim's nccl-tests (NCCL's matching rule) takes with the file's NCCL_IB_HCA."""
    spec = hwsim_nccl.hca_filter(nccl_conf.parse_conf(conf_text).get('NCCL_IB_HCA'))
    return sorted(ca for ca in COMPUTE + ['mlx5_1', 'mlx5_2'] if hwsim_nccl.hca_selected(ca, 1, spec))


def test_an_infiniband_node_gets_its_gpu_fabric_and_nothing_else(tmp_path):
    _lab, facts = _facts(tmp_path, 'hgx-h100-ib')
    plan = nccl_conf.conf_plan(_settings(), facts)
    assert plan['problems'] == [] and plan['warnings'] == [] and plan['link_layer'] == 'InfiniBand'
    text = _render(plan)
    assert text.endswith('\nNCCL_IB_HCA==mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1,mlx5_8:1,mlx5_9:1\n')
    assert 'Ansible managed' in text and _settings_lines(text) == plan['lines']
    assert nccl_conf.parse_conf(text) == plan['env']
    # exactly the compute HCAs: never the storage NIC mlx5_1, and mlx5_1 never matches mlx5_10.. (the leading =)
    assert _nccl_selects(text) == sorted(COMPUTE)


def test_a_roce_node_gets_its_gid_index_and_the_roce_traffic_class(tmp_path):
    _lab, facts = _facts(tmp_path, 'hgx-h100-roce')
    plan = nccl_conf.conf_plan(_settings(), facts)
    assert plan['problems'] == [] and plan['warnings'] == [] and plan['link_layer'] == 'Ethernet'
    env = nccl_conf.parse_conf(_render(plan))
    assert env == {'NCCL_IB_HCA': '=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1,mlx5_8:1,mlx5_9:1',
                   'NCCL_IB_GID_INDEX': '3', 'NCCL_IB_TC': '106'}
    assert _nccl_selects(_render(plan)) == sorted(COMPUTE)
    # the roce role's ToS is the default traffic class
    assert nccl_conf.parse_conf(_render(nccl_conf.conf_plan(_settings(roce_tos=98), facts)))['NCCL_IB_TC'] == '98'
    assert 'NCCL_IB_GID_INDEX' not in nccl_conf.conf_plan(_settings(nccl_ib_gid_index='nccl'), facts)['env']


def test_extra_variables_follow_the_roles_own(tmp_path):
    _lab, facts = _facts(tmp_path, 'hgx-h100-ib')
    plan = nccl_conf.conf_plan(_settings(nccl_env_extra={'NCCL_IB_TIMEOUT': 22, 'NCCL_DEBUG': 'WARN'},
                                         nccl_ib_sl='1'), facts)
    assert _settings_lines(_render(plan)) == [
        'NCCL_IB_HCA==mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1,mlx5_8:1,mlx5_9:1',
        'NCCL_IB_SL=1', 'NCCL_DEBUG=WARN', 'NCCL_IB_TIMEOUT=22']


def test_the_role_defaults_pass_their_own_checks():
    assert nccl_conf.settings_problems(_settings()) == []
    assert _settings()['hca_include'] == COMPUTE


# enroot-mount.c's option table (NVIDIA/enroot bin/enroot-mount.c): an option it does not know goes to mount(2) as data
ENROOT_MOUNT_OPTIONS = {'x-create=file', 'bind', 'ro', 'nosuid', 'nodev', 'noexec', 'nofail', 'silent'}


@pytest.mark.parametrize('path', ['/etc/nccl.conf', '/etc/nccl/site.conf'])
def test_enroot_mounts_the_nodes_file_where_nccl_reads_it(path):
    text = render_template(os.path.join(REPO, 'roles', 'enroot', 'templates', 'etc', 'enroot', 'mounts.d',
                                        '60-aicluster-nccl.fstab.j2'), {'enroot_nccl_conf_mount': path})
    entries = [line.split() for line in text.splitlines() if line.strip() and not line.lstrip().startswith('#')]
    assert len(entries) == 1 and len(entries[0]) == 4
    source, target, fstype, options = entries[0]
    assert (source, target, fstype) == (path, '/etc/nccl.conf', 'none')
    assert set(options.split(',')) == ENROOT_MOUNT_OPTIONS
