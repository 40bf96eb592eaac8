# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The decisions of module rdma_qos (lossless RoCE on one netdev): the wanted settings checked, the current ones read
from mlnx_qos, ``dcb -j``, sysfs and configfs text, what differs, and the commands that take one to the other.

Pure: text and dicts in, dicts, strings and argv lists out; the module does the I/O.

A state (current, predicted or read back) is a dict with these keys, None where the interface is absent:

    trust          'dscp' or 'pcp'
    pfc            priorities with PFC on, sorted
    dscp2prio      {dscp: [priorities]} (a DSCP can carry several entries in the kernel's APP table)
    ecn_np, ecn_rp priorities whose ECN notification / reaction point is on, sorted
    cnp_dscp, cnp_prio, roce_tos, roce_mode
    traffic_class  the global traffic class of the verbs port, UNSET (-1, the driver's own value) when none is set
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError

PRIORITIES = tuple(range(8))
TRUSTS = ('dscp', 'pcp')
ROCE_MODES = ('RoCE v2', 'IB/RoCE v1')
ECN_ROLES = ('roce_np', 'roce_rp')
UNSET = -1
SCALARS = ('cnp_dscp', 'cnp_prio', 'roce_tos', 'roce_mode', 'traffic_class')
# The settings a partial reader leaves out when its interface is absent (what ``unavailable`` names).
FILE_SETTINGS = ('ecn_np', 'ecn_rp', 'cnp_dscp', 'cnp_prio', 'roce_tos', 'roce_mode', 'traffic_class')

# rt_dsfield names (iproute2 etc/iproute2/rt_dsfield: the full 8-bit dsfield, so DSCP = value >> 2). ``dcb -j``
# prints DSCP keys as numbers (dcb_app_print_key_dscp prints a name only outside JSON), the names are a fallback.
_DSCP_NAMES = dict([('CS%d' % n, 8 * n) for n in range(8)]
                   + [('AF%d%d' % (x, y), 8 * x + 2 * y) for x in range(1, 5) for y in range(1, 4)]
                   + [('EF', 46)])
_TCLASS_RE = re.compile(r'^\s*Global\s+tclass\s*=\s*(?P<value>-?[0-9]+)\s*$', re.IGNORECASE)
_NUMBER_RE = re.compile(r'^\s*(?P<value>-?[0-9]+)\s*$')


# -- the wanted settings ---------------------------------------------------------------------------------------------

def _integer(value):
    """An int from an int or a decimal string; None for anything else (bools included)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and _NUMBER_RE.match(value):
        return int(value)
    return None


def _outside(name, values, low, high, what, extra=''):
    bad = [value for value in values if _integer(value) is None or not low <= _integer(value) <= high]
    if not bad:
        return None
    listed = ', '.join(str(value) for value in bad)
    plural = {'priority': 'priorities', 'DSCP': 'DSCPs', 'ToS': 'ToS values', 'traffic class': 'traffic classes'}
    return '%s: %s %s (allowed: %d-%d%s)' % (name, listed, 'is not a ' + what if len(bad) == 1
                                             else 'are not ' + plural[what], low, high, extra)


def _dscp_map_problem(dscp_map):
    """One line for every bad entry of dscp_map, or None."""
    clauses = []
    for key in sorted(dscp_map, key=str):
        dscp, prio = _integer(key), _integer(dscp_map[key])
        if dscp is None or not 0 <= dscp <= 63:
            clauses.append('%s is not a DSCP (allowed: 0-63)' % (key,))
        if prio is None or not 0 <= prio <= 7:
            clauses.append('%s (for DSCP %s) is not a priority (allowed: 0-7)' % (dscp_map[key], key))
    return 'dscp_map: ' + '; '.join(clauses) if clauses else None


def wanted_settings(params, tool):
    """(settings, problems, warnings) from the module's parameters; ``tool`` is 'mlnx_qos' or 'dcb'.

    ``problems`` has one line per bad parameter, naming it and the allowed values; ``settings`` is only meaningful
    when there is none. With trust pcp no DSCP entry is managed: mlx5 switches to DSCP trust whenever a DSCP entry
    is set (drivers/net/ethernet/mellanox/mlx5/core/en_dcbnl.c mlx5e_dcbnl_ieee_setapp), so a map and pcp trust
    cannot both hold. ECN is switched on for the listed priorities and left as it is on the others.
    """
    problems = []
    warnings = []
    checks = [
        _outside('pfc_priorities', params['pfc_priorities'], 0, 7, 'priority'),
        _outside('ecn_priorities', params['ecn_priorities'], 0, 7, 'priority'),
        _dscp_map_problem(params['dscp_map']),
    ]
    scalar_ranges = (('cnp_dscp', 0, 63, 'DSCP', ', or null to leave it'),
                     ('cnp_prio', 0, 7, 'priority', ', or null to leave it'),
                     ('roce_tos', 0, 255, 'ToS', ', or null to leave it'),
                     ('traffic_class', 0, 255, 'traffic class', ', or null to leave it'))
    for name, low, high, what, extra in scalar_ranges:
        if params[name] is not None:
            checks.append(_outside(name, [params[name]], low, high, what, extra))
    if params['roce_mode'] is not None and params['roce_mode'] not in ROCE_MODES:
        checks.append('roce_mode: %r is not a RoCE mode (allowed: %s, or null to leave it)'
                      % (params['roce_mode'], ', '.join(ROCE_MODES)))
    port = _integer(params['port'])
    if port is None or port < 1:
        checks.append('port: %s is not a port number (allowed: 1 and up)' % (params['port'],))
    problems.extend(check for check in checks if check)
    dscp_map = {}
    if params['trust'] == 'dscp':
        dscp_map = dict((_integer(key), _integer(value)) for key, value in params['dscp_map'].items())
        if not dscp_map and tool == 'dcb':
            problems.append('dscp_map: empty, but trust dscp through dcb needs at least one DSCP entry (allowed: '
                            'DSCP 0-63 to priority 0-7; mlx5 trusts DSCP exactly while DSCP APP entries exist)')
    settings = {
        'trust': params['trust'],
        'pfc': sorted(set(_integer(prio) for prio in params['pfc_priorities'])),
        'dscp_map': dscp_map,
        'ecn_np': sorted(set(_integer(prio) for prio in params['ecn_priorities'])),
        'ecn_rp': sorted(set(_integer(prio) for prio in params['ecn_priorities'])),
    }
    for name in SCALARS:
        settings[name] = params[name] if name == 'roce_mode' else (
            None if params[name] is None else _integer(params[name]))
    if not problems:
        cnp_dscp, cnp_prio = settings['cnp_dscp'], settings['cnp_prio']
        if cnp_dscp is not None and cnp_prio is not None and cnp_dscp in dscp_map and dscp_map[cnp_dscp] != cnp_prio:
            warnings.append('dscp_map sends the CNP DSCP %d to priority %d, but cnp_prio is %d: the CNPs leave on one '
                            'priority and are classified into another' % (cnp_dscp, dscp_map[cnp_dscp], cnp_prio))
        if settings['trust'] == 'pcp' and params['dscp_map']:
            warnings.append('trust pcp: dscp_map is not applied (a DSCP entry would switch mlx5 back to DSCP trust)')
    return settings, problems, warnings


# -- reading the current state ---------------------------------------------------------------------------------------

def dcb_from_mlnx_qos(parsed):
    """trust, pfc and dscp2prio from parse_mlnx_qos()'s result; None where mlnx_qos printed no such section.

    mlnx_qos prints the DSCP map only in DSCP trust; in PCP trust the map is empty ({}), as the DSCP APP entries
    that make it are what DSCP trust is on mlx5.
    """
    pfc = None
    if parsed.get('pfc_enabled') is not None:
        pfc = [prio for prio, enabled in enumerate(parsed['pfc_enabled'][:8]) if enabled]
    dscp2prio = {}
    for prio, dscps in sorted((parsed.get('dscp2prio') or {}).items()):
        for dscp in dscps:
            dscp2prio.setdefault(dscp, []).append(prio)
    return {'trust': parsed.get('trust'), 'pfc': pfc,
            'dscp2prio': dict((dscp, sorted(set(prios))) for dscp, prios in dscp2prio.items())}


def mlnx_qos_no_dcb(parsed):
    """The reason mlnx_qos cannot manage this netdev's DCB (its own error line), or None."""
    if parsed.get('pfc_enabled') is None:
        return (parsed.get('errors') or ['no PFC configuration printed'])[0]
    if parsed.get('trust') is None:
        lines = [line for line in parsed.get('errors') or [] if 'trust' in line.lower()]
        return lines[0] if lines else 'no priority trust state printed'
    return None


def _json_object(text, what):
    try:
        data = json.loads(text)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ParseError('%s: not JSON (%s)' % (what, exc))
    if not isinstance(data, dict):
        raise ParseError('%s: not a JSON object' % what)
    return data


def _dscp_key(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        if _NUMBER_RE.match(value):
            return int(value)
        return _DSCP_NAMES.get(value.strip().upper())
    return None


def parse_dcb_app(text):
    """``dcb -j app show dev DEV`` -> {dscp: [priorities]}.

    Layout (iproute2 dcb/dcb_app.c dcb_cmd_app_show() and dcb_app_print_filtered()): one JSON object; the DSCP
    selector's entries under ``dscp_prio`` as ``[DSCP, PRIO]`` pairs sorted by DSCP then priority, the key left out
    when there is none (``{}`` for an empty table). Other selectors (``default_prio``, ``ethtype_prio``, ...) are
    ignored. Raises ParseError for text that is not that object.
    """
    data = _json_object(text, 'dcb app show')
    entries = data.get('dscp_prio', [])
    if not isinstance(entries, list):
        raise ParseError('dcb app show: dscp_prio is not a list')
    table = {}
    for entry in entries:
        if not isinstance(entry, list) or len(entry) != 2:
            raise ParseError('dcb app show: a dscp_prio entry is not a [DSCP, PRIO] pair: %r' % (entry,))
        dscp, prio = _dscp_key(entry[0]), _integer(entry[1])
        if dscp is None or prio is None or not 0 <= dscp <= 63 or not 0 <= prio <= 7:
            raise ParseError('dcb app show: a dscp_prio entry out of range: %r' % (entry,))
        table.setdefault(dscp, []).append(prio)
    return dict((dscp, sorted(set(prios))) for dscp, prios in table.items())


def parse_dcb_pfc(text):
    """``dcb -j pfc show dev DEV`` -> the priorities with PFC on.

    Layout (iproute2 dcb/dcb_pfc.c dcb_pfc_print_prio_pfc() through dcb_print_named_array() and
    dcb_print_array_on_off()): ``"prio_pfc"`` is an array of 8 JSON booleans, priority 0 first (print_on_off()
    prints a boolean in JSON mode, lib/json_print.c); "on"/"off" strings are read too. Raises ParseError otherwise.
    """
    data = _json_object(text, 'dcb pfc show')
    values = data.get('prio_pfc')
    if not isinstance(values, list) or len(values) != 8:
        raise ParseError('dcb pfc show: no prio_pfc array of 8 priorities')
    enabled = []
    for prio, value in enumerate(values):
        if value is True or value == 'on':
            enabled.append(prio)
        elif value is not False and value != 'off':
            raise ParseError('dcb pfc show: prio_pfc[%d] is %r, not a boolean' % (prio, value))
    return enabled


def parse_traffic_class(text):
    """``<sysfs>/class/infiniband/DEV/tc/PORT/traffic_class`` -> the global traffic class, or UNSET.

    MLNX_OFED's mlx5_ib prints ``Global tclass=106`` when a global class is set and nothing when none is
    (traffic_class_show(): ``if (tcd->val >= 0) "Global tclass=%d\\n"``, then one line per match rule), and takes
    a bare number when written (``echo 106 > .../tc/1/traffic_class``, as NVIDIA's RoCE guides write it); a bare
    number is read too. Rule lines are ignored. Raises ParseError for anything else.
    """
    if not isinstance(text, str):
        raise ParseError('traffic_class must be text')
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return UNSET
    for line in lines:
        match = _TCLASS_RE.match(line) or _NUMBER_RE.match(line)
        if match:
            value = int(match.group('value'))
            if value < 0:
                return UNSET
            if value > 255:
                raise ParseError('traffic_class: %d is not a traffic class' % value)
            return value
    if all('tclass' in line.lower() or '=' in line for line in lines):
        return UNSET  # rules only (tclass=N,src_ip=...), no global class
    raise ParseError('not a traffic_class file: %r' % lines[0][:80])


def parse_number(text, what):
    """A sysfs/configfs attribute holding one decimal number (``"%d\\n"``)."""
    match = _NUMBER_RE.match(text or '')
    if not match:
        raise ParseError('%s: %r is not a number' % (what, (text or '')[:40]))
    return int(match.group('value'))


def parse_roce_mode(text):
    """``default_roce_mode``: ``RoCE v2`` or ``IB/RoCE v1`` (cma_configfs.c prints ib_cache_gid_type_str())."""
    value = (text or '').strip()
    if value not in ROCE_MODES:
        raise ParseError('default_roce_mode: %r is not a RoCE mode' % value[:40])
    return value


# -- where things are ------------------------------------------------------------------------------------------------

def paths(sysfs_root, configfs_root, netdev, rdma_device, port):
    """The files and directories of one netdev, its RDMA device and port.

    ECN: MLNX_OFED's mlx5 sysfs (mlnx-ofed-kernel en_sysfs.c mlx5e_sysfs_create(): ``ecn/<roce_rp|roce_np>/enable/
    <0-7>``, ``roce_np/cnp_dscp``, ``roce_np/cnp_802p_prio``; NVIDIA's "Explicit Congestion Notification (ECN)"
    page). RDMA-CM: configfs (Documentation/ABI/testing/configfs-rdma_cm: ``mkdir rdma_cm/<hca>`` makes
    ``ports/<port-num>/default_roce_mode`` and ``default_roce_tos``). Verbs: MLNX_OFED's mlx5_ib
    ``tc/<port>/traffic_class`` (init_tc_sysfs()).
    """
    net = os.path.join(sysfs_root, 'class', 'net', netdev)
    ecn = os.path.join(net, 'ecn')
    result = {
        'netdev': net,
        'rdma_devices': os.path.join(net, 'device', 'infiniband'),
        'ecn': ecn,
        'ecn_enable': dict((role, os.path.join(ecn, role, 'enable')) for role in ECN_ROLES),
        'cnp_dscp': os.path.join(ecn, 'roce_np', 'cnp_dscp'),
        'cnp_prio': os.path.join(ecn, 'roce_np', 'cnp_802p_prio'),
        'rdma_cm': os.path.join(configfs_root, 'rdma_cm'),
    }
    if rdma_device:
        cm_dev = os.path.join(configfs_root, 'rdma_cm', rdma_device)
        cm_port = os.path.join(cm_dev, 'ports', str(port))
        result.update({
            'rdma_cm_device': cm_dev,
            'rdma_cm_port': cm_port,
            'roce_tos': os.path.join(cm_port, 'default_roce_tos'),
            'roce_mode': os.path.join(cm_port, 'default_roce_mode'),
            'traffic_class': os.path.join(sysfs_root, 'class', 'infiniband', rdma_device, 'tc', str(port),
                                          'traffic_class'),
        })
    return result


# -- comparing -------------------------------------------------------------------------------------------------------

def _listed(values):
    if values is None:
        return 'unavailable'
    return ','.join(str(value) for value in values) if values else 'none'


def _scalar(name, value):
    if value is None:
        return 'unavailable'
    if name == 'traffic_class' and value == UNSET:
        return 'unset'
    return str(value)


def view(state, settings):
    """[(setting, shown value)] of the managed settings, in a fixed order: what the diff and ``changes`` show."""
    rows = [('trust', state.get('trust') or 'unknown'), ('pfc', _listed(state.get('pfc')))]
    table = state.get('dscp2prio') or {}
    for dscp in sorted(settings['dscp_map']):
        rows.append(('dscp_map[%d]' % dscp, _listed(table[dscp]) if table.get(dscp) else 'unset'))
    for role in ('ecn_np', 'ecn_rp'):
        if settings[role]:
            rows.append((role, _listed(state.get(role))))
    for name in SCALARS:
        if settings[name] is not None:
            rows.append((name, _scalar(name, state.get(name))))
    return rows


def unavailable(settings, state):
    """The managed settings whose interface is absent (file, directory or configfs tree), in view order."""
    names = []
    for name in FILE_SETTINGS:
        wanted = settings[name]
        if (wanted or (wanted is not None and name in SCALARS)) and state.get(name) is None:
            names.append(name)
    return names


def differing(settings, state):
    """The managed settings that differ from ``settings`` in ``state`` (an unavailable one is not counted)."""
    names = []
    if state.get('trust') != settings['trust']:
        names.append('trust')
    if state.get('pfc') != settings['pfc']:
        names.append('pfc')
    table = state.get('dscp2prio') or {}
    for dscp, prio in sorted(settings['dscp_map'].items()):
        if table.get(dscp) != [prio]:
            names.append('dscp_map[%d]' % dscp)
    for role in ('ecn_np', 'ecn_rp'):
        if state.get(role) is not None and not set(settings[role]) <= set(state[role]):
            names.append(role)
    for name in SCALARS:
        if settings[name] is not None and state.get(name) is not None and state[name] != settings[name]:
            names.append(name)
    return names


def predict(state, settings):
    """``state`` with the wanted settings applied where their interface is present (check mode's after)."""
    after = dict(state)
    after['trust'] = settings['trust']
    after['pfc'] = list(settings['pfc'])
    table = dict((dscp, list(prios)) for dscp, prios in (state.get('dscp2prio') or {}).items())
    if settings['trust'] == 'pcp':
        table = {}
    for dscp, prio in settings['dscp_map'].items():
        table[dscp] = [prio]
    after['dscp2prio'] = table
    for role in ('ecn_np', 'ecn_rp'):
        if state.get(role) is not None:
            after[role] = sorted(set(state[role]) | set(settings[role]))
    for name in SCALARS:
        if settings[name] is not None and state.get(name) is not None:
            after[name] = settings[name]
    return after


def changes(before, after, settings):
    """['setting: before -> after'] for every managed setting whose shown value differs."""
    old = dict(view(before, settings))
    return ['%s: %s -> %s' % (name, old[name], shown) for name, shown in view(after, settings) if old[name] != shown]


def diff_text(state, settings):
    """One line per managed setting, for the diff's before/after."""
    return ''.join('%s: %s\n' % (name, shown) for name, shown in view(state, settings))


# -- the commands ----------------------------------------------------------------------------------------------------

def _pfc_vector(prios):
    return ','.join('1' if prio in prios else '0' for prio in PRIORITIES)


def mlnx_qos_trust_pfc_argv(path, netdev, settings, state):
    """``mlnx_qos -i DEV [--trust T] [--pfc 8 flags]`` for what differs, or None. Trust and the DSCP map go in two
    runs: mlnx_qos refuses ``--trust`` with ``--dscp2prio`` ("trust and dscp2prio commands cannot be used at the
    same time"), and ``--trust dscp`` installs the default map (DSCP d -> priority d >> 3) the entries then amend."""
    argv = [path, '-i', netdev]
    if state.get('trust') != settings['trust']:
        argv += ['--trust', settings['trust']]
    if state.get('pfc') != settings['pfc']:
        argv += ['--pfc', _pfc_vector(settings['pfc'])]
    return argv if len(argv) > 3 else None


def mlnx_qos_dscp_argv(path, netdev, settings, state):
    """``mlnx_qos -i DEV --dscp2prio set,D,P ...`` for the DSCP entries that differ, or None."""
    table = state.get('dscp2prio') or {}
    argv = [path, '-i', netdev]
    for dscp, prio in sorted(settings['dscp_map'].items()):
        if table.get(dscp) != [prio]:
            argv += ['--dscp2prio', 'set,%d,%d' % (dscp, prio)]
    return argv if len(argv) > 3 else None


def dcb_argvs(path, netdev, settings, state):
    """The ``dcb`` commands for what differs (dcb-pfc(8), dcb-app(8)): every priority's PFC set at once; the DSCP
    entries by ``app replace`` (adds the new entries, then drops the other priorities of those DSCPs); PCP trust by
    flushing the DSCP entries (mlx5 trusts DSCP exactly while DSCP APP entries exist)."""
    argvs = []
    if state.get('pfc') != settings['pfc']:
        argvs.append([path, 'pfc', 'set', 'dev', netdev, 'prio-pfc']
                     + ['%d:%s' % (prio, 'on' if prio in settings['pfc'] else 'off') for prio in PRIORITIES])
    table = state.get('dscp2prio') or {}
    if settings['trust'] == 'pcp':
        if table:
            argvs.append([path, 'app', 'flush', 'dev', netdev, 'dscp-prio'])
    else:
        wrong = [(dscp, prio) for dscp, prio in sorted(settings['dscp_map'].items()) if table.get(dscp) != [prio]]
        if wrong:
            argvs.append([path, 'app', 'replace', 'dev', netdev, 'dscp-prio']
                         + ['%d:%d' % (dscp, prio) for dscp, prio in wrong])
    return argvs


def file_writes(file_paths, settings, state):
    """[(path, text)] of the sysfs and configfs attributes that differ, in a safe order: ECN enables, the CNP's
    DSCP and priority, RDMA-CM's ToS and mode, the verbs traffic class. Writing 1 to an ECN priority that is
    already on fails on MLNX_OFED (mlx5e_store_ecn_enable returns -EPERM), so only the ones that are off are
    written."""
    writes = []
    for role, name in (('roce_np', 'ecn_np'), ('roce_rp', 'ecn_rp')):
        if state.get(name) is None:
            continue
        for prio in settings[name]:
            if prio not in state[name]:
                writes.append((os.path.join(file_paths['ecn_enable'][role], str(prio)), '1\n'))
    for name in SCALARS:
        if settings[name] is not None and state.get(name) is not None and state[name] != settings[name]:
            writes.append((file_paths[name], '%s\n' % settings[name]))
    return writes


def json_state(state):
    """The state with string keys (JSON objects have them) for the module's result."""
    result = dict(state)
    if result.get('dscp2prio') is not None:
        result['dscp2prio'] = dict((str(dscp), prios) for dscp, prios in sorted(result['dscp2prio'].items()))
    return result


def json_settings(settings):
    result = dict(settings)
    result['dscp_map'] = dict((str(dscp), prio) for dscp, prio in sorted(settings['dscp_map'].items()))
    return result
