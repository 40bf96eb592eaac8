# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read an OpenSM log (``/var/log/opensm.log``, or ``opensm -f -`` on stdout): SM states, routing, partition errors.

Line layout (linux-rdma/opensm libopensm/osm_log.c @fa74b98c, osm_log()):
``"%s %02d %02d:%02d:%02d %06d [%04X] 0x%02x -> %s"``, month, day, time, microseconds, thread id, verbosity
(0x01 error, 0x02 info, 0x80 sys...), message (``function: text`` for OSM_LOG, bare for osm_log_v2). A message
at OSM_LOG_SYS is also printed bare on stdout when the log is a file (osm_log.c: "SYSLOG should go to stdout
too"), so a log whose stdout goes to the same file (the real 3.3.21 capture) carries ``Entering STANDBY state``
twice, once without a timestamp: bare lines are counted only in a log that has no timestamped line at all.

What is read, with where OpenSM prints it:

- SM state changes: ``Entering (NOTACTIVE|DISCOVERING|STANDBY|MASTER) state`` (opensm/osm_sm_state_mgr.c
  osm_report_sm_state(); names from libopensm/osm_helper.c sm_mgr_state_str[]), ``SUBNET UP``
  (osm_state_mgr.c state_mgr_up_msg()), ``Exiting SM`` (osm_sm.c).
- The routing engine in use: ``osm_ucast_mgr_process: <engine> tables configured on all switches``
  (osm_ucast_mgr.c: the engine that succeeded, after the configured list and the minhop fallback); failures:
  ``<engine>: cannot build lid matrices`` / ``cannot build fwd tables``, ftree's ``... falling back to default
  routing`` (osm_ucast_ftree.c) and ``No routing engine able to successfully configure switch tables``.
- Partition configuration: ``PARSE ERROR: line N: ...`` and ``PARSE ERROR partition conf file line N: ...``
  (osm_prtn_config.c; OpenSM then runs with what it could parse, the default partition at least: osm_prtn.c),
  ``PARSE WARN: line N: ...`` kept as warnings.
- The SM's port: ``osm_opensm_bind: Setting IS_SM on port 0x...``; the version from ``OpenSM <version>``.
- Lines carrying ``ERR <hex>:`` (OpenSM's error codes) are counted by code.

Text with no OpenSM log line (no timestamped line and no ``OpenSM`` banner) is refused with a ParseError, as is
the Windows layout (``[hh:mm:ss:ms][TID] 0x.. ->``, osm_log.c ``__WIN__``), which has no date.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.ib_sm import norm_guid

LINE_RE = re.compile(
    r'^(?P<month>[A-Z][a-z]{2}|\?\?\?) (?P<day>\d{2}) (?P<time>\d{2}:\d{2}:\d{2}) (?P<usec>\d{6}) '
    r'\[(?P<thread>[0-9A-Fa-f]+)\] 0x(?P<level>[0-9a-fA-F]{2}) -> (?P<message>.*)$')
WINDOWS_RE = re.compile(r'^\[\d{2}:\d{2}:\d{2}:\d{3}\]\[[0-9A-Fa-f]+\] 0x[0-9a-fA-F]{2} -> ')
STATE_RE = re.compile(r'^Entering (?P<state>NOTACTIVE|DISCOVERING|STANDBY|MASTER) state\s*$')
VERSION_RE = re.compile(r'^OpenSM (?P<version>\d\S*)\s*$')
ROUTING_RE = re.compile(r'^(?:\w+: )?(?P<engine>\S+) tables configured on all switches\s*$')
ROUTING_FAIL_RE = re.compile(
    r'^(?:\w+: )?(?:(?P<engine>\S+): cannot build (?:lid matrices|fwd tables)|.*falling back to default routing|'
    r'No routing engine able to successfully configure.*)\s*$', re.IGNORECASE)
PARSE_ERROR_RE = re.compile(r'PARSE ERROR(?::| partition conf file) line (?P<line>\d+): (?P<text>.*?)\s*$')
PARSE_WARN_RE = re.compile(r'PARSE WARN: line (?P<line>\d+): (?P<text>.*?)\s*$')
BIND_RE = re.compile(r'^(?:\w+: )?Setting IS_SM on port (?P<guid>0x[0-9a-fA-F]+)\s*$')
ERR_CODE_RE = re.compile(r'\bERR (?P<code>[0-9A-F]{4}):')


def _events(text):
    """(timestamp text or None, level or None, message) per line, in order; bare lines included."""
    if not isinstance(text, str):
        raise ParseError('OpenSM log must be text')
    out = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip('\r')
        if not line.strip():
            continue
        if WINDOWS_RE.match(line):
            raise ParseError('OpenSM log in the Windows layout (no date) is not supported', number, line)
        match = LINE_RE.match(line)
        if match:
            stamp = '%s %s %s.%s' % (match.group('month'), match.group('day'), match.group('time'), match.group('usec'))
            out.append((stamp, int(match.group('level'), 16), match.group('message').rstrip()))
        else:
            out.append((None, None, line.strip()))
    return out


def parse_opensm_log(text):
    """An OpenSM log -> what the SM did.

    Returns ``{'version', 'sm_port_guid', 'states': [{'time', 'state'}] (each change in order), 'state' (the last),
    'subnet_up' (count of SUBNET UP), 'routing_engines': [{'time', 'engine'}] (each time routing was configured),
    'routing_engine' (the last), 'routing_failures': [{'time', 'engine', 'message'}], 'partition_errors':
    [{'time', 'line', 'message'}], 'partition_warnings': [...], 'error_codes': {code: count}, 'exited' (``Exiting
    SM`` seen), 'lines' (timestamped lines)}``. Raises ParseError when no OpenSM log line is found.
    """
    events = _events(text)
    stamped = [event for event in events if event[0] is not None]
    if not stamped and not any(VERSION_RE.match(message) for dummy, dummy2, message in events):
        raise ParseError('not an OpenSM log: no "Mon DD HH:MM:SS uuuuuu [thread] 0xLL -> message" line and no OpenSM banner')
    # SYS messages echoed bare on stdout duplicate a timestamped line: read bare lines only without timestamped ones
    lines = stamped if stamped else events
    out = {'version': None, 'sm_port_guid': None, 'states': [], 'state': None, 'subnet_up': 0, 'routing_engines': [],
           'routing_engine': None, 'routing_failures': [], 'partition_errors': [], 'partition_warnings': [],
           'error_codes': {}, 'exited': False, 'lines': len(stamped)}
    for stamp, dummy, message in lines:
        text_only = message.split(': ', 1)[1] if re.match(r'^\w+: ', message) and not message.startswith('OpenSM') else message
        match = STATE_RE.match(message)
        if match:
            out['states'].append({'time': stamp, 'state': match.group('state')})
            out['state'] = match.group('state')
            continue
        if message == 'SUBNET UP' or message.startswith('SUBNET UP '):
            out['subnet_up'] += 1
            continue
        if message == 'Exiting SM':
            out['exited'] = True
            continue
        match = VERSION_RE.match(message)
        if match:
            out['version'] = match.group('version')
            continue
        match = ROUTING_RE.match(message)
        if match:
            out['routing_engines'].append({'time': stamp, 'engine': match.group('engine')})
            out['routing_engine'] = match.group('engine')
            continue
        match = ROUTING_FAIL_RE.match(message)
        if match:
            out['routing_failures'].append({'time': stamp, 'engine': match.group('engine'), 'message': text_only})
            continue
        match = PARSE_ERROR_RE.search(message)
        if match:
            out['partition_errors'].append({'time': stamp, 'line': int(match.group('line')), 'message': match.group('text')})
            continue
        match = PARSE_WARN_RE.search(message)
        if match:
            out['partition_warnings'].append({'time': stamp, 'line': int(match.group('line')), 'message': match.group('text')})
            continue
        match = BIND_RE.match(message)
        if match:
            out['sm_port_guid'] = norm_guid(match.group('guid'))
            continue
        match = ERR_CODE_RE.search(message)
        if match:
            out['error_codes'][match.group('code')] = out['error_codes'].get(match.group('code'), 0) + 1
    return out


def state_changes(parsed):
    """The state sequence without repeats: ``DISCOVERING, STANDBY, DISCOVERING, STANDBY`` -> 4 entries; a caller
    counting MASTER<->STANDBY flaps reads this."""
    out = []
    for entry in (parsed or {}).get('states') or []:
        if not out or out[-1] != entry['state']:
            out.append(entry['state'])
    return out


START_RE = re.compile(r'^(?:[A-Z][a-z]{2}|\?\?\?) \d{2} \d{2}:\d{2}:\d{2} \d{6} \[[0-9A-Fa-f]+\] 0x[0-9a-fA-F]{2} -> OpenSM \d\S*\s*$')


def current_run(text):
    """The part of an appended log (OpenSM's ``accum_log_file``, on by default) written by the SM running now: from
    the last start banner on (osm_opensm_init() logs ``OpenSM <version>`` first at 0x03, then at SYS level: the first
    of the pair). Text without a timestamped banner is returned whole."""
    lines = (text or '').splitlines(True)
    starts = [index for index, line in enumerate(lines) if START_RE.match(line.rstrip('\r\n'))]
    if not starts:
        return text or ''
    first = starts[-1]
    while first - 1 in starts:  # the 0x03 and 0x80 banner lines of one start
        first -= 1
    return ''.join(lines[first:])


def last_sweep(text):
    """The part of a log from just after its next-to-last ``SUBNET UP`` on: the last completed heavy sweep and
    whatever follows it. OpenSM parses ``partitions.conf`` again in every heavy sweep (osm_pkey_mgr.c calls
    osm_prtn_make_partitions()) and logs its errors each time, so an error of a file fixed since is not in it."""
    lines = (text or '').splitlines(True)
    ups = [index for index, line in enumerate(lines) if line.rstrip('\r\n').endswith('-> SUBNET UP')
           or line.rstrip('\r\n') == 'SUBNET UP']
    return ''.join(lines[ups[-2] + 1:]) if len(ups) >= 2 else (text or '')


def sm_log_findings(parsed, engines=None, recent=None):
    """What the role checks in the log of an SM it runs (``parse_opensm_log`` of ``current_run``).

    ``engines``: opensm_routing_engine, the configured engines in order (empty: the build's default, not checked).
    ``recent``: the parsed part written since the role changed something (a reload or restart), or ``last_sweep``;
    None: ``parsed`` whole. Returns ``{'settled', 'state', 'routing_engine', 'problems'}``: settled when the SM is
    STANDBY, or MASTER with a ``SUBNET UP`` since it started (its first sweep as master done: routing configured on
    every switch). Only that first ``SUBNET UP`` is sure to be in the file: OpenSM writes it at SYS level and later
    ones at INFO, which stays in stdio's buffer until an ERROR or SYS line flushes it (libopensm/osm_log.c,
    ``force_log_flush`` off by default), so a reload is not waited for. Problems, one line each: a
    ``partitions.conf`` line OpenSM could not parse in ``recent`` (an ERROR line, flushed at once; it then
    serves what it could parse, the default partition at least: osm_prtn_config.c); a master routing with another
    engine than the first configured one (ftree falls back to minhop when the topology is not a pure fat tree or
    after a link failure, and says so only in its log: osm_ucast_ftree.c, osm_ucast_mgr.c); no engine able to route.
    """
    parsed = parsed or {}
    recent = parsed if recent is None else recent
    state = parsed.get('state')
    engine = parsed.get('routing_engine')
    problems = []
    for error in recent.get('partition_errors') or []:
        problems.append('partitions.conf line %s: OpenSM could not parse it (%s) and serves the partitions it could '
                        'parse only' % (error.get('line'), error.get('message')))
    failures = parsed.get('routing_failures') or []
    wanted = [str(item) for item in engines or []]
    if state == 'MASTER' and engine and wanted and engine != wanted[0]:
        why = '; '.join(failure['message'] for failure in failures) or 'no reason in the log'
        problems.append('routing engine in use is %s, not %s (the first of opensm_routing_engine): %s'
                        % (engine, wanted[0], why))
    if any(failure['message'].lower().startswith('no routing engine') for failure in failures):
        problems.append('no routing engine could configure the switches (%s)'
                        % [failure['message'] for failure in failures][-1])
    settled = state == 'STANDBY' or (state == 'MASTER' and (parsed.get('subnet_up') or 0) > 0)
    return {'settled': settled, 'state': state, 'routing_engine': engine, 'problems': problems}
