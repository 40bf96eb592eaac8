# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse the output of the Mellanox/NVIDIA OFED helper scripts ``show_gids`` and ``ibdev2netdev``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError

# show_gids (mlnx-tools sbin/show_gids), tab-separated:
#
#   DEV<TAB>PORT<TAB>INDEX<TAB>GID<TAB>...<TAB>IPv4  <TAB><TAB>VER<TAB>DEV
#   ---<TAB>----<TAB>-----<TAB>---<TAB>...<TAB>------------  <TAB>---<TAB>---
#   mlx5_0<TAB>1<TAB>0<TAB>fe80:0000:0000:0000:a288:c2ff:fead:eab8<TAB><TAB><TAB>v1<TAB>ens1np0
#   mlx5_0<TAB>1<TAB>3<TAB>0000:0000:0000:0000:0000:ffff:0a00:0102<TAB>10.0.1.2  <TAB>v2<TAB>ens1np0
#   n_gids_found=2
#
# The IPv4 column is only filled for IPv4-mapped GIDs; VER is "v1"/"v2" (the
# tail of the gid type "IB/RoCE v1" / "RoCE v2"); the netdev is empty on
# InfiniBand ports.
GIDS_HEADER_RE = re.compile(r'^\s*DEV\s+PORT\s+INDEX\s+GID\b')
DASHES_RE = re.compile(r'^[\s-]+$')
GIDS_COUNT_RE = re.compile(r'^\s*n_gids_found\s*=\s*(?P<count>[0-9]+)\s*$')
GID_ROW_RE = re.compile(
    r'^\s*(?P<dev>\S+)\s+(?P<port>[0-9]+)\s+(?P<index>[0-9]+)\s+'
    r'(?P<gid>[0-9a-fA-F]{4}(?::[0-9a-fA-F]{4}){7})'
    r'(?:\s+(?P<ipv4>[0-9]{1,3}(?:\.[0-9]{1,3}){3}))?'
    r'(?:\s+(?P<version>[vV][0-9]+))?'
    r'(?:\s+(?P<netdev>\S+))?\s*$')

# ibdev2netdev (mlnx-tools ofed_scripts/ibdev2netdev):
#
#   mlx5_0 port 1 ==> ibp12s0 (Up)
#   mlx4_0 port 1 <===> ib0                          (old style, no state)
#   0000:0c:00.0 mlx5_0 (MT4129 - MCX75310AAS-NEAT) NVIDIA ConnectX-7 ... fw 28.39.1002 port 1 (ACTIVE) ==> ibp12s0 (Up)   (-v)
#   mlx4_0 (MT26428 - MT1037X01146) ... fw 2.9.1000 port 1 (ACTIVE) ==> ib0 (Up)   (-v, PCI address not found)
#
# In -v lines the description may be empty or contain parentheses, and the
# port state is padded ("(DOWN  )").
NETDEV_RE = re.compile(
    r'^\s*(?P<dev>\S+)\s+port\s+(?P<port>[0-9]+)\s+(?P<arrow>==>|<===>)\s+(?P<netdev>\S+)'
    r'(?:\s+\((?P<state>[^()]*)\))?\s*$')
NETDEV_VERBOSE_RE = re.compile(
    r'^\s*(?:(?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9a-fA-F])\s+)?(?P<dev>\S+)\s+'
    r'\((?P<device_id>[^()]*?)\s+-\s+(?P<part_id>[^()]*?)\)\s*(?P<description>.*?)\s*'
    r'fw\s+(?P<fw>\S+)\s+port\s+(?P<port>[0-9]+)\s+\((?P<port_state>[^()]*)\)\s+==>\s+'
    r'(?P<netdev>\S+)(?:\s+\((?P<state>[^()]*)\))?\s*$')


def _lines(text, tool):
    if not isinstance(text, str):
        raise ParseError('%s output must be text' % tool)
    return [raw.rstrip('\r') for raw in text.splitlines()]


def _gid_row(match):
    version = match.group('version')
    return {
        'dev': match.group('dev'),
        'port': int(match.group('port')),
        'index': int(match.group('index')),
        'gid': match.group('gid').lower(),
        'ipv4': match.group('ipv4') or '',
        'version': version.lower() if version else None,
        'netdev': match.group('netdev') or '',
    }


ZERO_GID = '0000:0000:0000:0000:0000:0000:0000:0000'
_SYSFS_GID_RE = re.compile(r'^[0-9a-fA-F]{4}(?::[0-9a-fA-F]{4}){7}$')


def gid_row_from_sysfs(dev, port, index, gid, gid_type, ndev):
    """One GID table entry as the kernel shows it in sysfs, in the form ``parse_show_gids`` gives (show_gids reads the
    same files): ``gid`` from ``ports/PORT/gids/INDEX``, ``gid_type`` from ``gid_attrs/types/INDEX`` (``IB/RoCE v1``
    or ``RoCE v2``; None where the kernel refuses the read, an unused entry) and ``ndev`` from ``gid_attrs/ndevs/INDEX``
    (Linux Documentation/ABI/testing/sysfs-class-infiniband). None for an unused entry (all zero, or no type)."""
    gid = (gid or '').strip().lower()
    if not _SYSFS_GID_RE.match(gid) or gid == ZERO_GID or gid_type is None:
        return None
    groups = gid.split(':')
    ipv4 = ''
    if groups[:6] == ['0000'] * 5 + ['ffff']:
        value = int(groups[6] + groups[7], 16)
        ipv4 = '.'.join(str((value >> shift) & 0xff) for shift in (24, 16, 8, 0))
    kind = gid_type.strip()
    version = 'v2' if kind.endswith('v2') else 'v1' if kind.endswith('v1') else None
    return {'dev': dev, 'port': int(port), 'index': int(index), 'gid': gid, 'ipv4': ipv4, 'version': version,
            'netdev': (ndev or '').strip()}


def parse_show_gids(text):
    """Parse ``show_gids`` output into a list of GID entries in input order.

    Each entry: ``dev``, ``port`` (int), ``index`` (int), ``gid`` (lower
    case), ``ipv4`` ("" when not IPv4-mapped), ``version`` ("v1"/"v2", None
    when not printed), ``netdev`` ("" on InfiniBand).  The header, dashes
    and ``n_gids_found=N`` lines are checked for, unknown lines skipped.
    Raises ParseError when there is neither header, count line nor GID row.
    """
    gids = []
    seen_frame = False
    for line in _lines(text, 'show_gids'):
        if not line.strip():
            continue
        if GIDS_HEADER_RE.match(line) or GIDS_COUNT_RE.match(line):
            seen_frame = True
            continue
        if DASHES_RE.match(line):
            continue
        match = GID_ROW_RE.match(line)
        if match:
            gids.append(_gid_row(match))
    if not gids and not seen_frame:
        raise ParseError('not show_gids output: no "DEV PORT INDEX GID" header, GID row or n_gids_found line')
    return gids


def _netdev_state(value):
    if value is None:
        return None
    value = value.strip()
    return value or None


def _netdev_entry(match, verbose):
    entry = {
        'dev': match.group('dev'),
        'port': int(match.group('port')),
        'netdev': match.group('netdev'),
        'state': _netdev_state(match.group('state')),
        'pci': None,
        'device_id': None,
        'part_id': None,
        'description': None,
        'firmware_version': None,
        'port_state': None,
    }
    if verbose:
        entry.update(
            pci=match.group('pci'),
            device_id=match.group('device_id').strip() or None,
            part_id=match.group('part_id').strip() or None,
            description=match.group('description').strip() or None,
            firmware_version=match.group('fw'),
            port_state=match.group('port_state').strip() or None,
        )
    return entry


def parse_ibdev2netdev(text):
    """Parse ``ibdev2netdev`` (plain, old-style ``<===>`` or ``-v``) output.

    Returns a list of ``dev``, ``port`` (int), ``netdev``, ``state`` ("Up",
    "Down", "NA"; None when not printed) and, from ``-v`` lines, ``pci``,
    ``device_id``, ``part_id``, ``description``, ``firmware_version``,
    ``port_state`` (None otherwise).  Raises ParseError when no line has the
    ``<dev> port <n> ==> <netdev>`` shape.  An empty text is a ParseError
    too, although ibdev2netdev prints nothing when no Mellanox netdev exists.
    """
    entries = []
    for line in _lines(text, 'ibdev2netdev'):
        if not line.strip():
            continue
        match = NETDEV_VERBOSE_RE.match(line)
        if match:
            entries.append(_netdev_entry(match, True))
            continue
        match = NETDEV_RE.match(line)
        if match:
            entries.append(_netdev_entry(match, False))
    if not entries:
        raise ParseError('not ibdev2netdev output: no "<dev> port <n> ==> <netdev>" line')
    return entries
