# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which packages the munge, slurm and mariadb roles must install, from one dpkg-query of them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.aicluster.infra.plugins.module_utils.packages import packages_to_install


def _packages_to_install(wanted, dpkg_query_stdout):
    if isinstance(wanted, str) or not isinstance(wanted, (list, tuple)):
        raise AnsibleFilterError('packages_to_install: expected a list of package names, got %r' % (wanted,))
    if not isinstance(dpkg_query_stdout, str):
        raise AnsibleFilterError('packages_to_install: expected the text of dpkg-query, got %r' % (dpkg_query_stdout,))
    return packages_to_install([str(spec) for spec in wanted], dpkg_query_stdout)


class FilterModule(object):
    def filters(self):
        return {
            'packages_to_install': _packages_to_install,
        }
