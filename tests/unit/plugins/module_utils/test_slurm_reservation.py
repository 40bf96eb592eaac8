# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The scontrol show reservation parser and the reservation comparison (module_utils/slurm_reservation.py).

The handmade captures follow the layout of real 22.05-24.x output published by
sites (a MAINT reservation with TRES and MaxStartDelay lines, a name with spaces,
Flags= empty, the -o one-liner) and scontrol's own messages (src/scontrol/info_res.c).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

import pytest
from hypothesis import given, strategies as st

from _fuzz import FUZZ_SETTINGS, only_parse_error, texts_from
from _paths import own_fixture

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.slurm_reservation import (
    differences, flags, names, nodes, parse_scontrol_show_reservation, slurm_time, summary,
)

MAINT = 'scontrol/scontrol-22.05-show-reservation-maint-handmade.txt'
SEVERAL = 'scontrol/scontrol-22.05-show-reservations-several-handmade.txt'
ONELINE = 'scontrol/scontrol-22.05-show-reservation-oneline-handmade.txt'
NOT_FOUND = 'scontrol/scontrol-22.05-show-reservation-not-found-handmade.txt'
NONE = 'scontrol/scontrol-22.05-show-reservation-none-handmade.txt'


def test_maint_reservation():
    [resv] = parse_scontrol_show_reservation(own_fixture(MAINT))
    assert resv == {
        'ReservationName': 'aicluster-verify', 'StartTime': '2026-12-01T21:40:12', 'EndTime': '2026-12-02T01:40:12',
        'Duration': '04:00:00', 'Nodes': 'gpu[01-03]', 'NodeCnt': '3', 'CoreCnt': '144', 'Features': '(null)',
        'PartitionName': '(null)', 'Flags': 'MAINT,IGNORE_JOBS,SPEC_NODES', 'TRES': 'cpu=288', 'Users': 'root',
        'Groups': '(null)', 'Accounts': '(null)', 'Licenses': '(null)', 'State': 'ACTIVE', 'BurstBuffer': '(null)',
        'Watts': 'n/a', 'MaxStartDelay': '(null)'}
    assert nodes(resv['Nodes']) == ['gpu01', 'gpu02', 'gpu03'] and flags(resv['Flags']) == {'MAINT', 'IGNORE_JOBS', 'SPEC_NODES'}


def test_several_reservations_a_name_with_spaces_and_empty_flags():
    found = parse_scontrol_show_reservation(own_fixture(SEVERAL))
    assert [r['ReservationName'] for r in found] == ['icra_iv', 'maintenance weekend 2026-10-14', 'lu2023-2-82']
    assert found[0]['Flags'] == '' and names(found[0]['Users']) == [] and found[0]['State'] == 'INACTIVE'
    assert found[1]['Duration'] == '2-13:00:00' and len(nodes(found[1]['Nodes'])) == 18
    assert found[2]['TRES'] == 'cpu=96,mem=400G,node=2,billing=96' and found[2]['Accounts'] == 'lu2023-2-82'


def test_one_liner():
    found = parse_scontrol_show_reservation(own_fixture(ONELINE))
    assert [r['ReservationName'] for r in found] == ['hpc123', 'hellohello']
    assert names(found[0]['Users']) == ['vscabc', 'vscdef'] and found[0]['MaxStartDelay'] == '(null)'
    assert found[1]['Flags'] == '' and found[1]['Groups'] == 'groupies' and nodes(found[1]['Nodes']) == ['nodeone', 'nodetwo']


@pytest.mark.parametrize('path', [NOT_FOUND, NONE], ids=['not-found', 'none-in-the-system'])
def test_no_reservation(path):
    assert parse_scontrol_show_reservation(own_fixture(path)) == []


@pytest.mark.parametrize('text, why', [
    ('slurm_load_reservations error: Unable to contact slurm controller (connect failure)\n', 'scontrol reported'),
    ('NodeName=gpu01 Arch=x86_64\n', 'ReservationName='),
    ('ReservationName=x Nodes=gpu01\n', 'without StartTime'),
    ('   Nodes=gpu01\n', 'ReservationName='),
    ('', 'no scontrol show reservation output'),
], ids=['controller-down', 'node-output', 'no-start-time', 'orphan-continuation', 'empty'])
def test_not_reservation_output(text, why):
    with pytest.raises(ParseError, match=why):
        parse_scontrol_show_reservation(text)


def test_not_text():
    with pytest.raises(ParseError, match='must be text'):
        parse_scontrol_show_reservation(None)


def test_comment_may_hold_key_value_text():
    text = ('ReservationName=r StartTime=2026-01-01T00:00:00 EndTime=2026-01-01T01:00:00 Duration=01:00:00\n'
            '   Nodes=n1 NodeCnt=1 CoreCnt=1 Features=(null) PartitionName=(null) Flags=MAINT\n'
            '   Users=root Groups=(null) Accounts=(null) Licenses=(null) State=ACTIVE BurstBuffer=(null)\n'
            '   Comment=swap PSU State=pending MaxStartDelay=(null)\n')
    [resv] = parse_scontrol_show_reservation(text)
    assert resv['Comment'] == 'swap PSU State=pending' and resv['State'] == 'ACTIVE'


@pytest.mark.parametrize('value, expected', [
    ('gpu[01-03]', ['gpu01', 'gpu02', 'gpu03']), ('(null)', []), ('', []), ('ALL', None), ('gpu[3-1]', None),
], ids=['hostlist', 'null', 'empty', 'all', 'bad'])
def test_nodes(value, expected):
    assert nodes(value) == expected


def test_slurm_time():
    stamp = int(time.mktime(time.strptime('2026-12-02T01:40:12', '%Y-%m-%dT%H:%M:%S')))
    assert slurm_time('2026-12-02T01:40:12') == stamp and slurm_time(str(stamp)) == stamp
    assert slurm_time('Unknown') is None and slurm_time(None) is None


def _resv(**extra):
    [resv] = parse_scontrol_show_reservation(own_fixture(MAINT))
    resv.update(extra)
    return resv


ENDS = slurm_time('2026-12-02T01:40:12')


@pytest.mark.parametrize('resv, want, expected', [
    (_resv(), (['gpu03', 'gpu01', 'gpu02'], ['root'], ['MAINT', 'IGNORE_JOBS'], ENDS), []),
    (_resv(Flags='MAINT,SPEC_NODES'), (['gpu01', 'gpu02', 'gpu03'], ['root'], ['MAINT', 'IGNORE_JOBS'], ENDS - 60), []),
    (_resv(), (['gpu01', 'gpu02'], ['root'], ['MAINT'], None), ['nodes gpu[01-03], want gpu01,gpu02']),
    (_resv(Users='root,alice'), (['gpu01', 'gpu02', 'gpu03'], ['root'], ['MAINT'], None), ['users root,alice, want root']),
    (_resv(Flags='SPEC_NODES'), (['gpu01', 'gpu02', 'gpu03'], ['root'], ['MAINT', 'IGNORE_JOBS'], None),
     ['flags SPEC_NODES lack MAINT']),
    (_resv(State='INACTIVE'), (['gpu01', 'gpu02', 'gpu03'], ['root'], ['MAINT'], None), ['state INACTIVE, want ACTIVE']),
    (_resv(), (['gpu01', 'gpu02', 'gpu03'], ['root'], ['MAINT'], ENDS + 1), ['ends 2026-12-02T01:40:12, too soon']),
    (_resv(Nodes='ALL'), (['gpu01'], ['root'], ['MAINT'], None), ['nodes ALL, want gpu01']),
], ids=['same', 'ignore-jobs-not-compared', 'other-nodes', 'other-users', 'flag-missing', 'inactive', 'ends-too-soon', 'all-nodes'])
def test_differences(resv, want, expected):
    assert differences(resv, *want) == expected


def test_summary():
    assert summary(None) == ''
    assert summary(_resv()).splitlines()[3] == 'Nodes: gpu[01-03]'


@FUZZ_SETTINGS
@given(texts_from([own_fixture(path) for path in (MAINT, SEVERAL, ONELINE, NOT_FOUND, NONE)]))
def test_fuzz(text):
    result = only_parse_error(parse_scontrol_show_reservation, text)
    if result is not None:
        assert all(isinstance(resv, dict) and 'ReservationName' in resv for resv in result)


@given(st.text(max_size=200))
def test_fuzz_any_text(text):
    only_parse_error(parse_scontrol_show_reservation, text)
