# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm accounting policy: ``sacctmgr --noheader --parsable2 show ...`` parsers, value normalisation, and the
change plan that turns the wanted QOS, accounts and user associations into ``sacctmgr --immediate`` commands.

What sacctmgr of Slurm 22.05 prints (src/sacctmgr/common.c, qos_functions.c; sacctmgr(1)), and how it compares:

* names of QOS, accounts, users and clusters are stored in lower case; descriptions and organizations are
  lower-cased too (``strip_quotes(..., make_lower)``), so free text compares case-insensitively;
* ``MaxWall`` as ``[D-]HH:MM:SS`` (minutes; empty when unlimited), ``GraceTime`` as ``[D-]HH:MM:SS`` (seconds);
* ``Preempt`` and an association's ``QOS`` as comma lists in no promised order (compared as sets);
* ``PreemptMode`` lower case, ``cluster`` when the QOS has none of its own;
* TRES limits as ``cpu=4,gres/gpu=8,mem=500G`` (memory with a unit, in any order), ``Flags`` as
  ``DenyOnLimit,NoReserve``, an association's share as a number or ``parent``.

Everything here is pure: text in, plain dicts and lists out; the module runs the commands.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError

# Columns asked for with ``format=`` (the free-text ones last: a ``|`` inside them cannot shift the others).
QOS_FORMAT = ('Name', 'Priority', 'GraceTime', 'PreemptMode', 'Preempt', 'MaxWall', 'GrpTRES', 'MaxTRESPU', 'Flags',
              'Description')
ACCOUNT_FORMAT = ('Account', 'Organization', 'Description')
ASSOC_FORMAT = ('Account', 'User', 'Partition', 'ParentName', 'Fairshare', 'QOS', 'DefaultQOS')
USER_FORMAT = ('User', 'DefaultAccount', 'AdminLevel')
CLUSTER_FORMAT = ('Cluster',)

KINDS = ('qos', 'accounts', 'users')
# Never purged: Slurm's own default QOS, the root account and root's association.
PROTECTED = {'qos': ('normal',), 'accounts': ('root',), 'users': ('root',)}
QOS_FLAGS = dict((flag.lower(), flag) for flag in (
    'DenyOnLimit', 'EnforceUsageThreshold', 'NoDecay', 'NoReserve', 'OverPartQOS', 'PartitionMaxNodes',
    'PartitionMinNodes', 'PartitionTimeLimit', 'RequiresReservation', 'UsageFactorSafe'))
ADMIN_LEVELS = {'none': 'None', 'operator': 'Operator', 'admin': 'Administrator', 'administrator': 'Administrator'}
UNLIMITED = -1

_NAME_RE = re.compile(r'^[a-z0-9_][a-z0-9_.-]*$')
_TRES_KEY_RE = re.compile(r'^[a-z][a-z0-9_]*(/[^=,\s]+)?$')
_TRES_VALUE_RE = re.compile(r'^(?P<num>-?\d+(\.\d+)?)(?P<unit>[KMGTP]?)$', re.IGNORECASE | re.ASCII)
_TIME_RE = re.compile(r'^(?:(?P<days>\d+)-)?(?P<rest>\d+(?::\d+){0,2})$', re.ASCII)
_INT_RE = re.compile(r'^-?[0-9]+$')
_ERROR_RE = re.compile(r'^\s*sacctmgr: (error|fatal):')
_UNIT_POWER = {'': 0, 'K': -1, 'M': 0, 'G': 1, 'T': 2, 'P': 3}
_BAD_TEXT = ('"', "'", '|', '\n', '\r')


# ---------------------------------------------------------------------------
# Parsing what sacctmgr prints
# ---------------------------------------------------------------------------

def parse_rows(text, fields):
    """Rows of ``sacctmgr --noheader --parsable2 show ... format=<fields>`` as dicts of the printed strings.

    A line with more ``|`` than fields keeps the rest in the last (free-text) field; fewer fields, a line
    sacctmgr prints as an error, or text that is not a string raise ParseError. Empty lines are skipped.
    """
    if not isinstance(text, str):
        raise ParseError('sacctmgr output must be text, not %s' % type(text).__name__)
    rows = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip('\r')
        if not line.strip():
            continue
        if _ERROR_RE.match(line):
            raise ParseError('sacctmgr reported: %s' % line.strip(), number, raw)
        parts = line.split('|')
        if len(parts) < len(fields):
            raise ParseError('expected %d |-separated fields (%s)' % (len(fields), ','.join(fields)), number, raw)
        parts = parts[:len(fields) - 1] + ['|'.join(parts[len(fields) - 1:])]
        rows.append(dict(zip(fields, parts)))
    return rows


def slurm_seconds(value):
    """Seconds of a Slurm time string: ``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH``, ``D-HH:MM``, ``D-HH:MM:SS``
    (sacctmgr(1), ``MaxWall``). ``UNLIMITED``/``INFINITE``/empty give UNLIMITED; anything else raises ValueError."""
    text = str(value).strip()
    if text.upper() in ('', 'UNLIMITED', 'INFINITE', '-1'):
        return UNLIMITED
    match = _TIME_RE.match(text)
    if not match:
        raise ValueError('%r is not a Slurm time ([D-]HH:MM:SS, minutes)' % text)
    parts = [int(part) for part in match.group('rest').split(':')]
    if match.group('days') is not None:
        hours, minutes, seconds = (parts + [0, 0])[:3]
        return ((int(match.group('days')) * 24 + hours) * 60 + minutes) * 60 + seconds
    if len(parts) == 1:
        return parts[0] * 60
    if len(parts) == 2:
        return parts[0] * 60 + parts[1]
    return (parts[0] * 60 + parts[1]) * 60 + parts[2]


def minutes(value):
    """A wall-time limit in whole minutes (an int is minutes; Slurm rounds seconds up); UNLIMITED for none."""
    if isinstance(value, bool):
        raise ValueError('%r is not a time' % (value,))
    if isinstance(value, int):
        return UNLIMITED if value < 0 else value
    total = slurm_seconds(value)
    return UNLIMITED if total == UNLIMITED else (total + 59) // 60


def seconds(value):
    """A grace time in seconds: an int (or digits) is seconds, ``[D-]HH:MM:SS`` is a Slurm time; empty is 0."""
    if isinstance(value, bool):
        raise ValueError('%r is not a time' % (value,))
    if isinstance(value, int):
        return max(value, 0)
    text = str(value).strip()
    if _INT_RE.match(text) and not text.startswith('-'):
        return int(text)
    if text == '':
        return 0
    found = slurm_seconds(text) if (':' in text or '-' in text) else None
    if found is None or found == UNLIMITED:
        raise ValueError('%r is not a grace time (seconds or [D-]HH:MM:SS)' % text)
    return found


def tres(value):
    """TRES limits as ``{'cpu': 4, 'gres/gpu': 8, 'mem': 512000}`` (memory in MB) from a dict or from
    ``cpu=4,gres/gpu=8,mem=500G`` as sacctmgr prints it. None and '' give {}. Raises ValueError."""
    if value is None:
        return {}
    if isinstance(value, dict):
        items = [(str(key), value[key]) for key in value]
    else:
        text = str(value).strip()
        items = [part.split('=', 1) if '=' in part else (part, None) for part in text.split(',') if part.strip()]
    found = {}
    for key, raw in items:
        key = key.strip().lower()
        if not _TRES_KEY_RE.match(key):
            raise ValueError('%r is not a TRES name (cpu, mem, node, billing, gres/gpu, gres/gpu:h100, ...)' % key)
        match = _TRES_VALUE_RE.match(str(raw).strip()) if raw is not None and not isinstance(raw, bool) else None
        if not match:
            raise ValueError('TRES %s=%r is not a count' % (key, raw))
        if len(match.group('num')) > 18:
            raise ValueError('TRES %s=%r is too large' % (key, raw))
        number = float(match.group('num'))
        if number < 0:
            found[key] = UNLIMITED
            continue
        power = _UNIT_POWER[match.group('unit').upper()]
        if key in ('mem', 'vmem') or key.startswith('bb/'):
            count = number * 1024 ** power          # the unit is MB
        else:
            count = number * 1024 ** (power + 1) if match.group('unit') else number
        found[key] = int(round(count))
    return found


def tres_text(limits):
    """``{'gres/gpu': 8, 'cpu': 4}`` as ``cpu=4,gres/gpu=8`` (sorted by name; UNLIMITED written as -1)."""
    return ','.join('%s=%d' % (key, limits[key]) for key in sorted(limits))


def names(value):
    """A comma list or list of names, lower case, sorted and unique."""
    if value is None:
        return []
    parts = value.split(',') if isinstance(value, str) else value
    return sorted(set(str(part).strip().lower() for part in parts if str(part).strip()))


def flags(value):
    """QOS flags as sorted canonical names (``DenyOnLimit``); unknown flags kept as given."""
    return sorted(set(QOS_FLAGS.get(flag.lower(), flag) for flag in (value.split(',') if isinstance(value, str) else value)
                      if flag.strip()), key=str.lower)


def _text(value):
    return ' '.join((value or '').split()).lower()


def _count(value, default=0):
    value = (value or '').strip()
    return int(value) if _INT_RE.match(value) else default


def _share(value):
    value = (value or '').strip().lower()
    return value if value == 'parent' else _count(value, 1)


def parse_qos(text):
    """``show qos format=QOS_FORMAT`` as {name: record} with comparable values."""
    found = {}
    for row in parse_rows(text, QOS_FORMAT):
        name = row['Name'].strip().lower()
        try:
            found[name] = {
                'name': name, 'priority': _count(row['Priority']), 'grace_time': seconds(row['GraceTime']),
                'preempt_mode': row['PreemptMode'].strip().lower() or 'cluster', 'preempt': names(row['Preempt']),
                'max_wall': minutes(row['MaxWall']), 'grp_tres': tres(row['GrpTRES']),
                'max_tres_per_user': tres(row['MaxTRESPU']), 'flags': flags(row['Flags']),
                'description': row['Description'].strip()}
        except ValueError as exc:
            raise ParseError('QOS %s: %s' % (name, exc))
    return found


def parse_accounts(text):
    """``show account format=ACCOUNT_FORMAT`` as {name: {name, organization, description}}."""
    return dict((row['Account'].strip().lower(), {'name': row['Account'].strip().lower(),
                                                  'organization': row['Organization'].strip(),
                                                  'description': row['Description'].strip()})
                for row in parse_rows(text, ACCOUNT_FORMAT))


def parse_assocs(text):
    """``show assoc cluster=C format=ASSOC_FORMAT`` as {(account, user): record}; user '' for an account's own
    association. Partition associations are left out (this module does not manage them)."""
    found = {}
    for row in parse_rows(text, ASSOC_FORMAT):
        if row['Partition'].strip():
            continue
        key = (row['Account'].strip().lower(), row['User'].strip().lower())
        found[key] = {'account': key[0], 'user': key[1], 'parent': row['ParentName'].strip().lower(),
                      'fairshare': _share(row['Fairshare']), 'qos': names(row['QOS']),
                      'default_qos': row['DefaultQOS'].strip().lower()}
    return found


def parse_users(text):
    """``show user format=USER_FORMAT`` as {name: {name, default_account, admin_level}}."""
    return dict((row['User'].strip().lower(), {'name': row['User'].strip().lower(),
                                               'default_account': row['DefaultAccount'].strip().lower(),
                                               'admin_level': ADMIN_LEVELS.get(row['AdminLevel'].strip().lower(),
                                                                               row['AdminLevel'].strip())})
                for row in parse_rows(text, USER_FORMAT))


def parse_clusters(text):
    """``show cluster format=Cluster`` as a sorted list of names."""
    return sorted(row['Cluster'].strip().lower() for row in parse_rows(text, CLUSTER_FORMAT))


# ---------------------------------------------------------------------------
# What the inventory asks for
# ---------------------------------------------------------------------------

QOS_KEYS = ('priority', 'grace_time', 'preempt_mode', 'preempt', 'max_wall', 'grp_tres', 'max_tres_per_user', 'flags',
            'description')
ACCOUNT_TABLE_KEYS = ('description', 'organization')        # the account itself (all clusters)
USER_ASSOC_KEYS = ('fairshare', 'qos', 'default_qos')


def purge_kinds(value):
    """``purge``: false/None/[] nothing, true everything, else a kind or list of kinds (qos, accounts, users)."""
    if value in (None, False, '', []) or str(value).lower() in ('false', 'no'):
        return set(), []
    if value is True or str(value).lower() in ('true', 'yes', 'all'):
        return set(KINDS), []
    kinds = set(part.strip().lower() for part in (value.split(',') if isinstance(value, str) else value))
    bad = sorted(kinds - set(KINDS) - set(['all']))
    problems = ['purge must be true, false or a list of %s (got %s)' % ('/'.join(KINDS), ','.join(bad))] if bad else []
    return (set(KINDS) if 'all' in kinds else kinds), problems


def _free_text(where, key, value, problems):
    if value is None:
        return None
    value = str(value)
    if any(char in value for char in _BAD_TEXT):
        problems.append('%s.%s must not contain quotes, "|" or line breaks' % (where, key))
    return value.strip()


def _names(where, key, value, problems, empty_ok=True):
    if value is None:
        return None
    found = names(value)
    bad = [name for name in found if not _NAME_RE.match(name)]
    if bad:
        problems.append('%s.%s: %s are not Slurm names (letters, digits, "_", ".", "-")' % (where, key, ','.join(bad)))
    if not found and not empty_ok:
        problems.append('%s.%s must name at least one (leave it out to keep what Slurm has)' % (where, key))
    return found


def _fairshare(where, value, problems):
    if value is None:
        return None
    text = str(value).strip().lower()
    if text == 'parent':
        return 'parent'
    if not _INT_RE.match(text) or text.startswith('-'):
        problems.append('%s.fairshare must be a whole number or "parent" (got %r)' % (where, value))
        return None
    return int(text)


def _entries(kind, items, problems):
    """Entries by lower-case name, each with ``where`` (``qos[1] (training)``) for messages."""
    found = {}
    for index, item in enumerate(items or []):
        name = str(item.get('name') or '').strip().lower()
        where = '%s[%d] (%s)' % (kind, index, name)
        if not _NAME_RE.match(name):
            problems.append('%s.name must be letters, digits, "_", "." and "-"' % where)
        elif name in found:
            problems.append('%s: %s is named twice' % (where, name))
            continue
        found[name] = dict(item, name=name, where=where, state=item.get('state') or 'present')
    return found


def wanted(params):
    """The module's ``qos``, ``accounts``, ``users`` and ``purge`` as normalised wants and a list of problems.

    A key that is None (left out) is not managed: Slurm keeps what it has.
    """
    problems = []
    want = {'qos': {}, 'accounts': {}, 'users': {}}
    for name, item in _entries('qos', params.get('qos'), problems).items():
        where = item['where']
        entry = {'name': name, 'state': item['state'], 'where': where}
        for key, convert in (('max_wall', minutes), ('grace_time', seconds), ('grp_tres', tres),
                             ('max_tres_per_user', tres)):
            if item.get(key) is not None:
                try:
                    entry[key] = convert(item[key])
                except ValueError as exc:
                    problems.append('%s.%s: %s' % (where, key, exc))
        for key in ('grp_tres', 'max_tres_per_user'):
            if key in entry:          # -1 means "no limit": the same as leaving the TRES out
                entry[key] = dict((tres_name, count) for tres_name, count in entry[key].items() if count != UNLIMITED)
        if item.get('priority') is not None:
            entry['priority'] = item['priority']
            if item['priority'] < 0:
                problems.append('%s.priority must be 0 or more' % where)
        if item.get('preempt_mode') is not None:
            entry['preempt_mode'] = item['preempt_mode'].lower()
        if item.get('preempt') is not None:
            entry['preempt'] = _names(where, 'preempt', item['preempt'], problems)
        if item.get('flags') is not None:
            entry['flags'] = flags(item['flags'])
        if item.get('description') is not None:
            entry['description'] = _free_text(where, 'description', item['description'], problems)
        want['qos'][name] = entry
    for name, item in _entries('accounts', params.get('accounts'), problems).items():
        where = item['where']
        entry = {'name': name, 'state': item['state'], 'where': where}
        for key in ('description', 'organization'):
            if item.get(key) is not None:
                entry[key] = _free_text(where, key, item[key], problems)
        if item.get('parent'):
            entry['parent'] = (_names(where, 'parent', [item['parent']], problems) or [''])[0]
        if item.get('fairshare') is not None:
            entry['fairshare'] = _fairshare(where, item['fairshare'], problems)
        if item.get('qos') is not None:
            entry['qos'] = _names(where, 'qos', item['qos'], problems, empty_ok=False)
        if item.get('default_qos'):
            entry['default_qos'] = (_names(where, 'default_qos', [item['default_qos']], problems) or [''])[0]
        want['accounts'][name] = entry
    for name, item in _entries('users', params.get('users'), problems).items():
        where = item['where']
        entry = {'name': name, 'state': item['state'], 'where': where,
                 'accounts': _names(where, 'accounts', item.get('accounts') or [], problems)}
        if entry['state'] == 'present' and not entry['accounts']:
            problems.append('%s.accounts must name at least one account' % where)
        if item.get('default_account'):
            entry['default_account'] = str(item['default_account']).strip().lower()
            if entry['default_account'] not in entry['accounts']:
                problems.append('%s.default_account %s is not one of its accounts' % (where, entry['default_account']))
        elif entry['accounts']:         # the first account listed
            given = item['accounts'].split(',') if isinstance(item['accounts'], str) else item['accounts']
            entry['default_account'] = str(given[0]).strip().lower()
        if item.get('admin_level') is not None:
            entry['admin_level'] = ADMIN_LEVELS[item['admin_level'].lower()]
        if item.get('fairshare') is not None:
            entry['fairshare'] = _fairshare(where, item['fairshare'], problems)
        if item.get('qos') is not None:
            entry['qos'] = _names(where, 'qos', item['qos'], problems, empty_ok=False)
        if item.get('default_qos'):
            entry['default_qos'] = str(item['default_qos']).strip().lower()
        want['users'][name] = entry
    for kind in ('accounts', 'users'):
        for entry in want[kind].values():
            if entry.get('default_qos') and entry.get('qos') is not None and entry['default_qos'] not in entry['qos']:
                problems.append('%s.default_qos %s is not in its qos list' % (entry['where'], entry['default_qos']))
    kinds, bad = purge_kinds(params.get('purge'))
    want['purge'] = kinds
    return want, problems + bad
