# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Time of each verify decision for 1,024 nodes, from one simulated H100 node's real-shaped tool output.

Each decision is one call made once for the play; this prints how long each takes on the control node and how
many times each tool's output was parsed (once per node). Run from the repository root:
``python bench/verify_decisions.py``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os
import time

from _collection import REPO  # noqa: E402  (puts the collection on sys.path)

# pylint: disable=wrong-import-position
from ansible_collections.aicluster.infra.plugins.filter import verify as vf  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.verify import document, gate, nccl, perftest  # noqa: E402

NODES = 1024
CASE = os.path.join(REPO, 'tests', 'unit', 'plugins', 'module_utils', 'verify', 'fixtures', 'gate', 'healthy', 'in.json')


def _timed(label, function, *args):
    start = time.perf_counter()
    value = function(*args)
    print('%-44s %7.3f s' % (label, time.perf_counter() - start))
    return value


def _counting(module, name, counts):
    real = getattr(module, name)

    def counted(*args, **kwargs):
        counts[name] = counts.get(name, 0) + 1
        return real(*args, **kwargs)
    setattr(module, name, counted)


def main():
    with open(CASE) as handle:
        case = json.load(handle)
    one = case['hosts']['gpu01']
    names = ['gpu%04d' % (index + 1) for index in range(NODES)]
    counts = {}
    _counting(nccl, 'parse_nccl_tests', counts)
    _counting(perftest, 'parse_perftest', counts)
    ib = dict((node, {'ib_info': one['ib_info'], 'ping': one['ping'], 'peer': node}) for node in names)
    tools = ('gpu_info', 'nvlink_status', 'nvlink_errors', 'retired', 'compute_apps', 'dmesg', 'dcgm_diag')
    gpu = dict((node, dict((key, one[key]) for key in tools)) for node in names)
    runs = dict((node, {'gpu_info': one['gpu_info'], 'run': one['nccl']}) for node in names)
    print('verify decisions for %d nodes (%s)' % (NODES, os.path.relpath(CASE, REPO)))
    facts = {}
    facts['verify_ib_outcome'] = _timed('verify_ib (ports, uniformity, MTU)', vf.verify_ib, ib, {
        'hcas': case['vars']['verify_ib_hcas'], 'port': 1, 'rate_gbps': 400, 'link_layer': 'InfiniBand',
        'firmware': '', 'ofed': '', 'ports': True, 'uniform': True, 'mtu': 1500})
    expected = {'fraction': 0.9, 'bidirectional': False, 'max_latency_us': 5.0, 'schedule': 'cover', 'write_bw_enabled': True,
                'hcas': case['vars']['verify_ib_hcas'], 'link_layer': 'InfiniBand'}
    outcome = _timed('verify_perftest_plan (endpoints, cover rounds)', vf.verify_perftest_plan,
                     dict((node, {'ib_info': one['ib_info'], 'address': node}) for node in names), expected)
    tests = vf.verify_perftest_tests(outcome['summary']['rounds'][0], outcome, 18515)
    client = case['perftest']['write_bw']['gpu01>gpu02:0']
    done = [{'item': {'item': spec}, 'finished': 1, 'rc': 0, 'stdout': client['stdout'], 'stderr': ''} for spec in tests]
    facts['verify_perftest_outcome'] = _timed('verify_perftest_round (%d client outputs)' % len(done), vf.verify_perftest_round,
                                              outcome, done, dict(expected, test='write_bw', round=0))
    facts['verify_gpu_outcome'] = _timed('verify_gpu (7 tools per node)', vf.verify_gpu, gpu, {
        'count': 8, 'model': 'h100', 'enabled': {}, 'nvlink_error_max': {'replay_errors': 100}, 'fatal_xids': [79],
        'dcgm_level': 1})
    facts['verify_nccl_outcome'] = _timed('verify_nccl (busbw, fleet median)', vf.verify_nccl, runs, {
        'busbw_table': {'h100': 400}, 'large_bytes': 16777216, 'slow_fraction': 0.1})
    slurm = [{'NodeName': node, 'State': 'IDLE'} for node in names]
    doc, dummy, dummy = _timed('verify_gate: plan, document, validate', document.run_gate, copy.deepcopy(facts), slurm, {
        'nodes': names, 'mode': 'drain', 'facts': dict((node, {'os': 'Ubuntu 22.04', 'kernel': '6.8'}) for node in names)},
        dict(case['run'], slurm='ctl01'), lambda actions: {})
    size = len(json.dumps(doc))
    results = sum(len(data['results']) for data in doc['nodes'].values())
    print('results.json: %d nodes, %d results, %.1f MB' % (len(doc['nodes']), results, size / 1e6))
    print('parses: nccl-tests %d for %d outputs, perftest %d for %d outputs' % (
        counts.get('parse_nccl_tests', 0), NODES, counts.get('parse_perftest', 0), len(done)))
    print('outcome facts read by the gate: %s' % ', '.join(fact for dummy, fact in gate.OUTCOME_FACTS if fact in facts))


if __name__ == '__main__':
    main()
