# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""slurm_config on real files: what each host's daemons need, judged against that host's own slurm.conf and Slurm
version (``slurmd -V`` as Debian 12 prints it, ``slurm-wlm 22.05.8``, and as SchedMD's packages do)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import stat

import pytest

from ansible_collections.aicluster.infra.plugins.module_utils.slurm_conf import daemon_action, parse_slurm_version
from ansible_collections.aicluster.infra.plugins.modules import slurm_config

CONF = """ClusterName=c
SlurmctldHost=ctl01
SelectType=select/cons_tres
NodeName=gpu[01-02] CPUs=16 Boards=1 SocketsPerBoard=1 CoresPerSocket=8 ThreadsPerCore=2 RealMemory=24105 Gres=gpu:h100:8
PartitionName=gpu Nodes=gpu[01-02] Default=YES MaxTime=INFINITE State=UP
"""
ADDED = CONF.replace('gpu[01-02]', 'gpu[01-03]')
DEBIAN = (0, 'slurm-wlm 22.05.8\n', '')
SCHEDMD = (0, 'slurm 23.11.4\n', '')


@pytest.mark.parametrize('text, version', [
    ('slurm-wlm 22.05.8\n', (22, 5, 8)),
    ('slurm 23.11.4\n', (23, 11, 4)),
    ('slurm 24.05.0-0rc1\n', (24, 5, 0)),
    ('slurm 25.05\n', (25, 5)),
    ('', None),
    ('slurmd: error: no version here\n', None),
])
def test_versions_as_the_daemons_print_them(text, version):
    assert parse_slurm_version(text) == version


@pytest.mark.parametrize('version, action, reasons', [
    ((22, 5, 8), 'restart', ['node definitions']),
    (None, 'restart', ['node definitions']),
    ((23, 2, 7), 'restart', ['node definitions']),
    ((23, 11, 0), 'reconfigure', []),
    ((24, 11, 1), 'reconfigure', []),
])
def test_an_added_node_restarts_the_daemons_only_before_23_11(version, action, reasons):
    assert daemon_action(CONF, ADDED, version) == (action, reasons)


def test_a_plugin_change_restarts_whatever_the_version():
    assert daemon_action(CONF, CONF.replace('cons_tres', 'linear'), (24, 5, 0)) == ('restart', ['SelectType'])
    assert daemon_action(CONF, CONF, (22, 5, 8)) == ('none', [])
    assert daemon_action(CONF, CONF.replace('INFINITE', '60'), (22, 5, 8)) == ('reconfigure', [])


def _run(run_module, path, content, version=DEBIAN, **args):
    tools = {'slurmd': version} if version else {}
    params = dict(path=str(path), content=content, daemons=['slurmd'])
    params.update(args)
    return run_module(slurm_config, params, tools)


def test_a_node_that_missed_a_node_addition_restarts_on_22_05(run_module, tmp_path):
    path = tmp_path / 'slurm.conf'
    path.write_text(CONF)
    result, calls = _run(run_module, path, ADDED, _ansible_diff=True)
    assert result['changed'] is True and result['action'] == 'restart' and result['restart_reasons'] == ['node definitions']
    assert result['version'] == '22.05.8' and calls == [['/usr/bin/slurmd', '-V']]
    assert path.read_text() == ADDED and stat.S_IMODE(os.stat(str(path)).st_mode) == 0o644
    assert result['diff']['before'] == CONF and result['diff']['after'] == ADDED
    assert os.listdir(str(tmp_path)) == ['slurm.conf']  # no temporary file left


def test_the_same_addition_is_a_reconfigure_on_23_11(run_module, tmp_path):
    path = tmp_path / 'slurm.conf'
    path.write_text(CONF)
    result, dummy = _run(run_module, path, ADDED, version=SCHEDMD)
    assert result['action'] == 'reconfigure' and result['restart_reasons'] == [] and result['version'] == '23.11.4'


def test_same_bytes_change_nothing(run_module, tmp_path):
    path = tmp_path / 'slurm.conf'
    path.write_text(CONF)
    os.chmod(str(path), 0o644)
    before = os.stat(str(path)).st_mtime_ns
    result, dummy = _run(run_module, path, CONF)
    assert result['changed'] is False and result['action'] == 'none'
    assert os.stat(str(path)).st_mtime_ns == before


def test_a_wrong_mode_alone_is_fixed_without_a_daemon_action(run_module, tmp_path):
    path = tmp_path / 'slurm.conf'
    path.write_text(CONF)
    os.chmod(str(path), 0o600)
    result, dummy = _run(run_module, path, CONF)
    assert result['changed'] is True and result['action'] == 'none'
    assert stat.S_IMODE(os.stat(str(path)).st_mode) == 0o644


def test_check_mode_says_and_writes_nothing(run_module, tmp_path):
    path = tmp_path / 'slurm.conf'
    path.write_text(CONF)
    result, dummy = _run(run_module, path, ADDED, _ansible_check_mode=True, _ansible_diff=True)
    assert result['changed'] is True and result['action'] == 'restart'
    assert path.read_text() == CONF and result['diff']['after'] == ADDED


def test_check_mode_on_a_host_without_the_file(run_module, tmp_path):
    path = tmp_path / 'slurm.conf'
    result, dummy = _run(run_module, path, CONF, version=None, _ansible_check_mode=True)
    assert result['changed'] is True and result['action'] == 'reconfigure' and result['version'] is None
    assert not path.exists()


def test_a_new_file_starts_the_daemons_with_it(run_module, tmp_path):
    path = tmp_path / 'slurm.conf'
    result, dummy = _run(run_module, path, CONF)
    assert result['action'] == 'reconfigure' and path.read_text() == CONF


def test_a_broken_hand_edit_is_replaced_and_restarts(run_module, tmp_path):
    path = tmp_path / 'slurm.conf'
    path.write_text(CONF + 'this is not slurm.conf\n')
    result, dummy = _run(run_module, path, CONF)
    assert result['action'] == 'restart' and 'does not parse' in result['restart_reasons'][0]
    assert path.read_text() == CONF


def test_a_new_file_that_does_not_parse_is_refused_and_the_old_kept(run_module, tmp_path):
    path = tmp_path / 'slurm.conf'
    path.write_text(CONF)
    result, dummy = _run(run_module, path, CONF + 'garbage line\n')
    assert result['failed'] and 'does not parse' in result['msg'] and path.read_text() == CONF


def test_a_login_node_runs_no_daemon_to_restart(run_module, tmp_path):
    path = tmp_path / 'slurm.conf'
    path.write_text(CONF)
    result, calls = _run(run_module, path, ADDED, daemons=[])
    assert result['action'] == 'reconfigure' and calls == [] and path.read_text() == ADDED


def test_a_version_the_daemon_does_not_print_fails_with_its_output(run_module, tmp_path):
    path = tmp_path / 'slurm.conf'
    path.write_text(CONF)
    result, dummy = _run(run_module, path, ADDED, version=(1, '', 'slurmd: fatal: something\n'))
    assert result['failed'] and result['rc'] == 1 and result['cmd'] == ['/usr/bin/slurmd', '-V']
    assert result['stderr'] == 'slurmd: fatal: something\n' and path.read_text() == CONF


def test_an_unknown_daemon_is_refused_by_name(run_module, tmp_path):
    result, dummy = _run(run_module, tmp_path / 'slurm.conf', CONF, daemons=['slurmdbd'])
    assert result['failed'] and 'slurmdbd' in result['msg']
