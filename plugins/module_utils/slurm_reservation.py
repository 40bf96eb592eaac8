# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm reservations: the ``scontrol show reservation`` parser and what a wanted reservation changes.

Layout (Slurm 22.05 to 24.x, src/api/reservation_info.c): each reservation is
``ReservationName=NAME StartTime=.. EndTime=.. Duration=..`` then lines indented
by three spaces (``Nodes= NodeCnt= CoreCnt= Features= PartitionName= Flags=``,
``TRES=``, ``Users= Groups= Accounts= Licenses= State= BurstBuffer= Watts=``,
``MaxStartDelay=``) and a blank line; with ``-o`` one line each. A name may hold
spaces (``maintenance weekend``): it ends at `` StartTime=``. ``scontrol show
reservation NAME`` prints ``Reservation NAME not found`` (exit 1) for an
unknown name and ``No reservations in the system`` when there are none.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import time

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.slurm import hostlist_expand, split_fields

_FIRST_RE = re.compile(r'^ReservationName=(?P<name>.*?) (?P<rest>StartTime=.*)$')
_NOT_FOUND_RE = re.compile(r'^Reservation (?P<name>.+) not found$')
_NONE = 'No reservations in the system'
_TOOL_ERROR_RE = re.compile(r'^(scontrol: error: |slurm_load_reservations error: |scontrol: fatal: )')
# Free-text fields that may contain ``Word=`` text; what Slurm prints after them ends them.
_FREE_TEXT = {'Comment': ('MaxStartDelay',)}
# Flags that only matter when the reservation is created (Slurm may not print them back).
CREATE_ONLY_FLAGS = frozenset(('IGNORE_JOBS',))
_TIME_FORMAT = '%Y-%m-%dT%H:%M:%S'


def parse_scontrol_show_reservation(text):
    """Parse ``scontrol show reservation [NAME]`` (multi-line or ``-o``).

    Returns a list of dicts, one per reservation in printed order, every key to
    its value as printed (``Flags=`` gives ``''``, ``(null)`` stays). ``Reservation
    NAME not found`` and ``No reservations in the system`` give ``[]``. A line
    scontrol prints as an error (``slurm_load_reservations error: ...``) and text
    that is not this layout raise ParseError; unknown keys are kept.
    """
    if not isinstance(text, str):
        raise ParseError('scontrol output must be text, not %s' % type(text).__name__)
    found = []
    current = None
    empty = False
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip('\r')
        stripped = line.strip()
        if not stripped:
            current = None
            continue
        if stripped == _NONE or _NOT_FOUND_RE.match(stripped):
            empty = True
            current = None
            continue
        if _TOOL_ERROR_RE.match(stripped):
            raise ParseError('scontrol reported: %s' % stripped, number, raw)
        if line.startswith('ReservationName='):
            first = _FIRST_RE.match(stripped)
            if not first:
                raise ParseError('a reservation line without StartTime=', number, raw)
            current = {'ReservationName': first.group('name')}
            found.append(current)
            rest = first.group('rest')
        elif current is None or not line[0].isspace():
            raise ParseError('expected a line beginning ReservationName=', number, raw)
        else:
            rest = stripped
        for key, value in split_fields(rest, number, raw, _FREE_TEXT):
            if key in current:
                raise ParseError('field %s given twice for reservation %s' % (key, current['ReservationName']), number, raw)
            current[key] = value
    if not found and not empty:
        raise ParseError('no scontrol show reservation output (no ReservationName= line)')
    return found


def _null(value):
    return value in (None, '', '(null)')


def names(value):
    """A comma list as printed (``root,alice``; ``(null)``: none) as a sorted list."""
    return [] if _null(value) else sorted(part for part in value.split(',') if part)


def flags(value):
    """``Flags=MAINT,IGNORE_JOBS,SPEC_NODES`` as a set of upper-case names."""
    return set(part.strip().upper() for part in (value or '').split(',') if part.strip())


def nodes(value):
    """The reservation's node names (``Nodes=gpu[01-03]`` expanded); None for ``ALL`` or a list that does not parse."""
    if _null(value):
        return []
    if value.strip().upper() == 'ALL':
        return None
    try:
        return sorted(set(hostlist_expand(value)))
    except ParseError:
        return None


def slurm_time(value):
    """Seconds since the epoch of a time scontrol printed with ``SLURM_TIME_FORMAT=standard`` (local time,
    ``2026-12-01T21:40:00``) or ``%s``; None for ``Unknown``/``None`` or anything else."""
    value = (value or '').strip()
    if value.isdigit():
        return int(value)
    try:
        return int(time.mktime(time.strptime(value, _TIME_FORMAT)))
    except (ValueError, OverflowError):
        return None


def differences(current, want_nodes, want_users, want_flags, end_by):
    """Why the reservation ``current`` (a parsed record) is not the one wanted; [] when it is.

    ``want_nodes``/``want_users``: names; ``want_flags``: the flags it must carry (create-only ones such
    as IGNORE_JOBS are not compared; Slurm adds SPEC_NODES itself); ``end_by``: seconds since the epoch
    it must last until at least (None: any end).
    """
    why = []
    have = nodes(current.get('Nodes'))
    if have != sorted(set(want_nodes)):
        why.append('nodes %s, want %s' % (current.get('Nodes'), ','.join(sorted(set(want_nodes)))))
    if names(current.get('Users')) != sorted(set(want_users)):
        why.append('users %s, want %s' % (current.get('Users'), ','.join(sorted(set(want_users)))))
    missing = sorted(set(flag.upper() for flag in want_flags) - CREATE_ONLY_FLAGS - flags(current.get('Flags')))
    if missing:
        why.append('flags %s lack %s' % (current.get('Flags'), ','.join(missing)))
    if (current.get('State') or '').upper() != 'ACTIVE':
        why.append('state %s, want ACTIVE' % current.get('State'))
    ends = slurm_time(current.get('EndTime'))
    if end_by is not None and (ends is None or ends < end_by):
        why.append('ends %s, too soon' % current.get('EndTime'))
    return why


def summary(current):
    """A reservation record as a short text for diff output; ``''`` for none."""
    if not current:
        return ''
    return ''.join('%s: %s\n' % (key, current.get(key)) for key in
                   ('ReservationName', 'StartTime', 'EndTime', 'Nodes', 'Users', 'Flags', 'State'))
