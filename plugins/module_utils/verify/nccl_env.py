# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Check nccl.env: what NCCL itself says (NCCL_DEBUG=INFO, subsystems INIT,NET) about each node's network in the
multi-node run, against the node's expected GPU fabric.

A node passes when NCCL used its IB transport (``NET/IB``, not ``NET/Socket``) with exactly the node's expected
devices (``name:port``), GPU Direct RDMA enabled on each, and, on RoCE, every GID index its connections used is a
RoCE v2 GID carrying an IPv4 address in the node's GID table (ib_info). The expected devices are what
``NCCL_IB_HCA`` selects among the node's Active ports, the variable read as NCCL reads it (the run's environment
first, then the node's /etc/nccl.conf, module_utils/nccl_conf.py ``parse_conf``); without the variable, the node's
GPU-fabric HCAs that verify_ib checked (``verify_ib_hcas``), as NCCL would otherwise take every RDMA device, the
storage NIC too. NCCL_IB_HCA's matching is NCCL's (src/misc/utils.cc parseStringList/matchIfList): a comma list of
``name[:port]``, ``^`` excludes, ``=`` asks for exact names, otherwise names are prefixes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import binascii

from ansible_collections.aicluster.infra.plugins.module_utils.cluster_math import _is_active
from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.nccl_conf import parse_conf
from ansible_collections.aicluster.infra.plugins.module_utils.nccl_debug import parse_nccl_debug
from ansible_collections.aicluster.infra.plugins.module_utils.verify.results import new_result

CHECK = 'nccl.env'


def hca_spec(value):
    """NCCL_IB_HCA -> (exclude, exact, [(name, port or None)]), or None when unset or empty (every device). hwsim's
    nccl stand-in parses it apart on purpose (lab/hwsim/hwsim/tools/nccl.py hca_filter), from the same NCCL source."""
    text = (value or '').strip()
    if not text:
        return None
    exclude = text.startswith('^')
    text = text[1:] if exclude else text
    exact = text.startswith('=')
    text = text[1:] if exact else text
    items = []
    for item in text.split(','):
        name, sep, port = item.strip().partition(':')
        if name:
            items.append((name, int(port) if sep and port.isdigit() else None))
    return exclude, exact, items


def selected(spec, name, port):
    """Whether NCCL_IB_HCA (``hca_spec``) lets NCCL use ``port`` of ``name``."""
    if spec is None:
        return True
    exclude, exact, items = spec
    hit = any((name == want if exact else name.startswith(want)) and (want_port is None or want_port == port)
              for want, want_port in items)
    return not hit if exclude else hit


def node_ports(ib_info):
    """{``name:port``: port facts} of the node's ports (ib_info), NVSwitch bridges left out."""
    ports = {}
    bridges = set((ib_info or {}).get('nvswitch_bridges') or [])
    for hca in (ib_info or {}).get('hcas') or []:
        if not isinstance(hca, dict) or hca.get('nvswitch_bridge') or hca.get('name') in bridges:
            continue
        for port in hca.get('ports') or []:
            ports['%s:%s' % (hca.get('name'), port.get('port'))] = dict(port, hca=hca.get('name'))
    return ports


def expected_devices(hca_value, ports, checked):
    """(sorted ``name:port`` NCCL should use on the node, where the list comes from), or (None, why) when it cannot
    be known. ``hca_value``: the NCCL_IB_HCA NCCL sees; ``ports``: ``node_ports``; ``checked``: verify_ib's HCAs."""
    spec = hca_spec(hca_value)
    active = dict((key, port) for key, port in ports.items() if _is_active(port))
    if spec is not None:
        if ports:
            return sorted(key for key, port in active.items() if selected(spec, port['hca'], int(port.get('port') or 0))), \
                'NCCL_IB_HCA=%s' % hca_value
        exclude, exact, items = spec
        if exact and not exclude and all(port is not None for _name, port in items):
            return sorted('%s:%d' % item for item in items), 'NCCL_IB_HCA=%s' % hca_value
        return None, 'NCCL_IB_HCA=%s and no port facts of the node' % hca_value
    if checked:
        return sorted(key for key, port in active.items() if port['hca'] in checked) or \
            sorted('%s:1' % name for name in checked if not ports), 'the GPU-fabric HCAs verify_ib checked'
    return None, 'no NCCL_IB_HCA and no GPU-fabric HCA list (verify_ib_hcas)'


def good_gid(port, index):
    """(ok, what) of GID ``index`` on a RoCE port (ib_info ``gids``): RoCE v2 with an IPv4 address; None for ok
    when the facts hold no GID table."""
    table = port.get('gids') or []
    if not table:
        return None, 'no GID table'
    entry = [gid for gid in table if gid.get('index') is not None and int(gid['index']) == int(index)]
    if not entry:
        return False, 'an empty GID entry'
    version, address = str(entry[0].get('version') or '').lower(), entry[0].get('ipv4')
    if version == 'v2' and address:
        return True, 'RoCE v2 %s' % address
    return False, 'RoCE %s %s' % (version or '?', address or 'link-local (no IPv4)')


def _short(name):
    return str(name or '').partition('.')[0]


def evaluate_node(host, expected_list, source, ports):
    """The nccl.env result of one node from its parsed NCCL lines (``parse_nccl_debug`` host entry, or None)."""
    threshold = 'NET/IB %s, GPU Direct RDMA, RoCE GID v2 IPv4' % (','.join(expected_list) if expected_list else '(any)')
    if host is None:
        return new_result(CHECK, 'node', None, threshold, False,
                          'NCCL printed no network lines for this node in the multi-node run (NCCL_DEBUG=INFO, '
                          'NCCL_DEBUG_SUBSYS=INIT,NET)')
    problems = []
    if host['transport'] != 'IB':
        socket = ','.join('%s:%s' % (d['name'], d['address']) for d in host['socket_devices']) or 'no device'
        problems.append('NCCL used %s (NET/Socket %s%s), not NET/IB: the RDMA devices NCCL_IB_HCA names are absent or '
                        'down, or the RDMA stack is not loaded' % (
                            'network %s' % host['network'] if host['network'] else 'sockets', socket,
                            '; NET/IB : No device found' if host['no_ib_device'] else ''))
    seen = ['%s:%d' % (d['name'], d['port']) for d in host['devices']]
    if host['transport'] == 'IB' and expected_list is not None:
        missing = [key for key in expected_list if key not in seen]
        extra = [key for key in seen if key not in expected_list]
        if missing:
            problems.append('NET/IB does not use %s (%s)' % (', '.join(missing), source))
        if extra:
            problems.append('NET/IB also uses %s, not a GPU-fabric port (%s)' % (', '.join(extra), source))
    if host['transport'] == 'IB':
        if not host['gdr']:
            problems.append('no GPU Direct RDMA line (NCCL_DEBUG_SUBSYS without NET?)')
        off = [d['name'] for d in host['devices'] if host['gdr'] and not host['gdr'].get(d['name'])]
        if off:
            problems.append('GPU Direct RDMA disabled for %s (nvidia_peermem or DMA-BUF missing)' % ', '.join(off))
    gids = []
    for device in host['devices']:
        if device['link_layer'] != 'RoCE':
            continue
        key = '%s:%d' % (device['name'], device['port'])
        used = sorted(set(c['gid_index'] for c in host['connections'] if c['device'] == device['name'] and c['gid_index'] is not None)
                      | set(e['gid_index'] for e in host['qp_errors'] if e['device'] == device['name'] and e['gid_index'] is not None))
        if not used:
            problems.append('no GID index seen for %s (no NET/IB connection line)' % key)
        for index in used:
            ok, what = good_gid(ports.get(key) or {}, index)
            gids.append('%s GID %d' % (key, index))
            if ok is False:
                problems.append('%s uses GID index %d, %s, not a RoCE v2 IPv4 GID' % (key, index, what))
    for error in host['qp_errors']:
        problems.append('ibv_modify_qp failed (%s %s) on %s:%s with local GID index %s' % (
            error['errno'] if error['errno'] is not None else '', error['reason'], error['device'], error['port'], error['gid_index']))
    measured = 'NET/%s %s%s' % (host['transport'] or '?', ','.join(seen) or '-', '; ' + ', '.join(gids) if gids else '')
    if problems:
        return new_result(CHECK, 'node', measured, threshold, False, 'NCCL environment wrong: %s' % '; '.join(problems))
    return new_result(CHECK, 'node', measured, threshold, True, 'NCCL uses NET/IB %s with GPU Direct RDMA%s' % (
        ','.join(seen), ' and %s' % ', '.join(gids) if gids else ''))


def debug_unfit(environment):
    """Why the run's environment keeps NCCL from printing the lines nccl.env reads, or None: NCCL_DEBUG below INFO
    (a site's ``verify_nccl_environment`` with ``NCCL_DEBUG: WARN``, as the example inventory had), or
    NCCL_DEBUG_SUBSYS without INIT or NET (NCCL's src/debug.cc: the level filters first, then the subsystem mask;
    ``ALL`` or a ``^`` exclusion list that spares both keeps them)."""
    level = str(environment.get('NCCL_DEBUG') or '').strip().upper()
    if level not in ('INFO', 'TRACE'):
        return ('the run had NCCL_DEBUG=%s, so NCCL printed no INFO lines; set verify_nccl_multi_node_debug: true and '
                'leave NCCL_DEBUG out of verify_nccl_environment (or set it to INFO) to judge it' % (level or 'unset'))
    subsys = str(environment.get('NCCL_DEBUG_SUBSYS') or '').strip().upper()
    if not subsys:
        return None  # NCCL's default mask (INIT, BOOTSTRAP, ENV) prints the NET/IB device lines under INIT
    names = [name.strip() for name in subsys.lstrip('^').split(',') if name.strip()]
    if subsys.startswith('^'):
        kept = not any(name in ('INIT', 'NET', 'ALL') for name in names)
    else:
        kept = 'ALL' in names or ('INIT' in names and 'NET' in names)
    if not kept:
        return 'the run had NCCL_DEBUG_SUBSYS=%s, which hides INIT or NET; include both to judge it' % subsys
    return None


def decide_nccl_env(stdout, participants, expected):
    """node -> [nccl.env result] of the multi-node run's output.

    ``expected``: ``environment`` (the run's own environment: NCCL_IB_HCA there wins over the files), ``nccl_conf``
    (node -> the text of its /etc/nccl.conf, or absent) or ``nccl_conf_b64`` (node -> slurp's base64 of it),
    ``ib_outcome`` (verify_ib's: ``raw[node].ib_info`` and
    ``checked[node]``). A run whose environment keeps NCCL from printing the lines (``debug_unfit``) judges no node:
    each is not checked, with the reason. An output without NCCL INFO lines otherwise fails every node, naming the mode
    it needs.
    """
    unfit = debug_unfit(expected['environment'] or {}) if 'environment' in expected else None
    if unfit:
        return dict((node, [new_result(CHECK, 'node', None, 'NET/IB', True, 'not checked: %s' % unfit, skipped=unfit)])
                    for node in participants)
    try:
        hosts = parse_nccl_debug(stdout or '')['hosts']
    except ParseError as exc:
        return dict((node, [new_result(CHECK, 'node', None, 'NET/IB', False, 'no NCCL network lines to judge: %s' % exc)])
                    for node in participants)
    by_short = dict((_short(name), entry) for name, entry in hosts.items() if name)
    environment = expected.get('environment') or {}
    confs = dict(expected.get('nccl_conf') or {})
    for node, encoded in (expected.get('nccl_conf_b64') or {}).items():
        if encoded and node not in confs:
            try:
                confs[node] = base64.b64decode(encoded).decode('utf-8', 'replace')
            except (TypeError, ValueError, binascii.Error):
                confs[node] = ''
    ib_outcome = expected.get('ib_outcome') or {}
    out = {}
    for node in participants:
        conf = parse_conf(confs.get(node)) if confs.get(node) else {}
        hca_value = environment.get('NCCL_IB_HCA', conf.get('NCCL_IB_HCA'))
        ib_info = ((ib_outcome.get('raw') or {}).get(node) or {}).get('ib_info') or {}
        ports = node_ports(ib_info)
        wanted, source = expected_devices(hca_value, ports, (ib_outcome.get('checked') or {}).get(node) or [])
        out[node] = [evaluate_node(by_short.get(_short(node)), wanted, source, ports)]
    return out
