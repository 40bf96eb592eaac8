"""Build the lab's signed package mirror (test equipment; lab/mirror/README.md).

Stand-in .deb packages with the real names, versions and dependency structure
of the NVIDIA CUDA and DOCA repositories, in two flat apt repositories (cuda/,
doca/: Packages, Packages.gz, Release, InRelease, Release.gpg) signed with a
throwaway key whose public half is aicluster-lab.asc. lab/mirror/install.yml
serves the tree from ctl01; the collection's roles never install it anywhere
else.

    build.py [build] [--out DIR] [--force]
                        build the tree and print its path; without --out it is
                        cached as lab/.state/mirror-<hash> (the hash covers
                        the *.py files here, lab/mirror/files/ and the
                        repository snapshot lab/mirror/snapshot/), so an
                        unchanged recipe builds nothing
    build.py pack TREE OUT.tar
                        a reproducible tar of a built tree (what install.yml copies)
    build.py hash       the recipe hash

Python 3.11 standard library and PyYAML (for snapshot/*.yml), dpkg-deb and gpg. The .deb files and the
Packages indexes are byte-for-byte reproducible (fixed mtimes through
SOURCE_DATE_EPOCH, sorted names, root:root); the key, the signatures and the
Release files' Date are made at build time, the Date so that apt's
If-Modified-Since sees a rebuilt index as new.
"""
import argparse
import gzip
import hashlib
import importlib.util
import io
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = os.path.join(HERE, 'files')
STATE = os.path.join(os.path.dirname(HERE), '.state')
# The packages' file mtimes (dpkg-deb clamps to it): 2025-01-01T00:00:00Z.
SOURCE_DATE_EPOCH = 1735689600
MAINTAINER = 'aicluster lab mirror <lab-mirror@aicluster.invalid>'
KEY_UID = 'aicluster lab mirror (throwaway test key) <lab-mirror@aicluster.invalid>'
KEY_FILE = 'aicluster-lab.asc'
ARCH = 'amd64'
# Where the stand-in daemons read the loaded driver version when the variable is unset (hwsim, then the kernel's).
MODULE_VERSION_ENV = 'AICLUSTER_LAB_MODULE_VERSION_FILE'

# ------------------------------------------------------------------ the package definitions
# The driver side (driver, NVML, both DKMS flavours, fabric manager, IMEX, NSCQ, NVSDM, cuda-drivers) and DOCA-OFED
# come from the repository snapshot (snapshot/*.yml: real names, versions, Provides, Depends, each with its source);
# nothing of them is named here. The toolkit and the `cuda` metapackage are below.
SNAPSHOT = os.path.join(HERE, 'snapshot')
# (toolkit package, version, the nvcc compiler version of that release)
CUDA_TOOLKITS = [
    ('cuda-toolkit-12-9', '12.9.0-1', '12.9.41'),
    ('cuda-toolkit-12-9', '12.9.1-1', '12.9.86'),
]
# (`cuda` metapackage version, the toolkit package it depends on): it also Depends on cuda-drivers, the trap.
CUDA_METAPACKAGES = [
    ('12.9.1-1', 'cuda-toolkit-12-9'),
]

NVIDIA_KOS = 'nvidia nvidia-modeset nvidia-drm nvidia-peermem nvidia-uvm'
MLNX_KOS = 'mlx_compat ib_core ib_uverbs rdma_cm mlx5_core mlx5_ib'
FM_MISMATCH = ("fabric manager NVIDIA GPU driver interface version {upstream} don't match with driver version "
               "{loaded}. Please update with matching NVIDIA driver package.")
IMEX_MISMATCH = ("IMEX NVIDIA GPU driver interface version {upstream} don't match with driver version "
                 "{loaded}. Please update with matching NVIDIA driver package.")


def upstream(version):
    """The upstream part of a Debian version: 580.95.05-1 -> 580.95.05."""
    return version.rsplit('-', 1)[0]


def branch(version):
    return version.split('.', 1)[0]


def ofed_release(kernel_version):
    """ofed_info's release from an mlnx-ofed-kernel version: 24.10.OFED.24.10.1.1.4.1-1 -> 24.10-1.1.4."""
    fields = upstream(kernel_version).split('OFED.', 1)[1].split('.')
    return '%s.%s-%s' % (fields[0], fields[1], '.'.join(fields[2:5]))


# ------------------------------------------------------------------ package specs
def package(repo, name, version, description, depends=None, conflicts=None, provides=None, section='non-free/misc',
            files=None, scripts=None, conffiles=None, triggers=None):
    """One package: control fields plus its files {path: (mode, bytes) | ('link', target)}."""
    files = dict(files or {})
    files['/usr/share/doc/%s/README.aicluster-lab' % name] = (0o644, (
        '%s %s is a stand-in built by aicluster.infra lab/mirror/build.py for the container lab.\n'
        'It has the real package name, version and dependencies; it holds no NVIDIA or NVIDIA Networking code.\n'
        % (name, version)).encode())
    return {'repo': repo, 'name': name, 'version': version, 'description': description, 'section': section,
            'depends': depends or [], 'conflicts': conflicts or [], 'provides': provides or [],
            'files': files, 'scripts': scripts or {}, 'conffiles': conffiles or [], 'triggers': triggers}


def template(name, **values):
    with open(os.path.join(FILES, name), encoding='utf-8') as handle:
        text = handle.read()
    for key, value in values.items():
        if re.search(r'["\\\n]', str(value)):
            raise ValueError('template value for %s must not hold a quote, backslash or newline' % key)
        text = text.replace('@%s@' % key.upper(), str(value))
    left = re.findall(r'@[A-Z_]+@', text)
    if left:
        raise ValueError('%s: no value for %s' % (name, ', '.join(sorted(set(left)))))
    return text.encode()


def elf_library(soname, marker):
    """A minimal x86-64 ELF shared object with a DT_SONAME (so ldconfig treats it as a library, silently).

    One read-only PT_LOAD over the whole file and a PT_DYNAMIC; file offsets and addresses are equal.
    """
    strtab = b'\0' + soname.encode() + b'\0' + marker.encode() + b'\0'
    symtab = b'\0' * 24                                       # the null symbol
    hashtab = struct.pack('<4I', 1, 1, 0, 0)                  # nbucket, nchain, bucket[0], chain[0]
    ehdr_size, phdr_size = 64, 56
    sym_off = ehdr_size + 2 * phdr_size
    hash_off = sym_off + len(symtab)
    str_off = hash_off + len(hashtab)
    dyn_off = (str_off + len(strtab) + 7) // 8 * 8
    dynamic = [(14, 1), (4, hash_off), (5, str_off), (6, sym_off), (10, len(strtab)), (11, 24), (0, 0)]
    dyn = b''.join(struct.pack('<qQ', tag, value) for tag, value in dynamic)
    size = dyn_off + len(dyn)
    ident = b'\x7fELF' + bytes([2, 1, 1, 0]) + b'\0' * 8
    ehdr = struct.pack('<16sHHIQQQIHHHHHH', ident, 3, 62, 1, 0, ehdr_size, 0, 0, ehdr_size, phdr_size, 2, 64, 0, 0)
    load = struct.pack('<IIQQQQQQ', 1, 4, 0, 0, 0, size, size, 0x1000)
    dynamic_ph = struct.pack('<IIQQQQQQ', 2, 4, dyn_off, dyn_off, dyn_off, len(dyn), len(dyn), 8)
    body = ehdr + load + dynamic_ph + symtab + hashtab + strtab
    return body + b'\0' * (dyn_off - len(body)) + dyn


def _unit(description, program, config, pid_file):
    return ('[Unit]\n'
            'Description=%s\n'
            'Wants=network-online.target\n'
            'After=network-online.target\n'
            '\n'
            '[Service]\n'
            'User=root\n'
            'PrivateTmp=false\n'
            'Type=forking\n'
            'TimeoutStartSec=240\n'
            'ExecStart=/usr/bin/%s -c %s\n'
            'PIDFile=%s\n'
            'LimitCORE=infinity\n'
            '\n'
            '[Install]\n'
            'WantedBy=multi-user.target\n' % (description, program, config, pid_file)).encode()


def _daemon(name, version, program, version_line, mismatch, config, log, pid_file):
    # The template has no shebang of its own (the collection's sanity tests allow only `env python` ones).
    body = template('nv-daemon.py', package=name, version=version, program=program, upstream=upstream(version),
                    version_line=version_line, mismatch=mismatch, config=config, log=log, pid_file=pid_file)
    return b'#!/usr/bin/python3\n' + body


def load_snapshot(name):
    """One repository's snapshot (snapshot/NAME.yml) as a dict."""
    import yaml  # PyYAML: the controller's Ansible brings it; imported here so the rest stays standard library
    with open(os.path.join(SNAPSHOT, name + '.yml'), encoding='utf-8') as handle:
        return yaml.safe_load(handle)


def snapshot_entries(snapshot):
    """Every package version a CUDA snapshot lists, as dicts: name, version, upstream, branch, component, flavour,
    depends, provides, conflicts (``{upstream}`` filled in). Packages with a version of their own (``pinned:
    false``, no revision) are built at their ``versions``, and left out where the snapshot records none."""
    entries = []
    for branch_name, branch_data in sorted(snapshot.get('branches', {}).items()):
        for spec in branch_data['packages']:
            if 'revision' in spec:
                versions = ['%s-%s' % (up, spec['revision']) for up in spec.get('upstream') or branch_data['upstream']]
            else:
                # a version of its own (nvlsm): the snapshot's ``versions``, when it records any
                versions = list(spec.get('versions') or [])
            for version in versions:
                up = upstream(version)
                entries.append({
                    'name': spec['name'], 'version': version, 'upstream': up,
                    'branch': str(branch_name), 'component': spec['component'], 'flavour': spec.get('flavour'),
                    'depends': [item.replace('{upstream}', up) for item in spec.get('depends') or []],
                    'provides': [item.replace('{upstream}', up) for item in spec.get('provides') or []],
                    'conflicts': [item.replace('{upstream}', up) for item in spec.get('conflicts') or []]})
    return entries


def _nvml(entry):
    lib = '/usr/lib/x86_64-linux-gnu/libnvidia-ml.so'
    up = entry['upstream']
    return {'%s.%s' % (lib, up): (0o644, elf_library('libnvidia-ml.so.1', 'NVML stand-in %s' % up)),
            '%s.1' % lib: ('link', 'libnvidia-ml.so.%s' % up)}


def _dkms(repo, entry, flavour):
    name, version, up = entry['name'], entry['version'], entry['upstream']
    values = {'package': name, 'version': version, 'module': 'nvidia', 'upstream': up}
    dkms_conf = ('PACKAGE_NAME="nvidia"\nPACKAGE_VERSION="%s"\nAUTOINSTALL="yes"\n' % up
                 + ''.join('BUILT_MODULE_NAME[%d]="%s"\nDEST_MODULE_LOCATION[%d]="/updates/dkms"\n' % (i, ko, i)
                           for i, ko in enumerate(NVIDIA_KOS.split())))
    return package(
        repo, name, version, 'NVIDIA binary kernel module DKMS source (%s flavour)' % flavour,
        section='non-free/kernel', conflicts=entry['conflicts'], provides=entry['provides'],
        files={'/usr/src/nvidia-%s/dkms.conf' % up: (0o644, dkms_conf.encode())},
        scripts={'postinst': template('dkms-postinst.sh', flavour=flavour, kos=NVIDIA_KOS, **values),
                 'prerm': template('dkms-prerm.sh', **values)})


def _fabricmanager(repo, entry):
    name, version, up = entry['name'], entry['version'], entry['upstream']
    config, pid = '/usr/share/nvidia/nvswitch/fabricmanager.cfg', '/run/nvidia-fabricmanager/nv-fabricmanager.pid'
    values = {'package': name, 'version': version, 'unit': 'nvidia-fabricmanager.service'}
    daemon = _daemon(name, version, 'nv-fabricmanager', 'Fabric Manager version is : %s' % up, FM_MISMATCH,
                     config, '/var/log/fabricmanager.log', pid)
    return package(
        repo, name, version, 'Fabric Manager for NVSwitch based systems', section='non-free/utils',
        provides=entry['provides'], depends=entry['depends'], conflicts=entry['conflicts'],
        files={'/usr/bin/nv-fabricmanager': (0o755, daemon),
               '/lib/systemd/system/nvidia-fabricmanager.service': (0o644, _unit(
                   'NVIDIA fabric manager service', 'nv-fabricmanager', config, pid)),
               config: (0o644, b'LOG_LEVEL=4\nLOG_FILE_NAME=/var/log/fabricmanager.log\nLOG_APPEND_TO_LOG=1\n'
                               b'DAEMONIZE=1\nBIND_INTERFACE_IP=127.0.0.1\nSTARTING_TCP_PORT=16000\n'
                               b'FABRIC_MODE=0\nFM_STAY_RESIDENT_ON_FAILURES=0\n')},
        scripts={'postinst': template('service-postinst.sh', **values),
                 'prerm': template('service-prerm.sh', **values)})


def _imex(repo, entry):
    name, version, up = entry['name'], entry['version'], entry['upstream']
    config, pid = '/etc/nvidia-imex/config.cfg', '/run/nvidia-imex/nvidia-imex.pid'
    values = {'package': name, 'version': version, 'unit': 'nvidia-imex.service'}
    daemon = _daemon(name, version, 'nvidia-imex', 'IMEX version is: %s' % up, IMEX_MISMATCH, config,
                     '/var/log/nvidia-imex.log', pid)
    return package(
        repo, name, version, 'NVIDIA IMEX service for multi-node NVLink memory export', section='non-free/utils',
        provides=entry['provides'], depends=entry['depends'], conflicts=entry['conflicts'],
        conffiles=[config, '/etc/nvidia-imex/nodes_config.cfg'],
        files={'/usr/bin/nvidia-imex': (0o755, daemon),
               '/lib/systemd/system/nvidia-imex.service': (0o644, _unit('NVIDIA IMEX service', 'nvidia-imex', config,
                                                                        pid)),
               config: (0o644, b'LOG_LEVEL=4\nLOG_FILE_NAME=/var/log/nvidia-imex.log\nLOG_APPEND_TO_LOG=1\n'
                               b'DAEMONIZE=1\nSERVER_PORT=50000\n'
                               b'IMEX_NODE_CONFIG_FILE=/etc/nvidia-imex/nodes_config.cfg\n'),
               '/etc/nvidia-imex/nodes_config.cfg': (0o644, b'')},
        scripts={'postinst': template('service-postinst.sh', **values),
                 'prerm': template('service-prerm.sh', **values)})


# component -> (description, section) of the stand-ins that are only their control fields
PLAIN = {
    'driver': ('NVIDIA metapackage', 'non-free/misc'),
    'nscq': ('NVSwitch configuration and query library (NSCQ)', 'non-free/libs'),
    'nvsdm': ('NVSwitch device monitoring library (NVSDM)', 'non-free/libs'),
    'nvlsm': ('NVLink subnet manager (NVLSM) for NVLink 5 switch trays', 'non-free/utils'),
    'cuda-drivers': ('CUDA Driver meta-package', 'non-free/misc'),
}


def snapshot_package(repo, entry):
    """The stand-in of one snapshot entry, by its component: the behaviours lab/mirror/README.md describes."""
    component = entry['component']
    if component in ('kernel_modules_open', 'kernel_modules_proprietary'):
        return _dkms(repo, entry, component.rsplit('_', 1)[1])
    if component == 'fabricmanager':
        return _fabricmanager(repo, entry)
    if component == 'imex':
        return _imex(repo, entry)
    if component == 'libraries':
        return package(repo, entry['name'], entry['version'], 'NVIDIA Management Library (NVML) runtime library',
                       section='non-free/libs', triggers='activate-noawait ldconfig\n', files=_nvml(entry),
                       depends=entry['depends'], provides=entry['provides'], conflicts=entry['conflicts'])
    if component not in PLAIN:
        raise ValueError('snapshot: %s %s: no stand-in for component %r' % (entry['name'], entry['version'], component))
    description, section = PLAIN[component]
    return package(repo, entry['name'], entry['version'], description, section=section, depends=entry['depends'],
                   provides=entry['provides'], conflicts=entry['conflicts'])


def snapshot_repositories():
    """The snapshots the lab serves: [(repo, snapshot)] for every snapshot/*.yml with a ``lab:`` repository."""
    found = []
    for name in sorted(os.listdir(SNAPSHOT)):
        if name.endswith('.yml'):
            data = load_snapshot(name[:-4])
            if data.get('lab'):
                found.append((data['lab'], data))
    return found


def toolkit_package(name, version, nvcc):
    release = '.'.join(upstream(version).split('.')[:2])
    root = '/usr/local/cuda-%s' % release
    version_json = json.dumps({'cuda': {'name': 'CUDA SDK', 'version': upstream(version)},
                               'cuda_nvcc': {'name': 'CUDA NVCC', 'version': nvcc}}, indent=3, sort_keys=True)
    return package('cuda', name, version, 'CUDA Toolkit %s meta-package' % release, section='multiverse/devel',
                   files={root + '/bin/nvcc': (0o755, template('nvcc.sh', package=name, version=version,
                                                               release=release, nvcc=nvcc)),
                          root + '/version.json': (0o644, (version_json + '\n').encode())})


def cuda_metapackage(version, toolkit):
    return package('cuda', 'cuda', version, 'CUDA meta-package (toolkit and driver)', section='multiverse/devel',
                   depends=['%s (>= %s)' % (toolkit, version), 'cuda-drivers'])


def doca_packages(repo, doca_version, kernel_version):
    kup = upstream(kernel_version)
    values = {'version': kernel_version, 'module': 'mlnx-ofed-kernel', 'upstream': kup}
    dkms_conf = ('PACKAGE_NAME="mlnx-ofed-kernel"\nPACKAGE_VERSION="%s"\nAUTOINSTALL="yes"\n' % kup).encode()
    return [
        package(repo, 'doca-ofed', doca_version, 'DOCA-OFED meta-package (DOCA %s)' % upstream(doca_version),
                depends=['mlnx-ofed-kernel-dkms (= %s)' % kernel_version,
                         'mlnx-ofed-kernel-utils (= %s)' % kernel_version]),
        package(repo, 'mlnx-ofed-kernel-dkms', kernel_version, 'DKMS support for mlnx-ofed kernel modules',
                section='kernel', files={'/usr/src/mlnx-ofed-kernel-%s/dkms.conf' % kup: (0o644, dkms_conf)},
                scripts={'postinst': template('dkms-postinst.sh', package='mlnx-ofed-kernel-dkms', flavour='mlnx',
                                              kos=MLNX_KOS, **values),
                         'prerm': template('dkms-prerm.sh', package='mlnx-ofed-kernel-dkms', **values)}),
        package(repo, 'mlnx-ofed-kernel-utils', kernel_version, 'Userspace tools to restart and tune mlnx-ofed kernel modules',
                section='net', files={'/usr/bin/ofed_info': (0o755, template(
                    'ofed_info.sh', package='mlnx-ofed-kernel-utils', version=kernel_version,
                    ofed=ofed_release(kernel_version)))}),
    ]


# Software stack II's stand-ins, one module each beside this file, each with ``packages(package, template)``
# returning package specs made with the two helpers above (the recipe hash covers them).
EXTENSIONS = ('dcgm_packages', 'toolkit_packages', 'hpc_packages')


def _extension(name):
    path = os.path.join(HERE, name + '.py')
    spec = importlib.util.spec_from_file_location('aicluster_lab_mirror_' + name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def extra_files():
    """Files the mirror serves beside its repositories ({relative path: bytes}), from the extensions' extra_files()."""
    files = {}
    for name in EXTENSIONS:
        if os.path.exists(os.path.join(HERE, name + '.py')):
            module = _extension(name)
            if hasattr(module, 'extra_files'):
                for path, body in module.extra_files().items():
                    if os.path.isabs(path) or '..' in path.split('/') or path in files:
                        raise ValueError('%s: bad or duplicate extra file path %r' % (name, path))
                    files[path] = body
    return files


def all_packages():
    pkgs = []
    for name in EXTENSIONS:
        if os.path.exists(os.path.join(HERE, name + '.py')):
            pkgs += _extension(name).packages(package, template)
    for repo, snapshot in snapshot_repositories():
        if 'releases' in snapshot:  # DOCA: doca-ofed and its exact kernel pair, per release
            pkgs += [spec for row in snapshot['releases'] for spec in doca_packages(repo, row['doca'], row['kernel'])]
        else:
            pkgs += [snapshot_package(repo, entry) for entry in snapshot_entries(snapshot)]
    pkgs += [toolkit_package(*row) for row in CUDA_TOOLKITS]
    pkgs += [cuda_metapackage(*row) for row in CUDA_METAPACKAGES]
    return sorted(pkgs, key=lambda p: (p['repo'], p['name'], p['version']))


# ------------------------------------------------------------------ building
def run(argv, **kwargs):
    result = subprocess.run(argv, check=False, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise RuntimeError('%s failed (rc=%d): %s%s'
                           % (' '.join(argv), result.returncode, result.stdout, result.stderr))
    return result.stdout


def control_fields(pkg):
    """The control paragraph's fields, in order (Description last)."""
    installed = sum((len(body) + 1023) // 1024 for mode, body in pkg['files'].values() if mode != 'link')
    fields = [('Package', pkg['name']), ('Version', pkg['version']), ('Architecture', ARCH),
              ('Maintainer', MAINTAINER), ('Installed-Size', str(max(installed, 1)))]
    for key in ('provides', 'depends', 'conflicts'):
        if pkg[key]:
            fields.append((key.capitalize(), ', '.join(pkg[key])))
    fields += [('Section', pkg['section']), ('Priority', 'optional'),
               ('Description', '%s (aicluster lab stand-in)\n Built by aicluster.infra lab/mirror/build.py: the real '
                               'package name, version and dependencies,\n with stand-in files for the container lab.'
                % pkg['description'])]
    return fields


def _write(path, mode, body):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'wb') as handle:
        handle.write(body)
    os.chmod(path, mode)


def build_deb(pkg, workdir, outdir):
    stage = os.path.join(workdir, '%s_%s' % (pkg['name'], pkg['version']))
    os.makedirs(os.path.join(stage, 'DEBIAN'))
    for path, (mode, body) in pkg['files'].items():
        target = stage + path
        if mode == 'link':
            os.makedirs(os.path.dirname(target), exist_ok=True)
            os.symlink(body, target)
        else:
            _write(target, mode, body)
    control = ''.join('%s: %s\n' % field for field in control_fields(pkg))
    _write(os.path.join(stage, 'DEBIAN', 'control'), 0o644, control.encode())
    for script, body in pkg['scripts'].items():
        _write(os.path.join(stage, 'DEBIAN', script), 0o755, body)
    if pkg['conffiles']:
        _write(os.path.join(stage, 'DEBIAN', 'conffiles'), 0o644, ''.join(c + '\n' for c in pkg['conffiles']).encode())
    if pkg['triggers']:
        _write(os.path.join(stage, 'DEBIAN', 'triggers'), 0o644, pkg['triggers'].encode())
    for root, dirs, _files in os.walk(stage):
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o755)
    # as in Debian's pools, the file name leaves the epoch out (DCGM's 1:4.4.1-1 is ..._4.4.1-1_amd64.deb)
    filename = '%s_%s_%s.deb' % (pkg['name'], pkg['version'].split(':', 1)[-1], ARCH)
    env = dict(os.environ, SOURCE_DATE_EPOCH=str(SOURCE_DATE_EPOCH))
    run(['dpkg-deb', '--root-owner-group', '-Zxz', '--build', stage, os.path.join(outdir, filename)], env=env)
    return filename, control


def packages_index(entries):
    """The Packages file: each control paragraph with Filename, Size and checksums before the Description."""
    paragraphs = []
    for filename, control, data in entries:
        head, description = control.split('Description: ', 1)
        paragraphs.append('%sFilename: ./%s\nSize: %d\nMD5sum: %s\nSHA256: %s\nDescription: %s' % (
            head, filename, len(data), hashlib.md5(data).hexdigest(), hashlib.sha256(data).hexdigest(), description))
    return '\n'.join(paragraphs).encode()


def release_text(repo, files, now):
    lines = ['Origin: aicluster-lab', 'Label: aicluster lab %s mirror' % repo, 'Suite: aicluster-lab',
             'Codename: aicluster-lab', 'Date: %s' % time.strftime('%a, %d %b %Y %H:%M:%S UTC', time.gmtime(now)),
             'Architectures: %s' % ARCH,
             'Description: aicluster lab stand-in of the %s repository (test equipment, lab/mirror)' % repo]
    for field, algo in (('MD5Sum', hashlib.md5), ('SHA256', hashlib.sha256)):
        lines.append('%s:' % field)
        lines += [' %s %8d %s' % (algo(data).hexdigest(), len(data), name) for name, data in files]
    return ('\n'.join(lines) + '\n').encode()


class ThrowawayKey:
    """A signing key in a temporary GNUPGHOME, removed (agent included) on exit."""

    def __init__(self):
        self.home = tempfile.mkdtemp(prefix='aicluster-mirror-gpg-')
        self.env = dict(os.environ, GNUPGHOME=self.home, LC_ALL='C')
        self.fingerprint = None

    def __enter__(self):
        self.gpg('--quick-gen-key', KEY_UID, 'default', 'default', 'never')
        listing = self.gpg('--with-colons', '--list-secret-keys')
        self.fingerprint = next(line.split(':')[9] for line in listing.splitlines() if line.startswith('fpr:'))
        return self

    def __exit__(self, *exc):
        subprocess.run(['gpgconf', '--kill', 'gpg-agent'], env=self.env, check=False, capture_output=True)
        shutil.rmtree(self.home, ignore_errors=True)

    def gpg(self, *args):
        return run(['gpg', '--batch', '--quiet', '--no-tty', '--pinentry-mode', 'loopback', '--passphrase', '']
                   + list(args), env=self.env)

    def sign(self, path):
        base = os.path.dirname(path)
        self.gpg('--yes', '--local-user', self.fingerprint, '--digest-algo', 'SHA256', '--clearsign',
                 '--output', os.path.join(base, 'InRelease'), path)
        self.gpg('--yes', '--local-user', self.fingerprint, '--digest-algo', 'SHA256', '--armor', '--detach-sign',
                 '--output', os.path.join(base, 'Release.gpg'), path)

    def export(self, path):
        self.gpg('--yes', '--armor', '--output', path, '--export', self.fingerprint)


def build(out):
    """Build the whole tree into ``out`` (made here: it must not exist), atomically."""
    out = os.path.abspath(out)
    if os.path.exists(out):
        raise FileExistsError('%s exists' % out)
    parent = os.path.dirname(out)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix='.mirror-build-', dir=parent)
    try:
        tree = os.path.join(tmp, 'tree')
        work = os.path.join(tmp, 'work')
        os.makedirs(work)
        by_repo = {}
        for pkg in all_packages():
            repo_dir = os.path.join(tree, pkg['repo'])
            os.makedirs(repo_dir, exist_ok=True)
            filename, control = build_deb(pkg, work, repo_dir)
            with open(os.path.join(repo_dir, filename), 'rb') as handle:
                by_repo.setdefault(pkg['repo'], []).append((filename, control, handle.read()))
        now = time.time()
        with ThrowawayKey() as key:
            for repo, entries in sorted(by_repo.items()):
                index = packages_index(entries)
                compressed = gzip.compress(index, compresslevel=9, mtime=0)
                repo_dir = os.path.join(tree, repo)
                _write(os.path.join(repo_dir, 'Packages'), 0o644, index)
                _write(os.path.join(repo_dir, 'Packages.gz'), 0o644, compressed)
                release = os.path.join(repo_dir, 'Release')
                _write(release, 0o644, release_text(repo, [('Packages', index), ('Packages.gz', compressed)], now))
                key.sign(release)
            key.export(os.path.join(tree, KEY_FILE))
        for path, body in sorted(extra_files().items()):
            _write(os.path.join(tree, path), 0o644, body)
        for root, dirs, files in os.walk(tree):
            for name in dirs:
                os.chmod(os.path.join(root, name), 0o755)
            for name in files:
                os.chmod(os.path.join(root, name), 0o644)
        os.rename(tree, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def recipe_hash():
    digest = hashlib.sha256()
    paths = sorted(os.path.join(HERE, name) for name in os.listdir(HERE) if name.endswith('.py'))
    paths += sorted(os.path.join(root, name) for folder in (FILES, SNAPSHOT)
                    for root, _dirs, names in os.walk(folder) for name in names)
    for path in paths:
        digest.update(os.path.relpath(path, HERE).encode() + b'\0')
        with open(path, 'rb') as handle:
            digest.update(handle.read())
    return digest.hexdigest()[:12]


def build_cached(state=STATE, force=False):
    """lab/.state/mirror-<hash>: built unless present (or forced); trees of older recipes are removed.

    Returns ``(path, built)``.
    """
    path = os.path.join(state, 'mirror-%s' % recipe_hash())
    built = False
    if force and os.path.exists(path):
        shutil.rmtree(path)
    if not os.path.exists(path):
        try:
            build(path)
            built = True
        except OSError:
            if not os.path.isdir(path):  # else another run built the same recipe at the same time
                raise
    for name in os.listdir(state):
        if name.startswith('mirror-') and os.path.join(state, name) != path:
            shutil.rmtree(os.path.join(state, name), ignore_errors=True)
    return path, built


def pack(tree, out):
    """A tar of a built tree: sorted names, root:root, the files' own mtimes (a rebuilt index is newer)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode='w', format=tarfile.PAX_FORMAT) as tar:
        for root, dirs, files in os.walk(tree):
            dirs.sort()
            for name in sorted(files):
                path = os.path.join(root, name)
                info = tar.gettarinfo(path, arcname=os.path.relpath(path, tree))
                info.uid = info.gid = 0
                info.uname = info.gname = 'root'
                info.mode = 0o644
                info.mtime = int(info.mtime)
                with open(path, 'rb') as handle:
                    tar.addfile(info, handle)
    data = buffer.getvalue()
    current = None
    if os.path.exists(out):
        with open(out, 'rb') as handle:
            current = handle.read()
    if current != data:
        with open(out, 'wb') as handle:
            handle.write(data)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest='command')
    build_cmd = sub.add_parser('build', help='build the tree (the default command)')
    for target in (parser, build_cmd):
        target.add_argument('--out', help='build into this new directory (no cache)')
        target.add_argument('--force', action='store_true', help='rebuild the cached tree')
    pack_cmd = sub.add_parser('pack', help='a reproducible tar of a built tree')
    pack_cmd.add_argument('tree')
    pack_cmd.add_argument('tar')
    sub.add_parser('hash', help='print the recipe hash')
    args = parser.parse_args(argv)
    if args.command == 'pack':
        pack(args.tree, args.tar)
    elif args.command == 'hash':
        print(recipe_hash())
    elif args.out:
        print(build(args.out))
    else:
        os.makedirs(STATE, exist_ok=True)
        print(build_cached(STATE, args.force)[0])
    return 0


if __name__ == '__main__':
    sys.exit(main())
