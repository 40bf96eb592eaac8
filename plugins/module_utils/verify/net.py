# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Area net: the MTU holds end to end (``ping -M do -s MTU-28`` to the next node of a ring)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.verify.results import new_result

_PING_MTU_RE = re.compile(r'(?:mtu\s*=\s*|mtu\s+)(?P<mtu>\d+)', re.IGNORECASE)


def evaluate_net(ping, expected):
    """net.mtu for one node and its peer.

    ``ping``: the registered ping command (rc, stdout, stderr; ``msg`` when it
    could not start). ``expected``: ``mtu`` and ``peer`` (the node pinged).
    """
    mtu = int(expected['mtu'])
    peer = expected.get('peer')
    rc = ping.get('rc')
    stderr = ping['stderr'] if 'stderr' in ping else ping.get('msg')
    text = '%s\n%s' % (ping.get('stdout') or '', stderr or '')
    payload = mtu - 28
    if rc == 0:
        return [new_result('net.mtu', peer, mtu, mtu, True,
                           'ping -M do -s %d to %s passes: MTU %d holds end to end' % (payload, peer, mtu), unit='bytes')]
    found = _PING_MTU_RE.search(text)
    measured = int(found.group('mtu')) if found else None
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    said = next((line for line in lines if 'too long' in line or 'Frag' in line or 'unknown host' in line.lower()
                 or 'Name or service' in line), lines[-1] if lines else 'no output')
    return [new_result('net.mtu', peer, measured, mtu, False,
                       'ping -M do -s %d to %s failed (rc=%s): %s; set MTU %d on the interfaces and every switch port '
                       'on the path' % (payload, peer, rc, said, mtu), unit='bytes')]
