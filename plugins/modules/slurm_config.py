#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: slurm_config
short_description: Install slurm.conf on a host and say whether its daemons need a restart or a reconfigure
version_added: 0.1.0
description:
  - Writes O(content) to O(path) atomically (a temporary file in the same directory, then a rename), with O(owner),
    O(group) and O(mode), only when the bytes or the attributes differ.
  - Compares the file in place with the new content the way Slurm reads it and returns RV(action) for the daemons of
    this host - V(none), V(reconfigure) (C(scontrol reconfigure) applies it) or V(restart) (it changes what Slurm
    reads only at start-up - authentication, ports, hosts, plugins, state locations, node definitions) - with the
    RV(restart_reasons).
  - The comparison is made on each host against its own file, so a node that missed an earlier change (a run limited
    with C(--limit)) is judged by what it runs with, not by what the controller has.
  - Node definitions need a restart before Slurm 23.11 only. The version is read from the first of O(daemons) found
    on the host (C(slurmd -V)); where none is found, the oldest supported (22.05) is assumed.
  - Supports check mode (says what it would do and writes nothing) and diff mode (the file before and after).
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
  path:
    description:
      - Where slurm.conf goes.
    type: path
    default: /etc/slurm/slurm.conf
  content:
    description:
      - The whole slurm.conf.
    type: str
    required: true
  owner:
    description:
      - Owner of the file.
    type: str
    default: root
  group:
    description:
      - Group of the file.
    type: str
    default: root
  mode:
    description:
      - Mode of the file, octal as a string.
    type: str
    default: '0644'
  daemons:
    description:
      - The Slurm daemons this host runs (V(slurmctld), V(slurmd)); their C(-V) gives the version. Empty for a host
        that runs none (a login node), where RV(action) is only ever V(none) or V(reconfigure).
    type: list
    elements: str
    default: []
requirements:
  - Slurm 22.05 or later where O(daemons) run.
notes:
  - The version command runs as an argv list with C(LANG=C) and C(LC_ALL=C).
seealso:
  - module: ansible.builtin.copy
'''

EXAMPLES = r'''
- name: Write slurm.conf
  aicluster.infra.slurm_config:
    content: "{{ lookup('ansible.builtin.template', 'slurm.conf.j2') }}"
    daemons: "{{ ['slurmd'] if 'slurm_compute' in group_names else [] }}"
  register: slurm_conf_written

- name: Restart slurmd where Slurm needs it (node definitions before 23.11, plugins, ports)
  ansible.builtin.systemd_service:
    name: slurmd
    state: restarted
  when: slurm_conf_written.action == 'restart'
'''

RETURN = r'''
action:
  description:
    - What this host's daemons need to take the new file - V(none) (same bytes), V(reconfigure) or V(restart).
      A file that did not exist gives V(reconfigure) - the daemons start with the new one.
  returned: success
  type: str
  sample: restart
restart_reasons:
  description: Why a restart is needed - the settings Slurm reads only at start-up that changed, and
    V(node definitions) before 23.11. Empty unless RV(action) is V(restart).
  returned: success
  type: list
  elements: str
  sample: [node definitions]
version:
  description: The Slurm version found (C(slurmd -V)), V(null) when no daemon of O(daemons) is installed.
  returned: success
  type: str
  sample: 22.05.8
path:
  description: The file written.
  returned: success
  type: str
  sample: /etc/slurm/slurm.conf
'''

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_text

from ansible_collections.aicluster.infra.plugins.module_utils.atomic_file import write_atomically
from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.slurm_conf import daemon_action, parse_slurm_conf, parse_slurm_version

ENVIRON = {'LANG': 'C', 'LC_ALL': 'C'}
DAEMONS = ('slurmd', 'slurmctld')


def read_version(module, daemons):
    """(version tuple, text) from the first daemon of ``daemons`` found; (None, None) when none is installed."""
    for daemon in daemons:
        binary = module.get_bin_path(daemon)
        if not binary:
            continue
        argv = [binary, '-V']
        rc, out, err = module.run_command(argv, environ_update=ENVIRON)
        version = parse_slurm_version(out) if rc == 0 else None
        if version is None:
            module.fail_json(msg='%s -V printed no Slurm version (rc=%d)' % (daemon, rc), cmd=argv, rc=rc, stdout=out, stderr=err)
        return version, '.'.join('%02d' % part if index == 1 else str(part) for index, part in enumerate(version))
    return None, None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type='path', default='/etc/slurm/slurm.conf'),
            content=dict(type='str', required=True),
            owner=dict(type='str', default='root'),
            group=dict(type='str', default='root'),
            mode=dict(type='str', default='0644'),
            daemons=dict(type='list', elements='str', default=[]),
        ),
        supports_check_mode=True,
    )
    params = module.params
    bad = [daemon for daemon in params['daemons'] if daemon not in DAEMONS]
    if bad:
        module.fail_json(msg='daemons: %s not one of %s' % (', '.join(bad), ', '.join(DAEMONS)))
    path = params['path']
    new = params['content']
    old = None
    if os.path.exists(path):
        try:
            with open(path, 'rb') as handle:
                old = to_text(handle.read(), errors='surrogate_or_strict')
        except (IOError, OSError) as exc:
            module.fail_json(msg='cannot read %s: %s' % (path, exc))

    try:
        parse_slurm_conf(new)
    except ParseError as exc:
        module.fail_json(msg='the new slurm.conf does not parse (%s); %s is left as it is' % (exc, path))
    version, version_text = read_version(module, params['daemons'])
    try:
        action, reasons = daemon_action(old or '', new, version)
    except ParseError as exc:
        # a hand edit that broke the file in place: replaced, and whatever runs restarts on the good one
        action, reasons = 'restart', ['the file in place does not parse (%s)' % exc]
    if action != 'none' and (old is None or not params['daemons']):
        # no daemon runs with an older file here: it starts with the new one, or there is none to restart
        action, reasons = 'reconfigure', []

    result = dict(changed=False, path=path, action=action, restart_reasons=reasons, version=version_text)
    file_args = module.load_file_common_arguments(dict(path=path, owner=params['owner'], group=params['group'],
                                                       mode=params['mode']))
    if action != 'none':
        result['changed'] = True
        if not module.check_mode:
            directory = os.path.dirname(path) or '.'
            write_atomically(module, path, to_bytes(new, errors='surrogate_or_strict'), file_args)
    # attributes alone (same bytes): fixed in place, no daemon needs anything
    if os.path.exists(path):
        result['changed'] = module.set_fs_attributes_if_different(file_args, result['changed'])
    if module._diff:
        result['diff'] = {'before': old or '', 'after': new, 'before_header': path, 'after_header': path}
    module.exit_json(**result)


if __name__ == '__main__':
    main()
