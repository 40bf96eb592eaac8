"""The lab mirror's 'hpc' repository: enroot, enroot+caps and nvslurm-plugin-pyxis stand-ins, and a test image.

Test equipment (lab/mirror/README.md, section "hpc"). NVIDIA publishes no apt repository for Enroot and Pyxis: a
site puts enroot's release .debs and its own pyxis build into its own repository (aicluster_bom.repositories.hpc).
The stand-ins have those packages' names, versions, dependencies and file layout:

- enroot: /usr/bin/enroot (a bash stand-in, files/hpc/enroot.sh: version, create with the real unsquashfs, list,
  remove, start, and `rootfs NAME`, an extension the lab's plugin uses), the helper names of the real package,
  /etc/enroot/{enroot.conf, environ.d, mounts.d, hooks.d} and the extra hooks under /usr/share/enroot/hooks.d;
- enroot+caps: depends on enroot (= V); its postinst grants the helpers their file capabilities (setcap);
- nvslurm-plugin-pyxis: /usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so, a real SPANK plugin of our own
  (files/hpc/spank_pyxis.c) compiled here, when the mirror is built, against this machine's Slurm headers
  (libslurm-dev), and /usr/share/pyxis/pyxis.conf, as pyxis's `make install` lays them out.

extra_files() returns the files served beside the repositories: images/aicluster-tiny.sqsh (a squashfs of
Debian's busybox-static with an /etc/os-release naming it, built with mksquashfs) and images/SHA256SUMS.

Building needs gcc, /usr/include/slurm/spank.h (libslurm-dev), mksquashfs (squashfs-tools) and /bin/busybox
(busybox-static): `make setup` installs them. Everything is byte-for-byte reproducible.
"""
import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = os.path.join(HERE, 'files')
REPO = 'hpc'
SOURCE_DATE_EPOCH = 1735689600

# enroot and enroot+caps at each version (enroot's GitHub releases: v3.4.1, v3.5.0).
ENROOT_VERSIONS = ['3.4.1-1', '3.5.0-1']
# nvslurm-plugin-pyxis at each version (pyxis's releases: v0.19.0, v0.20.0; the package name of its debian/).
PYXIS_VERSIONS = ['0.19.0-1', '0.20.0-1']

SPANK_H = '/usr/include/slurm/spank.h'
SLURM_VERSION_H = '/usr/include/slurm/slurm_version.h'
PLUGIN_DIR = '/usr/lib/x86_64-linux-gnu/slurm'
BUSYBOX = '/bin/busybox'
IMAGE_NAME = 'aicluster-tiny'
# The applets linked in the test image's /bin.
APPLETS = ('sh', 'ash', 'cat', 'ls', 'env', 'echo', 'id', 'pwd', 'true', 'false', 'test', 'grep', 'head', 'tail',
           'wc', 'sleep', 'hostname', 'uname', 'mount', 'ps', 'printenv', 'mkdir', 'rm', 'touch', 'stat', 'df',
           'nproc', 'sort', 'tr', 'cut', 'sed', 'awk', 'date', 'readlink', 'whoami')

# The real package's hooks: in /etc/enroot/hooks.d (run for every container) and the extra ones a site enables by
# linking them from /usr/share/enroot/hooks.d (enroot's Makefile: HOOKS and HOOKS_EXTRA).
HOOKS = ('10-aptfix.sh', '10-cgroups.sh', '10-devices.sh', '10-home.sh', '10-localtime.sh', '10-shadow.sh',
         '98-nvidia.sh', '99-mellanox.sh')
HOOKS_EXTRA = ('50-slurm-pmi.sh', '50-slurm-pytorch.sh', '50-mig-config.sh', '50-sharp.sh')
# The helpers the real package installs in /usr/bin, and the file capabilities enroot+caps grants.
HELPERS = ('enroot-aufs2ovlfs', 'enroot-mksquashovlfs', 'enroot-mount', 'enroot-switchroot', 'enroot-nsenter',
           'enroot-makeself')
CAPS = (('enroot-mksquashovlfs', 'cap_sys_admin+pe'), ('enroot-aufs2ovlfs', 'cap_sys_admin,cap_mknod+pe'))

ENROOT_CONF = '''\
# enroot.conf of the aicluster lab stand-in (the real file's settings, all commented: enroot's defaults).
#ENROOT_LIBRARY_PATH        /usr/lib/enroot
#ENROOT_SYSCONF_PATH        /etc/enroot
#ENROOT_RUNTIME_PATH        ${XDG_RUNTIME_DIR}/enroot
#ENROOT_CONFIG_PATH         ${XDG_CONFIG_HOME}/enroot
#ENROOT_CACHE_PATH          ${XDG_CACHE_HOME}/enroot
#ENROOT_DATA_PATH           ${XDG_DATA_HOME}/enroot
#ENROOT_TEMP_PATH           ${TMPDIR:-/tmp}
#ENROOT_SQUASH_OPTIONS      -comp lzo -noD
#ENROOT_ROOTFS_WRITABLE     no
#ENROOT_REMAP_ROOT          no
#ENROOT_MAX_PROCESSORS      $(nproc)
#ENROOT_MOUNT_HOME          no
#ENROOT_RESTRICT_DEV        no
'''


def upstream(version):
    return version.rsplit('-', 1)[0]


def _require(path, package):
    if not os.path.exists(path):
        raise RuntimeError('lab mirror (hpc): %s is missing; install %s (`make setup` does: apt-get install %s)'
                           % (path, package, package))


def _run(argv, cwd=None, epoch=True):
    env = dict(os.environ, LC_ALL='C')
    env.pop('SOURCE_DATE_EPOCH', None)
    if epoch:
        env['SOURCE_DATE_EPOCH'] = str(SOURCE_DATE_EPOCH)
    result = subprocess.run(argv, cwd=cwd, env=env, check=False, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError('%s failed (rc=%d): %s%s'
                           % (' '.join(argv), result.returncode, result.stdout, result.stderr))
    return result.stdout


def slurm_headers_version():
    """(major, minor, micro) of the Slurm headers the plugin is compiled against."""
    _require(SLURM_VERSION_H, 'libslurm-dev')
    with open(SLURM_VERSION_H, encoding='utf-8') as handle:
        match = re.search(r'#define\s+SLURM_VERSION_NUMBER\s+0x([0-9a-fA-F]+)', handle.read())
    number = int(match.group(1), 16)
    return (number >> 16) & 0xff, (number >> 8) & 0xff, number & 0xff


def _source(name, **values):
    with open(os.path.join(FILES, 'hpc', name), encoding='utf-8') as handle:
        text = handle.read()
    for key, value in values.items():
        text = text.replace('@%s@' % key.upper(), str(value))
    return text


@functools.lru_cache(maxsize=None)
def build_plugin(version):
    """spank_pyxis.so for a pyxis version: gcc against this machine's <slurm/spank.h>, stripped, reproducible.

    Compiled in a temporary directory under a fixed relative name, without debug information, with a build id
    computed from the contents: the same source and compiler give the same bytes.
    """
    _require(SPANK_H, 'libslurm-dev')
    if not shutil.which('gcc'):
        raise RuntimeError('lab mirror (hpc): gcc is missing; install gcc')
    source = _source('spank_pyxis.c', version=version)
    work = tempfile.mkdtemp(prefix='aicluster-pyxis-')
    try:
        with open(os.path.join(work, 'spank_pyxis.c'), 'w', encoding='utf-8') as handle:
            handle.write(source)
        _run(['gcc', '-std=gnu11', '-O2', '-Wall', '-Wextra', '-Werror', '-fPIC', '-shared',
              '-fstack-protector-strong', '-D_FORTIFY_SOURCE=2', '-DPYXIS_VERSION="%s"' % upstream(version),
              '-ffile-prefix-map=%s=.' % work, '-Wl,-z,relro', '-Wl,-z,now', '-Wl,-z,noexecstack',
              '-Wl,--build-id=sha1', '-o', 'spank_pyxis.so', 'spank_pyxis.c'], cwd=work)
        _run(['strip', '--strip-unneeded', '-R', '.comment', 'spank_pyxis.so'], cwd=work)
        with open(os.path.join(work, 'spank_pyxis.so'), 'rb') as handle:
            return handle.read()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _stub(kind, name, version):
    return ('#!/bin/sh\n# %s %s of enroot %s: aicluster lab stand-in (lab/mirror/hpc_packages.py). The real one is '
            'NVIDIA\'s;\n# the stand-in runs no hooks and no helper.\nexit 0\n' % (kind, name, version)).encode()


def enroot_packages(package, template, version):
    up = upstream(version)
    files = {
        '/usr/bin/enroot': (0o755, template('hpc/enroot.sh', package='enroot', version=version, upstream=up,
                                            sysconf='/etc/enroot')),
        '/etc/enroot/enroot.conf': (0o644, ENROOT_CONF.encode()),
        '/etc/enroot/enroot.conf.d/README': (0o644, b'Files named *.conf here are read after enroot.conf.\n'),
        '/etc/enroot/environ.d/10-terminal.env': (0o644, b'TERM\nLANG\nLC_ALL\n'),
        '/etc/enroot/mounts.d/10-system.fstab': (0o644, (
            b'/etc/hosts /etc/hosts none x-create=file,bind,ro,nosuid,nodev,noexec,private\n'
            b'/etc/resolv.conf /etc/resolv.conf none x-create=file,bind,ro,nosuid,nodev,noexec,private\n')),
        '/etc/enroot/mounts.d/20-config.fstab': (0o644, (
            b'${ENROOT_CONFIG_PATH}/environ.d /etc/enroot/environ.d none x-create=dir,bind,ro,nosuid,nodev,noexec,'
            b'private,nofail,silent\n')),
        '/usr/share/enroot/mounts.d/30-lxcfs.fstab': (0o644, b'/var/lib/lxcfs/proc/meminfo /proc/meminfo none '
                                                             b'x-create=file,bind,ro,nosuid,nodev,noexec,private,nofail\n'),
        '/usr/lib/enroot/common.sh': (0o644, b'# enroot library stand-in (aicluster lab)\n'),
    }
    for name in HOOKS:
        files['/etc/enroot/hooks.d/' + name] = (0o755, _stub('hook', name, up))
    for name in HOOKS_EXTRA:
        files['/usr/share/enroot/hooks.d/' + name] = (0o755, _stub('hook', name, up))
    for name in HELPERS:
        files['/usr/bin/' + name] = (0o755, _stub('helper', name, up))
    caps_postinst = ('#!/bin/sh\n# postinst of enroot+caps %s: aicluster lab stand-in. Grants the helpers their file '
                     'capabilities as the real one does;\n# a file system without them (some container overlays) '
                     'gets a warning, not a failed install.\nset -e\nif [ "$1" = configure ]; then\n' % version
                     + ''.join('  setcap %s /usr/bin/%s 2>/dev/null || echo "enroot+caps: setcap %s /usr/bin/%s '
                               'failed" >&2\n' % (caps, name, caps, name) for name, caps in CAPS)
                     + 'fi\nexit 0\n')
    caps_prerm = ('#!/bin/sh\n# prerm of enroot+caps %s: aicluster lab stand-in; drops the file capabilities.\n'
                  'set -e\nif [ "$1" = remove ]; then\n' % version
                  + ''.join('  setcap -r /usr/bin/%s 2>/dev/null || true\n' % name for name, _caps in CAPS)
                  + 'fi\nexit 0\n')
    return [
        package(REPO, 'enroot', version, 'Unprivileged container sandboxing utility', section='utils',
                depends=['bash (>= 4.2)', 'squashfs-tools', 'util-linux'], files=files,
                conffiles=sorted(path for path in files if path.startswith('/etc/'))),
        package(REPO, 'enroot+caps', version, 'Unprivileged container sandboxing utility (extra capabilities)',
                section='utils', depends=['enroot (= %s)' % version, 'libcap2-bin'],
                scripts={'postinst': caps_postinst.encode(), 'prerm': caps_prerm.encode()}),
    ]


def pyxis_package(package, version):
    major, minor, _micro = slurm_headers_version()
    plugin = '%s/spank_pyxis.so' % PLUGIN_DIR
    return package(
        REPO, 'nvslurm-plugin-pyxis', version,
        'Slurm plugin for launching containerized tasks (built against Slurm %d.%02d)' % (major, minor),
        section='admin', depends=['enroot (>= 3.1.0)'],
        files={plugin: (0o644, build_plugin(version)),
               '/usr/share/pyxis/pyxis.conf': (0o644, ('required %s\n' % plugin).encode())})


def packages(package, template):
    pkgs = []
    for version in ENROOT_VERSIONS:
        pkgs += enroot_packages(package, template, version)
    for version in PYXIS_VERSIONS:
        pkgs.append(pyxis_package(package, version))
    return pkgs


# ------------------------------------------------------------------ the test image
def _image_tree(root):
    """A busybox root file system: /bin/busybox and its applet links, /etc/os-release naming the image."""
    _require(BUSYBOX, 'busybox-static')
    for name in ('bin', 'etc', 'dev', 'proc', 'sys', 'tmp', 'root', 'workspace', 'usr', 'usr/bin'):
        os.makedirs(os.path.join(root, name), exist_ok=True)
    shutil.copyfile(BUSYBOX, os.path.join(root, 'bin', 'busybox'))
    os.chmod(os.path.join(root, 'bin', 'busybox'), 0o755)
    for applet in APPLETS:
        os.symlink('busybox', os.path.join(root, 'bin', applet))
    os.symlink('../../bin/env', os.path.join(root, 'usr', 'bin', 'env'))
    files = {
        'etc/os-release': ('NAME="aicluster tiny"\nID=aicluster-tiny\nVERSION_ID="1"\n'
                           'PRETTY_NAME="aicluster tiny test image (Debian busybox-static)"\n'),
        'etc/passwd': 'root:x:0:0:root:/root:/bin/sh\n',
        'etc/group': 'root:x:0:\n',
        'etc/hosts': '127.0.0.1 localhost\n',
        'etc/resolv.conf': '',
    }
    for path, text in files.items():
        with open(os.path.join(root, path), 'w', encoding='utf-8') as handle:
            handle.write(text)
        os.chmod(os.path.join(root, path), 0o644)
    for dirpath, dirnames, _names in os.walk(root):
        for name in dirnames:
            os.chmod(os.path.join(dirpath, name), 0o755)
    os.chmod(root, 0o755)
    os.chmod(os.path.join(root, 'tmp'), 0o1777)


@functools.lru_cache(maxsize=None)
def build_image():
    """The test image's bytes: mksquashfs with fixed times, root-owned, no xattrs, one processor (reproducible)."""
    if not shutil.which('mksquashfs'):
        raise RuntimeError('lab mirror (hpc): mksquashfs is missing; install squashfs-tools')
    work = tempfile.mkdtemp(prefix='aicluster-image-')
    try:
        root = os.path.join(work, 'rootfs')
        os.makedirs(root)
        _image_tree(root)
        out = os.path.join(work, IMAGE_NAME + '.sqsh')
        _run(['mksquashfs', root, out, '-noappend', '-all-root', '-no-xattrs', '-comp', 'gzip', '-processors', '1',
              '-mkfs-time', str(SOURCE_DATE_EPOCH), '-all-time', str(SOURCE_DATE_EPOCH), '-quiet', '-no-progress'],
             epoch=False)  # mksquashfs refuses SOURCE_DATE_EPOCH together with the time options
        with open(out, 'rb') as handle:
            return handle.read()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def extra_files():
    """Files served beside the repositories, {path relative to the mirror's root: bytes}."""
    image = build_image()
    name = IMAGE_NAME + '.sqsh'
    return {
        'images/' + name: image,
        'images/SHA256SUMS': ('%s  %s\n' % (hashlib.sha256(image).hexdigest(), name)).encode(),
    }
