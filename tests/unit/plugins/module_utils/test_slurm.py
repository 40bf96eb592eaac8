# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for the scontrol show node parser and the Slurm hostlist functions."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil
import subprocess

import pytest
from hypothesis import given, settings, strategies as st

from _fuzz import FUZZ_SETTINGS, only_parse_error, texts_from
from _paths import fixture_files, own_fixture, read_fixture

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.slurm import (
    ScontrolError,
    hostlist_compress,
    hostlist_expand,
    hostlist_sort_key,
    parse_scontrol_show_node,
)

DRAINED = 'scontrol/scontrol-22.05-h100-nodes-drained-handmade.txt'
DRAINED_ONELINE = 'scontrol/scontrol-22.05-h100-nodes-drained-oneline-handmade.txt'
MIXED = 'scontrol/scontrol-22.05-a100-node-mixed-reason-multiline-handmade.txt'
OLD = 'scontrol/scontrol-17.11-cpu-node-idle-handmade.txt'
NO_NODES = 'scontrol/scontrol-22.05-no-nodes-handmade.txt'
NOT_FOUND = 'scontrol/scontrol-22.05-node-not-found-handmade.txt'
OS_TEXT = 'Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)'


# --------------------------------------------------------------------------- scontrol show node

@pytest.mark.parametrize('relpath', [DRAINED, DRAINED_ONELINE], ids=['multi-line', 'one-line'])
def test_drained_nodes(relpath):
    nodes = parse_scontrol_show_node(own_fixture(relpath))
    assert [node['NodeName'] for node in nodes] == ['gpu01', 'gpu02', 'gpu03']
    assert [node['State'] for node in nodes] == ['IDLE', 'IDLE+DRAIN', 'DOWN+NOT_RESPONDING']
    first = nodes[0]
    assert first['OS'] == OS_TEXT
    assert first['CfgTRES'] == 'cpu=192,mem=2063731M,billing=192,gres/gpu=8'
    assert first['AllocTRES'] == ''
    assert first['Gres'] == 'gpu:h100:8(S:0-1)'
    assert first['Partitions'] == 'gpu,debug'
    assert first['CurrentWatts'] == '0'
    assert first['ExtSensorsTemp'] == 'n/s'
    assert first['MCS_label'] == 'N/A'
    assert first['CoresPerSocket'] == '48'
    assert 'Reason' not in first
    assert nodes[1]['Reason'] == 'gpu xid 79 on GPU 3 [root@2026-01-06T10:02:33]'
    assert nodes[2]['Reason'] == 'Not responding [slurm@2026-01-01T00:00:00]'
    assert nodes[2]['CPULoad'] == 'N/A'
    assert nodes[2]['FreeMem'] == 'N/A'
    assert len(first) == 37


def test_one_line_equals_multi_line():
    assert parse_scontrol_show_node(own_fixture(DRAINED)) == parse_scontrol_show_node(own_fixture(DRAINED_ONELINE))


def test_mixed_node_multiline_reason_and_comment():
    (node,) = parse_scontrol_show_node(own_fixture(MIXED))
    assert node['NodeName'] == 'dgx-a100-07'
    assert node['GresUsed'] == 'gpu:a100:4(IDX:0-3)'
    assert node['CPUSpecList'] == '0-1,96-97'
    assert node['MemSpecLimit'] == '16384'
    assert node['AllocTRES'] == 'cpu=64,mem=512000M,gres/gpu=4'
    assert node['Reason'] == ('NHC: check_hw_ib: mlx5_3 port 1 rate 200 [root@2026-01-07T08:00:01]\n'
                              'second line of a multi-line Reason=kept')
    assert node['Comment'] == 'burn-in 2026-01 ticket=OPS-123'
    assert 'kept' not in node


def test_old_layout_energy_keys():
    (node,) = parse_scontrol_show_node(own_fixture(OLD))
    assert node['LowestJoules'] == '0'
    assert node['ConsumedJoules'] == '0'
    assert node['CPUErr'] == '0'
    assert node['OS'] == 'Linux 3.10.0-693.el7.x86_64 #1 SMP Tue Aug 22 21:09:27 UTC 2017'
    assert node['CfgTRES'] == 'cpu=32,mem=187.50G,billing=32'


def test_no_nodes():
    assert parse_scontrol_show_node(own_fixture(NO_NODES)) == []


def test_node_not_found_raises():
    with pytest.raises(ScontrolError, match='Node gpu99 not found') as info:
        parse_scontrol_show_node(own_fixture(NOT_FOUND))
    assert info.value.errors == ['Node gpu99 not found']
    assert isinstance(info.value, ParseError)


def test_node_not_found_with_errors():
    assert parse_scontrol_show_node(own_fixture(NOT_FOUND), with_errors=True) == {
        'nodes': [], 'errors': ['Node gpu99 not found']}


def test_controller_down_error_lines():
    text = 'slurm_load_node error: Unable to contact slurm controller (connect failure)\n'
    result = parse_scontrol_show_node(text, with_errors=True)
    assert result == {'nodes': [], 'errors': [text.strip()]}


def test_crlf_line_ends():
    text = own_fixture(DRAINED).replace('\n', '\r\n')
    assert parse_scontrol_show_node(text) == parse_scontrol_show_node(own_fixture(DRAINED))


def test_one_liner_reason_with_key_like_text():
    text = 'NodeName=n1 CoresPerSocket=1  CPUAlloc=0 State=DOWN Reason=bad XID=79 here [root@2026-01-01T00:00:00] Comment=c d\n'
    (node,) = parse_scontrol_show_node(text)
    assert node['Reason'] == 'bad XID=79 here [root@2026-01-01T00:00:00]'
    assert node['Comment'] == 'c d'


@pytest.mark.parametrize('text, message', [
    ('', 'no scontrol show node output'),
    ('hello world\n', 'expected a line beginning NodeName='),
    ('   CPUAlloc=0\n', 'expected a line beginning NodeName='),
    ('NodeName=a Arch=x86_64 CoresPerSocket=1 \n   garbage here\n', 'expected Key=Value fields'),
    ('NodeName=a Arch=x86_64 CoresPerSocket=1 \nCPUAlloc=0\n', 'expected a continuation line'),
    ('NodeName=a Arch=x86_64 CoresPerSocket=1 \n   CPUAlloc=0\n   CPUAlloc=1\n', 'given twice'),
], ids=['empty', 'garbage', 'orphan-continuation', 'no-key', 'unindented', 'duplicate-key'])
def test_malformed(text, message):
    with pytest.raises(ParseError, match=message):
        parse_scontrol_show_node(text)


def test_not_text():
    with pytest.raises(ParseError, match='must be text'):
        parse_scontrol_show_node(None)


_SCONTROL_SAMPLES = [read_fixture(kind, relpath) for kind, relpath in fixture_files('scontrol')]


@FUZZ_SETTINGS
@given(texts_from(_SCONTROL_SAMPLES))
def test_fuzz_parse_scontrol_show_node(text):
    result = only_parse_error(parse_scontrol_show_node, text)
    if result is not None:
        assert isinstance(result, list)
        assert all(isinstance(node, dict) and 'NodeName' in node for node in result)


# --------------------------------------------------------------------------- hostlist_expand

@pytest.mark.parametrize('expr, expected', [
    ('cn[001-003,007]', ['cn001', 'cn002', 'cn003', 'cn007']),
    ('a[1-2],b3', ['a1', 'a2', 'b3']),
    ('gpu[08-11]', ['gpu08', 'gpu09', 'gpu10', 'gpu11']),
    ('gpu[8-11]', ['gpu8', 'gpu9', 'gpu10', 'gpu11']),
    ('n[001-3]', ['n001', 'n002', 'n003']),
    ('n[9-011]', ['n9', 'n10', 'n11']),
    ('x[01-3,5]', ['x01', 'x02', 'x03', 'x5']),
    ('rack[1-2]-node[01-02]', ['rack1-node01', 'rack1-node02', 'rack2-node01', 'rack2-node02']),
    ('single', ['single']),
    ('b[2]', ['b2']),
    ('a,,b', ['a', 'b']),
    ('a b', ['a', 'b']),
    ('a,b,a', ['a', 'b', 'a']),
    ('n[1-3]-ib', ['n1-ib', 'n2-ib', 'n3-ib']),
    ('10.0.0.[1-2]', ['10.0.0.1', '10.0.0.2']),
    (['a[1-2]', 'b1'], ['a1', 'a2', 'b1']),
], ids=['padded-list', 'several-expressions', 'padding-kept', 'no-padding', 'padding-from-low', 'low-width-wins',
        'mixed-widths', 'two-groups', 'plain', 'one-in-brackets', 'empty-item', 'white-space', 'duplicates-kept',
        'suffix', 'dots', 'list-input'])
def test_expand(expr, expected):
    assert hostlist_expand(expr) == expected


@pytest.mark.parametrize('expr, message', [
    ('gpu[5-3]', "reversed range '5-3'"),
    ('gpu[1-3', 'unbalanced "\\["'),
    ('gpu1-3]', 'unbalanced "\\]"'),
    ('', 'empty hostlist'),
    (' , ', 'empty hostlist'),
    ('x[]', 'empty brackets'),
    ('x[1-]', "bad range '1-'"),
    ('x[a-b]', "bad range 'a-b'"),
    ('x[1,,2]', "bad range ''"),
    ('x[[1]]', 'nested'),
    ('x[1 -2]', 'white space inside brackets'),
    ('x[0-65536]', 'more than 65536 hosts'),
    ('a[0-9999]b[0-9999]', 'more than 4194304 names'),
], ids=['reversed', 'unclosed', 'unopened', 'empty', 'only-separators', 'empty-brackets', 'open-range', 'letters',
        'empty-range', 'nested', 'space-in-brackets', 'range-too-big', 'product-too-big'])
def test_expand_malformed(expr, message):
    with pytest.raises(ParseError, match=message) as info:
        hostlist_expand(expr)
    assert repr(expr) in str(info.value)


def test_expand_not_text():
    with pytest.raises(ParseError, match='must be a string'):
        hostlist_expand(5)


# --------------------------------------------------------------------------- hostlist_compress

@pytest.mark.parametrize('names, expected', [
    (['cn001', 'cn002', 'cn003', 'cn007'], 'cn[001-003,007]'),
    (['gpu01', 'gpu02', 'gpu03', 'gpu05', 'cn007', 'cn8'], 'cn[007,8],gpu[01-03,05]'),
    (['b2', 'a1', 'a3', 'a2'], 'a[1-3],b2'),
    (['gpu08', 'gpu09', 'gpu10', 'gpu11'], 'gpu[08-11]'),
    (['n8', 'n9', 'n10', 'n100'], 'n[8-10,100]'),
    (['n9', 'n10', 'n09'], 'n[9,09-10]'),
    (['a1', 'a01', 'a001', 'a2'], 'a[1,01,001,2]'),
    (['rack1-node01', 'rack1-node02', 'rack2-node01', 'rack2-node02'], 'rack[1-2]-node[01-02]'),
    (['rack1-node01', 'rack1-node02', 'rack1-x', 'rack2-node01', 'rack2-node02'], 'rack1-node[01-02],rack1-x,rack2-node[01-02]'),
    (['r1c1-n1', 'r1c1-n2', 'r1c2-n1', 'r1c2-n2', 'r2c1-n1', 'r2c1-n2'], 'r1c[1-2]-n[1-2],r2c1-n[1-2]'),
    (['n1-ib', 'n2-ib', 'n3-ib'], 'n1-ib,n2-ib,n3-ib'),
    (['login', 'a', 'a', 'login'], 'a,login'),
    (['gpu2', 'gpu10', 'gpu1'], 'gpu[1-2,10]'),
    (['node10-1', 'node2-1', 'node2-2', 'node10-2'], 'node[2,10]-[1-2]'),
    ('gpu02,gpu01,gpu[03-04]', 'gpu[01-04]'),
    ([], ''),
], ids=['padded', 'two-prefixes', 'sorted', 'padding-kept', 'widths-grow', 'same-value-two-widths', 'three-widths',
        'racks', 'racks-interleaved', 'three-numbers', 'suffix-not-bracketed', 'unique', 'natural-sort',
        'natural-sort-prefix', 'expression-input', 'empty'])
def test_compress(names, expected):
    assert hostlist_compress(names) == expected
    if names:
        flat = hostlist_expand(names) if isinstance(names, str) else names
        assert hostlist_expand(expected) == sorted(set(flat), key=hostlist_sort_key)


@pytest.mark.parametrize('names', [[''], ['a[1]'], ['a,b'], ['a b'], [3]], ids=['empty', 'bracket', 'comma', 'space', 'not-text'])
def test_compress_bad_names(names):
    with pytest.raises(ParseError):
        hostlist_compress(names)


_PREFIXES = st.sampled_from(['gpu', 'cn', 'node', 'rack1-node', 'rack2-node', 'r1c', 'a', 'x-', 'ib', 'n1-ib', ''])
_SUFFIXES = st.sampled_from(['', '', '', '-ib', 'x'])


@st.composite
def _host_names(draw):
    prefix = draw(_PREFIXES)
    number = draw(st.integers(0, 1200))
    width = draw(st.integers(0, 5))
    suffix = draw(_SUFFIXES)
    name = '%s%0*d%s' % (prefix, width, number, suffix)
    return name


@FUZZ_SETTINGS
@given(st.lists(st.one_of(_host_names(), st.from_regex(r'\A[a-z][a-z0-9.-]{0,8}\Z')), max_size=60))
def test_fuzz_compress_round_trip(names):
    compressed = hostlist_compress(names)
    expected = sorted(set(names), key=hostlist_sort_key)
    if not names:
        assert compressed == ''
        return
    assert hostlist_expand(compressed) == expected
    assert hostlist_compress(hostlist_expand(compressed)) == compressed
    assert hostlist_compress(compressed) == compressed


@FUZZ_SETTINGS
@given(st.one_of(texts_from(['cn[001-003,007],gpu5', 'rack[1-2]-node[01-02]', 'a[1-2],b3']),
                 st.text(alphabet='ab01-9[],- ', max_size=30)))
def test_fuzz_expand_only_parse_error(text):
    result = only_parse_error(hostlist_expand, text)
    if result is not None:
        assert all(isinstance(name, str) and name for name in result)


# --------------------------------------------------------------------------- cross-check with Slurm's scontrol

SCONTROL = shutil.which('scontrol')
needs_scontrol = pytest.mark.skipif(SCONTROL is None, reason='scontrol (slurm-client) is not installed')


@pytest.fixture(name='scontrol_env', scope='module')
def _scontrol_env(tmp_path_factory):
    """scontrol show hostnames/hostlist run offline, but it wants a slurm.conf to read."""
    conf = tmp_path_factory.mktemp('slurm') / 'slurm.conf'
    conf.write_text('ClusterName=t\nSlurmctldHost=localhost\nNodeName=x CPUs=1\nPartitionName=p Nodes=x\n')
    env = dict(os.environ)
    env['SLURM_CONF'] = str(conf)
    return env


def _scontrol(env, *args):
    done = subprocess.run([SCONTROL, 'show'] + list(args), env=env, check=False, timeout=60,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    return done.stdout.split()


_CROSS = [
    'cn[001-003,007],gpu5', 'a[1-2],b3', 'gpu[08-11]', 'n[9-011]', 'x[01-3,5]', 'rack[1-2]-node[01-02]',
    'b[2]', 'a,,b', 'n[1,01]', 'r1c[1-2]-n[1-2],r2c1-n[1-2]', 'gpu[0-4095]',
]


@needs_scontrol
@pytest.mark.parametrize('expr', _CROSS, ids=_CROSS)
def test_expand_matches_scontrol(scontrol_env, expr):
    assert hostlist_expand(expr) == _scontrol(scontrol_env, 'hostnames', expr)


@needs_scontrol
@pytest.mark.parametrize('expr', ['gpu[5-3]', 'x[]', 'x[0-65536]'], ids=['reversed', 'empty-brackets', 'too-big'])
def test_both_reject(scontrol_env, expr):
    assert _scontrol(scontrol_env, 'hostnames', expr) == []
    with pytest.raises(ParseError):
        hostlist_expand(expr)


@needs_scontrol
@pytest.mark.parametrize('names', [
    ['gpu01', 'gpu02', 'gpu03', 'gpu05', 'cn007', 'cn8'],
    ['rack1-node01', 'rack1-node02', 'rack2-node01', 'rack2-node02', 'rack3-node01'],
    ['n9', 'n10', 'n09', 'n1-ib', 'n2-ib', 'login'],
    ['r1c1-n1', 'r1c1-n2', 'r1c2-n1', 'r1c2-n2', 'r2c1-n1', 'r2c1-n2'],
    ['gpu%04d' % i for i in range(0, 4096, 3)],
], ids=['prefixes', 'racks', 'widths-suffixes', 'three-numbers', 'strided-1366'])
def test_compress_output_accepted_by_scontrol(scontrol_env, names):
    compressed = hostlist_compress(names)
    assert _scontrol(scontrol_env, 'hostnames', compressed) == sorted(set(names), key=hostlist_sort_key)


@needs_scontrol
@settings(FUZZ_SETTINGS, max_examples=150)
@given(names=st.lists(_host_names(), min_size=1, max_size=40))
def test_fuzz_compress_accepted_by_scontrol(scontrol_env, names):
    """150 examples only: each runs scontrol."""
    compressed = hostlist_compress(names)
    assert _scontrol(scontrol_env, 'hostnames', compressed) == hostlist_expand(compressed)
