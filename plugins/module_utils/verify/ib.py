# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Area ib: the HCAs and their ports (ibstat through ib_info), per node and across the fleet.

``evaluate_ib`` judges one node's ib_info; ``evaluate_ib_fleet`` compares
firmware, OFED and (without an expected rate) port rates across the fleet;
``decide_ib`` is the one call the verify_ib role makes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils.verify._common import failed, fmt, merge, most_common, uniform
from ansible_collections.aicluster.infra.plugins.module_utils.verify.fabric import identity_of, plan_reads
from ansible_collections.aicluster.infra.plugins.module_utils.verify.results import new_result

PORT_CHECKS = ('ib.hca_present', 'ib.port_state', 'ib.port_rate', 'ib.link_layer')


def _device_order(name):
    """``mlx5_10`` after ``mlx5_9``: ibstat lists devices as sysfs sorts them (mlx5_0, mlx5_1, mlx5_10, mlx5_11, mlx5_2)."""
    head, sep, number = str(name).rpartition('_')
    return (head, int(number)) if sep and number.isdigit() else (str(name), -1)


def checked_hcas(ib_info, hcas=None, link_layer=None):
    """The HCAs the checks look at, in rail order: ``hcas`` when given, else every HCA with a port of ``link_layer``
    by device number (rail k is the k-th). NVSwitch bridge functions (HGX B200/B300, ib_info ``nvswitch_bridge``
    or ``nvswitch_bridges``) are never in the default: they belong to NVLSM, not to the compute fabric."""
    if hcas:
        return list(hcas)
    names = []
    bridges = set((ib_info or {}).get('nvswitch_bridges') or [])
    for ca in (ib_info or {}).get('hcas') or []:
        if ca.get('nvswitch_bridge') or ca.get('name') in bridges:
            continue
        if any(link_layer in (None, '') or port.get('link_layer') == link_layer for port in ca.get('ports') or []):
            names.append(ca.get('name'))
    return sorted(names, key=_device_order)


def _find_port(ca, port_number):
    return next((p for p in ca.get('ports') or [] if p.get('port') == port_number), None)


def _port_results(name, port, port_number, rate, link_layer, checks):
    subject = '%s:%d' % (name, port_number)
    results = []
    if 'ib.port_state' in checks:
        state = '%s/%s' % (port.get('state'), port.get('physical_state'))
        ok = port.get('state') == 'Active' and port.get('physical_state') == 'LinkUp'
        results.append(new_result(
            'ib.port_state', subject, state, 'Active/LinkUp', ok,
            '%s port %d is %s' % (name, port_number, state) if ok else
            '%s port %d is %s, expected Active/LinkUp; check the cable, the switch port and the subnet manager'
            % (name, port_number, state)))
    if 'ib.port_rate' in checks and rate not in (None, '', 0):
        measured = port.get('rate_gbps')
        ok = measured is not None and float(measured) == float(rate)
        results.append(new_result(
            'ib.port_rate', subject, measured, float(rate), ok,
            '%s port %d rate %s Gb/s%s' % (
                name, port_number, fmt(measured), ' as expected' if ok else
                ', expected %s Gb/s; a lower rate is a degraded link (width or speed): '
                'reseat or replace the cable' % fmt(float(rate))),
            unit='Gb/s'))
    if 'ib.link_layer' in checks and link_layer:
        ok = port.get('link_layer') == link_layer
        results.append(new_result(
            'ib.link_layer', subject, port.get('link_layer'), link_layer, ok,
            '%s port %d link layer %s%s' % (
                name, port_number, port.get('link_layer'), '' if ok else
                ', expected %s; set the port type (mlxconfig LINK_TYPE_P1) and reboot' % link_layer)))
    return results


def evaluate_ib(ib_info, expected):
    """ib.hca_present, ib.port_state, ib.port_rate, ib.link_layer for one node.

    ``expected``: ``hcas`` (names in rail order; empty: every HCA of
    ``link_layer``), ``port`` (default 1), ``rate_gbps`` (0/None: the rate is
    checked fleet-wide by ``evaluate_ib_fleet``), ``link_layer``, and
    ``checks`` (the check ids to run; default all four).
    """
    checks = expected.get('checks') or PORT_CHECKS
    port_number = int(expected.get('port') or 1)
    link_layer = expected.get('link_layer') or None
    by_name = dict((ca.get('name'), ca) for ca in (ib_info or {}).get('hcas') or [])
    names = checked_hcas(ib_info, expected.get('hcas'), link_layer)
    if not names:
        return [new_result('ib.hca_present', 'node', 0, 'at least 1', False,
                           'no %sHCA found by ibstat; check the adapters and the driver (mlx5_core, ib_umad)'
                           % ((link_layer + ' ') if link_layer else ''))]
    results = []
    for name in names:
        ca = by_name.get(name)
        if 'ib.hca_present' in checks:
            results.append(new_result(
                'ib.hca_present', name, 'present' if ca else 'missing', 'present', ca is not None,
                '%s present (%s, firmware %s)' % (name, ca.get('ca_type'), ca.get('firmware_version')) if ca else
                '%s missing from ibstat; reseat the adapter or check its driver and firmware' % name))
        if ca is None:
            continue
        port = _find_port(ca, port_number)
        if port is None:
            results.append(new_result('ib.port_state', '%s:%d' % (name, port_number), 'missing', 'Active/LinkUp', False,
                                      '%s has no port %d in ibstat' % (name, port_number)))
            continue
        results.extend(_port_results(name, port, port_number, expected.get('rate_gbps'), link_layer, checks))
    return results


def _fleet_rates(name, holders, port_number, cluster=None):
    values = {}
    for node, info in holders.items():
        ca = next((c for c in (info or {}).get('hcas') or [] if c.get('name') == name), None)
        port = _find_port(ca or {}, port_number)
        if port is not None and port.get('state') == 'Active':
            values[node] = port.get('rate_gbps')
    out = uniform('ib.port_rate', '%s:%d' % (name, port_number), values, 'rate (Gb/s)',
                  'reseat or replace the cable (a lower rate is a degraded link)', cluster=cluster)
    for results in out.values():
        for result in results:
            result['unit'] = 'Gb/s'
    return out


def _wanted_firmware(expected, name, psids):
    """The firmware pinned for HCA ``name``: ``expected`` is one version, or a mapping keyed by HCA name or by PSID
    (``board_id``; the bill of materials' ``rdma.firmware``). By PSID, the version of the PSID most of the fleet's
    ``name`` adapters carry; None (the fleet's majority) when nothing is pinned for it."""
    if not isinstance(expected, dict):
        return expected
    if expected.get(name) not in (None, ''):
        return expected.get(name)
    known = [psid for psid in psids if psid and expected.get(psid) not in (None, '')]
    return expected[most_common(known)] if known else None


def _ofed_as_expected(value, expected):
    """``value`` counted as ``expected`` when it is that release with more fields after it: ``ofed_info -s`` of some
    DOCA-OFED builds (OFED-internal-24.10-1.1.4.0.200 for the BOM's OFED-internal-24.10-1.1.4)."""
    if expected and str(value).startswith(str(expected) + '.'):
        return expected
    return value


def evaluate_ib_fleet(ib_infos, expected, cluster=None):
    """ib.firmware_uniform, ib.ofed_uniform and (without an expected rate) ib.port_rate, fleet-wide.

    ``ib_infos``: node -> ib_info facts (None: not read). ``expected``: as
    ``evaluate_ib`` plus ``firmware`` (HCA name or PSID -> version, or one
    version for all; empty: the fleet's majority), ``ofed`` (empty: majority) and
    ``fleet_checks``. Returns node -> [results]. ``cluster``: a list that
    receives the cluster-level results (a split with no majority and no pin).
    """
    checks = expected.get('fleet_checks') or ['ib.firmware_uniform', 'ib.ofed_uniform', 'ib.port_rate']
    port_number = int(expected.get('port') or 1)
    ib_infos = dict((node, info) for node, info in ib_infos.items() if info)
    names = dict((node, checked_hcas(info, expected.get('hcas'), expected.get('link_layer') or None))
                 for node, info in ib_infos.items())
    firmware_expected = expected.get('firmware')
    out = {}
    for name in sorted(set(name for node_names in names.values() for name in node_names)):
        holders = dict((node, info) for node, info in ib_infos.items() if name in names[node])
        if 'ib.firmware_uniform' in checks:
            values, psids = {}, []
            for node, info in holders.items():
                ca = next((c for c in (info or {}).get('hcas') or [] if c.get('name') == name), None)
                if ca is not None:
                    values[node] = ca.get('firmware_version')
                    psids.append(ca.get('board_id'))
            wanted = _wanted_firmware(firmware_expected, name, psids)
            merge(out, uniform('ib.firmware_uniform', name, values, 'firmware',
                               'flash the same firmware on every node (mlxfwmanager)', wanted, cluster=cluster))
        if 'ib.port_rate' in checks and expected.get('rate_gbps') in (None, '', 0):
            merge(out, _fleet_rates(name, holders, port_number, cluster))
    if 'ib.ofed_uniform' in checks:
        values = dict((node, _ofed_as_expected((info or {}).get('ofed_version') or 'inbox', expected.get('ofed')))
                      for node, info in ib_infos.items())
        merge(out, uniform('ib.ofed_uniform', 'node', values, 'OFED', 'install the same DOCA-OFED/MLNX_OFED release',
                           expected.get('ofed') or None, cluster=cluster))
    return out


def decide_ib(observations, expected):
    """The verify_ib role's decision for ports and fleet uniformity.

    ``observations``: node -> {``ib_info``: the ib_info module result, failed
    or not (absent: not read)}. ``expected``: as ``evaluate_ib_fleet`` plus
    ``ports`` and ``uniform`` (bools: which checks are enabled).
    Returns ``{'nodes', 'fleet', 'raw', 'checked', 'identity', 'fabric_reads', 'subnet_reads'}``:
    node-scope results, fleet results, the node's adapters for results.json,
    each node's HCAs in rail order (the fabric and perftest areas use them),
    each node's HCA -> port GUIDs (how the fabric read finds the node), and
    where iblinkinfo reads from (``fabric_host``, default the node that reaches
    the most subnets; one read per subnet), and ``subnet_reads``: the same host's one port per subnet whose link is
    up, for sminfo, saquery and ibqueryerrors (fabric.sm, fabric.switch_errors).
    """
    nodes, raw, checked, infos, identity = {}, {}, {}, {}, {}
    ports, uniform_enabled = bool(expected.get('ports', True)), bool(expected.get('uniform', True))
    node_expected = dict((key, expected.get(key)) for key in ('hcas', 'port', 'rate_gbps', 'link_layer'))
    for node, observed in sorted(observations.items()):
        info = (observed or {}).get('ib_info')
        nodes[node], raw[node], infos[node] = [], {'ib_info': None}, None
        checked[node] = list(expected.get('hcas') or [])
        if not (ports or uniform_enabled) or info is None:
            if isinstance(info, dict) and info and not info.get('skipped') and not failed(info):
                # read for the fabric's identity only (port and uniformity checks off)
                checked[node] = checked_hcas(info, expected.get('hcas'), expected.get('link_layer'))
                identity[node], infos[node] = identity_of(info), None
            continue
        if failed(info):
            nodes[node] = [new_result('ib.hca_present', 'node', None, 'ib_info', False,
                                      'ib_info failed: %s; install infiniband-diags and check the driver'
                                      % (info.get('msg') or 'unknown error'))]
            continue
        adapters = {'hcas': info.get('hcas'), 'ofed_version': info.get('ofed_version')}
        nodes[node] = evaluate_ib(info, node_expected) if ports else []
        raw[node], infos[node] = {'ib_info': adapters}, adapters
        checked[node] = checked_hcas(info, expected.get('hcas'), expected.get('link_layer'))
        identity[node] = identity_of(info)
    fleet, cluster = {}, []
    if uniform_enabled:
        fleet_expected = dict(node_expected, firmware=expected.get('firmware'), ofed=expected.get('ofed'),
                              fleet_checks=['ib.firmware_uniform', 'ib.ofed_uniform'] + (['ib.port_rate'] if ports else []))
        fleet = evaluate_ib_fleet(infos, fleet_expected, cluster)
    readable = dict((node, (observations.get(node) or {}).get('ib_info')) for node in identity)
    reads = plan_reads(readable, checked, expected.get('port') or 1, expected.get('fabric_host') or None)
    # sminfo, saquery and ibqueryerrors: one port per subnet, a port whose link is up counting (no master SM leaves
    # every port Initializing, and that is what sminfo must find)
    subnet_reads = plan_reads(readable, checked, expected.get('port') or 1, expected.get('fabric_host') or None, linkup=True)
    subnets = []
    for read in subnet_reads['reads']:
        if read['subnet'] not in [seen['subnet'] for seen in subnets]:
            subnets.append(read)
    return {'nodes': nodes, 'fleet': fleet, 'cluster': cluster, 'raw': raw, 'checked': checked, 'identity': identity,
            'fabric_reads': reads, 'subnet_reads': {'host': subnet_reads['host'], 'reads': subnets}}
