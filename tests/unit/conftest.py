"""Make the collection importable as ansible_collections.aicluster.infra.

The repository root is the collection root; a link under .collections/ gives
it the path that Ansible and these tests import it by.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
COLLECTIONS = os.path.join(REPO, '.collections')
_LINK = os.path.join(COLLECTIONS, 'ansible_collections', 'aicluster', 'infra')

if not os.path.lexists(_LINK):
    os.makedirs(os.path.dirname(_LINK), exist_ok=True)
    os.symlink(os.path.relpath(REPO, os.path.dirname(_LINK)), _LINK)
for path in (COLLECTIONS, HERE):
    if path not in sys.path:
        sys.path.insert(0, path)


# Real captures (../shared/fixtures/real, or AICLUSTER_REAL_FIXTURES) are not in the repository: a plain clone skips
# the tests that read them, by name, and passes. Where the captures are present (CI), a test skipped because its
# capture is absent means a capture was renamed or lost: the run fails.
_CAPTURE_SKIP = 'real capture absent:'


def _capture_skips(terminalreporter):
    skipped = []
    for report in terminalreporter.stats.get('skipped', []):
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        if _CAPTURE_SKIP in reason:
            skipped.append(report.nodeid)
    return skipped


def pytest_sessionfinish(session, exitstatus):
    from _paths import REAL_FIXTURES
    reporter = session.config.pluginmanager.get_plugin('terminalreporter')
    skipped = _capture_skips(reporter) if reporter is not None else []
    session.config._aicluster_capture_skips = (skipped, os.path.isdir(REAL_FIXTURES), REAL_FIXTURES)
    if skipped and os.path.isdir(REAL_FIXTURES) and exitstatus == 0:
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    skipped, present, root = getattr(config, '_aicluster_capture_skips', ([], False, ''))
    if not skipped:
        return
    terminalreporter.section('tests of real captures skipped (%d)' % len(skipped))
    terminalreporter.write_line('captures: %s (%s)' % (root, 'present' if present else 'absent'))
    for nodeid in skipped:
        terminalreporter.write_line('  ' + nodeid)
    if present:
        terminalreporter.write_line('FAILED: the captures are present, so these must run: a capture they read is missing')
