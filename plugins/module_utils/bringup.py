# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reboot stage of the bring-up (playbooks/reboot.yml): which GPU node reboots, and whether the boot loaded what
the rdma and gpu stages installed. Pure functions: dicts in, dicts out.

A first bring-up installs DOCA-OFED (rdma stage) and the NVIDIA driver (gpu stage) on nodes that run the inbox RDMA
modules and no driver: both stages record a reboot reason (rdma_reboot_required, nvidia_driver_reboot_required) and the
reboot stage reboots those nodes, in batches, before Slurm is installed. A node Slurm shows running or completing jobs
is never rebooted (playbooks/rolling_upgrade.yml drains it, waits for its jobs, reboots and resumes it); an idle one is.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils.rolling import node_step

PEERMEM = 'nvidia_peermem'


def reboot_step(name, reasons, slurm, enabled):
    """Whether ``name`` reboots now.

    ``reasons``: {'rdma': rdma_reboot_required, 'gpu': nvidia_driver_reboot_required} (false when the stage did not
    run); ``slurm``: None where no Slurm controller runs scontrol yet (a greenfield bring-up), {'failed': True, 'msg':
    ...} or any result without a ``nodes`` list when it is installed but could not be read, else
    aicluster.infra.slurm_node_info's result; ``enabled``:
    aicluster_reboot. Returns {'reboot', 'waiting', 'reasons', 'why'}: ``waiting`` for a node that needs a reboot and
    does not get one, ``why`` says why not.
    """
    why_needed = [text for key, text in (('rdma', 'rdma stage: new DOCA-OFED kernel modules or HCA firmware'),
                                         ('gpu', 'gpu stage: new NVIDIA kernel modules (or nvidia_peermem waiting '
                                                 'for DOCA-OFED\'s ib_core)')) if (reasons or {}).get(key)]
    result = {'reboot': False, 'waiting': False, 'reasons': why_needed, 'why': ''}
    if not why_needed:
        return result
    if not enabled:
        return dict(result, waiting=True, why='aicluster_reboot is false')
    # a failed read registered with failed_when false: no nodes list (its failed flag is reset)
    if slurm is not None and (slurm.get('failed') or not isinstance(slurm.get('nodes'), list)):
        return dict(result, waiting=True, why='Slurm is installed but its node states could not be read (%s): a node '
                    'that may run jobs is never rebooted' % (slurm.get('msg') or 'scontrol failed').strip()[:200])
    records = [record for record in (slurm or {}).get('nodes') or [] if record.get('NodeName') == name]
    if records:
        step = node_step(records[0], '')
        if step['busy']:
            return dict(result, waiting=True, why='runs Slurm jobs (%s): playbooks/rolling_upgrade.yml drains it, '
                        'waits for its jobs and reboots it' % step['state'])
    return dict(result, reboot=True)


def boot_problems(observed):
    """What the boot did not load, on a rebooted node. ``observed``: installed (the nvidia kernel module package's
    upstream version), loaded (the nvidia module's version file, None when missing), gpudirect (peermem or dmabuf),
    lsmod (its stdout), rdma_stack (doca, mlnx_ofed or inbox), ib_core (ib_core's version file, None when missing).
    Returns a list of problems (empty: the node runs what was installed)."""
    problems = []
    installed = (observed.get('installed') or '').strip()
    loaded = (observed.get('loaded') or '').strip()
    if not loaded:
        problems.append('no nvidia module is loaded after the reboot (the driver %s is installed)' % (installed or 'not'))
    elif installed and loaded != installed:
        problems.append('the loaded nvidia module is %s, the driver installed %s' % (loaded, installed))
    names = [line.split()[0] for line in (observed.get('lsmod') or '').splitlines()[1:] if line.split()]
    if observed.get('gpudirect') == 'peermem' and PEERMEM not in names:
        problems.append('%s is not loaded after the reboot (dmesg | grep %s says why)' % (PEERMEM, PEERMEM))
    if observed.get('rdma_stack') in ('doca', 'mlnx_ofed') and not (observed.get('ib_core') or '').strip():
        problems.append('the loaded ib_core is not DOCA-OFED\'s (it has no version) although rdma_stack is %s'
                        % observed['rdma_stack'])
    return problems
