"""ipmitool stand-in: the BMC of a lab host, for the burn-in sampler (issue 34): ``sdr elist``, ``sdr list``
and ``dcmi power reading``.

The layouts are the real ones (../shared/fixtures/real/ipmitool/, provenance in SOURCES.tsv; ipmitool's
lib/ipmi_sdr.c and lib/ipmi_dcmi.c): ``sdr elist`` rows ``%-16s | %02Xh | %-3s | %2d.%1d | reading`` and ``sdr list``
rows ``%-16s | %-17s | status`` as the Dell R740 captures print them, discrete readings as states in elist and as
the raw state byte (``0x00``) in list; ``dcmi power reading`` in ipmitool 1.8.19's layout (Debian 12 ships 1.8.19),
where the timestamp has no newline and the sampling period follows on its line (the Supermicro capture).

The sensor names are the Dell iDRAC's of the R740 capture (``Inlet Temp``, ``Exhaust Temp``, ``Fan1``..``Fan6``,
``Pwr Consumption``, ``PS Redundancy``, ``Fan Redundancy``, a PSU's ``Status`` and ``Presence`` sensors at IPMI entity
10.N, ``GPU1 Temp``..``GPU8 Temp``), on a chassis with six power supplies where the host has GPUs (an 8-GPU HGX
server; two on the others). The figures: the capture's idle inlet (23 C), exhaust (31 C) and fan speeds. Ours, from
no capture (the R740 had no GPUs): the power draw as a chassis base (1,800 W with GPUs) plus the GPUs' draw
(nvidia-smi's), the exhaust rising 1 C per 100 W of it, and the DCMI minimum and maximum 40 W under and 60 W over; the
gate judges none of these against a figure, only the statuses and the inlet. Faults: ``fan-fail FAN`` (that fan
at 0 RPM below its lower critical threshold, status ``lcr``, and ``Fan Redundancy`` ``Redundancy Lost``), ``psu-fail
PSU`` (its ``Status`` asserts ``Failure detected`` with status ``ok``, as a discrete sensor does, and ``PS Redundancy``
``Redundancy Lost``).
"""
import time

from hwsim import faults as fault_kinds
from hwsim.tools import gpus as gpu_views

USAGE = ('Commands:\n\tsdr elist\n\tsdr list\n\tdcmi power reading\n'
         '(the lab\'s ipmitool stand-in answers only these: lab/hwsim/hwsim/tools/ipmitool.py)\n')
FANS = 6
FAN_RPM = (3480, 3360, 3480, 3240, 3840, 3360)   # the R740 capture's Fan1..Fan6
INLET_C = 23                                      # the R740 capture's Inlet Temp
EXHAUST_C = 31                                    # the R740 capture's Exhaust Temp
BASE_W = 208                                      # the R740 capture's Pwr Consumption (no GPU)
HGX_BASE_W = 1800                                 # an 8-GPU server's CPUs, memory, NICs, NVSwitches and fans (the model)


def _psus(model):
    return 6 if gpu_views.has_gpus(model) else 2


def _failed(model, kind, arg):
    return set(fault['args'][arg] for fault in fault_kinds.of_kind(model.state['faults'], kind))


def _gpu_power(model):
    return sum(view.power_draw for view in gpu_views.visible(model)) if gpu_views.has_gpus(model) else 0.0


def sensors(model):
    """(name, sensor id, status, entity, elist reading, list reading) of every sensor, in the BMC's order."""
    gpu_power = _gpu_power(model)
    base = HGX_BASE_W if gpu_views.has_gpus(model) else BASE_W
    fans_down = _failed(model, 'fan-fail', 'fan')
    psus_down = _failed(model, 'psu-fail', 'psu')
    rows = [('Inlet Temp', 0x05, 'ok', '7.1', '%d degrees C' % INLET_C, '%d degrees C' % INLET_C),
            ('Exhaust Temp', 0x06, 'ok', '7.1', '%d degrees C' % round(EXHAUST_C + gpu_power / 100.0),
             '%d degrees C' % round(EXHAUST_C + gpu_power / 100.0))]
    for number in range(1, FANS + 1):
        rpm = 0 if number in fans_down else FAN_RPM[number - 1]
        rows.append(('Fan%d' % number, 0x37 + number, 'lcr' if number in fans_down else 'ok', '7.1', '%d RPM' % rpm, '%d RPM' % rpm))
    for number in range(1, _psus(model) + 1):
        state = 'Presence detected, Failure detected' if number in psus_down else 'Presence detected'
        rows.append(('Presence', 0x47 + number, 'ok', '10.%d' % number, 'Present', '0x00'))
        rows.append(('Status', 0x84 + number, 'ok', '10.%d' % number, state, '0x00'))
    watts = int(round(base + gpu_power))
    rows += [('Pwr Consumption', 0x76, 'ok', '7.1', '%d Watts' % watts, '%d Watts' % watts),
             ('PS Redundancy', 0x77, 'ok', '7.1', 'Redundancy Lost' if psus_down else 'Fully Redundant', '0x00'),
             ('Fan Redundancy', 0x78, 'ok', '7.1', 'Redundancy Lost' if fans_down else 'Fully Redundant', '0x00')]
    for view in gpu_views.visible(model):
        temp = '%d degrees C' % gpu_views.IDLE['temperature']
        rows.append(('GPU%d Temp' % (view.slot + 1), 0x89 + view.slot, 'ok', '7.1', temp, temp))
    return rows


def _sdr(ctx, model, layout):
    for name, number, status, entity, reading, raw in sensors(model):
        main, sub = entity.split('.')
        if layout == 'elist':
            ctx.write('%-16s | %02Xh | %-3s | %2d.%1d | %s\n' % (name, number, status, int(main), int(sub), reading))
        else:
            ctx.write('%-16s | %-17s | %s\n' % (name, raw, status))
    return 0


def _dcmi(ctx, model):
    watts = int(round((HGX_BASE_W if gpu_views.has_gpus(model) else BASE_W) + _gpu_power(model)))
    stamp = time.strftime('%m/%d/%y %H:%M:%S UTC', time.gmtime())
    ctx.write('\n')
    ctx.write('    Instantaneous power reading:              %8d Watts\n' % watts)
    ctx.write('    Minimum during sampling period:           %8d Watts\n' % (watts - 40))
    ctx.write('    Maximum during sampling period:           %8d Watts\n' % (watts + 60))
    ctx.write('    Average power reading over sample period: %8d Watts\n' % watts)
    ctx.write('    IPMI timestamp:                           %s    Sampling period:                          %08d Seconds.\n'
              % (stamp, 3600))
    ctx.write('    Power reading state is:                   activated\n\n')
    return 0


def run(ctx, args):
    words = [arg for arg in args if not arg.startswith('-')]
    model = ctx.host_model()
    if words[:2] == ['sdr', 'elist']:
        return _sdr(ctx, model, 'elist')
    if words[:2] == ['sdr', 'list'] or words == ['sdr']:
        return _sdr(ctx, model, 'list')
    if words[:3] == ['dcmi', 'power', 'reading']:
        return _dcmi(ctx, model)
    ctx.error(USAGE)
    return 1
