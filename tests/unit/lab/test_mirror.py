"""lab/mirror/build.py: the lab's signed package mirror, checked with the real tools (dpkg-deb, gpgv, apt).

One build into a temporary directory serves every test; apt runs with a private state, cache and source
list (nothing of this machine's apt is read or written but its configuration parts).
"""
import base64
import gzip
import hashlib
import os
import re
import shutil
import subprocess
import time

import pytest

from _paths import REPO, load_program

TOOLS = ('dpkg-deb', 'gpg', 'gpgv', 'apt-get', 'apt-cache')
pytestmark = pytest.mark.skipif(any(shutil.which(tool) is None for tool in TOOLS),
                                reason='needs %s (a Debian machine)' % ', '.join(TOOLS))
ENV = dict(os.environ, LC_ALL='C', LANG='C')


def _load(path, name):
    return load_program(os.path.join(REPO, path), name)


@pytest.fixture(scope='module')
def mirror_build():
    return _load('lab/mirror/build.py', 'aicluster_lab_mirror_build')


@pytest.fixture(scope='module')
def tree(tmp_path_factory, mirror_build):
    return mirror_build.build(str(tmp_path_factory.mktemp('mirror') / 'tree'))


def sh(argv, check=True, **kwargs):
    result = subprocess.run(argv, check=False, capture_output=True, text=True, env=kwargs.pop('env', ENV), **kwargs)
    if check:
        assert result.returncode == 0, '%s: rc=%d\n%s%s' % (argv, result.returncode, result.stdout, result.stderr)
    return result


def paragraphs(text):
    """Packages/status paragraphs as dicts (continuation lines joined)."""
    found = []
    for block in text.strip().split('\n\n'):
        fields, key = {}, None
        for line in block.splitlines():
            if line.startswith(' ') and key:
                fields[key] += '\n' + line
            else:
                key, value = line.split(': ', 1)
                fields[key] = value
        found.append(fields)
    return found


def index(tree, repo):
    with open(os.path.join(tree, repo, 'Packages'), encoding='utf-8') as handle:
        return {(p['Package'], p['Version']): p for p in paragraphs(handle.read())}


# ---------------------------------------------------------------- the indexes
# the driver side from lab/mirror/snapshot/cuda-debian12.yml: branch 580 at the upgrade step's two versions, 570
DRIVER = ('nvidia-driver', 'libnvidia-ml1', 'nvidia-kernel-open-dkms', 'nvidia-kernel-dkms')
CUDA = {(name, version) for name in DRIVER for version in ('570.195.03-1', '580.82.07-1', '580.95.05-1')} | {
    (name, version) for name in ('nvidia-fabricmanager', 'nvidia-imex', 'libnvidia-nscq', 'libnvsdm')
    for version in ('580.82.07-1', '580.95.05-1')} | {
    (name, '570.195.03-1') for name in ('nvidia-fabricmanager-570', 'nvidia-imex-570', 'libnvidia-nscq-570',
                                        'libnvsdm-570')} | {
    ('nvlsm', '2025.06.10-1'), ('cuda-toolkit-12-9', '12.9.0-1'), ('cuda-toolkit-12-9', '12.9.1-1'),
    ('cuda', '12.9.1-1'), ('cuda-drivers', '580.95.05-1'), ('cuda-drivers-580', '580.95.05-1'),
    # DCGM 4 and its exporter (lab/mirror/dcgm_packages.py)
    ('datacenter-gpu-manager-4-core', '1:4.4.0-1'), ('datacenter-gpu-manager-4-core', '1:4.4.1-1'),
    ('datacenter-gpu-manager-4-cuda12', '1:4.4.0-1'), ('datacenter-gpu-manager-4-cuda12', '1:4.4.1-1'),
    ('datacenter-gpu-manager-4-cuda13', '1:4.4.0-1'), ('datacenter-gpu-manager-4-cuda13', '1:4.4.1-1'),
    ('datacenter-gpu-manager-exporter', '4.5.2-1'), ('datacenter-gpu-manager-exporter', '4.6.0-1'),
}
DOCA = {
    ('doca-ofed', '2.9.1-1'), ('doca-ofed', '2.9.2-1'),
    ('mlnx-ofed-kernel-dkms', '24.10.OFED.24.10.1.1.4.1-1'), ('mlnx-ofed-kernel-dkms', '24.10.OFED.24.10.2.1.8.1-1'),
    ('mlnx-ofed-kernel-utils', '24.10.OFED.24.10.1.1.4.1-1'), ('mlnx-ofed-kernel-utils', '24.10.OFED.24.10.2.1.8.1-1'),
}


def test_the_indexes_hold_exactly_the_lab_bom_versions(tree):
    assert set(index(tree, 'cuda')) == CUDA
    assert set(index(tree, 'doca')) == DOCA
    assert sorted(os.listdir(tree)) == ['aicluster-lab.asc', 'container-toolkit', 'cuda', 'doca', 'hpc', 'images']
    # Debian's pools leave the epoch out of file names
    assert os.path.exists(os.path.join(tree, 'cuda', 'datacenter-gpu-manager-4-core_4.4.1-1_amd64.deb'))


def test_the_dependency_structure_is_the_real_one(tree):
    cuda, doca = index(tree, 'cuda'), index(tree, 'doca')
    driver = cuda['nvidia-driver', '580.95.05-1']
    assert driver['Depends'] == ('libnvidia-ml1 (= 580.95.05-1), '
                                 'nvidia-kernel-open-dkms (= 580.95.05-1) | nvidia-kernel-dkms (= 580.95.05-1)')
    open_dkms = cuda['nvidia-kernel-open-dkms', '580.82.07-1']
    assert open_dkms['Conflicts'] == 'nvidia-kernel-dkms'
    assert open_dkms['Provides'] == 'nvidia-kernel-dkms-any (= 580.82.07-1)'
    assert cuda['nvidia-kernel-dkms', '580.82.07-1']['Conflicts'] == 'nvidia-kernel-open-dkms'
    # The fabric manager does not depend on the driver: nothing but a pin keeps the two at one version. From 580 it
    # is nvidia-fabricmanager, which provides the old name (gpu-driver-container #451); below 580 the branch name.
    assert 'Depends' not in cuda['nvidia-fabricmanager', '580.95.05-1']
    assert cuda['nvidia-fabricmanager', '580.95.05-1']['Provides'] == 'nvidia-fabricmanager-580'
    assert 'Provides' not in cuda['nvidia-fabricmanager-570', '570.195.03-1']
    assert cuda['libnvsdm', '580.82.07-1']['Provides'] == 'libnvsdm-580'
    assert 'cuda-drivers' in cuda['cuda', '12.9.1-1']['Depends']
    assert doca['doca-ofed', '2.9.2-1']['Depends'] == ('mlnx-ofed-kernel-dkms (= 24.10.OFED.24.10.2.1.8.1-1), '
                                                       'mlnx-ofed-kernel-utils (= 24.10.OFED.24.10.2.1.8.1-1)')


def test_index_entries_match_the_files(tree):
    for repo in ('cuda', 'doca'):
        for entry in index(tree, repo).values():
            with open(os.path.join(tree, repo, entry['Filename']), 'rb') as handle:
                data = handle.read()
            assert int(entry['Size']) == len(data)
            assert entry['SHA256'] == hashlib.sha256(data).hexdigest()
        with open(os.path.join(tree, repo, 'Packages'), 'rb') as plain, \
                open(os.path.join(tree, repo, 'Packages.gz'), 'rb') as packed:
            assert gzip.decompress(packed.read()) == plain.read()


def test_release_lists_the_indexes_and_is_signed_by_the_published_key(tree, tmp_path):
    armored = open(os.path.join(tree, 'aicluster-lab.asc'), encoding='ascii').read()
    assert armored.startswith('-----BEGIN PGP PUBLIC KEY BLOCK-----')
    # gpgv reads binary keyrings only (apt dearmors an .asc itself).
    body = armored.split('\n\n', 1)[1].split('\n=', 1)[0]
    keyring = tmp_path / 'key.gpg'
    keyring.write_bytes(base64.b64decode(''.join(body.split())))
    for repo in ('cuda', 'doca'):
        base = os.path.join(tree, repo)
        release = open(os.path.join(base, 'Release'), encoding='utf-8').read()
        for name in ('Packages', 'Packages.gz'):
            with open(os.path.join(base, name), 'rb') as handle:
                data = handle.read()
            assert re.search(r'^ %s +%d %s$' % (hashlib.sha256(data).hexdigest(), len(data), re.escape(name)),
                             release, re.M)
        assert 'Good signature' in sh(['gpgv', '--keyring', str(keyring), os.path.join(base, 'InRelease')]).stderr
        sh(['gpgv', '--keyring', str(keyring), os.path.join(base, 'Release.gpg'), os.path.join(base, 'Release')])


# ---------------------------------------------------------------- the packages
def deb(tree, repo, name, version):
    return os.path.join(tree, repo, '%s_%s_amd64.deb' % (name, version))


def test_packages_carry_their_control_fields_and_scripts(tree):
    info = sh(['dpkg-deb', '-I', deb(tree, 'cuda', 'nvidia-kernel-open-dkms', '580.95.05-1')]).stdout
    assert ' Package: nvidia-kernel-open-dkms' in info and ' Version: 580.95.05-1' in info
    assert re.search(r'\bpostinst\b', info) and re.search(r'\bprerm\b', info)
    listing = sh(['dpkg-deb', '-c', deb(tree, 'cuda', 'libnvidia-ml1', '580.95.05-1')]).stdout
    assert './usr/lib/x86_64-linux-gnu/libnvidia-ml.so.580.95.05' in listing
    assert './usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 -> libnvidia-ml.so.580.95.05' in listing
    assert 'root/root' in listing and '2025-01-01 00:00' in listing
    listing = sh(['dpkg-deb', '-c', deb(tree, 'cuda', 'nvidia-fabricmanager', '580.82.07-1')]).stdout
    assert './usr/bin/nv-fabricmanager' in listing and './lib/systemd/system/nvidia-fabricmanager.service' in listing
    assert './usr/src/mlnx-ofed-kernel-24.10.OFED.24.10.1.1.4.1/dkms.conf' in sh(
        ['dpkg-deb', '-c', deb(tree, 'doca', 'mlnx-ofed-kernel-dkms', '24.10.OFED.24.10.1.1.4.1-1')]).stdout


def test_every_maintainer_script_is_valid_sh(tree, tmp_path):
    checked = 0
    for repo in ('cuda', 'doca'):
        for name in sorted(os.listdir(os.path.join(tree, repo))):
            if not name.endswith('.deb'):
                continue
            control = tmp_path / name
            sh(['dpkg-deb', '-e', os.path.join(tree, repo, name), str(control)])
            for script in ('postinst', 'prerm'):
                if (control / script).exists():
                    sh(['sh', '-n', str(control / script)])
                    checked += 1
    # the DKMS and service packages, DCGM's core and exporter, both versions; branch 570's DKMS and services
    assert checked == 2 * (4 + 2 + 2 + 2 + 2 + 2) + (4 + 2 + 2)


def test_the_packages_are_reproducible(tree, mirror_build, tmp_path):
    pkg = next(p for p in mirror_build.all_packages() if p['name'] == 'nvidia-imex')
    filename, _control = mirror_build.build_deb(pkg, str(tmp_path / 'work'), str(tmp_path))
    with open(tmp_path / filename, 'rb') as again, open(os.path.join(tree, 'cuda', filename), 'rb') as first:
        assert again.read() == first.read()


@pytest.fixture(scope='module')
def extracted(tree, tmp_path_factory):
    root = tmp_path_factory.mktemp('root')
    for repo, name, version in (('cuda', 'nvidia-fabricmanager', '580.95.05-1'),
                                ('cuda', 'nvidia-imex', '580.95.05-1'),
                                ('cuda', 'libnvidia-ml1', '580.95.05-1'),
                                ('cuda', 'cuda-toolkit-12-9', '12.9.1-1'),
                                ('doca', 'mlnx-ofed-kernel-utils', '24.10.OFED.24.10.1.1.4.1-1')):
        sh(['dpkg-deb', '-x', deb(tree, repo, name, version), str(root)])
    return root


def _loaded(tmp_path, version):
    path = tmp_path / 'nvidia-version'
    path.write_text(version + '\n')
    config = tmp_path / 'fm.cfg'
    config.write_text('DAEMONIZE=0\nLOG_FILE_NAME=%s\n' % (tmp_path / 'fm.log'))
    return dict(ENV, AICLUSTER_LAB_MODULE_VERSION_FILE=str(path)), str(config)


def test_fabric_manager_refuses_a_different_loaded_driver(extracted, tmp_path):
    program = str(extracted / 'usr/bin/nv-fabricmanager')
    assert sh([program, '--version']).stdout == 'Fabric Manager version is : 580.95.05\n'
    env, config = _loaded(tmp_path, '580.82.07')
    result = sh([program, '-c', config], check=False, env=env, timeout=10)
    assert result.returncode == 1
    assert result.stderr == ("fabric manager NVIDIA GPU driver interface version 580.95.05 don't match with driver "
                             "version 580.82.07. Please update with matching NVIDIA driver package.\n")
    assert "[ERROR] fabric manager NVIDIA GPU driver interface version 580.95.05 don't match" in (
        tmp_path / 'fm.log').read_text()


def test_fabric_manager_runs_with_the_matching_driver(extracted, tmp_path):
    env, config = _loaded(tmp_path, '580.95.05')
    process = subprocess.Popen([str(extracted / 'usr/bin/nv-fabricmanager'), '-c', config], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(1)
        assert process.poll() is None, process.communicate()
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0
    assert 'nv-fabricmanager 580.95.05 started (driver 580.95.05)' in (tmp_path / 'fm.log').read_text()


def test_fabric_manager_without_a_loaded_driver_fails(extracted, tmp_path):
    env, config = _loaded(tmp_path, '580.95.05')
    env['AICLUSTER_LAB_MODULE_VERSION_FILE'] = str(tmp_path / 'absent')
    result = sh([str(extracted / 'usr/bin/nv-fabricmanager'), '-c', config], check=False, env=env, timeout=10)
    assert result.returncode == 1 and 'not loaded' in result.stderr


def test_imex_toolkit_and_ofed_stand_ins_report_their_versions(extracted, tmp_path):
    assert sh([str(extracted / 'usr/bin/nvidia-imex'), '--version']).stdout == 'IMEX version is: 580.95.05\n'
    env, config = _loaded(tmp_path, '580.82.07')
    result = sh([str(extracted / 'usr/bin/nvidia-imex'), '-c', config], check=False, env=env, timeout=10)
    assert result.returncode == 1 and 'version 580.95.05 don\'t match with driver version 580.82.07' in result.stderr
    nvcc = sh([str(extracted / 'usr/local/cuda-12.9/bin/nvcc'), '--version']).stdout
    assert 'Cuda compilation tools, release 12.9, V12.9.86' in nvcc
    assert '"version": "12.9.1"' in (extracted / 'usr/local/cuda-12.9/version.json').read_text()
    assert sh(['sh', str(extracted / 'usr/bin/ofed_info'), '-s']).stdout == 'OFED-internal-24.10-1.1.4:\n'
    library = (extracted / 'usr/lib/x86_64-linux-gnu/libnvidia-ml.so.580.95.05').read_bytes()
    assert library.startswith(b'\x7fELF') and b'libnvidia-ml.so.1\0' in library


def test_version_helpers(mirror_build):
    assert mirror_build.upstream('580.95.05-1') == '580.95.05'
    assert mirror_build.branch('580.95.05-1') == '580'
    assert mirror_build.ofed_release('24.10.OFED.24.10.2.1.8.1-1') == '24.10-2.1.8'


# ---------------------------------------------------------------- apt, as a host sees the mirror
@pytest.fixture(scope='module')
def apt(tree, tmp_path_factory):
    """apt-get/apt-cache with a private state, cache, status file and a file:// source list of the mirror."""
    base = tmp_path_factory.mktemp('apt')
    for folder in ('state/lists/partial', 'cache/archives/partial', 'preferences.d'):
        (base / folder).mkdir(parents=True)
    (base / 'status').write_text('')
    key = os.path.join(tree, 'aicluster-lab.asc')
    # The suites the real repositories use (roles/bom): NVIDIA's "/", DOCA's "./"; both name a flat repository.
    (base / 'sources.list').write_text(''.join(
        'deb [signed-by=%s] file://%s/ %s\n' % (key, os.path.join(tree, repo), suite)
        for repo, suite in (('cuda', '/'), ('doca', './'))))
    options = ['-o', 'Dir::State=%s' % (base / 'state'), '-o', 'Dir::State::status=%s' % (base / 'status'),
               '-o', 'Dir::Cache=%s' % (base / 'cache'), '-o', 'Dir::Etc::sourcelist=%s' % (base / 'sources.list'),
               '-o', 'Dir::Etc::sourceparts=-', '-o', 'Dir::Etc::preferences=%s' % (base / 'preferences'),
               '-o', 'Dir::Etc::preferencesparts=%s' % (base / 'preferences.d'), '-o', 'APT::Get::List-Cleanup=0',
               '-o', 'Debug::NoLocking=1', '-o', 'APT::Sandbox::User=root']

    def call(tool, *args, check=True, status=None):
        (base / 'status').write_text(status or '')
        return sh([tool] + options + list(args), check=check)
    update = call('apt-get', 'update')
    assert 'Err' not in update.stdout and 'W:' not in update.stderr, update.stdout + update.stderr
    return call


def installs(output):
    """{package: (old version or None, new version)} from apt-get --simulate's Inst lines."""
    found = {}
    for match in re.finditer(r'^Inst (\S+) (?:\[(\S+)\] )?\((\S+) ', output, re.M):
        found[match.group(1)] = (match.group(2), match.group(3))
    return found


def test_apt_sees_both_versions_signed(apt):
    policy = apt('apt-cache', 'policy', 'nvidia-driver', 'doca-ofed').stdout
    assert re.search(r'nvidia-driver:\n  Installed: \(none\)\n  Candidate: 580\.95\.05-1', policy)
    assert '580.82.07-1 500' in policy and '2.9.1-1 500' in policy and '2.9.2-1 500' in policy
    show = apt('apt-cache', 'show', 'doca-ofed=2.9.1-1').stdout
    assert 'Depends: mlnx-ofed-kernel-dkms (= 24.10.OFED.24.10.1.1.4.1-1)' in show


def test_apt_installs_a_pinned_driver_with_the_open_modules_by_default(apt):
    plan = installs(apt('apt-get', 'install', '--simulate', 'nvidia-driver=580.95.05-1').stdout)
    assert plan == {'nvidia-driver': (None, '580.95.05-1'), 'libnvidia-ml1': (None, '580.95.05-1'),
                    'nvidia-kernel-open-dkms': (None, '580.95.05-1')}


def test_an_older_driver_needs_every_package_pinned(apt):
    # As with the real repository: the dependencies' candidates are the newest, so naming only the driver fails.
    result = apt('apt-get', 'install', '--simulate', 'nvidia-driver=580.82.07-1', check=False)
    assert result.returncode != 0 and 'libnvidia-ml1 (= 580.82.07-1) but 580.95.05-1 is to be installed' in result.stdout
    plan = installs(apt('apt-get', 'install', '--simulate', 'nvidia-driver=580.82.07-1', 'libnvidia-ml1=580.82.07-1',
                        'nvidia-kernel-open-dkms=580.82.07-1').stdout)
    assert set(plan.values()) == {(None, '580.82.07-1')} and len(plan) == 3


def test_the_580_branch_names_are_virtual_as_in_nvidias_repository(apt):
    # NVIDIA/gpu-driver-container pull request #451: the pinned install of the branch name fails, the real name works
    result = apt('apt-get', 'install', '--simulate', 'nvidia-fabricmanager-580=580.95.05-1', check=False)
    assert result.returncode != 0
    assert "Version '580.95.05-1' for 'nvidia-fabricmanager-580' was not found" in result.stdout + result.stderr
    assert installs(apt('apt-get', 'install', '--simulate', 'nvidia-fabricmanager=580.95.05-1').stdout) == {
        'nvidia-fabricmanager': (None, '580.95.05-1')}
    plan = installs(apt('apt-get', 'install', '--simulate', 'nvidia-driver=570.195.03-1', 'libnvidia-ml1=570.195.03-1',
                        'nvidia-kernel-open-dkms=570.195.03-1', 'nvidia-fabricmanager-570=570.195.03-1').stdout)
    assert set(plan.values()) == {(None, '570.195.03-1')} and len(plan) == 4


def test_the_cuda_metapackage_drags_a_driver_in(apt):
    plan = installs(apt('apt-get', 'install', '--simulate', 'cuda').stdout)
    assert {'cuda-drivers', 'cuda-drivers-580', 'nvidia-driver', 'cuda-toolkit-12-9'} <= set(plan)
    assert installs(apt('apt-get', 'install', '--simulate', 'cuda-toolkit-12-9=12.9.1-1').stdout) == {
        'cuda-toolkit-12-9': (None, '12.9.1-1')}


def _status(*packages):
    return ''.join('Package: %s\nStatus: install ok installed\nVersion: %s\nArchitecture: amd64\n'
                   'Maintainer: lab\nDescription: installed\n%s\n' % (name, version, extra)
                   for name, version, extra in packages)


def test_an_upgrade_is_a_real_apt_upgrade(apt):
    old = _status(('nvidia-driver', '580.82.07-1',
                   'Depends: libnvidia-ml1 (= 580.82.07-1), nvidia-kernel-open-dkms (= 580.82.07-1)\n'),
                  ('libnvidia-ml1', '580.82.07-1', ''),
                  ('nvidia-kernel-open-dkms', '580.82.07-1', 'Provides: nvidia-kernel-dkms-any (= 580.82.07-1)\n'))
    result = apt('apt-get', 'install', '--simulate', 'nvidia-driver=580.95.05-1', 'libnvidia-ml1=580.95.05-1',
                 'nvidia-kernel-open-dkms=580.95.05-1', status=old)
    assert installs(result.stdout) == {name: ('580.82.07-1', '580.95.05-1')
                                       for name in ('nvidia-driver', 'libnvidia-ml1', 'nvidia-kernel-open-dkms')}
    # The two module flavours conflict: choosing the proprietary one removes the open one.
    result = apt('apt-get', 'install', '--simulate', 'nvidia-kernel-dkms=580.82.07-1', status=old)
    assert re.search(r'^Remv nvidia-kernel-open-dkms', result.stdout, re.M)


def test_a_doca_version_installs_exactly_its_kernel_pair(apt):
    plan = installs(apt('apt-get', 'install', '--simulate', 'doca-ofed=2.9.1-1',
                        'mlnx-ofed-kernel-dkms=24.10.OFED.24.10.1.1.4.1-1',
                        'mlnx-ofed-kernel-utils=24.10.OFED.24.10.1.1.4.1-1').stdout)
    assert plan == {'doca-ofed': (None, '2.9.1-1'),
                    'mlnx-ofed-kernel-dkms': (None, '24.10.OFED.24.10.1.1.4.1-1'),
                    'mlnx-ofed-kernel-utils': (None, '24.10.OFED.24.10.1.1.4.1-1')}
    result = apt('apt-get', 'install', '--simulate', 'doca-ofed=2.9.1-1', 'mlnx-ofed-kernel-dkms=24.10.OFED.24.10.2.1.8.1-1',
                 check=False)
    assert result.returncode != 0 and 'mlnx-ofed-kernel-dkms (= 24.10.OFED.24.10.1.1.4.1-1)' in result.stdout


# ---------------------------------------------------------------- cache and pack
def test_the_cache_builds_a_recipe_once_and_drops_older_ones(mirror_build, tmp_path):
    (tmp_path / 'mirror-0123456789ab').mkdir()
    path, built = mirror_build.build_cached(str(tmp_path))
    assert built and os.path.basename(path) == 'mirror-%s' % mirror_build.recipe_hash()
    assert mirror_build.build_cached(str(tmp_path)) == (path, False)
    assert sorted(os.listdir(tmp_path)) == [os.path.basename(path)]


def test_pack_is_reproducible(tree, mirror_build, tmp_path):
    mirror_build.pack(tree, str(tmp_path / 'a.tar'))
    mirror_build.pack(tree, str(tmp_path / 'b.tar'))
    assert (tmp_path / 'a.tar').read_bytes() == (tmp_path / 'b.tar').read_bytes()


def test_lab_serves_the_cached_tree_from_ctl01(monkeypatch, tmp_path):
    lab = _load('lab/lab.py', 'aicluster_lab_for_mirror')
    monkeypatch.setattr(lab, 'build_package_mirror', lambda: '/state/mirror-abc')
    calls = []
    monkeypatch.setattr(lab, 'run_playbook', lambda *args: calls.append(args) or 0)
    lab.install_package_mirror(str(tmp_path / 'hosts.yml'), 'demo')
    assert calls == [(str(tmp_path / 'hosts.yml'), 'demo', lab.PACKAGE_MIRROR_INSTALL, 'the package mirror',
                      {'mirror_dir': '/state/mirror-abc', 'mirror_host': 'ctl01'})]


def test_the_readme_lists_every_version(mirror_build):
    with open(os.path.join(REPO, 'lab', 'mirror', 'README.md'), encoding='utf-8') as handle:
        readme = handle.read()
    versions = {p['version'] for p in mirror_build.all_packages()}
    assert sorted(v for v in versions if v not in readme) == []
