"""What a host's hardware looks like right now: profile + fabric position + injected faults.

The stand-ins print from these views only, so every tool on every host
agrees on states, widths, rates, LIDs and GUIDs.
"""
import os

from hwsim import faults as fault_kinds, fabric as fabrics, links, profile as profiles, smstate, state as states


class SimError(Exception):
    """The simulator cannot answer for this host (no fabric entry, no profile)."""


class Context(object):
    """Where a stand-in reads from and writes to; built from the environment or by tests."""

    def __init__(self, host, state_dir, fabric_path, profile_dir, out, err, environ=None):
        self.host = host
        self.local_host = host   # the host this runs on (``hwsim fault gpu02 ...`` retargets ``host``)
        self.environ = {} if environ is None else environ
        self.state_dir = state_dir
        self.fabric_path = fabric_path
        self.profile_dir = profile_dir
        self.out = out
        self.err = err
        self._fabric = None
        self._sm = None
        self._rewriting = False
        # the host's file system as the driver model sees it (lab/hwsim/README.md "Driver model"): / in the lab,
        # a temporary directory in tests ($HWSIM_ROOT); the running kernel ($HWSIM_KERNEL in tests, else uname -r)
        self.root = self.environ.get('HWSIM_ROOT') or '/'
        self.kernel = self.environ.get('HWSIM_KERNEL') or os.uname().release

    @classmethod
    def from_env(cls, environ, out, err):
        return cls(states.hostname(environ), states.state_dir(environ), fabrics.fabric_path(environ),
                   profiles.profile_dir(environ), out, err, environ)

    @property
    def fabric(self):
        if self._fabric is None:
            self._fabric = fabrics.load_fabric(self.fabric_path)
        return self._fabric

    @property
    def sm(self):
        """smstate.SubnetStates when the fabric runs ibsim (ports follow the SM), else None (ports are Active)."""
        if self._sm is None:
            self._sm = smstate.SubnetStates(self.fabric, self.local_host, self.root, self.environ,
                                            on_change=self._sm_changed) if smstate.applies(self.fabric) else False
        return self._sm or None

    def _sm_changed(self):
        """A new SM answer: this host's sysfs port files follow it, where ``hwsim devices`` wrote a tree."""
        from hwsim import sysfs  # pylint: disable=import-outside-toplevel  # sysfs builds on this module's views
        if self._rewriting or not os.path.isdir(os.path.join(self.root, sysfs.SYS_DIR)):
            return
        self._rewriting = True
        try:
            sysfs.write_port_states(self.root, self.host_model(self.local_host))
        except (OSError, SimError):
            pass
        finally:
            self._rewriting = False

    def host_model(self, host=None):
        """HostModel of ``host`` (default: this host)."""
        host = host or self.host
        entry = self.fabric['hosts'].get(host)
        if entry is None:
            raise SimError('host %s is not in %s' % (host, self.fabric_path))
        prof = profiles.load(entry['profile'], self.profile_dir) if entry.get('profile') else None
        prof = profiles.renumber_ipv4(prof, self.fabric.get('ipv4_networks'))
        return HostModel(host, entry['index'], prof, states.load(self.state_dir, host), self.fabric, self.sm)

    def load_state(self):
        return states.load(self.state_dir, self.host)

    def save_state(self, data):
        states.save(self.state_dir, self.host, data)

    def write(self, text):
        self.out.write(text)

    def error(self, text):
        self.err.write(text)


class PortView(object):
    """One HCA port as the kernel would report it now.

    The logical state of an InfiniBand port is the subnet manager's doing. In a lab whose fabric runs ibsim (a real
    OpenSM, issue 32) it is read from ibsim (hwsim/smstate.py): ``Initializing`` with LID 0 and SM LID 0 until a master
    SM's sweep, then Active. Without ibsim, hwsim stands in for the SM: the profile's state, Active by default. Faults
    (port-down, link-width, ...) apply on top of either."""

    def __init__(self, host_model, hca, port):
        self.host = host_model.host
        self.host_index = host_model.index
        self.hca = hca
        self.port = port
        self.ca_name = hca['name']
        self.number = port['port']
        self.link_layer = port['link_layer']
        self.netdev = port.get('netdev') or ''
        self.mtu = port.get('mtu', 4096)
        self.node_guid = profiles.node_guid(host_model.index, hca['name'])
        self.system_image_guid = profiles.system_image_guid(host_model.index, host_model.profile, hca)
        self.port_guid = profiles.port_guid(host_model.index, hca, port)
        self.capability_mask = hca.get('capability_mask', '0x00010000')
        self.max_width = port['width']
        self.max_lane_speed = links.lane_speed(port['lane_speed_gbps'])
        self.state = port.get('state', 'Active')
        self.physical_state = port.get('physical_state', 'LinkUp')
        self.width = self.max_width
        self.lane_speed = self.max_lane_speed
        self.is_ib = self.link_layer == 'InfiniBand'
        subnet = fabrics.subnet_of(host_model.fabric, host_model.host, hca['name']) if self.is_ib else None
        # what the SM made of the port (ibsim labs only): its state, and whether it gave a LID and an SM LID
        answer = host_model.sm.answer(subnet['name']) if subnet and host_model.sm is not None else None
        if answer is not None:
            self.state, self.physical_state = answer['state'], answer['physical_state']
        self.faults = fault_kinds.for_hca(host_model.state['faults'], hca['name'])
        self._apply_faults()
        self.up = self.state != 'Down'
        self.active = self.state == 'Active'
        has_lid = self.is_ib and self.up and (answer is None or answer['lid'] != 0)
        self.lid = profiles.lid(host_model.index, hca['name']) if has_lid else 0
        sm_lid = subnet['sm_lid'] if subnet else host_model.fabric.get('subnet_manager', {}).get('lid', 0)
        self.sm_lid = sm_lid if self.is_ib and self.up and (answer is None or answer['sm_lid'] != 0) else 0
        self.lmc = 0
        self.rate = links.rate(self.width, self.lane_speed)
        self.rate_text = links.rate_text(self.width, self.lane_speed)
        self.gids = profiles.gids(host_model.index, hca, port, subnet['prefix'] if subnet else None)
        self._naming = host_model.fabric.get('node_description') or {}
        self.ipv4 = profiles.ipv4(host_model.index, port)

    def _apply_faults(self):
        if 'link-width' in self.faults:
            self.width = self.faults['link-width']['width']
        if 'link-speed' in self.faults:
            self.lane_speed = min(self.max_lane_speed, links.lane_speed(self.faults['link-speed']['gbps']))
        if 'port-down' in self.faults:
            down = links.DOWN_LINK[self.link_layer]
            self.state = 'Down'
            self.physical_state = down['physical_state']
            self.width = down['width']
            self.lane_speed = down['lane_speed_gbps']

    @property
    def description(self):
        """IB node description: ``<hostname> <ca name>`` as rdma-ndd sets it, or the fabric's mode (profile.node_description)."""
        return profiles.node_description(self._naming.get('mode') or 'mlx5', self.host, self.hca,
                                         self._naming.get('domain') or 'lab.example')


class HostModel(object):
    """A lab host: name, index, profile (None for hosts without GPUs/HCAs) and state."""

    def __init__(self, host, index, prof, state, fabric, sm=None):
        self.host = host
        self.index = index
        self.profile = prof
        self.state = state
        self.fabric = fabric
        # smstate.SubnetStates in a lab whose fabric runs ibsim (PortView reads the SM's answer), else None
        self.sm = sm
        # the loaded driver's version and its CUDA version when the driver model answers (hwsim/driver.py: a
        # stand-in libnvidia-ml is installed); None: the profile's
        self.driver_version = None
        self.cuda_version = None
        # {loaded module: version} for the dmesg stand-in when the driver model answers; None: the profile's driver
        self.kernel_modules = None

    @property
    def hcas(self):
        """HCAs in sysfs order (lexical by name); empty without a profile. ``firmware`` is the running firmware
        (:func:`running_firmware`): ibstat, ibv_devinfo, ibdev2netdev -v and mlxfwmanager all print it from here."""
        if not self.profile:
            return []
        versions = running_firmware(self.profile, self.state['faults'])
        return [hca if versions[hca['name']] == hca['firmware'] else dict(hca, firmware=versions[hca['name']])
                for hca in profiles.sorted_hcas(self.profile)]

    def hca_names(self):
        return [hca['name'] for hca in self.hcas]

    def ports(self, ca_name=None):
        """PortView of every port (of one CA when ca_name is given)."""
        views = []
        for hca in self.hcas:
            if ca_name is not None and hca['name'] != ca_name:
                continue
            views.extend(PortView(self, hca, port) for port in hca['ports'])
        return views

    def port_by_netdev(self, netdev):
        for view in self.ports():
            if view.netdev == netdev:
                return view
        return None


def adapter_of(hca):
    """The card an HCA is a port (PCI function) of: the profile's ``adapter``, else its own name."""
    return hca.get('adapter') or hca['name']


def running_firmware(profile, faults):
    """{HCA name: firmware it runs}: the profile's, replaced by ``firmware`` faults in the order they were injected.
    ``firmware VERSION`` changes every HCA; ``firmware HCA VERSION`` the HCA and the other ports of its adapter (one
    card, one flash). A flash by the mlxfwmanager stand-in becomes such a fault at the next boot."""
    versions = dict((hca['name'], hca['firmware']) for hca in profile['hcas'])
    adapters = dict((hca['name'], adapter_of(hca)) for hca in profile['hcas'])
    for fault in fault_kinds.of_kind(faults, 'firmware'):
        target = fault['args'].get('hca', '*')
        for name in versions:
            if target == '*' or adapters.get(target) == adapters[name]:
                versions[name] = fault['args']['version']
    return versions


def pid():
    """Process id printed in ibwarn/ibpanic prefixes."""
    return os.getpid()
