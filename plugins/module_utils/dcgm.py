# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for dcgmi output: diag (box table and -j JSON) and discovery -l."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError

_STATUS = {
    'pass': 'pass', 'passed': 'pass', 'fail': 'fail', 'failed': 'fail', 'warn': 'warn', 'warning': 'warn',
    'skip': 'skip', 'skipped': 'skip', 'not run': 'skip', 'notrun': 'skip',
}
_RANK = {'fail': 3, 'warn': 2, 'pass': 1, 'skip': 0}

# Table layout (dcgmi diag without -j, DCGM 1.x to 4.x):
#   +---------------------------+------------------------------------------------+
#   | Diagnostic                | Result                                         |
#   +===========================+================================================+
#   |-----  Metadata  ----------+------------------------------------------------|
#   | DCGM Version              | 3.3.8                                          |
#   |-----  Deployment  --------+------------------------------------------------|
#   | Denylist                  | Pass                                           |
#   | Warning                   | GPU 0 Error using CUDA API cuInit Check DCGM   |
#   |                           | and system logs ...   (wrapped at 45 chars)    |
#   +-----  Hardware  ----------+------------------------------------------------+
#   | GPU Memory                | Fail - All                                     |
#   | SM Stress                 | Pass - GPUs: 0, 1                              |
#   |                           | Fail - GPU: 2                                  |
#   | memory                    | Pass                                           |   (DCGM 4.x)
#   |                           | GPU0: Pass                                     |
_CATEGORY_RE = re.compile(r'^[|+]-{2,}\s+(?P<name>[A-Za-z][\w /]*?)\s+-+[+|]')
_TABLE_ROW_RE = re.compile(r'^\|(?P<left>[^|]*)\|(?P<right>.*?)\|?\s*$')
_RESULT_RE = re.compile(r'^(?P<status>Pass|Fail|Warn|Warning|Skip|Skipped)\b\s*(?:-\s*(?P<who>.*?))?\s*$', re.IGNORECASE)
_GPU_RESULT_RE = re.compile(r'^GPU\s*(?P<id>\d+)\s*:\s*(?P<status>\w+)\s*$', re.IGNORECASE)
_WHO_GPUS_RE = re.compile(r'^GPUs?\s*:\s*(?P<ids>[\d,\s]+)$', re.IGNORECASE)
_DETAIL_LABELS = ('Warning', 'Info', 'Error')
_METADATA_CATEGORY = 'Metadata'
_INFO_WIDTH = 45
_ERROR_LINE_RE = re.compile(r'^(?:Error\b|ERROR\b|Unable to\b|Failed to\b|.*\bcould not\b)', re.IGNORECASE)


def _status(value):
    if not isinstance(value, str):
        return None
    return _STATUS.get(value.strip().lower(), value.strip().lower() or None)


def _worst(statuses):
    known = [status for status in statuses if status in _RANK]
    if not known:
        return None
    return max(known, key=lambda status: _RANK[status])


def _overall(tests, errors):
    """fail > warn > pass; only skipped tests (nothing verified) is warn; no tests: fail if errors else None."""
    statuses = [test['result'] for test in tests]
    if not statuses:
        return 'fail' if errors else None
    worst = _worst(statuses)
    if worst == 'skip' or worst is None:
        return 'warn'
    return worst


def _check_text(text, tool):
    if not isinstance(text, str) or not text.strip():
        raise ParseError('empty %s output' % tool)


def _lines(text):
    return text.replace('\r\n', '\n').replace('\r', '\n').split('\n')


def _gpu_ids(value):
    """GPU ids from ``"0,1,2"``, ``3``, ``[0, 1]`` or ``"GPUs: 0, 1"``, as strings."""
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, int):
        return [str(value)]
    if isinstance(value, list):
        ids = []
        for item in value:
            ids.extend(_gpu_ids(item))
        return ids
    if isinstance(value, str):
        return [part.strip() for part in value.split(',') if part.strip().isdigit()]
    return []


# --------------------------------------------------------------------------
# diag, table


def _new_test(name, category):
    return {'name': name, 'category': category, 'result': None, 'details': [], 'gpu_results': {}}


def _apply_result(test, status, who):
    status = _status(status)
    if who is None or who.strip().lower() in ('', 'all'):
        if who is not None and who.strip().lower() == 'all':
            test['gpu_results']['all'] = status
    else:
        match = _WHO_GPUS_RE.match(who.strip())
        if match:
            for gpu in _gpu_ids(match.group('ids')):
                test['gpu_results'][gpu] = status
    test['result'] = _worst([test['result'], status]) or status


def _info_chunk(cell):
    """Text of one wrapped info cell: the 45 characters after the leading space."""
    chunk = cell[1:] if cell.startswith(' ') else cell
    return chunk[:_INFO_WIDTH] if len(chunk) > _INFO_WIDTH else chunk.rstrip()


def _parse_diag_table(lines):
    result = {'overall': None, 'tests': [], 'metadata': {}, 'errors': []}
    category = None
    test = None
    detail = None
    seen_table = False  # set by the ``Diagnostic | Result`` header or a category line
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        match = _CATEGORY_RE.match(line)
        if match:
            category = match.group('name').strip()
            test, detail = None, None
            seen_table = True
            continue
        if line.startswith('+') and set(line) <= set('+-=| '):
            continue
        row = _TABLE_ROW_RE.match(line)
        if not row:
            if _ERROR_LINE_RE.match(line):
                result['errors'].append(line)
            continue
        if not seen_table and not (row.group('left').strip() == 'Diagnostic' and row.group('right').strip() == 'Result'):
            continue
        left = row.group('left').strip()
        right_raw = row.group('right')
        right = right_raw.strip()
        if left == 'Diagnostic' and right == 'Result':
            seen_table = True
            continue
        if category == _METADATA_CATEGORY and left:
            result['metadata'][left] = right
            continue
        if left in _DETAIL_LABELS:
            if test is not None:
                detail = [left, [_info_chunk(right_raw)]]
                test['details'].append(detail)
            continue
        if left:
            status = _RESULT_RE.match(right)
            test = _new_test(left, category)
            detail = None
            result['tests'].append(test)
            if status:
                _apply_result(test, status.group('status'), status.group('who'))
            else:
                test['result'] = _status(right)
            continue
        if test is None:
            continue
        gpu = _GPU_RESULT_RE.match(right)
        status = _RESULT_RE.match(right)
        if gpu and detail is None:
            test['gpu_results'][gpu.group('id')] = _status(gpu.group('status'))
            test['result'] = _worst([test['result'], _status(gpu.group('status'))]) or test['result']
        elif status and detail is None:
            _apply_result(test, status.group('status'), status.group('who'))
        elif detail is not None:
            detail[1].append(_info_chunk(right_raw))
    for test in result['tests']:
        test['details'] = ['%s: %s' % (label, ''.join(chunks).strip()) for label, chunks in test['details']]
    result['seen_table'] = seen_table
    return result


# --------------------------------------------------------------------------
# diag, JSON


def _find_json(text):
    """(object, start, end) of the first JSON object in ``text`` (garbage around it allowed), or None."""
    decoder = json.JSONDecoder()
    start = text.find('{')
    attempts = 0
    while start != -1 and attempts < 64:
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            value = None
        except RecursionError:  # pragma: no cover - absurdly deep nesting
            value = None
        if isinstance(value, dict):
            return value, start, end
        attempts += 1
        start = text.find('{', start + 1)
    return None


def _texts(value, label):
    """Warning/info entries as ``Label: text`` strings (strings, lists, or {"warning": ...} dicts)."""
    out = []
    if isinstance(value, str):
        if value.strip():
            out.append('%s: %s' % (label, value.strip()))
    elif isinstance(value, list):
        for item in value:
            out.extend(_texts(item, label))
    elif isinstance(value, dict):
        text = value.get('warning', value.get('info', value.get('message', value.get('msg'))))
        out.extend(_texts(text, label))
    return out


def _json_test(test, category):
    name = test.get('name', test.get('test_name'))
    parsed = _new_test(name if isinstance(name, str) else None, category)
    statuses = []
    results = test.get('results')
    for entry in results if isinstance(results, list) else []:
        if not isinstance(entry, dict):
            continue
        status = _status(entry.get('status'))
        statuses.append(status)
        if entry.get('entity_group') not in (None, 'GPU'):
            ids = []
        else:
            ids = _gpu_ids(entry.get('gpu_ids', entry.get('gpu_id', entry.get('entity_id'))))
        for gpu in ids:
            parsed['gpu_results'][gpu] = status
        parsed['details'].extend(_texts(entry.get('warnings'), 'Warning'))
        parsed['details'].extend(_texts(entry.get('info'), 'Info'))
    summary = test.get('test_summary')
    summary_status = _status(summary.get('status')) if isinstance(summary, dict) else None
    parsed['result'] = summary_status or _worst(statuses) or (statuses[0] if statuses else None)
    if isinstance(summary, dict):
        parsed['details'].extend(_texts(summary.get('warnings'), 'Warning'))
        parsed['details'].extend(_texts(summary.get('info'), 'Info'))
    return parsed


def _parse_diag_json(data):
    root = data
    for key in ('DCGM GPU Diagnostic', 'DCGM Diagnostic'):
        if isinstance(data.get(key), dict):
            root = data[key]
            break
    categories = root.get('test_categories')
    if not isinstance(categories, list):
        return None
    result = {'overall': None, 'tests': [], 'metadata': {}, 'errors': []}
    for category in categories:
        if not isinstance(category, dict):
            continue
        name = category.get('category')
        tests = category.get('tests')
        for test in tests if isinstance(tests, list) else []:
            if isinstance(test, dict):
                result['tests'].append(_json_test(test, name if isinstance(name, str) else None))
    for source in (root, data.get('metadata')):
        if isinstance(source, dict):
            for key, value in source.items():
                if isinstance(value, (str, int, float)) and not isinstance(value, bool) and key != 'test_categories':
                    result['metadata'][key] = value
    for key in ('runtime_error', 'error'):
        if isinstance(root.get(key), str) and root[key].strip():
            result['errors'].append(root[key].strip())
    result['errors'].extend(_texts(root.get('errors'), 'Error'))
    return result


def parse_dcgmi_diag(text):
    """Parse ``dcgmi diag -r N`` output, as the box table or as ``-j`` JSON.

    JSON shapes: ``{"DCGM GPU Diagnostic": {"test_categories": [...]}}`` (DCGM 1.x-3.x,
    ``gpu_ids`` as ``"0,1"`` or an int) and ``{"DCGM Diagnostic": {...}}`` (DCGM 3.3+/4.x,
    ``entity_group``/``entity_id`` results and ``test_summary``); ``null`` entries and
    garbage lines around the JSON are skipped.

    Returns ``overall`` (``fail`` > ``warn`` > ``pass``; only skipped tests give
    ``warn``; None without tests), ``tests`` (``name``, ``category``, ``result``
    lowercase, ``details`` list of ``Warning: ...``/``Info: ...`` strings,
    ``gpu_results`` id -> result, ``all`` for ``Pass - All``), ``metadata``
    (DCGM/driver version as printed) and ``errors``.
    """
    _check_text(text, 'dcgmi diag')
    found = _find_json(text) if '{' in text else None
    if found is not None:
        data, start, end = found
        result = _parse_diag_json(data)
        if result is not None:
            outside = _lines(text[:start]) + _lines(text[end:])
            result['errors'] = [line.strip() for line in outside if _ERROR_LINE_RE.match(line.strip())] + result['errors']
            result['format'] = 'json'
            result['overall'] = _overall(result['tests'], result['errors'])
            return result
    result = _parse_diag_table(_lines(text))
    seen_table = result.pop('seen_table')
    if not result['tests'] and not result['errors'] and not (seen_table and result['metadata']):
        raise ParseError('no dcgmi diag table or JSON found')
    result['format'] = 'table'
    result['overall'] = _overall(result['tests'], result['errors'])
    return result


# --------------------------------------------------------------------------
# discovery -l

_FOUND_RE = re.compile(r'^(?P<count>\d+)\s+GPUs?\s+found', re.IGNORECASE)
_TABLE_HEADER_RE = re.compile(r'^\|\s*(?P<kind>GPU|Switch|CPU|Link|NvSwitch|CX)\s*ID\s*\|', re.IGNORECASE)
_DISCOVERY_FIELDS = {'name': 'name', 'pci bus id': 'pci_bus_id', 'device uuid': 'uuid'}


def parse_dcgmi_discovery(text):
    """Parse ``dcgmi discovery -l``: the ``| GPU ID | Device Information |`` box table.

    Each GPU is a row ``| 0 | Name: ... |`` followed by ``|  | PCI Bus ID: ... |``
    and ``|  | Device UUID: ... |`` rows.  Tables of NvSwitches/CPUs that newer
    DCGM prints after it are ignored.  Returns a list of ``id``, ``name``,
    ``pci_bus_id``, ``uuid`` (None where not printed); ``0 GPUs found.`` gives [].
    ParseError when neither a GPU table nor a ``N GPUs found`` line is there
    (e.g. only ``Error: unable to establish a connection``).
    """
    _check_text(text, 'dcgmi discovery -l')
    gpus = []
    current = None
    in_gpu_table = False
    found = None
    for raw in _lines(text):
        line = raw.strip()
        match = _FOUND_RE.match(line)
        if match:
            found = int(match.group('count'))
            continue
        header = _TABLE_HEADER_RE.match(line)
        if header:
            in_gpu_table = header.group('kind').upper() == 'GPU'
            current = None
            continue
        row = _TABLE_ROW_RE.match(line)
        if not in_gpu_table or not row:
            continue
        left, right = row.group('left').strip(), row.group('right').strip()
        if left.isdigit():
            current = {'id': int(left), 'name': None, 'pci_bus_id': None, 'uuid': None}
            gpus.append(current)
        elif left:
            current = None
            continue
        if current is None or ':' not in right:
            continue
        key, value = right.split(':', 1)
        field = _DISCOVERY_FIELDS.get(key.strip().lower())
        if field:
            current[field] = value.strip() or None
    if not gpus and found is None:
        raise ParseError('no dcgmi discovery GPU table found')
    return gpus


# --------------------------------------------------------------------------
# health -c

# Layout (dcgmi/Health.cpp CheckWatches through DcgmiOutputTree(28, 60), DCGM 2.x to 4.x):
#   +---------------------------+----------------------------------------------------------+
#   | Health Monitor Report                                                                |
#   +===========================+==========================================================+
#   | Overall Health            | Failure                                                  |
#   | GPU                       |                                                          |
#   | -> 2                      | Failure                                                  |
#   |    -> Errors              |                                                          |
#   |       -> Memory system    | Failure                                                  |
#   |                           | <message wrapped at 54 characters>                       |
#   +---------------------------+----------------------------------------------------------+
# One ``-> <id>`` block per entity with incidents, one ``-> <System> system`` row per watched
# system with incidents; several incidents of one system share its row, joined by ``, ``.
# ``-j``: jsoncpp of the same tree, {"header": [...], "body": {"Overall Health": {"value": ...},
# "GPU": {"children": {"2": {"value": ..., "children": {"Errors": {"children": {"Memory system":
# {"value": ..., "overflow": [chunks]}}}}}}}}}.
_HEALTH_HEADER = 'Health Monitor Report'
_OVERALL_LABEL = 'Overall Health'
_HEALTH_ROW_RE = re.compile(r'^\|(?P<left>[^|]*)\|(?P<right>.*)\|\s*$')
_HEALTH_ARROW_RE = re.compile(r'^->\s*(?P<label>.*)$')
_SYSTEM_SUFFIX_RE = re.compile(r'\s+system$', re.IGNORECASE)


def _health_value(value):
    """``Healthy``/``Warning``/``Failure`` (any case) as healthy/warning/failure; other text lowercased; None if blank."""
    if not isinstance(value, str) or not value.strip():
        return None
    return ' '.join(value.split()).lower()


def _system_name(label):
    """``PCIe system`` -> ``PCIe``; ``Driver`` and ``Internal error`` as printed."""
    return _SYSTEM_SUFFIX_RE.sub('', label.strip())


def _health_entity(group, entity_id, health):
    entity = {'id': entity_id, 'health': _health_value(health), 'incidents': []}
    if group != 'GPU':
        entity['group'] = group
    return entity


def _entity_id(text):
    text = text.strip()
    return int(text) if text.isdigit() else text


def _finish_incident(incident, chunks):
    if incident is not None:
        incident['message'] = ' '.join(chunk.strip() for chunk in chunks if chunk.strip()) or None


def _parse_health_table(lines):
    """(seen, overall, entities, errors) from the tree layout."""
    seen = False
    overall = None
    entities = []
    errors = []
    group = None
    entity = None
    incident = None
    chunks = []
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        if line.startswith('+') and set(line) <= set('+-=| '):
            continue
        if line.startswith('|') and line.strip('|').strip() == _HEALTH_HEADER:
            seen = True
            continue
        row = _HEALTH_ROW_RE.match(line)
        if not row:
            if _ERROR_LINE_RE.match(line):
                errors.append(line)
            continue
        left, right = row.group('left').strip(), row.group('right').strip()
        if not seen:
            continue
        if left == _OVERALL_LABEL:
            overall = _health_value(right)
            continue
        if not left:
            if incident is not None:
                chunks.append(right)
            continue
        arrow = _HEALTH_ARROW_RE.match(left)
        if arrow is None:
            _finish_incident(incident, chunks)
            group, entity, incident, chunks = left, None, None, []
            continue
        label = arrow.group('label').strip()
        if label == 'Errors':
            continue
        if group is not None and label.isdigit():
            _finish_incident(incident, chunks)
            entity = _health_entity(group, _entity_id(label), right)
            entities.append(entity)
            incident, chunks = None, []
            continue
        if entity is None:
            continue
        _finish_incident(incident, chunks)
        incident = {'system': _system_name(label), 'health': _health_value(right), 'message': None}
        chunks = []
        entity['incidents'].append(incident)
    _finish_incident(incident, chunks)
    return seen, overall, entities, errors


def _node_value(node):
    return node.get('value') if isinstance(node, dict) and isinstance(node.get('value'), str) else None


def _node_children(node):
    children = node.get('children') if isinstance(node, dict) else None
    return children if isinstance(children, dict) else {}


def _parse_health_json(data):
    """(overall, entities) of the ``-j`` document, or None when it is not a health report."""
    header = data.get('header')
    body = data.get('body')
    if not isinstance(body, dict) or _OVERALL_LABEL not in body:
        return None
    if isinstance(header, list) and header and _HEALTH_HEADER not in header:
        return None
    entities = []
    for group, group_node in body.items():
        if group == _OVERALL_LABEL:
            continue
        for entity_id, entity_node in _node_children(group_node).items():
            entity = _health_entity(group, _entity_id(entity_id), _node_value(entity_node))
            for system, system_node in _node_children(_node_children(entity_node).get('Errors')).items():
                overflow = system_node.get('overflow') if isinstance(system_node, dict) else None
                chunks = [chunk for chunk in overflow if isinstance(chunk, str)] if isinstance(overflow, list) else []
                entity['incidents'].append({'system': _system_name(system), 'health': _health_value(_node_value(system_node)),
                                            'message': ' '.join(chunk.strip() for chunk in chunks if chunk.strip()) or None})
            entities.append(entity)
    return _health_value(_node_value(body[_OVERALL_LABEL])), entities


def parse_dcgmi_health(text):
    """Parse ``dcgmi health -c`` (check), as the ``Health Monitor Report`` box or as ``-j`` JSON.

    Returns ``overall`` (``healthy``, ``warning``, ``failure``: DCGM's ``Healthy``/``Warning``/
    ``Failure`` lowercased; None when no report was printed), ``gpus`` (GPU entities with
    incidents, in the printed order: ``id`` int, ``health``, ``incidents`` list of ``system``
    as printed without `` system`` (``PCIe``, ``NVLINK``, ``Memory``, ``InfoROM``, ``Thermal``,
    ``Power``, ``Driver``, ...), ``health`` and ``message``: the wrapped lines joined by single
    spaces; DCGM joins several incidents of one system into one row with ``, ``), ``others``
    (the same for non-GPU entities, e.g. NvSwitch, with ``group``), ``errors`` (dcgmi's own lines,
    e.g. ``Error: Health watches not enabled. Please enable watches.`` when ``dcgmi health -s``
    was never run, or the host engine connection errors) and ``format`` (``table``/``json``/None).
    A healthy report has only the ``Overall Health`` row: ``gpus`` is []. ParseError when the
    text has neither a report nor an error line.
    """
    _check_text(text, 'dcgmi health')
    found = _find_json(text) if '{' in text else None
    if found is not None:
        data, start, end = found
        parsed = _parse_health_json(data)
        if parsed is not None:
            outside = _lines(text[:start]) + _lines(text[end:])
            overall, entities = parsed
            return {'overall': overall, 'gpus': [entity for entity in entities if 'group' not in entity],
                    'others': [entity for entity in entities if 'group' in entity],
                    'errors': [line.strip() for line in outside if _ERROR_LINE_RE.match(line.strip())], 'format': 'json'}
    seen, overall, entities, errors = _parse_health_table(_lines(text))
    if not seen and not errors:
        raise ParseError('no dcgmi health report or error line found')
    if seen and overall is None and not entities and not errors:
        raise ParseError('dcgmi health report without an Overall Health row')
    return {'overall': overall, 'gpus': [entity for entity in entities if 'group' not in entity],
            'others': [entity for entity in entities if 'group' in entity], 'errors': errors, 'format': 'table' if seen else None}
