# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""OpenSM partitions: the ``opensm_partitions`` variable checked, rendered to partitions.conf, parsed back and compared.

The variable (docs/fabric.md), one dict per partition::

    - {name: Default, pkey: 0x7fff, ipoib: true, mtu: 4096, rate: 400, members: [{guid: ALL, membership: full}]}
    - {name: tenant-a, pkey: "0x0001", ipoib: true, mtu: 4096, rate: 400, sl: 0, scope: 2, defmember: limited,
       members: [{guid: "0x946dae0300cde72c", membership: full}, {guid: SELF, membership: full}]}

``mtu`` is in bytes and ``rate`` in Gb/s; partitions.conf takes the IBTA codes, converted here (MTU_CODES,
RATE_CODES) and refused when unknown. The grammar is OpenSM's (linux-rdma/opensm doc/partition-config.txt and
opensm/osm_prtn_config.c @3.3.23, osm_prtn_config_parse_file()): ``#`` starts a comment to the end of the line,
``;`` ends a partition, which may continue over lines after its ``Name=PKey,flag,...:`` header (the header itself
must be on one line), members are ``GUID[=full|limited|both]`` separated by commas, flags and keywords may be
abbreviated (OpenSM compares with ``strncmp(given, keyword, strlen(given))``). A line is read into a 4096-byte
buffer, so the renderer writes 8 members a line. There is no escaping in that grammar: names are restricted to
characters that cannot end a token (NAME_RE) and at most 31 of them (osm_partition.h ``char name[32]``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.verify.fabric import norm_guid

# IBTA MTU codes (include/iba/ib_types.h IB_MTU_LEN_256..4096; partition-config.txt "mtu=4 for 2048")
MTU_CODES = {256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}
# IBTA rate codes, Gb/s -> code (include/iba/ib_types.h IB_PATH_RECORD_RATE_*, "following v1 ver1.3 p984";
# the same values in opensm 3.3.23 and @fa74b98c)
RATE_CODES = {2.5: 2, 10: 3, 30: 4, 5: 5, 20: 6, 40: 7, 60: 8, 80: 9, 120: 10, 14: 11, 56: 12, 112: 13, 168: 14,
              25: 15, 100: 16, 200: 17, 300: 18, 28: 19, 50: 20, 400: 21, 600: 22, 800: 23, 1200: 24}
MTU_BY_CODE = dict((code, mtu) for mtu, code in MTU_CODES.items())
RATE_BY_CODE = dict((code, rate) for rate, code in RATE_CODES.items())
# osm_base.h OSM_DEFAULT_MGRP_MTU 0x04, OSM_DEFAULT_MGRP_RATE 0x03, OSM_DEFAULT_SL 0: what OpenSM uses when unset
OPENSM_DEFAULT_MTU, OPENSM_DEFAULT_RATE = 2048, 10
DEFAULT_NAME, DEFAULT_PKEY = 'Default', 0x7fff
KEYWORDS = ('ALL', 'ALL_CAS', 'ALL_SWITCHES', 'ALL_ROUTERS', 'SELF')
MEMBERSHIPS = ('full', 'limited', 'both')
FIELDS = ('name', 'pkey', 'ipoib', 'mtu', 'rate', 'sl', 'scope', 'defmember', 'indx0', 'members')
NAME_RE = re.compile(r'^[A-Za-z_][A-Za-z0-9_.+@-]{0,30}$')
MEMBERS_PER_LINE = 8
VAR = 'opensm_partitions'


def pkey_number(value):
    """``'0x8001'`` / ``32769`` -> 32769; ValueError when not a number (also read by verify/partition.py)."""
    if isinstance(value, bool):
        raise ValueError('P_Key %r is not a number' % (value,))
    text = str(value).strip().lower()
    try:
        return int(text, 16) if text.startswith('0x') else int(text)
    except ValueError:
        raise ValueError('P_Key %r is not a number' % (value,))


def _number(value):
    if isinstance(value, bool):
        raise ValueError
    if isinstance(value, (int, float)):
        number = value
    else:
        number = float(str(value).strip())
    return int(number) if float(number).is_integer() else float(number)


def _rates_text():
    return ', '.join('%s' % rate for rate in sorted(RATE_CODES))


def mtu_code(mtu):
    """MTU in bytes -> IBTA code (4096 -> 5); ValueError naming the allowed values."""
    try:
        return MTU_CODES[_number(mtu)]
    except (KeyError, ValueError, TypeError):
        raise ValueError('unknown MTU %r; allowed (bytes): %s' % (mtu, ', '.join(str(m) for m in sorted(MTU_CODES))))


def rate_code(rate):
    """Rate in Gb/s -> IBTA code (400 -> 21, 2.5 -> 2); ValueError naming the allowed values."""
    try:
        return RATE_CODES[_number(rate)]
    except (KeyError, ValueError, TypeError):
        raise ValueError('unknown rate %r; allowed (Gb/s): %s' % (rate, _rates_text()))


def _member_problems(where, members, seen_guids):
    problems = []
    if not isinstance(members, list):
        return ['%s.members must be a list of {guid, membership}, got %r' % (where, members)]
    for index, member in enumerate(members):
        at = '%s.members[%d]' % (where, index)
        if not isinstance(member, dict) or set(member) - {'guid', 'membership'}:
            problems.append('%s must be a dict with guid and membership, got %r' % (at, member))
            continue
        guid = member.get('guid')
        key = guid if guid in KEYWORDS else norm_guid(guid) if isinstance(guid, str) else None
        if key is None or key == '0x%016x' % 0:
            problems.append('%s.guid: %r is not a port GUID (0x and 16 hex digits) or one of %s'
                            % (at, guid, ', '.join(KEYWORDS)))
        elif key in seen_guids:
            problems.append('%s.guid: %s is listed twice in this partition (OpenSM keeps the last)' % (at, guid))
        else:
            seen_guids.add(key)
        if member.get('membership') is not None and member.get('membership') not in MEMBERSHIPS:
            problems.append('%s.membership: %r is not one of %s' % (at, member.get('membership'), ', '.join(MEMBERSHIPS)))
    return problems


def _rate_problems(where, rate, members, port_rates):
    """The IPoIB broadcast group's rate above a member port's rate: that port cannot join it."""
    slowest = {}
    for member in members if isinstance(members, list) else []:
        guid = member.get('guid') if isinstance(member, dict) else None
        if guid in ('ALL', 'ALL_CAS'):
            slowest.update((g, r) for g, r in port_rates.items())
        elif isinstance(guid, str) and norm_guid(guid) in port_rates:
            slowest[norm_guid(guid)] = port_rates[norm_guid(guid)]
    if not slowest:
        return []
    guid, port_rate = min(slowest.items(), key=lambda item: (item[1], item[0]))
    if port_rate < rate:
        return ['%s.rate: %s Gb/s is above port %s\'s %s Gb/s: that port cannot join the partition\'s IPoIB group; '
                'set rate to at most %s (allowed: %s)' % (where, rate, guid, port_rate, port_rate, _rates_text())]
    return []


def _partition_problems(where, item, port_rates):
    problems = []
    unknown = sorted(set(item) - set(FIELDS))
    if unknown:
        problems.append('%s: unknown keys %s; allowed: %s' % (where, ', '.join(unknown), ', '.join(FIELDS)))
    name = item.get('name')
    if not isinstance(name, str) or not NAME_RE.match(name):
        problems.append('%s.name: %r must be 1-31 characters of letters, digits and _ . + @ - starting with a letter '
                        'or _ (partitions.conf has no escaping; osm_partition.h name[32])' % (where, name))
    try:
        pkey = pkey_number(item.get('pkey'))
    except ValueError:
        pkey = None
        problems.append('%s.pkey: %r is not a number; give 0x0001-0x7ffe' % (where, item.get('pkey')))
    if pkey is not None:
        if pkey == DEFAULT_PKEY and name != DEFAULT_NAME:
            problems.append('%s.pkey: 0x7fff is the default partition\'s, allowed only for the entry named %s'
                            % (where, DEFAULT_NAME))
        elif pkey != DEFAULT_PKEY and not 0x0001 <= pkey <= 0x7ffe:
            problems.append('%s.pkey: %#06x is outside 0x0001-0x7ffe (the membership bit 0x8000 comes from each '
                            'member\'s membership)' % (where, pkey))
        if name == DEFAULT_NAME and pkey != DEFAULT_PKEY:
            problems.append('%s.pkey: the partition named %s must have P_Key 0x7fff, got %#06x' % (where, DEFAULT_NAME, pkey))
    if not isinstance(item.get('ipoib', False), bool):
        problems.append('%s.ipoib must be true or false, got %r' % (where, item.get('ipoib')))
    if not isinstance(item.get('indx0', False), bool):
        problems.append('%s.indx0 must be true or false, got %r' % (where, item.get('indx0')))
    for field, convert in (('mtu', mtu_code), ('rate', rate_code)):
        if item.get(field) is None:
            continue
        try:
            convert(item[field])
        except ValueError as exc:
            problems.append('%s.%s: %s' % (where, field, exc))
            continue
        if not item.get('ipoib'):
            problems.append('%s.%s: used only for the IPoIB broadcast group; set ipoib: true or remove it' % (where, field))
    sl = item.get('sl')
    if sl is not None and (isinstance(sl, bool) or not isinstance(sl, int) or not 0 <= sl <= 15):
        problems.append('%s.sl: %r must be an integer 0-15' % (where, sl))
    scopes = item.get('scope')
    if scopes is not None:
        if not item.get('ipoib'):
            problems.append('%s.scope: used only for the IPoIB broadcast group; set ipoib: true or remove it' % where)
        for scope in scopes if isinstance(scopes, list) else [scopes]:
            if isinstance(scope, bool) or not isinstance(scope, int) or not 1 <= scope <= 15:
                problems.append('%s.scope: %r must be an integer 1-15 (2 link-local, 5 site-local, 8 organisation, '
                                '14 global) or a list of them' % (where, scope))
    if item.get('defmember') is not None and item.get('defmember') not in MEMBERSHIPS:
        problems.append('%s.defmember: %r is not one of %s' % (where, item.get('defmember'), ', '.join(MEMBERSHIPS)))
    problems.extend(_member_problems(where, item.get('members', []), set()))
    if port_rates and item.get('rate') is not None and not any(p.startswith(where + '.rate:') for p in problems):
        problems.extend(_rate_problems(where, _number(item['rate']), item.get('members', []), port_rates))
    return problems


def partitions_problems(partitions, port_rates=None, require_default=True):
    """One line per bad item of ``opensm_partitions``, each naming it (``opensm_partitions[1].pkey: ...``); [] when
    all is well.

    ``port_rates``: port GUID -> its rate in Gb/s (ibstat ``Rate``); a partition's ``rate`` above the slowest of its
    members' ports is refused (``ALL``/``ALL_CAS`` count every port given). ``require_default``: an entry named
    ``Default`` (P_Key 0x7fff) must be present, since without one OpenSM makes every port but its own a *limited*
    member of the default partition (partition-config.txt), which silently breaks IPoIB on it; without it an empty
    list is allowed (UFM's partitions.conf.user_ext may add nothing).
    """
    if not isinstance(partitions, list) or (require_default and not partitions):
        return ['%s must be a %slist of partitions ({name, pkey, ipoib, mtu, rate, members}), got %r'
                % (VAR, 'non-empty ' if require_default else '', partitions)]
    rates, problems, names, pkeys = {}, [], {}, {}
    for guid, rate in (port_rates or {}).items():
        try:
            rates[norm_guid(guid) or guid] = _number(rate)
        except (ValueError, TypeError):
            problems.append('port rate of %s: %r is not a number of Gb/s (ibstat Rate)' % (guid, rate))
    for index, item in enumerate(partitions):
        where = '%s[%d]' % (VAR, index)
        if not isinstance(item, dict):
            problems.append('%s must be a dict, got %r' % (where, item))
            continue
        problems.extend(_partition_problems(where, item, rates))
        name = item.get('name')
        if isinstance(name, str):
            if name in names:
                problems.append('%s.name: %s is also %s[%d]\'s name' % (where, name, VAR, names[name]))
            names.setdefault(name, index)
        try:
            pkey = pkey_number(item.get('pkey'))
        except ValueError:
            continue
        if pkey in pkeys:
            problems.append('%s.pkey: %#06x is also %s[%d]\'s P_Key' % (where, pkey, VAR, pkeys[pkey]))
        pkeys.setdefault(pkey, index)
    if require_default and DEFAULT_PKEY not in pkeys:
        problems.append('%s: no entry named %s with P_Key 0x7fff; without one OpenSM makes every port but its own a '
                        'limited member of the default partition; add e.g. {name: Default, pkey: 0x7fff, ipoib: true, '
                        'mtu: 4096, rate: 400, members: [{guid: ALL, membership: full}]}' % (VAR, DEFAULT_NAME))
    return problems


def _canonical_member(member, defmember):
    guid = member['guid'] if member['guid'] in KEYWORDS else norm_guid(member['guid'])
    return {'guid': guid, 'membership': member.get('membership') or defmember or 'limited'}


def normalize_partitions(partitions, port_rates=None, require_default=True):
    """The variable in the form parse_partitions_conf() returns: ``pkey`` an int, ``mtu`` bytes and ``rate`` Gb/s or
    None (OpenSM's defaults, 2048 and 10), ``sl`` or None, ``scope`` a sorted list, each member's membership
    resolved (its own, else ``defmember``, else limited), GUIDs as ``0x`` + 16 digits. ValueError with every
    problem when partitions_problems() finds any."""
    problems = partitions_problems(partitions, port_rates, require_default)
    if problems:
        raise ValueError('\n'.join(problems))
    out = []
    for item in partitions:
        scopes = item.get('scope')
        out.append({
            'name': item['name'], 'pkey': pkey_number(item['pkey']), 'ipoib': bool(item.get('ipoib')),
            'mtu': _number(item['mtu']) if item.get('mtu') is not None else None,
            'rate': _number(item['rate']) if item.get('rate') is not None else None,
            'sl': item.get('sl'), 'indx0': bool(item.get('indx0')),
            'scope': sorted(set(scopes if isinstance(scopes, list) else [scopes] if scopes is not None else [])),
            'members': [_canonical_member(member, item.get('defmember')) for member in item.get('members') or []]})
    return out


def _header(part):
    words = ['%s=0x%04x' % (part['name'], part['pkey'])]
    if part['ipoib']:
        words.append('ipoib')
    if part['mtu'] is not None:
        words.append('mtu=%d' % MTU_CODES[part['mtu']])
    if part['rate'] is not None:
        words.append('rate=%d' % RATE_CODES[part['rate']])
    if part['sl'] is not None:
        words.append('sl=%d' % part['sl'])
    words.extend('scope=%d' % scope for scope in part['scope'])
    if part['indx0']:
        words.append('indx0')
    return ','.join(words) + ':'


def render_partitions_conf(partitions, header=None, require_default=True):
    """``opensm_partitions`` -> partitions.conf text. Every member is written with its membership (no
    ``defmember``), 8 to a line; flags as IBTA codes. ``header``: comment lines put first (each gets ``# ``).
    ValueError listing the problems when the variable has any (partitions_problems())."""
    lines = ['# %s' % line if line else '#' for line in (header or [])]
    for part in normalize_partitions(partitions, require_default=require_default):
        lines.append(_header(part))
        members = ['%s=%s' % (m['guid'], m['membership']) for m in part['members']]
        if not members:
            lines[-1] += ';'
        for start in range(0, len(members), MEMBERS_PER_LINE):
            last = start + MEMBERS_PER_LINE >= len(members)
            lines.append('  ' + ', '.join(members[start:start + MEMBERS_PER_LINE]) + (';' if last else ','))
    return '\n'.join(lines) + '\n'


# ------------------------------------------------------------------------------- UFM's partitions.conf.user_ext

def is_default_partition(item):
    """An ``opensm_partitions`` entry whose P_Key is 0x7fff (the default partition)."""
    try:
        return isinstance(item, dict) and pkey_number(item.get('pkey')) == DEFAULT_PKEY
    except ValueError:
        return False


def user_ext_partitions(partitions):
    """The entries of ``opensm_partitions`` that go into UFM's partitions.conf.user_ext: all but the default
    partition (P_Key 0x7fff), which UFM defines in the partitions.conf it generates (its management key, read-only
    in UFM; docs/fabric.md "Switch and UFM subnet managers")."""
    return [item for item in (partitions if isinstance(partitions, list) else []) if not is_default_partition(item)]


def render_user_ext(partitions, header=None):
    """UFM's partitions.conf.user_ext text: OpenSM's grammar, as render_partitions_conf(), without a default
    partition (an entry with P_Key 0x7fff is refused: UFM owns it) and possibly with no partition at all (the file
    then holds the header only). ValueError listing the problems."""
    problems = ['%s[%d].pkey: 0x7fff is the default partition, which UFM defines itself (its management key); leave '
                'it out of partitions.conf.user_ext' % (VAR, index)
                for index, item in enumerate(partitions if isinstance(partitions, list) else []) if is_default_partition(item)]
    if problems:
        raise ValueError('\n'.join(problems))
    return render_partitions_conf(partitions, header=header, require_default=False)


# ---------------------------------------------------------------------------------------------------- parsing

def _abbrev(given, keyword):
    """OpenSM's ``!strncmp(given, keyword, strlen(given))``: a non-empty prefix of the keyword."""
    return bool(given) and keyword.startswith(given)


def _c_ulong(text):
    """strtoul(text, &end, 0): 0x hex, 0 octal, else decimal; None when not all of it is a number."""
    text = text.strip()
    try:
        if text.lower().startswith('0x'):
            return int(text[2:], 16)
        if len(text) > 1 and text.startswith('0'):
            return int(text[1:], 8)
        return int(text, 10)
    except ValueError:
        return None


def _code(flag, value, table, lineno, line):
    number = _c_ulong(value or '')
    if number not in table:
        raise ParseError('partition flag %s=%s is not a known IBTA code; known: %s' % (
            flag, value, ', '.join('%d (%s)' % (code, table[code]) for code in sorted(table))), lineno, line)
    return table[number]


GROUP_FLAGS = ('mtu', 'rate', 'scope', 'Q_Key', 'TClass', 'sl', 'FlowLabel')


def _flag(part, token, lineno, line):
    flag, dummy, value = token.partition('=')
    flag, value = flag.strip(), value.strip() if dummy else None
    if not flag:
        raise ParseError('empty partition flag', lineno, line)
    # osm_prtn_config.c parse_group_flag() then partition_add_flag(): the first keyword the flag abbreviates
    matched = next((name for name in GROUP_FLAGS + ('ipoib', 'defmember') if _abbrev(flag, name)), None)
    if flag == 'indx0':
        part['indx0'] = True
    elif matched in ('Q_Key', 'TClass', 'FlowLabel'):
        raise ParseError('partition flag %s is not supported (opensm_partitions has no %s)' % (matched, matched), lineno, line)
    elif matched == 'mtu':
        part['mtu'] = _code('mtu', value, MTU_BY_CODE, lineno, line)
    elif matched == 'rate':
        part['rate'] = _code('rate', value, RATE_BY_CODE, lineno, line)
    elif matched == 'scope':
        scope = _c_ulong(value or '')
        if scope is None or not 1 <= scope <= 15:
            raise ParseError('partition flag scope=%s must be 1-15' % value, lineno, line)
        part['scope'] = sorted(set(part['scope'] + [scope]))
    elif matched == 'sl':
        sl = _c_ulong(value or '')
        if sl is None or sl > 15:
            raise ParseError('partition flag sl=%s must be 0-15' % value, lineno, line)
        part['sl'] = sl
    elif matched == 'ipoib':
        part['ipoib'] = True
    elif matched == 'defmember':
        member = next((name for name in MEMBERSHIPS if _abbrev(value or '', name)), None)
        if member is None:
            raise ParseError('defmember=%s is not one of %s' % (value, ', '.join(MEMBERSHIPS)), lineno, line)
        part['defmember'] = member
    else:
        raise ParseError('unknown partition flag %r (OpenSM ignores it with a PARSE WARN)' % flag, lineno, line)


def _new_partition(header, lineno, line):
    tokens = header.split(',')
    name, dummy, pkey_text = tokens[0].partition('=')
    name, pkey_text = name.strip(), pkey_text.strip() if dummy else None
    if pkey_text is None and name[:1].isdigit():        # partition_create(): "=PKey" alone
        name, pkey_text = '', name
    if not pkey_text:
        raise ParseError('partition %r has no P_Key (OpenSM generates one); give Name=0x....' % name, lineno, line)
    pkey = _c_ulong(pkey_text)
    if pkey is None:
        raise ParseError('bad partition definition: P_Key %r is not a number' % pkey_text, lineno, line)
    part = {'name': name, 'pkey': pkey & 0x7fff, 'ipoib': False, 'mtu': None, 'rate': None, 'sl': None, 'scope': [],
            'indx0': False, 'members': [], 'defmember': None}
    for token in tokens[1:]:
        _flag(part, token, lineno, line)
    return part


def _guid_of(name, lineno, line):
    keyword = next((word for word in ('NONE',) + KEYWORDS if _abbrev(name, word)), None)
    if keyword:
        return keyword
    number = _c_ulong(name)
    if not number or number >= 1 << 64:
        raise ParseError('bad PortGUID %r' % name, lineno, line)
    return '0x%016x' % number


def _add_members(part, text, lineno, line):
    for token in text.split(','):
        name, dummy, flag = token.partition('=')
        name, flag = name.strip(), flag.strip() if dummy else None
        if name == 'mgid':
            raise ParseError('mgid lines (multicast groups) are not supported by opensm_partitions', lineno, line)
        if not name:
            continue
        guid = _guid_of(name, lineno, line)
        if guid == 'NONE':
            continue
        if flag is None:
            membership = part['defmember'] or 'limited'
        else:
            membership = next((word for word in MEMBERSHIPS if _abbrev(flag, word)), None)
            if membership is None:
                raise ParseError('unknown membership %r of %s (OpenSM assumes limited with a PARSE WARN)' % (flag, name),
                                 lineno, line)
        part['members'].append({'guid': guid, 'membership': membership})


def _merge(parts, part, lineno, line):
    """A P_Key defined again: OpenSM merges the definitions and keeps the first name (partition-config.txt)."""
    first = parts.get(part['pkey'])
    if first is None:
        parts[part['pkey']] = part
        return
    for field in ('mtu', 'rate', 'sl'):
        if part[field] is not None and first[field] is not None and part[field] != first[field]:
            raise ParseError('P_Key 0x%04x is defined again with %s %s (first %s)' % (part['pkey'], field, part[field], first[field]),
                             lineno, line)
        if first[field] is None:
            first[field] = part[field]
    first['ipoib'] = first['ipoib'] or part['ipoib']
    first['indx0'] = first['indx0'] or part['indx0']
    first['scope'] = sorted(set(first['scope'] + part['scope']))
    first['members'].extend(part['members'])


def parse_partitions_conf(text):
    """partitions.conf text -> the partitions in normalize_partitions()'s form, in file order (a P_Key defined
    several times is merged into its first definition, under its first name).

    Raises ParseError (with the line) on what OpenSM itself refuses (no ``:`` header, a bad GUID or P_Key) and on
    what this collection does not represent: a partition without a P_Key, ``mgid=`` multicast group lines, the
    Q_Key/TClass/FlowLabel flags, unknown flags or memberships (OpenSM skips those with a PARSE WARN), unknown
    MTU/rate codes.
    """
    if not isinstance(text, str):
        raise ParseError('partitions.conf must be text')
    parts, current, first_line = {}, None, 0
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split('#', 1)[0]
        segments = line.split(';')
        for index, segment in enumerate(segments):
            ends = index < len(segments) - 1
            if segment.strip():
                if current is None:
                    if ':' not in segment:
                        raise ParseError('no partition definition found (a header Name=PKey,flags: ends with ":")',
                                         lineno, raw)
                    header, dummy, segment = segment.partition(':')
                    current = _new_partition(header, lineno, raw)
                    first_line = lineno
                _add_members(current, segment, lineno, raw)
            if ends and current is not None:
                _merge(parts, current, first_line, raw)
                current = None
    if current is not None:
        _merge(parts, current, first_line, None)
    out = []
    for part in parts.values():
        part.pop('defmember')
        out.append(part)
    return out


def _members_text(members):
    return ', '.join('%s=%s' % (m['guid'], m['membership']) for m in members[:5]) + (
        ' and %d more' % (len(members) - 5) if len(members) > 5 else '')


def _multiset_minus(left, right):
    counts = {}
    for member in right:
        key = (member['guid'], member['membership'])
        counts[key] = counts.get(key, 0) + 1
    out = []
    for member in left:
        key = (member['guid'], member['membership'])
        if counts.get(key):
            counts[key] -= 1
        else:
            out.append(member)
    return out


def partitions_conf_diff(partitions, text):
    """What differs between the variable and a partitions.conf text: one line per difference, [] when the file says
    exactly what the variable says (used to refuse a rendered file before it replaces the running one, and to name
    a hand-edited one). A file that does not parse gives one line saying why."""
    wanted = normalize_partitions(partitions, require_default=False)
    try:
        found = parse_partitions_conf(text)
    except ParseError as exc:
        return ['partitions.conf does not parse: %s' % exc]
    by_pkey = dict((part['pkey'], part) for part in found)
    out = []
    for part in wanted:
        label = '%s (0x%04x)' % (part['name'], part['pkey'])
        other = by_pkey.pop(part['pkey'], None)
        if other is None:
            out.append('partition %s is missing from partitions.conf' % label)
            continue
        for field in ('name', 'ipoib', 'mtu', 'rate', 'sl', 'scope', 'indx0'):
            if part[field] != other[field]:
                out.append('partition %s: %s is %r in partitions.conf, %r in %s' % (label, field, other[field], part[field], VAR))
        missing, extra = _multiset_minus(part['members'], other['members']), _multiset_minus(other['members'], part['members'])
        if missing:
            out.append('partition %s: %d members missing from partitions.conf: %s' % (label, len(missing), _members_text(missing)))
        if extra:
            out.append('partition %s: %d members in partitions.conf only: %s' % (label, len(extra), _members_text(extra)))
        if not missing and not extra and part['members'] != other['members']:
            out.append('partition %s: the members are in another order (OpenSM keeps the last of a port\'s entries)' % label)
    for pkey, other in by_pkey.items():
        out.append('partition %s (0x%04x) is in partitions.conf only' % (other['name'], pkey))
    return out


# -------------------------------------------------------------------------------------- what a port should hold

def _applies(guid, port_guid, is_switch, sm_guid):
    if guid == 'ALL':
        return True
    if guid == 'ALL_CAS':
        return not is_switch
    if guid == 'ALL_SWITCHES':
        return is_switch
    if guid == 'ALL_ROUTERS':
        return False
    if guid == 'SELF':
        return sm_guid is not None and port_guid == sm_guid
    return guid == port_guid


def expected_pkeys_by_port(partitions, port_guids, switch_guids=(), sm_guid=None, allow_both_pkeys=False):
    """The P_Key table values each port should hold under ``opensm_partitions``: port GUID (normalised) -> sorted
    ``'0x....'`` texts with the membership bit 0x8000 for a full member, as verify/partition.py's
    ``expected['pkeys']`` takes them. One pass for a whole fleet.

    Follows osm_prtn_config.c/osm_prtn.c: each specifier that names a port (its GUID, ``ALL``, ``ALL_CAS`` for a
    CA, ``ALL_SWITCHES`` for a port in ``switch_guids``, ``SELF`` for ``sm_guid``'s port) adds it; without
    ``allow_both_pkeys`` (the opensm.conf default) the last one wins and ``both`` means full; with it full and
    limited are kept apart. A variable without a Default entry gives OpenSM's implicit
    ``Default=0x7fff : ALL=limited, SELF=full``. ValueError on a bad GUID or a bad variable.
    """
    ports = []
    for guid in port_guids:
        port = norm_guid(guid)
        if port is None:
            raise ValueError('expected_pkeys: %r is not a port GUID' % (guid,))
        ports.append(port)
    switches = set(norm_guid(guid) for guid in switch_guids or ())
    sm = norm_guid(sm_guid) if sm_guid is not None else None
    parts = normalize_partitions(partitions, require_default=False)
    if not any(part['pkey'] == DEFAULT_PKEY for part in parts):
        parts.append({'pkey': DEFAULT_PKEY, 'members': [{'guid': 'ALL', 'membership': 'limited'},
                                                        {'guid': 'SELF', 'membership': 'full'}]})
    out = dict((port, set()) for port in ports)
    for part in parts:
        held = {}
        for member in part['members']:
            guid = member['guid']
            if guid in KEYWORDS:
                targets = [port for port in ports if _applies(guid, port, port in switches, sm)]
            else:
                targets = [guid] if guid in out else []
            wanted = {'full': {True}, 'limited': {False}, 'both': {True, False} if allow_both_pkeys else {True}}[member['membership']]
            for port in targets:
                held[port] = held.get(port, set()) | wanted if allow_both_pkeys else wanted
        for port, fulls in held.items():
            out[port].update('0x%04x' % (part['pkey'] | (0x8000 if full else 0)) for full in fulls)
    return dict((port, sorted(values)) for port, values in out.items())


def expected_pkeys(partitions, port_guid, is_switch=False, sm_guid=None, allow_both_pkeys=False):
    """expected_pkeys_by_port() for one port: its sorted ``'0x....'`` P_Key table values."""
    port = norm_guid(port_guid)
    if port is None:
        raise ValueError('expected_pkeys: %r is not a port GUID' % (port_guid,))
    return expected_pkeys_by_port(partitions, [port], [port] if is_switch else (), sm_guid, allow_both_pkeys)[port]
