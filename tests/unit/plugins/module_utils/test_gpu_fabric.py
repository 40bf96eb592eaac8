# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_facts.fabric_unregistered: the GPUs an NVSwitch fabric has not registered (nvidia-smi -q "Fabric" State and
Status), on a real HGX H100 capture and the project's own fixture of each state."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from _paths import own_fixture, real_fixture

from ansible_collections.aicluster.infra.plugins.module_utils.gpu_facts import (
    fabric_label, fabric_states, fabric_unregistered)
from ansible_collections.aicluster.infra.plugins.module_utils.nvidia_smi import parse_nvidia_smi_q


def test_the_real_hgx_h100_is_registered():
    states = fabric_states(parse_nvidia_smi_q(real_fixture('nvidia-smi/gpud-q-8xh100-535.183.01.txt')))
    assert len(states) == 8 and fabric_unregistered(states) == {}


def test_each_state_of_the_projects_fixture():
    report = parse_nvidia_smi_q(own_fixture('nvidia-smi/nvidia-smi-580-4xh100-q-fabric-mixed-handmade.txt'))
    assert fabric_unregistered(fabric_states(report)) == {
        '00000000:1B:00.0': 'In Progress', '00000000:43:00.0': 'Not Started', '00000000:52:00.0': 'Completed/Failure'}


def test_gpus_without_a_fabric_are_left_out():
    text = 'GPU 00000000:17:00.0\n    Product Name : NVIDIA H100 PCIe\n    Fabric\n        State : N/A\n        Status : N/A\n'
    assert fabric_unregistered(fabric_states(parse_nvidia_smi_q(text))) == {}


@pytest.mark.parametrize('state, status, label', [
    ('Completed', 'Success', None), ('Not Supported', 'Not Supported', None), ('In Progress', None, 'In Progress'),
    ('Completed', '', 'Completed/N/A'),
])
def test_labels(state, status, label):
    assert fabric_label(state, status) == label


def test_query_gpu_rows_read_the_same():
    rows = {'0': ('In Progress', 'N/A'), '1': ('Completed', 'Success'), '2': ('N/A', 'N/A')}
    assert fabric_unregistered(rows) == {'0': 'In Progress'}
