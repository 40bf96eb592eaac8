# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""OpenSM logs: the two real captures (a 3.3.21 standby, MLNX OpenSM 5.21 master on ibsim) and a handmade log with a
partitions.conf parse error and ftree falling back to minhop (messages from linux-rdma/opensm @fa74b98c)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest
from hypothesis import given

from _fuzz import FUZZ_SETTINGS, texts_from, only_parse_error
from _paths import fixture_files, own_fixture, read_fixture, real_fixture

from ansible_collections.aicluster.infra.plugins.module_utils import opensm_log
from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError

STANDBY = 'opensm/linux-rdma-ml-opensm-3.3.21-standby-log-err5430-err5411-tab-continuation.txt'
MASTER = 'opensm/ibsim-mlnx-opensm-5.21.12-stdout-startup-master-ar_updn-subnet-up.txt'
FALLBACK = 'opensm/opensm-3.3.24-ftree-fallback-minhop-partition-parse-error-handmade.txt'


def test_every_opensm_capture_is_read():
    assert sorted(path for kind, path in fixture_files('opensm') if kind == 'real') == sorted([STANDBY, MASTER])


def test_real_standby_log_3_3_21():
    parsed = opensm_log.parse_opensm_log(real_fixture(STANDBY))
    assert parsed['version'] == '3.3.21' and parsed['sm_port_guid'] == '0xe41d2d0300e0bae1'
    # bare echoes of the SYS lines are not counted twice
    assert opensm_log.state_changes(parsed) == ['DISCOVERING', 'STANDBY'] * 3
    assert parsed['states'][-1] == {'time': 'Mar 11 19:42:07.943145', 'state': 'STANDBY'}
    assert parsed['state'] == 'STANDBY' and parsed['subnet_up'] == 0 and parsed['routing_engine'] is None
    assert parsed['error_codes'] == {'5430': 171, '3E03': 171, '5411': 2, '3113': 2, '3120': 2}
    assert parsed['partition_errors'] == [] and parsed['lines'] == 364


def test_real_mlnx_master_ar_updn():
    parsed = opensm_log.parse_opensm_log(real_fixture(MASTER))
    assert parsed['version'] == '5.21.12.MLNX20250617.f74e01b8' and parsed['sm_port_guid'] == '0x0000000000200000'
    assert opensm_log.state_changes(parsed) == ['DISCOVERING', 'MASTER'] and parsed['subnet_up'] == 1
    assert parsed['routing_engine'] == 'ar_updn'
    assert parsed['routing_engines'] == [{'time': 'Jun 17 16:47:41.466414', 'engine': 'ar_updn'}]


def test_handmade_fallback_and_partition_errors():
    parsed = opensm_log.parse_opensm_log(own_fixture(FALLBACK))
    assert parsed['routing_engine'] == 'minhop' and len(parsed['routing_engines']) == 2
    assert [f['engine'] for f in parsed['routing_failures']] == [None, 'ftree']
    assert parsed['partition_errors'] == [
        {'time': 'Dec 05 09:12:01.201766', 'line': 4, 'message': 'bad partition definition'},
        {'time': 'Dec 05 09:12:01.201802', 'line': 6, 'message': 'mgid "ff12:401b::1": gid is not multicast'}]
    assert parsed['partition_warnings'][0]['line'] == 2
    assert opensm_log.state_changes(parsed) == ['DISCOVERING', 'MASTER', 'STANDBY'] and parsed['exited'] is True
    assert parsed['error_codes'] == {'2F02': 1}


def test_bare_lines_only():
    parsed = opensm_log.parse_opensm_log('OpenSM 3.3.21\nEntering DISCOVERING state\n\nEntering MASTER state\nSUBNET UP\n')
    assert opensm_log.state_changes(parsed) == ['DISCOVERING', 'MASTER'] and parsed['subnet_up'] == 1 and parsed['lines'] == 0


@pytest.mark.parametrize('text', ['', 'Entering MASTER state\n', '[09:12:01:118][6F1E] 0x80 -> Entering MASTER state\n'],
                         ids=['empty', 'no-banner', 'windows'])
def test_not_an_opensm_log(text):
    with pytest.raises(ParseError):
        opensm_log.parse_opensm_log(text)


@FUZZ_SETTINGS
@given(texts_from([read_fixture(k, p) for k, p in fixture_files('opensm')]))
def test_parse_opensm_log_never_raises_anything_but_parse_error(text):
    result = only_parse_error(opensm_log.parse_opensm_log, text)
    if result is not None:
        json.dumps(result)


def test_the_current_run_of_real_logs():
    master = real_fixture(MASTER)
    run = opensm_log.current_run(master)
    assert run.startswith('Jun 17 16:47:41 376915 [50493740] 0x03 -> OpenSM 5.21.12')
    found = opensm_log.sm_log_findings(opensm_log.parse_opensm_log(run), ['ar_updn', 'minhop'])
    assert found == {'settled': True, 'state': 'MASTER', 'routing_engine': 'ar_updn', 'problems': []}
    standby = real_fixture(STANDBY)
    found = opensm_log.sm_log_findings(opensm_log.parse_opensm_log(opensm_log.current_run(standby)), ['ftree'])
    assert found['settled'] is True and found['state'] == 'STANDBY' and found['problems'] == []
    # a log of two starts: only the second counts
    assert opensm_log.current_run(own_fixture(FALLBACK) + master) == run
    assert opensm_log.last_sweep('no sweep\n') == 'no sweep\n'
