# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gpu area's checks, one function per tool: parsed output and expectations in, results out."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils.gpu_models import has_nvswitch
from ansible_collections.aicluster.infra.plugins.module_utils.verify._common import int_or_none
from ansible_collections.aicluster.infra.plugins.module_utils.verify.results import new_result

NVLINK_COUNTERS = ('replay_errors', 'recovery_errors', 'crc_errors')


def _bus_key(bus_id):
    """A PCI address reduced to bus:device for matching (``00000000:1B:00.0`` ~ ``0000:1b:00``)."""
    parts = (bus_id or '').lower().split(':')
    if len(parts) >= 2:
        return ':'.join([parts[-2], parts[-1].split('.')[0]])
    return (bus_id or '').lower()


def gpu_label(gpus, bus_id):
    """``GPU <index>`` of the GPU at a PCI address, else ``PCI <address>``."""
    key = _bus_key(bus_id)
    for gpu in gpus:
        if _bus_key(gpu.get('pci_bus_id')) == key:
            return 'GPU %s' % gpu.get('index')
    return 'PCI %s' % bus_id


def _persistence(gpu, label):
    ok = gpu.get('persistence_mode') is True
    return new_result('gpu.persistence', label, 'Enabled' if ok else 'Disabled', 'Enabled', ok,
                      '%s persistence mode %s' % (label, 'enabled' if ok else
                                                  'disabled; enable nvidia-persistenced (nvidia-smi -pm 1)'))


def _ecc_mode(gpu, label):
    enabled = gpu.get('ecc_enabled')
    measured = 'N/A' if enabled is None else ('Enabled' if enabled else 'Disabled')
    advice = {None: ' (not reported by nvidia-smi)', True: '',
              False: '; enable it (nvidia-smi -i %s -e 1) and reboot: without ECC, HBM faults go unseen' % gpu.get('index')}
    return new_result('gpu.ecc_mode', label, measured, 'Enabled', enabled is not False,
                      '%s ECC mode %s%s' % (label, measured, advice[enabled]))


def _ecc(gpu, label, expected):
    value = gpu.get('ecc_errors_uncorrected_volatile')
    limit = int(expected.get('ecc_uncorrected_max') or 0)
    ok = value is None or int(value) <= limit
    return new_result('gpu.ecc', label, value, limit, ok,
                      '%s volatile uncorrectable ECC errors: %s (limit %d)%s' % (
                          label, 'N/A' if value is None else value, limit,
                          '' if ok else '; reset the GPU, and RMA it if they return'))


def _row_remap(gpu, label):
    pending, failure = gpu.get('remapped_rows_pending'), gpu.get('remapped_rows_failure')
    ok = not pending and not failure
    measured = 'failure' if failure else ('pending' if pending else ('none' if pending is not None else 'N/A'))
    return new_result('gpu.row_remap', label, measured, 'none', ok,
                      '%s row remapping: %s%s' % (label, measured, '' if ok else (
                          '; a remapping failed: the GPU needs service (RMA)' if failure else
                          '; reset the GPU (nvidia-smi -r or reboot) to apply the pending remap')))


# Clock event reasons that mean the board or its cooling is in trouble, with the advice for each. Idle,
# applications clocks, sync boost, display clocks and the software power cap (the GPU working at its power
# limit under load) are normal operation.
TROUBLE_CLOCK_EVENTS = (
    ('hw_slowdown', 'HW slowdown (the board asked for it: thermal or power brake)'),
    ('hw_thermal_slowdown', 'HW thermal slowdown (check inlet temperature, fans and the heatsink)'),
    ('hw_power_brake_slowdown', 'HW power brake (check the PSUs and the BMC power policy)'),
    ('sw_thermal_slowdown', 'SW thermal slowdown (above the software thermal limit: check cooling)'),
)
DEFAULT_POWER_TOLERANCE_PCT = 5.0


def _watts(value):
    return ('%.0f W' % value) if value is not None else 'N/A'


def power_limit_result(gpu, label, tolerance_pct=DEFAULT_POWER_TOLERANCE_PCT):
    """gpu.power_limit: the enforced power limit is not more than ``tolerance_pct`` % below the default limit."""
    enforced, default = gpu.get('power_limit_w'), gpu.get('power_default_limit_w')
    if enforced is None or default is None:
        return new_result('gpu.power_limit', label, None, None, True,
                          '%s power limits N/A (enforced %s, default %s, not reported by nvidia-smi)' % (
                              label, _watts(enforced), _watts(default)))
    tolerance = float(tolerance_pct if tolerance_pct not in (None, '') else DEFAULT_POWER_TOLERANCE_PCT)
    floor = round(float(default) * (1.0 - tolerance / 100.0), 1)
    ok = float(enforced) >= floor
    return new_result('gpu.power_limit', label, float(enforced), floor, ok,
                      '%s power limit %s (default %s)' % (label, _watts(enforced), _watts(default)) if ok else
                      '%s power-capped: enforced limit %s, default %s (more than %g%% below); restore it '
                      '(nvidia-smi -i %s -pl %.0f) or lift the cap set by the BMC or the site\'s power policy' % (
                          label, _watts(enforced), _watts(default), tolerance, gpu.get('index'), float(default)))


def clock_events_result(gpu, label):
    """gpu.clock_events: none of :data:`TROUBLE_CLOCK_EVENTS` is active."""
    events = gpu.get('clock_events')
    if events is None:
        return new_result('gpu.clock_events', label, None, 'none of %s' % ', '.join(r for r, dummy in TROUBLE_CLOCK_EVENTS), True,
                          '%s clock event reasons N/A (not reported by nvidia-smi)' % label)
    bad = [(reason, advice) for reason, advice in TROUBLE_CLOCK_EVENTS if reason in events]
    return new_result('gpu.clock_events', label, sorted(events), 'none of %s' % ', '.join(r for r, dummy in TROUBLE_CLOCK_EVENTS),
                      not bad,
                      '%s clock event reasons: %s' % (label, ', '.join(sorted(events)) or 'none') if not bad else
                      '%s clocks held down: %s' % (label, '; '.join(advice for dummy, advice in bad)))


def pcie_link_result(gpu, label, gen_strict=False):
    """gpu.pcie_link: the link at its full width; below its top generation fails only with ``gen_strict``.

    An idle GPU trains its link down to a lower generation to save power and
    back up under load, so a generation below the maximum on an idle node is
    not a fault; a narrower width does not recover and is one.
    """
    width, width_max = gpu.get('pcie_width_current'), gpu.get('pcie_width_max')
    gen, gen_max = gpu.get('pcie_gen_current'), gpu.get('pcie_gen_max')
    measured = 'gen %s x%s' % (gen if gen is not None else '?', width if width is not None else '?')
    threshold = 'gen %s x%s' % (gen_max if gen_max is not None else '?', width_max if width_max is not None else '?')
    if width is None or width_max is None:
        return new_result('gpu.pcie_link', label, None, threshold, True, '%s PCIe link N/A (not reported by nvidia-smi)' % label)
    narrow = width < width_max
    slow = gen is not None and gen_max is not None and gen < gen_max
    ok = not narrow and not (slow and gen_strict)
    if ok:
        return new_result('gpu.pcie_link', label, measured, threshold, True, '%s PCIe %s of %s%s' % (
            label, measured, threshold, ' (below the top generation: idle GPUs train down; set verify_gpu_pcie_gen_strict '
                                        'to fail it when the check runs under load)' if slow else ''))
    return new_result('gpu.pcie_link', label, measured, threshold, False, '%s PCIe link %s, expected %s: %s' % (
        label, measured, threshold, 'reseat the GPU or its riser and check the slot (lspci -vv LnkSta); a narrow link cuts '
                                    'host-to-GPU and GPUDirect bandwidth' if narrow else
        'below its top generation under load: check the slot, riser and BIOS PCIe settings'))


def fabric_state_result(gpu, label):
    """gpu.fabric_state: on NVSwitch systems the fabric is ``Completed`` / ``Success``; other GPUs pass as N/A."""
    state, status = gpu.get('fabric_state'), gpu.get('fabric_status')
    applies = has_nvswitch(gpu.get('model_key')) or state is not None
    if not applies:
        return new_result('gpu.fabric_state', label, 'N/A', 'Completed/Success', True,
                          '%s fabric state N/A (no NVSwitch fabric: %s)' % (label, gpu.get('form_factor') or 'model not in the table'))
    if state is None and status is None:
        return new_result('gpu.fabric_state', label, None, 'Completed/Success', True,
                          '%s fabric state not reported by nvidia-smi -q (a driver before R530 or a failed -q)' % label)
    measured = '%s/%s' % (state or 'N/A', status or 'N/A')
    ok = (state or '').lower() == 'completed' and (status or '').lower() == 'success'
    return new_result('gpu.fabric_state', label, measured, 'Completed/Success', ok,
                      '%s NVSwitch fabric %s' % (label, measured) if ok else
                      '%s fabric state %s: fabric manager not ready: start nvidia-fabricmanager '
                      '(systemctl enable --now nvidia-fabricmanager) and read its log; NCCL falls back off NVLink '
                      'or fails until it completes' % (label, measured))


def per_gpu_results(gpus, expected, checks):
    """gpu.persistence, gpu.ecc_mode, gpu.ecc, gpu.row_remap, gpu.power_limit, gpu.clock_events, gpu.pcie_link and
    gpu.fabric_state for each GPU of gpu_info, GPU by GPU.

    The four operating-condition checks judge only GPUs whose facts carry
    their keys (a gpu_info from before they were gathered has none).
    """
    results = []
    for gpu in gpus:
        label = 'GPU %s' % gpu.get('index')
        if 'gpu.persistence' in checks and expected.get('persistence', True):
            results.append(_persistence(gpu, label))
        if 'gpu.ecc_mode' in checks:
            results.append(_ecc_mode(gpu, label))
        if 'gpu.ecc' in checks:
            results.append(_ecc(gpu, label, expected))
        if 'gpu.row_remap' in checks:
            results.append(_row_remap(gpu, label))
        if 'gpu.power_limit' in checks and 'power_limit_w' in gpu:
            results.append(power_limit_result(gpu, label, expected.get('power_limit_tolerance_pct')))
        if 'gpu.clock_events' in checks and 'clock_events' in gpu:
            results.append(clock_events_result(gpu, label))
        if 'gpu.pcie_link' in checks and 'pcie_width_current' in gpu:
            results.append(pcie_link_result(gpu, label, bool(expected.get('pcie_gen_strict'))))
        if 'gpu.fabric_state' in checks and 'fabric_state' in gpu:
            results.append(fabric_state_result(gpu, label))
    return results


def retired_results(rows, expected):
    """gpu.retired_pages from ``--query-gpu=index,retired_pages.sbe,retired_pages.dbe,retired_pages.pending`` rows."""
    limit = int(expected.get('retired_pages_max') or 0)
    results = []
    for row in rows:
        label = 'GPU %s' % row.get('index')
        sbe, dbe = int_or_none(row.get('retired_pages.sbe')), int_or_none(row.get('retired_pages.dbe'))
        pending = str(row.get('retired_pages.pending') or '').strip().lower() in ('yes', 'true', 'enabled')
        total = None if sbe is None and dbe is None else (sbe or 0) + (dbe or 0)
        ok = not pending and (total is None or total <= limit)
        results.append(new_result('gpu.retired_pages', label, total, limit, ok,
                                  '%s retired pages %s (limit %d)%s%s' % (
                                      label, 'N/A' if total is None else total, limit,
                                      ', retirement pending: reload the driver or reboot' if pending else '',
                                      '; RMA the GPU' if total is not None and total > limit else '')))
    return results


def nvlink_results(status, expected):
    """gpu.nvlink from parsed ``nvidia-smi nvlink -s``: every GPU has its links up."""
    per_gpu = expected.get('nvlinks_per_gpu')
    most = max([len(gpu.get('links') or []) for gpu in status.get('gpus') or []] or [0])
    results = []
    for gpu in status.get('gpus') or []:
        label = 'GPU %s' % gpu.get('index')
        links = gpu.get('links') or []
        up = [link for link in links if link.get('active')]
        down = [str(link.get('link')) for link in links if not link.get('active')]
        want = int(per_gpu) if per_gpu not in (None, '') else most
        ok = len(up) >= want
        results.append(new_result('gpu.nvlink', label, len(up), want, ok,
                                  '%s NVLinks up: %d of %d%s' % (
                                      label, len(up), want, '' if ok else
                                      ' (down: %s); check the NVSwitch/fabric manager, reset the GPU, else RMA'
                                      % ', '.join(down))))
    for line in status.get('errors') or []:
        results.append(new_result('gpu.nvlink', 'node', line, 'no error', False, 'nvidia-smi nvlink -s: %s' % line))
    return results


def nvlink_error_results(counters, expected):
    """gpu.nvlink_errors from parsed ``nvidia-smi nvlink -e``: per-link counters under the limits."""
    limits = expected.get('nvlink_error_max') or {}
    results = []
    for gpu in counters.get('gpus') or []:
        label = 'GPU %s' % gpu.get('index')
        over = []
        totals = {}
        for link in gpu.get('links') or []:
            for counter in NVLINK_COUNTERS:
                value = link.get(counter)
                if value is None:
                    continue
                totals[counter] = totals.get(counter, 0) + value
                limit = limits.get(counter)
                if limit is not None and value > int(limit):
                    over.append('link %s %s %d > %d' % (link.get('link'), counter.replace('_', ' '), value, int(limit)))
        results.append(new_result('gpu.nvlink_errors', label, totals, limits, not over,
                                  '%s NVLink error counters within limits (%s)' % (
                                      label, ', '.join('%s %d' % (k.replace('_', ' '), v) for k, v in sorted(totals.items()))
                                      or 'none printed') if not over else
                                  '%s NVLink errors over the limits: %s; reseat the GPU baseboard cables or RMA' % (
                                      label, '; '.join(over))))
    return results


def xid_results(gpus, events, expected):
    """gpu.xid from the kernel log's Xid events (``kernel_log.parse_xid``): fatal ones fail their GPU."""
    fatal = set(int(code) for code in expected.get('fatal_xids') or [])
    bad = [event for event in events if event['code'] in fatal]
    if not bad:
        other = sorted(set(event['code'] for event in events))
        return [new_result('gpu.xid', 'node', other, 'none of %s' % sorted(fatal), True,
                           'no fatal Xid in the kernel log since boot%s' % (
                               ' (non-fatal Xid seen: %s)' % ', '.join(str(c) for c in other) if other else ''))]
    by_gpu = {}
    for event in bad:
        by_gpu.setdefault(gpu_label(gpus, event['pci']), []).append(event)
    results = []
    for label, found in sorted(by_gpu.items()):
        codes = sorted(set(event['code'] for event in found))
        results.append(new_result('gpu.xid', label, codes, 'none of %s' % sorted(fatal), False,
                                  '%s fatal Xid %s in the kernel log since boot: %s; follow NVIDIA\'s Xid catalog '
                                  '(reset the GPU or reboot, RMA if it returns)' % (
                                      label, ', '.join(str(c) for c in codes), found[-1]['text'][:120])))
    return results


def process_results(gpus, rows, expected):
    """gpu.processes from ``--query-compute-apps`` rows: none outside the allowed names."""
    allowed = set(expected.get('allowed_processes') or [])
    stray = [row for row in rows if row.get('process_name') not in allowed and
             (row.get('process_name') or '').split('/')[-1] not in allowed]
    if not stray:
        return [new_result('gpu.processes', 'node', 0, 0, True, 'no process on any GPU')]
    by_gpu = {}
    for row in stray:
        by_gpu.setdefault(gpu_label(gpus, row.get('gpu_bus_id')), []).append(row)
    return [new_result('gpu.processes', label, len(found), 0, False,
                       '%s has %d stray process(es): %s; kill them or fix the job epilog' % (
                           label, len(found), ', '.join('%s (pid %s)' % (r.get('process_name'), r.get('pid')) for r in found)))
            for label, found in sorted(by_gpu.items())]


def dcgm_result(dcgm, expected):
    """gpu.dcgm_diag from the dcgm_diag module's result (overall pass/warn/fail, tests, errors)."""
    overall = dcgm.get('overall')
    allow_warn = expected.get('dcgm_allow_warn')
    allowed = ('pass', 'warn') if allow_warn else ('pass',)
    ok = overall in allowed
    failing = [test.get('name') for test in dcgm.get('tests') or [] if test.get('result') in ('fail', 'warn')
               and (test.get('result') == 'fail' or not allow_warn)]
    level = expected.get('dcgm_level')
    level = level if level is not None else '?'
    return new_result('gpu.dcgm_diag', 'node', overall, ' or '.join(allowed), ok,
                      'dcgmi diag -r %s: %s%s' % (level, overall, '' if ok else
                                                  ' (%s); read dcgmi diag -r %s -v and follow its advice'
                                                  % (', '.join(f for f in failing if f) or
                                                     '; '.join(dcgm.get('errors') or []) or 'no report', level)))
