# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run a module's main() in-process with its tools answered at run_command / get_bin_path.

``run_main(module, args, tools)`` returns ``(result, box, exited)``: the JSON
the module printed (``failed`` set on fail_json; ``warnings`` as texts), the
``ToolBox`` (``calls``: the argv lists run_command received, ``environ``: each
call's environ_update) and whether main() exited. ``tools`` maps a tool name
to ``(rc, stdout, stderr)`` or a function of the argv that returns one; a tool
not in ``tools`` is not installed. Everything patched is restored afterwards,
so it serves the unit tests' ``run_module`` fixture and scripts alike.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import io
import json
import os

from ansible.module_utils import basic
from ansible.module_utils.common import warnings

try:
    from ansible.module_utils import _internal
except ImportError:  # ansible-core < 2.19
    _internal = None

try:
    from ansible.module_utils.testing import patch_module_args
except ImportError:  # ansible-core < 2.19
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
        answer = self.tools[os.path.basename(args[0])]
        return answer(args) if callable(answer) else answer


def warning_text(warning):
    """A warning as text: ansible-core 2.19 returns WarningSummary dicts, older releases strings."""
    if isinstance(warning, dict):
        event = warning.get('event') or warning
        return event.get('msg', str(warning))
    return warning


@contextlib.contextmanager
def _patched(box):
    saved = basic.AnsibleModule.get_bin_path, basic.AnsibleModule.run_command
    basic.AnsibleModule.get_bin_path = lambda self, arg, required=False, opt_dirs=None: box.get_bin_path(self, arg, required, opt_dirs)
    basic.AnsibleModule.run_command = box.run_command
    # a module runs on the target: once controller code is loaded, ansible-core 2.19 would send
    # module warnings to the controller's Display instead
    controller = getattr(_internal, 'is_controller', None) if _internal is not None else None
    if controller is not None:
        _internal.is_controller = False
    # warnings are process-global in ansible-core; every run starts clean
    stores = {}
    for name in ('_global_warnings', '_global_deprecations'):
        store = getattr(warnings, name, None)
        if store is not None:
            stores[name] = store
            setattr(warnings, name, type(store)())
    try:
        yield
    finally:
        basic.AnsibleModule.get_bin_path, basic.AnsibleModule.run_command = saved
        if controller is not None:
            _internal.is_controller = controller
        for name, store in stores.items():
            setattr(warnings, name, store)


def run_main(module, args, tools):
    box = ToolBox(tools)
    out = io.StringIO()
    exited = False
    with _patched(box), patch_module_args(args), contextlib.redirect_stdout(out):
        try:
            module.main()
        except SystemExit:
            exited = True
    result = json.loads(out.getvalue())
    if 'warnings' in result:
        result['warnings'] = [warning_text(warning) for warning in result['warnings']]
    return result, box, exited
