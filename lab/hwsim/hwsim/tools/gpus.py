"""The GPUs of a host as the driver would report them now: profile + GPU faults.

Shared by the nvidia-smi, dcgmi and dmesg stand-ins and by ``hwsim devices``.
Fault arguments name a GPU by its profile index (its slot, stable); the tools
print the NVML index, which is the position among the GPUs the driver sees:
with ``gpu-missing 3`` on an 8-GPU node the GPU in slot 4 is ``GPU 3``. The
device minor number stays the slot (``/dev/nvidia4``), as the driver's probe
order does not change when a GPU drops out later.

Derived identifiers (host index ``h``, slot ``s``): UUID
``GPU-4857534d-hhhh-4000-8000-0000000000ss`` (hex), serial ``1654<hhhh><ss>0``
in decimal (13 digits), board id ``0x<bus>00``, module id ``s + 1``. VBIOS: the architecture's (``VBIOS``) unless
a ``vbios GPU VERSION`` fault says otherwise.
"""
from hwsim import faults as fault_kinds

# PCI device ids nvidia-smi prints as "Device Id" (0x<device><vendor>) and dcgmi as "GPU Device IDs Detected".
# A profile's gpus.pci_device_id overrides it (pci-ids.ucw.cz, vendor 10de).
DEVICE_IDS = {'NVIDIA H100 80GB HBM3': '2330', 'NVIDIA A100-SXM4-80GB': '20b2', 'NVIDIA A100-SXM4-40GB': '20b0',
              'NVIDIA H100 PCIe': '2331', 'NVIDIA H100 NVL': '2321', 'NVIDIA H200': '2335', 'NVIDIA B200': '2901'}
SUBSYSTEM_IDS = {'NVIDIA H100 80GB HBM3': '0x16C110DE', 'NVIDIA A100-SXM4-80GB': '0x147F10DE'}
ARCHITECTURES = {'H100': 'Hopper', 'H200': 'Hopper', 'A100': 'Ampere', 'B200': 'Blackwell'}
VBIOS = {'Hopper': '96.00.74.00.01', 'Ampere': '92.00.45.00.03', 'Blackwell': '97.00.88.00.0F'}
PCIE_GENERATION = {'Hopper': 5, 'Ampere': 4, 'Blackwell': 5}
# NVSwitches on the baseboard by NVLink generation (HGX A100: 6 third-generation, HGX H100: 4 fourth-generation,
# HGX B200: 2 fifth-generation).
NVSWITCHES = {3: 6, 4: 4, 5: 2}
# Clock event reasons as nvidia-smi names them in --query-gpu (clocks_event_reasons.<name>) and in -q.
CLOCK_EVENTS = (
    ('gpu_idle', 'Idle'), ('applications_clocks_setting', 'Applications Clocks Setting'), ('sw_power_cap', 'SW Power Cap'),
    ('hw_slowdown', 'HW Slowdown'), ('hw_thermal_slowdown', 'HW Thermal Slowdown'),
    ('hw_power_brake_slowdown', 'HW Power Brake Slowdown'), ('sync_boost', 'Sync Boost'),
    ('sw_thermal_slowdown', 'SW Thermal Slowdown'), ('display_clock_setting', 'Display Clock Setting'),
)
RESERVED_MIB = 551
IDLE = {'temperature': 36, 'memory_temperature': 44, 'power_w': 71.97, 'sm_mhz': 345, 'mem_mhz': 2619, 'max_sm_mhz': 1980}
BUSY = {'power_w': 118.01, 'sm_mhz': 1980}


def uuid(host_index, slot):
    return 'GPU-4857534d-%04x-4000-8000-%012x' % (host_index, slot)


def serial(host_index, slot):
    return '1654%06d%02d0' % (host_index, slot)


def architecture(model):
    for key, value in ARCHITECTURES.items():
        if key in model:
            return value
    return 'Hopper'


class GpuView(object):
    """One GPU as NVML reports it now (healthy values from the profile, GPU faults applied)."""

    def __init__(self, host_model, device, index):
        gpus = host_model.profile['gpus']
        faults = host_model.state['faults']
        self.slot = device['index']
        self.index = index
        self.minor = self.slot
        self.name = gpus['model']
        self.architecture = architecture(self.name)
        self.uuid = uuid(host_model.index, self.slot)
        self.serial = serial(host_model.index, self.slot)
        reflashed = [fault['args']['version'] for fault in fault_kinds.of_kind(faults, 'vbios') if fault['args']['gpu'] == self.slot]
        self.vbios = reflashed[-1] if reflashed else VBIOS[self.architecture]
        self.pci_bus_id = device['pci_bus_id']
        self.numa_node = device['numa_node']
        self.cpu_list = device['cpu_list']
        self.nearest_hca = device.get('nearest_hca')
        self.memory_total = gpus['memory_mib']
        self.power_default = gpus.get('power_default_w', gpus['power_limit_w'])
        capped = [fault['args']['watts'] for fault in fault_kinds.of_kind(faults, 'power-capped') if fault['args']['gpu'] == self.slot]
        self.power_limit = capped[-1] if capped else gpus['power_limit_w']
        self.device_id = str(gpus.get('pci_device_id') or DEVICE_IDS.get(self.name, '2330')).lower().replace('0x', '')
        pcie = gpus.get('pcie') or {}
        self.pcie_gen_max = pcie.get('max_gen', PCIE_GENERATION.get(self.architecture, 5))
        self.pcie_width_max = pcie.get('max_width', 16)
        narrow = [fault['args']['width'] for fault in fault_kinds.of_kind(faults, 'pcie-degraded') if fault['args']['gpu'] == self.slot]
        self.pcie_width = narrow[-1] if narrow else self.pcie_width_max
        self.thermal_throttle = any(fault['args']['gpu'] == self.slot for fault in fault_kinds.of_kind(faults, 'thermal-throttle'))
        states = [fault['args']['state'] for fault in fault_kinds.of_kind(faults, 'fabric-state')]
        # a profile without NVSwitches (PCIe, NVL) prints N/A; gpus.fabric_state: N/A says so
        self.fabric_state = gpus.get('fabric_state', 'Completed')
        if self.fabric_state != 'N/A' and getattr(host_model, 'fabric_registered', None) is False:
            # the fabric manager has not started in this boot (driver.fabric_registered)
            self.fabric_state = 'In Progress'
        if states and self.fabric_state != 'N/A':
            self.fabric_state = fault_kinds.FABRIC_STATES[states[-1]]
        # driver.persistence_mode: None where nothing models it (no stand-in library, no nvidia-persistenced)
        self.persistence_mode = getattr(host_model, 'persistence_mode', None) or 'Enabled'
        self.driver_version = host_model.driver_version or gpus['driver_version']
        self.cuda_version = str(host_model.cuda_version or gpus['cuda_version'])
        nvlink = gpus.get('nvlink') or {}
        self.link_speed = nvlink.get('link_speed_gbps', 0)
        self.nvlink_generation = nvlink.get('generation', 0)
        down = set(fault['args']['link'] for fault in fault_kinds.of_kind(faults, 'nvlink-down') if fault['args']['gpu'] == self.slot)
        self.links = [number not in down for number in range(nvlink.get('links_per_gpu', 0))]
        # nvlink -e: which counter names (None: by driver version, nvidia_smi.nvlink5_counters) and the errors of
        # nvlink-errors faults, link -> count
        self.nvlink_counters = nvlink.get('counters')
        self.nvlink_errors = dict((fault['args']['link'], fault['args']['count']) for fault in fault_kinds.of_kind(faults, 'nvlink-errors')
                                  if fault['args']['gpu'] == self.slot)
        self.ecc_pending = any(fault['args']['gpu'] == self.slot for fault in fault_kinds.of_kind(faults, 'ecc-pending'))
        self.remap_pending = any(fault['args']['gpu'] == self.slot for fault in fault_kinds.of_kind(faults, 'row-remap-pending'))
        self.processes = [(fault['args']['pid'], fault['args']['name'], 1024)
                          for fault in fault_kinds.of_kind(faults, 'gpu-process') if fault['args']['gpu'] == self.slot]

    @property
    def bus(self):
        """The PCI bus number as two hex digits (``1B``)."""
        return self.pci_bus_id.split(':')[1]

    @property
    def kernel_bus_id(self):
        """``0000:1b:00.0``: as the kernel spells it."""
        domain, bus, rest = self.pci_bus_id.split(':')
        return ('%04x:%s:%s' % (int(domain, 16), bus, rest)).lower()

    @property
    def active_links(self):
        return sum(1 for up in self.links if up)

    @property
    def ecc_volatile_uncorrectable(self):
        return 2 if self.ecc_pending else 0

    @property
    def remapped_uncorrectable(self):
        return 1 if self.remap_pending else 0

    @property
    def memory_used(self):
        return sum(used for _pid, _name, used in self.processes) + (9 if self.processes else 0)

    @property
    def busy(self):
        return bool(self.processes)

    @property
    def power_draw(self):
        return BUSY['power_w'] if self.busy else IDLE['power_w']

    @property
    def sm_clock(self):
        return BUSY['sm_mhz'] if self.busy else IDLE['sm_mhz']

    @property
    def fabric_status(self):
        if self.fabric_state == 'N/A':
            return 'N/A'
        return 'Success' if self.fabric_state == 'Completed' else 'N/A'

    def clock_event(self, reason):
        """``Active`` or ``Not Active`` for one of :data:`CLOCK_EVENTS`' names."""
        active = {'gpu_idle': not self.busy and not self.thermal_throttle,
                  'sw_power_cap': self.busy and self.power_limit < self.power_default,
                  'hw_slowdown': self.thermal_throttle, 'hw_thermal_slowdown': self.thermal_throttle}
        return 'Active' if active.get(reason) else 'Not Active'


def missing_slots(state):
    return set(fault['args']['index'] for fault in fault_kinds.of_kind(state['faults'], 'gpu-missing'))


def visible(host_model):
    """GpuView of every GPU the driver sees, NVML index order (PCI order of the present GPUs)."""
    if not host_model.profile or not host_model.profile.get('gpus'):
        return []
    missing = missing_slots(host_model.state)
    devices = [device for device in host_model.profile['gpus']['devices'] if device['index'] not in missing]
    devices.sort(key=lambda device: device['pci_bus_id'].upper())
    return [GpuView(host_model, device, index) for index, device in enumerate(devices)]


def has_gpus(host_model):
    return bool(host_model.profile and host_model.profile.get('gpus'))


def select(views, text):
    """The views ``-i TEXT`` names (index, comma list, PCI bus id or UUID), or None when one is unknown."""
    chosen = []
    for item in text.split(','):
        item = item.strip()
        found = [view for view in views if item in (str(view.index), view.uuid) or _same_bus(item, view.pci_bus_id)]
        if not found:
            return None
        chosen.extend(view for view in found if view not in chosen)
    return sorted(chosen, key=lambda view: view.index)


def _same_bus(text, bus_id):
    """nvidia-smi accepts ``00000000:1B:00.0`` and the short ``1B:00.0``, in any case."""
    if ':' not in text:
        return False
    return bus_id.upper().endswith(text.upper()) and len(text) >= 7


def nvswitch_count(view, profile=None):
    """NVSwitches of the baseboard: the profile's ``gpus.nvswitches``, else by NVLink generation."""
    count = ((profile or {}).get('gpus') or {}).get('nvswitches')
    return count if count is not None else NVSWITCHES.get(view.nvlink_generation, 0)


def driver_check(ctx, model):
    """None when NVML works (``model.driver_version``/``cuda_version`` set from the loaded driver when the driver
    model answers), else (text, exit status) of NVML's failure (hwsim/driver.py nvml)."""
    from hwsim import driver  # pylint: disable=import-outside-toplevel
    model.persistence_mode = driver.persistence_mode(ctx.root)
    nvlink = ((model.profile or {}).get('gpus') or {}).get('nvlink') or {}
    model.fabric_registered = driver.fabric_registered(ctx.root, nvlink5=nvlink.get('generation') == 5)
    result = driver.nvml(ctx.root, ctx.kernel, has_gpus(model))
    if result is None:
        return None
    text, value = result
    if text is not None:
        return text, value
    model.driver_version = value
    model.cuda_version = driver.cuda_version(value, str(model.profile['gpus']['cuda_version']))
    return None
