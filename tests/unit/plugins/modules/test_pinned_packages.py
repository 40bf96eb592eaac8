# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pinned_packages: the order of its commands, and that nothing is installed when a version is not offered.

molecule/stack runs the module for real against the lab's signed mirror."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.modules import pinned_packages

PACKAGES = [{'name': 'nvidia-driver', 'version': '580.95.05-1'}, {'name': 'libnvidia-ml1', 'version': '580.95.05-1'}]
OLD = 'nvidia-driver\tnvidia-driver\t580.82.07-1\thi \nlibnvidia-ml1\tlibnvidia-ml1:amd64\t580.82.07-1\thi \n'
NEW = OLD.replace('580.82.07', '580.95.05')
MADISON = (' nvidia-driver | 580.95.05-1 | http://ctl01/mirror/cuda ./ Packages\n'
           'libnvidia-ml1 | 580.95.05-1 | http://ctl01/mirror/cuda ./ Packages\n')
TOOLS = ('dpkg-query', 'apt-get', 'apt-cache', 'apt-mark')


def _tools(dpkg, madison=MADISON, update=(0, '', '')):
    def apt_get(argv):
        return update if argv[1] == 'update' else (0, 'Setting up nvidia-driver (580.95.05-1) ...\n', '')
    tools = {tool: (0, '', '') for tool in TOOLS}
    tools.update({'dpkg-query': (0, dpkg, ''), 'apt-cache': (0, madison, ''), 'apt-get': apt_get})
    return tools


def test_converged_runs_one_command(run_module):
    result, calls = run_module(pinned_packages, {'packages': PACKAGES}, _tools(NEW))
    assert [call[0].rsplit('/', 1)[-1] for call in calls] == ['dpkg-query']
    assert result['changed'] is False and result['changed_packages'] == []


def test_upgrade_of_held_packages(run_module):
    result, calls = run_module(pinned_packages, {'packages': PACKAGES, '_ansible_diff': True}, _tools(OLD))
    names = [call[0].rsplit('/', 1)[-1] + ' ' + call[1] for call in calls]
    assert names == ['dpkg-query --show', 'apt-get update', 'apt-cache madison', 'apt-get install', 'apt-mark hold']
    assert calls[-2][-2:] == ['nvidia-driver=580.95.05-1', 'libnvidia-ml1=580.95.05-1']
    assert '--allow-change-held-packages' in calls[-2] and '--no-remove' in calls[-2]
    # the upgrade drops the holds (apt-mark showhold is empty after it): held again
    assert calls[-1][1:] == ['hold', 'nvidia-driver', 'libnvidia-ml1']
    assert result['changed'] is True and result['held'] == ['nvidia-driver', 'libnvidia-ml1']
    assert result['changed_packages'][0] == {'name': 'nvidia-driver', 'before': '580.82.07-1', 'after': '580.95.05-1'}
    assert result['diff']['before'] == 'nvidia-driver=580.82.07-1 (held)\nlibnvidia-ml1=580.82.07-1 (held)\n'
    assert result['diff']['after'] == 'nvidia-driver=580.95.05-1 (held)\nlibnvidia-ml1=580.95.05-1 (held)\n'


def test_version_not_offered_installs_nothing(run_module):
    madison = ' nvidia-driver | 580.82.07-1 | http://ctl01/mirror/cuda ./ Packages\n'
    result, calls = run_module(pinned_packages, {'packages': PACKAGES}, _tools(OLD, madison=madison))
    assert result['failed'] is True
    assert 'nvidia-driver=580.95.05-1 is not in any configured repository (offered: 580.82.07-1)' in result['msg']
    assert 'nothing was installed or removed' in result['msg']
    assert not any(call[1] in ('install', 'hold') for call in calls)


def test_unreachable_repository_stops_before_install(run_module):
    update = (0, 'Err:2 http://ctl01/mirror/cuda ./ InRelease\n',
              'W: Failed to fetch http://ctl01/mirror/cuda/./InRelease  Could not connect to ctl01:80\n')
    result, calls = run_module(pinned_packages, {'packages': PACKAGES}, _tools(OLD, update=update))
    assert result['failed'] is True and 'apt-get update failed (Err:2 http://ctl01/mirror/cuda ./ InRelease' in result['msg']
    assert result['rc'] == 0 and 'nothing was installed or removed' in result['msg']
    assert 'Could not connect' in result['stderr']
    assert [call[1] for call in calls] == ['--show', 'update']


def test_check_mode_touches_nothing(run_module):
    result, calls = run_module(pinned_packages, {'packages': PACKAGES, '_ansible_check_mode': True}, _tools(OLD))
    assert len(calls) == 1 and result['changed'] is True
    assert [entry['name'] for entry in result['changed_packages']] == ['nvidia-driver', 'libnvidia-ml1']


def test_fresh_install_holds_after(run_module):
    result, calls = run_module(pinned_packages, {'packages': PACKAGES}, _tools(''))
    assert calls[-1][1:] == ['hold', 'nvidia-driver', 'libnvidia-ml1']
    assert result['installed'] == {'nvidia-driver': '580.95.05-1', 'libnvidia-ml1': '580.95.05-1'}


def test_bad_version_names_the_entry(run_module):
    result, calls = run_module(pinned_packages, {'packages': [{'name': 'nvidia-driver', 'version': '580*'}]}, _tools(''))
    assert result['failed'] is True and calls == []
    assert 'packages[0]: nvidia-driver needs an exact Debian version' in result['msg']


# ---------------------------------------------------------------- upstream pins
UPSTREAM = [{'name': 'nvidia-driver-580-open', 'version': '580.95.05-0ubuntu1'},
            {'name': 'nvidia-fabricmanager', 'upstream': '580.95.05'}]
UP_OLD = ('nvidia-driver-580-open\tnvidia-driver-580-open\t580.82.07-0ubuntu1\thi \n'
          'nvidia-fabricmanager\tnvidia-fabricmanager\t580.82.07-1\thi \n')
UP_MADISON = (' nvidia-driver-580-open | 580.95.05-0ubuntu1 | https://x/ubuntu2404/x86_64  Packages\n'
              ' nvidia-fabricmanager | 580.95.05-1 | https://x/ubuntu2404/x86_64  Packages\n'
              ' nvidia-fabricmanager | 580.82.07-1 | https://x/ubuntu2404/x86_64  Packages\n')


def test_upstream_pin_is_installed_at_the_repository_version(run_module):
    result, calls = run_module(pinned_packages, {'packages': UPSTREAM, '_ansible_diff': True},
                               _tools(UP_OLD, madison=UP_MADISON))
    assert calls[-2][-2:] == ['nvidia-driver-580-open=580.95.05-0ubuntu1', 'nvidia-fabricmanager=580.95.05-1']
    assert result['changed_packages'][1] == {'name': 'nvidia-fabricmanager', 'before': '580.82.07-1',
                                             'after': '580.95.05-1'}
    assert 'nvidia-fabricmanager=580.95.05-1 (held)' in result['diff']['after']


def test_upstream_pin_converged_runs_one_command(run_module):
    converged = UP_OLD.replace('580.82.07', '580.95.05')
    result, calls = run_module(pinned_packages, {'packages': UPSTREAM}, _tools(converged, madison=UP_MADISON))
    assert [call[0].rsplit('/', 1)[-1] for call in calls] == ['dpkg-query'] and result['changed'] is False


def test_upstream_pin_not_offered_installs_nothing(run_module):
    madison = ' nvidia-driver-580-open | 580.95.05-0ubuntu1 | https://x/  Packages\n'
    result, calls = run_module(pinned_packages, {'packages': UPSTREAM}, _tools(UP_OLD, madison=madison))
    assert result['failed'] is True
    assert ('nvidia-fabricmanager=580.95.05-* is not in any configured repository (no version of '
            'nvidia-fabricmanager is offered); nothing was installed or removed') in result['msg']
    assert not any(call[1] in ('install', 'hold') for call in calls)


def test_upstream_pin_in_check_mode_reads_madison_only(run_module):
    result, calls = run_module(pinned_packages, {'packages': UPSTREAM, '_ansible_check_mode': True},
                               _tools(UP_OLD, madison=UP_MADISON))
    assert [call[0].rsplit('/', 1)[-1] + ' ' + call[1] for call in calls] == ['dpkg-query --show', 'apt-cache madison']
    assert result['changed_packages'][1]['after'] == '580.95.05-1'
    result, _calls = run_module(pinned_packages, {'packages': UPSTREAM, '_ansible_check_mode': True},
                                _tools(UP_OLD, madison=''))
    assert result['changed_packages'][1]['after'] == '580.95.05-*'


def test_version_or_upstream_is_required(run_module):
    result, _calls = run_module(pinned_packages, {'packages': [{'name': 'nvidia-imex'}]}, _tools(''))
    assert result['failed'] is True and 'version' in result['msg'] and 'upstream' in result['msg']
