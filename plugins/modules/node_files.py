#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: node_files
short_description: Install a host's small files, directories and removals in one module run
version_added: 0.1.0
description:
  - Puts each entry of O(files) in its state - a file with the given O(files[].content), a directory, or nothing -
    with its owner, group and mode, and changes only what differs. It does what one M(ansible.builtin.copy),
    M(ansible.builtin.template) or M(ansible.builtin.file) task per path does, in one module run, so a re-run that
    changes nothing costs one remote task instead of one or two per path.
  - Every path is compared on every run (bytes, owner, group, mode); nothing is skipped on the word of a cache, so a
    hand edit, a removed file or a changed mode is found and put back.
  - Files are written atomically (a temporary file in the same directory, then a rename). Entries are applied in
    order, so a directory comes before the files in it.
  - Content is text rendered on the controller (C(lookup('ansible.builtin.template', ...)),
    C(lookup('ansible.builtin.file', ..., rstrip=false))). Keep it small - configuration files and scripts.
  - Supports check mode (says what it would change and writes nothing) and diff mode (each changed file's content
    before and after, and each changed owner, group or mode).
author: aicluster.infra contributors (@aicluster)
extends_documentation_fragment:
  - aicluster.infra.attributes
  - aicluster.infra.attributes.platform
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
options:
  files:
    description:
      - The paths to manage, applied in order.
    type: list
    elements: dict
    required: true
    suboptions:
      path:
        description: Absolute path.
        type: path
        required: true
      state:
        description:
          - V(file) - a regular file with O(files[].content); V(directory) - a directory, made with its parents;
            V(absent) - nothing there (a file or a link is removed; a directory is refused).
        type: str
        choices: [file, directory, absent]
        default: file
      content:
        description: The whole file, for O(files[].state=file).
        type: str
      owner:
        description: Owner (name or uid). Not applied to a path that does not exist in check mode.
        type: str
        default: root
      group:
        description: Group (name or gid).
        type: str
        default: root
      mode:
        description: Mode, octal as a string.
        type: str
        default: '0644'
  prune:
    description:
      - Absolute shell glob patterns (Python C(glob), C(*) not crossing C(/)) of files this task owns - every
        existing file or link that matches one and is not a path of O(files) is removed, after O(files) are applied.
        A role that writes one file per item (an interface, a port) gives the pattern of its own names, so the files
        of items no longer planned go in the same module run, without a separate find and removal.
      - A directory that matches is refused, as with O(files[].state=absent).
    type: list
    elements: path
    default: []
notes:
  - A path that is a directory where a file is wanted (or the reverse) makes the module fail, naming it; nothing is
    deleted to make room.
seealso:
  - module: ansible.builtin.copy
  - module: ansible.builtin.file
'''

EXAMPLES = r'''
- name: Install this node's Slurm files
  aicluster.infra.node_files:
    files:
      - path: /var/lib/aicluster
        state: directory
        mode: '0755'
      - path: /etc/slurm/cgroup.conf
        content: "{{ lookup('ansible.builtin.template', 'etc/slurm/cgroup.conf.j2') }}"
      - path: /etc/slurm/prolog.sh
        content: "{{ lookup('ansible.builtin.template', 'etc/slurm/prolog.sh.j2') }}"
        mode: '0755'
      - path: /etc/systemd/system/slurmd.service.d/old.conf
        state: absent
  register: node_files

- name: One networkd file per interface; the files of interfaces no longer listed are removed
  aicluster.infra.node_files:
    files:
      - path: /etc/systemd/network/60-site-ib0.network
        content: "{{ lookup('ansible.builtin.template', 'ib0.network.j2') }}"
    prune: [/etc/systemd/network/60-site-*.network]

- name: Restart slurmd where cgroup.conf changed
  ansible.builtin.systemd_service:
    name: slurmd
    state: restarted
  when: "'/etc/slurm/cgroup.conf' in node_files.changed_paths"
'''

RETURN = r'''
changed_paths:
  description: The paths whose content, existence, owner, group or mode changed (or would change, in check mode).
  returned: success
  type: list
  elements: str
  sample: [/etc/slurm/cgroup.conf]
files:
  description: One entry per O(files) entry, in order, then one per file O(prune) removed (state V(absent)).
  returned: success
  type: list
  elements: dict
  contains:
    path:
      description: The path.
      type: str
    state:
      description: The state asked for.
      type: str
    changed:
      description: Whether it changed.
      type: bool
  sample: [{path: /etc/slurm/cgroup.conf, state: file, changed: true}]
'''

import glob
import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_native, to_text

from ansible_collections.aicluster.infra.plugins.module_utils.atomic_file import write_atomically


def _read(path):
    with open(path, 'rb') as handle:
        return handle.read()


def _attributes(module, entry, path):
    return module.load_file_common_arguments(dict(path=path, owner=entry['owner'], group=entry['group'],
                                                  mode=entry['mode']))


def _file(module, entry, diffs):
    """Put one regular file in place; True when something changed (or would, in check mode)."""
    path = entry['path']
    new = to_bytes(entry['content'] if entry['content'] is not None else '', errors='surrogate_or_strict')
    old = None
    if os.path.lexists(path):
        if os.path.isdir(path):
            module.fail_json(msg='%s is a directory where a file is wanted; move it away first' % path, path=path)
        try:
            old = _read(path)
        except (IOError, OSError) as exc:
            module.fail_json(msg='cannot read %s: %s' % (path, to_native(exc)), path=path)
    changed = old != new
    if changed:
        diffs.append({'before_header': path, 'after_header': path,
                      'before': to_text(old or b'', errors='surrogate_or_replace'),
                      'after': to_text(new, errors='surrogate_or_replace')})
        if not module.check_mode:
            directory = os.path.dirname(path) or '.'
            if not os.path.isdir(directory):
                module.fail_json(msg='the directory of %s does not exist; list it first with state directory' % path,
                                 path=path)
            write_atomically(module, path, new, _attributes(module, entry, path))
    if os.path.exists(path):
        diff = {'before': {}, 'after': {}}
        # atomic_move keeps the old file's owner and mode: set them again on the file in place
        if module.set_fs_attributes_if_different(_attributes(module, entry, path), False, diff=diff):
            changed = True
            if not diffs or diffs[-1].get('before_header') != path:
                diffs.append(dict(diff, before_header=path, after_header=path))
    return changed


def _directory(module, entry, diffs):
    path = entry['path']
    changed = False
    if os.path.lexists(path) and not os.path.isdir(path):
        module.fail_json(msg='%s is not a directory where one is wanted; move it away first' % path, path=path)
    if not os.path.isdir(path):
        changed = True
        diffs.append({'before_header': path, 'after_header': path, 'before': {'path': path, 'state': 'absent'},
                      'after': {'path': path, 'state': 'directory'}})
        if module.check_mode:
            return True
        try:
            os.makedirs(path)
        except OSError as exc:
            module.fail_json(msg='cannot make %s: %s' % (path, to_native(exc)), path=path)
    diff = {'before': {}, 'after': {}}
    if module.set_fs_attributes_if_different(_attributes(module, entry, path), False, diff=diff):
        if not changed:
            diffs.append(dict(diff, before_header=path, after_header=path))
        changed = True
    return changed


def _absent(module, entry, diffs):
    path = entry['path']
    if not os.path.lexists(path):
        return False
    if os.path.isdir(path) and not os.path.islink(path):
        module.fail_json(msg='%s is a directory; node_files removes only files and links' % path, path=path)
    diffs.append({'before_header': path, 'after_header': path, 'before': {'path': path, 'state': 'file'},
                  'after': {'path': path, 'state': 'absent'}})
    if not module.check_mode:
        try:
            os.unlink(path)
        except OSError as exc:
            module.fail_json(msg='cannot remove %s: %s' % (path, to_native(exc)), path=path)
    return True


STATES = {'file': _file, 'directory': _directory, 'absent': _absent}


def _pruned(patterns, listed):
    """The existing paths matching a pattern of ``prune`` that ``files`` does not list, sorted."""
    found = set()
    for pattern in patterns:
        found.update(path for path in glob.glob(pattern) if os.path.lexists(path))
    return sorted(found - set(listed))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            files=dict(type='list', elements='dict', required=True, options=dict(
                path=dict(type='path', required=True),
                state=dict(type='str', choices=list(STATES), default='file'),
                content=dict(type='str'),
                owner=dict(type='str', default='root'),
                group=dict(type='str', default='root'),
                mode=dict(type='str', default='0644'),
            )),
            prune=dict(type='list', elements='path', default=[]),
        ),
        supports_check_mode=True,
    )
    results, changed_paths, diffs = [], [], []
    for entry in module.params['files']:
        if not os.path.isabs(entry['path']):
            module.fail_json(msg='files: path must be absolute, got %s' % entry['path'])
        if entry['state'] == 'file' and entry['content'] is None:
            module.fail_json(msg='files: %s has state file and no content' % entry['path'])
        changed = STATES[entry['state']](module, entry, diffs)
        results.append(dict(path=entry['path'], state=entry['state'], changed=changed))
        if changed:
            changed_paths.append(entry['path'])
    for pattern in module.params['prune']:
        if not os.path.isabs(pattern):
            module.fail_json(msg='prune: pattern must be absolute, got %s' % pattern)
    for path in _pruned(module.params['prune'], [entry['path'] for entry in module.params['files']]):
        _absent(module, {'path': path}, diffs)
        results.append(dict(path=path, state='absent', changed=True))
        changed_paths.append(path)
    result = dict(changed=bool(changed_paths), changed_paths=changed_paths, files=results)
    if module._diff and diffs:
        result['diff'] = diffs
    module.exit_json(**result)


if __name__ == '__main__':
    main()
