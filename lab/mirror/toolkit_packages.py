"""The NVIDIA Container Toolkit's stand-ins for the lab mirror (repository key 'container-toolkit').

Loaded by build.py's all_packages(); lab/mirror/README.md ("The container toolkit") says what they install.
The four packages of a toolkit release share its version, with the dependencies NVIDIA's packages have
(docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/arch-overview.html; packaging/debian/control):

    nvidia-container-toolkit V       Depends: nvidia-container-toolkit-base (= V), libnvidia-container-tools (>= V),
                                              libnvidia-container-tools (<< 2.0.0)
    nvidia-container-toolkit-base V  nvidia-ctk, nvidia-cdi-hook, nvidia-container-runtime; from 1.18.0 the units
                                     nvidia-cdi-refresh.service and .path (in /etc/systemd/system, as 1.18.0 installed
                                     them) and a postinst that enables them and regenerates the spec
    libnvidia-container-tools V      Depends: libnvidia-container1 (>= V)
    libnvidia-container1 V

With ">=" and not "=", `apt-get install nvidia-container-toolkit=1.17.8-1` alone takes the newest
libnvidia-container-tools: a pinned install names all four (what pinned_packages does).
"""

REPO = 'container-toolkit'
LIBDIR = '/usr/lib/x86_64-linux-gnu'
# (package version, whether its base package ships nvidia-cdi-refresh, the commit `nvidia-ctk --version` prints:
# 1.18.0's as the real one prints it (nvidia-container-toolkit issue #1404), a placeholder for 1.17.8)
TOOLKIT_VERSIONS = [
    ('1.17.8-1', False, '0000000000000000000000000000000000011708'),
    ('1.18.0-1', True, 'f8daa5e26de9fd7eb79259040b6dd5a52060048c'),
]
REFRESH_UNITS = ('nvidia-cdi-refresh.service', 'nvidia-cdi-refresh.path')


def _upstream(version):
    return version.rsplit('-', 1)[0]


def _tool(template, name, package, version, line):
    return template('toolkit/simple-tool.sh', program=name, package=package, version=version, version_line=line)


def toolkit_packages(package, template, version, refresh, commit):
    up = _upstream(version)
    base = 'nvidia-container-toolkit-base'
    ctk = b'#!/usr/bin/python3\n' + template('toolkit/nvidia-ctk.py', package=base, version=up, commit=commit)
    base_files = {
        '/usr/bin/nvidia-ctk': (0o755, ctk),
        '/usr/bin/nvidia-cdi-hook': (0o755, _tool(template, 'nvidia-cdi-hook', base, version,
                                                  'NVIDIA CDI Hook version %s' % up)),
        '/usr/bin/nvidia-container-runtime': (0o755, _tool(template, 'nvidia-container-runtime', base, version,
                                                           'NVIDIA Container Runtime version %s' % up)),
    }
    scripts, conffiles = {}, []
    if refresh:
        for unit in REFRESH_UNITS:
            path = '/etc/systemd/system/' + unit
            base_files[path] = (0o644, template('toolkit/' + unit, package=base, version=version))
            conffiles.append(path)
        env = '/etc/nvidia-container-toolkit/nvidia-cdi-refresh.env'
        base_files[env] = (0o644, template('toolkit/nvidia-cdi-refresh.env', package=base, version=version))
        conffiles.append(env)
        scripts['postinst'] = template('toolkit/base-postinst.sh', package=base, version=version)
    return [
        package(REPO, 'nvidia-container-toolkit', version, 'NVIDIA Container toolkit', section='utils',
                depends=['%s (= %s)' % (base, version), 'libnvidia-container-tools (>= %s)' % version,
                         'libnvidia-container-tools (<< 2.0.0)'],
                files={'/usr/bin/nvidia-container-runtime-hook': (0o755, _tool(
                    template, 'nvidia-container-runtime-hook', 'nvidia-container-toolkit', version,
                    'NVIDIA Container Runtime Hook version %s' % up))}),
        package(REPO, base, version, 'NVIDIA Container Toolkit Base', section='utils', files=base_files,
                scripts=scripts, conffiles=conffiles),
        package(REPO, 'libnvidia-container-tools', version, 'NVIDIA container runtime library (command-line tools)',
                section='utils', depends=['libnvidia-container1 (>= %s)' % version],
                files={'/usr/bin/nvidia-container-cli': (0o755, _tool(
                    template, 'nvidia-container-cli', 'libnvidia-container-tools', version,
                    'cli-version: %s' % up))}),
        # No library file: a text file named like a shared object makes every ldconfig run complain.
        package(REPO, 'libnvidia-container1', version, 'NVIDIA container runtime library', section='libs'),
    ]


def packages(package, template):
    pkgs = []
    for version, refresh, commit in TOOLKIT_VERSIONS:
        pkgs += toolkit_packages(package, template, version, refresh, commit)
    return pkgs
