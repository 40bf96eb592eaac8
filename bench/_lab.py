# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the lab benches share: a lab of their own, playbook runs timed, recaps and profiles read, memory sampled.

A bench lab never touches the demo lab: it has its own name (podman labels, network, volume), its own inventory
directory under .cache/bench/<name>/ (the lab's group_vars linked in) and its own fact cache, because the fact cache
is keyed by host name and both labs have a gpu01.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import resource
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV_BIN = os.path.join(REPO, '.venv', 'bin')
LAB = [os.path.join(VENV_BIN, 'python'), os.path.join(REPO, 'lab', 'lab.py')]
# The bring-up stages that exist today (site.yml without verify, which measures and is not a configuration stage).
BRINGUP = ['playbooks/preflight.yml', 'playbooks/slurm.yml']

RECAP = re.compile(r'^(?P<host>\S+)\s*:\s*ok=(?P<ok>\d+)\s+changed=(?P<changed>\d+)\s+unreachable=(?P<unreachable>\d+)'
                   r'\s+failed=(?P<failed>\d+)\s+skipped=(?P<skipped>\d+)\s+rescued=(?P<rescued>\d+)\s+ignored=(?P<ignored>\d+)')
# profile_tasks' summary lines: "Slurm : aicluster.infra.slurm : Install ... --- 1.52s"
PROFILE = re.compile(r'^(?P<task>.+?)\s-{3,}\s(?P<seconds>\d+\.\d+)s$')


def log(message):
    sys.stdout.write('%s\n' % message)
    sys.stdout.flush()


class Lab:
    """One bench lab: ctl01 plus ``compute`` GPU hosts, with its own inventory and fact cache."""

    def __init__(self, name, compute):
        self.name = name
        self.compute = compute
        self.dir = os.path.join(REPO, '.cache', 'bench', name)
        self.inventory = os.path.join(self.dir, 'inventory')
        self.facts = os.path.join(self.dir, 'facts')

    def up(self):
        os.makedirs(self.inventory, exist_ok=True)
        group_vars = os.path.join(self.inventory, 'group_vars')
        if not os.path.lexists(group_vars):
            os.symlink(os.path.join(REPO, 'inventories', 'lab', 'group_vars'), group_vars)
        started = time.time()
        subprocess.run(LAB + ['up', '--name', self.name, '--compute', str(self.compute),
                              '--inventory', os.path.join(self.inventory, 'hosts.yml')],
                       check=True, cwd=REPO, stdout=subprocess.DEVNULL, env=self.env())
        return time.time() - started

    def down(self):
        subprocess.run(LAB + ['down', '--name', self.name, '--inventory', os.path.join(self.inventory, 'hosts.yml')],
                       check=True, cwd=REPO, stdout=subprocess.DEVNULL)
        subprocess.run(['rm', '-rf', self.facts], check=True)

    def env(self, extra=None):
        env = dict(os.environ)
        env.update({
            'PATH': VENV_BIN + os.pathsep + env.get('PATH', ''),
            'ANSIBLE_CONFIG': os.path.join(REPO, 'ansible.cfg'),
            'ANSIBLE_COLLECTIONS_PATH': os.path.join(REPO, '.collections'),
            'ANSIBLE_CACHE_PLUGIN_CONNECTION': self.facts,
            'ANSIBLE_NOCOLOR': '1',
            'ANSIBLE_FORCE_COLOR': '0',
            'ANSIBLE_CALLBACKS_ENABLED': 'ansible.posix.profile_tasks',
            'PROFILE_TASKS_TASK_OUTPUT_LIMIT': '10',
        })
        env.update(extra or {})
        return env

    def playbook(self, playbooks, args=(), env=None, log_to=None):
        """Run ansible-playbook; returns a Run with wall time, recap, profile and the controller's peak memory."""
        argv = [os.path.join(VENV_BIN, 'ansible-playbook'), '-i', self.inventory] + list(args) + list(playbooks)
        sampler = MemorySampler()
        cpu_before = _children_cpu()
        started = time.time()
        proc = subprocess.Popen(argv, cwd=REPO, env=self.env(env), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, universal_newlines=True)
        sampler.watch(proc.pid)
        output = proc.communicate()[0]
        wall = time.time() - started
        cpu = _children_cpu() - cpu_before
        sampler.stop()
        if log_to:
            with open(log_to, 'w', encoding='utf-8') as handle:
                handle.write(output)
        return Run(argv, proc.returncode, wall, output, sampler.peak_kib, cpu)


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Run:
    """One ansible-playbook run: rc, wall time, output, the controller's peak memory and CPU seconds (ansible-playbook,
    its forks and their ssh clients; not the ssh ControlMaster processes, which outlive the run)."""

    def __init__(self, argv, rc, wall, output, peak_kib, cpu):
        self.argv, self.rc, self.wall, self.output, self.peak_kib, self.cpu = argv, rc, wall, output, peak_kib, cpu
        self.recap = {}
        self.profile = []
        in_recap = False
        for line in output.splitlines():
            if line.startswith('TASKS RECAP'):
                # profile_tasks prints its summary after each playbook of the run, each time with every task so far
                self.profile = []
                continue
            if line.startswith('PLAY RECAP'):
                in_recap = True
                continue
            match = RECAP.match(line) if in_recap else None
            if match:
                counts = {k: int(v) for k, v in match.groupdict().items() if k != 'host'}
                total = self.recap.setdefault(match.group('host'), dict.fromkeys(counts, 0))
                for key, value in counts.items():
                    total[key] += value
                continue
            match = PROFILE.match(line.strip())
            if match and 'PLAY RECAP' not in line:
                self.profile.append((float(match.group('seconds')), match.group('task').strip()))

    @property
    def changed(self):
        return sum(c['changed'] for c in self.recap.values())

    @property
    def failed(self):
        return sum(c['failed'] + c['unreachable'] for c in self.recap.values())

    def tasks_per_host(self):
        """Tasks each host ran or skipped (ok + changed is counted once by the recap's ok), as {host: n}."""
        return {host: c['ok'] + c['skipped'] + c['failed'] for host, c in self.recap.items()}

    def check(self, what):
        if self.rc != 0 or self.failed:
            tail = '\n'.join(self.output.splitlines()[-60:])
            raise SystemExit('bench: %s failed (rc %d):\n%s' % (what, self.rc, tail))
        return self


class MemorySampler:
    """Peak resident memory of a process tree (ansible-playbook and its forks), sampled from /proc every 0.1 s."""

    def __init__(self):
        self.peak_kib = 0
        self._stop = threading.Event()
        self._thread = None

    def watch(self, pid):
        self._thread = threading.Thread(target=self._loop, args=(pid,), daemon=True)
        self._thread.start()

    def stop(self):
        self._stop.set()
        if self._thread:
            self._thread.join()

    def _loop(self, root):
        while not self._stop.is_set():
            self.peak_kib = max(self.peak_kib, tree_rss_kib(root))
            self._stop.wait(0.1)


def tree_rss_kib(root):
    parents = {}
    rss = {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry, encoding='utf-8', errors='replace') as handle:
                fields = handle.read().rsplit(')', 1)[1].split()
            with open('/proc/%s/statm' % entry, encoding='utf-8') as handle:
                pages = int(handle.read().split()[1])
        except (OSError, IndexError, ValueError):
            continue
        parents[int(entry)] = int(fields[1])
        rss[int(entry)] = pages * os.sysconf('SC_PAGE_SIZE') // 1024
    tree = {root}
    grew = True
    while grew:
        grew = False
        for pid, ppid in parents.items():
            if ppid in tree and pid not in tree:
                tree.add(pid)
                grew = True
    # ssh ControlMaster processes detach from the tree and are not the controller's Python; they are left out.
    return sum(rss.get(pid, 0) for pid in tree)


def top_tasks(run, count=10):
    return sorted(run.profile, reverse=True)[:count]
