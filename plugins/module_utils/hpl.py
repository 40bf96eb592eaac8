# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse the text output of an HPL (High-Performance Linpack) run into plain data.

Formats supported (real captures in ../shared/fixtures/real/hpl/, provenance in SOURCES.tsv):

* classic HPLinpack 2.x (netlib HPL 2.3, testing/ptest/HPL_pdtest.c and HPL_pddriver.c):
  ``kinghorn-hpl2.3-ryzen5800x-8c-passed-wrapper-banner.txt`` (a wrapper's banner before
  HPL's own, the per-test ``HPL_pdgesv() start time`` lines);
* HPL-NVIDIA 1.0.0 (NVIDIA HPC-Benchmarks container, over HPLinpack 2.1):
  ``kinghorn-hpl-nvidia-1.0.0-2x-rtx4090-xeon-system-test-tabs-progress.txt`` (system-test
  table, ``Prog=`` progress lines, a ``!!!! WARNING`` GPU_FP line);
* the tail of an HPL-NVIDIA run: ``kinghorn-hpl-nvidia-1.0.0-2x-rtx6000ada-clock-warnings-tail.txt``.
  It starts at ``Prog= 97.19%`` (no banner, no parameters) but holds the whole result
  table, residual check and end summary, so it parses to all of that with
  ``banner_present`` false and ``version`` None; the flavour is known from the
  HPL-NVIDIA-only ``Prog=`` and ``!!!! WARNING`` lines.  A text cut before its
  summary parses too, with ``summary`` None and ``end_of_tests`` false.

Refused with ParseError: text with no HPL line at all, the mixed-precision HPL-AI /
HPL-MxP benchmarks (different result table), and result lines with columns after
Gflops (a layout no capture shows).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.printed_numbers import to_float

# HPL_pdtest.c: "W%c%1d%c%c%1d%c%1d%12d %5d %5d %5d %18.2f %18.3e" (2.3 prints %18.4e);
# the code is W, R/C (process mapping), depth, bcast, rfact, ndiv, pfact, nbmin.
RESULT_RE = re.compile(
    r'^(?P<tv>W[RC]\d\d[LCR]\d[LCR]\d+)\s+(?P<n>\d+)\s+(?P<nb>\d+)\s+(?P<p>\d+)\s+(?P<q>\d+)\s+'
    r'(?P<time>\S+)\s+(?P<gflops>\S+)(?P<rest>.*)$')
RESIDUAL_RE = re.compile(r'^(?P<expr>\|\|Ax-b\|\|_oo.*?)=\s*(?P<value>\S+)\s+\.+\s+(?P<verdict>PASSED|FAILED)\s*$')
BANNER_RE = re.compile(r'^HPLinpack\s+(?P<version>\d+(?:\.\d+)+)\s+--')
NVIDIA_RE = re.compile(r'^HPL-NVIDIA\s+(?P<version>\d+(?:\.\d+)+)\b')
MIXED_RE = re.compile(r'^\s*(?:HPL-AI|HPL-MxP|HPLMXP|HPL-MXP|HPLAI)\b')
FINISHED_RE = re.compile(r'^Finished\s+(?P<count>\d+)\s+tests? with the following results:')
COUNT_RE = re.compile(
    r'^\s*(?P<count>\d+)\s+tests\s+(?P<what>completed and passed residual checks|completed and failed residual checks|'
    r'skipped because of illegal input values|completed without checking)')
END_RE = re.compile(r'^End of Tests\.')
EPS_RE = re.compile(r'relative machine precision \(eps\) is taken to be\s+(?P<value>\S+)')
THRESHOLD_RE = re.compile(r'scaled residuals are less than\s+(?P<value>\S+)')
PROGRESS_RE = re.compile(r'^\s*Prog=\s*(?P<percent>[\d.]+)%\s+N_left=\s*(?P<n_left>\d+)\s+Time=\s*(?P<time>\S+)'
                         r'.*?\bGF=\s*(?P<gf>\S+)')
WARNING_RE = re.compile(r'^!!!!\s*WARNING\b')
THROTTLE_RE = re.compile(
    r'^!!!!\s*WARNING:\s*Rank:\s*(?P<rank>\d+)\s*:\s*(?P<host>\S+)\s*:\s*GPU\s+(?P<gpu>\S+)\s+Clock:\s*(?P<clock>\d+)\s*MHz'
    r'\s+Temp:\s*(?P<temp>\d+)\s*C\s+Power:\s*(?P<power>\d+)\s*W\s+PCIe\s+gen\s*(?P<gen>\d+)\s+x(?P<width>\d+)')
SYSTEM_WARNING_RE = re.compile(r'^!!!!\s*WARNING:\s*RANK:\s*(?P<rank>\d+)\s+HOST:\s*(?P<host>\S+)\s+GPU:\s*(?P<gpu>\S+)\s+(?P<what>.*)$')
ERROR_RE = re.compile(r'^(?:HPL ERROR\b|>>>.*<<<\s*$|HPL_pdinfo\b.*\b(?:Illegal|error)|Illegal input\b)')
COUNT_KEYS = {
    'completed and passed residual checks': 'passed', 'completed and failed residual checks': 'failed',
    'skipped because of illegal input values': 'skipped', 'completed without checking': 'unchecked',
}


def _warning(line):
    """One ``!!!! WARNING`` line as a dict: its kind and the figures it names."""
    text = ' '.join(line.split())
    warning = {'kind': 'other', 'rank': None, 'host': None, 'gpu': None, 'text': text}
    match = THROTTLE_RE.match(line)
    if match:
        warning.update(kind='throttle', rank=int(match.group('rank')), host=match.group('host'), gpu=match.group('gpu'),
                       clock_mhz=int(match.group('clock')), temp_c=int(match.group('temp')),
                       power_w=int(match.group('power')), pcie_gen=int(match.group('gen')),
                       pcie_width=int(match.group('width')))
        return warning
    match = SYSTEM_WARNING_RE.match(line)
    if match:
        warning.update(kind='system_test', rank=int(match.group('rank')), host=match.group('host'), gpu=match.group('gpu'),
                       detail=' '.join(match.group('what').split()))
    return warning


def _result(match, number, line):
    """One result dict of a ``WR..`` line; ParseError for a layout with more columns."""
    if match.group('rest').strip():
        raise ParseError('unsupported HPL result layout: columns after Gflops', number, line)
    time, gflops = to_float(match.group('time')), to_float(match.group('gflops'))
    if time is None or gflops is None:
        return None
    return {'tv': match.group('tv'), 'n': int(match.group('n')), 'nb': int(match.group('nb')), 'p': int(match.group('p')),
            'q': int(match.group('q')), 'time': time, 'gflops': gflops, 'residual': None, 'check': None}


def _new_result():
    return {
        'flavour': None, 'version': None, 'nvidia_version': None, 'banner_present': False, 'eps': None, 'threshold': None,
        'results': [], 'residual_checks': [], 'summary': None, 'end_of_tests': False, 'last_progress': None,
        'warnings': [], 'errors': [],
    }


def _summary_line(line, result):
    """The end summary's ``Finished`` and count lines; True when consumed."""
    match = FINISHED_RE.match(line)
    if match:
        result['summary'] = {'tests': int(match.group('count')), 'passed': None, 'failed': None, 'skipped': None,
                             'unchecked': None}
        return True
    match = COUNT_RE.match(line)
    if match and result['summary'] is not None:
        result['summary'][COUNT_KEYS[match.group('what')]] = int(match.group('count'))
        return True
    if END_RE.match(line):
        result['end_of_tests'] = True
        return True
    return False


def _header_line(line, result):
    """Banner, eps and threshold lines; True when consumed."""
    match = NVIDIA_RE.match(line)
    if match:
        result['nvidia_version'] = match.group('version')
        result['flavour'] = 'hpl-nvidia'
        return True
    match = BANNER_RE.match(line)
    if match:
        result['version'] = match.group('version')
        result['banner_present'] = True
        return True
    for regex, key in ((EPS_RE, 'eps'), (THRESHOLD_RE, 'threshold')):
        match = regex.search(line)
        if match:
            result[key] = to_float(match.group('value'))
            return True
    return False


def _run_line(line, number, result):
    """Result, residual, progress, warning and error lines; True when consumed."""
    match = RESULT_RE.match(line)
    if match:
        row = _result(match, number, line)
        if row is not None:
            result['results'].append(row)
        return True
    match = RESIDUAL_RE.match(line)
    if match:
        check = {'expression': match.group('expr').strip(), 'value': to_float(match.group('value')),
                 'verdict': match.group('verdict')}
        result['residual_checks'].append(check)
        if result['results'] and result['results'][-1]['check'] is None:
            result['results'][-1].update(residual=check['value'], check=check['verdict'])
        return True
    match = PROGRESS_RE.match(line)
    if match:
        result['last_progress'] = {'percent': to_float(match.group('percent')), 'n_left': int(match.group('n_left')),
                                   'time': to_float(match.group('time')), 'gflops': to_float(match.group('gf'))}
        return True
    if WARNING_RE.match(line):
        result['warnings'].append(_warning(line))
        return True
    if ERROR_RE.match(line):
        result['errors'].append(line.strip())
        return True
    return False


def parse_hpl(text):
    """Parse the output of one HPL run (classic HPLinpack 2.x or HPL-NVIDIA), whole or its tail.

    Returns ``flavour`` ("hpl", "hpl-nvidia", or None when nothing says),
    ``version`` (HPLinpack's, from the banner), ``nvidia_version``,
    ``banner_present``, ``eps``, ``threshold`` (the residual limit, 16.0),
    ``results`` (one per ``WR..`` line: ``tv``, ``n``, ``nb``, ``p``, ``q``,
    ``time`` s, ``gflops``, and the ``residual`` / ``check`` ("PASSED",
    "FAILED") of the residual line that follows it, None when none does),
    ``residual_checks`` (``expression``, ``value``, ``verdict``), ``summary``
    (``tests``, ``passed``, ``failed``, ``skipped``, ``unchecked``; None when
    the text has no ``Finished N tests`` block), ``end_of_tests``,
    ``last_progress`` (HPL-NVIDIA's last ``Prog=`` line: ``percent``,
    ``n_left``, ``time``, ``gflops``), ``warnings`` (the ``!!!! WARNING``
    lines: ``kind`` "throttle" with ``clock_mhz``, ``temp_c``, ``power_w``,
    ``pcie_gen``, ``pcie_width``; "system_test" with ``detail``; or "other";
    each with ``rank``, ``host``, ``gpu``, ``text``) and ``errors`` (HPL
    ERROR lines).
    """
    if not isinstance(text, str):
        raise ParseError('HPL output must be text')
    result = _new_result()
    recognised = 0
    nvidia_lines = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip('\r')
        if not line.strip():
            continue
        if MIXED_RE.match(line):
            raise ParseError('unsupported HPL mode: mixed-precision HPL-AI/HPL-MxP output', number, line)
        if _header_line(line, result) or _summary_line(line, result):
            recognised += 1
        elif _run_line(line, number, result):
            recognised += 1
            nvidia_lines += 1 if (WARNING_RE.match(line) or PROGRESS_RE.match(line)) else 0
    if not recognised:
        raise ParseError('not HPL output: no banner, result line, residual check or summary')
    if result['flavour'] is None and (nvidia_lines or result['banner_present']):
        result['flavour'] = 'hpl-nvidia' if nvidia_lines else 'hpl'
    return result
