# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Internal step of the nvidia_driver role's kernel hygiene (nouveau, unattended upgrades, DKMS builds for the next
boot): its variable checks. The decisions live in module_utils/dkms.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib

from ansible.errors import AnsibleFilterError


def _kernel_hygiene_problems(settings):
    # imported on the first call (docs/scale.md "What a task costs the control node")
    dkms = importlib.import_module('ansible_collections.aicluster.infra.plugins.module_utils.dkms')
    try:
        return dkms.kernel_hygiene_problems(dict(settings) if settings else {})
    except (TypeError, ValueError, AttributeError) as exc:
        raise AnsibleFilterError('kernel_hygiene_problems: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {
            'kernel_hygiene_problems': _kernel_hygiene_problems,
        }
