# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pinned, held packages: what apt must do so that every package of a bill of materials is at exactly its version
and held, decided from one ``dpkg-query`` and (only when something must change) one ``apt-cache madison``.

A package is wanted either at an exact ``version`` or at an ``upstream`` version: the one version the repository
offers with that upstream part, whatever its Debian revision (NVIDIA's Ubuntu driver packages are 580.95.05-0ubuntu1,
its fabric manager 580.95.05-1: one version string cannot pin both). An installed package with that upstream part is
at its pin; otherwise ``resolve`` picks the version from ``apt-cache madison`` and refuses none or several.

Pure functions; plugins/modules/pinned_packages.py runs the tools.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicluster.infra.plugins.module_utils.packages import parse_dpkg_query

NAME = re.compile(r'^[a-z0-9][a-z0-9+.-]+$')
VERSION = re.compile(r'^(?:[0-9]+:)?[0-9][A-Za-z0-9.+~:-]*$')
# An upstream version: no epoch, no revision, no wildcard.
UPSTREAM = re.compile(r'^[0-9][A-Za-z0-9.+~]*$')


def upstream_of(version):
    """The upstream part of a Debian version: ``1:580.95.05-0ubuntu1`` -> ``580.95.05``."""
    text = str(version or '').strip()
    if re.match(r'^[0-9]+:', text):
        text = text.split(':', 1)[1]
    return text.rsplit('-', 1)[0] if '-' in text else text


def wanted(entry):
    """What an entry asks for, as text: its version, or ``<upstream>-*`` for an upstream pin."""
    return entry.get('version') or '%s-*' % entry.get('upstream')


def _at_pin(entry, current):
    if not current:
        return False
    if entry.get('version'):
        return current == entry['version']
    return upstream_of(current) == entry['upstream']


def wanted_problems(packages):
    """One line per bad entry of the module's ``packages`` list: a name and either an exact Debian ``version`` or an
    ``upstream`` version each."""
    problems = []
    seen = set()
    for index, entry in enumerate(packages or []):
        name = (entry or {}).get('name') if isinstance(entry, dict) else None
        version = (entry or {}).get('version') if isinstance(entry, dict) else None
        upstream = (entry or {}).get('upstream') if isinstance(entry, dict) else None
        label = 'packages[%d]' % index
        if not isinstance(name, str) or not NAME.match(name):
            problems.append('%s: name must be a Debian package name (lowercase letters, digits, + - .), got %r' % (label, name))
            continue
        if name in seen:
            problems.append('%s: %s is listed twice' % (label, name))
        seen.add(name)
        if version is not None and upstream is not None:
            problems.append('%s: %s has both version %r and upstream %r: give one' % (label, name, version, upstream))
        elif upstream is not None:
            if not isinstance(upstream, str) or not UPSTREAM.match(upstream):
                problems.append('%s: %s needs an upstream version without epoch, revision or wildcard such as '
                                '580.95.05, got %r' % (label, name, upstream))
        elif not isinstance(version, str) or not VERSION.match(version) or '*' in version:
            problems.append('%s: %s needs an exact Debian version such as 580.95.05-1 (no wildcard) or an upstream '
                            'version, got %r' % (label, name, version))
    return problems


def plan(packages, dpkg_query_stdout, hold=True):
    """What to do, from the wanted ``[{name, version}]`` or ``[{name, upstream}]`` and a ``dpkg-query`` of them.

    Returns ``{'install': [{name, before, after}], 'hold': [names], 'unhold': [names], 'installed': {name: version}}``:
    ``install`` lists the packages not installed (``before`` '') or off their pin, in the given order (``after``
    is '' and ``upstream`` set where the version is still to be resolved from the repository: ``resolve``);
    ``hold``/``unhold`` the names whose dpkg selection must change to match ``hold`` (after the install, every
    wanted package is held, or none is); ``held`` the names held now.
    """
    state = parse_dpkg_query(dpkg_query_stdout)
    install, to_hold, to_unhold, installed, held_now = [], [], [], {}, []
    for entry in packages:
        name = entry['name']
        found = state.get(name)
        present = found is not None and len(found[1]) >= 2 and found[1][1] == 'i'
        current = found[0] if present else ''
        installed[name] = current
        at_pin = _at_pin(entry, current)
        if not at_pin:
            change = {'name': name, 'before': current, 'after': entry.get('version') or ''}
            if not entry.get('version'):
                change['upstream'] = entry['upstream']
            install.append(change)
        held = found is not None and found[1][:1] == 'h'
        if held:
            held_now.append(name)
        # apt-get install --allow-change-held-packages drops the hold of a package it upgrades: hold it again
        if hold and (not held or not at_pin):
            to_hold.append(name)
        elif not hold and held:
            to_unhold.append(name)
    return {'install': install, 'hold': to_hold, 'unhold': to_unhold, 'installed': installed, 'held': held_now}


def parse_madison(text):
    """{name: [versions]} from ``apt-cache madison`` lines ``name | version | source``."""
    available = {}
    for line in (text or '').splitlines():
        fields = [field.strip() for field in line.split('|')]
        if len(fields) < 3 or not fields[0] or not fields[1]:
            continue
        versions = available.setdefault(fields[0], [])
        if fields[1] not in versions:
            versions.append(fields[1])
    return available


def resolve(entries, madison_stdout):
    """Resolve upstream pins against ``apt-cache madison``: (entries, problems).

    Each entry with ``upstream`` (and no ``version``/``after`` yet) gets the one offered version whose upstream part
    it is, in ``version`` (a wanted entry) or ``after`` (an ``install`` entry of plan), without ``upstream``; a
    problem line names each package with none or several such versions, and what is offered. Entries with an exact
    version pass unchanged.
    """
    available = parse_madison(madison_stdout)
    resolved, problems = [], []
    for entry in entries:
        entry = dict(entry)
        upstream = entry.get('upstream')
        key = 'after' if 'after' in entry else 'version'
        if upstream and not entry.get(key):
            offered = available.get(entry['name'], [])
            matches = [version for version in offered if upstream_of(version) == upstream]
            if len(matches) == 1:
                entry[key] = matches[0]
                del entry['upstream']
            elif matches:
                problems.append('%s=%s-* is ambiguous: the repositories offer %s; pin one exact version'
                                % (entry['name'], upstream, ', '.join(matches)))
            else:
                problems.append('%s=%s-* is not in any configured repository (%s)' % (
                    entry['name'], upstream, 'offered: %s' % ', '.join(offered[:6]) if offered
                    else 'no version of %s is offered' % entry['name']))
        resolved.append(entry)
    return resolved, problems


def unavailable(install, madison_stdout):
    """One line per package of ``install`` whose version no configured repository offers."""
    available = parse_madison(madison_stdout)
    lines = []
    for entry in install:
        offered = available.get(entry['name'], [])
        if entry['after'] not in offered:
            lines.append('%s=%s is not in any configured repository (%s)' % (
                entry['name'], entry['after'],
                'offered: %s' % ', '.join(offered[:6]) if offered else 'no version of %s is offered' % entry['name']))
    return lines


def update_errors(stdout, stderr):
    """The lines of an ``apt-get update`` run that say a repository was not read: ``Err:``, ``E:``, and the
    ``W: Failed to fetch`` / ``W: Some index files failed to download`` warnings apt gives (exit status 0) when a
    repository cannot be reached or its signature does not verify."""
    lines = []
    for line in ((stdout or '') + '\n' + (stderr or '')).splitlines():
        text = line.strip()
        if text.startswith(('Err:', 'E:', 'W: Failed to fetch', 'W: Some index files failed',
                            'W: GPG error', 'W: The repository')):
            lines.append(re.sub(r'\s+', ' ', text))
    return lines


def state_text(packages, installed, held):
    """The diff text of one state: ``name=version`` per line, ``(held)`` where held, ``absent`` where missing."""
    lines = []
    for entry in packages:
        version = installed.get(entry['name'], '')
        lines.append('%s=%s%s\n' % (entry['name'], version or 'absent', ' (held)' if entry['name'] in held else ''))
    return ''.join(lines)


# ------------------------------------------------------------------ kernels
def kernel_key(release):
    """A sort key for kernel release strings (6.1.0-18-amd64 < 6.1.0-28-amd64 < 6.12.0-1-amd64;
    5.14.0-427.13.1.el9_4.x86_64): numbers compare as numbers, the rest as text."""
    return [(0, int(part), '') if part.isdigit() else (1, 0, part) for part in re.findall(r'\d+|[^\d.+~_-]+', release)]


def kernel_state(running, installed):
    """The kernel decision for kernel-module builds.

    ``running`` is ``uname -r``; ``installed`` the releases that have a kernel image. Returns ``{'installed':
    sorted, 'newest', 'running_is_newest', 'message'}``; a node with no image listed (a container) counts as
    running its newest.
    """
    releases = sorted(set(installed), key=kernel_key)
    newest = releases[-1] if releases else running
    is_newest = not releases or kernel_key(running) >= kernel_key(newest)
    message = '' if is_newest else (
        'the running kernel %s is not the newest installed (%s): a kernel-module package (DKMS) would build for a '
        'kernel that is not running; reboot into %s first, or remove it' % (running, newest, newest))
    return {'running': running, 'installed': releases, 'newest': newest, 'running_is_newest': is_newest,
            'message': message}
