# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU models by form factor: the exact nvidia-smi name plus the PCI device id.

An H100 PCIe, an H100 NVL and an H100 SXM5 are all "H100" to a substring
match, but their NVLink, power and NCCL figures differ several-fold. A
model key names one form factor; ``model_key(gpu)`` gives it only when the
name and the device id nvidia-smi reports agree with the table.

Device ids are the PCI device (the upper 16 bits of nvidia-smi's
``pci.device_id``, ``0x233010DE`` -> ``2330``), from the public PCI ID
database (pci-ids.ucw.cz, vendor 10de); names are what NVML's
nvmlDeviceGetName prints for them (``NVIDIA H100 80GB HBM3`` and
``0x233010DE`` are in a real ``nvidia-smi -q`` of an HGX H100,
leptonai/gpud testdata, 535.183.01).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# key -> (names nvidia-smi prints, PCI device ids (lower-case hex), form factor, family, NVSwitch baseboard)
# nvswitch: the GPUs reach each other through NVSwitches managed by nvidia-fabricmanager
# (HGX/DGX baseboards), so the driver's fabric state applies.
MODELS = {
    'a100-sxm4-40gb': (('NVIDIA A100-SXM4-40GB',), ('20b0',), 'sxm', 'a100', True),    # GA100 [A100 SXM4 40GB]
    'a100-sxm4-80gb': (('NVIDIA A100-SXM4-80GB',), ('20b2',), 'sxm', 'a100', True),    # GA100 [A100 SXM4 80GB]
    'a100-pcie-80gb': (('NVIDIA A100 80GB PCIe',), ('20b5',), 'pcie', 'a100', False),  # GA100 [A100 PCIe 80GB]
    'h100-sxm': (('NVIDIA H100 80GB HBM3',), ('2330',), 'sxm', 'h100', True),           # GH100 [H100 SXM5 80GB]
    'h100-pcie': (('NVIDIA H100 PCIe',), ('2331',), 'pcie', 'h100', False),             # GH100 [H100 PCIe]
    'h100-nvl': (('NVIDIA H100 NVL',), ('2321',), 'nvl', 'h100', False),                # GH100 [H100L 94GB]
    'h200-sxm': (('NVIDIA H200',), ('2335',), 'sxm', 'h200', True),                     # GH100 [H200 SXM 141GB]
    'b200-sxm': (('NVIDIA B200',), ('2901',), 'sxm', 'b200', True),                     # GB100 [B200]
}

_HEX = re.compile(r'^(?:0x)?([0-9a-f]{4})([0-9a-f]{4})?$')


def device_id(value):
    """The PCI device id as 4 lower-case hex digits from ``0x233010DE``, ``0x2330`` or ``2330``; None otherwise."""
    match = _HEX.match(str(value or '').strip().lower())
    return match.group(1) if match else None


def _name(value):
    return ' '.join(str(value or '').split()).lower()


def model_key(gpu):
    """The model key of one GPU (``{'name', 'pci_device_id'}``, as gpu_info returns it), or None.

    Both must agree with one row of :data:`MODELS`. When the device id was
    not gathered (None), the exact name decides; a device id that contradicts
    the name (or is unknown) gives None.
    """
    name = _name((gpu or {}).get('name'))
    dev = device_id((gpu or {}).get('pci_device_id'))
    for key, (names, ids, _form, _family, _nvswitch) in sorted(MODELS.items()):
        if name in [_name(n) for n in names] and (dev is None or dev in ids):
            return key
    return None


def form_factor(key):
    """``sxm``, ``pcie`` or ``nvl`` of a model key; None for an unknown key."""
    return MODELS[key][2] if key in MODELS else None


def has_nvswitch(key):
    """Whether the model sits on an NVSwitch baseboard (fabric manager needed); None for an unknown key."""
    return MODELS[key][4] if key in MODELS else None


def expected_keys(wanted):
    """The model keys an inventory value accepts, or None when the table does not know it.

    A model key (``h100-sxm``) is itself; an nvidia-smi name (``NVIDIA H100
    80GB HBM3``) is its key; a bare family (``h100``) means that family's SXM
    parts (the form factor every NCCL bar of this collection assumes), so an
    H100 PCIe or NVL no longer passes as ``h100``.
    """
    text = _name(wanted)
    if not text:
        return None
    if text in MODELS:
        return [text]
    by_name = [key for key, row in sorted(MODELS.items()) if text in [_name(n) for n in row[0]]]
    if by_name:
        return by_name
    by_family = [key for key, row in sorted(MODELS.items()) if row[3] == text and row[2] == 'sxm']
    return by_family or None


def describe(key):
    """``NVIDIA H100 PCIe (h100-pcie, 0x2331)`` for messages."""
    if key not in MODELS:
        return str(key)
    names, ids, _form, _family, _nvswitch = MODELS[key]
    return '%s (%s, 0x%s)' % (names[0], key, '/0x'.join(ids))
