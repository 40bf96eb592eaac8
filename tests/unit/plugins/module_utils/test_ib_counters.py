# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Link-quality parsers: perfquery, mlxlink -c, ethtool -S, rdma statistic / link."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from _paths import REAL_FIXTURES, own_fixture, real_fixture

from ansible_collections.aicluster.infra.plugins.module_utils import ib_counters
from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError


def test_perfquery_extended_with_additional_error_counters():
    parsed = ib_counters.parse_perfquery(own_fixture('perfquery/perfquery-x-rdma-core-50-cx7-ndr-addl-counters-handmade.txt'))
    assert parsed['extended'] is True and parsed['has_errors'] is True
    assert (parsed['lid'], parsed['port'], parsed['capmask'], parsed['capmask2']) == (204, 1, '0x5A00', '0x0000002')
    counters = parsed['counters']
    assert counters['SymbolErrorCounter'] == 7 and counters['LinkDownedCounter'] == 1 and counters['PortXmitDiscards'] == 2
    assert counters['PortXmitData'] == 38000443084 and counters['PortXmitWait'] == 48213
    assert 'CounterSelect' in counters and counters['CounterSelect'] == 0   # 0x0000 read as a number


def test_perfquery_extended_without_error_counters():
    parsed = ib_counters.parse_perfquery(own_fixture('perfquery/perfquery-x-rdma-core-44-cx6-hdr-data-only-handmade.txt'))
    assert parsed['extended'] is True and parsed['has_errors'] is False
    assert 'SymbolErrorCounter' not in parsed['counters'] and parsed['counters']['PortRcvData'] == 37999812200


def test_perfquery_basic_counters_saturate():
    parsed = ib_counters.parse_perfquery(own_fixture('perfquery/perfquery-rdma-core-44-cx6-hdr-basic-saturated-handmade.txt'))
    assert parsed['extended'] is False and parsed['has_errors'] is True and parsed['capmask2'] is None
    assert parsed['counters']['SymbolErrorCounter'] == 65535 and parsed['counters']['LinkErrorRecoveryCounter'] == 255


@pytest.mark.parametrize('text', ['', 'ibwarn: [123] mad_rpc_open_port: can\'t open UMAD port\n', 'SymbolErrorCounter:....0\n'],
                         ids=['empty', 'ibwarn-only', 'no-header'])
def test_perfquery_not_perfquery(text):
    with pytest.raises(ParseError):
        ib_counters.parse_perfquery(text)


def test_mlxlink_ib_marginal_link():
    parsed = ib_counters.parse_mlxlink(own_fixture('mlxlink/mlxlink-c-mft-4.26-cx7-ndr-ib-marginal-handmade.txt'))
    assert parsed['sections']['Operational Info']['Speed'] == 'IB-NDR'
    assert parsed['sections']['Operational Info']['Width'] == '4x'
    ber = parsed['ber']
    assert ber['effective_ber'] == pytest.approx(5e-12) and ber['raw_ber'] == pytest.approx(3e-8)
    assert ber['symbol_ber'] == pytest.approx(5e-12)
    assert (ber['effective_errors'], ber['symbol_errors'], ber['link_down'], ber['link_error_recovery']) == (212, 212, 1, 4)


def test_mlxlink_ethernet_healthy_has_no_symbol_lines():
    parsed = ib_counters.parse_mlxlink(own_fixture('mlxlink/mlxlink-c-mft-4.26-cx7-400g-eth-healthy-handmade.txt'))
    assert parsed['ber']['effective_ber'] == 0.0   # 15E-255: nothing counted
    assert 'symbol_ber' not in parsed['ber'] and 'link_down' not in parsed['ber']
    assert parsed['sections']['Operational Info']['Physical state'] == 'ETH_AN_FSM_ENABLE'


@pytest.mark.parametrize('text, value', [
    ('15E-255', 0.0), ('15e-255', 0.0), ('15E-25', 1.5e-24), ('3E-11', 3e-11), ('1e-12', 1e-12), ('N/A', None),
    ('', None)])
def test_parse_ber(text, value):
    assert ib_counters.parse_ber(text) == (pytest.approx(value) if value is not None else None)


def test_mlxlink_not_mlxlink():
    with pytest.raises(ParseError):
        ib_counters.parse_mlxlink('-E- Failed to open device: "mlx5_9", No such file or directory\n')


def test_ethtool_stats():
    stats = ib_counters.parse_ethtool_stats(own_fixture('ethtool/ethtool-S-mlx5-cx7-400g-roce-prio3-handmade.txt'))
    assert stats['rx_prio3_discards'] == 14 and stats['rx_prio3_pause'] == 2231 and stats['link_down_events_phy'] == 1
    with pytest.raises(ParseError):
        ib_counters.parse_ethtool_stats('Cannot get stats strings information: Operation not supported\n')


def test_rdma_statistic_and_link():
    stats = ib_counters.parse_rdma_statistic(own_fixture('rdma/rdma-statistic-iproute2-6.1-cx7-roce-handmade.txt'))
    assert list(stats) == ['mlx5_0/1']
    assert stats['mlx5_0/1']['out_of_sequence'] == 12 and stats['mlx5_0/1']['np_cnp_sent'] == 377
    links = ib_counters.parse_rdma_link(own_fixture('rdma/rdma-link-iproute2-6.1-cx7-roce-ib-mixed-handmade.txt'))
    assert links['mlx5_0/1'] == {'state': 'ACTIVE', 'physical_state': 'LINK_UP', 'netdev': 'enp24s0np0'}
    assert links['mlx5_2/1']['netdev'] is None
    with pytest.raises(ParseError):
        ib_counters.parse_rdma_statistic('Wrong device name\n')


def test_perfquery_x_l_two_ports_one_record_each():
    parsed = ib_counters.parse_perfquery(own_fixture('perfquery/perfquery-x-l-rdma-core-50-qm9700-switch-2ports-handmade.txt'))
    assert sorted(parsed['ports']) == [1, 2]
    one, two = parsed['ports'][1], parsed['ports'][2]
    assert (one['lid'], one['port'], two['lid'], two['port']) == (311, 1, 311, 2)
    assert one['counters']['PortXmitData'] == 81234567890123 and one['counters']['SymbolErrorCounter'] == 3
    assert two['counters']['PortXmitWait'] == 98765432 and two['counters']['LinkDownedCounter'] == 2
    assert two['counters']['PortXmitDiscards'] == 17 and two['counters']['SymbolErrorCounter'] == 0
    assert parsed['port'] == 1 and parsed['counters'] == one['counters']   # the top level: the first block
    assert one['data_bits'] == 64 and one['saturated'] == [] and 'ports' not in one


def test_perfquery_basic_newer_field_order_32bit_data_saturates():
    fixture = 'perfquery/perfquery-rdma-core-50-cx7-ndr-basic-qp1dropped-data-saturated-handmade.txt'
    parsed = ib_counters.parse_perfquery(own_fixture(fixture))
    counters = parsed['counters']
    assert parsed['extended'] is False and parsed['has_errors'] is True and parsed['data_bits'] == 32
    assert counters['QP1Dropped'] == 0 and counters['CounterSelect2'] == 0 and counters['PortXmitWait'] == 31337
    assert counters['SymbolErrorCounter'] == 12 and counters['LinkDownedCounter'] == 1 and counters['PortXmitDiscards'] == 4
    # PortXmitData/PortRcvData at 2^32-1 and LocalLinkIntegrityErrors at 2^4-1 stopped counting
    assert parsed['saturated'] == ['LocalLinkIntegrityErrors', 'PortRcvData', 'PortXmitData']


@pytest.mark.parametrize('header, option', [
    ('# PortRcvErrorDetails counters: Lid 2 port 1', '-E/--rcverr'),
    ('# PortXmitDiscardDetails counters: Lid 2 port 1', '-D/--xmtdisc'),
    ('# PortXmitDataSL counters: Lid 2 port 1', '-X/--xmtsl'),
    ('# PortVLOpPackets counters: Lid 2 port 1', 'PortVLOpPackets'),
], ids=['E-rcverr', 'D-xmtdisc', 'X-xmtsl', 'other'])
def test_perfquery_other_attributes_refused(header, option):
    with pytest.raises(ParseError, match='not supported') as caught:
        ib_counters.parse_perfquery(header + '\nPortSelect:......................1\nPortLocalPhysicalErrors:.........0\n')
    assert option in str(caught.value)


def test_mlxlink_json():
    parsed = ib_counters.parse_mlxlink(own_fixture('mlxlink/mlxlink-c-json-mft-4.30-cx7-ndr-ib-symbol-errors-handmade.txt'))
    assert parsed['sections']['Operational Info']['Speed'] == 'IB-NDR'
    assert parsed['sections']['Supported Info']['Enabled Link Speed'] == '0x000000f5 (NDR,HDR,EDR,FDR,SDR)'
    assert parsed['sections']['Physical Counters and BER Info']['Raw Physical Errors Per Lane'] == '120455,98211,131078,87002'
    assert parsed['ber'] == {'effective_ber': pytest.approx(2e-13), 'raw_ber': pytest.approx(3e-9), 'symbol_ber': pytest.approx(2e-13),
                             'effective_errors': 37, 'symbol_errors': 37, 'link_down': 1, 'link_error_recovery': 2}


@pytest.mark.parametrize('text, match', [
    ('{"status": {"code": 1, "message": "Failed to open device"}}', 'status 1'),
    ('{"result": {"output": {}}, "status": {"code": 0}}', 'not mlxlink output'),
    ('{"result": [1, 2]', 'not JSON'),
    ('\nOperational Info\n----------------\nState      : Active\n \n-E- "--show_ber_monitor" option is not supported for HCA\n',
     'show_ber_monitor'),
    ('\nPCIe Operational (Enabled) Info\n-------------------------------\nLink Width Active (Enabled)     : 16X (16X)\n',
     'port_type PCIE'),
], ids=['json-status', 'json-empty', 'json-broken', 'E-option', 'pcie'])
def test_mlxlink_refused(text, match):
    with pytest.raises(ParseError, match=match):
        ib_counters.parse_mlxlink(text)


def _counters(*names):
    return dict((name, 0) for name in names)


# Real captures (../shared/fixtures/real/<tool>/, described in its SOURCES.tsv): what each one must give.
# perfquery: port -> (extended, lid, capmask, capmask2, data_bits, {counter: value}); or the ParseError's words.
PERFQUERY_REAL = {
    'brev-a100-cx6-hdr-plain-C-mlx5_0-lid1-port0.txt': {0: (False, 1, '0x5300', None, 32, {
        'PortRcvSwitchRelayErrors': 6, 'PortXmitData': 50334712, 'PortRcvData': 50322429, 'PortXmitPkts': 699290,
        'PortRcvPkts': 698925, 'PortXmitWait': 0, 'QP1Dropped': 0, 'CounterSelect2': 0, 'SymbolErrorCounter': 0})},
    'infiniband-diags-issue16-rhel75-x-lid10-allzero.txt': {1: (True, 10, '0x5300', '0x0000002', 64, _counters(
        'PortXmitData', 'PortRcvData', 'PortMulticastRcvPkts', 'SymbolErrorCounter', 'LinkDownedCounter', 'PortXmitWait',
        'QP1Dropped', 'VL15Dropped'))},
    'osc-edr-hca-x-l-lid134-capmask5a00.txt': {1: (True, 134, '0x5A00', '0x0000000', 64, {
        'PortXmitData': 9049592493976, 'PortRcvData': 9752484588300, 'PortMulticastRcvPkts': 3732158589,
        'PortMulticastXmitPkts': 721488, 'PortXmitWait': 0, 'SymbolErrorCounter': 0})},
    'osc-edr-switch-x-l-2ports-lid1719-xmitwait.txt': {
        1: (True, 1719, '0x5300', '0x0000002', 64, {
            'PortXmitData': 36298026860928, 'PortRcvData': 12279028775751, 'PortXmitWait': 22730501, 'PortSelect': 1,
            'LinkDownedCounter': 0}),
        2: (True, 1719, '0x5300', '0x0000002', 64, {
            'PortXmitData': 26006570014026, 'PortRcvData': 39078804993378, 'PortXmitWait': 36510964, 'PortSelect': 2,
            'PortMulticastRcvPkts': 0})},
    'osc-edr-switch-E-rcverrdetails-lid2052.txt': '-E/--rcverr output (PortRcvErrorDetails counters) is not supported',
}
# mlxlink: (section, key, value) checks and the ber dict; or the ParseError's words.
MLXLINK_REAL = {
    'sigcomm26-bf3-100g-dac-m-c-mft4.30-ber15e-255.txt': (
        [('Operational Info', 'Speed', '100G'), ('Tool Information', 'Firmware Version', '32.43.2402'),
         ('Module Info', 'Vendor Part Number', 'Q28-PC03'), ('Physical Counters and BER Info', 'Raw Physical Errors Per Lane', '0,0,0,0')],
        {'effective_ber': 0.0, 'raw_ber': 0.0, 'effective_errors': 0, 'link_down': 0, 'link_error_recovery': 0}),
    'yuuki-exporter-cx7-400g-eth-dr4-json-mft4.34.1.txt': (
        [('Operational Info', 'Physical state', 'ETH_AN_FSM_ENABLE'), ('Operational Info', 'Speed', '400G'),
         ('Tool Information', 'MFT Version', '4.34.1-10'), ('Module Info', 'Temperature [C]', '61 [-10..80]'),
         ('Physical Counters and BER Info', 'Raw Physical Errors Per Lane', '3017647,15132549,7368641,9233545'),
         ('Supported Info', 'Supported Cable Speed (Ext.)', '0x00012800 (400G_4X,200G_2X,100G_1X)')],
        {'effective_ber': 0.0, 'raw_ber': pytest.approx(5e-10), 'effective_errors': 0, 'link_down': 0, 'link_error_recovery': 0}),
    'brev-a100-cx6-hdr100-2x-show_ber_monitor-E-not-supported-mft4.24.txt':
        '-E- "--show_ber_monitor" option is not supported for HCA',
    'zh-blog-cx6-mt4123-pcie-e-gen1-x4-downgraded-eye-exception.txt': '--port_type PCIE output',
    'zh-blog-cx6-mt4123-pcie-e-gen3-x16-eye-16-lanes.txt': '--port_type PCIE output',
    'zh-notes-cx6dx-mt4125-pcie-e-c-gen4-dl-down-tx-errors-eye.txt': '--port_type PCIE output',
}


def _real_names(tool, expected):
    """The capture files of ``tool`` (those expected when the directory is absent, so the ids stay stable)."""
    directory = os.path.join(REAL_FIXTURES, tool)
    return sorted(set(expected) | set(os.listdir(directory) if os.path.isdir(directory) else []))


def _real_capture(tool, name, table, parser):
    """What ``parser`` made of the real capture ``tool/name`` and what it must give; (None, None) when it was refused
    as ``table`` says (a ParseError with those words)."""
    text = real_fixture(os.path.join(tool, name))
    assert name in table, 'a new real %s capture: add what it must give to the table' % tool
    if isinstance(table[name], str):
        with pytest.raises(ParseError) as caught:
            parser(text)
        assert table[name] in str(caught.value)
        return None, None
    return parser(text), table[name]


@pytest.mark.parametrize('name', _real_names('perfquery', PERFQUERY_REAL))
def test_real_perfquery_capture(name):
    """Every real perfquery capture parses to its values (one record per port) or is refused naming its mode."""
    parsed, expected = _real_capture('perfquery', name, PERFQUERY_REAL, ib_counters.parse_perfquery)
    if parsed is None:
        return
    assert sorted(parsed['ports']) == sorted(expected) and parsed['port'] == min(expected)
    for port, (extended, lid, capmask, capmask2, data_bits, counters) in expected.items():
        record = parsed['ports'][port]
        assert (record['extended'], record['lid'], record['port'], record['capmask'], record['capmask2'], record['data_bits']) == \
            (extended, lid, port, capmask, capmask2, data_bits)
        assert record['has_errors'] is True and record['saturated'] == []
        assert dict((key, record['counters'][key]) for key in counters) == counters


@pytest.mark.parametrize('name', _real_names('mlxlink', MLXLINK_REAL))
def test_real_mlxlink_capture(name):
    """Every real mlxlink capture parses to its values or is refused naming its mode."""
    parsed, expected = _real_capture('mlxlink', name, MLXLINK_REAL, ib_counters.parse_mlxlink)
    if parsed is None:
        return
    fields, ber = expected
    assert [(section, key, parsed['sections'][section][key]) for section, key, dummy in fields] == fields
    assert parsed['ber'] == ber
