"""Stand-in for @PACKAGE@ @VERSION@'s nvidia-ctk (aicluster lab test equipment, lab/mirror/README.md).

The real CLI's shape for what the container_toolkit role and its CDI check use:
  nvidia-ctk --version
  nvidia-ctk [--quiet] cdi generate [--output=PATH] [--format=yaml|json] [--device-name-strategy=index,uuid]
  nvidia-ctk cdi list
  nvidia-ctk runtime configure --runtime=docker|containerd [--config=PATH] [--dry-run] [--set-as-default]
                               [--cdi.enabled]
The GPUs come from nvidia-smi -q (hwsim's in the lab: index, GPU UUID, Minor Number, driver version), as the real
one reads them from NVML; the device nodes from /dev. Logs go to stderr in logrus's layout: `INFO[0000] text` on
a terminal, `time="..." level=info msg="text"` otherwise. Python 3 standard library only.
AICLUSTER_LAB_ROOT (tests) prefixes /etc/cdi, /var/run/cdi, /dev and the library directory.
"""
import datetime
import json
import os
import re
import subprocess
import sys

VERSION = '@VERSION@'
COMMIT = '@COMMIT@'
ROOT = os.environ.get('AICLUSTER_LAB_ROOT', '')
SPEC_DIRS = ('/etc/cdi', '/var/run/cdi')          # lowest priority first, as the CDI library
CONTROL_NODES = ('/dev/nvidia-modeset', '/dev/nvidia-uvm-tools', '/dev/nvidia-uvm', '/dev/nvidiactl')
LIBDIR = '/usr/lib/x86_64-linux-gnu'
CDI_VERSION = '0.5.0'
KIND = 'nvidia.com/gpu'
QUIET = False
NVML_ERRORS = {9: 'ERROR_DRIVER_NOT_LOADED', 18: 'ERROR_LIB_RM_VERSION_MISMATCH'}


class Usage(Exception):
    pass


def log(level, msg):
    if QUIET and level == 'info':
        return
    if sys.stderr.isatty():
        sys.stderr.write('%s[0000] %s\n' % (level.upper()[:4], msg))
    else:
        now = datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')
        sys.stderr.write('time="%s" level=%s msg=%s\n' % (now, level, json.dumps(msg)))


def fatal(msg):
    log('error', msg)
    return 1


def host(path):
    return ROOT + path


# ------------------------------------------------------------------ YAML (what Go's yaml writes, and reads back)
_PLAIN = re.compile(r'^(?:--)?[A-Za-z0-9/_.][A-Za-z0-9/_.:=+-]*$')
_NOT_STRING = re.compile(r'^(?:[-+]?[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|\.[0-9]+'
                         r'|true|false|null|yes|no|on|off|y|n|~)$', re.IGNORECASE)


def _quote(value):
    """A string as Go's yaml writes it: plain unless it would read back as a number, boolean or null."""
    text = str(value)
    if _PLAIN.match(text) and not _NOT_STRING.match(text):
        return text
    return json.dumps(text)


def to_yaml(value, indent=0):
    pad = ' ' * indent
    out = []
    if isinstance(value, dict):
        for key in sorted(value):
            item = value[key]
            if isinstance(item, dict) and item:
                out.append('%s%s:\n%s' % (pad, key, to_yaml(item, indent + 2)))
            elif isinstance(item, list) and item:
                out.append('%s%s:\n%s' % (pad, key, to_yaml(item, indent)))
            elif isinstance(item, (dict, list)):
                out.append('%s%s: %s\n' % (pad, key, '{}' if isinstance(item, dict) else '[]'))
            else:
                out.append('%s%s: %s\n' % (pad, key, _quote(item)))
    else:
        for item in value:
            if isinstance(item, dict):
                body = to_yaml(item, indent + 2)
                out.append('%s- %s' % (pad, body[indent + 2:]))
            else:
                out.append('%s- %s\n' % (pad, _quote(item)))
    return ''.join(out)


def _scalar(text):
    text = text.strip()
    if text.startswith('"'):
        return json.loads(text)
    if text.startswith("'"):
        return text[1:-1].replace("''", "'")
    if text.startswith('[') and text.endswith(']'):
        return [_scalar(x) for x in text[1:-1].split(',')] if text[1:-1].strip() else []
    if text == '{}':
        return {}
    return text


def from_yaml(text):
    lines = []
    for raw in text.splitlines():
        stripped = raw.strip()
        if stripped and not stripped.startswith('#') and stripped not in ('---', '...'):
            lines.append([len(raw) - len(raw.lstrip(' ')), stripped])
    if not lines:
        raise ValueError('empty document')

    def block(pos, indent):
        if lines[pos][1].startswith('-'):
            return sequence(pos, indent)
        return mapping(pos, indent)

    def after(pos, indent, rest):
        if rest:
            return _scalar(rest), pos + 1
        nxt = pos + 1
        if nxt < len(lines) and (lines[nxt][0] > indent or (lines[nxt][0] == indent and lines[nxt][1].startswith('-'))):
            return block(nxt, lines[nxt][0])
        return None, nxt

    def mapping(pos, indent):
        result = {}
        while pos < len(lines) and lines[pos][0] == indent and not lines[pos][1].startswith('-'):
            match = re.match(r'^("[^"]*"|[^:]+?)\s*:(?:\s+(.*)|$)', lines[pos][1])
            if not match:
                raise ValueError('line %r is not "key: value"' % lines[pos][1])
            result[_scalar(match.group(1))], pos = after(pos, indent, (match.group(2) or '').strip())
        return result, pos

    def sequence(pos, indent):
        result = []
        while pos < len(lines) and lines[pos][0] == indent and lines[pos][1].startswith('-'):
            rest = lines[pos][1][1:].strip()
            if re.match(r'^[A-Za-z][\w.-]*\s*:(\s|$)', rest):
                lines[pos] = [indent + 2, rest]
                item, pos = mapping(pos, indent + 2)
            else:
                item, pos = after(pos, indent, rest)
            result.append(item)
        return result, pos

    value, pos = block(0, lines[0][0])
    if pos != len(lines):
        raise ValueError('unexpected indentation at %r' % lines[pos][1])
    return value


# ------------------------------------------------------------------ cdi generate
def query_gpus():
    """[(index, uuid, minor)], driver version; raises RuntimeError with NVML's error name."""
    try:
        proc = subprocess.run(['nvidia-smi', '-q'], capture_output=True, text=True, check=False)
    except OSError:
        raise RuntimeError('ERROR_LIBRARY_NOT_FOUND')
    if proc.returncode != 0:
        raise RuntimeError(NVML_ERRORS.get(proc.returncode, 'ERROR_UNKNOWN'))
    gpus, driver, uuid = [], None, None
    for line in proc.stdout.splitlines():
        key, _sep, value = line.partition(':')
        key, value = key.strip(), value.strip()
        if key == 'Driver Version' and driver is None:
            driver = value
        elif key == 'GPU UUID':
            uuid = value
        elif key == 'Minor Number' and uuid:
            gpus.append((len(gpus), uuid, int(value)))
            uuid = None
    return gpus, driver


def build_spec(strategies):
    gpus, driver = query_gpus()
    lib = '%s/libnvidia-ml.so.%s' % (LIBDIR, driver)
    if os.path.exists(host(lib)):
        log('info', 'Using %s' % lib)
    log('info', "Auto-detected mode as 'nvml'")
    devices, all_nodes = [], []
    for index, uuid, minor in gpus:
        node = '/dev/nvidia%d' % minor
        if not os.path.exists(host(node)):
            log('warning', 'Could not locate %s: pattern %s not found' % (node, node))
            nodes = []
        else:
            log('info', 'Selecting %s as %s' % (node, node))
            nodes = [{'path': node}]
            all_nodes.append({'path': node})
        for strategy in strategies:
            name = str(index) if strategy == 'index' else uuid
            devices.append({'name': name, 'containerEdits': {'deviceNodes': nodes}})
    if gpus:
        devices.append({'name': 'all', 'containerEdits': {'deviceNodes': all_nodes}})
    log('info', 'Using driver version %s' % driver)
    common = []
    for node in CONTROL_NODES:
        if os.path.exists(host(node)):
            log('info', 'Selecting %s as %s' % (node, node))
            common.append({'path': node})
        else:
            log('warning', 'Could not locate %s: pattern %s not found' % (node, node))
    edits = {'deviceNodes': common, 'env': ['NVIDIA_VISIBLE_DEVICES=void'],
             'hooks': [{'hookName': 'createContainer', 'path': '/usr/bin/nvidia-cdi-hook',
                        'args': ['nvidia-cdi-hook', 'update-ldcache', '--folder', LIBDIR]}]}
    if os.path.exists(host(lib)):
        log('info', 'Selecting %s as %s' % (lib, lib))
        edits['mounts'] = [{'hostPath': lib, 'containerPath': lib, 'options': ['ro', 'nosuid', 'nodev', 'bind']}]
    return {'cdiVersion': CDI_VERSION, 'kind': KIND, 'devices': devices, 'containerEdits': edits}


def cmd_generate(opts):
    output = opts.get('output', os.environ.get('NVIDIA_CTK_CDI_OUTPUT_FILE_PATH', ''))
    fmt = opts.get('format', 'json' if output.endswith('.json') else 'yaml')
    if fmt not in ('yaml', 'json'):
        return fatal('invalid output format: %s' % fmt)
    strategies = opts.get('device-name-strategy', 'index,uuid').split(',')
    if any(s not in ('index', 'uuid') for s in strategies):
        return fatal('invalid device name strategy: %s' % ','.join(strategies))
    try:
        spec = build_spec(strategies)
    except RuntimeError as exc:
        return fatal('failed to generate CDI spec: failed to create device CDI specs: failed to initialize NVML: %s'
                     % exc)
    text = json.dumps(spec, sort_keys=True) + '\n' if fmt == 'json' else '---\n' + to_yaml(spec)
    if not output:
        sys.stdout.write(text)
    else:
        path = host(output)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = '%s.tmp%d' % (path, os.getpid())
        with open(tmp, 'w', encoding='utf-8') as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    log('info', 'Generated CDI spec with version %s' % CDI_VERSION)
    return 0


# ------------------------------------------------------------------ cdi list (the CDI library's cache, in short)
def cmd_list(_opts):
    devices, errors, conflicts = {}, [], set()
    for priority, directory in enumerate(SPEC_DIRS):
        try:
            names = sorted(os.listdir(host(directory)))
        except OSError:
            continue
        for name in names:
            if not name.endswith(('.yaml', '.json')):
                continue
            path = os.path.join(directory, name)
            try:
                with open(host(path), encoding='utf-8') as handle:
                    text = handle.read()
                spec = json.loads(text) if text.lstrip().startswith('{') else from_yaml(text)
                vendor_class = spec['kind']
                entries = [str(device['name']) for device in spec.get('devices') or []]
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
                errors.append('failed to load CDI Spec %s: %s' % (path, exc))
                continue
            for entry in entries:
                qualified = '%s=%s' % (vendor_class, entry)
                if qualified in devices:
                    other_priority, other_path = devices[qualified]
                    if other_priority == priority:
                        errors.append('conflicting device "%s" (specs "%s", "%s")' % (qualified, path, other_path))
                        conflicts.add(qualified)
                    if other_priority >= priority:
                        continue
                devices[qualified] = (priority, path)
    listed = sorted(name for name in devices if name not in conflicts)
    log('info', 'Found %d CDI devices' % len(listed))
    if errors:
        log('warning', 'Refreshing the CDI registry returned the following error(s): %s' % '\n'.join(errors))
    for name in listed:
        sys.stdout.write(name + '\n')
    return 0


# ------------------------------------------------------------------ runtime configure
def configure_docker(path, opts):
    config = {}
    if os.path.exists(path):
        log('info', 'Loading config from %s' % path)
        with open(path, encoding='utf-8') as handle:
            text = handle.read()
        config = json.loads(text) if text.strip() else {}
    runtimes = config.setdefault('runtimes', {})
    runtimes['nvidia'] = {'args': [], 'path': 'nvidia-container-runtime'}
    if 'set-as-default' in opts:
        config['default-runtime'] = 'nvidia'
    if 'cdi.enabled' in opts:
        config.setdefault('features', {})['cdi'] = True
    return json.dumps(config, indent=4, sort_keys=True) + '\n'


CONTAINERD_TABLE = '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]'


def configure_containerd(path, opts):
    text = ''
    if os.path.exists(path):
        with open(path, encoding='utf-8') as handle:
            text = handle.read()
    log('info', 'Using config version 2')
    log('info', 'Using CRI runtime plugin name "io.containerd.grpc.v1.cri"')
    if not text.strip():
        text = 'version = 2\n'
    if CONTAINERD_TABLE not in text:
        text = text.rstrip('\n') + '\n\n' + CONTAINERD_TABLE + '\n  privileged_without_host_devices = false\n' \
            '  runtime_type = "io.containerd.runc.v2"\n\n' + CONTAINERD_TABLE[:-1] + '.options]\n' \
            '  BinaryName = "/usr/bin/nvidia-container-runtime"\n'
    if 'set-as-default' in opts and 'default_runtime_name = "nvidia"' not in text:
        text += '\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "nvidia"\n'
    return text


def cmd_configure(opts):
    runtime = opts.get('runtime', 'docker')
    defaults = {'docker': '/etc/docker/daemon.json', 'containerd': '/etc/containerd/config.toml'}
    if runtime not in defaults:
        return fatal('unrecognized runtime \'%s\'' % runtime)
    path = opts.get('config', defaults[runtime])
    try:
        text = (configure_docker if runtime == 'docker' else configure_containerd)(path, opts)
    except (OSError, ValueError) as exc:
        return fatal('unable to load config for runtime %s: %s' % (runtime, exc))
    if 'dry-run' in opts:
        sys.stdout.write(text)
        return 0
    os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
    with open(path, 'w', encoding='utf-8') as handle:
        handle.write(text)
    log('info', 'Wrote updated config to %s' % path)
    log('info', 'It is recommended that %s daemon be restarted.' % runtime)
    return 0


# ------------------------------------------------------------------ the command line
FLAGS = {('cdi', 'generate'): ('output', 'format', 'device-name-strategy', 'mode', 'driver-root'),
         ('cdi', 'list'): (),
         ('runtime', 'configure'): ('runtime', 'config', 'dry-run', 'set-as-default', 'cdi.enabled')}
BOOLEAN = ('dry-run', 'set-as-default', 'cdi.enabled')


def parse(args):
    words, opts = [], {}
    while args:
        arg = args.pop(0)
        if arg.startswith('--'):
            name, sep, value = arg[2:].partition('=')
            if name in BOOLEAN:
                opts[name] = value or 'true'
                continue
            if not sep:
                if not args:
                    raise Usage('flag needs an argument: --%s' % name)
                value = args.pop(0)
            opts[name] = value
        else:
            words.append(arg)
    command = tuple(words)
    if command not in FLAGS:
        raise Usage('No help topic for \'%s\'' % ' '.join(words))
    unknown = sorted(set(opts) - set(FLAGS[command]))
    if unknown:
        raise Usage('flag provided but not defined: -%s' % unknown[0])
    return command, opts


def main(argv):
    global QUIET  # pylint: disable=global-statement
    args = list(argv[1:])
    while args and args[0] in ('--quiet', '-q', '--debug', '-d'):
        QUIET = QUIET or args.pop(0) in ('--quiet', '-q')
    if args in (['--version'], ['-v']):
        sys.stdout.write('NVIDIA Container Toolkit CLI version %s\ncommit: %s\n' % (VERSION, COMMIT))
        return 0
    try:
        command, opts = parse(args)
    except Usage as exc:
        sys.stderr.write('Incorrect Usage: %s\n' % exc)
        return 1
    if command == ('cdi', 'generate'):
        return cmd_generate(opts)
    if command == ('cdi', 'list'):
        return cmd_list(opts)
    return cmd_configure(opts)


if __name__ == '__main__':
    sys.exit(main(sys.argv))
