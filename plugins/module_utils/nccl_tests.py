# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for the text output of the nccl-tests benchmarks (all_reduce_perf and friends)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.printed_numbers import to_float

# Layouts handled (see nccl-tests src/common.cu):
#
# * old 2.x: ``#       size  count  type  redop  time algbw busbw  error  time ...``
#   (``redop``/``root`` columns only for the collectives that have them,
#   ``error`` printed as ``N/A`` when validation is off)
# * current 2.10+: ``# size count type redop root time algbw busbw #wrong ...``
#   with ``# nccl-tests version 2.13.x nccl-headers=NNNNN nccl-library=NNNNN``,
#   ``# Collective test starting: all_reduce_perf`` and optional extra columns
#   (``#bitdiff``, per-iteration ``i_*`` columns, ``cputime``, timestamp).
#
# The table header line gives the column positions; a data row without a
# header seen yet is read with the layout guessed from its token count.
#
# ``errors`` holds the lines the benchmark prints when it fails:
# ``Test failure``, ``Test NCCL failure``, ``Test CUDA failure``, ``Cuda failure``,
# ``NCCL failure``, ``# error: ...``, ``Invalid number of GPUs``.  NCCL's own
# ``NCCL WARN`` lines are not failures by themselves (NCCL warns about many
# benign things): they go to ``warnings``.
#
# ``failures`` are the failure lines that name their process's host (common.h
# CUDACHECK/NCCLCHECK print in every process, not only rank 0):
# ``HOST: Test NCCL failure common.cu:1005 '<error> / <last NCCL error>'`` and
# ``HOST: Test CUDA failure common.cu:892 '<error>'``; ``remote`` marks NCCL's
# ncclRemoteError ("remote process exited or there was a network error"), the
# echo a process sees when another one failed.

_VERSION_RE = re.compile(
    r'^#\s*nccl-tests version\s+(?P<version>\S+)'
    r'(?:\s+nccl-headers=(?P<headers>\d+))?(?:\s+nccl-library=(?P<library>\d+))?')
_STARTING_RE = re.compile(r'^#\s*Collective test (?:starting|concluded):\s*(?P<name>\S+)')
_NCCL_VERSION_RE = re.compile(r'NCCL version\s+(?P<version>\d+\.\d+\.\d+)')
_PARAMS_RE = re.compile(r'^#\s*nThread\s+(?P<nthread>\d+)\s+nGpus\s+(?P<ngpus>\d+)')
_RANK_RE = re.compile(
    r'^#\s*Rank\s+(?P<rank>\d+)(?:\s+Group\s+(?P<group>\d+))?\s+Pid\s+(?P<pid>\d+)\s+on\s+(?P<host>\S+)'
    r'\s+device\s+(?P<device>\d+)\s+\[(?P<busid>[^\]]*)\]\s*(?P<name>.*?)\s*$')
_OOB_RE = re.compile(r'^#\s*Out of bounds values\s*:\s*(?P<value>-?\d+)')
_AVG_RE = re.compile(r'^#\s*Avg bus bandwidth\s*:\s*(?P<value>\S+)')
_ERROR_RE = re.compile(
    r'(?:\bTest (?:NCCL |CUDA )?failure\b|\bCuda failure\b|\bNCCL failure\b|^#\s*error:|'
    r'\bInvalid number of GPUs\b)')
_WARN_RE = re.compile(r'\bNCCL WARN\b')
_FAILURE_RE = re.compile(
    r'^(?P<host>[^\s:]+): Test (?P<kind>NCCL|CUDA) failure (?P<where>\S+)(?:\s+\'(?P<reason>.*)\')?\s*$')
_REMOTE_ERROR = 'remote process exited or there was a network error'
_INT_RE = re.compile(r'^-?\d+$')

_TIME_NAMES = ('time', 'cputime')
_WRONG_NAMES = ('#wrong', 'error')


def _to_int(token):
    """int() of a printed integer (``%g`` may print ``1e+06``), None for N/A or junk."""
    if token is None:
        return None
    if _INT_RE.match(token):
        return int(token)
    value = to_float(token)
    if value is None or value != int(value):
        return None
    return int(value)


def _decode_nccl_code(code):
    """``22105`` -> ``2.21.5``; ``2708`` (pre-2.9 codes) -> ``2.7.8``."""
    number = _to_int(code)
    if number is None or number <= 0:
        return None
    if number >= 10000:
        return '%d.%d.%d' % (number // 10000, (number % 10000) // 100, number % 100)
    return '%d.%d.%d' % (number // 1000, (number % 1000) // 100, number % 100)


def _header_layout(tokens):
    """Column positions from the ``# size count type ...`` header tokens (``#`` dropped).

    Returns a dict name -> index for the leading columns and the in/out-of-place
    groups, or None when the tokens are not a results header.
    """
    if len(tokens) < 3 or tokens[0] != 'size' or tokens[1] != 'count':
        return None
    times = [i for i, tok in enumerate(tokens) if tok in _TIME_NAMES]
    if len(times) < 2:
        return None
    layout = {'size': 0, 'count': 1, 'type': None, 'redop': None, 'root': None}
    for i, tok in enumerate(tokens[:times[0]]):
        if tok in ('type', 'redop', 'root'):
            layout[tok] = i
    for prefix, start, end in (('oop', times[0], times[1]), ('ip', times[1], len(tokens))):
        group = tokens[start:end]
        layout[prefix + '_time_us'] = start
        for offset, tok in enumerate(group):
            if tok == 'algbw':
                layout[prefix + '_algbw'] = start + offset
            elif tok == 'busbw':
                layout[prefix + '_busbw'] = start + offset
            elif tok in _WRONG_NAMES:
                layout[prefix + '_wrong'] = start + offset
    return layout


def _guess_layout(ntokens):
    """Layout for a data row seen before any header, from its token count."""
    if ntokens == 13:   # current: size count type redop root + 2 x 4
        names = ['size', 'count', 'type', 'redop', 'root']
    elif ntokens == 12:  # old, with redop column
        names = ['size', 'count', 'type', 'redop']
    elif ntokens == 11:  # old, no redop column (all_gather)
        names = ['size', 'count', 'type']
    else:
        return None
    layout = {'redop': None, 'root': None, 'type': None}
    layout.update((name, i) for i, name in enumerate(names))
    base = len(names)
    for prefix, start in (('oop', base), ('ip', base + 4)):
        for offset, name in enumerate(('time_us', 'algbw', 'busbw', 'wrong')):
            layout['%s_%s' % (prefix, name)] = start + offset
    return layout


def _cell(tokens, layout, name):
    index = layout.get(name)
    if index is None or index >= len(tokens):
        return None
    return tokens[index]


def _parse_row(tokens, layout):
    """One results row, or None when the tokens do not fit the layout."""
    if len(tokens) < 3 or not _INT_RE.match(tokens[0]) or not _INT_RE.match(tokens[1]):
        return None
    if layout is None or layout.get('ip_busbw') is None or layout['ip_busbw'] >= len(tokens):
        return None
    row = {'size': int(tokens[0]), 'count': int(tokens[1]), 'type': _cell(tokens, layout, 'type')}
    row['redop'] = _cell(tokens, layout, 'redop')
    root = _cell(tokens, layout, 'root')
    row['root'] = _to_int(root) if root is not None else None
    for prefix in ('oop', 'ip'):
        row[prefix + '_time_us'] = to_float(_cell(tokens, layout, prefix + '_time_us'))
        row[prefix + '_algbw'] = to_float(_cell(tokens, layout, prefix + '_algbw'))
        row[prefix + '_busbw'] = to_float(_cell(tokens, layout, prefix + '_busbw'))
        row[prefix + '_wrong'] = _to_int(_cell(tokens, layout, prefix + '_wrong'))
    if row['oop_busbw'] is None and row['ip_busbw'] is None:
        return None
    return row


def _parse_rank(match):
    return {
        'rank': int(match.group('rank')),
        'group': int(match.group('group')) if match.group('group') is not None else None,
        'pid': int(match.group('pid')),
        'host': match.group('host'),
        'device': int(match.group('device')),
        'busid': match.group('busid').strip(),
        'name': match.group('name'),
    }


def _empty_result():
    return {
        'collective': None, 'nccl_tests_version': None, 'nccl_version': None,
        'nthreads': None, 'ngpus': None, 'ranks': [], 'rows': [],
        'avg_busbw': None, 'out_of_bounds': None, 'max_busbw': None,
        'errors': [], 'warnings': [],
    }


def _header_line(line, result):
    """Handle a ``#`` line; returns a new table layout when the line is a results header."""
    body = line.lstrip('#').strip()
    match = _VERSION_RE.match(line)
    if match:
        result['nccl_tests_version'] = match.group('version')
        if match.group('library'):
            result['nccl_version'] = _decode_nccl_code(match.group('library')) or result['nccl_version']
        return None
    match = _STARTING_RE.match(line)
    if match:
        result['collective'] = match.group('name').rsplit('/', 1)[-1]
        return None
    match = _PARAMS_RE.match(line)
    if match:
        result['nthreads'] = int(match.group('nthread'))
        result['ngpus'] = int(match.group('ngpus'))
        return None
    match = _RANK_RE.match(line)
    if match:
        result['ranks'].append(_parse_rank(match))
        return None
    match = _OOB_RE.match(line)
    if match:
        result['out_of_bounds'] = int(match.group('value'))
        return None
    match = _AVG_RE.match(line)
    if match:
        result['avg_busbw'] = to_float(match.group('value'))
        return None
    return _header_layout(body.split())


def parse_nccl_tests(text):
    """Parse the stdout of an nccl-tests binary (``all_reduce_perf -b 8 -e 8G ...``).

    Returns a dict with ``collective``, ``nccl_tests_version``, ``nccl_version``,
    ``nthreads``, ``ngpus``, ``ranks``, ``rows``, ``avg_busbw``, ``out_of_bounds``,
    ``max_busbw``, ``errors``, ``warnings`` and, when a failure line names its host, ``failures`` (``host``,
    ``kind`` NCCL or CUDA, ``where``, ``reason``, ``remote``).  Raises ParseError when the text
    has none of the nccl-tests structure (no header, rank, row or summary line).
    """
    if not isinstance(text, str) or not text.strip():
        raise ParseError('empty nccl-tests output')
    result = _empty_result()
    layout = None
    recognised = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if _ERROR_RE.search(line):
            result['errors'].append(line)
            failure = _FAILURE_RE.match(line)
            if failure:
                reason = failure.group('reason') or ''
                result.setdefault('failures', []).append({
                    'host': failure.group('host'), 'kind': failure.group('kind'), 'where': failure.group('where'),
                    'reason': reason, 'remote': reason.startswith(_REMOTE_ERROR)})
            recognised = True
            continue
        if _WARN_RE.search(line):
            result['warnings'].append(line)
            continue
        nccl_version = _NCCL_VERSION_RE.search(line)
        if nccl_version and result['nccl_version'] is None:
            result['nccl_version'] = nccl_version.group('version')
        if line.startswith('#'):
            before = (len(result['ranks']), result['avg_busbw'], result['out_of_bounds'],
                      result['nccl_tests_version'], result['collective'], result['ngpus'])
            new_layout = _header_line(line, result)
            if new_layout is not None:
                layout = new_layout
                recognised = True
            elif before != (len(result['ranks']), result['avg_busbw'], result['out_of_bounds'],
                            result['nccl_tests_version'], result['collective'], result['ngpus']):
                recognised = True
            continue
        tokens = line.split()
        row = _parse_row(tokens, layout if layout is not None else _guess_layout(len(tokens)))
        if row is not None:
            result['rows'].append(row)
            recognised = True
    if not recognised:
        raise ParseError('no nccl-tests header, rank, result row or summary found')
    busbws = [value for row in result['rows'] for value in (row['oop_busbw'], row['ip_busbw']) if value is not None]
    result['max_busbw'] = max(busbws) if busbws else None
    return result
