# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse ipmitool's BMC sensor tables and DCMI power reading into plain data.

Upstream source read: ipmitool/ipmitool @be11d94 (2023), ``lib/ipmi_sdr.c``
(``ipmi_sdr_print_sensor_fc``, ``ipmi_sdr_get_thresh_status``, ``ipmi_sdr_get_unit_string``,
``unit_desc[]``, the event-only and MC-locator printers) and ``lib/ipmi_dcmi.c`` (``ipmi_dcmi_pwr_rd``).
Real captures in ../shared/fixtures/real/ipmitool/ (provenance in SOURCES.tsv).

``parse_sdr_elist`` reads two layouts of one table:

* ``elist`` (``ipmitool sdr elist``, also ``sdr type``/``sdr entity``): ``%-16s | %02Xh | %-3s | %2d.%1d | reading``.
  Capture ``datakit-dell-r740-sdr-elist-gpu1-8-temp-disabled.txt`` (199 rows, GPU1..8 Temp ``ns | Disabled``).
* ``list`` (``ipmitool sdr list`` / ``sdr``): ``%-16s | reading (17 wide) | status``, no sensor number
  and no entity; a discrete reading is its raw state byte (``0x00``), an unread one ``disabled``,
  ``no reading`` or ``Not Readable``.  Capture ``datakit-dell-r740-sdr-list-3col.txt``.

The status is ipmitool's: ``ok``, ``ns`` (no reading), and for a threshold sensor past a
threshold ``nc``/``cr``/``nr`` (list) or ``lnc``/``lcr``/``lnr``/``unc``/``ucr``/``unr`` (elist).
An analog reading is ``<number> <unit>``, the unit one of ``unit_desc[]`` (with ``% `` or a
``*``/``/`` modifier); a non-threshold analog sensor may follow it with ``, <states>``.
ipmitool prints a threshold sensor's reading through a 16-byte buffer, so a reading longer
than 15 characters is cut (``102.375 degrees`` for ``102.375 degrees C``): the unit is kept as
printed and its kind taken from the units it can be the start of.

``parse_dcmi_power_reading`` reads ``ipmitool dcmi power reading``: four ``%8d Watts`` lines, the
timestamp, the sampling period (``%08u Seconds.``; ``%08d Milliseconds`` up to 1.8.14; ``5_sec`` ..
``1_hour`` with a sample-time argument) and the state.  Since 1.8.19 (commit f0d5c17, "Refactor
timestamp handling") the timestamp has no newline, so the sampling period follows it on the same
line (capture ``dcmi-power-reading-supermicro-1.8.19-timestamp-sampling-same-line.txt``).

Refused with ParseError: text with no row of these layouts, ``-v`` (verbose) and ``-c`` (CSV)
output, ``ipmitool sensor`` (its 10-column table), and elist rows mixed with list rows.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.printed_numbers import to_float

STATUSES = ('ok', 'ns', 'nc', 'cr', 'nr', 'lnc', 'lcr', 'lnr', 'unc', 'ucr', 'unr')
STATUS_RE = re.compile(r'^(?:%s)$' % '|'.join(STATUSES))
SENSOR_ID_RE = re.compile(r'^[0-9A-Fa-f]{2}h$')
ENTITY_RE = re.compile(r'^\d+\.\d+$')
# unit_desc[] of lib/ipmi_sdr.c, in its order.
UNITS = (
    'unspecified', 'degrees C', 'degrees F', 'degrees K', 'Volts', 'Amps', 'Watts', 'Joules', 'Coulombs', 'VA', 'Nits',
    'lumen', 'lux', 'Candela', 'kPa', 'PSI', 'Newton', 'CFM', 'RPM', 'Hz', 'microsecond', 'millisecond', 'second',
    'minute', 'hour', 'day', 'week', 'mil', 'inches', 'feet', 'cu in', 'cu feet', 'mm', 'cm', 'm', 'cu cm', 'cu m',
    'liters', 'fluid ounce', 'radians', 'steradians', 'revolutions', 'cycles', 'gravities', 'ounce', 'pound', 'ft-lb',
    'oz-in', 'gauss', 'gilberts', 'henry', 'millihenry', 'farad', 'microfarad', 'ohms', 'siemens', 'mole', 'becquerel',
    'PPM', 'reserved', 'Decibels', 'DbA', 'DbC', 'gray', 'sievert', 'color temp deg K', 'bit', 'kilobit', 'megabit',
    'gigabit', 'byte', 'kilobyte', 'megabyte', 'gigabyte', 'word', 'dword', 'qword', 'line', 'hit', 'miss', 'retry',
    'reset', 'overflow', 'underrun', 'collision', 'packets', 'messages', 'characters', 'error', 'correctable error',
    'uncorrectable error', 'fatal error', 'grams')
UNIT_KINDS = {'degrees C': 'temperature', 'degrees F': 'temperature', 'degrees K': 'temperature', 'RPM': 'fan',
              'Watts': 'power', 'Volts': 'voltage', 'Amps': 'current'}
_UNIT_ALT = '|'.join(re.escape(unit) for unit in sorted(UNITS, key=len, reverse=True))
UNIT_RE = re.compile(r'^(?:percent|(?:%% )?(?:%s)(?:[*/](?:%s))?)$' % (_UNIT_ALT, _UNIT_ALT))
ANALOG_RE = re.compile(r'^(?P<number>[-+]?(?:\d+(?:\.\d*)?|nan|inf))\s+(?P<unit>[^,]+?)(?:,\s*(?P<states>.*))?$', re.I)
READING_WIDTH = 15
# What ipmitool prints in place of a reading it could not take (elist; list; both for event-only records).
UNREAD_RE = re.compile(r'^(?:Disabled|No Reading|disabled|no reading|Not Readable|Event-Only)$')
VERBOSE_RE = re.compile(r'^\s*Sensor ID\s+:\s')
CSV_RE = re.compile(r'^[^,|]*,(?:[^,|]*,[^,|]*,(?:%s)(?:,.*)?|[0-9A-Fa-f]{2}h,(?:ok|ns),\d+\.\d+(?:,.*)?)$' % '|'.join(STATUSES))
TOOL_ERROR_RE = re.compile(r'^\s*(?:Error\b|Unable to\b|Get .* failed|IANA PEN registry open failed|Invalid\b|'
                           r'Close Session command failed|Set Session Privilege Level)')

DCMI_READING_RE = re.compile(r'^\s*(?P<label>Instantaneous power reading|Minimum during sampling period|'
                             r'Maximum during sampling period|Average power reading over sample period):\s*'
                             r'(?P<watts>\S+)\s+Watts\s*$')
DCMI_LABELS = {'Instantaneous power reading': 'instantaneous_w', 'Minimum during sampling period': 'minimum_w',
               'Maximum during sampling period': 'maximum_w', 'Average power reading over sample period': 'average_w'}
DCMI_TIMESTAMP_RE = re.compile(r'^\s*IPMI timestamp:\s*(?P<stamp>.*?)\s*(?:Sampling period:\s*(?P<period>.*?))?\s*$')
DCMI_PERIOD_RE = re.compile(r'^\s*Sampling period:\s*(?P<period>.*?)\s*$')
PERIOD_RE = re.compile(r'^(?:(?P<seconds>\d+) Seconds\.?|(?P<ms>\d+) Milliseconds|(?P<count>\d+)_(?P<step>sec|min|hour))$')
PERIOD_STEPS = {'sec': 1, 'min': 60, 'hour': 3600}
DCMI_STATE_RE = re.compile(r'^\s*Power reading state is:\s*(?P<state>activated|deactivated)\s*$')
DCMI_ERROR_RE = re.compile(r'^\s*(?:Unable to get DCMI information|DCMI request failed because:.*|'
                           r'A valid DCMI command was not returned!.*|Error\b.*|Unable to\b.*)$')

# Roles a burn-in reads, as case-insensitive full-match regexes of the names vendors' BMCs print.
# Each name was seen in a public ipmitool (or the BMC's own) output; none is guessed:
# - Dell iDRAC 9 (PowerEdge R740): 'Inlet Temp', 'Exhaust Temp', 'Pwr Consumption', 'Fan1'..'Fan6', 'GPU1 Temp'..'GPU8 Temp',
#   'PS Redundancy', 'Fan Redundancy' -- GuanceCloud/datakit internal/plugins/inputs/ipmi/testdata/R740v2.txt (the capture above).
# - Dell 'Fan1A'/'Fan1B' .. 'Fan5B' (R320, `sdr list full`) -- ateodorescu/home-assistant-ipmi issue #52.
# - Dell 'Fan1 RPM' -- prometheus-community/ipmi_exporter issue #302.
# - Dell iDRAC 6 (R510, 11th generation) 'Ambient Temp', 'Planar Temp' -- tigerblue77/Dell_iDRAC_fan_controller_Docker
#   issues #36 and #378 (`sdr elist all`).
# - Supermicro (`bmc info`: Manufacturer Name Supermicro) 'CPU1 Temp', 'System Temp', 'Peripheral Temp', 'FAN1'..'FAN6',
#   'FANA', 'FANB' -- ateodorescu/home-assistant-ipmi issue #22 (`sdr list full`).
# - Supermicro 'PS1 Status', 'PS2 Status' -- collectd/collectd issue #920.
# - Lenovo XCC (ThinkSystem) 'Ambient Temp', 'CPU 1 Temp', 'Fan 1 Front Tach' .. 'Fan 6 Rear Tach' --
#   centreon/centreon-documentation pull request #3940 (XCC sensor names); 'CPU 1 Temp' in `ipmitool sensor` on a Lenovo
#   node -- openhpc/ohpc pull request #1887; 'Exhaust Temp' and 'Sys Power' with those in `ipmitool sdr list -c` of a
#   ThinkSystem -- a public "IPMI Data Collection Guide" the code search found without naming its repository.
# - HPE iLO '01-Inlet Ambient', '02-CPU 1' -- prometheus-community/ipmi_exporter issue #54 (DL360 Gen10, `sdr elist`) and
#   mikaku/Monitorix issue #233 (ML150 Gen9); 'Fan 1'..'Fan 6' (percent), 'Power Supply 1'/'Power Supply 2' (Watts) --
#   collectd/collectd issue #819 (DL380 G7); 'Fan Block 1' -- CollegeBoreal/Laboratoires 3202/proliant/IPMI/README.md.
# None of these shows a Supermicro or HPE exhaust sensor, nor a Supermicro or HPE whole-system power sensor (Supermicro
# reports it through `dcmi power reading`, parsed below): a site adds its own names.
DEFAULT_SENSOR_MAP = {
    'inlet': [r'Inlet Temp', r'Ambient Temp', r'\d+-Inlet Ambient'],
    'exhaust': [r'Exhaust Temp'],
    'power': [r'Pwr Consumption', r'Sys Power'],
    'fan': [r'Fan\s?\d+[A-Z]?(?: RPM)?', r'FAN[A-H]', r'Fan \d+ (?:Front|Rear) Tach', r'Fan Block \d+', r'Fan Redundancy'],
    'psu': [r'PS\d+ Status', r'PS Redundancy', r'Power Supply \d+'],
    'cpu_temp': [r'CPU\s?\d+ Temp', r'\d+-CPU \d+'],
    'gpu_temp': [r'GPU\s?\d+ Temp'],
    'board': [r'System Temp', r'Peripheral Temp', r'Planar Temp'],
}


def _kind_of_unit(unit, may_be_cut):
    """The kind of a printed unit; for a reading ipmitool cut at 15 characters, the kind every unit it may start has."""
    base = unit[2:] if unit.startswith('% ') else unit
    if base in UNIT_KINDS:
        return UNIT_KINDS[base]
    if may_be_cut:
        kinds = set(UNIT_KINDS.get(full, 'other') for full in UNITS if full.startswith(base))
        if len(kinds) == 1:
            return kinds.pop()
    return 'other'


def _reading(text):
    """value, unit, text, kind and readable of one printed reading."""
    match = ANALOG_RE.match(text)
    if match:
        unit = match.group('unit')
        # A cut reading is 15 characters, 14 once the space it was cut after is stripped.
        cut = len(text) in (READING_WIDTH - 1, READING_WIDTH) and not match.group('states') and not UNIT_RE.match(unit)
        if UNIT_RE.match(unit) or (cut and any(full.startswith(unit.lstrip('% ')) for full in UNITS)):
            return {'value': to_float(match.group('number')), 'unit': unit, 'text': match.group('states') or None,
                    'kind': _kind_of_unit(unit, cut), 'readable': True}
    if UNREAD_RE.match(text):
        return {'value': None, 'unit': None, 'text': text, 'kind': 'other', 'readable': False}
    return {'value': None, 'unit': None, 'text': text or None, 'kind': 'discrete', 'readable': True}


def _sensor(fields, mode):
    """One row's sensor dict, or None when its fields are not ipmitool's."""
    if mode == 'elist':
        name, sensor_id, status, entity, reading = fields
        if not (SENSOR_ID_RE.match(sensor_id) and STATUS_RE.match(status) and ENTITY_RE.match(entity)):
            return None
    else:
        name, reading, status = fields
        sensor_id = entity = None
        if not STATUS_RE.match(status):
            return None
    sensor = {'name': name, 'sensor_id': sensor_id, 'status': status, 'entity': entity, 'reading': reading}
    sensor.update(_reading(reading))
    return sensor


def parse_sdr_elist(text):
    """Parse ``ipmitool sdr elist`` (or ``sdr list``) output.

    Returns ``mode`` ("elist" or "list"), ``sensors`` (in printed order, each
    ``name``, ``sensor_id`` ("76h"; None in list mode), ``status`` (as printed:
    ok, ns, nc, cr, nr, lnc, lcr, lnr, unc, ucr, unr), ``entity`` ("7.1"; None in
    list mode), ``reading`` (the column as printed, stripped), ``value`` (float,
    None without a number or for nan), ``unit`` ("degrees C", "Watts", "RPM",
    "percent", ... as printed; None without a number), ``text`` (the states or
    word printed: "State Deasserted", "0x00", "Disabled"; None when empty),
    ``kind`` (temperature, fan (RPM), power (Watts), voltage, current, discrete
    (a state, not a number), other (another unit, or no reading at all)) and
    ``readable`` (False where ipmitool printed Disabled / No Reading / Not
    Readable / Event-Only)), ``counts`` (sensors per status) and ``errors``
    (ipmitool's own error lines).
    """
    if not isinstance(text, str):
        raise ParseError('ipmitool sdr output must be text')
    rows = {'elist': [], 'list': []}
    errors = []
    csv_lines = sensor_table = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip('\r')
        if not line.strip():
            continue
        if VERBOSE_RE.match(line):
            raise ParseError('unsupported ipmitool sdr mode: verbose (-v) output, not the sdr list/elist table', number, line)
        fields = [field.strip() for field in line.split('|')]
        if len(fields) == 10 and (STATUS_RE.match(fields[3]) or fields[3] == 'na'):
            sensor_table += 1
            continue
        mode = {5: 'elist', 3: 'list'}.get(len(fields))
        sensor = _sensor(fields, mode) if mode else None
        if sensor is not None:
            rows[mode].append(sensor)
        elif TOOL_ERROR_RE.match(line):
            errors.append(line.strip())
        elif CSV_RE.match(line.strip()):
            csv_lines += 1
    if sensor_table and not (rows['elist'] or rows['list']):
        raise ParseError('unsupported ipmitool mode: `ipmitool sensor` (10-column table with thresholds), not sdr list/elist')
    if rows['elist'] and rows['list']:
        raise ParseError('not one ipmitool sdr run: %d elist rows (5 columns) and %d list rows (3 columns)'
                         % (len(rows['elist']), len(rows['list'])))
    mode = 'elist' if rows['elist'] else 'list'
    if not rows[mode]:
        if csv_lines:
            raise ParseError('unsupported ipmitool sdr mode: CSV (-c) output, not the sdr list/elist table')
        raise ParseError('not ipmitool sdr list/elist output: no sensor row')
    counts = {}
    for sensor in rows[mode]:
        counts[sensor['status']] = counts.get(sensor['status'], 0) + 1
    return {'mode': mode, 'sensors': rows[mode], 'counts': counts, 'errors': errors}


def _compile(pattern):
    """A role's pattern as a case-insensitive full match; a name that is no valid regex matches itself."""
    try:
        return re.compile(r'(?:%s)\Z' % pattern, re.I)
    except re.error:
        return re.compile(r'%s\Z' % re.escape(pattern), re.I)


def pick_sensors(sensors, patterns=None):
    """Map roles to sensors by name.

    ``sensors`` is the list ``parse_sdr_elist`` returns under ``sensors`` (or
    that whole result); ``patterns`` maps each role to a list of
    case-insensitive regexes or plain names, each matched against the whole
    sensor name (default ``DEFAULT_SENSOR_MAP``).  Returns {role: [sensor
    dicts, in printed order]} for every role (empty where none matched), plus
    ``unmapped``: the sensors no role matched.  A sensor matching several roles
    is listed under each.
    """
    if isinstance(sensors, dict):
        sensors = sensors.get('sensors', [])
    if patterns is None:
        patterns = DEFAULT_SENSOR_MAP
    if 'unmapped' in patterns:
        raise ValueError("'unmapped' is the key for the sensors no role matches, not a role name")
    compiled = dict((role, [_compile(p) for p in (names if isinstance(names, (list, tuple)) else [names])])
                    for role, names in patterns.items())
    picked = dict((role, []) for role in patterns)
    picked['unmapped'] = []
    for sensor in sensors:
        roles = [role for role in patterns if any(regex.match(sensor['name']) for regex in compiled[role])]
        for role in roles or ['unmapped']:
            picked[role].append(sensor)
    return picked


def _period_seconds(period):
    match = PERIOD_RE.match(period)
    if not match:
        return None
    if match.group('seconds') is not None:
        return int(match.group('seconds'))
    if match.group('ms') is not None:
        return int(match.group('ms')) // 1000
    return int(match.group('count')) * PERIOD_STEPS[match.group('step')]


def parse_dcmi_power_reading(text):
    """Parse ``ipmitool dcmi power reading`` output.

    Returns ``instantaneous_w``, ``minimum_w``, ``maximum_w``, ``average_w``
    (floats; None when not printed), ``timestamp`` (as printed: "Wed Feb 15
    12:49:51 2017", "07/26/26 16:57:12 CDT", "Unspecified"), ``sampling_period``
    (as printed) and ``sampling_period_s`` (int), ``state`` ("activated",
    "deactivated", None), ``valid`` and ``errors`` (ipmitool's DCMI error
    lines).  ``valid`` is true only for an activated reading with an
    instantaneous figure and at least one non-zero figure: a deactivated state or
    all zeros (an OpenBMC that does not measure) is no measurement to judge.
    """
    if not isinstance(text, str):
        raise ParseError('ipmitool dcmi output must be text')
    result = {'instantaneous_w': None, 'minimum_w': None, 'maximum_w': None, 'average_w': None, 'timestamp': None,
              'sampling_period': None, 'sampling_period_s': None, 'state': None, 'valid': False, 'errors': []}
    recognised = 0
    for raw in text.splitlines():
        line = raw.rstrip('\r')
        if not line.strip():
            continue
        match = DCMI_READING_RE.match(line)
        if match:
            result[DCMI_LABELS[match.group('label')]] = to_float(match.group('watts'))
            recognised += 1
            continue
        match = DCMI_TIMESTAMP_RE.match(line) or DCMI_PERIOD_RE.match(line)
        if match:
            groups = match.groupdict()
            if 'stamp' in groups:
                result['timestamp'] = groups['stamp'] or None
            if groups.get('period') is not None:
                result['sampling_period'] = groups['period']
                result['sampling_period_s'] = _period_seconds(groups['period'])
            recognised += 1
            continue
        match = DCMI_STATE_RE.match(line)
        if match:
            result['state'] = match.group('state')
            recognised += 1
        elif DCMI_ERROR_RE.match(line):
            result['errors'].append(line.strip())
            recognised += 1
    if not recognised:
        raise ParseError('not ipmitool dcmi power reading output: no power reading, timestamp, period or state line')
    figures = [result[key] for key in ('instantaneous_w', 'minimum_w', 'maximum_w', 'average_w')]
    result['valid'] = (result['state'] == 'activated' and result['instantaneous_w'] is not None
                       and any(figure for figure in figures))
    return result
