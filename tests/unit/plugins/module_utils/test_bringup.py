"""module_utils/bringup.py: which GPU node the bring-up's reboot stage reboots, and what the boot must have loaded."""
from ansible_collections.aicluster.infra.plugins.module_utils.bringup import boot_problems, reboot_step

BOTH = {'rdma': True, 'gpu': True}


def slurm(state, name='gpu01', reason=None):
    return {'nodes': [{'NodeName': name, 'State': state, 'Reason': reason}]}


def test_greenfield_node_reboots_for_both_stages():
    step = reboot_step('gpu01', BOTH, None, True)
    assert step['reboot'] is True and step['waiting'] is False
    assert len(step['reasons']) == 2 and step['reasons'][0].startswith('rdma stage')


def test_converged_node_reboots_nothing():
    assert reboot_step('gpu01', {'rdma': False, 'gpu': False}, None, True) == {
        'reboot': False, 'waiting': False, 'reasons': [], 'why': ''}
    assert reboot_step('gpu01', {}, slurm('IDLE'), True)['reboot'] is False


def test_opt_out_lists_the_node_as_waiting():
    step = reboot_step('gpu01', {'gpu': True}, None, False)
    assert step['reboot'] is False and step['waiting'] is True and step['why'] == 'aicluster_reboot is false'


def test_a_node_running_jobs_is_never_rebooted():
    for state in ('ALLOCATED', 'MIXED', 'MIXED+DRAIN', 'COMPLETING+DRAIN'):
        step = reboot_step('gpu01', BOTH, slurm(state), True)
        assert step['reboot'] is False and step['waiting'] is True and 'runs Slurm jobs' in step['why'], state


def test_an_idle_slurm_node_is_rebooted():
    assert reboot_step('gpu01', BOTH, slurm('IDLE'), True)['reboot'] is True
    assert reboot_step('gpu01', BOTH, slurm('IDLE+DRAIN', reason='maintenance'), True)['reboot'] is True
    assert reboot_step('gpu01', BOTH, slurm('DOWN*+DRAIN'), True)['reboot'] is True
    assert reboot_step('gpu01', BOTH, slurm('IDLE', name='gpu02'), True)['reboot'] is True  # not a Slurm node


def test_unreadable_slurm_reboots_nothing():
    step = reboot_step('gpu01', BOTH, {'failed': True, 'msg': 'slurm_load_node error: Unable to contact slurm controller'}, True)
    assert step['reboot'] is False and 'could not be read' in step['why']
    # registered with failed_when false: the failed flag is reset, the nodes list is missing
    registered = {'failed': False, 'changed': False, 'rc': 1, 'msg': 'scontrol show node failed with rc=1: Unable to contact slurm controller'}
    assert reboot_step('gpu01', BOTH, registered, True)['waiting'] is True


LSMOD = 'Module Size Used by\nnvidia_peermem 16384 0\nnvidia 1 1 nvidia_peermem\nib_core 1 1 nvidia_peermem\n'


def test_boot_loaded_everything():
    assert boot_problems({'installed': '580.95.05', 'loaded': '580.95.05\n', 'gpudirect': 'peermem', 'lsmod': LSMOD,
                          'rdma_stack': 'doca', 'ib_core': '24.10-1.1.4\n'}) == []


def test_boot_problems_name_each_missing_module():
    problems = boot_problems({'installed': '580.95.05', 'loaded': '580.82.07\n', 'gpudirect': 'peermem',
                              'lsmod': 'Module Size Used by\nnvidia 1 0\n', 'rdma_stack': 'doca', 'ib_core': None})
    assert problems == ['the loaded nvidia module is 580.82.07, the driver installed 580.95.05',
                        'nvidia_peermem is not loaded after the reboot (dmesg | grep nvidia_peermem says why)',
                        "the loaded ib_core is not DOCA-OFED's (it has no version) although rdma_stack is doca"]
    assert boot_problems({'installed': '580.95.05', 'loaded': None, 'gpudirect': 'dmabuf', 'rdma_stack': 'inbox'}) == [
        'no nvidia module is loaded after the reboot (the driver 580.95.05 is installed)']
