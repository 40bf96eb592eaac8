# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/report.yml as a user runs it, on a results.json of a 4-node run with faults: every file of the role's
default formats (the PDF when Chromium is here), nothing changed on a second run, nothing written in check mode, and
one line per bad variable."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import subprocess
import sys

import pytest

from _paths import REPO
from _synthetic_results import write_lab_results


def _run(tmp_path, *args):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.collections'), ANSIBLE_NOCOLOR='1',
               ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'), ANSIBLE_LOCALHOST_WARNING='0',
               ANSIBLE_INVENTORY_UNPARSED_WARNING='0', ANSIBLE_RETRY_FILES_ENABLED='0', USER='jdoe')
    env.pop('ANSIBLE_CALLBACKS_ENABLED', None)
    ansible_playbook = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    done = subprocess.run([ansible_playbook, os.path.join(REPO, 'playbooks', 'report.yml')] + list(args), cwd=str(tmp_path),
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=300,
                          check=False)
    return done.returncode, done.stdout


def _recap(output):
    return dict((key, int(value)) for key, value in re.findall(r'\b(ok|changed|failed)=(\d+)', output.rsplit('PLAY RECAP', 1)[-1]))


@pytest.fixture
def results(tmp_path):
    return write_lab_results(tmp_path)


def test_the_role_writes_every_file_once_and_check_mode_writes_nothing(tmp_path, results):
    folder = results.parent
    code, output = _run(tmp_path, '--check', '-e', 'report_results=%s' % results)
    assert code == 0, output
    assert sorted(os.listdir(str(folder))) == ['results.json'] and 'check mode: not written' in output
    code, output = _run(tmp_path, '-e', 'report_results=%s' % results)
    assert code == 0 and _recap(output)['changed'] == 1, output
    names = sorted(os.listdir(str(folder)))
    expected = ['evidence', 'junit.xml', 'metrics.prom', 'report.html', 'results.json', 'summary.md']
    if os.path.exists('/usr/bin/chromium'):
        expected.append('report.pdf')
        assert (folder / 'report.pdf').read_bytes().startswith(b'%PDF-')
    else:
        assert 'report.pdf skipped: no Chromium' in output
    assert names == sorted(expected)
    assert 'Run by' in (folder / 'summary.md').read_text() and 'jdoe' in (folder / 'summary.md').read_text()
    code, output = _run(tmp_path, '-e', 'report_results=%s' % results)
    assert code == 0 and _recap(output)['changed'] == 0, output


def test_bad_variables_fail_one_line_each_before_anything_is_read(tmp_path, results):
    # the argument spec names a format that does not exist, and the allowed ones
    code, output = _run(tmp_path, '-e', 'report_results=%s' % results, '-e', '{"report_formats": ["html", "word"]}')
    assert code == 2 and ('report_formats must be one or more of: html, junit, markdown, prometheus, evidence, pdf. '
                          'Got no match for: word') in output, output
    # what a type cannot say: the role's own check, one line per variable
    code, output = _run(tmp_path, '-e', 'report_results=%s' % results, '-e', '{"report_formats": ["pdf", "junit"]}',
                        '-e', 'report_compare_threshold=-1', '-e', 'report_chromium=chromium')
    assert code == 2, output
    assert 'report_formats: pdf is printed from report.html, so it needs html too' in output
    assert 'report_compare_threshold must be a fraction >= 0 such as 0.05 (got -1' in output
    assert "report_chromium must be empty or the absolute path of a Chromium binary (got 'chromium')" in output
    assert sorted(os.listdir(str(results.parent))) == ['results.json']
