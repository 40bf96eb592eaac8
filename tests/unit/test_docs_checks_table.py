# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""docs/verify.md's checks table is generated from the check records and kept in step."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from _paths import REPO, load_program

from ansible_collections.aicluster.infra.plugins.module_utils.verify import checks


def _script():
    return load_program(os.path.join(REPO, 'scripts', 'checks-table.py'), 'checks_table')


def test_docs_table_is_the_generated_one():
    script = _script()
    with open(script.DOC) as handle:
        text = handle.read()
    assert script.render(text) == text, 'docs/verify.md is out of date: run scripts/checks-table.py --write'


def test_every_record_is_complete():
    for check_id in checks.ORDER:
        record = checks.CHECKS[check_id]
        assert record.id == check_id and record.area in checks.AREAS
        assert record.direction in ('higher', 'lower', 'equal', 'state')
        for field in ('description', 'remedy', 'measures', 'default', 'source'):
            assert getattr(record, field).strip(), (check_id, field)
