# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drift report: what a check run of the configuration stages would change, host by host (docs/drift.md).

Pure functions, used by the aicluster.infra.drift callback:

- ``change_record`` turns one task result of a check run (``changed: true``) into a drift entry: its kind (file,
  package, service, account, setting), what it names and the diff as unified text, with secrets masked;
- ``rail_mtu_settings`` compares each GPU-fabric rail's configured MTU with the desired one;
- ``fleet_outliers`` finds the hosts whose value of a fleet-wide fact (kernel, driver, OFED, HCA firmware, the
  slurm.conf checksum) is not the fleet's;
- ``build_report`` and ``render_markdown`` make drift.json and drift.md.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import difflib
import re

SCHEMA = 1
MASK = '********'

_FILE_ACTIONS = frozenset(('template', 'copy', 'file', 'lineinfile', 'blockinfile', 'replace', 'assemble', 'ini_file',
                           'unarchive', 'get_url', 'slurm_config', 'node_files'))
_PACKAGE_ACTIONS = frozenset(('apt', 'package', 'dnf', 'yum', 'dpkg_selections', 'apt_key', 'apt_repository',
                              'deb822_repository', 'pip', 'rpm_key', 'yum_repository'))
_SERVICE_ACTIONS = frozenset(('service', 'systemd', 'systemd_service', 'sysvinit'))
_ACCOUNT_ACTIONS = frozenset(('user', 'group', 'authorized_key'))
# A whole file is a secret: its diff is never shown, only that it differs.
_SECRET_FILE = re.compile(r'(^|/)(munge\.key|[^/]*\.(key|pem|p12)|[^/]*(secret|password|passwd)[^/]*)$', re.I)
# A setting whose value is a secret: "StoragePass=...", "password: ...", "MYSQL_PWD=...".
_SECRET_LINE = re.compile(r'^(?P<head>[ +\-]?\s*[\w.\-]*(pass(word|wd)?|pwd|secret|token|credential)[\w.\-]*'
                          r'\s*[=:]\s*)(?P<value>\S.*)$', re.I)


def short_action(action):
    """``ansible.builtin.copy`` -> ``copy``; ``aicluster.infra.slurm_config`` -> ``slurm_config``."""
    return str(action or '').rsplit('.', 1)[-1]


def kind_of(action):
    name = short_action(action)
    if name in _FILE_ACTIONS:
        return 'file'
    if name in _PACKAGE_ACTIONS:
        return 'package'
    if name in _SERVICE_ACTIONS:
        return 'service'
    if name in _ACCOUNT_ACTIONS:
        return 'account'
    return 'setting'


def _as_text(value):
    if value is None:
        return ''
    if isinstance(value, (list, tuple)):
        return ', '.join(str(item) for item in value)
    return str(value)


def subject_of(kind, args, result):
    """What a drift entry names: the file's path, the packages, the service, else ''."""
    args = args if isinstance(args, dict) else {}
    result = result if isinstance(result, dict) else {}
    if kind == 'file':
        for key in ('dest', 'path'):
            for source in (result, args):
                if source.get(key):
                    return _as_text(source[key])
    for key in ('name', 'pkg', 'package', 'unit', 'repo', 'selection'):
        if args.get(key):
            return _as_text(args[key])
        if result.get(key) and not isinstance(result[key], dict):
            return _as_text(result[key])
    return ''


def wanted_state(kind, args):
    """For services and packages, what the desired state is (``started, enabled``; ``present``)."""
    args = args if isinstance(args, dict) else {}
    if kind == 'service':
        parts = [str(args[k]) for k in ('state',) if args.get(k)]
        if 'enabled' in args and args['enabled'] is not None:
            parts.append('enabled' if args['enabled'] in (True, 'true', 'yes') else 'disabled')
        if args.get('masked') in (True, 'true', 'yes'):
            parts.append('masked')
        return ', '.join(parts)
    if kind == 'package':
        return str(args.get('state') or args.get('selection') or 'present')
    return ''


def is_secret_path(path):
    return bool(path) and bool(_SECRET_FILE.search(str(path)))


def mask_text(text):
    """Each line that sets a password, secret or token keeps its key; the value becomes ``********``."""
    lines = []
    for line in str(text).splitlines():
        match = _SECRET_LINE.match(line)
        lines.append(match.group('head') + MASK if match else line)
    return '\n'.join(lines) + ('\n' if str(text).endswith('\n') else '')


def _diff_one(item):
    if not isinstance(item, dict):
        return ''
    if item.get('prepared'):
        return str(item['prepared']).rstrip('\n') + '\n'
    if 'before' not in item and 'after' not in item:
        return ''
    before, after = item.get('before', ''), item.get('after', '')
    if isinstance(before, dict) or isinstance(after, dict):
        # file/state attributes ({'path': ..., 'mode': '0644'}): one line per attribute that differs
        before = before if isinstance(before, dict) else {}
        after = after if isinstance(after, dict) else {}
        lines = []
        for key in sorted(set(before) | set(after)):
            if key == 'path' or before.get(key) == after.get(key):
                continue
            lines.append('%s: %s -> %s\n' % (key, before.get(key, '(unset)'), after.get(key, '(unset)')))
        return ''.join(lines)
    before, after = _as_text(before), _as_text(after)
    if before == after:
        return ''
    return ''.join(difflib.unified_diff(
        before.splitlines(True), after.splitlines(True),
        fromfile=str(item.get('before_header') or 'before'), tofile=str(item.get('after_header') or 'after'), n=2))


def unified_diff(diff):
    """A task result's ``diff`` (one dict or a list of them, before/after or prepared) as unified text."""
    items = diff if isinstance(diff, list) else [diff]
    text = ''.join(_diff_one(item) for item in items if item)
    return text if text.endswith('\n') or not text else text + '\n'


def change_record(host, task, action, args, result, role='', play='', handler=False):
    """One drift entry from a changed task result of a check run; ``None`` when the result is not a change.

    A task with ``no_log`` gives no result: its entry says the content is hidden, never what it was. ``handler``: the
    task is a handler a drift notified (a restart the correction would make), kept apart from the drift itself.
    """
    result = result if isinstance(result, dict) else {}
    if not result.get('changed'):
        return None
    kind = kind_of(action)
    hidden = 'censored' in result
    subject = subject_of(kind, args, {} if hidden else result)
    diff = '' if hidden else unified_diff(result.get('diff'))
    if not diff and not hidden and short_action(action) == 'debug' and isinstance(result.get('msg'), str):
        # a role that reports a live difference with a changed debug (ipoib: an address removed by hand) says what
        diff = ''.join('# %s\n' % line for line in result['msg'].splitlines())
    secret = hidden or (kind == 'file' and is_secret_path(subject))
    if secret:
        diff = ''
    elif diff:
        diff = mask_text(diff)
    return {
        'host': host,
        'play': play,
        'role': role,
        'task': task,
        'action': short_action(action),
        'kind': kind,
        'name': subject or task,
        'wanted': wanted_state(kind, args),
        'diff': diff,
        'masked': secret,
        'handler': bool(handler),
    }


def change_records(host, task, action, args, result, role='', play='', handler=False):
    """The drift entries of one changed result: one per path for a module that manages several files at once
    (aicluster.infra.node_files returns ``changed_paths`` and a diff per path), else ``change_record``'s one."""
    result = result if isinstance(result, dict) else {}
    paths = result.get('changed_paths')
    if not result.get('changed') or not isinstance(paths, list) or not paths or 'censored' in result:
        record = change_record(host, task, action, args, result, role=role, play=play, handler=handler)
        return [record] if record else []
    diffs = result.get('diff') if isinstance(result.get('diff'), list) else []
    records = []
    for path in paths:
        own = [item for item in diffs if isinstance(item, dict) and path in (item.get('before_header'), item.get('after_header'))]
        one = dict(result, dest=path, diff=own)
        one.pop('changed_paths', None)
        records.append(change_record(host, task, action, {'dest': path}, one, role=role, play=play, handler=handler))
    return records


def rail_mtu_settings(hcas, links, expected):
    """The GPU-fabric rails whose configured MTU is below the desired one, as drift entries (kind ``setting``).

    ``hcas``: ib_info's ``hcas``; ``links``: ``ip -j addr show`` (a list of interfaces with ``ifname`` and ``mtu``);
    ``expected``: ``hcas`` (names; empty means every HCA), ``port``, ``mtu`` (RoCE) and ``ipoib_mtu`` (IPoIB).
    A rail with no netdev is not a setting this run can read and is left out.
    """
    mtus = {link.get('ifname'): link.get('mtu') for link in links or [] if isinstance(link, dict)}
    wanted = set(expected.get('hcas') or [])
    entries = []
    for hca in hcas or []:
        if wanted and hca.get('name') not in wanted:
            continue
        for port in hca.get('ports') or []:
            if expected.get('port') and port.get('port') != expected['port']:
                continue
            netdev = port.get('netdev')
            if not netdev or netdev not in mtus:
                continue
            ethernet = port.get('link_layer') == 'Ethernet'
            want = int(expected['mtu'] if ethernet else expected['ipoib_mtu'])
            have = mtus[netdev]
            # the verify stage's rule (docs/verify.md "MTU"): below the expected MTU fails, above passes (IPoIB
            # connected mode at 65520 where 4092 is expected is a site's choice, not drift)
            if have is not None and int(have) < want:
                entries.append({
                    'kind': 'setting',
                    'name': 'MTU of %s (%s port %s, %s)' % (netdev, hca.get('name'), port.get('port'),
                                                            'RoCE' if ethernet else 'IPoIB'),
                    'wanted': str(want),
                    'diff': '- mtu %s\n+ mtu %s\n' % (have, want),
                    'masked': False,
                })
    return entries


def fleet_facts(observed):
    """One host's fleet-wide facts from what playbooks/drift.yml read on it (the aicluster_drift_host fact).

    ``observed``: ``kernel``, ``gpu_driver``, ``ofed``, ``slurm_conf_sha1`` and ``rails.hcas`` (ib_info's HCAs, whose
    firmware is keyed by adapter type; two firmware versions on one type in one host are both named).
    """
    observed = observed if isinstance(observed, dict) else {}
    facts = {key: observed.get(key) for key in ('kernel', 'gpu_driver', 'ofed', 'slurm_conf_sha1')
             if observed.get(key) not in (None, '')}
    firmware = {}
    for hca in (observed.get('rails') or {}).get('hcas') or []:
        if hca.get('ca_type') and hca.get('firmware_version'):
            firmware.setdefault(str(hca['ca_type']), set()).add(str(hca['firmware_version']))
    if firmware:
        facts['hca_firmware'] = {ca_type: ','.join(sorted(versions)) for ca_type, versions in firmware.items()}
    return facts


def _flatten(facts, prefix=''):
    flat = {}
    for key, value in sorted((facts or {}).items()):
        name = '%s %s' % (prefix, key) if prefix else str(key)
        if isinstance(value, dict):
            flat.update(_flatten(value, name))
        elif value not in (None, ''):
            flat[name] = str(value)
    return flat


def fleet_outliers(host_facts):
    """The fleet-wide facts that are not single-valued, with the fleet's value and the odd hosts.

    ``host_facts``: host -> {fact: value or {sub: value}} (``hca_firmware`` is keyed by adapter type, so a fleet of
    two HCA models is not called drifted). A host without a fact (a login node has no GPU driver) is not counted for
    it. The fleet's value is the one most hosts have; on a tie there is none, and every host is listed.
    """
    by_fact = {}
    for host in sorted(host_facts):
        for fact, value in _flatten(host_facts[host]).items():
            by_fact.setdefault(fact, {}).setdefault(value, []).append(host)
    outliers = []
    for fact in sorted(by_fact):
        values = by_fact[fact]
        if len(values) < 2:
            continue
        ranked = sorted(values.items(), key=lambda item: (-len(item[1]), item[0]))
        majority = ranked[0][0] if len(ranked[0][1]) > len(ranked[1][1]) else None
        odd = sorted(h for value, hosts in values.items() if value != majority for h in hosts)
        outliers.append({'fact': fact, 'fleet_value': majority, 'values': {v: sorted(h) for v, h in ranked},
                         'odd_hosts': odd})
    return outliers


def build_report(run, hosts, changes, settings, facts, problems):
    """drift.json's content.

    ``hosts``: every host the run covered; ``changes``: change_record entries; ``settings``: host -> setting entries
    (rail_mtu_settings); ``facts``: host -> fleet facts; ``problems``: host -> why it was not fully checked (a failed
    task or unreachable). A host drifted when it has an entry or is an odd one out of a fleet fact.
    """
    per_host = {host: {'status': 'in sync', 'drift': [], 'problems': []} for host in sorted(set(hosts))}
    for entry in changes:
        record = per_host.setdefault(entry['host'], {'status': 'in sync', 'drift': [], 'problems': []})
        item = {k: v for k, v in entry.items() if k not in ('host', 'handler')}
        if entry.get('handler'):
            # a handler notified by a drift: what correcting it would also do (a restart), not drift of its own
            record.setdefault('would_also', []).append(item)
        else:
            record['drift'].append(item)
    for host, entries in sorted((settings or {}).items()):
        per_host.setdefault(host, {'status': 'in sync', 'drift': [], 'problems': []})['drift'].extend(entries)
    outliers = fleet_outliers(facts or {})
    odd = {}
    for outlier in outliers:
        for host in outlier['odd_hosts']:
            odd.setdefault(host, []).append(outlier['fact'])
    for host, reasons in sorted((problems or {}).items()):
        per_host.setdefault(host, {'status': 'in sync', 'drift': [], 'problems': []})['problems'].extend(reasons)
    for host, record in per_host.items():
        record['odd_facts'] = odd.get(host, [])
        record.setdefault('would_also', [])
        if record['drift'] or record['odd_facts']:
            record['status'] = 'drifted'
        elif record['problems']:
            record['status'] = 'not checked'
    drifted = sorted(h for h, r in per_host.items() if r['status'] == 'drifted')
    unchecked = sorted(h for h, r in per_host.items() if r['problems'])
    summary = '%d hosts drifted of %d' % (len(drifted), len(per_host))
    if unchecked:
        summary += '; %d not fully checked (%s)' % (len(unchecked), ', '.join(unchecked))
    return {
        'schema': SCHEMA,
        'run': dict(run),
        'summary': summary,
        'drifted_hosts': drifted,
        'unchecked_hosts': unchecked,
        'host_count': len(per_host),
        'hosts': per_host,
        'fleet': {'facts': {h: _flatten(f) for h, f in sorted((facts or {}).items())}, 'outliers': outliers},
    }


def _cell(text):
    return str(text).replace('|', '\\|').replace('\n', ' ')


def render_markdown(report):
    """drift.md: the summary line, a table of hosts, each drifted host's entries with their diffs, the fleet facts."""
    run = report.get('run', {})
    lines = ['# Drift report', '',
             '**%s.** Check run of %s, %s.' % (report['summary'], _cell(run.get('playbook', 'the playbooks')),
                                               run.get('started', '')), '']
    lines += ['| host | status | entries | odd fleet facts | not checked because |', '|---|---|---|---|---|']
    for host, record in sorted(report['hosts'].items()):
        lines.append('| %s | %s | %d | %s | %s |' % (
            _cell(host), record['status'], len(record['drift']), _cell(', '.join(record['odd_facts'])) or '-',
            _cell('; '.join(record['problems'])) or '-'))
    for host in report['drifted_hosts']:
        record = report['hosts'][host]
        lines += ['', '## %s' % host, '']
        for entry in record['drift']:
            where = ' (%s)' % entry['role'] if entry.get('role') else ''
            wanted = ', wanted %s' % entry['wanted'] if entry.get('wanted') else ''
            lines.append('- **%s** `%s`%s%s: %s' % (entry['kind'], entry['name'], wanted, where,
                                                    entry.get('task') or 'setting differs'))
            if entry.get('masked'):
                lines.append('  (content is a secret and is not shown)')
            elif entry.get('diff'):
                lines += ['', '  ```diff'] + ['  ' + line for line in entry['diff'].rstrip('\n').splitlines()] + ['  ```']
        for fact in record['odd_facts']:
            lines.append('- **fleet fact** `%s` differs from the fleet (see below)' % fact)
        for entry in record.get('would_also', []):
            lines.append('- correcting it would also run the handler *%s* (%s `%s`)' % (
                entry['task'], entry['kind'], entry['name']))
    outliers = report.get('fleet', {}).get('outliers', [])
    lines += ['', '## Fleet-wide facts', '']
    if not outliers:
        lines.append('Every fleet-wide fact has one value across the hosts that report it.')
    for outlier in outliers:
        values = '; '.join('`%s` on %s' % (_cell(value), ', '.join(hosts)) for value, hosts in outlier['values'].items())
        fleet = '`%s`' % outlier['fleet_value'] if outlier['fleet_value'] is not None else 'no majority'
        odd = ', '.join(outlier['odd_hosts'])
        lines.append('- **%s**: fleet %s; odd: %s (%s)' % (outlier['fact'], fleet, odd, values))
    return '\n'.join(lines) + '\n'
