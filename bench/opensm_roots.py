# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark OpenSM's root switches (opensm_roots.fabric_roots) on a generated two-tier fat tree of about 100,000
iblinkinfo port lines (default layout: leaves of 64 ports, 32 to hosts and 32 up, one spine per uplink, every CA).

Run from the repository root: ``python bench/opensm_roots.py [leaves]`` (default 1,024 leaves: 98,304 lines).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import sys
import time

# _collection puts the collection on sys.path
import _collection  # noqa: E402,F401  pylint: disable=unused-import
from iblinkinfo_parse import NDR, _ca_port, _link, _peer, _switch_port  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.iblinkinfo import parse_iblinkinfo  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.opensm_roots import fabric_roots  # noqa: E402

UP = _link('4X', NDR, 'Active', 'LinkUp')
SPINES = 32
SPINE_LID = 60000


def _fabric(leaves):
    """Leaf blocks, spine blocks, then one CA block per host."""
    lines = []
    spine_name = 'MF0;spine-%02d:MQM9790/U1'
    for leaf in range(1, leaves + 1):
        lines.append('Switch: 0x%016x MF0;leaf-%04d:MQM9790/U1:' % (0xfc6a1c0300000000 + leaf, leaf))
        for port in range(1, 33):
            lines.append(_switch_port(leaf, port, UP, _peer(leaves + (leaf - 1) * 32 + port, 1, 'gpu mlx5')))
        for spine in range(SPINES):
            lines.append(_switch_port(leaf, 33 + spine, UP, _peer(SPINE_LID + spine, leaf, spine_name % spine)))
    for spine in range(SPINES):
        lines.append('Switch: 0x%016x %s:' % (0xfc6a1c0301000000 + spine, spine_name % spine))
        for leaf in range(1, leaves + 1):
            lines.append(_switch_port(SPINE_LID + spine, leaf, UP, _peer(leaf, 33 + spine, 'MF0;leaf-%04d:MQM9790/U1' % leaf)))
    for leaf in range(1, leaves + 1):
        for port in range(1, 33):
            lid = leaves + (leaf - 1) * 32 + port
            lines.append('CA: gpu mlx5:')
            lines.append(_ca_port(0x946dae0300000000 + lid, lid, 1, UP, _peer(leaf, port, 'MF0;leaf-%04d:MQM9790/U1' % leaf)))
    return '\n'.join(lines) + '\n'


def main(argv):
    leaves = int(argv[1]) if len(argv) > 1 else 1024
    text = _fabric(leaves)
    start = time.perf_counter()
    links = parse_iblinkinfo(text)['links']
    parsed = time.perf_counter()
    result = fabric_roots(links)
    ranked = time.perf_counter()
    assert len(result['roots']) == SPINES and result['reason'] is None, result['reason']
    print('opensm roots: %d port lines, %d switches, %d roots: parse %.3f s, rank %.3f s'
          % (len(links), len(result['ranks']), len(result['roots']), parsed - start, ranked - parsed))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
