# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for what NCCL itself logs about its network with NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS with INIT and NET).

Lines read (each after NCCL's prefix ``HOST:PID:TID [DEV] NCCL INFO`` or ``... [DEV] FILE:LINE NCCL WARN``; an
optional ``[timestamp]`` before it; lines without the prefix count for host ``''``):

* ``NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB primaryip:10.10.10.10<0>`` (src/transport/net_ib.cc
  ncclIbInit, ``"NET/IB : Using%s %s; OOB %s:%s"`` with ``"[%d]%s:%d/%s"`` per device, ``IB`` or ``RoCE``; real line:
  https://github.com/NVIDIA/nccl/issues/1537). A device list NCCL did not print in that form raises ParseError;
* ``NET/IB : No device found.`` and ``NET/Socket : Using [0]ens3:172.31.12.210<0>`` (src/transport/net_socket.cc;
  real: https://github.com/NVIDIA/nccl/issues/226);
* ``Using network IB`` / ``Using network Socket`` / ``Using network IBext_v8`` (src/init.cc; a plugin's name,
  HPC-X's ``IBext`` is the same verbs transport: https://github.com/NVIDIA/nccl-tests/issues/227);
* ``NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'`` (src/graph/topo.cc,
  ``"NET/%s : GPU Direct RDMA %s for HCA %d '%s'"``; real ``Disabled`` lines: NVIDIA/nccl #1537);
* ``NET/IB: NCCL Dev 0 IbDev 0 Port 1 qpn 576 mtu 3 GID 3 (0/1064A8C0FFFF0000) fifoRkey=...`` (src/transport/net_ib.cc
  ncclIbConnect, ``"NET/IB: %s %d IbDev %d Port %d qpn %d mtu %d GID %ld (%lX/%lX) ..."``, NCCL 2.19+; before,
  ``"NET/IB: Dev %d Port %d qpn %d mtu %d GID %ld (%lX/%lX)"``; some builds print ``query_ece={...}`` before ``GID``;
  InfiniBand prints ``LID %d`` instead of the GID): the GID index each connection uses, and the GID itself (subnet
  prefix and interface id as little-endian words);
* ``NCCL WARN Call to ibv_modify_qp failed with 110 Connection timed out, on dev mlx5_0:1, curr state INIT, next
  state RTR, local GID index 3, local GID ::ffff:..., remote GID ::ffff:...`` (src/misc/ibvwrap.cc wrap_ibv_modify_qp
  and ibvModifyQpLog; real: https://github.com/NVIDIA/nccl/issues/2013), and the older ``Call to ibv_modify_qp failed
  with error Connection timed out`` (NVIDIA/nccl-tests #227);
* ``NCCL_IB_GID_INDEX set by environment to 3.`` (src/misc/param.cc ncclLoadParam, subsystem ENV).

Text with no NCCL INFO line at all was not run with NCCL_DEBUG=INFO: ParseError naming the mode.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import socket
import struct

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError

MODE = 'NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS with INIT,NET)'

_LINE_RE = re.compile(
    r'^(?:\[[^\]]*\]\s*)?(?:(?P<host>[^\s:\[]+):(?P<pid>[^\s:]+)(?::(?P<tid>[^\s:]+))?\s+\[(?P<dev>\d+)\]\s+)?'
    r'(?:(?P<where>\S+)\s+)?NCCL (?P<level>INFO|WARN)\s+(?P<message>.*?)\s*$')
_IB_USING_RE = re.compile(r'^NET/IB\s*:\s*Using\s*(?P<devices>.*?)\s*;\s*OOB\s+(?P<oob>\S+)$')
_IB_DEVICE_RE = re.compile(r'\[(?P<index>\d+)\](?P<name>[^\s:\[\]]+):(?P<port>\d+)/(?P<link_layer>IB|RoCE)(?P<extra>/\S*)?')
_NO_DEVICE_RE = re.compile(r'^NET/IB\s*:\s*No device found\.?$')
_SOCKET_USING_RE = re.compile(r'^NET/Socket\s*:\s*Using\s+(?P<devices>.*)$')
_SOCKET_DEVICE_RE = re.compile(r'\[(?P<index>\d+)\](?P<name>[^\s:\[\]]+):(?P<address>\S+?)<\d+>')
_NETWORK_RE = re.compile(r'^Using network (?P<network>\S+)$')
_GDR_RE = re.compile(r"^NET/(?P<net>\S+)\s*:\s*GPU Direct RDMA (?P<state>Enabled|Disabled) for HCA (?P<index>\d+) '(?P<name>[^']*)'")
_CONNECT_RE = re.compile(
    r'^NET/IB: (?:NCCL (?:Merged)?Dev (?P<dev>\d+) IbDev (?P<ibdev>\d+)|Dev (?P<old_dev>\d+)) Port (?P<port>\d+) '
    r'qpn (?P<qpn>\d+) mtu (?P<mtu>\d+)(?: query_ece=\{[^}]*\})? '
    r'(?:GID (?P<gid_index>-?\d+) \((?P<spn>[0-9A-Fa-f]+)/(?P<iid>[0-9A-Fa-f]+)\)|LID (?P<lid>\d+))', re.I)
_MODIFY_QP_RE = re.compile(
    r'^Call to ibv_modify_qp failed with (?:error )?(?:(?P<errno>\d+) )?(?P<reason>[^,]+?)'
    r'(?:, on dev (?P<device>[^\s:,]+):(?P<port>-?\d+), curr state (?P<current>[^,]+), next state (?P<next>[^,]+), '
    r'local GID index (?P<gid_index>-?\d+), local GID (?P<local_gid>[^,]+), remote GID (?P<remote_gid>\S+))?$')
_GID_ENV_RE = re.compile(r'^NCCL_IB_GID_INDEX set by environment to (?P<value>-?\d+)\.?$')


def _empty_host():
    return {'network': None, 'transport': None, 'devices': [], 'oob': None, 'relaxed_ordering': False,
            'no_ib_device': False, 'socket_devices': [], 'gdr': {}, 'connections': [], 'gid_indexes': [],
            'qp_errors': [], 'gid_index_env': None}


def gid_text(subnet_prefix, interface_id):
    """The GID of an ncclIbConnect line's ``(%lX/%lX)`` (the 16 network-order bytes read as two little-endian 64-bit
    words on x86) as inet_ntop prints it: (0, 0x1064A8C0FFFF0000) -> ``::ffff:192.168.100.16``."""
    raw = struct.pack('<QQ', subnet_prefix & 0xFFFFFFFFFFFFFFFF, interface_id & 0xFFFFFFFFFFFFFFFF)
    if raw[:10] == b'\0' * 10 and raw[10:12] == b'\xff\xff':
        return '::ffff:%d.%d.%d.%d' % tuple(bytearray(raw[12:]))
    return socket.inet_ntop(socket.AF_INET6, raw)


def _transport(network):
    if network is None:
        return None
    if network.startswith('IB'):
        return 'IB'
    return network


def _ib_using(match, host, line_number, line):
    devices = []
    for device in _IB_DEVICE_RE.finditer(match.group('devices')):
        devices.append({'index': int(device.group('index')), 'name': device.group('name'), 'port': int(device.group('port')),
                        'link_layer': device.group('link_layer')})
    rest = _IB_DEVICE_RE.sub('', match.group('devices')).replace('[RO]', '').strip()
    if not devices or rest:
        raise ParseError('unsupported NET/IB device list in %s output' % MODE, line_number, line)
    host['devices'] = devices
    host['oob'] = match.group('oob')
    host['relaxed_ordering'] = '[RO]' in match.group('devices')


def _connection(match, host):
    dev = match.group('dev') if match.group('dev') is not None else match.group('old_dev')
    ibdev = int(match.group('ibdev')) if match.group('ibdev') is not None else int(dev)
    named = [device for device in host['devices'] if device['index'] == ibdev]
    entry = {'dev': int(dev), 'ib_dev': ibdev, 'device': named[0]['name'] if named else None, 'port': int(match.group('port')),
             'mtu': int(match.group('mtu')), 'gid_index': None, 'gid': None, 'lid': None}
    if match.group('gid_index') is not None:
        entry['gid_index'] = int(match.group('gid_index'))
        entry['gid'] = gid_text(int(match.group('spn'), 16), int(match.group('iid'), 16))
        if entry['gid_index'] not in host['gid_indexes']:
            host['gid_indexes'].append(entry['gid_index'])
    else:
        entry['lid'] = int(match.group('lid'))
    host['connections'].append(entry)


def _modify_qp(match):
    return {'errno': int(match.group('errno')) if match.group('errno') else None, 'reason': match.group('reason').strip(),
            'device': match.group('device'), 'port': int(match.group('port')) if match.group('port') else None,
            'next_state': match.group('next'),
            'gid_index': int(match.group('gid_index')) if match.group('gid_index') is not None else None,
            'local_gid': match.group('local_gid'), 'remote_gid': match.group('remote_gid')}


def _info(message, host, line_number, line):
    """Fold one INFO message into ``host``."""
    match = _IB_USING_RE.match(message)
    if match:
        _ib_using(match, host, line_number, line)
        return
    if _NO_DEVICE_RE.match(message):
        host['no_ib_device'] = True
        return
    match = _SOCKET_USING_RE.match(message)
    if match:
        host['socket_devices'] = [{'index': int(d.group('index')), 'name': d.group('name'), 'address': d.group('address')}
                                  for d in _SOCKET_DEVICE_RE.finditer(match.group('devices'))]
        return
    match = _NETWORK_RE.match(message)
    if match:
        host['network'] = match.group('network')
        return
    match = _GDR_RE.match(message)
    if match:
        host['gdr'][match.group('name')] = match.group('state') == 'Enabled'
        return
    match = _CONNECT_RE.match(message)
    if match:
        _connection(match, host)
        return
    match = _GID_ENV_RE.match(message)
    if match:
        host['gid_index_env'] = int(match.group('value'))


def parse_nccl_debug(text):
    """NCCL's network lines of a run (every process's, as srun or mpirun gather them) by host.

    Returns ``{'hosts': {host: {...}}, 'info_lines': N, 'warn_lines': N}``; per host: ``network`` (``Using network``),
    ``transport`` (``IB`` for NCCL's IB transport or an IB plugin, ``Socket``, another plugin's name, or None),
    ``devices`` (``index``, ``name``, ``port``, ``link_layer`` ``IB``/``RoCE``), ``oob``, ``relaxed_ordering``,
    ``no_ib_device``, ``socket_devices`` (``index``, ``name``, ``address``), ``gdr`` (device name -> GPU Direct RDMA
    enabled), ``connections`` (``dev``, ``ib_dev``, ``device``, ``port``, ``mtu``, ``gid_index``, ``gid``, ``lid``),
    ``gid_indexes`` (distinct, in order seen), ``qp_errors`` (``errno``, ``reason``, ``device``, ``port``,
    ``next_state``, ``gid_index``, ``local_gid``, ``remote_gid``), ``gid_index_env``.
    Raises ParseError for empty text, text without NCCL INFO lines, and a device list NCCL does not print.
    """
    if not text or not text.strip():
        raise ParseError('empty output: no NCCL lines (run with %s)' % MODE)
    hosts = {}
    info = warn = 0
    for line_number, line in enumerate(text.splitlines(), 1):
        if 'NCCL INFO' not in line and 'NCCL WARN' not in line:
            continue
        match = _LINE_RE.match(line.strip())
        if not match:
            continue
        host = hosts.setdefault(match.group('host') or '', _empty_host())
        message = match.group('message')
        if match.group('level') == 'INFO':
            info += 1
            _info(message, host, line_number, line)
        else:
            warn += 1
            qp_error = _MODIFY_QP_RE.match(message)
            if qp_error:
                host['qp_errors'].append(_modify_qp(qp_error))
    if not info:
        raise ParseError('no NCCL INFO lines: the run was not made with %s' % MODE)
    for host in hosts.values():
        host['transport'] = _transport(host['network'])
        if host['transport'] is None:
            host['transport'] = 'IB' if host['devices'] else 'Socket' if host['socket_devices'] else None
    return {'hosts': hosts, 'info_lines': info, 'warn_lines': warn}
