# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A small SVG helper for the acceptance report: a bar chart and a heatmap.

Hand-built SVG text, no plotting library: nothing to install on the control
node, output of a few bytes per mark, and the same input always gives the same
bytes (the report's ``changed`` depends on that). The SVG is meant to be
inlined into HTML (no ``xmlns`` needed there); ``standalone=True`` adds it for
a file of its own. Pure functions only: no I/O.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re

SVG_NS = 'http://www.w3.org/2000/svg'
FONT = 'font-family="system-ui,sans-serif" font-size="11"'


# Terminal escape sequences (CSI such as colours, OSC such as titles), then what XML 1.0 cannot hold at all, even
# escaped (C0 controls but tab, newline and carriage return; DEL and C1; lone surrogates; U+FFFE and U+FFFF).
_TERMINAL_SEQUENCE = re.compile(u'\x1b\\[[0-?]*[ -/]*[@-~]|\x1b\\][^\x07\x1b]*(?:\x07|\x1b\\\\)?|\x1b[@-_]?')
_NOT_XML = re.compile(u'[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]')


def control_free(text):
    """Tool-derived text (node descriptions, tool messages, version strings) with terminal escape sequences and the
    characters XML cannot hold removed: what the report writes stays valid XML and prints nothing to a terminal."""
    return _NOT_XML.sub('', _TERMINAL_SEQUENCE.sub('', str(text)))


def escape(text):
    """Text safe inside SVG/XML element content and attribute values (control characters removed)."""
    return (control_free(text).replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;')
            .replace('"', '&quot;').replace("'", '&#39;'))


def num(value):
    """A coordinate as short, deterministic text: at most one decimal, no trailing '.0'."""
    text = '%.1f' % value
    if text.endswith('.0'):
        text = text[:-2]
    return '0' if text == '-0' else text


def nice_ticks(top, count=5):
    """Round tick values from 0 to at least ``top``: (ticks, axis maximum)."""
    if top is None or top <= 0 or math.isnan(top) or math.isinf(top):
        return [0, 1], 1
    raw = top / count
    magnitude = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        step = factor * magnitude
        if step >= raw:
            break
    steps = int(math.ceil(top / step - 1e-9))
    ticks = [round(step * index, 10) for index in range(steps + 1)]
    return ticks, ticks[-1]


def _tick_label(value):
    if value == int(value):
        return '%d' % value
    return ('%.2f' % value).rstrip('0').rstrip('.')


def _open(width, height, title, standalone, css_class):
    attrs = 'viewBox="0 0 %s %s" width="%s" height="%s" role="img" class="%s"' % (
        num(width), num(height), num(width), num(height), escape(css_class))
    if standalone:
        attrs = 'xmlns="%s" %s' % (SVG_NS, attrs)
    return ['<svg %s %s>' % (attrs, FONT), '<title>%s</title>' % escape(title)]


def bar_chart(bars, title, lines=(), unit='', width=900, height=260, labels=None, standalone=False):
    """A vertical bar chart with horizontal reference lines.

    ``bars``: dicts with ``label``, ``value`` (a number or None for no bar),
    optional ``colour`` (default grey-blue) and ``tip`` (hover text; default
    label and value). ``lines``: dicts with ``value``, ``label``, ``colour``
    and optional ``dash`` (e.g. threshold and median). ``labels``: draw the
    bar labels under the axis (default: when there are at most 48 bars).
    ``mark``: a bar's optional symbol drawn over it (the second cue besides
    colour, for readers who cannot tell the colours apart, and for grey print).
    """
    left, right, top, bottom = 56, 150, 26, 18
    bars = list(bars)
    if labels is None:
        labels = len(bars) <= 48
    if labels:
        bottom = 18 + min(90, 6 * max([len(str(entry['label'])) for entry in bars] + [1]))
    values = [entry['value'] for entry in bars if entry.get('value') is not None]
    values += [line['value'] for line in lines if line.get('value') is not None]
    ticks, axis_max = nice_ticks(max(values) * 1.05 if values else 0)
    plot_w = width - left - right
    plot_h = height - top - bottom
    out = _open(width, height, title, standalone, 'chart bar-chart')
    out.append('<text x="%s" y="16" font-weight="600">%s</text>' % (num(left), escape(title)))

    def y_of(value):
        return top + plot_h - plot_h * value / axis_max

    for tick in ticks:
        y = y_of(tick)
        out.append('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#d0d7de" stroke-width="1"/>' % (
            num(left), num(y), num(left + plot_w), num(y)))
        out.append('<text x="%s" y="%s" text-anchor="end" fill="#57606a">%s</text>' % (
            num(left - 4), num(y + 4), escape(_tick_label(tick))))
    if unit:
        out.append('<text x="12" y="%s" transform="rotate(-90 12 %s)" text-anchor="middle" fill="#57606a">%s</text>' % (
            num(top + plot_h / 2), num(top + plot_h / 2), escape(unit)))
    slot = plot_w / max(len(bars), 1)
    gap = slot * 0.2 if slot >= 4 else 0
    for index, entry in enumerate(bars):
        value = entry.get('value')
        x = left + index * slot
        if value is not None:
            y = y_of(max(value, 0))
            tip = entry.get('tip') or '%s: %s %s' % (entry['label'], _tick_label(round(value, 2)), unit)
            out.append('<rect x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s</title></rect>' % (
                num(x + gap / 2), num(y), num(max(slot - gap, 0.6)), num(top + plot_h - y),
                escape(entry.get('colour') or '#54aeff'), escape(tip.strip())))
            if entry.get('mark'):
                out.append('<text x="%s" y="%s" text-anchor="middle" font-weight="700" fill="%s">%s</text>' % (
                    num(x + slot / 2), num(y - 3), escape(entry.get('colour') or '#24292f'), escape(entry['mark'])))
        if labels:
            lx = x + slot / 2
            ly = top + plot_h + 10
            out.append('<text x="%s" y="%s" text-anchor="end" transform="rotate(-60 %s %s)">%s</text>' % (
                num(lx), num(ly), num(lx), num(ly), escape(entry['label'])))
    out.append('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#24292f" stroke-width="1"/>' % (
        num(left), num(top + plot_h), num(left + plot_w), num(top + plot_h)))
    drawn = sorted((y_of(line['value']), index, line) for index, line in enumerate(lines) if line.get('value') is not None)
    label_y = []
    for y, _index, line in drawn:
        # labels of close lines are pushed apart so they stay legible
        label_y.append(max(y + 4, label_y[-1] + 12) if label_y else y + 4)
    for (y, _index, line), text_y in zip(drawn, label_y):
        dash = ' stroke-dasharray="%s"' % escape(line['dash']) if line.get('dash') else ''
        out.append('<path d="M%s %sH%s" stroke="%s" stroke-width="2" fill="none"%s/>' % (
            num(left), num(y), num(left + plot_w), escape(line.get('colour', '#24292f')), dash))
        out.append('<text x="%s" y="%s" fill="%s">%s</text>' % (
            num(left + plot_w + 6), num(text_y), escape(line.get('colour', '#24292f')), escape(line['label'])))
    out.append('</svg>')
    return '\n'.join(out)


def heatmap(row_labels, col_labels, cells, title, legend=(), cell=14, standalone=False):
    """A matrix of coloured cells.

    ``cells`` maps ``(row, col)`` indexes to ``(colour, tip)`` or ``(colour,
    tip, marked)``. A cell with a tip is a ``rect`` with a hover title; cells
    without one are merged into one ``path`` per colour, which keeps a large,
    mostly healthy matrix small. A marked cell (a failing pair) also carries a
    cross, merged into one path: the second cue besides colour.
    Cells absent from ``cells`` (pairs not measured) are left blank.
    ``legend``: ``(colour, label)`` pairs drawn to the right.
    """
    label_w = 6 * max([len(str(label)) for label in list(row_labels) + list(col_labels)] + [1]) + 8
    left, top = label_w, 26 + label_w
    grid_w, grid_h = cell * len(col_labels), cell * len(row_labels)
    width = left + grid_w + (170 if legend else 10)
    height = max(top + grid_h + 10, top + 20 * len(legend) + 10)
    out = _open(width, height, title, standalone, 'chart heatmap')
    out.append('<text x="4" y="16" font-weight="600">%s</text>' % escape(title))
    out.append('<rect x="%s" y="%s" width="%s" height="%s" fill="#f6f8fa" stroke="#d0d7de"/>' % (
        num(left), num(top), num(grid_w), num(grid_h)))
    for index, label in enumerate(row_labels):
        out.append('<text x="%s" y="%s" text-anchor="end">%s</text>' % (
            num(left - 4), num(top + index * cell + cell * 0.75), escape(label)))
    for index, label in enumerate(col_labels):
        x = left + index * cell + cell * 0.7
        out.append('<text x="%s" y="%s" transform="rotate(-90 %s %s)">%s</text>' % (
            num(x), num(top - 4), num(x), num(top - 4), escape(label)))
    paths = {}
    crosses = []
    inset = max(cell * 0.25, 1)
    for (row, col) in sorted(cells):
        colour, tip = cells[(row, col)][:2]
        x, y = left + col * cell, top + row * cell
        if len(cells[(row, col)]) > 2 and cells[(row, col)][2]:
            crosses.append('M%s %sl%s %sM%s %sl-%s %s' % (num(x + inset), num(y + inset), num(cell - 2 * inset),
                                                          num(cell - 2 * inset), num(x + cell - inset), num(y + inset),
                                                          num(cell - 2 * inset), num(cell - 2 * inset)))
        if tip:
            out.append('<rect x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s</title></rect>' % (
                num(x), num(y), num(cell), num(cell), escape(colour), escape(tip)))
        else:
            paths.setdefault(colour, []).append('M%s %sh%sv%sh-%sz' % (num(x), num(y), num(cell), num(cell), num(cell)))
    for colour in sorted(paths):
        out.append('<path fill="%s" d="%s"/>' % (escape(colour), ''.join(paths[colour])))
    if crosses:
        out.append('<path stroke="#fff" stroke-width="%s" fill="none" d="%s"/>' % (num(max(cell / 7.0, 1)), ''.join(crosses)))
    for index, (colour, label) in enumerate(legend):
        y = top + index * 20
        out.append('<rect x="%s" y="%s" width="14" height="14" fill="%s"/>' % (num(left + grid_w + 14), num(y), escape(colour)))
        out.append('<text x="%s" y="%s">%s</text>' % (num(left + grid_w + 34), num(y + 11), escape(label)))
    out.append('</svg>')
    return '\n'.join(out)


def line_chart(series, x_labels, title, unit='', lines=(), width=900, height=300, standalone=False):
    """Lines over a categorical x axis (message sizes, each twice the last, so the axis is logarithmic).

    ``series``: dicts with ``label``, ``colour``, optional ``dash`` and
    ``points`` (a value or None per x label), drawn as a line with a marker
    per point (a circle, a square, a triangle... per series: the second cue
    besides colour) and named in the legend at the right. ``lines``: horizontal
    reference lines as in ``bar_chart``.
    """
    left, right, top, bottom = 56, 190, 26, 44
    values = [value for entry in series for value in entry['points'] if value is not None]
    values += [line['value'] for line in lines if line.get('value') is not None]
    ticks, axis_max = nice_ticks(max(values) * 1.05 if values else 0)
    plot_w, plot_h = width - left - right, height - top - bottom
    count = max(len(x_labels), 1)
    out = _open(width, height, title, standalone, 'chart line-chart')
    out.append('<text x="%s" y="16" font-weight="600">%s</text>' % (num(left), escape(title)))

    def x_of(index):
        return left + plot_w * (index + 0.5) / count

    def y_of(value):
        return top + plot_h - plot_h * value / axis_max

    for tick in ticks:
        out.append('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#d0d7de" stroke-width="1"/>' % (
            num(left), num(y_of(tick)), num(left + plot_w), num(y_of(tick))))
        out.append('<text x="%s" y="%s" text-anchor="end" fill="#57606a">%s</text>' % (
            num(left - 4), num(y_of(tick) + 4), escape(_tick_label(tick))))
    if unit:
        out.append('<text x="12" y="%s" transform="rotate(-90 12 %s)" text-anchor="middle" fill="#57606a">%s</text>' % (
            num(top + plot_h / 2), num(top + plot_h / 2), escape(unit)))
    step = max(1, int(math.ceil(count / 12.0)))
    for index, label in enumerate(x_labels):
        if index % step == 0 or index == count - 1:
            out.append('<text x="%s" y="%s" text-anchor="middle" fill="#57606a">%s</text>' % (
                num(x_of(index)), num(top + plot_h + 14), escape(label)))
    out.append('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#24292f" stroke-width="1"/>' % (
        num(left), num(top + plot_h), num(left + plot_w), num(top + plot_h)))
    for line in lines:
        if line.get('value') is None:
            continue
        dash = ' stroke-dasharray="%s"' % escape(line['dash']) if line.get('dash') else ''
        out.append('<path d="M%s %sH%s" stroke="%s" stroke-width="1.5" fill="none"%s/>' % (
            num(left), num(y_of(line['value'])), num(left + plot_w), escape(line.get('colour', '#24292f')), dash))
    legend_y = top
    for number, entry in enumerate(series):
        colour = escape(entry.get('colour') or '#24292f')
        points = [(x_of(index), y_of(value)) for index, value in enumerate(entry['points']) if value is not None]
        if points:
            dash = ' stroke-dasharray="%s"' % escape(entry['dash']) if entry.get('dash') else ''
            out.append('<path d="M%s" stroke="%s" stroke-width="2" fill="none"%s/>' % (
                'L'.join('%s %s' % (num(x), num(y)) for x, y in points), colour, dash))
            out.append('<path fill="%s" d="%s"/>' % (colour, ''.join(_marker(number, x, y) for x, y in points)))
        out.append('<path fill="%s" d="%s"/>' % (colour, _marker(number, left + plot_w + 16, legend_y + 6)))
        out.append('<path d="M%s %sh20" stroke="%s" stroke-width="2"/>' % (num(left + plot_w + 6), num(legend_y + 6), colour))
        out.append('<text x="%s" y="%s">%s</text>' % (num(left + plot_w + 32), num(legend_y + 10), escape(entry['label'])))
        legend_y += 18
    for line in lines:
        if line.get('value') is None:
            continue
        out.append('<path d="M%s %sh20" stroke="%s" stroke-width="1.5"%s/>' % (
            num(left + plot_w + 6), num(legend_y + 6), escape(line.get('colour', '#24292f')),
            ' stroke-dasharray="%s"' % escape(line['dash']) if line.get('dash') else ''))
        out.append('<text x="%s" y="%s">%s</text>' % (num(left + plot_w + 32), num(legend_y + 10), escape(line['label'])))
        legend_y += 18
    out.append('</svg>')
    return '\n'.join(out)


def _marker(number, x, y, size=3.5):
    """A filled marker path at (x, y): circle, square, triangle, diamond, by the series' number."""
    shape = number % 4
    if shape == 0:
        return 'M%s %sa%s %s 0 1 0 %s 0a%s %s 0 1 0 -%s 0z' % (num(x - size), num(y), num(size), num(size), num(2 * size),
                                                               num(size), num(size), num(2 * size))
    if shape == 1:
        return 'M%s %sh%sv%sh-%sz' % (num(x - size), num(y - size), num(2 * size), num(2 * size), num(2 * size))
    if shape == 2:
        return 'M%s %sL%s %sL%s %sz' % (num(x), num(y - size * 1.2), num(x + size * 1.2), num(y + size), num(x - size * 1.2),
                                        num(y + size))
    return 'M%s %sL%s %sL%s %sL%s %sz' % (num(x), num(y - size * 1.3), num(x + size * 1.3), num(y), num(x), num(y + size * 1.3),
                                          num(x - size * 1.3), num(y))
