# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""opensm_log_info: the SM's log since it started, settled or not, the routing engine in use, partition errors
of the last sweep or of what was written since the role's reload."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from _paths import own_fixture

from ansible_collections.aicluster.infra.plugins.modules import opensm_log_info

FALLBACK = own_fixture('opensm/opensm-3.3.24-ftree-fallback-minhop-partition-parse-error-handmade.txt')
HEAD = 'Dec 05 09:30:00 000001 [6F1E7740] 0x03 -> OpenSM 3.3.23\nDec 05 09:30:00 000002 [6F1E7740] 0x80 -> OpenSM 3.3.23\n'


def line(usec, message):
    return 'Dec 05 09:30:01 %06d [6A7FB700] 0x80 -> %s\n' % (usec, message)


MASTER = HEAD + line(10, 'Entering DISCOVERING state') + line(20, 'Entering MASTER state') + \
    line(30, 'osm_ucast_mgr_process: ftree tables configured on all switches') + line(40, 'SUBNET UP')


def test_no_log_is_not_settled(run_module, tmp_path):
    args = {'path': str(tmp_path / 'none.log'), 'require_settled': True}
    result, calls = run_module(opensm_log_info, args, {})
    assert calls == [] and result['exists'] is False and result['settled'] is False
    assert result['problems'] == ['%s: no log: the SM has not started, or logs elsewhere' % args['path']]
    assert run_module(opensm_log_info, dict(args, require_settled=False), {})[0]['problems'] == []


def test_only_the_run_since_the_last_start_counts(run_module, tmp_path):
    # an earlier run (the handmade fallback log: minhop, partition errors, exited) and then a clean start
    path = tmp_path / 'opensm.log'
    path.write_text(FALLBACK + MASTER)
    result, _calls = run_module(opensm_log_info, {'path': str(path), 'engines': ['ftree', 'minhop'],
                                                  'require_settled': True, '_ansible_check_mode': True}, {})
    assert result['settled'] is True and result['state'] == 'MASTER' and result['routing_engine'] == 'ftree'
    assert result['version'] == '3.3.23' and result['subnet_up'] == 1 and result['problems'] == []


def test_fallback_and_partition_errors_are_problems(run_module, tmp_path):
    path = tmp_path / 'opensm.log'
    path.write_text(FALLBACK.replace(' -> Entering STANDBY state', ' -> Entering MASTER state'))
    result, _calls = run_module(opensm_log_info, {'path': str(path), 'engines': ['ftree', 'minhop']}, {})
    assert result['routing_engine'] == 'minhop'
    assert result['problems'][0].startswith('partitions.conf line 4: OpenSM could not parse it (bad partition definition)')
    assert any(p.startswith('routing engine in use is minhop, not ftree (the first of opensm_routing_engine): '
                            'Fabric topology is not fat-tree - falling back to default routing')
               for p in result['problems'])


def test_a_reload_counts_only_the_partition_errors_written_since(run_module, tmp_path):
    # a broken partitions.conf logged in the last sweep, then fixed and reloaded (SIGHUP): later SUBNET UPs are INFO
    # lines in OpenSM's buffer, so the SM counts as settled on its run, and only errors written since the mark count
    broken = line(50, 'parse_part_conf: PARSE ERROR: line 3: bad partition definition') + line(60, 'SUBNET UP')
    path = tmp_path / 'opensm.log'
    path.write_text(MASTER + broken)
    args = {'path': str(path), 'require_settled': True, 'since_bytes': path.stat().st_size}
    reloaded, _calls = run_module(opensm_log_info, args, {})
    assert reloaded['settled'] is True and reloaded['problems'] == []
    # an error written after the mark counts (ERROR lines are flushed at once)
    with open(str(path), 'a') as handle:
        handle.write(line(70, 'parse_part_conf: PARSE ERROR: line 9: bad partition definition'))
    again, _calls = run_module(opensm_log_info, args, {})
    assert [p[:31] for p in again['problems']] == ['partitions.conf line 9: OpenSM ']
    # without since_bytes the last completed sweep is read: the error of line 3 is in it
    path.write_text(MASTER + broken)
    last, _calls = run_module(opensm_log_info, {'path': str(path)}, {})
    assert last['problems'] and 'line 3' in last['problems'][0]
    with open(str(path), 'a') as handle:
        handle.write(line(70, 'osm_ucast_mgr_process: ftree tables configured on all switches') + line(80, 'SUBNET UP'))
    assert run_module(opensm_log_info, {'path': str(path)}, {})[0]['problems'] == []


def test_a_restarted_master_is_settled_only_after_its_first_subnet_up(run_module, tmp_path):
    path = tmp_path / 'opensm.log'
    path.write_text(MASTER + HEAD + line(90, 'Entering MASTER state'))
    args = {'path': str(path), 'require_settled': True}
    waiting, _calls = run_module(opensm_log_info, args, {})
    assert waiting['settled'] is False and waiting['problems'][0].startswith('not settled: its last state is MASTER')
    with open(str(path), 'a') as handle:
        handle.write(line(95, 'SUBNET UP'))
    assert run_module(opensm_log_info, args, {})[0]['settled'] is True


def test_a_standby_is_settled_and_an_empty_log_is_not(run_module, tmp_path):
    path = tmp_path / 'opensm.log'
    path.write_text(HEAD + line(10, 'Entering DISCOVERING state') + line(20, 'Entering STANDBY state'))
    result, _calls = run_module(opensm_log_info, {'path': str(path), 'engines': ['ftree'], 'require_settled': True}, {})
    assert result['settled'] is True and result['state'] == 'STANDBY' and result['problems'] == []
    path.write_text('')
    result, _calls = run_module(opensm_log_info, {'path': str(path), 'require_settled': True}, {})
    assert result['exists'] is True and result['settled'] is False and result['problems']


def test_the_sm_is_asked_to_flush_its_log_before_the_read(run_module, tmp_path):
    # OpenSM 3.3.23 logs SUBNET UP at INFO (0x02), which stays in stdio's buffer on a quiet fabric: SIGUSR1 makes it
    # reopen (fclose: flush) its log
    path = tmp_path / 'opensm.log'
    path.write_text(MASTER)
    unit = 'aicluster-opensm@0x946dae0300000300.service'
    args = {'path': str(path), 'require_settled': True, 'flush_unit': unit, 'flush_wait_ms': 0}
    result, calls = run_module(opensm_log_info, args, {'systemctl': (0, '', '')})
    assert calls == [['/usr/bin/systemctl', 'kill', '--kill-whom=main', '--signal=SIGUSR1', unit]]
    assert result['flushed'] is True and result['settled'] is True
    # a unit that does not run cannot be signalled: the log is read as it is
    result, calls = run_module(opensm_log_info, args, {'systemctl': (1, '', 'Failed to kill unit: not loaded')})
    assert result['flushed'] is False and result['settled'] is True
    # nothing is signalled in a check run, or without a unit
    assert run_module(opensm_log_info, dict(args, _ansible_check_mode=True), {'systemctl': (0, '', '')})[1] == []
    assert run_module(opensm_log_info, {'path': str(path)}, {'systemctl': (0, '', '')})[0]['flushed'] is False
