# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The dcgm role's internal filters reach their module_utils functions with the role's argument order."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.aicluster.infra.plugins.filter.dcgm import FilterModule

FILTERS = FilterModule().filters()
SETTINGS = {'version': '1:4.4.1-1', 'cuda_major': '13', 'cuda_major_check': 'fail', 'exporter_enabled': False,
            'health_watches_enabled': True, 'health_watches': 'a',
            'packages': [{'name': 'datacenter-gpu-manager-4-core', 'version': '1:4.4.1-1'},
                         {'name': 'datacenter-gpu-manager-4-cuda13', 'version': '1:4.4.1-1'}]}
BODY = 'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",UUID="GPU-a"} %d\n'


def test_the_role_steps_chain():
    assert FILTERS['dcgm_problems'](SETTINGS) == []
    check = FILTERS['dcgm_driver_check']({'rc': 0, 'stdout': '580.95.05, GPU-a\n'}, SETTINGS)
    assert check['gpus'] == ['GPU-a'] and check['problems'] == []
    result = FILTERS['dcgm_exporter_liveness']([BODY % 1, BODY % 2], check['gpus'], 1)
    assert result['passed']
    assert not FILTERS['dcgm_exporter_liveness']([BODY % 2, BODY % 2], check['gpus'])['passed']


def test_the_liveness_filter_wants_two_bodies():
    with pytest.raises(AnsibleFilterError, match='two /metrics bodies'):
        FILTERS['dcgm_exporter_liveness']([BODY % 1])


def test_a_bad_argument_names_the_filter():
    with pytest.raises(AnsibleFilterError, match='dcgm_driver_check'):
        FILTERS['dcgm_driver_check']({'rc': 0, 'stdout': '580.95.05, GPU-a\n'}, dict(SETTINGS, cuda_major='x'))
