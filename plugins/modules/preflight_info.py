#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: preflight_info
short_description: Read what the preflight checks need from a node in one run
version_added: 0.1.0
description:
  - Returns the operating system facts the stages use (distribution and its version, kernel, architecture, host
    name, Python), gathered with ansible-core's own fact collectors, as C(ansible_facts), with the same names and values
    as C(ansible.builtin.setup) with C(gather_subset=min), without the other minimal facts nothing here reads.
  - Reads, in the same module run, the free space of the file systems that hold the given paths, the active swap devices,
    which time synchronisation services are active and whether the kernel clock is synchronised, and how the node
    resolves the given host names.
  - It replaces one module run per check (C(setup), mount facts, C(swapon), C(systemctl is-active), C(timedatectl),
    name resolution); the preflight role judges the answers.
  - Only the file systems holding the given paths are measured (C(statvfs)), not every mount of the node, so a hung
    network mount elsewhere cannot stall the read.
author: aicluster.infra contributors (@aicluster)
extends_documentation_fragment:
  - aicluster.infra.attributes
  - aicluster.infra.attributes.info_module
  - aicluster.infra.attributes.platform
options:
  paths:
    description:
      - Absolute paths whose file system to measure; a path that does not exist yet is measured where its nearest
        existing parent lives.
    type: list
    elements: path
    default: []
  time_sync_services:
    description:
      - systemd units of time synchronisation (V(chrony), V(systemd-timesyncd)); the empty list reads no time
        synchronisation at all.
    type: list
    elements: str
    default: []
  resolve_names:
    description:
      - Host names to resolve with the node's own resolver (as M(aicluster.infra.name_resolution_info) does).
    type: list
    elements: str
    default: []
requirements:
  - C(systemctl) and C(timedatectl) when O(time_sync_services) is given; without them no service counts as active
    and the clock as not synchronised.
notes:
  - All commands run with C(LANG=C) and C(LC_ALL=C).
seealso:
  - module: aicluster.infra.name_resolution_info
  - module: ansible.builtin.mount_facts
'''

EXAMPLES = r'''
- name: Read what preflight checks
  aicluster.infra.preflight_info:
    paths: [/, /var/lib, /tmp]
    time_sync_services: [chrony, systemd-timesyncd]
    resolve_names: "{{ groups['all'] }}"
  register: preflight

- name: Swap must be off
  ansible.builtin.assert:
    that: preflight.swap_devices | length == 0
'''

RETURN = r'''
ansible_facts:
  description:
    - The distribution, platform and Python facts of C(ansible.builtin.setup), under the same names
      (C(ansible_facts.distribution), C(ansible_facts.distribution_major_version), C(ansible_facts.kernel),
      C(ansible_facts.python), ...).
  returned: always
  type: dict
  sample: {"distribution": "Debian", "distribution_major_version": "12", "kernel": "6.1.0-28-amd64"}
mounts:
  description:
    - The file systems holding O(paths), one entry per mount point, in the shape of M(ansible.builtin.mount_facts)'
      C(mount_points) values (so the C(aicluster.infra.free_space_report) filter takes them).
  returned: always
  type: list
  elements: dict
  sample: [{"mount": "/", "size_total": 105088212992, "size_available": 61872656384}]
swap_devices:
  description: Active swap devices and files, as C(/proc/swaps) lists them.
  returned: always
  type: list
  elements: str
  sample: ["/dev/dm-1"]
time_sync_services_active:
  description: The units of O(time_sync_services) that are active, in their order.
  returned: always
  type: list
  elements: str
  sample: [chrony]
clock_synchronized:
  description: Whether C(timedatectl) says the kernel clock is synchronised (false when it cannot tell, or was not asked).
  returned: always
  type: bool
resolved:
  description: Addresses of each name of O(resolve_names) that resolved.
  returned: always
  type: dict
  sample: {"ctl01": ["10.89.0.2"]}
unresolved:
  description: Names of O(resolve_names) that did not resolve, in their order.
  returned: always
  type: list
  elements: str
loopback:
  description: Names whose first address is a loopback address.
  returned: always
  type: list
  elements: str
'''

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.facts.system.distribution import DistributionFactCollector
from ansible.module_utils.facts.system.platform import PlatformFactCollector
from ansible.module_utils.facts.system.python import PythonFactCollector
from ansible_collections.aicluster.infra.plugins.module_utils.system import parse_proc_swaps, resolve

C_LOCALE = {'LANG': 'C', 'LC_ALL': 'C'}


def _existing(path):
    path = os.path.normpath(path)
    while not os.path.exists(path) and path != '/':
        path = os.path.dirname(path)
    return path


def _mount_point(path):
    path = os.path.realpath(path)
    while not os.path.ismount(path):
        path = os.path.dirname(path)
    return path


def _mounts(paths):
    mounts = {}
    for path in paths:
        mount = _mount_point(_existing(path))
        if mount in mounts:
            continue
        stats = os.statvfs(mount)
        mounts[mount] = dict(mount=mount, size_total=stats.f_frsize * stats.f_blocks,
                             size_available=stats.f_frsize * stats.f_bavail)
    return [mounts[mount] for mount in sorted(mounts)]


def _read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError):
        return ''


def _os_facts(module):
    """setup's distribution, platform and python facts, ``ansible_``-prefixed as setup returns them."""
    facts = {}
    for collector in (PlatformFactCollector, DistributionFactCollector, PythonFactCollector):
        facts.update(collector().collect(module=module, collected_facts=facts))
    return dict(('ansible_' + name, value) for name, value in facts.items())


def main():
    module = AnsibleModule(
        argument_spec=dict(
            paths=dict(type='list', elements='path', default=[]),
            time_sync_services=dict(type='list', elements='str', default=[]),
            resolve_names=dict(type='list', elements='str', default=[]),
        ),
        supports_check_mode=True,
    )
    params = module.params
    for path in params['paths']:
        if not path.startswith('/'):
            module.fail_json(msg='paths: %r is not an absolute path' % path)

    result = dict(changed=False, ansible_facts=_os_facts(module), mounts=_mounts(params['paths']), swap_devices=parse_proc_swaps(_read('/proc/swaps')),
                  time_sync_services_active=[], clock_synchronized=False)

    services = params['time_sync_services']
    if services:
        # rc 3 (some unit inactive) is an answer, not a failure: one line per unit, in order. Without systemctl,
        # none is active, and the role says so.
        systemctl = module.get_bin_path('systemctl')
        states = []
        if systemctl:
            rc, out, err = module.run_command([systemctl, 'is-active', '--'] + services, environ_update=C_LOCALE)
            states = out.splitlines()
        result['time_sync_services_active'] = [name for name, state in zip(services, states) if state.strip() == 'active']
        timedatectl = module.get_bin_path('timedatectl')
        if timedatectl:
            rc, out, err = module.run_command([timedatectl, 'show', '--property=NTPSynchronized', '--value'],
                                              environ_update=C_LOCALE)
            result['clock_synchronized'] = rc == 0 and out.strip() == 'yes'

    resolved, unresolved, loopback = resolve(params['resolve_names'])
    result.update(resolved=resolved, unresolved=unresolved, loopback=loopback)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
