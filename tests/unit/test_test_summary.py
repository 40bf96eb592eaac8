# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""scripts/test-summary.py: the last lines of a failed make test name the failed checks and why."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from _paths import REPO, load_program


def _script():
    return load_program(os.path.join(REPO, 'scripts', 'test-summary.py'), 'test_summary')


LOG = """\
test: 13 checks, 2 at a time: lab-check molecule-stack
TASK [Refuse bad input] ****
fatal: [mol-stack-ctl01]: FAILED! => {"msg": "stack: invalid variables"}
...ignoring
FAILED - RETRYING: [mol-stack-ctl01]: Wait until the job runs (30 retries left).
TASK [Each node was drained before the next] ****
fatal: [localhost]: FAILED! => {
    "assertion": "__times[0].resumed <= __times[1].drained",
    "changed": false
}
PLAY RECAP ****
localhost                  : ok=40   changed=9    unreachable=0    failed=1    skipped=0    rescued=0    ignored=1
test: molecule-stack ended with rc 2 in 880 s
============ short test summary info ============
FAILED tests/lab/test_readme.py::test_the_readme_real_cluster_path_verbatim - AssertionError: perftest
1 failed, 9 passed in 2301.00s
test: lab-check ended with rc 0 in 2301 s
test: unit ended with rc 0 in 360 s
"""


def test_names_the_failed_checks_and_their_unignored_failures():
    out = _script().summary(LOG)
    assert out[0] == 'test summary: 1 check(s) failed: molecule-stack (rc 2, 880 s)'
    assert out[1] == '-- molecule-stack:'
    assert out[2:] == ['   fatal: [localhost]: FAILED! => {',
                       '   localhost                  : ok=40   changed=9    unreachable=0    failed=1    skipped=0    '
                       'rescued=0    ignored=1']


def test_a_log_without_failed_checks_says_so():
    out = _script().summary(LOG.replace('rc 2 in', 'rc 0 in') + "make[1]: *** No rule to make target 'nope'.\n")
    assert out == ['test summary: no check ended with a non-zero rc (a check that never ended is not in the log)',
                   "   make[1]: *** No rule to make target 'nope'."]


def test_long_lines_are_cut_and_many_lines_keep_first_and_last():
    script = _script()
    lines = ['E   line %d %s' % (n, 'x' * 300) for n in range(30)]
    log = '\n'.join(lines + ['test: unit ended with rc 1 in 10 s'])
    out = script.summary(log)
    assert len(out) == 2 + script.PER_CHECK
    assert out[2].startswith('   E   line 0 ') and out[2].endswith(' ...') and len(out[2]) == 3 + script.WIDTH + 4
    assert out[-1].startswith('   E   line 29 ')
