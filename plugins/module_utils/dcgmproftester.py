# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse the text output of a dcgmproftester run (dcgmproftester10/11/12, NVIDIA DCGM) into plain data.

Formats supported (real captures in ../shared/fixtures/real/dcgmproftester/, provenance in
SOURCES.tsv; upstream source NVIDIA/DCGM dcgmproftester/PhysicalGpu.cpp (the sample lines,
ValuesDump()) and DcgmProfTester.cpp (RunTests()):

* ``worker`` (DCGM 2.1+ / 3.x): ``Worker G:S[FIELD]: <Metric>: generated <x>, dcgm <value>
  (<n> gflops)[.]`` per sample, ``Worker G:S[FIELD]: Message: Bus ID ... mapped to cuda
  device ID N``, the CU_DEVICE_ATTRIBUTE_* block after the samples.  Capture
  ``dcgm-userguide-a100-40gb-t1004-worker-prefix-init-after.txt``.
* ``legacy`` (DCGM 2.0): the same sample lines without the worker prefix, after the
  CU_DEVICE_ATTRIBUTE_* block and ``CudaInit completed successfully.``.  Capture
  ``gpu-operator-docs-t4-dcgm2.0.10-legacy-no-worker-prefix.txt``.  The test id is not
  printed in this format: ``test_id`` stays None (the metric name is kept).
* a failed run: ``nvidia-dcgm-issue76-dcgm3.1.7-t1004-runtests-error0.txt``, a DCGM log
  line ``<date> <time> ERROR [pid:tid] Error 0 from RunTests(). Exiting. [file:line] [func]``
  and no sample.  It parses to ``failed`` true with the error in ``errors``: a run that
  prints its error is data.

Refused with ParseError: text with no dcgmproftester line, and the ``-h`` usage text.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.printed_numbers import to_float

SAMPLE_RE = re.compile(
    r'^(?:Worker (?P<gpu>\d+):(?P<slice>\d+)\[(?P<field>\d+)\]: )?(?P<metric>[A-Za-z][\w ]*?): generated (?P<generated>[^,]+),'
    r' dcgm (?P<dcgm>.*?)(?: \((?P<value>[-+\w.]+) (?P<unit>[^)]+)\))?\.?\s*$')
MESSAGE_RE = re.compile(r'^Worker (?P<gpu>\d+):(?P<slice>\d+)\[(?P<field>\d+)\]: Message: (?P<text>.*?)\s*$')
BUS_RE = re.compile(r'Bus ID (?P<bus>\S+) mapped to cuda device ID (?P<cuda>\d+)')
ATTRIBUTE_RE = re.compile(r'^CU_DEVICE_ATTRIBUTE_(?P<key>[A-Z0-9_]+):\s*(?P<value>\S*)\s*$')
BANDWIDTH_RE = re.compile(r'^Max Memory bandwidth: (?P<bytes>\d+) bytes')
INIT_RE = re.compile(r'^(?:DCGM CudaContext Init|CudaInit) completed successfully\.')
SKIP_RE = re.compile(r'^Skipping \w+\(\) since DCGM validation is disabled')
LOG_RE = re.compile(r'^(?P<timestamp>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?) (?P<level>[A-Z]+) \[[^\]]*\] (?P<message>.*?)'
                    r'(?: \[(?P<source>[^\]]+:\d+)\])?(?: \[(?P<function>[^\]]*)\])?\s*$')
ERROR_RE = re.compile(r'^(?:Error\b|ERROR\b|error:|Failed\b|.*\bReturned error\b)')
WARNING_RE = re.compile(r'^(?:Field \d+ @ .*Validation (?:Retry|Fail)|Warning\b|WARNING\b)')
USAGE_RE = re.compile(r'^\s*(?:USAGE:\s*$|dcgmproftester\d*\s+\[-h\])')


def _worker(workers, gpu, slice_, field, metric):
    """The dict of one worker (a GPU, or a MIG slice of one), made on first use."""
    key = (gpu, slice_)
    if key not in workers:
        workers[key] = {'gpu': gpu, 'slice': slice_, 'test_id': field, 'metric': metric, 'unit': None, 'values': [],
                        'dcgm': [], 'max': None, 'mean': None, 'last': None, 'bus_id': None, 'cuda_device': None}
    if workers[key]['metric'] is None:
        workers[key]['metric'] = metric
    return workers[key]


def _int(token):
    return int(token) if token is not None else None


def _sample(match, workers):
    """Fold one sample line into its worker; False when its achieved value does not read."""
    worker = _worker(workers, _int(match.group('gpu')), _int(match.group('slice')), _int(match.group('field')),
                     match.group('metric').strip())
    if match.group('value') is not None:
        value = to_float(match.group('value'))
        if value is None:
            return False
        worker['values'].append(value)
        worker['unit'] = match.group('unit').strip()
    worker['dcgm'].append(to_float(match.group('dcgm').strip()))
    return True


def _new_result():
    return {'format': None, 'test_id': None, 'test_ids': [], 'metric': None, 'workers': [], 'device_attributes': [],
            'max_memory_bandwidth_bytes': None, 'cuda_init': False, 'skipped': [], 'messages': [], 'failed': False,
            'errors': [], 'warnings': []}


def _device_line(line, result):
    """CU_DEVICE_ATTRIBUTE_*, bandwidth, init and Skipping lines; True when consumed."""
    match = ATTRIBUTE_RE.match(line)
    if match:
        blocks = result['device_attributes']
        if not blocks or match.group('key') in blocks[-1]:
            blocks.append({})
        value = match.group('value')
        blocks[-1][match.group('key')] = int(value) if value.isdigit() else {'true': True, 'false': False}.get(value, value)
        return True
    match = BANDWIDTH_RE.match(line)
    if match:
        result['max_memory_bandwidth_bytes'] = int(match.group('bytes'))
        return True
    if INIT_RE.match(line):
        result['cuda_init'] = True
        return True
    if SKIP_RE.match(line):
        result['skipped'].append(line.strip())
        return True
    return line.startswith('CUDA_VISIBLE_DEVICES:')


def _run_line(line, result, workers):
    """Samples, worker messages, log, error and warning lines; True when consumed."""
    match = MESSAGE_RE.match(line)
    if match:
        worker = _worker(workers, int(match.group('gpu')), int(match.group('slice')), int(match.group('field')), None)
        bus = BUS_RE.search(match.group('text'))
        if bus:
            worker['bus_id'], worker['cuda_device'] = bus.group('bus'), int(bus.group('cuda'))
        result['messages'].append(match.group('text'))
        return True
    match = SAMPLE_RE.match(line)
    if match and _sample(match, workers):
        return True
    match = LOG_RE.match(line)
    if match:
        entry = {'timestamp': match.group('timestamp'), 'level': match.group('level'), 'message': match.group('message'),
                 'source': match.group('source'), 'function': match.group('function')}
        if entry['level'] in ('ERROR', 'FATAL', 'CRITICAL'):
            result['errors'].append(entry)
        else:
            result['warnings'].append(entry)
        return True
    for regex, key in ((ERROR_RE, 'errors'), (WARNING_RE, 'warnings')):
        if regex.match(line):
            result[key].append({'timestamp': None, 'level': None, 'message': line.strip(), 'source': None, 'function': None})
            return True
    return False


def _summarise(result, workers):
    for key in sorted(workers, key=lambda k: (k[0] is not None, k[0] or 0, k[1] or 0)):
        worker = workers[key]
        if worker['values']:
            worker['max'] = max(worker['values'])
            worker['mean'] = round(sum(worker['values']) / len(worker['values']), 3)
            worker['last'] = worker['values'][-1]
        result['workers'].append(worker)
    result['test_ids'] = sorted(set(w['test_id'] for w in result['workers'] if w['test_id'] is not None))
    result['test_id'] = result['test_ids'][0] if len(result['test_ids']) == 1 else None
    metrics = [w['metric'] for w in result['workers'] if w['metric']]
    result['metric'] = metrics[0] if metrics else None
    sampled = [w for w in result['workers'] if w['dcgm']]
    if sampled:
        result['format'] = 'worker' if any(w['gpu'] is not None for w in sampled) else 'legacy'
    result['failed'] = bool(result['errors'])


def parse_dcgmproftester(text):
    """Parse the output of one dcgmproftester run.

    Returns ``format`` ("worker", "legacy", None when no sample line),
    ``test_id`` (the field id printed in the worker prefix, e.g. 1004; None
    in the legacy format or when several differ), ``test_ids``, ``metric``
    (e.g. "TensorEngineActive"), ``workers`` (one per ``Worker G:S`` prefix,
    or one with ``gpu`` None for the legacy format: ``gpu``, ``slice``,
    ``test_id``, ``metric``, ``unit`` (e.g. "gflops"), ``values`` (the
    achieved figure of each sample), ``dcgm`` (DCGM's reading of each sample,
    None where not a single number), ``max``, ``mean``, ``last``, ``bus_id``,
    ``cuda_device``), ``device_attributes`` (one dict per CU_DEVICE_ATTRIBUTE
    block), ``max_memory_bandwidth_bytes``, ``cuda_init``, ``skipped``,
    ``messages``, ``failed`` (an error line was printed), ``errors`` and
    ``warnings`` (``timestamp``, ``level``, ``message``, ``source``,
    ``function``; None where the line has no DCGM log prefix).
    """
    if not isinstance(text, str):
        raise ParseError('dcgmproftester output must be text')
    result = _new_result()
    workers = {}
    recognised = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip('\r').strip()
        if not line:
            continue
        if USAGE_RE.match(line):
            raise ParseError('unsupported dcgmproftester mode: usage (-h) text, not a run', number, line)
        if _device_line(line, result) or _run_line(line, result, workers):
            recognised += 1
    if not recognised:
        raise ParseError('not dcgmproftester output: no sample, device, Skipping or error line')
    _summarise(result, workers)
    return result
