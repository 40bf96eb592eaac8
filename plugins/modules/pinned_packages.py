#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: pinned_packages
short_description: Install Debian packages at exact versions and hold them, in one run
version_added: 0.1.0
description:
  - Puts every package of a bill of materials at exactly its version and holds it (C(apt-mark hold)), so a routine
    C(apt upgrade) cannot move one part of the NVIDIA stack apart from the others (a fabric manager upgraded
    without its driver leaves the GPUs unusable).
  - Reads C(dpkg-query) first. When every package is at its version and held it changes nothing and does not
    refresh the package lists, so a re-run on a converged node costs one command.
  - Otherwise it refreshes the package lists (C(apt-get update)), resolves each O(packages[].upstream) pin and
    checks that every wanted version is offered by a configured repository with C(apt-cache madison), and fails
    naming each one that is not (or is ambiguous), B(before anything is installed, upgraded or removed). Then one C(apt-get install name=version ...) with
    C(--allow-downgrades --allow-change-held-packages) (held packages move only through this module), and the holds.
  - A version change of a held package is an upgrade or downgrade of exactly the listed packages; apt may add
    dependencies, never remove a package (C(--no-remove)).
author: aicluster.infra contributors (@aicluster)
extends_documentation_fragment:
  - aicluster.infra.attributes
  - aicluster.infra.attributes.platform
attributes:
  check_mode:
    support: full
    details:
      - Reports what would be installed and held without refreshing the package lists or touching dpkg; an
        O(packages[].upstream) pin is resolved from the package lists as they are (C(apt-cache madison)), shown as
        C(NAME=UPSTREAM-*) where they offer no single match.
  diff_mode:
    support: full
options:
  packages:
    description:
      - The packages, each at an exact Debian version (V(580.95.05-1)) or an upstream version (V(580.95.05)); no
        wildcard.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: Package name.
        type: str
        required: true
      version:
        description:
          - Exact Debian version (epoch included where the package has one).
          - One of O(packages[].version) and O(packages[].upstream) is required.
        type: str
      upstream:
        description:
          - The upstream version (V(580.95.05)); the package is pinned to the one version the configured repositories
            offer with that upstream part, whatever its Debian revision (C(apt-cache madison)). The run fails,
            naming what is offered, when none or several versions match, B(before anything is installed).
          - An installed version with that upstream part is at its pin (no refresh, no C(apt-cache) call).
          - For packages built apart from the one that sets the version, such as NVIDIA's fabric manager
            (V(580.95.05-1)) beside Ubuntu's driver packages (V(580.95.05-0ubuntu1)).
        type: str
  hold:
    description:
      - V(true) holds every listed package after the install; V(false) releases their holds.
    type: bool
    default: true
  update_cache:
    description:
      - Refresh the package lists before installing, when something is to be installed (never on a converged node).
    type: bool
    default: true
requirements:
  - A Debian-family system (C(dpkg-query), C(apt-get), C(apt-cache), C(apt-mark)).
notes:
  - All commands run with C(LANG=C), C(LC_ALL=C) and C(DEBIAN_FRONTEND=noninteractive); a package's configuration
    files the site changed are kept (C(--force-confold)).
seealso:
  - module: ansible.builtin.apt
  - module: ansible.builtin.dpkg_selections
'''

EXAMPLES = r'''
- name: Install the NVIDIA driver and its fabric manager at exactly the driver's version, held
  aicluster.infra.pinned_packages:
    packages:
      - {name: nvidia-driver, version: 580.95.05-1}
      - {name: nvidia-fabricmanager, upstream: 580.95.05}
  register: driver_packages

- name: Note a kernel-module package that changed
  ansible.builtin.set_fact:
    nvidia_driver_reboot_required: "{{ driver_packages.changed_packages | selectattr('name', 'search', 'dkms') | list | length > 0 }}"
'''

RETURN = r'''
changed_packages:
  description: The packages installed, upgraded or downgraded (in check mode, that would be), in the given order.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Package name.
      type: str
    before:
      description: The version installed before; empty when it was not installed.
      type: str
    after:
      description: The version installed now.
      type: str
  sample: [{"name": "nvidia-driver", "before": "580.82.07-1", "after": "580.95.05-1"}]
held:
  description: The names this run put on hold (or would).
  returned: always
  type: list
  elements: str
unheld:
  description: The names whose hold this run released (or would), with O(hold=false).
  returned: always
  type: list
  elements: str
installed:
  description: Each listed package's version after the run (in check mode, as found).
  returned: always
  type: dict
  sample: {"nvidia-driver": "580.95.05-1"}
'''

from ansible.module_utils.basic import AnsibleModule  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.aicluster.infra.plugins.module_utils.packages import DPKG_QUERY_FORMAT  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.aicluster.infra.plugins.module_utils.pinned_packages import (  # noqa: E402  pylint: disable=wrong-import-position
    plan, resolve, state_text, unavailable, update_errors, wanted_problems)

ENVIRON = {'LANG': 'C', 'LC_ALL': 'C', 'DEBIAN_FRONTEND': 'noninteractive'}


def _run(module, argv, ok_rcs=(0,), msg=None):
    rc, out, err = module.run_command(argv, environ_update=ENVIRON)
    if rc not in ok_rcs:
        module.fail_json(msg=msg or '%s failed with rc %d' % (' '.join(argv[:3]), rc), cmd=argv, rc=rc, stdout=out,
                         stderr=err)
    return out


def main():
    module = AnsibleModule(
        argument_spec={
            'packages': {'type': 'list', 'elements': 'dict', 'required': True, 'options': {
                'name': {'type': 'str', 'required': True},
                'version': {'type': 'str'},
                'upstream': {'type': 'str'}},
                'mutually_exclusive': [['version', 'upstream']], 'required_one_of': [['version', 'upstream']]},
            'hold': {'type': 'bool', 'default': True},
            'update_cache': {'type': 'bool', 'default': True},
        },
        supports_check_mode=True,
    )
    packages = module.params['packages']
    problems = wanted_problems(packages)
    if problems:
        module.fail_json(msg='pinned_packages: ' + '; '.join(problems))
    for tool in ('dpkg-query', 'apt-get', 'apt-cache', 'apt-mark'):
        if not module.get_bin_path(tool):
            module.fail_json(msg='pinned_packages: %s not found; this module supports Debian-family systems only' % tool)
    names = [entry['name'] for entry in packages]
    query = ['dpkg-query', '--show', '--showformat=' + DPKG_QUERY_FORMAT] + names
    # rc 1: some name unknown to dpkg (not installed), the rest is still printed
    todo = plan(packages, _run(module, query, ok_rcs=(0, 1)), hold=module.params['hold'])
    held_before = set(todo['held'])
    changed = bool(todo['install'] or todo['hold'] or todo['unhold'])
    unresolved = [entry for entry in todo['install'] if not entry['after']]
    if module.check_mode and unresolved:
        # read-only: what the package lists offer now (a check run refreshes nothing); unresolved stays NAME=UP-*
        madison = _run(module, ['apt-cache', 'madison'] + [entry['name'] for entry in unresolved], ok_rcs=(0, 100))
        todo['install'] = [dict(entry, after=entry['after'] or '%s-*' % entry.pop('upstream'))
                           for entry in resolve(todo['install'], madison)[0]]
    elif changed and todo['install'] and not module.check_mode:
        if module.params['update_cache']:
            # apt-get update exits 0 when a repository cannot be reached (W: Failed to fetch ...) and keeps the old
            # lists: the install would then fail half-way through its downloads, or install from stale lists
            argv = ['apt-get', 'update', '-q']
            rc, out, err = module.run_command(argv, environ_update=ENVIRON)
            errors = update_errors(out, err)
            if rc != 0 or errors:
                module.fail_json(msg='pinned_packages: apt-get update failed (%s): a repository is unreachable or its '
                                     'signature does not verify; nothing was installed or removed'
                                     % ('; '.join(errors[:3]) or 'rc %d' % rc), cmd=argv, rc=rc, stdout=out, stderr=err)
        madison_argv = ['apt-cache', 'madison'] + [entry['name'] for entry in todo['install']]
        madison = _run(module, madison_argv, ok_rcs=(0, 100))
        todo['install'], missing = resolve(todo['install'], madison)
        missing += unavailable([entry for entry in todo['install'] if entry['after']], madison)
        if missing:
            module.fail_json(msg='pinned_packages: %s; nothing was installed or removed' % '; '.join(missing),
                             cmd=madison_argv, rc=0, stdout=madison, stderr='')
    result = {'changed': changed, 'changed_packages': todo['install'], 'held': todo['hold'],
              'unheld': todo['unhold'], 'installed': dict(todo['installed'])}
    after_installed = dict(todo['installed'])
    after_installed.update({entry['name']: entry['after'] for entry in todo['install']})
    held_after = set(names) if module.params['hold'] else set()
    if module._diff:  # pylint: disable=protected-access
        result['diff'] = {'before': state_text(packages, todo['installed'], held_before),
                          'after': state_text(packages, after_installed, held_after),
                          'before_header': 'dpkg', 'after_header': 'dpkg'}
    if module.check_mode or not changed:
        module.exit_json(**result)

    if todo['install']:
        specs = ['%s=%s' % (entry['name'], entry['after']) for entry in todo['install']]
        _run(module, ['apt-get', 'install', '-y', '-q', '--no-remove', '--allow-downgrades',
                      '--allow-change-held-packages', '-o', 'Dpkg::Options::=--force-confdef',
                      '-o', 'Dpkg::Options::=--force-confold'] + specs)
    if todo['hold']:
        _run(module, ['apt-mark', 'hold'] + todo['hold'])
    if todo['unhold']:
        _run(module, ['apt-mark', 'unhold'] + todo['unhold'])
    result['installed'] = after_installed
    module.exit_json(**result)


if __name__ == '__main__':
    main()
