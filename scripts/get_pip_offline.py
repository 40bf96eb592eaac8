"""Stand-in for pip's get-pip.py bootstrap script, for machines without internet.

ansible-test bootstraps pip in each sanity virtual environment by running a
get-pip.py it downloads from a host these machines cannot reach; it first
looks for a cached copy in ~/.ansible/test/cache/. `scripts/ansible-test-sanity.sh`
puts this file there: it installs pip from the interpreter's own ensurepip
and then runs `pip install` with the arguments ansible-test passed
(dropping get-pip's own --no-setuptools/--no-wheel switches).
"""
import subprocess
import sys

subprocess.check_call([sys.executable, '-m', 'ensurepip', '--upgrade', '--default-pip'])
args = [arg for arg in sys.argv[1:] if arg not in ('--no-setuptools', '--no-wheel')]
if args:
    subprocess.check_call([sys.executable, '-m', 'pip', 'install'] + args)
