"""The IPoIB rails of the lab check lab (make lab-check), which come up as a freshly installed node has them (no address,
MTU 2044: lab/hwsim/README.md "Fresh rails") and which test_oldest_ansible.py's site run addressed through the fabric
stage (role ipoib, systemd-networkd). Issue 32: the addresses survive a reboot; a removed address is drift that a
plain run corrects; a node whose rails are as installed fails verify on them, and passes again once the fabric stage
has run. The lab is left as it was found: addressed, every node resumed.
"""
import json
import os
import subprocess
import sys
import time

import pytest

from _labrun import INVENTORY, REPO, aicluster, lab_env, recap_changed

WORK = os.path.join(REPO, '.cache', 'rails-runs')
GPU_NODES = ['gpu01', 'gpu02', 'gpu03']


def on_host(host, command):
    """A shell command on a lab host (ansible ad hoc, as root); its stdout after ansible's header line."""
    run = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible'), '-i', INVENTORY, host, '-b', '-m',
                          'ansible.builtin.shell', '-a', command], cwd=REPO, env=lab_env(sys.executable), text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
    assert run.returncode == 0, run.stdout
    # ansible prints `HOST | CHANGED | rc=0 >>` then the output; warnings (a deprecation) may come before it
    return run.stdout.split(' >>\n', 1)[1] if ' >>\n' in run.stdout else ''


def rails(host):
    """netdev -> (first IPv4 address or None, MTU) of the host's IPoIB rails (their names start with ib)."""
    links = json.loads(on_host(host, 'ip -j addr show'))
    out = {}
    for link in links:
        if link['ifname'].startswith('ib'):
            inet = [a['local'] for a in link.get('addr_info') or [] if a.get('family') == 'inet']
            out[link['ifname']] = (inet[0] if inet else None, link['mtu'])
    return out


def _printed(output, what):
    """The path aicluster run prints on its ``report: PATH`` / ``results: PATH`` line."""
    return [line.split(': ', 1)[1] for line in output.splitlines() if line.startswith(what + ': ')][-1]


def wait_addressed(host, timeout=60):
    deadline = time.time() + timeout
    while True:
        now = rails(host)
        if now and all(address and mtu == 4092 for address, mtu in now.values()):
            return now
        if time.time() > deadline:
            return now
        time.sleep(2)


@pytest.fixture(scope='module')
def addressed_lab(gpu_lab):
    inventory = open(os.path.join(INVENTORY, 'hosts.yml'), encoding='utf-8').read()
    if 'hwsim_fresh_rails: true' not in inventory:
        pytest.fail('the lab check lab has no fresh IPoIB rails (lab.py writes hwsim_fresh_rails for hgx-h100-ib)')
    for host in GPU_NODES:
        if not all(address for address, dummy in rails(host).values()):
            fabric = aicluster(sys.executable, WORK, 'fabric')
            assert fabric.returncode == 0, fabric.stdout[-4000:]
            break
    return gpu_lab


def test_the_addresses_survive_a_reboot(addressed_lab):
    before = rails('gpu01')
    assert len(before) == 8 and all(address and mtu == 4092 for address, mtu in before.values()), before
    out = on_host('gpu01', '/opt/hwsim/bin/hwsim reboot')
    assert 'restarted hwsim-rails.service' in out and 'restarted systemd-networkd.service' in out, out
    assert wait_addressed('gpu01') == before


def test_a_removed_address_is_drift_and_a_plain_run_puts_it_back(addressed_lab):
    address, dummy = rails('gpu02')['ibp24s0']
    on_host('gpu02', 'ip addr del %s/24 dev ibp24s0' % address)
    drift = aicluster(sys.executable, WORK, 'drift', '--tags', 'ipoib')
    assert drift.returncode == 0, drift.stdout[-4000:]
    assert 'drift: 1 hosts drifted of 4' in drift.stdout.splitlines(), drift.stdout[-4000:]
    with open(_printed(drift.stdout, 'report'), encoding='utf-8') as handle:
        assert 'ibp24s0 has no IPv4 address, the plan %s' % address in handle.read()
    assert rails('gpu02')['ibp24s0'][0] is None  # the check run changed nothing

    fixed = aicluster(sys.executable, WORK, 'fabric', '--tags', 'ipoib')
    assert fixed.returncode == 0, fixed.stdout[-4000:]
    assert recap_changed(fixed.stdout)['gpu02'] > 0
    assert wait_addressed('gpu02')['ibp24s0'] == (address, 4092)
    again = aicluster(sys.executable, WORK, 'fabric', '--tags', 'ipoib')
    assert again.returncode == 0 and set(recap_changed(again.stdout).values()) == {0}, again.stdout[-4000:]


def test_rails_as_installed_fail_verify_until_the_fabric_stage_ran(addressed_lab):
    # the node as installed: the fabric stage's files gone, the rails as the driver brings them up
    for host in GPU_NODES:
        on_host(host, 'rm -f /etc/systemd/network/60-aicluster-ipoib-*.network && networkctl reload && '
                      'systemctl restart hwsim-rails.service')
        assert set(rails(host).values()) == {(None, 2044)}, host
    failed = aicluster(sys.executable, WORK, 'verify', '--tags', 'verify_ib,verify_gate')
    assert failed.returncode != 0, failed.stdout[-4000:]
    assert 'verdict: FAIL (3 of 3 nodes failed: gpu01, gpu02, gpu03)' in failed.stdout.splitlines(), failed.stdout[-4000:]
    with open(_printed(failed.stdout, 'results'), encoding='utf-8') as handle:
        nodes = json.load(handle)['nodes']
    for host in GPU_NODES:
        bad = [r for r in nodes[host]['results'] if not r['passed']]
        assert bad and all(r['check'] == 'net.mtu' and r['measured'] == 2044 for r in bad), (host, bad)
        assert 'has MTU 2044, expected at least 4092' in bad[0]['message'] and 'no IPv4 address' in bad[0]['message']

    fabric = aicluster(sys.executable, WORK, 'fabric', '--tags', 'ipoib')
    assert fabric.returncode == 0, fabric.stdout[-4000:]
    for host in GPU_NODES:
        assert all(address and mtu == 4092 for address, mtu in wait_addressed(host).values()), host
    passed = aicluster(sys.executable, WORK, 'verify', '--tags', 'verify_ib,verify_gate')
    assert passed.returncode == 0, passed.stdout[-4000:]
    assert 'verdict: PASS (0 of 3 nodes failed)' in passed.stdout.splitlines(), passed.stdout[-4000:]
