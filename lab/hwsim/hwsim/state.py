"""Per-host simulator state: injected faults and mutable adapter settings, one JSON file per host.

The directory ($HWSIM_STATE_DIR, default /var/lib/hwsim) is shared by every
lab host, so a fabric-wide tool (iblinkinfo) sees the faults of all of them.
Writes go to a temporary file in the same directory and are renamed into
place, so a reader never sees half a file.
"""
import json
import os
import socket
import tempfile

DEFAULT_DIR = '/var/lib/hwsim'


def state_dir(environ=None):
    """$HWSIM_STATE_DIR or /var/lib/hwsim."""
    environ = os.environ if environ is None else environ
    return environ.get('HWSIM_STATE_DIR') or DEFAULT_DIR


def hostname(environ=None):
    """$HWSIM_HOST or the short host name."""
    environ = os.environ if environ is None else environ
    return environ.get('HWSIM_HOST') or socket.gethostname().split('.')[0]


def empty(host):
    """The state of a host nobody has touched: no faults, adapters at their defaults."""
    return {'host': host, 'faults': [], 'adapters': {}}


def path_for(directory, host):
    return os.path.join(directory, '%s.json' % host)


def load(directory, host):
    """The host's state; a missing file is the empty state."""
    path = path_for(directory, host)
    try:
        with open(path, encoding='utf-8') as handle:
            data = json.load(handle)
    except FileNotFoundError:
        return empty(host)
    data.setdefault('host', host)
    data.setdefault('faults', [])
    data.setdefault('adapters', {})
    return data


def save(directory, host, data):
    """Write the host's state atomically (temp file in the same directory, then rename)."""
    os.makedirs(directory, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix='.%s.' % host, suffix='.tmp', dir=directory)
    try:
        with os.fdopen(handle, 'w', encoding='utf-8') as stream:
            json.dump(data, stream, indent=2, sort_keys=True)
            stream.write('\n')
        os.chmod(tmp, 0o644)
        os.replace(tmp, path_for(directory, host))
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load_all(directory, hosts):
    """{host: state} for every host name given (missing files are empty states)."""
    return {host: load(directory, host) for host in hosts}
