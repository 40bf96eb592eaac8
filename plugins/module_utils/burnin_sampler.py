# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The burn-in sampler: runs on a node inside its burn-in job and appends one sample per interval to a file.

``take_sample`` runs the tools through an injected ``run`` (argv -> (rc, stdout, stderr)) and ``read`` (a sysfs path ->
text or None) and builds the sample with ``burnin_sample``; ``append`` writes it as one line (one ``write`` on a file
opened for appending, then ``fsync``: a sample is in the file whole or not at all). ``main`` is the loop the job runs
(``python3 -m ansible_collections.aicluster.infra.plugins.module_utils.burnin_sampler --help``), with the collection's
module_utils on PYTHONPATH; a sampler started again on the same file continues its numbering, so a job that is
requeued does not write a sequence number twice. Nothing here needs Ansible.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import json
import os
import signal
import subprocess
import sys
import time

from ansible_collections.aicluster.infra.plugins.module_utils import burnin_sample

C_LOCALE = {'LANG': 'C', 'LC_ALL': 'C'}
SYS_IB = '/sys/class/infiniband'
SYS_NET = '/sys/class/net'


def run_tool(argv, timeout=60):
    """(rc, stdout, stderr) of a tool in the C locale; rc 127 when it is not installed, 124 when it timed out."""
    env = dict(os.environ, **C_LOCALE)
    try:
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=timeout, check=False)
    except OSError as exc:
        return 127, '', str(exc)
    except subprocess.TimeoutExpired:
        return 124, '', '%s timed out after %ss' % (argv[0], timeout)
    return done.returncode, done.stdout.decode('utf-8', 'replace'), done.stderr.decode('utf-8', 'replace')


def read_file(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except (IOError, OSError):
        return None


def _text(run, argv, errors, what=None):
    """A tool's stdout, or None with a line in ``errors`` when it failed."""
    rc, out, err = run(argv)
    if rc != 0:
        errors.append('%s: rc %s: %s' % (what or ' '.join(argv), rc, (err or out or '').strip()[:200]))
        return None
    return out


def take_sample(context, seq, now, run=run_tool, read=read_file):
    """One sample. ``context``: ``run``, ``node``, ``start`` (epoch seconds), ``start_iso`` (the kernel log's ISO stamp
    of the start), ``ports`` (``{name, kind: ib|roce, hca, port, netdev}``), ``sensor_map``, ``bmc`` (read the BMC),
    ``clock_prefix`` (clocks_event_reasons or clocks_throttle_reasons), ``loads`` (entries finished since the last
    sample, from the load runners). ``start_iso`` is stamped as this node's dmesg stamps (its own zone)."""
    errors = []
    fields = burnin_sample.gpu_query_fields(context.get('clock_prefix') or 'clocks_event_reasons')
    query = _text(run, ['nvidia-smi', '--query-gpu=%s' % ','.join(fields), '--format=csv,noheader,nounits'], errors,
                  'nvidia-smi --query-gpu')
    temperature = _text(run, ['nvidia-smi', '-q', '-d', 'TEMPERATURE'], errors, 'nvidia-smi -q -d TEMPERATURE')
    gpus = burnin_sample.sample_gpus(query, fields, temperature, errors) if query is not None else None
    ports = []
    for port in context.get('ports') or []:
        if port.get('kind') == 'roce':
            stats = _text(run, ['ethtool', '-S', port['netdev']], errors, 'ethtool -S %s' % port['netdev'])
            ports.append(burnin_sample.roce_port(port['name'], stats, read('%s/%s/operstate' % (SYS_NET, port['netdev'])),
                                                 read('%s/%s/speed' % (SYS_NET, port['netdev'])), errors))
        else:
            counters = _text(run, ['perfquery', '-C', port['hca'], '-P', str(port['port'])], errors, 'perfquery %s' % port['name'])
            base = '%s/%s/ports/%s' % (SYS_IB, port['hca'], port['port'])
            ports.append(burnin_sample.ib_port(port['name'], counters, read(base + '/state'), read(base + '/rate'), errors))
    kernel = _text(run, ['dmesg', '--time-format', 'iso'], errors, 'dmesg')
    xids = burnin_sample.sample_xids(kernel, context.get('start_iso')) if kernel is not None else []
    bmc = None
    if context.get('bmc', True):
        sdr = _text(run, ['ipmitool', 'sdr', 'elist'], errors, 'ipmitool sdr elist')
        dcmi = _text(run, ['ipmitool', 'dcmi', 'power', 'reading'], [], 'ipmitool dcmi power reading')  # many BMCs lack DCMI
        bmc = burnin_sample.sample_bmc(sdr, dcmi, context.get('sensor_map'), errors)
    stamp = time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(now))
    return burnin_sample.build_sample(context['run'], context['node'], seq, stamp, round(now - context['start'], 1), gpus,
                                      ports, xids, bmc, context.get('loads'), errors)


def last_seq(path):
    """The highest sequence number already in the samples file (0 when none): a restarted sampler goes on after it."""
    highest = 0
    try:
        with open(path) as handle:
            for line in handle:
                try:
                    highest = max(highest, int(json.loads(line).get('seq') or 0))
                except (ValueError, AttributeError, TypeError):
                    continue
    except (IOError, OSError):
        return 0
    return highest


def append(path, sample):
    """The sample as one line at the end of ``path``, written whole (one write, O_APPEND) and synced."""
    line = (json.dumps(sample, separators=(',', ':'), sort_keys=True) + '\n').encode('utf-8')
    handle = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o640)
    try:
        os.write(handle, line)
        os.fsync(handle)
    finally:
        os.close(handle)


def loop(context, path, interval, until, run=run_tool, read=read_file, clock=time.time, sleep=time.sleep, stop=None):
    """Sample every ``interval`` seconds until ``until`` (epoch seconds), the first at once; returns the samples written.
    ``stop``: a callable that says to end early (SIGTERM from Slurm at the job's end)."""
    seq = last_seq(path)
    written = 0
    tick = clock()
    while True:
        now = clock()
        if (stop is not None and stop()) or now > until:
            return written
        seq += 1
        append(path, take_sample(context, seq, now, run, read))
        written += 1
        tick += interval
        while tick <= clock():  # a sample that took longer than the interval: skip the ticks it overran
            tick += interval
        wait = min(tick, until + 0.001) - clock()
        if wait > 0:
            sleep(wait)


def main(argv=None):
    parser = argparse.ArgumentParser(description='Append one burn-in sample per interval to a file (docs/burnin.md).')
    parser.add_argument('--context', required=True, help='a JSON file: run, node, start, start_iso, ports, sensor_map, bmc')
    parser.add_argument('--out', required=True, help='the samples file (JSON lines, appended)')
    parser.add_argument('--interval', type=float, required=True, help='seconds between samples')
    parser.add_argument('--until', type=float, required=True, help='epoch seconds to stop at')
    args = parser.parse_args(argv)
    with open(args.context) as handle:
        context = json.load(handle)
    signal.signal(signal.SIGTERM, _stopped)  # Slurm's end of the job: stop now (a sleep is not resumed), the file whole
    try:
        written = loop(context, args.out, args.interval, args.until)
    except Stopped:
        sys.stdout.write('burn-in sampler: stopped by SIGTERM after sample %d in %s\n' % (last_seq(args.out), args.out))
        return 0
    sys.stdout.write('burn-in sampler: %d samples written to %s\n' % (written, args.out))
    return 0


class Stopped(Exception):
    """SIGTERM arrived."""


def _stopped(_signum, _frame):
    raise Stopped()


if __name__ == '__main__':
    raise SystemExit(main())
