# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nccl role's decisions: one node's /etc/nccl.conf (its lines, from the node's ib_info facts through nccl_env),
what is wrong with the role's variables, which NCCL variables are not taken as defaults without a warning and why,
and the nodes of a group whose GPU-fabric ports differ from the others'.

Sources (docs/fabric.md "The NCCL environment" cites them in full):
- NCCL src/misc/param.cc (initEnv, setEnvFile): NCCL reads ${NCCL_CONF_FILE} (2.23 and later) or ~/.nccl.conf, then
  /etc/nccl.conf. Each line is KEY=VALUE taken literally: no quotes removed, no blanks trimmed, ``#`` a comment only
  at the start of a line, a line without ``=`` skipped, names and values cut at 1023 characters. Each is set with
  setenv(..., 0): the job's environment wins over the files, the user's file over /etc/nccl.conf.
- NCCL 2.21.5-1 (commit ab2b89c4, 2024-03-26): "Net/IB: add support for dynamic GID detection. Automatically select
  RoCEv2/IPv4 interface by default"; NCCL_IB_GID_INDEX's default became -1 (it was 0). Before 2.21 NCCL had no way to
  find the GID (maintainer, NVIDIA/nccl #718: write NCCL_IB_GID_INDEX into /etc/nccl.conf from show_gids); a wrong
  index is the timeout of NVIDIA/nccl #769 and #1131. The detection crashed (2.22.3) or hung (2.23.4) on a pod's
  sparse GID table (NVIDIA/nccl #1538); NCCL 2.26.2-1: "Make GID index detection code more resilient".
- NCCL src/transport/net_ib/init.cc: ports that are not Active are skipped when NCCL starts, whatever NCCL_IB_HCA says.
- NCCL src/graph/connect.cc ("Legacy naming": MIN_NRINGS/MAX_NRINGS read as MIN/MAX_NCHANNELS since 2.5.6),
  src/transport/net_socket.cc (SOCKET_NTHREADS, NSOCKS_PERTHREAD: the socket transport only), 2.5.6-1 (commit 299c554d:
  LL_THRESHOLD and TREE_THRESHOLD removed), commit 0d3a20f9 (2.4: IB_CUDA_SUPPORT and IB_GDR_LEVEL replaced by
  NET_GDR_LEVEL); NCCL's environment-variable documentation: the variables of its "Debugging" section "should not be
  used in production nor retained in scripts".
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import posixpath
import re
from collections import Counter

from ansible_collections.aicluster.infra.plugins.module_utils.cluster_math import _is_active, _link_layer, nccl_env
from ansible_collections.aicluster.infra.plugins.module_utils.slurm import hostlist_compress

DEFAULT_CONF_PATH = '/etc/nccl.conf'
GID_MODES = ('auto', 'nccl')
# NCCL's setEnvFile copies names and values into 1024-byte buffers.
NCCL_LINE_MAX = 1023
_ENV_NAME = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')
_HCA_ENTRY = re.compile(r'^[A-Za-z0-9_.-]+(:[0-9]+)?$')
_IFNAME_LIST = re.compile(r'^\^?=?[A-Za-z0-9_.:@-]+(,[A-Za-z0-9_.:@-]+)*$')

# Variables the role writes itself: nccl_env_extra may not set them (one source for each).
ROLE_OWNED = {
    'NCCL_IB_HCA': 'nccl_hca_include or nccl_hca_exclude',
    'NCCL_IB_GID_INDEX': 'nccl_ib_gid_index',
    'NCCL_IB_TC': 'nccl_ib_tc',
    'NCCL_IB_SL': 'nccl_ib_sl',
    'NCCL_SOCKET_IFNAME': 'nccl_socket_ifname',
}

_DEBUGGING = ("NCCL's environment-variable documentation lists it under Debugging: 'should not be used in production "
              "nor retained in scripts'")
# name -> why it is not a good default for every job on every node. Written all the same (the site asked for it),
# with this warning, one line per variable.
NOT_DEFAULTS = {
    'NCCL_MIN_NRINGS': ('obsolete: the name NCCL_MIN_NCHANNELS had before 2.5 (NCCL src/graph/connect.cc, "Legacy '
                        'naming"), and a minimum channel count forced on every job takes GPU SMs from compute and '
                        'overrides NCCL\'s tuning; set NCCL_MIN_NCHANNELS in the job that a measurement shows it helps'),
    'NCCL_MAX_NRINGS': ('obsolete: the name NCCL_MAX_NCHANNELS had before 2.5 (NCCL src/graph/connect.cc, "Legacy '
                        'naming"), and a channel cap on every job overrides NCCL\'s tuning; set NCCL_MAX_NCHANNELS in '
                        'the job that needs it'),
    'NCCL_MIN_NCHANNELS': 'a tuning override for one job, not a node default: ' + _DEBUGGING,
    'NCCL_MAX_NCHANNELS': 'a tuning override for one job, not a node default: ' + _DEBUGGING,
    'NCCL_NTHREADS': ('a tuning override: NCCL picks the threads per block by GPU architecture and algorithm '
                      '(src/graph/tuning.cc); ' + _DEBUGGING),
    'NCCL_BUFFSIZE': ('a tuning override: the buffer is per channel and peer, so a larger one multiplies GPU memory '
                      'with the peers (NCCL\'s default is 4 MiB, src/init.cc); ' + _DEBUGGING),
    'NCCL_SOCKET_NTHREADS': ('read by the socket transport only (NCCL src/transport/net_socket.cc): it does nothing '
                             'over InfiniBand or RoCE, and where NCCL falls back to sockets it hides that fault'),
    'NCCL_NSOCKS_PERTHREAD': ('read by the socket transport only (NCCL src/transport/net_socket.cc): it does nothing '
                              'over InfiniBand or RoCE, and where NCCL falls back to sockets it hides that fault'),
    'NCCL_LL_THRESHOLD': 'obsolete: removed in NCCL 2.5.6 (model-based tuning, commit 299c554d), ignored since',
    'NCCL_TREE_THRESHOLD': 'obsolete: removed in NCCL 2.5.6 (model-based tuning, commit 299c554d), ignored since',
    'NCCL_IB_CUDA_SUPPORT': 'obsolete: replaced by NCCL_NET_GDR_LEVEL in NCCL 2.4 (commit 0d3a20f9), ignored since',
    'NCCL_IB_GDR_LEVEL': 'obsolete: replaced by NCCL_NET_GDR_LEVEL in NCCL 2.4 (commit 0d3a20f9), ignored since',
    'NCCL_ALGO': ('forces one algorithm on every job and turns off NCCL\'s choice (NVLS, Tree, CollNet) where it is '
                  'faster; ' + _DEBUGGING),
    'NCCL_PROTO': 'forces one protocol on every job and turns off NCCL\'s choice; ' + _DEBUGGING,
}
# name -> (values that are harmful as a default, why)
_SWITCHES_ON = ('1', 'y', 'yes', 'true', 'on')
NOT_DEFAULT_VALUES = {
    'NCCL_IB_DISABLE': (_SWITCHES_ON, 'turns the InfiniBand/RoCE transport off: every job falls back to sockets'),
    'NCCL_P2P_DISABLE': (_SWITCHES_ON, 'turns NVLink/PCIe peer-to-peer off for every job; ' + _DEBUGGING),
    'NCCL_SHM_DISABLE': (_SWITCHES_ON, 'turns the shared-memory transport off for every job; ' + _DEBUGGING),
    'NCCL_DEBUG': (('info', 'trace'), 'floods every job\'s output; WARN is the level to keep (INFO for one job)'),
}


def _int(value):
    """An int from an int or a decimal string; None for anything else (booleans included)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    text = str(value).strip() if isinstance(value, str) else ''
    return int(text) if text.isdigit() else None


def _unset(value):
    return value is None or (isinstance(value, str) and value.strip() == '')


def _names(value):
    if value is None:
        return []
    if isinstance(value, str):
        return [item.strip() for item in value.split(',') if item.strip()]
    return list(value)


def extra_problems(extra):
    """What makes ``nccl_env_extra`` unusable in /etc/nccl.conf, one line per variable."""
    if extra in (None, ''):
        return []
    if not isinstance(extra, dict):
        return ['nccl_env_extra must be a dict of NCCL variables, got %r' % (extra,)]
    problems = []
    for key in sorted(extra, key=str):
        value = extra[key]
        name = 'nccl_env_extra.%s' % key
        if not isinstance(key, str) or not _ENV_NAME.match(key):
            problems.append('nccl_env_extra: %r is not an environment variable name' % (key,))
        elif key in ROLE_OWNED:
            problems.append('%s: the role writes %s itself; set %s' % (name, key, ROLE_OWNED[key]))
        elif key == 'NCCL_CONF_FILE':
            problems.append('%s: NCCL reads NCCL_CONF_FILE from the environment before any file, so it does nothing '
                            'inside one' % name)
        elif isinstance(value, bool) or not isinstance(value, (str, int, float)):
            problems.append('%s must be a string or a number (booleans: write 1 or 0), got %r' % (name, value))
        elif re.search(r'[\n\r\0]', str(value)):
            problems.append('%s: the value must be one line' % name)
        elif str(value) != str(value).strip():
            problems.append('%s: NCCL keeps blanks around a value as part of it; remove them' % name)
        elif str(value) == '':
            problems.append('%s is empty: NCCL would set it empty; leave it out instead' % name)
        elif len(key) > NCCL_LINE_MAX or len(str(value)) > NCCL_LINE_MAX:
            problems.append('%s: NCCL cuts names and values at %d characters' % (name, NCCL_LINE_MAX))
    return problems


def extra_warnings(extra):
    """One line per variable of ``nccl_env_extra`` that is obsolete, or harmful as a default for every job, and why."""
    warnings = []
    for key in sorted((extra or {}) if isinstance(extra, dict) else {}, key=str):
        value = str(extra[key]).strip().lower()
        if key in NOT_DEFAULTS:
            warnings.append('nccl_env_extra.%s: %s' % (key, NOT_DEFAULTS[key]))
        elif key in NOT_DEFAULT_VALUES and value in NOT_DEFAULT_VALUES[key][0]:
            warnings.append('nccl_env_extra.%s=%s %s' % (key, extra[key], NOT_DEFAULT_VALUES[key][1]))
        elif isinstance(key, str) and _ENV_NAME.match(key) and not key.startswith('NCCL_'):
            warnings.append('nccl_env_extra.%s is not an NCCL variable: NCCL sets it in the job\'s environment only '
                            'when it starts, too late for what reads it earlier (CUDA, MPI, UCX); set it in the job '
                            'or the container instead' % key)
    return warnings


def settings_problems(settings):
    """What is wrong with the role's variables (keys without the ``nccl_`` prefix), one line each."""
    problems = []
    include, exclude = settings.get('hca_include'), settings.get('hca_exclude')
    for name, value in (('nccl_hca_include', include), ('nccl_hca_exclude', exclude)):
        if value is not None and not isinstance(value, (list, tuple, str)):
            problems.append('%s must be a list of HCA names or name:port, got %r' % (name, value))
            continue
        bad = [item for item in _names(value) if not isinstance(item, str) or not _HCA_ENTRY.match(item)]
        if bad:
            problems.append('%s: %s not an HCA name or name:port (mlx5_0, mlx5_0:1)' % (name, ', '.join(map(repr, bad))))
    if _names(include) and _names(exclude):
        problems.append('nccl_hca_include and nccl_hca_exclude are both set: the include list is exact, so set one')
    ifname = settings.get('socket_ifname')
    if not _unset(ifname) and not (isinstance(ifname, str) and _IFNAME_LIST.match(ifname.strip())):
        problems.append("nccl_socket_ifname must be empty or NCCL's interface list (=bond0, eth, ^docker), got %r"
                        % (ifname,))
    gid = settings.get('ib_gid_index', 'auto')
    if not (gid in GID_MODES or (_int(gid) is not None and 0 <= _int(gid) <= 255)):
        problems.append('nccl_ib_gid_index must be auto (from the node\'s RoCE v2 IPv4 GID), nccl (left to NCCL '
                        '2.21+) or an index 0-255, got %r' % (gid,))
    tc = settings.get('ib_tc')
    if not _unset(tc) and not (_int(tc) is not None and 0 <= _int(tc) <= 255):
        problems.append('nccl_ib_tc must be empty or a traffic class 0-255 (106: DSCP 26 with ECN), got %r' % (tc,))
    sl = settings.get('ib_sl')
    if not _unset(sl) and not (_int(sl) is not None and 0 <= _int(sl) <= 15):
        problems.append('nccl_ib_sl must be empty or an InfiniBand service level 0-15, got %r' % (sl,))
    problems += extra_problems(settings.get('env_extra'))
    path = settings.get('conf_path', DEFAULT_CONF_PATH)
    if not isinstance(path, str) or not path.startswith('/') or posixpath.normpath(path) != path \
            or re.search(r'\s', path):
        problems.append('nccl_conf_path must be an absolute, normalised path without blanks, got %r' % (path,))
    group = settings.get('fleet_group', '')
    if not isinstance(group, str):
        problems.append('nccl_fleet_group must be a string (a name for hosts built alike), got %r' % (group,))
    return problems


def _port_key(name, port):
    return '%s:%s' % (name, port.get('port'))


def roce_v2_ipv4_gid_index(port):
    """The lowest-index RoCE v2 GID of ``port`` that carries an IPv4 address (ib_info ``gids``), or None. Without a
    GID table in the facts, ib_info's own ``roce_v2_gid_index``."""
    gids = port.get('gids') or []
    found = sorted(int(gid['index']) for gid in gids
                   if str(gid.get('version') or '').lower() == 'v2' and gid.get('ipv4') and gid.get('index') is not None)
    if found:
        return found[0]
    if gids:
        return None  # a table without an IPv4 RoCE v2 entry: link-local only, not routable
    index = port.get('roce_v2_gid_index')
    return None if index is None else int(index)


def _ports_of(ib_info):
    ports = {}
    bridges = set(ib_info.get('nvswitch_bridges') or [])
    for hca in ib_info.get('hcas') or []:
        if not isinstance(hca, dict) or hca.get('nvswitch_bridge') or hca.get('name') in bridges:
            continue
        for port in hca.get('ports') or []:
            ports[_port_key(hca.get('name'), port)] = port
    return ports


def gid_decision(mode, link_layer, ports):
    """(NCCL_IB_GID_INDEX or None, [warnings]) for ``mode`` (auto, nccl or an index) over the node's NCCL ports
    ({name:port: port facts})."""
    if mode == 'nccl':
        return None, []
    if mode != 'auto':
        return str(_int(mode)), []
    if link_layer != 'Ethernet':
        return None, []
    active = dict((key, port) for key, port in ports.items() if _is_active(port))
    if not active:
        return None, []
    indexes = dict((key, roce_v2_ipv4_gid_index(port)) for key, port in active.items())
    unknown = sorted(key for key, value in indexes.items() if value is None)
    left = ('NCCL_IB_GID_INDEX is left to NCCL, which selects the RoCE v2 IPv4 GID of each port itself from 2.21; '
            'an older NCCL uses GID 0 and times out')
    if unknown:
        return None, ['no RoCE v2 GID with an IPv4 address on %s (no IPv4 address on the netdev, or no GID table in '
                      'the facts): %s' % (', '.join(unknown), left)]
    values = set(indexes.values())
    if len(values) > 1:
        return None, ['the ports disagree on the RoCE v2 IPv4 GID index (%s), and one NCCL_IB_GID_INDEX serves them '
                      'all: %s; give every rail the same address setup, or set nccl_ib_gid_index'
                      % (', '.join('%s=%s' % item for item in sorted(indexes.items())), left)]
    return str(values.pop()), []


def conf_lines(env):
    """/etc/nccl.conf's lines (without the header): the role's variables in a fixed order, then nccl_env_extra's."""
    order = ['NCCL_IB_HCA', 'NCCL_IB_GID_INDEX', 'NCCL_IB_TC', 'NCCL_IB_SL', 'NCCL_SOCKET_IFNAME']
    keys = [key for key in order if key in env] + sorted(key for key in env if key not in order)
    return ['%s=%s' % (key, env[key]) for key in keys]


def conf_plan(settings, ib_info):
    """One node's /etc/nccl.conf from its ib_info facts and the role's settings (keys without the ``nccl_`` prefix):
    ``{problems, warnings, skip, env, lines, ports, down, missing, link_layer, gid_index, group}``.

    ``problems`` (the variables, or facts that leave no port) stop the node before anything changes; ``warnings`` are
    written as they are; ``skip`` names why a node without RDMA adapters gets no file.
    """
    settings = dict(settings or {})
    plan = {'problems': settings_problems(settings), 'warnings': [], 'skip': None, 'env': {}, 'lines': [],
            'ports': [], 'down': [], 'missing': [], 'link_layer': None, 'gid_index': None,
            'group': settings.get('fleet_group') or ''}
    if plan['problems']:
        return plan
    plan['warnings'] += extra_warnings(settings.get('env_extra'))
    path = settings.get('conf_path', DEFAULT_CONF_PATH)
    if path != DEFAULT_CONF_PATH:
        plan['warnings'].append('nccl_conf_path is %s: NCCL reads /etc/nccl.conf by itself, any other file only when '
                                'a job sets NCCL_CONF_FILE=%s (NCCL 2.23 and later)' % (path, path))
    if not isinstance(ib_info, dict) or not isinstance(ib_info.get('hcas'), list):
        plan['problems'].append('the ib_info facts are not a dict with an hcas list')
        return plan
    node_ports = _ports_of(ib_info)
    if not node_ports:
        plan['skip'] = 'no RDMA adapter: NCCL has no InfiniBand or RoCE port to use here'
        return plan
    include = _names(settings.get('hca_include'))
    present = set(node_ports) | set(key.split(':')[0] for key in node_ports)
    plan['missing'] = [entry for entry in include if entry not in present]
    if include and len(plan['missing']) == len(include):
        plan['problems'].append('none of nccl_hca_include (%s) is on this node' % ', '.join(include))
        return plan
    try:
        env = nccl_env(ib_info, hca_include=[entry for entry in include if entry in present] or None,
                       hca_exclude=settings.get('hca_exclude') or None,
                       socket_ifname=(settings.get('socket_ifname') or '').strip() or None, gid_index=None,
                       active_only=False)
    except ValueError as exc:
        plan['problems'].append('no port for NCCL_IB_HCA: %s' % exc)
        return plan
    plan['ports'] = env['NCCL_IB_HCA'].lstrip('=').split(',')
    chosen = dict((key, node_ports[key]) for key in plan['ports'])
    # nccl_env refused a mix of InfiniBand and Ethernet ports: one link layer here
    layer = plan['link_layer'] = _link_layer(next(iter(chosen.values())).get('link_layer'))
    plan['down'] = [key for key, port in chosen.items() if not _is_active(port)]
    if plan['missing']:
        plan['warnings'].append('%s of nccl_hca_include not on this node: left out of its NCCL_IB_HCA'
                                % ', '.join(plan['missing']))
    if plan['down']:
        plan['warnings'].append('%s not Active (%s): kept in NCCL_IB_HCA, which NCCL skips until the port is Active'
                                % (', '.join(plan['down']), ', '.join(str(chosen[key].get('state')) for key in plan['down'])))
    gid, gid_warnings = gid_decision(settings.get('ib_gid_index', 'auto'), layer, chosen)
    plan['warnings'] += gid_warnings
    if gid is not None:
        env['NCCL_IB_GID_INDEX'] = plan['gid_index'] = gid
    tc, sl = settings.get('ib_tc'), settings.get('ib_sl')
    if layer == 'Ethernet' and not _unset(tc):
        env['NCCL_IB_TC'] = str(_int(tc))
    if not _unset(sl):
        if layer == 'InfiniBand':
            env['NCCL_IB_SL'] = str(_int(sl))
        else:
            plan['warnings'].append('nccl_ib_sl is set but the GPU fabric is RoCE: its class is nccl_ib_tc; '
                                    'NCCL_IB_SL is not written')
    for key, value in sorted((settings.get('env_extra') or {}).items()):
        env[key] = str(value)
    plan['env'] = env
    plan['lines'] = conf_lines(env)
    return plan


def parse_conf(text):
    """An NCCL configuration file's variables as NCCL reads it (src/misc/param.cc setEnvFile): ``#`` lines and lines
    without ``=`` skipped, the name up to the first ``=``, the value after it, both literally; the first of a name
    wins (setenv without overwrite)."""
    env = {}
    for line in (text or '').split('\n'):
        line = line[:-1] if line.endswith('\r') else line
        if not line or line.startswith('#') or '=' not in line:
            continue
        key, _sep, value = line.partition('=')
        env.setdefault(key[:NCCL_LINE_MAX], value[:NCCL_LINE_MAX])
    return env


def fleet_report(plans, compare=True):
    """What the play prints once: ``{warnings, differences, skipped}``.

    ``plans`` is {host: conf_plan result, or None for a host that has none (unreachable)}. ``warnings``: each node's
    warnings, one line per text with the nodes that share it. ``differences`` (when ``compare``): one line per node
    whose GPU fabric or NCCL ports differ from most nodes of its ``group``, and one for the nodes that got no file;
    each node keeps its own file. ``skipped``: the nodes without RDMA adapters, or an empty string. ``lines``: the
    message the role prints, empty when there is nothing to say.
    """
    plans = dict((host, plan) for host, plan in (plans or {}).items() if isinstance(plan, dict))
    by_text = {}
    for host in sorted(plans):
        for text in plans[host].get('warnings') or []:
            by_text.setdefault(text, []).append(host)
    warnings = ['%s: %s' % (hostlist_compress(hosts), text) for text, hosts in by_text.items()]
    skipped = sorted(host for host, plan in plans.items() if plan.get('skip') and not plan.get('problems'))
    report = {'warnings': warnings, 'differences': [], 'skipped': ''}
    if skipped:
        report['skipped'] = '%s: %s' % (hostlist_compress(skipped), plans[skipped[0]]['skip'])
    if compare:
        report['differences'] = _differences(plans)
    lines = ['warning on %s' % line for line in report['warnings']]
    lines += ['differs: %s' % line for line in report['differences']]
    if lines:
        lines.insert(0, '[WARNING] nccl:')
    if skipped:
        lines.append('nccl: no file on %s' % report['skipped'])
    report['lines'] = lines
    return report


def _differences(plans):
    groups = {}
    for host in sorted(plans):
        groups.setdefault(plans[host].get('group') or '', []).append(host)
    lines = []
    for group in sorted(groups):
        hosts = groups[group]
        label = ' of group %s' % group if group else ''
        failed = [host for host in hosts if plans[host].get('problems')]
        if failed:
            lines.append('%s%s: no NCCL file written (the reason is in each node\'s failure above)'
                         % (hostlist_compress(failed), label))
        ok = [host for host in hosts if host not in failed and not plans[host].get('skip')]
        if len(ok) < 2:
            continue
        signature = dict((host, (plans[host].get('link_layer') or '', tuple(plans[host].get('ports') or [])))
                         for host in ok)
        counts = Counter(signature.values())
        common, count = sorted(counts.items(), key=lambda item: (-item[1], -len(item[0][1]), item[0]))[0]
        if sum(1 for value in counts.values() if value == count) > 1:
            members = dict((kind, [host for host in ok if signature[host] == kind]) for kind in counts)
            kinds = sorted(counts, key=lambda kind: members[kind])
            parts = ['%s %s with %d port%s' % (hostlist_compress(members[kind]), kind[0], len(kind[1]),
                                               '' if len(kind[1]) == 1 else 's') for kind in kinds]
            lines.append('the %d nodes%s split with no majority: %s; nodes built differently need their own '
                         'nccl_fleet_group' % (len(ok), label, '; '.join(parts)))
            continue
        for host in ok:
            layer, ports = signature[host]
            if (layer, ports) == common:
                continue
            if layer != common[0]:
                lines.append('%s: its GPU fabric is %s where %d of %d nodes%s have %s'
                             % (host, layer, count, len(ok), label, common[0]))
                continue
            lacks = [port for port in common[1] if port not in ports]
            more = [port for port in ports if port not in common[1]]
            lines.append('%s has %d GPU-fabric port%s for NCCL where %d of %d nodes%s have %d%s%s'
                         % (host, len(ports), '' if len(ports) == 1 else 's', count, len(ok), label, len(common[1]),
                            '; missing %s' % ', '.join(lacks) if lacks else '',
                            '; more: %s' % ', '.join(more) if more else ''))
    return lines
