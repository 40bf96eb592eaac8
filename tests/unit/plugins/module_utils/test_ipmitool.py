# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/ipmitool.py on the real ipmitool captures and the printf layouts they lack."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest
from hypothesis import given

from _fuzz import FUZZ_SETTINGS, texts_from, only_parse_error
from _paths import real_fixture, fixture_files, read_fixture

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.ipmitool import (
    DEFAULT_SENSOR_MAP, parse_dcmi_power_reading, parse_sdr_elist, pick_sensors)

ELIST = 'ipmitool/datakit-dell-r740-sdr-elist-gpu1-8-temp-disabled.txt'
LIST = 'ipmitool/datakit-dell-r740-sdr-list-3col.txt'
DCMI_2017 = 'ipmitool/dcmi-power-reading-lovoo-issue18-activated-2017.txt'
DCMI_OPENBMC = 'ipmitool/dcmi-power-reading-openbmc-ampere-zero-deactivated-epoch.txt'
DCMI_SUPERMICRO = 'ipmitool/dcmi-power-reading-supermicro-1.8.19-timestamp-sampling-same-line.txt'

# Ours, not a capture: elist rows as ipmi_sdr_print_sensor_fc() prints them ("%-16s | %02Xh | %-3s | %2d.%1d | "), for the
# layouts the captures lack: thresholds crossed (lcr/ucr/unc/unr), a fan at 0 RPM, HGX-like GPU rows, an entity instance
# of two digits, an analog reading followed by states (as an HPE PSU prints it), a percent fan, an event-only and an
# MC-locator record, a reading cut by ipmitool's 16-byte buffer, nan, a record without a name, and an ipmitool warning.
OWN_ELIST = (
    'IANA PEN registry open failed: No such file or directory\n'
    'Inlet Temp       | 04h | unc |  7.1 | 41 degrees C\n'
    'Exhaust Temp     | 01h | ucr |  7.1 | 78 degrees C\n'
    'Fan3B            | 3Bh | lcr |  7.1 | 0 RPM\n'
    'Fan4A            | 3Ch | ok  |  7.1 | 12840 RPM\n'
    'GPU1 Temp        | 89h | ok  | 11.1 | 45 degrees C\n'
    'GPU8 Temp        | FDh | ucr | 11.8 | 91 degrees C\n'
    'HGX PWR          | 9Ah | ok  |  7.1 | 5640 Watts\n'
    '04-P1 DIMM 1-6   | 24h | ok  | 32.11 | 29 degrees C\n'
    'Power Supply 1   | 06h | ok  | 10.1 | 0 Watts, Presence detected, Failure detected\n'
    'Fan Block 1      | 09h | ok  |  7.1 | 21.56 percent, Transition to Running\n'
    'BMC Temp Event   | 52h | ns  |  7.1 | Event-Only\n'
    'BMC              | 00h | ok  |  7.1 | Static MC @ 20h\n'
    'Riser 2 Temp     | 30h | unr |  7.1 | 102.375 degrees\n'
    'Bad Numeric      | 31h | ok  |  7.1 | nan Volts\n'
    '                 | 32h | ok  |  7.1 | \n')

# Ours, not a capture: the 3-column list ("%-16s | %-17s | %s") with a critical fan (the 'cr' status of a non-extended
# list), a non-critical voltage, an event-only and an MC-locator record.
OWN_LIST = (
    'Fan3B            | 0 RPM             | cr\n'
    'VBAT             | 2.71 Volts        | nc\n'
    'PSU Event       | Event-Only        | ns\n'
    'BMC              | Static MC @ 20h   | ok\n')

# Ours, not a capture: `dcmi power reading 5_sec` as ipmitool 1.8.19 prints it (timestamp without a newline, the
# sample-time name with a trailing space), and the 1.8.14 layout (asctime's newline, the period in milliseconds).
OWN_DCMI_SAMPLE_TIME = (
    '\n    Instantaneous power reading:                  5712 Watts\n'
    '    Minimum during sampling period:               5480 Watts\n'
    '    Maximum during sampling period:               6021 Watts\n'
    '    Average power reading over sample period:     5702 Watts\n'
    '    IPMI timestamp:                           03/02/26 10:00:01 UTC    Sampling period:                          5_sec \n'
    '    Power reading state is:                   activated\n\n')
OWN_DCMI_1814 = (
    '\n    Instantaneous power reading:                   310 Watts\n'
    '    Minimum during sampling period:                 95 Watts\n'
    '    Maximum during sampling period:                410 Watts\n'
    '    Average power reading over sample period:      300 Watts\n'
    '    IPMI timestamp:                           Mon Mar  2 10:00:01 2015\n'
    '    Sampling period:                          00001000 Milliseconds\n'
    '    Power reading state is:                   activated\n\n')
# Ours, not a capture: what chk_rsp() prints where the BMC has no DCMI.
OWN_DCMI_ERROR = '\n    DCMI request failed because: Invalid command (c1)\n'


def _by_name(result, name):
    return [sensor for sensor in result['sensors'] if sensor['name'] == name]


SDR_CAPTURES = [
    (ELIST, 'elist', {'Pwr Consumption': ('76h', 'ok', '7.1', 208.0, 'Watts', None, 'power'),
                      'GPU1 Temp': ('89h', 'ns', '7.1', None, None, 'Disabled', 'other'),
                      'Inlet Temp': ('05h', 'ok', '7.1', 23.0, 'degrees C', None, 'temperature'),
                      'Exhaust Temp': ('06h', 'ok', '7.1', 31.0, 'degrees C', None, 'temperature'),
                      'Fan4': ('3Bh', 'ok', '7.1', 3240.0, 'RPM', None, 'fan'),
                      'Current 2': ('6Ch', 'ok', '10.2', 0.2, 'Amps', None, 'current'),
                      'Voltage 2': ('6Eh', 'ok', '10.2', 222.0, 'Volts', None, 'voltage'),
                      'SYS Usage': ('7Fh', 'ok', '7.1', 2.0, 'percent', None, 'other'),
                      'DIMM PG': ('07h', 'ok', '7.1', None, None, 'State Deasserted', 'discrete'),
                      'OS Watchdog': ('71h', 'ok', '7.1', None, None, None, 'discrete'),
                      'SEL': ('72h', 'ns', '0.1', None, None, 'No Reading', 'other'),
                      'CPU Internal Err': ('09h', 'ns', '34.1', None, None, 'No Reading', 'other')}),
    (LIST, 'list', {'Pwr Consumption': (None, 'ok', None, 208.0, 'Watts', None, 'power'),
                    'GPU1 Temp': (None, 'ns', None, None, None, 'disabled', 'other'),
                    'Inlet Temp': (None, 'ok', None, 24.0, 'degrees C', None, 'temperature'),
                    'Exhaust Temp': (None, 'ok', None, 32.0, 'degrees C', None, 'temperature'),
                    'Fan4': (None, 'ok', None, 3480.0, 'RPM', None, 'fan'),
                    'Current 2': (None, 'ok', None, 0.2, 'Amps', None, 'current'),
                    'Voltage 2': (None, 'ok', None, 220.0, 'Volts', None, 'voltage'),
                    'SYS Usage': (None, 'ok', None, 2.0, 'percent', None, 'other'),
                    'DIMM PG': (None, 'ok', None, None, None, '0x00', 'discrete'),
                    'OS Watchdog': (None, 'ok', None, None, None, '0x00', 'discrete'),
                    'SEL': (None, 'ns', None, None, None, 'Not Readable', 'other'),
                    'CPU Internal Err': (None, 'ns', None, None, None, 'Not Readable', 'other')}),
]


@pytest.mark.parametrize('path,mode,expected', SDR_CAPTURES, ids=['elist-r740', 'list-3col-r740'])
def test_sdr_capture(path, mode, expected):
    result = parse_sdr_elist(real_fixture(path))
    assert (result['mode'], len(result['sensors']), result['counts'], result['errors']) == (
        mode, 199, {'ok': 101, 'ns': 98}, [])
    for name, values in expected.items():
        sensor = _by_name(result, name)[0]
        assert (sensor['sensor_id'], sensor['status'], sensor['entity'], sensor['value'], sensor['unit'], sensor['text'],
                sensor['kind']) == values, name
    gpus = [s for s in result['sensors'] if s['name'].startswith('GPU')]
    assert [(s['name'], s['status'], s['readable']) for s in gpus] == [('GPU%d Temp' % i, 'ns', False) for i in range(1, 9)]
    kinds = {}
    for sensor in result['sensors']:
        kinds[sensor['kind']] = kinds.get(sensor['kind'], 0) + 1
    assert kinds == {'other': 102, 'discrete': 82, 'fan': 6, 'temperature': 4, 'current': 2, 'voltage': 2, 'power': 1}
    assert [s['value'] for s in result['sensors'] if s['name'] == 'Temp'] == ([34.0, 45.0] if mode == 'elist' else [36.0, 45.0])
    json.dumps(result)


def test_elist_capture_no_trailing_newline_last_row():
    text = real_fixture(ELIST)
    assert not text.endswith('\n')
    last = parse_sdr_elist(text)['sensors'][-1]
    assert (last['name'], last['sensor_id'], last['entity'], last['text']) == ('CPU Internal Err', '09h', '34.1', 'No Reading')


def test_elist_and_list_captures_name_the_same_sensors():
    elist = parse_sdr_elist(real_fixture(ELIST))['sensors']
    listed = parse_sdr_elist(real_fixture(LIST))['sensors']
    assert [s['name'] for s in elist] == [s['name'] for s in listed]
    assert [s['status'] for s in elist] == [s['status'] for s in listed]


def test_own_elist_thresholds_hgx_and_states():
    result = parse_sdr_elist(OWN_ELIST)
    assert (result['mode'], len(result['sensors'])) == ('elist', 15)
    assert result['errors'] == ['IANA PEN registry open failed: No such file or directory']
    assert result['counts'] == {'ok': 9, 'unc': 1, 'ucr': 2, 'lcr': 1, 'ns': 1, 'unr': 1}
    rows = [(s['name'], s['sensor_id'], s['status'], s['entity'], s['value'], s['unit'], s['text'], s['kind'], s['readable'])
            for s in result['sensors']]
    assert rows == [
        ('Inlet Temp', '04h', 'unc', '7.1', 41.0, 'degrees C', None, 'temperature', True),
        ('Exhaust Temp', '01h', 'ucr', '7.1', 78.0, 'degrees C', None, 'temperature', True),
        ('Fan3B', '3Bh', 'lcr', '7.1', 0.0, 'RPM', None, 'fan', True),
        ('Fan4A', '3Ch', 'ok', '7.1', 12840.0, 'RPM', None, 'fan', True),
        ('GPU1 Temp', '89h', 'ok', '11.1', 45.0, 'degrees C', None, 'temperature', True),
        ('GPU8 Temp', 'FDh', 'ucr', '11.8', 91.0, 'degrees C', None, 'temperature', True),
        ('HGX PWR', '9Ah', 'ok', '7.1', 5640.0, 'Watts', None, 'power', True),
        ('04-P1 DIMM 1-6', '24h', 'ok', '32.11', 29.0, 'degrees C', None, 'temperature', True),
        ('Power Supply 1', '06h', 'ok', '10.1', 0.0, 'Watts', 'Presence detected, Failure detected', 'power', True),
        ('Fan Block 1', '09h', 'ok', '7.1', 21.56, 'percent', 'Transition to Running', 'other', True),
        ('BMC Temp Event', '52h', 'ns', '7.1', None, None, 'Event-Only', 'other', False),
        ('BMC', '00h', 'ok', '7.1', None, None, 'Static MC @ 20h', 'discrete', True),
        ('Riser 2 Temp', '30h', 'unr', '7.1', 102.375, 'degrees', None, 'temperature', True),
        ('Bad Numeric', '31h', 'ok', '7.1', None, 'Volts', None, 'voltage', True),
        ('', '32h', 'ok', '7.1', None, None, None, 'discrete', True),
    ]


def test_own_list_critical_and_records():
    result = parse_sdr_elist(OWN_LIST)
    assert (result['mode'], result['counts']) == ('list', {'cr': 1, 'nc': 1, 'ns': 1, 'ok': 1})
    assert [(s['name'], s['status'], s['value'], s['unit'], s['text'], s['kind']) for s in result['sensors']] == [
        ('Fan3B', 'cr', 0.0, 'RPM', None, 'fan'), ('VBAT', 'nc', 2.71, 'Volts', None, 'voltage'),
        ('PSU Event', 'ns', None, None, 'Event-Only', 'other'), ('BMC', 'ok', None, None, 'Static MC @ 20h', 'discrete')]


def test_sdr_crlf_same_as_lf():
    text = real_fixture(ELIST)
    assert parse_sdr_elist(text.replace('\n', '\r\n')) == parse_sdr_elist(text)


@pytest.mark.parametrize('text,words', [
    ('', 'no sensor row'),
    ('\n\n', 'no sensor row'),
    ('hello | world\n', 'no sensor row'),
    ('Sensor ID              : Inlet Temp (0x4)\n Entity ID             : 7.1 (System Board)\n', 'verbose (-v)'),
    ('Inlet Temp,23,degrees C,ok\nDIMM PG,0x00,ok\nSEL,,,ns\n', 'CSV (-c)'),
    ('Inlet Temp       | 23.000     | degrees C  | ok    | na        | -7.000    | 3.000     | 38.000    | 42.000    | na\n',
     'ipmitool sensor'),
    ('Fan1             | 38h | ok  |  7.1 | 3480 RPM\nFan1             | 3480 RPM          | ok\n', 'not one ipmitool sdr run'),
    ('Temp             | 01h | zz  |  3.1 | 34 degrees C\n', 'no sensor row'),
], ids=['empty', 'blank', 'prose', 'verbose', 'csv', 'sensor-table', 'mixed-elist-list', 'unknown-status'])
def test_sdr_refused_with_parse_error(text, words):
    with pytest.raises(ParseError) as raised:
        parse_sdr_elist(text)
    assert words in str(raised.value)


def test_pick_sensors_default_map_on_capture():
    result = parse_sdr_elist(real_fixture(ELIST))
    picked = pick_sensors(result)
    names = dict((role, [s['name'] for s in sensors]) for role, sensors in picked.items())
    assert names['inlet'] == ['Inlet Temp'] and names['exhaust'] == ['Exhaust Temp'] and names['power'] == ['Pwr Consumption']
    assert names['fan'] == ['Fan%d' % i for i in range(1, 7)] + ['Fan Redundancy']
    assert names['gpu_temp'] == ['GPU%d Temp' % i for i in range(1, 9)]
    assert names['psu'] == ['PS Redundancy'] and names['cpu_temp'] == [] and names['board'] == []
    assert 'Fan1 Status' in names['unmapped'] and 'Fan Redundancy' not in names['unmapped'] and 'Temp' in names['unmapped']
    assert sum(len(v) for v in picked.values()) == 199
    assert picked['power'][0]['value'] == 208.0
    assert set(picked) == set(DEFAULT_SENSOR_MAP) | {'unmapped'}


# Ours, not a capture: one list row per vendor's sensor name cited in DEFAULT_SENSOR_MAP's comment.
OWN_VENDOR_NAMES = (
    'Fan1A            | 7560 RPM          | ok\nFan1 RPM         | 3600 RPM          | ok\n'
    'Ambient Temp     | 19 degrees C      | ok\nPlanar Temp      | disabled          | ns\n'
    'CPU1 Temp        | 29 degrees C      | ok\nSystem Temp      | 23 degrees C      | ok\n'
    'FAN1             | 3400 RPM          | ok\nFANA             | 3500 RPM          | ok\nPS1 Status       | 0x01              | ok\n'
    'CPU 1 Temp       | 45 degrees C      | ok\nFan 1 Front Tach | 7790 RPM          | ok\nSys Power        | 264 Watts         | ok\n'
    '01-Inlet Ambient | 19 degrees C      | ok\n02-CPU 1         | 40 degrees C      | ok\nFan 1            | 43.51 percent     | ok\n'
    'Power Supply 2   | 155 Watts         | ok\nFans             | 0x00              | ok\nFan1 Status      | 0x00              | ok\n')


def test_pick_sensors_vendor_names():
    picked = pick_sensors(parse_sdr_elist(OWN_VENDOR_NAMES)['sensors'])
    names = dict((role, [s['name'] for s in sensors]) for role, sensors in picked.items())
    assert names == {
        'inlet': ['Ambient Temp', '01-Inlet Ambient'], 'exhaust': [], 'power': ['Sys Power'],
        'fan': ['Fan1A', 'Fan1 RPM', 'FAN1', 'FANA', 'Fan 1 Front Tach', 'Fan 1'],
        'psu': ['PS1 Status', 'Power Supply 2'], 'cpu_temp': ['CPU1 Temp', 'CPU 1 Temp', '02-CPU 1'], 'gpu_temp': [],
        'board': ['Planar Temp', 'System Temp'], 'unmapped': ['Fans', 'Fan1 Status']}


def test_pick_sensors_site_patterns():
    sensors = parse_sdr_elist(OWN_ELIST)['sensors']
    picked = pick_sensors(sensors, {'hot': ['gpu\\d temp', 'exhaust temp'], 'psu': 'Power Supply 1', 'odd': ['HGX PWR (']})
    assert [s['name'] for s in picked['hot']] == ['Exhaust Temp', 'GPU1 Temp', 'GPU8 Temp']
    assert [s['name'] for s in picked['psu']] == ['Power Supply 1'] and picked['odd'] == []
    assert len(picked['unmapped']) == 11
    assert pick_sensors([], {'x': ['a']}) == {'x': [], 'unmapped': []}
    with pytest.raises(ValueError):
        pick_sensors(sensors, {'unmapped': ['Fan.*']})


DCMI_CAPTURES = [
    (DCMI_2017, (215.0, 162.0, 276.0, 176.0), 'Wed Feb 15 12:49:51 2017', 1131466, 'activated', True),
    (DCMI_OPENBMC, (0.0, 0.0, 0.0, 0.0), 'Thu Jan  1 00:00:00 1970', 0, 'deactivated', False),
    (DCMI_SUPERMICRO, (186.0, 129.0, 386.0, 198.0), '07/26/26 16:57:12 CDT', 898033, 'activated', True),
]


@pytest.mark.parametrize('path,watts,stamp,period,state,valid', DCMI_CAPTURES,
                         ids=['2017-activated', 'openbmc-zero-deactivated', 'supermicro-1.8.19-one-line'])
def test_dcmi_capture(path, watts, stamp, period, state, valid):
    result = parse_dcmi_power_reading(real_fixture(path))
    assert (result['instantaneous_w'], result['minimum_w'], result['maximum_w'], result['average_w']) == watts
    assert (result['timestamp'], result['sampling_period_s'], result['state'], result['valid'], result['errors']) == (
        stamp, period, state, valid, [])
    json.dumps(result)


def test_dcmi_zero_but_activated_is_not_valid():
    text = real_fixture(DCMI_OPENBMC).replace('deactivated', 'activated')
    result = parse_dcmi_power_reading(text)
    assert (result['state'], result['valid']) == ('activated', False)


@pytest.mark.parametrize('text,expected', [
    (OWN_DCMI_SAMPLE_TIME, (5712.0, 5480.0, 6021.0, 5702.0, '03/02/26 10:00:01 UTC', '5_sec', 5, 'activated', True, [])),
    (OWN_DCMI_1814, (310.0, 95.0, 410.0, 300.0, 'Mon Mar  2 10:00:01 2015', '00001000 Milliseconds', 1, 'activated', True, [])),
    (OWN_DCMI_ERROR, (None, None, None, None, None, None, None, None, False, ['DCMI request failed because: Invalid command (c1)'])),
], ids=['sample-time-5sec', 'ipmitool-1.8.14-milliseconds', 'dcmi-unsupported'])
def test_dcmi_own_layouts(text, expected):
    result = parse_dcmi_power_reading(text)
    assert tuple(result[key] for key in ('instantaneous_w', 'minimum_w', 'maximum_w', 'average_w', 'timestamp', 'sampling_period',
                                         'sampling_period_s', 'state', 'valid', 'errors')) == expected


@pytest.mark.parametrize('text', [
    '', '\n', 'hello\n', 'Inlet Temp       | 04h | ok  |  7.1 | 23 degrees C\n',
], ids=['empty', 'blank', 'prose', 'sdr-elist'])
def test_dcmi_refused_with_parse_error(text):
    with pytest.raises(ParseError):
        parse_dcmi_power_reading(text)


@FUZZ_SETTINGS
@given(texts_from([read_fixture(k, p) for k, p in fixture_files('ipmitool') if 'sdr' in p] + [OWN_ELIST, OWN_LIST]))
def test_parse_sdr_elist_never_raises_anything_but_parse_error(text):
    result = only_parse_error(parse_sdr_elist, text)
    if result is not None:
        json.dumps(result)
        pick_sensors(result)


@FUZZ_SETTINGS
@given(texts_from([read_fixture(k, p) for k, p in fixture_files('ipmitool') if 'dcmi' in p] + [OWN_DCMI_SAMPLE_TIME, OWN_DCMI_1814]))
def test_parse_dcmi_power_reading_never_raises_anything_but_parse_error(text):
    result = only_parse_error(parse_dcmi_power_reading, text)
    if result is not None:
        json.dumps(result)
