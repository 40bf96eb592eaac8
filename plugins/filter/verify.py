# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the verification stage: schedules, check evaluation, the results document and the gate's decisions.

Thin wrappers over module_utils (perftest_schedule, verify_checks,
verify_results); tool output is parsed here by the collection's parsers, so
the roles hold no evaluation logic in Jinja.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.aicluster.infra.plugins.module_utils import perftest_schedule as ps
from ansible_collections.aicluster.infra.plugins.module_utils import verify_checks as vc
from ansible_collections.aicluster.infra.plugins.module_utils.verify import results as vr
from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.nccl_tests import parse_nccl_tests
from ansible_collections.aicluster.infra.plugins.module_utils.nvidia_smi import (
    parse_nvlink_errors, parse_nvlink_status, parse_query_gpu_csv,
)
from ansible_collections.aicluster.infra.plugins.module_utils.perftest import parse_perftest


def _call(name, function, *args, **kwargs):
    try:
        return function(*args, **kwargs)
    except (TypeError, ValueError, KeyError) as exc:
        raise AnsibleFilterError('%s: %s' % (name, exc))


def _parsed(parser, text, what, errors):
    """Parsed tool output, or None (and a line in ``errors``) when the text is empty or not that tool's output."""
    if text is None:
        return None
    if not str(text).strip():
        errors.append('%s printed nothing' % what)
        return None
    try:
        return parser(str(text))
    except ParseError as exc:
        errors.append('%s printed output that could not be parsed: %s' % (what, exc))
        return None


# schedule ---------------------------------------------------------------

def verify_perftest_schedule(nodes, mode='cover'):
    return _call('verify_perftest_schedule', ps.schedule, nodes, mode)


def verify_perftest_retest(results, nodes):
    return _call('verify_perftest_retest', ps.retest_round, nodes, results)


def verify_perftest_tests(pairs, endpoints, base_port, rails=None):
    """One entry per (pair, rail) of a round: client, server, their HCAs, GID indexes, address and port.

    ``pairs``: ``[client, server]`` lists or ``{client, server, rails}`` dicts;
    ``endpoints``: node -> {address, hcas: [{rail, name, gid_index, rate_gbps}]}.
    """
    def build():
        tests = []
        for pair in pairs or []:
            if isinstance(pair, dict):
                client, server, wanted = pair['client'], pair['server'], pair.get('rails')
            else:
                client, server, wanted = pair[0], pair[1], rails
            mine, theirs = endpoints[client], endpoints[server]
            theirs_by_rail = dict((h['rail'], h) for h in theirs.get('hcas') or [])
            for hca in mine.get('hcas') or []:
                rail = hca['rail']
                if (wanted is not None and rail not in wanted) or rail not in theirs_by_rail:
                    continue
                peer = theirs_by_rail[rail]
                rates = [vc.data_rate_gbps(r) for r in (hca.get('rate_gbps'), peer.get('rate_gbps'))]
                rates = [r for r in rates if r is not None]
                tests.append({
                    'client': client, 'server': server, 'rail': rail,
                    'client_hca': hca['name'], 'server_hca': peer['name'],
                    'client_gid_index': hca.get('gid_index'), 'server_gid_index': peer.get('gid_index'),
                    'address': theirs.get('address') or server,
                    'port': ps.server_port(base_port, rail),
                    'port_hex': '%04X' % ps.server_port(base_port, rail),
                    'line_rate': min(rates) if rates else None,
                })
        return tests
    return _call('verify_perftest_tests', build)


def verify_perftest_pair(stdout, test, spec, fraction=0.9, max_latency_us=None, round_index=None, rc=0, stderr=''):
    """A pair result from the client's output of one test (``spec``: an entry of verify_perftest_tests)."""
    errors = []
    parsed = _parsed(parse_perftest, stdout, 'ib_%s' % test, errors) or {'results': [], 'errors': []}
    parsed = dict(parsed)
    parsed['errors'] = list(parsed.get('errors') or []) + errors + (
        [line.strip() for line in (stderr or '').splitlines() if line.strip()][:3] if rc not in (0, None) else [])
    if rc == 124:
        parsed['errors'].insert(0, 'timed out')
    return _call('verify_perftest_pair', vc.perftest_pair_result, parsed, test, spec['client'], spec['server'], spec['rail'],
                 spec['client_hca'], spec['server_hca'], spec.get('line_rate'), fraction, max_latency_us, round_index)


def verify_perftest_pairs(async_results, test, fraction=0.9, max_latency_us=None, round_index=None):
    """Pair results of every client of a round, from the ``async_status`` results (their ``item.item`` is the test)."""
    pairs = []
    for result in async_results or []:
        spec = (result.get('item') or {}).get('item')
        if not spec:
            continue
        pairs.append(verify_perftest_pair(result.get('stdout', ''), test, spec, fraction, max_latency_us, round_index,
                                          result.get('rc', 1 if not result.get('finished') else 0),
                                          result.get('stderr') or result.get('msg') or ''))
    return pairs


def verify_perftest_evaluate(pairs, nodes, test='write_bw', final=True):
    """Per-node results of one test, or of several (``test`` a list: results merged, unattributed by test)."""
    if isinstance(test, (list, tuple)):
        merged, unattributed = {}, {}
        for name in test:
            one = _call('verify_perftest_evaluate', vc.evaluate_perftest, pairs, nodes, name, final)
            for node, results in one['nodes'].items():
                merged.setdefault(node, []).extend(results)
            unattributed[name] = one['unattributed']
        return {'nodes': merged, 'unattributed': unattributed}
    return _call('verify_perftest_evaluate', vc.evaluate_perftest, pairs, nodes, test, final)


def verify_perftest_endpoint(ib_info, hcas=None, link_layer=None, address=None):
    """A node's test endpoint: address, HCA names in rail order, and per rail the HCA, its rate and RoCE GID index."""
    def build():
        names = vc.checked_hcas(ib_info, hcas, link_layer)
        by_name = dict((ca.get('name'), ca) for ca in (ib_info or {}).get('hcas') or [])
        entries = []
        for rail, name in enumerate(names):
            ports = (by_name.get(name) or {}).get('ports') or [{}]
            port = ports[0]
            entries.append({'rail': rail, 'name': name, 'rate_gbps': port.get('rate_gbps'),
                            'gid_index': port.get('roce_v2_gid_index') if port.get('link_layer') == 'Ethernet' else None})
        return {'address': address, 'names': names, 'hcas': entries}
    return _call('verify_perftest_endpoint', build)


def verify_data_rate(rate):
    return _call('verify_data_rate', vc.data_rate_gbps, rate)


# ports, fabric, mtu -------------------------------------------------------

def verify_ports(ib_info, expected):
    return _call('verify_ports', vc.evaluate_ports, ib_info, expected)


def verify_checked_hcas(ib_info, hcas=None, link_layer=None):
    return _call('verify_checked_hcas', vc.checked_hcas, ib_info, hcas, link_layer)


def verify_ib_fleet(ib_infos, expected):
    return _call('verify_ib_fleet', vc.evaluate_ib_fleet, ib_infos, expected)


def verify_fabric(fabric, nodes, expected):
    return _call('verify_fabric', vc.evaluate_fabric, fabric, nodes, expected)


def verify_mtu(rc, stdout, stderr, peer, mtu):
    return _call('verify_mtu', vc.evaluate_mtu, rc, stdout, stderr, peer, mtu)


# gpus -------------------------------------------------------------------

def verify_gpus(gpu_info, expected, nvlink_status=None, nvlink_errors=None, dcgm=None, dmesg=None,
                compute_apps=None, retired=None):
    """gpu.* results from gpu_info facts, the dcgm_diag result and the raw text of the other tools."""
    errors = []
    status = _parsed(parse_nvlink_status, nvlink_status, 'nvidia-smi nvlink -s', errors)
    counters = _parsed(parse_nvlink_errors, nvlink_errors, 'nvidia-smi nvlink -e', errors)
    apps = None
    if compute_apps is not None:
        apps = [] if not str(compute_apps).strip() else _parsed(
            lambda t: parse_query_gpu_csv(t, fields=['gpu_bus_id', 'pid', 'process_name', 'used_memory']),
            compute_apps, 'nvidia-smi --query-compute-apps', errors)
    pages = None
    if retired is not None and str(retired).strip():
        pages = _parsed(lambda t: parse_query_gpu_csv(
            t, fields=['index', 'retired_pages.sbe', 'retired_pages.dbe', 'retired_pages.pending']),
            retired, 'nvidia-smi --query-gpu=retired_pages', errors)
    results = _call('verify_gpus', vc.evaluate_gpus, gpu_info, expected, nvlink=status, nvlink_errors=counters, dcgm=dcgm,
                    dmesg_text=dmesg, compute_apps=apps, retired=pages)
    for line in errors:
        check = 'gpu.processes' if 'compute-apps' in line else ('gpu.retired_pages' if 'retired' in line else
                                                                ('gpu.nvlink_errors' if 'nvlink -e' in line else 'gpu.nvlink'))
        results.append(vr.new_result(check, 'node', None, None, False, line))
    return results


def verify_gpu_fleet(gpu_infos, expected=None):
    return _call('verify_gpu_fleet', vc.evaluate_gpu_fleet, gpu_infos, expected)


# nccl -------------------------------------------------------------------

def _nccl(stdout):
    errors = []
    parsed = _parsed(parse_nccl_tests, stdout, 'all_reduce_perf', errors)
    if parsed is None:
        parsed = {'rows': [], 'errors': errors}
    return parsed


def verify_nccl_parse(stdout):
    return _nccl(stdout)


def verify_nccl_busbw(stdout, large_bytes=1 << 30):
    return _call('verify_nccl_busbw', vc.nccl_measure, _nccl(stdout), large_bytes)[0]


def verify_nccl_threshold(table, model, override=None):
    return _call('verify_nccl_threshold', vc.nccl_threshold, table, model, override)


def verify_median(values):
    return _call('verify_median', vc.nccl_fleet_median, values)


def verify_nccl(stdout, threshold, median=None, slow_fraction=0.1, large_bytes=1 << 30, model=None, checks=None):
    return _call('verify_nccl', vc.evaluate_nccl, _nccl(stdout), threshold, median, slow_fraction, large_bytes, model, checks)


def verify_nccl_multi_node(stdout, threshold, nodes, large_bytes=1 << 30, launch_error=None):
    return _call('verify_nccl_multi_node', vc.evaluate_nccl_multi_node, _nccl(stdout), threshold, nodes, large_bytes, launch_error)


# results document and gate ----------------------------------------------

def verify_result(check, subject, measured, threshold, passed, message, unit=None):
    return _call('verify_result', vr.new_result, check, subject, measured, threshold, passed, message, unit)


def verify_collect(hostvars, nodes, facts=None, raw_facts=None, fleet=None, missing_message=None):
    """results.json ``nodes``: each node's per-area result facts (``facts``: names of host facts holding a list of
    results) and fleet-wide results (``fleet``: node -> [results] mappings) joined; ``raw_facts``: name -> host fact
    kept under ``raw``."""
    def build():
        per_area = list(fleet or [])
        raw = {}
        versions = {}
        for node in nodes:
            host = hostvars[node] if node in hostvars else {}
            per_node = {}
            for name in facts or []:
                value = host.get(name) if hasattr(host, 'get') else None
                if value:
                    per_node.setdefault(node, []).extend(value)
            per_area.append(per_node)
            raw[node] = dict((key, host.get(name)) for key, name in (raw_facts or {}).items()
                             if hasattr(host, 'get') and host.get(name) is not None)
            versions[node] = host.get('verify_gate_versions') if hasattr(host, 'get') else None
        return vc.collect_nodes(nodes, per_area, raw=raw, versions=versions, missing_message=missing_message)
    return _call('verify_collect', build)


def verify_gate_actions(nodes, slurm_nodes, mode, slurm_names=None, prefix=vr.DRAIN_PREFIX):
    return _call('verify_gate_actions', vc.gate_actions, nodes, slurm_nodes, mode, slurm_names, prefix)


def verify_apply_gate(nodes, actions, outcomes=None, mode='drain'):
    """results.json nodes after the gate: drained/resumed/drain_reason/slurm_state from the actions and the
    slurm_node results (``outcomes``: node -> module result)."""
    def build():
        out = {}
        for node, data in nodes.items():
            data = dict(data)
            action = actions.get(node) or {}
            outcome = (outcomes or {}).get(node) or {}
            done = bool(outcome.get('changed')) and not outcome.get('failed')
            data['drained'] = action.get('action') == 'drain' and done
            data['resumed'] = action.get('action') == 'resume' and done
            data['drain_reason'] = action.get('reason') if data['drained'] else (
                action.get('reason_before') if vc.is_own_reason(action.get('reason_before')) and not data['resumed']
                and vc.is_drained(action.get('state')) else None)
            data['slurm_state'] = {'before': action.get('state'),
                                   'after': outcome.get('state_after', action.get('state')),
                                   'reason_before': action.get('reason_before')}
            data['gate'] = action.get('note')
            out[node] = data
        return out
    return _call('verify_apply_gate', build)


def verify_document(nodes, run, fabric=None, perftest=None, nccl=None):
    """The whole results.json document, with its summary; refuses to build one that does not validate."""
    doc = {'schema': vr.SCHEMA, 'run': run, 'summary': vr.summarize(nodes), 'nodes': nodes,
           'fabric': fabric or {'links': [], 'degraded': []}, 'perftest': perftest or {'rounds': [], 'pairs': []},
           'nccl': nccl or {}}
    problems = vr.validate_results(doc)
    if problems:
        raise AnsibleFilterError('verify_document: the results do not validate: %s' % '; '.join(problems[:10]))
    return doc


def verify_validate(doc):
    return _call('verify_validate', vr.validate_results, doc)


def verify_drain_reason(results):
    return _call('verify_drain_reason', vr.drain_reason, [r for r in results if not r.get('passed')])


def verify_table(doc):
    """Verdict table lines: node, verdict, Slurm action, failed checks."""
    def build():
        rows = [('node', 'verdict', 'slurm', 'failed checks')]
        for node, data in sorted(doc['nodes'].items()):
            failed = [r for r in data['results'] if not r['passed']]
            slurm = 'drained' if data.get('drained') else ('resumed' if data.get('resumed') else (
                'kept drained' if vc.is_drained((data.get('slurm_state') or {}).get('after')) else '-'))
            detail = '; '.join('%s %s: %s' % (r['check'], r['subject'], r['measured']) for r in failed[:4])
            if len(failed) > 4:
                detail += '; +%d more' % (len(failed) - 4)
            rows.append((node, 'PASS' if data['passed'] else 'FAIL', slurm, detail or '-'))
        widths = [max(len(str(row[i])) for row in rows) for i in range(3)]
        lines = ['%-*s  %-*s  %-*s  %s' % (widths[0], r[0], widths[1], r[1], widths[2], r[2], r[3]) for r in rows]
        summary = doc['summary']
        lines.append('verdict %s: %d nodes, %d passed, %d failed, %d drained, %d resumed' % (
            summary['verdict'], summary['nodes'], summary['passed'], summary['failed'], summary['drained'],
            summary['resumed']))
        return lines
    return _call('verify_table', build)


class FilterModule(object):
    """aicluster.infra verification filters."""

    def filters(self):
        return {
            'verify_perftest_schedule': verify_perftest_schedule,
            'verify_perftest_retest': verify_perftest_retest,
            'verify_perftest_tests': verify_perftest_tests,
            'verify_perftest_pair': verify_perftest_pair,
            'verify_perftest_pairs': verify_perftest_pairs,
            'verify_perftest_evaluate': verify_perftest_evaluate,
            'verify_perftest_endpoint': verify_perftest_endpoint,
            'verify_data_rate': verify_data_rate,
            'verify_ports': verify_ports,
            'verify_checked_hcas': verify_checked_hcas,
            'verify_ib_fleet': verify_ib_fleet,
            'verify_fabric': verify_fabric,
            'verify_mtu': verify_mtu,
            'verify_gpus': verify_gpus,
            'verify_gpu_fleet': verify_gpu_fleet,
            'verify_nccl_parse': verify_nccl_parse,
            'verify_nccl_busbw': verify_nccl_busbw,
            'verify_nccl_threshold': verify_nccl_threshold,
            'verify_median': verify_median,
            'verify_nccl': verify_nccl,
            'verify_nccl_multi_node': verify_nccl_multi_node,
            'verify_result': verify_result,
            'verify_collect': verify_collect,
            'verify_gate_actions': verify_gate_actions,
            'verify_apply_gate': verify_apply_gate,
            'verify_document': verify_document,
            'verify_validate': verify_validate,
            'verify_drain_reason': verify_drain_reason,
            'verify_table': verify_table,
        }
