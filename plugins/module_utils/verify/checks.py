# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every check of the verify stage, one record each.

A record is the only place a check id is defined: its area (the verify role
and the JUnit testsuite), what it compares, which way is better, its unit,
the remedy the report prints for a failure, its default threshold and where
that default comes from. The area functions (``verify/<area>.py``), the gate,
the report and docs/verify.md all read these records; a test checks the docs
table against them. Adding a check: one record here, its area function and
its tests.

``direction``: ``higher`` (measured >= threshold passes), ``lower``
(measured <= threshold passes), ``equal`` (measured must equal threshold) or
``state`` (a state or a list, not a figure). ``remedy`` is a template; its
fields: node, subject, hca, peer, partner, measured, threshold, unit, suspect.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

Check = namedtuple('Check', ['id', 'area', 'description', 'direction', 'unit', 'remedy', 'default', 'source'])

AREAS = ('ib', 'fabric', 'perftest', 'net', 'gpu', 'nccl', 'node')

_RECORDS = (
    Check('ib.hca_present', 'ib', 'every expected HCA is present', 'higher', None,
          'check that every HCA on {node} is seated and enabled (lspci, mst status); reseat or replace the missing card',
          'every HCA of verify_ib_hcas', 'inventory'),
    Check('ib.port_state', 'ib', 'port State Active and Physical state LinkUp', 'equal', None,
          'check the cable on {peer} / {node} {hca}: reseat it, then replace the cable or transceiver if the port stays down',
          'Active/LinkUp', 'ibstat (rdma-core) semantics; the acceptance criterion in the domain notes'),
    Check('ib.port_rate', 'ib', 'port rate equals the expected rate', 'higher', 'Gb/s',
          'reseat or replace the cable on {peer} / {node} {hca} (a port below its rate usually has a bad cable or transceiver)',
          'verify_ib_rate_gbps; 0: the fleet majority rate per HCA', 'a lower rate is a degraded width or speed'),
    Check('ib.link_layer', 'ib', 'port link layer as expected', 'equal', None,
          'set the link layer of {node} {hca} to {threshold} (mlxconfig LINK_TYPE_P1) and reboot the node',
          'InfiniBand', 'inventory'),
    Check('ib.firmware_uniform', 'ib', 'HCA firmware identical across the fleet', 'equal', None,
          'flash the fleet HCA firmware {threshold} on {node} (mlxfwmanager -u) and reboot the node',
          'the fleet majority, or verify_ib_firmware', 'batch differences are a classic delivery failure'),
    Check('ib.ofed_uniform', 'ib', 'OFED/rdma-core version identical across the fleet', 'equal', None,
          'install the fleet OFED {threshold} on {node} (rerun the rdma stage with --limit {node})',
          'the fleet majority, or verify_ib_ofed', 'batch differences are a classic delivery failure'),
    Check('fabric.link_width', 'fabric', 'every link at 4X', 'equal', None,
          'reseat or replace the cable on {peer} / {node} {hca}',
          '4X', "iblinkinfo's Could be 4X hint (infiniband-diags ibdiag_common.c)"),
    Check('fabric.link_speed', 'fabric', 'every link at full lane speed', 'higher', 'Gb/s',
          'reseat or replace the cable on {peer} / {node} {hca}; check the switch port speed setting',
          "iblinkinfo's Could be ... Gbps hint, or verify_ib_lane_speed_gbps", 'infiniband-diags'),
    Check('fabric.rail', 'fabric', 'HCA k of every node reaches the same leaf group', 'equal', None,
          'recable {node} {hca} to its rail ({threshold}); it now reaches {measured}',
          'the fleet majority per rail', 'rail-optimized wiring'),
    Check('perftest.write_bw', 'perftest', 'ib_write_bw between rail-aligned HCA pairs', 'higher', 'Gb/s',
          'check {suspect}: link state and rate (ibstat, iblinkinfo), PCIe width (lspci -vv), then rerun ib_write_bw',
          'verify_perftest_fraction 0.9 x the link data rate', "expected_link_gbps (IBTA encodings); 90% is this project's pass mark"),
    Check('perftest.read_bw', 'perftest', 'ib_read_bw between rail-aligned HCA pairs', 'higher', 'Gb/s',
          'check {suspect}: link state and rate (ibstat, iblinkinfo), PCIe width (lspci -vv), then rerun ib_read_bw',
          'as perftest.write_bw', 'as perftest.write_bw'),
    Check('perftest.write_lat', 'perftest', 'ib_write_lat between rail-aligned HCA pairs', 'lower', 'usec',
          'check {suspect}: cable and switch port errors (perfquery), then rerun ib_write_lat',
          'verify_perftest_max_latency_us 5', 'own bound, generous: NDR/HDR RDMA write latency is about 1 us'),
    Check('net.mtu', 'net', 'the configured MTU holds end to end (ping -M do)', 'higher', 'bytes',
          'set MTU {threshold} on {node} {subject} and on every switch port in its path',
          'verify_ib_mtu 9000', 'ping(8): 28 = IPv4 + ICMP headers'),
    Check('gpu.count', 'gpu', 'GPU count as expected', 'higher', None,
          'a GPU is missing on {node}: check nvidia-smi -L and dmesg, reseat the baseboard or open a hardware ticket',
          'verify_gpu_count 8', 'inventory'),
    Check('gpu.model', 'gpu', 'GPU model as expected', 'equal', None,
          'GPU model on {node} is {measured}, expected {threshold}: correct the inventory or swap the hardware',
          'verify_gpu_model', 'inventory'),
    Check('gpu.driver_uniform', 'gpu', 'driver version identical across the fleet', 'equal', None,
          'install the fleet driver {threshold} on {node} (rerun the gpu stage with --limit {node}) and reboot',
          'the fleet majority, or verify_gpu_driver', 'delivery practice'),
    Check('gpu.persistence', 'gpu', 'persistence mode enabled', 'equal', None,
          'enable persistence mode on {node} (nvidia-persistenced service)',
          'Enabled', 'NVIDIA driver persistence daemon documentation'),
    Check('gpu.ecc', 'gpu', 'no volatile uncorrectable ECC errors', 'lower', None,
          'drain {node}, reset {subject} (nvidia-smi -r -i) and run dcgmi diag -r 3; RMA the GPU if the errors return',
          'verify_gpu_ecc_uncorrected_max 0', 'own: any uncorrectable error on a node being accepted is a fault'),
    Check('gpu.retired_pages', 'gpu', 'retired/pending pages under the limit', 'lower', None,
          'reboot {node} to retire the pending pages; RMA {subject} if retired pages exceed the vendor limit',
          'verify_gpu_retired_pages_max 0, none pending', 'NVIDIA Dynamic Page Retirement; no public RMA count'),
    Check('gpu.row_remap', 'gpu', 'no pending row remaps or remap failures', 'state', None,
          'reset {subject} on {node} (or reboot) to apply the pending row remap; RMA the GPU on a remap failure',
          'none pending, no failure', 'NVIDIA A100/H100 GPU memory error management'),
    Check('gpu.nvlink', 'gpu', 'all NVLinks up', 'higher', None,
          'reboot {node}; if {subject} still has NVLinks down, check fabric manager and open a hardware ticket',
          'verify_gpu_nvlinks_per_gpu, or as many as the best GPU', 'NVLink4 H100 SXM 18 links, A100 SXM 12'),
    Check('gpu.nvlink_errors', 'gpu', 'NVLink error counters under the limits', 'lower', None,
          'clear the NVLink counters on {node} and rerun nccl-tests; open a hardware ticket if they keep rising',
          'replay 100, recovery 0, CRC 100', 'own: NVIDIA publishes no acceptance limit'),
    Check('gpu.xid', 'gpu', 'no fatal Xid in the kernel log since boot', 'state', None,
          "look up Xid {measured} in NVIDIA's Xid catalogue; drain {node}, reboot, and open a hardware ticket for {subject} if it recurs",
          'none of verify_gpu_fatal_xids', 'NVIDIA Xid catalog'),
    Check('gpu.processes', 'gpu', 'no stray processes on the GPUs', 'lower', None,
          'stop the stray GPU processes on {node} (nvidia-smi --query-compute-apps=pid,name) before it takes jobs',
          'none outside verify_gpu_allowed_processes', 'leftover processes after a job'),
    Check('gpu.dcgm_diag', 'gpu', 'dcgmi diag passes', 'state', None,
          "rerun dcgmi diag -r 3 on {node}, and open a hardware ticket with the failing test's output",
          'pass at level verify_gpu_dcgm_level 2', 'DCGM diagnostics user guide'),
    Check('nccl.busbw', 'nccl', 'single-node all_reduce bus bandwidth over the threshold', 'higher', 'GB/s',
          'run all_reduce_perf on {node} alone; check NVLink/NVSwitch (nvidia-smi nvlink -s, fabric manager), GPU clocks and power',
          'verify_nccl_busbw_table: H100/H200 400, A100 200 GB/s', 'about 85% of published 8-GPU figures'),
    Check('nccl.wrong', 'nccl', 'nccl-tests #wrong is 0', 'lower', None,
          'data corruption: drain {node}, run dcgmi diag -r 3 and open a hardware ticket',
          '0', 'nccl-tests'),
    Check('nccl.slow_node', 'nccl', 'bus bandwidth within a fraction of the fleet median', 'higher', 'GB/s',
          "compare {node}'s GPU clocks, power limits and NVLink state with a healthy node; rerun all_reduce_perf",
          'verify_nccl_slow_fraction 0.1 below the median', 'own'),
    Check('nccl.multi_node_busbw', 'nccl', 'multi-node all_reduce bus bandwidth over the threshold', 'higher', 'GB/s',
          'check the NCCL environment (NCCL_IB_HCA, GID index), rail cabling, and perftest between the nodes of the run',
          'verify_nccl_multi_node_busbw_table: H100/H200 300, A100 150 GB/s', 'domain notes: 350-400 GB/s over 8x NDR'),
    Check('node.reachable', 'node', 'the node answered and its checks ran', 'state', None,
          'bring {node} back (power, BMC console, sshd, network), then rerun verify with --limit {node}',
          'results from every node', 'the play'),
)

CHECKS = dict((record.id, record) for record in _RECORDS)
ORDER = tuple(record.id for record in _RECORDS)


def check(check_id):
    """The record of a check id; ValueError naming the known ids for an unknown one."""
    try:
        return CHECKS[check_id]
    except KeyError:
        raise ValueError('unknown check id %r; known: %s' % (check_id, ', '.join(sorted(CHECKS))))


def area_of(check_id):
    """The area of a check id ('gpu.xid' -> 'gpu')."""
    return check(check_id).area


def higher_is_better(check_id):
    """Whether a larger figure is better (False for unknown ids and for non-figures)."""
    record = CHECKS.get(check_id)
    return record is not None and record.direction == 'higher'


def of_area(area):
    """The check ids of an area, in record order."""
    return [record.id for record in _RECORDS if record.area == area]
