# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for the kernel log (``dmesg``): NVIDIA Xid events."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_XID_RE = re.compile(r'NVRM:\s*Xid\s*\((?P<where>[^)]*)\)\s*:\s*(?P<code>\d+)\s*,?\s*(?P<text>.*)$')


def parse_xid(text):
    """NVRM Xid events of a kernel log (dmesg): list of ``{code, pci, text, line}``.

    ``NVRM: Xid (PCI:0000:1b:00): 79, pid=..., GPU has fallen off the bus.``
    gives code 79, pci ``0000:1b:00``. Lines that are not Xid events are skipped.
    """
    events = []
    for raw in (text or '').splitlines():
        match = _XID_RE.search(raw)
        if match:
            where = match.group('where').strip()
            pci = where[4:] if where.upper().startswith('PCI:') else where
            events.append({'code': int(match.group('code')), 'pci': pci.strip(), 'text': match.group('text').strip(),
                           'line': raw.strip()})
    return events
