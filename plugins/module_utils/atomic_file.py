# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A file replaced whole or not at all: written to a temporary file in its directory, given its attributes, then
renamed over the old one (the modules that write configuration share this)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import tempfile


def write_atomically(module, path, data, file_args=None, mode=None):
    """Write ``data`` (bytes) to ``path`` through a temporary file in the same directory and a rename. The temporary
    file gets ``file_args`` (AnsibleModule.load_file_common_arguments, its path replaced) or ``mode`` first, so the
    file never exists with other attributes; it is removed if anything fails."""
    fd, tmp = tempfile.mkstemp(prefix='.%s.' % os.path.basename(path), dir=os.path.dirname(path) or '.')
    try:
        with os.fdopen(fd, 'wb') as handle:
            handle.write(data)
        if file_args is not None:
            module.set_fs_attributes_if_different(dict(file_args, path=tmp), False)
        elif mode is not None:
            os.chmod(tmp, mode)
        module.atomic_move(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
