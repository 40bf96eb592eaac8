#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: opensm_config
short_description: Write an OpenSM instance's opensm.conf or the partitions.conf, checked before it replaces the old one
version_added: 0.1.0
description:
  - V(opensm.conf) (O(kind)) - the installed binary's own defaults (C(opensm --create-config)) with only the settings
    of O(settings) and O(secrets) changed; an option this build does not have, an unknown routing engine or a bad
    value is refused before anything is written. The new file is read back by the same binary
    (C(opensm -F new -c readback)) and must give every owned setting as rendered, or the old file stays.
  - V(partitions.conf) - rendered from O(partitions) (OpenSM's grammar, IBTA MTU and rate codes from bytes and Gb/s),
    parsed back and compared with O(partitions) before it replaces the old file.
  - V(partitions.conf.user_ext) - UFM's user partitions file, rendered and checked as V(partitions.conf), but without
    the default partition (P_Key 0x7fff is refused - UFM defines it itself) and possibly with no partition at all.
  - Written atomically (a temporary file in the same directory, then a rename), only when the bytes or the attributes
    differ. RV(changes) names what differs in the file in place, so a hand edit is named in a drift run.
  - The secrets (C(m_key), C(sm_key)) are in the file and nowhere else - masked in RV(changes) and in the diff.
  - Supports check mode (writes nothing) and diff mode.
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
  kind:
    description: Which file.
    type: str
    choices: [opensm.conf, partitions.conf, partitions.conf.user_ext]
    required: true
  path:
    description: Where the file goes.
    type: path
    required: true
  settings:
    description:
      - For V(opensm.conf) - the opensm.conf keys this collection owns and their values (C(guid), C(sm_priority),
        C(sweep_interval), C(routing_engine) as a list, C(root_guid_file), C(log_file), C(log_max_size),
        C(partition_config_file), C(qos) and C(qos_*)); a value of V(null) keeps the build's default.
    type: dict
    default: {}
  secrets:
    description: For V(opensm.conf) - C(m_key) and C(sm_key) (64-bit, hexadecimal), when the site sets them.
    type: dict
    default: {}
  partitions:
    description:
      - For V(partitions.conf) and V(partitions.conf.user_ext) - the partitions (docs/fabric.md, C(opensm_partitions)).
    type: list
    elements: dict
    default: []
  header:
    description: Comment lines put first in the file.
    type: list
    elements: str
    default: []
  opensm:
    description: The OpenSM binary whose defaults and parser are used (V(opensm.conf) only).
    type: path
    default: /usr/sbin/opensm
  flavour:
    description: Which routing-engine table applies when the build's defaults do not list its engines.
    type: str
    choices: [upstream, nvidia]
    default: upstream
  mode:
    description: Mode of the file, octal as a string (V(0600) - opensm.conf may hold the keys).
    type: str
    default: '0600'
notes:
  - The OpenSM commands run as argv lists with C(LANG=C) and C(LC_ALL=C), in a temporary directory removed after.
seealso:
  - name: opensm(8) and partition-config.txt
    description: OpenSM's options and the partition file's grammar.
    link: https://github.com/linux-rdma/opensm/blob/master/doc/partition-config.txt
'''

EXAMPLES = r'''
- name: Write the SM instance's opensm.conf
  aicluster.infra.opensm_config:
    kind: opensm.conf
    path: /etc/opensm/aicluster/opensm-0xa088c20300001001.conf
    settings: {guid: "0xa088c20300001001", sm_priority: 15, routing_engine: [ftree, updn, minhop]}
  register: opensm_conf

- name: Write partitions.conf
  aicluster.infra.opensm_config:
    kind: partitions.conf
    path: /etc/opensm/aicluster/partitions.conf
    partitions:
      - {name: Default, pkey: "0x7fff", ipoib: true, mtu: 4096, rate: 400, members: [{guid: ALL, membership: full}]}

- name: Write UFM's user partitions (no default partition; UFM merges them into its own partitions.conf)
  aicluster.infra.opensm_config:
    kind: partitions.conf.user_ext
    path: /opt/ufm/files/conf/partitions.conf.user_ext
    mode: "0644"
    partitions:
      - {name: tenant-a, pkey: "0x0101", ipoib: true, mtu: 4096, members: [{guid: "0xa088c20300002001", membership: full}]}
'''

RETURN = r'''
changes:
  description: What differs between the file in place and the new one - opensm.conf options (secrets masked) or
    partitions; empty when nothing does.
  returned: success
  type: list
  elements: str
  sample: ["sm_priority: 0 -> 15"]
path:
  description: The file.
  returned: success
  type: str
  sample: /etc/opensm/aicluster/partitions.conf
'''

import os
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_text

from ansible_collections.aicluster.infra.plugins.module_utils import ib_partitions, opensm_conf
from ansible_collections.aicluster.infra.plugins.module_utils.atomic_file import write_atomically
from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError

ENVIRON = {'LANG': 'C', 'LC_ALL': 'C'}


def run(module, argv, what):
    rc, out, err = module.run_command(argv, environ_update=ENVIRON)
    if rc != 0:
        module.fail_json(msg='%s failed (rc=%d)' % (what, rc), cmd=argv, rc=rc, stdout=out, stderr=err)
    return out


def read_text(path):
    with open(path, 'rb') as handle:
        return to_text(handle.read(), errors='surrogate_or_strict')


def masked_text(text):
    """The text with the values of the secret keys replaced (for the diff)."""
    lines = []
    for line in text.splitlines():
        words = line.split(None, 1)
        lines.append('%s %s' % (words[0], opensm_conf.MASK) if words and words[0] in opensm_conf.SECRET_KEYS else line)
    return '\n'.join(lines) + ('\n' if text.endswith('\n') else '')


def render_conf(module, work, params):
    """(new text, changes against ``old``) for opensm.conf; fails the module on a problem or a bad read-back."""
    binary = params['opensm']
    defaults_path = os.path.join(work, 'defaults.conf')
    run(module, [binary, '--create-config', defaults_path], 'opensm --create-config (the build\'s defaults)')
    defaults = read_text(defaults_path)
    settings = dict(params['settings'])
    settings.update(dict((key, value) for key, value in params['secrets'].items() if value not in (None, '')))
    problems = opensm_conf.opensm_conf_problems(settings, defaults, params['flavour'])
    if problems:
        module.fail_json(msg='opensm: invalid settings, nothing written: ' + '; '.join(problems), problems=problems)
    text = opensm_conf.render_opensm_conf(defaults, settings, params['flavour'], header=params['header'])
    new_path, back_path = os.path.join(work, 'new.conf'), os.path.join(work, 'readback.conf')
    with open(new_path, 'wb') as handle:
        handle.write(to_bytes(text))
    run(module, [binary, '-F', new_path, '-c', back_path], 'opensm reading the new opensm.conf back')
    back = opensm_conf.parse_opensm_conf(read_text(back_path))
    rendered = opensm_conf.parse_opensm_conf(text)
    wrong = sorted(key for key, value in settings.items()
                   if not opensm_conf.unset(key, value) and back.get(key) != rendered.get(key))
    if wrong:
        module.fail_json(msg='opensm read the new opensm.conf back with other values for %s; %s is left as it is'
                         % (', '.join(wrong), params['path']))
    return text


def conf_changes(old, new):
    if old is None:
        return ['%s is absent' % 'opensm.conf']
    return ['%s: %s -> %s' % (item['key'], item['before'], item['after']) for item in opensm_conf.opensm_conf_diff(old, new)]


def render_partitions(module, params):
    render = (ib_partitions.render_user_ext if params['kind'] == 'partitions.conf.user_ext'
              else ib_partitions.render_partitions_conf)
    try:
        text = render(params['partitions'], header=params['header'])
    except ValueError as exc:
        problems = str(exc).splitlines()
        module.fail_json(msg='opensm_partitions: invalid, nothing written: ' + '; '.join(problems), problems=problems)
    back = ib_partitions.partitions_conf_diff(params['partitions'], text)
    if back:
        module.fail_json(msg='the rendered %s does not parse back to opensm_partitions (%s); %s is left as it is'
                         % (params['kind'], '; '.join(back), params['path']))
    return text


def main():
    module = AnsibleModule(
        argument_spec=dict(
            kind=dict(type='str', required=True, choices=['opensm.conf', 'partitions.conf', 'partitions.conf.user_ext']),
            path=dict(type='path', required=True),
            settings=dict(type='dict', default={}),
            secrets=dict(type='dict', default={}, no_log=True),
            partitions=dict(type='list', elements='dict', default=[]),
            header=dict(type='list', elements='str', default=[]),
            opensm=dict(type='path', default='/usr/sbin/opensm'),
            flavour=dict(type='str', default='upstream', choices=['upstream', 'nvidia']),
            mode=dict(type='str', default='0600'),
        ),
        supports_check_mode=True,
    )
    params = module.params
    path = params['path']
    old = read_text(path) if os.path.exists(path) else None
    work = tempfile.mkdtemp(prefix='aicluster-opensm.')
    try:
        if params['kind'] == 'opensm.conf':
            new = render_conf(module, work, params)
            changes = conf_changes(old, new) if old != new else []
        else:
            new = render_partitions(module, params)
            changes = [] if old == new else (['%s is absent' % params['kind']] if old is None
                                             else ib_partitions.partitions_conf_diff(params['partitions'], old))
    except ParseError as exc:
        module.fail_json(msg='%s: %s' % (params['kind'], exc))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if old != new and not changes:
        changes = ['comments or layout differ']
    result = dict(changed=old != new, path=path, changes=changes)
    file_args = module.load_file_common_arguments(dict(path=path, owner='root', group='root', mode=params['mode']))
    if old != new and not module.check_mode:
        directory = os.path.dirname(path) or '.'
        if not os.path.isdir(directory):
            os.makedirs(directory, 0o755)
        write_atomically(module, path, to_bytes(new, errors='surrogate_or_strict'), file_args)
    if os.path.exists(path):
        result['changed'] = module.set_fs_attributes_if_different(file_args, result['changed'])
    if module._diff:
        show = masked_text if params['kind'] == 'opensm.conf' else (lambda text: text)
        result['diff'] = {'before': show(old or ''), 'after': show(new), 'before_header': path, 'after_header': path}
    module.exit_json(**result)


if __name__ == '__main__':
    main()
