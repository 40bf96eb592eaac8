# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""opensm.conf: parsed, rendered from the installed binary's own defaults with only our settings changed, SM plans checked.

The defaults come from the binary that will read the file: ``opensm --create-config FILE`` (opensm(8) ``-c``), a
``key value`` line per option with ``#`` comment blocks. OpenSM reads it back (opensm/osm_subnet.c @3.3.23,
osm_subn_parse_conf_file()) with ``fgets(line, 1023)``, cuts at the first ``#``, takes the first blank-separated
word as the key and the rest, trimmed and unquoted (clean_val()), as the value; ``(null)`` is an unset string;
a key it does not know is logged ``Unrecognized token`` and skipped, so an option another build lacks would be
silently ignored: render_opensm_conf() refuses a key the defaults do not have.

Secrets (``m_key``, ``sm_key``, ``sa_key``, ``cc_key``) are in the rendered text (the file needs them; the role
writes it with ``no_log``) and masked in everything else this module returns (diffs, options views).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.verify.fabric import norm_guid

KEY_RE = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')
ENGINES_RE = re.compile(r'^#\s*Supported engines:\s*(?P<list>.*)$')
ENGINES_MORE_RE = re.compile(r'^#\s{2,}(?P<list>\S.*)$')
LINE_MAX = 1022           # fgets(line, 1023, ...) keeps 1022 characters and the newline
SECRET_KEYS = ('m_key', 'sm_key', 'sa_key', 'cc_key')
MASK = '********'
VAR_PREFIX = 'opensm_'

# Routing engines each build knows. Upstream 3.3.23: opensm/osm_opensm.c static_routing_modules[] and opensm(8)
# "-R ... Supported engines: minhop, updn, dnup, file, ftree, lash, dor, torus-2QoS, nue, dfsssp, sssp" ("none"
# is in the table too); "no_fallback" in the list stops the fall back to minhop (osm_opensm.c setup_routing_engine()).
UPSTREAM_ENGINES = ('minhop', 'updn', 'dnup', 'file', 'ftree', 'lash', 'dor', 'torus-2QoS', 'nue', 'dfsssp', 'sssp')
# NVIDIA's OpenSM (MLNX_OFED/DOCA, UFM): its opensm.conf comment "Supported engines: minhop, updn, dnup, file, ftree,
# lash, dor, torus-2QoS, kdor-hc, dfsssp (EXPERIMENTAL), sssp (EXPERIMENTAL), chain, pqft (EXPERIMENTAL), dfp, dfp2
# (EXPERIMENTAL), ar_updn, ar_ftree, ar_torus, ar_dor (AR)" as quoted from an MLNX_OFED 5.x install in a public
# blog (weakly sourced: not read from NVIDIA's own page); ar_updn is NVIDIA's default (NVIDIA "InfiniBand Cluster
# Bring-up Procedure v1.0", Adaptive Routing: "The default value is: ar_updn"). The installed build's own list,
# read by supported_routing_engines() from its --create-config output, wins over both tables.
NVIDIA_ENGINES = ('minhop', 'updn', 'dnup', 'file', 'ftree', 'lash', 'dor', 'torus-2QoS', 'kdor-hc', 'dfsssp', 'sssp',
                  'chain', 'pqft', 'dfp', 'dfp2', 'ar_updn', 'ar_ftree', 'ar_torus', 'ar_dor')
ENGINES = {'upstream': UPSTREAM_ENGINES, 'nvidia': NVIDIA_ENGINES}
NO_FALLBACK = 'no_fallback'

# The settings this collection owns (issue 32): opensm.conf key -> kind. Everything else keeps the build's default.
OWNED = {
    'guid': 'guid', 'sm_priority': 'priority', 'sweep_interval': 'uint', 'routing_engine': 'engines',
    'root_guid_file': 'path', 'log_file': 'path', 'log_max_size': 'uint', 'partition_config_file': 'path',
    'qos': 'bool', 'm_key': 'key64', 'sm_key': 'key64',
}
QOS_PREFIX = 'qos_'       # qos_max_vls, qos_high_limit, qos_vlarb_high/low, qos_sl2vl and the qos_ca_/sw0_/swe_/rtr_ sets
QOS_LIST_RE = re.compile(r'^[0-9]+(?:\s*[,:]\s*[0-9]+)*$')
MAX_SMS_PER_SUBNET = 2


def parse_opensm_conf(text):
    """opensm.conf text -> {key: value text} in file order (``(null)`` kept as written; a repeated key keeps its last
    value, as OpenSM does). ParseError when there is no ``key value`` line at all or a line is not one."""
    if not isinstance(text, str):
        raise ParseError('opensm.conf must be text')
    options = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split('#', 1)[0].strip()
        if not line:
            continue
        parts = line.split(None, 1)
        if not KEY_RE.match(parts[0]):
            raise ParseError('not an opensm.conf option line ("key value")', number, raw)
        value = parts[1].strip() if len(parts) > 1 else ''
        if len(value) > 1 and value[0] == value[-1] and value[0] in '"\'':
            value = value[1:-1]
        options[parts[0]] = value
    if not options:
        raise ParseError('not an opensm.conf: no "key value" line')
    return options


def supported_routing_engines(defaults_text, flavour=None):
    """The routing engines a build knows: the ``# Supported engines:`` comment of its own --create-config output
    (``(EXPERIMENTAL)``/``(AR)`` notes dropped), else ENGINES[flavour] (``upstream`` when not given)."""
    found, collecting = [], False
    for raw in (defaults_text or '').splitlines():
        match = ENGINES_RE.match(raw.strip())
        more = ENGINES_MORE_RE.match(raw) if collecting else None
        if match or more:
            collecting = True
            text = re.sub(r'\([^)]*\)', '', (match or more).group('list'))
            found.extend(word.strip() for word in text.split(',') if word.strip())
        else:
            collecting = False
    return tuple(found) if found else ENGINES[flavour or 'upstream']


def _path_ok(value):
    return isinstance(value, str) and value.startswith('/') and not any(c.isspace() or c == '#' for c in value)


def _setting_problem(key, value, engines):
    """One line when the value of an owned setting is bad, else None."""
    var = VAR_PREFIX + key
    kind = OWNED.get(key, 'qos' if key.startswith(QOS_PREFIX) else None)
    if kind == 'guid':
        if not isinstance(value, str) or norm_guid(value) in (None, '0x%016x' % 0):
            return '%s: %r is not a port GUID (0x and 16 hex digits, not zero)' % (var, value)
    elif kind == 'priority':
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 15:
            return '%s: %r must be an integer 0-15 (opensm(8): 0 lowest, 15 highest)' % (var, value)
    elif kind == 'uint':
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return '%s: %r must be an integer 0 or more' % (var, value)
    elif kind == 'path':
        if not _path_ok(value):
            return '%s: %r must be an absolute path without blanks or #' % (var, value)
    elif kind == 'bool':
        if not isinstance(value, bool):
            return '%s: %r must be true or false' % (var, value)
    elif kind == 'key64':
        if not isinstance(value, str) or not re.match(r'^0x[0-9a-fA-F]{1,16}$', value):
            return '%s: must be 0x and 1-16 hex digits (the value is not shown)' % var
    elif kind == 'engines':
        names = value if isinstance(value, list) else None
        if not names or not all(isinstance(name, str) for name in names):
            return '%s: %r must be a non-empty list of engine names, tried in order' % (var, value)
        unknown = [name for name in names if name not in engines and name != NO_FALLBACK]
        if unknown:
            return '%s: %s unknown to this OpenSM build; it knows %s (and %s)' % (
                var, ', '.join(unknown), ', '.join(engines), NO_FALLBACK)
        if len(set(names)) != len(names):
            return '%s: %r names an engine twice' % (var, value)
    elif kind == 'qos':
        if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, str) and QOS_LIST_RE.match(value))):
            return '%s: %r must be a number or a list of numbers separated by , or : (qos-config.txt)' % (var, value)
    else:
        return '%s: not a setting this collection owns; owned: %s and qos_*' % (var, ', '.join(sorted(OWNED)))
    return None


def unset(key, value):
    """A setting left at the build's default: None, '' (what None renders to on ansible-core before 2.19) or, for
    ``routing_engine``, an empty list (opensm_routing_engine's default)."""
    return value is None or value == '' or (key == 'routing_engine' and value == [])


def opensm_conf_problems(settings, defaults_text=None, flavour=None):
    """One line per bad owned setting (named ``opensm_<key>``); with ``defaults_text``, also each key that build's
    defaults do not have (OpenSM would skip it as an ``Unrecognized token``). ``settings``: opensm.conf key ->
    value, as the role passes them (unset() values are left at the build's default)."""
    if not isinstance(settings, dict):
        return ['opensm settings must be a dict of opensm.conf keys, got %r' % (settings,)]
    defaults = parse_opensm_conf(defaults_text) if defaults_text is not None else None
    engines = supported_routing_engines(defaults_text, flavour)
    problems = []
    for key, value in settings.items():
        if unset(key, value):
            continue
        problem = _setting_problem(key, value, engines)
        if problem:
            problems.append(problem)
        elif defaults is not None and key not in defaults:
            problems.append('%s: this OpenSM build has no option %s (its opensm --create-config does not list it)'
                            % (VAR_PREFIX + key, key))
    return problems


def _value_text(key, value):
    if isinstance(value, bool):
        return 'TRUE' if value else 'FALSE'
    if key == 'routing_engine':
        return ','.join(value)
    if key == 'guid':
        return norm_guid(value)
    if key in SECRET_KEYS:
        return '0x%016x' % int(value, 16)
    return str(value)


def render_opensm_conf(defaults_text, settings, flavour=None, header=None):
    """The build's ``--create-config`` text with the owned settings' lines replaced in place (comments and order
    kept; unset() values - None, '', an empty routing_engine - leave the default). ValueError listing every problem
    (opensm_conf_problems()). ``header``: comment lines put first."""
    problems = opensm_conf_problems(settings, defaults_text, flavour)
    if problems:
        raise ValueError('\n'.join(problems))
    wanted = dict((key, _value_text(key, value)) for key, value in settings.items() if not unset(key, value))
    out = ['# %s' % line if line else '#' for line in (header or [])]
    for raw in defaults_text.splitlines():
        content = raw.split('#', 1)[0].strip()
        key = content.split(None, 1)[0] if content else None
        if key in wanted:
            line = '%s %s' % (key, wanted[key])
            if len(line) > LINE_MAX:
                raise ValueError('%s: the line is longer than OpenSM reads (%d characters)' % (VAR_PREFIX + key, LINE_MAX))
            out.append(line)
        else:
            out.append(raw)
    return '\n'.join(out) + '\n'


def masked(options):
    """A copy of parsed options with the secrets replaced by ``********``."""
    return dict((key, MASK if key in SECRET_KEYS else value) for key, value in (options or {}).items())


def opensm_conf_diff(before_text, after_text):
    """The options that differ between two opensm.conf texts: [{'key', 'before', 'after'}] in the order of the
    second, a secret's values masked (``********``; only that it changed is said). A text that does not parse is
    compared as having no options."""
    def options(text):
        try:
            return parse_opensm_conf(text) if text else {}
        except ParseError:
            return {}
    before, after = options(before_text), options(after_text)
    out = []
    for key in list(after) + [key for key in before if key not in after]:
        if before.get(key) != after.get(key):
            hide = key in SECRET_KEYS
            out.append({'key': key, 'before': MASK if hide and key in before else before.get(key),
                        'after': MASK if hide and key in after else after.get(key)})
    return out


def sm_problems(sm_ports):
    """One line per problem in the planned SMs: ``sm_ports`` is a list of ``{host, subnet, guid, priority}`` (one per
    SM instance). Refused: a priority outside 0-15, two SMs of one subnet at the same priority (the GUID then
    decides, and a restart can move mastership), more than 2 SMs in a subnet (issue 32: one or two per subnet; a
    third only adds another election candidate), one port GUID planned twice, a bad GUID, no subnet."""
    if not isinstance(sm_ports, list):
        return ['SM ports must be a list of {host, subnet, guid, priority}, got %r' % (sm_ports,)]
    problems, guids, subnets = [], {}, {}
    for index, port in enumerate(sm_ports):
        if not isinstance(port, dict):
            problems.append('SM port %d must be a dict {host, subnet, guid, priority}, got %r' % (index, port))
            continue
        host = port.get('host') or 'SM port %d' % index
        priority, guid = port.get('priority'), norm_guid(port.get('guid')) if isinstance(port.get('guid'), str) else None
        if isinstance(priority, bool) or not isinstance(priority, int) or not 0 <= priority <= 15:
            problems.append('opensm_sm_priority on %s: %r must be an integer 0-15 (15 primary, 14 standby)' % (host, priority))
            priority = None
        if guid is None:
            problems.append('opensm_guid on %s: %r is not a port GUID' % (host, port.get('guid')))
        elif guid in guids:
            problems.append('opensm_guid on %s: port %s is also %s\'s SM port; one SM per port' % (host, guid, guids[guid]))
        else:
            guids[guid] = host
        if not port.get('subnet'):
            problems.append('%s: no subnet for SM port %s (the fabric read gives each port its subnet)' % (host, port.get('guid')))
            continue
        subnets.setdefault(port['subnet'], []).append((host, priority))
    for subnet, sms in sorted(subnets.items(), key=lambda item: str(item[0])):
        if len(sms) > MAX_SMS_PER_SUBNET:
            problems.append('subnet %s: %d SMs planned (%s); at most %d, a primary at 15 and a standby at 14' % (
                subnet, len(sms), ', '.join(host for host, dummy in sms), MAX_SMS_PER_SUBNET))
        by_priority = {}
        for host, priority in sms:
            if priority is not None:
                by_priority.setdefault(priority, []).append(host)
        for priority, hosts in sorted(by_priority.items()):
            if len(hosts) > 1:
                problems.append('opensm_sm_priority: %s share priority %d in subnet %s; give each SM of a subnet its '
                                'own (15 primary, 14 standby)' % (' and '.join(hosts), priority, subnet))
    return problems
