# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which services a role must start, from one systemctl show: decided as ansible.builtin.systemd_service decides."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.aicluster.infra.plugins.module_utils.host_state import (
    parse_systemctl_show, service_states, services_to_start)

# systemctl show --property=Id,LoadState,ActiveState,UnitFileState -- munge slurmd nosuch mariadb
# on a Debian 12 lab host (systemd 252) with munge stopped by hand and no MariaDB
DEBIAN12 = ('Id=munge.service\nLoadState=loaded\nActiveState=inactive\nUnitFileState=enabled\n\n'
            'Id=slurmd.service\nLoadState=loaded\nActiveState=active\nUnitFileState=enabled\n\n'
            'Id=nosuch.service\nLoadState=not-found\nActiveState=inactive\nUnitFileState=\n\n'
            'Id=mariadb.service\nLoadState=not-found\nActiveState=inactive\nUnitFileState=\n')


def test_blocks_in_order():
    units = parse_systemctl_show(DEBIAN12)
    assert [unit['Id'] for unit in units] == ['munge.service', 'slurmd.service', 'nosuch.service', 'mariadb.service']
    assert units[2] == {'Id': 'nosuch.service', 'LoadState': 'not-found', 'ActiveState': 'inactive', 'UnitFileState': ''}


def test_states_and_what_to_start():
    states = service_states(['munge', 'slurmd', 'nosuch', 'mariadb.service'], DEBIAN12)
    assert states['slurmd'] == {'exists': True, 'running': True, 'enabled': True, 'active_state': 'active',
                                'unit_file_state': 'enabled'}
    assert states['munge']['running'] is False and states['munge']['enabled'] is True
    assert states['nosuch']['exists'] is False
    # a stopped unit and units systemd does not know: the start task runs for them (and fails on the unknown ones)
    assert services_to_start(states) == ['munge', 'nosuch', 'mariadb.service']


def test_an_alias_is_matched_by_order():
    text = 'Id=mariadb.service\nLoadState=loaded\nActiveState=active\nUnitFileState=enabled\n'
    assert service_states(['mysql'], text)['mysql']['running'] is True


def test_matched_by_id_when_the_count_differs():
    states = service_states(['slurmd', 'munge'], DEBIAN12)
    assert states['slurmd']['running'] is True and states['munge']['running'] is False


@pytest.mark.parametrize('active, unit_file, start', [
    ('active', 'enabled', False),
    ('activating', 'enabled', False),       # starting: left to finish, as systemd_service does
    ('active', 'static', False),            # static units are enabled for `systemctl is-enabled` and systemd_service
    ('active', 'generated', False),
    ('active', 'enabled-runtime', True),    # enabled until the next boot only: systemd_service enables it for good
    ('active', 'indirect', True),           # systemd_service enables these again too
    ('active', 'alias', True),
    ('reloading', 'enabled', True),         # not running for systemd_service: it asks systemd to start it (a no-op)
    ('active', 'disabled', True),
    ('failed', 'enabled', True),
    ('inactive', 'masked', True),           # the start task then fails on the mask, naming it
])
def test_running_and_enabled_as_systemd_service_sees_them(active, unit_file, start):
    text = 'Id=x.service\nLoadState=loaded\nActiveState=%s\nUnitFileState=%s\n' % (active, unit_file)
    assert services_to_start(service_states(['x'], text)) == (['x'] if start else [])


def test_nothing_read_means_everything_to_start():
    assert services_to_start(service_states(['munge'], '')) == ['munge']


def test_a_unit_enabled_until_the_next_boot_only():
    # Debian 12 lab host (systemd 252): `systemctl disable X; systemctl enable --runtime X`. systemd_service reports
    # changed on it (it enables the unit for good), so the role's start task must run: the read lists it.
    text = 'Id=e2scrub_reap.service\nLoadState=loaded\nActiveState=inactive\nUnitFileState=enabled-runtime\n'
    states = service_states(['e2scrub_reap'], text)
    assert states['e2scrub_reap']['enabled'] is False
    assert services_to_start(states) == ['e2scrub_reap']
