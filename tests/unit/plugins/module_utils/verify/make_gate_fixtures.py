# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build the gate fixtures: fixtures/gate/<case>/in.json from simulated hardware, out.json from _gate_harness.

    .venv/bin/python tests/unit/plugins/module_utils/verify/make_gate_fixtures.py [case ...]

Each case starts a lab of lab/hwsim in-process (hwsim.testing.make_lab's Lab),
injects its faults with ``hwsim fault``, and records what the verify roles'
tasks would gather: the collection's own modules (ib_info, gpu_info,
fabric_info, dcgm_diag, slurm_node_info) run through their main() with
run_command answered by hwsim, and the commands the roles run (nvidia-smi
nvlink, dmesg, all_reduce_perf single-node and through the srun rank
environment, ib_write_bw & co. as a real server/client pair over TCP).
What hwsim cannot produce (ping, ``ip -j -d addr show`` as lab.py's rail networks give it, ofed_info, scontrol's text,
the node's DMI identity (``/sys/class/dmi/id``, which gpu_info reads), an srun launch
failure, some counters) is written here and named in the case's description.
Deterministic: hwsim's pids and clocks are pinned.
"""

from __future__ import absolute_import, division, print_function

import io
import json
import os
import pathlib
import sys
import tempfile
import threading
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
UNIT = os.path.abspath(os.path.join(HERE, '..', '..', '..'))
sys.path.insert(0, UNIT)
# conftest links the collection and puts it on sys.path
import conftest  # noqa: E402,F401  pylint: disable=wrong-import-position,unused-import

REPO = os.path.dirname(os.path.dirname(UNIT))
sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))
sys.path.insert(0, HERE)

# pylint: disable=wrong-import-position
import yaml  # noqa: E402
from _module_runner import run_main  # noqa: E402

from ansible_collections.aicluster.infra.plugins.module_utils.verify import net as verify_net  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.verify import perftest as verify_perftest  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.slurm import hostlist_compress  # noqa: E402
from ansible_collections.aicluster.infra.plugins.modules import (  # noqa: E402
    dcgm_diag, fabric_info, gpu_info, ib_info, slurm_node_info,
)
from hwsim import cli, model as hwsim_model, profile as hwsim_profile  # noqa: E402
from hwsim.testing import Lab  # noqa: E402
from hwsim.tools import nccl as hwsim_nccl, perftest as hwsim_perftest  # noqa: E402

import _gate_harness  # noqa: E402

FIXTURES = os.path.join(HERE, 'fixtures', 'gate')
# roles/verify_nccl/vars/main.yml __verify_nccl_algorithm_env
ALGORITHM_ENV = {'ring': {'NCCL_ALGO': 'Ring'}, 'nvls': {'NCCL_ALGO': 'NVLS'}}
ROLES = ('verify_ib', 'verify_perftest', 'verify_gpu', 'verify_nccl', 'verify_gate')
RUN = {'started': '2026-01-01T00:00:00Z', 'finished': '2026-01-01T00:10:00Z',
       'inventory': 'inventories/fixture/hosts.yml', 'collection_version': '0.1.0'}
FACTS = {'os': 'Debian 12.8', 'kernel': '6.1.0-28-amd64'}
# /sys/class/dmi/id of a node of each profile (sys_vendor, product_name); product_serial is S50123<host index>A
DMI = {'hgx-a100-ib': ('Supermicro', 'AS-4124GO-NART+'), 'default': ('Supermicro', 'SYS-821GE-TNHR')}
OFED = 'MLNX_OFED_LINUX-24.10-1.1.4.0'

# As molecule/verify/molecule.yml sets them for the lab (hwsim hgx-h100-ib), kept small.
MOLECULE_VARS = {
    'verify_ib_hcas': ['mlx5_0', 'mlx5_3', 'mlx5_4', 'mlx5_5', 'mlx5_6', 'mlx5_7', 'mlx5_8', 'mlx5_9'],
    'verify_ib_rate_gbps': 400,
    'verify_ib_rail_enabled': True,
    'verify_perftest_hcas': ['mlx5_0', 'mlx5_3', 'mlx5_4', 'mlx5_5'],
    'verify_perftest_duration_s': 1,
    'verify_perftest_timeout_s': 30,
    'verify_ib_mtu': 1500,
    'verify_gpu_model': 'h100',
    'verify_gpu_dcgm_level': 1,
    'verify_nccl_max_bytes': '64M',
    'verify_nccl_large_bytes': 16777216,
    'verify_nccl_timeout_s': 300,
    'verify_nccl_multi_node_ranks_per_node': 1,
    'verify_gate_max_drain_fraction': 1,
}


# ---------------------------------------------------------------------------
# determinism: hwsim prints pids, seeds QP numbers with the clock and stamps the kernel log with it
# ---------------------------------------------------------------------------

def _pin_hwsim():
    def fixed_pid():
        return 4242
    hwsim_model.pid = fixed_pid
    hwsim_nccl.pid = fixed_pid
    hwsim_perftest.pid = fixed_pid
    clock = types.SimpleNamespace(**dict((name, getattr(time, name)) for name in dir(time) if not name.startswith('_')))
    clock.time_ns = lambda: 1767225600000000000
    hwsim_perftest.time = clock
    # dmesg's boot time and the Xid faults' stamps follow the clock: the same stamps on every regeneration
    stopped = types.SimpleNamespace(**dict((name, getattr(time, name)) for name in dir(time) if not name.startswith('_')))
    stopped.time = lambda: 1767225600.0
    for name in ('hwsim.faults', 'hwsim.tools.kernel'):
        __import__(name, fromlist=['time']).time = stopped
    for name in ('ibstat', 'iblinkinfo'):
        module = __import__('hwsim.tools.' + name, fromlist=[name])
        if hasattr(module, 'pid'):
            module.pid = fixed_pid


# ---------------------------------------------------------------------------
# the collection's modules, with run_command answered by hwsim
# ---------------------------------------------------------------------------

def run_module(module, args, tools):
    """``module.main()`` with ``tools`` (name -> function(argv) -> (rc, out, err)); its result minus invocation."""
    result, dummy, dummy = run_main(module, args, tools)
    result.pop('invocation', None)
    return result


def hwsim_tool(lab, host, environ=None):
    def run(argv):
        out, err = io.StringIO(), io.StringIO()
        env = dict(lab.env(host), **(environ or {}))
        rc = cli.main([os.path.basename(argv[0])] + list(argv[1:]), environ=env, stdout=out, stderr=err)
        return rc, out.getvalue(), err.getvalue()
    return run


def dmi_folder(tmp, profile, host_index):
    """A /sys/class/dmi/id for gpu_info to read: the profile's vendor and product, a serial of the host's own."""
    folder = os.path.join(tmp, 'dmi%d' % host_index)
    os.makedirs(folder, exist_ok=True)
    vendor, product = DMI.get(profile, DMI['default'])
    for name, value in (('sys_vendor', vendor), ('product_name', product), ('product_serial', 'S50123%04dA' % host_index)):
        with open(os.path.join(folder, name), 'w', encoding='utf-8') as handle:
            handle.write(value + '\n')
    return folder


def command(lab, host, argv, environ=None):
    rc, out, err = hwsim_tool(lab, host, environ)(argv)
    return {'rc': rc, 'stdout': out, 'stderr': err}


# ---------------------------------------------------------------------------
# things hwsim does not simulate
# ---------------------------------------------------------------------------

def ping_ok(peer, address, mtu):
    payload = mtu - 28
    return {'rc': 0, 'stderr': '', 'stdout': (
        'PING %s (%s) %d(%d) bytes of data.\n'
        '%d bytes from %s (%s): icmp_seq=1 ttl=64 time=0.071 ms\n'
        '%d bytes from %s (%s): icmp_seq=2 ttl=64 time=0.058 ms\n'
        '%d bytes from %s (%s): icmp_seq=3 ttl=64 time=0.062 ms\n\n'
        '--- %s ping statistics ---\n'
        '3 packets transmitted, 3 received, 0%% packet loss, time 2043ms\n'
        'rtt min/avg/max/mdev = 0.058/0.063/0.071/0.005 ms\n') % (
            peer, address, payload, mtu, payload + 8, peer, address, payload + 8, peer, address,
            payload + 8, peer, address, peer)}


def ping_too_long(peer, address, mtu, path_mtu):
    """iputils ping with -M do and a payload above the path MTU: error() lines on stderr, rc 1."""
    payload = mtu - 28
    return {'rc': 1, 'stdout': (
        'PING %s (%s) %d(%d) bytes of data.\n\n'
        '--- %s ping statistics ---\n'
        '3 packets transmitted, 0 received, +3 errors, 100%% packet loss, time 2046ms\n\n') % (peer, address, payload, mtu, peer),
        'stderr': 'ping: local error: message too long, mtu=%d\n' % path_mtu * 3}


def ip_links(profile_name, host_index):
    """``ip -j -d addr show`` of a lab host (lab.py's networks): eth0 the management network at 1500, then each
    port with an ``ipv4_network`` as its netdev at the rail MTU (RoCE 9000, IPoIB 4092) and hwsim's address."""
    rows = [{'ifname': 'eth0', 'mtu': 1500, 'operstate': 'UP', 'linkinfo': {'info_kind': 'veth'},
             'addr_info': [{'family': 'inet', 'local': '10.89.0.%d' % (10 + host_index), 'prefixlen': 24}]}]
    for hca in hwsim_profile.load(profile_name)['hcas']:
        for port in hca['ports']:
            address = hwsim_profile.ipv4(host_index, port)
            if port.get('netdev') and address:
                rows.append({'ifname': port['netdev'], 'mtu': 9000 if port['link_layer'] == 'Ethernet' else 4092,
                             'operstate': 'UP', 'linkinfo': {'info_kind': 'veth'},
                             'addr_info': [{'family': 'inet', 'local': address.split('/')[0],
                                            'prefixlen': int(address.split('/')[1])}]})
    return {'changed': False, 'rc': 0, 'stdout': json.dumps(rows, separators=(',', ':')), 'stderr': ''}


def rail_pings(case, variables, spec):
    """Each node's registered ping loop over the MTU plan; a node in ``path_mtu`` has a path below the MTU."""
    expected = {'hcas': variables['verify_ib_hcas'], 'port': variables['verify_ib_port'],
                'link_layer': variables['verify_ib_link_layer'], 'mtu': int(variables['verify_ib_mtu']),
                'ipoib_mtu': int(variables['verify_ib_ipoib_mtu'])}
    hosts = [host for host in case['hosts_all'] if host in case['hosts']]
    observations = dict((host, {'ib_info': case['hosts'][host]['ib_info'], 'links': case['hosts'][host]['links'],
                                'peer': hosts[(index + 1) % len(hosts)]}) for index, host in enumerate(hosts))
    for host, items in verify_net.plan(observations, expected).items():
        path_mtu = (spec.get('path_mtu') or {}).get(host)
        results = []
        for item in items:
            ping = ping_too_long(item['peer'], item['peer_address'], item['expected_mtu'], path_mtu) if path_mtu else \
                ping_ok(item['peer'], item['peer_address'], item['expected_mtu'])
            results.append(dict(ping, item=item, changed=False))
        case['hosts'][host]['pings'] = {'changed': False, 'results': results}


def scontrol_text(nodes):
    """``scontrol show node`` as Slurm 22.05 prints it, for (name, state, reason) triples."""
    blocks = []
    for name, state, reason in nodes:
        lines = ['NodeName=%s Arch=x86_64 CoresPerSocket=1 ' % name,
                 '   CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=0.10',
                 '   AvailableFeatures=lab',
                 '   ActiveFeatures=lab',
                 '   Gres=gpu:8',
                 '   NodeAddr=%s NodeHostName=%s Version=22.05.8' % (name, name),
                 '   OS=Linux 6.1.0-28-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.119-1 (2024-11-22) ',
                 '   RealMemory=1000 AllocMem=0 FreeMem=900 Sockets=2 Boards=1',
                 '   State=%s ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A' % state,
                 '   Partitions=gpu ',
                 '   BootTime=2026-01-01T00:00:00 SlurmdStartTime=2026-01-01T00:00:10 ',
                 '   LastBusyTime=2026-01-01T00:00:10',
                 '   CfgTRES=cpu=2,mem=1000M,billing=2,gres/gpu=8',
                 '   AllocTRES=',
                 '   CapWatts=n/a',
                 '   CurrentWatts=0 AveWatts=0',
                 '   ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s']
        if reason:
            lines.append('   Reason=%s' % reason)
        blocks.append('\n'.join(lines) + '\n')
    return '\n'.join(blocks) + '\n'


# ---------------------------------------------------------------------------
# observation
# ---------------------------------------------------------------------------

def role_defaults():
    values = {}
    for role in ROLES:
        with open(os.path.join(REPO, 'roles', role, 'defaults', 'main.yml'), encoding='utf-8') as handle:
            values.update(yaml.safe_load(handle) or {})
    return values


def perftest_common(variables, test):
    """__verify_perftest_common."""
    if test == 'write_lat':
        return ['--report_gbits', '-F']
    return (['--report_gbits', '-F', '-s', str(variables['verify_perftest_size']), '-q', str(variables['verify_perftest_qps'])]
            + (['-D', str(variables['verify_perftest_duration_s'])] if int(variables['verify_perftest_duration_s']) > 0 else [])
            + (['-b'] if variables['verify_perftest_bidirectional'] else []))


def perftest_pair(lab, tool, spec, common):
    """Server on spec's server, client on spec's client: the client's (rc, stdout, stderr)."""
    port = spec['port']
    server_argv = [tool, '-d', spec['server_hca'], '-p', str(port)] + common + (
        ['-x', str(spec['server_gid_index'])] if spec['server_gid_index'] is not None else [])
    client_argv = [tool, '-d', spec['client_hca'], '-p', str(port)] + common + (
        ['-x', str(spec['client_gid_index'])] if spec['client_gid_index'] is not None else []) + ['127.0.0.1']
    server_out, server_err = io.StringIO(), io.StringIO()
    thread = threading.Thread(target=cli.main, args=(server_argv,), daemon=True,
                              kwargs={'environ': lab.env(spec['server']), 'stdout': server_out, 'stderr': server_err})
    thread.start()
    deadline = time.monotonic() + 5
    while 'Waiting for client' not in server_out.getvalue() and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.002)
    if not thread.is_alive():  # the server refused (a port down): the client finds nobody listening
        pass
    result = command(lab, spec['client'], client_argv, {'HWSIM_PERFTEST_TIMEOUT': '3'})
    thread.join(10)
    return result


def observe_perftest(lab, variables, endpoints):
    tools = {'write_bw': 'ib_write_bw', 'read_bw': 'ib_read_bw', 'write_lat': 'ib_write_lat'}
    enabled = [test for test in ('write_bw', 'read_bw', 'write_lat') if variables['verify_perftest_%s_enabled' % test]]
    nodes = [node for node in endpoints if endpoints[node].get('names')]
    out = {}
    for test in enabled:
        out[test] = {}
        pairs = [[client, server] for client in nodes for server in nodes if client != server]
        for spec in verify_perftest.round_tests(pairs, endpoints, variables['verify_perftest_base_port']):
            key = '%s>%s:%d' % (spec['client'], spec['server'], spec['rail'])
            out[test][key] = perftest_pair(lab, tools[test], spec, perftest_common(variables, test))
    return out


def observe(name, spec):
    """in.json of one case."""
    variables = role_defaults()
    variables.update(MOLECULE_VARS)
    variables.update(spec.get('vars') or {})
    hosts = ['gpu%02d' % number for number in range(1, spec.get('nodes', 3) + 1)]
    unreachable = list(spec.get('unreachable') or [])
    reachable = [host for host in hosts if host not in unreachable]
    profile = spec.get('profile', 'hgx-h100-ib')
    with tempfile.TemporaryDirectory() as tmp:
        lab = Lab(pathlib.Path(tmp), [('ctl01', None)] + [(host, profile) for host in hosts])
        for host, fault in spec.get('faults') or []:
            rc, dummy, err = lab.run(host, ['hwsim', 'fault'] + [str(arg) for arg in fault])
            assert rc == 0, (host, fault, err)
        case = {'description': spec['description'], 'run': dict(RUN), 'vars': variables, 'hosts_all': hosts,
                'unreachable': unreachable, 'slurm_host': spec.get('slurm_host', 'ctl01'), 'hosts': {},
                'pmi': spec.get('pmi', True)}
        ofed = spec.get('ofed') or {}
        endpoints = {}
        for host in reachable:
            ib_tools = dict((tool, hwsim_tool(lab, host)) for tool in ('ibstat', 'ibdev2netdev', 'show_gids', 'ibv_devinfo'))
            ib_tools['ofed_info'] = lambda argv, host=host: (0, '%s:\n' % ofed.get(host, OFED), '')
            gpu_tools = {'nvidia-smi': hwsim_tool(lab, host)}
            observed = {'facts': dict(FACTS)}
            observed['ib_info'] = run_module(ib_info, {}, ib_tools)
            observed['links'] = ip_links(profile, hosts.index(host) + 1)
            gpu_info.SYSFS_DMI = dmi_folder(tmp, profile, hosts.index(host) + 1)
            observed['gpu_info'] = run_module(gpu_info, {'topology': False}, gpu_tools)
            observed['nvlink_status'] = command(lab, host, ['nvidia-smi', 'nvlink', '-s'])
            observed['nvlink_errors_before'] = command(lab, host, ['nvidia-smi', 'nvlink', '-e'])
            observed['nvlink_errors'] = command(lab, host, ['nvidia-smi', 'nvlink', '-e'])
            observed['retired'] = command(lab, host, ['nvidia-smi', '--query-gpu=index,retired_pages.sbe,retired_pages.dbe,'
                                                      'retired_pages.pending', '--format=csv,noheader,nounits'])
            observed['compute_apps'] = command(lab, host, ['nvidia-smi', '--query-compute-apps=gpu_bus_id,pid,process_name,'
                                                           'used_memory', '--format=csv,noheader,nounits'])
            observed['dmesg'] = command(lab, host, ['dmesg', '--time-format', 'iso'], {'TZ': 'UTC'})
            observed['dcgm_diag'] = run_module(dcgm_diag, {'level': variables['verify_gpu_dcgm_level']},
                                               {'dcgmi': hwsim_tool(lab, host)})
            count = observed['gpu_info'].get('count') or 8
            gpus = int(variables['verify_nccl_gpus']) if int(variables['verify_nccl_gpus']) > 0 else count
            nccl_argv = [variables['verify_nccl_binary'], '-b', str(variables['verify_nccl_min_bytes']),
                         '-e', str(variables['verify_nccl_max_bytes']), '-f', str(variables['verify_nccl_step_factor']), '-g', str(gpus)]
            observed['nccl'] = command(lab, host, nccl_argv, ALGORITHM_ENV.get(variables['verify_nccl_algorithm'], {}))
            if not observed['ib_info'].get('failed'):
                endpoints[host] = verify_perftest.endpoint(observed['ib_info'], variables['verify_perftest_hcas'],
                                                           variables['verify_perftest_link_layer'], host)
            case['hosts'][host] = observed
        rail_pings(case, variables, spec)
        case['fabric_info'] = run_module(fabric_info, {}, {'iblinkinfo': hwsim_tool(lab, reachable[0])})
        case['perftest'] = observe_perftest(lab, variables, endpoints)
        if case['slurm_host']:
            states = spec.get('slurm') or {}
            text = scontrol_text([(host,) + tuple(states.get(host, ('IDLE', None))) for host in hosts])
            case['slurm_nodes'] = run_module(slurm_node_info, {}, {'scontrol': lambda argv: (0, text, '')})['nodes']
        for edit in spec.get('edits') or []:
            edit(case)
        if case['slurm_host'] and variables['verify_nccl_multi_node_enabled']:
            participants = multi_node_participants(case)
            if len(participants) >= 2:
                case['nccl_multi'] = spec['srun'](participants) if spec.get('srun') else \
                    srun_all_reduce(lab, variables, participants, case)
    return case


def multi_node_participants(case):
    """The nodes the verify_nccl role picks for its multi-node run, replayed by the harness up to that point."""
    return _gate_harness.ready_for_multi_node(json.loads(json.dumps(case)))


def srun_all_reduce(lab, variables, participants, case):
    """srun -N n -w LIST --ntasks-per-node=R all_reduce_perf ... -g G: every rank run with Slurm's environment."""
    first = case['hosts'][[h for h in case['hosts_all'] if h not in case['unreachable']][0]]
    gpus_per_node = int(variables['verify_nccl_gpus']) if int(variables['verify_nccl_gpus']) > 0 else \
        (first['gpu_info'].get('count') or 8)
    ranks = int(variables['verify_nccl_multi_node_ranks_per_node']) or gpus_per_node
    argv = [variables['verify_nccl_binary'], '-b', str(variables['verify_nccl_min_bytes']), '-e', str(variables['verify_nccl_max_bytes']),
            '-f', str(variables['verify_nccl_step_factor']), '-g', str(max(1, gpus_per_node // ranks))]
    nodelist = hostlist_compress(participants)
    stdout, stderr, status = '', '', 0
    for number in range(len(participants) * ranks):
        host = participants[number // ranks]
        environ = {'SLURM_PROCID': str(number), 'SLURM_LOCALID': str(number % ranks),
                   'SLURM_NTASKS': str(len(participants) * ranks), 'SLURM_JOB_NODELIST': nodelist}
        if case.get('pmi', True):
            environ['PMIX_RANK'] = str(number)  # srun --mpi=pmix
        result = command(lab, host, argv, environ)
        stdout += result['stdout']
        stderr += result['stderr']
        status = max(status, result['rc'])
    return {'rc': status, 'stdout': stdout, 'stderr': stderr, 'participants': list(participants)}


# ---------------------------------------------------------------------------
# hand edits, for what hwsim cannot produce
# ---------------------------------------------------------------------------

def set_gpu(host, index, **values):
    def edit(case):
        case['hosts'][host]['gpu_info']['gpus'][index].update(values)
    return edit


def set_gpu_info(host, **values):
    def edit(case):
        case['hosts'][host]['gpu_info'].update(values)
    return edit


def set_firmware(host, hca, version):
    def edit(case):
        for ca in case['hosts'][host]['ib_info']['hcas']:
            if ca['name'] == hca:
                ca['firmware_version'] = version
    return edit


def set_port(host, hca, **values):
    def edit(case):
        for ca in case['hosts'][host]['ib_info']['hcas']:
            if ca['name'] == hca:
                ca['ports'][0].update(values)
    return edit


def fail_module(host, key, msg, **extra):
    def edit(case):
        case['hosts'][host][key] = dict({'failed': True, 'msg': msg}, **extra)
    return edit


def nvlink_counter(host, gpu, link, counter, value):
    """Raise one counter of ``nvidia-smi nvlink -e`` (hwsim prints zeros)."""
    import re
    names = {'replay_errors': 'Replay Errors', 'recovery_errors': 'Recovery Errors', 'crc_errors': 'CRC Errors'}

    def edit(case):
        text = case['hosts'][host]['nvlink_errors']['stdout']
        lines = text.splitlines(True)
        current = None
        for number, line in enumerate(lines):
            found = re.match(r'^GPU (\d+):', line)
            if found:
                current = int(found.group(1))
                continue
            match = re.match(r'^(\s+Link (\d+): %s: )(\d+)' % re.escape(names[counter]), line)
            if current == gpu and match and int(match.group(2)) == link:
                lines[number] = '%s%d\n' % (match.group(1), value)
                break
        else:
            raise AssertionError('no %s line for GPU %d link %d in nvlink -e' % (counter, gpu, link))
        case['hosts'][host]['nvlink_errors']['stdout'] = ''.join(lines)
    return edit


def slow_latency(host, rail, factor):
    """Scale the 2-byte latency row of every ib_write_lat client output through ``host``'s ``rail`` (hwsim's latency has no fault)."""
    def edit(case):
        for key, result in case['perftest']['write_lat'].items():
            ends, dummy, number = key.rpartition(':')
            if int(number) != rail or host not in ends.split('>'):
                continue
            lines = result['stdout'].splitlines(True)
            for index, line in enumerate(lines):
                words = line.split()
                if len(words) >= 9 and words[0] == '2' and all(w.replace('.', '', 1).isdigit() for w in words[:9]):
                    lines[index] = hwsim_perftest.REPORT_FMT_LAT % tuple(
                        [2, int(words[1])] + [float(word) * factor for word in words[2:9]])
                    break
            else:
                raise AssertionError('no latency row in %s' % key)
            result['stdout'] = ''.join(lines)
    return edit


def srun_fails(participants):
    return {'rc': 1, 'stdout': '', 'participants': list(participants),
            'stderr': 'srun: Required node not available (down, drained or reserved)\n'
                      'srun: job 42 queued and waiting for resources\n'
                      'srun: error: Unable to allocate resources: Requested node configuration is not available\n'}


OWN_DRAIN = 'aicluster: ib.port_state mlx5_0:1 [root@2026-01-01T00:00:00]'

CASES = {
    'healthy': {
        'description': 'Three healthy hgx-h100-ib nodes as molecule/verify configures them: every port, link, '
                       'perftest pair (write_bw, four rails), MTU ping, GPU check, DCGM level 1, single-node and '
                       'multi-node all_reduce_perf (srun, one rank per node) passes; nothing is drained. '
                       'Hand-written: the ping output (iputils layout), ofed_info -s and scontrol show node text.',
    },
    'faults-1': {
        'description': 'As molecule/verify faults-1: gpu01 mlx5_0 port down, gpu02 mlx5_3 trained at 1X, gpu03 '
                       'mlx5_4 perftest bandwidth at half. Proves ib.port_state and ib.port_rate fail on gpu01 (and '
                       'its rail-0 perftest pairs blame gpu01), fabric.link_width fails on gpu02 only, the retest '
                       'rounds blame gpu03 for rail 2 and clear its partners, each faulty node is drained with a '
                       'reason naming its checks, and the multi-node run is skipped (fewer than two nodes pass).',
        'faults': [('gpu01', ['port-down', 'mlx5_0']), ('gpu02', ['link-width', 'mlx5_3', '1X']),
                   ('gpu03', ['hca-bw-low', 'mlx5_4', '0.5'])],
    },
    'faults-2': {
        'description': 'As molecule/verify faults-2: gpu01 drained by an operator ("operator: fan", scontrol text '
                       'hand-written), gpu02 fails dcgmi diag (memory), gpu03 runs nccl-tests at 0.8 of normal. '
                       'Proves gpu.dcgm_diag fails, nccl.busbw and nccl.slow_node fail on gpu03, the operator\'s drain '
                       'of a passing node is kept, and the two failing nodes are drained; no multi-node run '
                       '(the only passing node is drained).',
        'faults': [('gpu02', ['dcgm-diag-fail', 'inforom']), ('gpu03', ['nccl-slow', '0.8'])],
        'slurm': {'gpu01': ('IDLE+DRAIN', 'operator: fan [admin@2026-01-01T00:00:00]')},
    },
    'repair': {
        'description': 'Healthy nodes after a repair: Slurm shows gpu01 and gpu02 drained by the gate earlier '
                       '(reason "aicluster: ..." with its [user@time] stamp) and gpu03 drained by someone else. '
                       'Proves the gate resumes its own drains of nodes that pass (resumed, state after IDLE), '
                       'keeps the other drain, and that drained nodes are left out of the multi-node run '
                       '(all three are drained when it chooses its nodes, so there is none).',
        'slurm': {'gpu01': ('IDLE+DRAIN', OWN_DRAIN), 'gpu02': ('IDLE+DRAIN', 'aicluster: gpu.dcgm_diag node [root@2026-01-01T00:00:00]'),
                  'gpu03': ('IDLE+DRAIN', 'bios update [admin@2026-01-01T00:00:00]')},
    },
    'gpu-faults': {
        'description': 'Four nodes with GPU faults (hwsim): gpu01 GPU 7 missing and NVLink 3 of GPU 2 down; gpu02 '
                       'ECC errors with page retirement pending on GPU 1 and a row remap pending on GPU 4; gpu03 '
                       'fatal Xid 79 on GPU 5 and a leftover process on GPU 0; gpu04 healthy hardware. Hand edits: '
                       'gpu02 GPU 6 persistence mode disabled and gpu03 GPU 3 an "NVIDIA A100-SXM4-80GB" (type a100; hwsim '
                       'always reports Enabled and the profile model), gpu04 NVLink counters of GPU 2 link 5 '
                       'raised over the limits (hwsim prints zeros) and ECC mode disabled on GPU 2. Proves every gpu.* check fails '
                       'where injected (gpu.dcgm_diag fails too on gpu02: hwsim\'s diag reports the pending retirement), '
                       'all_reduce_perf runs -g 7 on the node missing a GPU, and the multi-node run is skipped.',
        'nodes': 4,
        'faults': [('gpu01', ['gpu-missing', '7']), ('gpu01', ['nvlink-down', '2', '3']),
                   ('gpu02', ['ecc-pending', '1']), ('gpu02', ['row-remap-pending', '4']),
                   ('gpu03', ['xid', '5', '79']), ('gpu03', ['gpu-process', '0', '31337', 'python3'])],
        'edits': [set_gpu('gpu02', 6, persistence_mode=False), set_gpu('gpu03', 3, name='NVIDIA A100-SXM4-80GB', type='a100'),
                  set_gpu('gpu04', 2, ecc_enabled=False),
                  nvlink_counter('gpu04', 2, 5, 'replay_errors', 250), nvlink_counter('gpu04', 2, 5, 'crc_errors', 180),
                  nvlink_counter('gpu04', 2, 5, 'recovery_errors', 2)],
    },
    'nccl-faults': {
        'description': 'Four nodes: gpu02 reports 5 wrong nccl-tests results (nccl.wrong fails, rc 1); the three '
                       'others pass every check and run the multi-node test, whose srun cannot allocate (rc 1 and '
                       'its stderr hand-written: hwsim has no srun). Proves nccl.wrong fails, the launch error '
                       'becomes the message of a cluster-level nccl.multi_node_busbw result (the verdict fails, no '
                       'participant is drained for it, no bisection of a launch failure), and that the participants '
                       'are the passing, in-service nodes.',
        'nodes': 4,
        'faults': [('gpu02', ['nccl-wrong', '5'])],
        'srun': srun_fails,
    },
    'fleet-odd': {
        'description': 'Five nodes, mode fail: gpu01 mlx5_5 with other HCA firmware and gpu02 another OFED (both '
                       'edits of the module results: hwsim has one firmware per profile, ofed_info is answered by '
                       'the generator), gpu03 another driver and mlx5_9 reporting link layer Ethernet (edits), gpu04 mlx5_6 trained at a lower lane speed '
                       '(hwsim link-speed 53.125), gpu05 ib_info failed (rescue path: ib.hca_present, no perftest '
                       'endpoint, ofed unknown to the fleet). gpu02\'s IPoIB rails have a path at 1500 (ping output hand-written; '
                       'the management network is at 1500 and never pinged). Proves the fleet majority checks name each odd one '
                       'out, ib.link_layer, fabric.link_speed and ib.port_rate fail on gpu04, net.mtu fails on gpu02\'s eight rails '
                       '(and on gpu03 mlx5_9, now an Ethernet port whose interface is at the IPoIB MTU), net.rdma_mtu fails on gpu04 mlx5_7 '
                       '(active_mtu 1024, an edit: hwsim reports 4096), and mode fail drains nothing. gpu01 GPU 3 '
                       'reports another VBIOS (hwsim vbios 3 96.00.99.00.01): the inventory\'s odd one out, no check.',
        'nodes': 5,
        'vars': {'verify_gate_on_failure': 'fail', 'verify_ib_mtu': 9000},
        'faults': [('gpu04', ['link-speed', 'mlx5_6', '53.125']), ('gpu01', ['vbios', '3', '96.00.99.00.01'])],
        'ofed': {'gpu02': 'MLNX_OFED_LINUX-23.10-1.1.9.0'},
        'path_mtu': {'gpu02': 1500},
        'edits': [set_firmware('gpu01', 'mlx5_5', '28.40.1000'), set_gpu_info('gpu03', driver_version='550.127.05'),
                  set_port('gpu03', 'mlx5_9', link_layer='Ethernet'), set_port('gpu04', 'mlx5_7', active_mtu=1024),
                  fail_module('gpu05', 'ib_info', 'Failed to find required executable "ibstat" in paths: /usr/bin')],
    },
    'unreachable-and-no-slurm': {
        'description': 'Three nodes, mode report, no Slurm (slurm_host ""): gpu03 unreachable (no observations), '
                       'gpu02 gpu_info failed (edit: nvidia-smi could not talk to the driver). Proves node.reachable '
                       'fails for gpu03, the GPU rescue (gpu.count) and nccl rescue (nccl.wrong) on gpu02, that '
                       'slurm.yml and the multi-node run are skipped, and that the MTU ring and perftest cover the '
                       'reachable nodes only.',
        'unreachable': ['gpu03'],
        'slurm_host': '',
        'vars': {'verify_gate_on_failure': 'report'},
        'edits': [fail_module('gpu02', 'gpu_info', 'nvidia-smi --query-gpu failed with rc=9: NVIDIA-SMI has failed because it '
                                                   'couldn\'t communicate with the NVIDIA driver.', rc=9)],
    },
    'roce': {
        'description': 'Three healthy hgx-h100-roce nodes: link layer Ethernet, the RoCE v2 GID index from '
                       'show_gids passed to perftest (-x) and recorded in the pairs, everything passes, '
                       'multi-node passes. verify_ib_hcas/perftest_hcas are left empty (every Ethernet HCA), '
                       'rate and rail checks off, fabric check off (iblinkinfo has no RoCE fabric).',
        'profile': 'hgx-h100-roce',
        'vars': {'verify_ib_link_layer': 'Ethernet', 'verify_perftest_link_layer': 'Ethernet', 'verify_ib_hcas': [],
                 'verify_perftest_hcas': [], 'verify_ib_rate_gbps': 0, 'verify_ib_rail_enabled': False,
                 'verify_ib_fabric_enabled': False},
    },
    'perftest-variants': {
        'description': 'Three nodes with ib_write_bw off, ib_read_bw bidirectional (threshold on twice the line '
                       'rate) and ib_write_lat on, all_pairs schedule, and gpu02 mlx5_3 at 0.5 of its bandwidth. '
                       'Hand edit: the ib_write_lat latency rows of the pairs through gpu02 mlx5_3 scaled by 8 (hwsim '
                       'simulates no latency fault). Proves perftest.read_bw and perftest.write_lat fail on gpu02 '
                       'rail 1 with two partners and pass elsewhere (partners cleared), the other areas pass, and '
                       'the multi-node run leaves gpu02 out.',
        'vars': {'verify_perftest_write_bw_enabled': False, 'verify_perftest_read_bw_enabled': True,
                 'verify_perftest_bidirectional': True, 'verify_perftest_write_lat_enabled': True,
                 'verify_perftest_schedule': 'all_pairs'},
        'faults': [('gpu02', ['hca-bw-low', 'mlx5_3', '0.5'])],
        'edits': [slow_latency('gpu02', 1, 8.0)],
    },
    'gpu-conditions': {
        'description': 'Four nodes with GPU operating conditions (hwsim faults): gpu01 GPU 0 power-capped at 500 W '
                       '(default 700), gpu02 GPU 3 thermally throttled (HW thermal slowdown active), gpu03 GPU 5 PCIe '
                       'link trained at x8 of x16, gpu04 the NVSwitch fabric not started. Proves gpu.power_limit, '
                       'gpu.clock_events, gpu.pcie_link and gpu.fabric_state each fail on its node only.',
        'nodes': 4,
        'faults': [('gpu01', ['power-capped', '0', '500']), ('gpu02', ['thermal-throttle', '3']),
                   ('gpu03', ['pcie-degraded', '5', '8']), ('gpu04', ['fabric-state', 'not-started'])],
    },
    'nccl-no-pmi': {
        'description': 'Three healthy nodes whose multi-node all_reduce_perf is launched by srun without PMI (no '
                       'PMIX_RANK: each task runs as its own single-node job, as an MPI=1 build does under srun '
                       'without --mpi=pmix). The three tables read about 440 GB/s and passed as one run on the old '
                       'code. Proves nccl.multi_node_launch fails (24 rank lines, ranks 0-7 three times) and with it '
                       'nccl.multi_node_busbw, both cluster-level: the verdict fails and nobody is drained.',
        'pmi': False,
    },
    'busy-node': {
        'description': 'Three healthy nodes; Slurm shows gpu02 MIXED (a job runs there) when verify starts. '
                       'Proves gpu02 gets no active test (no perftest pair, no single-node nccl-tests, not in the '
                       'multi-node run; DCGM level 1 is read-only and still runs), is marked busy, and a failed '
                       'cluster-level node.tested lists it: the verdict fails, nothing is drained.',
        'slurm': {'gpu02': ('MIXED', None)},
    },
    'breaker': {
        'description': 'Five nodes; gpu01 and gpu02 fail dcgmi diag (memory), 2 of 5 nodes against '
                       'verify_gate_max_drain_fraction 0.1. Proves the drain breaker trips: neither node is drained, '
                       'a failed cluster-level node.drain_breaker names gpu.dcgm_diag on 2 of 5 nodes.',
        'nodes': 5,
        'vars': {'verify_gate_max_drain_fraction': 0.1},
        'faults': [('gpu01', ['dcgm-diag-fail', 'inforom']), ('gpu02', ['dcgm-diag-fail', 'inforom'])],
    },
    'driver-tie': {
        'description': 'Four nodes in the middle of a rolling driver upgrade: gpu01 and gpu02 on 570.124.06 '
                       '(edits of gpu_info), gpu03 and gpu04 on the profile\'s driver. On the old code all four '
                       'failed gpu.driver_uniform. Proves a split with no majority and no pin is one cluster-level '
                       'gpu.driver_uniform result: every node passes, nobody is drained, the verdict fails.',
        'nodes': 4,
        'edits': [set_gpu_info('gpu01', driver_version='570.124.06'), set_gpu_info('gpu02', driver_version='570.124.06')],
    },
}


def write_case(name):
    case = observe(name, CASES[name])
    folder = os.path.join(FIXTURES, name)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, 'in.json'), 'w', encoding='utf-8') as handle:
        handle.write(json.dumps(case, indent=2, sort_keys=True) + '\n')
    document = _gate_harness.run_case(json.loads(json.dumps(case)))
    with open(os.path.join(folder, 'out.json'), 'w', encoding='utf-8') as handle:
        handle.write(json.dumps(document, indent=2, sort_keys=True) + '\n')
    summary = document['summary']
    print('%-26s %s: %d nodes, %d failed, %d drained, %d resumed' % (
        name, summary['verdict'], summary['nodes'], summary['failed'], summary['drained'], summary['resumed']))


def main(argv):
    _pin_hwsim()
    names = argv or list(CASES)
    unknown = [name for name in names if name not in CASES]
    if unknown:
        sys.exit('unknown case(s) %s; known: %s' % (', '.join(unknown), ', '.join(CASES)))
    for name in names:
        write_case(name)


if __name__ == '__main__':
    main(sys.argv[1:])
