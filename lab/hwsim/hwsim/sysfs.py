"""The PCI functions of a simulated node as a sysfs/proc tree, for aicluster.infra.nvswitch_info and ib_info
(``sysfs_root``/``proc_root``): ``run/hwsim/sys`` and ``run/hwsim/proc`` under the host's root.

    run/hwsim/sys/bus/pci/devices/<address>/{vendor,device,class}      every GPU, NVSwitch and HCA function
    run/hwsim/sys/bus/pci/devices/<address>/vpd                          HCAs: binary PCI VPD
    run/hwsim/sys/bus/pci/devices/<address>/infiniband/<mlx5_N>/         HCAs: the RDMA device of the function
    run/hwsim/sys/class/infiniband/<mlx5_N>/device -> the function       as /sys/class/infiniband/*/device
    run/hwsim/proc/driver/nvidia-nvswitch/devices/<address>/information  NVSwitches, only while nvidia is loaded
    run/hwsim/sys/class/net/<netdev>/{device,ecn/}, class/infiniband/<mlx5_N>/tc/  Ethernet ports (hwsim/roce.py), with
    run/hwsim/config/rdma_cm/<mlx5_N>/ports/<port>/                      RDMA-CM's configfs; kept when the tree is rewritten
    run/hwsim/sys/class/infiniband/<mlx5_N>/ports/<port>/{state,phys_state,lid,sm_lid,rate,link_layer}   every port

The port files are what ibstat, ibstatus and ibv_devinfo print (one PortView), in the kernel's formats
(drivers/infiniband/core/sysfs.c state_show ``"%d: %s\n"`` with NOP/DOWN/INIT/ARMED/ACTIVE, phys_state_show
``"5: LinkUp\n"``, lid_show and sm_lid_show ``"0x%x\n"``, rate_show ``"400 Gb/sec (4X NDR)\n"``). Written with the
tree (``hwsim devices``, a boot), and again whenever a stand-in's query of the subnet manager (hwsim/smstate.py, ibsim
labs) gets an answer that differs from the cached one: a file read alone does not ask the SM, so after an SM's first
sweep the files say INIT until some stand-in runs (at most TTL seconds of staleness after that run).

Sources: vendor/device/class as the kernel prints them (``0x10de``, ``0x22a3``, ``0x068000``); NVSwitch class
0680 and IDs from pci.ids and lspci -Dnn of real HGX H100s (``Bridge [0680]: NVIDIA Corporation GH100 [H100
NVSwitch] [10de:22a3]``); the proc layout from NVIDIA/open-gpu-kernel-modules kernel-open/nvidia/procfs_nvswitch.c
(a directory per switch named ``%04x:%02x:%02x.%1x`` with an ``information`` file, "BIOS Version: ..."); the VPD
layout from the PCI spec (0x82 identifier string, 0x90 VPD-R keywords, RV checksum, 0x78 end) with the keywords and
Mellanox VA syntax of a real ConnectX-7 ``lspci -vv`` (PN, EC, V2, SN, V3, VA
``MLX:MN=MLNX:CSKU=V2:UUID=V3:PCI=V0:MODL=...``, V0, VU, RV: linux-pci, "PCI/sysfs: Fix read permissions for VPD
attributes", 2024-11-03); a bridge's VA adds ``SMDL=SW_MNG`` (Fabric Manager user guide: "a vendor-specific field
called SMDL, with a non-zero value defined as SW_MNG").
"""
import os
import shutil

from hwsim import driver, rails

SYS_DIR = 'run/hwsim/sys'
PROC_DIR = 'run/hwsim/proc'
NVIDIA = '0x10de'
MELLANOX = '0x15b3'
GPU_CLASS = '0x030200'       # 3D controller, as HGX GPUs enumerate
NVSWITCH_CLASS = '0x068000'  # bridge (other)
HCA_CLASS = {'InfiniBand': '0x020700', 'Ethernet': '0x020000'}
# CA type -> PCI device (pci.ids: 101b MT28908 [ConnectX-6], 101d MT2892 [ConnectX-6 Dx], 1021 MT2910 [ConnectX-7])
HCA_DEVICES = {'MT4123': '0x101b', 'MT4125': '0x101d', 'MT4129': '0x1021'}
FIRST_NVSWITCH_BUS = 0x05


def pci_address(bus_id):
    """``00000000:1B:00.0`` (nvidia-smi) or ``0000:18:00.0`` -> ``0000:1b:00.0`` (sysfs)."""
    domain, rest = bus_id.lower().split(':', 1)
    return '%04x:%s' % (int(domain, 16), rest)


def vpd_bytes(product_name, keywords):
    """PCI VPD: identifier string, VPD-R with ``keywords`` ((name, text) pairs) and RV (checksum + 1 reserved
    byte), end tag."""
    def field(name, text):
        data = text.encode('latin-1')
        return name.encode('ascii') + bytes([len(data)]) + data
    name = product_name.encode('latin-1')
    body = b''.join(field(key, value) for key, value in keywords)
    data = bytes([0x82, len(name) & 0xff, len(name) >> 8]) + name
    data += bytes([0x90]) + (len(body) + 5).to_bytes(2, 'little') + body + b'RV\x02'
    return data + bytes([(-sum(data)) & 0xff, 0, 0x78])


def hca_vpd(host_index, hca):
    """The VPD of an HCA function (a bridge's VA carries SMDL=SW_MNG)."""
    part = hca.get('part_number') or hca['ca_type']
    serial = 'MT%04dLAB%02d' % (host_index, int(hca['name'].rsplit('_', 1)[1]))
    va = 'MLX:MN=MLNX:CSKU=V2:UUID=V3:PCI=V0:MODL=%s' % part[:12]
    if hca.get('nvswitch_bridge'):
        va += ':SMDL=SW_MNG'
    keywords = [('PN', part), ('EC', 'A7'), ('V2', part), ('SN', serial),
                ('V3', '%032x' % ((host_index << 16) | int(hca['name'].rsplit('_', 1)[1]))),
                ('VA', va), ('V0', 'PCIeGen5 x16'), ('VU', serial + 'MLNXS0D0F0')]
    return vpd_bytes(hca.get('description') or part, keywords)


def nvswitch_addresses(profile):
    """The NVSwitch PCI functions of the profile (``gpus.nvswitch_pci_device``): [(address, device id)]."""
    gpus = (profile or {}).get('gpus') or {}
    device = gpus.get('nvswitch_pci_device')
    if not device:
        return []
    return [('0000:%02x:00.0' % (FIRST_NVSWITCH_BUS + number), '0x' + str(device).lower())
            for number in range(gpus.get('nvswitches') or 0)]


def _write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'wb' if isinstance(data, bytes) else 'w') as handle:
        handle.write(data)


def _function(base, address, vendor, device, klass):
    folder = os.path.join(base, 'bus', 'pci', 'devices', address)
    for name, value in (('vendor', vendor), ('device', device), ('class', klass)):
        _write(os.path.join(folder, name), value + '\n')
    return folder


# sysfs phys_state texts (drivers/infiniband/core/sysfs.c phys_state_show) where they differ from ibstat's
PHYS_STATE_TEXT = {'PhyTest': 'Phy Test'}


def port_files(view):
    """{name: text} of a port's sysfs directory ``class/infiniband/<hca>/ports/<n>/``."""
    from hwsim.tools.ibstat import PHYS_STATE_NUM, PORT_STATE_NUM, SYSFS_STATE  # pylint: disable=import-outside-toplevel
    phys_text = PHYS_STATE_TEXT.get(view.physical_state, view.physical_state)
    return {
        'state': '%d: %s\n' % (PORT_STATE_NUM[view.state], SYSFS_STATE[view.state]),
        'phys_state': '%d: %s\n' % (PHYS_STATE_NUM[view.physical_state], phys_text),
        'lid': '0x%x\n' % view.lid,
        'sm_lid': '0x%x\n' % view.sm_lid,
        'rate': view.rate_text + '\n',
        'link_layer': view.link_layer + '\n',
    }


def write_port_states(root, model):
    """(Re)write every HCA port's state files under ``root``'s tree; returns the number of ports."""
    base = os.path.join(root, SYS_DIR, 'class', 'infiniband')
    views = model.ports()
    for view in views:
        for name, text in port_files(view).items():
            path = os.path.join(base, view.ca_name, 'ports', str(view.number), name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = '%s.tmp.%d' % (path, os.getpid())   # two tools may rewrite at once
            with open(tmp, 'w', encoding='utf-8') as handle:
                handle.write(text)
            os.replace(tmp, path)
    return len(views)


def write_tree(root, model):
    """(Re)write the host's tree under ``root``; returns the number of PCI functions. Nothing without a profile."""
    from hwsim import roce  # pylint: disable=import-outside-toplevel  # roce builds on this module
    sys_base = os.path.join(root, SYS_DIR)
    proc_base = os.path.join(root, PROC_DIR)
    kept = roce.current_files(root, model) if model.profile else {}  # what the collection wrote lives until a driver start
    for path in (sys_base, proc_base):
        shutil.rmtree(path, ignore_errors=True)
    profile = model.profile
    if not profile:
        return 0
    count = 0
    gpus = profile.get('gpus') or {}
    for device in gpus.get('devices') or []:
        _function(sys_base, pci_address(device['pci_bus_id']), NVIDIA, '0x' + str(gpus.get('pci_device_id', '0000')).lower(), GPU_CLASS)
        count += 1
    switches = nvswitch_addresses(profile)
    for address, device in switches:
        _function(sys_base, address, NVIDIA, device, NVSWITCH_CLASS)
        count += 1
    if switches and driver.is_loaded(root, 'nvidia'):
        for address, _device in switches:
            _write(os.path.join(proc_base, 'driver', 'nvidia-nvswitch', 'devices', address, 'information'),
                   'BIOS Version: N/A\n')
    for hca in profile.get('hcas') or []:
        address = pci_address(hca['pci'])
        folder = _function(sys_base, address, MELLANOX, HCA_DEVICES.get(hca['ca_type'], '0x1021'),
                           HCA_CLASS.get(hca['link_layer'], '0x020700'))
        _write(os.path.join(folder, 'vpd'), hca_vpd(model.index, hca))
        os.makedirs(os.path.join(folder, 'infiniband', hca['name']), exist_ok=True)
        link = os.path.join(sys_base, 'class', 'infiniband', hca['name'])
        os.makedirs(link, exist_ok=True)
        os.symlink(os.path.join('..', '..', '..', 'bus', 'pci', 'devices', address), os.path.join(link, 'device'))
        count += 1
    write_port_states(root, model)
    # The IPoIB mode the ib_ipoib driver starts each rail in (datagram; ipoib.rst): a container's veth has no
    # /sys/class/net/<if>/mode, so the ipoib role reads it here in the lab (ipoib_sysfs_root).
    for netdev in rails.ipoib_netdevs(model):
        _write(os.path.join(sys_base, 'class', 'net', netdev, 'mode'), 'datagram\n')
    # The RoCE ports' ECN/CNP files and traffic classes, and RDMA-CM's configfs (hwsim/roce.py), with their texts kept
    roce.write_files(root, model, kept)
    return count
