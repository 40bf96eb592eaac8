# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for packages_to_install (host_state_info): which of a role's packages apt must install, from dpkg-query."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.aicluster.infra.plugins.module_utils.packages import package_name, packages_to_install, parse_dpkg_query

# dpkg-query --show --showformat='${Package}\t${binary:Package}\t${Version}\t${db:Status-Abbrev}\n'
# slurmd munge libpmix2 libpmix-dev slurm-client slurmctld  on Debian 12 (slurmctld removed, its config kept)
DEBIAN12 = ('slurmd\tslurmd\t22.05.8-4+deb12u3\tii \n'
            'munge\tmunge\t0.5.15-2\tii \n'
            'libpmix2\tlibpmix2:amd64\t4.2.2-1+deb12u1\tii \n'
            'libpmix-dev\tlibpmix-dev:amd64\t4.2.2-1+deb12u1\tii \n'
            'slurm-client\tslurm-client\t22.05.8-4+deb12u3\tii \n'
            'slurmctld\tslurmctld\t22.05.8-4+deb12u3\trc \n')


@pytest.mark.parametrize('wanted, missing', [
    (['slurmd', 'munge', 'libpmix2', 'libpmix-dev', 'slurm-client'], []),
    (['slurmd', 'slurmctld'], ['slurmctld']),                   # removed, config files left: not installed
    (['slurmd', 'mariadb-server'], ['mariadb-server']),          # unknown to dpkg (dpkg-query exits 1)
    (['libpmix2:amd64', 'libpmix2'], []),                        # architecture-qualified names
    (['munge=0.5.15-2'], []),
    (['munge=0.5.15*'], []),                                     # apt's wildcard
    (['munge=0.5.14-1'], ['munge=0.5.14-1']),                    # installed at another version
    (['munge>=0.5'], ['munge>=0.5']),                            # not judged here: apt decides
    ([], []),
], ids=['all-installed', 'removed', 'unknown', 'arch', 'pinned', 'wildcard', 'other-version', 'range', 'none'])
def test_packages_to_install(wanted, missing):
    assert packages_to_install(wanted, DEBIAN12) == missing


def test_nothing_read_means_everything_missing():
    assert packages_to_install(['munge', 'slurmd'], '') == ['munge', 'slurmd']


def test_parse_skips_other_lines():
    text = 'dpkg-query: no packages found matching nope\nmunge\tmunge\t0.5.15-2\tii \n'
    assert parse_dpkg_query(text) == {'munge': ('0.5.15-2', 'ii')}


def test_package_name():
    assert [package_name(spec) for spec in ('munge', 'munge=1.0', 'munge>=1.0', 'libpmix2:amd64')] == [
        'munge', 'munge', 'munge', 'libpmix2:amd64']
