# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from _synthetic_results import LAB_FAULTS, make_results

from ansible_collections.aicluster.infra.plugins.modules import acceptance_report

NAMES = ['report.html', 'junit.xml', 'summary.md']


@pytest.fixture
def results(tmp_path):
    path = tmp_path / 'verify-20261129T170003Z' / 'results.json'
    path.parent.mkdir()
    path.write_text(json.dumps(make_results(4, LAB_FAULTS)))
    return path


def test_writes_the_three_files_next_to_results_then_changes_nothing(run_module, results):
    result, calls = run_module(acceptance_report, {'results': str(results)}, {})
    assert calls == [] and 'failed' not in result
    assert result['changed'] is True and result['verdict'] == 'FAIL' and result['failures'] == 15
    folder = str(results.parent)
    assert result['files'] == {'html': os.path.join(folder, 'report.html'), 'junit': os.path.join(folder, 'junit.xml'),
                               'markdown': os.path.join(folder, 'summary.md')}
    assert sorted(result['written']) == sorted(result['files'].values()) == sorted(result['would_write'])
    assert sorted(os.listdir(folder)) == sorted(NAMES + ['results.json'])  # no temporary file left behind
    assert result['sizes']['html'] == os.path.getsize(result['files']['html'])
    assert oct(os.stat(result['files']['html']).st_mode & 0o777) == '0o644'
    again, dummy = run_module(acceptance_report, {'results': str(results)}, {})
    assert again['changed'] is False and again['written'] == [] and again['would_write'] == []


def test_check_mode_reports_what_it_would_write_and_writes_nothing(run_module, results, tmp_path):
    out = tmp_path / 'out'
    result, dummy = run_module(acceptance_report, {'results': str(results), 'output_dir': str(out), '_ansible_check_mode': True}, {})
    assert result['changed'] is True and result['written'] == [] and len(result['would_write']) == 3
    assert not out.exists()
    run_module(acceptance_report, {'results': str(results), 'output_dir': str(out)}, {})
    assert sorted(os.listdir(str(out))) == sorted(NAMES)
    (out / 'junit.xml').write_text('stale')
    result, dummy = run_module(acceptance_report, {'results': str(results), 'output_dir': str(out), '_ansible_check_mode': True}, {})
    assert result['changed'] is True and result['would_write'] == [str(out / 'junit.xml')]
    assert (out / 'junit.xml').read_text() == 'stale'


def test_formats_and_comparison(run_module, results, tmp_path):
    older = tmp_path / 'older.json'
    older.write_text(json.dumps(make_results(4)))
    result, dummy = run_module(acceptance_report, {'results': str(results), 'compare_to': str(older),
                                                   'formats': ['markdown', 'html', 'markdown'], 'compare_threshold': 0.1}, {})
    assert sorted(result['files']) == ['html', 'markdown']
    assert not (results.parent / 'junit.xml').exists()
    summary = (results.parent / 'summary.md').read_text()
    assert '## Comparison with the run of' in summary and 'moved by more than 10.0%' in summary
    assert 'id="comparison"' in (results.parent / 'report.html').read_text()


def test_an_invalid_results_document_fails_naming_the_problems(run_module, tmp_path):
    doc = make_results(2)
    del doc['run']['inventory']
    doc['nodes']['gpu01']['results'][0]['check'] = 'gpu.nope'
    path = tmp_path / 'results.json'
    path.write_text(json.dumps(doc))
    result, dummy = run_module(acceptance_report, {'results': str(path)}, {})
    assert result['failed'] is True
    assert result['msg'].startswith('results: %s is not a valid results document: ' % path)
    assert "run: missing 'inventory'" in result['problems']
    assert "nodes.gpu01.results[0]: unknown check 'gpu.nope'" in result['problems']
    assert "unknown check 'gpu.nope'" in result['msg']
    assert os.listdir(str(tmp_path)) == ['results.json']


@pytest.mark.parametrize('content, expected', [
    ('{"schema": ', 'is not JSON'),
    ('[1, 2]', 'results must be a JSON object'),
    (None, 'cannot read'),
])
def test_unreadable_or_not_json(run_module, tmp_path, content, expected):
    path = tmp_path / 'results.json'
    if content is not None:
        path.write_text(content)
    result, dummy = run_module(acceptance_report, {'results': str(path)}, {})
    assert result['failed'] is True and expected in result['msg'] and result['problems']


def test_a_bad_compare_to_is_named_as_such(run_module, results, tmp_path):
    older = tmp_path / 'older.json'
    older.write_text('{}')
    result, dummy = run_module(acceptance_report, {'results': str(results), 'compare_to': str(older)}, {})
    assert result['failed'] is True and result['msg'].startswith('compare_to: ')


def test_a_negative_threshold_is_refused(run_module, results):
    result, dummy = run_module(acceptance_report, {'results': str(results), 'compare_threshold': -0.1}, {})
    assert result['failed'] is True and 'compare_threshold' in result['msg']
