# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for the nvidia_driver role's decisions: what to install (driver_plan) and, after it, the reboot contract,
versions, services and GPUDirect (driver_state). The node states are the lab's: the mirror's 580.82.07-1 ("current"
in an upgrade) and 580.95.05-1, hwsim's module version file and nv-fabricmanager stand-in."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.aicluster.infra.plugins.module_utils.nvidia_driver import (
    driver_plan, driver_state, kernel_hold_packages, parse_lsmod, parse_tool_version)

OLD, NEW = '580.82.07-1', '580.95.05-1'
KERNEL = {'running': '6.1.0-28-amd64', 'installed': ['6.1.0-28-amd64'], 'newest': '6.1.0-28-amd64',
          'running_is_newest': True, 'message': ''}
NEWER_KERNEL = {'running': '6.1.0-18-amd64', 'installed': ['6.1.0-18-amd64', '6.1.0-28-amd64'],
                'newest': '6.1.0-28-amd64', 'running_is_newest': False,
                'message': 'the running kernel 6.1.0-18-amd64 is not the newest installed (6.1.0-28-amd64): reboot '
                           'into it before building kernel modules, or remove it'}
NAMES = ['nvidia-driver', 'libnvidia-ml1', 'nvidia-kernel-open-dkms', 'nvidia-kernel-dkms', 'nvidia-fabricmanager',
         'nvidia-imex']
# lsmod on an HGX node with DOCA-OFED (trimmed)
LSMOD = '''Module                  Size  Used by
nvidia_peermem         16384  0
nvidia_uvm           4956160  0
nvidia              60403712  105 nvidia_uvm,nvidia_peermem
ib_core               454656  9 rdma_cm,ib_ipoib,nvidia_peermem,iw_cm,ib_umad,rdma_ucm,ib_uverbs,mlx5_ib,ib_cm
mlx5_core            2060288  1 mlx5_ib
'''


def settings(**changes):
    base = {'branch': '580', 'version': NEW, 'kernel_modules': 'open', 'fabricmanager': True, 'imex': False,
            'os_family': 'Debian', 'package_names': {}, 'extra_packages': [], 'kernel_hold': False}
    base.update(changes)
    return base


def packages(version=None, status='hi', **others):
    """host_state_info packages: the default set at ``version`` (None: nothing installed), plus ``others``."""
    found = dict((name, {'version': '', 'status': ''}) for name in NAMES)
    if version:
        for name in ('nvidia-driver', 'libnvidia-ml1', 'nvidia-kernel-open-dkms', 'nvidia-fabricmanager'):
            found[name] = {'version': version, 'status': status}
    for name, version_status in others.items():
        found[name.replace('_', '-')] = {'version': version_status[0], 'status': version_status[1]}
    return found


def observed(version=None, kernel=None, loaded=None, nvswitch=True, **others):
    return {'nvswitch': nvswitch, 'packages': packages(version, **others), 'kernel': kernel or KERNEL,
            'loaded': loaded, 'kernel_images': ''}


def test_fresh_node_installs_everything_at_the_driver_version():
    plan = driver_plan(settings(), observed())
    # the driver's own packages at exactly its version; the fabric manager at its upstream version (its revision is
    # the repository's: pinned_packages resolves it)
    assert plan['packages'] == [{'name': name, 'version': NEW} for name in (
        'nvidia-driver', 'libnvidia-ml1', 'nvidia-kernel-open-dkms')] + [
        {'name': 'nvidia-fabricmanager', 'upstream': '580.95.05'}]
    assert plan['names']['nscq'] == 'libnvidia-nscq' and plan['names']['nvlsm'] == 'nvlsm'
    assert plan['kernel_modules_change'] is True
    assert plan['problems'] == []
    assert plan['upstream'] == '580.95.05'
    assert plan['loaded'] == ''
    assert plan['dkms'] is True
    assert plan['fabricmanager'] == {'wanted': True, 'present': True}
    assert plan['imex'] == {'wanted': False, 'present': False}


def test_converged_node_changes_nothing_even_with_a_newer_kernel_waiting():
    plan = driver_plan(settings(), observed(NEW, kernel=NEWER_KERNEL, loaded='580.95.05\n'))
    assert plan['kernel_modules_change'] is False
    assert plan['problems'] == []
    assert plan['loaded'] == '580.95.05'


def test_a_kernel_module_change_stops_when_the_running_kernel_is_not_the_newest():
    plan = driver_plan(settings(), observed(OLD, kernel=NEWER_KERNEL, loaded='580.82.07'))
    assert plan['problems'] == [NEWER_KERNEL['message']]


def test_a_removed_package_counts_as_not_installed():
    plan = driver_plan(settings(), observed(NEW, status='rc'))
    assert plan['kernel_modules_change'] is True


def test_switching_flavour_is_refused_before_anything_changes():
    plan = driver_plan(settings(kernel_modules='proprietary'), observed(NEW))
    assert len(plan['problems']) == 1
    assert plan['problems'][0].startswith('nvidia_driver_kernel_modules is proprietary but nvidia-kernel-open-dkms '
                                          '(the other flavour) 580.95.05-1 is installed')


@pytest.mark.parametrize('setting, nvswitch, wanted, names', [
    ('auto', False, False, ['nvidia-driver', 'libnvidia-ml1', 'nvidia-kernel-open-dkms']),
    ('auto', True, True, ['nvidia-driver', 'libnvidia-ml1', 'nvidia-kernel-open-dkms', 'nvidia-fabricmanager']),
    (False, True, False, ['nvidia-driver', 'libnvidia-ml1', 'nvidia-kernel-open-dkms']),
], ids=['auto-no-nvswitch', 'auto-nvswitch', 'false'])
def test_fabric_manager_package_by_setting(setting, nvswitch, wanted, names):
    plan = driver_plan(settings(fabricmanager=setting), observed(nvswitch=nvswitch))
    assert [entry['name'] for entry in plan['packages']] == names
    assert plan['fabricmanager']['wanted'] is wanted


@pytest.mark.parametrize('branch, version, generation, library, nvlsm', [
    ('580', NEW, 4, 'libnvidia-nscq', []),
    ('580', NEW, 5, 'libnvsdm', ['nvlsm']),
    ('570', '570.195.03-1', 4, 'libnvidia-nscq-570', []),
    ('570', '570.195.03-1', 5, 'libnvsdm-570', ['nvlsm']),
], ids=['h100-r580', 'b200-r580', 'h100-r570', 'b200-r570'])
def test_the_switch_library_follows_the_nvlink_generation_at_the_driver_upstream(branch, version, generation, library,
                                                                                 nvlsm):
    # DCGM reads NVSwitches through NSCQ (NVLink 4) or NVSDM (NVLink 5), packaged apart and pinned to the driver's
    # upstream version; NVLSM (NVLink 5) has a version of its own and is installed apart
    found = dict(observed(), nvswitch_generation=generation)
    plan = driver_plan(settings(branch=branch, version=version), found)
    assert {'name': library, 'upstream': version.rsplit('-', 1)[0]} in plan['packages']
    assert plan['nvlsm'] == nvlsm and plan['nvswitch_generation'] == generation
    other = {'libnvidia-nscq', 'libnvidia-nscq-570', 'libnvsdm', 'libnvsdm-570'} - {library}
    assert not other & set(entry['name'] for entry in plan['packages'])


def test_no_switch_library_without_nvswitches_or_without_the_fabric_manager():
    for found, fabricmanager in ((dict(observed(nvswitch=False), nvswitch_generation=0), 'auto'),
                                 (dict(observed(), nvswitch_generation=5), False)):
        plan = driver_plan(settings(fabricmanager=fabricmanager), found)
        assert [entry['name'] for entry in plan['packages']] == ['nvidia-driver', 'libnvidia-ml1',
                                                                 'nvidia-kernel-open-dkms']
        assert plan['nvlsm'] == []


def test_an_unmanaged_fabric_manager_of_another_version_stops_before_the_upgrade():
    found = observed(OLD, loaded='580.82.07', nvswitch=False)
    plan = driver_plan(settings(fabricmanager='auto'), found)
    assert plan['fabricmanager'] == {'wanted': False, 'present': True}
    assert len(plan['problems']) == 1
    assert plan['problems'][0].startswith("nvidia-fabricmanager 580.82.07-1 is installed but "
                                          "nvidia_driver_fabricmanager does not manage it here (auto, no "
                                          "NVSwitch found): it would not match the driver 580.95.05-1")


def test_an_unmanaged_fabric_manager_of_the_driver_upstream_with_its_own_revision_matches():
    # Ubuntu: the driver 580.95.05-0ubuntu1, NVIDIA's fabric manager 580.95.05-1: the same driver version
    ubuntu = settings(fabricmanager='auto', os_family='Ubuntu', version='580.95.05-0ubuntu1')
    found = {'nvswitch': False, 'kernel': KERNEL, 'loaded': '580.95.05', 'kernel_images': '',
             'packages': {'nvidia-fabricmanager': {'version': '580.95.05-1', 'status': 'hi'}}}
    plan = driver_plan(ubuntu, found)
    assert plan['problems'] == [] and plan['fabricmanager'] == {'wanted': False, 'present': True}
    assert plan['packages'][0] == {'name': 'nvidia-driver-580-open', 'version': '580.95.05-0ubuntu1'}


def test_kernel_hold_names_the_running_image_and_the_metapackages():
    text = ('linux-image-6.1.0-18-amd64\tii \n'
            'linux-image-6.1.0-28-amd64\tii \n'
            'linux-image-6.1.0-10-amd64\trc \n'
            'linux-image-amd64\tii \n'
            'linux-image-6.1.0-28-amd64-dbg\tii \n')
    assert kernel_hold_packages(text, '6.1.0-28-amd64') == (['linux-image-6.1.0-28-amd64', 'linux-image-amd64'], [])
    names, warnings = kernel_hold_packages('', '6.8.0-49-generic')
    assert names == []
    assert 'linux-image-6.8.0-49-generic is not installed' in warnings[0]
    plan = driver_plan(settings(kernel_hold=True), dict(observed(NEW), kernel_images=text))
    assert plan['kernel_hold'] == ['linux-image-6.1.0-28-amd64', 'linux-image-amd64']


@pytest.mark.parametrize('text, version', [
    ('Fabric Manager version is : 580.95.05\n', '580.95.05'),
    ('IMEX version is: 580.95.05\n', '580.95.05'),
    ('nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 12.9, V12.9.86\n', '12.9'),
    ('no version here', ''),
    ('', ''),
], ids=['fabricmanager', 'imex', 'nvcc', 'none', 'empty'])
def test_parse_tool_version(text, version):
    assert parse_tool_version(text) == version


def test_parse_lsmod():
    assert parse_lsmod(LSMOD) == ['nvidia_peermem', 'nvidia_uvm', 'nvidia', 'ib_core', 'mlx5_core']
    assert parse_lsmod('') == []


UNITS = {'nvidia-persistenced': {'exists': True}, 'nvidia-fabricmanager': {'exists': True},
         'nvidia-imex': {'exists': False}}


def fm(version='580.95.05', rc=0):
    return {'rc': rc, 'stdout': 'Fabric Manager version is : %s\n' % version, 'stderr': '', 'changed': False}


def after(plan, **changes):
    base = {'check_mode': False, 'changed_packages': [], 'installed': {}, 'loaded': '580.95.05\n', 'modprobe': None,
            'services': UNITS, 'fabricmanager': fm(), 'imex': None, 'lsmod': LSMOD, 'gpudirect': 'peermem',
            'persistenced': True, 'module_version_file': '/sys/module/nvidia/version'}
    base.update(changes)
    return driver_state(plan, base)


FRESH_INSTALL = [{'name': name, 'before': '', 'after': NEW} for name in (
    'nvidia-driver', 'libnvidia-ml1', 'nvidia-kernel-open-dkms', 'nvidia-fabricmanager')]
UPGRADE = [{'name': name, 'before': OLD, 'after': NEW} for name in (
    'nvidia-driver', 'libnvidia-ml1', 'nvidia-kernel-open-dkms', 'nvidia-fabricmanager')]


def test_converged_node_starts_what_runs_already_and_needs_no_reboot():
    state = after(driver_plan(settings(), observed(NEW, loaded='580.95.05')))
    assert state['reboot_required'] is False
    assert state['versions'] == {'wanted': '580.95.05', 'installed': '580.95.05', 'loaded': '580.95.05',
                                 'fabricmanager': '580.95.05', 'imex': ''}
    assert state['services'] == [{'name': 'nvidia-persistenced', 'enabled': True, 'state': 'started'},
                                 {'name': 'nvidia-fabricmanager', 'enabled': True, 'state': 'started'}]
    assert state['problems'] == [] and state['warnings'] == []
    assert state['peermem_load'] is False
    assert state['gpudirect'] == 'nvidia_peermem loaded'


def test_fresh_install_loads_the_driver_then_starts_the_fabric_manager_and_peermem_and_asks_for_a_reboot():
    plan = driver_plan(settings(), observed())
    state = after(plan, changed_packages=FRESH_INSTALL, installed=dict((e['name'], NEW) for e in FRESH_INSTALL),
                  modprobe={'rc': 0, 'stderr': '', 'changed': True}, lsmod='Module Size Used by\nnvidia 1 0\n')
    assert state['reboot_required'] is True
    assert state['reboot_reasons'] == ['nvidia-kernel-open-dkms installed at 580.95.05-1']
    assert {'name': 'nvidia-fabricmanager', 'enabled': True, 'state': 'restarted'} in state['services']
    assert state['peermem_load'] is True


def test_upgrade_without_reboot_restarts_nothing_and_asks_for_a_reboot():
    plan = driver_plan(settings(), observed(OLD, loaded='580.82.07'))
    state = after(plan, changed_packages=UPGRADE, installed=dict((e['name'], NEW) for e in UPGRADE),
                  loaded='580.82.07\n', lsmod='Module Size Used by\nnvidia 1 0\n')
    assert state['reboot_required'] is True
    assert state['reboot_reasons'] == ['the loaded nvidia module is 580.82.07, the driver 580.95.05',
                                       'nvidia-kernel-open-dkms changed 580.82.07-1 -> 580.95.05-1']
    assert {'name': 'nvidia-fabricmanager', 'enabled': True, 'state': None} in state['services']
    assert state['peermem_load'] is False
    assert state['versions']['loaded'] == '580.82.07'
    assert state['versions']['installed'] == '580.95.05'
    assert any('nvidia-fabricmanager not (re)started: the loaded nvidia module is 580.82.07' in w for w in state['warnings'])
    assert any('nvidia_peermem not loaded now' in w for w in state['warnings'])


def test_after_the_reboot_the_upgraded_node_is_converged():
    state = after(driver_plan(settings(), observed(NEW, loaded='580.95.05')))
    assert state['reboot_required'] is False
    assert state['services'][1]['state'] == 'started'


def test_a_fabric_manager_binary_of_another_version_is_a_problem_naming_both():
    state = after(driver_plan(settings(), observed(NEW, loaded='580.95.05')), fabricmanager=fm('580.82.07'))
    assert state['problems'] == [
        "nv-fabricmanager --version reports 580.82.07 but the installed driver is 580.95.05: the fabric manager must "
        "be exactly the driver's version; nvidia-fabricmanager 580.95.05-1 does not install what its version "
        'says: reinstall it (apt-get install --reinstall nvidia-fabricmanager) or check the repository']
    assert state['versions']['fabricmanager'] == '580.82.07'


def test_check_run_catches_a_fabric_manager_moved_apart_from_its_driver_by_hand():
    # molecule/stack: apt-get install nvidia-fabricmanager=580.82.07-1 beside driver 580.95.05-1, then --check
    found = observed(NEW, loaded='580.95.05', nvidia_fabricmanager=(OLD, 'ii'))
    plan = driver_plan(settings(), found)
    state = after(plan, check_mode=True, changed_packages=[{'name': 'nvidia-fabricmanager', 'before': OLD,
                                                            'after': NEW}],
                  installed={'nvidia-driver': NEW, 'libnvidia-ml1': NEW, 'nvidia-kernel-open-dkms': NEW,
                             'nvidia-fabricmanager': OLD},
                  fabricmanager=fm('580.82.07'))
    assert state['problems'] == [
        "nv-fabricmanager --version reports 580.82.07 but the installed driver is 580.95.05: the fabric manager must "
        "be exactly the driver's version; nvidia-fabricmanager 580.82.07-1 was installed apart from the driver: a "
        "run without --check puts it back at the driver's version, pinned and held with it"]


def test_check_run_of_a_bom_change_finds_the_old_pair_consistent():
    plan = driver_plan(settings(), observed(OLD, loaded='580.82.07'))
    state = after(plan, check_mode=True, changed_packages=UPGRADE, installed=dict((e['name'], OLD) for e in UPGRADE),
                  loaded='580.82.07', fabricmanager=fm('580.82.07'))
    assert state['problems'] == []
    assert state['reboot_required'] is True


def test_an_unmanaged_fabric_manager_binary_of_another_version():
    unmanaged = after(driver_plan(settings(fabricmanager=False), observed(NEW, loaded='580.95.05')),
                      fabricmanager=fm('580.82.07'))
    assert unmanaged['problems'] == [
        "nv-fabricmanager --version reports 580.82.07 but the installed driver is 580.95.05: the fabric manager must "
        "be exactly the driver's version; set nvidia_driver_fabricmanager true to pin nvidia-fabricmanager with "
        'the driver, or remove it']


def test_a_failing_fabric_manager_binary_is_a_problem():
    read = {'rc': 2, 'stdout': '', 'stderr': '', 'msg': '[Errno 2] No such file or directory', 'changed': False}
    state = after(driver_plan(settings(), observed(NEW, loaded='580.95.05')), fabricmanager=read)
    assert state['problems'] == ['nv-fabricmanager --version failed (rc 2): [Errno 2] No such file or directory']


def test_without_nvswitch_the_fabric_manager_is_checked_but_not_started():
    state = after(driver_plan(settings(), observed(NEW, loaded='580.95.05', nvswitch=False)))
    assert [service['name'] for service in state['services']] == ['nvidia-persistenced']
    assert state['problems'] == []


def test_check_mode_on_a_fresh_node_reads_nothing_it_would_install():
    plan = driver_plan(settings(), observed())
    units = {'nvidia-persistenced': {'exists': False}, 'nvidia-fabricmanager': {'exists': False},
             'nvidia-imex': {'exists': False}}
    skipped = {'skipped': True, 'changed': False}
    state = after(plan, check_mode=True, changed_packages=FRESH_INSTALL, loaded=None, services=units,
                  fabricmanager={'rc': 2, 'stdout': '', 'msg': 'No such file'}, modprobe=skipped, lsmod='')
    assert state['problems'] == []
    assert state['services'] == []
    assert state['peermem_load'] is False
    assert state['reboot_required'] is True
    assert state['warnings'] == []


def test_a_missing_persistenced_unit_is_a_problem_outside_check_mode():
    units = dict(UNITS, **{'nvidia-persistenced': {'exists': False}})
    state = after(driver_plan(settings(), observed(NEW, loaded='580.95.05')), services=units)
    assert state['problems'][0].startswith('nvidia-persistenced.service does not exist')
    assert after(driver_plan(settings(), observed(NEW, loaded='580.95.05')), services=units,
                 persistenced=False)['problems'] == []


def test_a_module_version_file_that_stays_missing_after_modprobe_is_a_problem():
    state = after(driver_plan(settings(), observed(NEW)), modprobe={'rc': 0, 'stderr': ''}, loaded=None)
    assert state['problems'][0].startswith('modprobe nvidia succeeded but /sys/module/nvidia/version does not exist')


def test_a_failed_modprobe_asks_for_a_reboot_and_starts_nothing_that_needs_the_driver():
    state = after(driver_plan(settings(), observed(NEW)), loaded=None, lsmod='',
                  modprobe={'rc': 1, 'stderr': "modprobe: ERROR: could not insert 'nvidia': No such device\n"})
    assert state['reboot_required'] is True
    assert state['reboot_reasons'] == ["modprobe nvidia failed: modprobe: ERROR: could not insert 'nvidia': No such device"]
    assert {'name': 'nvidia-fabricmanager', 'enabled': True, 'state': None} in state['services']
    assert state['peermem_load'] is False


def test_dmabuf_records_nccl_and_loads_nothing():
    state = after(driver_plan(settings(), observed(NEW, loaded='580.95.05')), gpudirect='dmabuf', lsmod=None)
    assert state['peermem_load'] is False
    assert state['gpudirect'].startswith('DMA-BUF: nothing to load; NCCL registers GPU memory')


def test_imex_is_checked_and_started_like_the_fabric_manager():
    plan = driver_plan(settings(imex=True), observed(NEW, loaded='580.95.05', nvidia_imex=(NEW, 'hi')))
    units = dict(UNITS, **{'nvidia-imex': {'exists': True}})
    state = after(plan, services=units, imex={'rc': 0, 'stdout': 'IMEX version is: 580.95.05\n', 'stderr': ''})
    assert {'name': 'nvidia-imex', 'enabled': True, 'state': 'started'} in state['services']
    assert state['versions']['imex'] == '580.95.05'
    bad = after(plan, services=units, imex={'rc': 0, 'stdout': 'IMEX version is: 580.82.07\n', 'stderr': ''})
    assert bad['problems'][0].startswith('nvidia-imex --version reports 580.82.07 but the installed driver is 580.95.05: '
                                         "IMEX must be exactly the driver's version")


def test_same_input_same_output():
    plan = driver_plan(settings(), observed(OLD, loaded='580.82.07'))
    assert after(plan, changed_packages=UPGRADE) == after(plan, changed_packages=UPGRADE)


# --------------------------------------------------------------------------
# nvidia_peermem and the RDMA stack loaded (issue 31: a first bring-up installs DOCA-OFED, then the driver, unrebooted)

INBOX_LSMOD = 'Module Size Used by\nnvidia 1 0\nmlx5_ib 1 0\nib_core 1 1 mlx5_ib\nmlx5_core 1 1 mlx5_ib\n'
DOCA = '24.10-1.1.4'


def modinfo(version):
    """The ``modinfo -F version`` loop results (DOCA-OFED's modules carry its version; inbox ones none)."""
    return [{'item': name, 'rc': 0, 'stdout': '%s\n' % version if version else ''} for name in ('ib_core', 'mlx5_core')]


def rdma(loaded=None, installed=DOCA, reboot=False):
    contents = {'/sys/module/nvidia/version': '580.95.05\n'}
    for name in ('ib_core', 'mlx5_core'):
        contents['/sys/module/%s/version' % name] = '%s\n' % loaded if loaded else None
    return {'rdma_reboot_required': reboot, 'module_dir': '/sys/module', 'contents': contents,
            'modinfo': modinfo(installed), 'lsmod': INBOX_LSMOD}


def test_first_bring_up_defers_peermem_to_the_boot_while_the_inbox_ib_core_runs():
    """On main the gpu stage ran modprobe nvidia_peermem here and stopped every host (Unknown symbol in module)."""
    state = after(driver_plan(settings(), observed(NEW, loaded='580.95.05')), **rdma(loaded=None, installed=DOCA))
    assert state['peermem_load'] is False
    assert state['gpudirect'] == 'nvidia_peermem loads at the next boot (modules-load.d)'
    assert state['reboot_required'] is True
    assert state['reboot_reasons'] == [
        "the loaded ib_core is the distribution's (inbox), the running kernel has DOCA-OFED's 24.10-1.1.4 installed: "
        "DOCA-OFED's modules load at the next boot, and nvidia_peermem with them (modules-load.d)"]
    assert state['problems'] == []


def test_the_rdma_stage_reboot_fact_defers_peermem_too():
    state = after(driver_plan(settings(), observed(NEW, loaded='580.95.05')), **rdma(loaded=DOCA, reboot=True))
    assert state['peermem_load'] is False and state['reboot_required'] is True
    assert state['reboot_reasons'][0].startswith("the rdma stage changed DOCA-OFED's kernel modules")


def test_another_doca_loaded_than_installed_waits_for_the_reboot():
    state = after(driver_plan(settings(), observed(NEW, loaded='580.95.05')), **rdma(loaded='24.07-0.6.1', installed=DOCA))
    assert state['peermem_load'] is False
    assert 'the loaded ib_core is 24.07-0.6.1' in state['reboot_reasons'][0]


def test_on_doca_s_stack_peermem_loads_now_and_a_failure_names_the_stale_nvidia_build():
    state = after(driver_plan(settings(), observed(NEW, loaded='580.95.05')), **rdma(loaded=DOCA, installed=DOCA))
    assert state['peermem_load'] is True and state['reboot_required'] is False
    assert state['peermem_cause'].startswith("the loaded ib_core is DOCA-OFED's 24.10-1.1.4, so no reboot is pending")
    assert 'dkms install nvidia/<version>' in state['peermem_cause']


def test_without_doca_peermem_is_tried_and_its_failure_names_the_missing_stack():
    state = after(driver_plan(settings(), observed(NEW, loaded='580.95.05')), **rdma(loaded=None, installed=None))
    assert state['peermem_load'] is True and state['reboot_required'] is False
    assert state['peermem_cause'].startswith('no DOCA-OFED ib_core is installed for the running kernel')
    assert 'nvidia_driver_gpudirect dmabuf' in state['peermem_cause']


def test_converged_node_with_peermem_loaded_needs_nothing():
    observed_rdma = rdma(loaded=DOCA, installed=DOCA)
    observed_rdma['lsmod'] = LSMOD
    state = after(driver_plan(settings(), observed(NEW, loaded='580.95.05')), **observed_rdma)
    assert state['reboot_required'] is False and state['gpudirect'] == 'nvidia_peermem loaded'
