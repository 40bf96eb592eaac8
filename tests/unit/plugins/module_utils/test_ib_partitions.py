# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""opensm_partitions: IBTA codes, problems, partitions.conf rendered and parsed back (OpenSM's own examples from
doc/partition-config.txt @3.3.23 and a handmade file of its grammar's corners), diffs and the P_Keys a port holds."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from hypothesis import given

from _fuzz import FUZZ_SETTINGS, texts_from, only_parse_error
from _paths import own_fixture

from ansible_collections.aicluster.infra.plugins.module_utils import ib_partitions as ibp
from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.verify.partition import decide_partition, wanted_entries

EXAMPLES = 'partitions_conf/linux-rdma-opensm-3.3.23-partition-config-txt-examples.conf'
SUPPORTED = 'partitions_conf/opensm-3.3.23-partition-config-txt-examples-supported-handmade.conf'
GRAMMAR = 'partitions_conf/opensm-3.3.23-grammar-abbreviations-continuations-handmade.conf'
HCA, HCA2 = '0x946dae0300cde72c', '0x946dae0300cde72d'


def _default(**extra):
    item = {'name': 'Default', 'pkey': 0x7fff, 'ipoib': True, 'mtu': 4096, 'rate': 400,
            'members': [{'guid': 'ALL', 'membership': 'full'}]}
    item.update(extra)
    return item


def _tenant(**extra):
    item = {'name': 'tenant-a', 'pkey': '0x0001', 'ipoib': True, 'mtu': 4096, 'rate': 400, 'sl': 0, 'scope': 2,
            'defmember': 'full', 'members': [{'guid': HCA}, {'guid': HCA2, 'membership': 'limited'},
                                             {'guid': 'SELF', 'membership': 'both'}]}
    item.update(extra)
    return item


# ------------------------------------------------------------------------------------------------ IBTA codes

@pytest.mark.parametrize('mtu, code', [(256, 1), (512, 2), (1024, 3), (2048, 4), (4096, 5), ('4096', 5)])
def test_mtu_codes(mtu, code):
    assert ibp.mtu_code(mtu) == code


@pytest.mark.parametrize('rate, code', [(2.5, 2), (10, 3), (30, 4), (5, 5), (20, 6), (40, 7), (60, 8), (80, 9), (120, 10),
                                        (14, 11), (56, 12), (112, 13), (168, 14), (25, 15), (100, 16), (200, 17), (300, 18),
                                        (28, 19), (50, 20), (400, 21), (600, 22), (800, 23), (1200, 24), ('2.5', 2), (400.0, 21)])
def test_rate_codes(rate, code):
    assert ibp.rate_code(rate) == code


@pytest.mark.parametrize('value', [4092, 9000, 0, None, True, 'big'])
def test_unknown_mtu_names_the_allowed(value):
    with pytest.raises(ValueError, match=r'allowed \(bytes\): 256, 512, 1024, 2048, 4096'):
        ibp.mtu_code(value)


@pytest.mark.parametrize('value', [1600, 3, 0, None, False, 'fast'])
def test_unknown_rate_names_the_allowed(value):
    allowed = r'allowed \(Gb/s\): 2\.5, 5, 10, 14, 20, 25, 28, 30, 40, 50, 56, 60, 80, 100, 112, 120, 168, 200, 300, 400, 600, 800, 1200'
    with pytest.raises(ValueError, match=allowed):
        ibp.rate_code(value)


# ----------------------------------------------------------------------------------------------------- problems

def test_a_good_variable_has_no_problem():
    assert ibp.partitions_problems([_default(), _tenant()]) == []


@pytest.mark.parametrize('partitions, problem', [
    ([_default(), _tenant(pkey=0x8001)], 'opensm_partitions[1].pkey: 0x8001 is outside 0x0001-0x7ffe'),
    ([_default(), _tenant(pkey=0)], 'opensm_partitions[1].pkey: 0x0000 is outside 0x0001-0x7ffe'),
    ([_default(), _tenant(pkey='zz')], "opensm_partitions[1].pkey: 'zz' is not a number"),
    ([_default(), _tenant(pkey=0x7fff)], "opensm_partitions[1].pkey: 0x7fff is the default partition's, allowed only for the entry named Default"),
    ([_default(pkey=0x10)], 'opensm_partitions[0].pkey: the partition named Default must have P_Key 0x7fff'),
    ([_default(), _tenant(), _tenant(pkey=2)], "opensm_partitions[2].name: tenant-a is also opensm_partitions[1]'s name"),
    ([_default(), _tenant(), _tenant(name='b')], "opensm_partitions[2].pkey: 0x0001 is also opensm_partitions[1]'s P_Key"),
    ([_default(), _tenant(mtu=4092)], 'opensm_partitions[1].mtu: unknown MTU 4092; allowed (bytes): 256, 512, 1024, 2048, 4096'),
    ([_default(), _tenant(rate=1600)], 'opensm_partitions[1].rate: unknown rate 1600; allowed (Gb/s): 2.5,'),
    ([_default(), _tenant(ipoib=False, scope=None)], 'opensm_partitions[1].mtu: used only for the IPoIB broadcast group'),
    ([_default(), _tenant(ipoib='yes')], "opensm_partitions[1].ipoib must be true or false, got 'yes'"),
    ([_default(), _tenant(indx0=1)], 'opensm_partitions[1].indx0 must be true or false'),
    ([_default(), _tenant(sl=16)], 'opensm_partitions[1].sl: 16 must be an integer 0-15'),
    ([_default(), _tenant(scope=[2, 16])], 'opensm_partitions[1].scope: 16 must be an integer 1-15'),
    ([_default(), _tenant(ipoib=False, mtu=None, rate=None)], 'opensm_partitions[1].scope: used only for the IPoIB'),
    ([_default(), _tenant(defmember='all')], "opensm_partitions[1].defmember: 'all' is not one of full, limited, both"),
    ([_default(), _tenant(name='a b')], "opensm_partitions[1].name: 'a b' must be 1-31 characters"),
    ([_default(), _tenant(name='x' * 32)], 'opensm_partitions[1].name:'),
    ([_default(), _tenant(name='a:b')], "opensm_partitions[1].name: 'a:b'"),
    ([_default(), _tenant(members=[{'guid': 'nodeA'}])], "opensm_partitions[1].members[0].guid: 'nodeA' is not a port GUID"),
    ([_default(), _tenant(members=[{'guid': '0x0'}])], "opensm_partitions[1].members[0].guid: '0x0' is not a port GUID"),
    ([_default(), _tenant(members=[{'guid': HCA}, {'guid': HCA.upper().replace('X', 'x')}])],
     'opensm_partitions[1].members[1].guid: 0x946DAE0300CDE72C is listed twice'),
    ([_default(), _tenant(members=[{'guid': HCA, 'membership': 'member'}])],
     "opensm_partitions[1].members[0].membership: 'member' is not one of full, limited, both"),
    ([_default(), _tenant(members=[{'guid': HCA, 'pkey': 1}])], 'opensm_partitions[1].members[0] must be a dict with guid and membership'),
    ([_default(), _tenant(members='ALL')], 'opensm_partitions[1].members must be a list'),
    ([_default(), _tenant(qkey=1)], 'opensm_partitions[1]: unknown keys qkey; allowed: name, pkey,'),
    ([_default(), 'x'], "opensm_partitions[1] must be a dict, got 'x'"),
    ([_tenant()], 'opensm_partitions: no entry named Default with P_Key 0x7fff'),
    ([], 'opensm_partitions must be a non-empty list'),
    (None, 'opensm_partitions must be a non-empty list'),
], ids=lambda value: None if isinstance(value, (list, type(None))) else value.split(':')[0])
def test_every_refusal_names_the_item(partitions, problem):
    problems = ibp.partitions_problems(partitions)
    assert any(line.startswith(problem) for line in problems), problems


def test_default_is_optional_when_asked():
    assert ibp.partitions_problems([_tenant()], require_default=False) == []


def test_rate_above_the_slowest_member_port():
    rates = {HCA: 400, HCA2.upper().replace('X', 'x'): 200}
    problems = ibp.partitions_problems([_default(rate=100), _tenant()], port_rates=rates)
    assert problems == ["opensm_partitions[1].rate: 400 Gb/s is above port 0x946dae0300cde72d's 200 Gb/s: that port cannot "
                        "join the partition's IPoIB group; set rate to at most 200 (allowed: 2.5, 5, 10, 14, 20, 25, 28, 30, 40, "
                        "50, 56, 60, 80, 100, 112, 120, 168, 200, 300, 400, 600, 800, 1200)"]
    # ALL counts every port given: Default at 400 is refused by the 200 Gb/s port too
    assert ibp.partitions_problems([_default(), _tenant(rate=200)], port_rates=rates)[0].startswith(
        'opensm_partitions[0].rate: 400 Gb/s is above port 0x946dae0300cde72d')
    assert ibp.partitions_problems([_default(rate=200), _tenant(rate=200)], port_rates=rates) == []
    # a port the rates do not name is not judged; an unknown rate is said once, not compared
    assert ibp.partitions_problems([_default(rate=100), _tenant(members=[{'guid': '0x1'}])], port_rates=rates) == []
    assert len(ibp.partitions_problems([_default(rate=100), _tenant(rate=1600)], port_rates=rates)) == 1
    assert ibp.partitions_problems([_default()], port_rates={HCA: 'fast'}) == ["port rate of %s: 'fast' is not a number of Gb/s (ibstat Rate)" % HCA]


def test_render_refuses_a_bad_variable_with_every_problem():
    with pytest.raises(ValueError) as info:
        ibp.render_partitions_conf([_tenant(pkey=0x8001, mtu=9000)])
    assert str(info.value).splitlines() == [
        'opensm_partitions[0].pkey: 0x8001 is outside 0x0001-0x7ffe (the membership bit 0x8000 comes from each member\'s membership)',
        'opensm_partitions[0].mtu: unknown MTU 9000; allowed (bytes): 256, 512, 1024, 2048, 4096',
        'opensm_partitions: no entry named Default with P_Key 0x7fff; without one OpenSM makes every port but its own a limited '
        'member of the default partition; add e.g. {name: Default, pkey: 0x7fff, ipoib: true, mtu: 4096, rate: 400, members: '
        '[{guid: ALL, membership: full}]}']


# ----------------------------------------------------------------------------------------- render and parse back

def test_render_writes_codes_and_explicit_memberships():
    text = ibp.render_partitions_conf([_default(), _tenant()], header=['Managed by aicluster.infra', ''])
    assert text == ('# Managed by aicluster.infra\n#\n'
                    'Default=0x7fff,ipoib,mtu=5,rate=21:\n  ALL=full;\n'
                    'tenant-a=0x0001,ipoib,mtu=5,rate=21,sl=0,scope=2:\n'
                    '  0x946dae0300cde72c=full, 0x946dae0300cde72d=limited, SELF=both;\n')


def test_round_trip_and_no_diff():
    partitions = [_default(), _tenant(scope=[5, 2], rate=2.5, indx0=True),
                  {'name': 'empty', 'pkey': 3},
                  {'name': 'many', 'pkey': 0x7ffe, 'members': [{'guid': '0x%x' % (0x1000 + n), 'membership': 'full'} for n in range(20)]}]
    text = ibp.render_partitions_conf(partitions)
    assert 'empty=0x0003:;\n' in text
    assert max(len(line) for line in text.splitlines()) < 4095
    assert ibp.parse_partitions_conf(text) == ibp.normalize_partitions(partitions)
    assert ibp.partitions_conf_diff(partitions, text) == []
    assert ibp.parse_partitions_conf(text)[1]['scope'] == [2, 5] and ibp.parse_partitions_conf(text)[1]['rate'] == 2.5


def test_diff_names_what_differs():
    partitions = [_default(), _tenant()]
    text = ibp.render_partitions_conf(partitions)
    edited = text.replace('rate=21,sl=0', 'rate=16,sl=0').replace('0x946dae0300cde72d=limited', '0x946dae0300cde72d=full')
    edited += 'extra=0x0009: ALL=limited;\n'
    assert ibp.partitions_conf_diff(partitions, edited) == [
        "partition tenant-a (0x0001): rate is 100 in partitions.conf, 400 in opensm_partitions",
        'partition tenant-a (0x0001): 1 members missing from partitions.conf: 0x946dae0300cde72d=limited',
        'partition tenant-a (0x0001): 1 members in partitions.conf only: 0x946dae0300cde72d=full',
        'partition extra (0x0009) is in partitions.conf only']
    assert ibp.partitions_conf_diff(partitions, text.split('tenant-a', maxsplit=1)[0]) == ['partition tenant-a (0x0001) is missing from partitions.conf']
    assert ibp.partitions_conf_diff(partitions, 'garbage\n')[0].startswith('partitions.conf does not parse: no partition definition found')
    reordered = text.replace('0x946dae0300cde72c=full, 0x946dae0300cde72d=limited', '0x946dae0300cde72d=limited, 0x946dae0300cde72c=full')
    assert ibp.partitions_conf_diff(partitions, reordered) == [
        "partition tenant-a (0x0001): the members are in another order (OpenSM keeps the last of a port's entries)"]


# ------------------------------------------------------------------------------- UFM's partitions.conf.user_ext

def test_user_ext_leaves_the_default_partition_to_ufm():
    assert ibp.user_ext_partitions([_default(), _tenant()]) == [_tenant()]
    assert ibp.user_ext_partitions([_default(pkey='0x7FFF'), _tenant(pkey='x')]) == [_tenant(pkey='x')]
    assert ibp.user_ext_partitions([_default()]) == [] and ibp.user_ext_partitions(None) == []


def test_user_ext_rendered_parsed_back_and_without_default():
    text = ibp.render_user_ext([_tenant()], header=['managed'])
    assert text.startswith('# managed\n') and '0x7fff' not in text
    assert text.splitlines()[1] == 'tenant-a=0x0001,ipoib,mtu=5,rate=21,sl=0,scope=2:'
    assert ibp.partitions_conf_diff([_tenant()], text) == []
    # nothing of the site's own: a header only, which parses back to no partition
    empty = ibp.render_user_ext([], header=['managed'])
    assert empty == '# managed\n' and ibp.parse_partitions_conf(empty) == [] and ibp.partitions_conf_diff([], empty) == []


def test_user_ext_refuses_the_default_partition_and_bad_items():
    with pytest.raises(ValueError, match=r'opensm_partitions\[1\]\.pkey: 0x7fff is the default partition, which UFM defines'):
        ibp.render_user_ext([_tenant(), _default()])
    with pytest.raises(ValueError, match=r'opensm_partitions\[0\]\.pkey: 0x8001 is outside'):
        ibp.render_user_ext([_tenant(pkey='0x8001')])
    with pytest.raises(ValueError, match='opensm_partitions must be a list'):
        ibp.render_user_ext('x')


# ------------------------------------------------------------------------------------ OpenSM's own examples

def test_opensm_examples_are_refused_naming_the_construct():
    text = own_fixture(EXAMPLES)
    with pytest.raises(ParseError, match=r"partition 'NewPartition' has no P_Key \(OpenSM generates one\).*line 6"):
        ibp.parse_partitions_conf(text)
    without_new = text.replace(' NewPartition , ipoib : 0x123456=full, 0x3456789034=limi, 0x2134af2306 ;', '')
    with pytest.raises(ParseError, match=r'mgid lines \(multicast groups\) are not supported.*line 21'):
        ibp.parse_partitions_conf(without_new)


def test_opensm_examples_supported_part():
    parsed = ibp.parse_partitions_conf(own_fixture(SUPPORTED))
    assert [(p['name'], p['pkey']) for p in parsed] == [('Default', 0x7fff), ('YetAnotherOne', 0x300), ('ShareIO', 0x80)]
    default, another, share = parsed
    assert default['members'] == [{'guid': 'ALL', 'membership': 'limited'}, {'guid': 'SELF', 'membership': 'full'},
                                  {'guid': 'ALL', 'membership': 'limited'}, {'guid': 'ALL_SWITCHES', 'membership': 'full'},
                                  {'guid': 'SELF', 'membership': 'full'}]
    assert another['members'] == [{'guid': 'SELF', 'membership': 'full'}, {'guid': 'ALL', 'membership': 'limited'}]
    # the doc's own comments say which are limited: defmember applies per definition
    memberships = dict((m['guid'], m['membership']) for m in share['members'])
    assert memberships == {'0x0000000000123451': 'full', '0x0000000000123452': 'full', '0x0000000000123453': 'limited',
                           '0x0000000000123454': 'limited', '0x0000000000123455': 'full', '0x0000000000123456': 'limited',
                           '0x0000000000123457': 'limited', '0x0000000000123458': 'full', '0x0000000000123459': 'full',
                           '0x000000000012345a': 'full', '0x000000000012345b': 'full', '0x000000000012345c': 'limited',
                           '0x000000000012345d': 'full'}
    assert all(not p['ipoib'] and p['mtu'] is None and p['rate'] is None for p in parsed)


def test_grammar_corners():
    default, compute, storage = ibp.parse_partitions_conf(own_fixture(GRAMMAR))
    assert default == {'name': 'Default', 'pkey': 0x7fff, 'ipoib': True, 'mtu': 4096, 'rate': 400, 'sl': None, 'scope': [],
                       'indx0': False, 'members': [{'guid': 'ALL_CAS', 'membership': 'full'}, {'guid': 'SELF', 'membership': 'full'}]}
    assert compute == {'name': 'compute', 'pkey': 0x0001, 'ipoib': True, 'mtu': 4096, 'rate': 100, 'sl': 1, 'scope': [2, 5],
                       'indx0': False, 'members': [{'guid': HCA, 'membership': 'full'}, {'guid': HCA2, 'membership': 'limited'},
                                                   {'guid': '0x0000000000000010', 'membership': 'both'}]}
    assert storage == {'name': 'storage', 'pkey': 2, 'ipoib': False, 'mtu': None, 'rate': None, 'sl': None, 'scope': [],
                       'indx0': True, 'members': [{'guid': 'ALL_SWITCHES', 'membership': 'full'}]}


@pytest.mark.parametrize('text, message', [
    ('Default=0x7fff, ipoib\n: ALL=full;\n', 'no partition definition found'),
    ('p=0x1, Q_Key=0x1: ALL;', 'partition flag Q_Key is not supported'),
    ('p=0x1, TC=1: ALL;', 'partition flag TClass is not supported'),
    ('p=0x1, F=1: ALL;', 'partition flag FlowLabel is not supported'),
    ('p=0x1, ipoib, mtu=6: ALL;', r'partition flag mtu=6 is not a known IBTA code; known: 1 \(256\), 2 \(512\)'),
    ('p=0x1, ipoib, rate=25: ALL;', r'partition flag rate=25 is not a known IBTA code; known: 2 \(2.5\), 3 \(10\)'),
    ('p=0x1, ipoib, rate=0: ALL;', 'partition flag rate=0 is not a known IBTA code'),
    ('p=0x1, scope=16: ALL;', 'partition flag scope=16 must be 1-15'),
    ('p=0x1, sl=x: ALL;', 'partition flag sl=x must be 0-15'),
    ('p=0x1, defmember=everyone: ALL;', 'defmember=everyone is not one of full, limited, both'),
    ('p=0x1, , ipoib: ALL;', 'empty partition flag'),
    ('p=0x1, fancy: ALL;', "unknown partition flag 'fancy'"),
    ('p=0x1: 0x12=member;', "unknown membership 'member' of 0x12"),
    ('p=0x1: node01=full;', "bad PortGUID 'node01'"),
    ('p=0x1: 0x0;', "bad PortGUID '0x0'"),
    ('p=0x1: 0x10000000000000000;', "bad PortGUID"),
    ('p=zz: ALL;', "bad partition definition: P_Key 'zz' is not a number"),
    ('p: ALL;', "partition 'p' has no P_Key"),
    ('p=0x1, ipoib, mtu=5: ALL;\np=0x1, mtu=4: SELF;', 'P_Key 0x0001 is defined again with mtu 2048 \\(first 4096\\)'),
])
def test_parse_refusals(text, message):
    with pytest.raises(ParseError, match=message):
        ibp.parse_partitions_conf(text)


def test_parse_accepts_what_opensm_accepts():
    # =PKey alone (partition_create(): a name starting with a digit is the P_Key), no final ';', octal and decimal
    assert ibp.parse_partitions_conf('0x12: 017=full') == [
        {'name': '', 'pkey': 0x12, 'ipoib': False, 'mtu': None, 'rate': None, 'sl': None, 'scope': [], 'indx0': False,
         'members': [{'guid': '0x000000000000000f', 'membership': 'full'}]}]
    merged = ibp.parse_partitions_conf('a=1, ipoib, mtu=5: ALL; b=1, rate=21, scope=2: SELF=full;')
    assert len(merged) == 1 and merged[0]['name'] == 'a' and merged[0]['mtu'] == 4096 and merged[0]['rate'] == 400
    assert ibp.parse_partitions_conf('# nothing\n\n') == []
    with pytest.raises(ParseError):
        ibp.parse_partitions_conf(b'Default=0x7fff: ALL;')


@FUZZ_SETTINGS
@given(texts_from([EXAMPLES, SUPPORTED, GRAMMAR]))
def test_parser_raises_only_parse_error(text):
    only_parse_error(ibp.parse_partitions_conf, text)


# ----------------------------------------------------------------------------------------------- expected P_Keys

def test_expected_pkeys_for_verify():
    partitions = [_default(), _tenant(), {'name': 'switches', 'pkey': 5, 'members': [{'guid': 'ALL_SWITCHES', 'membership': 'full'}]},
                  {'name': 'cas', 'pkey': 6, 'members': [{'guid': 'ALL_CAS'}]}]
    assert ibp.expected_pkeys(partitions, HCA) == ['0x0006', '0x8001', '0xffff']
    assert ibp.expected_pkeys(partitions, HCA2) == ['0x0001', '0x0006', '0xffff']
    assert ibp.expected_pkeys(partitions, '0x1', is_switch=True) == ['0x8005', '0xffff']
    # SELF=both: full without allow_both_pkeys, both with it
    assert ibp.expected_pkeys(partitions, '0x2', sm_guid='0x2') == ['0x0006', '0x8001', '0xffff']
    assert ibp.expected_pkeys(partitions, '0x2', sm_guid='0x2', allow_both_pkeys=True) == ['0x0001', '0x0006', '0x8001', '0xffff']
    # what verify/partition.py takes
    assert wanted_entries(ibp.expected_pkeys(partitions, HCA)) == {(0x0006, False), (0x0001, True), (0x7fff, True)}
    held = {'gpu01': {'mlx5_0:1': {'0': '0xffff', '1': '0x8001', '2': '0x0006'}}}
    result = decide_partition(held, {'pkeys': ibp.expected_pkeys(partitions, HCA)})['nodes']['gpu01'][0]
    assert result['passed'], result


def test_expected_pkeys_last_specifier_wins_and_implicit_default():
    # osm_prtn.c osm_prtn_add_port(): without allow_both_pkeys a later entry replaces the port's membership
    partitions = [{'name': 'p', 'pkey': 1, 'members': [{'guid': HCA, 'membership': 'full'}, {'guid': 'ALL', 'membership': 'limited'}]}]
    # no Default entry: OpenSM's "Default=0x7fff : ALL=limited, SELF=full"
    assert ibp.expected_pkeys(partitions, HCA) == ['0x0001', '0x7fff']
    assert ibp.expected_pkeys(partitions, HCA, sm_guid=HCA) == ['0x0001', '0xffff']
    assert ibp.expected_pkeys(partitions, HCA, allow_both_pkeys=True) == ['0x0001', '0x7fff', '0x8001']
    with pytest.raises(ValueError, match="expected_pkeys: 'gpu01' is not a port GUID"):
        ibp.expected_pkeys(partitions, 'gpu01')
    with pytest.raises(ValueError, match='opensm_partitions'):
        ibp.expected_pkeys([{'name': 'p', 'pkey': 0x9000}], HCA)


def test_pkey_number():
    assert ibp.pkey_number('0x8001') == 0x8001 and ibp.pkey_number(' 12 ') == 12 and ibp.pkey_number(5) == 5
    for bad in (True, 'x1', None):
        with pytest.raises(ValueError, match='is not a number'):
            ibp.pkey_number(bad)


def test_expected_pkeys_by_port_for_a_fleet():
    partitions = [_default(), _tenant(), {'name': 'switches', 'pkey': 5, 'members': [{'guid': 'ALL_SWITCHES', 'membership': 'full'}]}]
    by_port = ibp.expected_pkeys_by_port(partitions, [HCA, HCA2.upper().replace('X', 'x'), '0x1', '0x2'], switch_guids=['0x01'], sm_guid='0x2')
    assert by_port == {HCA: ['0x8001', '0xffff'], HCA2: ['0x0001', '0xffff'], '0x0000000000000001': ['0x8005', '0xffff'],
                       '0x0000000000000002': ['0x8001', '0xffff']}
    assert by_port[HCA] == ibp.expected_pkeys(partitions, HCA)
    with pytest.raises(ValueError, match="expected_pkeys: 'x' is not a port GUID"):
        ibp.expected_pkeys_by_port(partitions, ['x'])
