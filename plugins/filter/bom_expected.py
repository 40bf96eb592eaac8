# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the verify stage expects from the bill of materials (module_utils/bom_expected.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib

from ansible.errors import AnsibleFilterError

# imported on the first call, not when Ansible loads the filter files (tests/unit/plugins/filter/test_filter_imports.py)
_MODULE = 'ansible_collections.aicluster.infra.plugins.module_utils.bom_expected'


def _bom_verify_expected(bom, rdma_stack='doca'):
    if bom is not None and not isinstance(bom, dict):
        raise AnsibleFilterError('bom_verify_expected: expected the aicluster_bom mapping, got %r' % (bom,))
    return importlib.import_module(_MODULE).verify_expected(bom, rdma_stack)


class FilterModule(object):
    def filters(self):
        return {
            'bom_verify_expected': _bom_verify_expected,
        }
