# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Helpers shared by the verify areas: number text, fleet majorities, tool output parsed once."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.verify.results import new_result


def fmt(value):
    """A figure as people write it: 360.0 -> '360', 359.456 -> '359.46'."""
    if isinstance(value, float):
        return ('%.2f' % value).rstrip('0').rstrip('.')
    return str(value)


def for_node(expected, node):
    """The values one node is checked against: ``expected['nodes'][node]`` where the role passed each host's own
    (a host may carry its own bill of materials, e.g. another driver branch, or its own GPU model and thresholds),
    else ``expected`` (the fleet's, from the host that decides)."""
    return ((expected or {}).get('nodes') or {}).get(node) or expected or {}


def most_common(values):
    """The value held by strictly more nodes than any other, or None on a tie."""
    counts = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    if not counts:
        return None
    ranked = sorted(counts.items(), key=lambda item: -item[1])
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return None
    return ranked[0][0]


def _uniform_message(subject, what, value, reference, distinct, expected, fix):
    if value is None:
        return False, '%s of %s unknown; %s' % (what, subject, fix)
    if reference is None:
        return False, ('%s %s is %s; the fleet has no majority (%s); make them identical'
                       % (subject, what, value, ', '.join(distinct)))
    if str(value) == str(reference):
        if expected in (None, ''):
            return True, '%s %s %s, as the fleet' % (subject, what, value)
        return True, '%s %s %s as expected' % (subject, what, value)
    return False, '%s %s is %s, the %s is %s; %s' % (
        subject, what, value, 'fleet' if expected in (None, '') else 'expected value', reference, fix)


def uniform(check, subject, values_by_node, what, fix, expected=None, cluster=None):
    """Odd ones out: each node's value against ``expected`` or the fleet's majority value.

    ``values_by_node``: node -> value (None: unknown, reported as failed).
    Returns node -> [result]. ``cluster``: a list; when given, a fleet with no
    majority and no ``expected`` pin (a tie, such as the midpoint of a rolling
    upgrade) is one failed cluster-level result appended there, and each node's
    known value passes: no node is the odd one out, so none is drained for it.
    Without ``cluster`` a tie fails every node.
    """
    known = [value for value in values_by_node.values() if value is not None]
    reference = expected if expected not in (None, '') else most_common(known)
    distinct = sorted(set(str(value) for value in known))
    tie = reference is None and len(distinct) > 1 and cluster is not None
    out = {}
    for node, value in sorted(values_by_node.items()):
        if tie and value is not None:
            out.setdefault(node, []).append(new_result(
                check, subject, value, distinct, True,
                '%s %s is %s; the fleet is split with no majority (%s): reported at cluster level, not drained'
                % (subject, what, value, ', '.join(distinct))))
            continue
        passed, message = _uniform_message(subject, what, value, reference, distinct, expected, fix)
        out.setdefault(node, []).append(new_result(check, subject, value, reference if reference is not None else distinct,
                                                   passed, message))
    if tie:
        counts = dict((text, [node for node, value in sorted(values_by_node.items()) if str(value) == text]) for text in distinct)
        cluster.append(new_result(
            check, 'cluster', distinct, 'one %s' % what, False,
            '%s %s split with no majority: %s; %s, or pin the expected value' % (
                subject, what, '; '.join('%s on %d nodes' % (text, len(counts[text])) for text in distinct), fix)))
    return out


def merge(target, more):
    """Append node -> [results] of ``more`` to ``target``; returns ``target``."""
    for node, results in (more or {}).items():
        target.setdefault(node, []).extend(results)
    return target


def parse_once(parser, text, what, errors):
    """Parsed tool output, or None (and a line in ``errors``) when the text is empty or not that tool's output."""
    if text is None:
        return None
    if not str(text).strip():
        errors.append('%s printed nothing' % what)
        return None
    try:
        return parser(str(text))
    except ParseError as exc:
        errors.append('%s printed output that could not be parsed: %s' % (what, exc))
        return None


def ran(observation):
    """Whether a registered task result is there and was not skipped."""
    return isinstance(observation, dict) and bool(observation) and not observation.get('skipped')


def failed(observation):
    """Whether a registered module result failed (the task was allowed to fail so the others go on)."""
    return isinstance(observation, dict) and bool(observation.get('failed'))


def module_facts(observation, drop=('changed', 'failed', 'invocation', 'warnings', 'deprecations', 'skipped')):
    """A module's result without Ansible's own keys."""
    return dict((key, value) for key, value in (observation or {}).items() if key not in drop)


def int_or_none(value):
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None
