"""lab/hwsim: the DKMS-per-kernel model of the NVIDIA driver and DOCA's modules, as `dkms status` prints it, a
`hwsim reboot` into a kernel without DOCA's build (the inbox RDMA modules, as a real boot), and the update-initramfs
stand-in the nvidia_driver role's nouveau handler runs in the lab."""
import os
import sys

from _paths import REPO

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))

# pylint: disable=wrong-import-position
from ansible_collections.aicluster.infra.plugins.module_utils.dkms import dkms_report, parse_dkms_status  # noqa: E402
from hwsim import driver, tools  # noqa: E402
from hwsim.testing import make_lab  # noqa: E402

NEW_KERNEL = '6.1.0-30-amd64'
OFED = '24.10.OFED.24.10.1.1.4.1'


def test_dkms_and_update_initramfs_are_registered_tools():
    assert tools.lookup('dkms') is not None and tools.lookup('update-initramfs') is not None


def test_dkms_status_prints_every_build_in_the_real_format(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    assert lab.run('gpu01', ['dkms', 'status']) == (0, '', '')
    lab.install_driver('gpu01', '580.95.05', kernels=[lab.kernel, NEW_KERNEL])
    lab.install_ofed('gpu01', build=OFED)
    os.makedirs(os.path.join(lab.root('gpu01'), 'var', 'lib', 'dkms', 'knem', '1.1.4.90mlnx3', 'source'))
    out = lab.ok('gpu01', ['dkms', 'status'])
    assert out == ('knem/1.1.4.90mlnx3: added\n'
                   'mlnx-ofed-kernel/%s, %s, x86_64: installed\n'
                   'nvidia/580.95.05, %s, x86_64: installed\n'
                   'nvidia/580.95.05, %s, x86_64: installed\n' % (OFED, lab.kernel, lab.kernel, NEW_KERNEL))
    # the collection's parser reads it whole, and finds what the newer kernel lacks
    assert parse_dkms_status(out)['errors'] == []
    report = dkms_report(out, lab.kernel, [lab.kernel, NEW_KERNEL])
    assert [entry['module'] for entry in report['missing']] == ['knem', 'mlnx-ofed-kernel']
    # dkms's filters
    assert lab.ok('gpu01', ['dkms', 'status', '-m', 'nvidia', '-k', NEW_KERNEL]) == \
        'nvidia/580.95.05, %s, x86_64: installed\n' % NEW_KERNEL
    assert lab.ok('gpu01', ['dkms', 'status', 'mlnx-ofed-kernel/%s' % OFED]).startswith('mlnx-ofed-kernel/')
    assert lab.ok('gpu01', ['dkms', '--version']) == 'dkms-3.0.10\n'
    assert lab.run('gpu01', ['dkms', 'autoinstall'])[0] == 2
    assert lab.run('gpu01', ['dkms', 'status', '--bogus'])[0] == 1


def test_the_mirror_stand_ins_layout_is_what_dkms_status_reads(tmp_path):
    """The postinst of lab/mirror's DKMS stand-ins writes <module>/<version>/<kernel>/x86_64/module/<ko>.ko and a
    source link (lab/mirror/files/dkms-postinst.sh)."""
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    tree = os.path.join(lab.root('gpu01'), 'var', 'lib', 'dkms', 'mlnx-ofed-kernel', OFED)
    os.makedirs(os.path.join(tree, lab.kernel, 'x86_64', 'module'))
    with open(os.path.join(tree, lab.kernel, 'x86_64', 'module', 'mlx5_core.ko'), 'w', encoding='utf-8') as handle:
        handle.write('aicluster-lab stand-in module=mlnx-ofed-kernel\n')
    os.symlink('/usr/src/mlnx-ofed-kernel-%s' % OFED, os.path.join(tree, 'source'))
    assert driver.dkms_builds(lab.root('gpu01')) == [('mlnx-ofed-kernel', OFED, lab.kernel, 'x86_64')]


def test_reboot_into_a_kernel_without_doca_build_loads_the_inbox_rdma_modules(tmp_path):
    """DKMS built nvidia for both kernels, DOCA's mlnx-ofed-kernel only for the old one: the boot into the new one
    loads the distribution's (inbox) mlx5_core and ib_core, with no OFED version, and the driver."""
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    old = lab.kernel
    lab.install_driver('gpu01', '580.95.05', kernels=[old, NEW_KERNEL])
    lab.install_ofed('gpu01', build=OFED, kernels=[old])
    lab.ok('gpu01', ['hwsim', 'reboot'])
    loaded = dict(driver.loaded(lab.root('gpu01')))
    assert loaded['mlx5_core'] == '24.10-1.1.4' and loaded['nvidia'] == '580.95.05'
    lab.kernel = NEW_KERNEL
    status, out, _err = lab.run('gpu01', ['hwsim', 'reboot'])
    assert status == 0 and 'loaded mlx5_core\n' in out and 'loaded ib_core\n' in out
    loaded = dict(driver.loaded(lab.root('gpu01')))
    assert loaded['mlx5_core'] is None and loaded['ib_core'] is None  # inbox: no OFED version
    assert loaded['nvidia'] == '580.95.05'
    assert 'mlnx-ofed-kernel/%s, %s, x86_64: installed\n' % (OFED, old) == \
        lab.ok('gpu01', ['dkms', 'status', '-m', 'mlnx-ofed-kernel'])


def test_update_initramfs_writes_the_modprobe_d_files_for_the_newest_kernel(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    root = lab.root('gpu01')
    os.makedirs(os.path.join(root, 'etc', 'modprobe.d'))
    with open(os.path.join(root, 'etc', 'modprobe.d', 'blacklist-nouveau.conf'), 'w', encoding='utf-8') as handle:
        handle.write('# managed\nblacklist nouveau\noptions nouveau modeset=0\n')
    assert lab.ok('gpu01', ['update-initramfs', '-u']) == 'update-initramfs: Generating /boot/initrd.img-%s\n' % lab.kernel
    with open(os.path.join(root, 'boot', 'initrd.img-%s' % lab.kernel), encoding='utf-8') as handle:
        text = handle.read()
    assert 'modprobe.d/blacklist-nouveau.conf: blacklist nouveau\n' in text
    assert 'modprobe.d/blacklist-nouveau.conf: options nouveau modeset=0\n' in text
    for kernel in (lab.kernel, NEW_KERNEL):
        open(os.path.join(root, 'boot', 'vmlinuz-%s' % kernel), 'w', encoding='utf-8').close()
    assert lab.ok('gpu01', ['update-initramfs', '-u']) == 'update-initramfs: Generating /boot/initrd.img-%s\n' % NEW_KERNEL
    assert lab.ok('gpu01', ['update-initramfs', '-u', '-k', 'all']).count('Generating') == 2
    assert lab.run('gpu01', ['update-initramfs'])[0] == 2
