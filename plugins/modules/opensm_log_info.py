#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: opensm_log_info
short_description: Read what an OpenSM instance did from its log, since it last started
version_added: 0.1.0
description:
  - Reads the end of one OpenSM instance's log file, keeps the part written since the SM last started (OpenSM
    appends to its log by default), and returns its state, the routing engine it configured the switches with,
    and the problems the opensm role fails on.
  - Problems, one line each, are a C(partitions.conf) line OpenSM could not parse (it then serves the partitions
    it could parse, the default one at least), a master routing with another engine than the first of O(engines)
    (C(ftree) falls back to C(minhop) silently on a topology that is not a pure fat tree or after a link failure),
    and no routing engine able to configure the switches.
  - RV(settled) says whether the SM has settled, STANDBY or MASTER after its first C(SUBNET UP); a caller waits for
    it with C(until).
  - With O(flush_unit), the SM is first asked to flush its log. OpenSM writes its log through stdio and flushes it
    only after an ERROR or SYS line (libopensm/osm_log.c; C(force_log_flush) off by default), and C(SUBNET UP) is
    an INFO line in OpenSM 3.3.23 (C(0x02 -> SUBNET UP) in the lab) and in NVIDIA's OpenSM 5.21. On a quiet
    fabric it stays in the buffer, so a settled master looks unsettled. C(SIGUSR1) makes OpenSM reopen its log
    (opensm/main.c osm_manager_loop() -> osm_log_reopen_file() closes the file, which flushes it, and opens it
    for append; what logrotate sends), and nothing else.
author: aicluster.infra contributors (@aicluster)
extends_documentation_fragment:
  - aicluster.infra.attributes
  - aicluster.infra.attributes.info_module
  - aicluster.infra.attributes.platform
options:
  path:
    description:
      - The instance's log file (its C(log_file) in C(opensm.conf)).
    type: path
    required: true
  engines:
    description:
      - The configured routing engines, in order (C(routing_engine) in C(opensm.conf)). Empty, the build's default
        is not checked.
    type: list
    elements: str
    default: []
  require_settled:
    description:
      - Count an SM that has not settled (RV(settled)) as a problem (the last read of a wait with C(until)).
    type: bool
    default: false
  since_bytes:
    description:
      - The log's size before the caller reloaded or restarted the SM. Only C(partitions.conf) errors written since
        count. V(0) - those of the last completed heavy sweep and what follows it (OpenSM parses C(partitions.conf)
        again in every heavy sweep).
      - Settled is judged on the SM's run since it started (a restart starts a new run), so a reload cannot be
        waited for.
    type: int
    default: 0
  flush_unit:
    description:
      - The SM's systemd unit. Before the log is read, its main process gets C(SIGUSR1) (C(systemctl kill
        --kill-whom=main --signal=SIGUSR1)), which flushes what OpenSM has buffered, and the read waits
        O(flush_wait_ms) for it. A unit that does not run is not signalled (RV(flushed) false). Not sent in check mode.
    type: str
  flush_wait_ms:
    description:
      - How long to wait after C(SIGUSR1) before reading. OpenSM's main thread handles the signal when it wakes, at
        once (the signal interrupts its sleep).
    type: int
    default: 500
  tail_bytes:
    description:
      - How much of the end of the file is read. An SM that started before it is read from where the tail starts.
    type: int
    default: 4194304
notes:
  - Only the log file is read; with O(flush_unit) the unit's main process is signalled (SIGUSR1), nothing else.
seealso:
  - module: aicluster.infra.opensm_config
'''

EXAMPLES = r'''
- name: Wait until the SM has settled, then read its routing engine
  aicluster.infra.opensm_log_info:
    path: /var/log/opensm-0x0002c90300a1b2c1.log
    engines: [ftree, minhop]
    flush_unit: aicluster-opensm@0x0002c90300a1b2c1.service
  register: sm_log
  until: sm_log.settled
  retries: 12
  delay: 5
'''

RETURN = r'''
exists:
  description: Whether the log file exists.
  returned: always
  type: bool
settled:
  description: The SM is STANDBY, or MASTER after a C(SUBNET UP) since it started.
  returned: always
  type: bool
state:
  description: The last state the SM entered (C(DISCOVERING), C(STANDBY), C(MASTER), C(NOTACTIVE)), or null.
  returned: always
  type: str
  sample: MASTER
routing_engine:
  description: The engine of the last C(tables configured on all switches) line, or null.
  returned: always
  type: str
  sample: ftree
version:
  description: The OpenSM version of the banner.
  returned: always
  type: str
  sample: 3.3.23
subnet_up:
  description: How many C(SUBNET UP) lines since the SM started.
  returned: always
  type: int
flushed:
  description: Whether the SM was sent C(SIGUSR1) to flush its log before the read (O(flush_unit)).
  returned: always
  type: bool
problems:
  description: One line per problem (above); empty when the SM is as configured.
  returned: always
  type: list
  elements: str
'''

import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.opensm_log import (
    current_run, last_sweep, parse_opensm_log, sm_log_findings)


def _tail(path, size, since):
    """(the last ``size`` bytes, the text from byte ``since`` or None when not given or past the end: rotated)."""
    with open(path, 'rb') as handle:
        handle.seek(0, os.SEEK_END)
        end = handle.tell()
        handle.seek(max(0, end - size))
        data = handle.read()
        recent = None
        if 0 < since <= end:
            handle.seek(since)
            recent = handle.read().decode('utf-8', errors='replace')
    text = data.decode('utf-8', errors='replace')
    return (text.split('\n', 1)[1] if end > size and '\n' in text else text), recent  # drop a cut first line


def _flush(module, unit):
    """SIGUSR1 to the unit's main process: OpenSM closes (flushing) and reopens its log. False when it did not run."""
    systemctl = module.get_bin_path('systemctl') if unit and not module.check_mode else None
    if not systemctl:
        return False
    rc, dummy, dummy = module.run_command([systemctl, 'kill', '--kill-whom=main', '--signal=SIGUSR1', unit],
                                          environ_update={'LANG': 'C', 'LC_ALL': 'C'})
    if rc != 0:
        return False
    time.sleep(max(0, module.params['flush_wait_ms']) / 1000.0)
    return True


def _parse(text):
    try:
        return parse_opensm_log(text)
    except ParseError:
        return None


def main():
    module = AnsibleModule(argument_spec=dict(path=dict(type='path', required=True),
                                              engines=dict(type='list', elements='str', default=[]),
                                              require_settled=dict(type='bool', default=False),
                                              since_bytes=dict(type='int', default=0),
                                              tail_bytes=dict(type='int', default=4 * 1024 * 1024),
                                              flush_unit=dict(type='str'),
                                              flush_wait_ms=dict(type='int', default=500)),
                           supports_check_mode=True)
    path = module.params['path']
    required = module.params['require_settled']
    flushed = _flush(module, module.params['flush_unit'])

    def unsettled(exists, why):
        return {'changed': False, 'exists': exists, 'settled': False, 'state': None, 'routing_engine': None,
                'version': None, 'subnet_up': 0, 'flushed': flushed,
                'problems': ['%s: %s' % (path, why)] if required else []}
    if not os.path.exists(path):
        module.exit_json(**unsettled(False, 'no log: the SM has not started, or logs elsewhere'))
    try:
        tail, recent = _tail(path, max(4096, module.params['tail_bytes']), module.params['since_bytes'])
    except (IOError, OSError) as exc:
        module.fail_json(msg='cannot read %s: %s' % (path, exc))
    text = current_run(tail)
    parsed = _parse(text)
    if parsed is None:
        module.exit_json(**unsettled(True, 'no OpenSM log line yet: the SM has not started'))
    recent = _parse(recent if recent is not None else last_sweep(text)) or {}
    found = sm_log_findings(parsed, module.params['engines'], recent)
    if module.params['require_settled'] and not found['settled']:
        found['problems'].insert(0, 'not settled: its last state is %s and it logged no SUBNET UP since it started '
                                    '(no master SM, or a heavy sweep that never completed)' % (found['state'] or 'none'))
    module.exit_json(changed=False, exists=True, settled=found['settled'], state=found['state'],
                     routing_engine=found['routing_engine'], version=parsed['version'],
                     subnet_up=parsed['subnet_up'], flushed=flushed, problems=found['problems'])


if __name__ == '__main__':
    main()
