# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The no-op re-run against the first converge, side by side on one fresh lab (docs/scale.md).

Brings up a fresh bench lab (ctl01 + 3 GPU hosts by default: the 4-host demo lab), runs the bring-up stages that
exist (preflight and slurm) once to converge, then again as no-ops, and prints the wall times, the ratio
no-op / first converge, changed counts, tasks per host and the ten slowest tasks of each run (profile_tasks).
The goal (issue 13): a no-op at most 25 % of the first converge and under 12 s on the 4-host lab, changed=0.
Figures, not assertions: a busy machine makes them slower, so run it alone.

Run from the repository root: ``make bench-noop`` or ``.venv/bin/python bench/noop.py [--compute 3] [--keep]``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import os

from _lab import BRINGUP, Lab, log, top_tasks


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--name', default='bench')
    parser.add_argument('--compute', type=int, default=3)
    parser.add_argument('--noops', type=int, default=2, help='no-op runs after the first converge')
    parser.add_argument('--keep', action='store_true', help='leave the lab up afterwards')
    args = parser.parse_args()

    lab = Lab(args.name, args.compute)
    lab.down()
    log('lab %s: ctl01 + %d GPU hosts up in %.1f s' % (lab.name, args.compute, lab.up()))
    try:
        logs = os.path.join(lab.dir, 'logs')
        os.makedirs(logs, exist_ok=True)
        first = lab.playbook(BRINGUP, log_to=os.path.join(logs, 'converge.txt')).check('first converge')
        noops = [lab.playbook(BRINGUP, log_to=os.path.join(logs, 'noop-%d.txt' % (n + 1))).check('no-op %d' % (n + 1))
                 for n in range(args.noops)]
    finally:
        if not args.keep:
            lab.down()

    best = min(noops, key=lambda run: run.wall)
    log('')
    log('bring-up stages: %s; %d hosts; forks, pipelining and ControlPersist from ansible.cfg' % (
        ' '.join(BRINGUP), args.compute + 1))
    log('%-16s %8s %8s  %s' % ('run', 'wall s', 'changed', 'tasks per host (ok+skipped)'))
    for label, run in [('first converge', first)] + [('no-op %d' % (n + 1), r) for n, r in enumerate(noops)]:
        per_host = run.tasks_per_host()
        log('%-16s %8.1f %8d  %s' % (label, run.wall, run.changed,
                                     ', '.join('%s %d' % item for item in sorted(per_host.items()))))
    log('')
    log('ratio no-op / first converge: %.2f (best no-op %.1f s / %.1f s; goal <= 0.25)' % (
        best.wall / first.wall, best.wall, first.wall))
    log('no-op under 12 s: %s (%.1f s)' % ('yes' if best.wall < 12 else 'no', best.wall))
    log('controller peak memory: converge %.0f MiB, no-op %.0f MiB' % (first.peak_kib / 1024.0, best.peak_kib / 1024.0))
    log('controller CPU: converge %.1f s, no-op %.1f s' % (first.cpu, best.cpu))
    for label, run in (('first converge', first), ('no-op', best)):
        log('')
        log('slowest tasks, %s:' % label)
        for seconds, task in top_tasks(run):
            log('  %6.2f s  %s' % (seconds, task))
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
