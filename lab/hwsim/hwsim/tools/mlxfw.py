"""mlxfwmanager stand-in (NVIDIA Firmware Tools): query the HCAs' firmware, update it from an image file.

Layout and flow from mstflint's mlxfwupdate (mlxfwmanager.cpp: mainEntry,
checkAndDisplayDeviceQuery1D, printDeviceInfoQuery; err_msgs.h exit codes) and a
real mlxup capture of a ConnectX-7 (same code): ``Querying Mellanox devices
firmware ...``, one ``Device #N`` block per adapter (the ports of a multi-port card
are one device, as mlxfwmanager folds PCI functions with the same GUIDs), Versions
``Current``/``Available`` for FW, PXE and UEFI, a ``FW (Running)`` row while a
flashed image waits for a reboot, and ``Status``.

Values: Device Type from the CA type (MT4129 ``ConnectX7``), Part Number the
image's (the OPN without its bracket letter: ``MCX75310AAS-NEA_Ax``), Description
the VPD text with ``;`` separators, PSID the profile's ``board_id``, FW the running
firmware (ibv_devinfo's ``fw_ver``: profile, ``firmware`` faults), PXE/UEFI by FW
release (the lab's table), PCI Device Name the first function's address (or what
``-d`` named), Base GUID/MAC from the derived identifiers.

``-u`` burns an image: a text file (LAB ONLY, not an MFA or .bin) of ``KEY=VALUE``
lines, ``PSID=MT_0000000838`` and ``FW=28.43.2026`` required, ``PXE=``, ``UEFI=``
optional; ``#`` comments. A matching PSID and a newer FW (or ``-f``) is burnt: the
flash holds it (``mlxfwmanager --query`` shows it as Current, the running one as
``FW (Running)``), ibv_devinfo/ibstat keep the running one until the next
``hwsim boot``/``hwsim reboot``, which makes it a ``firmware HCA VERSION`` fault.
An image for another PSID is "No matching image found", exit 9, as the real tool.
"""
import os
import re

from hwsim import faults as fault_kinds, model as models, profile as profiles

MFT_VERSION = 'mlxfwmanager, mft 4.30.1-8, built on Nov 19 2024, 12:47:25. Git SHA Hash: N/A'
# Device Type by CA type (mstflint dev_mgt: dm_dev_type2str)
DEVICE_TYPES = {'MT4119': 'ConnectX5', 'MT4121': 'ConnectX5', 'MT4123': 'ConnectX6', 'MT4125': 'ConnectX6DX',
                'MT4127': 'ConnectX6LX', 'MT4129': 'ConnectX7', 'MT4131': 'ConnectX8', 'MT41692': 'BlueField3'}
# Ethernet-only adapters: no LINK_TYPE_P1 setting, so the port type is unknown and both Base GUID and Base MAC print.
ETHERNET_ONLY = ('MT4125', 'MT4127')
# PXE and UEFI expansion ROM versions shipped with a firmware release (by its minor: 28.39.1002 -> 39); the lab's table.
ROMS = ((46, '3.8.0100', '14.39.0014'), (44, '3.7.0500', '14.35.0015'), (41, '3.7.0300', '14.34.0012'),
        (0, '3.7.0201', '14.32.0012'))
NO_DEVICES = "-E- No devices found or specified, mst might be stopped, run 'mst start' to load MST modules\n"
USAGE = ('Usage: mlxfwmanager [-d <device>] [--query] [-u] [-i <image file> | -D <images dir>] [-f] [-y|--no] '
         '[--no-progress] [-v] [-h] (hwsim simulates these options)\n')
# exit codes (err_msgs.h)
QUERY_FAILED, BAD_CMD_ARGS, IMG_NOT_FOUND, NO_DEVICES_FOUND = 1, 3, 9, 20
SEPARATOR = '---------\n'
IMAGE_MAX_BYTES = 65536  # a lab image is a few lines; bigger files in an image directory are not read
STAGES = ('FSMST_INITIALIZE', 'Writing Boot image component')


class Device(object):
    """One adapter as mlxfwmanager lists it: its first PCI function stands for the card."""

    def __init__(self, host_model, functions, flash):
        first = functions[0]
        self.functions = functions
        self.key = first['name']
        self.pci = first['pci'].lower()
        self.ca_type = first['ca_type']
        self.device_type = DEVICE_TYPES.get(self.ca_type) or re.sub(r'[- ]', '', first.get('generation', 'N/A')).replace(
            'Dx', 'DX').replace('Lx', 'LX')
        self.part_number = image_part_number(first.get('part_number', ''))
        self.description = '; '.join(part.strip() for part in first.get('description', '').split(',')) + ';'
        self.psid = first.get('board_id', 'MT_0000000000')
        self.running = first['firmware']
        self.flash = flash or self.running
        # the card's GUIDs and MACs are those of its first function (the system image GUID)
        card = _first_of(host_model.profile, first)
        self.base_guid = '%016x' % profiles.node_guid(host_model.index, card)
        self.base_mac = profiles.mac(host_model.index, card).replace(':', '')
        layer = first['ports'][0]['link_layer']
        self.guid_lines = ['Base GUID'] if layer == 'InfiniBand' else (
            ['Base GUID', 'Base MAC'] if self.ca_type in ETHERNET_ONLY else ['Base MAC'])

    def names(self):
        return set(hca['name'] for hca in self.functions) | set(hca['pci'].lower() for hca in self.functions)


def _first_of(profile, hca):
    for other in profile['hcas']:
        if models.adapter_of(other) == models.adapter_of(hca):
            return other['name']
    return hca['name']


def image_part_number(opn):
    """The part number an image carries: the ordering part number without its bracket letter, ``_Ax`` added."""
    match = re.match(r'^(MCX[0-9A-Z]+-[0-9A-Z]{3})[A-Z]$', opn)
    return match.group(1) + '_Ax' if match else (opn or 'N/A')


def roms(version):
    """(PXE, UEFI) versions that come with a firmware version."""
    try:
        minor = int(version.split('.')[1])
    except (IndexError, ValueError):
        minor = 0
    for lowest, pxe, uefi in ROMS:
        if minor >= lowest:
            return pxe, uefi
    return ROMS[-1][1:]


def version_key(text):
    return tuple(int(part) for part in re.findall(r'\d+', text))


def devices(host_model):
    """Device of every adapter of the host, in PCI order."""
    if not host_model.profile:
        return []
    pending = host_model.state.get('firmware_flash') or {}
    groups = {}
    for hca in sorted(host_model.hcas, key=lambda item: item['pci'].lower()):
        groups.setdefault(models.adapter_of(hca), []).append(hca)
    found = [Device(host_model, functions, pending.get(functions[0]['name'])) for functions in groups.values()]
    return sorted(found, key=lambda device: device.pci)


def _mst_names(found):
    """/dev/mst names `mst status` would give: mt<type>_pciconf<N>, ``.1`` for a second function."""
    names, counters = {}, {}
    for device in found:
        number = counters.get(device.ca_type, 0)
        counters[device.ca_type] = number + 1
        base = '/dev/mst/mt%s_pciconf%d' % (device.ca_type[2:], number)
        for position in range(len(device.functions)):
            names[base if position == 0 else '%s.%d' % (base, position)] = device
    return names


def select(found, text):
    """The device a ``-d`` name (PCI address with or without domain, mlx5_N, /dev/mst/...) names, or None."""
    wanted = text.strip().lower()
    if re.match(r'^[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$', wanted):
        wanted = '0000:' + wanted
    for device in found:
        if wanted in device.names():
            return device
    return _mst_names(found).get(text.strip())


class ImageError(Exception):
    pass


def read_image(path):
    """{'PSID', 'FW', optional 'PXE', 'UEFI'} of a lab image file; ImageError when it is not one."""
    try:
        with open(path, encoding='utf-8') as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ImageError(str(exc)) from exc
    image = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        key, sep, value = line.partition('=')
        if not sep:
            raise ImageError('not a KEY=VALUE line: %r' % line)
        image[key.strip().upper()] = value.strip()
    if not image.get('PSID') or not re.match(r'^\d+(?:\.\d+){2}$', image.get('FW', '')):
        raise ImageError('PSID= and FW=<version> required')
    return image


def images_for(paths):
    """Parsed images of the files given (files that are not lab images are skipped, as a directory's other files)."""
    found = []
    for path in paths:
        try:
            found.append(read_image(path))
        except ImageError:
            continue
    return found


class Options(object):
    def __init__(self):
        self.devices = []
        self.image = None
        self.image_dir = None
        self.update = False
        self.query = False
        self.yes = None
        self.force = False
        self.progress = True


def parse(args):
    """Options, or a string: 'help', 'version', or an error message."""
    options = Options()
    args = list(args)
    while args:
        arg = args.pop(0)
        value = None
        if arg.startswith('--') and '=' in arg:
            arg, value = arg.split('=', 1)
        if arg in ('-d', '--dev', '-i', '--image-file', '-D', '--image-dir', '--query-format'):
            if value is None:
                if not args:
                    return '-E- Missing argument for option %s\n' % arg
                value = args.pop(0)
            if arg in ('-d', '--dev'):
                options.devices.extend(item for item in value.split(';') if item.strip())
            elif arg in ('-i', '--image-file'):
                options.image = value
            elif arg in ('-D', '--image-dir'):
                options.image_dir = value
            elif value.lower() != 'text':
                return 'hwsim: mlxfwmanager: only the text query format is simulated\n'
        elif arg in ('-u', '--update'):
            options.update = True
        elif arg == '--query':
            options.query = True
        elif arg in ('-y', '--yes'):
            options.yes = True
        elif arg == '--no':
            options.yes = False
        elif arg in ('-f', '--force'):
            options.force = True
        elif arg == '--no-progress':
            options.progress = False
        elif arg in ('-h', '--help'):
            return 'help'
        elif arg in ('-v', '--version'):
            return 'version'
        elif arg == '--online':
            return 'hwsim: mlxfwmanager: --online is not simulated (the lab reaches no firmware server)\n'
        else:
            return '-E- Unknown option: %s\n' % arg
    return options


def _block(number, device, display, image, force):
    """(lines, status) of one Device block (printDeviceInfoQuery)."""
    if device is None:
        lines = ['Device #%d:\n' % number, '----------\n\n', '  Device Type:      N/A\n', '  Part Number:      --\n',
                 '  Description:      \n', '  PSID:             \n', '  PCI Device Name:  %s\n' % display,
                 '  Port1 MAC:        N/A\n', '  Port1 GUID:       N/A\n', '  Port2 MAC:        N/A\n',
                 '  Port2 GUID:       N/A\n', '  Versions:         %-14s %-14s\n' % ('Current', 'Available'),
                 '     FW             %-14s %-14s\n' % ('--', ''), '\n  Status:           Failed to open device\n\n']
        return lines, 'failed'
    available = image['FW'] if image else 'N/A'
    pxe, uefi = roms(device.flash)
    lines = ['Device #%d:\n' % number, '----------\n\n',
             '  Device Type:      %s\n' % device.device_type, '  Part Number:      %s\n' % device.part_number,
             '  Description:      %s\n' % device.description, '  PSID:             %s\n' % device.psid,
             '  PCI Device Name:  %s\n' % display]
    for label in device.guid_lines:
        lines.append('  %-18s%s\n' % (label + ':', device.base_guid if label == 'Base GUID' else device.base_mac))
    lines.append('  Versions:         %-14s %-14s\n' % ('Current', 'Available'))
    lines.append('     FW             %-14s %-14s\n' % (device.flash, available))
    rows = [('PXE', pxe, (image or {}).get('PXE', 'N/A')), ('UEFI', uefi, (image or {}).get('UEFI', 'N/A'))]
    if device.flash != device.running:
        rows.insert(0, ('FW (Running)', device.running, 'N/A'))
    lines.extend('     %-12s   %-14s %-14s\n' % row for row in rows)
    if image is None:
        status = 'No matching image found'
    elif version_key(device.flash) < version_key(image['FW']):
        status = 'Update required'
    elif force:
        status = 'Forced update required'
    else:
        status = 'Up to date'
    lines.append('\n  Status:           %s\n\n' % status)
    return lines, status


def _burn(ctx, device, image, progress):
    """What burning prints; the flash now holds the image's firmware (state ``firmware_flash``)."""
    data = ctx.load_state()
    pending = dict(data.get('firmware_flash') or {})
    if image['FW'] == device.running:
        pending.pop(device.key, None)
    else:
        pending[device.key] = image['FW']
    data['firmware_flash'] = pending
    ctx.save_state(data)
    lines = ['\r%s -   OK          \n' % stage for stage in STAGES] if progress else []
    return lines + ['\b\b\b\bDone\n']


def run(ctx, args):
    """mlxfwmanager [--query] [-d DEV] [-u -i IMAGE|-D DIR [-f] [-y]]."""
    options = parse(args)
    if options == 'help':
        ctx.write(USAGE)
        return 0
    if options == 'version':
        ctx.write(MFT_VERSION + '\n')
        return 0
    if isinstance(options, str):
        ctx.error(options)
        if options.startswith('-E- Unknown'):
            ctx.write(USAGE)
        return BAD_CMD_ARGS
    if options.image is not None and not os.path.isfile(options.image):
        ctx.error("-E- Can't find file %s\n" % options.image)
        return BAD_CMD_ARGS
    if options.image_dir is not None and not os.path.isdir(options.image_dir):
        ctx.error("-E- Can't find directory %s\n" % options.image_dir)
        return BAD_CMD_ARGS
    found = devices(ctx.host_model())
    if options.devices:
        chosen = [(select(found, name), name) for name in options.devices]
    else:
        chosen = [(device, device.pci) for device in found]
    if not chosen:
        ctx.error(NO_DEVICES)
        return NO_DEVICES_FOUND
    if options.image is not None:
        paths = [options.image]
    else:
        # -D DIR, else the current directory, as mlxfwmanager looks for images there
        directory = options.image_dir if options.image_dir is not None else '.'
        paths = [os.path.join(directory, name) for name in sorted(os.listdir(directory))]
        paths = [path for path in paths if os.path.isfile(path) and os.path.getsize(path) <= IMAGE_MAX_BYTES]
    images = images_for(paths)
    return _report(ctx, options, chosen, images, bool(options.image or options.image_dir))


def _report(ctx, options, chosen, images, image_given):
    update = options.update and not options.query
    out = ['Querying Mellanox devices firmware ...\n', '\n']
    rows = []
    counts = {'update': 0, 'no_image': 0, 'multiple': 0, 'failed': 0}
    for number, (device, display) in enumerate(chosen, 1):
        matching = [image for image in images if device is not None and image['PSID'] == device.psid]
        image = matching[0] if len(matching) == 1 else None
        lines, status = _block(number, device, display, image, options.force)
        if len(matching) > 1:
            lines[-1] = '\n  Status:           Multiple image files found\n\n'
            status = 'multiple'
        out.extend(lines)
        rows.append((device, image, status))
        if status in ('Update required', 'Forced update required'):
            counts['update'] += 1
        elif status == 'No matching image found':
            counts['no_image'] += 1
        elif status == 'multiple':
            counts['multiple'] += 1
        elif status == 'failed':
            counts['failed'] += 1
    status = QUERY_FAILED if counts['failed'] else 0
    if options.query:
        ctx.write(''.join(out))
        return status
    said, errors = [], []
    if not update:
        if counts['update']:
            said.append('Found %d device(s) requiring firmware update. Please use -u flag to perform the update.\n' % counts['update'])
        if image_given and counts['no_image']:
            errors.append('-E- Could not find matching firmware images for %d device(s).\n' % counts['no_image'])
            status = IMG_NOT_FOUND
        if image_given and not (counts['no_image'] or counts['update'] or counts['failed'] or counts['multiple']):
            said.append('All listed device(s) firmware images are up to date.\n')
        if said:
            out.append(SEPARATOR + ''.join(said))
        ctx.write(''.join(out))
        if errors:
            ctx.error(('' if said else SEPARATOR) + ''.join(errors))
        return status
    if counts['no_image'] or counts['multiple']:
        status = IMG_NOT_FOUND
    if counts['update']:
        out.append(SEPARATOR + 'Found %d device(s) requiring firmware update...\n' % counts['update'])
    out.append('\n')
    return _update(ctx, options, rows, out, status)


def _update(ctx, options, rows, out, status):
    notes, pending_errors, required = [], 0, 0
    for device, image, state in rows:
        if state == 'failed':
            notes.append('Device query failed')
            pending_errors += 1
        elif image is None:
            notes.append('Error - no matching image found')
            pending_errors += 1
        elif state == 'Up to date':
            notes.append('Up to date')
        else:
            notes.append('')
            required += 1
    if not options.force:
        if not required:
            ctx.write(''.join(out))
            return status
        if not options.yes:
            # no -y: the prompt reads stdin, which a play does not answer; --no answers without asking
            out.append(('Perform FW update? [y/N]: ' if options.yes is None else '') + 'No updates performed\n')
            ctx.write(''.join(out))
            return status
    burnt = 0
    for number, ((device, image, _state), note) in enumerate(zip(rows, notes), 1):
        if note:
            out.append('Device #%d: %s\n' % (number, note))
            continue
        out.append('Device #%d: Updating FW ...     \n' % number)
        out.extend(_burn(ctx, device, image, options.progress))
        burnt += 1
    if burnt:
        out.append('\nRestart needed for updates to take effect.\n')
    ctx.write(''.join(out))
    if pending_errors:
        ctx.error('-E- One or more errors were encountered.\n')
        return 254 if burnt else 255
    return status


def apply_pending(ctx):
    """At boot: a flashed firmware becomes the running one (a ``firmware HCA VERSION`` fault). Returns the lines to say."""
    data = ctx.load_state()
    pending = data.get('firmware_flash') or {}
    if not pending:
        return []
    lines = []
    for name in sorted(pending):
        fault = fault_kinds.parse('firmware', [name, pending[name]])
        data['faults'] = fault_kinds.add(data['faults'], fault)
        lines.append('firmware %s %s now running\n' % (name, pending[name]))
    data['firmware_flash'] = {}
    ctx.save_state(data)
    return lines
