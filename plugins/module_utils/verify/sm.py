# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""fabric.sm: one master subnet manager per subnet, the expected one, at its priority, and none on a compute node.

Read per subnet, from one port of it: ``sminfo`` twice, a sweep apart (the master's LID, GUID, priority, state),
and ``saquery SMIR`` (every SM the subnet's SA knows: master and standbys, with priority and state);
``saquery -s`` optionally (the LIDs whose ports have IsSM set: an SM the master has not recorded still shows
there). Per compute node: whether an ``opensm`` unit or process runs there (the role's read).

What fails, and where (docs/verify.md "Subnet manager"):

- no master, two masters, a master that is not an expected SM port (``provider: opensm``) or that is a GPU node's
  port (``provider: switch|ufm``), a master at another priority than configured, two SMs of one subnet at the
  same priority, a master that changed between the two reads: the subnet's problem, a ``cluster`` result that
  fails the verdict and drains nobody;
- an SM on a compute node (its port GUID among the SMs, or opensm running there): that node's result, which
  drains it; the cluster results stand on their own.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils.ib_sm import parse_saquery_issm, parse_saquery_sminfo, parse_sminfo
from ansible_collections.aicluster.infra.plugins.module_utils.verify._common import parse_once
from ansible_collections.aicluster.infra.plugins.module_utils.verify.fabric import guid_owners, norm_guid
from ansible_collections.aicluster.infra.plugins.module_utils.verify.results import new_result

CHECK = 'fabric.sm'
PROVIDERS = ('opensm', 'switch', 'ufm')
# the election (opensm(8) --priority: "master is chosen by priority and GUID", 0 lowest to 15 highest): two SMs at one
# priority leave the choice to the GUID, and a restart of either can move mastership (issue 32: "sm_priority 15
# primary, 14 standby, never equal in one subnet"); 15, the primary's, is the default expected of the master
DEFAULT_PRIORITY = 15


def _parsed(value, parser, what, errors):
    """A tool's output parsed (text), taken as is (already a dict), or None."""
    if isinstance(value, dict):
        if value.get('stdout') is not None or value.get('rc') is not None:
            if value.get('failed') or value.get('rc'):
                errors.append('%s failed: %s' % (what, (value.get('stderr') or value.get('msg') or 'rc %s' % value.get('rc')).strip()))
                return None
            return parse_once(parser, value.get('stdout'), what, errors)
        return value
    return parse_once(parser, value, what, errors)


def _fail(subject, measured, threshold, message, **extra):
    return new_result(CHECK, subject, measured, threshold, False, message, **extra)


def _sms_of(subnet, observed, errors):
    """The SMs the subnet reports: GUID -> {lid, priority, state_name}, from SMIR (else the sminfo reads)."""
    smir = _parsed(observed.get('saquery_smir'), parse_saquery_sminfo, 'saquery SMIR on %s' % subnet, errors)
    reads = [_parsed(read, parse_sminfo, 'sminfo read %d on %s' % (index + 1, subnet), errors)
             for index, read in enumerate(observed.get('sminfo') or [])]
    reads = [(read or {}).get('sm') for read in reads]
    sms = {}
    for sm in (smir or {}).get('sms') or []:
        sms[sm['guid']] = sm
    if smir is None:
        for sm in [read for read in reads if read]:
            sms.setdefault(sm['guid'], sm)
    issm = _parsed(observed.get('saquery_issm'), parse_saquery_issm, 'saquery -s on %s' % subnet, errors) if observed.get('saquery_issm') else None
    return sms, reads, smir is not None, issm


def _stability(subnet, reads):
    """The master seen by each sminfo read; a result when two reads disagree or one failed, else None (and the
    text for the summary)."""
    masters = [(sm['guid'], sm['state_name']) if sm else None for sm in reads]
    if len(masters) < 2:
        return None, '%d sminfo read%s: stability across a sweep not checked' % (len(masters), '' if len(masters) == 1 else 's')
    if any(master is None for master in masters):
        return _fail('subnet %s' % subnet, masters, 'one master across %d reads' % len(masters),
                     'subnet %s: an sminfo read found no SM (%s); the SM stopped or the fabric lost it between reads: '
                     'check the SM hosts and their opensm logs' % (subnet, masters)), None
    if len(set(masters)) > 1:
        return _fail('subnet %s' % subnet, ['%s %s' % master for master in masters], 'one master across %d reads' % len(masters),
                     'subnet %s: the master changed between the sminfo reads a sweep apart (%s): SMs are fighting over '
                     'mastership; check that their priorities differ and that only the expected SMs run'
                     % (subnet, ' -> '.join('%s %s' % master for master in masters))), None
    return None, 'master %s in all %d reads' % (masters[0][0], len(masters))


def _subnet(subnet, observed, expected, owners, node_sms):
    """The cluster results of one subnet; ``node_sms`` collects (node -> [text]) the SMs found on compute nodes."""
    errors = []
    sms, reads, from_smir, issm = _sms_of(subnet, observed, errors)
    provider = expected.get('provider') or 'opensm'
    wanted = [norm_guid(guid) for guid in expected.get('sm_guids') or [] if norm_guid(guid)]
    # None: not judged (a switch's or UFM's SM whose priority the site did not give: we do not configure it)
    priority = expected.get('priority', DEFAULT_PRIORITY)
    priority = None if priority in (None, '') else int(priority)
    subject = 'subnet %s' % subnet
    for guid, sm in sms.items():
        if guid in owners:
            node, hca = owners[guid]
            node_sms.setdefault(node, []).append('%s (%s) runs an SM, %s at priority %s, on subnet %s'
                                                 % (hca, guid, sm.get('state_name') or sm.get('state'), sm.get('priority'), subnet))
    if not sms and not any(reads):
        return [_fail(subject, None, 'one MASTER', 'subnet %s: no SM answered (%s); without a master every port stays '
                      'Initializing: start the subnet manager' % (subnet, '; '.join(errors) or 'no read'))], errors
    masters = sorted(guid for guid, sm in sms.items() if sm.get('state_name') == 'MASTER')
    results = []
    if len(masters) != 1:
        results.append(_fail(subject, masters, 'one MASTER', 'subnet %s has %d masters (%s); exactly one SM may be MASTER: '
                             'stop the extra SMs or fix their priorities' % (subnet, len(masters), ', '.join(masters) or 'none')))
    for guid in masters:
        sm = sms[guid]
        on_node = owners.get(guid)
        if provider == 'opensm' and wanted and guid not in wanted:
            results.append(_fail(subject, guid, wanted, 'subnet %s: the master %s is not one of the SM ports %s%s; stop the '
                                 'SM there and check the expected SMs run' % (
                                     subnet, guid, ', '.join(wanted), ' (it is %s %s)' % on_node if on_node else '')))
        elif provider != 'opensm' and on_node:
            results.append(_fail(subject, guid, 'the %s SM' % provider, 'subnet %s: the master %s is %s %s, a GPU node, where '
                                 'the %s SM should be master' % (subnet, guid, on_node[0], on_node[1], provider)))
        if priority is not None and sm.get('priority') is not None and int(sm['priority']) != priority:
            results.append(_fail(subject, sm['priority'], priority, 'subnet %s: the master %s runs at priority %s, configured %d '
                                 '(opensm.conf sm_priority)' % (subnet, guid, sm['priority'], priority), unit=None))
    by_priority = {}
    for guid, sm in sms.items():
        if sm.get('state_name') in ('MASTER', 'STANDBY') and sm.get('priority') is not None:
            by_priority.setdefault(int(sm['priority']), []).append(guid)
    for value, guids in sorted(by_priority.items()):
        if len(guids) > 1:
            results.append(_fail(subject, value, 'distinct priorities', 'subnet %s: SMs %s share priority %d; the lowest GUID '
                                 'wins and a restart can move mastership: give the standby a lower sm_priority'
                                 % (subnet, ', '.join(sorted(guids)), value)))
    unstable, stable_text = _stability(subnet, reads)
    if unstable:
        results.append(unstable)
    unknown = sorted(port['lid'] for port in (issm or {}).get('ports') or []
                     if not port['sm_disabled'] and port['lid'] not in [sm.get('lid') for sm in sms.values()])
    if unknown and from_smir:
        results.append(_fail(subject, unknown, 'every IsSM port an SM the SA knows', 'subnet %s: ports at LID %s have IsSM '
                             'set but the SA lists no SM there: an SM is starting, or one runs unseen; find it '
                             '(smpquery ND LID) and stop it unless it is expected' % (subnet, ', '.join(str(lid) for lid in unknown))))
    if not results:
        master = sms[masters[0]]
        results.append(new_result(CHECK, subject, masters[0], wanted or 'one MASTER', True, 'subnet %s: one master %s at priority '
                                  '%s, %d SM(s) in all; %s' % (subnet, masters[0], master.get('priority'), len(sms), stable_text),
                                  sms=sorted(sms.values(), key=lambda sm: sm['guid'])))
    return results, errors


def decide_sm(observations, expected):
    """The fabric.sm decision.

    ``observations``: ``{'subnets': subnet -> {'sminfo': [read, read], 'saquery_smir': read, 'saquery_issm': read},
    'nodes': node -> {'opensm_running': bool, 'opensm_found': [what was found, as text]}}``; a read is the tool's stdout, a registered command result
    (``stdout``/``rc``), or the parser's result. ``expected``: ``provider`` (``opensm``, ``switch``, ``ufm``),
    ``sm_guids`` (the SM ports of ``ib_subnet_manager`` hosts), ``priority`` (the master's sm_priority, default 15),
    ``identity`` (node -> HCA -> GUIDs of the GPU nodes, from verify_ib), ``gpu_nodes`` (the GPU nodes checked) and
    ``sm_hosts`` (the hosts of ib_subnet_manager: one that is also a GPU node runs its SM by design).

    Returns ``{'nodes': node -> [result], 'cluster': [results], 'summary': {'errors'}}``: a GPU node running an SM
    fails (drains); every subnet problem is a cluster result.
    """
    expected = expected or {}
    if (expected.get('provider') or 'opensm') not in PROVIDERS:
        raise ValueError('provider must be one of %s, got %r' % (', '.join(PROVIDERS), expected.get('provider')))
    owners = guid_owners(expected.get('identity'))
    node_sms, cluster, errors = {}, [], []
    for subnet, observed in sorted(((observations or {}).get('subnets') or {}).items()):
        results, subnet_errors = _subnet(subnet, observed or {}, expected, owners, node_sms)
        cluster.extend(results)
        errors.extend(subnet_errors)
    node_reads = (observations or {}).get('nodes') or {}
    sm_hosts = set(expected.get('sm_hosts') or [])
    nodes = {}
    for node in sorted(set(expected.get('gpu_nodes') or []) | set(node_reads) | set(node_sms)):
        if node in sm_hosts:
            # a host of ib_subnet_manager that is also a GPU node (opensm_allow_on_compute): its SM is expected
            nodes[node] = [new_result(CHECK, 'node', 'an expected SM', 'no SM on a compute node', True,
                                      '%s is an SM host (ib_subnet_manager): its SM is expected' % node)]
            continue
        found = list(node_sms.get(node) or [])
        read = node_reads.get(node) or {}
        if read.get('opensm_found'):
            found.extend(read['opensm_found'])
        elif read.get('opensm_running'):
            found.append('an opensm unit or process runs on the node')
        if found:
            nodes[node] = [_fail('node', found, 'no SM on a compute node', '%s: %s; stop and disable opensm there (a compute '
                                 'node must not run a subnet manager: opensm_stop_rogue)' % (node, '; '.join(found)))]
        else:
            ports = ('none of its ports is an SM' if node in (expected.get('identity') or {}) else
                     'its port GUIDs are unknown (not compared with the SMs)')
            nodes[node] = [new_result(CHECK, 'node', 'no SM', 'no SM on a compute node', True,
                                      'no SM on %s: %s, and no opensm runs there' % (node, ports))]
    return {'nodes': nodes, 'cluster': cluster, 'summary': {'errors': errors}}
