"""lab/hwsim nccl-tests: NCCL's environment (/etc/nccl.conf read as NCCL does), its NCCL_DEBUG=INFO network lines,
the RoCE GID index it uses and fault gid-index-wrong; judged by the collection's parser and check nccl.env."""
import io
import os
import re
import sys

import pytest

from _paths import REPO

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))

# pylint: disable=wrong-import-position
from ansible_collections.aicluster.infra.plugins.module_utils.nccl_debug import parse_nccl_debug  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.nccl_tests import parse_nccl_tests  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.verify import nccl as verify_nccl  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.verify.nccl_env import decide_nccl_env  # noqa: E402
from hwsim import cli  # noqa: E402
from hwsim.model import Context  # noqa: E402
from hwsim.testing import make_lab  # noqa: E402
from hwsim.tools import nccl as nccl_tool  # noqa: E402

ARGS = ['all_reduce_perf', '-b', '1G', '-e', '8G', '-f', '2', '-g', '8']
DEBUG = {'NCCL_DEBUG': 'INFO', 'NCCL_DEBUG_SUBSYS': 'INIT,NET'}
HOSTS = ['gpu01', 'gpu02']


def run(lab, host, argv, **extra):
    out, err = io.StringIO(), io.StringIO()
    status = cli.main(list(argv), environ=dict(lab.env(host), **extra), stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def wired(lab, hosts, argv, **extra):
    """[(status, stdout)] of one PMI-wired srun over ``hosts`` (one process per host)."""
    slurm = {'SLURM_NTASKS': str(len(hosts)), 'SLURM_JOB_NODELIST': ','.join(hosts)}
    return [run(lab, host, argv, SLURM_PROCID=str(number), PMIX_RANK=str(number), **dict(slurm, **extra))[:2]
            for number, host in enumerate(hosts)]


def write(lab, host, path, text):
    target = os.path.join(lab.root(host), path.lstrip('/'))
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, 'w', encoding='utf-8') as handle:
        handle.write(text)


def ib_info(lab, host):
    """The ib_info facts the check reads (hcas, ports: state, link layer, GID table), from hwsim's own model."""
    model = Context.from_env(lab.env(host), io.StringIO(), io.StringIO()).host_model()
    hcas = {}
    for view in model.ports():
        hcas.setdefault(view.ca_name, {'name': view.ca_name, 'ports': []})['ports'].append({
            'port': view.number, 'state': view.state, 'link_layer': view.link_layer,
            'gids': [{'index': index, 'version': version, 'ipv4': address or None} for index, _gid, version, address in view.gids]})
    return {'hcas': list(hcas.values())}


def compute_hcas(lab, host):
    model = Context.from_env(lab.env(host), io.StringIO(), io.StringIO()).host_model()
    return [view.ca_name for view in model.ports() if view.hca.get('role') == 'compute']


def env_results(lab, hosts, stdout, **expected):
    outcome = {'raw': dict((host, {'ib_info': ib_info(lab, host)}) for host in hosts),
               'checked': dict((host, compute_hcas(lab, host)) for host in hosts)}
    return decide_nccl_env(stdout, hosts, dict({'ib_outcome': outcome}, **expected))


def test_nccl_environment_reads_the_files_as_nccl_does(tmp_path):
    root = str(tmp_path)
    os.makedirs(os.path.join(root, 'etc'))
    os.makedirs(os.path.join(root, 'home', 'ann'))
    with open(os.path.join(root, 'etc', 'nccl.conf'), 'w', encoding='utf-8') as handle:
        handle.write('# NCCL_IB_TC=0\nNCCL_IB_HCA==mlx5_0:1\n NCCL_IB_SL=1\nno equals sign\nNCCL_IB_TC=106 \nNCCL_DEBUG=WARN\n'
                     'NCCL_IB_HCA==mlx5_9:1\nNCCL_SOCKET_IFNAME=a=b')
    with open(os.path.join(root, 'home', 'ann', '.nccl.conf'), 'w', encoding='utf-8') as handle:
        handle.write('NCCL_IB_TC=96\n')
    env = nccl_tool.nccl_environment(root, {'NCCL_DEBUG': 'INFO', 'HOME': '/home/ann'})
    # the job's environment wins, then the user's file, then /etc/nccl.conf; the first line of a name wins
    assert env['NCCL_DEBUG'] == 'INFO' and env['NCCL_IB_TC'] == '96' and env['NCCL_IB_HCA'] == '=mlx5_0:1'
    # nothing trimmed: ' NCCL_IB_SL' is another name; the value is everything after the first '='
    assert ' NCCL_IB_SL' in env and 'NCCL_IB_SL' not in env and env['NCCL_SOCKET_IFNAME'] == 'a=b'
    assert 'no equals sign' not in env and not [name for name in env if name.startswith('#')]
    with open(os.path.join(root, 'mine.conf'), 'w', encoding='utf-8') as handle:
        handle.write('NCCL_IB_HCA=mlx5_3\n')
    # NCCL_CONF_FILE replaces ~/.nccl.conf and comes before /etc/nccl.conf
    env = nccl_tool.nccl_environment(root, {'HOME': '/home/ann', 'NCCL_CONF_FILE': '/mine.conf'})
    assert env['NCCL_IB_HCA'] == 'mlx5_3' and env['NCCL_IB_TC'] == '106 '
    assert nccl_tool.nccl_environment(str(tmp_path / 'none'), {'A': '1'}) == {'A': '1'}


def test_the_conf_file_selects_the_devices_and_the_environment_wins(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    write(lab, 'gpu01', '/etc/nccl.conf', '# written by the nccl role\nNCCL_IB_HCA==mlx5_0:1,mlx5_3:1\nNCCL_DEBUG=INFO\n')
    status, out, _err = run(lab, 'gpu01', ARGS)
    devices = parse_nccl_debug(out)['hosts']['gpu01']['devices']
    assert status == 0 and [d['name'] for d in devices] == ['mlx5_0', 'mlx5_3']
    status, out, _err = run(lab, 'gpu01', ARGS, NCCL_IB_HCA='=mlx5_4:1')
    assert status == 0 and [d['name'] for d in parse_nccl_debug(out)['hosts']['gpu01']['devices']] == ['mlx5_4']


def test_roce_run_logs_devices_gdr_and_the_roce_v2_gid_and_passes_nccl_env(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-roce')
    outs = wired(lab, HOSTS, ARGS, **DEBUG)
    assert [status for status, _out in outs] == [0, 0]
    stdout = ''.join(out for _status, out in outs)
    hosts = parse_nccl_debug(stdout)['hosts']
    for host in HOSTS:
        assert hosts[host]['transport'] == 'IB' and {d['link_layer'] for d in hosts[host]['devices']} == {'RoCE'}
        assert len(hosts[host]['devices']) == 8 and all(hosts[host]['gdr'].values()) and len(hosts[host]['gdr']) == 8
        # NCCL 2.21+ picks the RoCE v2 IPv4 GID (index 3 in hwsim's table: v1/v2 link-local, v1/v2 IPv4)
        assert hosts[host]['gid_indexes'] == [3]
        assert all(c['gid'].startswith('::ffff:') for c in hosts[host]['connections'])
    assert re.search(r"^gpu01:\d+:\d+ \[0\] NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'$", stdout, re.M)
    results = env_results(lab, HOSTS, stdout)
    assert [results[host][0]['passed'] for host in HOSTS] == [True, True], results
    assert 'GID 3' in results['gpu01'][0]['measured']
    # without the NET subsystem NCCL prints neither GPU Direct RDMA nor the connections: the check cannot pass
    quiet = ''.join(out for _status, out in wired(lab, HOSTS, ARGS, NCCL_DEBUG='INFO'))
    assert 'GPU Direct RDMA' not in quiet and 'GID' not in quiet
    assert 'no GPU Direct RDMA line' in env_results(lab, HOSTS, quiet)['gpu01'][0]['message']


@pytest.mark.parametrize('where', ['conf', 'fault'])
def test_a_gid_that_is_not_roce_v2_ipv4_fails_the_multi_node_run(tmp_path, where):
    lab = make_lab(tmp_path, 'hgx-h100-roce')
    if where == 'conf':
        # the role writing a wrong index everywhere: RoCE v2, but the link-local GID (no IPv4)
        for host in HOSTS:
            write(lab, host, '/etc/nccl.conf', 'NCCL_IB_GID_INDEX=1\n')
        outs = wired(lab, HOSTS, ARGS, **DEBUG)
        index = 1
    else:
        assert lab.run('gpu02', ['hwsim', 'fault', 'gid-index-wrong'])[0] == 0
        outs = wired(lab, HOSTS, ARGS, **DEBUG)
        index = 0
    stdout = ''.join(out for _status, out in outs)
    assert outs[1][0] == 3
    warn = re.search(r'^gpu02:\d+:\d+ \[0\] misc/ibvwrap\.cc:\d+ NCCL WARN Call to ibv_modify_qp failed with 110 Connection timed out, '
                     r'on dev mlx5_0:1, curr state INIT, next state RTR, local GID index %d, local GID fe80::\S+, '
                     r'remote GID (::ffff:[0-9.]+|fe80::\S+)$' % index, stdout, re.M)
    assert warn, stdout
    assert re.search(r"^gpu02: Test NCCL failure common\.cu:\d+ 'unhandled system error \(run with NCCL_DEBUG=INFO for details\) / "
                     r"Call to ibv_modify_qp failed with 110", stdout, re.M)
    parsed = parse_nccl_tests(stdout)
    assert parsed['rows'] == [] and ('gpu02', False) in [(f['host'], f['remote']) for f in parsed['failures']]
    results = env_results(lab, HOSTS, stdout)
    assert results['gpu02'][0]['passed'] is False
    assert 'mlx5_0:1 uses GID index %d, RoCE v%d link-local (no IPv4), not a RoCE v2 IPv4 GID' % (index, 2 if index else 1) \
        in results['gpu02'][0]['message']
    assert 'ibv_modify_qp failed (110 Connection timed out) on mlx5_0:1' in results['gpu02'][0]['message']
    if where == 'conf':
        assert outs[0][0] == 3 and not results['gpu01'][0]['passed']
    else:
        assert outs[0][0] == 3 and results['gpu01'][0]['passed']
        assert re.search(r"^gpu01: Test NCCL failure common\.cu:\d+ 'remote process exited", stdout, re.M)


def test_the_environment_gid_index_wins_over_the_file(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-roce')
    for host in HOSTS:
        write(lab, host, '/etc/nccl.conf', 'NCCL_IB_GID_INDEX=0\n')
    assert [status for status, _out in wired(lab, HOSTS, ARGS, **DEBUG)] == [3, 3]
    outs = wired(lab, HOSTS, ARGS, NCCL_IB_GID_INDEX='3', **DEBUG)
    assert [status for status, _out in outs] == [0, 0]
    assert parse_nccl_debug(outs[1][1])['hosts']['gpu02']['gid_indexes'] == [3]


def test_socket_fall_back_and_gdr_off_fail_nccl_env(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    outs = wired(lab, HOSTS, ARGS, NCCL_IB_HCA='=mlx5_1:1', **DEBUG)
    stdout = ''.join(out for _status, out in outs)
    assert [status for status, _out in outs] == [0, 0]
    assert re.search(r"^gpu01:\d+:\d+ \[0\] NCCL INFO NET/Socket : GPU Direct RDMA Disabled for HCA 0 'eth0'$", stdout, re.M)
    busbw = [row for row in parse_nccl_tests(stdout)['rows'] if row['size'] == 8 * 1024 ** 3][0]['oop_busbw']
    assert busbw < 1.3  # the socket figure, not the fabric
    results = env_results(lab, HOSTS, stdout, environment=dict(DEBUG, NCCL_IB_HCA='=mlx5_1:1'))
    assert not results['gpu01'][0]['passed'] and 'NCCL used network Socket (NET/Socket eth0:192.0.2.' in results['gpu01'][0]['message']
    assert results['gpu01'][0]['measured'] == 'NET/Socket -'
    assert lab.run('gpu02', ['hwsim', 'fault', 'gdr-broken', '0'])[0] == 0
    stdout = ''.join(out for _status, out in wired(lab, HOSTS, ARGS, **DEBUG))
    results = env_results(lab, HOSTS, stdout)
    assert results['gpu01'][0]['passed'] and not results['gpu02'][0]['passed']
    assert 'GPU Direct RDMA disabled for mlx5_0, mlx5_3' in results['gpu02'][0]['message']


def test_the_multi_node_decision_judges_nccl_env_per_node(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-roce')
    assert lab.run('gpu02', ['hwsim', 'fault', 'gid-index-wrong'])[0] == 0
    outs = wired(lab, HOSTS, ARGS, **DEBUG)
    stdout = ''.join(out for _status, out in outs)
    outcome = {'raw': dict((host, {'ib_info': ib_info(lab, host)}) for host in HOSTS),
               'checked': dict((host, compute_hcas(lab, host)) for host in HOSTS)}
    expected = {'participants': HOSTS, 'busbw_table': {'h100': 300}, 'model': 'NVIDIA H100 80GB HBM3', 'node_ranks': 8,
                'env_check': True, 'environment': dict(DEBUG), 'ib_outcome': outcome}
    multi = verify_nccl.decide_nccl_multi_node({'rc': 3, 'stdout': stdout, 'stderr': 'srun: error: gpu02: task 1: Exited'}, expected)
    env = dict((node, [r for r in results if r['check'] == 'nccl.env']) for node, results in multi['fleet'].items())
    assert [r['passed'] for r in env['gpu01']] == [True] and [r['passed'] for r in env['gpu02']] == [False]
    assert [r['check'] for r in multi['fleet']['gpu02']] == ['nccl.multi_node_busbw', 'nccl.env']
    off = verify_nccl.decide_nccl_multi_node({'rc': 3, 'stdout': stdout}, dict(expected, env_check=False))
    assert 'nccl.env' not in [r['check'] for results in off['fleet'].values() for r in results]


def test_fault_gid_index_wrong_takes_no_argument(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-roce', compute=1)
    status, _out, err = lab.run('gpu01', ['hwsim', 'fault', 'gid-index-wrong', '3'])
    assert status == 2 and 'usage: hwsim fault gid-index-wrong' in err
