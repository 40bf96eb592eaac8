# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm text: the ``scontrol show node`` parser and Slurm hostlist expressions."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError

# ---------------------------------------------------------------------------
# scontrol show node
# ---------------------------------------------------------------------------
#
# Layout (Slurm 22.05 src/api/node_info.c, slurm_sprint_node_table): each node
# is printed as ``NodeName=x Arch=.. CoresPerSocket=..`` followed by lines that
# begin with three spaces, and a blank line after the node.  With ``-o`` the
# same fields are joined by single spaces on one line per node.  ``OS=`` and
# ``Reason=`` are free text; a multi-line Reason continues on lines indented by
# ten spaces.  scontrol prints ``No nodes in the system`` when there is no node
# and ``Node <name> not found`` for an unknown node name.

_KEY_TOKEN = re.compile(r'(?:(?<=\s)|^)([A-Z][A-Za-z0-9_./]*)=')
# Free-text fields: in the multi-line layout they own their whole line.
_WHOLE_LINE_KEYS = ('OS', 'Reason', 'Comment', 'Extra')
# Reason/Comment/Extra may contain ``Word=`` text; on a one-liner only these
# keys (the ones Slurm prints after them) end such a value.
_AFTER_FREE_TEXT = {
    'Reason': ('Comment', 'Extra', 'InstanceId', 'InstanceType', 'ReservationName'),
    'Comment': ('Extra', 'InstanceId', 'InstanceType', 'ReservationName'),
    'Extra': ('InstanceId', 'InstanceType', 'ReservationName'),
}
_REASON_CONTINUATION = ' ' * 10
_NOT_FOUND = re.compile(r'^Node (\S+) not found$')
_NO_NODES = 'No nodes in the system'
_TOOL_ERROR = re.compile(r'^(scontrol: error: |slurm_load_node error: |slurm_load_node_single error: |scontrol: fatal: )')


class ScontrolError(ParseError):
    """scontrol printed an error instead of nodes (``Node x not found``, ``slurm_load_node error: ...``).

    A subclass of ParseError so callers that only catch ParseError still see it;
    ``errors`` holds the lines scontrol printed, ``nodes`` what was parsed besides.
    """

    def __init__(self, errors, nodes=None):
        self.errors = list(errors)
        self.nodes = list(nodes or [])
        super(ScontrolError, self).__init__('scontrol reported: %s' % '; '.join(self.errors))


def split_fields(text, line_number, raw_line, free_text=None):
    """Split scontrol's ``Key=value Key2=value two`` into ordered (key, value) pairs.

    ``free_text``: key -> the keys that may end its value (a free-text value may contain ``Word=``); default the
    node record's (Reason, Comment, Extra). ``scontrol show reservation`` passes its own.
    """
    free_text = _AFTER_FREE_TEXT if free_text is None else free_text
    matches = list(_KEY_TOKEN.finditer(text))
    if not matches or text[:matches[0].start()].strip():
        raise ParseError('expected Key=Value fields', line_number, raw_line)
    fields = []
    index = 0
    while index < len(matches):
        match = matches[index]
        key = match.group(1)
        stops = free_text.get(key)
        nxt = index + 1
        if stops is not None:
            while nxt < len(matches) and matches[nxt].group(1) not in stops:
                nxt += 1
        end = matches[nxt].start() if nxt < len(matches) else len(text)
        fields.append((key, text[match.end():end].strip()))
        index = nxt
    return fields


def _add(node, key, value, line_number, raw_line):
    if key in node:
        raise ParseError('field %s given twice for node %s' % (key, node.get('NodeName')), line_number, raw_line)
    node[key] = value


def parse_scontrol_show_node(text, with_errors=False):
    """Parse ``scontrol show node`` (multi-line or ``-o``) output.

    Returns a list of dicts, one per node in printed order, mapping every key to
    its value exactly as printed (strings; ``AllocTRES=`` gives ``''``; a
    multi-line Reason is joined with ``\\n``).

    ``No nodes in the system`` gives ``[]``.  Lines scontrol prints as errors
    (``Node x not found``, ``slurm_load_node error: ...``) raise ScontrolError,
    or with ``with_errors=True`` the result is ``{'nodes': [...], 'errors': [...]}``.
    Anything else that is not scontrol's layout raises ParseError.
    """
    if not isinstance(text, str):
        raise ParseError('scontrol output must be text, not %s' % type(text).__name__)
    nodes = []
    errors = []
    node = None
    one_liner = False
    last_key = None
    saw_no_nodes = False
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip('\r')
        if not line.strip():
            node = None
            last_key = None
            continue
        stripped = line.strip()
        if stripped == _NO_NODES or _NOT_FOUND.match(stripped) or _TOOL_ERROR.match(stripped):
            if stripped == _NO_NODES:
                saw_no_nodes = True
            else:
                errors.append(stripped)
            node = None
            last_key = None
            continue
        if line.startswith('NodeName='):
            node = {}
            nodes.append(node)
            fields = split_fields(line, number, raw)
            # One line per node (-o) carries more than the first line's three or four fields.
            one_liner = any(key in ('CPUAlloc', 'CPUTot', 'State', 'RealMemory') for key, _value in fields)
            for key, value in fields:
                _add(node, key, value, number, raw)
            last_key = fields[-1][0]
            continue
        if node is None:
            raise ParseError('expected a line beginning NodeName=', number, raw)
        if not line[0].isspace() or one_liner:
            raise ParseError('expected a continuation line indented with spaces', number, raw)
        if last_key == 'Reason' and line.startswith(_REASON_CONTINUATION) and 'Reason' in node:
            node['Reason'] += '\n' + stripped
            continue
        key = stripped.split('=', 1)[0]
        if key in _WHOLE_LINE_KEYS and _KEY_TOKEN.match(stripped):
            fields = [(key, stripped[len(key) + 1:].strip())]
        else:
            fields = split_fields(stripped, number, raw)
        for key, value in fields:
            _add(node, key, value, number, raw)
        last_key = fields[-1][0]
    if not nodes and not errors and not saw_no_nodes:
        raise ParseError('no scontrol show node output (no NodeName= line)')
    if with_errors:
        return {'nodes': nodes, 'errors': errors}
    if errors:
        raise ScontrolError(errors, nodes)
    return nodes


# ---------------------------------------------------------------------------
# Hostlists
# ---------------------------------------------------------------------------
#
# Slurm 22.05 semantics (checked against ``scontrol show hostnames`` /
# ``show hostlist``): expressions are separated by commas (or white space)
# outside brackets; inside brackets a comma-separated list of ``N`` or ``L-H``
# where the zero padding width is the number of digits of ``L``; several
# bracket groups in one name expand to their cartesian product; one range may
# name at most 65,536 hosts.  Slurm 22.05 rejects text after the last bracket
# (``n[1-3]-ib``); hostlist_expand accepts it, hostlist_compress never emits it.

MAX_RANGE_HOSTS = 65536
MAX_EXPANSION = 1 << 22
_RANGE = re.compile(r'^(\d+)(?:-(\d+))?$')
_TRAILING_NUMBER = re.compile(r'^(.*?)(\d+)$', re.S)
_DIGITS = re.compile(r'(\d+)')
_BAD_NAME_CHARS = re.compile(r'[\[\],\s]')
# A bracketed group's prefix cut at its last number: head, number, rest (never empty).
_PREFIX_NUMBER = re.compile(r'^(.*?)(\d+)(\D+)$', re.S)


def _hostlist_error(expr, why):
    return ParseError('invalid hostlist %r: %s' % (expr, why))


def _parse_ranges(body, expr):
    values = []
    if not body:
        raise _hostlist_error(expr, 'empty brackets []')
    for item in body.split(','):
        match = _RANGE.match(item)
        if not match:
            raise _hostlist_error(expr, 'bad range %r in brackets' % item)
        low_text, high_text = match.group(1), match.group(2)
        width = len(low_text)
        low = int(low_text)
        high = low if high_text is None else int(high_text)
        if high < low:
            raise _hostlist_error(expr, 'reversed range %r' % item)
        if high - low + 1 > MAX_RANGE_HOSTS:
            raise _hostlist_error(expr, 'range %r names more than %d hosts' % (item, MAX_RANGE_HOSTS))
        values.extend('%0*d' % (width, value) for value in range(low, high + 1))
    return values


def _split_top_level(expr):
    """Split an expression on commas/white space outside brackets; check brackets balance."""
    parts = []
    depth = 0
    start = 0
    for pos, char in enumerate(expr):
        if char == '[':
            if depth:
                raise _hostlist_error(expr, 'nested "[" at position %d' % pos)
            depth = 1
        elif char == ']':
            if not depth:
                raise _hostlist_error(expr, 'unbalanced "]" at position %d' % pos)
            depth = 0
        elif depth and char.isspace():
            raise _hostlist_error(expr, 'white space inside brackets at position %d' % pos)
        elif not depth and (char == ',' or char.isspace()):
            parts.append(expr[start:pos])
            start = pos + 1
    if depth:
        raise _hostlist_error(expr, 'unbalanced "[" (no closing "]")')
    parts.append(expr[start:])
    return [part for part in parts if part]


def _expand_one(part, expr):
    pieces = [['']]
    pos = 0
    count = 1
    while pos < len(part):
        open_at = part.find('[', pos)
        if open_at < 0:
            pieces.append([part[pos:]])
            break
        if open_at > pos:
            pieces.append([part[pos:open_at]])
        close_at = part.index(']', open_at)
        values = _parse_ranges(part[open_at + 1:close_at], expr)
        count *= len(values)
        if count > MAX_EXPANSION:
            raise _hostlist_error(expr, 'expands to more than %d names' % MAX_EXPANSION)
        pieces.append(values)
        pos = close_at + 1
    names = ['']
    for choices in pieces:
        if len(choices) == 1:
            suffix = choices[0]
            names = [name + suffix for name in names]
        else:
            names = [name + choice for name in names for choice in choices]
    return names


def hostlist_expand(expr):
    """Expand a Slurm hostlist expression into the list of names, in Slurm's order.

    ``'cn[001-003,007],gpu5'`` -> ``['cn001', 'cn002', 'cn003', 'cn007', 'gpu5']``.
    Duplicates are kept, as ``scontrol show hostnames`` keeps them.  A list of
    expressions is expanded one after the other.  Several bracket groups expand
    in row-major order (``r[1-2]n[1-2]`` -> r1n1, r1n2, r2n1, r2n2), which is
    Slurm's order for two groups; for three or more Slurm's order differs but
    the set of names is the same.  Raises ParseError on a malformed expression.
    """
    if isinstance(expr, (list, tuple)):
        names = []
        for item in expr:
            names.extend(hostlist_expand(item))
        return names
    if not isinstance(expr, str):
        raise ParseError('a hostlist must be a string, not %s' % type(expr).__name__)
    parts = _split_top_level(expr)
    if not parts:
        raise _hostlist_error(expr, 'empty hostlist')
    names = []
    for part in parts:
        names.extend(_expand_one(part, expr))
        if len(names) > MAX_EXPANSION:
            raise _hostlist_error(expr, 'expands to more than %d names' % MAX_EXPANSION)
    return names


def _natural_key(text):
    parts = _DIGITS.split(text)
    return [int(part) if index % 2 else part for index, part in enumerate(parts)]


def _split_name(name):
    match = _TRAILING_NUMBER.match(name)
    if match:
        return match.group(1), match.group(2)
    return name, ''


def hostlist_sort_key(name):
    """Natural sort key for host names: ``n9 < n09 < n10 < n100``, prefixes compared naturally."""
    prefix, number = _split_name(name)
    return (_natural_key(prefix), prefix, int(number) if number else -1, len(number))


def _ranges(numbers):
    """Render number strings, in the given order, as Slurm range text that expands back to them."""
    out = []
    low = None
    last = None
    width = 0
    for text in numbers:
        value = int(text)
        if low is not None and value == last + 1 and '%0*d' % (width, value) == text:
            last = value
            out[-1] = '%s-%s' % (low, '%0*d' % (width, value))
            continue
        low, last, width = text, value, len(text)
        out.append(text)
    return ','.join(out)


def _leaf_groups(names):
    """Group sorted names into (prefix, [number strings]) runs; names without a trailing number stand alone."""
    groups = []
    for name in names:
        prefix, number = _split_name(name)
        if number and groups and groups[-1][1] and groups[-1][0] == prefix:
            groups[-1][1].append(number)
        else:
            groups.append((prefix, [number] if number else []))
    return groups


def _render_leaf(prefix, numbers):
    if not numbers:
        return prefix, None
    if len(numbers) == 1:
        return prefix + numbers[0], None
    return prefix, '[%s]' % _ranges(numbers)


def hostlist_compress(names):
    """Compress host names into a Slurm hostlist expression ``scontrol show hostnames`` accepts.

    Names are made unique and sorted naturally (hostlist_sort_key); each run of
    names sharing a prefix is bracketed on its trailing number, keeping zero
    padding (``gpu[08-11]``, ``n[9,09-10]``).  Consecutive groups that differ
    only in one number of their prefix and have the same brackets are merged
    into a second bracket group (``rack[1-2]-node[01-04]``).  Text is never
    emitted after a bracket, which Slurm 22.05 rejects: ``n1-ib,n2-ib`` stay as
    they are.  ``hostlist_expand`` of the result gives the sorted unique names.
    A string is taken as a hostlist expression and expanded first.  Raises
    ParseError on an empty name or one with brackets, commas or white space.
    """
    if isinstance(names, str):
        names = hostlist_expand(names)
    unique = set()
    for name in names:
        if not isinstance(name, str):
            raise ParseError('host names must be strings, not %s (%r)' % (type(name).__name__, name))
        if not name or _BAD_NAME_CHARS.search(name):
            raise ParseError('invalid host name %r: empty, or contains brackets, commas or white space' % name)
        unique.add(name)
    ordered = sorted(unique, key=hostlist_sort_key)
    rendered = [_render_leaf(prefix, numbers) for prefix, numbers in _leaf_groups(ordered)]
    out = []
    index = 0
    while index < len(rendered):
        prefix, tail = rendered[index]
        split = _PREFIX_NUMBER.match(prefix) if tail else None
        nxt = index + 1
        if split is not None:
            head, rest = split.group(1), split.group(3)
            numbers = [split.group(2)]
            while nxt < len(rendered) and rendered[nxt][1] == tail:
                other = _PREFIX_NUMBER.match(rendered[nxt][0])
                if other is None or other.group(1) != head or other.group(3) != rest:
                    break
                numbers.append(other.group(2))
                nxt += 1
        if nxt - index > 1:
            out.append('%s[%s]%s%s' % (head, _ranges(numbers), rest, tail))
        else:
            out.append(prefix + (tail or ''))
        index = nxt
    return ','.join(out)
