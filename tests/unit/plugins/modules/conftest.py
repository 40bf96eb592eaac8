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

import json
import os

import pytest

from ansible.module_utils import basic
from ansible.module_utils.common import warnings

try:
    from ansible.module_utils import _internal
except ImportError:  # ansible-core < 2.19
    _internal = None

try:
    from ansible.module_utils.testing import patch_module_args
except ImportError:  # ansible-core < 2.19
    import contextlib

    from ansible.module_utils.common.text.converters import to_bytes

    @contextlib.contextmanager
    def patch_module_args(args=None):
        saved = basic._ANSIBLE_ARGS
        basic._ANSIBLE_ARGS = to_bytes(json.dumps({'ANSIBLE_MODULE_ARGS': args or {}}))
        try:
            yield
        finally:
            basic._ANSIBLE_ARGS = saved

BIN = '/usr/bin'


class ToolBox(object):
    def __init__(self, tools):
        self.tools = dict(tools or {})
        self.calls = []
        self.environ = []

    def get_bin_path(self, module, arg, required=False, opt_dirs=None):
        if arg in self.tools:
            return os.path.join(BIN, arg)
        if required:
            module.fail_json(msg='Failed to find required executable "%s" in paths: %s' % (arg, BIN))
        return None

    def run_command(self, args, **kwargs):
        """Stands in for AnsibleModule.run_command (set on the class, so it gets no module)."""
        assert isinstance(args, list), 'modules must run argv lists, got %r' % (args,)
        self.calls.append(args)
        self.environ.append(kwargs.get('environ_update'))
        tool = os.path.basename(args[0])
        answer = self.tools[tool]
        if callable(answer):
            answer = answer(args)
        return answer


def _warning_text(warning):
    """A warning as text: ansible-core 2.19 returns WarningSummary dicts, older releases strings."""
    if isinstance(warning, dict):
        event = warning.get('event') or warning
        return event.get('msg', str(warning))
    return warning


@pytest.fixture
def run_module(monkeypatch, capsys):
    def run(module, args, tools):
        box = ToolBox(tools)
        monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path',
                            lambda self, arg, required=False, opt_dirs=None: box.get_bin_path(self, arg, required, opt_dirs))
        monkeypatch.setattr(basic.AnsibleModule, 'run_command', box.run_command)
        capsys.readouterr()
        # a module runs on the target: once another test has loaded controller code,
        # ansible-core 2.19 would send module warnings to the controller's Display instead
        if _internal is not None and hasattr(_internal, 'is_controller'):
            monkeypatch.setattr(_internal, 'is_controller', False)
        # warnings are process-global in ansible-core; start every run clean
        for name in ('_global_warnings', '_global_deprecations'):
            store = getattr(warnings, name, None)
            if store is not None:
                monkeypatch.setattr(warnings, name, type(store)())
        with patch_module_args(args):
            with pytest.raises(SystemExit):
                module.main()
        result = json.loads(capsys.readouterr().out)
        if 'warnings' in result:
            result['warnings'] = [_warning_text(warning) for warning in result['warnings']]
        for environ in box.environ:
            assert environ == {'LANG': 'C', 'LC_ALL': 'C'}
        return result, box.calls
    return run
