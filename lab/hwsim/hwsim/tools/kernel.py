"""dmesg stand-in: the simulated kernel ring buffer (boot lines, the NVIDIA driver loading, one NVRM line per ``xid`` fault,
the kernel's lines of module loads that failed since the boot).

Lines carry the kernel's ``[%5lu.%06lu]`` stamp; ``-T``/``--ctime`` prints
``[Www Mmm dd hh:mm:ss yyyy]`` and ``--time-format iso`` prints
``YYYY-MM-DDTHH:MM:SS,uuuuuu+HH:MM`` (local time, as util-linux does) from a
boot time one hour before now (earlier when a fault is older); an Xid is
logged at the time its fault was injected (``at``), so its stamp stays put
from one read to the next. ``-l``/``--level LIST`` keeps the named levels
(Xid lines are ``err``, the rest ``info`` or ``notice``). The
``dmesg-wrapped`` fault drops every line older than ten minutes, as a ring
buffer that has wrapped on a long-uptime node. The Xid texts are those the 535 driver logs
(``pid='<unknown>', name=<unknown>`` for errors no process caused, the
process of a ``gpu-process`` fault on the GPU for 13, 31 and 43). With the driver model (hwsim/driver.py: a
stand-in libnvidia-ml installed) the NVRM lines are those of the driver loaded now, and absent when none is.
"""
import datetime
import time

from hwsim import faults as fault_kinds
from hwsim.tools import gpus as gpu_views

LEVELS = ('emerg', 'alert', 'crit', 'err', 'warn', 'notice', 'info', 'debug')
UPTIME_S = 3600
XID_TEXT = {
    13: 'Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): Out Of Range Address',
    31: 'channel 0x00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS GPC0 GPCCLIENT_T1_0 faulted @ 0x7f85_5c000000. '
        'Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ',
    43: 'channel 0x00000010',
    48: 'An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at physAddr 0x18f31d80 partition 16, subpartition 3.',
    61: '0cc5(2b9c) 00000000 00000000',
    62: '2a8e(31ac) 00000000 00000000',
    63: 'Row Remapper: New row (0x0000000018f31d80) marked for remapping, reset gpu to activate.',
    64: 'Row Remapper Error: (0x0000000018f31d80) - Row Remapping table is full',
    74: 'NVLink: fatal error detected on link 1(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)',
    79: 'GPU has fallen off the bus.',
    92: 'High single-bit ECC error rate',
    94: 'Contained: SM (0x1). RST: No, D-RST: No',
    95: 'Uncontained: FBHUB. RST: Yes, D-RST: No',
    119: 'Timeout after 6s of waiting for RPC response from GPU0 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20800a4c 0x4).',
}
APPLICATION_XIDS = (13, 31, 43)
WRAPPED_KEEP_S = 600
USAGE_HINT = "Try 'dmesg --help' for more information.\n"


def _boot_lines(model):
    """(seconds, level, text) of the boot: kernel banner, NVIDIA modules (majors as ``hwsim devices`` creates them)."""
    lines = [
        (0.0, 'notice', 'Linux version 5.15.0-119-generic (buildd@lcy02-amd64-075) (gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0, '
                        'GNU ld (GNU Binutils for Ubuntu) 2.38) #129-Ubuntu SMP Fri Aug 2 19:25:20 UTC 2024'),
        (0.0, 'info', 'Command line: BOOT_IMAGE=/vmlinuz-5.15.0-119-generic root=/dev/md0 ro'),
    ]
    modules = model.kernel_modules  # None: the profile's driver, loaded (no driver model)
    if gpu_views.has_gpus(model) and (modules is None or 'nvidia' in modules):
        driver = model.profile['gpus']['driver_version'] if modules is None else modules['nvidia']
        lines += [
            (4.871203, 'warn', 'nvidia: loading out-of-tree module taints kernel.'),
            (4.902114, 'info', 'nvidia-nvlink: Nvlink Core is being initialized, major device number 510'),
            (5.013377, 'info', 'NVRM: loading NVIDIA UNIX x86_64 Kernel Module  %s  Thu Jun 27 16:32:29 UTC 2024' % driver),
        ]
        if modules is None or 'nvidia_uvm' in modules:
            lines.append((5.236511, 'info', 'nvidia-uvm: Loaded the UVM driver, major device number 511.'))
    return lines


def _xid_line(model, fault, views):
    slot, code = fault['args']['gpu'], fault['args']['code']
    device = [item for item in model.profile['gpus']['devices'] if item['index'] == slot] if gpu_views.has_gpus(model) else []
    if device:
        domain, bus, rest = device[0]['pci_bus_id'].split(':')
        pci = ('%04x:%s:%s' % (int(domain, 16), bus, rest.split('.')[0])).lower()
    else:
        pci = '0000:%02x:00' % slot
    who = "pid='<unknown>', name=<unknown>"
    processes = [view.processes for view in views if view.slot == slot]
    if code in APPLICATION_XIDS and processes and processes[0]:
        who = 'pid=%d, name=%s' % (processes[0][0][0], processes[0][0][1].rsplit('/', 1)[-1][:15])
    return 'NVRM: Xid (PCI:%s): %d, %s, %s' % (pci, code, who, XID_TEXT.get(code, '0000(0000) 00000000 00000000'))


def boot_time(model, now=None):
    """Seconds since the epoch the simulated node booted: an hour ago, or 20 minutes before its oldest fault."""
    now = time.time() if now is None else now
    stamps = [fault['at'] for fault in model.state['faults'] if isinstance(fault.get('at'), (int, float))]
    stamps += [stamp for stamp, _level, _text in getattr(model, 'kernel_log', None) or []]
    return min([now - UPTIME_S] + [stamp - 1200.0 for stamp in stamps])


def messages(model, boot=None):
    """(seconds since boot, level, text) of the ring buffer, oldest first."""
    boot = boot_time(model) if boot is None else boot
    lines = _boot_lines(model)
    views = gpu_views.visible(model) if gpu_views.has_gpus(model) else []
    for number, fault in enumerate(fault_kinds.of_kind(model.state['faults'], 'xid')):
        at = fault.get('at')
        seconds = at - boot if isinstance(at, (int, float)) else 1200.0 + 97.125 * number + 0.000321 * fault['args']['code']
        lines.append((seconds, 'err', _xid_line(model, fault, views)))
    # module loads that failed since the boot (hwsim/driver.py KMSG: nvidia_peermem's unknown symbols)
    lines.extend((stamp - boot, level, text) for stamp, level, text in getattr(model, 'kernel_log', None) or [])
    lines.sort(key=lambda line: line[0])
    if fault_kinds.of_kind(model.state['faults'], 'dmesg-wrapped'):
        newest = max(time.time() - boot, lines[-1][0])
        lines = [line for line in lines if line[0] >= newest - WRAPPED_KEEP_S]
        lines.insert(0, (newest - WRAPPED_KEEP_S + 1.25, 'info',
                         'perf: interrupt took too long (2510 > 2500), lowering kernel.perf_event_max_sample_rate to 79500'))
    return lines


def _iso(stamp):
    moment = datetime.datetime.fromtimestamp(stamp).astimezone()
    offset = moment.strftime('%z') or '+0000'
    return '%s,%06d%s:%s' % (moment.strftime('%Y-%m-%dT%H:%M:%S'), moment.microsecond, offset[:3], offset[3:])


def _parse(args):
    """(time format: None, 'ctime' or 'iso'; levels) or None on a bad option."""
    ctime = None
    levels = None
    position = 0
    while position < len(args):
        arg = args[position]
        if arg in ('-T', '--ctime'):
            ctime = 'ctime'
        elif arg == '--time-format' and position + 1 < len(args) or arg.startswith('--time-format='):
            value = arg.split('=', 1)[1] if '=' in arg else args[position + 1]
            position += 0 if '=' in arg else 1
            if value not in ('iso', 'ctime', 'raw'):
                return None
            ctime = None if value == 'raw' else value
        elif arg in ('-l', '--level') and position + 1 < len(args):
            position += 1
            levels = args[position].split(',')
        elif arg.startswith('--level='):
            levels = arg.split('=', 1)[1].split(',')
        elif arg in ('-k', '--kernel', '-x', '--decode'):
            pass
        else:
            return None
        position += 1
    if levels is not None and not set(levels) <= set(LEVELS):
        return None
    return ctime, levels


def run_dmesg(ctx, args):
    """dmesg [-T|--time-format iso|ctime|raw] [-l|--level LIST]."""
    parsed = _parse(args)
    if parsed is None:
        ctx.error('dmesg: unrecognized option or level: %s\n%s' % (' '.join(args), USAGE_HINT))
        return 1
    ctime, levels = parsed
    model = ctx.host_model()
    from hwsim import driver  # pylint: disable=import-outside-toplevel
    present = dict(driver.loaded(ctx.root))
    if driver.userland_version(ctx.root) is not None or 'nvidia' in present:
        model.kernel_modules = present  # the driver model: the NVRM lines of the driver loaded now, if any
    model.kernel_log = driver.kernel_log(ctx.root)
    boot = boot_time(model)
    out = []
    for seconds, level, text in messages(model, boot):
        if levels is not None and level not in levels:
            continue
        if ctime == 'iso':
            out.append('%s %s\n' % (_iso(boot + seconds), text))
            continue
        stamp = time.ctime(boot + seconds) if ctime else '%5d.%06d' % (int(seconds), round((seconds % 1) * 1e6) % 1000000)
        out.append('[%s] %s\n' % (stamp, text))
    ctx.write(''.join(out))
    return 0
