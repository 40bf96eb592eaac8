# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""opensm_rogue: the opensm role's read of a compute node (systemctl show, list-unit-files, pgrep), whether it runs an
SM it should not, what stopping it takes, and the fleet's one report. The reads are handmade in the layouts of
systemd 252 (Debian 12) and procps-ng pgrep -a."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.aicluster.infra.plugins.module_utils.opensm_rogue import parse_sm_read, rogue_plan, rogue_summary

GPU_NODES = ['gpu01', 'gpu02']
GUID = '0x946dae0300000100'

# Debian's opensm installed and enabled (its postinst enables opensm.service), not started (or its condition failed)
ENABLED_ONLY = '''## show
Id=opensm.service
LoadState=loaded
ActiveState=inactive
SubState=dead
UnitFileState=enabled
MainPID=0
## show rc=0
## unit-files
opensm.service  enabled enabled
opensm@.service static  -
## unit-files rc=0
## processes
## processes rc=1
'''

# hwsim's sm-rogue fault: a transient opensmd.service running OpenSM at priority 13, beside the disabled Debian unit
ROGUE_TRANSIENT = '''## show
Id=opensm.service
LoadState=loaded
ActiveState=inactive
SubState=dead
UnitFileState=disabled
MainPID=0

Id=opensmd.service
LoadState=loaded
ActiveState=active
SubState=running
UnitFileState=transient
MainPID=4242
## show rc=0
## unit-files
opensm.service  disabled enabled
opensm@.service static   -
## unit-files rc=0
## processes
4242 /usr/sbin/opensm -g %s -p 13 -f /var/log/opensm-rogue.log
## processes rc=0
''' % GUID

# Debian's opensm.service started opensm@<guid> on the port (PORTS=ALL), this collection's own unit is enabled (the
# node was an SM host before), and an opensm was started by hand
EVERYTHING = '''## show
Id=aicluster-opensm@%(guid)s.service
LoadState=loaded
ActiveState=inactive
SubState=dead
UnitFileState=enabled
MainPID=0

Id=opensm.service
LoadState=loaded
ActiveState=active
SubState=exited
UnitFileState=enabled
MainPID=0

Id=opensm@%(guid)s.service
LoadState=loaded
ActiveState=active
SubState=running
UnitFileState=static
MainPID=811
## show rc=0
## unit-files
aicluster-opensm@.service indirect -
opensm.service            enabled  enabled
opensm@.service           static   -
opensmd.service           enabled  enabled
## unit-files rc=0
## processes
811 /usr/sbin/opensm --guid %(guid)s --log_file /var/log/opensm.%(guid)s.log
977 opensm -B -g %(guid)s
## processes rc=0
''' % {'guid': GUID}

CLEAN = '''## show
Id=opensm.service
LoadState=masked
ActiveState=inactive
SubState=dead
UnitFileState=masked
MainPID=0
## show rc=0
## unit-files
opensm.service  masked  enabled
opensm@.service static  -
## unit-files rc=0
## processes
## processes rc=1
'''


def test_parse_the_read():
    parsed = parse_sm_read(ROGUE_TRANSIENT)
    assert parsed['errors'] == []
    assert parsed['units']['opensmd.service'] == {'load': 'loaded', 'active': 'active', 'sub': 'running',
                                                  'file_state': 'transient', 'main_pid': 4242}
    assert parsed['unit_files'] == {'opensm.service': 'disabled'}   # templates left out
    assert parsed['processes'] == [{'pid': 4242, 'args': '/usr/sbin/opensm -g %s -p 13 -f /var/log/opensm-rogue.log' % GUID}]


@pytest.mark.parametrize('text, error', [
    ('', 'the read has no show section'),
    (ENABLED_ONLY.split('## unit-files rc=0', maxsplit=1)[0], 'the unit-files read did not finish'),
    (ENABLED_ONLY.replace('## show rc=0', '## show rc=1'), 'systemctl show failed (rc 1)'),
    (ENABLED_ONLY.replace('## processes rc=1', '## processes rc=2'), 'pgrep failed (rc 2)'),
], ids=['empty', 'cut-short', 'no-systemd', 'pgrep-error'])
def test_a_read_that_failed_is_not_clean(text, error):
    assert any(line.startswith(error) for line in parse_sm_read(text)['errors']), parse_sm_read(text)['errors']
    plan = rogue_plan({'stdout': text, 'rc': 0, 'stderr': 'Failed to connect to bus: No such file or directory\n'},
                      'gpu01', GPU_NODES, stop=True)
    assert plan['checked'] and not plan['rogue'] and plan['mask'] == [] and plan['kill'] == []
    assert plan['errors'][-1] == 'stderr: Failed to connect to bus: No such file or directory'
    summary = rogue_summary({'gpu01': plan})
    assert summary['unread_hosts'] == ['gpu01'] and summary['message'].startswith('opensm: compute nodes not read: gpu01 (')


def test_the_read_task_failing():
    plan = rogue_plan({'rc': 127, 'failed': True, 'stderr': 'sh: systemctl: not found', 'stdout': ''}, 'gpu01', GPU_NODES)
    assert plan['errors'] == ['the read failed (rc 127): sh: systemctl: not found']


def test_enabled_but_not_running_is_rogue():
    plan = rogue_plan({'stdout': ENABLED_ONLY, 'rc': 0}, 'gpu01', GPU_NODES)
    assert plan['rogue'] and not plan['running']
    assert plan['found'] == ['opensm.service enabled, not running (starts at boot)']
    assert plan['mask'] == [] and plan['stop'] is False   # report only
    stopping = rogue_plan(ENABLED_ONLY, 'gpu01', GPU_NODES, stop=True)
    assert stopping['mask'] == ['opensm.service'] and stopping['disable'] == [] and stopping['kill'] == []


def test_transient_rogue_unit_and_its_process():
    plan = rogue_plan(ROGUE_TRANSIENT, 'gpu01', GPU_NODES, stop=True)
    assert plan['rogue'] and plan['running']
    assert plan['found'] == ['opensmd.service active (running), transient',
                             'opensm process 4242 (/usr/sbin/opensm -g %s -p 13 -f /var/log/opensm-rogue.log)' % GUID]
    assert plan['mask'] == ['opensmd.service'] and plan['kill'] == []   # the unit's stop ends its process


def test_every_kind_at_once():
    plan = rogue_plan(EVERYTHING, 'gpu02', GPU_NODES, stop=True)
    assert plan['found'] == [
        'aicluster-opensm@%s.service enabled, not running (starts at boot)' % GUID,
        'opensm.service active (exited)',
        'opensm@%s.service active (running)' % GUID,
        'opensmd.service enabled, not running (starts at boot)',
        'opensm process 811 (/usr/sbin/opensm --guid %s --log_file /var/log/opensm.%s.log)' % (GUID, GUID),
        'opensm process 977 (opensm -B -g %s)' % GUID]
    assert plan['disable'] == ['aicluster-opensm@%s.service' % GUID]
    assert plan['mask'] == ['opensm.service', 'opensm@%s.service' % GUID, 'opensmd.service']
    assert plan['kill'] == [977]   # 811 is opensm@'s main process


def test_masked_and_stopped_is_clean_and_changes_nothing():
    plan = rogue_plan(CLEAN, 'gpu01', GPU_NODES, stop=True)
    assert not plan['rogue'] and plan['found'] == [] and plan['mask'] == [] and plan['disable'] == [] and plan['kill'] == []
    # a masked unit that still runs (masked after it started) is rogue
    running = CLEAN.replace('ActiveState=inactive\nSubState=dead', 'ActiveState=active\nSubState=running', 1)
    assert rogue_plan(running, 'gpu01', GPU_NODES, stop=True)['mask'] == ['opensm.service']


def test_allowed_or_not_a_gpu_node_is_not_checked():
    allowed = rogue_plan(EVERYTHING, 'gpu01', GPU_NODES, allow_on_compute=True, stop=True)
    outside = rogue_plan(EVERYTHING, 'ctl01', GPU_NODES, stop=True)
    for plan in (allowed, outside):
        assert not plan['checked'] and not plan['rogue'] and plan['mask'] == [] and plan['kill'] == []
    summary = rogue_summary({'gpu01': allowed, 'gpu02': rogue_plan(CLEAN, 'gpu02', GPU_NODES)})
    assert summary['rogue_hosts'] == [] and summary['allowed_hosts'] == ['gpu01']
    assert summary['message'] == ('opensm: no subnet manager runs or is enabled on the 1 compute nodes read. '
                                  'Not checked (opensm_allow_on_compute: true, or not in gpu_nodes): gpu01.')


def test_variables_must_be_booleans():
    plan = rogue_plan(CLEAN, 'gpu01', GPU_NODES, allow_on_compute='no', stop='yes')
    assert plan['problems'] == ["opensm_stop_rogue: must be true or false, got 'yes'",
                                "opensm_allow_on_compute: must be true or false, got 'no'"]


def test_summary_names_the_rogue_hosts_once():
    plans = {'gpu01': rogue_plan(ROGUE_TRANSIENT, 'gpu01', GPU_NODES), 'gpu02': rogue_plan(ENABLED_ONLY, 'gpu02', GPU_NODES)}
    summary = rogue_summary(plans)
    assert summary['rogue_hosts'] == ['gpu01', 'gpu02'] and summary['running_hosts'] == ['gpu01']
    assert summary['message'].startswith('opensm: a subnet manager that should not be there on 2 of 2 compute nodes: '
                                         'gpu01 (opensmd.service active (running), transient, opensm process 4242 ')
    assert 'gpu02 (opensm.service enabled, not running (starts at boot))' in summary['message']
    assert summary['message'].endswith('Reported only on gpu01, gpu02: set opensm_stop_rogue: true to stop them, or '
                                       'opensm_allow_on_compute: true on a node that runs an SM on purpose.')
    stopping = {'gpu01': rogue_plan(ROGUE_TRANSIENT, 'gpu01', GPU_NODES, stop=True)}
    assert 'Would stop on gpu01 (opensm_stop_rogue: true)' in rogue_summary(stopping, check_mode=True)['message']
    assert 'Stopped on gpu01 (opensm_stop_rogue: true)' in rogue_summary(stopping)['message']
