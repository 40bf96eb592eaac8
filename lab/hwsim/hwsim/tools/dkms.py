"""dkms and update-initramfs stand-ins over the driver model (hwsim/driver.py).

``dkms status`` prints every build under /var/lib/dkms (the lab mirror's nvidia-kernel-(open-)dkms and
mlnx-ofed-kernel-dkms stand-ins record theirs there) in dkms 3's format, Debian 12's dkms 3.0.10::

    mlnx-ofed-kernel/24.10.OFED.24.10.1.1.4.1, 6.1.0-28-amd64, x86_64: installed
    nvidia/580.95.05, 6.1.0-28-amd64, x86_64: installed
    knem/1.1.4.90mlnx3: added

(real captures: pop-os/system76-driver #336, morrownr/rtl8852bu #7 for dkms 3.0.10; the ``added`` line is a
version registered and built for no kernel). ``-m MODULE[/VERSION]``, ``-v VERSION``, ``-k KERNEL[/ARCH]`` and a
positional ``MODULE[/VERSION]`` filter as dkms's do. Other actions (build, install, autoinstall) are not simulated.

``update-initramfs -u [-k VERSION|all]`` (initramfs-tools; the lab image has none) writes a text marker
/boot/initrd.img-<kernel> holding the modprobe.d files an initramfs would carry (a blacklist of nouveau is only in
effect at early boot once it is in there: NVIDIA's driver installation guide) and prints initramfs-tools' line
``update-initramfs: Generating /boot/initrd.img-<kernel>``. Without ``-k`` it is the newest kernel with an image in
/boot, else the running one.
"""
import glob
import os

from hwsim import driver

VERSION = 'dkms-3.0.10'  # Debian 12's dkms (3.0.10-8+deb12u1)
MODPROBE_D = ('etc/modprobe.d', 'usr/lib/modprobe.d', 'lib/modprobe.d')


def _filters(args):
    """{module, version, kernel, arch} from dkms status's arguments, or None for an unknown option."""
    wanted = {}
    args = list(args)
    while args:
        arg = args.pop(0)
        if arg in ('-m', '-v', '-k', '-a') and args:
            value = args.pop(0)
            if arg == '-m':
                wanted['module'], _sep, version = value.partition('/')
                if version:
                    wanted['version'] = version
            elif arg == '-v':
                wanted['version'] = value
            elif arg == '-k':
                wanted['kernel'], _sep, arch = value.partition('/')
                if arch:
                    wanted['arch'] = arch
            else:
                wanted['arch'] = value
        elif not arg.startswith('-') and 'module' not in wanted:
            wanted['module'], _sep, version = arg.partition('/')
            if version:
                wanted['version'] = version
        else:
            return None
    return wanted


def status_lines(root, wanted=None):
    """dkms status's lines for the builds under ``root``/var/lib/dkms that match ``wanted``."""
    wanted = wanted or {}
    lines = []
    for module, version, kernel, arch in driver.dkms_builds(root):
        row = {'module': module, 'version': version, 'kernel': kernel, 'arch': arch}
        if any(row[key] != value for key, value in wanted.items()):
            continue
        if kernel is None:
            lines.append('%s/%s: added\n' % (module, version))
        else:
            lines.append('%s/%s, %s, %s: installed\n' % (module, version, kernel, arch))
    return lines


def run(ctx, args):
    """dkms: ``status`` (and ``--version``)."""
    if args == ['--version'] or args == ['-V']:
        ctx.write(VERSION + '\n')
        return 0
    if not args or args[0] != 'status':
        ctx.error('hwsim: dkms: only "dkms status" is simulated (lab/hwsim/hwsim/tools/dkms.py)\n')
        return 2
    wanted = _filters(args[1:])
    if wanted is None:
        ctx.error('Error! Unknown option in: dkms %s\n' % ' '.join(args))
        return 1
    ctx.write(''.join(status_lines(ctx.root, wanted)))
    return 0


def _kernels(root):
    prefix = os.path.join(root, 'boot', 'vmlinuz-')
    return sorted((path[len(prefix):] for path in glob.glob(prefix + '*')), key=driver.version_key)


def initramfs_content(root):
    """The marker's text: every modprobe.d file's lines but comments, as the initramfs would carry them."""
    files = {}
    for directory in reversed(MODPROBE_D):
        try:
            names = sorted(os.listdir(os.path.join(root, directory)))
        except OSError:
            names = []
        for name in names:
            if name.endswith('.conf'):
                files[name] = os.path.join(root, directory, name)
    lines = ['aicluster-lab stand-in initramfs\n']
    for name in sorted(files):
        with open(files[name], encoding='utf-8', errors='replace') as handle:
            lines.extend('modprobe.d/%s: %s\n' % (name, line.strip()) for line in handle
                         if line.strip() and not line.strip().startswith('#'))
    return ''.join(lines)


def run_update_initramfs(ctx, args):
    """update-initramfs -u|-c [-k VERSION|all]: a marker per kernel, initramfs-tools' line per kernel."""
    if not args or args[0] not in ('-u', '-c') or len(args) not in (1, 3) or (len(args) == 3 and args[1] != '-k'):
        ctx.error('Usage: update-initramfs {-c|-u} [-k version|all] (hwsim stand-in)\n')
        return 2
    installed = _kernels(ctx.root)
    if len(args) == 3 and args[2] == 'all':
        kernels = installed or [ctx.kernel]
    elif len(args) == 3:
        kernels = [args[2]]
    else:
        kernels = [installed[-1] if installed else ctx.kernel]
    content = initramfs_content(ctx.root)
    os.makedirs(os.path.join(ctx.root, 'boot'), exist_ok=True)
    for kernel in kernels:
        path = os.path.join(ctx.root, 'boot', 'initrd.img-%s' % kernel)
        with open(path + '.tmp', 'w', encoding='utf-8') as handle:
            handle.write(content)
        os.replace(path + '.tmp', path)
        ctx.write('update-initramfs: Generating /boot/initrd.img-%s\n' % kernel)
    return 0
