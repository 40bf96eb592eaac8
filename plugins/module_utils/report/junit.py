# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""JUnit XML of a results.json document: one testsuite per check area, one testcase per node and check.

Pure functions only: no I/O.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import xml.etree.ElementTree as ET

from ansible_collections.aicluster.infra.plugins.module_utils.slurm import hostlist_sort_key
from ansible_collections.aicluster.infra.plugins.module_utils.svg import control_free
from ansible_collections.aicluster.infra.plugins.module_utils.verify.checks import AREAS, CHECKS
from ansible_collections.aicluster.infra.plugins.module_utils.report._text import (
    check_order, fmt, has_cluster_result, hostlist, inventory_name, is_number, node_results,
)
from ansible_collections.aicluster.infra.plugins.module_utils.report.figures import COVER_KEYS, next_action, report_title
from ansible_collections.aicluster.infra.plugins.module_utils.report.perftest import perftest_suspects
from ansible_collections.aicluster.infra.plugins.module_utils.report.problems import check_states


def _seconds(run):
    try:
        start = datetime.datetime.strptime(str(run.get('started')), '%Y-%m-%dT%H:%M:%SZ')
        end = datetime.datetime.strptime(str(run.get('finished')), '%Y-%m-%dT%H:%M:%SZ')
    except ValueError:
        return 0
    return max(0, int((end - start).total_seconds()))


def junit_xml(doc, cover=None):
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
    # planned checks a node has no result of (it ran jobs, or did not answer) are testcases too, skipped with the reason
    for node, states in check_states(doc)['nodes'].items():
        for check, (state, reason) in states.items():
            area = CHECKS[check].area if check in CHECKS else 'other'
            if state == 'not tested' and (node, check) not in cases.get(area, {}):
                cases.setdefault(area, {})[(node, check)] = [{'check': check, 'subject': 'node', 'passed': True,
                                                             'not_tested': reason}]
    suspects = perftest_suspects((doc.get('perftest') or {}).get('pairs') or [])
    root = ET.Element('testsuites')
    total_tests = total_failures = total_errors = total_skipped = 0
    area_rank = dict((area, position) for position, area in enumerate(AREAS))
    for suite_id, area in enumerate(sorted(cases, key=lambda name: (area_rank.get(name, len(AREAS)), name))):
        ordered = sorted(cases[area], key=lambda key: (hostlist_sort_key(key[0]), check_order(key[1])))
        suite = ET.SubElement(root, 'testsuite', dict([
            ('name', control_free(area)), ('tests', str(len(ordered))), ('failures', '0'), ('errors', '0'), ('skipped', '0'),
            ('time', '0'), ('timestamp', control_free(timestamp)), ('hostname', control_free(inventory_name(run.get('inventory')) or 'localhost')),
            ('id', str(suite_id)), ('package', 'aicluster.infra.verify.%s' % control_free(area))]))
        properties = ET.SubElement(suite, 'properties')
        for name, value in [('inventory', inventory_name(run.get('inventory'))),
                            ('collection_version', run.get('collection_version') or ''), ('mode', run.get('mode') or '')] + [
                (key, (cover or {}).get(key)) for key in COVER_KEYS if (cover or {}).get(key)]:
            ET.SubElement(properties, 'property', dict([('name', name), ('value', control_free(value))]))
        failures = errors = skipped = 0
        for node, check in ordered:
            results = cases[area][(node, check)]
            bad = [result for result in results if not result.get('passed', True)]
            case = ET.SubElement(suite, 'testcase', dict([
                ('classname', control_free('%s.%s' % (area, node))), ('name', control_free(check)), ('time', '0')]))
            if not bad:
                reason = _skip_reason(results)
                if reason:
                    skipped += 1
                    ET.SubElement(case, 'skipped', dict([('message', control_free(reason))]))
                continue
            if check == 'node.reachable':
                # the node did not answer: the test could not run, which JUnit calls an error, not a failure
                errors += 1
                error = ET.SubElement(case, 'error', dict([('message', control_free(bad[0].get('message') or 'unreachable')),
                                                          ('type', 'node.reachable')]))
                error.text = control_free('next: ' + next_action(node, bad[0]))
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
            failure = ET.SubElement(case, 'failure', dict([('message', control_free(message)), ('type', control_free(check))]))
            failure.text = control_free('\n'.join(body))
        suite.set('failures', str(failures))
        suite.set('errors', str(errors))
        suite.set('skipped', str(skipped))
        ET.SubElement(suite, 'system-out')
        ET.SubElement(suite, 'system-err')
        total_tests += len(ordered)
        total_failures += failures
        total_errors += errors
        total_skipped += skipped
    for name, value in (('name', control_free('aicluster.infra acceptance: %s' % report_title(doc, cover))),
                        ('tests', str(total_tests)), ('failures', str(total_failures)), ('errors', str(total_errors)),
                        ('skipped', str(total_skipped)), ('time', str(_seconds(run)))):
        root.set(name, value)
    _indent(root)
    # ElementTree escapes &, <, > and " in text and attributes, and newlines in attributes; control_free removed
    # what XML cannot hold, so the file is well-formed whatever the tools printed
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding='unicode') + '\n'


def _skip_reason(results):
    """Why a testcase without a failure did not test: the node was not tested, or every result was "not checked"."""
    for result in results:
        if result.get('not_tested'):
            return 'not tested: %s' % result['not_tested']
    if results and all(result.get('skipped') for result in results):
        reason = results[0].get('skipped')
        return 'not checked: %s' % (reason if isinstance(reason, str) else results[0].get('message') or 'skipped')
    return None


def _indent(element, level=0):
    """Two spaces per level, as ElementTree.indent (Python 3.9) does; leaves text of leaf elements alone."""
    children = list(element)
    if not children:
        return
    inner = '\n' + '  ' * (level + 1)
    element.text = inner
    for child in children:
        _indent(child, level + 1)
        child.tail = inner
    children[-1].tail = '\n' + '  ' * level
