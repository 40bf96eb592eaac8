"""lab/hwsim ``firmware VERSION``: every HCA of a host reports that firmware (a rolling upgrade), read by the
collection's own ib_info module and judged by verify_ib's decision."""
import io
import os
import sys

from _module_runner import run_main
from _paths import REPO

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))

# pylint: disable=wrong-import-position
from ansible_collections.aicluster.infra.plugins.module_utils.ibstat import parse_ibstat  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.ibv_devinfo import parse_ibv_devinfo  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.rdma_tools import parse_ibdev2netdev  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.verify import ib  # noqa: E402
from ansible_collections.aicluster.infra.plugins.modules import ib_info  # noqa: E402
from hwsim import cli, profile as profiles  # noqa: E402
from hwsim.testing import make_lab  # noqa: E402

GPU_FABRIC = ['mlx5_0', 'mlx5_3', 'mlx5_4', 'mlx5_5', 'mlx5_6', 'mlx5_7', 'mlx5_8', 'mlx5_9']


def _firmware_by_ca(lab, host):
    return dict((ca['name'], ca['firmware_version']) for ca in parse_ibstat(lab.ok(host, ['ibstat']))['cas'])


def test_firmware_fault_changes_every_hca_in_every_tool(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    profile = dict((hca['name'], hca['firmware']) for hca in profiles.load('hgx-h100-ib')['hcas'])
    assert _firmware_by_ca(lab, 'gpu01') == profile and set(profile.values()) == {'28.39.1002', '22.39.1002'}
    assert lab.run('gpu01', ['hwsim', 'fault', 'firmware', '28.40.1000'])[0] == 0
    assert set(_firmware_by_ca(lab, 'gpu01').values()) == {'28.40.1000'}
    assert _firmware_by_ca(lab, 'gpu02') == profile
    assert {hca['fw_ver'] for hca in parse_ibv_devinfo(lab.ok('gpu01', ['ibv_devinfo']))} == {'28.40.1000'}
    assert {entry['firmware_version'] for entry in parse_ibdev2netdev(lab.ok('gpu01', ['ibdev2netdev', '-v']))} == {'28.40.1000'}
    # a later one replaces it (the last injected wins); clear restores the profile's
    assert lab.run('gpu01', ['hwsim', 'fault', 'firmware', '28.41.1000'])[0] == 0
    assert set(_firmware_by_ca(lab, 'gpu01').values()) == {'28.41.1000'}
    assert lab.run('gpu01', ['hwsim', 'clear', 'firmware'])[0] == 0
    assert _firmware_by_ca(lab, 'gpu01') == profile


def test_firmware_fault_rejects_what_is_not_a_version(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    for bad in (['firmware'], ['firmware', 'latest'], ['firmware', '28'], ['firmware', '28.40.1000', 'x']):
        status, _out, err = lab.run('gpu01', ['hwsim', 'fault'] + bad)
        assert status == 2 and 'firmware VERSION' in err, (bad, err)


def _ib_info(lab, host):
    def tool(argv):
        out, err = io.StringIO(), io.StringIO()
        rc = cli.main([os.path.basename(argv[0])] + list(argv[1:]), environ=lab.env(host), stdout=out, stderr=err)
        return rc, out.getvalue(), err.getvalue()
    tools = dict((name, tool) for name in ('ibstat', 'ibdev2netdev', 'show_gids', 'ibv_devinfo'))
    tools['ofed_info'] = lambda argv: (0, 'OFED-internal-24.04-0.6.6:\n', '')
    result = run_main(ib_info, {}, tools)[0]
    assert not result.get('failed'), result
    return result


def _decide(lab, hosts):
    expected = {'hcas': GPU_FABRIC, 'port': 1, 'rate_gbps': 400, 'link_layer': 'InfiniBand'}
    return ib.decide_ib(dict((host, {'ib_info': _ib_info(lab, host)}) for host in hosts), expected)


def test_a_rolling_upgrade_tie_read_by_ib_info_is_cluster_level(tmp_path):
    """molecule/verify field-2: gpu01 and gpu02 flashed to two new versions, gpu03 on the profile's."""
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=3)
    hosts = ['gpu01', 'gpu02', 'gpu03']
    assert lab.run('gpu01', ['hwsim', 'fault', 'firmware', '28.40.1000'])[0] == 0
    assert lab.run('gpu02', ['hwsim', 'fault', 'firmware', '28.41.1000'])[0] == 0
    out = _decide(lab, hosts)
    assert [r['check'] for r in out['cluster']] == ['ib.firmware_uniform'] * len(GPU_FABRIC)
    assert [r['message'].split()[0] for r in out['cluster']] == sorted(GPU_FABRIC)
    assert not any(r['passed'] for r in out['cluster'])
    assert all(r['passed'] for node in hosts for r in out['nodes'][node] + out['fleet'][node])
    # gpu02 back on the profile's firmware: 2/1, gpu01 the odd one out on every GPU-fabric HCA
    assert lab.run('gpu02', ['hwsim', 'clear', 'firmware'])[0] == 0
    out = _decide(lab, hosts)
    failed = dict((node, [r for r in out['fleet'][node] if not r['passed']]) for node in hosts)
    assert out['cluster'] == [] and [node for node in hosts if failed[node]] == ['gpu01']
    assert sorted(r['subject'] for r in failed['gpu01']) == sorted(GPU_FABRIC)
    assert {(r['measured'], r['threshold']) for r in failed['gpu01']} == {('28.40.1000', '28.39.1002')}
