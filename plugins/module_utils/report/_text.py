# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Small text and number helpers shared by the report's figures and renderers.

Pure functions only: no I/O.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.slurm import hostlist_compress, hostlist_sort_key
from ansible_collections.aicluster.infra.plugins.module_utils.verify.checks import ORDER


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not (
        isinstance(value, float) and (math.isnan(value) or math.isinf(value)))


def median(values):
    """The median of the numbers in ``values`` (others ignored); None when there are none."""
    numbers = sorted(value for value in values if is_number(value))
    if not numbers:
        return None
    middle = len(numbers) // 2
    if len(numbers) % 2:
        return numbers[middle]
    low, high = numbers[middle - 1], numbers[middle]
    if isinstance(low, int) and isinstance(high, int) and (low + high) % 2 == 0:
        return (low + high) // 2
    return (low + high) / 2.0


def deviation(measured, baseline):
    """(measured - baseline) / baseline, or None when either is not a number or the baseline is 0."""
    if not is_number(measured) or not is_number(baseline) or baseline == 0:
        return None
    return (measured - baseline) / float(baseline)


def fmt(value, unit=None):
    """A measured value or threshold as text."""
    if value is None:
        text = '-'
    elif isinstance(value, bool):
        text = 'yes' if value else 'no'
    elif isinstance(value, float) and 0 < abs(value) < 1e-6:
        text = '%.1e' % value   # a bit error ratio (3.0e-11), not 0
    elif isinstance(value, float):
        text = ('%.2f' % value).rstrip('0').rstrip('.') if abs(value) < 1000 else '%.1f' % value
    elif isinstance(value, dict):
        # per-counter figures and limits (ib.link_errors: {'symbol_errors': 100, ...}), never a Python repr
        text = ', '.join('%s %s' % (key, fmt(value[key])) for key in sorted(value, key=str)) or '-'
    elif isinstance(value, (list, tuple)):
        text = ', '.join(fmt(item) for item in value) or '-'
    else:
        text = str(value)
    return '%s %s' % (text, unit) if unit and value is not None else text


def fmt_pct(fraction, signed=True):
    if fraction is None:
        return '-'
    return ('%+.1f%%' if signed else '%.1f%%') % (100.0 * fraction)


def hostlist(names):
    """A Slurm hostlist expression for the names, or the names joined when they do not compress."""
    names = list(names)
    if not names:
        return ''
    try:
        return hostlist_compress(names)
    except ParseError:
        return ','.join(sorted(names))


def sort_nodes(names):
    return sorted(names, key=hostlist_sort_key)


def check_order(check):
    """Sort key: the order of the check records, unknown ids last."""
    return (ORDER.index(check) if check in ORDER else len(ORDER), check)


_GPU = re.compile(r'^GPU\s*([^\s:,;()]+)')


def gpu_of(subject):
    """The GPU a subject names: ``GPU 5`` and ``GPU 5 (row remap)`` -> ``'5'``; None when it names none."""
    match = _GPU.match(str(subject or '').strip())
    return match.group(1) if match else None


def hca_of(subject):
    text = str(subject or '')
    return text.split(':', 1)[0].split(' ', 1)[0]


CLUSTER = 'cluster'


def node_results(doc):
    """(node, result) for every result, nodes in natural order, results in document order; then the cluster-level
    results (a multi-node run, a version split, the drain breaker) as node ``cluster``."""
    nodes = doc.get('nodes') or {}
    for name in sort_nodes(nodes):
        for result in nodes[name].get('results') or []:
            yield name, result
    for result in (doc.get('cluster') or {}).get('results') or []:
        yield CLUSTER, result


def has_cluster_result(doc, check):
    """Whether results.json has a cluster-level result of ``check`` (documents before 2026-12 had none)."""
    return any(result.get('check') == check for result in (doc.get('cluster') or {}).get('results') or [])


INVENTORY_FILES = ('hosts', 'hosts.yml', 'hosts.yaml', 'hosts.ini', 'inventory', 'inventory.yml', 'inventory.yaml')


def inventory_name(source):
    """An inventory's name for people, never the engineer's path: the directory of an inventory directory or of its
    hosts file (``/home/ops/mycluster/hosts.yml`` is ``mycluster``), else the file's name without its extension."""
    text = str(source or '').strip().rstrip('/')
    if not text:
        return ''
    parts = [part for part in text.replace('\\', '/').split('/') if part not in ('', '.')]
    if not parts:
        return text
    if len(parts) > 1 and parts[-1] in INVENTORY_FILES:
        return parts[-2]
    name = parts[-1]
    for extension in ('.yml', '.yaml', '.ini', '.cfg'):
        if name.endswith(extension) and len(name) > len(extension):
            return name[:-len(extension)]
    return name
