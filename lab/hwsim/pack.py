"""Pack lab/hwsim into a reproducible tar for lab/hwsim/install.yml.

The same sources always give the same bytes (sorted names, fixed owner and
mtime, no __pycache__), so Ansible's copy sees an unchanged file and the
install is a no-op on a re-run.

Usage: python3 lab/hwsim/pack.py OUT.tar
"""
import io
import os
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
PARTS = ('bin', 'hwsim', 'profiles')


def _files():
    for part in PARTS:
        for root, dirs, files in os.walk(os.path.join(HERE, part)):
            dirs[:] = sorted(d for d in dirs if d != '__pycache__')
            for name in sorted(files):
                if not name.endswith('.pyc'):
                    yield os.path.join(root, name)


def pack(out):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode='w', format=tarfile.PAX_FORMAT) as tar:
        for path in _files():
            info = tar.gettarinfo(path, arcname=os.path.relpath(path, HERE))
            info.uid = info.gid = 0
            info.uname = info.gname = 'root'
            info.mtime = 0
            info.mode = 0o755 if os.access(path, os.X_OK) else 0o644
            with open(path, 'rb') as handle:
                tar.addfile(info, handle)
    with open(out, 'wb') as handle:
        handle.write(buffer.getvalue())


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    pack(sys.argv[1])
