# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's public filters are the ones docs/plugins.md lists; every other filter is a role's internal step
and says so in its documentation (Ansible has no private plugins: a filter a role calls by FQCN must be a plugin)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os
import re

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
PUBLIC = {'hostlist_compress', 'hostlist_expand', 'parse_scontrol_show_node', 'parse_slurmd_c', 'gres_conf', 'nccl_env',
          'ipoib_address', 'expected_link_gbps', 'bom_problems', 'bom_verify_expected'}


def _docs():
    docs = {}
    for path in glob.glob(os.path.join(REPO, 'plugins', 'filter', '*.yml')):
        with open(path, encoding='utf-8') as handle:
            docs[os.path.basename(path)[:-4]] = yaml.safe_load(handle)['DOCUMENTATION']
    return docs


def _uses(name):
    """The roles (or playbooks) that call a filter by its FQCN."""
    users = set()
    for path in glob.glob(os.path.join(REPO, 'roles', '*', '**', '*.*'), recursive=True) + glob.glob(
            os.path.join(REPO, 'playbooks', '*.yml')):
        if not os.path.isfile(path):
            continue
        with open(path, encoding='utf-8', errors='replace') as handle:
            if re.search(r'aicluster\.infra\.%s\b' % name, handle.read()):
                users.add(os.path.relpath(path, REPO).split(os.sep)[1] if path.startswith(os.path.join(REPO, 'roles'))
                          else 'playbooks')
    return users


def test_every_filter_is_public_or_marked_internal_to_the_role_that_calls_it():
    docs = _docs()
    assert PUBLIC <= set(docs)
    for name, doc in docs.items():
        if name in PUBLIC:
            assert not doc['short_description'].startswith('Internal'), name
            continue
        match = re.match(r'Internal step of the (\w+) role: ', doc['short_description'])
        assert match, '%s: neither public nor marked internal' % name
        role = match.group(1)
        assert doc['description'][0].startswith('B(Internal:) a step of the C(aicluster.infra.%s) role' % role), name
        assert role in _uses(name), '%s: marked internal to %s, which does not call it' % (name, role)


def test_no_internal_filter_is_left_without_a_caller():
    for name in set(_docs()) - PUBLIC:
        assert _uses(name), '%s: an internal step nothing calls' % name


def test_docs_list_exactly_the_public_filters():
    with open(os.path.join(REPO, 'docs', 'plugins.md'), encoding='utf-8') as handle:
        text = handle.read()
    public = text[text.index('## Filters'):].split('\n\n')[1]
    assert set(re.findall(r'`(\w+)`', public)) - {'module_utils', 'AnsibleFilterError'} == PUBLIC
