# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""opensm.conf: the real binary's defaults (``opensm --create-config``, skipped when OpenSM is not installed), rendered
with our settings and read back by the same binary (``opensm -F rendered -c back`` writes the options it read), the
problems of settings and of SM plans, and secrets never shown."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil
import subprocess

import pytest
from hypothesis import given

from _fuzz import FUZZ_SETTINGS, texts_from, only_parse_error
from _paths import own_fixture

from ansible_collections.aicluster.infra.plugins.module_utils import opensm_conf as oc
from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError

SAMPLE = 'opensm_conf/mlnx-opensm-create-config-excerpt-handmade.conf'
SETTINGS = {'guid': '0x946DAE0300CDE72C', 'sm_priority': 15, 'sweep_interval': 10, 'routing_engine': ['ftree', 'updn'],
            'root_guid_file': '/etc/opensm/root_guids.conf', 'log_file': '/var/log/opensm-0x946dae0300cde72c.log',
            'log_max_size': 100, 'partition_config_file': '/etc/opensm/partitions.conf', 'qos': True, 'qos_max_vls': 8,
            'qos_sl2vl': '0,1,2,3,4,5,6,7,7,7,7,7,7,7,7,7', 'sm_key': '0x00000000deadbeef', 'm_key': None}


def _opensm(*args, **kwargs):
    binary = shutil.which('opensm') or ('/usr/sbin/opensm' if os.path.exists('/usr/sbin/opensm') else None)
    if binary is None:
        pytest.skip('opensm is not installed (apt-get install opensm)')
    return subprocess.run([binary] + list(args), capture_output=True, text=True, timeout=60, check=True,
                          env=dict(os.environ, LANG='C', LC_ALL='C'), **kwargs)


@pytest.fixture(name='defaults')
def _defaults(tmp_path):
    path = tmp_path / 'defaults.conf'
    _opensm('--create-config', str(path), cwd=str(tmp_path))
    return path.read_text(encoding='utf-8')


def test_real_defaults_parse(defaults):
    options = oc.parse_opensm_conf(defaults)
    assert len(options) > 100
    assert options['sm_priority'] == '0' and options['routing_engine'] == '(null)' and options['qos'] == 'FALSE'
    assert options['partition_config_file'] == '/etc/opensm/partitions.conf' and options['sweep_interval'] == '10'
    assert all(key in options for key in oc.OWNED)
    engines = oc.supported_routing_engines(defaults)
    assert 'ftree' in engines and 'updn' in engines and 'minhop' in engines
    assert set(engines) <= set(oc.UPSTREAM_ENGINES) | set(oc.NVIDIA_ENGINES)


def test_real_binary_reads_back_what_we_render(defaults, tmp_path):
    rendered = oc.render_opensm_conf(defaults, SETTINGS, header=['Managed by aicluster.infra'])
    path, back = tmp_path / 'opensm.conf', tmp_path / 'back.conf'
    path.write_text(rendered, encoding='utf-8')
    _opensm('-F', str(path), '-c', str(back), cwd=str(tmp_path))
    read_back = oc.parse_opensm_conf(back.read_text(encoding='utf-8'))
    assert read_back == oc.parse_opensm_conf(rendered)
    assert read_back['guid'] == '0x946dae0300cde72c' and read_back['routing_engine'] == 'ftree,updn'
    assert read_back['sm_priority'] == '15' and read_back['qos'] == 'TRUE' and read_back['sm_key'] == '0x00000000deadbeef'
    changed = oc.opensm_conf_diff(defaults, rendered)
    # sweep_interval 10 and partition_config_file are the defaults already: not changed
    assert sorted(entry['key'] for entry in changed) == sorted([
        'guid', 'sm_key', 'root_guid_file', 'routing_engine', 'sm_priority', 'log_file', 'log_max_size', 'qos',
        'qos_max_vls', 'qos_sl2vl'])
    assert {'key': 'sm_key', 'before': '********', 'after': '********'} in changed
    assert 'deadbeef' not in repr(changed) and 'deadbeef' not in repr(oc.masked(read_back))


def test_real_defaults_refuse_an_unknown_key_and_engine(defaults):
    problems = oc.opensm_conf_problems({'qos_nonexistent': 1, 'routing_engine': ['ar_updn', 'no_fallback']}, defaults)
    assert problems == [
        'opensm_qos_nonexistent: this OpenSM build has no option qos_nonexistent (its opensm --create-config does not list it)',
        'opensm_routing_engine: ar_updn unknown to this OpenSM build; it knows minhop, updn, dnup, file, ftree, lash, dor, '
        'torus-2QoS, nue, dfsssp, sssp (and no_fallback)']


def test_sample_renders_in_place():
    sample = own_fixture(SAMPLE)
    rendered = oc.render_opensm_conf(sample, {'sm_priority': 14, 'routing_engine': ['ar_updn', 'updn']}, flavour='nvidia')
    assert rendered.splitlines()[:3] == sample.splitlines()[:3]
    assert 'sm_priority 14\n' in rendered and 'routing_engine ar_updn,updn\n' in rendered
    assert len(rendered.splitlines()) == len(sample.splitlines())
    assert oc.opensm_conf_diff(sample, rendered) == [{'key': 'routing_engine', 'before': '(null)', 'after': 'ar_updn,updn'},
                                                     {'key': 'sm_priority', 'before': '0', 'after': '14'}]


def test_unset_settings_leave_the_default():
    # what the role passes on ansible-core 2.16 (None renders '') and by default (routing_engine [])
    sample = own_fixture(SAMPLE)
    settings = {'sm_priority': 14, 'routing_engine': [], 'sweep_interval': '', 'log_max_size': None, 'qos': ''}
    assert oc.opensm_conf_problems(settings, sample, 'nvidia') == []
    assert oc.opensm_conf_diff(sample, oc.render_opensm_conf(sample, settings, flavour='nvidia')) == [
        {'key': 'sm_priority', 'before': '0', 'after': '14'}]


def test_nvidia_engines_from_its_own_comment():
    sample = own_fixture(SAMPLE)
    assert oc.supported_routing_engines(sample) == oc.NVIDIA_ENGINES
    assert oc.supported_routing_engines('sm_priority 0\n') == oc.UPSTREAM_ENGINES
    assert oc.supported_routing_engines('', 'nvidia') == oc.NVIDIA_ENGINES


@pytest.mark.parametrize('settings, problem', [
    ({'guid': 'node01'}, "opensm_guid: 'node01' is not a port GUID"),
    ({'guid': '0x0'}, "opensm_guid: '0x0' is not a port GUID"),
    ({'sm_priority': 16}, 'opensm_sm_priority: 16 must be an integer 0-15'),
    ({'sm_priority': True}, 'opensm_sm_priority: True must be an integer 0-15'),
    ({'sweep_interval': -1}, 'opensm_sweep_interval: -1 must be an integer 0 or more'),
    ({'log_max_size': '100'}, "opensm_log_max_size: '100' must be an integer 0 or more"),
    ({'log_file': 'opensm.log'}, "opensm_log_file: 'opensm.log' must be an absolute path"),
    ({'root_guid_file': '/etc/a b'}, "opensm_root_guid_file: '/etc/a b' must be an absolute path"),
    ({'qos': 'yes'}, "opensm_qos: 'yes' must be true or false"),
    ({'sm_key': 'secret-value'}, 'opensm_sm_key: must be 0x and 1-16 hex digits (the value is not shown)'),
    ({'routing_engine': 'ftree'}, "opensm_routing_engine: 'ftree' must be a non-empty list"),
    ({'routing_engine': [None]}, 'opensm_routing_engine: [None] must be a non-empty list'),
    ({'routing_engine': ['ftree', 'ftree']}, "opensm_routing_engine: ['ftree', 'ftree'] names an engine twice"),
    ({'routing_engine': ['fattree']}, 'opensm_routing_engine: fattree unknown to this OpenSM build'),
    ({'qos_sl2vl': '0,1,x'}, "opensm_qos_sl2vl: '0,1,x' must be a number or a list of numbers"),
    ({'lmc': 1}, 'opensm_lmc: not a setting this collection owns'),
])
def test_setting_problems(settings, problem):
    problems = oc.opensm_conf_problems(settings, own_fixture(SAMPLE))
    assert len(problems) == 1 and problems[0].startswith(problem), problems
    assert 'secret-value' not in problems[0]
    with pytest.raises(ValueError, match='^opensm_'):
        oc.render_opensm_conf(own_fixture(SAMPLE), settings)


def test_a_key_the_build_lacks_is_refused():
    assert oc.opensm_conf_problems({'qos_ca_sl2vl': '0'}, own_fixture(SAMPLE)) == [
        'opensm_qos_ca_sl2vl: this OpenSM build has no option qos_ca_sl2vl (its opensm --create-config does not list it)']
    assert oc.opensm_conf_problems({'qos_ca_sl2vl': '0'}) == []
    assert oc.opensm_conf_problems('x') == ["opensm settings must be a dict of opensm.conf keys, got 'x'"]


def test_parse():
    assert oc.parse_opensm_conf('# c\nguid 0x1 # port\nlog_prefix "a b"\ncc_ca_cong_setting_ccti_timer 0 0\nflag\nguid 0x2\n') == {
        'guid': '0x2', 'log_prefix': 'a b', 'cc_ca_cong_setting_ccti_timer': '0 0', 'flag': ''}
    for text in ('', '# only comments\n', '=bad line\n', None):
        with pytest.raises(ParseError):
            oc.parse_opensm_conf(text)


def test_diff_masks_secrets_and_survives_bad_text():
    before, after = 'm_key 0x1\nsm_priority 0\n', 'm_key 0x2\nsm_priority 15\nsa_key 0x3\n'
    assert oc.opensm_conf_diff(before, after) == [{'key': 'm_key', 'before': '********', 'after': '********'},
                                                  {'key': 'sm_priority', 'before': '0', 'after': '15'},
                                                  {'key': 'sa_key', 'before': None, 'after': '********'}]
    assert oc.opensm_conf_diff('=bad\n', 'sm_priority 1\n') == [{'key': 'sm_priority', 'before': None, 'after': '1'}]
    assert oc.opensm_conf_diff(after, after) == []


def test_too_long_a_line_is_refused():
    with pytest.raises(ValueError, match='opensm_log_file: the line is longer than OpenSM reads'):
        oc.render_opensm_conf('log_file /x\n', {'log_file': '/' + 'a' * 1100})


@FUZZ_SETTINGS
@given(texts_from([SAMPLE]))
def test_parser_raises_only_parse_error(text):
    only_parse_error(oc.parse_opensm_conf, text)


# ---------------------------------------------------------------------------------------------------- SM plans

def _sm(host, priority, guid, subnet='0xfe80000000000000'):
    return {'host': host, 'subnet': subnet, 'guid': guid, 'priority': priority}


def test_a_primary_and_a_standby_per_subnet_is_fine():
    assert oc.sm_problems([_sm('ctl01', 15, '0x1'), _sm('ctl02', 14, '0x2'),
                           _sm('ctl01', 15, '0x3', 'rail1'), _sm('ctl02', 14, '0x4', 'rail1')]) == []


@pytest.mark.parametrize('ports, problem', [
    ([_sm('ctl01', 15, '0x1'), _sm('ctl02', 15, '0x2')],
     'opensm_sm_priority: ctl01 and ctl02 share priority 15 in subnet 0xfe80000000000000; give each SM of a subnet its own'),
    ([_sm('ctl01', 16, '0x1')], 'opensm_sm_priority on ctl01: 16 must be an integer 0-15'),
    ([_sm('ctl01', '15', '0x1')], "opensm_sm_priority on ctl01: '15' must be an integer 0-15"),
    ([_sm('ctl01', 15, '0x1'), _sm('ctl02', 14, '0x2'), _sm('ctl03', 13, '0x3')],
     'subnet 0xfe80000000000000: 3 SMs planned (ctl01, ctl02, ctl03); at most 2'),
    ([_sm('ctl01', 15, '0x1'), _sm('ctl02', 14, '0x01', 'other')], "opensm_guid on ctl02: port 0x0000000000000001 is also ctl01's SM port"),
    ([_sm('ctl01', 15, 'port1')], "opensm_guid on ctl01: 'port1' is not a port GUID"),
    ([_sm('ctl01', 15, '0x1', '')], 'ctl01: no subnet for SM port 0x1'),
    (['x'], "SM port 0 must be a dict {host, subnet, guid, priority}, got 'x'"),
    ('x', "SM ports must be a list of {host, subnet, guid, priority}, got 'x'"),
])
def test_sm_problems(ports, problem):
    problems = oc.sm_problems(ports)
    assert len(problems) == 1 and problems[0].startswith(problem), problems
