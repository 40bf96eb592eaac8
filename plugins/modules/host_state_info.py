#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: host_state_info
short_description: Read a role's packages, files and services on a node in one run
version_added: 0.1.0
description:
  - Reads, in one module run, which of the given Debian packages are installed (one C(dpkg-query)), whether the
    given services are running and enabled (one C(systemctl show)), and the checksum, owner and mode of the given
    files.
  - It says which packages apt must install and which services must be started or enabled, so a role runs its
    apt, copy and systemd tasks only where something differs. A re-run on a converged node then costs this one
    module run instead of one per package list, file and service, and still compares everything (no stamp, no
    cache).
  - A service counts as running and enabled as M(ansible.builtin.systemd_service) counts it, so the role's start
    task is skipped exactly where that module would report no change.
author: aicluster.infra contributors (@aicluster)
extends_documentation_fragment:
  - aicluster.infra.attributes
  - aicluster.infra.attributes.info_module
  - aicluster.infra.attributes.platform
options:
  packages:
    description:
      - apt package specs (V(munge), V(slurmd=22.05.*)); a version after C(=) may use apt's C(*) wildcard.
      - A spec with C(<) or C(>), or a virtual package C(dpkg) does not list, is always returned in RV(packages_missing),
        so apt decides.
    type: list
    elements: str
    default: []
  services:
    description:
      - systemd unit names (V(munge) means V(munge.service)).
    type: list
    elements: str
    default: []
  files:
    description:
      - Absolute paths whose SHA-1 checksum, owner, group and mode to read. The content is never returned.
    type: list
    elements: path
    default: []
  contents:
    description:
      - Absolute paths of small text files to read whole (a daemon's state marker, such as slurmctld's C(clustername)
        file). A missing file reads as V(null); a file over 64 KiB or not a regular file fails the module. Never give a
        secret here, since the text is returned.
    type: list
    elements: path
    default: []
requirements:
  - C(dpkg-query) when O(packages) is given; C(systemctl) when O(services) is given.
notes:
  - All commands run with C(LANG=C) and C(LC_ALL=C).
seealso:
  - module: aicluster.infra.node_files
  - module: ansible.builtin.package_facts
  - module: ansible.builtin.service_facts
'''

EXAMPLES = r'''
- name: Read munge's packages, key and service in one run
  aicluster.infra.host_state_info:
    packages: [munge]
    files: [/etc/munge/munge.key]
    services: [munge]
  register: munge_state

- name: Install munge where it is missing
  ansible.builtin.apt:
    name: "{{ munge_state.packages_missing }}"
  when: munge_state.packages_missing | length > 0

- name: Start munge where it is stopped or not enabled
  ansible.builtin.systemd_service:
    name: munge
    enabled: true
    state: started
  when: "'munge' in munge_state.services_to_start"
'''

RETURN = r'''
packages:
  description: Each asked package's installed version and dpkg status (V(ii) when installed), by package name.
  returned: when O(packages) is given
  type: dict
  sample: {"munge": {"version": "0.5.15-2", "status": "ii"}, "slurmd": {"version": "", "status": ""}}
packages_missing:
  description: The specs of O(packages) apt must act on, in their order (not installed, or at another version).
  returned: always
  type: list
  elements: str
  sample: ["slurmd=22.05.*"]
services:
  description: Each asked service's state, by the name given.
  returned: when O(services) is given
  type: dict
  contains:
    exists:
      description: Whether systemd knows the unit.
      type: bool
    running:
      description: Whether it is active or activating.
      type: bool
    enabled:
      description:
        - Whether it starts at boot as M(ansible.builtin.systemd_service) judges it (C(enabled), C(static),
          C(generated), C(transient)); C(enabled-runtime) (gone at the next boot), C(indirect) and C(alias) are not.
      type: bool
    active_state:
      description: systemd's ActiveState.
      type: str
    unit_file_state:
      description: systemd's UnitFileState.
      type: str
  sample: {"munge": {"exists": true, "running": true, "enabled": true, "active_state": "active",
           "unit_file_state": "enabled"}}
services_to_start:
  description: The names of O(services), in their order, that are not running or not enabled.
  returned: always
  type: list
  elements: str
  sample: [slurmd]
files:
  description: Each asked file's state, by path.
  returned: when O(files) is given
  type: dict
  contains:
    exists:
      description: Whether the path exists.
      type: bool
    checksum:
      description: SHA-1 of a regular file's content; empty otherwise.
      type: str
    owner:
      description: Owner's user name (the uid when it has none).
      type: str
    group:
      description: Group name (the gid when it has none).
      type: str
    mode:
      description: Permission bits, four octal digits.
      type: str
  sample: {"/etc/munge/munge.key": {"exists": true, "checksum": "3c1b...", "owner": "munge", "group": "munge",
           "mode": "0400"}}
contents:
  description: Each asked file's text (undecodable bytes replaced), or V(null) where it does not exist, by path.
  returned: when O(contents) is given
  type: dict
  sample: {"/var/lib/slurm/slurmctld/clustername": "cluster\n"}
'''

import grp
import hashlib
import os
import pwd
import stat

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.aicluster.infra.plugins.module_utils.host_state import (
    SYSTEMCTL_PROPERTIES, service_states, services_to_start)
from ansible_collections.aicluster.infra.plugins.module_utils.packages import (
    DPKG_QUERY_FORMAT, package_name, packages_to_install, parse_dpkg_query)

C_LOCALE = {'LANG': 'C', 'LC_ALL': 'C'}


def _run(module, argv, ok_rcs=(0,)):
    rc, out, err = module.run_command(argv, environ_update=C_LOCALE)
    if rc not in ok_rcs:
        module.fail_json(msg='%s failed with rc %d' % (argv[0], rc), cmd=argv, rc=rc, stdout=out, stderr=err)
    return out


def _name(lookup, number):
    try:
        return lookup(number)[0]
    except KeyError:
        return str(number)


def _file_state(path):
    try:
        info = os.stat(path)
    except OSError:
        return dict(exists=False, checksum='', owner='', group='', mode='')
    checksum = ''
    if stat.S_ISREG(info.st_mode):
        digest = hashlib.sha1()
        with open(path, 'rb') as handle:
            for block in iter(lambda: handle.read(1 << 16), b''):
                digest.update(block)
        checksum = digest.hexdigest()
    return dict(exists=True, checksum=checksum, owner=_name(pwd.getpwuid, info.st_uid),
                group=_name(grp.getgrgid, info.st_gid), mode='%04o' % stat.S_IMODE(info.st_mode))


CONTENT_LIMIT = 64 * 1024


def _content(module, path):
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        module.fail_json(msg='cannot read %s: %s' % (path, exc))
    if not stat.S_ISREG(info.st_mode) or info.st_size > CONTENT_LIMIT:
        module.fail_json(msg='%s: not a regular file of at most %d bytes' % (path, CONTENT_LIMIT))
    with open(path, 'rb') as handle:
        return handle.read(CONTENT_LIMIT).decode('utf-8', 'replace')


def main():
    module = AnsibleModule(
        argument_spec=dict(
            packages=dict(type='list', elements='str', default=[]),
            services=dict(type='list', elements='str', default=[]),
            files=dict(type='list', elements='path', default=[]),
            contents=dict(type='list', elements='path', default=[]),
        ),
        supports_check_mode=True,
    )
    params = module.params
    result = dict(changed=False, packages_missing=[], services_to_start=[])

    if params['packages']:
        names = [package_name(spec) for spec in params['packages']]
        dpkg_query = module.get_bin_path('dpkg-query', required=True)
        # rc 1: a name dpkg does not know (not installed); the others are still printed
        out = _run(module, [dpkg_query, '--show', '--showformat=' + DPKG_QUERY_FORMAT] + names, ok_rcs=(0, 1))
        installed = parse_dpkg_query(out)
        result['packages'] = dict((name, dict(zip(('version', 'status'), installed.get(name, ('', ''))))) for name in names)
        result['packages_missing'] = packages_to_install(params['packages'], out)

    if params['services']:
        systemctl = module.get_bin_path('systemctl', required=True)
        out = _run(module, [systemctl, 'show', '--property=' + ','.join(SYSTEMCTL_PROPERTIES), '--'] + params['services'])
        states = service_states(params['services'], out)
        result['services'] = states
        result['services_to_start'] = services_to_start(states)

    if params['files']:
        result['files'] = dict((path, _file_state(path)) for path in params['files'])

    if params['contents']:
        result['contents'] = dict((path, _content(module, path)) for path in params['contents'])

    module.exit_json(**result)


if __name__ == '__main__':
    main()
