# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""fabric.sm, fabric.partition and fabric.switch_errors end to end: the verify_ib role's registered reads (the real
tools' layouts) -> decide.fabric_sm / decide.switch_errors -> the gate's plan and results.json. A subnet or switch
problem fails the verdict and drains nobody; a rogue SM or a wrong P_Key table drains its node only; a tool that is
not installed is "not checked", never a pass or a failure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from _paths import own_fixture, real_fixture

from ansible_collections.aicluster.infra.plugins.module_utils.report import junit, markdown
from ansible_collections.aicluster.infra.plugins.module_utils.verify import decide, document, gate
from ansible_collections.aicluster.infra.plugins.module_utils.verify import fabric_health as fh

PRIMARY, STANDBY = '0xb8cef60300a1d92a', '0xb8cef60300a1d94e'
PORTS = {'gpu01': '0x946dae0300cde700', 'gpu02': '0x946dae0300cde72c'}
NODES = ['gpu01', 'gpu02']
SUBNET = 'fe80:0000:0000:0000 SM LID 1'
READ = {'ca': 'mlx5_0', 'port': 1, 'guid': PORTS['gpu01'], 'subnet': SUBNET}
LEAF, SPINE = '0xfc6a1c0300e0a100', '0xfc6a1c0300e0b200'
RUN = {'started': 's', 'finished': 'f', 'inventory': 'inventories/example', 'collection_version': '0.1.0'}
MISSING = {'rc': 2, 'cmd': ['x'], 'msg': "[Errno 2] No such file or directory: b'x'", 'stdout': '', 'stderr': ''}
NONE_FOUND = {'rc': 1, 'stdout': '', 'stderr': ''}


def _sminfo(guid=PRIMARY, lid=1, priority=15, state=3, name='SMINFO_MASTER', act=81234):
    # sminfo.c: "sminfo: sm lid %d sm guid 0x%" PRIx64 ", activity count %u priority %d state %d %s"
    return 'sminfo: sm lid %d sm guid %s, activity count %d priority %d state %d %s\n' % (lid, guid, act, priority, state, name)


def _loop(*results):
    """A looped command's registered result over the subnet reads."""
    return {'changed': False, 'results': [dict(result, item=dict(READ), changed=False) for result in results]}


def _ok(stdout):
    return {'rc': 0, 'stdout': stdout, 'stderr': ''}


def _reads(first=None, second=None, smir=None, issm=None):
    return {'sminfo_first': _loop(first or _ok(_sminfo())), 'sminfo_second': _loop(second or _ok(_sminfo(act=81240))),
            'smir': _loop(smir or _ok(own_fixture('saquery/saquery-SMIR-rdma-core-master-standby-handmade.txt'))),
            'issm': _loop(issm or _ok(own_fixture('saquery/saquery-s-rdma-core-two-sm-ports-one-disabled-handmade.txt')))}


def _ib_info(node):
    return {'changed': False, 'hcas': [{'name': 'mlx5_0', 'node_guid': PORTS[node], 'ports': [
        {'port': 1, 'port_guid': PORTS[node], 'state': 'Active', 'physical_state': 'LinkUp', 'link_layer': 'InfiniBand'}]}]}


def _sysfs(*values):
    """``grep -r -H . /sys/class/infiniband/mlx5_0/ports/1/pkeys`` as the role runs it (mlx5: 128 entries)."""
    table = list(values) + ['0x0000'] * (128 - len(values))
    lines = ['/sys/class/infiniband/mlx5_0/ports/1/pkeys/%d:%s' % (index, value) for index, value in enumerate(table)]
    return _ok('\n'.join(lines) + '\n')


def _node(node, pgrep=None, units=None, pkeys=None, smpquery=None):
    return {'ib_info': _ib_info(node), 'opensm_pgrep': pgrep or NONE_FOUND, 'opensm_units': units or NONE_FOUND,
            'pkeys_sysfs': pkeys or _sysfs('0xffff'), 'pkeys_smpquery': smpquery or {'results': [], 'skipped': True}}


def _expected(**more):
    return dict({'link_layer': 'InfiniBand', 'sm_enabled': True, 'partition_enabled': True, 'nodes': NODES,
                 'checked': dict((node, ['mlx5_0']) for node in NODES), 'port': 1,
                 'identity': dict((node, {'mlx5_0': [PORTS[node]]}) for node in NODES),
                 'subnet_reads': {'host': 'gpu01', 'reads': [READ]}, 'provider': 'opensm', 'sm_guids': [],
                 'sm_hosts': ['ctl01', 'ctl02'], 'sm_host_ports': {'ctl01': [PRIMARY], 'ctl02': [{'guid': STANDBY, 'subnet': 'fabric'}]},
                 'sm_host_plans': {}, 'sm_host_priorities': {'ctl01': None, 'ctl02': None}, 'priority': None, 'sweep_s': 10,
                 'partitions': None, 'sysfs_root': '/sys'}, **more)


def _switch_expected(**more):
    return dict({'link_layer': 'InfiniBand', 'switch_errors_enabled': True, 'nodes': NODES,
                 'identity': dict((node, {'mlx5_0': [PORTS[node]]}) for node in NODES),
                 'subnet_reads': {'host': 'gpu01', 'reads': [READ]},
                 'peers': {'gpu02': {'mlx5_0': {'switch_guid': LEAF, 'switch_port': 5}}},
                 'fabric_links': [{'node_type': 'Switch', 'node_guid': LEAF}, {'node_type': 'Switch', 'node_guid': SPINE}],
                 'error_max': {}, 'active': True, 'busy': []}, **more)


def _isl_only():
    """The leaf-spine capture without its host link (leaf port 5 to gpu02) and gpu02's own lines."""
    keep, skip = [], False
    for line in own_fixture('ibqueryerrors/ibqueryerrors-rdma-core-50-ndr-r-details-64bit-leaf-spine-handmade.txt').splitlines():
        if line.startswith('   GUID %s port 5:' % LEAF) or line.startswith('Errors for "gpu02'):
            skip = True
            continue
        if skip and (line.startswith('       Link info:') or line.startswith('   GUID 0x946dae0300cde72c')):
            continue
        skip = False
        keep.append(line)
    return '\n'.join(keep) + '\n'


def _gate(nodes=None, sm=None, switch=None, slurm=None):
    """The gate's plan and results.json from the outcome facts the verify_ib role leaves."""
    nodes = list(nodes or (None, None))
    observed = nodes[0] or dict((node, _node(node)) for node in NODES)
    variables = {'verify_ib_sm_outcome': decide.fabric_sm(observed, sm or _reads(), _expected())}
    if switch is not None:
        variables['verify_ib_switch_outcome'] = decide.switch_errors(switch, _switch_expected())
    slurm = slurm if slurm is not None else [{'NodeName': node, 'State': 'IDLE'} for node in NODES]
    plan = document.plan_gate(variables, slurm, {'nodes': NODES, 'mode': 'drain'})
    doc = document.document(plan, dict(RUN, mode='drain'))
    return plan, doc


def _drains(plan):
    return sorted(node for node, action in plan['actions'].items() if action['action'] == 'drain')


def _failed(results, check=None):
    return [r for r in results if not r['passed'] and (check is None or r['check'] == check)]


def test_outcome_facts_include_the_fabric_health_outcomes():
    facts = dict(gate.OUTCOME_FACTS)
    assert facts['sm'] == 'verify_ib_sm_outcome' and facts['switch'] == 'verify_ib_switch_outcome'


def test_healthy_fabric_passes_with_every_check_made():
    before = {'results': [dict(_ok(real_fixture('ibqueryerrors/guilbaults-issue48-clean-node-G-summary-only.txt')), item=READ)]}
    plan, doc = _gate(switch={'before': before, 'after': before})
    assert doc['summary']['verdict'] == 'PASS' and _drains(plan) == []
    assert 'fabric' in doc['run']['checks']
    assert doc['run']['parameters']['fabric_sm_priority'] == 15
    for node in NODES:
        checks = dict((r['check'], r) for r in doc['nodes'][node]['results'])
        assert sorted(checks) == ['fabric.partition', 'fabric.sm', 'fabric.switch_errors']
        assert not any(r.get('skipped') for r in checks.values())
    sm = [r for r in doc['cluster']['results'] if r['check'] == 'fabric.sm']
    assert sm[0]['passed'] and 'one master %s at priority 15' % PRIMARY in sm[0]['message']


def test_no_master_fails_the_verdict_and_drains_nobody():
    # no SM: every port stays Initializing; sminfo and saquery get no answer from the subnet
    failed = {'rc': 255, 'stdout': '', 'stderr': 'ibwarn: [1234] smp_query_via: SMInfo query failed'}
    sa = {'rc': 255, 'stdout': '', 'stderr': 'ibwarn: [1234] sa_query: Query SA failed'}
    plan, doc = _gate(sm=_reads(first=failed, second=failed, smir=sa, issm=sa))
    assert doc['summary']['verdict'] == 'FAIL' and _drains(plan) == []
    cluster = _failed(doc['cluster']['results'], 'fabric.sm')
    assert len(cluster) == 1 and 'no SM answered' in cluster[0]['message']
    assert all(doc['nodes'][node]['passed'] for node in NODES)


def test_two_masters_fail_the_verdict_and_drain_nobody():
    smir = own_fixture('saquery/saquery-SMIR-rdma-core-two-masters-rogue-handmade.txt').replace(
        'LID...................37', 'LID...................9').replace('0x946dae0300cde72c', '0x946dae0300cdeeee')
    plan, doc = _gate(sm=_reads(smir=_ok(smir)))
    messages = [r['message'] for r in _failed(doc['cluster']['results'], 'fabric.sm')]
    assert any('has 2 masters' in message for message in messages)
    assert any('share priority 15' in message for message in messages)
    assert doc['summary']['verdict'] == 'FAIL' and _drains(plan) == []
    assert all(doc['nodes'][node]['passed'] for node in NODES)


def test_rogue_sm_on_a_gpu_node_drains_that_node_only():
    # gpu02's port is in the SA's SM list (DISCOVERING at priority 0), and an opensm process runs there
    smir = own_fixture('saquery/saquery-SMIR-rdma-core-two-masters-rogue-handmade.txt').replace(
        'LID...................2\n\t\tSMInfo dump:\n\t\tGUID..................0xb8cef60300a1d94e\n\t\tSM_Key................'
        '0x0000000000000000\n\t\tActCount..............80977\n\t\tPriority..............15\n\t\tSMState...............3',
        'LID...................2\n\t\tSMInfo dump:\n\t\tGUID..................0xb8cef60300a1d94e\n\t\tSM_Key................'
        '0x0000000000000000\n\t\tActCount..............80977\n\t\tPriority..............14\n\t\tSMState...............2')
    nodes = {'gpu01': _node('gpu01'),
             'gpu02': _node('gpu02', pgrep=_ok('4242 /usr/sbin/opensm -g 0x946dae0300cde72c'),
                            units=_ok('opensm.service enabled enabled\n'))}
    plan, doc = _gate(nodes=(nodes, None), sm=_reads(smir=_ok(smir)))
    assert _drains(plan) == ['gpu02']
    rogue = _failed(doc['nodes']['gpu02']['results'], 'fabric.sm')[0]
    assert 'mlx5_0 (0x946dae0300cde72c) runs an SM, DISCOVERING at priority 0' in rogue['message']
    assert 'an opensm process runs (4242 /usr/sbin/opensm' in rogue['message'] and 'unit opensm.service is enabled' in rogue['message']
    assert plan['actions']['gpu02']['reason'] == 'aicluster: fabric.sm node'
    assert doc['nodes']['gpu01']['passed'] and all(r['passed'] for r in doc['cluster']['results'])


def test_a_missing_p_key_on_one_node_drains_that_node():
    partitions = [{'name': 'Default', 'pkey': '0x7fff', 'ipoib': True, 'members': [{'guid': 'ALL', 'membership': 'full'}]},
                  {'name': 'tenant1', 'pkey': '0x0101', 'ipoib': True,
                   'members': [{'guid': PORTS['gpu01'], 'membership': 'full'}, {'guid': PORTS['gpu02'], 'membership': 'full'}]}]
    nodes = {'gpu01': _node('gpu01', pkeys=_sysfs('0xffff', '0x8101')), 'gpu02': _node('gpu02', pkeys=_sysfs('0xffff'))}
    outcome = decide.fabric_sm(nodes, _reads(), _expected(partitions=partitions))
    plan = document.plan_gate({'verify_ib_sm_outcome': outcome}, [{'NodeName': n, 'State': 'IDLE'} for n in NODES],
                              {'nodes': NODES, 'mode': 'drain'})
    assert _drains(plan) == ['gpu02']
    failed = _failed(plan['nodes']['gpu02']['results'], 'fabric.partition')[0]
    assert failed['subject'] == 'mlx5_0:1' and failed['missing'] == ['0x8101'] and 'missing 0x8101' in failed['message']
    assert outcome['parameters']['fabric_partitions'] == 'opensm_partitions'


def test_p_keys_read_through_smpquery_where_sysfs_has_none():
    # the lab's sysfs has no pkeys directory: the real smpquery through ibsim (limited default member, full 0x0010)
    capture = real_fixture('smpquery/ibsim-pkeys-hca-lid2-limited-default-full-8010-ibwarn-stderr.txt')
    nodes = dict((node, _node(node, pkeys=dict(NONE_FOUND, stderr='grep: /sys/class/infiniband: No such file or directory'),
                              smpquery={'results': [dict(_ok(capture), item='mlx5_0')]})) for node in NODES)
    partitions = [{'name': 'Default', 'pkey': '0x7fff', 'members': [{'guid': 'ALL', 'membership': 'limited'}]},
                  {'name': 't', 'pkey': '0x0010', 'members': [{'guid': 'ALL', 'membership': 'full'}]}]
    outcome = decide.fabric_sm(nodes, _reads(), _expected(partitions=partitions))
    results = [r for r in outcome['nodes']['gpu01'] if r['check'] == 'fabric.partition']
    assert [r['passed'] for r in results] == [True] and results[0]['measured'] == ['0x7fff', '0x8010']


def test_switch_isl_counter_rising_fails_the_verdict_and_drains_nobody():
    before = {'results': [dict(_ok(real_fixture('ibqueryerrors/guilbaults-issue48-clean-node-G-summary-only.txt')), item=READ)]}
    after = {'results': [dict({'rc': 1, 'stdout': _isl_only(), 'stderr': ''}, item=READ)]}
    plan, doc = _gate(sm=_reads(), switch={'before': before, 'after': after})
    assert doc['summary']['verdict'] == 'FAIL' and _drains(plan) == []
    isl = _failed(doc['cluster']['results'], 'fabric.switch_errors')
    assert len(isl) == 1 and isl[0]['ends'] == ['leaf-rail0 (%s) port 33' % LEAF, 'spine-01 (%s) port 1' % SPINE]
    assert 'no node is drained' in isl[0]['message']
    assert all(doc['nodes'][node]['passed'] for node in NODES)
    # the acceptance report shows it: the verdict line, and a failed cluster testcase in junit.xml
    assert '1 cluster-level failures' in markdown.summary_markdown(doc)
    assert '<testcase classname="fabric.cluster" name="fabric.switch_errors"' in junit.junit_xml(doc)


def test_switch_host_link_counter_rising_blames_the_host():
    before = {'results': [dict(_ok(real_fixture('ibqueryerrors/guilbaults-issue48-clean-node-G-summary-only.txt')), item=READ)]}
    after = {'results': [dict({'rc': 1, 'stdout': own_fixture(
        'ibqueryerrors/ibqueryerrors-rdma-core-50-ndr-r-details-64bit-leaf-spine-handmade.txt'), 'stderr': ''}, item=READ)]}
    plan, doc = _gate(sm=_reads(), switch={'before': before, 'after': after})
    assert _drains(plan) == ['gpu02']
    assert _failed(doc['nodes']['gpu02']['results'], 'fabric.switch_errors')[0]['peer'] == 'leaf-rail0 (%s) port 5' % LEAF


def test_no_infiniband_diags_is_not_checked_never_failed_or_passed():
    # the lab's default labs: no SM and no infiniband-diags (sminfo, saquery, smpquery, ibqueryerrors missing)
    nodes = dict((node, _node(node, pkeys=dict(NONE_FOUND, rc=2), smpquery={'results': [dict(MISSING, item='mlx5_0')]}))
                 for node in NODES)
    reads = {'sminfo_first': _loop(MISSING), 'sminfo_second': _loop(MISSING), 'smir': _loop(MISSING), 'issm': _loop(MISSING)}
    switch = {'before': _loop(MISSING), 'after': _loop(MISSING)}
    plan, doc = _gate(nodes=(nodes, None), sm=reads, switch=switch)
    assert doc['summary']['verdict'] == 'PASS' and _drains(plan) == []
    cluster = dict((r['check'], r) for r in doc['cluster']['results'])
    assert cluster['fabric.sm']['skipped'] == 'sminfo is not installed on gpu01 (infiniband-diags)'
    assert cluster['fabric.switch_errors']['skipped'] == 'ibqueryerrors is not installed on gpu01 (infiniband-diags)'
    for node in NODES:
        by_check = dict((r['check'], r) for r in doc['nodes'][node]['results'])
        assert 'smpquery is not installed' in by_check['fabric.partition']['skipped']
        assert by_check['fabric.switch_errors']['skipped']
        # the node's own processes and units were still read: no SM runs there
        assert by_check['fabric.sm']['passed'] and not by_check['fabric.sm'].get('skipped')


@pytest.mark.parametrize('expected, reason', [
    ({'link_layer': 'Ethernet'}, fh.ETHERNET),
    ({'sm_enabled': False, 'partition_enabled': False}, 'is false'),
], ids=['ethernet', 'switched-off'])
def test_ethernet_or_switched_off_is_not_checked(expected, reason):
    outcome = decide.fabric_sm(dict((node, _node(node)) for node in NODES), _reads(), _expected(**expected))
    assert all(r['passed'] and reason in r['skipped'] for results in outcome['nodes'].values() for r in results)
    assert [r['check'] for r in outcome['nodes']['gpu01']] == ['fabric.sm', 'fabric.partition']
    switch = decide.switch_errors({}, _switch_expected(switch_errors_enabled=False, **expected))
    assert all(r['passed'] and r['skipped'] for r in switch['cluster'] + switch['nodes']['gpu01'])


def test_a_drain_for_fabric_sm_is_kept_when_the_check_did_not_run():
    # gpu02 was drained for a rogue SM; this run has no sminfo and cannot read the node either: not resumed
    nodes = dict((node, _node(node, pgrep=MISSING, units=MISSING)) for node in NODES)
    reads = {'sminfo_first': _loop(MISSING), 'sminfo_second': _loop(MISSING), 'smir': _loop(MISSING), 'issm': _loop(MISSING)}
    slurm = [{'NodeName': 'gpu01', 'State': 'IDLE'}, {'NodeName': 'gpu02', 'State': 'IDLE+DRAIN', 'Reason': 'aicluster: fabric.sm node'}]
    plan, doc = _gate(nodes=(nodes, None), sm=reads, slurm=slurm)
    assert plan['actions']['gpu02']['action'] == 'none' and 'did not check' in plan['actions']['gpu02']['note']


def test_sm_expectations_from_the_sm_hosts():
    guids, priority, unknown = fh.sm_expectations(_expected())
    assert guids == [PRIMARY, STANDBY] and priority == 15 and unknown == []
    guids, priority, unknown = fh.sm_expectations(_expected(sm_host_ports={}, sm_host_plans={'ctl01': {'instances': [{'guid': PRIMARY}]}},
                                                            sm_host_priorities={'ctl01': 12, 'ctl02': 3}))
    assert guids == [PRIMARY] and priority == 12 and unknown == ['ctl02']
    assert fh.sm_expectations(_expected(priority=7))[1] == 7
    # a switch's or UFM's SM: its priority is the site's to give (verify_ib_sm_priority), else not judged
    assert fh.sm_expectations(_expected(provider='switch', sm_hosts=[]))[1] is None
    assert fh.sm_expectations(_expected(provider='ufm', sm_hosts=[], priority=15))[1] == 15


def test_unknown_sm_ports_are_said_in_the_passing_result():
    # ctl02 has no opensm_ports and the opensm role did not run in this play: no GUID is compared, and the result says so
    outcome = decide.fabric_sm(dict((node, _node(node)) for node in NODES), _reads(),
                               _expected(sm_host_ports={'ctl01': [PRIMARY]}))
    sm = [r for r in outcome['cluster'] if r['check'] == 'fabric.sm']
    assert [r['passed'] for r in sm] == [True] and sm[0]['threshold'] == 'one MASTER'
    assert 'the SM ports of ctl02 are unknown' in sm[0]['message'] and 'set verify_ib_sm_guids' in sm[0]['message']


def test_an_sm_host_that_is_also_a_gpu_node_is_not_rogue():
    nodes = {'gpu01': _node('gpu01', pgrep=_ok('99 /usr/sbin/opensm')), 'gpu02': _node('gpu02')}
    outcome = decide.fabric_sm(nodes, _reads(), _expected(sm_hosts=['gpu01', 'ctl02']))
    assert all(r['passed'] for r in outcome['nodes']['gpu01'])


def test_fabric_problems_name_the_variable():
    good = {'sm_provider': 'opensm', 'sm_guids': [PRIMARY], 'sm_priority': None, 'sm_sweep_s': 10, 'partitions': None}
    assert fh.fabric_problems(good) == []
    # the default `opensm_partitions | default([])` outside the opensm role's plays; '' from default(none) before 2.19
    assert fh.fabric_problems(dict(good, partitions=[])) == []
    assert fh.fabric_problems(dict(good, partitions='')) == []
    bad = fh.fabric_problems({'sm_provider': 'nvlsm', 'sm_guids': ['zz'], 'sm_priority': 16, 'sm_sweep_s': -1,
                              'partitions': [{'name': 'x', 'pkey': '0x8001', 'members': []}]})
    assert [line.split()[0] for line in bad[:4]] == ['verify_ib_sm_provider', 'verify_ib_sm_guids', 'verify_ib_sm_priority',
                                                     'verify_ib_sm_sweep_s']
    assert any(line.startswith('verify_ib_partitions[0].pkey') for line in bad)


@pytest.mark.parametrize('result, missing', [
    (MISSING, True),
    ({'rc': 2, 'cmd': 'sminfo -C mlx5_0', 'msg': 'Error executing command.', 'stdout': '', 'stderr': ''}, True),   # ansible-core 2.19
    ({'rc': 2, 'cmd': ['grep'], 'msg': 'non-zero return code', 'start': 'x', 'stdout': '', 'stderr': 'grep: x: No such file'}, False),
    ({'rc': 255, 'msg': 'non-zero return code', 'start': 'x', 'stdout': '', 'stderr': 'ibwarn: SMInfo query failed'}, False),
    ({'skipped': True}, False),
], ids=['errno', 'core-2.19', 'grep-no-dir', 'tool-error', 'skipped'])
def test_tool_missing(result, missing):
    assert fh.tool_missing(result) is missing


def test_sysfs_pkey_tables():
    text = '/run/hwsim/sys/class/infiniband/mlx5_3/ports/1/pkeys/0:0xffff\n/run/hwsim/sys/class/infiniband/mlx5_3/ports/1/pkeys/1:0x8101\n'
    assert fh.sysfs_pkey_tables(text) == {'mlx5_3:1': {'0': '0xffff', '1': '0x8101'}}
