# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which Slurm job a process belongs to: /proc/<pid>/cgroup reads and scontrol listpids (module_utils/slurm_jobs.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.aicluster.infra.plugins.module_utils.slurm_jobs import (
    cgroup_job, parse_proc_cgroups, parse_scontrol_listpids,
)

# grep -H . /proc/<pid>/cgroup: cgroup v2 under slurmstepd.scope, v1 one line per controller, a login shell
CGROUPS = ('/proc/4242/cgroup:0::/system.slice/slurmstepd.scope/job_118/step_0/user/task_0\n'
           '/proc/777/cgroup:12:memory:/slurm/uid_1000/job_93/step_batch/task_0\n'
           '/proc/777/cgroup:11:devices:/slurm/uid_1000/job_93/step_batch/task_0\n'
           '/proc/999/cgroup:0::/user.slice/user-1000.slice/session-4.scope\n'
           'grep: /proc/31337/cgroup: No such file or directory\n')
# scontrol listpids (slurm 22.05): header, then PID JOBID STEPID LOCALID GLOBALID
LISTPIDS = ('PID      JOBID    STEPID   LOCALID GLOBALID\n'
            '999      121      0        0       0\n'
            '1001     121      batch    0       0\n'
            '1002     122      extern   -       -\n')


def test_proc_cgroups_by_pid():
    parsed = parse_proc_cgroups(CGROUPS)
    assert sorted(parsed) == ['4242', '777', '999']  # the PID that ended is absent
    assert parsed['777'] == '12:memory:/slurm/uid_1000/job_93/step_batch/task_0\n11:devices:/slurm/uid_1000/job_93/step_batch/task_0'


@pytest.mark.parametrize('text, job', [
    ('0::/system.slice/slurmstepd.scope/job_118/step_0/user/task_0', '118'),
    ('12:memory:/slurm/uid_1000/job_93/step_batch/task_0', '93'),
    ('4:cpuset:/slurm_gpu01/uid_0/job_7', '7'),
    ('0::/user.slice/user-1000.slice/session-4.scope', None),
    ('0::/system.slice/slurmd.service', None),
    ('', None),
], ids=['v2-stepd-scope', 'v1-memory', 'v1-multiple-slurmd', 'login-shell', 'slurmd-itself', 'empty'])
def test_cgroup_job(text, job):
    assert cgroup_job(text) == job


def test_listpids_by_pid():
    assert parse_scontrol_listpids(LISTPIDS) == {'999': '121', '1001': '121', '1002': '122'}


@pytest.mark.parametrize('text', ['', None, 'slurm_load_jobs error: Unable to contact slurm controller\n'], ids=['empty', 'none', 'error'])
def test_listpids_without_rows(text):
    assert parse_scontrol_listpids(text) == {}
