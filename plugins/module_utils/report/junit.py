# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""JUnit XML of a results.json document: one testsuite per check area, one testcase per node and check.

Pure functions only: no I/O.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime

from ansible_collections.aicluster.infra.plugins.module_utils.slurm import hostlist_sort_key
from ansible_collections.aicluster.infra.plugins.module_utils.verify.checks import AREAS, CHECKS
from ansible_collections.aicluster.infra.plugins.module_utils.report._text import (
    check_order, fmt, has_cluster_result, hostlist, is_number, node_results,
)
from ansible_collections.aicluster.infra.plugins.module_utils.report.figures import next_action
from ansible_collections.aicluster.infra.plugins.module_utils.report.perftest import perftest_suspects


def _xml(text):
    return (str(text).replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;').replace('"', '&quot;')
            .replace('\n', '&#10;'))


def _xml_text(text):
    return str(text).replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;')


def _seconds(run):
    try:
        start = datetime.datetime.strptime(str(run.get('started')), '%Y-%m-%dT%H:%M:%SZ')
        end = datetime.datetime.strptime(str(run.get('finished')), '%Y-%m-%dT%H:%M:%SZ')
    except ValueError:
        return 0
    return max(0, int((end - start).total_seconds()))


def junit_xml(doc):
    """JUnit XML: one testsuite per check area, one testcase per node and check (classname ``<area>.<node>``)."""
    run = doc.get('run') or {}
    timestamp = str(run.get('started') or '1970-01-01T00:00:00Z').rstrip('Z')
    cases = {}
    for node, result in node_results(doc):
        area = result.get('area') or (CHECKS[result['check']].area if result.get('check') in CHECKS else 'other')
        cases.setdefault(area, {}).setdefault((node, result.get('check')), []).append(result)
    multi = (doc.get('nccl') or {}).get('multi_node') or {}
    if is_number(multi.get('busbw')) and not has_cluster_result(doc, 'nccl.multi_node_busbw'):
        cases.setdefault('nccl', {})[('fleet', 'nccl.multi_node_busbw')] = [{
            'check': 'nccl.multi_node_busbw', 'subject': hostlist(multi.get('nodes') or []), 'measured': multi['busbw'],
            'threshold': multi.get('threshold'), 'unit': 'GB/s', 'passed': bool(multi.get('passed')),
            'message': 'multi-node all_reduce busbw %s GB/s, threshold %s GB/s' % (fmt(multi['busbw']), fmt(multi.get('threshold')))}]
    suspects = perftest_suspects((doc.get('perftest') or {}).get('pairs') or [])
    suites = []
    total_tests = total_failures = 0
    area_rank = dict((area, position) for position, area in enumerate(AREAS))
    for suite_id, area in enumerate(sorted(cases, key=lambda name: (area_rank.get(name, len(AREAS)), name))):
        lines = []
        failures = 0
        ordered = sorted(cases[area], key=lambda key: (hostlist_sort_key(key[0]), check_order(key[1])))
        for node, check in ordered:
            results = cases[area][(node, check)]
            bad = [result for result in results if not result.get('passed', True)]
            head = '    <testcase classname="%s" name="%s" time="0"' % (_xml('%s.%s' % (area, node)), _xml(check))
            if not bad:
                lines.append(head + '/>')
                continue
            failures += 1
            first = bad[0]
            message = '%s: measured %s, threshold %s' % (first.get('subject'), fmt(first.get('measured'), first.get('unit')),
                                                         fmt(first.get('threshold'), first.get('unit')))
            if len(bad) > 1:
                message += ' (and %d more)' % (len(bad) - 1)
            body = []
            for result in bad:
                body.append('%s: measured %s, threshold %s: %s' % (
                    result.get('subject'), fmt(result.get('measured'), result.get('unit')),
                    fmt(result.get('threshold'), result.get('unit')), result.get('message') or ''))
            body.append('next: ' + next_action(node, first, suspects))
            lines.append(head + '>')
            lines.append('      <failure message="%s" type="%s">%s</failure>' % (
                _xml(message), _xml(check), _xml_text('\n'.join(body))))
            lines.append('    </testcase>')
        total_tests += len(ordered)
        total_failures += failures
        suites.append('\n'.join([
            '  <testsuite name="%s" tests="%d" failures="%d" errors="0" skipped="0" time="0" timestamp="%s" '
            'hostname="%s" id="%d" package="aicluster.infra.verify.%s">' % (
                _xml(area), len(ordered), failures, _xml(timestamp), _xml(run.get('inventory') or 'localhost'),
                suite_id, _xml(area)),
            '    <properties>',
            '      <property name="inventory" value="%s"/>' % _xml(run.get('inventory') or ''),
            '      <property name="collection_version" value="%s"/>' % _xml(run.get('collection_version') or ''),
            '      <property name="mode" value="%s"/>' % _xml(run.get('mode') or ''),
            '    </properties>',
        ] + lines + ['    <system-out/>', '    <system-err/>', '  </testsuite>']))
    head = '<testsuites name="%s" tests="%d" failures="%d" errors="0" time="%d">' % (
        _xml('aicluster.infra acceptance: %s' % (run.get('inventory') or '')), total_tests, total_failures, _seconds(run))
    return '\n'.join(['<?xml version="1.0" encoding="UTF-8"?>', head] + suites + ['</testsuites>']) + '\n'
