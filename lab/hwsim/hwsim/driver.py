"""The driver model: a lab host's NVIDIA userland, its DKMS builds and its loaded kernel modules.

The stand-in packages of the lab's mirror (lab/mirror) install files, and nothing
else; this module reads them as the kernel and NVML would (paths under the host's
root, ``ctx.root``: ``/`` in the lab, a temporary directory in tests):

- the userland: ``usr/lib/x86_64-linux-gnu/libnvidia-ml.so.<V>`` (package
  libnvidia-ml1 ``<V>-1``); ``libnvidia-ml.so.1`` names the one in use when there are two;
- the DKMS builds: ``var/lib/dkms/nvidia/<V>/<KERNEL>/x86_64/module/*.ko`` (the
  nvidia-kernel-(open-)dkms postinst writes them for the running kernel and every
  kernel with a /boot/vmlinuz-*; a text marker naming the flavour, ``open`` or
  ``proprietary``), and ``var/lib/dkms/mlnx-ofed-kernel/<K>/<KERNEL>/`` (DOCA's
  mlnx-ofed-kernel-dkms); every module and version under ``var/lib/dkms`` is what hwsim's ``dkms status``
  lists (``dkms_builds``);
- the loaded modules: ``run/hwsim/module/<name>/`` stands for ``/sys/module/<name>``:
  ``initstate`` (``live``) and, for a module that has one, ``version``
  (``/run/hwsim/module/nvidia/version`` is what the roles read in the lab instead of
  ``/sys/module/nvidia/version``); host-local, so a container restart unloads everything;
- the boot id: ``run/hwsim/boot_id`` (a new one per ``hwsim reboot``; the lab's
  ``boot_time_command`` is ``cat /run/hwsim/boot_id``).

- persistence mode: ``Enabled`` while nvidia-persistenced (``hwsim hold``) runs with persistence
  mode on (``run/hwsim/nvidia-persistenced.persistence-mode``), or after ``nvidia-smi -pm 1``
  in this boot (the driver's legacy persistence mode, ``run/hwsim/legacy-persistence-mode``);
  else ``Disabled`` (persistence_mode);
- the NVSwitch fabric: where the fabric manager stand-in is installed (``usr/bin/nv-fabricmanager``),
  the GPUs are registered only once it has started in this boot: it writes the boot id to
  ``run/hwsim/nv-fabricmanager.started`` (lab/mirror/files/nv-daemon.py); until then nvidia-smi
  says ``In Progress`` (fabric_registered). On NVLink 5 (HGX B200) NVLSM must be installed and ``ib_umad``
  loaded as well, or the GPUs stay ``In Progress``.

The running kernel is ``uname -r`` (``$HWSIM_KERNEL`` in tests). Without the stand-in
library nothing here is consulted: the GPU tools print the profile's driver version
as before.
"""
import os
import re
import shutil
import subprocess
import time
import uuid

LIB_DIR = 'usr/lib/x86_64-linux-gnu'
LIB_PATTERN = re.compile(r'^libnvidia-ml\.so\.(\d+\.\d+(?:\.\d+)?)$')
DKMS_NVIDIA = 'var/lib/dkms/nvidia'
DKMS_OFED = 'var/lib/dkms/mlnx-ofed-kernel'
RUN_DIR = 'run/hwsim'
MODULE_DIR = 'run/hwsim/module'
BOOT_ID = 'run/hwsim/boot_id'
# The kernel log lines of module loads that failed (kernel/module: "Unknown symbol ..."), for the dmesg stand-in: one
# "<epoch seconds>\t<level>\t<text>" per line; host-local, gone with a reboot as the ring buffer is.
KMSG = 'run/hwsim/kmsg'
MODULES_LOAD_D = ('etc/modules-load.d', 'run/modules-load.d', 'usr/lib/modules-load.d')
SEQ_FILE = '.hwsim-seq'
PERSISTENCED_MODE = 'run/hwsim/nvidia-persistenced.persistence-mode'
PERSISTENCED_INSTANCE = 'run/hwsim/nvidia-persistenced.instance'
LEGACY_PERSISTENCE = 'run/hwsim/legacy-persistence-mode'
FABRIC_MANAGER = 'usr/bin/nv-fabricmanager'
FABRIC_MANAGER_STARTED = 'run/hwsim/nv-fabricmanager.started'
# dpkg's file list of the NVLSM package (NVLink 5): installed or not
NVLSM_PACKAGE = 'var/lib/dpkg/info/nvlsm.list'

# The CUDA version nvidia-smi prints in its header (the newest CUDA the driver's libcuda supports), by driver branch
# (NVIDIA's CUDA toolkit release notes, "CUDA Toolkit and Corresponding Driver Versions"). Other branches: the profile's.
CUDA_BY_BRANCH = {525: '12.0', 530: '12.1', 535: '12.2', 545: '12.3', 550: '12.4', 555: '12.5', 560: '12.6',
                  565: '12.7', 570: '12.8', 575: '12.9', 580: '13.0'}


class Module(object):
    """A kernel module hwsim simulates: its dependencies, where it comes from and its lsmod size."""

    def __init__(self, name, family, deps=(), size=0, path=''):
        self.name = name
        self.family = family        # 'nvidia': built by DKMS from the NVIDIA packages; 'rdma': inbox or DOCA's OFED
        self.deps = tuple(deps)
        self.size = size
        self.path = path            # under /lib/modules/<KERNEL>/ for the inbox modules (modprobe -v)

    @property
    def ko(self):
        """The file name DKMS builds (``nvidia-peermem.ko`` for module nvidia_peermem)."""
        return self.name.replace('_', '-') + '.ko'


_CORE = 'kernel/drivers/infiniband/core/'
MODULES = dict((module.name, module) for module in (
    Module('nvidia', 'nvidia', (), 0),  # size by flavour: NVIDIA_SIZES
    Module('nvidia_uvm', 'nvidia', ('nvidia',), 1798144),
    Module('nvidia_peermem', 'nvidia', ('ib_core', 'nvidia'), 16384),
    Module('nvidia_modeset', 'nvidia', ('nvidia',), 1548288),
    Module('nvidia_drm', 'nvidia', ('nvidia_modeset',), 122880),
    Module('ib_core', 'rdma', (), 462848, _CORE + 'ib_core.ko'),
    Module('ib_cm', 'rdma', ('ib_core',), 131072, _CORE + 'ib_cm.ko'),
    Module('iw_cm', 'rdma', ('ib_core',), 57344, _CORE + 'iw_cm.ko'),
    Module('rdma_cm', 'rdma', ('ib_cm', 'iw_cm', 'ib_core'), 139264, _CORE + 'rdma_cm.ko'),
    Module('ib_uverbs', 'rdma', ('ib_core',), 180224, _CORE + 'ib_uverbs.ko'),
    Module('ib_umad', 'rdma', ('ib_core',), 36864, _CORE + 'ib_umad.ko'),
    Module('rdma_ucm', 'rdma', ('rdma_cm', 'ib_uverbs', 'ib_core'), 32768, _CORE + 'rdma_ucm.ko'),
    Module('ib_ipoib', 'rdma', ('ib_cm', 'ib_core'), 155648, 'kernel/drivers/infiniband/ulp/ipoib/ib_ipoib.ko'),
    Module('mlx5_core', 'rdma', (), 2363392, 'kernel/drivers/net/ethernet/mellanox/mlx5/core/mlx5_core.ko'),
    Module('mlx5_ib', 'rdma', ('mlx5_core', 'ib_uverbs', 'ib_core'), 458752, 'kernel/drivers/infiniband/hw/mlx5/mlx5_ib.ko'),
))
NVIDIA_SIZES = {'open': 14331904, 'proprietary': 56201216}
# What udev and rdma-core load at boot on a host with HCAs, and what the driver's udev rules load where it is built.
BOOT_RDMA = ('mlx5_core', 'mlx5_ib', 'ib_umad', 'ib_ipoib', 'rdma_ucm')
BOOT_NVIDIA = ('nvidia', 'nvidia_uvm')
# The units `hwsim reboot` restarts when they are enabled, in this order: the fresh rails (hwsim/rails.py) and the
# network configuration that brings them up again (a lab with hwsim_fresh_rails), then the NVIDIA units, then the roce
# role's unit that applies the RoCE QoS again (after the driver and the network, as at a real boot: the reboot's
# driver start reset it, hwsim/roce.py).
SERVICES = ('hwsim-rails.service', 'systemd-networkd.service',
            'nvidia-persistenced.service', 'nvidia-fabricmanager.service', 'nvidia-imex.service', 'nvidia-dcgm.service',
            'aicluster-roce-qos.service')


class ModuleError(Exception):
    """modprobe's message for a module that cannot be loaded or removed (exit status 1)."""


def canonical(name):
    """Module names as the kernel spells them (modprobe accepts ``nvidia-peermem``)."""
    return name.replace('-', '_')


def version_key(text):
    """Sort key of a dotted version (``580.95.05``): numbers compare as numbers."""
    return tuple(int(part) if part.isdigit() else 0 for part in re.split(r'[.-]', text))


def _path(root, *parts):
    return os.path.join(root, *parts)


def _listdir(path):
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def _read(path):
    try:
        with open(path, encoding='utf-8') as handle:
            return handle.read()
    except OSError:
        return None


# --------------------------------------------------------------------------
# what is installed


def userland_version(root):
    """The NVML library's version (``580.95.05``), or None without a stand-in library (the profile's driver then)."""
    directory = _path(root, LIB_DIR)
    found = [match.group(1) for match in (LIB_PATTERN.match(name) for name in _listdir(directory)) if match]
    if not found:
        return None
    target = os.path.basename(os.path.realpath(os.path.join(directory, 'libnvidia-ml.so.1')))
    match = LIB_PATTERN.match(target)
    if match and match.group(1) in found:
        return match.group(1)
    return max(found, key=version_key)


def nvml_version(version):
    """``NVML library version: 580.95``: NVML prints the userland's major.minor."""
    return '.'.join(version.split('.')[:2])


def cuda_version(version, default):
    """The CUDA version of a driver version (CUDA_BY_BRANCH), else ``default`` (the profile's)."""
    try:
        branch = int(version.split('.')[0])
    except ValueError:
        return default
    return CUDA_BY_BRANCH.get(branch, default)


def nvidia_builds(root, kernel):
    """{version: {ko file names}} that DKMS built for ``kernel``."""
    builds = {}
    for version in _listdir(_path(root, DKMS_NVIDIA)):
        directory = _path(root, DKMS_NVIDIA, version, kernel, 'x86_64', 'module')
        names = set(name for name in _listdir(directory) if name.endswith('.ko'))
        if names:
            builds[version] = names
    return builds


def built_version(root, kernel, module):
    """The newest DKMS version with ``module``'s .ko built for ``kernel``, or None."""
    versions = [version for version, names in nvidia_builds(root, kernel).items() if module.ko in names]
    return max(versions, key=version_key) if versions else None


def flavour(root, kernel, version):
    """``open`` or ``proprietary``, as the nvidia.ko marker says (open when it does not say)."""
    text = _read(_path(root, DKMS_NVIDIA, version, kernel, 'x86_64', 'module', 'nvidia.ko')) or ''
    return 'proprietary' if 'proprietary' in text else 'open'


DKMS_TREE = 'var/lib/dkms'
# Entries of /var/lib/dkms/<module>/<version>/ that are not kernels: the source link and the build area.
DKMS_NOT_KERNELS = ('source', 'build', 'log')


def dkms_builds(root):
    """Every DKMS module, version and build under var/lib/dkms, as `dkms status` lists them: [(module, version,
    kernel, arch)] sorted by module, version and kernel; kernel and arch are None for a version only added (its
    source registered, built for no kernel). The lab mirror's stand-ins (nvidia-kernel-(open-)dkms,
    mlnx-ofed-kernel-dkms) record a build as <module>/<version>/<kernel>/<arch>/module/; real dkms keeps it there too
    (and installs the .ko into /lib/modules/<kernel>/updates/dkms)."""
    found = []
    for module in _listdir(_path(root, DKMS_TREE)):
        for version in _listdir(_path(root, DKMS_TREE, module)):
            directory = _path(root, DKMS_TREE, module, version)
            if not os.path.isdir(directory) or os.path.islink(directory):
                continue
            kernels = [name for name in _listdir(directory)
                       if name not in DKMS_NOT_KERNELS and os.path.isdir(os.path.join(directory, name))]
            rows = [(module, version, kernel, arch) for kernel in kernels
                    for arch in _listdir(os.path.join(directory, kernel))
                    if os.path.isdir(os.path.join(directory, kernel, arch))]
            found.extend(rows or [(module, version, None, None)])
    return sorted(found, key=lambda row: (row[0], version_key(row[1]), version_key(row[2] or '')))


def ofed_build(root, kernel):
    """The mlnx-ofed-kernel DKMS version built for ``kernel`` (``24.10.OFED.24.10.1.1.4.1``), or None (inbox)."""
    versions = [version for version in _listdir(_path(root, DKMS_OFED)) if os.path.isdir(_path(root, DKMS_OFED, version, kernel))]
    return max(versions, key=version_key) if versions else None


def ofed_module_version(build):
    """``modinfo mlx5_core`` version of an OFED build: ``24.10.OFED.24.10.1.1.4.1`` -> ``24.10-1.1.4``."""
    match = re.match(r'^.*OFED\.(\d+\.\d+)\.(\d+\.\d+\.\d+)(?:\.\d+)?$', build)
    return '%s-%s' % match.groups() if match else build


def kernel_path(root, kernel, module):
    """Where modprobe -v says it inserts a module from."""
    if module.family == 'nvidia' or ofed_build(root, kernel):
        return '/lib/modules/%s/updates/dkms/%s' % (kernel, module.ko if module.family == 'nvidia' else module.name + '.ko')
    return '/lib/modules/%s/%s' % (kernel, module.path)


# --------------------------------------------------------------------------
# what is loaded


def loaded(root):
    """[(name, version or None)] of the loaded simulated modules, oldest first (lsmod prints them newest first)."""
    found = []
    for name in _listdir(_path(root, MODULE_DIR)):
        directory = _path(root, MODULE_DIR, name)
        if _read(os.path.join(directory, 'initstate')) is None:
            continue
        seq = (_read(os.path.join(directory, SEQ_FILE)) or '0').strip()
        version = _read(os.path.join(directory, 'version'))
        found.append((int(seq) if seq.isdigit() else 0, name, version.strip() if version is not None else None))
    return [(name, version) for _seq, name, version in sorted(found)]


def loaded_version(root, name):
    """The version file of a loaded module (None when not loaded or without a version)."""
    return dict(loaded(root)).get(name)


def is_loaded(root, name):
    return name in dict(loaded(root))


def holders(root, name, present=None):
    """Loaded modules that use ``name``, newest first (lsmod's "Used by" list)."""
    present = loaded(root) if present is None else present
    users = [other for other, _version in present if name in MODULES.get(other, Module(other, '')).deps]
    return list(reversed(users))


def device_users(root):
    """Processes holding the GPUs open (``root``/dev/nvidiaN, nvidiactl): nvidia-persistenced, nv-hostengine, jobs."""
    prefix = os.path.join(root, 'dev', 'nvidia')
    users = 0
    for pid in _listdir('/proc'):
        if not pid.isdigit():
            continue
        fds = os.path.join('/proc', pid, 'fd')
        for fd in _listdir(fds):
            try:
                target = os.readlink(os.path.join(fds, fd))
            except OSError:
                continue
            rest = target[len(prefix):]
            if target.startswith(prefix) and (rest.isdigit() or rest == 'ctl'):
                users += 1
                break
    return users


def refcount(root, name, present=None):
    """lsmod's "Used by" count: modules using it, and for nvidia the processes that hold a GPU open."""
    count = len(holders(root, name, present))
    if name == 'nvidia':
        count += device_users(root)
    return count


def module_size(root, kernel, name):
    if name == 'nvidia':
        version = loaded_version(root, 'nvidia')
        return NVIDIA_SIZES[flavour(root, kernel, version) if version else 'open']
    return MODULES[name].size


def _write(path, text):
    with open(path, 'w', encoding='utf-8') as handle:
        handle.write(text)


def _mark_loaded(root, name, version):
    directory = _path(root, MODULE_DIR, name)
    os.makedirs(directory, exist_ok=True)
    seqs = [0]
    for other in _listdir(_path(root, MODULE_DIR)):
        text = (_read(_path(root, MODULE_DIR, other, SEQ_FILE)) or '0').strip()
        seqs.append(int(text) if text.isdigit() else 0)
    _write(os.path.join(directory, SEQ_FILE), '%d\n' % (max(seqs) + 1))
    if version:
        _write(os.path.join(directory, 'version'), version + '\n')
    _write(os.path.join(directory, 'initstate'), 'live\n')


def _mark_unloaded(root, name):
    shutil.rmtree(_path(root, MODULE_DIR, name), ignore_errors=True)


def closure(name):
    """``name`` and everything it needs, dependencies first."""
    order = []

    def visit(current):
        for dep in MODULES[current].deps:
            visit(dep)
        if current not in order:
            order.append(current)
    visit(name)
    return order


def _version_for(root, kernel, module, given):
    """The version a module would load at ('' for an inbox module), or ModuleError (not built for this kernel)."""
    if module.family == 'nvidia':
        version = built_version(root, kernel, module)
        if version is None:
            raise ModuleError('modprobe: FATAL: Module %s not found in directory /lib/modules/%s\n' % (given, kernel))
        return version
    build = ofed_build(root, kernel)
    return ofed_module_version(build) if build else ''


def plan(root, kernel, name, given=None):
    """{module: version} of what loading ``name`` would insert (dependencies first, loaded ones left out), or
    ModuleError when one of them is not built for ``kernel`` (modprobe resolves everything before inserting)."""
    given = given or name
    if name not in dict(loaded(root)):
        _version_for(root, kernel, MODULES[name], given)  # the module asked for is looked up first
    return dict((item, _version_for(root, kernel, MODULES[item], given if item == name else item))
                for item in closure(name) if not is_loaded(root, item))


def load(root, kernel, name, has_gpus=True, given=None):
    """Load ``name`` and its dependencies as modprobe does; returns the names newly loaded (dependencies first).

    Raises ModuleError with modprobe's message: not built for the running kernel (FATAL ... not found), nvidia
    without a GPU (No such device), a module built for another driver than the nvidia loaded, or nvidia_peermem
    without DOCA's OFED kernel modules for the running kernel (Invalid argument: the peer-memory API is MLNX_OFED's),
    or with the inbox ib_core loaded or a build older than DOCA's (_peermem_check)."""
    versions = plan(root, kernel, name, given)
    newly = []
    for item in versions:
        module = MODULES[item]
        if item == 'nvidia' and not has_gpus:
            raise ModuleError("modprobe: ERROR: could not insert 'nvidia': No such device\n")
        if module.family == 'nvidia' and item != 'nvidia' and loaded_version(root, 'nvidia') != versions[item]:
            # built against another driver than the one running: "disagrees about version of symbol"
            raise ModuleError("modprobe: ERROR: could not insert '%s': Invalid argument\n" % item)
        if item == 'nvidia_peermem':
            _peermem_check(root, kernel, versions[item])
        _mark_loaded(root, item, versions[item])
        newly.append(item)
    return newly


PEERMEM_SYMBOLS = ('ib_register_peer_memory_client', 'ib_unregister_peer_memory_client')


def _newest_mtime(path):
    """The newest modification time of ``path`` and everything under it (0 when missing)."""
    newest = 0.0
    for directory, _dirs, files in os.walk(path):
        for name in [directory] + [os.path.join(directory, item) for item in files]:
            try:
                newest = max(newest, os.stat(name).st_mtime)
            except OSError:
                pass
    return newest


def peermem_stale(root, kernel, version):
    """Whether nvidia's DKMS build ``version`` for ``kernel`` is older than DOCA's mlnx-ofed-kernel build for it: built
    before DOCA was installed or upgraded, against other peer-memory symbols (its CRCs no longer match)."""
    build = ofed_build(root, kernel)
    ko = _path(root, DKMS_NVIDIA, version, kernel, 'x86_64', 'module', MODULES['nvidia_peermem'].ko)
    try:
        built = os.stat(ko).st_mtime
    except OSError:
        return False
    return bool(build) and built < _newest_mtime(_path(root, DKMS_OFED, build, kernel))


def _peermem_check(root, kernel, version):
    """nvidia_peermem's init and symbol resolution, with the kernel's log lines and modprobe's message:

    - no DOCA build for the running kernel: nvidia-peermem was built without MLNX_OFED's peer-memory symbols and its
      init returns -EINVAL (``Invalid argument``; NVIDIA/open-gpu-kernel-modules kernel-open/nvidia-peermem);
    - the ib_core loaded is not DOCA's (the inbox one, loaded before DOCA was installed: a reboot is due): the symbols
      are missing, ``Unknown symbol ib_register_peer_memory_client (err -2)`` in dmesg and kmod's ``Unknown symbol in
      module, or unknown parameter (see dmesg)`` (Mellanox/nv_peer_memory#84; -2 is -ENOENT, as 5.x/6.x kernels log);
    - the build is older than DOCA's (nothing rebuilt nvidia after a DOCA install or upgrade) or the ib_core loaded is
      another DOCA's: ``disagrees about version of symbol ...`` and ``(err -22)``, modprobe's ``Invalid argument``
      (NVIDIA/gpu-operator#2868, Mellanox/nv_peer_memory#39); rebuilding nvidia's DKMS module fixes it."""
    build = ofed_build(root, kernel)
    if not build:
        raise ModuleError("modprobe: ERROR: could not insert 'nvidia_peermem': Invalid argument\n")
    core = loaded_version(root, 'ib_core')
    if not core:
        log_kernel(root, ['nvidia_peermem: Unknown symbol %s (err -2)' % symbol for symbol in PEERMEM_SYMBOLS])
        raise ModuleError("modprobe: ERROR: could not insert 'nvidia_peermem': Unknown symbol in module, or unknown "
                          "parameter (see dmesg)\n")
    if core != ofed_module_version(build) or peermem_stale(root, kernel, version):
        log_kernel(root, [line for symbol in PEERMEM_SYMBOLS for line in (
            'nvidia_peermem: disagrees about version of symbol %s' % symbol,
            'nvidia_peermem: Unknown symbol %s (err -22)' % symbol)])
        raise ModuleError("modprobe: ERROR: could not insert 'nvidia_peermem': Invalid argument\n")


def log_kernel(root, lines, level='warn', now=None):
    """Append ``lines`` to the simulated kernel log (KMSG) for the dmesg stand-in."""
    path = _path(root, KMSG)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    stamp = time.time() if now is None else now
    with open(path, 'a', encoding='utf-8') as handle:
        handle.write(''.join('%.6f\t%s\t%s\n' % (stamp, level, line) for line in lines))


def kernel_log(root):
    """[(epoch seconds, level, text)] of KMSG, oldest first."""
    found = []
    for line in (_read(_path(root, KMSG)) or '').splitlines():
        parts = line.split('\t', 2)
        if len(parts) == 3:
            try:
                found.append((float(parts[0]), parts[1], parts[2]))
            except ValueError:
                continue
    return found


def unload(root, name, given=None):
    """modprobe -r ``name``: refuses a module in use; removes the dependencies nothing else uses. Returns the names
    removed."""
    given = given or name
    if not is_loaded(root, name):
        raise ModuleError('modprobe: FATAL: Module %s is not in kernel.\n' % given)
    if refcount(root, name):
        raise ModuleError('modprobe: FATAL: Module %s is in use.\n' % given)
    _mark_unloaded(root, name)
    removed = [name]
    for dep in MODULES[name].deps:
        if is_loaded(root, dep) and not refcount(root, dep):
            removed.extend(unload(root, dep))
    return removed


def unload_all(root):
    """What a reboot does to the modules: every one gone."""
    names = [name for name, _version in loaded(root)]
    shutil.rmtree(_path(root, MODULE_DIR), ignore_errors=True)
    if os.path.exists(_path(root, KMSG)):
        os.unlink(_path(root, KMSG))  # the ring buffer of the boot that ends
    return names


def modules_load_d(root):
    """Module names the *.conf files of modules-load.d list (a name in /etc overrides the same file name below)."""
    files = {}
    for directory in reversed(MODULES_LOAD_D):
        for name in _listdir(_path(root, directory)):
            if name.endswith('.conf'):
                files[name] = _path(root, directory, name)
    names = []
    for name in sorted(files):
        for line in (_read(files[name]) or '').splitlines():
            line = line.strip()
            if line and not line.startswith(('#', ';')) and line not in names:
                names.append(line)
    return names


# --------------------------------------------------------------------------
# NVML as nvidia-smi and DCGM see it


def nvml(root, kernel, has_gpus):
    """(error text, exit status) of NVML's init, or (None, driver version) when it works; None without a stand-in
    library. A driver not loaded is loaded first, as nvidia-modprobe (setuid root) does for NVML."""
    userland = userland_version(root)
    if userland is None:
        return None
    failed = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
              "Make sure that the latest NVIDIA driver is installed and running.\n\n", 9)
    if not has_gpus:
        return failed
    running = loaded_version(root, 'nvidia') if is_loaded(root, 'nvidia') else None
    if running is None:
        running = built_version(root, kernel, MODULES['nvidia'])
        if running is None:
            return failed
        try:
            load(root, kernel, 'nvidia', has_gpus)
        except ModuleError:
            return failed
        except OSError:
            pass  # not root: nvidia-modprobe would have loaded it; report the version it would load
    if running != userland:
        return ('Failed to initialize NVML: Driver/library version mismatch\nNVML library version: %s\n' % nvml_version(userland), 18)
    return (None, running)


def persistence_mode(root):
    """``Enabled`` or ``Disabled`` as nvidia-smi reports Persistence Mode; None without the stand-in library and
    without a running nvidia-persistenced (the GPU tools then print ``Enabled`` as before).

    nvidia-persistenced sets it for every GPU at its start (``--no-persistence-mode``: off, Ubuntu's packaged unit)
    and keeps it while it runs; ``nvidia-smi -pm 1`` without the daemon sets the driver's legacy persistence mode,
    which lasts until the reboot (docs.nvidia.com/deploy/driver-persistence). Nothing else keeps it on.
    """
    if _read(_path(root, PERSISTENCED_INSTANCE)) is not None:
        mode = (_read(_path(root, PERSISTENCED_MODE)) or 'Enabled').strip()
        return mode if mode in ('Enabled', 'Disabled') else 'Enabled'
    legacy = _read(_path(root, LEGACY_PERSISTENCE))
    if legacy is not None and legacy.strip() == (_read(_path(root, BOOT_ID)) or '').strip():
        return 'Enabled'
    return None if userland_version(root) is None else 'Disabled'


def set_persistence(root):
    """``nvidia-smi -pm 1``: through nvidia-persistenced's RPC interface while it runs (on until it stops), else the
    driver's legacy persistence mode, on until the next reboot (boot id) (docs.nvidia.com/deploy/driver-persistence:
    nvidia-smi uses the daemon when it runs and falls back to the legacy mode)."""
    if _read(_path(root, PERSISTENCED_INSTANCE)) is not None:
        _write(_path(root, PERSISTENCED_MODE), 'Enabled\n')
        return
    path = _path(root, LEGACY_PERSISTENCE)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    _write(path, (_read(_path(root, BOOT_ID)) or '').strip() + '\n')


def fabric_registered(root, nvlink5=False):
    """Whether the fabric manager registered the GPUs with the NVSwitch fabric in this boot: None where no fabric
    manager stand-in is installed (the profile's fabric_state holds, as before), else True once it started in this
    boot (its start file names the current boot id), False until then (nvidia-smi: ``In Progress``).

    NVLink 5 (``nvlink5``, HGX B200): the fabric manager brings the fabric up through NVLSM on a bridge port, over
    the user MAD interface; without NVLSM installed (dpkg's record of the package) or ``ib_umad`` loaded the GPUs
    stay ``In Progress`` whatever the fabric manager does (NVIDIA/gpu-operator #2781)."""
    if not os.path.exists(_path(root, FABRIC_MANAGER)):
        return None
    started = _read(_path(root, FABRIC_MANAGER_STARTED))
    registered = started is not None and started.strip() == (_read(_path(root, BOOT_ID)) or '').strip()
    if registered and nvlink5:
        return os.path.exists(_path(root, NVLSM_PACKAGE)) and is_loaded(root, 'ib_umad')
    return registered


# --------------------------------------------------------------------------
# boot and reboot


def boot_id(root, new=False):
    """The boot id (a random UUID as /proc/sys/kernel/random/boot_id), made when missing or when ``new``."""
    path = _path(root, BOOT_ID)
    text = None if new else _read(path)
    if not text or not text.strip():
        os.makedirs(os.path.dirname(path), exist_ok=True)
        text = '%s\n' % uuid.uuid4()
        tmp = path + '.tmp'
        _write(tmp, text)
        os.replace(tmp, path)
    return text.strip()


def boot_modules(root, kernel, has_gpus, has_hcas):
    """(lines, errors) of loading what a boot loads: the RDMA modules udev and rdma-core load on a host with HCAs,
    nvidia and nvidia_uvm where DKMS built them for the running kernel and there is a GPU, then what
    modules-load.d lists (systemd-modules-load; names hwsim does not simulate are left to the real kernel)."""
    lines, errors = [], []
    wanted = list(BOOT_RDMA if has_hcas else ())
    if has_gpus and built_version(root, kernel, MODULES['nvidia']):
        wanted.extend(name for name in BOOT_NVIDIA if built_version(root, kernel, MODULES[name]))
    listed = [canonical(name) for name in modules_load_d(root)]
    for name in wanted + [name for name in listed if name in MODULES and name not in wanted]:
        try:
            for item in load(root, kernel, name, has_gpus):
                version = loaded_version(root, item)
                lines.append('loaded %s%s\n' % (item, ' ' + version if version else ''))
        except ModuleError as exc:
            errors.append('hwsim: boot: %s' % str(exc).replace('modprobe: ', '', 1))
    return lines, errors


def systemctl_command(environ, root):
    """The systemctl to restart services with: $HWSIM_SYSTEMCTL (tests), else the host's (only when root is /)."""
    if environ.get('HWSIM_SYSTEMCTL') is not None:
        return environ.get('HWSIM_SYSTEMCTL') or None
    return shutil.which('systemctl') if root == '/' else None


def restart_services(systemctl, run=subprocess.call):
    """(lines, errors) of `systemctl restart` for each of SERVICES that `systemctl is-enabled` says is enabled."""
    lines, errors = [], []
    if not systemctl:
        return lines, errors
    for unit in SERVICES:
        if run([systemctl, 'is-enabled', '--quiet', unit], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) != 0:
            continue
        status = run([systemctl, 'restart', unit], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if status == 0:
            lines.append('restarted %s\n' % unit)
        else:
            errors.append('hwsim: reboot: systemctl restart %s failed (exit status %d)\n' % (unit, status))
    return lines, errors
