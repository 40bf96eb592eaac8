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

Check = namedtuple('Check', ['id', 'area', 'description', 'direction', 'unit', 'remedy', 'measures', 'default', 'source'])

AREAS = ('ib', 'fabric', 'perftest', 'net', 'gpu', 'nccl', 'burnin', 'node')
# the areas of the verify stage; burnin's results come from playbooks/burnin.yml, a run of its own (docs/burnin.md)
VERIFY_AREAS = tuple(area for area in AREAS if area != 'burnin')

_RECORDS = (
    Check('ib.hca_present', 'ib', 'every expected HCA is present', 'higher', None,
          'check that every HCA on {node} is seated and enabled (lspci, mst status); reseat or replace the missing card',
          measures='every HCA of `verify_ib_hcas` (rail order) is in `ibstat`',
          default='all present',
          source='inventory'),
    Check('ib.port_state', 'ib', 'port State Active and Physical state LinkUp', 'equal', None,
          'check the cable on {peer} / {node} {hca}: reseat it, then replace the cable or transceiver if the port stays down',
          measures='`State: Active`, `Physical state: LinkUp`',
          default='Active/LinkUp',
          source='ibstat (rdma-core) semantics; the acceptance criterion in the domain notes'),
    Check('ib.port_rate', 'ib', 'port rate equals the expected rate', 'higher', 'Gb/s',
          'reseat or replace the cable on {peer} / {node} {hca} (a port below its rate usually has a bad cable or transceiver)',
          measures='ibstat `Rate`',
          default="`verify_ib_rate_gbps`; 0 (default): the fleet's majority rate per HCA",
          source='a lower rate is a degraded width or speed'),
    Check('ib.link_layer', 'ib', 'port link layer as expected', 'equal', None,
          'set the link layer of {node} {hca} to {threshold} (mlxconfig LINK_TYPE_P1) and reboot the node',
          measures='link layer',
          default='`InfiniBand`',
          source='inventory'),
    Check('ib.firmware_uniform', 'ib', 'HCA firmware identical across the fleet', 'equal', None,
          'flash the fleet HCA firmware {threshold} on {node} (mlxfwmanager -u) and reboot the node',
          measures='same firmware per HCA on every node',
          default=('the bill of materials\' firmware per PSID (`verify_ib_firmware`, an override) or, without a BOM, the fleet majority; '
                   'no majority and no pin (a rolling upgrade): one failed cluster-level result per HCA, nobody drained'),
          source='batch differences are a classic delivery failure'),
    Check('ib.ofed_uniform', 'ib', 'OFED/rdma-core version identical across the fleet', 'equal', None,
          'install the fleet OFED {threshold} on {node} (rerun the rdma stage with --limit {node})',
          measures='same `ofed_info -s` on every node',
          default=('the bill of materials\' DOCA-OFED release (`verify_ib_ofed`, an override) or, without a BOM, the fleet majority; '
                   'no majority and no pin: one failed cluster-level result, nobody drained'),
          source='batch differences are a classic delivery failure'),
    Check('ib.link_errors', 'ib', 'no error counter of a GPU-fabric link rose during the bandwidth tests', 'lower', None,
          'clean or replace the optic/cable between {node} {hca} and {peer} (a marginal link trains at full width and speed '
          'and passes short tests thanks to FEC); reseat both ends, then rerun verify',
          measures=('error counters of each checked port, read before the bandwidth tests (verify_ib) and after them (after '
                    'verify_nccl): InfiniBand `perfquery -x -C HCA -P PORT` (SymbolErrorCounter, LinkErrorRecoveryCounter, '
                    'LinkDownedCounter, PortRcvErrors, PortRcvRemotePhysicalErrors, PortXmitDiscards, LocalLinkIntegrityErrors, '
                    'ExcessiveBufferOverrunErrors...); RoCE `ethtool -S` rx_symbol_err_phy, rx_crc_errors_phy, '
                    'link_down_events_phy; the subject names both ends (HCA port and the switch port from the fabric read)'),
          default='no rise (`verify_ib_link_error_max`: counter -> allowed rise, default 0 for each)',
          source=('a healthy link counts no symbol error, recovery or link-down while traffic runs; counts since the driver '
                  'loaded grow with uptime, so only the rise during the tests is judged (issue 11; IBA PortCounters)')),
    Check('ib.ber', 'ib', 'effective (post-FEC) physical bit error ratio of each GPU-fabric port below the threshold', 'lower', None,
          'clean or replace the optic/cable between {node} {hca} and {peer}; check the module temperature and power (mlxlink -m)',
          measures=('`mlxlink -d HCA -p PORT -c` Effective Physical BER, read after the bandwidth tests (raw and symbol BER '
                    'kept as evidence); mlxlink not installed (MFT): not checked, said in the result'),
          default='1e-12 (`verify_ib_ber_max`)',
          source=('the BER threshold of NVIDIA ibdiagnet\'s BER test, 10^-12 (ibdiagnet user manual, "Bit Error Rate '
                  '(BER)"); the raw pre-FEC BER of a healthy PAM4 link (HDR/NDR) is far higher and is not judged')),
    Check('ib.roce_drops', 'ib', 'no RoCE drop counter of a GPU-fabric port rose during the bandwidth tests', 'lower', None,
          'check PFC and ECN on {node} {hca} and on its switch port {peer} (mlnx_qos, the switch QoS profile); a lossless '
          'class must not drop',
          measures=('RoCE ports, read before and after the tests: `ethtool -S` rx_prio<P>_discards (P = '
                    '`verify_ib_roce_priority`) and rx_discards_phy, RDMA hw_counters out_of_sequence and packet_seq_err '
                    '(`rdma statistic show link`, else sysfs); pause and CNP counters are kept as evidence, not judged'),
          default='no rise (`verify_ib_link_error_max`)',
          source=('a lossless RoCE class drops nothing when PFC works end to end; out_of_sequence counts packets lost on '
                  'the wire (mlx5 hw_counters, NVIDIA "Understanding mlx5 Linux Counters"); pause and CNPs are normal '
                  'under load (issue 11)')),
    Check('fabric.link_width', 'fabric', 'every link at 4X', 'equal', None,
          'reseat or replace the cable on {peer} / {node} {hca}',
          measures=('every link: iblinkinfo `-C CA -P PORT` once per subnet, CAs found by port GUID, switches by GUID; a checked '
                    'HCA seen in no read fails (`not seen`); a degraded switch-to-switch link, or one to a CA of no checked '
                    'node, is a cluster result (`switch GUID port N`: fails the verdict, drains nobody)'),
          default='4X',
          source=("a 1X link loses 3/4 of the bandwidth; iblinkinfo's `Could be 4X` hint (infiniband-diags "
                  '`ibdiag_common.c`)')),
    Check('fabric.link_speed', 'fabric', 'every link at full lane speed', 'higher', 'Gb/s',
          'reseat or replace the cable on {peer} / {node} {hca}; check the switch port speed setting',
          measures='every link at full lane speed',
          default="iblinkinfo's `( Could be ... Gbps)` hint; or `verify_ib_lane_speed_gbps`",
          source='infiniband-diags'),
    Check('fabric.rail', 'fabric', "a node's rails on distinct leaves; one leaf per rail in each scalable unit", 'equal', None,
          'recable {node} {hca} to its rail ({threshold}); it now reaches {measured}',
          measures=("leaf of each HCA k (by switch GUID): a node's rails on distinct leaves, each leaf serving one rail, and "
                    'the nodes of one scalable unit on one leaf per rail (off by default)'),
          default=('the majority leaf per rail inside each scalable unit (`verify_ib_scalable_unit`, else the SU of the '
                   'leaf of rail 0); a tie is a cluster result that drains nobody'),
          source=('rail-optimized wiring: rail k of every node of a scalable unit on leaf k of that SU (NVIDIA DGX '
                  'SuperPOD reference architecture); several SUs and ties: issue 11')),
    Check('fabric.sm', 'fabric', 'one master subnet manager per subnet, the expected one at its priority; none on a compute node',
          'state', None,
          'on a node: stop and disable opensm on {node} (a compute node must not run a subnet manager); for {subject}: '
          'make the expected SM master and give every other SM a lower, distinct sm_priority',
          measures=('per subnet, through one port of it (verify_ib, run once): `sminfo` twice `verify_ib_sm_sweep_s` apart '
                    '(master LID, GUID, priority, state) and `saquery SMIR` (every SM with priority and state; `saquery -s`: '
                    'the ports with IsSM set); per GPU node: its port GUIDs among the SMs, `pgrep -x opensm`, enabled '
                    'opensm unit files; InfiniBand only, `verify_ib_sm_enabled`; sminfo not installed: not checked'),
          default=('exactly one MASTER; its GUID one of the SM ports (`verify_ib_sm_guids`, else the `opensm_ports` of the '
                   '`ib_subnet_manager` hosts), or not a GPU node\'s port when the switch or UFM runs the SM '
                   '(`verify_ib_sm_provider`); its priority the configured one (`verify_ib_sm_priority`, else the SM '
                   'hosts\' highest `opensm_sm_priority`, 15; a switch\'s or UFM\'s SM: only when `verify_ib_sm_priority` '
                   'is set); no two SMs at one priority; the same master in both reads; '
                   'no SM on a GPU node (that node fails and drains; a subnet problem is a cluster result)'),
          source=('the SM election: opensm(8) `--priority` ("master is chosen by priority and GUID", 0 lowest to 15 '
                  'highest); equal priorities leave mastership to the GUID and a restart can move it; an SM on every RDMA node and a '
                  'host SM behind a switch SM are field reports (issue 32); sminfo.c and saquery.c print formats')),
    Check('fabric.partition', 'fabric', "each GPU-fabric port holds exactly its partitions' P_Keys, as full or limited member",
          'equal', None,
          'check partitions.conf on the SM host (and its log for PARSE ERROR lines) so that {node} {subject} holds '
          '{threshold}, then let the SM resweep; it holds {measured}',
          measures=('the P_Key table of each checked port: `<verify_ib_sysfs_root>/class/infiniband/DEV/ports/PORT/pkeys/*` '
                    '(else `smpquery -G pkeys PORTGUID PORT`); the top bit of each entry is the membership; InfiniBand '
                    'only, `verify_ib_partition_enabled`; neither source: not checked'),
          default=('the P_Keys `verify_ib_partitions` (the opensm role\'s `opensm_partitions`) gives the port GUID; null: '
                   '`0xffff`, the default partition 0x7fff as a full member (`Default=0x7fff, ipoib : ALL=full;`, the '
                   'opensm role\'s default)'),
          source=('IBA 10.9.1 P_Key membership bit (1 full, 0 limited: limited members cannot talk to each other); '
                  'opensm doc/partition-config.txt: ports are limited members of 0x7fff when partitions.conf exists '
                  'without a Default rule, `ALL=full`, `defmember`; a partitions.conf OpenSM cannot parse leaves the '
                  'default partition only (opensm osm_prtn.c)')),
    Check('fabric.switch_errors', 'fabric', 'no error counter of a switch port rose during the bandwidth tests', 'lower', None,
          'clean or replace the cable of {peer} and {node} {subject}; reseat both ends, then rerun verify',
          measures=('every switch port of the GPU fabric, ISLs included: `ibqueryerrors -r -C CA -P PORT` once per subnet '
                    'before the bandwidth tests (verify_ib) and after them (links_after, after verify_nccl; never with '
                    '`-k`/`-K`, which clear the counters); the -r Link info names the other end; host links by the fabric '
                    'read\'s peers; InfiniBand only, `verify_ib_switch_errors_enabled`; not installed: not checked'),
          default=('no rise of the ib.link_errors counters (`verify_ib_link_error_max`, 0 for each) except '
                   'PortRcvSwitchRelayErrors; a saturated 16/8-bit counter fails; a rising ISL is a cluster result naming '
                   'both ends, a rising host link fails that host\'s HCA'),
          source=('as `ib.link_errors` (IBA PortCounters; issue 11); PortRcvSwitchRelayErrors left out as ibqueryerrors\' '
                  'own `--suppress-common` does (rdma-core ibqueryerrors.c: "the only common error"); counter widths from '
                  'libibmad fields.c; a spine cable with rising symbol errors is invisible from the hosts (issue 32)')),
    Check('perftest.write_bw', 'perftest', 'ib_write_bw between rail-aligned HCA pairs', 'higher', 'Gb/s',
          'check {suspect}: link state and rate (ibstat, iblinkinfo), PCIe width (lspci -vv), then rerun ib_write_bw',
          measures=('`ib_write_bw --report_gbits -F -s 65536 -q 2 -b -D 30`, rail-aligned pairs, under `numactl` bound to the '
                    "HCA's NUMA node when known; `--tclass` on RoCE"),
          default=(">= 0.9 x the fleet's line rate (`verify_ib_rate_gbps`, else the most common port rate; NDR 4X: 360 Gb/s), "
                   'never the pair\'s own negotiated rate; bidirectional (default): 0.9 x twice the data rate'),
          source=('data rate from `expected_link_gbps` (IBTA encodings: NDR 106.25 Gb/s lanes carry 100 Gb/s); 90% is '
                  "this project's pass mark (the issue's acceptance criterion), not an NVIDIA figure; `-s 65536 -q 2 -b -D 30` "
                  "and NUMA pinning from NVIDIA's multinode bring-up practice (issue 11); 1 QP at MB sizes reads 284-365 Gb/s "
                  'on ConnectX-7 (NVIDIA/nccl #2409); perftest MB/sec = 2^20 bytes/s (linux-rdma/perftest README)')),
    Check('perftest.read_bw', 'perftest', 'ib_read_bw between rail-aligned HCA pairs', 'higher', 'Gb/s',
          'check {suspect}: link state and rate (ibstat, iblinkinfo), PCIe width (lspci -vv), then rerun ib_read_bw',
          measures='`ib_read_bw`, same (off by default)',
          default='as `perftest.write_bw`',
          source='as `perftest.write_bw`'),
    Check('perftest.gpudirect_bw', 'perftest', 'ib_write_bw with --use_cuda: HCA <-> nearest GPU memory', 'higher', 'Gb/s',
          'check the GPUDirect RDMA path on {suspect}: nvidia_peermem (or dma-buf) loaded, PCIe ACS off on the GPU-HCA '
          'switch, IOMMU passthrough; then rerun ib_write_bw --use_cuda',
          measures=('`ib_write_bw --use_cuda=<GPU nearest the HCA>` (gpu_info nearest_nic), same options and pairs as '
                    '`perftest.write_bw`; nodes with GPUs only'),
          default='as `perftest.write_bw`',
          source=('a broken GPUDirect path passes a host-memory test at line rate (linux-rdma/perftest #241); '
                  'threshold as `perftest.write_bw`')),
    Check('perftest.write_lat', 'perftest', 'ib_write_lat between rail-aligned HCA pairs', 'lower', 'usec',
          'check {suspect}: cable and switch port errors (perfquery), then rerun ib_write_lat',
          measures='`ib_write_lat`, typical latency of 2-byte messages (off by default)',
          default='5 us',
          source='own bound, generous: NDR/HDR RDMA write latency is typically around 1 us; set your own'),
    Check('net.mtu', 'net', 'each RDMA rail carries its MTU end to end (ping -M do), each IPoIB rail in its mode', 'higher', 'bytes',
          'set MTU {threshold} on {node} {subject}, on the same rail of the next node and on every switch port between them; '
          'an IPoIB rail in the wrong mode: set ipoib_mode and run the fabric stage (role ipoib)',
          measures=('per GPU-fabric rail (the RoCE netdev or IPoIB interface of each HCA): its MTU (`ip -j -d addr`), then '
                    '`ping -M do -s MTU-28 -I NETDEV` to the same rail of the next node (a ring); a rail\'s own MTU '
                    'below the threshold fails with or without an address; an IPoIB rail without IPv4 fails where the '
                    'fabric stage addresses the rails (`verify_ib_ipoib_required`), else it is skipped with the reason; '
                    'an IPoIB rail whose mode (`<verify_ib_sysfs_root>/class/net/IF/mode`, else `ip -d`) is not '
                    '`verify_ib_ipoib_mode` fails in the same result, one whose mode cannot be read is judged on its MTU '
                    'alone and says so; the management address is not tested'),
          default=('RoCE 9000 (`verify_ib_mtu`); IPoIB 4092 (`verify_ib_ipoib_mtu`) in datagram mode '
                   '(`verify_ib_ipoib_mode`: the fabric stage\'s `ipoib_mode`, else datagram; empty: mode not judged)'),
          source=('28 = 20-byte IPv4 + 8-byte ICMP header (ping(8)); RoCE 9000 end to end (NVIDIA RoCE deployment '
                  'practice); IPoIB datagram MTU = IB MTU 4096 - 4-byte IPoIB header, connected mode up to 65520, the mode '
                  'in /sys/class/net/IF/mode (Linux Documentation/infiniband/ipoib.rst; RHEL "Configuring IPoIB"); '
                  'datagram, the mode the ib_ipoib driver starts in and the only one of enhanced IPoIB (ConnectX-4 and '
                  'later; NVIDIA MLNX_OFED "Enhanced IPoIB")')),
    Check('net.rdma_mtu', 'net', 'the RDMA path MTU of each GPU-fabric port', 'higher', 'bytes',
          'raise the path MTU of {node} {subject}: on RoCE set the netdev MTU to 9000, on InfiniBand the partition MTU '
          '(opensm partitions.conf mtu=5)',
          measures='`ibv_devinfo` active_mtu of each GPU-fabric port (through ib_info)',
          default='4096 (`verify_ib_rdma_mtu`)',
          source=('4096 is the largest IB MTU (IBTA); on RoCE the active MTU is the largest IB MTU below the netdev MTU '
                  'minus headers: 1024 at 1500, 4096 at 4200 and above (NVIDIA KB "MTU Considerations for RoCE based '
                  'Applications")')),
    Check('net.roce_qos', 'net', 'each RoCE GPU-fabric port has the lossless QoS and MTU the roce role sets', 'state', None,
          'run the fabric stage (role roce) on {node}; {subject} differs ({measured}); if it comes back after a reboot or '
          'a driver restart, check aicluster-roce-qos.service on {node}',
          measures=('per RoCE GPU-fabric port (the roce role\'s own plan: `roce_rails`, else `verify_ib_hcas`): module '
                    '`rdma_qos` in check mode with the roce role\'s settings - trust, PFC, DSCP map, ECN (notification '
                    'and reaction point), CNP DSCP and 802.1p priority, RDMA-CM ToS and RoCE mode, verbs traffic class - '
                    'and the netdev MTU (`ip -j -d addr`); a difference fails naming the port and the setting '
                    '(`setting: before -> wanted`); a setting whose interface the driver lacks is named, not judged; '
                    'InfiniBand GPU fabrics: not checked, with the reason'),
          default=('the roce role\'s settings (`roce_trust` dscp, `roce_pfc_priorities` [3], `roce_dscp_map` {26: 3, 48: 6}, '
                   '`roce_ecn_priorities` [3], CNP 48/6, `roce_tos` 106, RoCE v2, traffic class 106, `roce_mtu` 9000)'),
          source=('mlx5 forgets its QoS at every driver start (NVIDIA "RoCE Configuration for ConnectX"; doroce-linux); '
                  'docs/fabric.md "RoCE" cites each setting')),
    Check('net.lossless', 'net', 'an incast on each rail drops nothing in the lossless class', 'lower', None,
          'turn PFC on for the lossless priority on {node} {subject} (mlnx_qos --pfc, or run the fabric stage: role roce) '
          'and on its switch port; check ECN marking on the switch; then rerun verify',
          measures=('one incast round per rail: every other node of the rail\'s group runs `ib_write_bw --tclass=TOS` '
                    '(`verify_perftest_tclass`, the roce role\'s ToS) to its first node at once; `ethtool -S` of each '
                    'port before and after (`ib_counters_info`, every port of a node in one call): '
                    '`rx_prio<P>_discards` (and any other priority\'s) and `rx_discards_phy` must not '
                    'rise (P: the DSCP map\'s priority of TOS >> 2, else `verify_ib_roce_priority`); `rx_prio<P>_pause`, `tx_prio<P>_pause`, '
                    '`np_cnp_sent`, `rp_cnp_handled` may rise and are kept as evidence; fewer than 3 nodes on a rail, or '
                    'fewer than 2 senders that ran: not checked, with the reason; never in check mode'),
          default='no rise of the discard counters (0)',
          source=('a lossless class pauses instead of dropping when PFC is on end to end; CNPs are DCQCN at work (NVIDIA '
                  '"Understanding mlx5 ethtool Counters", "RoCE Congestion Control (DCQCN)"); the delivery plan\'s "more '
                  'than 5% loss under small-packet bursts" without PFC and ECN (issue 33)')),
    Check('gpu.count', 'gpu', 'GPU count as expected', 'higher', None,
          'a GPU is missing on {node}: check nvidia-smi -L and dmesg, reseat the baseboard or open a hardware ticket',
          measures='`nvidia-smi --query-gpu`',
          default='8',
          source='inventory'),
    Check('gpu.model', 'gpu', 'GPU model and form factor as expected', 'equal', None,
          'GPU model on {node} is {measured}, expected {threshold}: correct the inventory or swap the hardware',
          measures=('`nvidia-smi --query-gpu` exact `name` plus `pci.device_id` give a model key (h100-sxm, h100-pcie, '
                    'h100-nvl, h200-sxm, a100-sxm4-80gb, a100-pcie-80gb, b200-sxm...); a bare family (`h100`) means its SXM parts'),
          default='`verify_gpu_model` (a model key, an nvidia-smi name or a family)',
          source=('inventory; device ids from the PCI ID database (pci-ids.ucw.cz, vendor 10de: 2330 H100 SXM5 80GB, 2331 '
                  'H100 PCIe, 2321 H100L 94GB (NVL), 2335 H200 SXM 141GB, 20b2 A100 SXM4 80GB, 20b5 A100 PCIe 80GB, 2901 '
                  'B200); 0x233010DE in a real H100 `nvidia-smi -q` (issue 11)')),
    Check('gpu.driver_uniform', 'gpu', 'driver version identical across the fleet', 'equal', None,
          'install the fleet driver {threshold} on {node} (rerun the gpu stage with --limit {node}) and reboot',
          measures='driver version',
          default='the bill of materials\' driver (`verify_gpu_driver`, an override; a host with its own BOM is held '
                  'to its own) or, without a BOM, the fleet majority',
          source='delivery practice: one driver across the fleet'),
    Check('gpu.persistence', 'gpu', 'persistence mode enabled', 'equal', None,
          'enable persistence mode on {node} (nvidia-persistenced service)',
          measures='persistence mode on',
          default='Enabled',
          source='NVIDIA recommends nvidia-persistenced on compute nodes (driver persistence daemon docs)'),
    Check('gpu.ecc_mode', 'gpu', 'ECC mode enabled', 'equal', None,
          'enable ECC on {subject} of {node} (nvidia-smi -i N -e 1) and reboot the node; the change applies at the next reset',
          measures='`ecc.mode.current` of every GPU',
          default='Enabled',
          source=('NVIDIA data-centre GPUs ship with ECC enabled (nvidia-smi `-e`); HBM without ECC hides memory faults'
                  ' from every other memory check')),
    Check('gpu.ecc', 'gpu', 'no volatile uncorrectable ECC errors', 'lower', None,
          'drain {node}, reset {subject} (nvidia-smi -r -i) and run dcgmi diag -r 3; RMA the GPU if the errors return',
          measures='volatile uncorrectable ECC',
          default='0',
          source='own: any uncorrectable error on a node being accepted is a fault'),
    Check('gpu.retired_pages', 'gpu', 'retired/pending pages under the limit', 'lower', None,
          'reboot {node} to retire the pending pages; RMA {subject} if retired pages exceed the vendor limit',
          measures='`retired_pages.sbe + .dbe` and pending (pre-Ampere)',
          default='0, and none pending',
          source=('own: no public NVIDIA RMA count found; a pending retirement needs a driver reload (NVIDIA "Dynamic '
                  'Page Retirement")')),
    Check('gpu.row_remap', 'gpu', 'no pending row remaps or remap failures', 'state', None,
          'reset {subject} on {node} (or reboot) to apply the pending row remap; RMA the GPU on a remap failure',
          measures='`remapped_rows.pending`, `remapped_rows.failure` (Ampere and later)',
          default='neither',
          source='NVIDIA "A100/H100 GPU memory error management": pending needs a GPU reset, a failure needs service'),
    Check('gpu.power_limit', 'gpu', 'enforced power limit not below the default limit', 'higher', 'W',
          'restore the power limit of {subject} on {node} (nvidia-smi -i N -pl <default>) or lift the BMC/site power cap',
          measures='`enforced.power.limit` (else `power.limit`) against `power.default_limit`',
          default='>= default x (1 - `verify_gpu_power_limit_tolerance_pct` / 100); 5%',
          source=('own tolerance (issue 11): a capped GPU passes every functional test and runs every job slower; '
                  'the default limit is the board TDP nvidia-smi reports')),
    Check('gpu.clock_events', 'gpu', 'no hardware or thermal clock slowdown active', 'state', None,
          'check cooling, PSUs and the BMC power policy of {node}; {subject} has its clocks held down ({measured})',
          measures=('`clocks_event_reasons.*` (R535+; `clocks_throttle_reasons.*` before): hw_slowdown, hw_thermal_slowdown, '
                    'hw_power_brake_slowdown, sw_thermal_slowdown fail; gpu_idle, applications clocks, sw_power_cap do not'),
          default='none of the four active',
          source=("NVML clock event reasons (nvmlClocksEventReasons; nvidia-smi `Clocks Event Reasons`): SW power cap is the "
                  'GPU at its power limit under load, the HW and thermal reasons are the board protecting itself')),
    Check('gpu.pcie_link', 'gpu', 'PCIe link at its full width', 'equal', None,
          'reseat {subject} on {node} or its riser and check the slot (lspci -vv LnkSta): the link is {measured}, expected {threshold}',
          measures='`pcie.link.width.current/max`, `pcie.link.gen.current/max`',
          default='width = max; gen below max passes (idle GPUs train down) unless `verify_gpu_pcie_gen_strict`',
          source=('nvidia-smi reports the current link; NVIDIA GPUs lower the PCIe generation when idle to save power, '
                  'the width does not recover by itself (issue 11)')),
    Check('gpu.fabric_state', 'gpu', 'NVSwitch fabric registration completed', 'state', None,
          'start nvidia-fabricmanager on {node} (systemctl enable --now nvidia-fabricmanager) and read its log; {subject} fabric {measured}',
          measures='`nvidia-smi -q` Fabric `State` / `Status` of each GPU on NVSwitch systems (H100/H200/B200/A100 SXM)',
          default='Completed / Success; PCIe and NVL GPUs N/A',
          source=('nvidia-smi -q Fabric section (R530+; a real HGX H100 capture prints `State : Completed`, `Status : Success`); '
                  'NVIDIA Fabric Manager user guide: GPUs on NVSwitch systems cannot run CUDA peer traffic until FM completes')),
    Check('gpu.nvlink', 'gpu', 'all NVLinks up', 'higher', None,
          'reboot {node}; if {subject} still has NVLinks down, check fabric manager and open a hardware ticket',
          measures='`nvidia-smi nvlink -s`: every link active',
          default="`verify_gpu_nvlinks_per_gpu`, or as many as the node's best GPU",
          source='NVLink4 H100 SXM has 18 links, A100 SXM 12'),
    Check('gpu.nvlink_errors', 'gpu', 'NVLink error counters did not rise over the run beyond the limits', 'lower', None,
          'rerun the DCGM diagnostic and nccl-tests on {node}; reseat the baseboard cables or open a hardware ticket if the '
          'counters keep rising',
          measures=('`nvidia-smi nvlink -e` per link, read at the role\'s start and after the DCGM diagnostic; legacy names '
                    '(Replay/Recovery/CRC) and the R570+ NVLink 5 set (Rx Errors, Link recovery failed events, Effective '
                    'Errors...); a GPU with active NVLinks and no readable counter fails'),
          default=('rise per link: replay 100, recovery 0, CRC 100; R570+: malformed packet, buffer overrun, Rx, Rx remote, '
                   'local link integrity, link recovery failed, effective errors 0; counts since driver load only with '
                   '`verify_gpu_nvlink_error_absolute_max`'),
          source=('own: NVIDIA publishes no acceptance limit for these counters; a rise during the active tests is the '
                  'signal, counts since the driver loaded grow with uptime (issue 11); R570+ names as a 595 driver prints '
                  'them; recovery means the link retrained')),
    Check('gpu.xid', 'gpu', 'no Xid needing a GPU reset, reboot or support since the last check', 'state', None,
          "look up Xid {measured} in NVIDIA's Xid catalog; drain {node}, reset the GPU or reboot, and open a hardware ticket "
          "for {subject} if it recurs",
          measures=('NVRM Xid lines of `dmesg --time-format iso` after the cursor the last check kept in '
                    '`verify_gpu_state_file`; a ring buffer that no longer reaches back to it is said, not failed'),
          default=('buckets RESET_GPU, REBOOT, CONTACT_SUPPORT fail (48, 61, 62, 64, 74, 79, 95, 119, 120, 140, 143; 154 by '
                   'the action it names); RESTART_APP (13, 31, 43, 94...), IGNORE (45, 92), 63 and 144-150 listed only; '
                   'plus `verify_gpu_fatal_xids`'),
          source=('NVIDIA Xid catalog, Resolution Bucket (Immediate Action) '
                  '(docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html); table in plugins/module_utils/kernel_log.py; '
                  '63 is a row-remap event whose state gpu.row_remap reads; 144-150 (NVLink 5) act through the Xid 154 that '
                  'follows')),
    Check('gpu.processes', 'gpu', 'no stray processes on the GPUs (a Slurm job\'s own are busy, not stray)', 'lower', None,
          'stop the stray GPU processes on {node} (nvidia-smi --query-compute-apps=pid,name) before it takes jobs',
          measures=('`--query-compute-apps`, with `/proc/<pid>/cgroup` of each PID and `scontrol listpids` (a PID of a running '
                    'Slurm job: busy GPU, not tested)'),
          default='none outside a Slurm job (`verify_gpu_allowed_processes`)',
          source='leftover processes after a job; Slurm cgroup paths (v1 /slurm/uid_N/job_M, v2 slurmstepd.scope/job_M) (issue 11)'),
    Check('gpu.dcgm_diag', 'gpu', 'dcgmi diag passes and skipped none of its CUDA tests', 'state', None,
          "rerun dcgmi diag -r 3 on {node}, and open a hardware ticket with the failing test's output; on 'DCGM plugin missing' "
          "install datacenter-gpu-manager-4-cuda<major>",
          measures='`dcgmi diag -r 2` (levels 1-4; 2-4 not in check mode)',
          default='`pass` (warn fails unless `verify_gpu_dcgm_allow_warn`); a Skip of a CUDA test fails',
          source=('DCGM diagnostics user guide: level 1 deployment checks, 2 adds PCIe/memory (minutes), 3 long stress, 4 '
                  'extended; DCGM 4 reports its CUDA tests Skip without the datacenter-gpu-manager-4-cuda<major> package '
                  '(issue 11)')),
    Check('nccl.busbw', 'nccl', 'single-node all_reduce bus bandwidth over the threshold', 'higher', 'GB/s',
          'run all_reduce_perf on {node} alone; check NVLink/NVSwitch (nvidia-smi nvlink -s, fabric manager), GPU clocks and power',
          measures='busbw at sizes >= 1 GiB (the largest if none), run with `NCCL_ALGO=Ring` (`verify_nccl_algorithm`)',
          default=('by model key (exact name + PCI device id): ring H100/H200 SXM 330, A100 SXM 200 GB/s; NVLS H100/H200 SXM '
                   '400; other models and form factors (H100 PCIe/NVL, B200) must be set'),
          source=('nccl-tests `doc/PERFORMANCE.md` defines busbw; H100 SXM reaches about 460-480 GB/s only with NVLink '
                  'SHARP and about 370 with NVLS off or NCCL_ALGO=Ring (nccl-tests issues #212, #309; nccl #2140); '
                  'A100 SXM about 230-250 (no NVLS); defaults are about 90% (ring) and 85% (NVLS) of those')),
    Check('nccl.wrong', 'nccl', 'nccl-tests #wrong is 0', 'lower', None,
          'data corruption: drain {node}, run dcgmi diag -r 3 and open a hardware ticket',
          measures='`all_reduce_perf -b 8 -e 8G -f 2 -g <gpus>`',
          default='`#wrong` 0 and no `Test failure`',
          source='nccl-tests: `#wrong` counts wrong results'),
    Check('nccl.slow_node', 'nccl', 'bus bandwidth within a fraction of the fleet median', 'higher', 'GB/s',
          "compare {node}'s GPU clocks, power limits and NVLink state with a healthy node; rerun all_reduce_perf",
          measures='busbw vs the fleet median',
          default='>= 90% of the median (`verify_nccl_slow_fraction: 0.1`)',
          source='own; catches a node that is slow but above the absolute bar'),
    Check('nccl.multi_node_launch', 'nccl', 'the multi-node run is one job over every launched node and GPU, on RDMA', 'equal', None,
          'wire nccl-tests to Slurm\'s PMI: build it with MPI=1 against an MPI with PMIx, run srun with --mpi=pmix '
          '(verify_nccl_srun_args), and check `srun --mpi=list`',
          measures='ranks and distinct hosts in the `# Rank` lines, and the number of result tables, against what srun launched',
          default='ranks = nodes x GPUs per node, hosts = nodes, one table',
          source=('without PMI, srun starts N independent single-node jobs whose output looks like one good run '
                  '(Slurm mpi_guide: --mpi=pmix; nccl-tests README: MPI=1)')),
    Check('nccl.multi_node_busbw', 'nccl', 'multi-node all_reduce bus bandwidth over the threshold', 'higher', 'GB/s',
          'check the NCCL environment (NCCL_IB_HCA, GID index), rail cabling, and perftest between the nodes of the run',
          measures=('srun over every node that passed so far and is in service; a cluster-level result (drains nobody), '
                    'except on the nodes bisection localises it on (subject `bisection`) or whose own rank failed '
                    '(subject `rank`: a `HOST: Test NCCL|CUDA failure` other than the remote error the others echo)'),
          default=("0.75 x a node's GPU-fabric bandwidth (the checked HCAs' rates / 8: 8 x 400 Gb/s gives 300 GB/s); "
                   'the model table (H100/H200 300, A100 150) when verify_ib did not run'),
          source=('runs over more than 2 nodes on 8 x NDR read about 320-390 GB/s (ring); 2-node runs use NVLSTree and read '
                  'higher (nccl issues #1031, #1221); 0.75 of the line rate leaves room for the ring\'s protocol overhead')),
    Check('nccl.env', 'nccl', "NCCL's own log of the multi-node run: NET/IB on exactly the node's GPU-fabric ports, GPU Direct "
          'RDMA, a RoCE v2 IPv4 GID', 'state', None,
          "check {node}'s /etc/nccl.conf (rerun the fabric stage's nccl role: NCCL_IB_HCA, NCCL_IB_GID_INDEX from show_gids), "
          'its RDMA stack (ibv_devinfo) and nvidia_peermem; then rerun verify',
          measures=('per node, the `NCCL_DEBUG=INFO` / `NCCL_DEBUG_SUBSYS=INIT,NET` lines of the multi-node run '
                    '(module_utils/nccl_debug.py): `NET/IB : Using [0]mlx5_0:1/RoCE ...` (not `NET/Socket`), '
                    "`GPU Direct RDMA Enabled for HCA`, and on RoCE each connection's `GID` index against the node's GID "
                    'table (ib_info)'),
          default=("the devices NCCL_IB_HCA selects among the node's Active ports (the run's environment, then the node's "
                   '/etc/nccl.conf), else the GPU-fabric HCAs verify_ib checked; RoCE: GID RoCE v2 with an IPv4 address'),
          source=('NCCL src/transport/net_ib.cc (NET/IB : Using, the GID of each connection), src/graph/topo.cc (GPU Direct '
                  'RDMA), src/init.cc (Using network); a wrong GID index is the RoCE timeout of NVIDIA/nccl #769, #1131, '
                  '#2013 (`ibv_modify_qp failed with 110`); a fall-back to sockets runs at a fraction of the fabric')),
    # burn-in (playbooks/burnin.yml; verify/burnin.py judges a node's samples over the whole run, docs/burnin.md)
    Check('burnin.samples', 'burnin', 'the sampler recorded the whole run', 'lower', 's',
          "read {node}'s sampler log (burnin_state_dir); a node that stops answering under load: check its power and BMC log",
          measures='the longest time without a sample, and sampler errors', default='no gap over 2 sample intervals',
          source='the delivery plan samples every 15 min; one missed sample is tolerated, two are a sampler or node fault'),
    Check('burnin.gpu_present', 'burnin', 'every GPU seen at the start is seen in every sample', 'higher', None,
          'a GPU fell off the bus on {node}: drain it, reseat the GPU baseboard or RMA (Xid 79)', measures='GPUs per sample',
          default='the first sample\'s GPUs', source='a GPU lost under load is fatal (Xid 79 semantics); stops the node early'),
    Check('burnin.gpu_thermal', 'burnin', 'no GPU reached its own temperature limit or slowed down for heat', 'higher', 'C',
          "check {node}'s inlet temperature, fans and the GPU's heatsink and airflow: {subject}",
          measures='nvidia-smi -q GPU T.Limit Temp (headroom to the max operating temperature) and the thermal clock events',
          default='headroom >= 0 C (`burnin_gpu_headroom_min_c`); no HW/SW thermal slowdown or HW slowdown in any sample',
          source='nvidia-smi (R535+, real capture gpud-q-8xh100-535.183.01): max operating at T.Limit 0 C, slowdown -2 C, shutdown -8 C'),
    Check('burnin.xid', 'burnin', 'no Xid needing a GPU reset, reboot or support during the run', 'state', None,
          'drain {node}; reset the GPU or reboot, run dcgmi diag -r 3; RMA if it returns', measures='kernel log Xids since the run started',
          default='none in RESET_GPU, REBOOT, CONTACT_SUPPORT (and `burnin_fatal_xids`)', source="NVIDIA's Xid catalog (as gpu.xid)"),
    Check('burnin.gpu_memory', 'burnin', 'no new uncorrectable ECC error or row remap under load', 'lower', None,
          'drain {node}, reset the GPU to apply the remap, run dcgmi diag -r 3; RMA on a remap failure',
          measures='ecc.errors.uncorrected.volatile.total rise; remapped_rows.pending / .failure', default='no rise; no pending or failed remap',
          source='NVIDIA GPU memory error management guide (as gpu.ecc, gpu.row_remap)'),
    Check('burnin.link_errors', 'burnin', 'no link error counter of a GPU-fabric port rose and no port went down', 'lower', None,
          'clean or replace the optic/cable of {node} {subject}; a link that fails when hot is a marginal optic',
          measures='port state in every sample; rise of LinkDowned, LinkErrorRecovery, PortRcvErrors... (ethtool link_down_events_phy, rx_crc_errors_phy)',
          default='no rise; Active in every sample', source='IBA PortCounters; as ib.link_errors, over the whole run'),
    Check('burnin.ber', 'burnin', 'symbol error ratio of each GPU-fabric port at or below the threshold', 'lower', None,
          'clean or replace the optic/cable of {node} {subject}; check the module temperature (mlxlink -m)',
          measures='symbol errors counted over the run / (port rate x run time)', default='1e-12 (`burnin_ber_max`)',
          source='the delivery plan (BER <= 1e-12 for the burn-in); the InfiniBand physical layer target'),
    Check('burnin.roce_drops', 'burnin', 'no RoCE port dropped a packet', 'lower', None,
          'check PFC and ECN on {node} {subject} and on its switch port (docs/fabric.md); the lossless class must not drop',
          measures='rise of rx_prio<P>_discards and rx_discards_phy', default='0 (the delivery plan: zero drops)', source='the delivery plan'),
    Check('burnin.bmc', 'burnin', 'PSUs and fans healthy, inlet temperature at or below the limit', 'lower', 'C',
          "check {node}'s {subject} (BMC event log: ipmitool sel elist); the room's cooling for an inlet over the limit",
          measures='ipmitool sdr elist: PSU and fan statuses and asserted failure states; the inlet sensor (burnin_bmc_sensor_map)',
          default='every PSU and fan ok; inlet <= 35 C (`burnin_inlet_max_c`)', source='ASHRAE TC 9.9 class A2 allowable inlet: 10-35 C'),
    Check('burnin.load', 'burnin', "each load iteration's figure within a fraction of the fleet median", 'higher', None,
          "compare {node}'s GPU clocks, power and temperatures at that iteration with a healthy node's",
          measures='per load kind and iteration: the node\'s figure (Gflop/s, TFLOPs, busbw) against the fleet median',
          default='>= 90% of the median (`burnin_load_slow_fraction: 0.1`); a failed iteration fails',
          source='own, as nccl.slow_node: a GPU that slows at hour 20 is caught at that iteration'),
    Check('node.drain_breaker', 'node', 'no check fails on more than a fraction of the nodes', 'lower', None,
          'find the common cause (image, driver, switch, threshold) of the failure shared by the nodes; rerun verify',
          measures='nodes failing the same check, against `verify_gate_max_drain_fraction` of the nodes (and at least 2)',
          default='10% of the nodes (`verify_gate_max_drain_fraction: 0.1`)',
          source=('own; the same idea as a drain limit in node health checkers: a failure that wide is a cluster '
                  'problem, and draining for it takes the fleet down')),
    Check('node.tested', 'node', 'every node was tested actively (none was running jobs)', 'lower', None,
          'drain {node} (or reserve the nodes) so that no job runs there, then run verify again',
          measures='nodes that Slurm showed ALLOCATED, MIXED or COMPLETING when the run started (`verify_gate_busy: skip`)',
          default='0 nodes not tested',
          source=('own; active tests disturb running jobs and are disturbed by them (domain notes: "the field is not the '
                  'lab"); a node that was not measured cannot be accepted')),
    Check('node.reachable', 'node', 'the node answered and its checks ran', 'state', None,
          'bring {node} back (power, BMC console, sshd, network), then rerun verify with --limit {node}',
          measures='the node answered and its checks ran',
          default='results from every node',
          source='a node with no result at all cannot be accepted'),
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
