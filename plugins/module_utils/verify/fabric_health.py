# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The verify_ib role's fabric-health decisions: fabric.sm, fabric.partition and fabric.switch_errors from what its
tasks read (registered command results), or "not checked" with the reason.

The judging is in ``sm.py``, ``partition.py`` and ``switch_errors.py``; this module turns the role's reads into
their observations and expectations, and says why a check did not run instead of passing it silently:

- the GPU fabric is Ethernet (RoCE): no subnet manager, partitions or InfiniBand switch counters;
- the check is switched off (``verify_ib_sm_enabled``, ``verify_ib_partition_enabled``,
  ``verify_ib_switch_errors_enabled``);
- the tool is not installed where it ran (``sminfo``/``saquery``/``ibqueryerrors``: infiniband-diags; the lab's
  default labs have neither an SM nor infiniband-diags);
- no GPU-fabric port had its link up to read the subnet through.

A "not checked" result passes and carries ``skipped`` (the reason): it never fails the verdict, the report lists it
as skipped, and the gate does not resume a node drained for that check (gate._unchecked).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils import ib_partitions
from ansible_collections.aicluster.infra.plugins.module_utils.verify.fabric import norm_guid
from ansible_collections.aicluster.infra.plugins.module_utils.verify.partition import CHECK as PARTITION, decide_partition
from ansible_collections.aicluster.infra.plugins.module_utils.verify.results import new_result
from ansible_collections.aicluster.infra.plugins.module_utils.verify.sm import CHECK as SM, DEFAULT_PRIORITY, decide_sm
from ansible_collections.aicluster.infra.plugins.module_utils.verify.switch_errors import CHECK as SWITCH, decide_switch_errors

ETHERNET = 'the GPU fabric is Ethernet (RoCE): it has no subnet manager, partitions or InfiniBand switch counters'
NO_PORT = 'no GPU-fabric port had its link up to read the subnet through (see ib.port_state)'
# grep -r -H . ROOT/class/infiniband/HCA/ports/PORT/pkeys: one "path:value" line per table entry
SYSFS_PKEY_RE = re.compile(r'/class/infiniband/(?P<hca>[^/]+)/ports/(?P<port>\d+)/pkeys/(?P<index>\d+):(?P<value>.*)$')
# the opensm role's primary and standby (opensm_plan.py)
STANDBY_PRIORITY = 14


def not_checked(check, subject, reason, **extra):
    """A result that says the check was not made, and why: passes, never silently (``skipped`` carries the reason)."""
    return new_result(check, subject, None, None, True, 'not checked: %s' % reason, skipped=reason, **extra)


def tool_missing(result):
    """Whether a registered command result says its executable could not be run, which is a tool not installed:
    ansible-core 2.19's command module answers ``Error executing command.`` (rc 2, no ``start``: the process never
    started), older ones ``[Errno 2] No such file or directory``; a shell 127."""
    if not isinstance(result, dict) or result.get('skipped'):
        return False
    msg = str(result.get('msg') or '')
    never_started = msg.startswith('Error executing command') and 'start' not in result and not result.get('stdout')
    return result.get('rc') == 127 or 'No such file or directory' in msg or never_started


def _ran(result):
    return isinstance(result, dict) and bool(result) and not result.get('skipped')


def _by_subnet(registered):
    """A looped command's registered results by the ``subnet`` of their item (the subnet reads)."""
    out = {}
    for result in (registered or {}).get('results') or []:
        item = result.get('item') or {}
        if _ran(result) and isinstance(item, dict) and item.get('subnet') is not None:
            out[item['subnet']] = result
    return out


def _disabled(expected, switch, variable):
    """Why a check does not run at all (Ethernet, or switched off), or None."""
    if expected.get('link_layer') == 'Ethernet':
        return ETHERNET
    if not expected.get(switch, True):
        return '%s is false' % variable
    return None


def _skip_nodes(check, nodes, reason):
    return dict((node, [not_checked(check, 'node', reason)]) for node in nodes)


# ------------------------------------------------------------------------------------------------ fabric.sm

def sm_expectations(expected):
    """The SM ports and the master's priority expected from the hosts of ib_subnet_manager.

    ``expected``: ``sm_hosts`` (the group, in inventory order), ``sm_host_ports`` (host -> its ``opensm_ports``:
    GUIDs or ``{guid, subnet}``), ``sm_host_plans`` (host -> the opensm role's plan, when it ran in this run: the port
    it picked), ``sm_host_priorities`` (host -> ``opensm_sm_priority``) and ``priority`` (an override). A host's
    ports are its ``opensm_ports``, else its plan's instances, else unknown. The master's priority: ``priority`` when
    given, else (``provider`` opensm) the highest of the hosts' priorities, the opensm role's default giving the first
    host 15 and the second 14; a switch's or UFM's SM (``provider`` switch or ufm): None, not judged. Returns
    ``(guids, priority, unknown_hosts)``.
    """
    guids, unknown, priorities = [], [], []
    for position, host in enumerate(expected.get('sm_hosts') or []):
        ports = []
        for item in ((expected.get('sm_host_ports') or {}).get(host)) or []:
            guid = norm_guid(item.get('guid') if isinstance(item, dict) else item)
            if guid:
                ports.append(guid)
        if not ports:
            plan = ((expected.get('sm_host_plans') or {}).get(host)) or {}
            ports = [norm_guid(instance.get('guid')) for instance in plan.get('instances') or [] if norm_guid(instance.get('guid'))]
        if not ports:
            unknown.append(host)
        guids.extend(guid for guid in ports if guid not in guids)
        given = (expected.get('sm_host_priorities') or {}).get(host)
        if given not in (None, ''):
            priorities.append(int(given))
        else:
            priorities.append(DEFAULT_PRIORITY if position == 0 else STANDBY_PRIORITY if position == 1 else 0)
    if expected.get('priority') not in (None, ''):
        return guids, int(expected['priority']), unknown
    if (expected.get('provider') or 'opensm') != 'opensm':
        # the switch's or UFM's SM: its priority is set there, not by us; judged only when the site gives it
        return guids, None, unknown
    return guids, (max(priorities) if priorities else DEFAULT_PRIORITY), unknown


def _node_sm_read(observed):
    """(what was found on the node, whether anything could be read): ``pgrep -a -x opensm`` and the enabled unit
    files named like opensm."""
    found, known = [], False
    pgrep = (observed or {}).get('opensm_pgrep')
    if _ran(pgrep) and not tool_missing(pgrep) and pgrep.get('rc') in (0, 1):
        known = True
        for line in (pgrep.get('stdout') or '').splitlines():
            if line.strip():
                found.append('an opensm process runs (%s)' % line.strip())
    units = (observed or {}).get('opensm_units')
    if _ran(units) and not tool_missing(units) and units.get('rc') in (0, 1):
        known = True
        for line in (units.get('stdout') or '').splitlines():
            words = line.split()
            if words:
                found.append('unit %s is %s' % (words[0], words[1] if len(words) > 1 else 'enabled'))
    return found, known


def _sm_subnets(subnet_reads, reads, errors):
    """subnet -> the observations sm.decide_sm takes, and the cluster results of the subnets that could not be read."""
    first, second = _by_subnet(reads.get('sminfo_first')), _by_subnet(reads.get('sminfo_second'))
    smir, issm = _by_subnet(reads.get('smir')), _by_subnet(reads.get('issm'))
    host = (subnet_reads or {}).get('host')
    subnets, skipped = {}, []
    for read in (subnet_reads or {}).get('reads') or []:
        subnet = read.get('subnet')
        through = '%s %s:%s' % (host, read.get('ca'), read.get('port'))
        if subnet not in first:
            skipped.append(not_checked(SM, 'subnet %s' % subnet, 'sminfo was not run (through %s)' % through))
            continue
        if tool_missing(first[subnet]):
            skipped.append(not_checked(SM, 'subnet %s' % subnet, 'sminfo is not installed on %s (infiniband-diags)' % host))
            continue
        observed = {'sminfo': [first[subnet]] + ([second[subnet]] if subnet in second else [])}
        for key, found in (('saquery_smir', smir), ('saquery_issm', issm)):
            if subnet in found and tool_missing(found[subnet]):
                errors.append('saquery is not installed on %s: the SMs are known from sminfo only' % host)
            elif subnet in found:
                observed[key] = found[subnet]
        subnets[subnet] = observed
    return subnets, skipped


def decide_fabric_sm(observations, reads, expected):
    """fabric.sm: ``observations`` node -> {opensm_pgrep, opensm_units} (registered results), ``reads``
    ``{sminfo_first, sminfo_second, smir, issm}`` (registered loop results, items the subnet reads), ``expected``:
    ``link_layer``, ``sm_enabled``, ``nodes`` (the GPU nodes), ``subnet_reads`` (verify_ib's ``{host, reads}``),
    ``identity``, ``provider``, ``sm_guids`` (an override), ``sm_hosts``, ``sm_host_ports``, ``sm_host_plans``,
    ``sm_host_priorities``, ``priority`` (see ``sm_expectations``). Returns ``{'nodes', 'cluster', 'summary'}``."""
    nodes = list(expected.get('nodes') or sorted(observations or {}))
    reason = _disabled(expected, 'sm_enabled', 'verify_ib_sm_enabled')
    if reason:
        return {'nodes': _skip_nodes(SM, nodes, reason), 'cluster': [not_checked(SM, 'fabric', reason)],
                'summary': {'errors': [], 'not_checked': reason}}
    guids, priority, unknown = sm_expectations(expected)
    if expected.get('sm_guids'):
        guids, unknown = [norm_guid(guid) for guid in expected['sm_guids'] if norm_guid(guid)], []
    elif unknown:
        # comparing with some SM hosts' ports only would fail a standby that is master by right: compare with none
        guids = []
    errors = []
    subnets, cluster = _sm_subnets(expected.get('subnet_reads'), reads or {}, errors)
    if not ((expected.get('subnet_reads') or {}).get('reads')):
        cluster.append(not_checked(SM, 'fabric', NO_PORT))
    node_reads, unread = {}, []
    for node in nodes:
        found, known = _node_sm_read((observations or {}).get(node))
        node_reads[node] = {'opensm_found': found}
        if not known:
            unread.append(node)
    decided = decide_sm({'subnets': subnets, 'nodes': node_reads}, {
        'provider': expected.get('provider') or 'opensm', 'sm_guids': guids, 'priority': priority,
        'identity': expected.get('identity'), 'gpu_nodes': nodes, 'sm_hosts': list(expected.get('sm_hosts') or [])})
    out = decided['nodes']
    for node in unread:
        results = out.get(node) or []
        if not subnets and all(result['passed'] for result in results):
            # neither the subnet's SM list nor the node's processes and units were read: nothing was checked
            out[node] = [not_checked(SM, 'node', 'neither the subnet\'s SMs (sminfo/saquery) nor the node\'s processes and '
                                     'units (pgrep, systemctl) could be read')]
    if guids == [] and unknown and (expected.get('provider') or 'opensm') == 'opensm':
        errors.append('the SM ports of %s are unknown (no opensm_ports, and the opensm role did not run in this play): '
                      'the master\'s GUID was not compared; set verify_ib_sm_guids' % ', '.join(unknown))
    errors = decided['summary']['errors'] + errors
    results = []
    for result in decided['cluster']:
        if result['passed'] and errors:
            # a pass that rests on fewer reads than planned says so where people read it (results.json, the report)
            result = dict(result, message='%s; not compared or not read: %s' % (result['message'], '; '.join(errors)))
        results.append(result)
    return {'nodes': out, 'cluster': cluster + results,
            'summary': {'errors': errors, 'sm_guids': guids, 'priority': priority, 'subnets': sorted(subnets)}}


# ------------------------------------------------------------------------------------------- fabric.partition

def sysfs_pkey_tables(text):
    """``grep -r -H . ROOT/class/infiniband/HCA/ports/PORT/pkeys ...`` output -> 'HCA:PORT' -> index -> value text."""
    out = {}
    for line in (text or '').splitlines():
        match = SYSFS_PKEY_RE.search(line.strip())
        if match:
            out.setdefault('%s:%s' % (match.group('hca'), match.group('port')), {})[match.group('index')] = match.group('value').strip()
    return out


def _port_guids(ib_info, hcas, port):
    """'HCA:PORT' -> the port GUID ibstat printed, for the node's checked HCAs."""
    out = {}
    for ca in (ib_info or {}).get('hcas') or []:
        if ca.get('name') not in hcas:
            continue
        for entry in ca.get('ports') or []:
            if int(entry.get('port') or 0) == int(port) and norm_guid(entry.get('port_guid')):
                out['%s:%s' % (ca['name'], port)] = norm_guid(entry['port_guid'])
    return out


def _smpquery_reads(registered, port):
    """'HCA:PORT' -> the smpquery pkeys result (the fallback where sysfs has no table), from the looped task."""
    out = {}
    for result in (registered or {}).get('results') or []:
        if _ran(result) and result.get('item'):
            out['%s:%s' % (result['item'], port)] = result
    return out


def decide_fabric_partition(observations, expected):
    """fabric.partition: ``observations`` node -> {ib_info, pkeys_sysfs (the grep result), pkeys_smpquery (the looped
    fallback)}; ``expected``: ``link_layer``, ``partition_enabled``, ``nodes``, ``checked`` (node -> HCAs), ``port``,
    ``partitions`` (opensm_partitions; None: the default partition, every port a full member, as the opensm role's
    default), ``sysfs_root``. Returns ``{'nodes', 'summary'}``."""
    nodes = list(expected.get('nodes') or sorted(observations or {}))
    reason = _disabled(expected, 'partition_enabled', 'verify_ib_partition_enabled')
    if reason:
        return {'nodes': _skip_nodes(PARTITION, nodes, reason), 'summary': {'not_checked': reason}}
    port = int(expected.get('port') or 1)
    partitions = _partitions(expected)
    reads, wanted_ports, port_pkeys, out = {}, {}, {}, {}
    guids = {}
    for node in nodes:
        observed = (observations or {}).get(node) or {}
        hcas = list(((expected.get('checked') or {}).get(node)) or [])
        ports = ['%s:%d' % (hca, port) for hca in hcas]
        if not ports:
            out[node] = [not_checked(PARTITION, 'node', 'no GPU-fabric HCA was read on the node (see ib.hca_present)')]
            continue
        sysfs = sysfs_pkey_tables((observed.get('pkeys_sysfs') or {}).get('stdout')) if _ran(observed.get('pkeys_sysfs')) else {}
        fallback = _smpquery_reads(observed.get('pkeys_smpquery'), port)
        guids[node] = _port_guids(observed.get('ib_info'), hcas, port)
        node_reads, readable = {}, []
        for name in ports:
            if name in sysfs:
                node_reads[name] = sysfs[name]
            elif name in fallback and tool_missing(fallback[name]):
                out.setdefault(node, []).append(not_checked(PARTITION, name, 'no P_Key table under %s/class/infiniband and '
                                                            'smpquery is not installed (infiniband-diags)'
                                                            % (expected.get('sysfs_root') or '/sys')))
                continue
            elif name in fallback:
                node_reads[name] = fallback[name]
            else:
                out.setdefault(node, []).append(not_checked(PARTITION, name, 'no P_Key table under %s/class/infiniband, '
                                                            'and smpquery was not run' % (expected.get('sysfs_root') or '/sys')))
                continue
            readable.append(name)
        if readable:
            reads[node], wanted_ports[node] = node_reads, readable
    if partitions is not None:
        every = sorted(set(guid for by_port in guids.values() for guid in by_port.values()))
        by_guid = ib_partitions.expected_pkeys_by_port(partitions, every)
        for node, by_port in guids.items():
            port_pkeys[node] = dict((name, by_guid[guid]) for name, guid in by_port.items())
    decided = decide_partition(reads, {'ports': wanted_ports, 'port_pkeys': port_pkeys})
    for node, results in decided['nodes'].items():
        out.setdefault(node, []).extend(results)
    return {'nodes': out, 'summary': {'partitions': 'opensm_partitions' if partitions is not None else 'default (0xffff)'}}


# --------------------------------------------------------------------------------------- fabric.switch_errors

def switch_guids(links):
    """The switch GUIDs of the fabric read (fabric_info links): a Link info peer among them is an ISL."""
    out = set()
    for link in links or []:
        for kind, key in (('node_type', 'node_guid'), ('peer_type', 'peer_guid')):
            if link.get(kind) == 'Switch' and norm_guid(link.get(key)):
                out.add(norm_guid(link.get(key)))
    return sorted(out)


def decide_fabric_switch_errors(reads, expected):
    """fabric.switch_errors: ``reads`` ``{before, after}`` (registered loop results of ``ibqueryerrors -r``, items
    the subnet reads); ``expected``: ``link_layer``, ``switch_errors_enabled``, ``nodes``, ``identity``, ``peers``,
    ``fabric_links`` (the fabric read's links: the switch GUIDs), ``error_max``, ``active``, ``busy``,
    ``subnet_reads``. Returns ``{'nodes', 'cluster', 'summary'}``."""
    nodes = list(expected.get('nodes') or [])
    reason = _disabled(expected, 'switch_errors_enabled', 'verify_ib_switch_errors_enabled')
    subnet_reads = expected.get('subnet_reads') or {}
    before, after = _by_subnet((reads or {}).get('before')), _by_subnet((reads or {}).get('after'))
    if reason is None and not subnet_reads.get('reads'):
        reason = NO_PORT
    if reason is None and any(tool_missing(result) for result in list(before.values()) + list(after.values())):
        reason = 'ibqueryerrors is not installed on %s (infiniband-diags)' % subnet_reads.get('host')
    if reason is None and not before:
        reason = 'the switch ports were not read before the bandwidth tests (verify_ib did not run first)'
    if reason:
        return {'nodes': _skip_nodes(SWITCH, nodes, reason), 'cluster': [not_checked(SWITCH, 'fabric', reason)],
                'summary': {'rising': [], 'errors': [], 'not_checked': reason}}
    pairs = [{'subnet': read['subnet'], 'before': before.get(read['subnet']), 'after': after.get(read['subnet'])}
             for read in subnet_reads['reads']]
    decided = decide_switch_errors({'reads': pairs}, {
        'identity': expected.get('identity'), 'peers': expected.get('peers'), 'switches': switch_guids(expected.get('fabric_links')),
        'error_max': expected.get('error_max') or {}, 'active': expected.get('active', True), 'busy': expected.get('busy') or [],
        'checked': nodes})
    return decided


# ----------------------------------------------------------------------------------------------- validation

PROVIDERS = ('opensm', 'switch', 'ufm')


def _partitions(settings):
    """verify_ib_partitions, None for the default partition: its default ``opensm_partitions | default([])`` is []
    where the opensm role's variables are not in the play ([] is refused by the opensm role, so it cannot mean "no
    partitions"); '' is what ``default(none)`` rendered on ansible-core before 2.19."""
    partitions = settings.get('partitions')
    return None if partitions in ('', [], None) else partitions


def fabric_problems(settings):
    """One line per bad fabric-health variable of verify_ib, naming it; [] when all is well. ``settings``:
    ``sm_provider``, ``sm_guids``, ``sm_priority``, ``sm_sweep_s``, ``partitions`` (the verify_ib_* values)."""
    problems = []
    if settings.get('sm_provider') not in PROVIDERS:
        problems.append('verify_ib_sm_provider must be one of %s (got %r)' % (', '.join(PROVIDERS), settings.get('sm_provider')))
    guids = settings.get('sm_guids')
    if not isinstance(guids, list) or any(not isinstance(guid, str) or norm_guid(guid) is None for guid in guids):
        problems.append('verify_ib_sm_guids must be a list of port GUIDs (0x followed by up to 16 hex digits), got %r' % (guids,))
    priority = settings.get('sm_priority')
    if priority not in (None, '') and not (str(priority).isdigit() and 0 <= int(str(priority)) <= 15):
        problems.append('verify_ib_sm_priority must be empty or an integer 0-15 (got %r)' % (priority,))
    sweep = settings.get('sm_sweep_s')
    if not (str(sweep).isdigit() and int(str(sweep)) <= 3600):
        problems.append('verify_ib_sm_sweep_s must be an integer 0-3600 seconds (got %r)' % (sweep,))
    partitions = _partitions(settings)
    if partitions is not None:
        problems.extend(problem.replace('opensm_partitions', 'verify_ib_partitions', 1)
                        for problem in ib_partitions.partitions_problems(partitions, require_default=False))
    return problems
