# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/burnin_sampler.py: samples taken through the tools, appended whole, numbered
on across a restart, and the sampler process stopped by SIGTERM as Slurm ends a job.

The tools answer with real captures (nvidia-smi -q of an 8xH100, a CX-6 perfquery, a Dell R740's sdr elist, a DCMI
power reading); the --query-gpu rows and the Xid line are ours.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import signal
import stat
import subprocess
import sys
import time

import pytest

from _paths import REAL_FIXTURES, REPO, real_fixture

from ansible_collections.aicluster.infra.plugins.module_utils import burnin_sampler
from ansible_collections.aicluster.infra.plugins.module_utils.verify import burnin

CAPTURES = {'q': 'nvidia-smi/gpud-q-8xh100-535.183.01.txt', 'perfquery': 'perfquery/brev-a100-cx6-hdr-plain-C-mlx5_0-lid1-port0.txt',
            'sdr': 'ipmitool/datakit-dell-r740-sdr-elist-gpu1-8-temp-disabled.txt',
            'dcmi': 'ipmitool/dcmi-power-reading-lovoo-issue18-activated-2017.txt'}
# Ours, not a capture: two GPUs of the H100 capture (its bus ids) as --query-gpu prints them, healthy under load.
QUERY = ''.join('%d, 00000000:%s:00.0, GPU-%d, 71, 80, 690.12, 700.00, 1980, 0, No, No, Not Active, Not Active, Active, '
                'Not Active, Not Active, Not Active, Not Active\n' % (index, bus, index) for index, bus in ((0, '53'), (1, '64')))
XID = '2026-12-07T10:02:30,000000+00:00 NVRM: Xid (PCI:0000:53:00): 13, pid=42, Graphics Exception\n'
CONTEXT = {'run': 'r1', 'node': 'gpu01', 'start': 1000.0, 'start_iso': '2026-12-07T10:00:00.000000+00:00',
           'ports': [{'name': 'mlx5_0:1', 'kind': 'ib', 'hca': 'mlx5_0', 'port': 1}]}


def _fake_run(calls):
    texts = dict((key, real_fixture(path)) for key, path in CAPTURES.items())

    def run(argv):
        calls.append(argv)
        if argv[0] == 'nvidia-smi':
            return 0, QUERY if argv[1].startswith('--query-gpu') else texts['q'], ''
        if argv[0] == 'perfquery':
            return 0, texts['perfquery'], ''
        if argv[0] == 'dmesg':
            return 0, XID, ''
        if argv[:2] == ['ipmitool', 'sdr']:
            return 0, texts['sdr'], ''
        if argv[:2] == ['ipmitool', 'dcmi']:
            return 0, texts['dcmi'], ''
        return 127, '', 'not found'
    return run


def _read(path):
    return {'/sys/class/infiniband/mlx5_0/ports/1/state': '4: ACTIVE',
            '/sys/class/infiniband/mlx5_0/ports/1/rate': '200 Gb/sec (4X HDR)'}.get(path)


def test_a_sample_through_the_tools_in_the_c_locale_and_its_parts():
    calls = []
    sample = burnin_sampler.take_sample(CONTEXT, 3, 1900.0, _fake_run(calls), _read)
    assert sample['seq'] == 3 and sample['elapsed_s'] == 900.0 and sample['time'] == '1970-01-01T00:31:40Z'
    assert [gpu['temp_headroom_c'] for gpu in sample['gpus']] == [50.0, 49.0]
    assert sample['ports'][0]['state'] == 'Active' and sample['ports'][0]['rate_gbps'] == 200.0
    assert sample['xids'] == [{'code': 13, 'pci': '0000:53:00', 'time': '2026-12-07T10:02:30.000000+00:00',
                               'text': 'pid=42, Graphics Exception'}]
    assert (sample['bmc']['inlet_c'], sample['bmc']['power_w'], sample['errors']) == (23.0, 215.0, [])
    assert ['perfquery', '-C', 'mlx5_0', '-P', '1'] in calls and ['ipmitool', 'sdr', 'elist'] in calls


def test_a_missing_tool_costs_its_part_and_says_so():
    def run(argv):
        return (127, '', 'No such file or directory') if argv[0] in ('ipmitool', 'perfquery') else _fake_run([])(argv)
    sample = burnin_sampler.take_sample(CONTEXT, 1, 1000.0, run, _read)
    assert sample['gpus'] and sample['bmc']['valid'] is False and sample['ports'][0]['counters'] is None
    assert [error.split(':')[0] for error in sample['errors']] == ['perfquery mlx5_0', 'ipmitool sdr elist']


def test_the_loop_samples_on_its_ticks_numbers_on_after_a_restart_and_every_line_reads_back(tmp_path):
    path = str(tmp_path / 'samples.jsonl')
    now = [1000.0]

    def clock():
        return now[0]

    def sleep(seconds):
        now[0] += seconds

    run = _fake_run([])
    assert burnin_sampler.loop(CONTEXT, path, 60, 1000.0 + 300, run, _read, clock, sleep) == 6  # 0, 60, ... 300 s
    assert burnin_sampler.last_seq(path) == 6
    now[0] = 2000.0
    assert burnin_sampler.loop(CONTEXT, path, 60, 2000.0 + 60, run, _read, clock, sleep) == 2
    with open(path) as handle:
        samples, problems = burnin.read_samples(handle.read(), 'gpu01')
    assert problems == [] and [sample['seq'] for sample in samples] == list(range(1, 9))
    assert [sample['elapsed_s'] for sample in samples][-2:] == [1000.0, 1060.0]
    results = burnin.judge_node(samples, {'interval_s': 60})
    gap = [result for result in results if result['check'] == 'burnin.samples'][0]
    assert gap['passed'] is False and gap['measured'] == 700.0  # the sampler was away from 300 s to 1000 s


def test_a_slow_tool_skips_the_ticks_it_overran_instead_of_sampling_back_to_back(tmp_path):
    now = [0.0]

    def run(argv):
        now[0] += 50  # every tool call takes 50 s: a sample takes several intervals
        return _fake_run([])(argv)
    written = burnin_sampler.loop(CONTEXT, str(tmp_path / 's.jsonl'), 60, 1000, run, _read, lambda: now[0],
                                  lambda seconds: now.__setitem__(0, now[0] + seconds))
    with open(str(tmp_path / 's.jsonl')) as handle:
        starts = [json.loads(line)['elapsed_s'] + 1000.0 for line in handle]
    assert written == len(starts) and all(later - earlier >= 60 for earlier, later in zip(starts, starts[1:]))


def _tool(folder, name, body):
    path = os.path.join(folder, name)
    with open(path, 'w') as handle:
        handle.write('#!/bin/sh\n' + body)
    os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)


@pytest.mark.skipif(not os.path.isdir(REAL_FIXTURES), reason='real captures absent: %s' % REAL_FIXTURES)
def test_the_sampler_process_samples_with_real_tools_on_path_and_stops_whole_on_sigterm(tmp_path):
    tools = str(tmp_path / 'bin')
    os.makedirs(tools)
    real = dict((key, os.path.join(REAL_FIXTURES, path)) for key, path in CAPTURES.items())
    query = str(tmp_path / 'query.csv')
    with open(query, 'w') as handle:
        handle.write(QUERY)
    _tool(tools, 'nvidia-smi', 'case "$1" in --query-gpu*) cat %s;; *) cat %s;; esac\n' % (query, real['q']))
    _tool(tools, 'perfquery', 'cat %s\n' % real['perfquery'])
    _tool(tools, 'dmesg', 'test "$LC_ALL" = C || { echo "not the C locale" >&2; exit 3; }\n')
    _tool(tools, 'ipmitool', 'case "$1" in sdr) cat %s;; *) cat %s;; esac\n' % (real['sdr'], real['dcmi']))
    context = str(tmp_path / 'context.json')
    with open(context, 'w') as handle:
        json.dump(dict(CONTEXT, start=time.time()), handle)
    out = str(tmp_path / 'samples.jsonl')
    env = dict(os.environ, PATH=tools + os.pathsep + os.environ['PATH'],
               PYTHONPATH=os.path.join(REPO, '.collections'))
    process = subprocess.Popen([sys.executable, '-m', 'ansible_collections.aicluster.infra.plugins.module_utils.burnin_sampler',
                                '--context', context, '--out', out, '--interval', '0.2', '--until', str(time.time() + 60)],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.time() + 30
    while burnin_sampler.last_seq(out) < 3 and time.time() < deadline:
        time.sleep(0.1)
    process.send_signal(signal.SIGTERM)
    output = process.communicate(timeout=30)[0].decode()
    assert process.returncode == 0 and 'stopped by SIGTERM' in output, output
    with open(out) as handle:
        samples, problems = burnin.read_samples(handle.read(), 'gpu01')
    assert problems == [] and len(samples) >= 3 and samples[0]['errors'] == []
    assert samples[0]['gpus'][0]['temp_headroom_c'] == 50.0 and samples[0]['bmc']['power_w'] == 215.0


def test_the_sampler_needs_no_ansible_on_the_node():
    """The job runs it with only the collection's module_utils on PYTHONPATH: nothing it imports may need ansible-core."""
    code = ('import sys; import ansible_collections.aicluster.infra.plugins.module_utils.burnin_sampler; '
            'print(sorted(name for name in sys.modules if name == "ansible" or name.startswith("ansible.")))')
    out = subprocess.run([sys.executable, '-c', code], env=dict(os.environ, PYTHONPATH=os.path.join(REPO, '.collections')),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=True).stdout.decode()
    assert out.strip() == '[]', out
