# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse the text report of ``mlxfwmanager --query`` (NVIDIA Firmware Tools, MFT; ``mlxup`` and mstflint's
``mstfwmanager`` print the same layout).

The layout, one block per adapter::

    Querying Mellanox devices firmware ...

    Device #1:
    ----------

      Device Type:      ConnectX7
      Part Number:      MCX75310AAS-NEA_Ax
      Description:      NVIDIA ConnectX-7 HHHL Adapter card; 400GbE / NDR IB (default mode); ...
      PSID:             MT_0000000838
      PCI Device Name:  0000:8e:00.0            (or /dev/mst/mt4129_pciconf0, 8e:00.0, mt4103_pci_cr0)
      Base GUID:        9c63c00300abed5a        (or Port1 GUID:, Port2 GUID:; GUIDs and MACs may be masked)
      Base MAC:         9c63c0abed5a
      Versions:         Current        Available
         FW             28.43.2026     N/A
         FW (Running)   28.39.1002     N/A      (only when the flashed image is not the one running: reset pending)
         PXE            3.7.0500       N/A
         UEFI Virtio net   21.4.0013   N/A      (ROM names may hold single spaces)

      Status:           No matching image found   (Up to date, Update required, Forced update required)

``FW`` is the image in flash, which the adapter runs after its next reset (reboot or ``mlxfwreset``); ``FW
(Running)`` is printed only while the running firmware differs from it. Lines the tool prints as errors (``-E-
No devices found or specified, mst might be stopped ...``) and warnings (``-W- ...``) are returned apart; other
unknown lines are skipped.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError

HEADER_RE = re.compile(r'^\s*Querying Mellanox devices firmware')
DEVICE_RE = re.compile(r'^\s*Device\s+#(?P<index>[0-9]+)\s*:\s*$')
DASHES_RE = re.compile(r'^\s*-{3,}\s*$')
MESSAGE_RE = re.compile(r'^\s*-(?P<kind>[EWI])-\s*(?P<text>.*?)\s*$')
VERSIONS_RE = re.compile(r'^\s*Versions:\s*Current\s+Available\s*$')
# "FW             28.43.2026     N/A", "FW (Running)   28.39.1002     N/A", "UEFI Virtio blk   22.4.0013   N/A":
# the name ends where two blanks (or a TAB) begin.
VERSION_ROW_RE = re.compile(r'^\s+(?P<name>[A-Za-z][A-Za-z0-9()_/.-]*(?: [A-Za-z0-9()_/.-]+)*)(?:\s{2,}|\t)\s*'
                            r'(?P<current>\S+)(?:\s+(?P<available>\S+))?\s*$')
FIELD_RE = re.compile(r'^\s*(?P<key>[A-Za-z][A-Za-z0-9 ]*?)\s*:\s*(?P<value>.*?)\s*$')

FIELDS = {
    'Device Type': 'device_type',
    'Part Number': 'part_number',
    'Description': 'description',
    'PSID': 'psid',
    'PCI Device Name': 'device',
    'Base GUID': 'base_guid',
    'Base MAC': 'base_mac',
    'Status': 'status',
}


def _value(text):
    text = (text or '').strip()
    return None if text in ('', 'N/A') else text


def _new_device(index):
    device = dict((key, None) for key in FIELDS.values())
    device.update({'index': index, 'versions': {}, 'fw': None, 'fw_running': None, 'fw_available': None})
    return device


def _finish(device):
    firmware = device['versions'].get('FW', {})
    device['fw'] = firmware.get('current')
    device['fw_available'] = firmware.get('available')
    running = device['versions'].get('FW (Running)', {}).get('current')
    device['fw_running'] = running or device['fw']
    return device


def parse_mlxfwmanager_query(text):
    """``{'devices': [...], 'errors': [...], 'warnings': [...]}`` from ``mlxfwmanager --query`` output.

    Each device: ``index`` (the report's ``Device #N``), ``device`` (the PCI device name to give ``-d``),
    ``device_type``, ``part_number``, ``description``, ``psid``, ``base_guid``, ``base_mac``, ``status`` (the tool's
    own verdict against the images it was given), ``versions`` (``{name: {current, available}}``), and from them
    ``fw`` (the flashed firmware), ``fw_running`` (the running one: ``fw`` unless a ``FW (Running)`` row says
    otherwise) and ``fw_available``. ``N/A`` and missing values are None. ``errors`` and ``warnings`` hold the
    text of the tool's ``-E-`` and ``-W-`` lines.

    ParseError when the text has neither the report's header, nor a device, nor a tool error line.
    """
    if not isinstance(text, str):
        raise ParseError('mlxfwmanager output must be text')
    devices, errors, warnings = [], [], []
    device = None
    in_versions = False
    seen_header = False
    for raw in text.splitlines():
        line = raw.rstrip('\r')
        if not line.strip() or DASHES_RE.match(line):
            continue
        if HEADER_RE.match(line):
            seen_header = True
            continue
        found = MESSAGE_RE.match(line)
        if found:
            (errors if found.group('kind') == 'E' else warnings).append(found.group('text'))
            continue
        found = DEVICE_RE.match(line)
        if found:
            if device is not None:
                devices.append(_finish(device))
            device = _new_device(int(found.group('index')))
            in_versions = False
            continue
        if device is None:
            continue
        if VERSIONS_RE.match(line):
            in_versions = True
            continue
        if in_versions and ':' not in line:
            found = VERSION_ROW_RE.match(line)
            if found:
                device['versions'][found.group('name')] = {'current': _value(found.group('current')),
                                                           'available': _value(found.group('available'))}
            continue
        found = FIELD_RE.match(line)
        if found:
            in_versions = False
            key = FIELDS.get(found.group('key'))
            if key:
                device[key] = _value(found.group('value'))
    if device is not None:
        devices.append(_finish(device))
    if not (seen_header or devices or errors):
        raise ParseError('not mlxfwmanager --query output: no "Querying Mellanox devices firmware" line, '
                         'no "Device #N:" block and no -E- line')
    return {'devices': devices, 'errors': errors, 'warnings': warnings}
