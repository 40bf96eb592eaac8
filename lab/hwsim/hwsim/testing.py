"""Test helpers for stand-in authors: a temporary lab (fabric.yml + state directory) and in-process runs.

    lab = make_lab(tmp_path, 'hgx-h100-ib')           # ctl01 + gpu01, gpu02
    status, out, err = lab.run('gpu01', ['ibstat', 'mlx5_0'])

Every host's file system for the driver model (hwsim/driver.py) is ``lab.root(host)``
(``tmp_path/sysroot/<host>``, empty: no NVIDIA package installed, so the GPU tools print the
profile's driver), its kernel ``lab.kernel``; ``lab.install_driver(host, '580.95.05')`` writes
what the lab mirror's stand-in packages would. systemctl is not run unless a test sets
``lab.systemctl``.
"""
import io
import os
import shutil
import signal
import subprocess
import sys

from hwsim import cli, fabric as fabrics

HWSIM_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The lab mirror's daemon stand-in (the fabric manager's and IMEX's program), rendered here as lab/mirror/build.py does
NV_DAEMON = os.path.join(os.path.dirname(os.path.dirname(HWSIM_ROOT)), 'lab', 'mirror', 'files', 'nv-daemon.py')

PROFILES = ('hgx-h100-ib', 'hgx-a100-ib', 'hgx-h100-roce')
KERNEL = '6.1.0-28-amd64'  # the running kernel of every test host (HWSIM_KERNEL)
MODULE_FILES = ('nvidia.ko', 'nvidia-peermem.ko', 'nvidia-uvm.ko')


class Lab(object):
    """A temporary lab: fabric.yml and a state directory under tmp_path."""

    def __init__(self, tmp_path, hosts, **fabric_options):
        self._base = tmp_path
        self.state_dir = str(tmp_path / 'state')
        self.fabric_path = str(tmp_path / 'fabric.yml')
        self.fabric = fabrics.build_fabric(hosts, **fabric_options)
        fabrics.write_fabric(self.fabric, self.fabric_path)
        self.kernel = KERNEL
        self.systemctl = ''

    def root(self, host):
        """The host's file system root for the driver model (host-local, as /run and /usr are)."""
        return os.path.join(str(self._base), 'sysroot', host)

    def env(self, host):
        return {'HWSIM_HOST': host, 'HWSIM_STATE_DIR': self.state_dir, 'HWSIM_FABRIC': self.fabric_path,
                'HWSIM_ROOT': self.root(host), 'HWSIM_KERNEL': self.kernel, 'HWSIM_SYSTEMCTL': self.systemctl}

    def install_driver(self, host, version, kernels=None, flavour='open', userland=True, modules=MODULE_FILES):
        """What the mirror's stand-ins install: libnvidia-ml.so.<version> (libnvidia-ml1) when ``userland``, and the
        DKMS build of nvidia-kernel-<flavour>-dkms for ``kernels`` (default: the running one)."""
        root = self.root(host)
        if userland:
            lib = os.path.join(root, 'usr', 'lib', 'x86_64-linux-gnu')
            os.makedirs(lib, exist_ok=True)
            with open(os.path.join(lib, 'libnvidia-ml.so.%s' % version), 'w', encoding='utf-8') as handle:
                handle.write('stand-in libnvidia-ml %s\n' % version)
            link = os.path.join(lib, 'libnvidia-ml.so.1')
            if os.path.lexists(link):
                os.unlink(link)
            os.symlink('libnvidia-ml.so.%s' % version, link)
        for kernel in kernels or [self.kernel]:
            directory = os.path.join(root, 'var', 'lib', 'dkms', 'nvidia', version, kernel, 'x86_64', 'module')
            os.makedirs(directory, exist_ok=True)
            for name in modules:
                with open(os.path.join(directory, name), 'w', encoding='utf-8') as handle:
                    handle.write('stand-in %s %s %s\n' % (name, version, flavour))

    def remove_driver(self, host, version):
        """The prerm of the DKMS package and the removal of libnvidia-ml1 ``version``."""
        root = self.root(host)
        shutil.rmtree(os.path.join(root, 'var', 'lib', 'dkms', 'nvidia', version), ignore_errors=True)
        lib = os.path.join(root, 'usr', 'lib', 'x86_64-linux-gnu', 'libnvidia-ml.so.%s' % version)
        if os.path.exists(lib):
            os.unlink(lib)

    def install_ofed(self, host, build='24.10.OFED.24.10.1.1.4.1', kernels=None):
        """DOCA's mlnx-ofed-kernel-dkms record for ``kernels`` (default: the running one)."""
        for kernel in kernels or [self.kernel]:
            os.makedirs(os.path.join(self.root(host), 'var', 'lib', 'dkms', 'mlnx-ofed-kernel', build, kernel, 'x86_64', 'module'),
                        exist_ok=True)

    def install_fabric_manager(self, host):
        """What the mirror's fabric manager package installs that hwsim reads: ``usr/bin/nv-fabricmanager``."""
        path = os.path.join(self.root(host), 'usr', 'bin', 'nv-fabricmanager')
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w', encoding='utf-8') as handle:
            handle.write('stand-in nv-fabricmanager\n')

    def start_fabric_manager(self, host, version):
        """Start the mirror's nv-fabricmanager stand-in (lab/mirror/files/nv-daemon.py) of ``version`` for ``host``
        as its unit does (it forks; the PID file names the daemon), then stop the daemon: the registration it
        recorded lasts until the next reboot. Returns (exit status, stderr) of the start."""
        root = self.root(host)
        values = {'PACKAGE': 'nvidia-fabricmanager', 'VERSION': version + '-1', 'PROGRAM': 'nv-fabricmanager',
                  'UPSTREAM': version, 'VERSION_LINE': 'Fabric Manager version is : %s' % version,
                  'MISMATCH': 'fabric manager {upstream} does not match the driver {loaded}',
                  'CONFIG': os.path.join(root, 'fabricmanager.cfg'), 'LOG': os.path.join(root, 'fabricmanager.log'),
                  'PID_FILE': os.path.join(root, 'run', 'nvidia-fabricmanager', 'nv-fabricmanager.pid')}
        with open(NV_DAEMON, encoding='utf-8') as handle:
            text = handle.read()
        for key, value in values.items():
            text = text.replace('@%s@' % key, value)
        program = os.path.join(root, 'nv-fabricmanager.py')
        with open(program, 'w', encoding='utf-8') as handle:
            handle.write(text)
        with open(values['CONFIG'], 'w', encoding='utf-8') as handle:
            handle.write('DAEMONIZE=1\nLOG_FILE_NAME=%s\n' % values['LOG'])
        env = dict(os.environ, HWSIM_ROOT=root,
                   AICLUSTER_LAB_MODULE_VERSION_FILE=os.path.join(root, 'run', 'hwsim', 'module', 'nvidia', 'version'))
        done = subprocess.run([sys.executable, program, '-c', values['CONFIG']], env=env, capture_output=True, text=True,
                              timeout=30, check=False)
        if done.returncode == 0:
            with open(values['PID_FILE'], encoding='utf-8') as handle:
                os.kill(int(handle.read().strip()), signal.SIGTERM)
        return done.returncode, done.stderr

    def run(self, host, argv):
        """(exit status, stdout, stderr) of ``argv`` (argv[0] is the tool name) on ``host``."""
        out = io.StringIO()
        err = io.StringIO()
        status = cli.main(list(argv), environ=self.env(host), stdout=out, stderr=err)
        return status, out.getvalue(), err.getvalue()

    def ok(self, host, argv):
        """stdout of a run that must succeed."""
        status, out, err = self.run(host, argv)
        assert status == 0, (argv, status, err)
        return out


def make_lab(tmp_path, profile, compute=2, **fabric_options):
    """ctl01 (no hardware) + gpu01..gpuNN of one profile; ``fabric_options`` go to build_fabric."""
    hosts = [('ctl01', None)] + [('gpu%02d' % number, profile) for number in range(1, compute + 1)]
    return Lab(tmp_path, hosts, **fabric_options)
