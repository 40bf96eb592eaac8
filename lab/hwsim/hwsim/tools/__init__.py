"""Registry of stand-ins: tool name -> (module under hwsim.tools, function).

Each function is ``run(ctx, args) -> exit status`` with ``ctx`` a
hwsim.model.Context (host, state dir, fabric, output streams) and ``args``
the tool's arguments (argv[1:]).  A new stand-in adds a module here and
one line per tool name; the lab links every name in TOOLS to bin/hwsim.
"""
import importlib

TOOLS = {
    'ibstat': ('ibstat', 'run_ibstat'),
    'ibstatus': ('ibstat', 'run_ibstatus'),
    'iblinkinfo': ('iblinkinfo', 'run'),
    'ibdev2netdev': ('rdma', 'run_ibdev2netdev'),
    'show_gids': ('rdma', 'run_show_gids'),
    'ibv_devinfo': ('rdma', 'run_ibv_devinfo'),
    'mlnx_qos': ('mlnx_qos', 'run'),
    'dcb': ('dcb', 'run'),
    'perfquery': ('linkcounters', 'run_perfquery'),
    'mlxlink': ('linkcounters', 'run_mlxlink'),
    'ethtool': ('linkcounters', 'run_ethtool'),
    'rdma': ('linkcounters', 'run_rdma'),
    'nvidia-smi': ('nvidia_smi', 'run'),
    'dcgmi': ('dcgmi', 'run'),
    'dmesg': ('kernel', 'run_dmesg'),
    'lsmod': ('kmod', 'run_lsmod'),
    'modprobe': ('kmod', 'run_modprobe'),
    'dkms': ('dkms', 'run'),
    'update-initramfs': ('dkms', 'run_update_initramfs'),
    'modinfo': ('kmod', 'run_modinfo'),
    'mlxfwmanager': ('mlxfw', 'run'),
    'ib_write_bw': ('perftest', 'run_ib_write_bw'),
    'ib_read_bw': ('perftest', 'run_ib_read_bw'),
    'ib_send_bw': ('perftest', 'run_ib_send_bw'),
    'ib_write_lat': ('perftest', 'run_ib_write_lat'),
    'ib_read_lat': ('perftest', 'run_ib_read_lat'),
    'ib_send_lat': ('perftest', 'run_ib_send_lat'),
    'all_reduce_perf': ('nccl', 'run_all_reduce'),
    'all_gather_perf': ('nccl', 'run_all_gather'),
    'reduce_scatter_perf': ('nccl', 'run_reduce_scatter'),
    'broadcast_perf': ('nccl', 'run_broadcast'),
    'alltoall_perf': ('nccl', 'run_alltoall'),
    'ipmitool': ('ipmitool', 'run'),
}


def lookup(name):
    """The run function of a tool name, or None."""
    if name not in TOOLS:
        return None
    module_name, function = TOOLS[name]
    module = importlib.import_module('hwsim.tools.' + module_name)
    return getattr(module, function)
