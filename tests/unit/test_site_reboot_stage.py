"""site.yml's reboot stage (issue 31): it comes after gpu and before slurm, reboots in batches through the rolling
procedure's own reboot, and the reboot stays one task file shared with playbooks/rolling_upgrade.yml. The fabric
stage (issue 32) comes after the reboot and before slurm, and drift.yml checks it in the same place."""
import os

import yaml

from _paths import REPO


def _load(*parts):
    with open(os.path.join(REPO, *parts), encoding='utf-8') as handle:
        return yaml.safe_load(handle)


def test_site_reboots_after_gpu_and_before_slurm():
    stages = [play['ansible.builtin.import_playbook'] for play in _load('playbooks', 'site.yml')]
    assert stages.index('gpu.yml') + 1 == stages.index('reboot.yml') < stages.index('slurm.yml')


def test_the_fabric_stage_runs_before_slurm_in_site_and_drift():
    stages = [play['ansible.builtin.import_playbook'] for play in _load('playbooks', 'site.yml')]
    assert stages.index('reboot.yml') + 1 == stages.index('fabric.yml') == stages.index('slurm.yml') - 1
    drift = [play.get('ansible.builtin.import_playbook') for play in _load('playbooks', 'drift.yml')]
    assert drift.index('gpu.yml') + 1 == drift.index('fabric.yml') == drift.index('slurm.yml') - 1
    assert all('fabric' in play['tags'] for play in _load('playbooks', 'fabric.yml'))


def test_the_reboot_stage_runs_in_batches_through_the_rolling_procedure():
    plays = _load('playbooks', 'reboot.yml')
    assert plays[0]['serial'] == "{{ aicluster_reboot_batch | default('25%') }}" and plays[0]['tags'] == ['reboot']
    include = plays[0]['tasks'][0]['ansible.builtin.include_role']
    assert include == {'name': 'aicluster.infra.rolling_upgrade', 'tasks_from': 'bringup'}
    assert 'serial' not in plays[1]  # the list of waiting nodes covers every batch


def test_one_reboot_task_file_for_both_procedures():
    bringup = _load('roles', 'rolling_upgrade', 'tasks', 'bringup.yml')
    main = _load('roles', 'rolling_upgrade', 'tasks', 'main.yml')
    reboots = [task for task in bringup + main if task.get('ansible.builtin.include_tasks') == 'reboot.yml']
    assert len(reboots) == 2
    modules = [task for name in ('bringup.yml', 'main.yml') for task in _load('roles', 'rolling_upgrade', 'tasks', name)
               if 'ansible.builtin.reboot' in task]
    assert modules == []  # only tasks/reboot.yml reboots
