# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse the output of the perftest benchmarks (ib_write_bw, ib_read_bw, ib_send_lat, ...) into plain data."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError

# Layout handled (linux-rdma/perftest perftest_parameters.[ch]: ctx_print_test_info(),
# RESULT_LINE, RESULT_FMT*, REPORT_FMT*, print_report_lat()):
#
#   ---------------------------------------------------------------------------------------
#                       RDMA_Write BW Test            ("<verb> [Bidirectional ]BW Test",
#    Dual-port       : OFF<TAB><TAB>Device         : mlx5_0      "<verb> Latency Test")
#    Number of qps   : 1<TAB><TAB>Transport type : IB
#    Connection type : RC<TAB><TAB>Using SRQ      : OFF
#    Mtu             : 4096[B]
#    Link type       : IB                               ("Ethernet" for RoCE)
#   ...
#    #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]
#    65536      5000             11030.78            11030.45              0.176487
#
#   Units are MB/sec (older), MiB/sec (newer) or Gb/sec (--report_gbits); the
#   QoS (#sl), per-port and CPU_Util variants add columns.  Latency tests print
#    #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]
#   (older versions stop after t_typical; duration runs print t_avg and tps).
#
# The server and client of a loopback run may write into one text, their
# lines interleaved: header fields keep their first value, and a result row
# printed twice with identical numbers is kept once.  Lines perftest prints
# on failure (" Couldn't connect to ...", "Unable to init the socket
# connection", "Couldn't allocate MR", "Failed to ...") go to ``errors``.

TITLE_RE = re.compile(r'^\s*(?P<title>[A-Za-z][\w ]*?\b(?P<kind>BW|Latency)\b[\w ]*?Test)\s*$')
FIELD_RE = re.compile(r'(?P<key>[A-Za-z][A-Za-z0-9 ._\-*]*?)\s*:\s*(?P<value>\S+)')
RESULT_HEADER_RE = re.compile(r'^\s*#bytes\s+(?:#sl\s+)?#iterations\b')
COLUMN_RE = re.compile(
    r'#bytes|#sl|#iterations|BW peak\[(?P<units>[^\]]+)\]|BW average\[[^\]]*\]|MsgRate\[|'
    r'BW Port1|MsgRate Port1|BW Port2|MsgRate Port2|t_min|t_max|t_typical|t_avg|t_stdev|'
    r'99\.9%\s*percentile|99%\s*percentile|tps average|CPU_Util')
ROW_RE = re.compile(r'^\s*[0-9]+(?:\s+[0-9]+(?:\.[0-9]+)?)+\s*$')
TOOL_ERROR_RE = re.compile(
    r"^\s*(?:Couldn'?t|Could not|Unable to|Failed|failed to|Cannot|Can't|Completion with error|"
    r"Problem in|No IB devices|IB device \S+ not found|Error|ERROR|error:|ibv_\w+ failed|"
    r"accept\(\) failed|Requested mtu|Port number \S+ not supported|\S+ should be between|"
    r"Conflicting parameters|scnt=|Server exited|Client exited|"
    r"Unable to open file descriptor)")
WARNING_RE = re.compile(r'^\s*(?:Conflicting CPU frequency values|WARNING:|Warning:)')

COLUMN_NAMES = {
    '#bytes': 'bytes', '#sl': 'sl', '#iterations': 'iterations', 'BW average': 'bw_average', 'MsgRate[': 'msg_rate_mpps',
    'BW Port1': 'bw_port1', 'MsgRate Port1': 'msg_rate_port1_mpps', 'BW Port2': 'bw_port2',
    'MsgRate Port2': 'msg_rate_port2_mpps', 't_min': 't_min', 't_max': 't_max', 't_typical': 't_typical', 't_avg': 't_avg',
    't_stdev': 't_stdev', '99.9': 'p99_9', '99%': 'p99', 'tps average': 'tps_average', 'CPU_Util': 'cpu_util_percent',
}
BW_FIELDS = ('bytes', 'iterations', 'bw_peak', 'bw_average', 'msg_rate_mpps')
LAT_FIELDS = ('bytes', 'iterations', 't_min', 't_max', 't_typical', 't_avg', 't_stdev', 'p99', 'p99_9')
INT_FIELDS = ('bytes', 'iterations', 'sl')
HEADER_KEYS = {'Device': 'device', 'Link type': 'link_type', 'Transport type': 'transport_type',
               'Connection type': 'connection_type', 'Number of qps': 'number_of_qps', 'Mtu': 'mtu'}


def _column_name(token):
    """Result field for one header column token."""
    if token.startswith('BW peak'):
        return 'bw_peak'
    for prefix, name in COLUMN_NAMES.items():
        if token.startswith(prefix):
            return name
    return None


def _columns(line):
    """(field names, units) of a ``#bytes #iterations ...`` header line."""
    names = []
    units = None
    for match in COLUMN_RE.finditer(line):
        if match.group('units'):
            units = match.group('units')
        name = _column_name(match.group(0))
        if name is not None:
            names.append(name)
    return names, units


def _row(columns, kind, line):
    """One result dict from a numeric row under the current header; None if it does not fit."""
    values = line.split()
    if len(values) > len(columns):
        return None
    row = dict.fromkeys(LAT_FIELDS if kind == 'lat' else BW_FIELDS)
    for name, value in zip(columns, values):
        if name in INT_FIELDS:
            if not value.isdigit():
                return None
            row[name] = int(value)
        else:
            row[name] = float(value)
    return row


def _header_fields(line, result):
    """Copy Device/Link type/Mtu/... of a test-info line; the first value seen wins."""
    for match in FIELD_RE.finditer(line):
        key = HEADER_KEYS.get(match.group('key').strip())
        if key is None or result[key] is not None:
            continue
        value = match.group('value')
        if key == 'mtu':
            number = re.match(r'[0-9]+', value)
            result[key] = int(number.group(0)) if number else None
        elif key == 'number_of_qps':
            result[key] = int(value) if value.isdigit() else None
        else:
            result[key] = value


def _new_result():
    return {
        'test': None, 'kind': None, 'device': None, 'link_type': None, 'transport_type': None,
        'connection_type': None, 'number_of_qps': None, 'mtu': None, 'bidirectional': False, 'units': None,
        'results': [], 'errors': [], 'warnings': [],
    }


class _Table(object):
    """The result table being read: its columns, and the rows already kept."""

    def __init__(self):
        self.columns = None
        self.seen = set()


def _table_line(line, result, table):
    """Result header or row; True when consumed."""
    if RESULT_HEADER_RE.match(line):
        columns, units = _columns(line)
        table.columns = columns
        if result['kind'] is None:
            result['kind'] = 'lat' if 't_avg' in columns or 't_min' in columns else 'bw'
        if units and result['units'] is None and result['kind'] == 'bw':
            result['units'] = units
        return True
    if table.columns and ROW_RE.match(line):
        row = _row(table.columns, result['kind'], line)
        if row is None:
            return False
        key = tuple(sorted((k, v) for k, v in row.items() if v is not None))
        if key not in table.seen:
            table.seen.add(key)
            result['results'].append(row)
        return True
    return False


def parse_perftest(text):
    """Parse the output of one perftest run (client, server, or both interleaved).

    Returns ``test`` (the title, e.g. "RDMA_Write BW Test"), ``kind`` ("bw"
    or "lat"), ``device``, ``link_type``, ``transport_type``,
    ``connection_type``, ``number_of_qps``, ``mtu`` (int or None),
    ``bidirectional``, ``units`` (bw only: "MB/sec", "MiB/sec", "Gb/sec"),
    ``results`` (bw rows: ``bytes``, ``iterations``, ``bw_peak``,
    ``bw_average``, ``msg_rate_mpps``; lat rows: ``bytes``, ``iterations``,
    ``t_min``, ``t_max``, ``t_typical``, ``t_avg``, ``t_stdev``, ``p99``,
    ``p99_9``; None where a column is absent, plus any extra printed column),
    ``errors`` and ``warnings``.  Raises ParseError when the text has no
    title, result table or perftest error line.
    """
    if not isinstance(text, str):
        raise ParseError('perftest output must be text')
    result = _new_result()
    table = _Table()
    recognised = 0
    for raw in text.splitlines():
        line = raw.rstrip('\r')
        if not line.strip():
            continue
        match = TITLE_RE.match(line)
        if match:
            recognised += 1
            if result['test'] is None:
                title = ' '.join(match.group('title').split())
                result['test'] = title
                result['kind'] = 'lat' if match.group('kind') == 'Latency' else 'bw'
                result['bidirectional'] = 'Bidirectional' in title
            continue
        if _table_line(line, result, table):
            recognised += 1
            continue
        if WARNING_RE.match(line):
            result['warnings'].append(line.strip())
        elif TOOL_ERROR_RE.match(line):
            result['errors'].append(line.strip())
        elif ':' in line:
            _header_fields(line, result)
    if result['kind'] != 'bw':
        result['units'] = None
    if not recognised and not result['errors']:
        raise ParseError('not perftest output: no test title, result table or perftest error')
    return result
