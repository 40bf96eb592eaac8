# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The opensm role's decisions: which OpenSM instances a host runs (one per subnet it is attached to, each bound
to its port GUID), their settings, and the variable checks made before anything changes (docs/fabric.md).

``opensm_plan(settings, ib_info, host, sm_hosts, gpu_nodes)`` is called once per SM host; ``opensm_fleet_problems``
once per play over every SM host's plan (sm_problems: priorities and GUIDs across hosts of one subnet).

``opensm_provider`` (PROVIDERS) says who runs the SM: ``host`` (OpenSM on the hosts of ib_subnet_manager), ``switch``
(a managed switch's SM: nothing is installed or written on the hosts) or ``ufm`` (UFM's SM: on the UFM servers of
ib_subnet_manager only UFM's partitions.conf.user_ext is written, then UFM's sync script merges it; docs/fabric.md).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils import ib_partitions, opensm_conf, opensm_roots
from ansible_collections.aicluster.infra.plugins.module_utils.verify.fabric import norm_guid

PRIMARY, STANDBY = 15, 14
CONF_DIR = '/etc/opensm/aicluster'
UNIT = 'aicluster-opensm@%s.service'
PROVIDERS = ('host', 'switch', 'ufm')
PARTITIONS_PATH = '%s/partitions.conf' % CONF_DIR
UFM_PARTITIONS_PATH = '/opt/ufm/files/conf/partitions.conf.user_ext'
UFM_SYNC_COMMAND = ['/opt/ufm/scripts/sync_partitions_conf.sh']


def _ib_ports(ib_info):
    """[(hca, port dict)] of the InfiniBand ports ib_info read, in ibstat's order (NVSwitch bridges left out)."""
    out = []
    for hca in (ib_info or {}).get('hcas') or []:
        if hca.get('nvswitch_bridge'):
            continue
        for port in hca.get('ports') or []:
            if port.get('link_layer') == 'InfiniBand' and port.get('port_guid'):
                out.append((hca, port))
    return out


def _wanted_ports(settings, ib_ports, problems):
    """[(guid, subnet)] from opensm_ports, or the host's first InfiniBand port with its link up (else its first) on
    subnet opensm_subnet."""
    subnet = settings.get('subnet') or 'fabric'
    given = settings.get('ports') or []
    if not isinstance(given, list):
        problems.append('opensm_ports: must be a list of port GUIDs or {guid, subnet}, got %r' % (given,))
        return []
    if not given:
        # the first port whose link is up: an SM host's first port may be cabled elsewhere or down, and an SM bound to
        # it manages nothing; with none up (a fresh host before its cables), the first one
        ports = [port for dummy, port in ib_ports]
        active = [port for port in ports if port.get('physical_state') == 'LinkUp'] or ports
        return [(norm_guid(active[0]['port_guid']), subnet)] if active else []
    out = []
    for index, item in enumerate(given):
        guid, item_subnet = (item.get('guid'), item.get('subnet') or subnet) if isinstance(item, dict) else (item, subnet)
        normal = norm_guid(guid) if isinstance(guid, str) else None
        if normal is None:
            problems.append('opensm_ports[%d]: %r is not a port GUID (0x followed by up to 16 hex digits)' % (index, guid))
            continue
        out.append((normal, str(item_subnet)))
    return out


def _priority(settings, host, sm_hosts, problems):
    given = settings.get('sm_priority')
    if given is None:
        position = sm_hosts.index(host) if host in sm_hosts else 0
        return PRIMARY if position == 0 else STANDBY if position == 1 else 0
    if isinstance(given, bool) or not isinstance(given, int) or not 0 <= given <= 15:
        problems.append('opensm_sm_priority: %r must be an integer 0-15 (15 primary, 14 standby)' % (given,))
        return None
    return given


def _external_plan(provider, settings, ib_info, host, gpu_nodes):
    """The plan of a host of ib_subnet_manager when a switch or UFM runs the SM: no instance; for ``ufm`` the user
    partitions file; the notes said once (why nothing else is done)."""
    problems = []
    partitions = settings.get('partitions') or []
    rates = dict((norm_guid(port['port_guid']), port.get('rate_gbps')) for dummy, port in _ib_ports(ib_info)
                 if port.get('rate_gbps'))
    problems.extend(ib_partitions.partitions_problems(partitions, rates or None, require_default=False))
    if isinstance(partitions, list) and not any(ib_partitions.is_default_partition(item) for item in partitions):
        problems.append('opensm_partitions: no entry named Default with P_Key 0x7fff; with opensm_provider: %s the '
                        'role does not write it (the %s SM defines the default partition), but verify_ib\'s '
                        'fabric.partition reads opensm_partitions: describe it as that SM has it, e.g. {name: Default, '
                        'pkey: 0x7fff, members: [{guid: ALL, membership: full}]}'
                        % (provider, {'switch': 'switch\'s', 'ufm': 'UFM\'s'}[provider]))
    if provider == 'switch':
        return {'problems': problems, 'instances': [], 'roots': 'off', 'provider': provider, 'partitions_file': None,
                'notes': ['opensm_provider: switch - the subnet manager runs on a managed switch and its partitions are '
                          'configured on the switch; the opensm role installs, writes and starts nothing on the hosts '
                          'of ib_subnet_manager']}
    if host in (gpu_nodes or []) and not settings.get('allow_on_compute'):
        problems.append('opensm: %s is in gpu_nodes; with opensm_provider: ufm the hosts of ib_subnet_manager are the '
                        'UFM servers. Move it out of ib_subnet_manager, or set opensm_allow_on_compute: true' % host)
    path = settings.get('ufm_partitions_path') or UFM_PARTITIONS_PATH
    if not isinstance(path, str) or not path.startswith('/') or path.endswith('/'):
        problems.append('opensm_ufm_partitions_path: %r must be an absolute file path (UFM documents %s)'
                        % (path, UFM_PARTITIONS_PATH))
    elif not settings.get('ufm_dir_found'):
        problems.append('opensm_ufm_partitions_path: %s is not a directory on %s: UFM is not installed there, or '
                        'its files are elsewhere (set opensm_ufm_partitions_path); with opensm_provider: ufm the hosts '
                        'of ib_subnet_manager are the UFM servers' % (path.rsplit('/', 1)[0] or '/', host))
    command = settings.get('ufm_sync_command', UFM_SYNC_COMMAND)
    if not isinstance(command, list) or not command or not all(isinstance(word, str) and word for word in command):
        problems.append('opensm_ufm_sync_command: %r must be a non-empty list of words (argv), e.g. %r'
                        % (command, UFM_SYNC_COMMAND))
    kept = ib_partitions.user_ext_partitions(partitions)
    notes = ['opensm_provider: ufm - UFM runs the subnet manager; on the hosts of ib_subnet_manager (the UFM servers) '
             'the opensm role installs and starts nothing and writes only %s (%d partition%s), merged by %s when it '
             'changes. The default partition (0x7fff) is UFM\'s own and is not written there'
             % (path, len(kept), '' if len(kept) == 1 else 's',
                ' '.join(command) if isinstance(command, list) else command)]
    return {'problems': problems, 'instances': [], 'roots': 'off', 'provider': provider, 'notes': notes,
            'partitions_file': {'kind': 'partitions.conf.user_ext', 'path': path, 'partitions': kept}}


def opensm_plan(settings, ib_info, host, sm_hosts, gpu_nodes):
    """This host's SM instances, or the problems that stop the role before it changes anything.

    ``settings``: the role's variables without their ``opensm_`` prefix (ports, subnet, sm_priority,
    allow_on_compute, provider, partitions, settle_timeout, root_guids, conf: the other owned opensm.conf settings)
    and ``root_files``, the root files (opensm_roots.ROOT_FILE) that exist with content on the host. Returns
    ``{problems, instances, roots, provider, notes, partitions_file}`` (``roots``: auto, given or off,
    opensm_roots.roots_wanted(); ``notes``: what to say once; ``partitions_file``: ``{kind, path, partitions}`` for
    opensm_config, None with a switch SM); each instance
    ``{guid, subnet, priority, unit, conf_path, read, settings}`` (``read``: the fabric_info read of its port) where
    ``settings`` is what opensm_config writes (owned keys only; None keeps the build's default). ``root_guid_file``
    points to the instance's root file when root GUIDs are on and the file is there (roots.yml writes it after the
    SM's first sweep, docs/fabric.md "Root GUIDs"); otherwise it is the build's default.

    With ``provider`` ``switch`` or ``ufm`` there is no instance and ib_info gives only the ports' rates;
    ``ufm_partitions_path``, ``ufm_dir_found`` (its directory is on the host) and ``ufm_sync_command`` are read for
    ``ufm``."""
    problems = []
    provider = settings.get('provider') or 'host'
    if provider not in PROVIDERS:
        return {'problems': ['opensm_provider: %r is not one of %s' % (provider, ', '.join(PROVIDERS))],
                'instances': [], 'roots': 'off', 'provider': provider, 'partitions_file': None, 'notes': []}
    if provider != 'host':
        return _external_plan(provider, settings, ib_info, host, gpu_nodes)
    if host in (gpu_nodes or []) and not settings.get('allow_on_compute'):
        problems.append('opensm: %s is in gpu_nodes; an SM on a compute node competes with its jobs and is lost with '
                        'it. Move it to an SM host, or set opensm_allow_on_compute: true' % host)
    ib_ports = _ib_ports(ib_info)
    wanted = _wanted_ports(settings, ib_ports, problems)
    known = dict((norm_guid(port['port_guid']), (hca, port)) for hca, port in ib_ports)
    for guid, dummy in wanted:
        if guid not in known:
            problems.append('opensm_ports: %s is not an InfiniBand port of %s (its ports: %s)' % (
                guid, host, ', '.join(sorted(known)) or 'none'))
    if not wanted and not problems:
        problems.append('opensm: %s has no InfiniBand port for an SM (ibstat shows none); an SM host must be on '
                        'the fabric' % host)
    priority = _priority(settings, host, sm_hosts or [], problems)
    settle = settings.get('settle_timeout', 0)
    if isinstance(settle, bool) or not isinstance(settle, int) or settle < 0:
        problems.append('opensm_settle_timeout must be a number of seconds (0 or more), got %r' % (settle,))
    conf = dict(settings.get('conf') or {})
    problems.extend(opensm_conf.opensm_conf_problems(dict((key, value) for key, value in conf.items()
                                                          if key not in ('guid', 'sm_priority'))))
    root_guids = settings.get('root_guids', opensm_roots.AUTO)
    problems.extend(opensm_roots.root_guids_problems(root_guids))
    roots_mode = 'off' if problems else opensm_roots.roots_wanted(
        root_guids, conf.get('routing_engine') or [], settings.get('flavour'))[0]
    root_files = set(settings.get('root_files') or [])
    rates = dict((guid, port.get('rate_gbps')) for guid, (dummy, port) in known.items() if port.get('rate_gbps'))
    problems.extend(ib_partitions.partitions_problems(settings.get('partitions') or [], rates or None))
    instances = []
    for guid, subnet in wanted:
        instance = dict(conf)
        instance.update({
            'guid': guid, 'sm_priority': priority,
            'log_file': conf.get('log_file') or '/var/log/opensm-%s.log' % guid,
            'partition_config_file': conf.get('partition_config_file') or PARTITIONS_PATH,
        })
        if roots_mode != 'off' and opensm_roots.ROOT_FILE % guid in root_files:
            instance['root_guid_file'] = opensm_roots.ROOT_FILE % guid
        hca, port = known.get(guid, ({}, {}))
        instances.append({'guid': guid, 'subnet': subnet, 'priority': priority, 'unit': UNIT % guid,
                          'conf_path': '%s/opensm-%s.conf' % (CONF_DIR, guid),
                          'read': {'ca': hca.get('name'), 'port': port.get('port') or 1, 'guid': guid},
                          'settings': instance})
    return {'problems': problems, 'instances': instances, 'roots': roots_mode, 'provider': provider, 'notes': [],
            'partitions_file': {'kind': 'partitions.conf', 'path': PARTITIONS_PATH,
                                'partitions': settings.get('partitions') or []}}


def opensm_fleet_problems(plans):
    """Across the SM hosts (``{host: plan}``): sm_problems over every planned instance (equal priorities in one
    subnet, more than two SMs a subnet, a port planned twice)."""
    ports = []
    for host in sorted(plans or {}):
        for instance in (plans[host] or {}).get('instances') or []:
            ports.append({'host': host, 'subnet': instance['subnet'], 'guid': instance['guid'],
                          'priority': instance['priority']})
    return opensm_conf.sm_problems(ports)
