# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The verification results document (results.json): its shape, builders and validation.

This is the contract between the verification roles (which write it) and the
acceptance report (which reads it); docs/verify-results.md explains each field.
Pure functions only: no I/O.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils.verify.checks import CHECKS, area_of

SCHEMA = 'aicluster.infra/verify-results/v1'

MODES = ('drain', 'fail', 'report')
DRAIN_PREFIX = 'aicluster:'


def check_area(check):
    """The area of a check id ('gpu.xid' -> 'gpu'); ValueError for an unknown id."""
    return area_of(check)


def new_result(check, subject, measured, threshold, passed, message, unit=None, **extra):
    """One check result for one node (or one pair/link): the unit of results.json.

    ``subject`` says what was measured on the node ('mlx5_3:1', 'GPU 5', 'node',
    'mlx5_0 -> gpu02 mlx5_0'); ``measured`` and ``threshold`` are numbers or
    strings as compared; ``message`` is the sentence a person reads, with both.
    """
    result = {
        'check': check,
        'area': check_area(check),
        'subject': subject,
        'measured': measured,
        'threshold': threshold,
        'unit': unit,
        'passed': bool(passed),
        'message': message,
    }
    result.update(extra)
    return result


def drain_reason(failed_results, limit=256):
    """The Slurm drain reason for a node's failed results: 'aicluster: gpu.xid GPU 3; ...'."""
    parts = []
    for result in failed_results:
        part = '%s %s' % (result['check'], result.get('subject') or '')
        if part.strip() not in parts:
            parts.append(part.strip())
    reason = '%s %s' % (DRAIN_PREFIX, '; '.join(parts))
    return reason if len(reason) <= limit else reason[:limit - 3] + '...'


def summarize(nodes, cluster=None):
    """Counts for the verdict: nodes, passed, failed, drained, resumed, and cluster_failed (the failed
    cluster-level results: they fail the verdict and drain nobody)."""
    summary = {'nodes': len(nodes), 'passed': 0, 'failed': 0, 'drained': 0, 'resumed': 0,
               'cluster_failed': len([r for r in ((cluster or {}).get('results') or []) if not r.get('passed')])}
    for node in nodes.values():
        summary['passed' if node.get('passed') else 'failed'] += 1
        summary['drained'] += 1 if node.get('drained') else 0
        summary['resumed'] += 1 if node.get('resumed') else 0
    summary['verdict'] = 'PASS' if summary['failed'] == 0 and summary['cluster_failed'] == 0 and summary['nodes'] > 0 else 'FAIL'
    return summary


def cluster_section(results):
    """results.json ``cluster``: the results that belong to no single node (a multi-node run, a version tie,
    a spine link, a breaker that tripped)."""
    results = list(results or [])
    return {'passed': all(r.get('passed') for r in results), 'results': results}


def _problems_in_result(where, result):
    problems = []
    for key in ('check', 'area', 'subject', 'measured', 'threshold', 'passed', 'message'):
        if key not in result:
            problems.append('%s: missing %r' % (where, key))
    check = result.get('check')
    if check is not None and check not in CHECKS:
        problems.append('%s: unknown check %r' % (where, check))
    elif check is not None and result.get('area') != CHECKS[check].area:
        problems.append('%s: area %r does not match check %r' % (where, result.get('area'), check))
    if 'passed' in result and not isinstance(result['passed'], bool):
        problems.append('%s: passed must be true or false' % where)
    return problems


def _problems_in_inventory(where, inventory):
    """An optional ``nodes.<node>.inventory`` (documents written before it existed have none): an object whose
    ``system`` is an object or null, ``gpus`` a list of objects with an ``index``, ``hcas`` a list of objects with a
    ``name``."""
    if not isinstance(inventory, dict):
        return ['%s: not an object' % where]
    problems = []
    if inventory.get('system') is not None and not isinstance(inventory['system'], dict):
        problems.append('%s.system: not an object or null' % where)
    for key, identity in (('gpus', 'index'), ('hcas', 'name')):
        items = inventory.get(key, [])
        if not isinstance(items, list):
            problems.append('%s.%s: not a list' % (where, key))
            continue
        for index, item in enumerate(items):
            if not isinstance(item, dict) or identity not in item:
                problems.append('%s.%s[%d]: not an object with %r' % (where, key, index, identity))
    return problems


def validate_results(doc):
    """Problems with a results document, as sentences; an empty list means it is valid."""
    if not isinstance(doc, dict):
        return ['results must be a JSON object']
    problems = []
    if doc.get('schema') != SCHEMA:
        problems.append('schema must be %r, got %r' % (SCHEMA, doc.get('schema')))
    run = doc.get('run')
    if not isinstance(run, dict):
        problems.append('run: missing or not an object')
    else:
        for key in ('started', 'finished', 'inventory', 'collection_version', 'mode'):
            if key not in run:
                problems.append('run: missing %r' % key)
        if run.get('mode') not in MODES:
            problems.append('run.mode must be one of %s' % ', '.join(MODES))
    cluster = doc.get('cluster', {'passed': True, 'results': []})
    if not isinstance(cluster, dict) or not isinstance(cluster.get('results'), list):
        problems.append('cluster: not an object with a results list')
        cluster = None
    else:
        for index, result in enumerate(cluster['results']):
            if not isinstance(result, dict):
                problems.append('cluster.results[%d]: not an object' % index)
                continue
            problems.extend(_problems_in_result('cluster.results[%d]' % index, result))
        if cluster.get('passed') is not all(r.get('passed') for r in cluster['results'] if isinstance(r, dict)):
            problems.append('cluster.passed does not match its results')
    nodes = doc.get('nodes')
    if not isinstance(nodes, dict):
        return problems + ['nodes: missing or not an object']
    for name, node in sorted(nodes.items()):
        if not isinstance(node, dict):
            problems.append('nodes.%s: not an object' % name)
            continue
        results = node.get('results', [])
        if not isinstance(results, list):
            problems.append('nodes.%s.results: not a list' % name)
            continue
        for index, result in enumerate(results):
            if not isinstance(result, dict):
                problems.append('nodes.%s.results[%d]: not an object' % (name, index))
                continue
            problems.extend(_problems_in_result('nodes.%s.results[%d]' % (name, index), result))
        if 'inventory' in node:
            problems.extend(_problems_in_inventory('nodes.%s.inventory' % name, node['inventory']))
        expected = all(r.get('passed') for r in results if isinstance(r, dict))
        if node.get('passed') is not expected:
            problems.append('nodes.%s.passed is %r but its results say %r' % (name, node.get('passed'), expected))
    summary = doc.get('summary')
    expected = summarize(nodes, cluster)
    if isinstance(summary, dict) and 'cluster_failed' not in summary and not expected['cluster_failed']:
        expected.pop('cluster_failed')  # written before cluster-level results existed
    if isinstance(summary, dict) and summary != expected:
        problems.append('summary does not match the nodes and cluster results (expected %r)' % (expected,))
    return problems
