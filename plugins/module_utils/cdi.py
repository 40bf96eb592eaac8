# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The CDI check of the container_toolkit role: parsers for `nvidia-ctk cdi list`, CDI spec files and
`nvidia-smi -q` (through module_utils/nvidia_smi.py), and the decision (cdi_problems) that compares what
the specs name with the live GPUs and /dev/nvidia* nodes. Pure functions; plugins/modules/cdi_info.py gathers."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError

try:
    import yaml as _yaml
    HAS_YAML = True
except ImportError:  # a node without python3-yaml: the block-style subset reader below
    _yaml = None
    HAS_YAML = False

# The CDI library's default spec directories, lowest priority first (tags.cncf.io/container-device-interface
# DefaultSpecDirs): a device name defined in both wins from the later directory, silently; two files of one
# directory defining the same name are a conflict that removes the name.
DEFAULT_SPEC_DIRS = ('/etc/cdi', '/var/run/cdi')

# nvidia-ctk logs through logrus: `INFO[0000] text` on a terminal, `time="..." level=info msg="text"` otherwise.
_TTY_LOG_RE = re.compile(r'^(?P<level>INFO|WARN|WARNING|ERRO|ERROR|DEBU|FATA)\[\d+\]\s?(?P<msg>.*?)\s*$')
_PLAIN_LOG_RE = re.compile(r'^time="[^"]*"\s+level=(?P<level>\w+)\s+msg=(?P<msg>"(?:[^"\\]|\\.)*"|\S+)')
_FOUND_RE = re.compile(r'^Found (?P<count>\d+) CDI devices?$')
_DEVICE_RE = re.compile(r'^(?P<kind>[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*)'
                        r'=(?P<name>[A-Za-z0-9][A-Za-z0-9_.:-]*)$')
_LEVELS = {'INFO': 'info', 'WARN': 'warning', 'WARNING': 'warning', 'ERRO': 'error', 'ERROR': 'error',
           'DEBU': 'debug', 'FATA': 'fatal'}
# A library the driver installs, mounted by nvidia-ctk's spec under its full version: what driver the spec was for.
_DRIVER_LIB_RE = re.compile(r'/lib(?:nvidia-ml|cuda)\.so\.(?P<version>\d+\.\d+(?:\.\d+)?)$')
_LIVE_NODE_RE = re.compile(r'^nvidia(?P<minor>\d+)$')


def _log_record(line):
    match = _TTY_LOG_RE.match(line)
    if match:
        return _LEVELS[match.group('level')], match.group('msg')
    match = _PLAIN_LOG_RE.match(line)
    if match:
        msg = match.group('msg')
        if msg.startswith('"'):
            msg = json.loads(msg)
        return _LEVELS.get(match.group('level').upper(), match.group('level')), msg
    return None


def parse_cdi_list(stdout, stderr=''):
    """`nvidia-ctk cdi list`: device names on stdout, the count and registry errors logged on stderr (a terminal
    capture has both in one text: pass it as ``stdout``).

    Returns ``{'count': int or None, 'devices': ['nvidia.com/gpu=0', ...], 'warnings': [text], 'errors': [text]}``.
    A warning may span lines (the CDI library joins its errors with newlines; logrus prints them as they are on a
    terminal): each following line that is neither a log record nor a device name belongs to it.
    """
    devices, warnings, errors, count = [], [], [], None
    current = None
    lines = (stderr or '').splitlines() + (stdout or '').splitlines()
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text:
            continue
        record = _log_record(text)
        if record is None:
            if _DEVICE_RE.match(text):
                devices.append(text)
                current = None
            elif current is not None:
                current.append(text)
            else:
                raise ParseError('neither a CDI device name nor an nvidia-ctk log line', number, line)
            continue
        level, msg = record
        current = None
        found = _FOUND_RE.match(msg.strip())
        if found:
            count = int(found.group('count'))
        elif level in ('warning', 'error', 'fatal'):
            current = msg.splitlines()
            (warnings if level == 'warning' else errors).append(current)
    if count is None and not devices and not warnings and not errors and any(line.strip() for line in lines):
        raise ParseError('no "Found N CDI devices" line and no device names: not nvidia-ctk cdi list output')
    return {'count': count, 'devices': devices, 'warnings': ['\n'.join(w) for w in warnings],
            'errors': ['\n'.join(e) for e in errors]}


# ------------------------------------------------------------------ CDI spec files
def _scalar(text):
    text = text.strip()
    if text in ('', '~', 'null'):
        return None
    if text.startswith('"'):
        return json.loads(text)
    if text.startswith("'"):
        return text[1:-1].replace("''", "'")
    if text.startswith('[') and text.endswith(']'):
        inner = text[1:-1].strip()
        return [_scalar(item) for item in inner.split(',')] if inner else []
    if text == '{}':
        return {}
    return text


def _split_key(content):
    """'key: value' -> (key, value) or None; a trailing 'key:' has value ''."""
    match = re.match(r'^(?P<key>"(?:[^"\\]|\\.)*"|\'[^\']*\'|[^\s"\'#][^:]*?)\s*:(?:\s+(?P<value>.*)|$)', content)
    if not match:
        return None
    return _scalar(match.group('key')), (match.group('value') or '').strip()


def _lines(text):
    out = []
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if not stripped or stripped.startswith('#') or stripped in ('---', '...'):
            continue
        if '\t' in raw[:len(raw) - len(raw.lstrip())]:
            raise ParseError('a tab in the indentation', number, raw)
        out.append([len(raw) - len(raw.lstrip(' ')), stripped, number, raw])
    return out


def _block(lines, pos, indent):
    if lines[pos][1].startswith('- ') or lines[pos][1] == '-':
        return _sequence(lines, pos, indent)
    return _mapping(lines, pos, indent)


def _value_after(lines, pos, indent, value):
    """The value of a key (or a '- ' item) whose text after the colon is ``value``; returns (value, next pos)."""
    if value:
        if value[0] in '|>&*!':
            raise ParseError('a YAML feature the CDI reader does not handle', lines[pos][2], lines[pos][3])
        return _scalar(value), pos + 1
    nxt = pos + 1
    if nxt < len(lines) and (lines[nxt][0] > indent or (lines[nxt][0] == indent and lines[nxt][1].startswith('-'))):
        return _block(lines, nxt, lines[nxt][0])
    return None, nxt


def _mapping(lines, pos, indent):
    result = {}
    while pos < len(lines) and lines[pos][0] == indent and not lines[pos][1].startswith('- '):
        pair = _split_key(lines[pos][1])
        if pair is None:
            raise ParseError('not a "key: value" line', lines[pos][2], lines[pos][3])
        key, value = pair
        result[key], pos = _value_after(lines, pos, indent, value)
    if pos < len(lines) and lines[pos][0] > indent:
        raise ParseError('unexpected indentation', lines[pos][2], lines[pos][3])
    return result, pos


def _sequence(lines, pos, indent):
    result = []
    while pos < len(lines) and lines[pos][0] == indent and (lines[pos][1].startswith('- ') or lines[pos][1] == '-'):
        rest = lines[pos][1][1:].strip()
        if rest and _split_key(rest) is not None and not rest.startswith(('"', "'", '[')):
            # "- key: value": a mapping whose keys sit two columns right of the dash
            lines[pos] = [indent + 2, rest, lines[pos][2], lines[pos][3]]
            item, pos = _mapping(lines, pos, indent + 2)
        else:
            item, pos = _value_after(lines, pos, indent, rest)
        result.append(item)
    return result, pos


def read_yaml_subset(text):
    """The block-style YAML that nvidia-ctk (Go's yaml through sigs.k8s.io/yaml) writes: mappings, sequences
    (also at their key's indentation), plain and quoted scalars, flow lists of scalars. Scalars stay strings."""
    lines = _lines(text)
    if not lines:
        return None
    value, pos = _block(lines, 0, lines[0][0])
    if pos != len(lines):
        raise ParseError('text after the document', lines[pos][2], lines[pos][3])
    return value


def _load(text, use_yaml):
    stripped = text.lstrip()
    if stripped.startswith('{'):
        return json.loads(text)
    if use_yaml and HAS_YAML:
        try:
            return _yaml.safe_load(text)
        except _yaml.YAMLError as exc:
            raise ParseError('not YAML: %s' % str(exc).splitlines()[0])
    return read_yaml_subset(text)


def _nodes(edits):
    nodes = []
    for node in (edits or {}).get('deviceNodes') or []:
        if isinstance(node, dict) and node.get('path'):
            nodes.append(str(node.get('hostPath') or node['path']))
    return nodes


def parse_spec(text, path, use_yaml=True):
    """One CDI spec file (YAML or JSON) -> ``{'path', 'kind', 'devices': [{'name', 'nodes'}], 'nodes' (the spec-wide
    containerEdits device nodes), 'driver_version' (from the driver libraries it mounts; None when none)}``."""
    try:
        data = _load(text, use_yaml)
    except ValueError as exc:
        raise ParseError('%s: %s' % (path, exc))
    if not isinstance(data, dict) or 'kind' not in data or 'cdiVersion' not in data:
        raise ParseError('%s: not a CDI spec (no cdiVersion and kind)' % path)
    devices = []
    for device in data.get('devices') or []:
        if not isinstance(device, dict) or device.get('name') is None:
            raise ParseError('%s: a device without a name' % path)
        devices.append({'name': str(device['name']), 'nodes': _nodes(device.get('containerEdits'))})
    versions = set()
    edits = data.get('containerEdits') or {}
    for mount in edits.get('mounts') or []:
        match = _DRIVER_LIB_RE.search(str((mount or {}).get('hostPath') or ''))
        if match:
            versions.add(match.group('version'))
    return {'path': path, 'kind': str(data['kind']), 'devices': devices, 'nodes': _nodes(edits),
            'driver_version': sorted(versions)[-1] if versions else None}


def gpus_from_q(parsed):
    """The GPUs of parse_nvidia_smi_q (module_utils/nvidia_smi.py) as the check compares them: ``[{'index' (NVML's:
    the order -q prints them), 'uuid', 'minor' (the N of /dev/nvidiaN), 'driver_version'}]``."""
    gpus = []
    for index, gpu in enumerate(parsed.get('gpus') or []):
        if gpu.get('uuid') is None or gpu.get('minor_number') is None:
            raise ParseError('nvidia-smi -q: GPU %s without a GPU UUID or Minor Number' % gpu.get('pci_bus_id'))
        gpus.append({'index': index, 'uuid': gpu['uuid'], 'minor': gpu['minor_number'],
                     'driver_version': parsed.get('driver_version')})
    return gpus


def live_gpu_nodes(names, dev_dir='/dev'):
    """The /dev/nvidiaN among the names of a /dev listing, sorted by minor number."""
    minors = sorted(int(m.group('minor')) for m in (_LIVE_NODE_RE.match(name) for name in names) if m)
    return ['%s/nvidia%d' % (dev_dir.rstrip('/'), minor) for minor in minors]


# ------------------------------------------------------------------ the decision
def _problem(check, message, refresh):
    return {'check': check, 'message': message, 'refresh': refresh}


def _same_dir(path_a, path_b):
    return path_a.rsplit('/', 1)[0] == path_b.rsplit('/', 1)[0]


def cdi_problems(observed, kind='nvidia.com/gpu', managed_spec='/var/run/cdi/nvidia.yaml'):
    """Compare what the CDI specs name with the live GPUs and device nodes.

    ``observed``: ``listed`` (parse_cdi_list of `nvidia-ctk cdi list`), ``specs`` (parse_spec of every spec file, in
    the order the CDI library reads them: directories by priority, files by name), ``spec_errors`` ([{path,
    message}] of files that did not parse), ``gpus`` (gpus_from_q, or None when nvidia-smi failed), ``gpu_error``
    (its message), ``live_nodes`` (live_gpu_nodes), ``existing`` ({path: bool} for every device node a spec names).

    Returns ``{'problems': [{check, message, refresh}], 'refresh_needed': bool}``. ``refresh`` is true where
    regenerating ``managed_spec`` (the spec the node's toolkit writes) fixes the problem.
    """
    problems = []
    listed = observed.get('listed') or {}
    specs = [spec for spec in observed.get('specs') or [] if spec['kind'] == kind]
    gpus = observed.get('gpus')
    live_nodes = list(observed.get('live_nodes') or [])
    existing = observed.get('existing') or {}
    managed_present = any(spec['path'] == managed_spec for spec in specs)

    for error in observed.get('spec_errors') or []:
        problems.append(_problem('spec-unreadable', '%s cannot be read as a CDI spec: %s' % (
            error['path'], error['message']), error['path'] == managed_spec))
    for warning in listed.get('warnings', []) + listed.get('errors', []):
        for line in warning.splitlines():
            if 'conflicting device' in line:
                problems.append(_problem('duplicate', 'nvidia-ctk cdi list: %s: the CDI library drops that device '
                                         'name; remove one of the files' % line.strip().split(': ', 1)[-1], False))
    if observed.get('gpu_error'):
        problems.append(_problem('gpus-unreadable', 'nvidia-smi cannot read the GPUs, so the specs cannot be '
                                 'compared with them: %s' % observed['gpu_error'], False))
    if not specs:
        problems.append(_problem('no-spec', 'no CDI spec defines %s devices (looked in %s); containers cannot '
                                 'name the GPUs' % (kind, ', '.join(observed.get('spec_dirs') or DEFAULT_SPEC_DIRS)),
                                 True))
        return _result(problems)

    # Duplicate names across spec files: across directories the later one silently wins and the earlier file's
    # other names stay visible (a static spec left beside the refreshed one); within a directory they conflict.
    owners = {}
    for spec in specs:
        for device in spec['devices']:
            owners.setdefault(device['name'], []).append(spec['path'])
    duplicated = {}
    for name, paths in owners.items():
        if len(set(paths)) > 1:
            duplicated.setdefault(tuple(sorted(set(paths))), []).append(name)
    for paths, names in sorted(duplicated.items()):
        where = 'in one directory (a conflict: the CDI library drops these names)' if _same_dir(*paths[:2]) \
            else '(%s silently wins)' % paths[-1]
        shown = sorted(names, key=_name_key)
        problems.append(_problem('duplicate', '%s=%s %s defined by %s %s; keep one spec (remove the static one)' % (
            kind, ','.join(shown[:4]) + (',...' if len(shown) > 4 else ''), 'is' if len(shown) == 1 else 'are',
            ' and '.join(paths), where), False))

    # Device nodes a spec names that do not exist (containers naming them fail to start).
    for spec in specs:
        named = spec['nodes'] + [node for device in spec['devices'] for node in device['nodes']]
        for node in sorted(set(named), key=_node_key):
            if existing.get(node) is False:
                users = sorted((d['name'] for d in spec['devices'] if node in d['nodes']), key=_name_key)
                problems.append(_problem('node-missing', '%s names %s%s, which does not exist' % (
                    spec['path'], node, ' (device %s)' % ', '.join(users) if users else ''),
                    spec['path'] == managed_spec or not managed_present))

    # What the CDI library resolves: the highest-priority definition of each name.
    resolved = {}
    for spec in specs:
        for device in spec['devices']:
            resolved[device['name']] = (device, spec['path'])
    listed_names = set(name.split('=', 1)[1] for name in listed.get('devices', []) if name.startswith(kind + '='))

    for node in live_nodes:
        if not any(node in device['nodes'] for device, _path in resolved.values()):
            problems.append(_problem('node-unnamed', '%s exists but no %s device of the specs gives it' % (node, kind),
                                     True))
    if 'all' in resolved:
        all_nodes = set(node for node in resolved['all'][0]['nodes'] if _LIVE_NODE_RE.match(node.rsplit('/', 1)[-1]))
        if live_nodes and all_nodes != set(live_nodes):
            problems.append(_problem('all-stale', '%s=all (%s) gives %s; the live GPU nodes are %s' % (
                kind, resolved['all'][1], ' '.join(sorted(all_nodes, key=_node_key)) or 'none', ' '.join(live_nodes)),
                True))

    dev_dir = live_nodes[0].rsplit('/', 1)[0] if live_nodes else '/dev'
    for gpu in gpus or []:
        node = '%s/nvidia%d' % (dev_dir, gpu['minor'])
        names = [str(gpu['index']), gpu['uuid']]
        named = [name for name in names if name in listed_names] if listed_names else \
            [name for name in names if name in resolved]
        if not named:
            problems.append(_problem('gpu-unnamed', 'GPU %d (%s, %s) is not named by %s: nvidia-ctk cdi list has '
                                     'neither %s=%d nor %s=%s' % (gpu['index'], gpu['uuid'], node,
                                                                  'any CDI spec', kind, gpu['index'], kind,
                                                                  gpu['uuid']), True))
            continue
        for name in named:
            device, path = resolved.get(name, (None, None))
            if device is not None and node not in device['nodes']:
                problems.append(_problem('gpu-stale', '%s=%s (%s) gives %s, but GPU %d (%s) is %s' % (
                    kind, name, path, ' '.join(device['nodes']) or 'no device node', gpu['index'], gpu['uuid'], node),
                    True))
    live_driver = (gpus or [{}])[0].get('driver_version') if gpus else None
    for spec in specs:
        if live_driver and spec['driver_version'] and spec['driver_version'] != live_driver:
            problems.append(_problem('driver-stale', '%s was generated for driver %s; the driver now is %s' % (
                spec['path'], spec['driver_version'], live_driver),
                spec['path'] == managed_spec or not managed_present))
    return _result(problems)


def _name_key(name):
    return (0, int(name), '') if name.isdigit() else (1, 0, name)


def _node_key(node):
    match = re.search(r'(\d+)$', node)
    return (re.sub(r'\d+$', '', node), int(match.group(1)) if match else -1)


_ORDER = ('spec-unreadable', 'gpus-unreadable', 'no-spec', 'duplicate', 'node-missing', 'node-unnamed', 'all-stale',
          'gpu-unnamed', 'gpu-stale', 'driver-stale')


def _result(problems):
    seen, unique = set(), []
    for problem in problems:
        if problem['message'] not in seen:
            seen.add(problem['message'])
            unique.append(problem)
    unique.sort(key=lambda p: _ORDER.index(p['check']))
    return {'problems': unique, 'refresh_needed': any(p['refresh'] for p in unique)}
