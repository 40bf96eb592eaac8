# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The no-op run and the drift run as the fleet grows: 2, 4, 8 and 16 GPU hosts (docs/scale.md).

One bench lab grows through the sizes (ctl01 plus N GPU hosts, about 370 MB each). At each size the bring-up stages
(preflight, slurm) converge the new hosts, then the no-op run and the drift run (playbooks/drift.yml --check --diff)
are timed. Printed per size: wall time, the ratio to 2 hosts (goal at 16: <= 2.0 with forks >= 16), tasks per host,
the controller's peak memory (ansible-playbook and its forks), and the drift summary. Figures, not assertions: run it
alone on the machine.

Run from the repository root: ``make bench-fleet`` or ``.venv/bin/python bench/fleet.py [--sizes 2,4,8,16] [--keep]``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import os
import re

from _lab import BRINGUP, Lab, log, top_tasks

DRIFT = ['playbooks/drift.yml']


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--name', default='fleet')
    parser.add_argument('--sizes', default='2,4,8,16', help='GPU hosts per step, comma-separated, ascending')
    parser.add_argument('--keep', action='store_true', help='leave the lab up afterwards')
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(',')]

    lab = Lab(args.name, sizes[0])
    lab.down()
    logs = os.path.join(lab.dir, 'logs')
    rows = []
    try:
        for size in sizes:
            lab.compute = size
            up = lab.up()
            os.makedirs(logs, exist_ok=True)
            converge = lab.playbook(BRINGUP, log_to=os.path.join(logs, 'converge-%d.txt' % size)).check('converge')
            noop = lab.playbook(BRINGUP, log_to=os.path.join(logs, 'noop-%d.txt' % size)).check('no-op')
            drift = lab.playbook(DRIFT, args=['--check', '--diff', '-e', 'aicluster_drift_artifacts_dir=%s' % os.path.join(
                lab.dir, 'drift-%d' % size)], env={'ANSIBLE_CALLBACKS_ENABLED': 'aicluster.infra.drift,ansible.posix.profile_tasks'},
                log_to=os.path.join(logs, 'drift-%d.txt' % size)).check('drift run')
            summary = re.search(r'^(\d+ hosts drifted of \d+.*?)(; report .*)?$', drift.output, re.M)
            rows.append({'size': size, 'up': up, 'converge': converge, 'noop': noop, 'drift': drift,
                         'summary': summary.group(1) if summary else '?'})
            log('%d GPU hosts: lab up %.0f s, converge %.1f s (changed %d), no-op %.1f s (changed %d), drift %.1f s (%s)' % (
                size, up, converge.wall, converge.changed, noop.wall, noop.changed, drift.wall, rows[-1]['summary']))
    finally:
        if not args.keep:
            lab.down()

    base = rows[0]
    log('')
    log('%5s %6s %9s %7s %9s %7s %10s %9s %11s %11s %8s  %s' % (
        'GPUs', 'hosts', 'no-op s', 'ratio', 'drift s', 'ratio', 'tasks/host', 'peak MiB', 'no-op CPU s', 'ms/host-task',
        'changed', 'drift summary'))
    for row in rows:
        per_host = row['noop'].tasks_per_host()
        gpu_tasks = [count for host, count in per_host.items() if not host.startswith('ctl')]
        host_tasks = sum(per_host.values()) or 1
        log('%5d %6d %9.1f %7.2f %9.1f %7.2f %10s %9.0f %11.1f %11.0f %8d  %s' % (
            row['size'], row['size'] + 1, row['noop'].wall, row['noop'].wall / base['noop'].wall, row['drift'].wall,
            row['drift'].wall / base['drift'].wall, '%d/%d' % (per_host.get('ctl01', 0), max(gpu_tasks or [0])),
            max(row['noop'].peak_kib, row['drift'].peak_kib) / 1024.0, row['noop'].cpu, 1000.0 * row['noop'].cpu / host_tasks,
            row['noop'].changed, row['summary']))
    last = rows[-1]
    log('')
    log('%d/%d GPU hosts: no-op ratio %.2f, drift ratio %.2f (goal <= 2.0); tasks/host is ctl01/busiest GPU host' % (
        last['size'], base['size'], last['noop'].wall / base['noop'].wall, last['drift'].wall / base['drift'].wall))
    log('')
    log('slowest tasks of the no-op at %d GPU hosts:' % last['size'])
    for seconds, task in top_tasks(last['noop']):
        log('  %6.2f s  %s' % (seconds, task))
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
