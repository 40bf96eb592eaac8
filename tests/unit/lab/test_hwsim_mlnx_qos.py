"""lab/hwsim mlnx_qos stand-in: stateful DCB settings per netdev, parsed with parse_mlnx_qos."""
import json
import os
import sys

from _paths import REPO, own_fixture

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))

# pylint: disable=wrong-import-position
from ansible_collections.aicluster.infra.plugins.module_utils.mlnx_qos import parse_mlnx_qos  # noqa: E402
from hwsim.testing import make_lab  # noqa: E402

NETDEV = 'enp64s0np0'   # mlx5_3, rail 1 of hgx-h100-roce


def test_defaults_are_the_mlx5_driver_defaults(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-roce')
    parsed = parse_mlnx_qos(lab.ok('gpu01', ['mlnx_qos', '-i', NETDEV]))
    assert parsed['errors'] == []
    assert (parsed['dcbx'], parsed['trust'], parsed['dscp2prio']) == ('os', 'pcp', None)
    assert parsed['pfc_enabled'] == [0] * 8 and parsed['buffer'] == [0] * 8
    assert parsed['cable_len'] == 7
    assert [(tc['tc'], tc['priorities'], tc['tsa']) for tc in parsed['tcs']][:2] == [(1, [0], 'vendor'), (0, [1], 'vendor')]
    assert not os.path.exists(os.path.join(lab.state_dir, 'gpu01.json'))


def test_trust_pfc_and_dscp2prio_persist(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-roce')
    parsed = parse_mlnx_qos(lab.ok('gpu01', ['mlnx_qos', '-i', NETDEV, '--trust', 'dscp', '--pfc', '0,0,0,1,0,0,0,0']))
    assert parsed['trust'] == 'dscp' and parsed['pfc_enabled'] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert parsed['dscp2prio'] == {prio: list(range(prio * 8 + 7, prio * 8 - 1, -1)) for prio in range(8)}
    assert parsed['buffer'] == [0, 0, 0, 1, 0, 0, 0, 0]
    again = parse_mlnx_qos(lab.ok('gpu01', ['mlnx_qos', '-i', NETDEV]))
    assert again == parsed
    moved = parse_mlnx_qos(lab.ok('gpu01', ['mlnx_qos', '-i', NETDEV, '--dscp2prio', 'set,46,3', '--dscp2prio', 'set,26,3']))
    assert moved['dscp2prio'][3] == [26, 46, 31, 30, 29, 28, 27, 25, 24]
    assert 46 not in moved['dscp2prio'][5]
    # Another netdev and another host are untouched.
    assert parse_mlnx_qos(lab.ok('gpu01', ['mlnx_qos', '-i', 'enp24s0np0']))['trust'] == 'pcp'
    assert parse_mlnx_qos(lab.ok('gpu02', ['mlnx_qos', '-i', NETDEV]))['trust'] == 'pcp'
    state = json.loads(lab.ok('gpu01', ['hwsim', 'show']))
    assert list(state['adapters']) == [NETDEV]
    back = parse_mlnx_qos(lab.ok('gpu01', ['mlnx_qos', '-i', NETDEV, '--trust', 'pcp', '--pfc', '0,0,0,0,0,0,0,0']))
    assert (back['trust'], back['dscp2prio'], back['pfc_enabled']) == ('pcp', None, [0] * 8)


def test_dscp2prio_on_pcp_switches_trust_to_dscp(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-roce')
    parsed = parse_mlnx_qos(lab.ok('gpu01', ['mlnx_qos', '-i', NETDEV, '--dscp2prio', 'set,26,3']))
    assert parsed['trust'] == 'dscp' and parsed['dscp2prio'] == {3: [26]}


def test_ets_and_printall(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-roce')
    out = lab.ok('gpu01', ['mlnx_qos', '-i', NETDEV, '-s', 'ets,ets,ets,ets,ets,ets,strict,ets', '-t', '50,0,0,50,0,0,0,0',
                           '-p', '0,0,0,3,4,5,6,7', '-a'])
    parsed = parse_mlnx_qos(out)
    tcs = {tc['tc']: tc for tc in parsed['tcs']}
    assert sorted(tcs) == list(range(8))
    assert tcs[0]['priorities'] == [0, 1, 2] and tcs[0]['bw_percent'] == 50 and tcs[6]['tsa'] == 'strict'
    assert tcs[1]['priorities'] == [] and tcs[1]['bw_percent'] == 0


def test_errors_like_the_real_tool(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-roce')
    cases = [
        (['--pfc', '0,1'], 'pfc list must have 8 items'),
        (['--pfc', '0,0,0,2,0,0,0,0'], 'Bad value for PFC: 2 is not in the range 0..1'),
        (['--trust', 'vlan'], 'Invalid trust state command. Refer to the help.'),
        (['--trust', 'dscp', '--dscp2prio', 'set,1,1'], 'trust and dscp2prio commands cannot be used at the same time.'),
        (['--dscp2prio', 'set,64,1'], 'Invalid dscp2prio command. Refer to the help.'),
        (['-t', '10,0,0,0,0,0,0,0'], 'ETS BW for a strict/vendor TC must be 0'),
    ]
    for argv, message in cases:
        status, out, _err = lab.run('gpu01', ['mlnx_qos', '-i', NETDEV] + argv)
        assert status == 1 and out == message + '\n', argv
    status, out, _err = lab.run('gpu01', ['mlnx_qos'])
    assert status == 1 and out.startswith('Interface name is required')
    status, out, _err = lab.run('gpu01', ['mlnx_qos', '-i', 'nosuch0'])
    assert status == 1 and len(parse_mlnx_qos(out)['errors']) == 4
    status, _out, err = lab.run('gpu01', ['mlnx_qos', '-i', NETDEV, '--frob'])
    assert status == 2 and 'mlnx_qos: error:' in err
    assert not os.path.exists(os.path.join(lab.state_dir, 'gpu01.json'))


def test_ipoib_netdev_has_no_dcb(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    status, out, _err = lab.run('gpu01', ['mlnx_qos', '-i', 'ibp24s0'])
    assert status == 1 and 'ETS features are not supported on your system' in out
    storage = parse_mlnx_qos(lab.ok('gpu01', ['mlnx_qos', '-i', 'enp170s0f0np0']))
    assert storage['trust'] == 'pcp'


def test_report_layout_matches_our_fixture(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-roce')
    ours = lab.ok('gpu01', ['mlnx_qos', '-i', NETDEV, '--trust', 'dscp', '--pfc', '0,0,0,1,0,0,0,0'])
    fixture = own_fixture('mlnx_qos/mlnx_qos-mlnx-tools-23.x-cx7-roce-dscp-pfc3-multiline-all-tcs-handmade.txt')

    def heads(text):
        return [line.split(':')[0] if ':' in line else line.split()[0] for line in text.splitlines()
                if not line.startswith('\tprio:') and not line.startswith('\t priority') and not line.startswith('tc:')]

    assert heads(ours) == heads(fixture)
    assert '\tenabled     0   0   0   1   0   0   0   0   ' in ours.splitlines()
