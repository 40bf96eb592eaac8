"""The RoCE QoS of a host's Ethernet ports as the mlx5 driver keeps it (issue 33), for module rdma_qos in the lab:
MLNX_OFED's ECN and CNP sysfs files, the verbs traffic class, RDMA-CM's configfs, and the DCB settings (trust, PFC, DSCP
APP entries) the mlnx_qos and dcb stand-ins share; all back at the driver's defaults whenever the driver starts.

Files (under the host's root; the lab points rdma_qos's ``sysfs_root`` at ``/run/hwsim/sys`` and ``configfs_root`` at
``/run/hwsim/config``), for every port of the profile whose link layer is Ethernet (GPU-fabric and storage NICs: MLNX_OFED
makes them on every mlx5 Ethernet netdev):

    run/hwsim/sys/class/net/<netdev>/device -> the PCI function      (device/infiniband/<mlx5_N>: rdma_qos finds the device)
    run/hwsim/sys/class/net/<netdev>/ecn/roce_np/enable/0..7         ECN notification point per priority, "1\\n" / "0\\n"
    run/hwsim/sys/class/net/<netdev>/ecn/roce_rp/enable/0..7         ECN reaction point per priority
    run/hwsim/sys/class/net/<netdev>/ecn/roce_np/cnp_dscp            the CNPs' DSCP, "%d\\n"
    run/hwsim/sys/class/net/<netdev>/ecn/roce_np/cnp_802p_prio       the CNPs' 802.1p priority, "%d\\n"
    run/hwsim/sys/class/infiniband/<mlx5_N>/tc/<port>/traffic_class  the verbs global traffic class; empty while unset
    run/hwsim/config/rdma_cm/<mlx5_N>/ports/<port>/default_roce_tos  RDMA-CM's default ToS, "%u\\n"
    run/hwsim/config/rdma_cm/<mlx5_N>/ports/<port>/default_roce_mode "RoCE v2\\n" or "IB/RoCE v1\\n"

Layouts: mlnx-ofed-kernel en_sysfs.c (mlx5e_sysfs_create: ``ecn/<roce_rp|roce_np>/enable/<prio>``, ``roce_np/cnp_dscp``,
``cnp_802p_prio``) and en_ecn.c (mlx5e_show_ecn_enable prints ``"%d\\n"`` of the firmware's congestion status); mlx5_ib's
traffic_class_show() (MLNX_OFED: nothing while no global class is set, ``Global tclass=N`` after one is written);
Documentation/ABI/testing/configfs-rdma_cm and drivers/infiniband/core/cma_configfs.c.

**The files are the state.** A write by rdma_qos (or ``echo``) changes a plain file in /run, which is host-local and
gone with a container restart as the kernel's state is with a boot; every reader (rdma_qos, a later stand-in) reads the
file, so nothing has to notice the write. ``hwsim devices`` rewrites the sysfs tree and keeps these files' texts.
What a plain file cannot do: answer EPERM to enabling an ECN priority that is on (mlx5e_store_ecn_enable), refuse a
mode other than the two, print ``Global tclass=106`` after ``106`` was written (it keeps the ``106`` written; rdma_qos
reads both), or make ``ports/`` when ``rdma_cm/<dev>`` is made (configfs does: make_cma_dev). So each RoCE device's
``rdma_cm/<dev>/ports/<port>/`` is made with the rest, at the driver's values; on a real host the directory appears
only once someone makes it (rdma_qos does), and the values it shows are the kernel's cma_device ones either way.

**Driver start.** Whenever ``mlx5_core`` is loaded (``hwsim boot`` after a container start, ``hwsim reboot``,
``modprobe mlx5_core`` after ``modprobe -r``) or the fault ``qos-reset`` is injected, every file above is rewritten at
the driver's defaults and the DCB settings of the host's Ethernet netdevs (``adapters`` in its state file, the mlnx_qos
and dcb stand-ins') are dropped, i.e. back at mlx5's defaults (trust pcp, no DSCP entry, PFC off, cable length 7):
nothing the collection set survives, as on the real device. The fault ``pfc-off NETDEV`` turns PFC off on one netdev,
as ``mlnx_qos -i NETDEV --pfc 0,0,0,0,0,0,0,0`` would.

The defaults, with their sources:

- ECN enabled on every priority, both roles: NVConfig ``ROCE_CC_PRIO_MASK`` ("Enables RoCE Congestion Control (DCQCN)
  on a specific priority", MLNX_OFED ``enable``) defaults to Enable in NVIDIA's DOCA "DCQCN CC Parameters" page, and
  public ``mlxconfig -d ... query`` outputs of ConnectX-5 (FW 16.35) and dual-port cards show ``ROCE_CC_PRIO_MASK_P1
  255``. Older material says the opposite (Mellanox community "DCQCN Parameters" DOC-2790: Disable; mstflint's
  ConnectX-4-era mlxconfig help: "default 0"), so firmware of that age comes up with ECN off. That the one mask
  covers both the notification and the reaction point is a reading of the table, not a capture of the files;
- CNP DSCP 48 and 802.1p priority 6: ``CNP_DSCP_P1 48`` and ``CNP_802P_PRIO_P1 6`` in the same mlxconfig outputs (the
  ConnectX-4-era help text says 0 and 7);
- traffic_class empty: mlx5_ib prints nothing while no global class is set, as a published read before ``echo 106``
  shows (shared/fixtures/real/sysfs-rdma);
- default_roce_tos 0 and default_roce_mode ``RoCE v2``: cma.c cma_add_one() sets ``default_roce_tos[port] = 0`` and the
  mode to CMA_PREFERRED_ROCE_GID_TYPE (IB_GID_TYPE_ROCE_UDP_ENCAP, printed ``RoCE v2`` by ib_cache_gid_type_str())
  when the port supports it, as ConnectX ports do.
"""
import os

from hwsim import faults as fault_kinds, smfaults, sysfs
from hwsim.tools import mlnx_qos

CONFIG_DIR = 'run/hwsim/config'
PRIORITIES = range(8)
ECN_ROLES = ('roce_np', 'roce_rp')
ECN_DEFAULT = 1          # on for every priority: NVConfig ROCE_CC_PRIO_MASK 255 / "Enable" (DOCA DCQCN CC Parameters)
CNP_DSCP_DEFAULT = 48    # NVConfig CNP_DSCP_P1 48 (mlxconfig query outputs, above)
CNP_PRIO_DEFAULT = 6     # NVConfig CNP_802P_PRIO_P1 6 (same)
ROCE_TOS_DEFAULT = 0     # cma.c cma_add_one(): default_roce_tos[port] = 0
ROCE_MODE_DEFAULT = 'RoCE v2'   # cma.c: CMA_PREFERRED_ROCE_GID_TYPE, ib_cache_gid_type_str(IB_GID_TYPE_ROCE_UDP_ENCAP)
TRAFFIC_CLASS_DEFAULT = ''      # mlx5_ib traffic_class_show(): nothing while no global class is set
DRIVER = 'mlx5_core'     # its start resets everything here
# The faults of this module: done at once, never kept in the state file (nothing to clear: a driver restart cannot be
# undone, and PFC stays off until something sets it).
KINDS = ('qos-reset', 'pfc-off')


class RoceError(Exception):
    """A roce fault that cannot be injected as given (the CLI exits with ``status``)."""

    def __init__(self, message, status=2):
        super(RoceError, self).__init__(message)
        self.status = status


def ports(model):
    """[(netdev, HCA, port number)] of the host's Ethernet ports that have a netdev, in HCA order."""
    found = []
    for hca in model.hcas:
        for port in hca.get('ports') or []:
            if (port.get('link_layer') or hca.get('link_layer')) == 'Ethernet' and port.get('netdev'):
                found.append((port['netdev'], hca, port['port']))
    return found


def netdevs(model):
    return [netdev for netdev, _hca, _port in ports(model)]


def default_files(model):
    """{path under the host's root: text} of every RoCE file at the driver's defaults."""
    files = {}
    for netdev, hca, port in ports(model):
        ecn = os.path.join(sysfs.SYS_DIR, 'class', 'net', netdev, 'ecn')
        for role in ECN_ROLES:
            for prio in PRIORITIES:
                files[os.path.join(ecn, role, 'enable', str(prio))] = '%d\n' % ECN_DEFAULT
        files[os.path.join(ecn, 'roce_np', 'cnp_dscp')] = '%d\n' % CNP_DSCP_DEFAULT
        files[os.path.join(ecn, 'roce_np', 'cnp_802p_prio')] = '%d\n' % CNP_PRIO_DEFAULT
        files[os.path.join(sysfs.SYS_DIR, 'class', 'infiniband', hca['name'], 'tc', str(port), 'traffic_class')] = \
            TRAFFIC_CLASS_DEFAULT
        cm_port = os.path.join(CONFIG_DIR, 'rdma_cm', hca['name'], 'ports', str(port))
        files[os.path.join(cm_port, 'default_roce_tos')] = '%d\n' % ROCE_TOS_DEFAULT
        files[os.path.join(cm_port, 'default_roce_mode')] = ROCE_MODE_DEFAULT + '\n'
    return files


def _read(path):
    try:
        with open(path, encoding='utf-8') as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None


def current_files(root, model):
    """{path under root: text} of the RoCE files that exist now (what a rewrite of the sysfs tree keeps)."""
    found = {}
    for path in default_files(model):
        text = _read(os.path.join(root, path))
        if text is not None:
            found[path] = text
    return found


def write_files(root, model, keep=None):
    """Write every RoCE file: the text in ``keep`` (path under root -> text) where there is one, else the driver's
    default; and each RoCE netdev's ``device`` link to its PCI function. Returns the number of files."""
    keep = keep or {}
    files = default_files(model)
    for path, text in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, 'w', encoding='utf-8') as handle:
            handle.write(keep.get(path, text))
    for netdev, hca, _port in ports(model):
        link = os.path.join(root, sysfs.SYS_DIR, 'class', 'net', netdev, 'device')
        target = os.path.join('..', '..', '..', 'bus', 'pci', 'devices', sysfs.pci_address(hca['pci']))
        if os.path.lexists(link) and os.readlink(link) != target:
            os.unlink(link)
        if not os.path.lexists(link):
            os.symlink(target, link)
    return len(files)


def reset_dcb(ctx, model):
    """Drop the host's Ethernet netdevs' DCB settings (mlnx_qos and dcb): mlx5's defaults again. Returns those dropped."""
    data = ctx.load_state()
    dropped = [netdev for netdev in netdevs(model) if netdev in data['adapters']]
    if dropped:
        for netdev in dropped:
            del data['adapters'][netdev]
        ctx.save_state(data)
    return dropped


def driver_start(ctx, model=None, root=None):
    """What a start of mlx5_core does to the QoS: every RoCE file and the DCB settings back at the driver's defaults."""
    model = model or ctx.host_model()
    write_files(ctx.root if root is None else root, model)
    reset_dcb(ctx, model)


def inject(ctx, local, fault):
    """``hwsim fault [HOST] qos-reset`` (a driver restart, on the host hwsim runs on: its /run files) or
    ``hwsim fault [HOST] pfc-off NETDEV`` (the shared state file: from any host). Raises RoceError."""
    if fault['kind'] == 'qos-reset':
        host = fault['args'].get('host', smfaults.THIS_HOST)
        if host != smfaults.THIS_HOST:
            ctx.host = host
        try:
            smfaults.check_local(fault['kind'], ctx.host, local)
        except smfaults.ActionError as exc:
            raise RoceError(str(exc), status=1)
        model = ctx.host_model()
        if not ports(model):
            raise RoceError('fault qos-reset: %s has no Ethernet RDMA port (profile %s)' % (
                ctx.host, (model.profile or {}).get('name', 'none')))
        driver_start(ctx, model)
        return
    model = ctx.host_model()
    netdev = fault['args']['netdev']
    if netdev not in netdevs(model):
        raise RoceError('fault pfc-off: unknown NETDEV %r on %s; allowed: %s (usage: hwsim fault %s)' % (
            netdev, ctx.host, ', '.join(netdevs(model)) or 'none', fault_kinds.usage('pfc-off')))
    data = ctx.load_state()
    adapter = mlnx_qos.load_adapter(data, netdev)
    adapter['pfc'] = [0] * 8
    mlnx_qos.store_adapter(ctx, data, netdev, adapter)
