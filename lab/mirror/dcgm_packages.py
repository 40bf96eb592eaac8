"""DCGM 4 and dcgm-exporter stand-ins for the lab mirror's cuda repository (lab/mirror/README.md "DCGM").

Loaded by build.py's all_packages(): ``packages(package, template)`` returns the package specs. The names,
versions (DCGM's epoch included) and dependencies are those of NVIDIA's CUDA repository; the files behave as
the real ones do where the dcgm role looks (units, nv-hostengine holding the GPUs, dcgmi, /metrics).
"""

# DCGM 4 versions (the BOM's and the one before it): core and the CUDA plugin packages of each.
DCGM_VERSIONS = ['1:4.4.0-1', '1:4.4.1-1']
CUDA_MAJORS = ['12', '13']
# (datacenter-gpu-manager-exporter version, the upstream release tag it is): the package carries the exporter's own
# version (4.6.0-1 is release 4.4.1-4.6.0).
EXPORTER_VERSIONS = [('4.5.2-1', '4.4.0-4.5.2'), ('4.6.0-1', '4.4.1-4.6.0')]
HWSIM = '/opt/hwsim/bin/hwsim'
PLUGIN_DIR = '/usr/libexec/datacenter-gpu-manager-4/plugins/cuda%s'


def _upstream(version):
    """1:4.4.1-1 -> 4.4.1."""
    return version.split(':', 1)[-1].rsplit('-', 1)[0]


def _service_scripts(template, name, version, unit):
    values = {'package': name, 'version': version, 'unit': unit}
    return {'postinst': template('service-postinst.sh', **values), 'prerm': template('service-prerm.sh', **values)}


def core(package, template, version):
    name = 'datacenter-gpu-manager-4-core'
    values = {'package': name, 'version': version, 'upstream': _upstream(version)}
    return package(
        'cuda', name, version, 'NVIDIA Datacenter GPU Manager (DCGM) 4: nv-hostengine, dcgmi and CUDA-agnostic assets',
        section='devel',
        files={'/usr/bin/nv-hostengine': (0o755, template('dcgm/nv-hostengine.sh', **values)),
               # hwsim answers as dcgmi when called by that name (lab/hwsim/README.md "Tools")
               '/usr/bin/dcgmi': ('link', HWSIM),
               '/lib/systemd/system/nvidia-dcgm.service': (0o644, template('dcgm/nvidia-dcgm.service', **values))},
        scripts=_service_scripts(template, name, version, 'nvidia-dcgm.service'))


def cuda_plugins(package, version, major):
    name = 'datacenter-gpu-manager-4-cuda%s' % major
    marker = ('aicluster-lab-stand-in DCGM %s diagnostic plugins for CUDA %s\n' % (_upstream(version), major)).encode()
    directory = PLUGIN_DIR % major
    return package(
        'cuda', name, version, 'NVIDIA DCGM 4 diagnostic plugins for CUDA %s' % major, section='devel',
        depends=['datacenter-gpu-manager-4-core (= %s)' % version],
        files={directory + '/libpluginmemtest.so.4': (0o644, marker),
               directory + '/libpluginsoftware.so.4': (0o644, marker)})


def exporter(package, template, version, release):
    name = 'datacenter-gpu-manager-exporter'
    values = {'package': name, 'version': version, 'release': release}
    body = b'#!/usr/bin/python3\n' + template('dcgm/dcgm-exporter.py', **values)
    return package(
        'cuda', name, version, 'NVIDIA DCGM exporter for Prometheus (%s)' % release, section='devel',
        depends=['datacenter-gpu-manager-4-core (>= 1:4.0.0)'],
        conffiles=['/etc/dcgm-exporter/default-counters.csv'],
        files={'/usr/bin/dcgm-exporter': (0o755, body),
               '/etc/dcgm-exporter/default-counters.csv': (0o644, template('dcgm/default-counters.csv', **values)),
               '/lib/systemd/system/nvidia-dcgm-exporter.service': (
                   0o644, template('dcgm/nvidia-dcgm-exporter.service', **values))},
        scripts=_service_scripts(template, name, version, 'nvidia-dcgm-exporter.service'))


def packages(package, template):
    specs = []
    for version in DCGM_VERSIONS:
        specs.append(core(package, template, version))
        specs.extend(cuda_plugins(package, version, major) for major in CUDA_MAJORS)
    specs.extend(exporter(package, template, version, release) for version, release in EXPORTER_VERSIONS)
    return specs
