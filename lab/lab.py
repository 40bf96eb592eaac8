"""The container lab: disposable Debian hosts with systemd as PID 1, reached over SSH.

    lab.py setup                 make this machine able to run the lab (podman settings)
    lab.py image [--force]       build the lab image from lab/image/ (cached by recipe hash)
    lab.py up [--name N] [--compute N] [--profile P] [--host-profile gpu02=P] [--no-hwsim] [--no-mirror]
                                 start ctl01 + gpu01..gpuNN, write inventories/lab/hosts.yml
                                 (inventories/lab-N/hosts.yml for a lab other than aic),
                                 install the simulated hardware (lab/hwsim/install.yml),
                                 then serve the signed package mirror from ctl01 (lab/mirror)
    lab.py mirror [--name N]     just that last step: build the mirror (cached by recipe hash)
                                 and install it on ctl01 (lab/mirror/install.yml)
    lab.py down [--name N]       remove every container, network and volume of that lab, nothing else
    lab.py status [--name N]
    lab.py fault [--name N] HOST KIND [ARGS...]
                                 inject a simulated hardware fault (lab/hwsim/README.md lists the kinds)
    lab.py clear [--name N] HOST [KIND]
                                 clear a host's faults (all, or one kind)

Networks, as on a real cluster: the management network (`<lab>-net`, MTU 1500,
what Ansible and SSH use), and one network per GPU-fabric rail whose HCA port
has an `ipv4_network` in the hardware profile (`<lab>-rail<k>-roce` at MTU
9000, `<lab>-rail<k>-ib` at the IPoIB datagram MTU 4092). Each compute host is
attached to every rail network of its profile, its interface named as the
profile's netdev (`interface_name`, podman 4+) and addressed as hwsim derives
it (`ipv4_network` + host index), so `ip addr`, `ping -I <netdev>` and
ibdev2netdev/show_gids agree.

The subnet manager, as on an InfiniBand cluster: when the compute hosts' profiles have InfiniBand rails, ctl01 is
the lab's `ib_subnet_manager` host. hwsim gives it one NDR HCA on rail 0's leaf and runs ibsim there
(`hwsim_fabric_options` `--sm-hosts ctl01 --ibsim-host ctl01`, lab/hwsim/README.md "ibsim"), the fabric stage's
opensm role runs the real OpenSM on it, and the verify stage's fabric.sm finds it master. A RoCE lab has none.

The package mirror (test equipment, lab/mirror/README.md): stand-in .deb packages
with the real names and versions of the CUDA and DOCA repositories, built by
lab/mirror/build.py into lab/.state/mirror-<hash>, signed with a throwaway key and
served by nginx on ctl01 at http://ctl01/mirror/{cuda,doca}/ (key:
http://ctl01/mirror/aicluster-lab.asc), so the stack roles install and upgrade
with apt as on a cluster.

Everything is idempotent: `up` on a running lab changes nothing, `image` with an
unchanged recipe builds nothing, nor does the mirror's build, `setup` twice
writes nothing the second time.
Every podman object the lab creates carries the label aicluster.lab=<name>,
and `down` removes by that label only.
"""
import argparse
import hashlib
import importlib.util
import ipaddress
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
STATE = os.path.join(HERE, '.state')
IMAGE_REPO = 'localhost/aicluster-lab'
IMAGE_RECIPE = os.path.join(HERE, 'image', 'build-rootfs.sh')
SUITE = os.environ.get('LAB_SUITE', 'bookworm')
MIRROR = os.environ.get('LAB_MIRROR', 'http://deb.debian.org/debian')
LABEL = 'aicluster.lab'
CONTAINERS_CONF = '/etc/containers/containers.conf.d/50-aicluster-lab.conf'
INVENTORY = os.path.join(REPO, 'inventories', 'lab', 'hosts.yml')
DEFAULT_LAB = 'aic'
HWSIM_INSTALL = os.path.join(HERE, 'hwsim', 'install.yml')
HWSIM_STATE = '/var/lib/hwsim'
DEFAULT_PROFILE = 'hgx-h100-ib'
HWSIM_DIR = os.path.join(HERE, 'hwsim')
PACKAGE_MIRROR_DIR = os.path.join(HERE, 'mirror')
PACKAGE_MIRROR_INSTALL = os.path.join(PACKAGE_MIRROR_DIR, 'install.yml')
PACKAGE_MIRROR_HOST = 'ctl01'
# The management network carries SSH and Ansible at the usual 1500; jumbo frames live on the rails.
MANAGEMENT_MTU = 1500
# Rail networks by link layer: RoCE netdevs at 9000, IPoIB interfaces at the datagram MTU (IB MTU 4096 - 4).
RAIL_MTU = {'Ethernet': 9000, 'InfiniBand': 4092}
RAIL_SUFFIX = {'Ethernet': 'roce', 'InfiniBand': 'ib'}
SSH_KEY = os.path.join(STATE, 'ssh', 'id_ed25519')
# The simulated fabric as real ones are (lab/hwsim/README.md "Fabric"): MLNX_OFED node descriptions ("host HCA-N":
# identity comes from GUIDs), unmanaged leaves sharing one name, two scalable units joined by the spines. Every lab's
# inventory carries them as hwsim_fabric_options, an InfiniBand lab's with its subnet manager's (fabric_options).
FABRIC_OPTIONS = ['--descriptions', 'ofed', '--switch-names', 'identical', '--scalable-units', '2']
# An InfiniBand lab's subnet manager: ctl01 gets an NDR HCA on rail 0's leaf (hwsim profile sm-host-ib) and runs ibsim,
# and the fabric stage's opensm role runs the real OpenSM there (lab/hwsim/README.md "ibsim").
SM_HOST = 'ctl01'
# Capabilities beyond podman's defaults: sshd's PAM audit records, ping -M do
# (MTU checks), mknod for simulated /dev/nvidia* devices, ip link for IPoIB/RoCE roles,
# and root reading other users' /proc/PID/fd as on a real node (the Slurm epilog finds a
# job's leftover processes on its GPUs there).
CAPABILITIES = ['AUDIT_WRITE', 'NET_RAW', 'MKNOD', 'NET_ADMIN', 'SYS_PTRACE']


def log(msg):
    print('lab: %s' % msg, flush=True)


def run(argv, check=True, capture=True, **kwargs):
    result = subprocess.run(argv, check=False, text=True,
                            stdout=subprocess.PIPE if capture else None,
                            stderr=subprocess.PIPE if capture else None, **kwargs)
    if check and result.returncode != 0:
        sys.exit('lab: command failed (rc=%d): %s\n%s%s' % (
            result.returncode, ' '.join(argv), result.stdout or '', result.stderr or ''))
    return result


def podman(*args, check=True):
    return run(['podman'] + list(args), check=check)


# ---------------------------------------------------------------- host setup
def host_limits():
    """nofile capped at this machine's hard limit, nproc at 32768 (podman asks ~1M of each)."""
    import resource
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if nofile == resource.RLIM_INFINITY or nofile > 1048576:
        nofile = 1048576
    return nofile, 32768


def containers_conf_text():
    nofile, nproc = host_limits()
    return (
        '# Written by aicluster.infra lab/lab.py setup: what podman needs on this machine.\n'
        '# crun fails on cgroup v1 hybrid hosts; podman\'s default ulimits exceed the hard limits here.\n'
        '[containers]\n'
        'default_ulimits = ["nofile=%d:%d", "nproc=%d:%d"]\n'
        '[engine]\n'
        'runtime = "runc"\n' % (nofile, nofile, nproc, nproc))


def cmd_setup(_args):
    missing = [tool for tool in ('podman', 'runc', 'debootstrap') if not shutil.which(tool)]
    if missing:
        sys.exit('lab: missing %s; `make lab-deps` installs them (apt-get install podman runc debootstrap)' % ', '.join(missing))
    text = containers_conf_text()
    current = None
    if os.path.exists(CONTAINERS_CONF):
        with open(CONTAINERS_CONF, encoding='utf-8') as handle:
            current = handle.read()
    if current != text:
        os.makedirs(os.path.dirname(CONTAINERS_CONF), exist_ok=True)
        with open(CONTAINERS_CONF + '.tmp', 'w', encoding='utf-8') as handle:
            handle.write(text)
        os.replace(CONTAINERS_CONF + '.tmp', CONTAINERS_CONF)
        log('wrote %s' % CONTAINERS_CONF)
    else:
        log('podman settings already in place')


# ---------------------------------------------------------------- image
def recipe_hash():
    digest = hashlib.sha256()
    with open(IMAGE_RECIPE, 'rb') as handle:
        digest.update(handle.read())
    digest.update(('%s %s' % (SUITE, MIRROR)).encode())
    return digest.hexdigest()[:12]


def image_ref():
    return '%s:%s-%s' % (IMAGE_REPO, SUITE, recipe_hash())


def image_exists(ref):
    return podman('image', 'exists', ref, check=False).returncode == 0


def cmd_image(args):
    ref = image_ref()
    stable = '%s:%s' % (IMAGE_REPO, SUITE)
    if image_exists(ref) and not args.force:
        log('image %s is current (recipe unchanged)' % ref)
    else:
        build = tempfile.mkdtemp(prefix='aicluster-lab-image-', dir=os.environ.get('LAB_BUILD_DIR'))
        rootfs = os.path.join(build, 'rootfs')
        try:
            log('building %s with debootstrap (about 1-2 minutes)' % ref)
            started = time.time()
            logfile = os.path.join(STATE, 'image-build.log')
            os.makedirs(STATE, exist_ok=True)
            with open(logfile, 'w', encoding='utf-8') as handle:
                built = subprocess.run(['bash', IMAGE_RECIPE, rootfs, SUITE, MIRROR], check=False,
                                       stdout=handle, stderr=subprocess.STDOUT)
            if built.returncode != 0:
                with open(logfile, encoding='utf-8') as handle:
                    tail = handle.read()[-3000:]
                sys.exit('lab: the image recipe failed (rc=%d); log %s:\n%s' % (built.returncode, logfile, tail))
            tarball = os.path.join(build, 'rootfs.tar')
            run(['tar', '-C', rootfs, '--numeric-owner', '-cf', tarball, '.'])
            podman('import',
                   '--change', 'CMD ["/lib/systemd/systemd"]',
                   '--change', 'ENV container=podman',
                   '--change', 'STOPSIGNAL SIGRTMIN+3',
                   '--change', 'LABEL %s.recipe=%s' % (LABEL, recipe_hash()),
                   tarball, ref)
            log('built %s in %.0f s' % (ref, time.time() - started))
        finally:
            shutil.rmtree(build, ignore_errors=True)
    # A stable tag for molecule scenarios; it always points at the current recipe.
    podman('tag', ref, stable)
    # Images of older recipes are dropped, unless a container still uses them.
    for line in podman('images', '--format', '{{.Repository}}:{{.Tag}}', IMAGE_REPO).stdout.split():
        if line not in (ref, stable) and line.startswith(IMAGE_REPO + ':' + SUITE + '-'):
            podman('rmi', line, check=False)
    return ref


# ---------------------------------------------------------------- lab up/down
def host_names(compute):
    return ['ctl01'] + ['gpu%02d' % i for i in range(1, compute + 1)]


def container_name(lab, host):
    return '%s-%s' % (lab, host)


def network_name(lab):
    return '%s-net' % lab


def volume_name(lab):
    """The simulated hardware's state, shared by every host (iblinkinfo is fabric-wide)."""
    return '%s-hwsim' % lab


def ensure_volume(lab):
    vol = volume_name(lab)
    if podman('volume', 'exists', vol, check=False).returncode != 0:
        podman('volume', 'create', '--label', '%s=%s' % (LABEL, lab), vol)
        log('created volume %s' % vol)
    return vol


def ensure_ssh_key():
    if not os.path.exists(SSH_KEY):
        os.makedirs(os.path.dirname(SSH_KEY), mode=0o700, exist_ok=True)
        run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', 'aicluster-lab', '-f', SSH_KEY])
        log('made the lab SSH key %s' % SSH_KEY)
    with open(SSH_KEY + '.pub', encoding='utf-8') as handle:
        return handle.read().strip()


def ensure_network(lab):
    net = network_name(lab)
    if podman('network', 'exists', net, check=False).returncode != 0:
        podman('network', 'create', '--label', '%s=%s' % (LABEL, lab), '--opt', 'mtu=%d' % MANAGEMENT_MTU, net)
        log('created network %s (MTU %d)' % (net, MANAGEMENT_MTU))
    else:
        mtu = network_mtu(net)
        if mtu != MANAGEMENT_MTU:
            log('network %s has MTU %s, not %d: `lab.py down` then `up` recreates it' % (net, mtu, MANAGEMENT_MTU))
    return net


def network_mtu(net):
    """The MTU option of a podman network (int), or None when it has none."""
    result = podman('network', 'inspect', net, check=False)
    if result.returncode != 0:
        return None
    options = (json.loads(result.stdout) or [{}])[0].get('options') or {}
    return int(options['mtu']) if str(options.get('mtu', '')).isdigit() else None


def _load_profile(name):
    if HWSIM_DIR not in sys.path:
        sys.path.insert(0, HWSIM_DIR)
    from hwsim import profile as hwsim_profile  # pylint: disable=import-outside-toplevel
    return hwsim_profile, hwsim_profile.load(name, os.path.join(HWSIM_DIR, 'profiles'))


# A lab beside another moves its rail subnets up by whole steps of the second octet (10.110.0.0/24 -> 10.111.0.0/24 ...):
# podman refuses a subnet that another network or a host interface already has.
RAIL_SHIFT_STEP = 1 << 16
RAIL_SHIFT_MAX = 100


def rail_renumbering(subnets, taken, own=None):
    """Old -> new CIDR for a lab's rail subnets (``subnets``, the profiles'), so that none overlaps ``taken`` (the
    subnets of other labs' networks and of the host's interfaces). ``own`` (rail network's profile subnet -> the
    subnet it has now) keeps a lab that is up where it is. Returns {} when the profiles' subnets are free (a lab
    alone keeps them); raises SystemExit when no shift within RAIL_SHIFT_MAX steps is free."""
    subnets = sorted(set(subnets))
    if own:
        return dict((old, new) for old, new in own.items() if old != new)
    taken = [ipaddress.ip_network(item, strict=False) for item in taken]
    for step in range(RAIL_SHIFT_MAX):
        moved = {}
        for text in subnets:
            net = ipaddress.ip_network(text)
            address = int(net.network_address) + step * RAIL_SHIFT_STEP
            if address + net.num_addresses > 1 << 32:
                break
            moved[text] = ipaddress.ip_network('%s/%d' % (ipaddress.ip_address(address), net.prefixlen))
        else:
            if not any(new.overlaps(other) for new in moved.values() for other in taken):
                return dict((old, str(new)) for old, new in moved.items() if str(new) != old)
    sys.exit('lab: no free subnets for the rail networks %s within %d shifts of the second octet'
             % (', '.join(subnets), RAIL_SHIFT_MAX))


def podman_networks():
    """Every podman network as {name: (label value of LABEL or None, [subnets])}."""
    result = podman('network', 'ls', '--format', 'json', check=False)
    networks = {}
    for item in json.loads(result.stdout or '[]') if result.returncode == 0 else []:
        networks[item['name']] = ((item.get('labels') or {}).get(LABEL),
                                  [entry['subnet'] for entry in item.get('subnets') or []])
    return networks


def host_subnets():
    """The IPv4 subnets of the host's own interfaces (podman's bridges included)."""
    result = run(['ip', '-j', '-4', 'addr', 'show'], check=False)
    subnets = []
    for link in json.loads(result.stdout or '[]') if result.returncode == 0 else []:
        for entry in link.get('addr_info') or []:
            subnets.append('%s/%s' % (entry['local'], entry['prefixlen']))
    return subnets


def lab_renumbering(lab, networks):
    """rail_renumbering for lab ``lab`` whose rail networks (rail_plan's, the profiles' subnets) are ``networks``:
    when all its rail networks exist they keep their subnets (some but not all stop it: their subnets and the
    profiles' could disagree); else the rails avoid every other network's subnet and the host's own."""
    existing = podman_networks()
    own = dict((spec['subnet'], existing[net][1][0]) for net, spec in networks.items()
               if net in existing and existing[net][1])
    mine = set(networks) | {network_name(lab)}
    taken = [subnet for name, (label, subnets) in existing.items() if name not in mine for subnet in subnets]
    bridges = set(subnet for name, (label, subnets) in existing.items() if name in mine for subnet in subnets)
    taken += [subnet for subnet in host_subnets()
              if not any(ipaddress.ip_network(subnet, strict=False).subnet_of(ipaddress.ip_network(b)) for b in bridges)]
    if own and len(own) != len(networks):
        sys.exit('lab: lab %s has %d of its %d rail networks (an interrupted up, or another profile): '
                 '`lab.py down --name %s`, then up' % (lab, len(own), len(networks), lab))
    return rail_renumbering([spec['subnet'] for spec in networks.values()], taken, own or None)


def rail_plan(lab, profiles, loader=None, renumber=None):
    """The rail networks of a lab and each host's attachments, from the hosts' hardware profiles.

    ``profiles``: host -> profile name (hosts in inventory order; the host index
    hwsim derives addresses from is the 1-based position among them).
    Returns ``(networks, attachments)``: networks by name, each ``{subnet,
    gateway, mtu, link_layer, rail}``; host -> [(network, ipv4, interface
    name)]. Only GPU-fabric ports (role compute, a rail) with an
    ``ipv4_network`` get a network; the gateway is the subnet's last address,
    so host index 1 keeps ``.1``. Two profiles giving one rail network
    different subnets is an error (SystemExit). ``renumber`` (old -> new CIDR, lab_renumbering) moves the
    profiles' subnets for a lab beside another; hwsim gets the same map (inventory ``hwsim_ipv4_networks``).
    """
    loader = loader or _load_profile
    networks, attachments = {}, {}
    for index, (host, name) in enumerate((h, p) for h, p in profiles.items() if p):
        module, data = loader(name)
        data = module.renumber_ipv4(data, renumber) if renumber else data
        for hca in data.get('hcas') or []:
            if hca.get('role') != 'compute' or hca.get('rail') is None:
                continue
            for port in hca.get('ports') or []:
                if not port.get('ipv4_network') or not port.get('netdev'):
                    continue
                layer = port.get('link_layer') or hca.get('link_layer')
                net = '%s-rail%d-%s' % (lab, hca['rail'], RAIL_SUFFIX.get(layer, 'eth'))
                subnet = ipaddress.ip_network(port['ipv4_network'])
                spec = {'subnet': str(subnet), 'gateway': str(subnet.broadcast_address - 1),
                        'mtu': RAIL_MTU.get(layer, 9000), 'link_layer': layer, 'rail': hca['rail']}
                if networks.setdefault(net, spec)['subnet'] != spec['subnet']:
                    sys.exit('lab: rail network %s: profile %s puts it on %s, another profile on %s'
                             % (net, name, spec['subnet'], networks[net]['subnet']))
                address = module.ipv4(index + 1, port).split('/')[0]
                attachments.setdefault(host, []).append((net, address, port['netdev']))
    return networks, attachments


def ib_rails(data, layer='InfiniBand'):
    """The GPU-fabric HCAs (role compute, a rail) of a loaded hardware profile whose port is InfiniBand (or ``layer``)."""
    return [hca for hca in data.get('hcas') or [] if hca.get('role') == 'compute' and hca.get('rail') is not None
            and any((port.get('link_layer') or hca.get('link_layer')) == layer for port in hca.get('ports') or [])]


def subnet_manager_hosts(hosts, profiles, loader=None):
    """The lab's ``ib_subnet_manager`` hosts: [ctl01] when the lab has a ctl01 and a compute host whose profile has
    InfiniBand rails, else [] (a RoCE lab has no subnet to manage, a lab without simulated hardware no fabric)."""
    loader = loader or _load_profile
    if SM_HOST not in hosts:
        return []
    for name in sorted(set(name for name in (profiles or {}).values() if name)):
        if ib_rails(loader(name)[1]):
            return [SM_HOST]
    return []


def fabric_options(sm_hosts=None):
    """hwsim_fabric_options of a lab: the lab's fabric layout, and for a lab with a subnet manager its hosts' HCAs
    (--sm-hosts) and ibsim on the first of them (--ibsim-host), where the real OpenSM runs against it."""
    options = list(FABRIC_OPTIONS)
    if sm_hosts:
        options += ['--sm-hosts', ','.join(sm_hosts), '--ibsim-host', sm_hosts[0]]
    return options


def ipoib_subnets(networks, attachments, profiles, loader=None, layer='InfiniBand'):
    """The lab's IPoIB subnets in rail order (the ipoib role's ``ipoib_subnets``), or None; with ``layer`` Ethernet
    the RoCE subnets (the roce role's ``roce_subnets``).

    The lab's rail interfaces come up as a freshly installed node has them (hwsim/rails.py: no address, MTU 2044 on
    IPoIB, 1500 on RoCE), and the fabric stage's ipoib or roce role addresses them from these subnets (the address of
    the n-th GPU node is the subnet's n-th, as podman's: rail_plan). None when the lab has no rail network of that
    link layer, or when a host's profile has such rails the lab gives no network (the B200 profile lists one): the
    role needs one subnet per rail on every host, so such a lab keeps podman's addresses."""
    loader = loader or _load_profile
    ib = sorted((spec['rail'], spec['subnet']) for spec in networks.values() if spec['link_layer'] == layer)
    if not ib:
        return None
    ib_nets = set(net for net, spec in networks.items() if spec['link_layer'] == layer)
    for host, name in profiles.items():
        if not name:
            continue
        dummy, data = loader(name)
        rails = ib_rails(data, layer)
        attached = [item for item in attachments.get(host) or [] if item[0] in ib_nets]
        if rails and (len(attached) != len(rails) or len(rails) != len(ib)):
            return None
    return [subnet for dummy, subnet in ib]


def ensure_rail_networks(lab, networks):
    """Create the rail networks (internal: no default route through them, no NAT)."""
    for net, spec in sorted(networks.items()):
        if podman('network', 'exists', net, check=False).returncode == 0:
            continue
        podman('network', 'create', '--label', '%s=%s' % (LABEL, lab), '--internal', '--subnet', spec['subnet'],
               '--gateway', spec['gateway'], '--opt', 'mtu=%d' % spec['mtu'], net)
        log('created rail network %s (%s, MTU %d, %s rail %d)' % (
            net, spec['subnet'], spec['mtu'], spec['link_layer'], spec['rail']))


def network_args(net, host, rails):
    """podman run --network arguments: the management network (alias = host name), then each rail."""
    argv = ['--network', '%s:alias=%s' % (net, host)]
    for rail_net, address, interface in rails or []:
        argv += ['--network', '%s:ip=%s,interface_name=%s' % (rail_net, address, interface)]
    return argv


def inspect(name):
    result = podman('container', 'inspect', name, check=False)
    if result.returncode != 0:
        return None
    return json.loads(result.stdout)[0]


def _mounts_volume(info, vol):
    return any(mount.get('Name') == vol for mount in info.get('Mounts', []))


def _attached(info):
    return set((info.get('NetworkSettings') or {}).get('Networks') or {})


def ensure_container(lab, host, image, net, vol, rails=None):
    name = container_name(lab, host)
    info = inspect(name)
    wanted = set([net] + [rail[0] for rail in rails or []])
    if info and (info['Config']['Image'] != image or not _mounts_volume(info, vol) or _attached(info) != wanted):
        log('%s was made from an older image or layout; recreating it' % name)
        podman('rm', '-f', '-t', '10', name)
        info = None
    if info is None:
        argv = ['run', '-d', '--name', name, '--hostname', host] + network_args(net, host, rails)
        argv += ['--systemd', 'always', '--runtime', 'runc',
                 '--volume', '%s:%s' % (vol, HWSIM_STATE),
                 '--label', '%s=%s' % (LABEL, lab), '--label', '%s.host=%s' % (LABEL, host)]
        for cap in CAPABILITIES:
            argv += ['--cap-add', cap]
        podman(*(argv + [image]))
        log('started %s' % name)
    elif not info['State']['Running']:
        podman('start', name)
        log('restarted %s' % name)
    return name


def wait_running(name, timeout=60):
    deadline = time.time() + timeout
    state = ''
    while time.time() < deadline:
        state = podman('exec', name, 'systemctl', 'is-system-running', check=False).stdout.strip()
        if state in ('running', 'degraded'):
            return state
        time.sleep(0.5)
    sys.exit('lab: %s did not finish booting in %d s (systemd says %r)' % (name, timeout, state))


def authorize_key(name, pubkey):
    script = ('install -d -m 0700 /root/.ssh && touch /root/.ssh/authorized_keys && '
              'chmod 0600 /root/.ssh/authorized_keys && '
              'grep -qxF "$1" /root/.ssh/authorized_keys || echo "$1" >> /root/.ssh/authorized_keys')
    podman('exec', name, 'sh', '-c', script, 'sh', pubkey)


def address(name, net):
    info = inspect(name)
    return info['NetworkSettings']['Networks'][net]['IPAddress']


def wait_ssh(addr, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        result = run(['ssh', '-i', SSH_KEY, '-o', 'BatchMode=yes', '-o', 'StrictHostKeyChecking=no',
                      '-o', 'UserKnownHostsFile=/dev/null', '-o', 'ConnectTimeout=3', '-o', 'LogLevel=ERROR',
                      'root@%s' % addr, 'true'], check=False)
        if result.returncode == 0:
            return
        time.sleep(0.5)
    sys.exit('lab: sshd on %s did not answer in %d s' % (addr, timeout))


def inventory_text(lab, hosts, profiles=None, ipv4_networks=None, ipoib=None, sm_hosts=None, roce=False, roce_subnets=None):
    """The lab inventory: the same groups a real cluster inventory uses (docs/inventory.md).

    ``profiles`` maps host -> simulated hardware profile (lab/hwsim/profiles/); hosts
    not in it have no simulated hardware. ``ipv4_networks``: the lab's rail renumbering
    (lab_renumbering), passed to hwsim's fabric as ``hwsim_ipv4_networks``. ``ipoib``: the lab's IPoIB subnets
    (ipoib_subnets): the rails come up fresh (``hwsim_fresh_rails``) and the fabric stage addresses them.
    ``sm_hosts``: the lab's subnet manager hosts (subnet_manager_hosts), the group ``ib_subnet_manager``; hwsim gives
    them an HCA and runs ibsim on the first (``hwsim_fabric_options``, fabric_options). ``roce``: the GPU-fabric rails
    are Ethernet, so the verify stage judges them as RoCE ports (``verify_ib_link_layer: Ethernet``), as a RoCE site's
    inventory says. ``roce_subnets``: the lab's RoCE subnets (ipoib_subnets with layer Ethernet): the rails come up
    fresh (MTU 1500, no address) and the fabric stage's roce role sets MTU 9000 and addresses them.
    """
    profiles = profiles or {}
    sm_hosts = list(sm_hosts or [])
    controller = [h for h in hosts if h.startswith('ctl')]
    compute = [h for h in hosts if h.startswith('gpu')]
    groups = {
        'slurm_controller': controller,
        'slurm_dbd': controller,
        # An InfiniBand lab: ctl01, where the fabric stage's opensm role runs the real OpenSM against ibsim and the
        # verify stage's fabric.sm finds it master. Empty in a RoCE lab (no subnet to manage).
        'ib_subnet_manager': sm_hosts,
        'login': controller,
        'slurm_compute': compute,
        'gpu_nodes': compute,
        'monitoring': controller,
    }
    lines = [
        '---',
        '# Written by lab/lab.py up --name %s; do not edit (it is rewritten on every `lab up`).' % lab,
        '# The lab hosts are podman containers reached over SSH exactly as real nodes are.',
        'all:',
        '  vars:',
        '    ansible_user: root',
        '    ansible_ssh_private_key_file: %s' % SSH_KEY,
        '    ansible_ssh_common_args: -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR',
        '    aicluster_lab_name: %s' % lab,
        '    # the simulated fabric (lab/lab.py FABRIC_OPTIONS; with a subnet manager: its HCA and ibsim)',
        '    hwsim_fabric_options: %s' % json.dumps(fabric_options(sm_hosts)),
    ]
    if ipv4_networks:
        lines.append('    hwsim_ipv4_networks:')
        lines += ['      - %s=%s' % item for item in sorted(ipv4_networks.items())]
    if roce:
        lines += ['    # the GPU-fabric rails are RoCE ports (hwsim profile): the verify stage judges them as Ethernet',
                  '    verify_ib_link_layer: Ethernet']
    if roce_subnets:
        lines += ['    # The RoCE rails come up as on a fresh node (no address, MTU 1500: lab/hwsim/hwsim/rails.py); the',
                  '    # fabric stage (role roce) sets MTU 9000 and gives them these subnets, one per rail.',
                  '    hwsim_fresh_rails: true',
                  '    roce_network_enabled: true',
                  '    roce_subnets:']
        lines += ['      - %s' % subnet for subnet in roce_subnets]
    if ipoib:
        lines += ['    # The IPoIB rails come up as on a fresh node (no address, MTU 2044: lab/hwsim/hwsim/rails.py); the',
                  '    # fabric stage (role ipoib) gives them these subnets, one per rail, as a site\'s inventory would.',
                  '    hwsim_fresh_rails: true',
                  '    ipoib_subnets:']
        lines += ['      - %s' % subnet for subnet in ipoib]
    lines += [
        '  hosts:',
    ]
    for host, addr in hosts.items():
        lines += ['    %s:' % host, '      ansible_host: %s' % addr]
        if profiles.get(host):
            lines.append('      hwsim_profile: %s' % profiles[host])
        if host in sm_hosts and ipoib:
            # instead of planning an address for a netdev the container does not have
            lines += ['      # the SM host\'s HCA (hwsim sm-host-ib) has no rail network, so no IPoIB interface here:',
                      '      # the fabric stage\'s ipoib role leaves it alone',
                      '      ipoib_subnets: []']
    lines.append('  children:')
    for group, members in groups.items():
        lines.append('    %s:' % group)
        lines.append('      hosts:')
        lines += ['        %s: {}' % member for member in members] or []
        if not members:
            lines[-1] = '      hosts: {}'
    return '\n'.join(lines) + '\n'


def lab_inventory(name):
    """The inventory file a lab writes when none is given: inventories/lab/hosts.yml for the default lab,
    inventories/lab-<name>/hosts.yml for any other, so two labs side by side never share an inventory (nor, through
    host names, a fact cache: see lab_fact_cache)."""
    if name == DEFAULT_LAB:
        return INVENTORY
    return os.path.join(REPO, 'inventories', 'lab-%s' % name, 'hosts.yml')


def lab_fact_cache(name):
    """The fact cache of a lab's runs (the Makefile passes it as ANSIBLE_CACHE_PLUGIN_CONNECTION): one per lab,
    since facts are keyed by host name and every lab has a ctl01."""
    return os.path.join(REPO, '.cache', 'facts' if name == DEFAULT_LAB else 'facts-%s' % name)


def prepare_inventory_dir(inventory):
    """A lab-<name> inventory directory gets the lab's group_vars (a link), so it is a whole lab inventory."""
    folder = os.path.dirname(inventory)
    os.makedirs(folder, exist_ok=True)
    group_vars = os.path.join(folder, 'group_vars')
    shared = os.path.join(REPO, 'inventories', 'lab', 'group_vars')
    if os.path.abspath(folder) != os.path.dirname(INVENTORY) and not os.path.lexists(group_vars):
        os.symlink(os.path.relpath(shared, folder), group_vars)


def write_if_changed(path, text):
    current = None
    if os.path.exists(path):
        with open(path, encoding='utf-8') as handle:
            current = handle.read()
    if current == text:
        return False
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + '.tmp', 'w', encoding='utf-8') as handle:
        handle.write(text)
    os.replace(path + '.tmp', path)
    return True


def cmd_up(args):
    cmd_setup(args)
    image = image_ref()
    if not image_exists(image):
        cmd_image(argparse.Namespace(force=False))
    pubkey = ensure_ssh_key()
    net = ensure_network(args.name)
    vol = ensure_volume(args.name)
    hosts = host_names(args.compute)
    profiles = host_profiles(hosts, args.profile, args.host_profile)
    renumber = {}
    if not args.no_hwsim:
        renumber = lab_renumbering(args.name, rail_plan(args.name, profiles)[0])
    rail_networks, rails = rail_plan(args.name, profiles, renumber=renumber) if not args.no_hwsim else ({}, {})
    ensure_rail_networks(args.name, rail_networks)
    names = [ensure_container(args.name, host, image, net, vol, rails.get(host)) for host in hosts]
    addresses = {}
    for host, name in zip(hosts, names):
        wait_running(name)
        authorize_key(name, pubkey)
        addresses[host] = address(name, net)
    for addr in addresses.values():
        wait_ssh(addr)
    # Hosts beyond the requested count (a smaller lab than last time) are removed.
    for name in labelled('container', args.name):
        if name not in names:
            podman('rm', '-f', '-t', '10', name)
            log('removed %s (not in a lab of %d compute hosts)' % (name, args.compute))
    prepare_inventory_dir(args.inventory)
    ipoib = ipoib_subnets(rail_networks, rails, profiles) if rail_networks else None
    # no simulated hardware, no fabric: the SM host would have no HCA and no ibsim to run against
    sm_hosts = subnet_manager_hosts(hosts, profiles) if not args.no_hwsim else []
    roce = bool(rail_networks) and all(spec['link_layer'] == 'Ethernet' for spec in rail_networks.values())
    roce_subnets = ipoib_subnets(rail_networks, rails, profiles, layer='Ethernet') if roce else None
    if write_if_changed(args.inventory, inventory_text(args.name, addresses, profiles, renumber, ipoib, sm_hosts, roce,
                                                       roce_subnets)):
        log('wrote %s' % os.path.relpath(args.inventory, REPO))
    if not args.no_hwsim:
        install_hwsim(args.inventory, args.name)
    if not args.no_mirror:
        install_package_mirror(args.inventory, args.name)
    log('lab %s is up: %s' % (args.name, ', '.join('%s=%s' % item for item in addresses.items())))


def host_profiles(hosts, default, overrides):
    """host -> hwsim profile: every compute host gets ``default``, HOST=PROFILE pairs override."""
    profiles = {host: default for host in hosts if host.startswith('gpu')}
    for pair in overrides or []:
        host, sep, profile = pair.partition('=')
        if not sep or host not in profiles:
            sys.exit('lab: --host-profile wants COMPUTE_HOST=PROFILE with a host of this lab, got %r' % pair)
        profiles[host] = profile
    known = {os.path.splitext(f)[0] for f in os.listdir(os.path.join(HERE, 'hwsim', 'profiles'))}
    unknown = sorted(set(profiles.values()) - known)
    if unknown:
        sys.exit('lab: unknown hardware profile %s; known: %s' % (', '.join(unknown), ', '.join(sorted(known))))
    return profiles


def run_playbook(inventory, name, playbook_file, what, extra_vars=None):
    """Run one of the lab's idempotent plays with the lab's own fact cache; returns the number of changes."""
    playbook = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    if not os.path.exists(playbook):
        playbook = shutil.which('ansible-playbook') or 'ansible-playbook'
    argv = [playbook, '-i', inventory, playbook_file]
    if extra_vars:
        argv += ['-e', json.dumps(extra_vars)]
    env = dict(os.environ, ANSIBLE_CACHE_PLUGIN_CONNECTION=lab_fact_cache(name))
    result = run(argv, check=False, env=env)
    if result.returncode != 0:
        sys.exit('lab: installing %s failed:\n%s%s' % (what, result.stdout[-4000:], result.stderr[-2000:]))
    recap = [line for line in result.stdout.splitlines() if 'changed=' in line]
    return sum(int(line.split('changed=')[1].split()[0]) for line in recap)


def install_hwsim(inventory, name):
    """Install the simulated hardware into every lab host (idempotent Ansible play), with the lab's own fact cache."""
    started = time.time()
    changed = run_playbook(inventory, name, HWSIM_INSTALL, 'the simulated hardware')
    log('simulated hardware installed (%d changes, %.0f s)' % (changed, time.time() - started))


def _mirror_builder():
    spec = importlib.util.spec_from_file_location('aicluster_lab_mirror_build', os.path.join(PACKAGE_MIRROR_DIR, 'build.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_package_mirror():
    """The mirror's tree, built unless this recipe's is in lab/.state/mirror-<hash>."""
    started = time.time()
    os.makedirs(STATE, exist_ok=True)
    try:
        tree, built = _mirror_builder().build_cached(STATE)
    except (OSError, RuntimeError) as err:
        sys.exit('lab: building the package mirror failed: %s' % err)
    if built:
        log('built the package mirror %s (%.0f s)' % (os.path.relpath(tree, REPO), time.time() - started))
    else:
        log('package mirror %s is current (recipe unchanged)' % os.path.relpath(tree, REPO))
    return tree


def install_package_mirror(inventory, name):
    """Build the signed package mirror (cached) and serve it from ctl01 (lab/mirror/install.yml)."""
    tree = build_package_mirror()
    started = time.time()
    changed = run_playbook(inventory, name, PACKAGE_MIRROR_INSTALL, 'the package mirror',
                           {'mirror_dir': tree, 'mirror_host': PACKAGE_MIRROR_HOST})
    log('package mirror served at http://%s/mirror/ (%d changes, %.0f s)' % (
        PACKAGE_MIRROR_HOST, changed, time.time() - started))


def cmd_mirror(args):
    if not os.path.exists(args.inventory):
        sys.exit('lab: lab %s is not up (no %s); `lab.py up --name %s` first'
                 % (args.name, os.path.relpath(args.inventory, REPO), args.name))
    install_package_mirror(args.inventory, args.name)


def labelled(kind, lab):
    fmt = {'container': '{{.Names}}', 'network': '{{.Name}}', 'volume': '{{.Name}}'}[kind]
    argv = {'container': ['ps', '-a'], 'network': ['network', 'ls'], 'volume': ['volume', 'ls']}[kind]
    out = podman(*(argv + ['--filter', 'label=%s=%s' % (LABEL, lab), '--format', fmt])).stdout
    return [line for line in out.split() if line]


def cmd_down(args):
    containers = labelled('container', args.name)
    if containers:
        podman(*(['rm', '-f', '-v', '-t', '10'] + containers))
    networks = labelled('network', args.name)
    for net in networks:
        podman('network', 'rm', net)
    volumes = labelled('volume', args.name)
    if volumes:
        podman(*(['volume', 'rm', '-f'] + volumes))
    if os.path.exists(args.inventory):
        with open(args.inventory, encoding='utf-8') as handle:
            ours = 'lab.py up --name %s;' % args.name in handle.readline() + handle.readline()
        if ours:
            os.remove(args.inventory)
            folder = os.path.dirname(args.inventory)
            if args.inventory == lab_inventory(args.name) and args.inventory != INVENTORY:
                shutil.rmtree(folder, ignore_errors=True)  # inventories/lab-<name>/: its hosts.yml and group_vars link
    shutil.rmtree(lab_fact_cache(args.name), ignore_errors=True)
    log('lab %s is down: removed %d containers, %d networks, %d volumes' % (
        args.name, len(containers), len(networks), len(volumes)))


def cmd_fault(args):
    """Run `hwsim fault|clear` inside the host: its state file is on the shared volume."""
    argv = ['exec', container_name(args.name, args.host), '/usr/local/bin/hwsim', args.command] + args.rest
    result = podman(*argv, check=False)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    if result.returncode != 0:
        sys.exit(result.returncode)


def cmd_status(args):
    out = podman('ps', '-a', '--filter', 'label=%s=%s' % (LABEL, args.name),
                 '--format', '{{.Names}}\t{{.Status}}\t{{.Image}}').stdout
    print(out.strip() or 'lab %s: no containers' % args.name)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest='command', required=True)
    sub.add_parser('setup').set_defaults(func=cmd_setup)
    image = sub.add_parser('image')
    image.add_argument('--force', action='store_true', help='rebuild even when the recipe is unchanged')
    image.set_defaults(func=lambda a: print(cmd_image(a)))
    sub.add_parser('image-ref').set_defaults(func=lambda a: print(image_ref()))
    for name, func in (('up', cmd_up), ('down', cmd_down), ('status', cmd_status), ('mirror', cmd_mirror),
                       ('fault', cmd_fault), ('clear', cmd_fault)):
        cmd = sub.add_parser(name)
        cmd.add_argument('--name', default=os.environ.get('LAB_NAME', DEFAULT_LAB), help='lab name (default: aic)')
        inventory_help = 'inventory file to write' if name == 'up' else "the lab's inventory file"
        cmd.add_argument('--inventory', default=None,
                         help=inventory_help + ' (default: inventories/lab/hosts.yml for the lab aic, '
                         'inventories/lab-NAME/hosts.yml for any other)')
        if name == 'up':
            cmd.add_argument('--compute', type=int, default=int(os.environ.get('LAB_COMPUTE', '3')),
                             help='number of compute hosts gpu01..gpuNN (default: 3)')
            cmd.add_argument('--profile', default=os.environ.get('LAB_PROFILE', DEFAULT_PROFILE),
                             help='simulated hardware of the compute hosts (lab/hwsim/profiles/; default %s)' % DEFAULT_PROFILE)
            cmd.add_argument('--host-profile', action='append', metavar='HOST=PROFILE',
                             help='another profile for one compute host (repeatable)')
            cmd.add_argument('--no-hwsim', action='store_true', help='do not install the simulated hardware')
            cmd.add_argument('--no-mirror', action='store_true',
                             help='do not build and serve the package mirror (lab/mirror) from ctl01')
        if name in ('fault', 'clear'):
            cmd.add_argument('host', help='lab host, e.g. gpu02')
            cmd.add_argument('rest', nargs=argparse.REMAINDER, help='fault kind and arguments')
        cmd.set_defaults(func=func)
    args = parser.parse_args()
    if 'inventory' in vars(args) and args.inventory is None:
        args.inventory = lab_inventory(args.name)
    if os.geteuid() != 0:
        sys.exit('lab: rootful podman is needed; run as root')
    args.func(args)


if __name__ == '__main__':
    main()
