# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gpu stage's internal filters reach their module_utils functions with the roles' argument order."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.aicluster.infra.plugins.filter.nvidia_stack import FilterModule

FILTERS = FilterModule().filters()
SETTINGS = {'branch': '580', 'version': '580.95.05-1', 'kernel_modules': 'open', 'fabricmanager': 'auto', 'imex': False,
            'gpudirect': 'dmabuf', 'os_family': 'Debian', 'package_names': {}, 'extra_packages': [], 'kernel_hold': False,
            'repository': {'url': 'http://ctl01/mirror/cuda/', 'suite': './', 'components': [],
                           'key_url': 'http://ctl01/mirror/aicluster-lab.asc'},
            'module_version_file': '/run/hwsim/module/nvidia/version', 'rdma_stack': ''}


def test_the_role_steps_chain():
    assert FILTERS['nvidia_driver_problems'](SETTINGS) == []
    names = FILTERS['nvidia_driver_candidates'](SETTINGS)
    assert names[0] == 'nvidia-driver'
    found = dict((name, {'version': '', 'status': ''}) for name in names)
    plan = FILTERS['nvidia_driver_plan']({'nvswitch': True, 'packages': found, 'kernel': {'running_is_newest': True},
                                          'loaded': None}, SETTINGS)
    assert plan['fabricmanager']['wanted'] is True
    state = FILTERS['nvidia_driver_state']({'gpudirect': 'dmabuf', 'loaded': None, 'services': {}}, plan)
    assert state['reboot_required'] is False and state['gpudirect'].startswith('DMA-BUF')
    assert FILTERS['cuda_problems']({'toolkit': '12-9', 'version': '12.9.1-1',
                                     'packages': [{'name': 'cuda', 'version': '12.9.1-1'}]})[0].startswith('cuda_packages[0]')


def test_a_malformed_input_is_a_filter_error_naming_the_filter():
    with pytest.raises(AnsibleFilterError, match='^nvidia_driver_plan: '):
        FILTERS['nvidia_driver_plan']({}, {'branch': '580'})
