# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Time hostlist_compress/hostlist_expand on 4,096 and 65,536 node names.

Run from the repository root: ``python bench/hostlist.py``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import random
import time

# _collection puts the collection on sys.path
import _collection  # noqa: E402,F401  pylint: disable=unused-import
from ansible_collections.aicluster.infra.plugins.module_utils.slurm import hostlist_compress, hostlist_expand  # noqa: E402


def _names(count, seed=2026):
    """Racks of 32 nodes, a few absent (down or not racked yet), in random order."""
    rng = random.Random(seed)
    names = ['rack%02d-gpu%03d' % (index // 32, index % 32) for index in range(count) if rng.random() > 0.02]
    rng.shuffle(names)
    return names


def _time(function, argument, repeat=3):
    best = None
    for _attempt in range(repeat):
        start = time.perf_counter()
        result = function(argument)
        elapsed = time.perf_counter() - start
        best = elapsed if best is None else min(best, elapsed)
    return best, result


def main():
    for count in (4096, 65536):
        names = _names(count)
        compress_s, expr = _time(hostlist_compress, names)
        expand_s, expanded = _time(hostlist_expand, expr)
        assert len(expanded) == len(set(names))
        flat = 'gpu[%05d-%05d]' % (0, count - 1)
        flat_expand_s, flat_names = _time(hostlist_expand, flat)
        flat_compress_s, flat_expr = _time(hostlist_compress, flat_names)
        assert flat_expr == flat
        print('%6d names: compress %.3fs, expand %.3fs (racked, %d names, %d chars); '
              'flat gpu[...]: expand %.3fs, compress %.3fs'
              % (count, compress_s, expand_s, len(expanded), len(expr), flat_expand_s, flat_compress_s))


if __name__ == '__main__':
    main()
