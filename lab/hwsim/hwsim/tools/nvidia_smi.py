"""nvidia-smi stand-in: summary table, -L, --query-gpu, --query-compute-apps, -q [-d], topo -m, nvlink -s/-e, -pm.

Layouts follow driver 535: the summary table and its processes table (89
columns), ``-q`` as the real 8x H100 535.183.01 capture (``Key`` padded to
column 42, four spaces a level, a blank line after each GPU), ``topo -m``
tab-separated with the ANSI-underlined header and the ``GPU NUMA ID`` column,
``nvlink -s``/``-e`` with a tab and a space before ``Link N``.
"""
import time

from hwsim.tools import gpus as gpu_views

DRIVER_FAILED = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
                 "Make sure that the latest NVIDIA driver is installed and running.\n\n")
INVALID = "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n\n"
NO_DEVICES = 'No devices were found\n'
NA = '[N/A]'
WIDTH = 89
LEGEND = """
Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
"""
BANKS = {'Hopper': 2560, 'Ampere': 640}


# --------------------------------------------------------------------------
# --query-gpu fields: name -> (unit, function of a GpuView or a constant; None is [N/A])


def _retired_pending(view):
    return 'Yes' if view.ecc_pending else None


def _retired_dbe(view):
    return '1' if view.ecc_pending else None


def _retired_sbe(view):
    return '0' if view.ecc_pending else None


QUERY_FIELDS = {
    'index': ('', lambda view: str(view.index)),
    'name': ('', lambda view: view.name),
    'gpu_name': ('', lambda view: view.name),
    'serial': ('', lambda view: view.serial),
    'gpu_serial': ('', lambda view: view.serial),
    'uuid': ('', lambda view: view.uuid),
    'gpu_uuid': ('', lambda view: view.uuid),
    'pci.bus_id': ('', lambda view: view.pci_bus_id),
    'gpu_bus_id': ('', lambda view: view.pci_bus_id),
    'pci.domain': ('', lambda view: '0x' + view.pci_bus_id.split(':')[0][-4:]),
    'pci.bus': ('', lambda view: '0x' + view.bus),
    'pci.device': ('', '0x00'),
    'pci.device_id': ('', lambda view: '0x%s10DE' % view.device_id.upper()),
    'pci.sub_device_id': ('', lambda view: gpu_views.SUBSYSTEM_IDS.get(view.name, '0x16C110DE')),
    'minor_number': ('', lambda view: str(view.minor)),
    'driver_version': ('', lambda view: view.driver_version),
    'vbios_version': ('', lambda view: view.vbios),
    'persistence_mode': ('', lambda view: view.persistence_mode),
    'display_mode': ('', 'Disabled'),
    'display_active': ('', 'Disabled'),
    'pstate': ('', 'P0'),
    'compute_mode': ('', 'Default'),
    'mig.mode.current': ('', 'Disabled'),
    'mig.mode.pending': ('', 'Disabled'),
    'ecc.mode.current': ('', 'Enabled'),
    'ecc.mode.pending': ('', 'Enabled'),
    'ecc.errors.corrected.volatile.total': ('', '0'),
    'ecc.errors.corrected.aggregate.total': ('', '0'),
    'ecc.errors.uncorrected.volatile.total': ('', lambda view: str(view.ecc_volatile_uncorrectable)),
    'ecc.errors.uncorrected.aggregate.total': ('', lambda view: str(view.ecc_volatile_uncorrectable)),
    'ecc.errors.uncorrected.volatile.dram': ('', lambda view: str(view.ecc_volatile_uncorrectable)),
    'ecc.errors.uncorrected.aggregate.dram': ('', lambda view: str(view.ecc_volatile_uncorrectable)),
    'retired_pages.pending': ('', _retired_pending),
    'retired_pages.single_bit_ecc.count': ('', _retired_sbe),
    'retired_pages.sbe': ('', _retired_sbe),
    'retired_pages.double_bit.count': ('', _retired_dbe),
    'retired_pages.dbe': ('', _retired_dbe),
    'remapped_rows.correctable': ('', '0'),
    'remapped_rows.uncorrectable': ('', lambda view: str(view.remapped_uncorrectable)),
    'remapped_rows.pending': ('', lambda view: 'Yes' if view.remap_pending else 'No'),
    'remapped_rows.failure': ('', 'No'),
    'memory.total': ('MiB', lambda view: str(view.memory_total)),
    'memory.reserved': ('MiB', lambda view: str(gpu_views.RESERVED_MIB)),
    'memory.used': ('MiB', lambda view: str(view.memory_used)),
    'memory.free': ('MiB', lambda view: str(view.memory_total - gpu_views.RESERVED_MIB - view.memory_used)),
    'temperature.gpu': ('', lambda view: str(gpu_views.IDLE['temperature'])),
    'temperature.memory': ('', lambda view: str(gpu_views.IDLE['memory_temperature'])),
    'power.draw': ('W', lambda view: '%.2f' % view.power_draw),
    'power.limit': ('W', lambda view: '%.2f' % view.power_limit),
    'enforced.power.limit': ('W', lambda view: '%.2f' % view.power_limit),
    'power.default_limit': ('W', lambda view: '%.2f' % view.power_default),
    'power.max_limit': ('W', lambda view: '%.2f' % max(view.power_default, view.power_limit)),
    'utilization.gpu': ('%', lambda view: '100' if view.busy else '0'),
    'utilization.memory': ('%', '0'),
    'clocks.sm': ('MHz', lambda view: str(view.sm_clock)),
    'clocks.current.sm': ('MHz', lambda view: str(view.sm_clock)),
    'clocks.gr': ('MHz', lambda view: str(view.sm_clock)),
    'clocks.mem': ('MHz', lambda view: str(gpu_views.IDLE['mem_mhz'])),
    'clocks.max.sm': ('MHz', lambda view: str(gpu_views.IDLE['max_sm_mhz'])),
    'clocks.max.mem': ('MHz', lambda view: str(gpu_views.IDLE['mem_mhz'])),
    'fan.speed': ('%', None),
    'pcie.link.gen.current': ('', lambda view: str(view.pcie_gen_max)),
    'pcie.link.gen.max': ('', lambda view: str(view.pcie_gen_max)),
    'pcie.link.width.current': ('', lambda view: str(view.pcie_width)),
    'pcie.link.width.max': ('', lambda view: str(view.pcie_width_max)),
    # R550+ (NVIDIA/gpu-driver-container PR #909: nvidia-smi --query-gpu "fabric.state"; NVIDIA/NVSentinel
    # PR #1382 reads fabric.state and fabric.status): the -q Fabric section's State and Status
    'fabric.state': ('', lambda view: view.fabric_state),
    'fabric.status': ('', lambda view: view.fabric_status),
}


def _clock_event_field(reason):
    def value(view):
        return view.clock_event(reason)
    return value


# clocks_event_reasons.* (R535+) and the older clocks_throttle_reasons.* spelling, which R535 still accepts
for _prefix in ('clocks_event_reasons', 'clocks_throttle_reasons'):
    for _reason, _label in gpu_views.CLOCK_EVENTS:
        QUERY_FIELDS['%s.%s' % (_prefix, _reason)] = ('', _clock_event_field(_reason))

# --query-compute-apps fields: name -> (header name, unit, value of (view, pid, name, used) or a constant)
APP_FIELDS = {
    'pid': ('pid', '', lambda app: str(app[1])),
    'process_name': ('process_name', '', lambda app: app[2]),
    'name': ('process_name', '', lambda app: app[2]),
    'gpu_uuid': ('gpu_uuid', '', lambda app: app[0].uuid),
    'gpu_bus_id': ('gpu_bus_id', '', lambda app: app[0].pci_bus_id),
    'gpu_name': ('gpu_name', '', lambda app: app[0].name),
    'gpu_serial': ('gpu_serial', '', lambda app: app[0].serial),
    'used_memory': ('used_gpu_memory', 'MiB', lambda app: str(app[3])),
    'used_gpu_memory': ('used_gpu_memory', 'MiB', lambda app: str(app[3])),
}


def _evaluate(spec, argument):
    return spec(argument) if callable(spec) else spec


def _csv_cell(value, unit, nounits):
    if value is None:
        return NA
    return value if nounits or not unit else '%s %s' % (value, unit)


def _csv_header(names_units):
    return ', '.join('%s [%s]' % (name, unit) if unit else name for name, unit in names_units) + '\n'


def _format_flags(text):
    """{'noheader', 'nounits'} of ``--format=csv,...``; None when it is not csv."""
    parts = [part.strip() for part in (text or '').split(',')]
    if not parts or parts[0] != 'csv' or not set(parts[1:]) <= {'noheader', 'nounits'}:
        return None
    return set(parts[1:])


def _bad_field(ctx, fields, known):
    for field in fields:
        if field not in known:
            ctx.write('Field "%s" is not a valid field to query.\n\n' % field)
            return True
    return False


def query_gpu(ctx, views, fields_text, flags):
    fields = [field.strip() for field in fields_text.split(',') if field.strip()]
    if not fields or _bad_field(ctx, fields, QUERY_FIELDS):
        return 2
    if 'noheader' not in flags:
        ctx.write(_csv_header([(field, QUERY_FIELDS[field][0]) for field in fields]))
    for view in views:
        cells = [_csv_cell(_evaluate(QUERY_FIELDS[field][1], view), QUERY_FIELDS[field][0], 'nounits' in flags) for field in fields]
        ctx.write(', '.join(cells) + '\n')
    return 0


def query_apps(ctx, views, fields_text, flags):
    fields = [field.strip() for field in fields_text.split(',') if field.strip()]
    if not fields or _bad_field(ctx, fields, APP_FIELDS):
        return 2
    if 'noheader' not in flags:
        ctx.write(_csv_header([(APP_FIELDS[field][0], APP_FIELDS[field][1]) for field in fields]))
    for view in views:
        for pid, name, used in view.processes:
            cells = [_csv_cell(_evaluate(APP_FIELDS[field][2], (view, pid, name, used)), APP_FIELDS[field][1], 'nounits' in flags) for field in fields]
            ctx.write(', '.join(cells) + '\n')
    return 0


# --------------------------------------------------------------------------
# -L


def list_gpus(ctx, views):
    ctx.write(''.join('GPU %d: %s (UUID: %s)\n' % (view.index, view.name, view.uuid) for view in views))
    return 0


# --------------------------------------------------------------------------
# summary table


def _timestamp():
    return time.ctime()


def _rule(char='-'):
    return '+' + char * (WIDTH - 2) + '+\n'


def _gpu_rule():
    return '+' + '-' * 41 + '+' + '-' * 22 + '+' + '-' * 22 + '+\n'


def _summary_gpu(view):
    name = view.name if len(view.name) <= 27 else view.name[:23] + ' ...'
    power = '%dW' % round(view.power_draw)
    lines = [
        '|%4d  %-31s%-4s| %s %3s |%21s |' % (
            view.index, name, 'On' if view.persistence_mode == 'Enabled' else 'Off', view.pci_bus_id, 'Off',
            view.ecc_volatile_uncorrectable),
        '| %3s   %3s    %2s%17s / %4s |%7dMiB / %5dMiB |%8s      %-7s |' % (
            'N/A', '%dC' % gpu_views.IDLE['temperature'], 'P0', power, '%dW' % view.power_limit,
            view.memory_used, view.memory_total, '%d%%' % (100 if view.busy else 0), 'Default'),
        '|%41s|%22s|%21s |' % ('', '', 'Disabled'),
    ]
    return '\n'.join(lines) + '\n' + _gpu_rule()


def _process_row(view, pid, name, used):
    shown = name if len(name) <= 38 else '...' + name[-35:]
    return '|%5d   %3s  %3s%10d%7s   %-38s%12s |\n' % (view.index, 'N/A', 'N/A', pid, 'C', shown, '%dMiB' % used)


def summary(ctx, views):
    first = views[0]
    out = ['%s       \n' % _timestamp(), _rule(),
           '| NVIDIA-SMI %-23sDriver Version: %-13sCUDA Version: %-9s|\n' % (first.driver_version, first.driver_version, first.cuda_version),
           '|' + '-' * 41 + '+' + '-' * 22 + '+' + '-' * 22 + '+\n',
           '| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |\n',
           '| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |\n',
           '|                                         |                      |               MIG M. |\n',
           '|' + '=' * 41 + '+' + '=' * 22 + '+' + '=' * 22 + '|\n']
    out.extend(_summary_gpu(view) for view in views)
    out.extend([' ' * WIDTH + '\n', _rule(),
                '| %-86s|\n' % 'Processes:',
                '|  GPU   GI   CI        PID   Type   Process name                            GPU Memory |\n',
                '|        ID   ID                                                             Usage      |\n',
                '|' + '=' * (WIDTH - 2) + '|\n'])
    rows = [_process_row(view, pid, name, used) for view in views for pid, name, used in view.processes]
    out.extend(rows or ['|  %-85s|\n' % 'No running processes found'])
    out.append(_rule())
    ctx.write(''.join(out))
    return 0


# --------------------------------------------------------------------------
# -q


def _entry(key, value=None, children=()):
    return (key, value, list(children))


def _na_or(condition, value):
    return value if condition else 'N/A'


def _ecc_block(view):
    dram = str(view.ecc_volatile_uncorrectable)
    counters = [_entry('SRAM Correctable', '0'), _entry('SRAM Uncorrectable Parity', '0'), _entry('SRAM Uncorrectable SEC-DED', '0'),
                _entry('DRAM Correctable', '0'), _entry('DRAM Uncorrectable', dram)]
    return [
        ('ECC Mode', [_entry('ECC Mode', None, [_entry('Current', 'Enabled'), _entry('Pending', 'Enabled')])]),
        ('ECC Errors', [_entry('ECC Errors', None, [
            _entry('Volatile', None, counters),
            _entry('Aggregate', None, counters + [_entry('SRAM Threshold Exceeded', 'No')]),
            _entry('Aggregate Uncorrectable SRAM Sources', None, [
                _entry('SRAM L2', '0'), _entry('SRAM SM', '0'), _entry('SRAM Microcontroller', '0'),
                _entry('SRAM PCIE', '0'), _entry('SRAM Other', '0')]),
        ])]),
    ]


def _health_blocks(view):
    banks = BANKS.get(view.architecture, 2560)
    pending = view.remap_pending
    return [
        ('Retired Pages', [_entry('Retired Pages', None, [
            _entry('Single Bit ECC', _na_or(view.ecc_pending, '0')),
            _entry('Double Bit ECC', _na_or(view.ecc_pending, '1')),
            _entry('Pending Page Blacklist', _na_or(view.ecc_pending, 'Yes')),
        ])]),
        ('Remapped Rows', [_entry('Remapped Rows', None, [
            _entry('Correctable Error', '0'),
            _entry('Uncorrectable Error', str(view.remapped_uncorrectable)),
            _entry('Pending', 'Yes' if pending else 'No'),
            _entry('Remapping Failure Occurred', 'No'),
            _entry('Bank Remap Availability Histogram', None, [
                _entry('Max', '%d bank(s)' % (banks - 1 if pending else banks)),
                _entry('High', '%d bank(s)' % (1 if pending else 0)),
                _entry('Partial', '0 bank(s)'), _entry('Low', '0 bank(s)'), _entry('None', '0 bank(s)')]),
        ])]),
    ]


def _identity_blocks(view):
    return [
        ('Product Name', [_entry('Product Name', view.name)]),
        ('Product Brand', [_entry('Product Brand', 'NVIDIA')]),
        ('Product Architecture', [_entry('Product Architecture', view.architecture)]),
        ('Display Mode', [_entry('Display Mode', 'Disabled')]),
        ('Display Active', [_entry('Display Active', 'Disabled')]),
        ('Persistence Mode', [_entry('Persistence Mode', view.persistence_mode)]),
        ('Addressing Mode', [_entry('Addressing Mode', 'None')]),
        ('MIG Mode', [_entry('MIG Mode', None, [_entry('Current', 'Disabled'), _entry('Pending', 'Disabled')])]),
        ('Accounting Mode', [_entry('Accounting Mode', 'Disabled'), _entry('Accounting Mode Buffer Size', '4000')]),
        ('Driver Model', [_entry('Driver Model', None, [_entry('Current', 'N/A'), _entry('Pending', 'N/A')])]),
        ('Serial Number', [_entry('Serial Number', view.serial), _entry('GPU UUID', view.uuid),
                           _entry('Minor Number', str(view.minor)),
                           _entry('VBIOS Version', view.vbios),
                           _entry('MultiGPU Board', 'No'), _entry('Board ID', '0x%s00' % view.bus.lower()),
                           _entry('Board Part Number', '692-2G520-0200-000'), _entry('GPU Part Number', '2330-885-A1'),
                           _entry('FRU Part Number', 'N/A'), _entry('Module ID', str(view.slot + 1))]),
        ('Inforom Version', [_entry('Inforom Version', None, [
            _entry('Image Version', 'G520.0200.00.05'), _entry('OEM Object', '2.1'), _entry('ECC Object', '7.16'),
            _entry('Power Management Object', 'N/A')]),
            _entry('Inforom BBX Object Flush', None, [_entry('Latest Timestamp', 'N/A'), _entry('Latest Duration', 'N/A')]),
            _entry('GPU Operation Mode', None, [_entry('Current', 'N/A'), _entry('Pending', 'N/A')])]),
        ('GSP Firmware Version', [_entry('GSP Firmware Version', view.driver_version)]),
        ('GPU Virtualization Mode', [_entry('GPU Virtualization Mode', None, [
            _entry('Virtualization Mode', 'None'), _entry('Host VGPU Mode', 'N/A')])]),
        ('GPU Reset Status', [_entry('GPU Reset Status', None, [
            _entry('Reset Required', 'No'), _entry('Drain and Reset Recommended', 'No')])]),
        ('IBMNPU', [_entry('IBMNPU', None, [_entry('Relaxed Ordering Mode', 'N/A')])]),
    ]


def _pci_block(view):
    generation = str(view.pcie_gen_max)
    return [('PCI', [_entry('PCI', None, [
        _entry('Bus', '0x' + view.bus), _entry('Device', '0x00'), _entry('Domain', '0x' + view.pci_bus_id.split(':')[0][-4:]),
        _entry('Device Id', '0x%s10DE' % view.device_id.upper()),
        _entry('Bus Id', view.pci_bus_id), _entry('Sub System Id', gpu_views.SUBSYSTEM_IDS.get(view.name, '0x16C110DE')),
        _entry('GPU Link Info', None, [
            _entry('PCIe Generation', None, [_entry('Max', generation), _entry('Current', generation),
                                             _entry('Device Current', generation), _entry('Device Max', generation),
                                             _entry('Host Max', 'N/A')]),
            _entry('Link Width', None, [_entry('Max', '%dx' % view.pcie_width_max), _entry('Current', '%dx' % view.pcie_width)])]),
        _entry('Bridge Chip', None, [_entry('Type', 'N/A'), _entry('Firmware', 'N/A')]),
        _entry('Replays Since Reset', '0'), _entry('Replay Number Rollovers', '0'),
        _entry('Tx Throughput', '0 KB/s'), _entry('Rx Throughput', '0 KB/s'),
        _entry('Atomic Caps Inbound', 'N/A'), _entry('Atomic Caps Outbound', 'N/A')])])]


def _state_blocks(view):
    event = view.clock_event
    return [
        ('Fan Speed', [_entry('Fan Speed', 'N/A')]),
        ('Performance State', [_entry('Performance State', 'P0')]),
        ('Clocks Event Reasons', [_entry('Clocks Event Reasons', None, [
            _entry('Idle', event('gpu_idle')), _entry('Applications Clocks Setting', event('applications_clocks_setting')),
            _entry('SW Power Cap', event('sw_power_cap')),
            _entry('HW Slowdown', event('hw_slowdown'), [_entry('HW Thermal Slowdown', event('hw_thermal_slowdown')),
                                                         _entry('HW Power Brake Slowdown', event('hw_power_brake_slowdown'))]),
            _entry('Sync Boost', event('sync_boost')), _entry('SW Thermal Slowdown', event('sw_thermal_slowdown')),
            _entry('Display Clock Setting', event('display_clock_setting'))])]),
        ('Sparse Operation Mode', [_entry('Sparse Operation Mode', 'Disabled')]),
    ]


def _memory_blocks(view):
    used = view.memory_used
    return [
        ('FB Memory Usage', [_entry('FB Memory Usage', None, [
            _entry('Total', '%d MiB' % view.memory_total), _entry('Reserved', '%d MiB' % gpu_views.RESERVED_MIB),
            _entry('Used', '%d MiB' % used), _entry('Free', '%d MiB' % (view.memory_total - gpu_views.RESERVED_MIB - used))])]),
        ('BAR1 Memory Usage', [_entry('BAR1 Memory Usage', None, [
            _entry('Total', '131072 MiB'), _entry('Used', '1 MiB'), _entry('Free', '131071 MiB')])]),
        ('Conf Compute Protected Memory Usage', [_entry('Conf Compute Protected Memory Usage', None, [
            _entry('Total', '0 MiB'), _entry('Used', '0 MiB'), _entry('Free', '0 MiB')])]),
        ('Compute Mode', [_entry('Compute Mode', 'Default')]),
        ('Utilization', [_entry('Utilization', None, [
            _entry('Gpu', '%d %%' % (100 if view.busy else 0)), _entry('Memory', '0 %'), _entry('Encoder', '0 %'),
            _entry('Decoder', '0 %'), _entry('JPEG', '0 %'), _entry('OFA', '0 %')])]),
        ('Encoder Stats', [_entry('Encoder Stats', None, [
            _entry('Active Sessions', '0'), _entry('Average FPS', '0'), _entry('Average Latency', '0')])]),
        ('FBC Stats', [_entry('FBC Stats', None, [
            _entry('Active Sessions', '0'), _entry('Average FPS', '0'), _entry('Average Latency', '0')])]),
    ]


def _sensor_blocks(view):
    limit = '%.2f W' % view.power_limit
    mem = '%d MHz' % gpu_views.IDLE['mem_mhz']
    top = '%d MHz' % gpu_views.IDLE['max_sm_mhz']
    sm_clock = '%d MHz' % view.sm_clock
    return [
        ('Temperature', [_entry('Temperature', None, [
            _entry('GPU Current Temp', '%d C' % gpu_views.IDLE['temperature']), _entry('GPU T.Limit Temp', '50 C'),
            _entry('GPU Shutdown T.Limit Temp', '-8 C'), _entry('GPU Slowdown T.Limit Temp', '-2 C'),
            _entry('GPU Max Operating T.Limit Temp', '0 C'), _entry('GPU Target Temperature', 'N/A'),
            _entry('Memory Current Temp', '%d C' % gpu_views.IDLE['memory_temperature']),
            _entry('Memory Max Operating T.Limit Temp', '0 C')])]),
        ('GPU Power Readings', [_entry('GPU Power Readings', None, [
            _entry('Power Draw', '%.2f W' % view.power_draw), _entry('Current Power Limit', limit),
            _entry('Requested Power Limit', limit), _entry('Default Power Limit', '%.2f W' % view.power_default),
            _entry('Min Power Limit', '200.00 W'), _entry('Max Power Limit', '%.2f W' % max(view.power_default, view.power_limit))])]),
        ('Module Power Readings', [_entry('Module Power Readings', None, [
            _entry(key, 'N/A') for key in ('Power Draw', 'Current Power Limit', 'Requested Power Limit',
                                           'Default Power Limit', 'Min Power Limit', 'Max Power Limit')])]),
        ('Clocks', [_entry('Clocks', None, [_entry('Graphics', sm_clock), _entry('SM', sm_clock), _entry('Memory', mem),
                                            _entry('Video', '765 MHz')])]),
        ('Applications Clocks', [_entry('Applications Clocks', None, [_entry('Graphics', top), _entry('Memory', mem)])]),
        ('Default Applications Clocks', [_entry('Default Applications Clocks', None, [_entry('Graphics', top), _entry('Memory', mem)])]),
        ('Deferred Clocks', [_entry('Deferred Clocks', None, [_entry('Memory', 'N/A')])]),
        ('Max Clocks', [_entry('Max Clocks', None, [_entry('Graphics', top), _entry('SM', top), _entry('Memory', mem),
                                                    _entry('Video', '1545 MHz')])]),
        ('Max Customer Boost Clocks', [_entry('Max Customer Boost Clocks', None, [_entry('Graphics', top)])]),
        ('Clock Policy', [_entry('Clock Policy', None, [_entry('Auto Boost', 'N/A'), _entry('Auto Boost Default', 'N/A')])]),
        ('Voltage', [_entry('Voltage', None, [_entry('Graphics', '665.000 mV')])]),
        ('Fabric', [_entry('Fabric', None, [_entry('State', view.fabric_state), _entry('Status', view.fabric_status)])]),
    ]


def _process_block(view):
    if not view.processes:
        return [('Processes', [_entry('Processes', 'None')])]
    children = []
    for pid, name, used in view.processes:
        children.extend([_entry('GPU instance ID', 'N/A'), _entry('Compute instance ID', 'N/A'),
                         _entry('Process ID', str(pid), [_entry('Type', 'C'), _entry('Name', name),
                                                         _entry('Used GPU Memory', '%d MiB' % used)])])
    return [('Processes', [_entry('Processes', None, children)])]


def gpu_sections(view):
    """(section key, entries) of one GPU in the order of the 535 report."""
    return (_identity_blocks(view) + _pci_block(view) + _state_blocks(view) + _memory_blocks(view) + _ecc_block(view)
            + _health_blocks(view) + _sensor_blocks(view) + _process_block(view))


# -d TYPE -> section keys it prints
DISPLAY = {
    'MEMORY': ('FB Memory Usage', 'BAR1 Memory Usage', 'Conf Compute Protected Memory Usage'),
    'UTILIZATION': ('Utilization',),
    'ECC': ('ECC Mode', 'ECC Errors'),
    'TEMPERATURE': ('Temperature',),
    'POWER': ('GPU Power Readings', 'Module Power Readings'),
    'CLOCK': ('Clocks', 'Applications Clocks', 'Default Applications Clocks', 'Deferred Clocks', 'Max Clocks',
              'Max Customer Boost Clocks', 'Clock Policy'),
    'COMPUTE': ('Compute Mode',),
    'PIDS': ('Processes',),
    'PERFORMANCE': ('Performance State', 'Clocks Event Reasons'),
    'PAGE_RETIREMENT': ('Retired Pages',),
    'ROW_REMAPPER': ('Remapped Rows',),
    'ACCOUNTING': ('Accounting Mode',),
    'ENCODER_STATS': ('Encoder Stats',),
    'FBC_STATS': ('FBC Stats',),
    'VOLTAGE': ('Voltage',),
    'RESET_STATUS': ('GPU Reset Status',),
    'GSP_FIRMWARE_VERSION': ('GSP Firmware Version',),
}


def _render(entries, depth):
    lines = []
    for key, value, children in entries:
        name = '    ' * depth + key
        lines.append(name if value is None else '%s: %s' % (name.ljust(42), value))
        lines.extend(_render(children, depth + 1))
    return lines


def query_report(ctx, all_views, views, display):
    keys = None
    if display:
        keys = set()
        for item in display:
            keys.update(DISPLAY[item])
    lines = ['', '==============NVSMI LOG==============', '',
             '%s: %s' % ('Timestamp'.ljust(42), _timestamp()),
             '%s: %s' % ('Driver Version'.ljust(42), all_views[0].driver_version),
             '%s: %s' % ('CUDA Version'.ljust(42), all_views[0].cuda_version), '',
             '%s: %d' % ('Attached GPUs'.ljust(42), len(all_views))]
    for view in views:
        lines.append('GPU %s' % view.pci_bus_id)
        for key, entries in gpu_sections(view):
            if keys is None or key in keys:
                lines.extend(_render(entries, 1))
        lines.append('')
    ctx.write('\n'.join(lines) + '\n')
    return 0


# --------------------------------------------------------------------------
# topo -m


def _nics(model):
    """RDMA devices in PCI order, as nvidia-smi numbers them NIC0, NIC1, ..."""
    return sorted(model.hcas, key=lambda hca: hca['pci'].lower())


def _switch_group(model, views):
    """HCA name -> PCIe switch group: a GPU pair (2k, 2k+1 by slot) shares a switch with its nearest NICs."""
    groups = {}
    for view in views:
        if view.nearest_hca:
            groups[view.nearest_hca] = view.slot // 2
    for device in model.profile['gpus']['devices']:
        if device.get('nearest_hca'):
            groups.setdefault(device['nearest_hca'], device['index'] // 2)
    return groups


def _pcie_relation(numa_a, group_a, numa_b, group_b, direct):
    if direct:
        return 'PIX'
    if group_a is not None and group_a == group_b:
        return 'PXB'
    return 'NODE' if numa_a == numa_b else 'SYS'


def _same_card(hca, other):
    """Two ports (PCI functions) of one adapter: behind the same bridge."""
    return bool(hca.get('adapter')) and hca.get('adapter') == other.get('adapter')


def _nvlink_cell(view_a, view_b, topology):
    """NV<n>: links bonded between two GPUs (through the NVSwitches: the fewer active of the two)."""
    if not topology:
        return 'SYS' if view_a.numa_node != view_b.numa_node else 'NODE'
    return 'NV%d' % min(view_a.active_links, view_b.active_links)


def topo_matrix(ctx, model, views):
    nics = _nics(model)
    groups = _switch_group(model, views)
    topology = model.profile['gpus'].get('topology')
    labels = ['GPU%d' % view.index for view in views] + ['NIC%d' % number for number in range(len(nics))]
    lines = ['\t\x1b[4m' + '\t'.join(labels + ['CPU Affinity', 'NUMA Affinity', 'GPU NUMA ID']) + '\x1b[0m']
    for view in views:
        cells = [' X ' if other is view else _nvlink_cell(view, other, topology) for other in views]
        cells += [_pcie_relation(view.numa_node, view.slot // 2, hca['numa_node'], groups.get(hca['name']), hca['name'] == view.nearest_hca)
                  for hca in nics]
        lines.append('\t'.join(['GPU%d' % view.index] + cells + [view.cpu_list, str(view.numa_node), '', 'N/A']))
    for number, hca in enumerate(nics):
        cells = [_pcie_relation(hca['numa_node'], groups.get(hca['name']), view.numa_node, view.slot // 2, hca['name'] == view.nearest_hca)
                 for view in views]
        cells += [' X ' if other is hca else _pcie_relation(hca['numa_node'], groups.get(hca['name']), other['numa_node'],
                                                            groups.get(other['name']), _same_card(hca, other)) for other in nics]
        lines.append('\t'.join(['NIC%d' % number] + cells + ['', '', '', '']))
    text = '\n'.join(lines) + '\n' + LEGEND
    if nics:
        text += '\nNIC Legend:\n\n' + ''.join('  NIC%d: %s\n' % (number, hca['name']) for number, hca in enumerate(nics))
    ctx.write(text + '\n')
    return 0


# --------------------------------------------------------------------------
# nvlink


def _speed(view):
    return '%g GB/s' % view.link_speed


def _nvlink_status(view):
    if view.links and not view.active_links:
        return 'NVML: Unable to retrieve NVLink information as all links are inactive\n'
    return ''.join('\t Link %d: %s\n' % (number, _speed(view) if up else '<inactive>') for number, up in enumerate(view.links))


# R570+ drivers print the NVLink 5 counter set (Blackwell) instead of Replay/Recovery/CRC; the order of a real 595 driver.
NVLINK5_COUNTERS = ('Tx packets', 'Tx bytes', 'Rx packets', 'Rx bytes', 'Malformed packet Errors', 'Buffer overrun Errors',
                    'Rx Errors', 'Rx remote Errors', 'Rx General Errors', 'Local link integrity Errors', 'Tx discards',
                    'Link recovery successful events', 'Link recovery failed events', 'Total link recovery events',
                    'Effective Errors', 'Effective BER', 'Symbol Errors', 'Symbol BER') + tuple('FEC Errors - %d' % n for n in range(16))


def nvlink5_counters(view):
    """Whether this GPU's driver prints the R570+ counter names: a 570 or later driver, or gpus.nvlink.counters: nvlink5."""
    try:
        major = int(str(view.driver_version).split('.', maxsplit=1)[0])
    except ValueError:
        major = 0
    return view.nvlink_counters == 'nvlink5' or (view.nvlink_counters is None and major >= 570)


def _nvlink5_link(view, number, errors):
    values = dict((name, 0) for name in NVLINK5_COUNTERS)
    values.update({'Tx packets': 912837461 + 1000 * number + view.slot, 'Rx packets': 912837000 + 1000 * number + view.slot,
                   'Tx bytes': 58421597504 + number, 'Rx bytes': 58421568000 + number, 'FEC Errors - 0': 9138451201 + number,
                   'Effective BER': '15e-255', 'Symbol BER': '15e-255'})
    if errors:
        values.update({'Rx Errors': errors, 'Symbol Errors': 13 * errors, 'FEC Errors - 1': 97 * errors})
    return ''.join('\t Link %d: %s: %s\n' % (number, name, values[name]) for name in NVLINK5_COUNTERS)


def _nvlink_errors(view):
    """Three counters a link, a blank line between links (and between GPUs); R570+: the NVLink 5 set, no blank line.

    An ``nvlink-errors GPU LINK COUNT`` fault adds COUNT to the link's replay and CRC counters (legacy) or its Rx and
    symbol errors (NVLink 5).
    """
    if nvlink5_counters(view):
        return ''.join(_nvlink5_link(view, number, view.nvlink_errors.get(number, 0)) for number in range(len(view.links)))
    return '\n'.join('\t Link %d: Replay Errors: %d\n\t Link %d: Recovery Errors: 0\n\t Link %d: CRC Errors: %d\n' % (
        number, view.nvlink_errors.get(number, 0), number, number, 3 * view.nvlink_errors.get(number, 0))
        for number in range(len(view.links)))


def nvlink(ctx, views, mode):
    blocks = []
    for view in views:
        body = _nvlink_status(view) if mode == 'status' else _nvlink_errors(view)
        blocks.append('GPU %d: %s (UUID: %s)\n%s' % (view.index, view.name, view.uuid, body))
    ctx.write(('\n' if mode == 'errors' else '').join(blocks))
    return 0


# --------------------------------------------------------------------------
# argument handling


class Args(object):
    """What nvidia-smi was asked for."""

    def __init__(self):
        self.command = 'summary'
        self.ids = None
        self.display = []
        self.fields = None
        self.format = None
        self.persistence = None
        self.nvlink = None
        self.topo = False


def _value(args, position, arg, long_name):
    """(value, next position) of ``-x VALUE`` or ``--long=VALUE``; (None, position) when missing."""
    if arg.startswith(long_name + '='):
        return arg.split('=', 1)[1], position + 1
    if position + 1 < len(args):
        return args[position + 1], position + 2
    return None, position + 1


OPTIONS = {
    '-i': 'ids', '--id': 'ids', '-d': 'display', '--display': 'display', '--query-gpu': 'query-gpu',
    '--query-compute-apps': 'query-compute-apps', '--format': 'format', '-pm': 'persistence', '--persistence-mode': 'persistence',
}
FLAGS = {'-L': 'list', '--list-gpus': 'list', '-q': 'query', '--query': 'query'}


def _apply(parsed, option, value):
    if option == 'ids':
        parsed.ids = value
    elif option == 'display':
        parsed.display.extend(item.strip().upper() for item in value.split(','))
    elif option in ('query-gpu', 'query-compute-apps'):
        parsed.command, parsed.fields = option, value
    elif option == 'format':
        parsed.format = value
    else:
        parsed.command, parsed.persistence = 'persistence', value


def parse_args(args):
    """Args, or None on an invalid combination."""
    parsed = Args()
    position = 0
    if args and args[0] in ('topo', 'nvlink'):
        parsed.command = args[0]
        position = 1
    while position < len(args):
        arg = args[position]
        name = arg.split('=', 1)[0]
        if parsed.command == 'topo' and arg in ('-m', '--matrix'):
            parsed.topo = True
            position += 1
        elif parsed.command == 'nvlink' and arg in ('-s', '--status', '-e', '--errorcounters'):
            parsed.nvlink = 'status' if arg in ('-s', '--status') else 'errors'
            position += 1
        elif name in OPTIONS:
            value, position = _value(args, position, arg, name)
            if value is None:
                return None
            _apply(parsed, OPTIONS[name], value)
        elif arg in FLAGS and parsed.command in ('summary', 'list', 'query'):
            parsed.command = FLAGS[arg]
            position += 1
        else:
            return None
    return parsed


def _valid(parsed):
    if parsed.command == 'topo' and not parsed.topo:
        return False
    if parsed.command == 'nvlink' and parsed.nvlink is None:
        return False
    if parsed.display and (parsed.command != 'query' or not set(parsed.display) <= set(DISPLAY)):
        return False
    if parsed.command in ('query-gpu', 'query-compute-apps') and _format_flags(parsed.format) is None:
        return False
    return True


def persistence(ctx, views, value):
    """``-pm 1``: persistence mode on (nvidia-smi's messages as in docs.nvidia.com/deploy/driver-persistence; without
    nvidia-persistenced it is the driver's legacy mode, which lasts until the reboot: driver.set_persistence)."""
    if value.strip().upper() not in ('1', 'ENABLED'):
        ctx.error('hwsim: nvidia-smi -pm %s: only enabling persistence mode is simulated\n' % value)
        return 2
    from hwsim import driver  # pylint: disable=import-outside-toplevel
    already = all(view.persistence_mode == 'Enabled' for view in views)
    if not already:
        try:
            driver.set_persistence(ctx.root)
        except OSError as exc:
            ctx.error('hwsim: nvidia-smi -pm %s: %s\n' % (value, exc))
            return 4
    ctx.write(''.join(('Persistence mode is already Enabled for GPU %s.\n' if already
                       else 'Enabled persistence mode for GPU %s.\n') % view.pci_bus_id for view in views) + 'All done.\n')
    return 0


def _dispatch(ctx, model, parsed, all_views, views):
    if parsed.command == 'list':
        return list_gpus(ctx, views)
    if parsed.command == 'query':
        return query_report(ctx, all_views, views, parsed.display)
    if parsed.command == 'query-gpu':
        return query_gpu(ctx, views, parsed.fields, _format_flags(parsed.format))
    if parsed.command == 'query-compute-apps':
        return query_apps(ctx, views, parsed.fields, _format_flags(parsed.format))
    if parsed.command == 'topo':
        return topo_matrix(ctx, model, views)
    if parsed.command == 'nvlink':
        return nvlink(ctx, views, parsed.nvlink)
    if parsed.command == 'persistence':
        return persistence(ctx, views, parsed.persistence)
    return summary(ctx, views)


def run(ctx, args):
    """nvidia-smi [topo -m | nvlink -s|-e | -L | -q [-d T] | --query-gpu=F --format=csv... | --query-compute-apps=F ... | -pm 1] [-i N]."""
    if args and args[0] in ('-h', '--help'):
        from hwsim import driver  # pylint: disable=import-outside-toplevel
        ctx.write('NVIDIA System Management Interface -- v%s\n' % (driver.userland_version(ctx.root) or '535.183.01'))
        return 0
    parsed = parse_args(args)
    if parsed is None or not _valid(parsed):
        ctx.write(INVALID)
        return 2
    model = ctx.host_model()
    if not gpu_views.has_gpus(model):
        ctx.write(DRIVER_FAILED)
        return 9
    failed = gpu_views.driver_check(ctx, model)
    if failed:
        ctx.write(failed[0])
        return failed[1]
    all_views = gpu_views.visible(model)
    views = all_views
    if parsed.ids is not None:
        views = gpu_views.select(all_views, parsed.ids)
    if not all_views or not views:
        ctx.write(NO_DEVICES)
        return 6
    if parsed.command == 'topo' and parsed.ids is not None:
        ctx.write(INVALID)
        return 2
    return _dispatch(ctx, model, parsed, all_views, views)
