# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from _paths import REPO
from _synthetic_results import make_results, write_lab_results

from ansible_collections.aicluster.infra.plugins.modules import acceptance_report

NAMES = ['report.html', 'junit.xml', 'summary.md']
# The report role's template for report.html, the path the role passes.
TEMPLATE = os.path.join(REPO, 'roles', 'report', 'templates', 'report.html.j2')


@pytest.fixture
def results(tmp_path):
    return write_lab_results(tmp_path)


def test_writes_the_three_files_next_to_results_then_changes_nothing(run_module, results):
    result, calls = run_module(acceptance_report, {'html_template': TEMPLATE, 'results': str(results)}, {})
    assert calls == [] and 'failed' not in result
    assert result['changed'] is True and result['verdict'] == 'FAIL' and result['failures'] == 15
    folder = str(results.parent)
    assert result['files'] == {'html': os.path.join(folder, 'report.html'), 'junit': os.path.join(folder, 'junit.xml'),
                               'markdown': os.path.join(folder, 'summary.md')}
    assert sorted(result['written']) == sorted(result['files'].values()) == sorted(result['would_write'])
    assert sorted(os.listdir(folder)) == sorted(NAMES + ['results.json'])  # no temporary file left behind
    assert result['sizes']['html'] == os.path.getsize(result['files']['html'])
    assert oct(os.stat(result['files']['html']).st_mode & 0o777) == '0o644'
    again, dummy = run_module(acceptance_report, {'html_template': TEMPLATE, 'results': str(results)}, {})
    assert again['changed'] is False and again['written'] == [] and again['would_write'] == []


def test_check_mode_reports_what_it_would_write_and_writes_nothing(run_module, results, tmp_path):
    out = tmp_path / 'out'
    result, dummy = run_module(acceptance_report, {'html_template': TEMPLATE, 'results': str(results), 'output_dir': str(out), '_ansible_check_mode': True}, {})
    assert result['changed'] is True and result['written'] == [] and len(result['would_write']) == 3
    assert not out.exists()
    run_module(acceptance_report, {'html_template': TEMPLATE, 'results': str(results), 'output_dir': str(out)}, {})
    assert sorted(os.listdir(str(out))) == sorted(NAMES)
    (out / 'junit.xml').write_text('stale')
    result, dummy = run_module(acceptance_report, {'html_template': TEMPLATE, 'results': str(results), 'output_dir': str(out), '_ansible_check_mode': True}, {})
    assert result['changed'] is True and result['would_write'] == [str(out / 'junit.xml')]
    assert (out / 'junit.xml').read_text() == 'stale'


def test_formats_and_comparison(run_module, results, tmp_path):
    older = tmp_path / 'older.json'
    older.write_text(json.dumps(make_results(4)))
    result, dummy = run_module(acceptance_report, {'html_template': TEMPLATE, 'results': str(results), 'compare_to': str(older),
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
    result, dummy = run_module(acceptance_report, {'html_template': TEMPLATE, 'results': str(path)}, {})
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
    result, dummy = run_module(acceptance_report, {'html_template': TEMPLATE, 'results': str(path)}, {})
    assert result['failed'] is True and expected in result['msg'] and result['problems']


def test_a_bad_compare_to_is_named_as_such(run_module, results, tmp_path):
    older = tmp_path / 'older.json'
    older.write_text('{}')
    result, dummy = run_module(acceptance_report, {'html_template': TEMPLATE, 'results': str(results), 'compare_to': str(older)}, {})
    assert result['failed'] is True and result['msg'].startswith('compare_to: ')


def test_a_negative_threshold_is_refused(run_module, results):
    result, dummy = run_module(acceptance_report, {'html_template': TEMPLATE, 'results': str(results), 'compare_threshold': -0.1}, {})
    assert result['failed'] is True and 'compare_threshold' in result['msg']


def test_html_needs_a_template_the_other_formats_do_not(run_module, results):
    result, dummy = run_module(acceptance_report, {'results': str(results)}, {})
    assert result['failed'] is True and result['msg'].startswith('html_template is required when formats includes html')
    assert sorted(os.listdir(str(results.parent))) == ['results.json']
    result, dummy = run_module(acceptance_report, {'results': str(results), 'formats': ['junit', 'markdown']}, {})
    assert 'failed' not in result and sorted(result['files']) == ['junit', 'markdown']


def test_a_users_template_lays_out_report_html(run_module, results, tmp_path):
    own = tmp_path / 'own.html.j2'
    own.write_text('<h1>{{ verdict }}</h1>\n<p>{{ failures.rows[0].message }}</p>\n')
    result, dummy = run_module(acceptance_report, {'html_template': str(own), 'results': str(results), 'formats': ['html']}, {})
    assert 'failed' not in result and result['changed'] is True
    text = (results.parent / 'report.html').read_text()
    assert text.startswith('<h1>FAIL</h1>\n<p>') and text.endswith('</p>\n') and '<script' not in text
    again, dummy = run_module(acceptance_report, {'html_template': str(own), 'results': str(results), 'formats': ['html']}, {})
    assert again['changed'] is False


@pytest.mark.parametrize('content, expected', [
    (None, 'html_template: cannot read '),
    (b'\xff\xfe', 'html_template: cannot read '),
    (b'<p>\n{% if %}\n', "html_template: {path}: line 2: "),
    (b'{{ no_such_figure }}', "html_template: {path}: line 1: UndefinedError: 'no_such_figure' is undefined"),
])
def test_a_bad_template_fails_naming_it_and_writes_nothing(run_module, results, tmp_path, content, expected):
    own = tmp_path / 'own.html.j2'
    if content is not None:
        own.write_bytes(content)
    result, dummy = run_module(acceptance_report, {'html_template': str(own), 'results': str(results)}, {})
    assert result['failed'] is True and result['msg'].startswith(expected.format(path=own)), result['msg']
    assert sorted(os.listdir(str(results.parent))) == ['results.json']


def test_prometheus_format_writes_metrics_prom_then_changes_nothing(run_module, results):
    from ansible_collections.aicluster.infra.plugins.module_utils.report import prometheus
    args = {'results': str(results), 'formats': ['prometheus'], 'cover': {'cluster': 'hgx-su1'}}
    result, dummy = run_module(acceptance_report, args, {})
    path = os.path.join(str(results.parent), 'metrics.prom')
    assert result['changed'] is True and result['files'] == {'prometheus': path} and result['written'] == [path]
    assert sorted(os.listdir(str(results.parent))) == ['metrics.prom', 'results.json']
    doc = json.loads(results.read_text())
    with open(path) as handle:
        text = handle.read()
    assert text == prometheus.metrics_text(doc, {'cluster': 'hgx-su1'}) and result['sizes']['prometheus'] == len(text)
    assert 'aicluster_verify_info{cluster="hgx-su1",' in text
    assert oct(os.stat(path).st_mode & 0o777) == '0o644'
    assert 'node_metrics' not in result
    again, dummy = run_module(acceptance_report, args, {})
    assert again['changed'] is False and again['written'] == []


def test_node_metrics_are_returned_when_asked_also_in_check_mode(run_module, results, tmp_path):
    from ansible_collections.aicluster.infra.plugins.module_utils.report import prometheus
    out = tmp_path / 'out'
    result, dummy = run_module(acceptance_report, {'results': str(results), 'output_dir': str(out), 'node_metrics': True,
                                                   'formats': ['prometheus'], '_ansible_check_mode': True}, {})
    assert result['changed'] is True and result['written'] == [] and not out.exists()
    doc = json.loads(results.read_text())
    assert sorted(result['node_metrics']) == ['gpu01', 'gpu02', 'gpu03', 'gpu04']
    for node, text in result['node_metrics'].items():
        assert text == prometheus.node_metrics_text(doc, node, {})
        assert 'node="%s"' % node in text
        assert [line for line in text.splitlines() if 'node="' in line and 'node="%s"' % node not in line] == []


def test_default_formats_stay_the_three_files(run_module, results, tmp_path):
    own = tmp_path / 'own.html.j2'
    own.write_text('<p>{{ verdict }}</p>\n')
    result, dummy = run_module(acceptance_report, {'results': str(results), 'html_template': str(own),
                                                   '_ansible_check_mode': True}, {})
    assert sorted(result['files']) == ['html', 'junit', 'markdown']


# ------------------------------------------------------------------ evidence files and the PDF

def _real(argv):
    """Run the command for real (headless Chromium printing the page)."""
    import subprocess
    done = subprocess.run(argv, capture_output=True, text=True, check=False, env=dict(os.environ, LANG='C', LC_ALL='C'))
    return done.returncode, done.stdout, done.stderr


def test_evidence_is_one_file_per_node_beside_the_report(run_module, results):
    args = {'html_template': TEMPLATE, 'results': str(results), 'formats': ['html', 'evidence']}
    result, dummy = run_module(acceptance_report, args, {})
    folder = results.parent / 'evidence'
    assert sorted(os.listdir(str(folder))) == ['gpu01.json', 'gpu02.json', 'gpu03.json', 'gpu04.json']
    assert result['files']['evidence'] == str(folder)
    assert result['sizes']['evidence'] == sum(os.path.getsize(str(path)) for path in folder.iterdir())
    assert json.loads((folder / 'gpu03.json').read_text())['node'] == 'gpu03'
    assert 'evidence/gpu03.json' in (results.parent / 'report.html').read_text()
    again, dummy = run_module(acceptance_report, args, {})
    assert again['changed'] is False


@pytest.mark.skipif(not os.path.exists('/usr/bin/chromium'), reason='chromium not installed (Debian: apt-get install chromium)')
def test_the_pdf_is_printed_by_chromium_once_and_again_only_when_the_page_changes(run_module, results):
    args = {'html_template': TEMPLATE, 'results': str(results), 'formats': ['html', 'pdf'], 'chromium': '/usr/bin/chromium'}
    result, calls = run_module(acceptance_report, args, {'timeout': _real})
    pdf = results.parent / 'report.pdf'
    assert 'pdf_skipped' not in result and result['changed'] is True, result
    assert str(pdf) in result['written'] and result['files']['pdf'] == str(pdf)
    data = pdf.read_bytes()
    assert data.startswith(b'%PDF-') and result['sizes']['pdf'] == len(data)
    assert calls[0][:3] == ['timeout', '180', '/usr/bin/chromium'] and '--headless' in calls[0]
    assert sorted(os.listdir(str(results.parent))) == ['report.html', 'report.pdf', 'results.json']
    # the same results: nothing written, nothing printed (a PDF embeds its creation time)
    again, calls = run_module(acceptance_report, args, {'timeout': _real})
    assert again['changed'] is False and calls == []
    # a new page (another cover) is printed again
    again, calls = run_module(acceptance_report, dict(args, cover={'customer': 'Example Lab'}), {'timeout': _real})
    assert again['changed'] is True and str(pdf) in again['written'] and len(calls) == 1
    pdftoppm = '/usr/bin/pdftoppm'
    if os.path.exists(pdftoppm):
        code, out, err = _real([pdftoppm, '-r', '20', '-png', str(pdf), str(results.parent / 'page')])
        assert code == 0, err
        assert len([name for name in os.listdir(str(results.parent)) if name.startswith('page')]) >= 3


def test_without_chromium_the_pdf_is_skipped_with_a_warning_and_the_rest_written(run_module, results, tmp_path):
    args = {'html_template': TEMPLATE, 'results': str(results), 'formats': ['html', 'pdf'], 'chromium': str(tmp_path / 'none')}
    result, calls = run_module(acceptance_report, args, {})
    assert 'failed' not in result and calls == [] and (results.parent / 'report.html').exists()
    assert result['pdf_skipped'].startswith('report.pdf skipped: no Chromium') and result['pdf_skipped'] in result['warnings']
    assert not (results.parent / 'report.pdf').exists()
    # found on the PATH, but it fails: skipped, with its last line of output
    result, calls = run_module(acceptance_report, dict(args, chromium=None),
                               {'chromium': (0, '', ''), 'timeout': (1, '', 'first\nERROR: cannot open display\n')})
    assert result['pdf_skipped'].endswith('failed (rc 1): ERROR: cannot open display') and len(calls) == 1


def test_the_pdf_needs_the_html_and_check_mode_prints_nothing(run_module, results):
    result, dummy = run_module(acceptance_report, {'html_template': TEMPLATE, 'results': str(results), 'formats': ['pdf']}, {})
    assert result['failed'] and 'add html to formats' in result['msg']
    args = {'html_template': TEMPLATE, 'results': str(results), 'formats': ['html', 'pdf'], '_ansible_check_mode': True}
    result, calls = run_module(acceptance_report, args, {'chromium': (0, '', ''), 'timeout': (0, '', '')})
    assert calls == [] and str(results.parent / 'report.pdf') in result['would_write'] and result['written'] == []
    assert not (results.parent / 'report.html').exists()
