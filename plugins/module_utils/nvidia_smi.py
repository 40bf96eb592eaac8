# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for nvidia-smi text output: topo -m, --query-gpu csv, -q, nvlink -s and nvlink -e."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.printed_numbers import to_float

_ANSI_RE = re.compile(r'\x1b\[[0-9;]*[A-Za-z]')
_DEVICE_LABEL_RE = re.compile(r'^(?:GPU\d+|NIC\d+|mlx\d+_\w+|[a-z][\w.-]*\d)$')
_NIC_LEGEND_RE = re.compile(r'^\s*(?P<nic>NIC\d+)\s*:\s*(?P<name>\S+)\s*$')
_CPULIST_PART_RE = re.compile(r'^(?P<lo>\d+)(?:-(?P<hi>\d+))?$')
_TRAILING_HEADERS = ('CPU Affinity', 'NUMA Affinity', 'GPU NUMA ID')

# Lines nvidia-smi prints instead of (or in the middle of) its output when it fails.
_SMI_ERROR_RE = re.compile(
    r'^(?:NVML:|Error:|ERROR:|NVIDIA-SMI has failed|No devices were found|Unable to determine|'
    r'Failed to initialize NVML|Unable to retrieve NVLink|Unable to open|GPU access blocked|'
    r'.*\bis not supported\b|.*Unknown Error)', re.IGNORECASE)

# Number followed by one of the units nvidia-smi prints in --query-gpu csv output.
_UNIT_VALUE_RE = re.compile(r'^(?P<number>-?\d+(?:\.\d+)?)\s*(?P<unit>MiB|GiB|KiB|W|MHz|%|C|KB/s|MB/s|GB/s|ms|us|s|mV|V)$')
_CSV_HEADER_UNIT_RE = re.compile(r'^(?P<name>.*?)\s*\[(?P<unit>[^\]]*)\]$')


def _strip_ansi(text):
    return _ANSI_RE.sub('', text)


def _lines(text):
    """Lines of ``text`` with CRLF/CR handled and ANSI escapes removed."""
    return _strip_ansi(text).replace('\r\n', '\n').replace('\r', '\n').split('\n')


def _check_text(text, tool):
    if not isinstance(text, str) or not text.strip():
        raise ParseError('empty %s output' % tool)


def _na(value):
    """None for N/A-like values, else the value stripped."""
    if value is None:
        return None
    value = value.strip()
    if value in ('N/A', '[N/A]', ''):
        return None
    return value


def _int(value):
    value = _na(value) if isinstance(value, str) else None
    if value is None:
        return None
    try:
        return int(value, 0) if value.lower().startswith('0x') else int(value)
    except ValueError:
        return None


def _float(value):
    return to_float(_na(value) if isinstance(value, str) else None)


def _yes_no(value):
    value = _na(value) if isinstance(value, str) else None
    if value is None:
        return None
    if value.lower() in ('yes', 'true', 'enabled'):
        return True
    if value.lower() in ('no', 'false', 'disabled'):
        return False
    return None


# --------------------------------------------------------------------------
# cpulist


def cpulist_expand(text):
    """Expand a Linux cpulist (``0-3,8``) into a sorted list of ints; ParseError on junk.

    ``N/A`` and the empty string give an empty list.
    """
    if not isinstance(text, str):
        raise ParseError('cpulist is not a string: %r' % (text,))
    text = text.strip()
    if text in ('', 'N/A'):
        return []
    cpus = set()
    for part in text.split(','):
        match = _CPULIST_PART_RE.match(part.strip())
        if not match:
            raise ParseError('not a cpulist: %r' % text)
        low = int(match.group('lo'))
        high = int(match.group('hi')) if match.group('hi') is not None else low
        if high < low or high - low > 65536:
            raise ParseError('bad cpulist range %r in %r' % (part, text))
        cpus.update(range(low, high + 1))
    return sorted(cpus)


# --------------------------------------------------------------------------
# topo -m


def _split_header(line):
    """Column names of the topo header line (tabs or runs of spaces)."""
    if '\t' in line:
        cells = [cell.strip() for cell in line.split('\t')]
        return [cell for cell in cells if cell]
    tokens = line.split()
    names = []
    i = 0
    while i < len(tokens):
        for header in _TRAILING_HEADERS:
            words = header.split()
            if tokens[i:i + len(words)] == words:
                names.append(header)
                i += len(words)
                break
        else:
            names.append(tokens[i])
            i += 1
    return names


def _row_cells(line, ndevices):
    """(label, matrix cells, trailing cells) of one topo row; trailing cells keep empties with tabs."""
    if '\t' in line:
        cells = [cell.strip() for cell in line.split('\t')]
        return cells[0], cells[1:1 + ndevices], cells[1 + ndevices:]
    tokens = line.split()
    return tokens[0], tokens[1:1 + ndevices], tokens[1 + ndevices:]


def _affinity(trailing, extra_names, tabs):
    """Map the cells after the matrix onto the CPU/NUMA/GPU NUMA ID columns.

    With tabs nvidia-smi prints an empty cell between ``NUMA Affinity`` and
    ``GPU NUMA ID``: the GPU NUMA ID is the last cell, and an empty CPU
    Affinity is an empty cell of its own. With spaces (tabs expanded by a
    terminal, a pager or a job's log) empty cells cannot be seen. Only
    ``CPU Affinity`` is ever printed empty (inside a Slurm job or a cgroup,
    for the GPUs whose CPUs the job may not use; on Grace nodes for the GPUs
    of the other socket); ``NUMA Affinity`` and ``GPU NUMA ID`` always show a
    number or ``N/A``. So the values fill the columns from the right.
    """
    values = {}
    if tabs and 'GPU NUMA ID' in extra_names and len(trailing) >= len(extra_names):
        ordered = trailing[:len(extra_names) - 1] + [trailing[-1]]
    elif tabs:
        ordered = list(trailing)
    else:
        ordered = [''] * max(0, len(extra_names) - len(trailing)) + list(trailing)
    for index, name in enumerate(extra_names):
        values[name] = ordered[index] if index < len(ordered) else ''
    return values


def parse_topo_matrix(text):
    """Parse ``nvidia-smi topo -m``.

    Handles tab- or space-separated tables, the ANSI underline nvidia-smi puts
    around the header, rows for GPUs and NICs (NIC rows carry no affinity), the
    ``CPU Affinity``/``NUMA Affinity`` columns with or without ``GPU NUMA ID``,
    then the ``Legend:`` and ``NIC Legend:`` blocks.

    Returns ``devices`` (column order), ``matrix`` (row -> column -> cell, the
    ``X`` diagonal included), ``cpu_affinity``, ``numa_affinity`` and, when the
    column exists, ``gpu_numa_id`` (GPU rows only, strings as printed), ``nic_names``
    and ``errors`` (nvidia-smi failure lines).
    """
    _check_text(text, 'nvidia-smi topo -m')
    lines = _lines(text)
    result = {'devices': [], 'matrix': {}, 'cpu_affinity': {}, 'numa_affinity': {}, 'nic_names': {}, 'errors': []}
    devices = None
    extra_names = []
    in_legend = False
    for raw in lines:
        stripped = raw.strip()
        if not stripped:
            continue
        if stripped in ('Legend:', 'NIC Legend:'):
            in_legend = True
            continue
        legend = _NIC_LEGEND_RE.match(raw)
        if legend:
            result['nic_names'][legend.group('nic')] = legend.group('name')
            continue
        if _SMI_ERROR_RE.match(stripped):
            result['errors'].append(stripped)
            continue
        if in_legend:
            continue
        if devices is None:
            names = _split_header(raw)
            candidates = [name for name in names if name not in _TRAILING_HEADERS]
            if (candidates and candidates[0] == 'GPU0' and names[:len(candidates)] == candidates
                    and all(_DEVICE_LABEL_RE.match(name) for name in candidates)):
                devices = candidates
                extra_names = names[len(candidates):]
                result['devices'] = devices
            continue
        label, cells, trailing = _row_cells(raw, len(devices))
        if label not in devices or len(cells) != len(devices):
            continue
        result['matrix'][label] = dict(zip(devices, cells))
        if label.startswith('GPU') and extra_names:
            values = _affinity(trailing, extra_names, '\t' in raw)
            result['cpu_affinity'][label] = values.get('CPU Affinity', '')
            if 'NUMA Affinity' in values:
                result['numa_affinity'][label] = values['NUMA Affinity']
            if 'GPU NUMA ID' in values:
                result.setdefault('gpu_numa_id', {})[label] = values['GPU NUMA ID']
    if not result['matrix'] and not result['errors']:
        raise ParseError('no nvidia-smi topo -m matrix found')
    return result


# --------------------------------------------------------------------------
# --query-gpu csv


def _csv_cells(line):
    return [cell.strip() for cell in line.split(',')]


def _strip_unit(value, unit):
    """Value with the unit suffix removed; None for N/A."""
    if value in ('[N/A]', 'N/A', ''):
        return None
    if unit and value.endswith(' ' + unit):
        return value[:-len(unit) - 1]
    if unit is None:
        match = _UNIT_VALUE_RE.match(value)
        if match:
            return match.group('number')
    return value


def parse_query_gpu_csv(text, fields=None):
    """Parse ``nvidia-smi --query-gpu=a,b,c --format=csv[,noheader][,nounits]``.

    Without ``fields`` the first line must be the csv header (``memory.total [MiB]``);
    the names lose their ``[unit]`` and values lose the matching unit suffix.
    With ``fields`` (for ``noheader`` output) the names are the caller's and a
    trailing known unit (``MiB``, ``W``, ``MHz``, ``%``...) is stripped from values.
    ``N/A``/``[N/A]`` become None; other values stay strings as printed.
    Lines whose cell count does not match (error lines, noise) are skipped.
    Returns a list of dicts; ParseError when no row could be read.
    """
    _check_text(text, 'nvidia-smi --query-gpu')
    lines = [line for line in _lines(text) if line.strip()]
    if fields is not None:
        if not isinstance(fields, (list, tuple)) or not fields or not all(isinstance(f, str) for f in fields):
            raise ParseError('fields must be a non-empty list of names')
        names = [field.strip() for field in fields]
        units = [None] * len(names)
        body = lines
    else:
        header = _csv_cells(lines[0])
        names, units = [], []
        for cell in header:
            match = _CSV_HEADER_UNIT_RE.match(cell)
            names.append(match.group('name') if match else cell)
            units.append(match.group('unit') if match else '')
        if not all(re.match(r'^[a-z][\w.]*$', name) for name in names):
            raise ParseError('first line is not a --query-gpu csv header', 1, lines[0])
        body = lines[1:]
    rows = []
    for line in body:
        cells = _csv_cells(line)
        if len(cells) != len(names):
            continue
        rows.append(dict((name, _strip_unit(cell, unit)) for name, cell, unit in zip(names, cells, units)))
    if not rows:
        raise ParseError('no --query-gpu csv rows found')
    return rows


# --------------------------------------------------------------------------
# nvidia-smi -q

_Q_KEY_VALUE_RE = re.compile(r'^(?P<key>\S.*?)\s*:(?:\s+(?P<value>.*?))?\s*$')
_Q_GPU_RE = re.compile(r'^GPU (?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])$')
_Q_LOG_RE = re.compile(r'^=+\s*NVSMI LOG\s*=+$')


def _indent(line):
    expanded = line.expandtabs(4)
    return len(expanded) - len(expanded.lstrip(' '))


def _store(container, key, value):
    """Set a key; a key printed twice in one section (Processes) becomes a list."""
    if key in container:
        existing = container[key]
        if isinstance(existing, list):
            existing.append(value)
        else:
            container[key] = [existing, value]
    else:
        container[key] = value


def _q_tree(lines):
    """Nested dict of the ``-q`` sections, by indentation; also the error lines."""
    root = {}
    errors = []
    # stack entries: [indent, container (dict or None while a key: value may get children), parent, key]
    stack = [[-1, root, None, None]]
    for raw in lines:
        if not raw.strip():
            continue
        stripped = raw.strip()
        if _Q_LOG_RE.match(stripped):
            continue
        if _SMI_ERROR_RE.match(stripped):
            errors.append(stripped)
            continue
        level = _indent(raw)
        while len(stack) > 1 and stack[-1][0] >= level:
            stack.pop()
        top = stack[-1]
        if top[1] is None:
            # a "key : value" line that now gets children (Processes / Process ID)
            parent, key = top[2], top[3]
            current = parent[key][-1] if isinstance(parent[key], list) else parent[key]
            node = {'_value': current}
            if isinstance(parent[key], list):
                parent[key][-1] = node
            else:
                parent[key] = node
            top[1] = node
        container = top[1]
        match = _Q_KEY_VALUE_RE.match(stripped)
        if match and not _Q_GPU_RE.match(stripped):
            key, value = match.group('key'), match.group('value') or ''
            _store(container, key, value)
            stack.append([level, None, container, key])
        else:
            node = {}
            _store(container, stripped, node)
            stack.append([level, node, container, stripped])
    return root, errors


def _get(node, *path):
    """Walk a nested dict; None when a step is missing or not a dict."""
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    if isinstance(node, dict) and '_value' in node:
        return node['_value']
    return node


def _snake(name):
    return re.sub(r'[^a-z0-9]+', '_', name.lower()).strip('_')


def _ecc_counts(section):
    """Counters of one ``Volatile``/``Aggregate`` block, plus correctable/uncorrectable totals.

    Handles the SRAM/DRAM layout (A100/H100 drivers) and the older
    ``Single Bit``/``Double Bit`` -> ``Total`` layout.
    """
    if not isinstance(section, dict):
        return None
    counts = {}
    correctable = []
    uncorrectable = []
    for key, value in section.items():
        if isinstance(value, dict):
            total = _int(value.get('Total')) if isinstance(value.get('Total'), str) else None
            counts[_snake(key)] = total
            if key == 'Single Bit' and total is not None:
                correctable.append(total)
            elif key == 'Double Bit' and total is not None:
                uncorrectable.append(total)
            continue
        if not isinstance(value, str):
            continue
        number = _int(value)
        if number is None and _na(value) is not None:
            counts[_snake(key)] = value
            continue
        counts[_snake(key)] = number
        if number is None:
            continue
        lowered = key.lower()
        if 'uncorrectable' in lowered:
            uncorrectable.append(number)
        elif 'correctable' in lowered:
            correctable.append(number)
    counts['correctable'] = sum(correctable) if correctable else None
    counts['uncorrectable'] = sum(uncorrectable) if uncorrectable else None
    return counts


def _retired_pages(section):
    if not isinstance(section, dict):
        return None

    def count(key):
        value = section.get(key)
        if isinstance(value, dict):
            value = value.get('Count', value.get('_value'))
        return _int(value) if isinstance(value, str) else None

    pending = section.get('Pending Page Blacklist', section.get('Pending'))
    return {
        'single_bit': count('Single Bit ECC'),
        'double_bit': count('Double Bit ECC'),
        'pending': _yes_no(pending) if isinstance(pending, str) else None,
    }


def _remapped_rows(section):
    if not isinstance(section, dict):
        return None
    return {
        'correctable': _int(_get(section, 'Correctable Error')),
        'uncorrectable': _int(_get(section, 'Uncorrectable Error')),
        'pending': _yes_no(_get(section, 'Pending')),
        'failure': _yes_no(_get(section, 'Remapping Failure Occurred')),
    }


def _q_text(node, key):
    """A top-level ``Key : value`` of a GPU section as printed, None when absent, N/A or not a plain value."""
    value = _get(node, key)
    return _na(value) if isinstance(value, str) else None


def _q_gpu(bus_id, node):
    ecc_errors = node.get('ECC Errors') if isinstance(node, dict) else None
    ecc = None
    if isinstance(ecc_errors, dict):
        ecc = {'volatile': _ecc_counts(ecc_errors.get('Volatile')),
               'aggregate': _ecc_counts(ecc_errors.get('Aggregate'))}
    product = _get(node, 'Product Name')
    uuid = _get(node, 'GPU UUID')
    persistence = _get(node, 'Persistence Mode')
    return {
        'pci_bus_id': bus_id,
        'product_name': product if isinstance(product, str) else None,
        'uuid': uuid if isinstance(uuid, str) else None,
        'serial': _q_text(node, 'Serial Number'),
        'vbios_version': _q_text(node, 'VBIOS Version'),
        'board_part_number': _q_text(node, 'Board Part Number'),
        'minor_number': _int(_get(node, 'Minor Number')),
        'persistence_mode': persistence if isinstance(persistence, str) else None,
        'ecc_mode': _na(_get(node, 'ECC Mode', 'Current')) if isinstance(_get(node, 'ECC Mode', 'Current'), str) else None,
        'ecc': ecc,
        'retired_pages': _retired_pages(node.get('Retired Pages')),
        'remapped_rows': _remapped_rows(node.get('Remapped Rows')),
    }


def parse_nvidia_smi_q(text):
    """Parse ``nvidia-smi -q`` (and ``-q -d ECC,PAGE_RETIREMENT,...`` subsets).

    The layout is an indented tree (4 spaces a level) of ``Key : value`` lines
    and section titles, one ``GPU 00000000:18:00.0`` section per GPU.  Returns
    ``driver_version``, ``cuda_version``, ``attached_gpus``, ``gpus`` (typed
    fields: ``pci_bus_id``, ``product_name``, ``uuid``, ``serial``,
    ``vbios_version``, ``board_part_number`` (None when N/A or not printed),
    ``minor_number``, ``persistence_mode``, ``ecc_mode``, ``ecc``, ``retired_pages``,
    ``remapped_rows``), ``sections`` (every section as printed: nested dicts of
    strings; a key printed twice becomes a list, a ``key : value`` with children
    becomes a dict with ``_value``) and ``errors``.
    """
    _check_text(text, 'nvidia-smi -q')
    lines = _lines(text)
    has_log = any(_Q_LOG_RE.match(line.strip()) for line in lines)
    root, errors = _q_tree(lines)
    gpus = []
    for key, node in root.items():
        match = _Q_GPU_RE.match(key)
        if not match:
            continue
        for one in (node if isinstance(node, list) else [node]):
            if isinstance(one, dict):
                gpus.append(_q_gpu(match.group('bus'), one))
    driver = _get(root, 'Driver Version')
    cuda = _get(root, 'CUDA Version')
    if not (has_log or gpus or errors or isinstance(driver, str)):
        raise ParseError('no NVSMI LOG header, driver version or GPU section found')
    return {
        'driver_version': _na(driver) if isinstance(driver, str) else None,
        'cuda_version': _na(cuda) if isinstance(cuda, str) else None,
        'attached_gpus': _int(_get(root, 'Attached GPUs')),
        'gpus': gpus,
        'sections': root,
        'errors': errors,
    }


# --------------------------------------------------------------------------
# nvlink -s / nvlink -e

_NVLINK_GPU_RE = re.compile(r'^GPU\s+(?P<index>\d+):(?:\s+(?P<name>[^(]*?))?\s*(?:\(UUID:\s*(?P<uuid>[^)]*)\))?\s*$')
_NVLINK_STATUS_RE = re.compile(r'^Link\s+(?P<link>\d+):\s*(?P<state>.*?)\s*$')
_NVLINK_SPEED_RE = re.compile(r'^(?P<speed>\d+(?:\.\d+)?)\s*GB/s$')
_NVLINK_COUNTER_RE = re.compile(r'^Link\s+(?P<link>\d+):\s*(?P<name>[^:]+?)\s*:\s*(?P<value>\S+)\s*$')
_COUNTER_KEYS = {'replay errors': 'replay_errors', 'recovery errors': 'recovery_errors', 'crc errors': 'crc_errors'}
# The error counters R570+ drivers print for NVLink 5 (Blackwell) instead of Replay/Recovery/CRC (the names as
# printed, lower case -> key). Traffic (Tx/Rx packets and bytes), the FEC histogram (``FEC Errors - N``) and the
# BER lines stay in ``counters`` only: they are not errors.
NVLINK5_ERROR_KEYS = {
    'malformed packet errors': 'malformed_packet_errors', 'buffer overrun errors': 'buffer_overrun_errors',
    'rx errors': 'rx_errors', 'rx remote errors': 'rx_remote_errors', 'rx general errors': 'rx_general_errors',
    'local link integrity errors': 'local_link_integrity_errors', 'tx discards': 'tx_discards',
    'link recovery successful events': 'link_recovery_successful_events',
    'link recovery failed events': 'link_recovery_failed_events', 'total link recovery events': 'total_link_recovery_events',
    'effective errors': 'effective_errors', 'symbol errors': 'symbol_errors',
}


def _nvlink_gpu(match):
    return {'index': int(match.group('index')), 'name': match.group('name') or None,
            'uuid': (match.group('uuid') or '').strip() or None, 'links': []}


def parse_nvlink_status(text):
    """Parse ``nvidia-smi nvlink -s``: ``GPU 0: NAME (UUID: ...)`` then ``Link N: 26.562 GB/s`` or ``<inactive>``.

    Returns ``gpus`` (``index``, ``name``, ``uuid``, ``links`` of ``link``,
    ``speed_gbs``, ``active``, ``state`` as printed) and ``errors`` (``NVML: ...``
    lines and other failure lines).
    """
    _check_text(text, 'nvidia-smi nvlink -s')
    result = {'gpus': [], 'errors': []}
    current = None
    for raw in _lines(text):
        line = raw.strip()
        if not line:
            continue
        match = _NVLINK_GPU_RE.match(line)
        if match:
            current = _nvlink_gpu(match)
            result['gpus'].append(current)
            continue
        match = _NVLINK_STATUS_RE.match(line)
        if match and current is not None and not _NVLINK_COUNTER_RE.match(line):
            state = match.group('state')
            speed = _NVLINK_SPEED_RE.match(state)
            value = _float(speed.group('speed')) if speed else None
            current['links'].append({'link': int(match.group('link')), 'speed_gbs': value,
                                     'active': value is not None, 'state': state})
            continue
        if _SMI_ERROR_RE.match(line):
            result['errors'].append(line)
    if not result['gpus'] and not result['errors']:
        raise ParseError('no nvidia-smi nvlink GPU or error line found')
    return result


def parse_nvlink_errors(text):
    """Parse ``nvidia-smi nvlink -e``: ``GPU 0: ...`` then ``Link N: <counter>: <value>`` lines.

    Two layouts: the legacy ``Replay Errors``/``Recovery Errors``/``CRC Errors``
    and the R570+ NVLink 5 set (``Rx Errors``, ``Link recovery failed events``,
    ``Effective Errors``... see ``NVLINK5_ERROR_KEYS``). Returns ``gpus``
    (``index``, ``name``, ``uuid``, ``layout``: ``legacy``, ``nvlink5`` or None
    when no error counter was recognised, ``links`` of ``link``,
    ``replay_errors``, ``recovery_errors``, ``crc_errors`` as ints or None,
    ``errors``: every recognised error counter by key, and ``counters``:
    every counter as printed) and ``errors``.
    """
    _check_text(text, 'nvidia-smi nvlink -e')
    result = {'gpus': [], 'errors': []}
    current = None
    links = {}
    for raw in _lines(text):
        line = raw.strip()
        if not line:
            continue
        match = _NVLINK_GPU_RE.match(line)
        if match:
            current = _nvlink_gpu(match)
            current['layout'] = None
            result['gpus'].append(current)
            links = {}
            continue
        match = _NVLINK_COUNTER_RE.match(line)
        if match and current is not None:
            number = int(match.group('link'))
            link = links.get(number)
            if link is None:
                link = {'link': number, 'replay_errors': None, 'recovery_errors': None, 'crc_errors': None, 'errors': {},
                        'counters': {}}
                links[number] = link
                current['links'].append(link)
            value = _int(match.group('value'))
            name = match.group('name')
            link['counters'][name] = value if value is not None else match.group('value')
            key = _COUNTER_KEYS.get(name.lower())
            if key:
                link[key] = value
                link['errors'][key] = value
                current['layout'] = current.get('layout') or 'legacy'
            elif name.lower() in NVLINK5_ERROR_KEYS:
                link['errors'][NVLINK5_ERROR_KEYS[name.lower()]] = value
                current['layout'] = 'nvlink5'
            continue
        if _SMI_ERROR_RE.match(line):
            result['errors'].append(line)
    if not result['gpus'] and not result['errors']:
        raise ParseError('no nvidia-smi nvlink GPU or error line found')
    return result
