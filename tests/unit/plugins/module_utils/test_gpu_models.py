# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_models: the model by form factor, from the exact name and the PCI device id."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.aicluster.infra.plugins.module_utils import gpu_models


@pytest.mark.parametrize('name, dev, key', [
    ('NVIDIA H100 80GB HBM3', '0x233010DE', 'h100-sxm'),
    ('NVIDIA H100 PCIe', '0x233110DE', 'h100-pcie'),
    ('NVIDIA H100 NVL', '0x2321', 'h100-nvl'),
    ('NVIDIA H200', '2335', 'h200-sxm'),
    ('NVIDIA A100-SXM4-80GB', '0x20B210DE', 'a100-sxm4-80gb'),
    ('NVIDIA A100 80GB PCIe', '0x20B510DE', 'a100-pcie-80gb'),
    ('NVIDIA B200', '0x290110DE', 'b200-sxm'),
    ('NVIDIA H100 80GB HBM3', None, 'h100-sxm'),           # no device id gathered: the exact name decides
    ('NVIDIA H100 80GB HBM3', '0x233110DE', None),         # the name says SXM, the device says PCIe
    ('NVIDIA L40S', '0x26B910DE', None),                   # not in the table
], ids=['h100-sxm', 'h100-pcie', 'h100-nvl', 'h200', 'a100-sxm', 'a100-pcie', 'b200', 'no-id', 'contradiction', 'unknown'])
def test_model_key(name, dev, key):
    assert gpu_models.model_key({'name': name, 'pci_device_id': dev}) == key


def test_expected_keys_family_means_sxm():
    assert gpu_models.expected_keys('h100') == ['h100-sxm']
    assert gpu_models.expected_keys('a100') == ['a100-sxm4-40gb', 'a100-sxm4-80gb']
    assert gpu_models.expected_keys('H100-PCIe') == ['h100-pcie']
    assert gpu_models.expected_keys('NVIDIA H100 NVL') == ['h100-nvl']
    assert gpu_models.expected_keys('l40s') is None and gpu_models.expected_keys('') is None


def test_form_factor_and_nvswitch():
    assert gpu_models.form_factor('h100-nvl') == 'nvl' and gpu_models.has_nvswitch('h100-nvl') is False
    assert gpu_models.has_nvswitch('b200-sxm') is True and gpu_models.form_factor('nope') is None
    assert gpu_models.describe('h100-pcie') == 'NVIDIA H100 PCIe (h100-pcie, 0x2331)'
