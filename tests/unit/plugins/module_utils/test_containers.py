# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/containers.py: the enroot, pyxis and container_images roles' decisions."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil
import subprocess

import pytest

from ansible_collections.aicluster.infra.plugins.module_utils import containers as c

from _spank_elf import plugin_bytes as _plugin

REPO_HPC = {'url': 'http://ctl01/mirror/hpc/', 'suite': './', 'key_url': 'http://ctl01/mirror/aicluster-lab.asc'}
ENROOT = {'repository': REPO_HPC, 'version': '3.5.0-1', 'data_path': '/var/lib/enroot/data/user-$(id -u)',
          'cache_path': '/var/lib/enroot/cache/group-$(id -g)', 'runtime_path': '/run/enroot/user-$(id -u)',
          'config': {'ENROOT_MOUNT_HOME': 'yes'}, 'nccl_env': {'NCCL_IB_HCA': '=mlx5_0:1'}, 'environ': {},
          'hooks': ['50-slurm-pmi.sh'], 'known_hooks': ['50-slurm-pmi.sh', '50-slurm-pytorch.sh'],
          'allowed_filesystems': [], 'nccl_conf_mount': '/etc/nccl.conf'}
FINDMNT = ('/ overlay\n/proc proc\n/raid xfs\n/home nfs4\n/shared/images nfs\n/lus lustre\n'
           '/mnt/with\\x20blank ext4\n')


def test_the_default_enroot_settings_pass():
    assert c.enroot_problems(ENROOT) == []
    assert c.enroot_problems(dict(ENROOT, nccl_conf_mount='', nccl_env={})) == []


@pytest.mark.parametrize('change, needle', [
    ({'repository': {'url': '', 'suite': './', 'key_url': ''}}, 'set aicluster_bom.repositories.hpc.url'),
    ({'repository': {'url': 'ctl01/hpc', 'key_url': 'x'}}, 'http(s)://'),
    ({'repository': {'url': 'http://x/', 'key_url': ''}}, 'key_url is empty'),
    ({'version': '3.5.*'}, 'enroot_version must be an exact'),
    ({'data_path': 'enroot/data'}, 'enroot_data_path must be an absolute path'),
    ({'cache_path': '/$(id -u)'}, 'enroot_cache_path must start with a fixed directory'),
    ({'config': {'FOO': 'x'}}, "'FOO' is not an enroot setting"),
    ({'nccl_env': {'NCCL IB': '1'}}, 'is not an environment variable name'),
    ({'environ': {'A': 'x\ny'}}, 'enroot_environ.A: the value must be one line'),
    ({'hooks': ['50-nope.sh']}, '50-nope.sh not among'),
    ({'allowed_filesystems': ['ext4']}, 'ext4 are not network file systems'),
    ({'nccl_conf_mount': 'nccl.conf'}, 'enroot_nccl_conf_mount must be empty or an absolute'),
    ({'nccl_conf_mount': '/etc/my nccl.conf'}, 'without blanks (an fstab field)'),
], ids=['empty-url', 'bad-url', 'no-key', 'wildcard', 'relative', 'no-fixed-dir', 'setting', 'env-name',
        'env-value', 'hook', 'allowed-local', 'nccl-mount-relative', 'nccl-mount-blank'])
def test_enroot_problems_name_the_variable(change, needle):
    problems = c.enroot_problems(dict(ENROOT, **change))
    assert len(problems) == 1 and needle in problems[0], problems


@pytest.mark.parametrize('path, prefix', [
    ('/var/lib/enroot/data/user-$(id -u)', '/var/lib/enroot/data'),
    ('/tmp/enroot-${USER}', '/tmp'),
    ('/raid/enroot', '/raid/enroot'),
    ('/raid/enroot/', '/raid/enroot'),
    ('/raid/$(id -u)/x', '/raid'),
])
def test_static_prefix(path, prefix):
    assert c.static_prefix(path) == prefix


def test_findmnt_and_the_mount_holding_a_path():
    mounts = c.parse_findmnt(FINDMNT)
    assert mounts['/mnt/with blank'] == 'ext4'
    assert c.filesystem_of('/raid/enroot/data', mounts) == ('/raid', 'xfs')
    assert c.filesystem_of('/var/lib/enroot', mounts) == ('/', 'overlay')
    assert c.filesystem_of('/shared/images2', mounts) == ('/', 'overlay')
    assert c.filesystem_of('/home/u/.local', mounts) == ('/home', 'nfs4')


def test_storage_on_a_network_file_system_is_refused_unless_allowed():
    mounts = c.parse_findmnt(FINDMNT)
    paths = {'enroot_data_path': '/home/$(id -un)/enroot', 'enroot_cache_path': '/lus/cache/$(id -g)',
             'enroot_runtime_path': '/raid/run/$(id -u)'}
    problems = c.storage_problems(paths, mounts)
    assert len(problems) == 2
    assert problems[0].startswith('enroot_cache_path /lus/cache/$(id -g) is on lustre (/lus/cache, mounted at /lus)')
    assert 'enroot_data_path /home/$(id -un)/enroot is on nfs4' in problems[1]
    assert c.storage_problems(paths, mounts, ['nfs4', 'lustre']) == []


def test_pyxis_problems():
    good = {'repository': REPO_HPC, 'package': 'nvslurm-plugin-pyxis', 'version': '0.20.0-1',
            'plugin_path': '/usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so', 'plugstack_dir': '/etc/slurm/plugstack.conf.d',
            'plugin_args': {'runtime_path': '/run/pyxis'}}
    assert c.pyxis_problems(good) == []
    bad = dict(good, repository={'url': ''}, version='latest', plugin_args={'Runtime': 'a b'})
    problems = c.pyxis_problems(bad)
    assert len(problems) == 3
    assert 'aicluster_bom.repositories.hpc.url' in problems[0] and 'pyxis_version' in problems[1]


def test_container_images_problems():
    sha = 'a' * 64
    images = [{'name': 'tiny', 'url': 'http://ctl01/mirror/images/aicluster-tiny.sqsh', 'sha256': sha},
              {'name': 'local', 'src': 'files/x.sqsh', 'sha256': sha.upper()}]
    assert c.container_images_problems({'store': '/shared/images', 'images': images}) == []
    bad = [{'name': 'a/b', 'url': 'x', 'sha256': sha}, {'name': 'tiny', 'url': 'http://x', 'src': 'y', 'sha256': 'z'},
           {'name': 'tiny', 'url': 'http://x', 'sha256': sha}, {'name': 'ok', 'url': 'docker://x', 'sha256': sha},
           {'name': 'tar', 'url': 'http://x', 'sha256': sha, 'format': 'docker-archive'}]
    problems = c.container_images_problems({'store': 'images', 'images': bad})
    assert problems[0].startswith('container_images_store must be an absolute path')
    assert 'container_images[0].name must be a file name' in problems[1]
    assert "container_images[0].url must be an http(s)://, ftp:// or file:// URL, got 'x'" == problems[2]
    assert 'container_images[tiny] needs exactly one of url' in problems[3]
    assert 'container_images[tiny].sha256' in problems[4]
    assert 'container_images[2].name tiny appears twice' in problems[5]
    assert 'container_images[ok].url must be' in problems[6]
    assert 'container_images[tar].format: only squashfs' in problems[7] and len(problems) == 8


@pytest.mark.parametrize('text, version', [
    ('slurm 22.05.8\n', (22, 5, 8)),
    ('slurm-wlm 23.11.4\n', (23, 11, 4)),
    ('slurm 24.05.0-0rc1\n', (24, 5, 0)),
])
def test_parse_slurm_version(text, version):
    assert c.parse_slurm_version(text) == version


def test_parse_slurm_version_refuses_other_text():
    with pytest.raises(ValueError):
        c.parse_slurm_version('srun: command not found')


def test_spank_plugin_info_reads_what_slurms_loader_reads():
    info = c.spank_plugin_info(_plugin(0x160508))
    assert info == {'name': 'pyxis', 'type': 'spank', 'version_number': 0x160508, 'version': '22.05.8',
                    'series': '22.05'}


@pytest.mark.parametrize('slurm, ok', [((22, 5, 8), True), ((22, 5, 2), True), ((23, 2, 1), False),
                                       ((23, 11, 4), False)], ids=['same', 'other-micro', 'next', 'newer'])
def test_pyxis_compatibility_masks_the_micro_release(slurm, ok):
    message = c.pyxis_compatibility(c.spank_plugin_info(_plugin(0x160508)), slurm, '/x/spank_pyxis.so')
    assert (message is None) is ok
    if not ok:
        assert message.startswith('/x/spank_pyxis.so was built for Slurm 22.05 (plugin_version 22.05.8) but this '
                                  'node runs Slurm %d.%02d.%d' % slurm)


def test_a_non_spank_plugin_is_refused():
    assert 'is not a SPANK plugin' in c.pyxis_compatibility(c.spank_plugin_info(_plugin(0x160508, b'auth')),
                                                            (22, 5, 8))


@pytest.mark.parametrize('data', [b'', b'#!/bin/sh\n', b'\x7fELF' + b'\1' * 60, _plugin(1)[:200]],
                         ids=['empty', 'script', 'elf32', 'truncated'])
def test_what_is_not_a_plugin_raises_elf_error(data):
    with pytest.raises(c.ElfError):
        c.spank_plugin_info(data)


def test_environ_file_is_sorted():
    assert c.environ_file({'NCCL_IB_HCA': '=mlx5_0:1', 'MELLANOX_VISIBLE_DEVICES': 'all'}) == (
        'MELLANOX_VISIBLE_DEVICES=all\nNCCL_IB_HCA==mlx5_0:1\n')


@pytest.mark.skipif(not shutil.which('gcc') or not os.path.exists('/usr/include/slurm/spank.h'),
                    reason='needs gcc and libslurm-dev (<slurm/spank.h>)')
def test_a_real_compiled_spank_plugin(tmp_path):
    source = tmp_path / 'p.c'
    source.write_text('#include <slurm/spank.h>\nSPANK_PLUGIN(probe, 1)\n'
                      'int slurm_spank_init(spank_t sp, int ac, char **av) { (void)sp; (void)ac; (void)av; return 0; }\n')
    subprocess.run(['gcc', '-shared', '-fPIC', '-o', str(tmp_path / 'p.so'), str(source)], check=True)
    info = c.spank_plugin_info((tmp_path / 'p.so').read_bytes())
    with open('/usr/include/slurm/slurm_version.h', encoding='utf-8') as handle:
        header = handle.read()
    assert info['name'] == 'probe' and info['type'] == 'spank'
    assert '0x%06x' % info['version_number'] in header.lower()
