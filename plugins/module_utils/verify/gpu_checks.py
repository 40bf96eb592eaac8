# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gpu area's checks, one function per tool: parsed output and expectations in, results out."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import json

from ansible_collections.aicluster.infra.plugins.module_utils.gpu_models import has_nvswitch
from ansible_collections.aicluster.infra.plugins.module_utils.kernel_log import (
    CONTACT_SUPPORT, FAIL_BUCKETS, REBOOT, since, xid_name,
)
from ansible_collections.aicluster.infra.plugins.module_utils.slurm_jobs import cgroup_job
from ansible_collections.aicluster.infra.plugins.module_utils.verify._common import int_or_none
from ansible_collections.aicluster.infra.plugins.module_utils.verify.results import new_result

NVLINK_COUNTERS = ('replay_errors', 'recovery_errors', 'crc_errors')
# dcgmi diag tests that need DCGM's CUDA plugin package (DCGM 4: datacenter-gpu-manager-4-cuda<major>),
# by normalized name (table, JSON and plugin spellings)
DCGM_CUDA_TESTS = frozenset((
    'memory', 'gpumemory', 'diagnostic', 'targetedstress', 'targetedpower', 'memorybandwidth', 'pcie', 'pcienvlink',
    'memtest', 'memorystress', 'pulsetest',
))


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


def _link_errors(link):
    """The error counters of one parsed ``nvlink -e`` link (both layouts), name -> int."""
    errors = link.get('errors')
    if errors is None:  # a parse from before the two layouts: the legacy keys only
        errors = dict((key, link.get(key)) for key in NVLINK_COUNTERS if link.get(key) is not None)
    return dict((key, value) for key, value in errors.items() if value is not None)


def _counter_index(counters):
    """(gpu index, link) -> error counters of a parsed ``nvlink -e`` read."""
    index = {}
    for gpu in (counters or {}).get('gpus') or []:
        for link in gpu.get('links') or []:
            index[(gpu.get('index'), link.get('link'))] = _link_errors(link)
    return index


def _over(link, counter, value, limit, what):
    if limit is None or value is None or value <= int(limit):
        return None
    return 'link %s %s %s%d > %d' % (link, counter.replace('_', ' '), what, value, int(limit))


def _nvlinked(status):
    """GPU index -> number of active NVLinks from a parsed ``nvlink -s`` (empty when not read)."""
    return dict((gpu.get('index'), len([link for link in gpu.get('links') or [] if link.get('active')]))
                for gpu in (status or {}).get('gpus') or [])


def nvlink_error_results(counters, expected, before=None, status=None):
    """gpu.nvlink_errors: per-link NVLink error counters, as their increase over the run.

    ``counters``: parsed ``nvidia-smi nvlink -e`` read after the active tests;
    ``before``: the read at the role's start (None: not read, the limits then
    apply to the counts since the driver loaded). ``expected``:
    ``nvlink_error_max`` (per-link limits on the increase, counter -> int) and
    ``nvlink_error_absolute_max`` (opt-in per-link limits on the counts since
    the driver loaded). ``status``: parsed ``nvlink -s``: a GPU with active
    NVLinks whose counters could not be read fails.
    """
    limits = expected.get('nvlink_error_max') or {}
    absolute = expected.get('nvlink_error_absolute_max') or {}
    earlier = _counter_index(before) if before is not None else None
    linked = _nvlinked(status)
    results = []
    seen = set()
    for gpu in counters.get('gpus') or []:
        index = gpu.get('index')
        seen.add(index)
        label = 'GPU %s' % index
        links = gpu.get('links') or []
        read = [(link.get('link'), _link_errors(link)) for link in links]
        read = [(number, errors) for number, errors in read if errors]
        if not read:
            up = linked.get(index, 0)
            if links or up:
                printed = sorted(set(name for link in links for name in (link.get('counters') or {})))
                results.append(new_result('gpu.nvlink_errors', label, None, limits, False,
                                          '%s has %s NVLinks but nvidia-smi nvlink -e printed no error counter this collection '
                                          'reads (printed: %s); update the collection for this driver or read the counters by hand'
                                          % (label, up or len(links), ', '.join(printed[:8]) or 'nothing')))
            else:
                results.append(new_result('gpu.nvlink_errors', label, {}, limits, True, '%s has no NVLink' % label))
            continue
        over, rises, totals = [], {}, {}
        for number, errors in read:
            base = earlier.get((index, number), {}) if earlier is not None else None
            for counter, value in sorted(errors.items()):
                totals[counter] = totals.get(counter, 0) + value
                if base is None:
                    rise = value
                else:
                    start = base.get(counter)
                    # a counter lower than at the start was reset (GPU reset, nvlink -re): all of it is new
                    rise = value if start is None or value < start else value - start
                rises[counter] = rises.get(counter, 0) + rise
                found = [_over(number, counter, rise, limits.get(counter), '+' if base is not None else ''),
                         _over(number, counter, value, absolute.get(counter), 'since driver load ')]
                over.extend(item for item in found if item)
        what = 'rose over the run' if earlier is not None else 'since the driver loaded (no first read)'
        measured = {'increase': rises, 'total': totals} if earlier is not None else {'total': totals}
        if over:
            message = '%s NVLink errors over the limits: %s; reseat the GPU baseboard cables or RMA' % (label, '; '.join(over))
        else:
            risen = ', '.join('%s %s%d' % (k.replace('_', ' '), '+' if earlier is not None else '', v)
                              for k, v in sorted(rises.items()) if v)
            message = '%s NVLink error counters %s within limits (%s; %d links, %d counters each)' % (
                label, what, risen or 'none rose' if earlier is not None else risen or 'all 0', len(read),
                max(len(errors) for _number, errors in read))
        results.append(new_result('gpu.nvlink_errors', label, measured, limits, not over, message))
    for index, up in sorted(linked.items()):
        if up and index not in seen:
            results.append(new_result('gpu.nvlink_errors', 'GPU %s' % index, None, limits, False,
                                      'GPU %s has %d NVLinks up but nvidia-smi nvlink -e printed nothing for it' % (index, up)))
    return results


def _xid_word(event):
    return 'Xid %d (%s, %s)' % (event['code'], xid_name(event['code']) or 'unknown', event['bucket'])


def xid_results(gpus, events, expected, window=None, cursor=None):
    """gpu.xid from the kernel log's Xid events (``kernel_log.parse_xid``), by the Xid catalog's resolution buckets.

    Only events after ``cursor`` (the last line read by the previous check,
    an ISO stamp; None: since boot) count. Those in the reset/reboot/
    contact-support buckets, and codes in ``expected['fatal_xids']``, fail
    their GPU; the others are named in the passing message. ``window``
    (``kernel_log.log_window``): a ring buffer that no longer reaches back to
    the cursor is said, never failed.
    """
    extra = set(int(code) for code in expected.get('fatal_xids') or [])
    new = since(events, cursor)
    bad = [event for event in new if event['bucket'] in FAIL_BUCKETS or event['code'] in extra]
    scope = 'since the last check (%s)' % cursor if cursor else 'since boot'
    gap = ''
    if window and cursor and window.get('first') and not window.get('from_boot') and window['first'] > cursor:
        gap = '; the kernel ring buffer starts at %s, after the last check: Xids between them were not seen' % window['first']
    elif window and not cursor and window.get('first') and not window.get('from_boot'):
        gap = '; the kernel ring buffer has wrapped (starts at %s): older Xids were not seen' % window['first']
    want = 'no Xid in %s' % ', '.join(FAIL_BUCKETS)
    if not bad:
        other = sorted(set(_xid_word(event) for event in new))
        return [new_result('gpu.xid', 'node', sorted(set(event['code'] for event in new)), want, True,
                           'no Xid needing a GPU reset, reboot or support %s%s%s' % (
                               scope, ' (seen, no node action: %s)' % ', '.join(other) if other else '', gap))]
    by_gpu = {}
    for event in bad:
        by_gpu.setdefault(gpu_label(gpus, event['pci']), []).append(event)
    results = []
    for label, found in sorted(by_gpu.items()):
        codes = sorted(set(event['code'] for event in found))
        buckets = sorted(set(event['bucket'] for event in found))
        action = ('reboot the node' if REBOOT in buckets else 'reset the GPU (nvidia-smi -r) or reboot') + (
            '; contact NVIDIA support' if CONTACT_SUPPORT in buckets else '; RMA if it returns')
        results.append(new_result('gpu.xid', label, codes, want, False, '%s %s %s: %s; %s%s' % (
            label, ', '.join(sorted(set(_xid_word(event) for event in found))), scope, found[-1]['text'][:120], action, gap)))
    return results


def _cgroup_jobs(cgroups):
    """pid (str) -> Slurm job id (str) from ``{pid: /proc/<pid>/cgroup text}``; PIDs outside a job are left out."""
    jobs = {}
    for pid, text in (cgroups or {}).items():
        job = cgroup_job(text)
        if job:
            jobs[str(pid)] = job
    return jobs


def process_results(gpus, rows, expected, cgroups=None, listpids=None):
    """gpu.processes from ``--query-compute-apps`` rows: a Slurm job's processes are busy GPUs, the rest strays.

    ``cgroups``: pid -> ``/proc/<pid>/cgroup`` text (cgroup v1
    ``/slurm/uid_N/job_M/...``, v2 ``.../job_M/step_S/...`` under
    slurmstepd.scope); a PID in a job cgroup is the job's. ``listpids``:
    pid -> job id from ``scontrol listpids`` (the local slurmstepds' own
    processes, whatever the proctrack plugin). Busy GPUs pass with
    ``busy: true`` and ``jobs`` on the result, so the gate can report them
    as not tested. Names in ``expected['allowed_processes']`` are ignored.
    """
    allowed = set(expected.get('allowed_processes') or [])
    jobs = _cgroup_jobs(cgroups)
    jobs.update((str(pid), str(job)) for pid, job in (listpids or {}).items() if str(pid) not in jobs)
    mine = [row for row in rows if row.get('process_name') not in allowed and
            (row.get('process_name') or '').split('/')[-1] not in allowed]
    stray = [row for row in mine if str(row.get('pid')) not in jobs]
    busy = [row for row in mine if str(row.get('pid')) in jobs]
    results = []
    by_gpu = {}
    for row in busy:
        by_gpu.setdefault(gpu_label(gpus, row.get('gpu_bus_id')), set()).add(jobs[str(row.get('pid'))])
    for label, held in sorted(by_gpu.items()):
        result = new_result('gpu.processes', label, 0, 0, True, 'busy: job %s holds %s' % (', '.join(sorted(held, key=_job_key)), label))
        result['busy'] = True
        result['jobs'] = sorted(held, key=_job_key)
        results.append(result)
    if not stray:
        if not results:
            results.append(new_result('gpu.processes', 'node', 0, 0, True, 'no process on any GPU'))
        return results
    strays = {}
    for row in stray:
        strays.setdefault(gpu_label(gpus, row.get('gpu_bus_id')), []).append(row)
    results.extend(new_result('gpu.processes', label, len(found), 0, False,
                              '%s has %d stray process(es) outside any Slurm job: %s; kill them or fix the job epilog' % (
                                  label, len(found), ', '.join('%s (pid %s)' % (r.get('process_name'), r.get('pid')) for r in found)))
                   for label, found in sorted(strays.items()))
    return results


def _job_key(job):
    return (len(job), job)


def _test_key(name):
    return ''.join(char for char in (name or '').lower() if char.isalnum())


def dcgm_result(dcgm, expected):
    """gpu.dcgm_diag from the dcgm_diag module's result (overall pass/warn/fail, tests, errors).

    A skipped CUDA plugin test (``DCGM_CUDA_TESTS``: DCGM 4 without its
    datacenter-gpu-manager-4-cuda<major> package reports them Skip while
    Deployment passes) fails even when the overall reads pass.
    ``expected``: ``dcgm_allow_warn``, ``dcgm_level``, ``cuda_major`` (for
    the package name; None: from the driver version when known).
    """
    overall = dcgm.get('overall')
    allow_warn = expected.get('dcgm_allow_warn')
    allowed = ('pass', 'warn') if allow_warn else ('pass',)
    tests = dcgm.get('tests') or []
    skipped = [test.get('name') for test in tests if test.get('result') == 'skip' and _test_key(test.get('name')) in DCGM_CUDA_TESTS]
    ok = overall in allowed and not skipped
    failing = [test.get('name') for test in tests if test.get('result') in ('fail', 'warn')
               and (test.get('result') == 'fail' or not allow_warn)]
    level = expected.get('dcgm_level')
    level = level if level is not None else '?'
    if skipped:
        major = expected.get('cuda_major')
        package = 'datacenter-gpu-manager-4-cuda%s' % (major if major not in (None, '') else '<major>')
        return new_result('gpu.dcgm_diag', 'node', 'skip', ' or '.join(allowed), False,
                          'DCGM plugin missing: %s skipped; install the DCGM CUDA package (%s) (dcgmi diag -r %s overall %s)'
                          % (', '.join(skipped), package, level, overall))
    other = [test.get('name') for test in tests if test.get('result') == 'skip']
    return new_result('gpu.dcgm_diag', 'node', overall, ' or '.join(allowed), ok,
                      'dcgmi diag -r %s: %s%s%s' % (level, overall, ' (skipped: %s)' % ', '.join(other) if other and ok else '',
                                                    '' if ok else
                                                    ' (%s); read dcgmi diag -r %s -v and follow its advice'
                                                    % (', '.join(f for f in failing if f) or
                                                       '; '.join(dcgm.get('errors') or []) or 'no report', level)))


def xid_cursor(state):
    """The ``xid_cursor`` kept on the node by the last check (``slurp`` of verify_gpu.state), or None."""
    if not isinstance(state, dict) or state.get('failed') or not state.get('content'):
        return None
    try:
        data = json.loads(base64.b64decode(state['content']).decode('utf-8'))
    except (ValueError, TypeError, UnicodeDecodeError):
        return None
    cursor = data.get('xid_cursor') if isinstance(data, dict) else None
    return cursor if isinstance(cursor, str) and cursor else None


def cuda_major(info):
    """The CUDA major version of gpu_info's ``cuda_version`` (``12.8`` -> ``12``), or None."""
    version = str((info or {}).get('cuda_version') or '').strip()
    major = version.split('.', maxsplit=1)[0]
    return major if major.isdigit() else None


def nvlink_read_summary(parsed):
    """A compact record of one ``nvlink -e`` read for results.json: GPU index -> layout, links, non-zero error counters by link."""
    summary = {}
    for gpu in (parsed or {}).get('gpus') or []:
        nonzero = {}
        for link in gpu.get('links') or []:
            errors = dict((key, value) for key, value in _link_errors(link).items() if value)
            if errors:
                nonzero[str(link.get('link'))] = errors
        summary[str(gpu.get('index'))] = {'layout': gpu.get('layout'), 'links': len(gpu.get('links') or []), 'nonzero': nonzero}
    return summary
