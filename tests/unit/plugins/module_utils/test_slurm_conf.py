# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""slurm.conf arithmetic: slurmd -C, node records, grouped node lines, partitions, variable checks, restart decisions."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.slurm import hostlist_expand
from ansible_collections.aicluster.infra.plugins.module_utils.slurm_conf import (
    gpu_fit,
    check_slurm_vars,
    gpu_defaults,
    gpu_info_for_node,
    known_nodes,
    node_gres,
    node_group_of,
    node_record,
    node_spec,
    parse_slurm_conf,
    parse_slurmd_c,
    restart_reasons,
    slurm_node_lines,
    slurm_nodes,
    slurm_partition_lines,
    usable_gpus,
)

# slurmd 22.05.8 on a lab host (Debian 12) and on a 2 x 48-core HGX H100 node.
SLURMD_C_LAB = ('NodeName=probe CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=24105\n'
                'UpTime=0-00:33:56\n')
SLURMD_C_HGX = ('NodeName=gpu001 CPUs=192 Boards=1 SocketsPerBoard=2 CoresPerSocket=48 ThreadsPerCore=2 '
                'RealMemory=2063937\nUpTime=12-03:14:15\n')


def _gpus(count, name='NVIDIA H100 80GB HBM3'):
    return {'gpus': [{'index': index, 'name': name, 'mig_enabled': False, 'mig_devices': []} for index in range(count)]}


def _record(name, memory=2063937, gres='gpu:h100:8'):
    record = parse_slurmd_c(SLURMD_C_HGX.replace('gpu001', name).replace('2063937', str(memory)))
    record['Gres'] = gres
    return record


def test_parse_slurmd_c_reads_every_hardware_value_as_int():
    assert parse_slurmd_c(SLURMD_C_HGX) == {
        'NodeName': 'gpu001', 'CPUs': 192, 'Boards': 1, 'SocketsPerBoard': 2, 'CoresPerSocket': 48,
        'ThreadsPerCore': 2, 'RealMemory': 2063937}


@pytest.mark.parametrize('text', ['', 'UpTime=1\n', 'NodeName=x CPUs=2\n', 'NodeName=x CPUs=two Boards=1\n', 42],
                         ids=['empty', 'no-nodename', 'missing-fields', 'not-numeric', 'not-text'])
def test_parse_slurmd_c_rejects_what_is_not_slurmd_output(text):
    with pytest.raises(ParseError):
        parse_slurmd_c(text)


def test_node_record_combines_slurmd_c_and_gpus():
    record = node_record(SLURMD_C_LAB, _gpus(8))
    assert record['NodeName'] == 'probe' and record['CPUs'] == 2 and record['RealMemory'] == 24105
    assert record['Gres'] == 'gpu:h100:8'
    assert node_record(SLURMD_C_LAB)['Gres'] == ''


def test_node_gres_counts_types_mig_profiles_and_caps():
    mixed = {'gpus': _gpus(2)['gpus'] + [{'index': 2, 'name': 'NVIDIA A100-SXM4-80GB'}]}
    assert node_gres(mixed) == 'gpu:h100:2,gpu:a100:1'
    mig = {'gpus': [{'index': 0, 'name': 'NVIDIA H100 80GB HBM3', 'mig_enabled': True,
                     'mig_devices': [{'profile': '1g.10gb'}, {'profile': '1g.10gb'}, {'profile': '3g.40gb'}]}]}
    assert node_gres(mig) == 'gpu:1g.10gb:2,gpu:3g.40gb:1'
    assert node_gres(_gpus(8), gpus=4) == 'gpu:h100:4'
    assert [gpu['index'] for gpu in usable_gpus(_gpus(8), 2)] == [0, 1]


def test_more_gpus_declared_than_found_is_refused():
    with pytest.raises(ValueError, match='8 GPUs declared but 4 found'):
        node_record(SLURMD_C_LAB, _gpus(4), gpus=8)
    with pytest.raises(ValueError, match='none found'):
        node_record(SLURMD_C_LAB, None, gpus=8)


def test_identical_hardware_shares_one_compressed_line():
    names = ['gpu%03d' % index for index in range(1, 129)]
    table = slurm_nodes(names, [_record(name) for name in names])
    assert slurm_node_lines(table) == [
        'NodeName=gpu[001-128] CPUs=192 Boards=1 SocketsPerBoard=2 CoresPerSocket=48 ThreadsPerCore=2 '
        'RealMemory=2063937 Gres=gpu:h100:8 CoreSpecCount=2 MemSpecLimit=32768 State=UNKNOWN']


def test_different_hardware_features_and_weights_get_their_own_lines_in_name_order():
    names = ['gpu10', 'gpu2', 'gpu1', 'gpu3', 'cpu1']
    records = [_record('gpu10', memory=1000000), _record('gpu2'), _record('gpu1'), _record('gpu3'), _record('cpu1', gres='')]
    groups = [{'name': 'fast', 'nodes': ['gpu[1-2]'], 'features': ['h100', 'ib'], 'weight': 1}]
    lines = slurm_node_lines(slurm_nodes(names, records, groups, {}))
    assert [line.split()[0] for line in lines] == ['NodeName=cpu1', 'NodeName=gpu[1-2]', 'NodeName=gpu3', 'NodeName=gpu10']
    assert 'Feature=h100,ib Weight=1' in lines[1]
    assert 'Gres=' not in lines[0] and 'Feature' not in lines[2]
    assert 'RealMemory=1000000' in lines[3]


def test_every_node_appears_exactly_once_in_the_lines():
    names = ['n%04d' % index for index in range(1, 301)]
    records = [_record(name, memory=1000 + index % 3) for index, name in enumerate(names)]
    lines = slurm_node_lines(slurm_nodes(names, records))
    expanded = [name for line in lines for name in hostlist_expand(line.split()[0][len('NodeName='):])]
    assert sorted(expanded) == sorted(names) and len(lines) == 3


def test_nodes_without_facts_come_from_the_conf_in_service_or_are_named():
    conf = ('NodeName=gpu[01-02] CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=24105 '
            'Gres=gpu:h100:8 State=UNKNOWN\n')
    table = slurm_nodes(['gpu01', 'gpu02', 'gpu03'], [None, None, _record('gpu03')], known=known_nodes(conf))
    assert [node['NodeName'] for node in table] == ['gpu01', 'gpu02', 'gpu03']
    assert table[0]['Gres'] == 'gpu:h100:8' and table[0]['CPUs'] == 2
    with pytest.raises(ValueError, match=r'no hardware facts for gpu\[04-05\]'):
        slurm_nodes(['gpu04', 'gpu05'], [None, None])
    assert slurm_nodes(['gpu04'], [None], allow_missing=True) == []


def test_a_node_given_twice_or_without_hardware_is_refused():
    with pytest.raises(ValueError, match='given twice'):
        slurm_node_lines([_record('a'), _record('a')])
    bad = _record('b')
    del bad['CPUs']
    with pytest.raises(ValueError, match='node b has no CPUs'):
        slurm_node_lines([bad])


def test_partition_lines_from_groups_and_hostlists():
    groups = {'gpu_nodes': ['gpu01', 'gpu02', 'gpu03'], 'debug_nodes': ['gpu03']}
    partitions = [
        {'name': 'gpu', 'groups': ['gpu_nodes'], 'default': True, 'max_time': 'INFINITE'},
        {'name': 'debug', 'nodes': ['gpu03'], 'max_time': '30', 'state': 'UP', 'options': {'MaxNodes': 1, 'Hidden': False}},
    ]
    assert slurm_partition_lines(partitions, groups, ['gpu01', 'gpu02', 'gpu03']) == [
        'PartitionName=gpu Nodes=gpu[01-03] Default=YES MaxTime=INFINITE State=UP',
        'PartitionName=debug Nodes=gpu03 Default=NO MaxTime=30 State=UP Hidden=NO MaxNodes=1',
    ]


def test_variable_problems_name_the_variable():
    groups = {'gpu_nodes': ['gpu01', 'gpu02'], 'slurm_compute': ['gpu01', 'gpu02']}
    problems = check_slurm_vars(
        [{'name': 'gpu', 'groups': ['gpu_nodes'], 'default': True},
         {'name': 'big', 'nodes': ['gpu[02-04]'], 'default': True},
         {'name': 'gpu', 'groups': ['nope']}],
        [{'name': 'h100', 'nodes': ['gpu[01-02]']}, {'name': 'a100', 'nodes': ['gpu02']}],
        ['gpu01', 'gpu02'], groups)
    text = ' | '.join(problems)
    assert "slurm_partitions[1] (big).nodes: gpu[03-04] not in slurm_compute" in text
    assert "slurm_partitions[2].name: partition 'gpu' is defined twice" in text
    assert "slurm_partitions[2] (gpu).groups: no inventory group 'nope'" in text
    assert 'more than one default partition (gpu, big)' in text
    assert "slurm_node_groups: gpu02 in both 'h100' and 'a100'" in text
    assert check_slurm_vars([{'name': 'gpu', 'groups': ['gpu_nodes']}], [], ['gpu01', 'gpu02'], groups) == []
    assert node_group_of([{'name': 'h100', 'nodes': ['gpu[01-02]']}], 'gpu02', groups)['name'] == 'h100'
    assert node_group_of([], 'gpu02', groups) is None


OLD_CONF = """# managed
ClusterName=c
SlurmctldHost=ctl
SelectType=select/cons_tres
SchedulerParameters=bf_continue
NodeName=gpu[01-02] CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=24105 State=UNKNOWN
PartitionName=gpu Nodes=gpu[01-02] Default=YES MaxTime=INFINITE State=UP
"""


@pytest.mark.parametrize('change, reasons', [
    (lambda text: text, []),
    (lambda text: text.replace('MaxTime=INFINITE', 'MaxTime=60'), []),
    (lambda text: text.replace('bf_continue', 'bf_continue,max_rpc_cnt=150'), []),
    (lambda text: text.replace('gpu[01-02] CPUs', 'gpu[01-03] CPUs'), ['node definitions']),
    (lambda text: text.replace('select/cons_tres', 'select/linear'), ['SelectType']),
    (lambda text: text + 'ProctrackType=proctrack/cgroup\n', ['ProctrackType']),
], ids=['same', 'partition', 'scheduler-parameters', 'node-added', 'plugin', 'plugin-added'])
def test_restart_only_where_slurm_needs_it(change, reasons):
    assert restart_reasons(OLD_CONF, change(OLD_CONF)) == reasons


def test_no_old_conf_needs_no_restart_and_conf_parses_back():
    assert restart_reasons('', OLD_CONF) == []
    parsed = parse_slurm_conf(OLD_CONF)
    assert parsed['params']['clustername'] == ['c']
    assert sorted(parsed['nodes']) == ['gpu01', 'gpu02'] and parsed['nodes']['gpu01']['RealMemory'] == 24105
    assert list(parsed['partitions']) == ['gpu']
    with pytest.raises(ParseError):
        parse_slurm_conf('this is not slurm.conf\n')


def test_affinity_the_node_does_not_have_is_dropped():
    info = {'gpus': [{'index': index, 'name': 'NVIDIA H100 80GB HBM3', 'cpu_affinity': '0-55,112-167'} for index in range(2)]}
    kept = gpu_info_for_node(info, cpus=224)
    assert not kept['affinity_dropped'] and kept['gpus'][0]['cpu_affinity'] == '0-55,112-167'
    dropped = gpu_info_for_node(info, gpus=1, cpus=2)
    assert dropped['affinity_dropped'] and len(dropped['gpus']) == 1 and dropped['gpus'][0]['cpu_affinity'] is None
    assert info['gpus'][0]['cpu_affinity'] == '0-55,112-167'


# ---------------------------------------------------------------------------
# What a node keeps for itself, and what a GPU job gets when it does not ask
# ---------------------------------------------------------------------------

def _lab(name):
    record = parse_slurmd_c(SLURMD_C_LAB.replace('probe', name))
    record['Gres'] = 'gpu:h100:8'
    return record


@pytest.mark.parametrize('slurmd_c, mem, cores, expected', [
    # HGX H100 (2 x 48 cores, 2 TB): 2% is 41 GB, capped at 32 GiB; a core per socket
    (SLURMD_C_HGX, 'auto', 'auto', (2, 32768)),
    # the lab's 2-core, 24 GB container: the 4 GiB floor, no core (sockets under 16 cores)
    (SLURMD_C_LAB, 'auto', 'auto', (0, 4096)),
    # a 512 GB node: 2% = 10,485 MB
    (SLURMD_C_HGX.replace('2063937', '524288'), 'auto', 'auto', (2, 10485)),
    # a tiny node: the floor would be half the node or more, so nothing
    (SLURMD_C_LAB.replace('24105', '6000'), 'auto', 'auto', (0, 0)),
    (SLURMD_C_HGX, 0, '0', (0, 0)),
    (SLURMD_C_HGX, '8192', 4, (4, 8192)),
])
def test_node_spec_keeps_memory_and_cores_for_the_node_daemons(slurmd_c, mem, cores, expected):
    assert node_spec(parse_slurmd_c(slurmd_c), mem, cores) == expected


def test_node_spec_refuses_to_leave_jobs_nothing():
    with pytest.raises(ValueError, match='core_spec_count 96 leaves none of its 96 cores'):
        node_spec(parse_slurmd_c(SLURMD_C_HGX), 'auto', 96)
    with pytest.raises(ValueError, match='mem_spec_limit 24105 MB leaves none'):
        node_spec(parse_slurmd_c(SLURMD_C_LAB), 24105, 0)
    with pytest.raises(ValueError, match=r"mem_spec_limit must be auto or a whole number >= 0, got '4G'"):
        node_spec(parse_slurmd_c(SLURMD_C_LAB), '4G', 0)


def test_node_lines_carry_the_spec_and_a_group_may_override_it():
    groups = [{'name': 'small', 'nodes': ['gpu2'], 'mem_spec_limit': 0, 'core_spec_count': 0}]
    lines = slurm_node_lines(slurm_nodes(['gpu1', 'gpu2'], [_record('gpu1'), _record('gpu2')], groups, {}))
    assert lines[0].endswith('Gres=gpu:h100:8 CoreSpecCount=2 MemSpecLimit=32768 State=UNKNOWN')
    assert lines[1].endswith('Gres=gpu:h100:8 State=UNKNOWN')
    table = slurm_nodes(['gpu1'], [_record('gpu1')], mem_spec_limit=16384, core_spec_count=1)
    assert (table[0]['CoreSpecCount'], table[0]['MemSpecLimit']) == ('1', '16384')


def test_gpu_jobs_get_a_share_of_the_smallest_gpu_node_by_default():
    table = slurm_nodes(['gpu1', 'gpu2', 'cpu1'], [_record('gpu1'), _record('gpu2', memory=1031968), _record('cpu1', gres='')])
    # gpu2 is the smaller: (1031968 - 20639) / 8 = 126416 MB; (192 - 2 x 2) / 8 = 23 CPUs per GPU
    assert gpu_defaults(['gpu1', 'gpu2', 'cpu1'], table) == {'DefMemPerGPU': 126416, 'DefCpuPerGPU': 23}
    assert gpu_defaults(['gpu1'], table) == {'DefMemPerGPU': (2063937 - 32768) // 8, 'DefCpuPerGPU': 23}
    assert gpu_defaults(['cpu1'], table) == {}
    assert gpu_defaults(['gpu1'], table, 0, 0) == {}
    assert gpu_defaults(['gpu1'], table, 200000, 'auto') == {'DefMemPerGPU': 200000, 'DefCpuPerGPU': 23}


def test_lab_nodes_get_memory_per_gpu_but_no_cpu_per_gpu():
    """2 CPUs and 8 GPUs: a whole CPU per GPU would leave six GPUs that no job can have."""
    table = slurm_nodes(['gpu01'], [_lab('gpu01')])
    assert gpu_defaults(['gpu01'], table) == {'DefMemPerGPU': (24105 - 4096) // 8}


def test_partition_lines_carry_the_gpu_defaults_and_options_win():
    groups = {'gpu_nodes': ['gpu01', 'gpu02']}
    table = slurm_nodes(['gpu01', 'gpu02'], [_lab('gpu01'), _lab('gpu02')])
    partitions = [{'name': 'gpu', 'groups': ['gpu_nodes'], 'default': True},
                  {'name': 'big', 'nodes': ['gpu01'], 'options': {'DefMemPerGPU': 4000}},
                  {'name': 'none', 'nodes': ['gpu02'], 'def_mem_per_gpu': 0}]
    assert slurm_partition_lines(partitions, groups, nodes=table) == [
        'PartitionName=gpu Nodes=gpu[01-02] Default=YES State=UP DefMemPerGPU=2501',
        'PartitionName=big Nodes=gpu01 Default=NO State=UP DefMemPerGPU=4000',
        'PartitionName=none Nodes=gpu02 Default=NO State=UP',
    ]


def test_a_node_left_out_without_facts_is_in_no_line_and_no_partition():
    """A node whose hardware falls short is left out of the run; unknown to Slurm, it cannot be defined."""
    table = slurm_nodes(['gpu01', 'gpu02'], [_lab('gpu01'), None], optional=['gpu02'])
    assert [node['NodeName'] for node in table] == ['gpu01']
    lines = slurm_partition_lines([{'name': 'gpu', 'nodes': ['gpu[01-02]']}], {}, nodes=table)
    assert lines[0].startswith('PartitionName=gpu Nodes=gpu01 ')
    with pytest.raises(ValueError, match='no hardware facts for gpu02'):
        slurm_nodes(['gpu01', 'gpu02'], [_lab('gpu01'), None])


def test_resource_settings_are_checked_by_name():
    groups = {'slurm_compute': ['gpu01']}
    problems = check_slurm_vars(
        [{'name': 'gpu', 'nodes': ['gpu01'], 'def_cpu_per_gpu': -1}],
        [{'name': 'hgx', 'nodes': ['gpu01'], 'mem_spec_limit': '4G'}], ['gpu01'], groups,
        settings={'slurm_mem_spec_limit': 'auto', 'slurm_core_spec_count': 'two', 'slurm_def_mem_per_gpu': 0,
                  'slurm_def_cpu_per_gpu': '8'})
    assert problems == [
        "slurm_core_spec_count must be auto or a whole number >= 0, got 'two'",
        'slurm_partitions[0] (gpu).def_cpu_per_gpu must be auto or a whole number >= 0, got -1',
        "slurm_node_groups[0] (hgx).mem_spec_limit must be auto or a whole number >= 0, got '4G'",
    ]


def test_two_controllers_need_a_shared_state_directory():
    settings = {'controllers': ['ctl01', 'ctl02'], 'slurm_state_save_shared': False,
                'slurm_state_save_location': '/var/lib/slurm/slurmctld'}
    problems = check_slurm_vars([], [], [], {}, settings=settings)
    assert problems == [
        'slurm_controller has 2 hosts (ctl01, ctl02) but slurm_state_save_shared is false: the backup takes over from '
        "slurmctld's saved state, so slurm_state_save_location (/var/lib/slurm/slurmctld) must be one directory on shared "
        'storage every controller mounts; mount it and set slurm_state_save_shared true, or list one controller']
    assert check_slurm_vars([], [], [], {}, settings=dict(settings, slurm_state_save_shared=True)) == []
    assert check_slurm_vars([], [], [], {}, settings=dict(settings, controllers=['ctl01'])) == []


# ---- nodes short of GPUs (gpu_fit): left out and drained, or the variable is wrong

def _found_gpus(count):
    return {'__slurm_gpu_info': {'changed': False, 'gpus': [{'index': n} for n in range(count)]}}


FIT_GROUPS = {'gpu_nodes': ['gpu01', 'gpu02', 'gpu03'], 'cpu_nodes': ['cpu01'], 'slurm_compute': ['gpu01', 'gpu02', 'gpu03', 'cpu01']}


def test_a_node_short_of_gpus_is_unfit_and_the_others_fit():
    hostvars = {'gpu01': _found_gpus(8), 'gpu02': _found_gpus(8), 'gpu03': _found_gpus(7), 'cpu01': {}}
    groups = [{'name': 'hgx', 'groups': ['gpu_nodes'], 'gpus': 8}, {'name': 'cpu', 'groups': ['cpu_nodes']}]
    out = gpu_fit(['gpu01', 'gpu02', 'gpu03', 'cpu01'], hostvars, groups, FIT_GROUPS)
    assert out == {'unfit': {'gpu03': '7 of 8 GPUs (slurm_node_groups hgx)'}, 'wrong': []}


def test_a_node_without_nvidia_smi_says_so():
    hostvars = {'gpu01': _found_gpus(8), 'gpu02': {'__slurm_gpu_info': {'skipped': True}}, 'gpu03': {}}
    out = gpu_fit(['gpu01', 'gpu02', 'gpu03'], hostvars, [{'name': 'hgx', 'groups': ['gpu_nodes'], 'gpus': 8}], FIT_GROUPS)
    assert out['unfit'] == {'gpu02': '0 of 8 GPUs (slurm_node_groups hgx), no nvidia-smi',
                            'gpu03': '0 of 8 GPUs (slurm_node_groups hgx), no nvidia-smi'}
    assert out['wrong'] == []


def test_a_group_that_fits_none_of_its_nodes_is_a_wrong_variable():
    hostvars = dict((host, _found_gpus(8)) for host in FIT_GROUPS['gpu_nodes'])
    out = gpu_fit(FIT_GROUPS['gpu_nodes'], hostvars, [{'name': 'big', 'groups': ['gpu_nodes'], 'gpus': 16}], FIT_GROUPS)
    assert out['wrong'] == ['slurm_node_groups (big).gpus is 16 but none of its 3 nodes in this play has that many '
                            '(8 of 16 GPUs (slurm_node_groups big); 8 of 16 GPUs (slurm_node_groups big); '
                            '8 of 16 GPUs (slurm_node_groups big))']
    # one node alone in the play (a run limited to it) is a node fault, never a wrong variable
    assert gpu_fit(['gpu01'], hostvars, [{'name': 'big', 'groups': ['gpu_nodes'], 'gpus': 16}], FIT_GROUPS)['wrong'] == []


def test_no_gpu_count_declared_means_every_node_fits():
    out = gpu_fit(['gpu01', 'gpu02'], {'gpu01': _found_gpus(0), 'gpu02': {}}, [{'name': 'hgx', 'groups': ['gpu_nodes']}], FIT_GROUPS)
    assert out == {'unfit': {}, 'wrong': []}
