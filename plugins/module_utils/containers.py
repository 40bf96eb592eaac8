# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The containers stage's decisions (roles enroot, pyxis, container_images): variable checks, which file system a
path lives on, a SPANK plugin's Slurm version read from its ELF file, and whether Slurm will load it.

Pure functions: text or bytes in, plain values out.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import posixpath
import re
import struct

# File systems enroot's data, cache and runtime paths must not live on by default: enroot unpacks whole images
# there and needs local, fast, xattr- and user-namespace-friendly storage (NVIDIA's DGX guidance: local NVMe).
NETWORK_FILESYSTEMS = ('nfs', 'nfs4', 'lustre', 'gpfs', 'beegfs', 'cifs', 'smb3', 'fuse.sshfs', 'ceph',
                       'fuse.ceph-fuse', 'glusterfs', 'fuse.glusterfs', 'wekafs', 'panfs')
_ENV_NAME = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')
_PACKAGE_VERSION = re.compile(r'^(\d+:)?[0-9][A-Za-z0-9.+~]*(-[A-Za-z0-9.+~]+)?$')
_IMAGE_NAME = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_.-]*$')
_SHA256 = re.compile(r'^[0-9a-f]{64}$')
_SLURM_VERSION = re.compile(r'^slurm(?:-wlm)?\s+(?P<major>\d+)\.(?P<minor>\d+)\.(?P<micro>\d+)', re.MULTILINE)
_FINDMNT_ESCAPE = re.compile(r'\\x([0-9a-fA-F]{2})')


class ElfError(ValueError):
    """The bytes are not a 64-bit little-endian ELF file with the symbol asked for."""


def _url_problem(name, repo):
    url = (repo or {}).get('url') or ''
    if not url:
        return ('%s.url is empty: set aicluster_bom.repositories.hpc.url (and key_url) to the site repository that '
                'holds the enroot and pyxis packages (docs/containers.md)' % name)
    if not re.match(r'^(https?|file)://', url):
        return '%s.url must be an http(s):// or file:// URL, got %r' % (name, url)
    if not (repo or {}).get('key_url'):
        return '%s.key_url is empty: the repository must be signed (set the URL of its public key)' % name
    return None


def _version_problem(name, version):
    if not isinstance(version, str) or not _PACKAGE_VERSION.match(version):
        return '%s must be an exact Debian package version such as 3.5.0-1, got %r' % (name, version)
    return None


def static_prefix(path):
    """The part of an enroot path setting before its first expansion: /raid/enroot/data/$(id -u) -> /raid/enroot/data."""
    head = re.split(r'[$`]', path, 1)[0]
    if head != path:
        head = head.rsplit('/', 1)[0] if not head.endswith('/') else head
    return posixpath.normpath(head) if head else ''


def environ_problems(name, env):
    problems = []
    for key, value in sorted((env or {}).items()):
        if not _ENV_NAME.match(str(key)):
            problems.append('%s: %r is not an environment variable name' % (name, key))
        elif re.search(r'[\n\r\0]', str(value)):
            problems.append('%s.%s: the value must be one line' % (name, key))
    return problems


def enroot_problems(settings):
    """What is wrong with the enroot role's variables (keys without the ``enroot_`` prefix), one line each."""
    problems = []
    url = _url_problem('enroot_repository', settings.get('repository'))
    if url:
        problems.append(url)
    version = _version_problem('enroot_version', settings.get('version'))
    if version:
        problems.append(version)
    for key in ('data_path', 'cache_path', 'runtime_path'):
        value = settings.get(key)
        if not isinstance(value, str) or not value.startswith('/'):
            problems.append('enroot_%s must be an absolute path, got %r' % (key, value))
        elif not static_prefix(value).startswith('/') or static_prefix(value) == '/':
            problems.append('enroot_%s must start with a fixed directory before any $(...) or ${...}, got %r'
                            % (key, value))
    for key, value in sorted((settings.get('config') or {}).items()):
        if not re.match(r'^(ENROOT_[A-Z0-9_]+|[a-z_]*proxy|SSL_CERT_(DIR|FILE))$', str(key)):
            problems.append('enroot_config: %r is not an enroot setting (ENROOT_*, *_proxy, SSL_CERT_*)' % key)
        elif re.search(r'[\n\r\0]', str(value)):
            problems.append('enroot_config.%s: the value must be one line' % key)
    mount = settings.get('nccl_conf_mount') or ''
    if mount and (not isinstance(mount, str) or not mount.startswith('/') or posixpath.normpath(mount) != mount
                  or re.search(r'\s', mount)):
        problems.append('enroot_nccl_conf_mount must be empty or an absolute, normalised path without blanks (an '
                        'fstab field), got %r' % (mount,))
    problems += environ_problems('enroot_nccl_env', settings.get('nccl_env'))
    problems += environ_problems('enroot_environ', settings.get('environ'))
    unknown = sorted(set(settings.get('hooks') or []) - set(settings.get('known_hooks') or []))
    if unknown:
        problems.append('enroot_extra_hooks: %s not among the package\'s extra hooks (%s)'
                        % (', '.join(unknown), ', '.join(settings.get('known_hooks') or [])))
    bad_fs = sorted(set(settings.get('allowed_filesystems') or []) - set(NETWORK_FILESYSTEMS))
    if bad_fs:
        problems.append('enroot_allowed_filesystems: %s are not network file systems this check knows (%s)'
                        % (', '.join(bad_fs), ', '.join(NETWORK_FILESYSTEMS)))
    return problems


def parse_findmnt(text):
    """``findmnt -rn -o TARGET,FSTYPE`` output -> {mount point: fstype} (findmnt escapes blanks as \\x20)."""
    mounts = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) != 2:
            continue
        target = _FINDMNT_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), fields[0])
        mounts[target] = fields[1]
    return mounts


def filesystem_of(path, mounts):
    """(mount point, fstype) of the mount that holds path (the longest mount point that is a prefix of it)."""
    path = posixpath.normpath(path)
    best = None
    for target in mounts:
        norm = posixpath.normpath(target)
        if path == norm or path.startswith(norm.rstrip('/') + '/'):
            if best is None or len(norm) > len(posixpath.normpath(best)):
                best = target
    return (best, mounts[best]) if best is not None else (None, None)


def storage_problems(paths, mounts, allowed=()):
    """One line per enroot path that lives on a network file system not in ``allowed``.

    ``paths`` is {variable name: path setting}; ``mounts`` what parse_findmnt() returned.
    """
    problems = []
    for name, value in sorted(paths.items()):
        prefix = static_prefix(value)
        target, fstype = filesystem_of(prefix, mounts)
        if fstype in NETWORK_FILESYSTEMS and fstype not in (allowed or ()):
            problems.append('%s %s is on %s (%s, mounted at %s): enroot unpacks images there and needs local '
                            'storage (local NVMe); choose a local path, or add %s to enroot_allowed_filesystems'
                            % (name, value, fstype, prefix, target, fstype))
    return problems


def pyxis_problems(settings):
    """What is wrong with the pyxis role's variables (keys without the ``pyxis_`` prefix), one line each."""
    problems = []
    url = _url_problem('pyxis_repository', settings.get('repository'))
    if url:
        problems.append(url)
    if not re.match(r'^[a-z0-9][a-z0-9+.-]+$', str(settings.get('package') or '')):
        problems.append('pyxis_package must be a Debian package name, got %r' % settings.get('package'))
    version = _version_problem('pyxis_version', settings.get('version'))
    if version:
        problems.append(version)
    for key in ('plugin_path', 'plugstack_dir'):
        if not str(settings.get(key) or '').startswith('/'):
            problems.append('pyxis_%s must be an absolute path, got %r' % (key, settings.get(key)))
    for key, value in sorted((settings.get('plugin_args') or {}).items()):
        if not re.match(r'^[a-z_]+$', str(key)) or re.search(r'\s', str(value)):
            problems.append('pyxis_plugin_args: %s=%s must be a lowercase name and a value without blanks'
                            % (key, value))
    return problems


def container_images_problems(settings):
    """What is wrong with the container_images role's variables, one line each."""
    problems = []
    store = settings.get('store') or ''
    if not str(store).startswith('/'):
        problems.append('container_images_store must be an absolute path, got %r' % store)
    seen = set()
    for index, image in enumerate(settings.get('images') or []):
        label = 'container_images[%d]' % index
        name = image.get('name')
        if not isinstance(name, str) or not _IMAGE_NAME.match(name):
            problems.append('%s.name must be a file name without a slash (letters, digits, _ . -), got %r'
                            % (label, name))
        elif name in seen:
            problems.append('%s.name %s appears twice' % (label, name))
        else:
            seen.add(name)
            label = 'container_images[%s]' % name
        sources = [key for key in ('url', 'src') if image.get(key)]
        if len(sources) != 1:
            problems.append('%s needs exactly one of url (http, https, file) and src (a file on the controller)'
                            % label)
        elif sources == ['url'] and not re.match(r'^(https?|file|ftp)://', image['url']):
            problems.append('%s.url must be an http(s)://, ftp:// or file:// URL, got %r' % (label, image['url']))
        if not isinstance(image.get('sha256'), str) or not _SHA256.match(image['sha256'].lower()):
            problems.append('%s.sha256 must be the image\'s SHA-256 (64 hex digits)' % label)
        if image.get('format', 'squashfs') != 'squashfs':
            problems.append('%s.format: only squashfs images are imported (got %r)' % (label, image.get('format')))
    return problems


def parse_slurm_version(text):
    """``srun --version`` / ``slurmd -V`` output (``slurm 22.05.8``) -> (22, 5, 8); ValueError when absent."""
    match = _SLURM_VERSION.search(text or '')
    if not match:
        raise ValueError('no Slurm version in %r' % (text or '')[:80])
    return int(match.group('major')), int(match.group('minor')), int(match.group('micro'))


def _elf_sections(data):
    if len(data) < 64 or data[:4] != b'\x7fELF':
        raise ElfError('not an ELF file')
    if data[4] != 2 or data[5] != 1:
        raise ElfError('not a 64-bit little-endian ELF file')
    shoff, = struct.unpack_from('<Q', data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', data, 0x3A)
    if not shoff or shentsize < 64 or shoff + shnum * shentsize > len(data):
        raise ElfError('no section headers')
    sections = []
    for index in range(shnum):
        name, kind, _flags, addr, offset, size, link, _info, _align, entsize = struct.unpack_from(
            '<IIQQQQIIQQ', data, shoff + index * shentsize)
        sections.append({'name': name, 'type': kind, 'addr': addr, 'offset': offset, 'size': size, 'link': link,
                         'entsize': entsize})
    return sections


def _cstring(data, offset):
    end = data.find(b'\0', offset)
    return data[offset:end if end >= 0 else len(data)].decode('ascii', 'replace')


def elf_symbol(data, name):
    """The bytes of the defined dynamic (or static) symbol ``name`` of an ELF shared object (its value's size)."""
    sections = _elf_sections(data)
    for wanted in (11, 2):  # SHT_DYNSYM, then SHT_SYMTAB
        for table in (s for s in sections if s['type'] == wanted):
            strings = sections[table['link']]
            entsize = table['entsize'] or 24
            for index in range(table['size'] // entsize):
                st_name, _info, _other, shndx, value, size = struct.unpack_from(
                    '<IBBHQQ', data, table['offset'] + index * entsize)
                if not shndx or shndx >= len(sections) or _cstring(data, strings['offset'] + st_name) != name:
                    continue
                holder = sections[shndx]
                if holder['type'] == 8:  # SHT_NOBITS: no bytes in the file
                    raise ElfError('symbol %s has no initialised data' % name)
                start = holder['offset'] + value - holder['addr']
                return data[start:start + size]
    raise ElfError('no symbol %s' % name)


def spank_plugin_info(data):
    """A Slurm plugin's identity as Slurm's loader reads it: plugin_name, plugin_type, plugin_version.

    Returns {name, type, version_number, version ('22.05.8'), series ('22.05')}; ElfError for anything else.
    """
    try:
        number, = struct.unpack('<I', elf_symbol(data, 'plugin_version')[:4])
        info = {'name': elf_symbol(data, 'plugin_name').split(b'\0', 1)[0].decode('ascii', 'replace'),
                'type': elf_symbol(data, 'plugin_type').split(b'\0', 1)[0].decode('ascii', 'replace'),
                'version_number': number}
    except (struct.error, IndexError) as exc:
        raise ElfError('truncated or damaged ELF file (%s)' % exc)
    major, minor, micro = (number >> 16) & 0xff, (number >> 8) & 0xff, number & 0xff
    info['version'] = '%d.%02d.%d' % (major, minor, micro)
    info['series'] = '%d.%02d' % (major, minor)
    return info


def pyxis_compatibility(plugin, slurm_version, plugin_path='spank_pyxis.so'):
    """None when Slurm loads the plugin, else the reason (one line).

    Slurm's plugin loader accepts a SPANK plugin whose plugin_version has the same major.minor as its own (the
    micro release is masked off: ``Incompatible Slurm plugin ... version`` otherwise, and slurmd then refuses to
    start with a ``required`` plugstack line).
    """
    if plugin.get('type') != 'spank':
        return '%s is not a SPANK plugin (plugin_type %r)' % (plugin_path, plugin.get('type'))
    major, minor = slurm_version[0], slurm_version[1]
    series = '%d.%02d' % (major, minor)
    if plugin.get('series') != series:
        return ('%s was built for Slurm %s (plugin_version %s) but this node runs Slurm %d.%02d.%d: Slurm refuses '
                'it ("Incompatible Slurm plugin version") and slurmd would not start; install the pyxis package '
                'built against Slurm %s (pyxis_version)'
                % (plugin_path, plugin.get('series'), plugin.get('version'), major, minor, slurm_version[2], series))
    return None


def environ_file(env):
    """The body of an enroot environ.d file: KEY=VALUE lines, sorted (deterministic)."""
    return ''.join('%s=%s\n' % (key, env[key]) for key in sorted(env))
