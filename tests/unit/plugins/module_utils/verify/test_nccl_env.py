"""Check nccl.env (module_utils/verify/nccl_env.py): NCCL's own network lines against each node's expected fabric."""
import base64

import pytest

from ansible_collections.aicluster.infra.plugins.module_utils.verify import nccl_env
from ansible_collections.aicluster.infra.plugins.module_utils.verify.checks import CHECKS


def port(number=1, state='Active', link_layer='Ethernet', gids=None):
    return {'port': number, 'state': state, 'link_layer': link_layer, 'gids': gids if gids is not None else [
        {'index': 0, 'version': 'v1', 'ipv4': None}, {'index': 1, 'version': 'v2', 'ipv4': None},
        {'index': 2, 'version': 'v1', 'ipv4': '10.0.1.2'}, {'index': 3, 'version': 'v2', 'ipv4': '10.0.1.2'}]}


def ib_info(names=('mlx5_0', 'mlx5_1', 'mlx5_3', 'mlx5_10'), down=(), **kwargs):
    return {'hcas': [{'name': name, 'ports': [port(state='Down' if name in down else 'Active', **kwargs)]} for name in names]}


def lines(host, devices, gid=3, gdr=True, network='IB', link='RoCE'):
    """NCCL 2.21-style INFO lines of one process (formats of src/transport/net_ib.cc, src/graph/topo.cc, src/init.cc)."""
    text = '%s:1:2 [0] NCCL INFO NET/IB : Using %s [RO]; OOB eth0:10.9.0.1<0>\n' % (
        host, ' '.join('[%d]%s:1/%s' % (n, name, link) for n, name in enumerate(devices)))
    text += '%s:1:2 [0] NCCL INFO Using network %s\n' % (host, network)
    for number, name in enumerate(devices):
        text += "%s:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA %s for HCA %d '%s'\n" % (
            host, 'Enabled' if gdr else 'Disabled', number, name)
        if link == 'RoCE':
            text += '%s:1:2 [0] NCCL INFO NET/IB: NCCL Dev %d IbDev %d Port 1 qpn 9 mtu 5 GID %d (0/201000AFFFF0000) fifoRkey=0x1 ' \
                    'fifoLkey=0x1\n' % (host, number, number, gid)
    return text


def outcome(nodes, info=None, checked=('mlx5_0', 'mlx5_3')):
    return {'raw': dict((node, {'ib_info': info if info is not None else ib_info()}) for node in nodes),
            'checked': dict((node, list(checked)) for node in nodes)}


@pytest.mark.parametrize('value,expected', [
    (None, ['mlx5_0:1', 'mlx5_3:1']),                               # verify_ib's GPU-fabric HCAs
    ('=mlx5_0:1,mlx5_1:1', ['mlx5_0:1', 'mlx5_1:1']),
    ('mlx5_1', ['mlx5_10:1', 'mlx5_1:1']),                          # a prefix also selects mlx5_10 (sorted as text)
    ('^mlx5_1', ['mlx5_0:1', 'mlx5_3:1']),
    ('^=mlx5_1', ['mlx5_0:1', 'mlx5_10:1', 'mlx5_3:1']),
    ('=mlx5_0:2', []),
], ids=['unset', 'exact', 'prefix', 'exclude-prefix', 'exclude-exact', 'wrong-port'])
def test_expected_devices_match_nccl_ib_hca_as_nccl_does(value, expected):
    devices, source = nccl_env.expected_devices(value, nccl_env.node_ports(ib_info()), ['mlx5_0', 'mlx5_3'])
    assert devices == expected and (value is None or value in source)


def test_expected_devices_skip_down_ports_and_need_facts_for_prefixes():
    ports = nccl_env.node_ports(ib_info(down=('mlx5_3',)))
    assert nccl_env.expected_devices('=mlx5_0:1,mlx5_3:1', ports, [])[0] == ['mlx5_0:1']
    assert nccl_env.expected_devices('=mlx5_3:1,mlx5_0:1', {}, [])[0] == ['mlx5_0:1', 'mlx5_3:1']
    assert nccl_env.expected_devices('mlx5', {}, [])[0] is None
    assert nccl_env.expected_devices(None, {}, [])[0] is None


def test_a_good_roce_node_passes():
    results = nccl_env.decide_nccl_env(lines('gpu01', ['mlx5_0', 'mlx5_3']), ['gpu01.lab.example'], {'ib_outcome': outcome(['gpu01.lab.example'])})
    result = results['gpu01.lab.example'][0]
    assert result['check'] == 'nccl.env' and result['passed'], result
    assert result['measured'] == 'NET/IB mlx5_0:1,mlx5_3:1; mlx5_0:1 GID 3, mlx5_3:1 GID 3'
    assert 'nccl.env' in CHECKS and CHECKS['nccl.env'].area == 'nccl'


def test_the_conf_file_and_the_environment_give_the_expected_devices():
    text = lines('gpu01', ['mlx5_0', 'mlx5_3'])
    conf = base64.b64encode(b'# nccl role\nNCCL_IB_HCA==mlx5_0:1,mlx5_1:1\n').decode()
    expected = {'ib_outcome': outcome(['gpu01']), 'nccl_conf_b64': {'gpu01': conf}}
    result = nccl_env.decide_nccl_env(text, ['gpu01'], expected)['gpu01'][0]
    assert not result['passed']
    assert 'NET/IB does not use mlx5_1:1 (NCCL_IB_HCA==mlx5_0:1,mlx5_1:1)' in result['message']
    assert 'NET/IB also uses mlx5_3:1, not a GPU-fabric port' in result['message']
    # the run's environment wins over the file, as in NCCL
    expected['environment'] = {'NCCL_IB_HCA': '=mlx5_0:1,mlx5_3:1'}
    assert nccl_env.decide_nccl_env(text, ['gpu01'], expected)['gpu01'][0]['passed']


def test_sockets_a_missing_device_gdr_off_and_a_wrong_gid_fail_naming_what_was_seen():
    text = ('gpu01:1:2 [0] NCCL INFO NET/IB : No device found.\ngpu01:1:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.9.0.1<0>\n'
            'gpu01:1:2 [0] NCCL INFO Using network Socket\n' + lines('gpu02', ['mlx5_0'], gdr=False) + lines('gpu03', ['mlx5_0', 'mlx5_3'], gid=1))
    nodes = ['gpu01', 'gpu02', 'gpu03', 'gpu04']
    results = nccl_env.decide_nccl_env(text, nodes, {'ib_outcome': outcome(nodes)})
    assert [results[node][0]['passed'] for node in nodes] == [False, False, False, False]
    assert 'NCCL used network Socket (NET/Socket eth0:10.9.0.1; NET/IB : No device found), not NET/IB' in results['gpu01'][0]['message']
    assert 'NET/IB does not use mlx5_3:1 (the GPU-fabric HCAs verify_ib checked)' in results['gpu02'][0]['message']
    assert 'GPU Direct RDMA disabled for mlx5_0' in results['gpu02'][0]['message']
    assert 'mlx5_0:1 uses GID index 1, RoCE v2 link-local (no IPv4), not a RoCE v2 IPv4 GID' in results['gpu03'][0]['message']
    assert 'no network lines for this node' in results['gpu04'][0]['message']


def test_gid_judgement_without_a_table_and_on_infiniband():
    text = lines('gpu01', ['mlx5_0', 'mlx5_3'], gid=5)
    bare = outcome(['gpu01'], info=ib_info(gids=[]))
    assert nccl_env.decide_nccl_env(text, ['gpu01'], {'ib_outcome': bare})['gpu01'][0]['passed']
    result = nccl_env.decide_nccl_env(text, ['gpu01'], {'ib_outcome': outcome(['gpu01'])})['gpu01'][0]
    assert 'uses GID index 5, an empty GID entry' in result['message']
    ib = lines('gpu01', ['mlx5_0', 'mlx5_3'], link='IB')
    info = ib_info(link_layer='InfiniBand', gids=[{'index': 0, 'version': 'v1', 'ipv4': None}])
    assert nccl_env.decide_nccl_env(ib, ['gpu01'], {'ib_outcome': outcome(['gpu01'], info=info)})['gpu01'][0]['passed']


def test_output_without_info_lines_fails_every_node_naming_the_mode():
    results = nccl_env.decide_nccl_env('#  Rank  0 Group  0 Pid 1 on gpu01 device  0 [0000:1b:00] NVIDIA H100\n', ['gpu01', 'gpu02'], {})
    assert sorted(results) == ['gpu01', 'gpu02']
    assert 'NCCL_DEBUG=INFO' in results['gpu02'][0]['message'] and not results['gpu02'][0]['passed']


@pytest.mark.parametrize('environment, why', [
    ({'NCCL_DEBUG': 'WARN'}, 'NCCL_DEBUG=WARN'),
    ({}, 'NCCL_DEBUG=unset'),
    ({'NCCL_DEBUG': 'INFO', 'NCCL_DEBUG_SUBSYS': 'COLL'}, 'NCCL_DEBUG_SUBSYS=COLL'),
    ({'NCCL_DEBUG': 'INFO', 'NCCL_DEBUG_SUBSYS': '^NET'}, 'NCCL_DEBUG_SUBSYS=^NET'),
])
def test_a_run_whose_environment_hides_the_lines_judges_no_node(environment, why):
    """A site's verify_nccl_environment with NCCL_DEBUG: WARN (the example inventory had it; lab-check's README run
    failed every node on nccl.env): not checked, with the reason, never a drain."""
    results = nccl_env.decide_nccl_env('', ['gpu01', 'gpu02'], {'environment': environment})
    for node in ('gpu01', 'gpu02'):
        result = results[node][0]
        assert result['passed'] and result['skipped'] and why in result['message'], result


@pytest.mark.parametrize('environment', [{'NCCL_DEBUG': 'info'}, {'NCCL_DEBUG': 'INFO', 'NCCL_DEBUG_SUBSYS': 'INIT,NET'},
                                         {'NCCL_DEBUG': 'TRACE', 'NCCL_DEBUG_SUBSYS': 'ALL'},
                                         {'NCCL_DEBUG': 'INFO', 'NCCL_DEBUG_SUBSYS': '^COLL'}])
def test_an_environment_that_prints_the_lines_is_judged(environment):
    assert nccl_env.debug_unfit(environment) is None
