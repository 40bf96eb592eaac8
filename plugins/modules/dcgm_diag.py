#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: dcgm_diag
short_description: Run an NVIDIA DCGM diagnostic (dcgmi diag) and return its parsed result
version_added: 0.1.0
description:
  - Runs C(dcgmi diag -r LEVEL -j), optionally limited to some GPUs with C(-i), and returns the overall verdict
    and every test result, parsed from the JSON report.
  - A diagnostic that finds a failing GPU is a result, not a module failure; C(dcgmi) exits non-zero then and the
    module returns RV(overall=fail). Test the result in the play (see the examples).
  - The module fails only when C(dcgmi) is missing or its output holds no test result (for example when the DCGM host
    engine C(nv-hostengine) is not running, or the diagnostic could not start); the message then carries the tool's error lines.
  - The diagnostic only reads and exercises the GPUs; it changes no setting, so the module always returns
    C(changed=false). In check mode level 1 (read-only deployment checks) still runs; levels 2 to 4 load the GPUs
    and are B(skipped) (C(skipped=true), no C(overall)).
  - DCGM 4 runs its CUDA tests (memory, diagnostic, targeted stress and power, memory bandwidth, pcie) from a separate
    package (C(datacenter-gpu-manager-4-cuda<major>)); without it they are reported V(skip) and C(overall) can still
    read V(pass), so check C(tests) for skipped tests.
author: aicluster.infra contributors (@aicluster)
extends_documentation_fragment:
  - aicluster.infra.attributes
  - aicluster.infra.attributes.info_module
  - aicluster.infra.attributes.platform
options:
  level:
    description:
      - Diagnostic level (C(-r)). V(1) is the quick deployment check (seconds), V(2) the medium one (about two minutes),
        V(3) the long hardware diagnostic (about fifteen minutes or more on eight GPUs), V(4) the extended one (an hour
        or more; DCGM 2.x and later).
    type: int
    choices: [1, 2, 3, 4]
    default: 1
  gpu_ids:
    description:
      - DCGM GPU ids to run on (C(-i 0,1)). The default (an empty list) runs on every GPU.
    type: list
    elements: int
    default: []
requirements:
  - C(dcgmi) from NVIDIA DCGM on the target, and a reachable DCGM host engine (C(nv-hostengine)).
notes:
  - All commands run with C(LANG=C) and C(LC_ALL=C).
  - Levels 2 to 4 put a heavy load on the GPUs and take minutes to hours; do not run them on nodes that carry jobs, and
    consider C(async) with C(poll) for levels 3 and 4.
  - The JSON layout differs between DCGM releases; the module returns what the collection's parser reads from it.
seealso:
  - module: aicluster.infra.gpu_info
  - name: dcgmi diag
    description: The dcgmi diag reference.
    link: https://docs.nvidia.com/datacenter/dcgm/latest/reference/command-line-reference/dcgmi/dcgmi-diag.html
'''

EXAMPLES = r'''
- name: Quick DCGM check
  aicluster.infra.dcgm_diag:
    level: 1
  register: diag

- name: The diagnostic must pass
  ansible.builtin.assert:
    that: diag.overall == 'pass'
    fail_msg: "{{ diag.tests | rejectattr('result', 'in', ['pass', 'skip']) | list }}"

- name: Long diagnostic of two GPUs, in the background
  aicluster.infra.dcgm_diag:
    level: 3
    gpu_ids: [0, 1]
  async: 3600
  poll: 30
'''

RETURN = r'''
overall:
  description: Overall verdict of the diagnostic.
  returned: success
  type: str
  choices: [pass, fail, warn]
  sample: pass
tests:
  description: One entry per test, as the collection's dcgmi parser returns them.
  returned: success
  type: list
  elements: dict
  contains:
    name:
      description: Test name.
      type: str
      sample: memory
    category:
      description: Test category (V(Deployment), V(Hardware), V(Integration), V(Stress), V(Custom)...).
      type: str
      sample: Hardware
    result:
      description: Worst result of the test over the GPUs, lower case (V(pass), V(fail), V(warn), V(skip)).
      type: str
      sample: fail
    details:
      description: The test's warning and info texts, as C(Warning... ) and C(Info... ) strings.
      type: list
      elements: str
      sample: ["Warning: GPU 3 Found 1 uncorrectable memory error(s) during the memory test."]
    gpu_results:
      description: Result per GPU id (keys are GPU ids as strings).
      type: dict
      sample: {"0": pass, "3": fail}
  sample:
    - {name: Denylist, category: Deployment, result: pass, details: [], gpu_results: {"0": pass, "1": pass}}
metadata:
  description: Scalar fields of the report, such as the DCGM version, as printed.
  returned: success
  type: dict
  sample: {version: 3.1.0}
format:
  description: Which layout was parsed; V(json) unless an old C(dcgmi) ignored C(-j).
  returned: success
  type: str
  sample: json
errors:
  description: Error lines printed around the report and error entries it holds.
  returned: success
  type: list
  elements: str
  sample: []
rc:
  description: Exit status of C(dcgmi); non-zero when a test failed.
  returned: success
  type: int
  sample: 0
cmd:
  description: The command that ran.
  returned: success
  type: list
  elements: str
  sample: [/usr/bin/dcgmi, diag, -r, '1', -j]
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aicluster.infra.plugins.module_utils.dcgm import parse_dcgmi_diag
from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError

C_LOCALE = {'LANG': 'C', 'LC_ALL': 'C'}


def build_argv(path, level, gpu_ids):
    argv = [path, 'diag', '-r', str(level), '-j']
    if gpu_ids:
        argv.extend(['-i', ','.join(str(gpu) for gpu in gpu_ids)])
    return argv


def main():
    module = AnsibleModule(
        argument_spec=dict(
            level=dict(type='int', choices=[1, 2, 3, 4], default=1),
            gpu_ids=dict(type='list', elements='int', default=[]),
        ),
        supports_check_mode=True,
    )
    gpu_ids = module.params['gpu_ids']
    bad = [gpu for gpu in gpu_ids if gpu < 0]
    if bad:
        module.fail_json(msg='gpu_ids must be 0 or more, got %s' % bad)

    argv = build_argv(module.get_bin_path('dcgmi', required=True), module.params['level'], gpu_ids)
    if module.check_mode and module.params['level'] >= 2:
        module.exit_json(changed=False, skipped=True, cmd=argv,
                         msg='dcgmi diag -r %d loads the GPUs: not run in check mode' % module.params['level'])
    rc, out, err = module.run_command(argv, environ_update=C_LOCALE)
    out, err = out or '', err or ''
    try:
        parsed = parse_dcgmi_diag(out)
    except ParseError as exc:
        if rc != 0:
            msg = 'dcgmi diag failed with rc=%d and printed no diagnostic report (%s): %s' % (rc, exc, (err or out).strip()[:500])
        else:
            msg = 'dcgmi diag printed output that is not a JSON diagnostic report: %s' % exc
        module.fail_json(msg=msg, cmd=argv, rc=rc, stdout=out, stderr=err)

    if not parsed.get('tests'):
        why = '; '.join(parsed.get('errors') or []) or 'no test result in the output'
        module.fail_json(msg='dcgmi diag ran no diagnostic (rc=%d): %s' % (rc, why[:500]), cmd=argv, rc=rc, stdout=out, stderr=err,
                         errors=parsed.get('errors') or [])

    result = dict(parsed)
    result.update(changed=False, rc=rc, cmd=argv)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
