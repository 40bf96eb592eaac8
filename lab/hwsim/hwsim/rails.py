"""The GPU-fabric rail interfaces as a freshly installed node has them (issue 32): IPoIB up, no address, MTU 2044.

lab/lab.py attaches each rail netdev to a podman network, and podman gives it an address and the network's MTU
when the container starts. A real node's IPoIB interface comes up without either: nothing configures it until the
fabric stage (role ipoib) does, and the ib_ipoib driver starts it in datagram mode at 2044, the IPoIB MTU of an IB
MTU of 2048, the MTU of OpenSM's default partition (Linux Documentation/infiniband/ipoib.rst: the datagram MTU is
the IB MTU minus the 4-byte IPoIB header; OpenSM's default partition has mtu code 4, 2048: osm_subnet.c, and
docs/fabric.md "MTU and rate codes"). ``hwsim rails-fresh`` (the unit hwsim-rails.service, before
systemd-networkd at every boot and in ``hwsim reboot``) takes the address podman gave away and sets that MTU, so
only the fabric stage's configuration brings a rail back.

RoCE netdevs are left as they are here: the RoCE stage (issue 33) is not built, and a RoCE rail at 1500 would fail
every lab's verify run before a stage could set it.
"""
import os
import subprocess

FRESH_IPOIB_MTU = 2044


def ipoib_netdevs(model):
    """The netdevs of this host's InfiniBand GPU-fabric ports (role compute with a rail), in HCA order."""
    out = []
    for hca in model.hcas:
        if hca.get('role') != 'compute' or hca.get('rail') is None:
            continue
        for port in hca.get('ports') or []:
            layer = port.get('link_layer') or hca.get('link_layer')
            if layer == 'InfiniBand' and port.get('netdev'):
                out.append(port['netdev'])
    return out


def fresh(model, root='/', run=subprocess.call):
    """(lines, errors): each IPoIB rail netdev that exists without its IPv4 addresses and at MTU 2044."""
    lines, errors = [], []
    for netdev in ipoib_netdevs(model):
        if not os.path.isdir(os.path.join(root, 'sys', 'class', 'net', netdev)):
            continue  # a rail the lab gives no network: no interface
        for argv in (['ip', '-4', 'addr', 'flush', 'dev', netdev], ['ip', 'link', 'set', 'dev', netdev, 'mtu', str(FRESH_IPOIB_MTU)]):
            status = run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if status != 0:
                errors.append('hwsim: rails-fresh: %s failed (exit status %d)\n' % (' '.join(argv), status))
        lines.append('%s: no address, MTU %d (datagram)\n' % (netdev, FRESH_IPOIB_MTU))
    return lines, errors
