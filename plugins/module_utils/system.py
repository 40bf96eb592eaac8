# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Host arithmetic for preflight checks: which mount holds a path and its free space, swap devices, name resolution."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import posixpath
import socket


def _is_under(path, mount):
    if mount == '/':
        return True
    return path == mount or path.startswith(mount.rstrip('/') + '/')


def mount_for_path(mounts, path):
    """The entry of Ansible's ``mounts`` fact that holds ``path``: the longest matching mount point.

    ``mounts`` is ``ansible_facts.mounts`` (dicts with at least ``mount``), or the
    ``mount_points`` dict of ``ansible.builtin.mount_facts``; ``path`` is an
    absolute path that need not exist. Bind mounts of files are ignored. Returns None when no
    mount holds the path (no ``/`` in the facts, as happens in some containers).
    """
    if not isinstance(path, str) or not path.startswith('/'):
        raise ValueError('path must be absolute, got %r' % (path,))
    path = posixpath.normpath(path)
    if isinstance(mounts, dict):
        mounts = list(mounts.values())
    best = None
    for entry in mounts or []:
        mount = entry.get('mount') if isinstance(entry, dict) else None
        if not isinstance(mount, str) or not _is_under(path, mount):
            continue
        if entry.get('size_total') in (None, 0) and mount != '/':
            continue  # pseudo file systems and file bind mounts report no size
        if best is None or len(mount) > len(best['mount']):
            best = entry
    return best


def free_space_report(mounts, minimums_gib):
    """Free space of each path in ``minimums_gib`` ({path: GiB}) against its minimum.

    Returns a list of dicts: path, mount, free_gib (None when unknown), min_gib, ok.
    """
    report = []
    for path in sorted(minimums_gib):
        entry = mount_for_path(mounts, path)
        free = None
        if entry is not None and entry.get('size_available') is not None:
            free = round(float(entry['size_available']) / 2 ** 30, 1)
        minimum = float(minimums_gib[path])
        report.append({
            'path': path,
            'mount': entry['mount'] if entry else None,
            'free_gib': free,
            'min_gib': minimum,
            'ok': free is not None and free >= minimum,
        })
    return report


def parse_proc_swaps(text):
    """The active swap devices and files in ``/proc/swaps`` (its header line skipped; ``\\040`` is a space)."""
    devices = []
    for line in (text or '').splitlines()[1:]:
        fields = line.split()
        if fields:
            devices.append(fields[0].replace('\\040', ' '))
    return devices


def resolve(names, family=socket.AF_UNSPEC):
    """(resolved, unresolved, loopback) for a list of names, with the node's own resolver (getaddrinfo).

    ``resolved`` maps each name that resolved to its addresses, in the resolver's order without duplicates;
    ``loopback`` lists the names whose first address is a loopback address.
    """
    resolved, unresolved, loopback = {}, [], []
    for name in names:
        try:
            infos = socket.getaddrinfo(name, None, family, socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError, OSError):
            unresolved.append(name)
            continue
        addresses = []
        for info in infos:
            address = info[4][0].split('%')[0]
            if address not in addresses:
                addresses.append(address)
        resolved[name] = addresses
        if addresses and ipaddress.ip_address(addresses[0]).is_loopback:
            loopback.append(name)
    return resolved, unresolved, loopback
