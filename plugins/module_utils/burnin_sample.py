# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One burn-in sample (``aicluster.infra/burnin-sample/v1``, docs/burnin.md "Samples") from the tools' own output.

The node's sampler runs the tools (nvidia-smi, perfquery or ethtool, ipmitool, the kernel log) and hands their text
to these functions, which parse it with the collection's parsers and keep what the gate judges. Pure functions: text
in, plain data out. A tool that failed or printed something unreadable costs its part of the sample (null fields, a
line in ``errors``), never the sample.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.gpu_facts import (
    CLOCK_PREFIXES, CLOCK_REASONS, clock_events, to_bool, to_float, to_int,
)
from ansible_collections.aicluster.infra.plugins.module_utils.ib_counters import parse_ethtool_stats, parse_perfquery
from ansible_collections.aicluster.infra.plugins.module_utils.ipmitool import (
    DEFAULT_SENSOR_MAP, parse_dcmi_power_reading, parse_sdr_elist, pick_sensors,
)
from ansible_collections.aicluster.infra.plugins.module_utils.kernel_log import parse_xid, since
from ansible_collections.aicluster.infra.plugins.module_utils.nvidia_smi import parse_nvidia_smi_q, parse_query_gpu_csv

SCHEMA = 'aicluster.infra/burnin-sample/v1'

# nvidia-smi --query-gpu fields of a sample (names from nvidia-smi --help-query-gpu; remapped_rows.* are N/A before
# Ampere, and the clock reasons are clocks_event_reasons.* from R535, clocks_throttle_reasons.* before: gpu_facts)
GPU_FIELDS = ('index', 'pci.bus_id', 'uuid', 'temperature.gpu', 'temperature.memory', 'power.draw', 'power.limit',
              'clocks.sm', 'ecc.errors.uncorrected.volatile.total', 'remapped_rows.pending', 'remapped_rows.failure')
# the RoCE counters a sample keeps from ethtool -S (verify/burnin judges them; pauses are evidence, not faults)
ROCE_COUNTERS = ('rx_symbol_err_phy', 'rx_crc_errors_phy', 'link_down_events_phy', 'rx_discards_phy') + tuple(
    'rx_prio%d_%s' % (prio, what) for prio in range(8) for what in ('discards', 'pause'))
# the IPMI entity ID of a power supply (IPMI v2.0 table 43-13: 0Ah), as ipmitool sdr elist prints it ('10.1')
PSU_ENTITY = '10'
# the sysfs port state an Active port has (/sys/class/infiniband/<dev>/ports/<p>/state: '4: ACTIVE')
ACTIVE = 'ACTIVE'


def gpu_query_fields(prefix=CLOCK_PREFIXES[0]):
    """The ``--query-gpu`` fields of a sample, the clock reasons under ``prefix``."""
    return GPU_FIELDS + tuple('%s.%s' % (prefix, reason) for reason in CLOCK_REASONS)


def _bus(bus_id):
    """A PCI bus id as nvidia-smi prints it in either place (``00000000:18:00.0``), upper case, for joining."""
    return str(bus_id or '').strip().upper()


def _headrooms(temperature_text, errors):
    """PCI bus id -> ``GPU T.Limit Temp`` in degrees, from ``nvidia-smi -q -d TEMPERATURE`` (R535+; absent before)."""
    if not temperature_text:
        return {}
    try:
        parsed = parse_nvidia_smi_q(temperature_text)
    except ParseError as exc:
        errors.append('nvidia-smi -q -d TEMPERATURE: %s' % exc)
        return {}
    out = {}
    for key, section in (parsed.get('sections') or {}).items():
        if key.startswith('GPU ') and isinstance(section, dict) and isinstance(section.get('Temperature'), dict):
            out[_bus(key[4:])] = to_float(section['Temperature'].get('GPU T.Limit Temp'))
    return out


def sample_gpus(query_text, fields, temperature_text=None, errors=None):
    """The sample's ``gpus`` from ``nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits`` (``fields``: what was
    asked, ``gpu_query_fields``) and ``nvidia-smi -q -d TEMPERATURE``; None when the query gave nothing readable."""
    errors = errors if errors is not None else []
    try:
        rows = parse_query_gpu_csv(query_text or '', fields=list(fields))
    except ParseError as exc:
        errors.append('nvidia-smi --query-gpu: %s' % exc)
        return None
    headroom = _headrooms(temperature_text, errors)
    gpus = []
    for row in rows:
        gpus.append({
            'index': to_int(row.get('index')), 'uuid': row.get('uuid'),
            'temp_c': to_float(row.get('temperature.gpu')), 'mem_temp_c': to_float(row.get('temperature.memory')),
            'temp_headroom_c': headroom.get(_bus(row.get('pci.bus_id'))),
            'power_w': to_float(row.get('power.draw')), 'power_limit_w': to_float(row.get('power.limit')),
            'sm_clock_mhz': to_float(row.get('clocks.sm')), 'clock_events': clock_events(row),
            'ecc_uncorrected': to_int(row.get('ecc.errors.uncorrected.volatile.total')),
            'remap_pending': to_bool(row.get('remapped_rows.pending')),
            'remap_failure': to_bool(row.get('remapped_rows.failure')),
        })
    return gpus


def _rate(rate_text):
    """Gb/s from sysfs ``rate`` (``400 Gb/sec (4X NDR)``) or a plain number; None when unreadable."""
    return to_float(str(rate_text or '').split('Gb/sec', 1)[0]) if rate_text else None


def ib_port(name, perfquery_text, state_text=None, rate_text=None, errors=None):
    """One InfiniBand port of the sample from ``perfquery -C <hca> -P <port>`` (the basic PortCounters, which always
    carry the error counters) and the port's sysfs ``state`` and ``rate`` files. No text (the tool failed, said by its
    caller): no counters."""
    errors = errors if errors is not None else []
    counters = None
    try:
        counters = dict(parse_perfquery(perfquery_text)['counters']) if perfquery_text is not None else None
    except ParseError as exc:
        errors.append('perfquery %s: %s' % (name, exc))
    state = str(state_text).rsplit(':', 1)[-1].strip() if state_text else None
    return {'name': name, 'link_layer': 'InfiniBand', 'state': 'Active' if state == ACTIVE else state,
            'rate_gbps': _rate(rate_text), 'counters': counters}


def roce_port(name, ethtool_text, operstate=None, speed_mbps=None, errors=None):
    """One RoCE port of the sample from ``ethtool -S <netdev>`` and the netdev's sysfs ``operstate`` and ``speed``."""
    errors = errors if errors is not None else []
    counters = None
    try:
        if ethtool_text is not None:
            stats = parse_ethtool_stats(ethtool_text)
            counters = dict((key, value) for key, value in stats.items() if key in ROCE_COUNTERS)
    except ParseError as exc:
        errors.append('ethtool -S %s: %s' % (name, exc))
    state = str(operstate).strip() if operstate else None
    speed = to_float(speed_mbps)
    return {'name': name, 'link_layer': 'Ethernet', 'state': 'Active' if state == 'up' else state,
            'rate_gbps': speed / 1000.0 if speed and speed > 0 else None, 'counters': counters}


def _bmc_sensor(sensor, name):
    return {'name': name, 'status': sensor['status'], 'reading': sensor.get('value'), 'text': sensor.get('text')}


def sample_bmc(sdr_text, dcmi_text=None, sensor_map=None, errors=None):
    """The sample's ``bmc`` from ``ipmitool sdr elist`` and ``ipmitool dcmi power reading``; ``sensor_map`` maps roles
    to the vendor's sensor names (``ipmitool.DEFAULT_SENSOR_MAP``). ``valid`` false when neither gave a reading."""
    errors = errors if errors is not None else []
    out = {'valid': False, 'inlet_c': None, 'exhaust_c': None, 'power_w': None, 'psus': [], 'fans': [], 'unmapped': 0}
    if sdr_text:
        try:
            picked = pick_sensors(parse_sdr_elist(sdr_text), sensor_map or DEFAULT_SENSOR_MAP)
        except (ParseError, ValueError) as exc:
            errors.append('ipmitool sdr elist: %s' % exc)
        else:
            out['valid'] = True
            for role, key in (('inlet', 'inlet_c'), ('exhaust', 'exhaust_c'), ('power', 'power_w')):
                values = [sensor['value'] for sensor in picked.get(role) or [] if sensor.get('value') is not None]
                out[key] = max(values) if values else None
            for role, key in (('psu', 'psus'), ('fan', 'fans')):
                out[key] = [_bmc_sensor(sensor, sensor['name']) for sensor in picked.get(role) or [] if sensor['status'] != 'ns']
            # a BMC that names its PSU sensors by what they read, not by the supply (Dell: 'Status', 'Presence' of
            # entity 10.1 and 10.2 in the real R740 capture): the discrete sensors of entity 10, the IPMI entity ID
            # of a power supply, count as PSUs too, named with their entity
            named = set(id(sensor) for sensor in picked.get('psu') or [])
            out['psus'] += [_bmc_sensor(sensor, '%s %s' % (sensor['name'], sensor['entity']))
                            for sensor in picked.get('unmapped') or []
                            if id(sensor) not in named and str(sensor.get('entity') or '').split('.', 1)[0] == PSU_ENTITY
                            and sensor.get('kind') == 'discrete' and sensor['status'] != 'ns']
            out['unmapped'] = len(picked.get('unmapped') or [])
    if dcmi_text:
        try:
            power = parse_dcmi_power_reading(dcmi_text)
        except ParseError as exc:
            errors.append('ipmitool dcmi power reading: %s' % exc)
        else:
            if power.get('valid'):
                out['valid'] = True
                out['power_w'] = power.get('instantaneous_w')
    return out


def sample_xids(kernel_text, start=None):
    """Every Xid of ``dmesg --time-format iso`` output after ``start`` (the run's start as that node's dmesg stamps
    it, so both are in its zone: kernel_log.since compares them as text), events without a time kept."""
    return [{'code': event['code'], 'pci': event['pci'], 'time': event['time'], 'text': event['text'][:200]}
            for event in since(parse_xid(kernel_text or ''), start)]


def build_sample(run, node, seq, time, elapsed_s, gpus=None, ports=None, xids=None, bmc=None, loads=None, errors=None):
    """The sample as one JSON-ready dict (``json.dumps(..., separators=(',', ':'))`` makes its line)."""
    return {'schema': SCHEMA, 'run': run, 'node': node, 'seq': int(seq), 'time': time, 'elapsed_s': float(elapsed_s),
            'gpus': gpus, 'ports': ports or [], 'xids': xids or [], 'bmc': bmc, 'loads': loads or [],
            'errors': list(errors or [])}
