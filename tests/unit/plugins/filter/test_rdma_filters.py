# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rdma role's filters (plugins/filter/rdma.py): values through, errors turned into AnsibleFilterError, each with
its documentation."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from _paths import REPO

from ansible_collections.aicluster.infra.plugins.filter.rdma import FilterModule

FILTERS = FilterModule().filters()


def test_filters_and_their_docs():
    assert sorted(FILTERS) == ['rdma_device_check', 'rdma_firmware_report', 'rdma_kernel_module_packages',
                               'rdma_nvidia_dkms_rebuild', 'rdma_vars_problems']
    for name in FILTERS:
        with open(os.path.join(REPO, 'plugins', 'filter', name + '.yml'), encoding='utf-8') as handle:
            assert yaml.safe_load(handle)['DOCUMENTATION']['name'] == name


def test_values_through():
    assert FILTERS['rdma_vars_problems']({'rdma_stack': 'x'}) == ["rdma_stack must be one of doca, inbox, mlnx_ofed, got 'x'"]
    assert FILTERS['rdma_kernel_module_packages']([{'name': 'doca-ofed'}], 'doca-ofed') == ['doca-ofed']
    assert FILTERS['rdma_kernel_module_packages'](['mlnx-ofed-kernel-dkms=1-1'], None) == ['mlnx-ofed-kernel-dkms']
    assert FILTERS['rdma_firmware_report']({'rc': 127}, {})['tool_found'] is False
    assert FILTERS['rdma_device_check']({'rc': 0, 'stdout': '1 HCA found:\n\tmlx5_0\n'}, 'yes')['devices'] == ['mlx5_0']


def test_errors_become_filter_errors():
    with pytest.raises(AnsibleFilterError, match='rdma_vars_problems: '):
        FILTERS['rdma_vars_problems']('rdma_stack=doca')
