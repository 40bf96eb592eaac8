# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which of a role's packages apt must install, from one ``dpkg-query --show`` of them.

The roles read what is installed first and run apt (with its package-list refresh) only where something is
missing, so a re-run on a converged host never refreshes the package lists.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import re

# The --showformat the roles give dpkg-query: one line per package known to dpkg.
DPKG_QUERY_FORMAT = r'${Package}\t${binary:Package}\t${Version}\t${db:Status-Abbrev}\n'
SPEC = re.compile(r'^(?P<name>[A-Za-z0-9][A-Za-z0-9+.:_-]*?)(?:(?P<op>=)(?P<version>[^=<>]+))?$')


def package_name(spec):
    """The package name of an apt spec (``name``, ``name:arch``, ``name=version``, ``name>=version``)."""
    return re.split(r'[<>=]', spec.strip(), maxsplit=1)[0]


def parse_dpkg_query(text):
    """{name: (version, status)} from dpkg-query lines ``Package<TAB>binary:Package<TAB>Version<TAB>Status-Abbrev``.

    Both the plain and the architecture-qualified name are keys. Lines that are not four fields are skipped.
    """
    installed = {}
    for line in (text or '').splitlines():
        fields = line.split('\t')
        if len(fields) != 4:
            continue
        package, binary, version, status = fields
        for name in (package, binary):
            if name:
                installed[name] = (version, status.strip())
    return installed


def packages_to_install(wanted, dpkg_query_stdout):
    """The specs of ``wanted`` that apt must act on: not installed (dpkg status other than ``ii``), or installed
    at a version that does not match ``name=version`` (apt's ``*`` wildcards allowed).

    A spec apt understands but this cannot judge (``name>=version``, a virtual package dpkg does not list) is
    always returned: apt then decides, as it did before the read.
    """
    installed = parse_dpkg_query(dpkg_query_stdout)
    missing = []
    for spec in wanted or []:
        match = SPEC.match(spec.strip())
        found = installed.get(match.group('name')) if match else None
        if found is None or found[1] != 'ii':
            missing.append(spec)
        elif match.group('version') and not fnmatch.fnmatchcase(found[0], match.group('version')):
            missing.append(spec)
    return missing
