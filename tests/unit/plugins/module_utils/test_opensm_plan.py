# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""opensm_plan: the SM instances of a host and the refusals made before anything changes."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.aicluster.infra.plugins.module_utils.opensm_plan import opensm_fleet_problems, opensm_plan

DEFAULT = {'name': 'Default', 'pkey': '0x7fff', 'ipoib': True, 'mtu': 4096, 'members': [{'guid': 'ALL', 'membership': 'full'}]}


def ib_info(*guids, link_layer='InfiniBand', rate=400.0):
    return {'hcas': [{'name': 'mlx5_%d' % index, 'ports': [{'port': 1, 'link_layer': link_layer, 'port_guid': guid,
                                                            'rate_gbps': rate, 'state': 'Active'}]}
                     for index, guid in enumerate(guids)]}


def settings(**more):
    base = {'ports': [], 'subnet': 'fabric', 'sm_priority': None, 'allow_on_compute': False, 'provider': 'host',
            'partitions': [DEFAULT], 'conf': {'sweep_interval': None, 'routing_engine': None}}
    base.update(more)
    return base


def test_first_ib_port_primary_then_standby():
    first = opensm_plan(settings(), ib_info('0xA088C20300001001', '0xa088c20300001011'), 'ctl01', ['ctl01', 'ctl02'], [])
    second = opensm_plan(settings(), ib_info('0xa088c20300002001'), 'ctl02', ['ctl01', 'ctl02'], [])
    assert first['problems'] == [] and second['problems'] == []
    [instance] = first['instances']
    assert instance['guid'] == '0xa088c20300001001' and instance['priority'] == 15
    assert instance['unit'] == 'aicluster-opensm@0xa088c20300001001.service'
    assert instance['conf_path'] == '/etc/opensm/aicluster/opensm-0xa088c20300001001.conf'
    assert instance['settings']['guid'] == '0xa088c20300001001' and instance['settings']['sm_priority'] == 15
    assert instance['settings']['log_file'] == '/var/log/opensm-0xa088c20300001001.log'
    assert instance['settings']['partition_config_file'] == '/etc/opensm/aicluster/partitions.conf'
    assert second['instances'][0]['priority'] == 14
    assert opensm_fleet_problems({'ctl01': first, 'ctl02': second}) == []


def test_the_first_port_with_its_link_up_is_chosen():
    info = ib_info('0xa088c20300001001', '0xa088c20300001011')
    info['hcas'][0]['ports'][0].update(state='Down', physical_state='Disabled')
    info['hcas'][1]['ports'][0].update(physical_state='LinkUp')
    plan = opensm_plan(settings(), info, 'ctl01', ['ctl01'], [])
    assert [i['guid'] for i in plan['instances']] == ['0xa088c20300001011']
    info['hcas'][1]['ports'][0].update(physical_state='Polling')
    fresh = opensm_plan(settings(), info, 'ctl01', ['ctl01'], [])
    assert [i['guid'] for i in fresh['instances']] == ['0xa088c20300001001']


def test_one_instance_per_listed_port_and_subnet():
    plan = opensm_plan(settings(ports=[{'guid': '0xa088c20300001001', 'subnet': 'rail0'},
                                       {'guid': '0xa088c20300001011', 'subnet': 'rail1'}], sm_priority=15),
                       ib_info('0xa088c20300001001', '0xa088c20300001011'), 'ctl01', ['ctl01'], [])
    assert plan['problems'] == [] and [(i['guid'], i['subnet']) for i in plan['instances']] == [
        ('0xa088c20300001001', 'rail0'), ('0xa088c20300001011', 'rail1')]


def test_refusals_one_line_each():
    plan = opensm_plan(settings(ports=['0xdead', 'nope'], sm_priority=16,
                                partitions=[DEFAULT, {'name': 't', 'pkey': '0x8001'}],
                                conf={'sweep_interval': -1}),
                       ib_info('0xa088c20300001001'), 'gpu01', ['gpu01'], ['gpu01'])
    text = '\n'.join(plan['problems'])
    for needle in ('gpu01 is in gpu_nodes', "opensm_ports[1]: 'nope'",
                   'opensm_ports: 0x000000000000dead is not an InfiniBand port of gpu01', 'opensm_sm_priority: 16',
                   'opensm_sweep_interval', 'opensm_partitions[1].pkey'):
        assert needle in text, needle
    allowed = opensm_plan(settings(allow_on_compute=True), ib_info('0xa088c20300001001'), 'gpu01', ['gpu01'], ['gpu01'])
    assert allowed['problems'] == []


def test_a_host_off_the_fabric_is_refused():
    ethernet = opensm_plan(settings(), ib_info('0xa088c20300001001', link_layer='Ethernet'), 'ctl01', ['ctl01'], [])
    assert ethernet['instances'] == [] and 'ctl01 has no InfiniBand port for an SM' in ethernet['problems'][0]


def test_partition_rate_above_the_ports_is_refused():
    fast = dict(DEFAULT, rate=400)
    plan = opensm_plan(settings(partitions=[fast]), ib_info('0xa088c20300001001', rate=200.0), 'ctl01', ['ctl01'], [])
    assert any('rate' in line for line in plan['problems'])


def test_equal_priorities_in_one_subnet_refused_across_hosts():
    one = opensm_plan(settings(sm_priority=15), ib_info('0xa088c20300001001'), 'ctl01', ['ctl01', 'ctl02'], [])
    two = opensm_plan(settings(sm_priority=15), ib_info('0xa088c20300002001'), 'ctl02', ['ctl01', 'ctl02'], [])
    problems = opensm_fleet_problems({'ctl01': one, 'ctl02': two})
    assert problems and 'share priority 15 in subnet fabric' in problems[0]


@pytest.mark.parametrize('value', [-1, 'soon', True, 1.5])
def test_a_bad_settle_timeout_is_refused(value):
    plan = opensm_plan(settings(settle_timeout=value), ib_info('0xa088c20300001001'), 'ctl01', ['ctl01'], [])
    assert plan['problems'] == ['opensm_settle_timeout must be a number of seconds (0 or more), got %r' % (value,)]
    assert opensm_plan(settings(settle_timeout=0), ib_info('0xa088c20300001001'), 'ctl01', ['ctl01'], [])['problems'] == []


# ------------------------------------------------------------------------------- opensm_provider switch and ufm

TENANT = {'name': 'tenant-a', 'pkey': '0x0101', 'ipoib': True, 'mtu': 4096, 'rate': 400,
          'members': [{'guid': '0xa088c20300002001', 'membership': 'full'}, {'guid': 'SELF', 'membership': 'full'}]}


def test_host_plan_names_its_partitions_file():
    plan = opensm_plan(settings(partitions=[DEFAULT, TENANT]), ib_info('0xa088c20300001001'), 'ctl01', ['ctl01'], [])
    assert plan['provider'] == 'host' and plan['notes'] == []
    assert plan['partitions_file'] == {'kind': 'partitions.conf', 'path': '/etc/opensm/aicluster/partitions.conf',
                                       'partitions': [DEFAULT, TENANT]}


def test_an_unknown_provider_is_one_line_naming_the_allowed_values():
    plan = opensm_plan(settings(provider='nvlsm', sm_priority=16), ib_info('0xa088c20300001001'), 'ctl01', ['ctl01'], [])
    assert plan['problems'] == ["opensm_provider: 'nvlsm' is not one of host, switch, ufm"]
    assert plan['instances'] == [] and plan['partitions_file'] is None


def test_switch_provider_plans_nothing_and_says_why():
    # a switch SM: the host need not be on the fabric (no ib_info read), nothing is written
    plan = opensm_plan(settings(provider='switch', partitions=[DEFAULT, TENANT]), {}, 'ctl01', ['ctl01'], [])
    assert plan['problems'] == [] and plan['instances'] == [] and plan['partitions_file'] is None
    assert plan['roots'] == 'off' and opensm_fleet_problems({'ctl01': plan}) == []
    [note] = plan['notes']
    assert 'runs on a managed switch' in note and 'configured on the switch' in note and 'installs, writes and starts nothing' in note


def ufm(**more):
    base = {'provider': 'ufm', 'ufm_partitions_path': '/opt/ufm/files/conf/partitions.conf.user_ext', 'ufm_dir_found': True,
            'ufm_sync_command': ['/opt/ufm/scripts/sync_partitions_conf.sh']}
    base.update(more)
    return settings(**base)


def test_ufm_provider_writes_the_user_partitions_without_the_default():
    plan = opensm_plan(ufm(partitions=[DEFAULT, TENANT]), ib_info('0xa088c20300001001'), 'ufm01', ['ufm01'], [])
    assert plan['problems'] == [] and plan['instances'] == []
    assert plan['partitions_file'] == {'kind': 'partitions.conf.user_ext',
                                       'path': '/opt/ufm/files/conf/partitions.conf.user_ext', 'partitions': [TENANT]}
    [note] = plan['notes']
    assert 'installs and starts nothing' in note and '(1 partition)' in note
    assert '/opt/ufm/scripts/sync_partitions_conf.sh' in note and 'default partition (0x7fff) is UFM' in note
    only_default = opensm_plan(ufm(partitions=[DEFAULT]), ib_info('0xa088c20300001001'), 'ufm01', ['ufm01'], [])
    assert only_default['problems'] == [] and only_default['partitions_file']['partitions'] == []


def test_ufm_provider_refusals_one_line_each():
    everyone = dict(TENANT, name='t2', pkey='0x0102', rate=800, members=[{'guid': 'ALL', 'membership': 'full'}])
    plan = opensm_plan(ufm(partitions=[TENANT, everyone], ufm_dir_found=False, ufm_sync_command='sync.sh'),
                       ib_info('0xa088c20300001001', rate=400.0), 'gpu01', ['gpu01'], ['gpu01'])
    text = '\n'.join(plan['problems'])
    for needle in ('opensm_partitions: no entry named Default with P_Key 0x7fff; with opensm_provider: ufm',
                   "UFM's SM defines the default partition", 'opensm_partitions[1].rate: 800 Gb/s is above port',
                   'gpu01 is in gpu_nodes', 'opensm_ufm_partitions_path: /opt/ufm/files/conf is not a directory on gpu01',
                   "opensm_ufm_sync_command: 'sync.sh' must be a non-empty list"):
        assert needle in text, needle
    assert len(plan['problems']) == 5
    relative = opensm_plan(ufm(partitions=[DEFAULT], ufm_partitions_path='partitions.conf.user_ext'), {}, 'ufm01', [], [])
    assert relative['problems'] == ["opensm_ufm_partitions_path: 'partitions.conf.user_ext' must be an absolute file path "
                                    "(UFM documents /opt/ufm/files/conf/partitions.conf.user_ext)"]


def test_switch_provider_still_checks_the_partitions_verify_reads():
    plan = opensm_plan(settings(provider='switch', partitions=[TENANT, dict(TENANT, pkey='0x8001')]), {}, 'ctl01', [], [])
    text = '\n'.join(plan['problems'])
    assert "the switch's SM defines the default partition" in text and 'opensm_partitions[1].pkey: 0x8001' in text
