# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.aicluster.infra.plugins.module_utils import svg

NS = '{http://www.w3.org/2000/svg}'


def _parse(text):
    return ET.fromstring(text.replace('<svg ', '<svg xmlns="%s" ' % svg.SVG_NS, 1))


@pytest.mark.parametrize('value, text', [(0, '0'), (1.04, '1'), (1.06, '1.1'), (12.0, '12'), (-0.04, '0'), (3.25, '3.2')])
def test_num_is_short_and_stable(value, text):
    assert svg.num(value) == text


@pytest.mark.parametrize('top, ticks, axis', [
    (482.0, [0, 100, 200, 300, 400, 500], 500),
    (400.0, [0, 100, 200, 300, 400], 400),
    (0.93, [0, 0.2, 0.4, 0.6, 0.8, 1.0], 1.0),
    (7, [0, 2, 4, 6, 8], 8),
    (0, [0, 1], 1),
    (None, [0, 1], 1),
    (float('nan'), [0, 1], 1),
])
def test_nice_ticks(top, ticks, axis):
    assert svg.nice_ticks(top) == (ticks, axis)


def test_escape_covers_markup_and_quotes():
    assert svg.escape('<a href="x">&\'') == '&lt;a href=&quot;x&quot;&gt;&amp;&#39;'


def test_bar_chart_draws_one_rect_per_bar_and_the_lines():
    bars = [{'label': 'gpu01', 'value': 471.3}, {'label': 'gpu02', 'value': 369.6, 'colour': '#cf222e'},
            {'label': 'gpu03', 'value': None}]
    text = svg.bar_chart(bars, 'busbw <GB/s>', unit='GB/s', lines=[
        {'value': 400, 'label': 'threshold 400', 'colour': '#cf222e', 'dash': '6 3'},
        {'value': 470, 'label': 'median 470', 'colour': '#24292f'},
        {'value': None, 'label': 'absent'}])
    root = _parse(text)
    rects = root.findall(NS + 'rect')
    assert len(rects) == 2
    assert rects[1].get('fill') == '#cf222e'
    assert rects[0].find(NS + 'title').text == 'gpu01: 471.3 GB/s'
    paths = root.findall(NS + 'path')
    assert [path.get('stroke') for path in paths] == ['#24292f', '#cf222e']  # top of the chart first
    assert paths[1].get('stroke-dasharray') == '6 3'
    texts = [node.text for node in root.iter(NS + 'text')]
    assert 'threshold 400' in texts and 'median 470' in texts and 'absent' not in texts
    assert 'gpu03' in texts  # a bar without a value keeps its slot and label
    assert root.find(NS + 'title').text == 'busbw <GB/s>'
    assert 'xmlns' not in text  # inline SVG in HTML needs none


def test_bar_heights_are_proportional():
    root = _parse(svg.bar_chart([{'label': 'a', 'value': 100}, {'label': 'b', 'value': 50}], 't', height=300))
    heights = [float(rect.get('height')) for rect in root.findall(NS + 'rect')]
    assert heights[0] == pytest.approx(2 * heights[1], abs=0.2)


def test_close_line_labels_are_pushed_apart():
    root = _parse(svg.bar_chart([{'label': 'a', 'value': 100}], 't', lines=[
        {'value': 50, 'label': 'one'}, {'value': 50.5, 'label': 'two'}]))
    ys = sorted(float(node.get('y')) for node in root.iter(NS + 'text') if node.text in ('one', 'two'))
    assert ys[1] - ys[0] >= 12


def test_many_bars_have_no_labels_and_stay_small():
    bars = [{'label': 'gpu%04d' % index, 'value': 470 + index % 7} for index in range(1024)]
    text = svg.bar_chart(bars, 'busbw', width=1400)
    assert text.count('<rect') == 1024
    assert 'gpu0001<' not in text.replace('</title>', '')
    assert len(text) < 120000


def test_heatmap_merges_untipped_cells_into_one_path_per_colour():
    cells = {(0, 1): ('#1a7f37', None), (1, 0): ('#1a7f37', None), (1, 2): ('#cf222e', 'gpu02 -> gpu03: 93 Gb/s'),
             (2, 1): ('#cf222e', None)}
    text = svg.heatmap(['gpu01', 'gpu02', 'gpu03'], ['gpu01', 'gpu02', 'gpu03'], cells, 'rail 3',
                       legend=[('#1a7f37', 'ok'), ('#cf222e', 'low')], cell=10)
    root = _parse(text)
    paths = root.findall(NS + 'path')
    assert sorted(path.get('fill') for path in paths) == ['#1a7f37', '#cf222e']
    green = [path for path in paths if path.get('fill') == '#1a7f37'][0]
    assert len(re.findall('M', green.get('d'))) == 2
    tipped = [rect for rect in root.findall(NS + 'rect') if rect.find(NS + 'title') is not None]
    assert len(tipped) == 1 and tipped[0].find(NS + 'title').text == 'gpu02 -> gpu03: 93 Gb/s'
    labels = [node.text for node in root.iter(NS + 'text')]
    assert labels.count('gpu02') == 2 and 'ok' in labels and 'low' in labels


def test_heatmap_is_deterministic_and_standalone_declares_namespace():
    cells = dict(((row, col), ('#1a7f37', None)) for row in range(4) for col in range(4) if row != col)
    first = svg.heatmap(list('abcd'), list('abcd'), cells, 't', standalone=True)
    second = svg.heatmap(list('abcd'), list('abcd'), dict(reversed(list(cells.items()))), 't', standalone=True)
    assert first == second
    assert first.startswith('<svg xmlns="http://www.w3.org/2000/svg" ')
    ET.fromstring(first)
