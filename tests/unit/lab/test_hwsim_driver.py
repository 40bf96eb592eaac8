"""lab/hwsim driver model: the NVIDIA userland, DKMS builds and loaded modules the lab mirror's stand-in packages leave,
as nvidia-smi, dcgmi, dmesg, lsmod, modprobe, `hwsim boot|reboot|boot-id` and `hwsim devices` (NVSwitch nodes) see
them. Without the stand-in library the GPU tools print the profile's driver, as before."""
import os
import re
import stat
import sys

import pytest

from _paths import REPO

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))

# pylint: disable=wrong-import-position
from ansible_collections.aicluster.infra.plugins.module_utils.dcgm import parse_dcgmi_diag  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.nvidia_smi import parse_nvidia_smi_q, parse_query_gpu_csv  # noqa: E402
from hwsim import cli, driver, profile as profiles  # noqa: E402
from hwsim.testing import make_lab  # noqa: E402
from hwsim.tools import kmod  # noqa: E402

OLD, NEW = '580.82.07', '580.95.05'
FAILED = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
          "Make sure that the latest NVIDIA driver is installed and running.\n\n")
MISMATCH = 'Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 580.95\n'
ROOT_ONLY = pytest.mark.skipif(not hasattr(os, 'geteuid') or os.geteuid() != 0,
                               reason='mknod of character devices needs CAP_MKNOD (root)')


def _driver_versions(lab, host):
    """The driver version in every view that prints it: table header (NVIDIA-SMI and Driver Version), -q, -q GSP
    firmware, --query-gpu, dcgmi diag (table); and the CUDA version of the header."""
    table = lab.ok(host, ['nvidia-smi'])
    header = re.search(r'NVIDIA-SMI (\S+)\s+Driver Version: (\S+)\s+CUDA Version: (\S+)', table)
    report = lab.ok(host, ['nvidia-smi', '-q'])
    parsed = parse_nvidia_smi_q(report)
    gsp = set(re.findall(r'GSP Firmware Version\s+: (\S+)', report))
    rows = parse_query_gpu_csv(lab.ok(host, ['nvidia-smi', '--query-gpu=driver_version', '--format=csv,noheader']),
                               fields=['driver_version'])
    status, diag, _err = lab.run(host, ['dcgmi', 'diag', '-r', '1'])
    assert status == 0
    detected = re.search(r'Driver Version Detected\s+\| (\S+)', diag).group(1)
    assert parse_dcgmi_diag(diag)['overall'] == 'pass'
    return {'smi': header.group(1), 'driver': header.group(2), 'cuda': header.group(3), 'q': parsed['driver_version'],
            'q_cuda': parsed['cuda_version'], 'gsp': gsp, 'query': set(row['driver_version'] for row in rows), 'dcgmi': detected}


def test_without_the_stand_in_library_the_profile_driver_is_printed(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    before = _driver_versions(lab, 'gpu01')
    assert before == {'smi': '535.183.01', 'driver': '535.183.01', 'cuda': '12.2', 'q': '535.183.01', 'q_cuda': '12.2',
                      'gsp': {'535.183.01'}, 'query': {'535.183.01'}, 'dcgmi': '535.183.01'}
    lab.install_driver('gpu01', NEW, userland=False)  # a DKMS build alone: no NVML, nothing changes
    assert _driver_versions(lab, 'gpu01') == before
    assert 'NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.183.01' in lab.ok('gpu01', ['dmesg'])
    assert not os.path.exists(os.path.join(lab.root('gpu01'), 'run', 'hwsim', 'module', 'nvidia'))


def test_nvidia_smi_loads_the_built_driver_and_every_view_prints_it(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    lab.install_driver('gpu01', OLD)
    assert 'NVRM' not in lab.ok('gpu01', ['dmesg'])  # nothing loaded yet
    versions = _driver_versions(lab, 'gpu01')
    assert versions == {'smi': OLD, 'driver': OLD, 'cuda': '13.0', 'q': OLD, 'q_cuda': '13.0', 'gsp': {OLD},
                        'query': {OLD}, 'dcgmi': OLD}
    with open(os.path.join(lab.root('gpu01'), 'run', 'hwsim', 'module', 'nvidia', 'version'), encoding='utf-8') as handle:
        assert handle.read() == OLD + '\n'  # what /sys/module/nvidia/version holds
    assert 'NVRM: loading NVIDIA UNIX x86_64 Kernel Module  %s' % OLD in lab.ok('gpu01', ['dmesg'])
    assert lab.ok('gpu01', ['nvidia-smi', '--help']).startswith('NVIDIA System Management Interface -- v%s' % OLD)
    # the other host is untouched (host-local /run and /usr)
    assert _driver_versions(lab, 'gpu02')['driver'] == '535.183.01'


def test_no_build_for_the_running_kernel_is_the_real_failure(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    lab.install_driver('gpu01', OLD, kernels=['6.1.0-30-amd64'])  # built for a newer kernel, not the running one
    assert lab.run('gpu01', ['nvidia-smi']) == (9, FAILED, '')
    assert lab.run('gpu01', ['nvidia-smi', '--query-gpu=driver_version', '--format=csv']) == (9, FAILED, '')
    status, _out, err = lab.run('gpu01', ['dcgmi', 'discovery', '-l'])
    assert status == 255 and 'Unable to connect to host engine' in err
    assert lab.ok('gpu01', ['lsmod']) == 'Module                  Size  Used by\n'


def test_driver_library_mismatch_until_the_reboot(tmp_path):
    """An upgrade without a reboot: the new userland, the old module loaded (gpu-operator #544, NVML rc 18)."""
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    lab.install_driver('gpu01', OLD)
    assert lab.ok('gpu01', ['nvidia-smi', '-L']).count('GPU-') == 8
    lab.remove_driver('gpu01', OLD)
    lab.install_driver('gpu01', NEW)
    for argv in (['nvidia-smi'], ['nvidia-smi', '-q'], ['nvidia-smi', '--query-gpu=driver_version', '--format=csv,noheader']):
        assert lab.run('gpu01', argv) == (18, MISMATCH, '')
    assert lab.run('gpu01', ['dcgmi', 'diag', '-r', '1'])[0] == 255
    assert driver.loaded_version(lab.root('gpu01'), 'nvidia') == OLD
    status, out, _err = lab.run('gpu01', ['hwsim', 'reboot'])
    assert status == 0 and 'loaded nvidia %s\n' % NEW in out and 'loaded nvidia_uvm %s\n' % NEW in out
    assert _driver_versions(lab, 'gpu01')['driver'] == NEW


def test_nvml_version_is_the_userland_major_minor():
    assert driver.nvml_version('580.95.05') == '580.95' and driver.nvml_version('570.124.06') == '570.124'
    assert driver.cuda_version('535.183.01', '12.2') == '12.2' and driver.cuda_version('580.82.07', '12.2') == '13.0'
    assert driver.cuda_version('999.1.2', '12.8') == '12.8'


def test_userland_version_follows_libnvidia_ml_so_1(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    assert driver.userland_version(lab.root('gpu01')) is None
    lab.install_driver('gpu01', NEW)
    lab.install_driver('gpu01', OLD)  # libnvidia-ml.so.1 now points at OLD, both files present
    assert driver.userland_version(lab.root('gpu01')) == OLD
    os.unlink(os.path.join(lab.root('gpu01'), 'usr', 'lib', 'x86_64-linux-gnu', 'libnvidia-ml.so.1'))
    assert driver.userland_version(lab.root('gpu01')) == NEW  # no link: the newest


# --------------------------------------------------------------------------
# lsmod, modprobe


LSMOD_LINE = re.compile(r'^(?P<name>\S+) +(?P<size>\d+)  (?P<count>\d+)(?: (?P<users>\S+))?$')


def _lsmod(lab, host):
    out = lab.ok(host, ['lsmod'])
    lines = out.splitlines()
    assert lines[0] == 'Module                  Size  Used by'
    rows = []
    for line in lines[1:]:
        match = LSMOD_LINE.match(line)
        assert match and len(line.split()[0]) <= 19 and line.index(match.group('size')) + len(match.group('size')) == 28, line
        rows.append((match.group('name'), int(match.group('count')), (match.group('users') or '').split(',') if match.group('users') else []))
    return rows


def test_modprobe_peermem_needs_a_build_nvidia_and_doca(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    kernel = lab.kernel
    assert lab.run('gpu01', ['modprobe', 'nvidia_peermem']) == (
        1, '', 'modprobe: FATAL: Module nvidia_peermem not found in directory /lib/modules/%s\n' % kernel)
    lab.install_driver('gpu01', OLD, modules=('nvidia.ko', 'nvidia-uvm.ko'))  # no nvidia-peermem.ko built
    assert lab.run('gpu01', ['modprobe', 'nvidia-peermem'])[2] == (
        'modprobe: FATAL: Module nvidia-peermem not found in directory /lib/modules/%s\n' % kernel)
    assert lab.run('gpu01', ['modprobe', '-q', 'nvidia_peermem']) == (1, '', '')
    lab.install_driver('gpu01', OLD)
    # inbox ib_core has no peer-memory API: nvidia-peermem's init returns -EINVAL
    assert lab.run('gpu01', ['modprobe', 'nvidia_peermem']) == (1, '', "modprobe: ERROR: could not insert 'nvidia_peermem': Invalid argument\n")
    assert driver.loaded_version(lab.root('gpu01'), 'ib_core') is None  # the inbox one: its dependencies loaded first
    lab.install_ofed('gpu01')
    lab.install_driver('gpu01', OLD)  # built after DOCA (the rdma stage, then the gpu stage)
    # DOCA installed, its ib_core not loaded yet (no reboot): the peer-memory symbols are missing
    assert lab.run('gpu01', ['modprobe', '-v', 'nvidia_peermem']) == (1, '', UNKNOWN_SYMBOL)
    assert [re.sub(r'^\[ *\d+\.\d{6}\] ', '', line) for line in lab.ok('gpu01', ['dmesg']).splitlines()[-2:]] == [
        'nvidia_peermem: Unknown symbol ib_register_peer_memory_client (err -2)',
        'nvidia_peermem: Unknown symbol ib_unregister_peer_memory_client (err -2)']
    assert 'nvidia_peermem' not in dict(driver.loaded(lab.root('gpu01')))
    lab.ok('gpu01', ['hwsim', 'reboot'])
    assert driver.loaded_version(lab.root('gpu01'), 'ib_core') == '24.10-1.1.4'  # DOCA's, from the OFED DKMS build
    assert driver.loaded_version(lab.root('gpu01'), 'mlx5_core') == '24.10-1.1.4'
    assert 'Unknown symbol' not in lab.ok('gpu01', ['dmesg'])  # the ring buffer of the boot before
    assert lab.run('gpu01', ['modprobe', '-v', 'nvidia_peermem']) == (
        0, 'insmod /lib/modules/%s/updates/dkms/nvidia-peermem.ko \n' % kernel, '')  # nvidia and ib_core loaded at boot
    assert lab.run('gpu01', ['modprobe', 'nvidia_peermem']) == (0, '', '')  # loaded: nothing to do
    rows = _lsmod(lab, 'gpu01')
    assert rows[0][0] == 'nvidia_peermem' and dict((name, users) for name, _count, users in rows)['ib_core'][0] == 'nvidia_peermem'
    assert driver.loaded_version(lab.root('gpu01'), 'nvidia_peermem') == OLD


UNKNOWN_SYMBOL = "modprobe: ERROR: could not insert 'nvidia_peermem': Unknown symbol in module, or unknown parameter (see dmesg)\n"
INVALID = "modprobe: ERROR: could not insert 'nvidia_peermem': Invalid argument\n"


def test_modinfo_says_which_ib_core_the_next_boot_loads(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    assert lab.run('gpu01', ['modinfo', '-F', 'version', 'ib_core']) == (0, '', '')  # inbox: no version
    assert lab.ok('gpu01', ['modinfo', 'mlx5_core']) == (
        'filename:       /lib/modules/%s/kernel/drivers/net/ethernet/mellanox/mlx5/core/mlx5_core.ko\n'
        'name:           mlx5_core\n' % lab.kernel)
    assert lab.run('gpu01', ['modinfo', 'nvidia']) == (1, '', 'modinfo: ERROR: Module nvidia not found.\n')
    lab.install_ofed('gpu01')
    lab.install_driver('gpu01', OLD)
    assert lab.ok('gpu01', ['modinfo', '-F', 'version', 'ib_core']) == '24.10-1.1.4\n'
    assert lab.ok('gpu01', ['modinfo', '--field=version', 'nvidia-peermem']) == OLD + '\n'
    assert lab.ok('gpu01', ['modinfo', '-F', 'filename', 'ib_core']) == '/lib/modules/%s/updates/dkms/ib_core.ko\n' % lab.kernel
    assert lab.run('gpu01', ['modinfo', '-F', 'version', '-k', '6.9.9-1-amd64', 'ib_core']) == (0, '', '')


def test_peermem_built_before_doca_fails_after_the_reboot_until_rebuilt(tmp_path):
    """A DOCA install or upgrade after the driver: nvidia-peermem.ko keeps the old symbol versions until DKMS rebuilds
    it (Mellanox/nv_peer_memory#39, NVIDIA/gpu-operator#2868)."""
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    root = lab.root('gpu01')
    lab.install_driver('gpu01', OLD)
    lab.install_ofed('gpu01')
    ko = os.path.join(root, 'var', 'lib', 'dkms', 'nvidia', OLD, lab.kernel, 'x86_64', 'module', 'nvidia-peermem.ko')
    ofed = os.path.join(root, 'var', 'lib', 'dkms', 'mlnx-ofed-kernel', '24.10.OFED.24.10.1.1.4.1', lab.kernel)
    os.utime(ko, (1000, 1000))
    for directory, _dirs, _files in os.walk(ofed):
        os.utime(directory, (2000, 2000))
    assert driver.peermem_stale(root, lab.kernel, OLD)
    lab.ok('gpu01', ['hwsim', 'reboot'])
    assert driver.loaded_version(root, 'ib_core') == '24.10-1.1.4'
    assert lab.run('gpu01', ['modprobe', 'nvidia_peermem']) == (1, '', INVALID)
    assert lab.ok('gpu01', ['dmesg']).count('nvidia_peermem: disagrees about version of symbol ib_register_peer_memory_client') == 1
    assert 'nvidia_peermem: Unknown symbol ib_register_peer_memory_client (err -22)' in lab.ok('gpu01', ['dmesg'])
    lab.install_driver('gpu01', OLD)  # dkms install nvidia/OLD --force: a new build
    os.utime(ko, (3000, 3000))
    assert not driver.peermem_stale(root, lab.kernel, OLD)
    assert lab.run('gpu01', ['modprobe', 'nvidia_peermem']) == (0, '', '')


def test_modprobe_remove(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    lab.install_driver('gpu01', OLD)
    # modprobe(8): removing a module that is not loaded succeeds, unless --first-time
    assert lab.run('gpu01', ['modprobe', '-r', 'nvidia']) == (0, '', '')
    assert lab.run('gpu01', ['modprobe', '-r', '--first-time', 'nvidia']) == (1, '', 'modprobe: FATAL: Module nvidia is not in kernel.\n')
    assert lab.run('gpu01', ['modprobe', 'nvidia-uvm']) == (0, '', '')
    assert lab.run('gpu01', ['modprobe', '--first-time', 'nvidia']) == (1, '', 'modprobe: FATAL: Module nvidia already in kernel.\n')
    assert lab.run('gpu01', ['modprobe', '-r', 'nvidia']) == (1, '', 'modprobe: FATAL: Module nvidia is in use.\n')
    # the module, then the dependencies nothing else uses
    assert lab.run('gpu01', ['modprobe', '-rv', 'nvidia_uvm']) == (0, 'rmmod nvidia_uvm\nrmmod nvidia\n', '')
    assert _lsmod(lab, 'gpu01') == []
    assert lab.run('gpu01', ['modprobe', '-n', '-v', 'nvidia_uvm']) == (
        0, 'insmod /lib/modules/%s/updates/dkms/nvidia.ko \ninsmod /lib/modules/%s/updates/dkms/nvidia-uvm.ko \n' % (lab.kernel, lab.kernel), '')
    assert _lsmod(lab, 'gpu01') == []  # a dry run loads nothing


def test_modprobe_of_a_module_built_for_another_driver(tmp_path):
    """Upgraded without a reboot: the new nvidia_peermem does not match the nvidia still loaded."""
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    lab.install_ofed('gpu01')
    lab.install_driver('gpu01', OLD)
    assert lab.run('gpu01', ['modprobe', 'nvidia']) == (0, '', '')
    lab.remove_driver('gpu01', OLD)
    lab.install_driver('gpu01', NEW)
    assert lab.run('gpu01', ['modprobe', 'nvidia_peermem']) == (1, '', "modprobe: ERROR: could not insert 'nvidia_peermem': Invalid argument\n")
    assert lab.run('gpu01', ['modprobe', 'nvidia']) == (0, '', '')  # loaded (the old one): modprobe does nothing


def test_modprobe_nvidia_without_a_gpu(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    lab.install_driver('ctl01', OLD)
    assert lab.run('ctl01', ['modprobe', 'nvidia']) == (1, '', "modprobe: ERROR: could not insert 'nvidia': No such device\n")
    assert lab.run('ctl01', ['modprobe', 'ib_umad']) == (0, '', '')  # inbox RDMA modules load anywhere
    assert [row[0] for row in _lsmod(lab, 'ctl01')] == ['ib_umad', 'ib_core']


def test_modprobe_passes_other_modules_to_the_real_one(tmp_path, monkeypatch):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    monkeypatch.setattr(kmod, 'REAL_MODPROBE', (str(tmp_path / 'no-such-modprobe'),))
    assert lab.run('gpu01', ['modprobe', 'bonding']) == (
        1, '', 'modprobe: FATAL: Module bonding not found in directory /lib/modules/%s\n' % lab.kernel)
    real = tmp_path / 'modprobe'
    real.write_text('#!/bin/sh\nexit 0\n')
    real.chmod(0o755)
    calls = []
    monkeypatch.setattr(kmod, 'REAL_MODPROBE', (str(real),))
    monkeypatch.setattr(kmod, '_exec', lambda path, argv: calls.append(argv))
    lab.run('gpu01', ['modprobe', '-v', 'bonding', 'max_bonds=2'])
    lab.run('gpu01', ['modprobe', '--show-depends', 'nvidia'])  # an option the stand-in does not know
    assert calls == [[str(real), '-v', 'bonding', 'max_bonds=2'], [str(real), '--show-depends', 'nvidia']]


# --------------------------------------------------------------------------
# boot, reboot, boot id


def _fake_systemctl(tmp_path, enabled):
    log = tmp_path / 'systemctl.log'
    script = tmp_path / 'systemctl'
    script.write_text('#!/bin/sh\necho "$@" >> %s\nif [ "$1" = is-enabled ]; then\n  case "$3" in %s) exit 0;; esac\n  exit 1\nfi\n'
                      'case "$2" in nvidia-fabricmanager.service) exit 1;; esac\nexit 0\n' % (log, '|'.join(enabled) or 'none'))
    script.chmod(0o755)
    return str(script), log


def test_reboot_unloads_loads_what_is_built_and_listed_and_restarts_the_enabled_services(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    lab.systemctl, log = _fake_systemctl(tmp_path, ['nvidia-persistenced.service', 'nvidia-fabricmanager.service',
                                                    'nvidia-dcgm.service'])
    lab.install_ofed('gpu01')  # DOCA first, then the driver (built against it: nvidia_peermem loads after the reboot)
    lab.install_driver('gpu01', OLD)
    conf = os.path.join(lab.root('gpu01'), 'etc', 'modules-load.d')
    os.makedirs(conf)
    with open(os.path.join(conf, 'nvidia-peermem.conf'), 'w', encoding='utf-8') as handle:
        handle.write('# GPUDirect RDMA\nnvidia-peermem\n; other comment\nbonding\n')
    first = lab.ok('gpu01', ['hwsim', 'boot-id']).strip()
    assert re.match(r'^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$', first)
    assert lab.ok('gpu01', ['hwsim', 'boot-id']).strip() == first
    lab.ok('gpu01', ['modprobe', 'nvidia'])
    status, out, err = lab.run('gpu01', ['hwsim', 'reboot'])
    assert status == 0
    assert err == 'hwsim: reboot: systemctl restart nvidia-fabricmanager.service failed (exit status 1)\n'
    second = lab.ok('gpu01', ['hwsim', 'boot-id']).strip()
    assert second != first and out.startswith('unloaded nvidia\nboot id %s\n' % second)
    assert out.endswith('restarted nvidia-persistenced.service\nrestarted nvidia-dcgm.service\n')
    loaded = dict(driver.loaded(lab.root('gpu01')))
    assert loaded['nvidia'] == loaded['nvidia_uvm'] == loaded['nvidia_peermem'] == OLD
    assert set(['mlx5_core', 'mlx5_ib', 'ib_umad', 'ib_ipoib', 'rdma_ucm']) <= set(loaded) and 'bonding' not in loaded
    with open(str(log), encoding='utf-8') as handle:
        calls = handle.read().splitlines()
    assert [call for call in calls if call.startswith('restart')] == [
        'restart nvidia-persistenced.service', 'restart nvidia-fabricmanager.service', 'restart nvidia-dcgm.service']
    assert 'is-enabled --quiet nvidia-imex.service' in calls
    # a boot keeps the boot id and loads what is missing
    lab.ok('gpu01', ['modprobe', '-r', 'nvidia_peermem'])
    assert lab.ok('gpu01', ['hwsim', 'boot']) == 'boot id %s\nloaded nvidia_peermem %s\n' % (second, OLD)


def test_reboot_into_a_kernel_without_a_build_loads_no_driver(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    lab.install_driver('gpu01', OLD, kernels=['6.1.0-30-amd64'])
    out = lab.ok('gpu01', ['hwsim', 'reboot'])
    assert 'nvidia' not in out and 'loaded mlx5_core\n' in out  # inbox: no version
    assert lab.run('gpu01', ['nvidia-smi'])[0] == 9


def test_reboot_of_a_host_without_hardware(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    out = lab.ok('ctl01', ['hwsim', 'reboot'])
    assert re.match(r'^boot id \S+\n$', out)
    assert lab.run('ctl01', ['hwsim', 'reboot', 'now'])[0] == 2
    assert lab.run('ctl01', ['hwsim', 'boot', 'x'])[0] == 2


def test_systemctl_is_not_run_outside_the_lab():
    assert driver.systemctl_command({}, '/tmp/x') is None
    assert driver.systemctl_command({'HWSIM_SYSTEMCTL': ''}, '/') is None
    assert driver.systemctl_command({'HWSIM_SYSTEMCTL': '/bin/true'}, '/tmp/x') == '/bin/true'
    assert driver.restart_services(None) == ([], [])


def test_ofed_module_version():
    assert driver.ofed_module_version('24.10.OFED.24.10.1.1.4.1') == '24.10-1.1.4'
    assert driver.ofed_module_version('24.10.OFED.24.10.2.1.8.1') == '24.10-2.1.8'
    assert driver.ofed_module_version('odd') == 'odd'


# --------------------------------------------------------------------------
# NVSwitch device nodes, profiles


def test_nvswitch_nodes_wanted_by_profile(tmp_path):
    # HGX B200 (NVLink 5): no nvidia-nvswitch nodes, its switches are reached through ConnectX bridges (test_hwsim_sysfs)
    expected = {'hgx-h100-ib': 4, 'hgx-h100-roce': 4, 'hgx-a100-ib': 6, 'hgx-b200-ib': 0, 'hgx-h100-ib-12dev': 4}
    for name, count in expected.items():
        lab = make_lab(tmp_path / name, name, compute=1)
        ctx = cli.Context.from_env(lab.env('gpu01'), None, None)
        wanted = cli.wanted_nvswitch_devices(ctx.host_model())
        assert wanted == (dict([('nvidia-nvswitch%d' % number, (509, number)) for number in range(count)]
                               + [('nvidia-nvswitchctl', (509, 255))]) if count else {}), name
        assert cli.wanted_nvswitch_devices(ctx.host_model('ctl01')) == {}
        discovery = lab.ok('gpu01', ['dcgmi', 'discovery', '-l'])
        # DCGM still lists B200's two switches (it reads NVLink 5 switches through NVSDM, not nvidia-nvswitch)
        assert '%d NvSwitches found.' % (count or 2) in discovery


def test_profile_nvswitches_checked():
    data = profiles.load('hgx-h100-ib')
    for bad in (-1, 'four', True, 65):
        data['gpus']['nvswitches'] = bad
        with pytest.raises(profiles.ProfileError, match='nvswitches'):
            profiles.check(data)


@ROOT_ONLY
def test_devices_creates_and_removes_nvswitch_nodes(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    root = tmp_path / 'devroot'
    (root / 'dev').mkdir(parents=True)
    os.mknod(str(root / 'dev' / 'nvidia-nvswitch5'), stat.S_IFCHR | 0o666, os.makedev(509, 5))  # a board with more
    out = lab.ok('gpu01', ['hwsim', 'devices', '--root', str(root)])
    for name, minor in [('nvidia-nvswitch%d' % number, number) for number in range(4)] + [('nvidia-nvswitchctl', 255)]:
        path = str(root / 'dev' / name)
        assert 'created %s (c 509:%d)\n' % (path, minor) in out
        info = os.lstat(path)
        assert stat.S_ISCHR(info.st_mode) and (os.major(info.st_rdev), os.minor(info.st_rdev)) == (509, minor)
        assert stat.S_IMODE(info.st_mode) == 0o666
    assert 'removed %s\n' % (root / 'dev' / 'nvidia-nvswitch5') in out
    assert lab.ok('gpu01', ['hwsim', 'devices', '--root', str(root)]) == ''
    # the default root is the driver model's (HWSIM_ROOT)
    lab.ok('gpu01', ['hwsim', 'devices'])
    assert os.path.exists(os.path.join(lab.root('gpu01'), 'dev', 'nvidia-nvswitchctl'))


def test_a_process_holding_a_gpu_keeps_nvidia_in_use(tmp_path):
    """nvidia-persistenced (hwsim hold) holds /dev/nvidiaN: lsmod counts it, modprobe -r nvidia refuses."""
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    lab.install_driver('gpu01', OLD)
    lab.ok('gpu01', ['modprobe', 'nvidia'])
    dev = os.path.join(lab.root('gpu01'), 'dev')
    os.makedirs(dev)
    with open(os.path.join(dev, 'nvidia-uvm'), 'w', encoding='utf-8'):
        assert _lsmod(lab, 'gpu01') == [('nvidia', 0, [])]  # not a GPU node
    with open(os.path.join(dev, 'nvidia0'), 'w', encoding='utf-8'):
        assert _lsmod(lab, 'gpu01') == [('nvidia', 1, [])]
        assert lab.run('gpu01', ['modprobe', '-r', 'nvidia']) == (1, '', 'modprobe: FATAL: Module nvidia is in use.\n')
    assert lab.run('gpu01', ['modprobe', '-r', 'nvidia']) == (0, '', '')
