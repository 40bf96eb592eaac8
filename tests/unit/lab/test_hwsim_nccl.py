"""lab/hwsim nccl-tests stand-ins, parsed with the collection's parser and compared with a real 2.13 capture."""
import io
import os
import re
import sys

import pytest

from _paths import REPO, real_fixture

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))

# pylint: disable=wrong-import-position
from ansible_collections.aicluster.infra.plugins.module_utils.nccl_tests import parse_nccl_tests  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.verify import nccl as verify_nccl  # noqa: E402
from hwsim import cli, profile as profiles  # noqa: E402
from hwsim.testing import PROFILES, make_lab  # noqa: E402

COLLECTIVES = ('all_reduce', 'all_gather', 'reduce_scatter')
EIGHT_GB = 8 * 1024 ** 3
ARGS = ['-b', '8', '-e', '8G', '-f', '2', '-g', '8']


def run(lab, host, argv, **extra):
    out = io.StringIO()
    err = io.StringIO()
    status = cli.main(list(argv), environ=dict(lab.env(host), **extra), stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def row_at(parsed, size):
    return [row for row in parsed['rows'] if row['size'] == size][0]


def close(value, expected):
    """busbw at 8 GiB reaches the bound within 0.2% (the latency term of the ramp)."""
    return expected * 0.998 <= value <= expected


@pytest.mark.parametrize('name', PROFILES)
@pytest.mark.parametrize('collective', COLLECTIVES)
@pytest.mark.parametrize('scenario', ['healthy', 'nccl-wrong', 'nccl-slow'])
def test_single_node_busbw_faults_and_exit(tmp_path, name, collective, scenario):
    lab = make_lab(tmp_path, name, compute=1)
    peak = profiles.load(name)['nccl']['%s_busbw_gbps' % collective]
    if scenario == 'nccl-wrong':
        assert lab.run('gpu01', ['hwsim', 'fault', 'nccl-wrong', '7'])[0] == 0
    if scenario == 'nccl-slow':
        assert lab.run('gpu01', ['hwsim', 'fault', 'nccl-slow', '0.5'])[0] == 0
        peak *= 0.5
    status, out, err = run(lab, 'gpu01', ['%s_perf' % collective] + ARGS)
    parsed = parse_nccl_tests(out)
    assert err == '' and parsed['errors'] == []
    assert len(parsed['ranks']) == 8 and {rank['host'] for rank in parsed['ranks']} == {'gpu01'}
    big = row_at(parsed, EIGHT_GB)
    assert close(big['oop_busbw'], peak), (big, peak)
    factor = 7 / 8 * (2 if collective == 'all_reduce' else 1)
    assert abs(big['oop_algbw'] * factor - big['oop_busbw']) < 0.02
    busbws = [row['oop_busbw'] for row in parsed['rows']]
    assert busbws == sorted(busbws) and busbws[0] < 1
    if scenario == 'nccl-wrong':
        large = [row for row in parsed['rows'] if row['size'] >= 128 * 1024 ** 2]
        assert all(row['oop_wrong'] == 7 and row['ip_wrong'] == 7 for row in large)
        assert all(row['oop_wrong'] == 0 for row in parsed['rows'] if row not in large)
        assert parsed['out_of_bounds'] == 2 * len(large) and '# Out of bounds values : %d FAILED\n' % (2 * len(large)) in out
        assert status == 1
    else:
        assert status == 0 and parsed['out_of_bounds'] == 0


def test_multi_node_slurm_rank0_prints_all_ranks_others_nothing(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    slurm = {'SLURM_NTASKS': '2', 'SLURM_JOB_NODELIST': 'gpu[01-02]'}
    status, out, _err = run(lab, 'gpu01', ['all_reduce_perf'] + ARGS, SLURM_PROCID='0', SLURM_LOCALID='0', PMIX_RANK='0', **slurm)
    parsed = parse_nccl_tests(out)
    assert status == 0 and [rank['rank'] for rank in parsed['ranks']] == list(range(16))
    assert [rank['host'] for rank in parsed['ranks']] == ['gpu01'] * 8 + ['gpu02'] * 8
    # 16 ranks over 2 hosts: the fabric (8 x 400 Gb/s x 0.97 / 8 = 388 GB/s) bounds the 460 GB/s of NVLink.
    assert close(row_at(parsed, EIGHT_GB)['oop_busbw'], 388.0)
    assert run(lab, 'gpu02', ['all_reduce_perf'] + ARGS, SLURM_PROCID='1', SLURM_LOCALID='0', PMIX_RANK='1', **slurm)[:2] == (0, '')
    # One process per GPU under mpirun: 16 processes, hosts from HWSIM_NCCL_HOSTS.
    mpi = {'OMPI_COMM_WORLD_SIZE': '16', 'HWSIM_NCCL_HOSTS': 'gpu01,gpu02'}
    status, out, _err = run(lab, 'gpu01', ['all_gather_perf', '-b', '1G', '-e', '8G', '-f', '2'], OMPI_COMM_WORLD_RANK='0', **mpi)
    ranks = parse_nccl_tests(out)['ranks']
    assert status == 0 and len(ranks) == 16 and ranks[9]['host'] == 'gpu02' and ranks[9]['device'] == 1
    assert run(lab, 'gpu02', ['all_gather_perf'], OMPI_COMM_WORLD_RANK='9', **mpi)[:2] == (0, '')


def test_srun_without_pmi_runs_each_task_alone(tmp_path):
    """srun with no PMI plugin: each task of an MPI build is a singleton and prints its own one-node table (the
    field condition behind nccl.multi_node_launch); with --mpi=pmi2 (PMI_RANK) the same launch is one job."""
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    slurm = {'SLURM_NTASKS': '2', 'SLURM_JOB_NODELIST': 'gpu[01-02]'}
    outs = [run(lab, host, ['all_reduce_perf'] + ARGS, SLURM_PROCID=str(number), SLURM_LOCALID='0', **slurm)
            for number, host in enumerate(['gpu01', 'gpu02'])]
    assert [status for status, _out, _err in outs] == [0, 0]
    parsed = parse_nccl_tests(outs[0][1] + outs[1][1])
    assert [rank['rank'] for rank in parsed['ranks']] == list(range(8)) * 2
    assert sorted(set(rank['host'] for rank in parsed['ranks'])) == ['gpu01', 'gpu02']
    assert close(row_at(parsed, EIGHT_GB)['oop_busbw'], 460)  # NVLink inside each node: looks like a good run
    wired = run(lab, 'gpu01', ['all_reduce_perf'] + ARGS, SLURM_PROCID='0', PMI_RANK='0', PMI_SIZE='2', **slurm)[1]
    assert [rank['host'] for rank in parse_nccl_tests(wired)['ranks']] == ['gpu01'] * 8 + ['gpu02'] * 8


def test_multi_node_slow_host_port_down_and_hca_bw_low(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    slurm = {'SLURM_PROCID': '0', 'PMIX_RANK': '0', 'SLURM_NTASKS': '2', 'SLURM_JOB_NODELIST': 'gpu[01-02]'}
    assert lab.run('gpu02', ['hwsim', 'fault', 'port-down', 'mlx5_3'])[0] == 0
    parsed = parse_nccl_tests(run(lab, 'gpu01', ['all_reduce_perf'] + ARGS, **slurm)[1])
    assert close(row_at(parsed, EIGHT_GB)['oop_busbw'], 7 * 400 * 0.97 / 8)
    assert lab.run('gpu01', ['hwsim', 'fault', 'hca-bw-low', 'mlx5_0', '0.5'])[0] == 0
    parsed = parse_nccl_tests(run(lab, 'gpu01', ['all_reduce_perf'] + ARGS, **slurm)[1])
    assert close(row_at(parsed, EIGHT_GB)['oop_busbw'], 7.5 * 400 * 0.97 / 8 - 0.5 * 400 * 0.97 / 8)
    assert lab.run('gpu02', ['hwsim', 'fault', 'nccl-slow', '0.25'])[0] == 0
    parsed = parse_nccl_tests(run(lab, 'gpu01', ['all_reduce_perf'] + ARGS, **slurm)[1])
    assert close(row_at(parsed, EIGHT_GB)['oop_busbw'], 460 * 0.25)
    single = parse_nccl_tests(run(lab, 'gpu01', ['all_reduce_perf'] + ARGS)[1])
    assert close(row_at(single, EIGHT_GB)['oop_busbw'], 460)


def test_gpu_missing_fails_like_cuda(tmp_path):
    lab = make_lab(tmp_path, 'hgx-a100-ib', compute=1)
    assert lab.run('gpu01', ['hwsim', 'fault', 'gpu-missing', '3'])[0] == 0
    status, out, _err = run(lab, 'gpu01', ['all_reduce_perf'] + ARGS)
    assert status == 2
    assert re.search(r"^gpu01: Test CUDA failure common\.cu:\d+ 'invalid device ordinal'$", out, re.M)
    assert re.search(r'^ \.\. gpu01 pid \d+: Test failure common\.cu:\d+$', out, re.M)
    assert parse_nccl_tests(out)['errors']
    assert run(lab, 'gpu01', ['all_reduce_perf', '-g', '7', '-e', '64M'])[0] == 0
    status, out, _err = run(lab, 'ctl01', ['all_reduce_perf'])
    assert status == 2 and "'no CUDA-capable device is detected'" in out


def test_options_and_size_errors(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    out = run(lab, 'gpu01', ['all_reduce_perf', '-b', '128M', '-e', '128M', '-g', '8', '-n', '50', '-w', '3', '-c', '0',
                             '-d', 'bfloat16', '-o', 'max'])[1]
    assert '# nThread 1 nGpus 8 minBytes 134217728 maxBytes 134217728 step: 1048576(bytes) warmup iters: 3 iters: 50 ' in out
    row = parse_nccl_tests(out)['rows'][0]
    assert (row['size'], row['count'], row['type'], row['redop']) == (134217728, 67108864, 'bfloat16', 'max')
    assert row['oop_wrong'] is None and ' N/A' in out
    status, _out, err = run(lab, 'gpu01', ['all_reduce_perf', '-b', '8X'])
    assert status == 255 and err == "invalid size specified for 'minbytes'\n"
    status, _out, err = run(lab, 'gpu01', ['all_reduce_perf', '-b', '1G', '-e', '1M'])
    assert status == 255 and err.startswith("invalid sizes for 'minbytes' and 'maxbytes'")


def _shape(text):
    """Header lines with numbers, names and host specifics blanked."""
    lines = []
    for line in text.splitlines():
        if not line.startswith('#') or line.startswith('# nccl-tests version') or line.startswith('# Collective test'):
            continue
        if line.startswith('#  Rank'):
            line = re.sub(r'\[[0-9a-f:]+\]', '[BUS]', re.sub(r'Pid +\d+ on +\S+', 'Pid P on H', line))
        lines.append(re.sub(r'\d+(\.\d+)?', 'N', line).rstrip())
        if line.startswith('# Avg bus bandwidth'):
            break  # the capture ends here (older 2.13 builds print no "Collective test concluded")
    return lines


def test_header_structure_matches_the_real_2_13_capture(tmp_path):
    real = real_fixture('nccl-tests/gcp-a3mega-2node-16xh100-tcpxo-allreduce.txt')
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    ours = run(lab, 'gpu01', ['all_reduce_perf', '-b', '8', '-e', '8G', '-f', '2', '-g', '1'], SLURM_PROCID='0', PMIX_RANK='0', SLURM_NTASKS='16',
               SLURM_JOB_NODELIST='gpu[01-02]')[1]
    assert _shape(ours) == _shape(real)
    real_table = [line for line in real.splitlines() if line.startswith('#') and 'size' in line or 'out-of-place' in line]
    our_table = [line for line in ours.splitlines() if line.startswith('#') and 'size' in line or 'out-of-place' in line]
    assert our_table == real_table
    real_rows = [line for line in real.splitlines() if not line.startswith('#') and line.strip()]
    our_rows = [line for line in ours.splitlines() if not line.startswith('#') and line.strip()]
    assert len(our_rows) == len(real_rows) == 31
    assert [len(line) for line in our_rows[-3:]] == [len(line) for line in real_rows[-3:]]
    parsed = parse_nccl_tests(ours)
    assert parsed['nccl_tests_version'] == '2.13.11' and len(parsed['ranks']) == 16 and parsed['ranks'][8]['host'] == 'gpu02'


def test_ring_reads_below_nvls(tmp_path):
    """H100 SXM: about 460 GB/s with NVLink SHARP, about 370 with NCCL_ALGO=Ring or NCCL_NVLS_ENABLE=0."""
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    auto = parse_nccl_tests(run(lab, 'gpu01', ['all_reduce_perf'] + ARGS)[1])
    ring = parse_nccl_tests(run(lab, 'gpu01', ['all_reduce_perf'] + ARGS, NCCL_ALGO='Ring')[1])
    off = parse_nccl_tests(run(lab, 'gpu01', ['all_reduce_perf'] + ARGS, NCCL_NVLS_ENABLE='0')[1])
    nvls = parse_nccl_tests(run(lab, 'gpu01', ['all_reduce_perf'] + ARGS, NCCL_ALGO='NVLS')[1])
    assert close(row_at(auto, EIGHT_GB)['oop_busbw'], 460) and close(row_at(nvls, EIGHT_GB)['oop_busbw'], 460)
    assert close(row_at(ring, EIGHT_GB)['oop_busbw'], 370) and close(row_at(off, EIGHT_GB)['oop_busbw'], 370)


def _wired(lab, hosts, argv, **extra):
    """(status, stdout) of each process of one PMI-wired srun over ``hosts`` (one process per host)."""
    slurm = {'SLURM_NTASKS': str(len(hosts)), 'SLURM_JOB_NODELIST': ','.join(hosts)}
    return [run(lab, host, argv, SLURM_PROCID=str(number), PMIX_RANK=str(number), SLURM_LOCALID='0', **dict(slurm, **extra))[:2]
            for number, host in enumerate(hosts)]


# hgx-h100-ib-12dev: GPU fabric mlx5_0, 3, 4, 5, 6, 9, 10, 11; storage mlx5_1, 2, 7, 8 (Ethernet)
@pytest.mark.parametrize('value,devices', [
    ('', ['mlx5_0', 'mlx5_10', 'mlx5_11', 'mlx5_3', 'mlx5_4', 'mlx5_5', 'mlx5_6', 'mlx5_9']),
    ('mlx5_1', ['mlx5_10', 'mlx5_11']),                # a prefix: mlx5_1 (storage) adds nothing, mlx5_10/11 come along
    ('=mlx5_1', []),                                  # exact: the storage port only, mlx5_10/11 not matched: sockets
    ('=mlx5_1,mlx5_0', ['mlx5_0']),                   # '=' applies to the whole list
    ('=mlx5_0:1,mlx5_10:1', ['mlx5_0', 'mlx5_10']),
    ('=mlx5_0:2', []),                                # no port 2
    ('^mlx5_1', ['mlx5_0', 'mlx5_3', 'mlx5_4', 'mlx5_5', 'mlx5_6', 'mlx5_9']),
    ('^=mlx5_1', ['mlx5_0', 'mlx5_10', 'mlx5_11', 'mlx5_3', 'mlx5_4', 'mlx5_5', 'mlx5_6', 'mlx5_9']),
    ('mlx5_2,mlx5_7', []),                            # storage/management HCAs only: sockets
], ids=['unset', 'prefix', 'exact-storage', 'exact-list', 'exact-ports', 'wrong-port', 'exclude-prefix', 'exclude-exact', 'storage-only'])
def test_nccl_ib_hca_selects_devices_as_nccl_does(tmp_path, value, devices):
    lab = make_lab(tmp_path, 'hgx-h100-ib-12dev')
    (status, out), (other, rest) = _wired(lab, ['gpu01', 'gpu02'], ['all_reduce_perf'] + ARGS, NCCL_IB_HCA=value, NCCL_DEBUG='INFO')
    assert status == other == 0 and rest.startswith('gpu02:') and 'NCCL INFO' in rest and '#' not in rest
    busbw = row_at(parse_nccl_tests(out), EIGHT_GB)['oop_busbw']
    if devices:
        listed = re.search(r'^gpu01:\d+:\d+ \[0\] NCCL INFO NET/IB : Using (.*) \[RO\]; OOB eth0:192\.0\.2\.\d+<0>$', out, re.M).group(1)
        assert re.findall(r'\[\d+\](mlx5_\d+):1/IB', listed) == devices
        assert verify_nccl.networks(out) == ['IB'] and 'Using network Socket' not in out
        assert close(busbw, min(460.0, len(devices) * 400 * 0.97 / 8))
    else:
        assert re.search(r'^gpu01:\d+:\d+ \[0\] NCCL INFO NET/IB : No device found\.$', out, re.M)
        assert re.search(r'^gpu01:\d+:\d+ \[0\] NCCL INFO NET/Socket : Using \[0\]eth0:192\.0\.2\.\d+<0>$', out, re.M)
        assert 'NCCL INFO Using network Socket' in out and 'NCCL INFO Using network Socket' in rest
        assert close(busbw, 1.25)


def test_socket_fall_back_fails_the_launch_check(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=3)
    hosts = ['gpu01', 'gpu02', 'gpu03']
    outs = _wired(lab, hosts, ['all_reduce_perf', '-b', '1G', '-e', '8G', '-f', '2', '-g', '8'], NCCL_IB_HCA='=mlx5_1:1',
                  NCCL_DEBUG='INFO', NCCL_DEBUG_SUBSYS='INIT,NET')
    stdout = ''.join(out for _status, out in outs)
    result = verify_nccl.launch_result(parse_nccl_tests(stdout), {'nodes': hosts, 'ranks': 24}, stdout)
    assert not result['passed'] and 'fell back to sockets' in result['message']
    wired = _wired(lab, hosts, ['all_reduce_perf', '-b', '1G', '-e', '8G', '-f', '2', '-g', '8'],
                   NCCL_IB_HCA='=mlx5_0:1,mlx5_3:1', NCCL_DEBUG='INFO')
    good = ''.join(out for _status, out in wired)
    result = verify_nccl.launch_result(parse_nccl_tests(good), {'nodes': hosts, 'ranks': 24}, good)
    assert result['passed'] and result['message'].endswith('network IB')
    assert close(row_at(parse_nccl_tests(good), EIGHT_GB)['oop_busbw'], 2 * 400 * 0.97 / 8)


def test_nccl_version_line_as_nccl_debug_says(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    quiet = _wired(lab, ['gpu01', 'gpu02'], ['all_reduce_perf'] + ARGS)
    assert 'NCCL version' not in quiet[0][1] and quiet[1][1] == ''
    assert parse_nccl_tests(quiet[0][1])['nccl_version'] == '2.21.5'  # from nccl-library=22105
    for level in ('VERSION', 'WARN'):
        (status, out), (_other, rest) = _wired(lab, ['gpu01', 'gpu02'], ['all_reduce_perf'] + ARGS, NCCL_DEBUG=level)
        assert status == 0 and re.search(r'^NCCL version 2\.21\.5\+cuda12\.2$', out, re.M) and rest == ''
        assert out.index('NCCL version 2.21.5') > out.index('#  Rank 15') and 'NCCL INFO' not in out
    (status, out), (_other, rest) = _wired(lab, ['gpu01', 'gpu02'], ['all_reduce_perf'] + ARGS, NCCL_DEBUG='info')
    assert re.search(r'^gpu01:\d+:\d+ \[0\] NCCL INFO NCCL version 2\.21\.5\+cuda12\.2$', out, re.M)
    assert 'NCCL version' not in rest and rest.count('NCCL INFO') == 2 and rest.startswith('gpu02:')
    parsed = parse_nccl_tests(out)
    assert parsed['nccl_version'] == '2.21.5' and len(parsed['ranks']) == 16 and parsed['errors'] == []


def test_rank_error_fails_the_multi_node_run_on_that_host_only(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=3)
    hosts = ['gpu01', 'gpu02', 'gpu03']
    assert lab.run('gpu02', ['hwsim', 'fault', 'nccl-rank-error', '3'])[0] == 0
    # alone, gpu02 passes: the fault is on its inter-node path
    status, out, _err = run(lab, 'gpu02', ['all_reduce_perf'] + ARGS)
    assert status == 0 and parse_nccl_tests(out)['errors'] == []
    outs = _wired(lab, hosts, ['all_reduce_perf', '-b', '1G', '-e', '8G', '-f', '2', '-g', '8'], NCCL_DEBUG='WARN')
    assert [status for status, _out in outs] == [3, 3, 3]
    assert re.search(r"^gpu02: Test NCCL failure common\.cu:\d+ 'unhandled system error \(run with NCCL_DEBUG=INFO for details\)"
                     r" / Call to ibv_reg_mr_iova2 failed with error Bad address'$", outs[1][1], re.M)
    assert re.search(r'^gpu02:\d+:\d+ \[3\] misc/ibvwrap\.cc:\d+ NCCL WARN Call to ibv_reg_mr_iova2', outs[1][1], re.M)
    assert re.search(r"^gpu03: Test NCCL failure common\.cu:\d+ 'remote process exited or there was a network error / ",
                     outs[2][1], re.M)
    stdout = ''.join(out for _status, out in outs)
    parsed = parse_nccl_tests(stdout)
    assert len(parsed['ranks']) == 24 and parsed['rows'] == [] and len(parsed['warnings']) == 3
    assert [(f['host'], f['remote']) for f in parsed['failures']] == [('gpu01', True), ('gpu02', False), ('gpu03', True)]
    expected = {'participants': hosts, 'busbw_table': {'h100': 300}, 'model': 'NVIDIA H100 80GB HBM3', 'node_ranks': 8,
                'bisect': True}
    multi = verify_nccl.decide_nccl_multi_node({'rc': 3, 'stdout': stdout, 'stderr': 'srun: error: gpu02: task 1: Exited with exit code 3'},
                                               expected)
    assert sorted(multi['fleet']) == ['gpu02'] and not multi['cluster'][-1]['passed']
    # srun's exit status is the launcher's error: the launch check is not judged, the run fails on gpu02's rank
    assert [r['check'] for r in multi['cluster']] == ['nccl.multi_node_busbw'] and 'gpu02' in multi['cluster'][-1]['message']
    launched = verify_nccl.decide_nccl_multi_node({'rc': 0, 'stdout': stdout}, expected)
    assert launched['cluster'][0]['check'] == 'nccl.multi_node_launch' and launched['cluster'][0]['passed']
    # without NCCL_DEBUG the WARN lines are gone, nccl-tests' own lines stay
    quiet = ''.join(out for _status, out in _wired(lab, hosts, ['all_reduce_perf', '-b', '1G', '-e', '8G', '-g', '8']))
    assert 'NCCL WARN' not in quiet and sorted(verify_nccl.decide_nccl_multi_node({'rc': 0, 'stdout': quiet}, expected)['fleet']) == ['gpu02']
    # a run that does not drive GPU 3 of gpu02 (one GPU per node) is not hit
    assert [status for status, _out in _wired(lab, hosts, ['all_reduce_perf', '-b', '1G', '-e', '1G', '-g', '1'])] == [0, 0, 0]
