# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark partitions.conf for a 16,384-port fabric: opensm_partitions checked and rendered, parsed back, compared.

Run from the repository root: ``python bench/partitions.py [ports]``. The variable: the Default partition
(``ALL=full``, IPoIB at 4096/400 Gb/s), one ``compute`` partition naming every GPU port by GUID as a full member,
and 8 tenant partitions of ports/8 GUIDs each as limited members, so every port appears twice by GUID (the role
renders, parses back and diffs before it installs the file). Issue 32 asks for under 1 s; the figures are printed,
not asserted.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import sys
import time

# _collection puts the collection on sys.path
import _collection  # noqa: E402,F401  pylint: disable=unused-import
from ansible_collections.aicluster.infra.plugins.module_utils.ib_partitions import (  # noqa: E402
    expected_pkeys_by_port, parse_partitions_conf, partitions_conf_diff, render_partitions_conf)

HCA_BASE = 0x946dae0300000000
TENANTS = 8


def _variable(ports):
    guids = ['0x%016x' % (HCA_BASE + n) for n in range(ports)]
    partitions = [{'name': 'Default', 'pkey': 0x7fff, 'ipoib': True, 'mtu': 4096, 'rate': 400,
                   'members': [{'guid': 'ALL', 'membership': 'full'}]},
                  {'name': 'compute', 'pkey': 0x0001, 'ipoib': True, 'mtu': 4096, 'rate': 400,
                   'members': [{'guid': guid, 'membership': 'full'} for guid in guids]}]
    share = (ports + TENANTS - 1) // TENANTS
    for tenant in range(TENANTS):
        partitions.append({'name': 'tenant-%d' % tenant, 'pkey': 0x0010 + tenant, 'ipoib': True, 'mtu': 4096, 'rate': 200,
                           'members': [{'guid': guid} for guid in guids[tenant * share:(tenant + 1) * share]]})
    return partitions, guids


def _timed(function, *args):
    start, cpu = time.perf_counter(), time.process_time()
    value = function(*args)
    return value, time.perf_counter() - start, time.process_time() - cpu


def main(argv):
    ports = int(argv[1]) if len(argv) > 1 else 16384
    partitions, guids = _variable(ports)
    members = sum(len(part['members']) for part in partitions)
    text, rendered, rendered_cpu = _timed(render_partitions_conf, partitions)
    parsed, parse_wall, parse_cpu = _timed(parse_partitions_conf, text)
    assert sum(len(part['members']) for part in parsed) == members
    diff, diff_wall, diff_cpu = _timed(partitions_conf_diff, partitions, text)
    assert diff == [], diff[:3]
    # CPU time too: on a loaded machine (CI jobs beside it) the wall time measures the neighbours as well
    print('partitions.conf render (problems checked): %d partitions, %d ports, %d member entries, %d lines, %d KB in %.3f s '
          '(%.3f s CPU)' % (len(partitions), ports, members, text.count('\n'), len(text) // 1000, rendered, rendered_cpu))
    print('partitions.conf parse back: %.3f s (%.3f s CPU); render + parse %.3f s' % (parse_wall, parse_cpu, rendered + parse_wall))
    print('partitions_conf_diff (normalise + parse + compare, what the role runs before installing): %.3f s (%.3f s CPU)'
          % (diff_wall, diff_cpu))
    held, wall, cpu = _timed(expected_pkeys_by_port, partitions, guids)
    print('expected_pkeys_by_port (what fabric.partition expects of each port): %d ports in %.3f s (%.3f s CPU); last port %s'
          % (len(held), wall, cpu, ', '.join(held[guids[-1]])))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
