"""dcgm-exporter of @PACKAGE@ @VERSION@: aicluster lab stand-in (lab/mirror/build.py, lab/mirror/README.md).

Serves /metrics and /health as dcgm-exporter does, for the GPUs hwsim simulates
on this host (lab/hwsim: the hwsim package under $AICLUSTER_LAB_HWSIM_DIR,
default /opt/hwsim, read on every scrape), and exactly the DCGM fields of its
collectors CSV (-f). A field it does not know: an error naming it and exit 1,
as the real exporter refuses an unknown DCGM field.

With -r HOST:PORT it reads a remote nv-hostengine: it needs the lab's
nv-hostengine running (hwsim hold writes $HWSIM_ROOT/run/hwsim/nv-hostengine.instance)
when it starts, and once that instance is gone or another one runs (the
service restarted), it keeps serving the values of its last scrape, frozen,
while /health still answers OK, until it is restarted itself
(gpu-monitoring-tools #188). Without -r it embeds its own host engine and
never goes stale.

As the real exporter, it samples once per collect interval (-c, milliseconds,
default 30000) and serves that sample until the next: two scrapes closer
together than the interval read the same values.

Python standard library (and hwsim, itself standard library + PyYAML).
"""
import argparse
import http.server
import os
import socket
import sys
import threading
import time

PACKAGE = '@PACKAGE@'
VERSION = '@VERSION@'
EXPORTER_RELEASE = '@RELEASE@'
HWSIM_DIR = os.environ.get('AICLUSTER_LAB_HWSIM_DIR') or '/opt/hwsim'
DEFAULT_COLLECTORS = '/etc/dcgm-exporter/default-counters.csv'
# How long -r waits for nv-hostengine at start (its unit may still be starting).
START_WAIT_S = float(os.environ.get('AICLUSTER_LAB_DCGM_START_WAIT') or 10.0)
PROM_TYPES = ('gauge', 'counter', 'untyped', 'label')

# Fields the stand-in knows but does not simulate: served as 0.
CONSTANT_ZERO = (
    'DCGM_FI_DEV_ENC_UTIL', 'DCGM_FI_DEV_DEC_UTIL', 'DCGM_FI_DEV_PCIE_TX_THROUGHPUT', 'DCGM_FI_DEV_PCIE_RX_THROUGHPUT',
    'DCGM_FI_DEV_FB_RESERVED', 'DCGM_FI_DEV_VGPU_LICENSE_STATUS', 'DCGM_FI_DEV_ECC_SBE_AGG_TOTAL',
    'DCGM_FI_DEV_RETIRED_SBE', 'DCGM_FI_DEV_RETIRED_DBE', 'DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL',
    'DCGM_FI_DEV_SYNC_BOOST_VIOLATION', 'DCGM_FI_DEV_BOARD_LIMIT_VIOLATION', 'DCGM_FI_DEV_LOW_UTIL_VIOLATION',
    'DCGM_FI_DEV_RELIABILITY_VIOLATION', 'DCGM_FI_PROF_GR_ENGINE_ACTIVE', 'DCGM_FI_PROF_SM_ACTIVE',
    'DCGM_FI_PROF_SM_OCCUPANCY', 'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE', 'DCGM_FI_PROF_DRAM_ACTIVE',
    'DCGM_FI_PROF_PCIE_TX_BYTES', 'DCGM_FI_PROF_PCIE_RX_BYTES', 'DCGM_FI_PROF_NVLINK_TX_BYTES',
    'DCGM_FI_PROF_NVLINK_RX_BYTES', 'DCGM_FI_DEV_NVLINK_COUNT_TX_PACKETS', 'DCGM_FI_DEV_NVLINK_COUNT_TX_BYTES',
    'DCGM_FI_DEV_NVLINK_COUNT_RX_PACKETS', 'DCGM_FI_DEV_NVLINK_COUNT_RX_BYTES', 'DCGM_FI_DEV_NVLINK_COUNT_SYMBOL_BER',
    'DCGM_FI_DEV_NVLINK_COUNT_EFFECTIVE_BER',
)
# Label fields the stand-in can fill.
LABEL_FIELDS = ('DCGM_FI_DRIVER_VERSION', 'DCGM_FI_DEV_SERIAL', 'DCGM_FI_DEV_VBIOS_VERSION', 'DCGM_FI_DEV_BRAND')
# Counters that grow per second of wall time while their condition holds: field -> (condition, rate).
# Violations in us (DCGM reports throttling time); NVLink errors while a link is down.
NVLINK_DOWN_RATES = {
    'DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL': 13,
    'DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL': 5,
    'DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL': 1,
    'DCGM_FI_DEV_NVLINK_COUNT_RX_ERRORS': 5,
    'DCGM_FI_DEV_NVLINK_COUNT_RX_MALFORMED_PACKET_ERRORS': 1,
    'DCGM_FI_DEV_NVLINK_COUNT_RX_BUFFER_OVERRUN_ERRORS': 0,
    'DCGM_FI_DEV_NVLINK_COUNT_RX_REMOTE_ERRORS': 1,
    'DCGM_FI_DEV_NVLINK_COUNT_RX_GENERAL_ERRORS': 1,
    'DCGM_FI_DEV_NVLINK_COUNT_LOCAL_LINK_INTEGRITY_ERRORS': 1,
    'DCGM_FI_DEV_NVLINK_COUNT_TX_DISCARDS': 2,
    'DCGM_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_SUCCESSFUL_EVENTS': 0,
    'DCGM_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_FAILED_EVENTS': 1,
    'DCGM_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_EVENTS': 1,
    'DCGM_FI_DEV_NVLINK_COUNT_RX_SYMBOL_ERRORS': 13,
    'DCGM_FI_DEV_NVLINK_COUNT_EFFECTIVE_ERRORS': 3,
}
# nvlink-errors GPU LINK COUNT adds, as nvidia-smi nvlink -e counts them (replay COUNT, CRC 3 x COUNT, R570+ Rx
# errors COUNT and symbol errors 13 x COUNT).
NVLINK_ERRORS_FACTORS = {
    'DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL': 1, 'DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL': 3,
    'DCGM_FI_DEV_NVLINK_COUNT_RX_ERRORS': 1, 'DCGM_FI_DEV_NVLINK_COUNT_RX_SYMBOL_ERRORS': 13,
}
# DCGM_CLOCKS_EVENT_REASON_* bits (NVML nvmlClocksEventReasons).
CLOCK_EVENT_BITS = (('gpu_idle', 0x1), ('applications_clocks_setting', 0x2), ('sw_power_cap', 0x4),
                    ('hw_slowdown', 0x8), ('sync_boost', 0x10), ('sw_thermal_slowdown', 0x20),
                    ('hw_thermal_slowdown', 0x40), ('hw_power_brake_slowdown', 0x80))
GROWING = ('DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION', 'DCGM_FI_DEV_POWER_VIOLATION', 'DCGM_FI_DEV_THERMAL_VIOLATION',
           'DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL') + tuple(NVLINK_DOWN_RATES)
INSTANT = ('DCGM_FI_DEV_GPU_UTIL', 'DCGM_FI_DEV_MEM_COPY_UTIL', 'DCGM_FI_DEV_FB_USED', 'DCGM_FI_DEV_FB_FREE',
           'DCGM_FI_DEV_GPU_TEMP', 'DCGM_FI_DEV_MEMORY_TEMP', 'DCGM_FI_DEV_POWER_USAGE', 'DCGM_FI_DEV_SM_CLOCK',
           'DCGM_FI_DEV_MEM_CLOCK', 'DCGM_FI_DEV_CLOCKS_EVENT_REASONS', 'DCGM_FI_DEV_XID_ERRORS',
           'DCGM_FI_DEV_ECC_SBE_VOL_TOTAL', 'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL', 'DCGM_FI_DEV_ECC_DBE_AGG_TOTAL',
           'DCGM_FI_DEV_RETIRED_PENDING', 'DCGM_FI_DEV_ROW_REMAP_PENDING', 'DCGM_FI_DEV_ROW_REMAP_FAILURE',
           'DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS', 'DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS',
           'DCGM_FI_DEV_PCIE_REPLAY_COUNTER', 'DCGM_FI_DEV_FABRIC_MANAGER_STATUS',
           'DCGM_FI_DEV_FABRIC_MANAGER_ERROR_CODE')
# dcgmFabricManagerStatus_t (dcgm_structs.h): what DCGM_FI_DEV_FABRIC_MANAGER_STATUS (field 170) holds for the GPU's
# NVML fabric state (nvidia-smi -q "Fabric" State / Status): 0 not supported (no NVSwitch), 1 not started,
# 2 in progress, 3 success (Completed / Success), 4 failure (Completed with an error), 5 unrecognized, 6 NVML too old.
FM_STATUS = {'N/A': 0, 'Not Started': 1, 'In Progress': 2}
FM_SUCCESS, FM_FAILURE = 3, 4
# NVSwitch entity fields (dcgm_fields.h 856-858): served once per NVSwitch of the baseboard with the label
# nvswitch="nvswitchN", as dcgm-exporter serves DCGM_FE_SWITCH entities once fixed (NVIDIA/dcgm-exporter PR 729: one
# label per switch entity id; releases up to 4.6.0-4.8.3 gave every switch nvswitch0, issue 728, which this stand-in
# does not reproduce: the role keeps the fields off). 856/857 hold the last SXid reported (dcgm_fields.h).
SWITCH_FIELDS = ('DCGM_FI_DEV_NVSWITCH_FATAL_ERRORS', 'DCGM_FI_DEV_NVSWITCH_NON_FATAL_ERRORS',
                 'DCGM_FI_DEV_NVSWITCH_TEMPERATURE_CURRENT')
# an idle H200 baseboard's switches read 39-40 C (dcgmi dmon field 858 in NVIDIA/dcgm-exporter issue 728)
NVSWITCH_IDLE_CELSIUS = 40
KNOWN = frozenset(GROWING + INSTANT + CONSTANT_ZERO + SWITCH_FIELDS)


class ConfigError(Exception):
    """The collectors file cannot be used; the real exporter exits with its message."""


def log(level, message):
    sys.stderr.write('time="%s" level=%s msg="%s"\n' % (time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()), level, message))
    sys.stderr.flush()


def read_collectors(path):
    """[(field, type, help)] of the CSV's metric lines and [field] of its label lines."""
    try:
        with open(path, encoding='utf-8') as handle:
            lines = handle.read().splitlines()
    except OSError as exc:
        raise ConfigError('could not read the collectors file %s: %s' % (path, exc.strerror))
    counters, labels = [], []
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith('#'):
            continue
        record = [cell.strip() for cell in line.split(',')]
        if len(record) != 3:
            raise ConfigError('Malformed CSV record, failed to parse line %d (`%s`), expected 3 fields' % (number, line))
        field, kind, text = record
        if kind not in PROM_TYPES:
            raise ConfigError('could not find Prometheus metric type %s' % kind)
        if kind == 'label':
            if field not in LABEL_FIELDS:
                raise ConfigError('could not find DCGM field; err: unknown ExporterCounter field %s' % field)
            labels.append(field)
            continue
        if field not in KNOWN:
            raise ConfigError('could not find DCGM field; err: unknown ExporterCounter field %s' % field)
        counters.append((field, kind, text))
    return counters, labels


def instance_path():
    return os.path.join(os.environ.get('HWSIM_ROOT') or '/', 'run', 'hwsim', 'nv-hostengine.instance')


def read_instance():
    try:
        with open(instance_path(), encoding='utf-8') as handle:
            return handle.read().strip() or None
    except OSError:
        return None


class Simulation(object):
    """The host's GPUs through hwsim, with the counters that grow with time."""

    def __init__(self, counters, labels):
        sys.path.insert(0, HWSIM_DIR)
        from hwsim.model import Context  # pylint: disable=import-outside-toplevel
        from hwsim.tools import gpus  # pylint: disable=import-outside-toplevel
        from hwsim import faults  # pylint: disable=import-outside-toplevel
        self.context_class, self.gpus, self.faults = Context, gpus, faults
        self.counters = counters
        self.labels = labels
        self.totals = {}
        self.last = None
        self.hostname = socket.gethostname()

    def views(self):
        """(driver version, [GpuView]) now; no GPUs when NVML would fail."""
        ctx = self.context_class.from_env(os.environ, sys.stdout, sys.stderr)
        try:
            model = ctx.host_model()
        except Exception as exc:  # pylint: disable=broad-except  # hwsim knows no hardware here: no GPUs
            log('error', 'no simulated hardware: %s' % exc)
            return None, [], [], 0
        if not self.gpus.has_gpus(model) or self.gpus.driver_check(ctx, model):
            return None, [], [], 0
        views = self.gpus.visible(model)
        driver = views[0].driver_version if views else None
        switches = self.gpus.nvswitch_count(views[0], model.profile) if views else 0
        return driver, views, model.state['faults'], switches

    def _instant(self, view, faults):
        xids = [fault['args']['code'] for fault in self.faults.of_kind(faults, 'xid') if fault['args']['gpu'] == view.slot]
        reasons = sum(bit for name, bit in CLOCK_EVENT_BITS if view.clock_event(name) == 'Active')
        return {
            'DCGM_FI_DEV_GPU_UTIL': 100 if view.busy else 0,
            'DCGM_FI_DEV_MEM_COPY_UTIL': 35 if view.busy else 0,
            'DCGM_FI_DEV_FB_USED': view.memory_used,
            'DCGM_FI_DEV_FB_FREE': view.memory_total - self.gpus.RESERVED_MIB - view.memory_used,
            'DCGM_FI_DEV_GPU_TEMP': self.gpus.IDLE['temperature'],
            'DCGM_FI_DEV_MEMORY_TEMP': self.gpus.IDLE['memory_temperature'],
            'DCGM_FI_DEV_POWER_USAGE': view.power_draw,
            'DCGM_FI_DEV_SM_CLOCK': view.sm_clock,
            'DCGM_FI_DEV_MEM_CLOCK': self.gpus.IDLE['mem_mhz'],
            'DCGM_FI_DEV_CLOCKS_EVENT_REASONS': reasons,
            'DCGM_FI_DEV_XID_ERRORS': xids[-1] if xids else 0,
            'DCGM_FI_DEV_ECC_SBE_VOL_TOTAL': 0,
            'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL': view.ecc_volatile_uncorrectable,
            'DCGM_FI_DEV_ECC_DBE_AGG_TOTAL': view.ecc_volatile_uncorrectable,
            'DCGM_FI_DEV_RETIRED_PENDING': 1 if view.ecc_pending else 0,
            'DCGM_FI_DEV_ROW_REMAP_PENDING': 1 if view.remap_pending else 0,
            'DCGM_FI_DEV_ROW_REMAP_FAILURE': 0,
            'DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS': view.remapped_uncorrectable,
            'DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS': 0,
            'DCGM_FI_DEV_PCIE_REPLAY_COUNTER': 0,
            'DCGM_FI_DEV_FABRIC_MANAGER_STATUS': fabric_manager_status(view),
            # populated only once the fabric manager completed startup (dcgm_fields.h); 0 is DCGM_ST_OK
            'DCGM_FI_DEV_FABRIC_MANAGER_ERROR_CODE': 0,
        }

    def _grow(self, view, seconds):
        """Advance the counters of one GPU by ``seconds`` of wall time."""
        totals = self.totals.setdefault(view.uuid, dict.fromkeys(GROWING, 0))
        if not totals['DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION']:
            # since "boot": an hour at the current draw, so that the counter is a plausible size from the start
            totals['DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION'] = int(view.power_draw * 3600 * 1000)
        totals['DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION'] += int(round(view.power_draw * seconds * 1000))
        if view.clock_event('sw_power_cap') == 'Active':
            totals['DCGM_FI_DEV_POWER_VIOLATION'] += int(seconds * 1e6)
        if view.thermal_throttle:
            totals['DCGM_FI_DEV_THERMAL_VIOLATION'] += int(seconds * 1e6)
        if view.busy:
            totals['DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL'] += int(seconds * 1e6 * view.active_links)
        down = len(view.links) - view.active_links
        if down:
            for field, rate in NVLINK_DOWN_RATES.items():
                totals[field] += int(round(rate * down * seconds))
        return totals

    def sample(self):
        """[(labels, {field: value})]: one entry per GPU, then one per NVSwitch."""
        now = time.monotonic()
        seconds = 0.0 if self.last is None else max(0.0, now - self.last)
        self.last = now
        driver, views, faults, switches = self.views()
        gpus = []
        for view in views:
            values = self._instant(view, faults)
            values.update(self._grow(view, seconds))
            for fault in self.faults.of_kind(faults, 'nvlink-errors'):
                if fault['args']['gpu'] == view.slot:
                    for field, factor in NVLINK_ERRORS_FACTORS.items():
                        values[field] += factor * fault['args']['count']
            labels = [('gpu', str(view.index)), ('UUID', view.uuid), ('pci_bus_id', view.pci_bus_id),
                      ('device', 'nvidia%d' % view.index), ('modelName', view.name), ('Hostname', self.hostname)]
            extra = {'DCGM_FI_DRIVER_VERSION': driver, 'DCGM_FI_DEV_SERIAL': view.serial,
                     'DCGM_FI_DEV_VBIOS_VERSION': view.vbios, 'DCGM_FI_DEV_BRAND': 'NVIDIA'}
            labels += [(field, extra[field] or '') for field in self.labels]
            gpus.append((labels, values))
        return gpus + self.switch_entities(switches)

    def switch_entities(self, count):
        """The NVSwitch entities' samples: no SXid, idle temperature."""
        values = dict.fromkeys(SWITCH_FIELDS, 0)
        values['DCGM_FI_DEV_NVSWITCH_TEMPERATURE_CURRENT'] = NVSWITCH_IDLE_CELSIUS
        return [([('nvswitch', 'nvswitch%d' % number), ('Hostname', self.hostname)], dict(values), 'switch')
                for number in range(count)]


def fabric_manager_status(view):
    """DCGM_FI_DEV_FABRIC_MANAGER_STATUS of a GPU from hwsim's fabric state and status."""
    if view.fabric_state == 'Completed':
        return FM_SUCCESS if view.fabric_status == 'Success' else FM_FAILURE
    return FM_STATUS.get(view.fabric_state, 5)


def _number(value):
    if isinstance(value, float):
        return ('%.6f' % value).rstrip('0').rstrip('.')
    return str(value)


def render(counters, gpus):
    """Prometheus text exposition: HELP and TYPE per field, then one sample per GPU."""
    out = []
    for field, kind, text in counters:
        out.append('# HELP %s %s\n# TYPE %s %s\n' % (field, text, field, kind))
        # GPU fields on GPU entities, NVSwitch fields on switch entities (a third element marks a switch)
        for entity in gpus:
            labels, values = entity[0], entity[1]
            if (field in SWITCH_FIELDS) != (len(entity) > 2):
                continue
            label_text = ','.join('%s="%s"' % (key, str(value).replace('\\', '\\\\').replace('"', '\\"'))
                                  for key, value in labels)
            out.append('%s{%s} %s\n' % (field, label_text, _number(values.get(field, 0))))
    return ''.join(out)


class Exporter(object):
    """What /metrics serves: a sample per collect interval while connected to the nv-hostengine it started with, else
    the last one, frozen."""

    def __init__(self, counters, labels, remote, interval_ms=30000, simulation=None):
        self.counters = counters
        self.remote = remote
        self.interval = interval_ms / 1000.0
        self.simulation = simulation or Simulation(counters, labels)
        self.instance = read_instance() if remote else None
        self.frozen = None
        self.lock = threading.Lock()
        self.body = render(counters, self.simulation.sample())
        self.sampled = time.monotonic()

    def stale(self):
        return bool(self.remote) and read_instance() != self.instance

    def metrics(self):
        with self.lock:
            if self.frozen is None and self.stale():
                log('warning', 'lost the connection to nv-hostengine at %s; serving the last values' % self.remote)
                self.frozen = self.body
            if self.frozen is not None:
                return self.frozen
            now = time.monotonic()
            if now - self.sampled >= self.interval:  # the collect interval's next sample
                self.body = render(self.counters, self.simulation.sample())
                self.sampled = now
            return self.body


def make_handler(exporter):
    class Handler(http.server.BaseHTTPRequestHandler):
        server_version = 'dcgm-exporter'
        sys_version = ''

        def _send(self, status, body, content_type):
            data = body.encode()
            self.send_response(status)
            self.send_header('Content-Type', content_type)
            self.send_header('Content-Length', str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):  # noqa: N802  pylint: disable=invalid-name
            path = self.path.split('?', 1)[0]
            if path == '/metrics':
                self._send(200, exporter.metrics(), 'text/plain; version=0.0.4; charset=utf-8')
            elif path == '/health':
                self._send(200, 'OK', 'text/plain; charset=utf-8')
            else:
                self._send(404, '404 page not found\n', 'text/plain; charset=utf-8')

        def log_message(self, *args):
            pass
    return Handler


def parse_address(text):
    host, sep, port = text.rpartition(':')
    if not sep or not port.isdigit():
        raise ConfigError('invalid address %s (expected [HOST]:PORT)' % text)
    return host.strip('[]'), int(port)


def wait_for_hostengine(remote, deadline):
    while time.monotonic() < deadline:
        if read_instance():
            return True
        time.sleep(0.2)
    log('fatal', 'Error connecting to nv-hostengine: Host engine connection invalid/disconnected (%s)' % remote)
    return False


def main(argv=None):
    parser = argparse.ArgumentParser(prog='dcgm-exporter', add_help=True)
    parser.add_argument('-f', '--collectors', default=DEFAULT_COLLECTORS)
    parser.add_argument('-a', '--address', default=':9400')
    parser.add_argument('-c', '--collect-interval', type=int, default=30000)
    parser.add_argument('-r', '--remote-hostengine-info', default='')
    parser.add_argument('-k', '--kubernetes', action='store_true')
    parser.add_argument('-v', '--version', action='store_true')
    args = parser.parse_args(argv)
    if args.version:
        sys.stdout.write('DCGM Exporter version %s\n' % EXPORTER_RELEASE)
        return 0
    try:
        counters, labels = read_collectors(args.collectors)
        host, port = parse_address(args.address)
    except ConfigError as exc:
        log('fatal', str(exc))
        return 1
    if args.remote_hostengine_info:
        log('info', 'Attempting to connect to remote hostengine at %s' % args.remote_hostengine_info)
        if not wait_for_hostengine(args.remote_hostengine_info, time.monotonic() + START_WAIT_S):
            return 1
    else:
        log('info', 'Starting embedded hostengine')
    if args.collect_interval <= 0:
        log('fatal', 'invalid collect interval %d ms' % args.collect_interval)
        return 1
    exporter = Exporter(counters, labels, args.remote_hostengine_info, args.collect_interval)
    server = http.server.ThreadingHTTPServer((host, port), make_handler(exporter))
    log('info', 'Starting webserver on %s' % args.address)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == '__main__':
    sys.exit(main())
