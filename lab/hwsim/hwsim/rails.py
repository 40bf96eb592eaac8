"""The GPU-fabric rail interfaces as a freshly installed node has them (issue 32): IPoIB up, no address, MTU 2044.

lab/lab.py attaches each rail netdev to a podman network, and podman gives it an address and the network's MTU
when the container starts. A real node's IPoIB interface comes up without either: nothing configures it until the
fabric stage (role ipoib) does, and the ib_ipoib driver starts it in datagram mode at 2044, the IPoIB MTU of an IB
MTU of 2048, the MTU of OpenSM's default partition (Linux Documentation/infiniband/ipoib.rst: the datagram MTU is
the IB MTU minus the 4-byte IPoIB header; OpenSM's default partition has mtu code 4, 2048: osm_subnet.c, and
docs/fabric.md "MTU and rate codes"). ``hwsim rails-fresh`` (the unit hwsim-rails.service, before
systemd-networkd at every boot and in ``hwsim reboot``) takes the address podman gave away and sets that MTU, so
only the fabric stage's configuration brings a rail back.

RoCE netdevs (issue 33) the same way: a freshly installed node's ConnectX Ethernet port comes up at the kernel's
Ethernet default of 1500 (ETH_DATA_LEN, ether_setup() in net/ethernet/eth.c; mlx5e starts there too) and with no
address until the OS's network configuration gives one, while the "switch" (the podman network) carries 9000. The
fabric stage's roce role sets MTU 9000 and the rail's address (``roce_subnets``) through systemd-networkd.
"""
import os
import subprocess

FRESH_IPOIB_MTU = 2044
FRESH_ETHERNET_MTU = 1500
FRESH_MTU = {'InfiniBand': FRESH_IPOIB_MTU, 'Ethernet': FRESH_ETHERNET_MTU}
FRESH_NOTE = {'InfiniBand': ' (datagram)', 'Ethernet': ''}


def rail_netdevs(model, layer=None):
    """[(netdev, link layer)] of this host's GPU-fabric ports (role compute with a rail), in HCA order; only ``layer``'s
    when given."""
    out = []
    for hca in model.hcas:
        if hca.get('role') != 'compute' or hca.get('rail') is None:
            continue
        for port in hca.get('ports') or []:
            found = port.get('link_layer') or hca.get('link_layer')
            if found in FRESH_MTU and port.get('netdev') and layer in (None, found):
                out.append((port['netdev'], found))
    return out


def ipoib_netdevs(model):
    """The netdevs of this host's InfiniBand GPU-fabric ports (role compute with a rail), in HCA order."""
    return [netdev for netdev, dummy in rail_netdevs(model, 'InfiniBand')]


def fresh(model, root='/', run=subprocess.call):
    """(lines, errors): each rail netdev that exists without its IPv4 addresses and at its fresh MTU (IPoIB 2044,
    RoCE 1500)."""
    lines, errors = [], []
    for netdev, layer in rail_netdevs(model):
        if not os.path.isdir(os.path.join(root, 'sys', 'class', 'net', netdev)):
            continue  # a rail the lab gives no network: no interface
        mtu = FRESH_MTU[layer]
        for argv in (['ip', '-4', 'addr', 'flush', 'dev', netdev], ['ip', 'link', 'set', 'dev', netdev, 'mtu', str(mtu)]):
            status = run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if status != 0:
                errors.append('hwsim: rails-fresh: %s failed (exit status %d)\n' % (' '.join(argv), status))
        lines.append('%s: no address, MTU %d%s\n' % (netdev, mtu, FRESH_NOTE[layer]))
    return lines, errors
