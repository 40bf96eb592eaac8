# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drift report's decisions: what a changed check-mode result names, secrets masked, MTUs, fleet odd ones out."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.aicluster.infra.plugins.module_utils.drift import (
    MASK, build_report, change_record, change_records, fleet_facts, fleet_outliers, kind_of, mask_text, rail_mtu_settings,
    render_markdown, unified_diff,
)

SLURM_CONF_DIFF = {'before': 'ClusterName=lab\nSlurmdTimeout=300\nMaxJobCount=10000\n',
                   'after': 'ClusterName=lab\nSlurmdTimeout=300\nMaxJobCount=20000\n',
                   'before_header': '/etc/slurm/slurm.conf', 'after_header': '/etc/slurm/slurm.conf'}


@pytest.mark.parametrize('action, kind', [
    ('ansible.builtin.template', 'file'), ('aicluster.infra.slurm_config', 'file'), ('copy', 'file'),
    ('ansible.builtin.apt', 'package'), ('ansible.builtin.dpkg_selections', 'package'),
    ('ansible.builtin.systemd_service', 'service'), ('ansible.builtin.user', 'account'),
    ('ansible.posix.sysctl', 'setting'), ('community.general.modprobe', 'setting'),
])
def test_kind_follows_the_module(action, kind):
    assert kind_of(action) == kind


def test_a_file_change_names_the_path_and_keeps_the_diff():
    record = change_record('gpu01', 'Install slurm.conf', 'aicluster.infra.slurm_config', {'path': '/etc/slurm/slurm.conf'},
                           {'changed': True, 'diff': SLURM_CONF_DIFF}, role='slurm')
    assert (record['kind'], record['name'], record['masked']) == ('file', '/etc/slurm/slurm.conf', False)
    assert '-MaxJobCount=20000' not in record['diff']
    assert '-MaxJobCount=10000\n+MaxJobCount=20000\n' in record['diff']
    assert record['diff'].startswith('--- /etc/slurm/slurm.conf\n+++ /etc/slurm/slurm.conf\n')


def test_an_unchanged_result_is_no_drift():
    assert change_record('gpu01', 't', 'copy', {}, {'changed': False, 'diff': SLURM_CONF_DIFF}) is None


def test_a_live_difference_a_role_reports_with_a_changed_debug_says_what_differs():
    msg = 'ipoib on gpu02: ibp24s0 has no IPv4 address, the plan 10.110.0.2'
    record = change_record('gpu02', 'Apply the configuration again where the live interfaces differ from the plan',
                           'ansible.builtin.debug', {'msg': msg}, {'changed': True, 'msg': msg})
    assert record['diff'] == '# %s\n' % msg and record['kind'] == 'setting'
    assert change_record('gpu02', 't', 'ansible.builtin.debug', {}, {'changed': True, 'censored': 'x'})['diff'] == ''


def test_a_stopped_service_says_what_is_wanted():
    record = change_record('gpu03', 'Start munge at boot and now', 'ansible.builtin.systemd_service',
                           {'name': 'munge', 'state': 'started', 'enabled': True}, {'changed': True, 'name': 'munge'})
    assert (record['kind'], record['name'], record['wanted']) == ('service', 'munge', 'started, enabled')


def test_a_no_log_result_is_listed_without_content():
    record = change_record('ctl01', 'Write the cluster key', 'ansible.builtin.copy', {},
                           {'changed': True, 'censored': "the output has been hidden due to the fact that 'no_log: true'"})
    assert record['masked'] and record['diff'] == '' and record['name'] == 'Write the cluster key'


def test_a_secret_file_never_shows_its_diff():
    record = change_record('ctl01', 'Key', 'copy', {'dest': '/etc/munge/munge.key'},
                           {'changed': True, 'dest': '/etc/munge/munge.key',
                            'diff': {'before': 'old-key\n', 'after': 'new-key\n'}})
    assert record['masked'] and 'key' not in record['diff']


def test_passwords_in_a_diff_are_masked_and_their_keys_kept():
    diff = unified_diff({'before': 'StorageHost=ctl01\nStoragePass=hunter2\n', 'after': 'StorageHost=ctl01\nStoragePass=s3cret!\n',
                         'before_header': '/etc/slurm/slurmdbd.conf', 'after_header': '/etc/slurm/slurmdbd.conf'})
    masked = mask_text(diff)
    assert 'hunter2' not in masked and 's3cret' not in masked
    assert '-StoragePass=%s\n+StoragePass=%s\n' % (MASK, MASK) in masked
    assert ' StorageHost=ctl01' in masked
    assert mask_text('password: abc\nAuthType=auth/munge\n') == 'password: %s\nAuthType=auth/munge\n' % MASK


def test_attribute_diffs_are_one_line_per_attribute():
    text = unified_diff({'before': {'path': '/etc/munge/munge.key', 'mode': '0444'},
                         'after': {'path': '/etc/munge/munge.key', 'mode': '0400'}})
    assert text == 'mode: 0444 -> 0400\n'


HCAS = [
    {'name': 'mlx5_0', 'ca_type': 'MT4129', 'firmware_version': '28.39.1002',
     'ports': [{'port': 1, 'link_layer': 'InfiniBand', 'netdev': 'ibp24s0'}]},
    {'name': 'mlx5_1', 'ca_type': 'MT4129', 'firmware_version': '28.39.1002',
     'ports': [{'port': 1, 'link_layer': 'Ethernet', 'netdev': 'enp170s0f0np0'}]},
    {'name': 'mlx5_3', 'ca_type': 'MT4129', 'firmware_version': '28.39.1002',
     'ports': [{'port': 1, 'link_layer': 'InfiniBand', 'netdev': 'ibp64s0'}]},
]
EXPECTED = {'hcas': ['mlx5_0', 'mlx5_3'], 'port': 1, 'mtu': 9000, 'ipoib_mtu': 4092}


def test_rail_mtu_below_the_desired_one_is_a_setting_drift():
    links = [{'ifname': 'ibp24s0', 'mtu': 2044}, {'ifname': 'ibp64s0', 'mtu': 4092}, {'ifname': 'enp170s0f0np0', 'mtu': 1500}]
    entries = rail_mtu_settings(HCAS, links, EXPECTED)
    assert [(e['name'], e['wanted']) for e in entries] == [('MTU of ibp24s0 (mlx5_0 port 1, IPoIB)', '4092')]
    assert entries[0]['diff'] == '- mtu 2044\n+ mtu 4092\n'


def test_rails_without_a_netdev_or_outside_the_fabric_are_left_out():
    assert rail_mtu_settings(HCAS, [{'ifname': 'eth0', 'mtu': 1500}], EXPECTED) == []
    roce = dict(EXPECTED, hcas=['mlx5_1'])
    assert rail_mtu_settings(HCAS, [{'ifname': 'enp170s0f0np0', 'mtu': 1500}], roce)[0]['wanted'] == '9000'


def test_fleet_facts_key_firmware_by_adapter_type():
    facts = fleet_facts({'kernel': '6.1.0-28-amd64', 'gpu_driver': '570.86.15', 'ofed': None,
                         'rails': {'hcas': HCAS + [{'ca_type': 'MT4129', 'firmware_version': '28.40.1000'},
                                                   {'ca_type': 'MT4125', 'firmware_version': '22.41.1000'}]}})
    assert facts == {'kernel': '6.1.0-28-amd64', 'gpu_driver': '570.86.15',
                     'hca_firmware': {'MT4129': '28.39.1002,28.40.1000', 'MT4125': '22.41.1000'}}


def test_the_odd_host_out_is_named_against_the_majority():
    facts = {'gpu01': {'kernel': 'a', 'gpu_driver': '570'}, 'gpu02': {'kernel': 'a', 'gpu_driver': '570'},
             'gpu03': {'kernel': 'b', 'gpu_driver': '570'}, 'ctl01': {'kernel': 'a'}}
    values = {'a': ['ctl01', 'gpu01', 'gpu02'], 'b': ['gpu03']}
    assert fleet_outliers(facts) == [{'fact': 'kernel', 'fleet_value': 'a', 'values': values, 'odd_hosts': ['gpu03']}]


def test_a_tie_has_no_fleet_value_and_lists_every_host():
    outlier = fleet_outliers({'gpu01': {'kernel': 'a'}, 'gpu02': {'kernel': 'b'}})[0]
    assert outlier['fleet_value'] is None and outlier['odd_hosts'] == ['gpu01', 'gpu02']


def test_report_counts_drifted_hosts_of_all():
    change = change_record('gpu01', 'Install slurm.conf', 'slurm_config', {'path': '/etc/slurm/slurm.conf'},
                           {'changed': True, 'diff': SLURM_CONF_DIFF}, role='slurm')
    mtu = rail_mtu_settings(HCAS, [{'ifname': 'ibp24s0', 'mtu': 2044}], EXPECTED)
    report = build_report({'playbook': 'drift.yml', 'started': '2026-12-02T08:00:00Z'},
                          ['ctl01', 'gpu01', 'gpu02', 'gpu03'], [change], {'gpu02': mtu},
                          {'gpu01': {'kernel': 'a'}, 'gpu02': {'kernel': 'a'}, 'gpu03': {'kernel': 'a'}},
                          {'gpu03': ['unreachable: ssh timeout']})
    assert report['summary'] == '2 hosts drifted of 4; 1 not fully checked (gpu03)'
    assert report['drifted_hosts'] == ['gpu01', 'gpu02']
    assert report['hosts']['gpu03']['status'] == 'not checked'
    assert report['hosts']['ctl01'] == {'status': 'in sync', 'drift': [], 'problems': [], 'odd_facts': [], 'would_also': []}
    markdown = render_markdown(report)
    assert '**2 hosts drifted of 4; 1 not fully checked (gpu03).**' in markdown
    assert '+MaxJobCount=20000' in markdown and 'MTU of ibp24s0' in markdown
    assert 'Every fleet-wide fact has one value' in markdown


def test_an_in_sync_fleet_reports_none():
    report = build_report({}, ['a', 'b'], [], {}, {'a': {'kernel': 'x'}, 'b': {'kernel': 'x'}}, {})
    assert report['summary'] == '0 hosts drifted of 2' and report['drifted_hosts'] == []


def test_a_handler_a_drift_notified_is_what_the_correction_would_also_do():
    key = change_record('ctl02', 'Write the key', 'copy', {'dest': '/etc/munge/munge.key'},
                        {'changed': True, 'censored': 'hidden'}, role='munge')
    restart = change_record('ctl02', 'Restart munge', 'ansible.builtin.systemd_service',
                            {'name': 'munge', 'state': 'restarted'}, {'changed': True}, role='munge', handler=True)
    report = build_report({}, ['ctl02'], [key, restart], {}, {}, {})
    record = report['hosts']['ctl02']
    assert [e['name'] for e in record['drift']] == ['/etc/munge/munge.key']
    assert [(e['kind'], e['name'], e['wanted']) for e in record['would_also']] == [('service', 'munge', 'restarted')]
    assert 'correcting it would also run the handler *Restart munge* (service `munge`)' in render_markdown(report)


def test_a_module_managing_several_files_gives_one_entry_per_changed_path():
    result = {'changed': True, 'changed_paths': ['/etc/slurm/gres.conf', '/etc/slurm/epilog.sh'],
              'diff': [{'before_header': '/etc/slurm/gres.conf', 'after_header': '/etc/slurm/gres.conf',
                        'before': 'Name=gpu File=/dev/nvidia[0-6]\n', 'after': 'Name=gpu File=/dev/nvidia[0-7]\n'},
                       {'before_header': '/etc/slurm/epilog.sh', 'after_header': '/etc/slurm/epilog.sh',
                        'before': {'path': '/etc/slurm/epilog.sh', 'mode': '0644'},
                        'after': {'path': '/etc/slurm/epilog.sh', 'mode': '0755'}}]}
    records = change_records('gpu01', "Install this host's Slurm files", 'aicluster.infra.node_files', {}, result, role='slurm')
    assert [(r['kind'], r['name']) for r in records] == [('file', '/etc/slurm/gres.conf'), ('file', '/etc/slurm/epilog.sh')]
    assert '+Name=gpu File=/dev/nvidia[0-7]' in records[0]['diff'] and 'epilog' not in records[0]['diff']
    assert records[1]['diff'] == 'mode: 0644 -> 0755\n'
    assert change_records('gpu01', 't', 'node_files', {}, {'changed': False}) == []


def test_a_rail_above_the_desired_mtu_is_not_drift_as_verify_passes_it():
    links = [{'ifname': 'ibp24s0', 'mtu': 65520}, {'ifname': 'ibp64s0', 'mtu': 4092}]
    assert rail_mtu_settings(HCAS, links, EXPECTED) == []
