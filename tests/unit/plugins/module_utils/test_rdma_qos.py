# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugins/module_utils/rdma_qos.py: the wanted settings checked, the readers of mlnx_qos (real captures), dcb -j,
traffic_class and configfs text, the comparison and the commands."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest
from hypothesis import given

from _fuzz import FUZZ_SETTINGS, only_parse_error, texts_from
from _paths import own_fixture, real_fixture

from ansible_collections.aicluster.infra.plugins.module_utils import rdma_qos
from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.mlnx_qos import parse_mlnx_qos

DEFAULTS = {'trust': 'dscp', 'pfc_priorities': [3], 'dscp_map': {26: 3, 48: 6}, 'ecn_priorities': [3],
            'cnp_dscp': 48, 'cnp_prio': 6, 'roce_tos': 106, 'roce_mode': 'RoCE v2', 'traffic_class': 106, 'port': 1}
FRESH = {'trust': 'pcp', 'pfc': [], 'dscp2prio': {}, 'ecn_np': [], 'ecn_rp': [], 'cnp_dscp': 0, 'cnp_prio': 7,
         'roce_tos': 0, 'roce_mode': 'RoCE v2', 'traffic_class': rdma_qos.UNSET}

# `dcb -j app show dev X` and `dcb -j pfc show dev X` in the layout of iproute2 dcb/dcb_app.c and dcb/dcb_pfc.c
# (handmade: no DCB netdev here to run iproute2 6.1's dcb on).
DCB_APP = '{"dscp_prio":[[26,3],[48,6]]}\n'
DCB_APP_CONFLICT = '{"default_prio":[0],"dscp_prio":[[24,3],[26,2],[26,3],[48,6]]}'
DCB_PFC = '{"pfc_cap":8,"macsec_bypass":false,"delay":0,"prio_pfc":[false,false,false,true,false,false,false,false]}'


def settings(**changes):
    params = dict(DEFAULTS, **changes)
    wanted, problems, _warnings = rdma_qos.wanted_settings(params, 'mlnx_qos')
    assert problems == []
    return wanted


def test_defaults_normalized():
    wanted = settings()
    assert wanted == {'trust': 'dscp', 'pfc': [3], 'dscp_map': {26: 3, 48: 6}, 'ecn_np': [3], 'ecn_rp': [3],
                      'cnp_dscp': 48, 'cnp_prio': 6, 'roce_tos': 106, 'roce_mode': 'RoCE v2', 'traffic_class': 106}
    # DSCP keys arrive as strings through Ansible's JSON
    assert settings(dscp_map={'26': '3', '48': 6})['dscp_map'] == {26: 3, 48: 6}


def test_bad_values_one_line_per_parameter():
    params = dict(DEFAULTS, pfc_priorities=[3, 8, 9], ecn_priorities=[-1], dscp_map={'64': 3, '26': 9, 'x': 1},
                  cnp_dscp=64, cnp_prio=8, roce_tos=256, traffic_class=300, port=0)
    _wanted, problems, _warnings = rdma_qos.wanted_settings(params, 'mlnx_qos')
    assert problems[:2] == ['pfc_priorities: 8, 9 are not priorities (allowed: 0-7)',
                            'ecn_priorities: -1 is not a priority (allowed: 0-7)']
    assert len(problems) == 8
    by_name = dict(line.split(':', 1) for line in problems)
    assert set(by_name) == {'pfc_priorities', 'ecn_priorities', 'dscp_map', 'cnp_dscp', 'cnp_prio', 'roce_tos',
                            'traffic_class', 'port'}
    assert '64 is not a DSCP (allowed: 0-63)' in by_name['dscp_map']
    assert '9 (for DSCP 26) is not a priority (allowed: 0-7)' in by_name['dscp_map']
    assert 'x is not a DSCP' in by_name['dscp_map']
    assert by_name['cnp_dscp'] == ' 64 is not a DSCP (allowed: 0-63, or null to leave it)'
    assert by_name['roce_tos'] == ' 256 is not a ToS (allowed: 0-255, or null to leave it)'
    assert by_name['traffic_class'] == ' 300 is not a traffic class (allowed: 0-255, or null to leave it)'


def test_dcb_needs_a_dscp_entry_for_dscp_trust_and_pcp_drops_the_map():
    _wanted, problems, _warnings = rdma_qos.wanted_settings(dict(DEFAULTS, dscp_map={}), 'dcb')
    assert len(problems) == 1 and problems[0].startswith('dscp_map: empty, but trust dscp through dcb')
    wanted, problems, warnings = rdma_qos.wanted_settings(dict(DEFAULTS, trust='pcp'), 'dcb')
    assert problems == [] and wanted['dscp_map'] == {}
    assert warnings == ['trust pcp: dscp_map is not applied (a DSCP entry would switch mlx5 back to DSCP trust)']


def test_cnp_priority_disagreeing_with_the_map_is_warned():
    _wanted, problems, warnings = rdma_qos.wanted_settings(dict(DEFAULTS, cnp_prio=7), 'mlnx_qos')
    assert problems == [] and len(warnings) == 1 and 'CNP DSCP 48 to priority 6, but cnp_prio is 7' in warnings[0]


# -- readers ---------------------------------------------------------------------------------------------------------

REAL = [
    ('mlnx_qos/att-netarbiter-eth4-trust-dscp-pfc3-tabs-expanded-no-rxbuf.txt',
     'dscp', [3], {26: [3], 48: [6], 0: [0], 63: [7]}),
    ('mlnx_qos/zh-notes-centos12-ens6-pcp-rxbuf-524160-tabs-expanded.txt', 'pcp', [], {}),
]


@pytest.mark.parametrize('relpath,trust,pfc,entries', REAL, ids=[row[0].split('/')[1] for row in REAL])
def test_module_reading_of_real_mlnx_qos_captures(relpath, trust, pfc, entries):
    parsed = parse_mlnx_qos(real_fixture(relpath))
    assert rdma_qos.mlnx_qos_no_dcb(parsed) is None
    state = rdma_qos.dcb_from_mlnx_qos(parsed)
    assert (state['trust'], state['pfc']) == (trust, pfc)
    for dscp, prios in entries.items():
        assert state['dscp2prio'][dscp] == prios
    assert len(state['dscp2prio']) == (64 if trust == 'dscp' else 0)
    # what the module decides from it: the dscp capture holds trust, PFC and the map already
    wanted = settings()
    left = rdma_qos.differing(wanted, dict(FRESH, **state))
    assert ('trust' in left, 'pfc' in left, 'dscp_map[26]' in left) == ((trust != 'dscp',) * 3)


def test_handmade_mlnx_qos_firmware_dcbx_without_buffers():
    parsed = parse_mlnx_qos(own_fixture('mlnx_qos/mlnx_qos-mlnx-ofed-4.x-cx5-fw-dcbx-pcp-no-buffers-lldpad-handmade.txt'))
    state = rdma_qos.dcb_from_mlnx_qos(parsed)
    assert state['trust'] == 'pcp' and state['dscp2prio'] == {}


def test_mlnx_qos_without_dcb_names_the_tools_line():
    text = ('Priority trust state is not supported on your system\nBuffers commands are not supported on your system\n'
            'Rate limit is not supported on your system!\nETS features are not supported on your system\n')
    assert rdma_qos.mlnx_qos_no_dcb(parse_mlnx_qos(text)) == 'Priority trust state is not supported on your system'


def test_parse_dcb_app_and_pfc():
    assert rdma_qos.parse_dcb_app(DCB_APP) == {26: [3], 48: [6]}
    assert rdma_qos.parse_dcb_app('{}') == {}
    assert rdma_qos.parse_dcb_app(DCB_APP_CONFLICT) == {24: [3], 26: [2, 3], 48: [6]}
    assert rdma_qos.parse_dcb_app('{"dscp_prio":[["CS3",3],["AF31",3],["EF",5]]}') == {24: [3], 26: [3], 46: [5]}
    assert rdma_qos.parse_dcb_pfc(DCB_PFC) == [3]
    assert rdma_qos.parse_dcb_pfc('{"prio_pfc":["off","off","off","on","on","off","off","off"]}') == [3, 4]
    for text in ('', 'dscp-prio 26:3', '[]', '{"dscp_prio":[[64,3]]}', '{"dscp_prio":[[26]]}', '{"dscp_prio":{}}'):
        with pytest.raises(ParseError):
            rdma_qos.parse_dcb_app(text)
    for text in ('{}', '{"prio_pfc":[true]}', '{"prio_pfc":[1,0,0,0,0,0,0,0]}', 'prio-pfc 0:off'):
        with pytest.raises(ParseError):
            rdma_qos.parse_dcb_pfc(text)


def test_parse_traffic_class_both_layouts():
    assert rdma_qos.parse_traffic_class('Global tclass=106\n') == 106
    assert rdma_qos.parse_traffic_class('106\n') == 106
    assert rdma_qos.parse_traffic_class('') == rdma_qos.UNSET
    assert rdma_qos.parse_traffic_class('Global tclass=106\ntclass=96,dst_ip=10.0.0.0/8\n') == 106
    assert rdma_qos.parse_traffic_class('tclass=96,dst_ip=10.0.0.0/8\n') == rdma_qos.UNSET
    for text in ('Global tclass=300', 'traffic class: high'):
        with pytest.raises(ParseError):
            rdma_qos.parse_traffic_class(text)


def test_parse_number_and_roce_mode():
    assert rdma_qos.parse_number('48\n', 'cnp_dscp') == 48
    assert rdma_qos.parse_roce_mode('RoCE v2\n') == 'RoCE v2'
    assert rdma_qos.parse_roce_mode('IB/RoCE v1\n') == 'IB/RoCE v1'
    with pytest.raises(ParseError):
        rdma_qos.parse_number('', 'cnp_dscp')
    with pytest.raises(ParseError):
        rdma_qos.parse_roce_mode('RoCE v3')


@FUZZ_SETTINGS
@given(texts_from([DCB_APP, DCB_APP_CONFLICT, DCB_PFC, 'Global tclass=106\n', '106\n']))
def test_readers_never_raise_anything_but_parse_error(text):
    for parser in (rdma_qos.parse_dcb_app, rdma_qos.parse_dcb_pfc, rdma_qos.parse_traffic_class):
        result = only_parse_error(parser, text)
        if result is not None:
            json.dumps(result)


# -- decisions -------------------------------------------------------------------------------------------------------

def test_fresh_port_differs_everywhere_and_the_prediction_holds():
    wanted = settings()
    assert rdma_qos.differing(wanted, FRESH) == ['trust', 'pfc', 'dscp_map[26]', 'dscp_map[48]', 'ecn_np', 'ecn_rp',
                                                 'cnp_dscp', 'cnp_prio', 'roce_tos', 'traffic_class']
    after = rdma_qos.predict(FRESH, wanted)
    assert rdma_qos.differing(wanted, after) == []
    assert rdma_qos.changes(FRESH, after, wanted) == [
        'trust: pcp -> dscp', 'pfc: none -> 3', 'dscp_map[26]: unset -> 3', 'dscp_map[48]: unset -> 6',
        'ecn_np: none -> 3', 'ecn_rp: none -> 3', 'cnp_dscp: 0 -> 48', 'cnp_prio: 7 -> 6', 'roce_tos: 0 -> 106',
        'traffic_class: unset -> 106']
    assert rdma_qos.diff_text(FRESH, wanted).splitlines()[:2] == ['trust: pcp', 'pfc: none']
    assert 'roce_mode: RoCE v2' in rdma_qos.diff_text(after, wanted)


def test_ecn_is_switched_on_where_wanted_and_left_elsewhere():
    wanted = settings()
    state = dict(rdma_qos.predict(FRESH, wanted), ecn_np=[0, 1, 2, 4, 5, 6, 7], ecn_rp=[0, 1, 2, 3, 4, 5, 6, 7])
    assert rdma_qos.differing(wanted, state) == ['ecn_np']
    assert rdma_qos.predict(state, wanted)['ecn_np'] == list(range(8))


def test_unavailable_interfaces_are_not_differences():
    wanted = settings()
    inbox = dict(rdma_qos.predict(FRESH, wanted), ecn_np=None, ecn_rp=None, cnp_dscp=None, cnp_prio=None,
                 traffic_class=None)
    assert rdma_qos.differing(wanted, inbox) == []
    assert rdma_qos.unavailable(wanted, inbox) == ['ecn_np', 'ecn_rp', 'cnp_dscp', 'cnp_prio', 'traffic_class']
    assert rdma_qos.unavailable(settings(traffic_class=None, ecn_priorities=[]), inbox) == ['cnp_dscp', 'cnp_prio']
    assert 'ecn_np: unavailable' in rdma_qos.diff_text(inbox, wanted)


def test_mlnx_qos_commands():
    wanted = settings()
    assert rdma_qos.mlnx_qos_trust_pfc_argv('/usr/bin/mlnx_qos', 'eth4', wanted, FRESH) == [
        '/usr/bin/mlnx_qos', '-i', 'eth4', '--trust', 'dscp', '--pfc', '0,0,0,1,0,0,0,0']
    assert rdma_qos.mlnx_qos_trust_pfc_argv('mlnx_qos', 'eth4', wanted, dict(FRESH, trust='dscp')) == [
        'mlnx_qos', '-i', 'eth4', '--pfc', '0,0,0,1,0,0,0,0']
    # after --trust dscp the default map (d -> d >> 3) already holds 26 -> 3 and 48 -> 6
    trusted = dict(FRESH, trust='dscp', pfc=[3], dscp2prio=dict((d, [d >> 3]) for d in range(64)))
    assert rdma_qos.mlnx_qos_trust_pfc_argv('mlnx_qos', 'eth4', wanted, trusted) is None
    assert rdma_qos.mlnx_qos_dscp_argv('mlnx_qos', 'eth4', wanted, trusted) is None
    broadcom = settings(dscp_map={26: 3, 48: 7}, cnp_prio=7)
    assert rdma_qos.mlnx_qos_dscp_argv('mlnx_qos', 'eth4', broadcom, trusted) == [
        'mlnx_qos', '-i', 'eth4', '--dscp2prio', 'set,48,7']


def test_dcb_commands():
    wanted = settings()
    assert rdma_qos.dcb_argvs('/usr/sbin/dcb', 'eth4', wanted, FRESH) == [
        ['/usr/sbin/dcb', 'pfc', 'set', 'dev', 'eth4', 'prio-pfc', '0:off', '1:off', '2:off', '3:on', '4:off', '5:off',
         '6:off', '7:off'],
        ['/usr/sbin/dcb', 'app', 'replace', 'dev', 'eth4', 'dscp-prio', '26:3', '48:6']]
    conflicted = dict(FRESH, trust='dscp', pfc=[3], dscp2prio={26: [2, 3], 48: [6]})
    assert rdma_qos.differing(wanted, conflicted)[:1] == ['dscp_map[26]']
    assert rdma_qos.dcb_argvs('dcb', 'eth4', wanted, conflicted) == [
        ['dcb', 'app', 'replace', 'dev', 'eth4', 'dscp-prio', '26:3']]
    pcp = settings(trust='pcp')
    assert rdma_qos.dcb_argvs('dcb', 'eth4', pcp, conflicted) == [['dcb', 'app', 'flush', 'dev', 'eth4', 'dscp-prio']]
    assert rdma_qos.dcb_argvs('dcb', 'eth4', pcp, dict(conflicted, trust='pcp', dscp2prio={})) == []


def test_file_writes_only_what_differs():
    wanted = settings()
    file_paths = rdma_qos.paths('/sys', '/sys/kernel/config', 'eth4', 'mlx5_2', 1)
    state = dict(FRESH, ecn_np=[3], roce_tos=106)
    assert rdma_qos.file_writes(file_paths, wanted, state) == [
        ('/sys/class/net/eth4/ecn/roce_rp/enable/3', '1\n'),
        ('/sys/class/net/eth4/ecn/roce_np/cnp_dscp', '48\n'),
        ('/sys/class/net/eth4/ecn/roce_np/cnp_802p_prio', '6\n'),
        ('/sys/class/infiniband/mlx5_2/tc/1/traffic_class', '106\n')]
    assert file_paths['roce_mode'] == '/sys/kernel/config/rdma_cm/mlx5_2/ports/1/default_roce_mode'
    assert rdma_qos.file_writes(file_paths, wanted, dict(state, traffic_class=None, ecn_rp=None)) == [
        ('/sys/class/net/eth4/ecn/roce_np/cnp_dscp', '48\n'), ('/sys/class/net/eth4/ecn/roce_np/cnp_802p_prio', '6\n')]


def test_results_are_json_with_string_keys():
    wanted = settings()
    assert json.loads(json.dumps(rdma_qos.json_settings(wanted)))['dscp_map'] == {'26': 3, '48': 6}
    assert rdma_qos.json_state(dict(FRESH, dscp2prio={26: [3]}))['dscp2prio'] == {'26': [3]}
