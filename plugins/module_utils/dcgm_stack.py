# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The dcgm role's decisions: its variables, DCGM against the loaded driver, and the exporter's liveness.

Pure functions (text and dicts in, dicts and lists out); the role reaches them through the filters of
plugins/filter/dcgm.py. Sources of the rules are in docs/monitoring.md ("DCGM", "dcgm-exporter").
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError

# DCGM 4 runs with NVIDIA driver R450 and later (DCGM installation guide, "Supported Platforms": "CUDA 7.5 and later
# and NVIDIA Driver R450 and later").
DCGM_MIN_DRIVER_BRANCH = {4: 450}
# The first driver branch of each CUDA major (CUDA toolkit release notes, "CUDA Toolkit and Corresponding Driver
# Versions": 11.0 450.36.06, 12.0 525.60.13, 13.0 580.65.06). DCGM 4's CUDA plugin package
# (datacenter-gpu-manager-4-cuda<MAJOR>) must be the driver's CUDA major: nvvs loads the plugins of that major, and
# without them every CUDA test of `dcgmi diag` reports Skip.
CUDA_MAJOR_FIRST_BRANCH = ((13, 580), (12, 525), (11, 450))
CUDA_MAJORS = tuple(major for major, _branch in CUDA_MAJOR_FIRST_BRANCH)
# dcgm-exporter reads its collectors CSV with a CSV reader and wants exactly three fields
# (DCGM field, Prometheus type, help); a comma in the help text breaks the line.
PROM_TYPES = ('gauge', 'counter')
_FIELD_RE = re.compile(r'^DCGM_(?:FI|EXP)_[A-Z0-9_]+$')
_DEB_VERSION_RE = re.compile(r'^(?:[0-9]+:)?[0-9][A-Za-z0-9.+~-]*-[A-Za-z0-9.+~]+$')
_DCGM_VERSION_RE = re.compile(r'^(?:(?P<epoch>[0-9]+):)?(?P<major>[0-9]+)\.(?P<minor>[0-9]+)(?:\.[0-9]+)*-[A-Za-z0-9.+~]+$')
_DRIVER_RE = re.compile(r'^(?P<branch>[0-9]{3,4})\.[0-9]+(?:\.[0-9]+)?$')
# A dcgm-exporter release tag (DCGM version - exporter version), which is not the package's version.
_RELEASE_TAG_RE = re.compile(r'^[0-9]+\.[0-9]+\.[0-9]+-[0-9]+\.[0-9]+\.[0-9]+(?:-[0-9]+)?$')
_HOSTPORT_RE = re.compile(r'^[A-Za-z0-9.\-\[\]:]+:[0-9]{1,5}$')
LIVENESS_FIELD = 'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION'
# Prometheus text exposition: NAME{LABELS} VALUE [TIMESTAMP]
_SAMPLE_RE = re.compile(r'^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)(?:\s+-?[0-9]+)?\s*$')
_LABEL_RE = re.compile(r'\s*(?P<key>[A-Za-z_][A-Za-z0-9_]*)\s*=\s*"(?P<value>(?:[^"\\]|\\.)*)"\s*(?:,|$)')


def dcgm_version_major(version):
    """The DCGM major of a Debian version: ``1:4.4.1-1`` -> 4; None when it is not one."""
    match = _DCGM_VERSION_RE.match(str(version or '').strip())
    return int(match.group('major')) if match else None


def driver_branch(driver_version):
    """The branch of a driver version as nvidia-smi prints it: ``580.95.05`` -> 580; None when it is not one."""
    match = _DRIVER_RE.match(str(driver_version or '').strip())
    return int(match.group('branch')) if match else None


def driver_cuda_major(driver_version):
    """The CUDA major a driver supports (CUDA_MAJOR_FIRST_BRANCH); None for an unknown version or a branch older
    than CUDA 11's."""
    branch = driver_branch(driver_version)
    if branch is None:
        return None
    for major, first in CUDA_MAJOR_FIRST_BRANCH:
        if branch >= first:
            return major
    return None


def _as_int(value):
    """An int, or a string of digits as a templated variable may be; None otherwise (bools are not numbers)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    text = str(value if value is not None else '').strip()
    return int(text) if text.isdigit() else None


def _counter_problems(counters, name):
    problems = []
    if not isinstance(counters, list) or not counters:
        return ['%s must be a non-empty list of {field, type, help}' % name]
    seen = set()
    for position, entry in enumerate(counters):
        where = '%s[%d]' % (name, position)
        if not isinstance(entry, dict):
            problems.append('%s must be a dict {field, type, help}' % where)
            continue
        field = str(entry.get('field') or '')
        if not _FIELD_RE.match(field):
            problems.append('%s.field %r is not a DCGM field name (DCGM_FI_... or DCGM_EXP_...)' % (where, field))
        elif field in seen:
            problems.append('%s.field %s is listed twice' % (where, field))
        seen.add(field)
        if entry.get('type') not in PROM_TYPES:
            problems.append('%s.type %r must be one of %s' % (where, entry.get('type'), ', '.join(PROM_TYPES)))
        help_text = str(entry.get('help') or '')
        if not help_text.strip() or re.search(r'[,\n\r]', help_text):
            problems.append('%s.help must be one line of text without a comma (dcgm-exporter reads three CSV '
                            'fields)' % where)
    return problems


def dcgm_problems(settings):
    """What is wrong with the dcgm role's variables (``settings``: the role's variables without their ``dcgm_``
    prefix), one message per variable; empty when all is well."""
    problems = []
    version = settings.get('version')
    major = dcgm_version_major(version)
    if major is None:
        problems.append('dcgm_version %r is not an exact DCGM package version such as 1:4.4.1-1' % (version,))
    elif major not in DCGM_MIN_DRIVER_BRANCH:
        problems.append('dcgm_version %s is DCGM %d; the role installs DCGM 4 (datacenter-gpu-manager-4-*)'
                        % (version, major))
    cuda = str(settings.get('cuda_major') or '')
    if not cuda.isdigit() or int(cuda) not in CUDA_MAJORS:
        problems.append('dcgm_cuda_major %r must be one of %s (datacenter-gpu-manager-4-cuda<MAJOR>)'
                        % (settings.get('cuda_major'), ', '.join(str(m) for m in sorted(CUDA_MAJORS))))
    packages = settings.get('packages') or []
    if not isinstance(packages, list) or not packages:
        problems.append('dcgm_packages must list the DCGM packages with their versions')
    else:
        for position, package in enumerate(packages):
            if not isinstance(package, dict) or not package.get('name') or not _DEB_VERSION_RE.match(str(package.get('version') or '')):
                problems.append('dcgm_packages[%d] needs a name and an exact Debian version' % position)
        names = [package.get('name') for package in packages if isinstance(package, dict)]
        if 'datacenter-gpu-manager-4-core' not in names:
            problems.append('dcgm_packages must include datacenter-gpu-manager-4-core')
        if cuda.isdigit() and 'datacenter-gpu-manager-4-cuda%s' % cuda not in names:
            problems.append('dcgm_packages must include datacenter-gpu-manager-4-cuda%s (without it dcgmi diag reports '
                            'every CUDA test as Skip)' % cuda)
    if settings.get('cuda_major_check') not in ('fail', 'warn'):
        problems.append('dcgm_cuda_major_check must be fail or warn')
    watches = str(settings.get('health_watches') or '')
    if settings.get('health_watches_enabled') and not re.match(r'^[apmitn]+$', watches):
        problems.append('dcgm_health_watches %r must be dcgmi health -s systems (a, or some of p m i t n)' % watches)
    if settings.get('exporter_enabled'):
        problems.extend(_exporter_problems(settings))
    return problems


def _exporter_problems(settings):
    problems = []
    exporter_version = str(settings.get('exporter_version') or '')
    if not _DEB_VERSION_RE.match(exporter_version):
        problems.append('dcgm_exporter_version %r is not an exact Debian version such as 4.6.0-1'
                        % (settings.get('exporter_version'),))
    elif _RELEASE_TAG_RE.match(exporter_version):
        problems.append('dcgm_exporter_version %s looks like the release tag DCGM-EXPORTER (4.4.1-4.6.0); the '
                        'datacenter-gpu-manager-exporter package carries the exporter\'s own version (4.6.0-1)'
                        % exporter_version)
    port = _as_int(settings.get('exporter_port'))
    if port is None or not 1 <= port <= 65535:
        problems.append('dcgm_exporter_port %r must be a TCP port (1-65535)' % (settings.get('exporter_port'),))
    if not _HOSTPORT_RE.match(str(settings.get('exporter_hostengine') or '')):
        problems.append('dcgm_exporter_hostengine %r must be HOST:PORT of nv-hostengine (localhost:5555)'
                        % (settings.get('exporter_hostengine'),))
    counters = settings.get('exporter_counters')
    problems.extend(_counter_problems(counters, 'dcgm_exporter_counters'))
    if 'exporter_nvswitch_enabled' in settings:
        if not isinstance(settings.get('exporter_nvswitch_enabled'), bool):
            problems.append('dcgm_exporter_nvswitch_enabled must be true or false (got %r)'
                            % (settings.get('exporter_nvswitch_enabled'),))
        elif settings['exporter_nvswitch_enabled']:
            problems.extend(_counter_problems(settings.get('exporter_nvswitch_counters'),
                                              'dcgm_exporter_nvswitch_counters'))
    labels = settings.get('exporter_labels') or []
    if not isinstance(labels, list) or any(not _FIELD_RE.match(str(label)) for label in labels):
        problems.append('dcgm_exporter_labels must list DCGM field names (DCGM_FI_DRIVER_VERSION)')
    fields = [entry.get('field') for entry in counters or [] if isinstance(entry, dict)]
    if settings.get('exporter_liveness_enabled') and LIVENESS_FIELD not in fields:
        problems.append('dcgm_exporter_counters must include %s: the liveness check watches it grow' % LIVENESS_FIELD)
    interval = _as_int(settings.get('exporter_liveness_interval'))
    collect = _as_int(settings.get('exporter_collect_interval_ms'))
    if collect is None or not 100 <= collect <= 300000:
        problems.append('dcgm_exporter_collect_interval_ms %r must be 100-300000 milliseconds'
                        % (settings.get('exporter_collect_interval_ms'),))
    if interval is None or not 1 <= interval <= 300:
        problems.append('dcgm_exporter_liveness_interval %r must be 1-300 seconds'
                        % (settings.get('exporter_liveness_interval'),))
    elif collect is not None and interval * 1000 <= collect:
        # the exporter refreshes its values once per collect interval: two scrapes closer than that can see the same
        # energy reading on a healthy exporter
        problems.append('dcgm_exporter_liveness_interval %d s must be longer than dcgm_exporter_collect_interval_ms '
                        '(%d ms): the exporter refreshes its values once per collect interval' % (interval, collect))
    expected = _as_int(settings.get('exporter_expected_gpus'))
    if expected is None or expected < 0:
        problems.append('dcgm_exporter_expected_gpus %r must be 0 (what nvidia-smi lists) or a GPU count'
                        % (settings.get('exporter_expected_gpus'),))
    return problems


def parse_gpu_list(text):
    """``nvidia-smi --query-gpu=driver_version,uuid --format=csv,noheader`` -> {driver_version, uuids}."""
    uuids, drivers = [], set()
    for number, line in enumerate(str(text or '').splitlines(), 1):
        if not line.strip():
            continue
        cells = [cell.strip() for cell in line.split(',')]
        if len(cells) != 2 or not cells[1].startswith('GPU-'):
            raise ParseError('not nvidia-smi --query-gpu=driver_version,uuid csv output', number, line)
        drivers.add(cells[0])
        uuids.append(cells[1])
    # one driver serves every GPU; the lowest is the one to check should the lines ever differ
    return {'driver_version': sorted(drivers, key=lambda v: [int(p) if p.isdigit() else 0 for p in v.split('.')])[0]
            if drivers else None, 'uuids': uuids}


def driver_check(settings, nvidia_smi):
    """DCGM against the node's driver. ``nvidia_smi``: {rc, stdout} of
    ``nvidia-smi --query-gpu=driver_version,uuid --format=csv,noheader``.

    Returns {driver_version, driver_cuda_major, gpus (UUIDs), problems (fail the node), warnings}. A node whose
    driver cannot be read (no driver yet, NVML failing) gets a warning, not a failure: the packages do not need a
    driver to install, and nv-hostengine starts without one."""
    result = {'driver_version': None, 'driver_cuda_major': None, 'gpus': [], 'problems': [], 'warnings': []}
    nvidia_smi = nvidia_smi or {}
    if nvidia_smi.get('rc') != 0:
        result['warnings'].append('nvidia-smi failed (rc=%s): the DCGM version and CUDA plugin were not checked '
                                  'against the driver' % nvidia_smi.get('rc'))
        return result
    try:
        listed = parse_gpu_list(nvidia_smi.get('stdout'))
    except ParseError as exc:
        result['warnings'].append('nvidia-smi output not understood (%s): the driver was not checked' % exc)
        return result
    result['gpus'] = listed['uuids']
    driver = listed['driver_version']
    result['driver_version'] = driver
    branch = driver_branch(driver)
    if branch is None:
        result['warnings'].append('driver version %r not understood: the driver was not checked' % (driver,))
        return result
    major = dcgm_version_major(settings.get('version'))
    minimum = DCGM_MIN_DRIVER_BRANCH.get(major)
    if minimum and branch < minimum:
        result['problems'].append('DCGM %s needs NVIDIA driver R%d or later; the node runs %s'
                                  % (settings.get('version'), minimum, driver))
    cuda = driver_cuda_major(driver)
    result['driver_cuda_major'] = cuda
    wanted = int(settings.get('cuda_major'))
    if cuda is not None and cuda != wanted:
        if wanted > cuda:
            why = ('datacenter-gpu-manager-4-cuda%d needs driver R%d or later; the driver %s supports CUDA %d'
                   % (wanted, dict(CUDA_MAJOR_FIRST_BRANCH)[wanted], driver, cuda))
        else:
            why = ('the driver %s supports CUDA %d and DCGM diagnostics load the cuda%d plugins: with '
                   'datacenter-gpu-manager-4-cuda%d they report every CUDA test as Skip' % (driver, cuda, cuda, wanted))
        message = 'dcgm_cuda_major %d does not match the driver: %s (set aicluster_bom.dcgm.cuda_major to %d)' % (
            wanted, why, cuda)
        (result['problems'] if settings.get('cuda_major_check', 'fail') == 'fail' else result['warnings']).append(message)
    return result


def _unescape(value):
    return value.replace('\\"', '"').replace('\\n', '\n').replace('\\\\', '\\')


def parse_metrics(text):
    """Prometheus text exposition -> {metric: [{'labels': {...}, 'value': float}]}; comments and lines that are
    not samples are skipped."""
    metrics = {}
    for line in str(text or '').splitlines():
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        match = _SAMPLE_RE.match(line)
        if not match:
            continue
        try:
            value = float(match.group('value'))
        except ValueError:
            continue
        labels = {}
        raw = match.group('labels') or ''
        position = 0
        while position < len(raw):
            label = _LABEL_RE.match(raw, position)
            if not label:
                break
            labels[label.group('key')] = _unescape(label.group('value'))
            position = label.end()
        metrics.setdefault(match.group('name'), []).append({'labels': labels, 'value': value})
    return metrics


def _energy_by_gpu(metrics):
    return dict((sample['labels'].get('UUID') or sample['labels'].get('gpu'), sample['value'])
                for sample in metrics.get(LIVENESS_FIELD, []))


def exporter_liveness(first, second, expected_gpus=None, expected_count=0):
    """Whether the exporter serves fresh values for every GPU: two scrapes of /metrics (``first``, ``second``, a few
    seconds apart), the UUIDs nvidia-smi lists (``expected_gpus``) and at least ``expected_count`` GPUs (0: no
    count).

    Returns {check, measured, threshold, passed, message, gpus, missing, stale}: passed when every expected GPU
    is served and DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION grew on each (a frozen counter is the stale exporter of
    gpu-monitoring-tools #188: connected to an nv-hostengine that has restarted)."""
    before = _energy_by_gpu(parse_metrics(first))
    after = _energy_by_gpu(parse_metrics(second))
    served = sorted(after)
    missing = sorted(set(expected_gpus or []) - set(after))
    stale = sorted(gpu for gpu in after if gpu in before and after[gpu] <= before[gpu])
    reasons = []
    if not after:
        reasons.append('no %s sample on /metrics' % LIVENESS_FIELD)
    if missing:
        reasons.append('GPUs missing from /metrics: %s' % ', '.join(missing))
    if expected_count and len(served) < expected_count:
        reasons.append('%d GPUs on /metrics, %d expected' % (len(served), expected_count))
    if stale:
        reasons.append('%s did not grow on %s: the exporter serves frozen values (restart nvidia-dcgm-exporter)'
                       % (LIVENESS_FIELD, ', '.join(stale)))
    fresh = len([gpu for gpu in after if gpu in before and gpu not in stale])
    return {
        'check': 'dcgm_exporter.liveness',
        'measured': {'gpus': len(served), 'fresh': fresh},
        'threshold': {'gpus': max(len(expected_gpus or []), expected_count or 0), 'fresh': len(served)},
        'passed': not reasons,
        'message': '; '.join(reasons) if reasons else '%d GPUs served, energy counters growing' % len(served),
        'gpus': served,
        'missing': missing,
        'stale': stale,
    }
