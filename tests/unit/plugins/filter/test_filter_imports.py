# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Loading a filter file imports none of the decision code: Ansible loads every filter file of the collection in every
worker (one per host and task) that uses any aicluster.infra filter, so an import at load time costs every such task
(docs/scale.md). The imports happen on a filter's first call."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import json
import os
import subprocess
import sys

from _paths import REPO

COLLECTIONS = os.path.join(REPO, '.collections')
PROBE = r'''
import importlib, json, sys
sys.path.insert(0, %r)
before = set(sys.modules)
module = importlib.import_module('ansible_collections.aicluster.infra.plugins.filter.' + %r)
filters = module.FilterModule().filters()
print(json.dumps(sorted(name for name in set(sys.modules) - before
                        if '.module_utils.' in name and name.startswith('ansible_collections.aicluster') or name == 'netaddr')))
'''


def _imported_on_load(name):
    out = subprocess.run([sys.executable, '-c', PROBE % (COLLECTIONS, name)], check=True, stdout=subprocess.PIPE,
                         universal_newlines=True).stdout
    return json.loads(out)


def test_loading_a_filter_file_imports_no_decision_code():
    names = sorted(os.path.splitext(os.path.basename(path))[0] for path in glob.glob(os.path.join(REPO, 'plugins', 'filter', '*.py')))
    assert 'verify' in names and 'slurm_conf' in names
    heavy = dict((name, [module for module in _imported_on_load(name) if not module.endswith('module_utils.system')])
                 for name in names)
    assert heavy == dict((name, []) for name in names)


def test_a_call_imports_what_it_needs():
    from ansible_collections.aicluster.infra.plugins.filter.cluster import FilterModule
    assert FilterModule().filters()['hostlist_compress'](['gpu01', 'gpu02']) == 'gpu[01-02]'
    assert 'ansible_collections.aicluster.infra.plugins.module_utils.slurm' in sys.modules
