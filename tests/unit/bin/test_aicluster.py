# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""bin/aicluster: the stage names, the progress lines, the recap and the verdict; real ansible-runner runs of a local
playbook (connection local), as a user runs the command, in a directory of its own."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import io
import json
import os
import re
import subprocess
import sys

import pytest

from _paths import load_program

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BIN = os.path.join(REPO, 'bin', 'aicluster')


cli = load_program(BIN, 'aicluster_cli')


def test_every_stage_is_a_playbook_of_the_collection():
    for stage in cli.STAGES:
        assert os.path.isfile(os.path.join(REPO, 'playbooks', stage + '.yml')), stage
        assert cli.playbook_for(stage) == 'aicluster.infra.' + stage


def test_a_playbook_file_is_run_by_its_path_and_an_unknown_stage_is_refused(tmp_path):
    assert cli.playbook_for('site/verify.yml') == os.path.abspath('site/verify.yml')
    assert cli.playbook_for('mine.yaml') == os.path.abspath('mine.yaml')
    with pytest.raises(ValueError, match="unknown stage 'verfy': choose one of containers, drift, fabric, gpu, monitoring, "
                                         "preflight, rdma, reboot, report, rolling_upgrade, site"):
        cli.playbook_for('verfy')


def _events():
    """ansible-runner's events for a play of two tasks on two hosts and a handler, as its awx_display writes them."""
    return [
        {'event': 'playbook_on_start', 'event_data': {}},
        {'event': 'playbook_on_play_start', 'event_data': {'play': 'Verify GPUs', 'name': 'Verify GPUs'}},
        {'event': 'playbook_on_task_start', 'event_data': {'task': 'Read the GPUs', 'role': 'aicluster.infra.verify_gpu'}},
        {'event': 'runner_on_start', 'event_data': {'host': 'gpu01'}},
        {'event': 'runner_on_ok', 'event_data': {'host': 'gpu01', 'res': {'changed': False}}},
        {'event': 'runner_on_failed', 'event_data': {'host': 'gpu02', 'res': {'msg': 'nvidia-smi:\x1b[31m timed out\nafter 5 s'}}},
        {'event': 'runner_on_failed', 'event_data': {'host': 'gpu03', 'ignore_errors': True, 'res': {'msg': 'ignored'}}},
        {'event': 'playbook_on_task_start', 'event_data': {'task': 'Write gres.conf', 'role': 'slurm'}},
        {'event': 'runner_on_ok', 'event_data': {'host': 'gpu01', 'res': {'changed': True}}},
        {'event': 'runner_on_skipped', 'event_data': {'host': 'gpu02'}},
        {'event': 'runner_on_unreachable', 'event_data': {'host': 'gpu03', 'res': {'msg': 'ssh: connect to host gpu03'}}},
        {'event': 'playbook_on_handler_task_start', 'event_data': {'task': 'Restart slurmd', 'role': 'slurm'}},
        {'event': 'playbook_on_stats', 'event_data': {
            'ok': {'gpu01': 2, 'gpu03': 1}, 'changed': {'gpu01': 1}, 'failures': {'gpu02': 1}, 'dark': {'gpu03': 1},
            'skipped': {'gpu02': 1}, 'artifact_data': {}}},
    ]


def test_progress_prints_a_line_per_play_and_task_with_the_failures_under_it():
    out = io.StringIO()
    clock = iter(range(100))
    progress = cli.Progress(out, clock=lambda: next(clock))
    assert all(progress.handle(event) is True for event in _events())  # runner keeps every event
    lines = out.getvalue().splitlines()
    assert lines[0] == 'PLAY Verify GPUs'
    assert lines[1].startswith('  [  1] verify_gpu : Read the GPUs ')
    assert lines[1].endswith(' ok=2 failed=1  1.0s')  # the ignored failure counts as ok
    assert lines[2] == '        gpu02: nvidia-smi: timed out after 5 s'  # one line, no escape sequence
    assert lines[3].startswith('  [  2] slurm : Write gres.conf ')
    assert lines[3].endswith(' ok=1 changed=1 skipped=1 failed=0 unreachable=1  1.0s')
    assert lines[4] == '        gpu03: ssh: connect to host gpu03'
    assert lines[5].startswith('  [  3] handler slurm : Restart slurmd ')
    assert lines[5].endswith(' no hosts  1.0s')
    assert len(lines) == 6
    assert progress.stats['failures'] == {'gpu02': 1}


def test_recap_lists_the_failed_and_unreachable_hosts_first():
    stats = _events()[-1]['event_data']
    lines = cli.recap_lines(stats)
    assert [line.split()[0] for line in lines] == ['gpu02', 'gpu03', 'gpu01']
    assert lines[0].split()[1:] == ['ok=0', 'changed=0', 'failed=1', 'unreachable=0', 'skipped=1', 'rescued=0',
                                    'ignored=0']


def test_published_verify_verdict_and_drift_report(tmp_path):
    report_dir = tmp_path / 'artifacts' / 'drift-20261202T120000Z'
    report_dir.mkdir(parents=True)
    (report_dir / 'drift.json').write_text(json.dumps({'summary': '2 hosts drifted of 6'}))
    published = {
        'aicluster_verify': {'verdict': 'FAIL', 'nodes': 3, 'failed_nodes': ['gpu02'], 'cluster_failed': '1',
                             'results': 'artifacts/verify-20261202T120000Z/results.json'},
        'aicluster_drift': {'report_dir': str(report_dir)},
    }
    assert cli.published_lines(published, str(tmp_path)) == [
        'verdict: FAIL (1 of 3 nodes failed: gpu02; 1 cluster-level checks failed)',
        'results: artifacts/verify-20261202T120000Z/results.json',
        'drift: 2 hosts drifted of 6',
        'report: %s' % (report_dir / 'drift.md'),
    ]
    passed = {'aicluster_verify': {'verdict': 'PASS', 'nodes': 3, 'failed_nodes': [], 'cluster_failed': 0}}
    assert cli.published_lines(passed, str(tmp_path)) == ['verdict: PASS (0 of 3 nodes failed)']
    lost = {'aicluster_drift': {'report_dir': str(tmp_path / 'gone')}}
    assert cli.published_lines(lost, str(tmp_path))[0] == 'drift: no report was written (see the run output)'
    assert cli.published_lines(None, str(tmp_path)) == []


PLAYBOOK = """\
- name: A verify-shaped play
  hosts: all
  gather_facts: false
  tasks:
    - name: Read something
      ansible.builtin.command: 'true'
      changed_when: false
    - name: Fail on gpu02
      ansible.builtin.fail:
        msg: "link down on gpu02"
      when: inventory_hostname == 'gpu02'
    - name: Publish the verdict
      ansible.builtin.set_stats:
        data:
          aicluster_verify: {verdict: FAIL, nodes: 2, failed_nodes: [gpu02], cluster_failed: 0, results: r.json}
"""


def _run_cli(tmp_path, *args, config=None):
    (tmp_path / 'play.yml').write_text(PLAYBOOK)
    (tmp_path / 'hosts').write_text(''.join(
        '%s ansible_connection=local ansible_python_interpreter="{{ ansible_playbook_python }}"\n' % host
        for host in ('gpu01', 'gpu02')))
    if config is not None:
        (tmp_path / 'ansible.cfg').write_text(config)
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get('PATH', ''))
    for name in [name for name in env if name.startswith('ANSIBLE_')]:
        del env[name]
    return subprocess.run([sys.executable, BIN] + list(args), cwd=str(tmp_path), env=env, capture_output=True,
                          text=True, timeout=300, check=False)


def _runner_command(tmp_path):
    (command,) = glob.glob(str(tmp_path / 'artifacts' / 'runner' / 'artifacts' / 'play-*' / 'command'))
    with open(command, encoding='utf-8') as handle:
        return json.load(handle)


def test_a_real_run_shows_progress_ends_with_the_verdict_and_keeps_the_log(tmp_path):
    run = _run_cli(tmp_path, 'run', 'play.yml', '-i', 'hosts', '-e', 'unused=1')
    assert run.returncode == 2, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == 'aicluster run play.yml: %s -i hosts -e unused=1' % (tmp_path / 'play.yml')
    log = lines[1].split(': ', 1)[1]
    assert os.path.isfile(log) and 'link down on gpu02' in open(log, encoding='utf-8').read()
    assert lines[2] == 'PLAY A verify-shaped play'
    assert re.match(r'  \[  1\] Read something +ok=2 failed=0  \d+\.\ds$', lines[3]), lines[3]
    assert re.match(r'  \[  2\] Fail on gpu02 +ok=0 skipped=1 failed=1  \d+\.\ds$', lines[4]), lines[4]
    assert '        gpu02: link down on gpu02' in lines
    assert lines[-3:] == ['verdict: FAIL (1 of 2 nodes failed: gpu02)', 'results: r.json',
                          'failed: rc 2 (one or more hosts failed)']
    command = _runner_command(tmp_path)
    assert command['cwd'] == str(tmp_path)  # the user's ansible.cfg and relative paths apply
    # ansible-runner's own fact cache is not forced on; host key checking stays as Ansible's default (on)
    assert 'ANSIBLE_CACHE_PLUGIN' not in command['env']
    assert command['env']['ANSIBLE_HOST_KEY_CHECKING'] == 'True'
    assert oct(os.stat(tmp_path / 'artifacts' / 'runner').st_mode & 0o777) == '0o700'


def test_the_users_ansible_cfg_decides_host_key_checking(tmp_path):
    run = _run_cli(tmp_path, 'run', 'play.yml', '-i', 'hosts', '-l', 'gpu01',
                   config='[defaults]\nhost_key_checking = False\n')
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.splitlines()[-1] == 'successful: rc 0 (ok)'
    assert '  gpu02 ' not in run.stdout  # --limit reached ansible-playbook
    assert _runner_command(tmp_path)['env']['ANSIBLE_HOST_KEY_CHECKING'] == 'False'


def test_bad_arguments_exit_5_with_one_line(tmp_path):
    run = _run_cli(tmp_path, 'run', 'verfy', '-i', 'hosts')
    assert run.returncode == 5
    assert run.stderr.startswith("aicluster: unknown stage 'verfy'")
    run = _run_cli(tmp_path, 'run', 'verify', '-i', 'nowhere')
    assert (run.returncode, run.stderr) == (5, 'aicluster: inventory nowhere: no such file or directory\n')


def test_stages_lists_them():
    out = io.StringIO()
    assert cli.main(['stages'], out=out) == 0
    assert [line.split()[0] for line in out.getvalue().splitlines()] == list(cli.STAGES)


def test_exit_statuses_are_ansible_playbooks():
    """The meanings follow ansible-core's own constants (2.16 and later), not a list typed from memory."""
    from ansible.executor.task_queue_manager import TaskQueueManager as TQM
    assert cli.EXIT_MEANING[TQM.RUN_OK] == 'ok'
    assert cli.EXIT_MEANING[TQM.RUN_FAILED_HOSTS] == 'one or more hosts failed'
    assert cli.EXIT_MEANING[TQM.RUN_UNREACHABLE_HOSTS].startswith('one or more hosts unreachable')
    assert TQM.RUN_FAILED_HOSTS | TQM.RUN_UNREACHABLE_HOSTS in cli.EXIT_MEANING
    assert 3 not in cli.EXIT_MEANING and 8 not in cli.EXIT_MEANING  # no such status leaves ansible-playbook
