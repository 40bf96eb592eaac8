#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: acceptance_report
short_description: Write the acceptance report (HTML, JUnit XML, Markdown, Prometheus metrics) from a verification results file
description:
  - Reads a C(results.json) written by C(playbooks/verify.yml) (the document described in
    C(docs/verify-results.md)), checks it with the contract's validation, and writes next to it
    C(report.html) (self-contained, inline SVG charts), C(junit.xml) (one testsuite per check area,
    one testcase per node and check) and C(summary.md) (an acceptance test report); on request
    C(metrics.prom) (the run as Prometheus metrics in node-exporter's textfile format).
  - Given O(compare_to), an earlier results file, the HTML and Markdown outputs gain a section with
    the nodes that changed state and the figures that moved by more than O(compare_threshold).
  - Each file is written through a temporary file and a rename, and only when its content differs;
    the same results give the same bytes, so a second run reports no change.
  - Runs where the results file is, normally the control node, so use it with C(delegate_to=localhost) and C(run_once=true).
version_added: 0.1.0
author:
  - aicluster.infra contributors (@aicluster)
extends_documentation_fragment:
  - aicluster.infra.attributes
attributes:
  check_mode:
    support: full
    details:
      - In check mode nothing is written; C(changed) and RV(would_write) say which files would change.
  diff_mode:
    support: none
options:
  results:
    description:
      - Path of the results document (C(results.json)).
    type: path
    required: true
  compare_to:
    description:
      - Path of an earlier results document to compare with (before a repair, last month's run).
    type: path
  output_dir:
    description:
      - Directory to write the report files to; created when missing. Default is the directory of O(results).
    type: path
  formats:
    description:
      - Which outputs to write. V(html) is C(report.html), V(junit) C(junit.xml), V(markdown) C(summary.md),
        V(prometheus) C(metrics.prom) (the run's verdict, node counts, per-node and per-check series as gauges, in the
        text exposition format node-exporter's textfile collector reads; C(docs/report.md)).
      - V(evidence) writes C(evidence/<node>.json) per node, the tool output its checks read (parsed), its results and
        versions, which the HTML appendix names.
      - V(pdf) prints C(report.html) to C(report.pdf) with headless Chromium (O(chromium)), when C(report.html) was
        written in this run or C(report.pdf) is missing (a PDF embeds its creation time, so it is not reprinted for
        nothing). Without Chromium it is skipped with a warning and RV(pdf_skipped). It needs V(html).
    type: list
    elements: str
    choices: [html, junit, markdown, prometheus, evidence, pdf]
    default: [html, junit, markdown]
  chromium:
    description:
      - Path of the Chromium (or Chrome) binary that prints V(pdf). Default is the first of C(chromium),
        C(chromium-browser), C(google-chrome), C(google-chrome-stable) on the PATH.
    type: path
  node_metrics:
    description:
      - Also return RV(node_metrics), each node's own series (with the run-level ones) for its node-exporter textfile
        collector. The module writes nothing for it; the report role writes them on the nodes (C(report_textfile_dir)).
    type: bool
    default: false
  compare_threshold:
    description:
      - Fraction by which a figure must move between the two runs to be listed, such as V(0.05) for 5%.
    type: float
    default: 0.05
  html_template:
    description:
      - Path of the Jinja2 template that lays out C(report.html), on the host the module runs on (the control node);
        required when O(formats) includes V(html).
      - The role C(aicluster.infra.report) passes its own, C(roles/report/templates/report.html.j2) of the collection,
        or the user's (C(report_html_template)). A copy of it is the place to start a template of your own.
      - The module renders it with Jinja2 itself, not with Ansible's template module; the variables are the report's
        figures (C(docs/report.md), "Your own template"), not Ansible's, and every value is escaped (autoescape).
    type: path
  cover:
    description:
      - The report's cover, shown at the top of C(report.html) and C(summary.md) and as C(junit.xml) properties. Empty
        values are left out. The inventory is always shown by its name (the directory holding it), never its path.
    type: dict
    default: {}
    suboptions:
      customer:
        description: The customer the cluster is delivered to.
        type: str
        default: ''
      site:
        description: The site or data hall.
        type: str
        default: ''
      cluster:
        description: The cluster's name; the report's title when given.
        type: str
        default: ''
      criteria:
        description: The contract or acceptance criteria document the thresholds come from (a reference, not a path).
        type: str
        default: ''
      run_by:
        description: Who ran the verification.
        type: str
        default: ''
      commit:
        description: The collection's commit, when it runs from a checkout.
        type: str
        default: ''
'''

EXAMPLES = r'''
- name: Write the acceptance report next to results.json
  aicluster.infra.acceptance_report:
    results: artifacts/verify-20261129T170003Z/results.json
    html_template: ~/.ansible/collections/ansible_collections/aicluster/infra/roles/report/templates/report.html.j2
  delegate_to: localhost
  run_once: true
  register: report

- name: Compare with the run before the repair, Markdown and HTML only
  aicluster.infra.acceptance_report:
    results: artifacts/verify-20261130T090000Z/results.json
    compare_to: artifacts/verify-20261129T170003Z/results.json
    compare_threshold: 0.1
    formats: [html, markdown]
    html_template: ~/.ansible/collections/ansible_collections/aicluster/infra/roles/report/templates/report.html.j2
  delegate_to: localhost
  run_once: true

- name: The report, JUnit and the metrics, with each node's own metrics for node-exporter
  aicluster.infra.acceptance_report:
    results: artifacts/verify-20261130T090000Z/results.json
    formats: [html, junit, prometheus]
    html_template: ~/.ansible/collections/ansible_collections/aicluster/infra/roles/report/templates/report.html.j2
    node_metrics: true
  delegate_to: localhost
  run_once: true
  register: report

- name: A report for the customer, with its cover, laid out by our own template
  aicluster.infra.acceptance_report:
    results: artifacts/verify-20261130T090000Z/results.json
    html_template: templates/customer-report.html.j2
    cover:
      customer: Example Research Lab
      site: DH2, rows 14-17
      cluster: hgx-su1
      criteria: SOW-2026-117 appendix B rev 3
      run_by: delivery engineer J. Doe
  delegate_to: localhost
  run_once: true
'''

RETURN = r'''
files:
  description: Path of each report file, by format (written, or in check mode to be written).
  returned: always
  type: dict
  sample: {"html": "artifacts/verify-20261129T170003Z/report.html", "junit": "artifacts/verify-20261129T170003Z/junit.xml",
           "markdown": "artifacts/verify-20261129T170003Z/summary.md", "prometheus": "artifacts/verify-20261129T170003Z/metrics.prom"}
written:
  description: Paths whose content changed and were written. Empty in check mode.
  returned: always
  type: list
  elements: str
  sample: ["artifacts/verify-20261129T170003Z/report.html"]
would_write:
  description: Paths whose content differs from what is on disk (what a run writes, or in check mode would write).
  returned: always
  type: list
  elements: str
  sample: ["artifacts/verify-20261129T170003Z/report.html"]
verdict:
  description: The run's verdict from its summary.
  returned: always
  type: str
  sample: FAIL
summary:
  description: The run's summary (nodes, passed, failed, drained, resumed, verdict).
  returned: always
  type: dict
  sample: {"nodes": 4, "passed": 1, "failed": 3, "drained": 3, "resumed": 0, "verdict": "FAIL"}
failures:
  description: Number of failing check results (the rows of the report's failing-checks table).
  returned: always
  type: int
  sample: 15
sizes:
  description: Size in bytes of each report file, by format.
  returned: always
  type: dict
  sample: {"html": 49083, "junit": 12043, "markdown": 7398, "prometheus": 41877, "evidence": 88120, "pdf": 402311}
pdf_skipped:
  description: Why C(report.pdf) was not printed although V(pdf) was asked for (no Chromium, or it failed).
  returned: when V(pdf) is in O(formats) and no PDF was printed for that reason
  type: str
  sample: "report.pdf skipped: no Chromium on the control node (chromium, chromium-browser, google-chrome); apt install chromium"
node_metrics:
  description: Per node of the run, the text of its C(aicluster_verify.prom) (the run-level series and the node's own).
  returned: when O(node_metrics=true)
  type: dict
  sample: {"gpu01": "# HELP aicluster_verify_info ...\naicluster_verify_node_passed{node=\"gpu01\"} 1\n"}
problems:
  description: What is wrong with a results document that is not valid (on failure).
  returned: failure
  type: list
  elements: str
  sample: ["run: missing 'inventory'"]
'''

import json
import os
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible.module_utils.common.text.converters import to_bytes, to_native

from ansible_collections.aicluster.infra.plugins.module_utils.atomic_file import write_atomically
from ansible_collections.aicluster.infra.plugins.module_utils.report import COVER_KEYS, OUTPUT_NAMES, PRINTED, build_outputs
from ansible_collections.aicluster.infra.plugins.module_utils.report import pdf
from ansible_collections.aicluster.infra.plugins.module_utils.report.pdf import CHROMIUM_NAMES
from ansible_collections.aicluster.infra.plugins.module_utils.report.figures import failing_checks
from ansible_collections.aicluster.infra.plugins.module_utils.report.html import JINJA2_IMPORT_ERROR, HtmlTemplateError
from ansible_collections.aicluster.infra.plugins.module_utils.report.prometheus import node_metrics
from ansible_collections.aicluster.infra.plugins.module_utils.verify.results import summarize, validate_results


def load_results(module, path, option):
    """The parsed, valid results document at path, or fail_json naming the problems."""
    try:
        with open(path, 'rb') as handle:
            doc = json.loads(handle.read().decode('utf-8'))
    except (IOError, OSError) as exc:
        module.fail_json(msg='%s: cannot read %s: %s' % (option, path, to_native(exc)), problems=[to_native(exc)])
    except ValueError as exc:
        module.fail_json(msg='%s: %s is not JSON: %s' % (option, path, to_native(exc)), problems=[to_native(exc)])
    problems = validate_results(doc)
    if problems:
        module.fail_json(msg='%s: %s is not a valid results document: %s' % (option, path, '; '.join(problems[:20])),
                         problems=problems)
    return doc


def read_template(module, path):
    """The text of the report.html template at path (html_template), or fail_json: it is needed for html."""
    if not path:
        module.fail_json(msg='html_template is required when formats includes html: the path of the Jinja2 template that '
                             'lays out report.html, such as the collection\'s roles/report/templates/report.html.j2 '
                             '(the report role passes it)')
    if JINJA2_IMPORT_ERROR is not None:
        module.fail_json(msg=missing_required_lib('jinja2', reason='to write report.html'),
                         exception=to_native(JINJA2_IMPORT_ERROR))
    try:
        with open(path, 'rb') as handle:
            return handle.read().decode('utf-8')
    except (IOError, OSError, UnicodeDecodeError) as exc:
        module.fail_json(msg='html_template: cannot read %s: %s' % (path, to_native(exc)))


def _current(path):
    try:
        with open(path, 'rb') as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def find_chromium(module, path):
    """The Chromium binary: the option's, else the first of pdf.CHROMIUM_NAMES on the PATH; None when there is none."""
    if path:
        return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    for name in CHROMIUM_NAMES:
        found = module.get_bin_path(name)
        if found:
            return found
    return None


def print_report(module, chromium_option, html_path, pdf_path, html_changed):
    """Print report.html to report.pdf when it changed or the PDF is missing: ``(printed, skipped message or None)``.
    In check mode it says whether it would print."""
    if not pdf.wanted(html_changed, os.path.exists(pdf_path)):
        return False, None
    chromium = find_chromium(module, chromium_option)
    if chromium is None:
        where = chromium_option or ', '.join(CHROMIUM_NAMES)
        return False, ('report.pdf skipped: no Chromium on the control node (%s); Debian: apt install chromium, or print '
                       'report.html from a browser' % where)
    if module.check_mode:
        return True, None
    work = tempfile.mkdtemp(prefix='aicluster-pdf-')
    try:
        tmp_pdf = os.path.join(work, 'report.pdf')
        argv = pdf.print_argv(chromium, html_path, tmp_pdf, os.path.join(work, 'profile'))
        rc, stdout, stderr = module.run_command(argv, environ_update={'LANG': 'C', 'LC_ALL': 'C'})
        data = b''
        if os.path.exists(tmp_pdf):
            with open(tmp_pdf, 'rb') as handle:
                data = handle.read()
        if rc != 0 or not pdf.is_pdf(data):
            lines = (stderr or stdout or 'no PDF written').strip().splitlines() or ['no PDF written']
            return False, 'report.pdf skipped: %s failed (rc %s): %s' % (chromium, rc, lines[-1][:300])
        write_atomically(module, pdf_path, data, mode=0o644)
        return True, None
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            results=dict(type='path', required=True),
            compare_to=dict(type='path'),
            output_dir=dict(type='path'),
            formats=dict(type='list', elements='str', choices=sorted(OUTPUT_NAMES), default=['html', 'junit', 'markdown']),
            chromium=dict(type='path'),
            compare_threshold=dict(type='float', default=0.05),
            html_template=dict(type='path'),
            cover=dict(type='dict', default={}, options=dict(
                (key, dict(type='str', default='')) for key in COVER_KEYS)),
            node_metrics=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if not 0 <= params['compare_threshold'] < 10:
        module.fail_json(msg='compare_threshold must be a fraction >= 0, such as 0.05; got %s' % params['compare_threshold'])
    template = read_template(module, params['html_template']) if 'html' in params['formats'] else None
    doc = load_results(module, params['results'], 'results')
    older = load_results(module, params['compare_to'], 'compare_to') if params['compare_to'] else None
    output_dir = params['output_dir'] or os.path.dirname(params['results']) or '.'
    formats = []
    for name in params['formats']:
        if name not in formats:
            formats.append(name)
    if 'pdf' in formats and 'html' not in formats:
        module.fail_json(msg='formats: pdf is printed from report.html; add html to formats (got %s)' % ', '.join(formats))
    try:
        outputs = build_outputs(doc, older, formats, params['compare_threshold'], cover=params['cover'], html_template=template)
    except HtmlTemplateError as exc:
        module.fail_json(msg='html_template: %s: %s' % (params['html_template'], to_native(exc)))
    files, sizes, would_write, written = {}, {}, [], []
    pending = []
    for name in formats:
        if name in PRINTED:
            continue
        files[name] = os.path.join(output_dir, OUTPUT_NAMES[name])
        sizes[name] = 0
        members = sorted(key for key in outputs if key == OUTPUT_NAMES[name] or key.startswith(OUTPUT_NAMES[name] + '/'))
        for member in members:
            path = os.path.join(output_dir, member)
            data = to_bytes(outputs[member], errors='surrogate_or_strict')
            sizes[name] += len(data)
            if _current(path) != data:
                would_write.append(path)
                pending.append((path, data))
    if pending and not module.check_mode:
        for path, data in pending:
            directory = os.path.dirname(path)
            if not os.path.isdir(directory):
                try:
                    os.makedirs(directory)
                except OSError as exc:
                    module.fail_json(msg='cannot create output_dir %s: %s' % (directory, to_native(exc)))
            write_atomically(module, path, data, mode=0o644)
            written.append(path)
    extra = {}
    if 'pdf' in formats:
        files['pdf'] = os.path.join(output_dir, OUTPUT_NAMES['pdf'])
        printed, skipped = print_report(module, params['chromium'], files['html'], files['pdf'], files['html'] in would_write)
        if printed:
            would_write.append(files['pdf'])
            if not module.check_mode:
                written.append(files['pdf'])
                sizes['pdf'] = os.path.getsize(files['pdf'])
        if skipped:
            extra['pdf_skipped'] = skipped
            module.warn(skipped)
    summary = doc.get('summary') or summarize(doc['nodes'])
    if params['node_metrics']:
        extra['node_metrics'] = node_metrics(doc, params['cover'])
    module.exit_json(changed=bool(would_write), files=files, written=written, would_write=would_write, sizes=sizes,
                     verdict=summary.get('verdict'), summary=summary, failures=len(failing_checks(doc)), **extra)


if __name__ == '__main__':
    main()
