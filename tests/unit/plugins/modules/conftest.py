# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drive a module's main() with its tools mocked at run_command / get_bin_path.

``run_module(module, args, tools)`` runs ``module.main()`` under
``patch_module_args(args)`` and returns ``(result, calls)``: ``result`` is
the JSON the module printed (``failed`` is set on fail_json), ``calls`` the
argv lists run_command received; ``result['warnings']`` is a list of texts. ``tools`` maps a tool name to what
running it gives: ``(rc, stdout, stderr)``, or a function of the argv that
returns one. A tool that is not in ``tools`` is not installed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from _module_runner import run_main


@pytest.fixture
def run_module():
    def run(module, args, tools):
        result, box, exited = run_main(module, args, tools)
        assert exited, 'main() must end with exit_json or fail_json'
        for environ in box.environ:
            assert environ.get('LANG') == 'C' and environ.get('LC_ALL') == 'C'
        return result, box.calls
    return run
