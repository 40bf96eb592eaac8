# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Open report.html in headless Chromium: no console errors, charts with data, a screenshot.

Chromium is driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``:
Chromium reads NUL-terminated JSON commands on fd 3 and writes replies and events
on fd 4), with the standard library only. The test installs nothing and is skipped
when /usr/bin/chromium is absent (Debian: ``apt-get install chromium``).
Screenshots go to tests/output/report/ for people to look at.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import json
import os
import re
import select
import shutil
import subprocess
import tempfile
import time

import pytest

from _synthetic_results import LAB_FAULTS, make_results

from ansible_collections.aicluster.infra.plugins.module_utils.report.html import SHIPPED_TEMPLATE, html_report
from ansible_collections.aicluster.infra.plugins.module_utils.report.compare import compare

CHROMIUM = os.environ.get('AICLUSTER_CHROMIUM', '/usr/bin/chromium')
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
OUTPUT = os.path.join(REPO, 'tests', 'output', 'report')
with open(os.path.join(REPO, SHIPPED_TEMPLATE), encoding='utf-8') as _handle:
    TEMPLATE = _handle.read()  # the report role's template, as the role passes it
FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync', '--hide-scrollbars',
         '--remote-debugging-pipe']

pytestmark = pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason='%s not installed (apt-get install chromium)' % CHROMIUM)

COUNT_SCRIPT = '''JSON.stringify({
  svgs: document.querySelectorAll('svg').length,
  rects: document.querySelectorAll('svg rect').length,
  paths: document.querySelectorAll('svg path').length,
  heatmaps: document.querySelectorAll('svg.heatmap').length,
  bars: document.querySelectorAll('svg.bar-chart').length,
  failing_rows: document.querySelectorAll('#failures + table tbody tr').length,
  drawn: Array.from(document.querySelectorAll('svg')).every(s => s.getBBox().width > 0),
  height: document.documentElement.scrollHeight
})'''


def _onto_3_and_4(reader, writer):
    # copy both above 4 first: either may itself be fd 3 or 4
    high_reader, high_writer = os.dup(reader), os.dup(writer)
    while high_reader <= 4:
        high_reader = os.dup(high_reader)
    while high_writer <= 4:
        high_writer = os.dup(high_writer)
    os.dup2(high_reader, 3)
    os.dup2(high_writer, 4)


class DevTools(object):
    """A minimal DevTools-protocol client over Chromium's debugging pipe."""

    def __init__(self, url, profile, timeout=60):
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()
        self.timeout = timeout
        self.events = []
        self._buffer = b''
        self._next_id = 0
        stderr = open(os.path.join(profile, 'chromium.log'), 'wb')
        # fds 3 and 4 in the child are the pipe's ends, as --remote-debugging-pipe expects
        self.process = subprocess.Popen(
            [CHROMIUM] + FLAGS + ['--user-data-dir=%s' % os.path.join(profile, 'profile'), 'about:blank'],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr, close_fds=True,
            pass_fds=(3, 4), preexec_fn=lambda: _onto_3_and_4(to_chrome_r, from_chrome_w))
        stderr.close()
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.url = url
        self.session = None

    def send(self, method, params=None, session=True):
        self._next_id += 1
        message = {'id': self._next_id, 'method': method, 'params': params or {}}
        if session and self.session:
            message['sessionId'] = self.session
        os.write(self._to_chrome, json.dumps(message).encode('utf-8') + b'\0')
        reply = self.wait(lambda item: item.get('id') == self._next_id)
        if 'error' in reply:
            raise AssertionError('%s: %s' % (method, reply['error']))
        return reply.get('result', {})

    def wait(self, predicate):
        deadline = time.time() + self.timeout
        while True:
            while b'\0' in self._buffer:
                raw, self._buffer = self._buffer.split(b'\0', 1)
                item = json.loads(raw.decode('utf-8'))
                if 'method' in item:
                    self.events.append(item)
                if predicate(item):
                    return item
            left = deadline - time.time()
            if left <= 0:
                raise AssertionError('Chromium did not answer within %ss' % self.timeout)
            ready, dummy, dummy = select.select([self._from_chrome], [], [], left)
            if ready:
                chunk = os.read(self._from_chrome, 1 << 20)
                if not chunk:
                    raise AssertionError('Chromium closed the pipe')
                self._buffer += chunk

    def open(self):
        target = self.send('Target.createTarget', {'url': 'about:blank'}, session=False)['targetId']
        self.session = self.send('Target.attachToTarget', {'targetId': target, 'flatten': True}, session=False)['sessionId']
        for domain in ('Runtime', 'Log', 'Page'):
            self.send(domain + '.enable')
        self.send('Page.navigate', {'url': self.url})
        self.wait(lambda item: item.get('method') == 'Page.loadEventFired')

    def errors(self):
        """Console errors, uncaught exceptions and failed loads seen so far."""
        found = []
        for event in self.events:
            method, params = event['method'], event.get('params', {})
            if method == 'Runtime.exceptionThrown':
                found.append(params['exceptionDetails'].get('text'))
            elif method == 'Runtime.consoleAPICalled' and params.get('type') in ('error', 'assert'):
                found.append(' '.join(str(arg.get('value', arg.get('description'))) for arg in params.get('args', [])))
            elif method == 'Log.entryAdded' and params['entry'].get('level') == 'error':
                found.append(params['entry'].get('text'))
        return found

    def evaluate(self, expression):
        return self.send('Runtime.evaluate', {'expression': expression, 'returnByValue': True})['result']['value']

    def screenshot(self, path, width=1400, max_height=16000, scale=1):
        self.send('Emulation.setDeviceMetricsOverride', {'width': width, 'height': 800, 'deviceScaleFactor': scale, 'mobile': False})
        height = min(int(self.evaluate('document.documentElement.scrollHeight')), max_height)
        self.send('Emulation.setDeviceMetricsOverride', {'width': width, 'height': height, 'deviceScaleFactor': scale, 'mobile': False})
        data = self.send('Page.captureScreenshot', {'format': 'png'})['data']
        with open(path, 'wb') as handle:
            handle.write(base64.b64decode(data))

    def close(self):
        try:
            self.send('Browser.close', session=False)
        except AssertionError:
            pass
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to_chrome)
        os.close(self._from_chrome)


@pytest.fixture
def browse():
    opened = []

    def run(html, name):
        work = tempfile.mkdtemp(prefix='aicluster-report-')
        opened.append(work)
        page = os.path.join(work, name)
        with open(page, 'w') as handle:
            handle.write(html)
        tools = DevTools('file://' + page, work)
        opened.append(tools)
        tools.open()
        return tools

    yield run
    for item in reversed(opened):
        if isinstance(item, DevTools):
            item.close()
        else:
            shutil.rmtree(item, ignore_errors=True)


def test_lab_report_renders_without_errors_with_charts(browse):
    doc = make_results(4, LAB_FAULTS)
    html = html_report(doc, compare(make_results(4), doc), template=TEMPLATE)
    page = browse(html, 'report.html')
    counts = json.loads(page.evaluate(COUNT_SCRIPT))
    assert page.errors() == []
    assert counts['svgs'] == 11 and counts['heatmaps'] == 8 and counts['bars'] == 2
    assert counts['rects'] > 0 and counts['paths'] > 0 and counts['drawn']
    assert counts['failing_rows'] == 15
    if not os.path.isdir(OUTPUT):
        os.makedirs(OUTPUT)
    shot = os.path.join(OUTPUT, 'report-lab-4-nodes.png')
    page.screenshot(shot)
    with open(shot, 'rb') as handle:
        assert handle.read(8) == b'\x89PNG\r\n\x1a\n'
    # the whole page at 55%, for a quick look (docs/images/report-pdf-*.png are pages of the PDF below)
    page.screenshot(os.path.join(OUTPUT, 'report-lab-4-nodes-overview.png'), scale=0.55)


def test_large_report_renders_without_errors(browse):
    doc = make_results(256, [('link_width', 'gpu0100', 4), ('nccl_slow', 'gpu0200', 0)], max_rounds=4)
    page = browse(html_report(doc, template=TEMPLATE), 'report.html')
    counts = json.loads(page.evaluate(COUNT_SCRIPT))
    assert page.errors() == []
    assert counts['heatmaps'] == 8 and counts['rects'] >= 256 and counts['drawn']
    if not os.path.isdir(OUTPUT):
        os.makedirs(OUTPUT)
    page.screenshot(os.path.join(OUTPUT, 'report-256-nodes.png'))


def test_console_errors_are_caught(browse):
    """The detector itself: a page with a script error and a console.error is not clean."""
    page = browse('<!DOCTYPE html><html><body><script>console.error("boom"); undefined_function();</script></body></html>',
                  'broken.html')
    errors = page.errors()
    assert any('boom' in str(error) for error in errors)
    assert len(errors) >= 2


def test_the_report_prints_to_pdf(browse):
    """What a delivery engineer hands over: Chromium's print of report.html through its print stylesheet (A4
    landscape, no navigation, the sign-off block starting a page), as a PDF of several pages, without errors."""
    doc = make_results(4, LAB_FAULTS)
    page = browse(html_report(doc, template=TEMPLATE), 'report.html')
    pdf = base64.b64decode(page.send('Page.printToPDF', {'preferCSSPageSize': True, 'printBackground': True})['data'])
    assert pdf.startswith(b'%PDF-')
    pages = len(re.findall(rb'/Type\s*/Page[^s]', pdf))
    assert pages >= 2, pages
    if not os.path.isdir(OUTPUT):
        os.makedirs(OUTPUT)
    with open(os.path.join(OUTPUT, 'report-lab-4-nodes.pdf'), 'wb') as handle:
        handle.write(pdf)
    assert page.errors() == []


# Every byte value 0-31, DEL, markup that would run (a script, an event handler), Markdown that would format.
EVERY_CONTROL = ''.join(chr(code) for code in range(32)) + '\x7f'
INJECTION = ('<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
             '<svg onload="window.__pwned = 3"></svg> **bold** [link](javascript:alert(1)) | cell `code`')


def test_hostile_tool_text_runs_nothing_and_every_output_stays_valid(browse, tmp_path):
    """Tool text is not ours: every control byte and an HTML/Markdown injection through a result's message, its
    subject and a version string. junit.xml validates against the schema, no script runs in the page, and
    summary.md shows the markup as text."""
    import copy
    from ansible_collections.aicluster.infra.plugins.module_utils import report
    from ansible_collections.aicluster.infra.plugins.module_utils.verify import results as vr
    doc = copy.deepcopy(make_results(4, LAB_FAULTS))
    hostile = EVERY_CONTROL + INJECTION
    doc['nodes']['gpu01']['results'].append(vr.new_result('gpu.model', 'GPU 0 ' + hostile, 'H100 ' + hostile, 'H100', False,
                                                          hostile))
    doc['nodes']['gpu01']['passed'] = False
    doc['nodes']['gpu02']['versions']['driver'] = '535.129.03 ' + hostile
    doc['summary'] = vr.summarize(doc['nodes'])
    outputs = report.build_outputs(doc, formats=('html', 'junit', 'markdown', 'prometheus', 'evidence'), html_template=TEMPLATE)
    for name, text in outputs.items():
        assert not re.search('[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]', text), name
        if name.endswith('.json'):
            json.loads(text)  # the evidence keeps the tool's bytes, escaped by JSON
    assert '<script>window' not in outputs['summary.md'] and '&lt;script&gt;window' in outputs['summary.md']
    row = [line for line in outputs['summary.md'].splitlines() if line.startswith('| gpu01 | `gpu.model` |')][0]
    assert row.count(' | ') == 5  # the pipe in the text opened no cell
    xmllint = shutil.which('xmllint')
    if xmllint:
        import importlib.util
        spec = importlib.util.spec_from_file_location(
            'report_tests', os.path.join(REPO, 'tests', 'unit', 'plugins', 'module_utils', 'test_report.py'))
        report_tests = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(report_tests)
        (tmp_path / 'junit.xsd').write_text(report_tests.JUNIT_XSD)
        (tmp_path / 'junit.xml').write_text(outputs['junit.xml'], encoding='utf-8')
        run = subprocess.run([xmllint, '--noout', '--schema', str(tmp_path / 'junit.xsd'), str(tmp_path / 'junit.xml')],
                             capture_output=True, text=True, check=False)
        assert run.returncode == 0, run.stderr
    page = browse(outputs['report.html'], 'report.html')
    assert page.evaluate('typeof window.__pwned') == 'undefined'
    assert page.evaluate('document.querySelectorAll("script, img, [onerror], [onload]").length') == 0
    assert 'window.__pwned = 1' in page.evaluate('document.body.innerText')  # shown as text
    assert page.errors() == []
