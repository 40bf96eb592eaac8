"""lab/mirror/hpc_packages.py: the hpc repository's stand-ins (enroot, enroot+caps, nvslurm-plugin-pyxis) and the
test image, checked with the real tools: gcc and nm on the SPANK plugin, real srun loading it, mksquashfs and
unsquashfs on the image, the enroot stand-in creating, listing and removing a container as an unprivileged user
would. Each part skips when its tool is absent (`make setup` installs them)."""
import os
import shutil
import subprocess

import pytest

from _paths import REPO, load_program

from ansible_collections.aicluster.infra.plugins.module_utils.containers import spank_plugin_info

HAVE_CC = bool(shutil.which('gcc')) and os.path.exists('/usr/include/slurm/spank.h')
HAVE_SQUASHFS = bool(shutil.which('mksquashfs')) and bool(shutil.which('unsquashfs')) and os.path.exists('/bin/busybox')
needs_cc = pytest.mark.skipif(not HAVE_CC, reason='needs gcc and libslurm-dev (<slurm/spank.h>)')
needs_squashfs = pytest.mark.skipif(not HAVE_SQUASHFS, reason='needs squashfs-tools and busybox-static')
ENV = dict(os.environ, LC_ALL='C', LANG='C')


def _load(path, name):
    return load_program(os.path.join(REPO, path), name)


@pytest.fixture(scope='module')
def hpc():
    return _load('lab/mirror/hpc_packages.py', 'aicluster_lab_mirror_hpc_test')


@pytest.fixture(scope='module')
def build():
    return _load('lab/mirror/build.py', 'aicluster_lab_mirror_build_hpc_test')


@pytest.fixture(scope='module')
def plugin(hpc):
    return hpc.build_plugin('0.20.0-1')


@needs_cc
def test_the_plugin_builds_reproducibly_and_differs_per_version(hpc, plugin):
    assert hpc.build_plugin.__wrapped__('0.20.0-1') == plugin
    assert hpc.build_plugin.__wrapped__('0.19.0-1') != plugin


@needs_cc
def test_the_plugin_exports_what_slurm_and_pyxis_users_need(plugin, tmp_path):
    path = tmp_path / 'spank_pyxis.so'
    path.write_bytes(plugin)
    out = subprocess.run(['nm', '-D', '--defined-only', str(path)], check=True, capture_output=True, text=True,
                         env=ENV).stdout
    names = {line.split()[-1] for line in out.splitlines()}
    assert {'plugin_name', 'plugin_type', 'plugin_version', 'spank_plugin_version', 'slurm_spank_init',
            'slurm_spank_user_init', 'slurm_spank_task_init', 'slurm_spank_exit'} <= names
    # No prolog/epilog callback: nothing of the plugin can fail a job's epilog and drain a node.
    assert not {'slurm_spank_job_prolog', 'slurm_spank_job_epilog'} & names
    info = spank_plugin_info(plugin)
    with open('/usr/include/slurm/slurm_version.h', encoding='utf-8') as handle:
        assert '0x%06x' % info['version_number'] in handle.read().lower()
    assert info['name'] == 'pyxis' and info['type'] == 'spank'


@needs_cc
@pytest.mark.skipif(not shutil.which('srun'), reason='needs srun (slurm-client)')
def test_real_srun_loads_the_plugin_and_lists_its_options(plugin, tmp_path):
    so = tmp_path / 'spank_pyxis.so'
    so.write_bytes(plugin)
    (tmp_path / 'plugstack.conf.d').mkdir()
    (tmp_path / 'plugstack.conf').write_text('include %s/plugstack.conf.d/*.conf\n' % tmp_path)
    (tmp_path / 'plugstack.conf.d' / 'pyxis.conf').write_text('required %s\n' % so)
    (tmp_path / 'slurm.conf').write_text(
        'ClusterName=hpctest\nSlurmctldHost=localhost\nPlugStackConfig=%s/plugstack.conf\n'
        'NodeName=localhost CPUs=1 State=UNKNOWN\nPartitionName=p Nodes=localhost Default=YES\n' % tmp_path)
    env = dict(ENV, SLURM_CONF=str(tmp_path / 'slurm.conf'))
    out = subprocess.run(['srun', '--help'], check=True, capture_output=True, text=True, env=env).stdout
    for option in ('--container-image', '--container-mounts', '--container-workdir', '--container-name'):
        assert option in out
    bad = subprocess.run(['srun', '--container-workdir=relative', 'true'], check=False, capture_output=True, text=True, env=env)
    assert bad.returncode != 0 and 'must be an absolute path' in bad.stderr


@needs_cc
def test_the_packages(hpc, build):
    pkgs = {(p['name'], p['version']): p for p in hpc.packages(build.package, build.template)}
    assert sorted(pkgs) == [('enroot', '3.4.1-1'), ('enroot', '3.5.0-1'), ('enroot+caps', '3.4.1-1'),
                            ('enroot+caps', '3.5.0-1'), ('nvslurm-plugin-pyxis', '0.19.0-1'),
                            ('nvslurm-plugin-pyxis', '0.20.0-1')]
    assert all(p['repo'] == 'hpc' for p in pkgs.values())
    enroot = pkgs[('enroot', '3.5.0-1')]
    for path in ('/usr/bin/enroot', '/etc/enroot/enroot.conf', '/etc/enroot/hooks.d/99-mellanox.sh',
                 '/usr/share/enroot/hooks.d/50-slurm-pmi.sh', '/usr/share/enroot/hooks.d/50-slurm-pytorch.sh',
                 '/etc/enroot/environ.d/10-terminal.env', '/etc/enroot/mounts.d/10-system.fstab'):
        assert path in enroot['files'], path
    assert '/etc/enroot/enroot.conf' in enroot['conffiles']
    assert pkgs[('enroot+caps', '3.5.0-1')]['depends'][0] == 'enroot (= 3.5.0-1)'
    pyxis = pkgs[('nvslurm-plugin-pyxis', '0.20.0-1')]
    assert pyxis['files']['/usr/share/pyxis/pyxis.conf'][1] == (
        b'required /usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so\n')
    assert spank_plugin_info(pyxis['files']['/usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so'][1])['type'] == 'spank'


@needs_squashfs
def test_the_image_is_reproducible_and_holds_busybox(hpc, tmp_path):
    image = hpc.build_image()
    assert hpc.build_image.__wrapped__() == image
    files = hpc.extra_files()
    assert sorted(files) == ['images/SHA256SUMS', 'images/aicluster-tiny.sqsh']
    (tmp_path / 'i.sqsh').write_bytes(image)
    listing = subprocess.run(['unsquashfs', '-lls', str(tmp_path / 'i.sqsh')], check=True, capture_output=True,
                             text=True, env=ENV).stdout
    assert 'squashfs-root/bin/busybox' in listing and 'squashfs-root/bin/sh -> busybox' in listing
    assert 'squashfs-root/etc/os-release' in listing and 'root/root' in listing


@needs_squashfs
def test_the_enroot_stand_in(hpc, build, tmp_path):
    conf = tmp_path / 'etc'
    conf.mkdir()
    (conf / 'enroot.conf').write_text('# comment\nENROOT_DATA_PATH %s/data/user-$(id -u)\n' % tmp_path)
    enroot = tmp_path / 'enroot'
    enroot.write_bytes(build.template('hpc/enroot.sh', package='enroot', version='3.5.0-1', upstream='3.5.0',
                                      sysconf=str(conf)))
    enroot.chmod(0o755)
    image = tmp_path / 'aicluster-tiny.sqsh'
    image.write_bytes(hpc.build_image())
    env = dict(ENV, HOME=str(tmp_path))

    def run(*args):
        return subprocess.run([str(enroot)] + list(args), check=False, capture_output=True, text=True, env=env)
    assert run('version').stdout == '3.5.0\n'
    assert run('create', '--name', 'c1', str(image)).returncode == 0
    rootfs = run('rootfs', 'c1').stdout.strip()
    assert rootfs == '%s/data/user-%d/c1' % (tmp_path, os.getuid())
    assert 'aicluster-tiny' in (tmp_path / rootfs / 'etc' / 'os-release').read_text()
    assert run('list').stdout == 'c1\n'
    again = run('create', '--name', 'c1', str(image))
    assert again.returncode == 1 and 'File already exists' in again.stderr
    assert run('create', '--name', 'c1', '-f', str(image)).returncode == 0
    assert run('create', '--name', 'c2', str(tmp_path / 'missing.sqsh')).returncode == 1
    assert run('remove', '-f', 'c1').returncode == 0
    assert run('list').stdout == '' and not os.path.exists(rootfs)


@needs_squashfs
def test_the_lab_inventory_names_the_images_checksum(hpc):
    import hashlib
    import yaml
    with open(os.path.join(REPO, 'inventories', 'lab', 'group_vars', 'all', 'main.yml'), encoding='utf-8') as handle:
        images = yaml.safe_load(handle)['container_images_list']
    assert [image['sha256'] for image in images] == [hashlib.sha256(hpc.build_image()).hexdigest()]
