# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark parse_ibqueryerrors (and the fabric.switch_errors decision) on a generated 100,000-port fabric.

Run from the repository root: ``python bench/ibqueryerrors.py [ports]``. The worst case for the parser: every
port prints errors (ibqueryerrors prints only those), in the layout of the real capture
(../shared/fixtures/real/ibqueryerrors/linux-rdma-ml-sx6036-mlx4-saturated-xmitwait.txt: ``Errors for 0x... "name"``,
three-space ``GUID 0x... port N: [Name == value]`` lines, the ``port ALL:`` sum, the ``## Summary`` block), with
``-r`` Link info lines as the verify stage would read it (rdma-core ibqueryerrors.c print_port_config() printf
formats): 64-port leaves (32 hosts, 32 spine uplinks) and one CA block per host port. Issue 32 asks for under 1 s.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import sys
import time

# _collection puts the collection on sys.path
import _collection  # noqa: E402,F401  pylint: disable=unused-import
from ansible_collections.aicluster.infra.plugins.module_utils.ibqueryerrors import parse_ibqueryerrors  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.verify.switch_errors import decide_switch_errors  # noqa: E402

SWITCH_PORTS = 64
LEAF_BASE, SPINE_BASE, HCA_BASE = 0xfc6a1c0300000000, 0xfc6a1c0301000000, 0x946dae0300000000
LINK = '==( 4X        106.25 Gbps Active/  LinkUp)==>'


def _link(lid, port, peer_guid, peer_lid, peer_port, peer):
    return '       Link info: %6d%4d[%2s] %s  0x%016x %6d %4d[%2s] "%s" (%s %s)' % (
        lid, port, '', LINK, peer_guid, peer_lid, peer_port, '', peer, '', '')


def _fabric(total_ports, bump=0):
    """The text of one read: ``total_ports`` port lines (switch ports first, then the hosts' CA ports); ``bump`` is
    added to the symbol errors of every 97th switch port (a second read with rising counters)."""
    lines, ports, hosts, leaf = [], 0, [], 0
    spines = 32
    while ports + len(hosts) < total_ports:
        leaf += 1
        guid, lid = LEAF_BASE + leaf, leaf
        lines.append('Errors for 0x%x "MF0;leaf-%04d:MQM9790/U1"' % (guid, leaf))
        lines.append('   GUID 0x%x port ALL: [SymbolErrorCounter == %d] [PortXmitWait == 4294967295]' % (guid, 64 * 3))
        for port in range(1, SWITCH_PORTS + 1):
            if ports + len(hosts) >= total_ports:
                break
            ports += 1
            symbol = 3 + (bump if (leaf * SWITCH_PORTS + port) % 97 == 0 else 0)
            lines.append('   GUID 0x%x port %d: [SymbolErrorCounter == %d] [LinkDownedCounter == 1] [PortXmitWait == 48213]'
                         % (guid, port, symbol))
            if port <= 32:
                host_lid = 1000 + leaf * 32 + port
                hosts.append((host_lid, lid, port, 'gpu-%05d mlx5_%d' % (leaf * 4 + port // 8, port % 8)))
                lines.append(_link(lid, port, HCA_BASE + host_lid, host_lid, 1, hosts[-1][3]))
            else:
                spine = port - 32
                lines.append(_link(lid, port, SPINE_BASE + spine, 9000 + spine, leaf % 64 + 1, 'MF0;spine-%02d:MQM9790/U1' % spine))
    for host_lid, sw_lid, sw_port, name in hosts:
        if ports >= total_ports:
            break
        ports += 1
        lines.append('Errors for "%s"' % name)
        lines.append('   GUID 0x%x port 1: [PortXmitWait == 2]' % (HCA_BASE + host_lid))
        lines.append(_link(host_lid, 1, LEAF_BASE + sw_lid, sw_lid, sw_port, 'MF0;leaf-%04d:MQM9790/U1' % sw_lid))
    lines += ['', '## Summary: %d nodes checked, %d bad nodes found' % (leaf + spines + len(hosts), leaf + len(hosts)),
              '##          %d ports checked, %d ports have errors beyond threshold' % (ports, ports),
              '## Thresholds: ', '## Suppressed:']
    return '\n'.join(lines) + '\n', ports, hosts


def main(argv):
    total = int(argv[1]) if len(argv) > 1 else 100000
    before, ports, hosts = _fabric(total)
    after = _fabric(total, bump=40)[0]
    start, cpu = time.perf_counter(), time.process_time()
    parsed = parse_ibqueryerrors(after)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    lines = [p for p in parsed['ports'] if p['port'] != 'ALL']
    assert len(lines) == ports, (len(lines), ports)
    assert sum(1 for p in lines if p['link']) == ports
    # CPU time too: on a loaded machine (CI jobs beside it) the wall time measures the neighbours as well
    print('ibqueryerrors parse: %d port lines (%d with -r Link info, %d MB of text) in %.3f s (%.3f s CPU) = %.0f ports/s'
          % (len(lines), ports, len(after) // 1000000, elapsed, cpu, len(lines) / elapsed))
    identity = dict(('node%d' % lid, {'mlx5_0': ['0x%016x' % (HCA_BASE + lid)]}) for lid, dummy, dummy2, dummy3 in hosts)
    parsed_before = parse_ibqueryerrors(before)
    start, cpu = time.perf_counter(), time.process_time()
    outcome = decide_switch_errors({'before': parsed_before, 'after': parsed},
                                   {'identity': identity, 'active': True, 'switches': ['0x%016x' % (SPINE_BASE + n) for n in range(1, 33)]})
    decided, cpu = time.perf_counter() - start, time.process_time() - cpu
    failed_nodes = sum(1 for results in outcome['nodes'].values() if not all(r['passed'] for r in results))
    figures = (outcome['summary']['ports_compared'], len(identity), decided, cpu, len(outcome['summary']['rising']),
               failed_nodes, sum(1 for r in outcome['cluster'] if not r['passed']))
    print('fabric.switch_errors decision (two parsed reads, %d switch ports, %d hosts): %.3f s (%.3f s CPU); %d rising ports: '
          '%d host links failed, %d cluster results' % figures)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
