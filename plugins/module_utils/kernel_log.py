# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kernel log (``dmesg``, ``dmesg --time-format iso``): NVIDIA Xid events, their time and their resolution bucket."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_XID_RE = re.compile(r'NVRM:\s*Xid\s*\((?P<where>[^)]*)\)\s*:\s*(?P<code>\d+)\s*,?\s*(?P<text>.*)$')
# dmesg --time-format iso: ``2026-12-01T18:03:44,123456+00:00 text``
_ISO_RE = re.compile(r'^(?P<stamp>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:[,.](?P<frac>\d+))?(?P<tz>[+-]\d{2}:?\d{2}|Z)?\s')
_BOOT_LINE_RE = re.compile(r'\bLinux version \d')

# Resolution buckets of NVIDIA's Xid catalog, "Resolution Bucket (Immediate Action)" column
# (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html, Ampere and newer).
# FAIL_BUCKETS drain a node; the others are listed in the passing message.
RESET_GPU = 'RESET_GPU'
REBOOT = 'REBOOT'
CONTACT_SUPPORT = 'CONTACT_SUPPORT'
RESTART_APP = 'RESTART_APP'
IGNORE = 'IGNORE'
EVENT = 'EVENT'          # an event whose state another check reads (Xid 63: gpu.row_remap pending/failure)
XID_154_EVAL = 'XID_154_EVAL'  # NVLink5 errors: the action comes with the Xid 154 that follows when one is needed
UNKNOWN = 'UNKNOWN'
FAIL_BUCKETS = (RESET_GPU, REBOOT, CONTACT_SUPPORT)

# code -> (bucket, short name).  Codes not listed are UNKNOWN (listed, not failed; add them to
# verify_gpu_fatal_xids to fail them).
XID_CATALOG = {
    8: (RESTART_APP, 'GPU stopped processing'),
    13: (RESTART_APP, 'graphics engine exception'),
    31: (RESTART_APP, 'GPU memory page fault'),
    32: (RESTART_APP, 'invalid or corrupted push buffer stream'),
    38: (RESTART_APP, 'driver firmware error'),
    43: (RESTART_APP, 'GPU stopped processing (application fault)'),
    45: (IGNORE, 'preemptive cleanup after an application stopped'),
    48: (RESET_GPU, 'double bit ECC error'),
    61: (RESET_GPU, 'internal micro-controller breakpoint'),
    62: (RESET_GPU, 'internal micro-controller halt'),
    63: (EVENT, 'row remapping / page retirement recorded'),
    64: (RESET_GPU, 'row remapping / page retirement failure'),
    68: (RESTART_APP, 'NVDEC error'),
    69: (RESTART_APP, 'graphics engine class error'),
    74: (RESET_GPU, 'NVLink error'),
    79: (REBOOT, 'GPU has fallen off the bus'),
    92: (IGNORE, 'high single-bit ECC error rate'),
    94: (RESTART_APP, 'contained ECC error'),
    95: (RESET_GPU, 'uncontained ECC error'),
    109: (RESTART_APP, 'context switch timeout'),
    119: (RESET_GPU, 'GSP RPC timeout'),
    120: (RESET_GPU, 'GSP error'),
    121: (IGNORE, 'C2C link corrected error'),
    140: (RESET_GPU, 'unrecovered ECC error'),
    143: (CONTACT_SUPPORT, 'GPU initialization failure'),
    144: (XID_154_EVAL, 'NVLink SAW error'),
    145: (XID_154_EVAL, 'NVLink RLW error'),
    146: (XID_154_EVAL, 'NVLink TLW error'),
    147: (XID_154_EVAL, 'NVLink TREX error'),
    148: (XID_154_EVAL, 'NVLink NVLPW control error'),
    149: (XID_154_EVAL, 'NVLink NETIR error'),
    150: (XID_154_EVAL, 'NVLink MSE error'),
    154: (None, 'GPU recovery action changed'),  # bucket read from the text, see xid_bucket
}
# Xid 154 names the action the driver now requires: ``... changed from 0x0 (None) to 0x1 (GPU Reset Required)``
_XID154_ACTIONS = (
    (re.compile(r'reboot', re.IGNORECASE), REBOOT),
    (re.compile(r'reset', re.IGNORECASE), RESET_GPU),
    (re.compile(r'drain', re.IGNORECASE), CONTACT_SUPPORT),
)
_XID154_TO_RE = re.compile(r'\bto\s+0x[0-9a-f]+\s*\((?P<action>[^)]*)\)', re.IGNORECASE)


def xid_bucket(code, text=''):
    """The catalog's resolution bucket of an Xid (``RESET_GPU``, ``REBOOT``, ``CONTACT_SUPPORT``, ``RESTART_APP``, ...)."""
    if code == 154:
        match = _XID154_TO_RE.search(text or '')
        action = match.group('action') if match else (text or '')
        for pattern, bucket in _XID154_ACTIONS:
            if pattern.search(action):
                return bucket
        return IGNORE if match else UNKNOWN
    return XID_CATALOG.get(code, (UNKNOWN, None))[0]


def xid_name(code):
    return XID_CATALOG.get(code, (None, 'not in the catalog table'))[1]


def _iso_time(raw):
    """``YYYY-MM-DDTHH:MM:SS.ffffff+HH:MM`` of a ``dmesg --time-format iso`` line (sortable as text in one zone), or None."""
    match = _ISO_RE.match(raw)
    if not match:
        return None
    frac = (match.group('frac') or '0')[:6].ljust(6, '0')
    zone = match.group('tz') or ''
    if zone and zone != 'Z' and ':' not in zone:
        zone = zone[:3] + ':' + zone[3:]
    return '%s.%s%s' % (match.group('stamp'), frac, zone)


def parse_xid(text):
    """NVRM Xid events of a kernel log (dmesg): list of ``{code, pci, text, line, time, bucket}``.

    ``NVRM: Xid (PCI:0000:1b:00): 79, pid=..., GPU has fallen off the bus.``
    gives code 79, pci ``0000:1b:00``, bucket ``REBOOT``. ``time`` is the ISO
    stamp of a ``dmesg --time-format iso`` line, else None. Lines that are not
    Xid events are skipped.
    """
    events = []
    for raw in (text or '').splitlines():
        match = _XID_RE.search(raw)
        if match:
            where = match.group('where').strip()
            pci = where[4:] if where.upper().startswith('PCI:') else where
            code = int(match.group('code'))
            events.append({'code': code, 'pci': pci.strip(), 'text': match.group('text').strip(),
                           'line': raw.strip(), 'time': _iso_time(raw.strip()),
                           'bucket': xid_bucket(code, match.group('text'))})
    return events


def log_window(text):
    """What a ``dmesg --time-format iso`` read covers: ``{'first', 'last', 'from_boot'}``.

    ``first``/``last``: the ISO stamps of the oldest and newest lines (None
    without stamps); ``from_boot``: whether the buffer still holds the boot
    banner (``Linux version ...``), i.e. it has not wrapped.
    """
    first = last = None
    from_boot = False
    for raw in (text or '').splitlines():
        stamp = _iso_time(raw.strip())
        if stamp is None:
            continue
        if first is None:
            first = stamp
            from_boot = bool(_BOOT_LINE_RE.search(raw))
        last = stamp
    return {'first': first, 'last': last, 'from_boot': from_boot}


def since(events, cursor):
    """The events newer than ``cursor`` (an ISO stamp; None: all). Events without a time are kept."""
    if not cursor:
        return list(events)
    return [event for event in events if event.get('time') is None or event['time'] > cursor]
