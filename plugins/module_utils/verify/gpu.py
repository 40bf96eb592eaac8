# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Area gpu: one node's GPUs (gpu_info, nvidia-smi nvlink, retired pages, processes, kernel log, dcgmi diag).

``evaluate_gpu`` judges one node from what the verify_gpu role gathered,
parsing each tool's output once; ``evaluate_gpu_fleet`` compares drivers;
``decide_gpu`` is the role's one call.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.gpu_models import describe, expected_keys, model_key
from ansible_collections.aicluster.infra.plugins.module_utils.kernel_log import log_window, parse_xid
from ansible_collections.aicluster.infra.plugins.module_utils.nvidia_smi import (
    parse_nvlink_errors, parse_nvlink_status, parse_query_gpu_csv,
)
from ansible_collections.aicluster.infra.plugins.module_utils.slurm_jobs import parse_proc_cgroups, parse_scontrol_listpids
from ansible_collections.aicluster.infra.plugins.module_utils.verify._common import (
    failed, for_node, parse_once, ran, uniform,
)
from ansible_collections.aicluster.infra.plugins.module_utils.verify.gpu_checks import (
    cuda_major, dcgm_result, per_gpu_results, nvlink_error_results, nvlink_read_summary, nvlink_results,
    process_results, retired_results, xid_cursor, xid_results,
)
from ansible_collections.aicluster.infra.plugins.module_utils.verify.results import new_result

# The role's switches (verify_gpu_<group>_enabled) and the checks each turns on.
GROUPS = (
    ('inventory', ('gpu.count', 'gpu.model')),
    ('persistence', ('gpu.persistence',)),
    ('power', ('gpu.power_limit', 'gpu.clock_events')),
    ('pcie', ('gpu.pcie_link',)),
    ('fabric', ('gpu.fabric_state',)),
    ('memory', ('gpu.ecc_mode', 'gpu.ecc', 'gpu.retired_pages', 'gpu.row_remap')),
    ('nvlink', ('gpu.nvlink', 'gpu.nvlink_errors')),
    ('xid', ('gpu.xid',)),
    ('processes', ('gpu.processes',)),
    ('dcgm', ('gpu.dcgm_diag',)),
)
APPS_FIELDS = ['gpu_bus_id', 'pid', 'process_name', 'used_memory']
RETIRED_FIELDS = ['index', 'retired_pages.sbe', 'retired_pages.dbe', 'retired_pages.pending']


def enabled_checks(enabled):
    """The check ids turned on by ``enabled`` (group -> bool; a group left out is on)."""
    return [check for group, checks in GROUPS if (enabled or {}).get(group, True) for check in checks]


def _model_matches(gpu, model):
    """Whether one GPU is the expected model, by form factor where the model table knows the expectation.

    ``model`` is a model key (``h100-sxm``), an nvidia-smi name or a bare
    family (``h100``, meaning its SXM parts); the GPU passes only when its
    name and PCI device id give one of those keys (``gpu_models.model_key``).
    An expectation the table does not know (``l40s``) is compared with the
    name or short type, as before.
    """
    keys = expected_keys(model)
    if keys is not None:
        return model_key(gpu) in keys
    wanted = (model or '').strip().lower()
    return wanted in ((gpu.get('name') or '').lower(), (gpu.get('type') or '').lower())


def _model_text(gpu):
    key = model_key(gpu)
    return '%s (%s%s)' % (gpu.get('name'), key or 'unknown model key',
                          ', device %s' % gpu.get('pci_device_id') if gpu.get('pci_device_id') else '')


def _expected_text(model):
    keys = expected_keys(model)
    if not keys or [model] == keys:
        return ', '.join(describe(key) for key in keys) if keys else str(model)
    return '%s = %s' % (model, ' or '.join(describe(key) for key in keys))


def _inventory_results(gpus, expected, checks):
    results = []
    if 'gpu.count' in checks:
        count = len(gpus)
        want = expected.get('count')
        ok = want in (None, '') or count == int(want)
        results.append(new_result('gpu.count', 'node', count, want, ok,
                                  '%d GPUs%s' % (count, ' as expected' if ok else ', expected %s; a missing GPU has fallen off '
                                                 'the bus or failed to initialise: check dmesg, reseat or RMA' % want)))
    if 'gpu.model' in checks and expected.get('model'):
        wrong = ['GPU %s %s' % (g.get('index'), _model_text(g)) for g in gpus if not _model_matches(g, expected['model'])]
        names = sorted(set(g.get('name') for g in gpus))
        results.append(new_result('gpu.model', 'node', ', '.join(n for n in names if n) or None, expected['model'],
                                  not wrong and bool(gpus),
                                  'GPU model %s' % ', '.join(n for n in names if n) if not wrong and gpus else
                                  'wrong GPU model: %s, expected %s' % (', '.join(wrong) or 'no GPU', _expected_text(expected['model']))))
    return results


def _text(observation):
    """stdout of a command the role ran, or None when it did not run."""
    return observation.get('stdout') if ran(observation) else None


def _parse_tools(observed, errors):
    """Each tool's output parsed once: (nvlink status, nvlink counters, compute apps, retired pages)."""
    status = parse_once(parse_nvlink_status, _text(observed.get('nvlink_status')), 'nvidia-smi nvlink -s', errors['gpu.nvlink'])
    counters = parse_once(parse_nvlink_errors, _text(observed.get('nvlink_errors')), 'nvidia-smi nvlink -e',
                          errors['gpu.nvlink_errors'])
    apps_run = observed.get('compute_apps')
    apps_text = _text(apps_run) if (apps_run or {}).get('rc') in (0, None) else None
    apps = None
    if apps_text is not None:
        apps = [] if not str(apps_text).strip() else parse_once(
            lambda t: parse_query_gpu_csv(t, fields=APPS_FIELDS), apps_text, 'nvidia-smi --query-compute-apps',
            errors['gpu.processes'])
    retired = observed.get('retired')
    pages = None
    if ran(retired) and retired.get('rc') == 0 and str(retired.get('stdout') or '').strip():
        pages = parse_once(lambda t: parse_query_gpu_csv(t, fields=RETIRED_FIELDS), retired['stdout'],
                           'nvidia-smi --query-gpu=retired_pages', errors['gpu.retired_pages'])
    return status, counters, apps, pages


def _command_failures(observed, checks):
    """A query the role needs that exited non-zero: one failed result for its check (the others still count)."""
    results = []
    for key, check, what in (('compute_apps', 'gpu.processes', 'nvidia-smi --query-compute-apps'), ('dmesg', 'gpu.xid', 'dmesg')):
        command = observed.get(key)
        if check in checks and ran(command) and command.get('rc') not in (0, None):
            said = [line.strip() for line in (command.get('stderr') or '').splitlines() if line.strip()]
            results.append(new_result(check, 'node', None, None, False, '%s failed (rc %s): %s' % (
                what, command.get('rc'), said[-1] if said else command.get('msg') or 'no message')))
    return results


def evaluate_gpu(observed, expected):
    """gpu.* checks for one node from what the verify_gpu role gathered.

    ``observed``: ``gpu_info`` (module result), and the registered commands
    ``nvlink_status`` (nvidia-smi nvlink -s), ``nvlink_errors`` (-e),
    ``retired`` (--query-gpu=retired_pages...), ``compute_apps``
    (--query-compute-apps), ``dmesg``, and ``dcgm_diag`` (module result); one
    that did not run skips its checks. ``expected``: ``count``, ``model``,
    ``ecc_uncorrected_max``, ``retired_pages_max``, ``nvlinks_per_gpu`` (0:
    as many as the best GPU), ``nvlink_error_max``, ``fatal_xids``,
    ``allowed_processes``, ``dcgm_allow_warn``, ``dcgm_level``,
    ``power_limit_tolerance_pct``, ``pcie_gen_strict`` and ``enabled``
    (group -> bool, see ``GROUPS``).
    """
    checks = enabled_checks(expected.get('enabled'))
    info = observed.get('gpu_info') or {}
    if failed(info):
        return [new_result('gpu.count', 'node', None, expected.get('count') if expected.get('count') is not None else 0, False,
                           'GPU checks could not run: %s; check the driver (nvidia-smi) and DCGM (nv-hostengine)'
                           % (info.get('msg') or 'unknown error'))]
    gpus = info.get('gpus') or []
    errors = dict((check, []) for check in ('gpu.nvlink', 'gpu.nvlink_errors', 'gpu.processes', 'gpu.retired_pages'))
    status, counters, apps, pages = _parse_tools(observed, errors)
    dmesg = _text(observed.get('dmesg')) if (observed.get('dmesg') or {}).get('rc') in (0, None) else None
    results = _inventory_results(gpus, expected, checks)
    results.extend(per_gpu_results(gpus, expected, checks))
    if 'gpu.retired_pages' in checks and pages is not None:
        results.extend(retired_results(pages, expected))
    if 'gpu.nvlink' in checks and status is not None:
        results.extend(nvlink_results(status, expected))
    if 'gpu.nvlink_errors' in checks and counters is not None:
        # the read at the role's start: the limits apply to the increase over the run
        before = parse_once(parse_nvlink_errors, _text(observed.get('nvlink_errors_before')), 'nvidia-smi nvlink -e (first read)',
                            errors['gpu.nvlink_errors']) if ran(observed.get('nvlink_errors_before')) else None
        if before is not None or not ran(observed.get('nvlink_errors_before')):
            results.extend(nvlink_error_results(counters, expected, before=before, status=status))
    if 'gpu.xid' in checks and dmesg is not None:
        results.extend(xid_results(gpus, parse_xid(dmesg), expected, window=log_window(dmesg),
                                   cursor=xid_cursor(observed.get('xid_state'))))
    if 'gpu.processes' in checks and apps is not None:
        cgroups, listpids = observed.get('proc_cgroups'), observed.get('slurm_pids')
        results.extend(process_results(gpus, apps, expected, cgroups=parse_proc_cgroups(_text(cgroups)) if ran(cgroups) else None,
                                       listpids=parse_scontrol_listpids(_text(listpids)) if ran(listpids) else None))
    dcgm = observed.get('dcgm_diag')
    if 'gpu.dcgm_diag' in checks and ran(dcgm):
        results.append(dcgm_result(dcgm, dict(expected, cuda_major=expected.get('cuda_major') or cuda_major(info))))
    results.extend(_command_failures(observed, checks))
    for check, line in _ordered_errors(errors):
        results.append(new_result(check, 'node', None, None, False, line))
    return results


def _ordered_errors(errors):
    return [(check, line) for check in ('gpu.nvlink', 'gpu.nvlink_errors', 'gpu.processes', 'gpu.retired_pages')
            for line in errors[check]]


def evaluate_gpu_fleet(gpu_infos, expected=None, cluster=None):
    """gpu.driver_uniform: node -> [results] (against ``expected['driver']`` or the fleet's majority; a split with no
    majority and no pin goes to ``cluster`` when a list is given). ``expected['nodes']``: node -> its own pinned
    driver (its bill of materials) where hosts pin different ones: each node is compared with the nodes of its pin."""
    expected = expected or {}
    pins = expected.get('nodes') or {}
    groups = {}
    for node, info in gpu_infos.items():
        pin = pins.get(node, expected.get('driver')) or None
        groups.setdefault(pin, {})[node] = (info or {}).get('driver_version')
    out = {}
    for pin, values in groups.items():
        out.update(uniform('gpu.driver_uniform', 'node', values, 'driver',
                           'install the same driver branch and version everywhere', pin, cluster=cluster))
    return out


_ANSIBLE_KEYS = ('changed', 'failed', 'invocation', 'warnings')


def _parsed_or_none(parser, observation):
    text = _text(observation or {})
    try:
        return parser(text) if text else None
    except ParseError:
        return None


def _field_raw(observed):
    """results.json evidence: both NVLink counter reads (non-zero counters only) and the Xid cursors (kept, next)."""
    dmesg = observed.get('dmesg') or {}
    window = log_window(_text(dmesg)) if ran(dmesg) and dmesg.get('rc') in (0, None) else {}
    return {'nvlink_errors': dict((when, nvlink_read_summary(_parsed_or_none(parse_nvlink_errors, observed.get(key))))
                                  for when, key in (('before', 'nvlink_errors_before'), ('after', 'nvlink_errors'))),
            'xid': {'cursor': xid_cursor(observed.get('xid_state')), 'cursor_next': window.get('last'),
                    'log_first': window.get('first'), 'log_from_boot': window.get('from_boot')}}


def decide_gpu(observations, expected):
    """The verify_gpu role's one decision: node -> observed (see ``evaluate_gpu``) in, ``{'nodes', 'fleet', 'raw'}`` out."""
    nodes, raw, infos = {}, {}, {}
    for node, observed in sorted(observations.items()):
        observed = observed or {}
        nodes[node] = evaluate_gpu(observed, for_node(expected, node))
        info = observed.get('gpu_info') or {}
        if failed(info):
            raw[node] = {'gpu_info': {}, 'dcgm_diag': {}}
            continue
        raw[node] = {'gpu_info': dict((k, v) for k, v in info.items() if k not in _ANSIBLE_KEYS),
                     'dcgm_diag': dict((k, v) for k, v in (observed.get('dcgm_diag') or {}).items()
                                       if k in ('overall', 'tests', 'errors'))}
        raw[node].update(_field_raw(observed))
        if raw[node]['gpu_info']:
            infos[node] = raw[node]['gpu_info']
    fleet, cluster = {}, []
    if (expected.get('enabled') or {}).get('inventory', True):
        pins = dict((node, for_node(expected, node).get('driver')) for node in infos)
        fleet = evaluate_gpu_fleet(infos, {'driver': expected.get('driver'), 'nodes': pins}, cluster)
    return {'nodes': nodes, 'fleet': fleet, 'cluster': cluster, 'raw': raw}
