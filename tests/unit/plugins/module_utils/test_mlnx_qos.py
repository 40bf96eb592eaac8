# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/mlnx_qos.py (own -handmade fixtures in the mlnx-tools layout)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest
from hypothesis import given

from _fuzz import FUZZ_SETTINGS, texts_from, only_parse_error
from _paths import own_fixture, fixture_files, read_fixture

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.mlnx_qos import parse_mlnx_qos

ROCE = 'mlnx_qos/mlnx_qos-mlnx-tools-23.x-cx7-roce-dscp-pfc3-multiline-all-tcs-handmade.txt'
PCP = 'mlnx_qos/mlnx_qos-mlnx-ofed-4.x-cx5-fw-dcbx-pcp-no-buffers-lldpad-handmade.txt'

# The report of the NVIDIA RoCE docs example: default dscp2prio, PFC on 0/2/6/7, ETS weights.
DOCS_LAYOUT = """DCBX mode: OS controlled
Priority trust state: dscp
dscp2prio mapping:
\tprio:0 dscp:07,06,05,04,03,02,01,00,
\tprio:1 dscp:15,14,13,12,11,10,09,08,
\tprio:2 dscp:23,22,21,20,19,18,17,16,
\tprio:3 dscp:31,30,29,28,27,26,25,24,
\tprio:4 dscp:39,38,37,36,35,34,33,32,
\tprio:5 dscp:47,46,45,44,43,42,41,40,
\tprio:6 dscp:55,54,53,52,51,50,49,48,
\tprio:7 dscp:63,62,61,60,59,58,57,56,
Cable len: 10
PFC configuration:
\tpriority    0   1   2   3   4   5   6   7
\tenabled     1   0   1   0   0   0   1   1
tc: 0 ratelimit: unlimited, tsa: ets, bw: 20%
\t priority:  1
tc: 1 ratelimit: unlimited, tsa: ets, bw: 40%
\t priority:  0
tc: 6 ratelimit: unlimited, tsa: strict
\t priority:  6
tc: 7 ratelimit: unlimited, tsa: ets, bw: 40%
\t priority:  7
"""


def test_roce_dscp_report():
    result = parse_mlnx_qos(own_fixture(ROCE))
    assert (result['dcbx'], result['trust'], result['cable_len']) == ('os', 'dscp', 7)
    assert result['pfc_enabled'] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert result['buffer'] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert result['receive_buffer_size'] == [130944, 130944, 0, 0, 0, 0, 0, 0]
    assert result['total_size'] == 1048576
    assert result['default_priority'] is None
    assert result['errors'] == []


def test_roce_dscp2prio_continuation_lines_merged():
    mapping = parse_mlnx_qos(own_fixture(ROCE))['dscp2prio']
    assert sorted(mapping) == [0, 3, 4, 5, 6, 7]
    assert mapping[0] == list(range(23, -1, -1))
    assert mapping[3] == [31, 30, 29, 28, 27, 26, 25, 24]
    assert 26 in mapping[3] and 48 in mapping[6]
    assert sorted(d for dscps in mapping.values() for d in dscps) == list(range(64))


def test_roce_tcs():
    tcs = parse_mlnx_qos(own_fixture(ROCE))['tcs']
    assert [tc['tc'] for tc in tcs] == list(range(8))
    assert tcs[0] == {'tc': 0, 'ratelimit': 'unlimited', 'ratelimit_gbps': None, 'tsa': 'ets', 'bw_percent': 50,
                      'priorities': [0, 1, 2]}
    assert tcs[1]['priorities'] == [] and tcs[1]['bw_percent'] == 0
    assert (tcs[3]['bw_percent'], tcs[3]['priorities']) == (50, [3])
    assert (tcs[6]['tsa'], tcs[6]['bw_percent'], tcs[6]['priorities']) == ('strict', None, [6])
    assert sum(tc['bw_percent'] or 0 for tc in tcs) == 100


def test_firmware_pcp_report_with_tool_warnings():
    result = parse_mlnx_qos(own_fixture(PCP))
    assert (result['dcbx'], result['trust'], result['dscp2prio']) == ('firmware', 'pcp', None)
    assert result['pfc_enabled'] == [0] * 8
    assert result['buffer'] is None and result['receive_buffer_size'] is None
    assert result['errors'] == [
        '****** WARNING: lldpad service is running and may overwrite your settings ******',
        'Buffers commands are not supported on your system']
    tcs = result['tcs']
    assert [(tc['tc'], tc['priorities']) for tc in tcs[:2]] == [(1, [0]), (0, [1])]
    assert (tcs[0]['ratelimit'], tcs[0]['ratelimit_gbps'], tcs[0]['tsa']) == ('8.0 Gbps', 8.0, 'vendor')
    assert [tc['tsa'] for tc in tcs].count('strict') == 1


def test_docs_layout_default_mapping_and_pfc():
    result = parse_mlnx_qos(DOCS_LAYOUT)
    assert result['dscp2prio'] == {prio: list(range(prio * 8 + 7, prio * 8 - 1, -1)) for prio in range(8)}
    assert result['pfc_enabled'] == [1, 0, 1, 0, 0, 0, 1, 1]
    assert [(tc['tc'], tc['bw_percent']) for tc in result['tcs']] == [(0, 20), (1, 40), (6, None), (7, 40)]


def test_bare_continuation_line_joins_previous_priority():
    text = 'Priority trust state: dscp\ndscp2prio mapping:\n\tprio:0 dscp:07,06,05,04,03,02,01,00,\n\t\t08,09,\n'
    assert parse_mlnx_qos(text)['dscp2prio'] == {0: [7, 6, 5, 4, 3, 2, 1, 0, 8, 9]}


def test_default_priority_on_next_line():
    result = parse_mlnx_qos('Priority trust state: dscp\ndefault priority:\n\t3\nCable len: 7\n')
    assert (result['default_priority'], result['cable_len']) == (3, 7)


def test_crlf_spaces_no_trailing_newline():
    text = own_fixture(ROCE)
    assert parse_mlnx_qos(text.replace('\t', '        ').replace('\n', '\r\n').rstrip()) == parse_mlnx_qos(text)


def test_error_only_output():
    result = parse_mlnx_qos('ETS features are not supported on your system\n')
    assert result['errors'] == ['ETS features are not supported on your system'] and result['tcs'] == []


@pytest.mark.parametrize('text', ['', '\n', 'mlx5_0 port 1 ==> ib0 (Up)\n', 'priority: 3\n', 'random words'],
                         ids=['empty', 'blank', 'ibdev2netdev', 'orphan-priority', 'prose'])
def test_not_mlnx_qos_raises_parse_error(text):
    with pytest.raises(ParseError):
        parse_mlnx_qos(text)


@FUZZ_SETTINGS
@given(texts_from([read_fixture(k, p) for k, p in fixture_files('mlnx_qos')] + [DOCS_LAYOUT]))
def test_parse_mlnx_qos_never_raises_anything_but_parse_error(text):
    result = only_parse_error(parse_mlnx_qos, text)
    if result is not None:
        json.dumps(result)
