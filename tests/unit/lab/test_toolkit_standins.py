# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab mirror's container toolkit stand-ins (lab/mirror/toolkit_packages.py, lab/mirror/files/toolkit/):
the packages' dependencies, and nvidia-ctk against a fake nvidia-smi and a temporary root, read back by the
collection's own CDI parser (so the stand-in writes what the check reads)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.aicluster.infra.plugins.module_utils import cdi

HERE = os.path.dirname(os.path.abspath(__file__))
MIRROR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(HERE))), 'lab', 'mirror')


def _load(name):
    spec = importlib.util.spec_from_file_location('test_toolkit_' + name, os.path.join(MIRROR, name + '.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BUILD = _load('build')
TOOLKIT = _load('toolkit_packages')
UUID = 'GPU-4857534d-0001-4000-8000-0000000000%02d'


def _packages():
    return dict(((p['name'], p['version']), p) for p in TOOLKIT.packages(BUILD.package, BUILD.template))


def test_dependency_structure():
    pkgs = _packages()
    assert sorted(set(name for name, _v in pkgs)) == [
        'libnvidia-container-tools', 'libnvidia-container1', 'nvidia-container-toolkit', 'nvidia-container-toolkit-base']
    for version in ('1.17.8-1', '1.18.0-1'):
        assert pkgs[('nvidia-container-toolkit', version)]['depends'] == [
            'nvidia-container-toolkit-base (= %s)' % version, 'libnvidia-container-tools (>= %s)' % version,
            'libnvidia-container-tools (<< 2.0.0)']
        assert pkgs[('libnvidia-container-tools', version)]['depends'] == ['libnvidia-container1 (>= %s)' % version]
    old, new = pkgs[('nvidia-container-toolkit-base', '1.17.8-1')], pkgs[('nvidia-container-toolkit-base', '1.18.0-1')]
    assert not any('nvidia-cdi-refresh' in path for path in old['files']) and 'postinst' not in old['scripts']
    assert '/etc/systemd/system/nvidia-cdi-refresh.service' in new['conffiles']
    unit = new['files']['/etc/systemd/system/nvidia-cdi-refresh.service'][1].decode()
    assert 'Environment=NVIDIA_CTK_CDI_OUTPUT_FILE_PATH=/var/run/cdi/nvidia.yaml' in unit
    assert 'ExecStart=/usr/bin/nvidia-ctk cdi generate' in unit
    path_unit = new['files']['/etc/systemd/system/nvidia-cdi-refresh.path'][1].decode()
    assert 'PathChanged=/lib/modules/%v/modules.dep' in path_unit and 'PathChanged=/usr/bin/nvidia-ctk' in path_unit
    postinst = new['scripts']['postinst'].decode()
    subprocess.run(['sh', '-n', '-c', postinst], check=True)
    assert 'systemctl enable --now nvidia-cdi-refresh.path' in postinst


def _smi_q(minors, driver='580.95.05'):
    text = '==============NVSMI LOG==============\nDriver Version                            : %s\n' % driver
    for minor in minors:
        text += ('GPU 00000000:%02X:00.0\n    GPU UUID                              : %s\n'
                 '    Minor Number                          : %d\n' % (0x18 + minor, UUID % minor, minor))
    return text


@pytest.fixture
def ctk(tmp_path):
    program = tmp_path / 'nvidia-ctk'
    program.write_bytes(_packages()[('nvidia-container-toolkit-base', '1.18.0-1')]['files']['/usr/bin/nvidia-ctk'][1])
    root = tmp_path / 'root'
    (root / 'dev').mkdir(parents=True)
    (root / 'usr/lib/x86_64-linux-gnu').mkdir(parents=True)
    (root / 'usr/lib/x86_64-linux-gnu/libnvidia-ml.so.580.95.05').write_text('')
    for node in ('nvidia0', 'nvidia1', 'nvidia2', 'nvidiactl', 'nvidia-uvm'):
        (root / 'dev' / node).write_text('')
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    state = {'q': _smi_q((0, 1, 2)), 'rc': 0}

    def run(*args, **env):
        smi = bindir / 'nvidia-smi'
        smi.write_text('#!/bin/sh\ncat <<\'EOF\'\n%sEOF\nexit %d\n' % (state['q'], state['rc']))
        smi.chmod(0o755)
        environ = dict(os.environ, PATH='%s:%s' % (bindir, os.environ['PATH']), AICLUSTER_LAB_ROOT=str(root), **env)
        proc = subprocess.run([sys.executable, str(program)] + list(args), capture_output=True, text=True, env=environ,
                              check=False)
        return proc.returncode, proc.stdout, proc.stderr

    run.root, run.state = root, state
    return run


def test_version(ctk):
    assert ctk('--version')[:2] == (0, 'NVIDIA Container Toolkit CLI version 1.18.0\n'
                                       'commit: f8daa5e26de9fd7eb79259040b6dd5a52060048c\n')


def test_generate_and_list(ctk):
    rc, _out, err = ctk('cdi', 'generate', NVIDIA_CTK_CDI_OUTPUT_FILE_PATH='/var/run/cdi/nvidia.yaml')
    assert rc == 0 and 'level=info msg="Generated CDI spec with version 0.5.0"' in err
    text = (ctk.root / 'var/run/cdi/nvidia.yaml').read_text()
    assert text.startswith('---\ncdiVersion: 0.5.0\ncontainerEdits:\n')
    spec = cdi.parse_spec(text, '/var/run/cdi/nvidia.yaml', use_yaml=False)
    assert [d['name'] for d in spec['devices']] == ['0', UUID % 0, '1', UUID % 1, '2', UUID % 2, 'all']
    assert spec['devices'][-1]['nodes'] == ['/dev/nvidia0', '/dev/nvidia1', '/dev/nvidia2']
    assert spec['nodes'] == ['/dev/nvidia-uvm', '/dev/nvidiactl'] and spec['driver_version'] == '580.95.05'
    if cdi.HAS_YAML:
        assert cdi.parse_spec(text, '/var/run/cdi/nvidia.yaml') == spec
    rc, out, err = ctk('cdi', 'list')
    listed = cdi.parse_cdi_list(out, err)
    assert rc == 0 and listed['count'] == 7 and listed['devices'][0] == 'nvidia.com/gpu=0'
    assert listed['devices'][-1] == 'nvidia.com/gpu=all'


def test_generate_json_and_nvml_failure(ctk):
    rc, out, _err = ctk('cdi', 'generate', '--format=json')
    assert rc == 0 and json.loads(out)['kind'] == 'nvidia.com/gpu'
    ctk.state['rc'] = 18
    rc, out, err = ctk('cdi', 'generate', '--output=/etc/cdi/nvidia.yaml')
    assert rc == 1 and out == '' and 'failed to initialize NVML: ERROR_LIB_RM_VERSION_MISMATCH' in err
    assert not (ctk.root / 'etc/cdi/nvidia.yaml').exists()


def test_list_duplicates_across_and_within_directories(ctk):
    ctk('cdi', 'generate', '--output=/var/run/cdi/nvidia.yaml')
    ctk.state['q'] = _smi_q((0, 1, 2, 3))
    (ctk.root / 'dev/nvidia3').write_text('')
    ctk('cdi', 'generate', '--output=/etc/cdi/nvidia.yaml')
    listed = cdi.parse_cdi_list(*ctk('cdi', 'list')[1:])
    # across directories: /var/run/cdi wins name by name, silently; the static spec's GPU 3 stays listed
    assert listed['warnings'] == [] and 'nvidia.com/gpu=3' in listed['devices'] and listed['count'] == 9
    (ctk.root / 'etc/cdi/nvidia-old.yaml').write_text((ctk.root / 'etc/cdi/nvidia.yaml').read_text())
    # within one directory: a conflict, and the CDI library drops the name everywhere (here: every name)
    listed = cdi.parse_cdi_list(*ctk('cdi', 'list')[1:])
    assert listed['devices'] == [] and listed['count'] == 0
    assert listed['warnings'][0].splitlines()[0].startswith(
        'Refreshing the CDI registry returned the following error(s): conflicting device "nvidia.com/gpu=0" (specs '
        '"/etc/cdi/nvidia.yaml", "/etc/cdi/nvidia-old.yaml")')


def test_runtime_configure_docker_and_containerd(ctk, tmp_path):
    daemon = tmp_path / 'daemon.json'
    daemon.write_text('{"log-level": "warn"}\n')
    rc, out, _err = ctk('runtime', 'configure', '--runtime=docker', '--config=%s' % daemon, '--dry-run')
    assert rc == 0 and json.loads(out)['runtimes'] == {'nvidia': {'args': [], 'path': 'nvidia-container-runtime'}}
    assert daemon.read_text() == '{"log-level": "warn"}\n'
    rc, _out, err = ctk('runtime', 'configure', '--runtime=docker', '--config=%s' % daemon)
    assert rc == 0 and 'It is recommended that docker daemon be restarted.' in err
    assert json.loads(daemon.read_text())['log-level'] == 'warn'
    toml = tmp_path / 'config.toml'
    toml.write_text('version = 2\nroot = "/var/lib/containerd"\n')
    ctk('runtime', 'configure', '--runtime=containerd', '--config=%s' % toml)
    once = toml.read_text()
    assert once.startswith('version = 2\nroot = "/var/lib/containerd"\n')
    assert '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]' in once
    ctk('runtime', 'configure', '--runtime=containerd', '--config=%s' % toml)
    assert toml.read_text() == once
    assert ctk('runtime', 'configure', '--runtime=rkt')[0] == 1
    assert ctk('cdi', 'bogus')[0] == 1
