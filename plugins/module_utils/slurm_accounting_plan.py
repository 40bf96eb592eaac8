# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The change plan of aicluster.infra.slurm_accounting: what slurmdbd has (parsed by slurm_accounting.parse_*)
plus what the inventory wants (slurm_accounting.wanted) gives ordered ``sacctmgr --immediate`` argument lists,
one record per changed object, and a before/after diff. Pure: no command runs here.

Order of the commands (sacctmgr(1) EXAMPLES: clusters, then accounts, then users): new QOS, QOS changes (a new
QOS gets its limits and Preempt list in a ``modify`` after ``add``, so a QOS may preempt one created in the same
run), accounts parents first, users, then deletions: user associations, accounts deepest first, QOS last.

Syntax (sacctmgr(1) of 22.05): ``Preempt=a,b`` sets the list and ``Preempt-=a`` removes from it; ``Flags=-1``,
``MaxWall=-1`` and ``TRES=-1`` clear a limit; an association's ``QOS=a,b`` sets its list; ``DefaultQOS`` goes in
its own command after the QOS list it must belong to.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils.slurm_accounting import (
    ACCOUNT_TABLE_KEYS, PROTECTED, QOS_KEYS, UNLIMITED, USER_ASSOC_KEYS, tres_text,
)

# What ``sacctmgr add qos Name=x`` makes (slurmdb_init_qos_rec); a new QOS is then modified from these.
NEW_QOS = {'priority': 0, 'grace_time': 0, 'preempt_mode': 'cluster', 'preempt': [], 'max_wall': UNLIMITED,
           'grp_tres': {}, 'max_tres_per_user': {}, 'flags': []}


def _same(key, have, want):
    if key in ('description', 'organization'):
        return ' '.join((have or '').split()).lower() == ' '.join((want or '').split()).lower()
    if key in ('flags', 'preempt', 'qos', 'accounts'):
        return sorted(item.lower() for item in have or []) == sorted(item.lower() for item in want or [])
    return have == want


def _differences(have, entry, keys):
    """{key: {'before': ..., 'after': ...}} for the wanted keys whose value differs from ``have``."""
    return dict((key, {'before': have.get(key), 'after': entry[key]}) for key in keys
                if key in entry and not _same(key, have.get(key), entry[key]))


def _qos_args(fields):
    args = []
    for key, change in sorted(fields.items()):
        before, after = change['before'], change['after']
        if key == 'preempt':
            args.append('Preempt=%s' % ','.join(after) if after else 'Preempt-=%s' % ','.join(before))
        elif key in ('grp_tres', 'max_tres_per_user'):
            limits = dict((name, UNLIMITED) for name in before or {} if name not in after)     # -1 clears one
            limits.update(after)
            args.append('%s=%s' % ('GrpTRES' if key == 'grp_tres' else 'MaxTRESPerUser', tres_text(limits)))
        elif key == 'flags':
            args.append('Flags=%s' % (','.join(after) or '-1'))
        else:
            args.append('%s=%s' % ({'priority': 'Priority', 'grace_time': 'GraceTime', 'preempt_mode': 'PreemptMode',
                                    'max_wall': 'MaxWall', 'description': 'Description'}[key], after))
    return args


def _assoc_args(fields):
    """``set`` arguments for an association's fairshare, QOS list and parent (DefaultQOS separately)."""
    names = {'fairshare': 'Fairshare', 'qos': 'QOS', 'parent': 'Parent'}
    return ['%s=%s' % (names[key], ','.join(change['after']) if key == 'qos' else change['after'])
            for key, change in sorted(fields.items()) if key in names]


def _group(phase, argv, name):
    """Add ``name`` to the command of ``phase`` (a dict, in insertion order) that has the same arguments."""
    phase.setdefault(tuple(argv), []).append(name)


class _Plan(object):
    def __init__(self, current, want, cluster):
        self.current, self.want, self.cluster = current, want, cluster
        self.changes, self.commands, self.problems = [], [], []
        assocs = current['assocs']
        self.account_assocs = dict((acct, rec) for (acct, user), rec in assocs.items() if not user)
        self.user_assocs = {}
        for (acct, user), rec in assocs.items():
            if user:
                self.user_assocs.setdefault(user, {})[acct] = rec

    def record(self, kind, name, action, fields, commands):
        self.changes.append({'object': '%s/%s' % (kind, name), 'action': action, 'fields': fields})
        self.commands.extend(commands)

    def present(self, kind):
        return [entry for name, entry in sorted(self.want[kind].items()) if entry['state'] == 'present']

    def doomed(self, kind, existing):
        """Names to delete: asked absent, or (with purge) not named at all; protected names never by purge."""
        asked = set(name for name, entry in self.want[kind].items() if entry['state'] == 'absent' and name in existing)
        if kind in self.want['purge']:
            asked |= set(existing) - set(self.want[kind]) - set(PROTECTED[kind])
        return asked

    # -- checks that need both sides ------------------------------------------------------------------------
    def check(self):
        self.qos_gone = self.doomed('qos', self.current['qos'])
        self.qos_after = (set(self.current['qos']) | set(e['name'] for e in self.present('qos'))) - self.qos_gone
        self.accounts_gone = self.doomed('accounts', self.account_assocs)
        self.accounts_after = (set(self.account_assocs) | set(e['name'] for e in self.present('accounts'))) \
            - self.accounts_gone
        self.users_gone = self.doomed('users', self.user_assocs)
        for kind, protected in (('accounts', 'root'), ('users', 'root')):
            entry = self.want[kind].get(protected)
            if entry and entry['state'] == 'absent':
                self.problems.append('%s: the %s %s is Slurm\'s own and is never deleted' % (entry['where'], kind[:-1],
                                                                                             protected))
        for entry in self.present('qos'):
            self.missing(entry, 'preempt', entry.get('preempt'), self.qos_after, 'QOS')
        for kind in ('accounts', 'users'):
            for entry in self.present(kind):
                self.missing(entry, 'qos', entry.get('qos'), self.qos_after, 'QOS')
                self.missing(entry, 'default_qos', [entry['default_qos']] if entry.get('default_qos') else [],
                             self.qos_after, 'QOS')
        for entry in self.present('accounts'):
            parent = self.parent(entry['name'])
            if parent and parent not in self.accounts_after:
                self.problems.append('%s.parent: account %s does not exist on cluster %s (or is deleted)'
                                     % (entry['where'], parent, self.cluster))
        for entry in self.present('users'):
            self.missing(entry, 'accounts', entry['accounts'], self.accounts_after,
                         'account on cluster %s' % self.cluster)
        return not self.problems

    def missing(self, entry, key, wanted_names, existing, what):
        lost = sorted(set(wanted_names or []) - existing)
        if lost:
            self.problems.append('%s.%s: no %s %s (not in Slurm, not asked for, or deleted)'
                                 % (entry['where'], key, what, ','.join(lost)))

    def parent(self, name):
        entry = self.want['accounts'].get(name) or {}
        current = self.account_assocs.get(name) or {}
        return entry.get('parent') or current.get('parent') or ('' if name == 'root' else 'root')

    def depth(self, name):
        seen = [name]
        while self.parent(seen[-1]):
            if self.parent(seen[-1]) in seen:
                self.problems.append('accounts: %s is its own ancestor (%s)' % (name, ' -> '.join(seen)))
                return len(seen)
            seen.append(self.parent(seen[-1]))
        return len(seen)

    # -- QOS ------------------------------------------------------------------------------------------------
    def qos(self):
        """Every new QOS is added first, then set up with the changes, so a Preempt list may name any of them."""
        created = [entry for entry in self.present('qos') if entry['name'] not in self.current['qos']]
        for entry in created:
            shown = dict((key, {'before': None, 'after': entry[key]}) for key in QOS_KEYS if key in entry)
            self.record('qos', entry['name'], 'create', shown, [['add', 'qos', 'Name=%s' % entry['name']]])
        for entry in self.present('qos'):
            name = entry['name']
            have = self.current['qos'].get(name) or dict(NEW_QOS, description=name)
            fields = _differences(have, entry, QOS_KEYS)
            if not fields:
                continue
            command = ['modify', 'qos', 'where', 'Name=%s' % name, 'set'] + _qos_args(fields)
            if name in self.current['qos']:
                self.record('qos', name, 'modify', fields, [command])
            else:
                self.commands.append(command)

    # -- accounts -------------------------------------------------------------------------------------------
    def accounts(self):
        for entry in sorted(self.present('accounts'), key=lambda e: (self.depth(e['name']), e['name'])):
            name = entry['name']
            assoc = self.account_assocs.get(name)
            where = ['modify', 'account', 'where', 'Name=%s' % name]
            on_cluster = where + ['Cluster=%s' % self.cluster, 'set']
            if assoc is None:
                add = ['add', 'account', 'Name=%s' % name, 'Cluster=%s' % self.cluster, 'Parent=%s' % self.parent(name)]
                add += ['%s=%s' % (key.capitalize(), entry[key]) for key in ACCOUNT_TABLE_KEYS if key in entry]
                fields = dict((key, {'before': None, 'after': entry[key]}) for key in ('fairshare', 'qos') if key in entry)
                commands = [add] + ([on_cluster + _assoc_args(fields)] if fields else [])
                if entry.get('default_qos'):
                    commands.append(on_cluster + ['DefaultQOS=%s' % entry['default_qos']])
                shown = dict((key, {'before': None, 'after': entry[key]}) for key in
                             ACCOUNT_TABLE_KEYS + ('fairshare', 'qos', 'default_qos') if key in entry)
                shown['parent'] = {'before': None, 'after': self.parent(name)}
                self.record('accounts', name, 'create', shown, commands)
                continue
            table = _differences(self.current['accounts'].get(name) or {}, entry, ACCOUNT_TABLE_KEYS)
            fields = _differences(assoc, entry, ('parent', 'fairshare', 'qos'))
            default = _differences(assoc, entry, ('default_qos',))
            commands = ([where + ['set'] + ['%s=%s' % (key.capitalize(), change['after'])
                                            for key, change in sorted(table.items())]] if table else [])
            commands += [on_cluster + _assoc_args(fields)] if fields else []
            commands += [on_cluster + ['DefaultQOS=%s' % entry['default_qos']]] if default else []
            if commands:
                self.record('accounts', name, 'modify', dict(table, **dict(fields, **default)), commands)

    # -- users ----------------------------------------------------------------------------------------------
    def users(self):
        """Users' commands, the same change for several users in one command (``Name=a,b,c``: sacctmgr(1) warns
        against running it in loops), in phases: add, association QOS/fairshare, DefaultQOS, DefaultAccount,
        AdminLevel."""
        phases = [{} for dummy in range(5)]      # each: argv with a {names} slot -> user names
        for entry in self.present('users'):
            name = entry['name']
            have_user = self.current['users'].get(name)
            have_assocs = self.user_assocs.get(name, {})
            missing = [acct for acct in entry['accounts'] if acct not in have_assocs]
            fields = {}
            if missing:
                add = ['add', 'user', '{names}', 'Account=%s' % ','.join(missing), 'Cluster=%s' % self.cluster]
                if have_user is None:
                    add.append('DefaultAccount=%s' % entry['default_account'])
                    if entry.get('admin_level'):
                        add.append('AdminLevel=%s' % entry['admin_level'])
                _group(phases[0], add, name)
                fields['accounts'] = {'before': sorted(have_assocs) or None, 'after': sorted(set(have_assocs) | set(missing))}
            for acct in entry['accounts']:
                have = have_assocs.get(acct)
                if have is None:
                    change = dict((key, {'before': None, 'after': entry[key]}) for key in USER_ASSOC_KEYS if key in entry)
                else:
                    change = _differences(have, entry, USER_ASSOC_KEYS)
                where = ['modify', 'user', 'where', '{names}', 'Cluster=%s' % self.cluster, 'Account=%s' % acct, 'set']
                if _assoc_args(change):
                    _group(phases[1], where + _assoc_args(change), name)
                if 'default_qos' in change:
                    _group(phases[2], where + ['DefaultQOS=%s' % entry['default_qos']], name)
                fields.update(('%s/%s' % (acct, key), value) for key, value in change.items())
            if have_user is not None:
                for phase, key, argv in ((3, 'default_account', ['Cluster=%s' % self.cluster, 'set', 'DefaultAccount=%s']),
                                         (4, 'admin_level', ['set', 'AdminLevel=%s'])):
                    change = _differences(have_user, entry, (key,))
                    if change:
                        _group(phases[phase], ['modify', 'user', 'where', '{names}'] + argv[:-1] + [argv[-1] % entry[key]],
                               name)
                        fields.update(change)
            if fields:
                self.record('users', name, 'create' if have_user is None else 'modify', fields, [])
        for phase in phases:
            self.commands.extend([('Name=%s' % ','.join(names)) if arg == '{names}' else arg for arg in argv]
                                 for argv, names in phase.items())

    # -- deletions ------------------------------------------------------------------------------------------
    def deletions(self):
        for name in sorted(self.users_gone):
            self.record('users', name, 'delete', {'accounts': {'before': sorted(self.user_assocs[name]), 'after': None}}, [])
        if self.users_gone:
            self.commands.append(['delete', 'user', 'where', 'Name=%s' % ','.join(sorted(self.users_gone)),
                                  'Cluster=%s' % self.cluster])
        if 'users' in self.want['purge']:
            for entry in self.present('users'):
                extra = sorted(set(self.user_assocs.get(entry['name'], {})) - set(entry['accounts']) - self.accounts_gone)
                if extra:
                    self.record('users', entry['name'], 'modify',
                                {'accounts': {'before': sorted(self.user_assocs[entry['name']]), 'after': entry['accounts']}},
                                [['delete', 'user', 'where', 'Name=%s' % entry['name'], 'Cluster=%s' % self.cluster,
                                  'Account=%s' % acct] for acct in extra])
        for name in sorted(self.accounts_gone, key=lambda n: (-self.depth(n), n)):
            self.record('accounts', name, 'delete', dict((key, {'before': value, 'after': None}) for key, value in
                                                         sorted(self.account_assocs[name].items()) if key not in ('user', 'account')),
                        [['delete', 'account', 'where', 'Name=%s' % name, 'Cluster=%s' % self.cluster]])
        for name in sorted(self.qos_gone):
            self.record('qos', name, 'delete', dict((key, {'before': value, 'after': None}) for key, value in
                                                    sorted(self.current['qos'][name].items()) if key != 'name'),
                        [['delete', 'qos', 'where', 'Name=%s' % name]])


def plan(current, want, cluster):
    """The change plan: {'changes': [...], 'commands': [[argv after 'sacctmgr --immediate'], ...], 'problems': [...]}.

    ``current``: {'qos': parse_qos(), 'accounts': parse_accounts(), 'assocs': parse_assocs() of ``cluster``,
    'users': parse_users()}; ``want``: slurm_accounting.wanted()[0]. With problems (a name that does not exist,
    a default outside its list) nothing is planned.
    """
    work = _Plan(current, want, cluster)
    if work.check():
        work.qos()
        work.accounts()
        work.users()
        work.deletions()
    if work.problems:
        return {'changes': [], 'commands': [], 'problems': work.problems}
    return {'changes': work.changes, 'commands': work.commands, 'problems': []}


def _show(key, value):
    if value is None:
        return '~'
    if isinstance(value, dict):
        return tres_text(value) or '(none)'
    if isinstance(value, list):
        return ','.join(value) or '(none)'
    if key.endswith('max_wall'):
        return 'UNLIMITED' if value == UNLIMITED else '%d min' % value
    if key.endswith('grace_time'):
        return '%d s' % value
    return str(value)


def diff(changes):
    """Before and after texts of the changed objects (only the fields that change; a created object has no
    before, a deleted one no after)."""
    before, after = [], []
    for change in changes:
        for side, lines, skip in (('before', before, 'create'), ('after', after, 'delete')):
            if change['action'] == skip:
                continue
            lines.append('%s:\n' % change['object'])
            lines.extend('  %s: %s\n' % (key, _show(key, value[side])) for key, value in sorted(change['fields'].items()))
    return {'before': ''.join(before), 'after': ''.join(after)}
