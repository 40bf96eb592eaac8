# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse ``ibv_devinfo`` (rdma-core libibverbs/examples/devinfo.c) without ``-v``.

The layout, TAB-indented ``key:<TABs>value`` lines::

    hca_id:<TAB>mlx5_0
    <TAB>transport:<TAB><TAB><TAB>InfiniBand (0)
    <TAB>fw_ver:<TAB><TAB><TAB><TAB>20.35.1012
    ...
    <TAB>board_id:<TAB><TAB><TAB>MT_0000000222
    ...
    <TAB><TAB>port:<TAB>1
    <TAB><TAB><TAB>state:<TAB><TAB><TAB>PORT_ACTIVE (4)
    <TAB><TAB><TAB>max_mtu:<TAB><TAB>4096 (5)
    <TAB><TAB><TAB>active_mtu:<TAB><TAB>4096 (5)
    <TAB><TAB><TAB>link_layer:<TAB><TAB>InfiniBand

MTUs are printed as bytes and the verbs enum in brackets (``4096 (5)``);
``board_id`` is the adapter's PSID (the firmware image's board type, the same
on every card of one model and vendor); unknown lines are skipped.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError

HCA_RE = re.compile(r'^hca_id:\s*(?P<name>\S+)\s*$')
PORT_RE = re.compile(r'^\s+port:\s*(?P<port>[0-9]+)\s*$')
KEY_RE = re.compile(r'^\s+(?P<key>[a-z_]+):\s*(?P<value>.*?)\s*$')
MTU_RE = re.compile(r'^(?P<bytes>[0-9]+)(?:\s*\((?P<enum>[0-9]+)\))?$')
STATE_RE = re.compile(r'^(?P<state>PORT_[A-Z_]+)')


def _mtu(value):
    found = MTU_RE.match(value)
    return int(found.group('bytes')) if found else None


def parse_ibv_devinfo(text):
    """``[{name, fw_ver, board_id, ports: [{port, state, max_mtu, active_mtu, link_layer}]}]``; ParseError without an
    ``hca_id:`` line. ``fw_ver`` and ``board_id`` (the PSID) are None when not printed."""
    hcas = []
    hca = port = None
    for number, line in enumerate(text.splitlines(), 1):
        found = HCA_RE.match(line)
        if found:
            hca = {'name': found.group('name'), 'fw_ver': None, 'board_id': None, 'ports': []}
            hcas.append(hca)
            port = None
            continue
        if hca is None:
            if line.strip() and not line.strip().endswith('found:'):
                raise ParseError('not ibv_devinfo output: text before the first hca_id line', number, line)
            continue
        found = PORT_RE.match(line)
        if found:
            port = {'port': int(found.group('port')), 'state': None, 'max_mtu': None, 'active_mtu': None, 'link_layer': None}
            hca['ports'].append(port)
            continue
        found = KEY_RE.match(line)
        if not found:
            continue
        key, value = found.group('key'), found.group('value')
        if port is None:
            if key in ('fw_ver', 'board_id'):
                hca[key] = value or None
        elif key in ('max_mtu', 'active_mtu'):
            port[key] = _mtu(value)
        elif key == 'state':
            state = STATE_RE.match(value)
            port['state'] = state.group('state') if state else value
        elif key == 'link_layer':
            port['link_layer'] = value
    if not hcas:
        raise ParseError('not ibv_devinfo output: no hca_id line')
    return hcas
