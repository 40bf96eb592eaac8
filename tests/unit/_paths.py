"""Where test inputs live, for the unit tests (imported as ``from _paths import ...``).

Real captures stay in ../shared/fixtures/real/ (provenance in its SOURCES.tsv):
tests read them by path and never copy them into this repository.
"""
import importlib.machinery
import importlib.util
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
REAL_FIXTURES = os.environ.get(
    'AICLUSTER_REAL_FIXTURES',
    os.path.join(os.path.dirname(REPO), 'shared', 'fixtures', 'real'))
OWN_FIXTURES = os.path.join(HERE, 'fixtures')


def _read(path):
    with open(path, encoding='utf-8', newline='') as handle:
        return handle.read()


def real_fixture(relpath):
    """Text of a real capture, e.g. ``real_fixture('ibstat/kaust-ibex-cx6-hdr100-rate100.txt')``.

    The captures live outside the repository (a plain clone has none): when one
    is absent, the test that asked for it is skipped with the path as the
    reason. Call it inside a test (or a function a test calls), never at import.
    """
    path = os.path.join(REAL_FIXTURES, relpath)
    if not os.path.isfile(path):
        pytest.skip('real capture absent: %s (set AICLUSTER_REAL_FIXTURES or put ../shared beside the clone)' % path)
    return _read(path)


def own_fixture(relpath):
    """Text of one of our fixtures under tests/unit/fixtures/<tool>/.

    Fixtures named ``*-crlf-*`` are stored with LF line ends (the repository's
    rule) and handed to the tests with CRLF line ends, as their name says.
    """
    text = _read(os.path.join(OWN_FIXTURES, relpath))
    if '-crlf-' in os.path.basename(relpath):
        text = text.replace('\r\n', '\n').replace('\n', '\r\n')
    return text


def fixture_files(tool):
    """Sorted (kind, relpath) for every fixture of a tool, real and ours."""
    found = []
    for kind, base in (('real', REAL_FIXTURES), ('own', OWN_FIXTURES)):
        folder = os.path.join(base, tool)
        if os.path.isdir(folder):
            found.extend((kind, os.path.join(tool, name)) for name in sorted(os.listdir(folder)))
    return found


def read_fixture(kind, relpath):
    return real_fixture(relpath) if kind == 'real' else own_fixture(relpath)


def load_program(path, name):
    """A Python program without a .py name (a role's script, bin/aicluster) imported as a module, to test its parts."""
    loader = importlib.machinery.SourceFileLoader(name, path)
    spec = importlib.util.spec_from_loader(name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module
