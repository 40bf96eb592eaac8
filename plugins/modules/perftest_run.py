#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: perftest_run
short_description: Run one node's perftest servers and clients of a round, all at once, in one command
version_added: 0.1.0
description:
  - Starts every server of O(servers) at once, then every client of O(clients) at once, each in its own process,
    and waits for all of them. One call per node and round replaces one task item per rail and side.
  - A client whose server is not listening yet (perftest prints C(Couldn't connect to HOST:PORT)) is started again
    every half second for up to O(connect_wait_s) seconds, so every node of a round can start its call at the same
    time without waiting for its partners' servers.
  - Each argv should bound its own run time (for example C(timeout 60 ib_write_bw ...)); the module does not kill.
  - An active measurement, so nothing runs in check mode; every process is then reported with C(rc) V(null).
author: aicluster.infra contributors (@aicluster)
extends_documentation_fragment:
  - aicluster.infra.attributes
  - aicluster.infra.attributes.platform
attributes:
  check_mode:
    support: full
    details: Nothing runs in check mode.
  diff_mode:
    support: none
options:
  servers:
    description:
      - The servers to start, each C(argv) (a list, run without a shell) and C(data) (returned untouched).
    type: list
    elements: dict
    default: []
  clients:
    description:
      - The clients to start once the servers are started, each C(argv) and C(data) as in O(servers).
    type: list
    elements: dict
    default: []
  connect_wait_s:
    description:
      - Seconds a client is retried while its server does not listen yet.
    type: int
    default: 10
requirements:
  - perftest (C(ib_write_bw) and friends) on the target.
notes:
  - Every process runs with C(LANG=C) and C(LC_ALL=C).
'''

EXAMPLES = r'''
- name: Rail 0 of a round on this node, as server for one partner and client of another
  aicluster.infra.perftest_run:
    servers:
      - argv: [timeout, "70", ib_write_bw, -d, mlx5_0, -p, "18515", --report_gbits, -q, "2"]
        data: {client: gpu02, rail: 0}
    clients:
      - argv: [timeout, "60", ib_write_bw, -d, mlx5_0, -p, "18515", --report_gbits, -q, "2", gpu03]
        data: {server: gpu03, rail: 0}
    connect_wait_s: 10
  async: 100
  poll: 0
  register: perftest_job
'''

RETURN = r'''
servers:
  description: One entry per O(servers) item, in order.
  returned: always
  type: list
  elements: dict
  contains:
    argv:
      description: The command run.
      type: list
      elements: str
    data:
      description: The item's C(data), untouched.
      type: raw
    rc:
      description: Exit status; V(null) in check mode or when the command could not start.
      type: int
    stdout:
      description: Standard output.
      type: str
    stderr:
      description: Standard error (or why the command could not start).
      type: str
  sample:
    - {argv: [ib_write_bw, -d, mlx5_0], data: {rail: 0}, rc: 0, stdout: "...", stderr: ""}
clients:
  description: One entry per O(clients) item, in order, with the keys of RV(servers) and C(attempts).
  returned: always
  type: list
  elements: dict
  sample:
    - {argv: [ib_write_bw, -d, mlx5_0, gpu03], data: {rail: 0}, rc: 0, stdout: "...", stderr: "", attempts: 1}
'''

import re
import threading
import time

from ansible.module_utils.basic import AnsibleModule

C_LOCALE = {'LANG': 'C', 'LC_ALL': 'C'}
# perftest's client when nobody listens yet (ethernet_client_connect()).
NOT_LISTENING_RE = re.compile(r"Couldn'?t connect to \S+")
RETRY_DELAY_S = 0.5


def _entry(item, rc=None, stdout='', stderr=''):
    return {'argv': list(item.get('argv') or []), 'data': item.get('data'), 'rc': rc, 'stdout': stdout, 'stderr': stderr}


def run_round(runner, servers, clients, connect_wait_s, clock=time.monotonic, sleep=time.sleep):
    """Run ``servers`` and then ``clients`` concurrently; ``runner(argv)`` -> (rc, stdout, stderr) runs one process.

    A client that failed because its server was not listening is run again
    until ``connect_wait_s`` seconds after the start. Returns (servers, clients)
    result lists in the order given.
    """
    started = clock()
    server_out = [None] * len(servers)
    client_out = [None] * len(clients)

    def serve(index, item):
        server_out[index] = _entry(item, *runner(item['argv']))

    def connect(index, item):
        attempts = 0
        while True:
            attempts += 1
            rc, out, err = runner(item['argv'])
            waiting = rc != 0 and NOT_LISTENING_RE.search((out or '') + (err or '')) is not None
            if not waiting or clock() - started >= connect_wait_s:
                break
            sleep(RETRY_DELAY_S)
        client_out[index] = dict(_entry(item, rc, out, err), attempts=attempts)

    threads = [threading.Thread(target=serve, args=(i, item)) for i, item in enumerate(servers)]
    for thread in threads:
        thread.start()
    clients_threads = [threading.Thread(target=connect, args=(i, item)) for i, item in enumerate(clients)]
    for thread in clients_threads:
        thread.start()
    for thread in clients_threads + threads:
        thread.join()
    return server_out, client_out


def main():
    module = AnsibleModule(
        argument_spec=dict(
            servers=dict(type='list', elements='dict', default=[]),
            clients=dict(type='list', elements='dict', default=[]),
            connect_wait_s=dict(type='int', default=10),
        ),
        supports_check_mode=True,
    )
    servers, clients = module.params['servers'], module.params['clients']
    for item in servers + clients:
        argv = item.get('argv')
        if not isinstance(argv, list) or not argv or not all(isinstance(arg, str) for arg in argv):
            module.fail_json(msg='every server and client needs argv, a non-empty list of strings; got %r' % (argv,))
    if module.check_mode:
        module.exit_json(changed=False, servers=[_entry(item) for item in servers],
                         clients=[dict(_entry(item), attempts=0) for item in clients], msg='check mode: nothing run')

    def runner(argv):
        try:
            rc, out, err = module.run_command(argv, environ_update=C_LOCALE, handle_exceptions=False)
        except (OSError, ValueError) as exc:  # a missing tool: that process fails, the others still run
            return None, '', str(exc)
        return rc, out or '', err or ''

    server_out, client_out = run_round(runner, servers, clients, module.params['connect_wait_s'])
    module.exit_json(changed=False, servers=server_out, clients=client_out)


if __name__ == '__main__':
    main()
