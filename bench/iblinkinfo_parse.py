# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark parse_iblinkinfo on a generated 10,000-port fabric in iblinkinfo's default layout.

Run from the repository root: ``python bench/iblinkinfo_parse.py [ports]``.
The text follows the printf formats of rdma-core iblinkinfo.c (switch and CA
blocks, Down/Polling ports, 1X links with "Could be 4X", NDR speed hints).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import sys
import time

# _collection puts the collection on sys.path
import _collection  # noqa: E402,F401  pylint: disable=unused-import
from ansible_collections.aicluster.infra.plugins.module_utils.iblinkinfo import parse_iblinkinfo  # noqa: E402

NDR = '106.25 Gbps'
SWITCH_PORTS = 64


def _link(width, speed, state, phys):
    if state == 'Down':
        return '(              %6s/%8s)' % (state, phys)
    return '(%3s %18s %6s/%8s)' % (width, speed, state, phys)


def _peer(lid, port, name, width_msg='', speed_msg=''):
    return '%6d %4d[%2s] "%s" (%s %s)' % (lid, port, '', name, width_msg, speed_msg)


def _switch_port(lid, port, link, remote):
    return '      %6d %4d[%2s] ==%s==>  %s' % (lid, port, '', link, remote)


def _ca_port(guid, lid, port, link, remote):
    return '      0x%016x %6d %4d[%2s] ==%s==>  %s' % (guid, lid, port, '', link, remote)


def _fabric(total_ports):
    """Leaf switches of 64 ports (32 to hosts, 32 up), then one CA block per host: total_ports port lines."""
    lines = []
    ports = 0
    leaf = 0
    hosts = []
    while ports + len(hosts) < total_ports:
        leaf += 1
        lid = leaf
        lines.append('Switch: 0x%016x MF0;leaf-%04d:MQM9790/U1:' % (0xfc6a1c0300000000 + leaf, leaf))
        for port in range(1, SWITCH_PORTS + 1):
            if ports + len(hosts) >= total_ports:
                break
            ports += 1
            if port % 29 == 0:
                lines.append(_switch_port(lid, port, _link('', '', 'Down', 'Polling'), '           [  ] "" ( )'))
            elif port <= 32:
                host_lid = 1000 + leaf * 32 + port
                name = 'gpu-%05d mlx5_%d' % (leaf * 4 + port // 8, port % 8)
                narrow = port % 17 == 0
                hosts.append((name, host_lid, lid, port, narrow))
                width, msg = ('1X', 'Could be 4X') if narrow else ('4X', '')
                lines.append(_switch_port(lid, port, _link(width, NDR, 'Active', 'LinkUp'), _peer(host_lid, 1, name, msg)))
            else:
                spine = 'MF0;spine-%02d:MQM9790/U1' % (port - 32)
                lines.append(_switch_port(lid, port, _link('4X', NDR, 'Active', 'LinkUp'), _peer(9000 + port, leaf % 64 + 1, spine)))
    for name, host_lid, sw_lid, sw_port, narrow in hosts:
        if ports >= total_ports:
            break
        ports += 1
        lines.append('CA: %s:' % name)
        width, msg = ('1X', 'Could be 4X') if narrow else ('4X', '')
        lines.append(_ca_port(0x946dae0300000000 + host_lid, host_lid, 1, _link(width, NDR, 'Active', 'LinkUp'),
                              _peer(sw_lid, sw_port, 'MF0;leaf-%04d:MQM9790/U1' % sw_lid, msg)))
    return '\n'.join(lines) + '\n', ports


def main(argv):
    total = int(argv[1]) if len(argv) > 1 else 10000
    text, ports = _fabric(total)
    start = time.perf_counter()
    result = parse_iblinkinfo(text)
    elapsed = time.perf_counter() - start
    links = result['links']
    assert len(links) == ports, (len(links), ports)
    down = sum(1 for link in links if link['state'] == 'Down')
    degraded = sum(1 for link in links if link['degraded'])
    print('iblinkinfo parse: %d port lines (%d down, %d degraded) in %.3f s = %.0f ports/s'
          % (len(links), down, degraded, elapsed, len(links) / elapsed))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
