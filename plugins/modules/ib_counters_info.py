#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: ib_counters_info
short_description: Read the link-quality counters and BER of InfiniBand and RoCE ports
version_added: 0.1.0
description:
  - For each port of O(hcas), reads what shows a marginal link, without changing anything.
  - On InfiniBand ports, C(perfquery -x -C HCA -P PORT) gives the port's error counters (SymbolErrorCounter,
    LinkErrorRecoveryCounter, LinkDownedCounter, PortRcvErrors and the others); when the extended counters carry no
    error counters, the basic C(perfquery -C HCA -P PORT) is read as well.
  - With O(ber), C(mlxlink -d HCA -p PORT -c) gives the effective (post-FEC), raw and symbol bit error ratios.
  - On Ethernet (RoCE) ports with O(roce), C(ethtool -S NETDEV) gives the priority discards, pause and physical
    error counters, and C(rdma statistic show link HCA/PORT) the RDMA hw_counters (out_of_sequence, np_cnp_sent);
    without C(rdma) the same counters are read from C(/sys/class/infiniband/HCA/ports/PORT/hw_counters).
  - A tool that is not installed (C(mlxlink) comes with MFT, which many nodes lack) is named in each port's
    RV(ports[].missing); the module never fails for it, so the caller can report the reading as not made.
author: aicluster.infra contributors (@aicluster)
extends_documentation_fragment:
  - aicluster.infra.attributes
  - aicluster.infra.attributes.info_module
  - aicluster.infra.attributes.platform
options:
  hcas:
    description: The RDMA devices to read, for example V(mlx5_0).
    type: list
    elements: str
    required: true
  port:
    description: The port number of each device.
    type: int
    default: 1
  link_layer:
    description: The link layer of the ports; V(Ethernet) reads the RoCE counters instead of C(perfquery).
    type: str
    choices: [InfiniBand, Ethernet]
    default: InfiniBand
  ber:
    description: Read the bit error ratios with C(mlxlink -c).
    type: bool
    default: true
  roce:
    description: On Ethernet ports, read C(ethtool -S) and the RDMA hw_counters.
    type: bool
    default: true
requirements:
  - C(perfquery) from infiniband-diags (rdma-core) for InfiniBand ports.
  - Optional C(mlxlink) from NVIDIA MFT (or mstflint) for the bit error ratios.
  - C(ethtool) and optionally C(rdma) (iproute2) for RoCE ports.
notes:
  - All tools run with C(LANG=C) and C(LC_ALL=C).
  - Counters are read, never reset. A caller judges their rise between two reads, not their value since the driver loaded.
seealso:
  - module: aicluster.infra.ib_info
'''

EXAMPLES = r'''
- name: Read the GPU-fabric ports' counters before the bandwidth tests
  aicluster.infra.ib_counters_info:
    hcas: [mlx5_0, mlx5_3, mlx5_4, mlx5_5]
  register: before

- name: RoCE ports without the BER read
  aicluster.infra.ib_counters_info:
    hcas: [mlx5_0, mlx5_1]
    link_layer: Ethernet
    ber: false
'''

RETURN = r'''
ports:
  description: One entry per device of O(hcas), in that order.
  returned: success
  type: list
  elements: dict
  contains:
    hca:
      description: Device name.
      type: str
      sample: mlx5_3
    port:
      description: Port number.
      type: int
      sample: 1
    link_layer:
      description: The link layer the port was read as.
      type: str
      sample: InfiniBand
    netdev:
      description: The RoCE netdev (Ethernet ports; V(null) when unknown or on InfiniBand).
      type: str
      sample: enp24s0np0
    counters:
      description:
        - Error and traffic counters by name; perfquery names on InfiniBand, C(ethtool -S) and hw_counters names on
          Ethernet. Empty when nothing could be read.
      type: dict
      sample: {SymbolErrorCounter: 0, LinkErrorRecoveryCounter: 0, LinkDownedCounter: 1, PortRcvErrors: 0}
    lid:
      description: The port's LID as perfquery printed it (V(null) on Ethernet).
      type: int
      sample: 204
    ber:
      description:
        - From C(mlxlink -c), V(effective_ber), V(raw_ber), V(symbol_ber) (floats; mlxlink's 15E-255, no error
          counted, reads 0.0), V(effective_errors), V(symbol_errors), V(link_down), V(link_error_recovery). Empty when not read.
      type: dict
      sample: {effective_ber: 0.0, raw_ber: 2.0e-10, effective_errors: 0}
    saturating:
      description:
        - The error counters came from the basic PortCounters (the port's extended counters carry none), which stop at
          their 4 to 16 bits (SymbolErrorCounter at 65535) instead of rising.
      type: bool
      sample: false
    missing:
      description: The tools that are not installed, so their part was not read.
      type: list
      elements: str
      sample: [mlxlink]
    errors:
      description: What failed, each with the command, its exit status and what it printed.
      type: list
      elements: str
      sample: ["perfquery -x -C mlx5_3 -P 1: rc=255: ibwarn: ... can't open UMAD port"]
'''

import os
import threading

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils import ib_counters

C_LOCALE = {'LANG': 'C', 'LC_ALL': 'C'}
SYSFS = '/sys/class/infiniband'


class Reader(object):
    """Runs one tool and parses it, keeping what failed in the port's errors."""

    def __init__(self, module):
        self.module = module
        self.paths = {}

    def path(self, tool):
        if tool not in self.paths:
            self.paths[tool] = self.module.get_bin_path(tool, required=False)
        return self.paths[tool]

    def read(self, tool, args, parser, entry):
        path = self.path(tool)
        if not path:
            if tool not in entry['missing']:
                entry['missing'].append(tool)
            return None
        argv = [path] + list(args)
        rc, out, err = self.module.run_command(argv, environ_update=C_LOCALE)
        text = ' '.join([tool] + list(args))
        if rc != 0:
            entry['errors'].append('%s: rc=%d: %s' % (text, rc, ((err or '') + (out or '')).strip()[:300]))
            return None
        try:
            return parser(out or '')
        except ParseError as exc:
            entry['errors'].append('%s: printed output that could not be parsed: %s' % (text, exc))
            return None


def _sysfs_counters(hca, port, entry):
    """The RDMA hw_counters from sysfs (without rdma(8)); {} when the directory is not there."""
    directory = os.path.join(SYSFS, hca, 'ports', str(port), 'hw_counters')
    out = {}
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        entry['errors'].append('%s: not readable' % directory)
        return out
    for name in names:
        try:
            with open(os.path.join(directory, name)) as handle:
                out[name] = int(handle.read().strip())
        except (OSError, ValueError):
            continue
    return out


def _sysfs_netdev(hca, port):
    try:
        with open(os.path.join(SYSFS, hca, 'ports', str(port), 'gid_attrs', 'ndevs', '0')) as handle:
            return handle.read().strip() or None
    except (OSError, ValueError):
        return None


def read_infiniband(reader, hca, port, entry):
    extended = reader.read('perfquery', ['-x', '-C', hca, '-P', str(port)], ib_counters.parse_perfquery, entry)
    if extended is not None:
        entry['counters'].update(extended['counters'])
        entry['lid'] = extended['lid']
    if extended is None or not extended['has_errors']:
        basic = reader.read('perfquery', ['-C', hca, '-P', str(port)], ib_counters.parse_perfquery, entry)
        if basic is not None:
            for name in ib_counters.PERFQUERY_ERRORS:
                if name in basic['counters']:
                    entry['counters'][name] = basic['counters'][name]
            entry['lid'] = entry['lid'] if entry['lid'] is not None else basic['lid']
            entry['saturating'] = True


def read_ethernet(reader, hca, port, entry):
    key = '%s/%d' % (hca, port)
    if reader.path('rdma'):
        links = reader.read('rdma', ['link', 'show', key], ib_counters.parse_rdma_link, entry) or {}
        entry['netdev'] = (links.get(key) or {}).get('netdev')
        stats = reader.read('rdma', ['statistic', 'show', 'link', key], ib_counters.parse_rdma_statistic, entry) or {}
        entry['counters'].update(stats.get(key) or {})
    else:
        entry['netdev'] = _sysfs_netdev(hca, port)
        entry['counters'].update(_sysfs_counters(hca, port, entry))
    if entry['netdev']:
        stats = reader.read('ethtool', ['-S', entry['netdev']], ib_counters.parse_ethtool_stats, entry)
        entry['counters'].update(stats or {})
    else:
        entry['errors'].append('%s: no netdev found for the RoCE counters (ethtool -S)' % key)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            hcas=dict(type='list', elements='str', required=True),
            port=dict(type='int', default=1),
            link_layer=dict(type='str', default='InfiniBand', choices=['InfiniBand', 'Ethernet']),
            ber=dict(type='bool', default=True),
            roce=dict(type='bool', default=True),
        ),
        supports_check_mode=True,
    )
    params = module.params
    reader = Reader(module)
    for tool in ('perfquery', 'mlxlink', 'rdma', 'ethtool'):
        reader.path(tool)  # looked up once, before the threads
    ports = [{'hca': hca, 'port': params['port'], 'link_layer': params['link_layer'], 'netdev': None, 'lid': None,
              'counters': {}, 'ber': {}, 'missing': [], 'errors': [], 'saturating': False} for hca in params['hcas']]

    def read_port(entry):
        if params['link_layer'] == 'InfiniBand':
            read_infiniband(reader, entry['hca'], params['port'], entry)
        elif params['roce']:
            read_ethernet(reader, entry['hca'], params['port'], entry)
        if params['ber']:
            parsed = reader.read('mlxlink', ['-d', entry['hca'], '-p', str(params['port']), '-c'], ib_counters.parse_mlxlink, entry)
            entry['ber'] = (parsed or {}).get('ber') or {}

    # One thread per port: mlxlink can take seconds per port on real adapters, and the second read comes
    # right after the tests, so its figures should be close together in time. Each thread writes only its entry.
    threads = [threading.Thread(target=read_port, args=(entry,)) for entry in ports]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    module.exit_json(changed=False, ports=ports)


if __name__ == '__main__':
    main()
