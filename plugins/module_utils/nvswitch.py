# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVSwitch generation from the hardware, before any driver is installed: the PCI functions, the nvidia-nvswitch
driver's proc tree and the ConnectX bridge functions' Vital Product Data (VPD). Pure: bytes and lists in, dicts out.

What a node shows, per NVLink generation (sources beside each constant below):

- NVLink 2/3/4 (HGX-2 V100, HGX A100, HGX H100/H200): the NVSwitch chips are PCI functions of NVIDIA (10de), class
  0680 ("Bridge"), device 1ac2 / 1af1 / 22a3. The nvidia-nvswitch driver (part of nvidia.ko) adds one directory per
  switch under /proc/driver/nvidia-nvswitch/devices/ named by its PCI address (``0000:05:00.0``), each with an
  ``information`` file, and /dev/nvidia-nvswitchN: neither exists before the driver is loaded, so the PCI IDs decide
  on a fresh node.
- NVLink 5 (HGX B200/B300): the NVSwitches are not PCI devices of the host. They are managed through ConnectX-7
  "bridge" functions (15b3:1021) on the baseboard whose VPD carries the vendor field ``SMDL=SW_MNG``; the fabric
  manager and NVLSM reach the switches through them over InfiniBand MADs (ib_umad). The bridge functions also appear
  as RDMA devices (mlx5_N) next to the compute HCAs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError

NVIDIA_VENDOR = '10de'
MELLANOX_VENDOR = '15b3'
# PCI class 0680 (bridge, other): the class the NVSwitch driver claims (NVIDIA/open-gpu-kernel-modules
# kernel-open/nvidia/linux_nvswitch.c); real lspci -Dnn lines read "Bridge [0680]: NVIDIA Corporation GH100
# [H100 NVSwitch] [10de:22a3] (rev a1)".
NVSWITCH_CLASS = '0680'
# device id -> (NVLink generation, baseboard). pci.ids ("1af1 GA100 [A100 NVSwitch]", "22a3 GH100 [H100 NVSwitch]";
# 1ac2 is HGX-2's V100 NVSwitch) and NVIDIA's Fabric Manager user guide's baseboard listings
# (docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/). 10de:2901 is the B200 GPU itself (GB100), not a
# switch: B200/B300 switches never enumerate on the host (the same guide: "not recognized as PCIe devices").
NVSWITCH_DEVICES = {
    '1ac2': (2, 'HGX-2 (V100)'),
    '1af1': (3, 'HGX A100'),
    '22a3': (4, 'HGX H100/H200'),
}
# ConnectX-7 (pci.ids "1021 MT2910 Family [ConnectX-7]"), the bridge silicon of HGX B200/B300.
CONNECTX7_DEVICE = '1021'
# NVIDIA's own test for an NVLink 5 system: grep -q "SW_MNG" /sys/class/infiniband/*/device/vpd
# (NVIDIA/gpu-driver-container ubuntu22.04/nvidia-driver, _assert_nvlink5_system). siderolabs/extensions'
# fabric-manager wrapper looks for "SMDL=SW_MNG" (nvidia-fabricmanager-wrapper/nvswitch.go, quoting the Fabric
# Manager user guide: "the LPF VPD information includes a vendor-specific field called SMDL, with a non-zero value
# defined as SW_MNG").
BRIDGE_MARKER = b'SW_MNG'
BRIDGE_FIELD = 'SMDL'
NVLINK5 = 5

# The packages an NVLink 5 node needs besides the fabric manager (NVLSM, NVSDM) are named by branch and OS in
# nvidia_packages.package_names() and chosen by nvidia_driver.driver_plan from this module's generation: one table.
# NVLSM talks to the switches through the user MAD interface: the driver container waits for "mlx5_core" and
# "ib_umad" in lsmod before it starts the fabric manager (_ensure_nvlink5_prerequisites), and the wrapper's
# message reads "please load kernel module 'ib_umad' for NVLSM to run along FabricManager" (siderolabs/extensions
# nvidia-fabricmanager-wrapper/main.go). mlx5_ib too: without it the bridges have no RDMA device, detection through
# /sys/class/infiniband finds nothing and the GPUs stay "In Progress" (NVIDIA/gpu-operator #2781, an HGX B200 AMI
# that loads neither); nvswitch_info reads the PCI function's VPD, so it sees the bridges either way.
NVLINK5_MODULES = ['mlx5_ib', 'ib_umad']

# PCI VPD resource tags (PCI Local Bus 3.0 sec. 6.4 / PCIe r6.0 sec. 6.27): large resources 0x82 identifier string,
# 0x90 VPD-R (read-only keywords), 0x91 VPD-W (read-write keywords), each with a 2-byte little-endian length; the
# small resource 0x78 ends the data. Keywords are 2 ASCII characters, a length byte and the value; RV's first byte
# makes the bytes from the start of the VPD through it sum to zero.
TAG_ID_STRING = 0x82
TAG_VPD_R = 0x90
TAG_VPD_W = 0x91
TAG_END = 0x78


def _text(data):
    return data.decode('latin-1').rstrip('\x00').strip()


def _keywords(data, offset, end, where):
    fields = {}
    while offset + 3 <= end:
        keyword = data[offset:offset + 2].decode('latin-1')
        length = data[offset + 2]
        value = data[offset + 3:offset + 3 + length]
        if offset + 3 + length > end:
            raise ParseError('VPD %s keyword %s runs past its resource (%d bytes at offset %d)' % (where, keyword, length, offset))
        fields[keyword] = (value, offset)
        offset += 3 + length
    return fields


def parse_vpd(data):
    """A PCI function's VPD (the bytes of sysfs ``vpd``) as ``{'product_name', 'read_only', 'read_write',
    'checksum_ok'}``: keyword -> text (RV and RW left out; ``checksum_ok`` None without RV).

    Stops at the end tag or at padding (0x00/0xff) after the last resource; raises ParseError on anything else."""
    if not isinstance(data, (bytes, bytearray)):
        raise ParseError('VPD must be bytes, got %s' % type(data).__name__)
    data = bytes(data)
    result = {'product_name': None, 'read_only': {}, 'read_write': {}, 'checksum_ok': None}
    offset = 0
    while offset < len(data):
        tag = data[offset]
        if tag == TAG_END or (tag in (0x00, 0xff) and offset > 0):
            break
        if not tag & 0x80:
            raise ParseError('VPD small resource 0x%02x at offset %d is not the end tag' % (tag, offset))
        if offset + 3 > len(data):
            raise ParseError('VPD resource 0x%02x at offset %d has no length' % (tag, offset))
        length = data[offset + 1] | (data[offset + 2] << 8)
        start, end = offset + 3, offset + 3 + length
        if end > len(data):
            raise ParseError('VPD resource 0x%02x at offset %d claims %d bytes, %d left' % (tag, offset, length, len(data) - start))
        if tag == TAG_ID_STRING:
            result['product_name'] = _text(data[start:end])
        elif tag in (TAG_VPD_R, TAG_VPD_W):
            fields = _keywords(data, start, end, 'VPD-R' if tag == TAG_VPD_R else 'VPD-W')
            if tag == TAG_VPD_R and 'RV' in fields and fields['RV'][0]:
                # the checksum byte is RV's first: the bytes from the start of the VPD through it sum to zero
                result['checksum_ok'] = sum(data[:fields['RV'][1] + 4]) & 0xff == 0
            target = result['read_only'] if tag == TAG_VPD_R else result['read_write']
            for keyword, (value, dummy) in fields.items():
                if keyword not in ('RV', 'RW'):
                    target[keyword] = _text(value)
        else:
            raise ParseError('VPD resource tag 0x%02x at offset %d is not 0x82, 0x90 or 0x91' % (tag, offset))
        offset = end
    if result['product_name'] is None and not result['read_only']:
        raise ParseError('no VPD identifier string or read-only fields')
    return result


def vendor_fields(vpd):
    """Every ``KEY=VALUE`` pair of the parsed VPD's vendor-specific fields (V0..VZ), as Mellanox's VA field lists them
    (``MLX:MN=MLNX:CSKU=V2:UUID=V3:PCI=V0:MODL=CX713106A``): key -> value."""
    pairs = {}
    for keyword, value in sorted((vpd or {}).get('read_only', {}).items()):
        if not keyword.startswith('V'):
            continue
        for part in value.split(':'):
            key, sep, val = part.partition('=')
            if sep and key.strip():
                pairs[key.strip()] = val.strip()
    return pairs


def build_vpd(product_name, read_only, read_write=None):
    """The VPD bytes of a function with this identifier string and keywords (``read_only``: list of (keyword,
    text) in order; RV with a correct checksum is appended). The layout parse_vpd reads; for fixtures and hwsim."""
    def resource(tag, payload):
        return bytes([tag, len(payload) & 0xff, len(payload) >> 8]) + payload

    def keyword(name, value):
        value = value.encode('latin-1') if not isinstance(value, bytes) else value
        if len(value) > 255:
            raise ValueError('VPD keyword %s longer than 255 bytes' % name)
        return name.encode('ascii') + bytes([len(value)]) + value

    head = resource(TAG_ID_STRING, product_name.encode('latin-1'))
    body = b''.join(keyword(name, value) for name, value in read_only)
    # RV: checksum byte + one reserved byte, as ConnectX VPDs have ("checksum good, 1 byte(s) reserved")
    partial = head + bytes([TAG_VPD_R]) + (len(body) + 5).to_bytes(2, 'little') + body + b'RV\x02'
    checksum = (-sum(partial)) & 0xff
    data = partial + bytes([checksum, 0])
    if read_write:
        data += resource(TAG_VPD_W, b''.join(keyword(name, value) for name, value in read_write))
    return data + bytes([TAG_END])


def is_bridge_vpd(data):
    """Whether VPD bytes mark an NVSwitch management (bridge) function: NVIDIA's test, the bytes ``SW_MNG``
    anywhere (unparsable VPD included, as NVIDIA's grep does)."""
    return bool(data) and BRIDGE_MARKER in bytes(data)


def _hex_id(value):
    text = str(value or '').strip().lower()
    return text[2:] if text.startswith('0x') else text


def nvswitch_plan(pci_devices, proc_devices=None):
    """The node's NVSwitch generation and what it needs, from what nvswitch_info read.

    ``pci_devices``: one dict per PCI function: ``address``, ``vendor``, ``device``, ``class`` (sysfs text:
    ``0x10de``, ``0x22a3``, ``0x068000``), ``vpd`` (bytes, or None when absent), ``vpd_error`` (why it could not be
    read, or None), ``ib_devices`` (its RDMA device names); ``proc_devices``: the names under
    /proc/driver/nvidia-nvswitch/devices (None when the directory is absent: no driver).

    Returns ``{'generation', 'baseboard', 'nvswitches', 'bridges', 'bridge_devices', 'fabric_manager', 'nvlsm',
    'kernel_modules', 'source', 'warnings'}``: ``generation`` 0 (no NVSwitch), 2..4 from the switch PCI
    IDs, 5 from the bridge functions, None for an NVSwitch the tables do not know."""
    warnings = []
    switches, bridges, unreadable = [], [], []
    for device in pci_devices or []:
        vendor, device_id = _hex_id(device.get('vendor')), _hex_id(device.get('device'))
        klass = _hex_id(device.get('class'))[:4]
        address = device.get('address')
        if vendor == NVIDIA_VENDOR and klass == NVSWITCH_CLASS:
            generation, board = NVSWITCH_DEVICES.get(device_id, (None, None))
            switches.append({'address': address, 'device_id': '%s:%s' % (vendor, device_id),
                             'generation': generation, 'baseboard': board})
        elif vendor == MELLANOX_VENDOR:
            if is_bridge_vpd(device.get('vpd')):
                fields = {}
                try:
                    fields = vendor_fields(parse_vpd(device['vpd']))
                except ParseError:
                    pass
                bridges.append({'address': address, 'device_id': '%s:%s' % (vendor, device_id),
                                'ib_devices': sorted(device.get('ib_devices') or []),
                                'field': fields.get(BRIDGE_FIELD)})
            elif device.get('vpd_error'):
                unreadable.append('%s (%s)' % (address, device['vpd_error']))
    proc = sorted(proc_devices or [])
    known = set(item['address'] for item in switches)
    for name in proc:
        if name not in known:
            switches.append({'address': name, 'device_id': None, 'generation': None, 'baseboard': None})
    switches.sort(key=lambda item: item['address'] or '')
    bridges.sort(key=lambda item: item['address'] or '')

    if bridges:
        generation, baseboard, source = NVLINK5, 'HGX B200/B300', 'vpd'
        if switches:
            warnings.append('NVSwitch PCI functions (%s) next to NVLink 5 bridge functions: the bridges decide'
                            % ', '.join(item['address'] for item in switches))
    elif switches:
        gens = set(item['generation'] for item in switches)
        source = 'proc' if all(item['device_id'] is None for item in switches) else 'pci'
        if None in gens:
            generation, baseboard = None, None
            warnings.append('NVSwitch functions the tables do not know (%s): the fabric manager is enabled, the '
                            'generation is unknown' % ', '.join('%s %s' % (item['address'], item['device_id'] or 'in proc')
                                                                for item in switches if item['generation'] is None))
        else:
            generation = max(gens)
            baseboard = [item['baseboard'] for item in switches if item['generation'] == generation][0]
    else:
        generation, baseboard, source = 0, None, None
    if unreadable and not bridges:
        warnings.append('the VPD of %s could not be read (root is needed on kernels before 6.13): an NVLink 5 bridge '
                        'there would be missed' % ', '.join(unreadable))
    nvlink5 = generation == NVLINK5
    return {
        'generation': generation,
        'baseboard': baseboard,
        'nvswitches': switches,
        'bridges': bridges,
        'bridge_devices': sorted(set(name for item in bridges for name in item['ib_devices'])),
        'fabric_manager': bool(switches or bridges),
        'nvlsm': nvlink5,
        'kernel_modules': list(NVLINK5_MODULES) if nvlink5 else [],
        'source': source,
        'warnings': warnings,
    }
