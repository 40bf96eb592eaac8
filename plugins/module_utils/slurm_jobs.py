# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which Slurm job a process belongs to: ``/proc/<pid>/cgroup`` reads and ``scontrol listpids``.

Pure parsers (text in, dicts out; unknown lines skipped). verify_gpu reads both
on a node and ``module_utils/verify/gpu_checks.py`` tells a job's processes on
a GPU (busy) from strays.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# cgroup v1 ``/slurm/uid_N/job_M/...`` (and ``/slurm_<node>/uid_N/job_M`` with multiple slurmd), v2
# ``.../slurmstepd.scope/job_M/step_S/...``
_SLURM_JOB_RE = re.compile(r'(?:/slurm[^/\n]*/uid_\d+|slurmstepd\.scope)/job_(?P<job>\d+)(?:/|$)', re.MULTILINE)
_PROC_CGROUP_RE = re.compile(r'^/proc/(?P<pid>\d+)/cgroup:(?P<line>.*)$')
_LISTPIDS_RE = re.compile(r'^(?P<pid>\d+)\s+(?P<job>\d+)(?:\s|$)')


def parse_proc_cgroups(text):
    """pid (str) -> cgroup text from ``grep -H . /proc/<pid>/cgroup ...`` output (a PID that ended is absent)."""
    found = {}
    for raw in (text or '').splitlines():
        match = _PROC_CGROUP_RE.match(raw.strip())
        if match:
            found.setdefault(match.group('pid'), []).append(match.group('line'))
    return dict((pid, '\n'.join(lines)) for pid, lines in found.items())


def cgroup_job(text):
    """The Slurm job id (str) of a process from its ``/proc/<pid>/cgroup`` text, or None outside a job."""
    match = _SLURM_JOB_RE.search(text or '')
    return match.group('job') if match else None


def parse_scontrol_listpids(text):
    """pid (str) -> job id (str) from ``scontrol listpids`` (``PID JOBID STEPID LOCALID GLOBALID`` rows; header skipped)."""
    found = {}
    for raw in (text or '').splitlines():
        match = _LISTPIDS_RE.match(raw.strip())
        if match:
            found[match.group('pid')] = match.group('job')
    return found
