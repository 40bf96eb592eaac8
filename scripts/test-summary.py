# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Summarise a failed `make test` from its log (make test tees it to .cache/test.log).

CI shows the tail of what `make test` printed, and with --output-sync a failed check's own output can be thousands of
lines above it. This prints, last, which checks failed and the lines that say why: pytest's FAILED/ERROR lines and the
first `E ` lines, Ansible's `fatal:` lines that were not ignored, molecule's CRITICAL lines and failing recaps.

Usage: python3 scripts/test-summary.py LOG
"""
import re
import sys

ENDED = re.compile(r'^test: (\S+) ended with rc (\d+) in (\d+) s$')
WHY = re.compile(r'^(FAILED (?!- RETRYING)|ERROR |E   |CRITICAL |fatal: \[|.*\bfailed=[1-9]|.*\bunreachable=[1-9]|make\[\d+\]: \*\*\*)')
MAKE_ERROR = re.compile(r'^make(\[\d+\])?: \*\*\* ')
PER_CHECK = 14
WIDTH = 240


def blocks(lines):
    """(name, rc, seconds, lines) for each check: with --output-sync=target a check's lines come whole, before its
    `test: NAME ended` line."""
    start = 0
    for index, line in enumerate(lines):
        match = ENDED.match(line)
        if match:
            yield match.group(1), int(match.group(2)), int(match.group(3)), lines[start:index]
            start = index + 1


def _ignored(after):
    """Whether Ansible's `...ignoring` follows a fatal line before the next host's result or task."""
    for line in after:
        if line.startswith('...ignoring'):
            return True
        if line.startswith(('fatal: [', 'ok: [', 'changed: [', 'TASK [', 'PLAY ')):
            return False
    return False


def why(lines):
    """The lines of one failed check that say why, without Ansible's ignored failures and retries."""
    found = []
    for index, line in enumerate(lines):
        if not WHY.match(line):
            continue
        if line.startswith('fatal: [') and _ignored(lines[index + 1:index + 60]):
            continue
        found.append(line if len(line) <= WIDTH else line[:WIDTH] + ' ...')
    return found


def summary(text):
    lines = text.splitlines()
    failed = [(name, rc, seconds, why(block)) for name, rc, seconds, block in blocks(lines) if rc]
    if not failed:
        return ['test summary: no check ended with a non-zero rc (a check that never ended is not in the log)'] + [
            '   ' + line for line in lines if MAKE_ERROR.match(line)][-PER_CHECK:]
    out = ['test summary: %d check(s) failed: %s' % (len(failed), ', '.join('%s (rc %d, %d s)' % f[:3] for f in failed))]
    for name, _rc, _seconds, reasons in failed:
        out.append('-- %s:' % name)
        shown = reasons[:PER_CHECK // 2] + reasons[-(PER_CHECK // 2):] if len(reasons) > PER_CHECK else reasons
        out.extend('   ' + line for line in shown or ['(no failure line found; see the check\'s output above)'])
    return out


def main(argv):
    with open(argv[1], encoding='utf-8', errors='replace') as handle:
        print('\n'.join(summary(handle.read())))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
