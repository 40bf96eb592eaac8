# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""verify_perftest's link layer follows verify_ib's: a RoCE site sets ``verify_ib_link_layer: Ethernet`` once and lists
no HCAs, and the pairs and the incast (net.lossless) test its Ethernet ports. Before, verify_perftest kept InfiniBand,
so such a site got no endpoints and net.lossless said "not checked" (the lab's inventory lists its HCAs and never
showed it)."""
from __future__ import absolute_import, division, print_function

import os

import pytest
import yaml
from _paths import REPO
from _role_templates import render_template_text

ROLE = os.path.join(REPO, 'roles', 'verify_perftest')


def _role_vars(**inventory):
    """The role's defaults, then the link layers of its vars, rendered with ``inventory`` as the play would."""
    variables = dict(inventory, ansible_play_batch=['gpu01'])
    with open(os.path.join(ROLE, 'defaults', 'main.yml'), encoding='utf-8') as handle:
        for key, value in yaml.safe_load(handle).items():
            variables.setdefault(key, render_template_text(value, variables) if isinstance(value, str) else value)
    with open(os.path.join(ROLE, 'vars', 'main.yml'), encoding='utf-8') as handle:
        internal = yaml.safe_load(handle)
    return (render_template_text(variables['verify_perftest_link_layer'], variables),
            render_template_text(internal['__verify_perftest_expected']['link_layer'], variables),
            render_template_text(internal['__verify_perftest_lossless_expected']['link_layer'], variables))


@pytest.mark.parametrize('inventory, expected', [
    ({}, 'InfiniBand'),
    ({'verify_ib_link_layer': 'Ethernet'}, 'Ethernet'),
    ({'verify_ib_link_layer': 'InfiniBand'}, 'InfiniBand'),
    ({'verify_ib_link_layer': 'Ethernet', 'verify_perftest_link_layer': 'InfiniBand'}, 'InfiniBand'),
])
def test_the_pairs_and_the_incast_test_the_link_layer_verify_ib_reads(inventory, expected):
    assert _role_vars(**inventory) == (expected, expected, expected)
