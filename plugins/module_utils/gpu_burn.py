# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse the text output of a gpu-burn run (wilicc/gpu-burn ``gpu_burn``) into plain data.

Formats supported (real captures in ../shared/fixtures/real/gpu-burn/, provenance in SOURCES.tsv;
upstream source wilicc/gpu-burn gpu_burn-drv.cpp: main(), launch(), listenClients()):

* ``current``: ``Run length not specified ... Using compare file: compare.ptx``,
  ``Burning for N seconds.``, ``Initialized device ...``, ``Results are ... iterations``,
  progress lines, ``Killing processes with SIGTERM``, ``done``, then the verdict
  ``Tested N GPUs:`` / ``<TAB>GPU i: OK|FAULTY``.  Capture
  ``wilicc-issue124-rtx-a2000-no-progress-lines-ok.txt``: a run with no progress line
  at all and an ``OK`` verdict (so no Gflops and no error count for that GPU).
* ``legacy`` (2019): ``Run length not specified in the command line.  Burning for N secs``,
  progress lines without the ``power:`` part, ``<TAB>Summary at: <date>`` lines.
  Capture ``wilicc-issue8-azure-k80-legacy-tab-summary-no-verdict.txt`` ends without a
  verdict: ``verdict_present`` is false and every GPU's ``verdict`` None (not invented).

Progress lines are ``P%  proc'd: C (G Gflop/s) - ...  errors: E - ...  temps: T C - ...
[  power: W W - ...]``; the current tool starts each with a carriage return, which this
parser treats as a line end.  ``format`` comes from the run-length line's wording, the
compare-file and ``Results are`` lines and the ``power:`` part; it is None when none is printed.  gpu-burn resets its error counts after every ``Summary at``
line, so ``errors`` is the largest count printed, and ``faulty_seen`` says whether any
line printed a non-zero count or ``(WARNING!)``.

Refused with ParseError: text with no gpu-burn line, ``gpu_burn -h`` (help) and
``gpu_burn -l`` (GPU list) output, which are not burn runs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.printed_numbers import to_float

LENGTH_CURRENT_RE = re.compile(r'Burning for (?P<seconds>\d+) seconds\.')
LENGTH_LEGACY_RE = re.compile(r'Burning for (?P<seconds>\d+) secs\b')
COMPARE_RE = re.compile(r'Using compare file: (?P<file>\S+)')
LISTED_RE = re.compile(r'^GPU (?P<index>\d+): (?P<name>.+?) \(UUID: (?P<uuid>[^)\s]+)\)\s*$')
INIT_RE = re.compile(r'^Initialized device (?P<index>\d+) with (?P<total>\d+) MB of memory \((?P<available>\d+) MB available, '
                     r'using (?P<using>\d+) MB of it\), using (?P<precision>[A-Z]+)(?P<rest>.*)$')
ITERATIONS_RE = re.compile(r'^Results are (?P<bytes>\d+) bytes each, thus performing (?P<iterations>\d+) iterations')
PROGRESS_RE = re.compile(r"^\s*(?P<percent>\d+(?:\.\d+)?)%\s+proc'd:\s*(?P<procd>.*?)\s*errors:\s*(?P<errors>.*?)"
                         r"\s*temps:\s*(?P<temps>.*?)(?:\s*power:\s*(?P<power>.*?))?\s*$")
PROCD_RE = re.compile(r'^(?P<count>-?\d+)\s*\((?P<gflops>[-\w.+]+) Gflop/s\)$')
ERRCOUNT_RE = re.compile(r'^(?P<count>-?\d+)\s*(?:\((?P<note>DIED!|WARNING!)\))?$')
UNIT_RE = re.compile(r'^(?P<value>-?\d+) (?:C|W)$')
TESTED_RE = re.compile(r'^Tested (?P<count>\d+) GPUs:\s*$')
VERDICT_RE = re.compile(r'^\s*GPU (?P<index>\d+): (?P<verdict>OK|FAULTY)\s*$')
SUMMARY_RE = re.compile(r'^\s*Summary at:\s*(?P<date>.*?)\s*$')
SHUTDOWN_RE = re.compile(r'^(?:Killing processes with SIG(?:TERM|KILL)|Freed memory for dev \d+|Uninitted cublas|done\s*$)')
ERROR_RE = re.compile(r"^(?:No clients are alive!|No CUDA devices|Couldn't init a GPU test|read\[\d+\] error|"
                      r"Error:|Couldn't )")
HELP_RE = re.compile(r'^(?:GPU Burn\s*$|Usage: gpu[-_]burn\b)')
LIST_RE = re.compile(r'^ID \d+: .+, \d+MB\s*$')
SEPARATOR_RE = re.compile(r'\s+-\s+')


def _gpu(gpus, index):
    """The per-GPU dict of gpu-burn's GPU ``index``, made on first use."""
    if index not in gpus:
        gpus[index] = {'index': index, 'memory_mb': None, 'precision': None, 'processed': None, 'gflops': None,
                       'gflops_max': None, 'errors': None, 'faulty_seen': False, 'died': False, 'temp_c': None,
                       'power_w': None, 'verdict': None}
    return gpus[index]


def _split(part):
    return [item.strip() for item in SEPARATOR_RE.split(' %s ' % part.strip()) if item.strip()] if part else []


def _progress(match, gpus):
    """Fold one progress line into the per-GPU dicts; False when its parts do not read."""
    procd = [PROCD_RE.match(item) for item in _split(match.group('procd'))]
    errors = [ERRCOUNT_RE.match(item) for item in _split(match.group('errors'))]
    if not procd or None in procd or None in errors:
        return False
    for index, item in enumerate(procd):
        gpu = _gpu(gpus, index)
        gpu['processed'] = int(item.group('count'))
        gflops = to_float(item.group('gflops'))
        if gflops is not None:
            gpu['gflops'] = gflops
            gpu['gflops_max'] = gflops if gpu['gflops_max'] is None else max(gpu['gflops_max'], gflops)
    for index, item in enumerate(errors):
        gpu = _gpu(gpus, index)
        count = int(item.group('count'))
        gpu['errors'] = count if gpu['errors'] is None else max(gpu['errors'], count)
        gpu['faulty_seen'] = gpu['faulty_seen'] or count != 0 or item.group('note') == 'WARNING!'
        gpu['died'] = gpu['died'] or item.group('note') == 'DIED!' or gpu['processed'] == -1
    for key, part in (('temp_c', 'temps'), ('power_w', 'power')):
        for index, item in enumerate(_split(match.group(part))):
            unit = UNIT_RE.match(item)
            _gpu(gpus, index)[key] = int(unit.group('value')) if unit else None
    return True


def _new_result():
    return {'format': None, 'run_length_s': None, 'compare_file': None, 'iterations': None, 'listed': [], 'gpus': [],
            'progress_lines': 0, 'percent': None, 'summaries': 0, 'tested_gpus': None, 'verdict_present': False,
            'errors': []}


def _header_line(line, result, gpus, marks):
    """Run length, compare file, GPU list, init and iterations lines; True when consumed."""
    hit = False
    for regex, fmt in ((LENGTH_CURRENT_RE, 'current'), (LENGTH_LEGACY_RE, 'legacy')):
        match = regex.search(line)
        if match:
            result['run_length_s'] = int(match.group('seconds'))
            marks.add(fmt)
            hit = True
    match = COMPARE_RE.search(line)
    if match:
        result['compare_file'] = match.group('file')
        marks.add('current')
        hit = True
    if hit:
        return True
    match = LISTED_RE.match(line)
    if match:
        result['listed'].append({'index': int(match.group('index')), 'name': match.group('name'), 'uuid': match.group('uuid')})
        return True
    match = INIT_RE.match(line)
    if match:
        gpu = _gpu(gpus, int(match.group('index')))
        gpu['memory_mb'] = {'total': int(match.group('total')), 'available': int(match.group('available')),
                            'used': int(match.group('using'))}
        gpu['precision'] = match.group('precision')
        return True
    match = ITERATIONS_RE.match(line)
    if match:
        result['iterations'] = int(match.group('iterations'))
        marks.add('current')
        return True
    return False


def _run_line(line, result, gpus, marks):
    """Progress, summary, shutdown, verdict and error lines; True when consumed."""
    match = PROGRESS_RE.match(line)
    if match and _progress(match, gpus):
        result['progress_lines'] += 1
        result['percent'] = to_float(match.group('percent'))
        if match.group('power') is not None:
            marks.add('current')
        return True
    if SUMMARY_RE.match(line):
        result['summaries'] += 1
        return True
    if SHUTDOWN_RE.match(line):
        return True
    match = TESTED_RE.match(line)
    if match:
        result['tested_gpus'] = int(match.group('count'))
        result['verdict_present'] = True
        return True
    match = VERDICT_RE.match(line)
    if match and result['verdict_present']:
        _gpu(gpus, int(match.group('index')))['verdict'] = match.group('verdict')
        return True
    if ERROR_RE.match(line):
        result['errors'].append(line.strip())
        return True
    return False


def parse_gpu_burn(text):
    """Parse the output of one gpu-burn run.

    Returns ``format`` ("current", "legacy", or None when no line tells),
    ``run_length_s``, ``compare_file``, ``iterations``, ``listed`` (the
    ``nvidia-smi -L`` lines gpu-burn prints: ``index``, ``name``, ``uuid``;
    nvidia-smi's numbering, which may differ from CUDA's), ``gpus`` (by
    gpu-burn's device index: ``index``, ``memory_mb`` {total, available,
    used}, ``precision`` ("FLOATS", "DOUBLES"), ``processed``, ``gflops``
    (last printed), ``gflops_max``, ``errors`` (largest count printed; None
    when no progress line), ``faulty_seen``, ``died``, ``temp_c``,
    ``power_w``, ``verdict`` ("OK", "FAULTY", None when not printed)),
    ``progress_lines``, ``percent`` (last), ``summaries``, ``tested_gpus``,
    ``verdict_present`` and ``errors`` (lines the tool prints on failure).
    """
    if not isinstance(text, str):
        raise ParseError('gpu-burn output must be text')
    result = _new_result()
    gpus = {}
    marks = set()
    recognised = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip('\r')
        if not line.strip():
            continue
        if HELP_RE.match(line) or LIST_RE.match(line):
            raise ParseError('unsupported gpu-burn mode: help or GPU list (-h, -l) output, not a burn run', number, line)
        if _header_line(line, result, gpus, marks) or _run_line(line, result, gpus, marks):
            recognised += 1
    if not recognised:
        raise ParseError('not gpu-burn output: no run-length, device, progress or verdict line')
    if 'legacy' in marks:
        result['format'] = 'legacy'
    elif 'current' in marks:
        result['format'] = 'current'
    result['gpus'] = [gpus[index] for index in sorted(gpus)]
    return result
