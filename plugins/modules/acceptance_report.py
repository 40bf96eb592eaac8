#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: acceptance_report
short_description: Write the acceptance report (HTML, JUnit XML, Markdown) from a verification results file
description:
  - Reads a C(results.json) written by C(playbooks/verify.yml) (the document described in
    C(docs/verify-results.md)), checks it with the contract's validation, and writes next to it
    C(report.html) (self-contained, inline SVG charts), C(junit.xml) (one testsuite per check area,
    one testcase per node and check) and C(summary.md) (an acceptance test report).
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
      - Which outputs to write. V(html) is C(report.html), V(junit) C(junit.xml), V(markdown) C(summary.md).
    type: list
    elements: str
    choices: [html, junit, markdown]
    default: [html, junit, markdown]
  compare_threshold:
    description:
      - Fraction by which a figure must move between the two runs to be listed, such as V(0.05) for 5%.
    type: float
    default: 0.05
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
  delegate_to: localhost
  run_once: true
  register: report

- name: Compare with the run before the repair, Markdown and HTML only
  aicluster.infra.acceptance_report:
    results: artifacts/verify-20261130T090000Z/results.json
    compare_to: artifacts/verify-20261129T170003Z/results.json
    compare_threshold: 0.1
    formats: [html, markdown]
  delegate_to: localhost
  run_once: true

- name: A report for the customer, with its cover
  aicluster.infra.acceptance_report:
    results: artifacts/verify-20261130T090000Z/results.json
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
           "markdown": "artifacts/verify-20261129T170003Z/summary.md"}
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
  sample: {"html": 49083, "junit": 12043, "markdown": 7398}
problems:
  description: What is wrong with a results document that is not valid (on failure).
  returned: failure
  type: list
  elements: str
  sample: ["run: missing 'inventory'"]
'''

import json
import os
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_native

from ansible_collections.aicluster.infra.plugins.module_utils.report import COVER_KEYS, OUTPUT_NAMES, build_outputs
from ansible_collections.aicluster.infra.plugins.module_utils.report.figures import failing_checks
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


def _current(path):
    try:
        with open(path, 'rb') as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def write_atomically(module, path, data):
    """Write data to a temporary file in the same directory, then rename it over path."""
    fd, tmp = tempfile.mkstemp(prefix='.%s.' % os.path.basename(path), dir=os.path.dirname(path) or '.')
    try:
        with os.fdopen(fd, 'wb') as handle:
            handle.write(data)
        os.chmod(tmp, 0o644)
        module.atomic_move(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            results=dict(type='path', required=True),
            compare_to=dict(type='path'),
            output_dir=dict(type='path'),
            formats=dict(type='list', elements='str', choices=list(OUTPUT_NAMES), default=list(OUTPUT_NAMES)),
            compare_threshold=dict(type='float', default=0.05),
            cover=dict(type='dict', default={}, options=dict(
                (key, dict(type='str', default='')) for key in COVER_KEYS)),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if not 0 <= params['compare_threshold'] < 10:
        module.fail_json(msg='compare_threshold must be a fraction >= 0, such as 0.05; got %s' % params['compare_threshold'])
    doc = load_results(module, params['results'], 'results')
    older = load_results(module, params['compare_to'], 'compare_to') if params['compare_to'] else None
    output_dir = params['output_dir'] or os.path.dirname(params['results']) or '.'
    formats = []
    for name in params['formats']:
        if name not in formats:
            formats.append(name)
    outputs = build_outputs(doc, older, formats, params['compare_threshold'], cover=params['cover'])
    files, sizes, would_write, written = {}, {}, [], []
    for name in formats:
        path = os.path.join(output_dir, OUTPUT_NAMES[name])
        data = to_bytes(outputs[OUTPUT_NAMES[name]], errors='surrogate_or_strict')
        files[name] = path
        sizes[name] = len(data)
        if _current(path) != data:
            would_write.append(path)
    if would_write and not module.check_mode:
        if not os.path.isdir(output_dir):
            try:
                os.makedirs(output_dir)
            except OSError as exc:
                module.fail_json(msg='cannot create output_dir %s: %s' % (output_dir, to_native(exc)))
        for name in formats:
            if files[name] in would_write:
                write_atomically(module, files[name], to_bytes(outputs[OUTPUT_NAMES[name]], errors='surrogate_or_strict'))
                written.append(files[name])
    summary = doc.get('summary') or summarize(doc['nodes'])
    module.exit_json(changed=bool(would_write), files=files, written=written, would_write=would_write, sizes=sizes,
                     verdict=summary.get('verdict'), summary=summary, failures=len(failing_checks(doc)))


if __name__ == '__main__':
    main()
