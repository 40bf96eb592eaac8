# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rogue subnet managers on compute nodes: which OpenSM units and processes run (or start at boot) on a host of
``gpu_nodes``, and what the opensm role's ``rogue`` entry point stops (docs/fabric.md "Rogue subnet managers").

``parse_sm_read(text)`` reads the role's one read of a node (``systemctl show`` of the loaded ``opensm*`` and
``aicluster-opensm@*`` units, ``systemctl list-unit-files`` of the same patterns, ``pgrep -a -x opensm``, each section
headed ``## NAME`` and closed by ``## NAME rc=N``); ``rogue_plan`` decides per node (one call per host),
``rogue_summary`` says it once for the fleet.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.host_state import parse_systemctl_show

OWN_PREFIX = 'aicluster-opensm@'
# systemctl is-enabled states that start a unit at boot (systemctl(1) "is-enabled"); static, indirect, disabled,
# masked, generated and transient units do not start by themselves
ENABLED_STATES = ('enabled', 'enabled-runtime', 'linked', 'linked-runtime')
# a unit in one of these states runs (or is about to, or is winding down): its SM takes part in elections
RUNNING_STATES = ('active', 'activating', 'reloading', 'deactivating')
SECTIONS = ('show', 'unit-files', 'processes')
_MARKER = re.compile(r'^## (?P<name>[a-z-]+)(?: rc=(?P<rc>-?\d+))?\s*$')
_PROCESS = re.compile(r'^\s*(?P<pid>\d+)\s+(?P<args>.*\S)\s*$')


def _sections(text):
    """{section: (lines, rc)} of the read; a section without its closing marker has rc None."""
    found, name, lines = {}, None, []
    for line in (text or '').splitlines():
        match = _MARKER.match(line)
        if match and match.group('name') in SECTIONS:
            if match.group('rc') is None:
                name, lines = match.group('name'), []
            elif match.group('name') == name:
                found[name] = (lines, int(match.group('rc')))
                name = None
            continue
        if name is not None:
            lines.append(line)
    if name is not None:
        found[name] = (lines, None)
    return found


def parse_sm_read(text):
    """The node's read: ``{'units': {name: {load, active, sub, file_state, main_pid}}, 'unit_files': {name: state},
    'processes': [{pid, args}], 'errors': [...]}``. A missing section, or ``systemctl`` or ``pgrep`` failing, is an
    error line (the node then counts as not read, never as clean)."""
    sections = _sections(text)
    errors = []
    for name in SECTIONS:
        if name not in sections:
            errors.append('the read has no %s section' % name)
        elif sections[name][1] is None:
            errors.append('the %s read did not finish' % name)
    units = {}
    show_lines, show_rc = sections.get('show', ([], None))
    if show_rc:
        errors.append('systemctl show failed (rc %d)' % show_rc)
    else:
        for block in parse_systemctl_show('\n'.join(show_lines)):
            name = block.get('Id')
            if not name or '@.' in name:
                continue
            pid = block.get('MainPID') or '0'
            units[name] = {'load': block.get('LoadState', ''), 'active': block.get('ActiveState', ''),
                           'sub': block.get('SubState', ''), 'file_state': block.get('UnitFileState', ''),
                           'main_pid': int(pid) if pid.isdigit() else 0}
    unit_files = {}
    file_lines, file_rc = sections.get('unit-files', ([], None))
    rows = [line.split() for line in file_lines if line.strip()]
    if file_rc and rows:
        errors.append('systemctl list-unit-files failed (rc %d)' % file_rc)
    for row in rows:
        if len(row) >= 2 and '@.' not in row[0] and '.' in row[0]:
            unit_files[row[0]] = row[1]
    processes = []
    process_lines, process_rc = sections.get('processes', ([], None))
    if process_rc not in (None, 0, 1):   # pgrep(1): 1 is "nothing matched"
        errors.append('pgrep failed (rc %d)' % process_rc)
    else:
        for line in process_lines:
            match = _PROCESS.match(line)
            if match:
                processes.append({'pid': int(match.group('pid')), 'args': match.group('args')})
    return {'units': units, 'unit_files': unit_files, 'processes': processes, 'errors': errors}


def _unit_finding(name, unit):
    """('running'|'enabled'|None, text) for one loaded unit."""
    if unit['active'] in RUNNING_STATES:
        state = '%s (%s)' % (unit['active'], unit['sub']) if unit['sub'] else unit['active']
        extra = ', transient' if unit['file_state'] == 'transient' else ''
        return 'running', '%s %s%s' % (name, state, extra)
    if unit['load'] != 'masked' and unit['file_state'] in ENABLED_STATES:
        return 'enabled', '%s %s, not running (starts at boot)' % (name, unit['file_state'])
    return None, None


def rogue_plan(read, host, gpu_nodes, allow_on_compute=False, stop=False):
    """Whether ``host`` runs an SM it should not, and what stopping it takes.

    ``read``: the registered result of the role's read (``stdout``) or its text. A host of ``gpu_nodes`` without
    ``allow_on_compute`` is rogue when an ``opensm*``/``aicluster-opensm@*`` unit runs or is enabled, or an ``opensm``
    process runs. Returns ``{host, checked, rogue, running, found, errors, problems, stop, mask, disable, kill}``:
    ``mask`` (units stopped and masked: the distribution's, DOCA's and any other), ``disable`` (this collection's own
    ``aicluster-opensm@`` units: stopped and disabled, so that the opensm role can start them again where the host
    is made an SM host) and ``kill`` (PIDs of opensm processes that no listed unit runs) are filled only when
    ``stop`` is true."""
    problems = []
    for name, value in (('opensm_stop_rogue', stop), ('opensm_allow_on_compute', allow_on_compute)):
        if not isinstance(value, bool):
            problems.append('%s: must be true or false, got %r' % (name, value))
    plan = {'host': host, 'checked': host in (gpu_nodes or []) and allow_on_compute is not True, 'rogue': False,
            'running': False, 'found': [], 'errors': [], 'problems': problems, 'stop': stop is True,
            'mask': [], 'disable': [], 'kill': []}
    if problems or not plan['checked']:
        return plan
    text = read.get('stdout', '') if isinstance(read, dict) else read
    if isinstance(read, dict) and (read.get('failed') or read.get('rc')):
        plan['errors'].append('the read failed (rc %s): %s' % (read.get('rc'), (read.get('stderr') or read.get('msg') or '').strip()))
        return plan
    parsed = parse_sm_read(text)
    plan['errors'].extend(parsed['errors'])
    if parsed['errors']:
        if isinstance(read, dict) and (read.get('stderr') or '').strip():
            plan['errors'].append('stderr: %s' % ' '.join(read['stderr'].split()))
        return plan
    units, covered = [], set()
    for name in sorted(parsed['units']):
        unit = parsed['units'][name]
        kind, finding = _unit_finding(name, unit)
        if kind:
            plan['found'].append(finding)
            plan['running'] = plan['running'] or kind == 'running'
            units.append(name)
            if unit['main_pid']:
                covered.add(unit['main_pid'])
    for name in sorted(parsed['unit_files']):
        if name not in parsed['units'] and parsed['unit_files'][name] in ENABLED_STATES:
            plan['found'].append('%s %s, not running (starts at boot)' % (name, parsed['unit_files'][name]))
            units.append(name)
    strays = [process for process in parsed['processes'] if process['pid'] not in covered]
    for process in parsed['processes']:
        plan['found'].append('opensm process %d (%s)' % (process['pid'], process['args']))
    plan['running'] = plan['running'] or bool(parsed['processes'])
    plan['rogue'] = bool(plan['found'])
    if plan['stop']:
        plan['disable'] = [name for name in units if name.startswith(OWN_PREFIX)]
        plan['mask'] = [name for name in units if not name.startswith(OWN_PREFIX)]
        plan['kill'] = [process['pid'] for process in strays]
    return plan


def rogue_summary(plans, check_mode=False):
    """One report for the fleet from ``{host: rogue_plan}``: ``{rogue_hosts, running_hosts, unread_hosts,
    allowed_hosts, checked, message}``."""
    plans = dict((host, plan) for host, plan in (plans or {}).items() if isinstance(plan, dict))
    checked = sorted(host for host, plan in plans.items() if plan.get('checked'))
    allowed = sorted(host for host, plan in plans.items() if not plan.get('checked'))
    unread = [host for host in checked if plans[host].get('errors')]
    rogue = [host for host in checked if plans[host].get('rogue')]
    running = [host for host in rogue if plans[host].get('running')]
    parts = []
    if rogue:
        stopping = [host for host in rogue if plans[host].get('stop')]
        parts.append('opensm: a subnet manager that should not be there on %d of %d compute nodes: %s' % (
            len(rogue), len(checked), '; '.join('%s (%s)' % (host, ', '.join(plans[host]['found'])) for host in rogue)))
        if stopping:
            parts.append('%s on %s (opensm_stop_rogue: true): running units and processes stopped, units masked '
                         '(aicluster-opensm@ units disabled)'
                         % ('Would stop' if check_mode else 'Stopped', ', '.join(stopping)))
        if len(stopping) < len(rogue):
            parts.append('Reported only on %s: set opensm_stop_rogue: true to stop them, or opensm_allow_on_compute: '
                         'true on a node that runs an SM on purpose' % ', '.join(host for host in rogue if host not in stopping))
    elif len(checked) > len(unread):
        parts.append('opensm: no subnet manager runs or is enabled on the %d compute nodes read' % (len(checked) - len(unread)))
    if unread:
        parts.append('%s: %s' % ('opensm: compute nodes not read' if not parts else 'Not read',
                                 '; '.join('%s (%s)' % (host, '; '.join(plans[host]['errors'])) for host in unread)))
    if not parts and not allowed:
        parts.append('opensm: no compute node to check')
    if allowed:
        parts.append('Not checked (opensm_allow_on_compute: true, or not in gpu_nodes): %s' % ', '.join(allowed))
    return {'rogue_hosts': rogue, 'running_hosts': running, 'unread_hosts': unread, 'allowed_hosts': allowed,
            'checked': checked, 'message': '. '.join(parts) + '.'}
