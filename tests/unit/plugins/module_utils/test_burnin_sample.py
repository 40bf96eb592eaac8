# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/burnin_sample.py: a burn-in sample from the tools' own output.

Real captures where there are some (nvidia-smi -q of an 8xH100 for the T.Limit headroom, a CX-6 HDR perfquery, a
Dell R740's sdr elist, three DCMI power readings); our own strings, marked, for the layouts no capture has.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from _paths import real_fixture

from ansible_collections.aicluster.infra.plugins.module_utils import burnin_sample
from ansible_collections.aicluster.infra.plugins.module_utils.verify import burnin

Q_H100 = 'nvidia-smi/gpud-q-8xh100-535.183.01.txt'
PERFQUERY_CX6 = 'perfquery/brev-a100-cx6-hdr-plain-C-mlx5_0-lid1-port0.txt'
SDR_R740 = 'ipmitool/datakit-dell-r740-sdr-elist-gpu1-8-temp-disabled.txt'
DCMI_ACTIVE = 'ipmitool/dcmi-power-reading-lovoo-issue18-activated-2017.txt'
DCMI_OPENBMC = 'ipmitool/dcmi-power-reading-openbmc-ampere-zero-deactivated-epoch.txt'

# Ours, not a capture: `nvidia-smi --query-gpu=<gpu_query_fields()> --format=csv,noheader,nounits` for the first two
# GPUs of the H100 capture's bus ids, one GPU in thermal slowdown; the cells as nvidia-smi prints them (N/A, Yes/No,
# Active/Not Active).
FIELDS = burnin_sample.gpu_query_fields()
QUERY = (
    '0, 00000000:53:00.0, GPU-aaaa, 71, 80, 690.12, 700.00, 1980, 0, No, No, '
    'Not Active, Not Active, Active, Not Active, Not Active, Not Active, Not Active\n'
    '1, 00000000:64:00.0, GPU-bbbb, 88, 94, 512.40, 700.00, 1410, 0, Yes, No, '
    'Not Active, Not Active, Not Active, Not Active, Active, Not Active, Not Active\n')

# Ours, not a capture: the same two GPUs under load and healthy (the software power cap only).
HEALTHY = (
    '0, 00000000:53:00.0, GPU-aaaa, 71, 80, 690.12, 700.00, 1980, 0, No, No, '
    'Not Active, Not Active, Active, Not Active, Not Active, Not Active, Not Active\n'
    '1, 00000000:64:00.0, GPU-bbbb, 73, 82, 695.00, 700.00, 1980, 0, No, No, '
    'Not Active, Not Active, Active, Not Active, Not Active, Not Active, Not Active\n')


def test_the_gpu_query_asks_for_every_clock_reason_under_the_r535_names_or_the_older_ones():
    assert FIELDS[:3] == ('index', 'pci.bus_id', 'uuid') and 'clocks_event_reasons.hw_thermal_slowdown' in FIELDS
    assert 'clocks_throttle_reasons.sw_power_cap' in burnin_sample.gpu_query_fields('clocks_throttle_reasons')


def test_gpus_join_the_query_with_the_t_limit_headroom_of_the_real_h100_capture():
    errors = []
    gpus = burnin_sample.sample_gpus(QUERY, FIELDS, real_fixture(Q_H100), errors)
    assert errors == []
    assert [gpu['temp_headroom_c'] for gpu in gpus] == [50.0, 49.0]  # GPU T.Limit Temp of 00000000:53 and :64
    assert gpus[0] == {'index': 0, 'uuid': 'GPU-aaaa', 'temp_c': 71.0, 'mem_temp_c': 80.0, 'temp_headroom_c': 50.0,
                       'power_w': 690.12, 'power_limit_w': 700.0, 'sm_clock_mhz': 1980.0, 'clock_events': ['sw_power_cap'],
                       'ecc_uncorrected': 0, 'remap_pending': False, 'remap_failure': False}
    assert gpus[1]['clock_events'] == ['hw_thermal_slowdown'] and gpus[1]['remap_pending'] is True


def test_a_failed_gpu_query_costs_the_gpus_part_not_the_sample():
    errors = []
    assert burnin_sample.sample_gpus('', FIELDS, None, errors) is None
    assert errors and errors[0].startswith('nvidia-smi --query-gpu')
    gpus = burnin_sample.sample_gpus(QUERY, FIELDS, 'Failed to initialize NVML: Driver/library version mismatch\n', errors)
    assert [gpu['temp_headroom_c'] for gpu in gpus] == [None, None]


def test_an_ib_port_from_the_real_cx6_perfquery_and_its_sysfs_state_and_rate():
    errors = []
    port = burnin_sample.ib_port('mlx5_0:1', real_fixture(PERFQUERY_CX6), '4: ACTIVE', '200 Gb/sec (4X HDR)', errors)
    assert errors == [] and port['state'] == 'Active' and port['rate_gbps'] == 200.0
    assert port['counters']['PortRcvSwitchRelayErrors'] == 6 and port['counters']['SymbolErrorCounter'] == 0
    down = burnin_sample.ib_port('mlx5_0:1', "ibwarn: [1234] mad_rpc_open_port: can't open UMAD port\n", '1: DOWN', None, errors)
    assert down['state'] == 'DOWN' and down['counters'] is None and errors[0].startswith('perfquery mlx5_0:1')


def test_a_roce_port_keeps_the_counters_the_gate_judges():
    # Ours, not a capture: ethtool -S of a ConnectX-7 netdev, the names mlx5's ethtool counters doc lists.
    stats = ('NIC statistics:\n     rx_packets: 100\n     rx_symbol_err_phy: 0\n     rx_crc_errors_phy: 0\n'
             '     link_down_events_phy: 1\n     rx_discards_phy: 0\n     rx_prio3_pause: 420\n     rx_prio3_discards: 0\n')
    port = burnin_sample.roce_port('mlx5_0:1', stats, 'up', '400000')
    assert port['state'] == 'Active' and port['rate_gbps'] == 400.0
    assert port['counters'] == {'rx_symbol_err_phy': 0, 'rx_crc_errors_phy': 0, 'link_down_events_phy': 1,
                                'rx_discards_phy': 0, 'rx_prio3_pause': 420, 'rx_prio3_discards': 0}


def test_the_bmc_from_the_real_r740_sdr_elist_and_dcmi_readings():
    errors = []
    bmc = burnin_sample.sample_bmc(real_fixture(SDR_R740), real_fixture(DCMI_ACTIVE), errors=errors)
    assert errors == [] and bmc['valid'] is True
    assert (bmc['inlet_c'], bmc['exhaust_c']) == (23.0, 31.0)
    assert bmc['power_w'] == 215.0  # the DCMI reading wins over the SDR's 208 W Pwr Consumption
    assert [fan['name'] for fan in bmc['fans']] == ['Fan1', 'Fan2', 'Fan3', 'Fan4', 'Fan5', 'Fan6', 'Fan Redundancy']
    assert [(psu['name'], psu['text']) for psu in bmc['psus']] == [
        ('PS Redundancy', 'Fully Redundant'), ('Presence 10.1', 'Present'), ('Presence 10.2', 'Present'),
        ('Status 10.1', 'Presence detected'), ('Status 10.2', 'Presence detected')]  # Dell's PSU sensors, by entity 10
    deactivated = burnin_sample.sample_bmc(real_fixture(SDR_R740), real_fixture(DCMI_OPENBMC))
    assert deactivated['power_w'] == 208.0  # the BMC does not measure through DCMI: the SDR's figure stays
    nothing = burnin_sample.sample_bmc(None, real_fixture(DCMI_OPENBMC))
    assert nothing['valid'] is False and nothing['power_w'] is None


def test_xids_since_the_run_started():
    # Ours, not a capture: dmesg --time-format iso lines in the NVRM Xid format kernel_log reads.
    log = ('2026-12-07T09:59:00,000000+00:00 NVRM: Xid (PCI:0000:1b:00): 13, pid=42, Graphics Exception\n'
           '2026-12-07T10:02:30,000000+00:00 NVRM: Xid (PCI:0000:1b:00): 79, pid=\'<unknown>\', GPU has fallen off the bus.\n')
    xids = burnin_sample.sample_xids(log, start='2026-12-07T10:00:00.000000+00:00')
    assert [(xid['code'], xid['pci']) for xid in xids] == [(79, '0000:1b:00')]


def test_samples_built_from_the_tools_read_back_and_judge_as_the_gate_reads_them():
    lines = []
    for seq in range(1, 4):
        errors = []
        gpus = burnin_sample.sample_gpus(HEALTHY, FIELDS, real_fixture(Q_H100), errors)
        port = burnin_sample.ib_port('mlx5_0:1', real_fixture(PERFQUERY_CX6), '4: ACTIVE', '200 Gb/sec (4X HDR)', errors)
        bmc = burnin_sample.sample_bmc(real_fixture(SDR_R740), real_fixture(DCMI_ACTIVE), errors=errors)
        sample = burnin_sample.build_sample('r1', 'gpu01', seq, '2026-12-07T10:%02d:00Z' % seq, 60 * seq, gpus, [port], [], bmc,
                                            [], errors)
        lines.append(json.dumps(sample, separators=(',', ':')))
    samples, problems = burnin.read_samples('\n'.join(lines), 'gpu01')
    assert problems == [] and len(samples) == 3
    results = burnin.judge_node(samples, {'interval_s': 60})
    assert [result for result in results if not result['passed']] == []
    assert set(result['check'] for result in results) >= {'burnin.gpu_thermal', 'burnin.link_errors', 'burnin.ber', 'burnin.bmc'}
