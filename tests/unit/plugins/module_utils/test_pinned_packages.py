# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pinned_packages decisions: the plan from dpkg-query, what apt-cache madison offers, kernel order."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils.pinned_packages import (
    kernel_key, kernel_state, parse_madison, plan, resolve, state_text, unavailable, update_errors, upstream_of,
    wanted_problems)

WANTED = [{'name': 'nvidia-driver', 'version': '580.95.05-1'},
          {'name': 'nvidia-fabricmanager', 'version': '580.95.05-1'},
          {'name': 'libnvidia-ml1', 'version': '580.95.05-1'}]
# dpkg-query --showformat '${Package}\t${binary:Package}\t${Version}\t${db:Status-Abbrev}\n' of the three names
DPKG = ('nvidia-driver\tnvidia-driver\t580.82.07-1\thi \n'
        'nvidia-fabricmanager\tnvidia-fabricmanager\t580.95.05-1\tii \n'
        'libnvidia-ml1\tlibnvidia-ml1:amd64\t\tun \n')
# apt-cache madison as apt 2.6 prints it for a flat repository
MADISON = (' nvidia-driver | 580.95.05-1 | http://ctl01/mirror/cuda ./ Packages\n'
           ' nvidia-driver | 580.82.07-1 | http://ctl01/mirror/cuda ./ Packages\n'
           'libnvidia-ml1 | 580.82.07-1 | http://ctl01/mirror/cuda ./ Packages\n')


def test_plan_installs_what_differs_and_holds_what_is_not_held_or_is_upgraded():
    todo = plan(WANTED, DPKG)
    assert todo['install'] == [{'name': 'nvidia-driver', 'before': '580.82.07-1', 'after': '580.95.05-1'},
                               {'name': 'libnvidia-ml1', 'before': '', 'after': '580.95.05-1'}]
    # an upgrade through --allow-change-held-packages drops the hold: the upgraded package is held again
    assert todo['hold'] == ['nvidia-driver', 'nvidia-fabricmanager', 'libnvidia-ml1']
    assert todo['held'] == ['nvidia-driver'] and todo['unhold'] == []
    assert todo['installed'] == {'nvidia-driver': '580.82.07-1', 'nvidia-fabricmanager': '580.95.05-1',
                                 'libnvidia-ml1': ''}


def test_converged_means_nothing_to_do():
    dpkg = ''.join('%s\t%s\t580.95.05-1\thi \n' % (entry['name'], entry['name']) for entry in WANTED)
    todo = plan(WANTED, dpkg)
    assert todo['install'] == [] and todo['hold'] == [] and todo['unhold'] == []


def test_hold_false_releases_holds():
    todo = plan(WANTED, DPKG, hold=False)
    assert todo['unhold'] == ['nvidia-driver'] and todo['hold'] == []


def test_removed_with_config_left_counts_as_absent():
    todo = plan(WANTED[:1], 'nvidia-driver\tnvidia-driver\t580.95.05-1\trc \n')
    assert todo['install'] == [{'name': 'nvidia-driver', 'before': '', 'after': '580.95.05-1'}]


def test_madison_and_unavailable_versions():
    assert parse_madison(MADISON) == {'nvidia-driver': ['580.95.05-1', '580.82.07-1'], 'libnvidia-ml1': ['580.82.07-1']}
    todo = plan(WANTED, DPKG)
    lines = unavailable(todo['install'] + [{'name': 'cuda-toolkit-12-9', 'before': '', 'after': '12.9.1-1'}], MADISON)
    assert lines == ['libnvidia-ml1=580.95.05-1 is not in any configured repository (offered: 580.82.07-1)',
                     'cuda-toolkit-12-9=12.9.1-1 is not in any configured repository '
                     '(no version of cuda-toolkit-12-9 is offered)']


def test_wanted_problems_one_line_each():
    problems = wanted_problems([{'name': 'nvidia-driver', 'version': '580.*'},
                                {'name': 'Bad Name', 'version': '1'},
                                {'name': 'nvidia-driver', 'version': '580.95.05-1'},
                                {'name': 'cuda-toolkit-12-9', 'version': '1:12.9.1-1'}])
    assert problems == [
        "packages[0]: nvidia-driver needs an exact Debian version such as 580.95.05-1 (no wildcard) or an upstream "
        "version, got '580.*'",
        "packages[1]: name must be a Debian package name (lowercase letters, digits, + - .), got 'Bad Name'",
        'packages[2]: nvidia-driver is listed twice']


def test_state_text():
    assert state_text(WANTED[:2], {'nvidia-driver': '580.82.07-1'}, {'nvidia-driver'}) == (
        'nvidia-driver=580.82.07-1 (held)\nnvidia-fabricmanager=absent\n')


def test_kernel_order_numbers_not_text():
    releases = ['6.1.0-28-amd64', '6.1.0-9-amd64', '6.12.0-1-amd64', '6.1.0-18-amd64']
    assert sorted(releases, key=kernel_key) == ['6.1.0-9-amd64', '6.1.0-18-amd64', '6.1.0-28-amd64', '6.12.0-1-amd64']
    assert kernel_key('5.14.0-427.13.1.el9_4.x86_64') < kernel_key('5.14.0-503.11.1.el9_5.x86_64')


def test_kernel_state_newer_installed_is_named():
    state = kernel_state('6.1.0-18-amd64', ['6.1.0-18-amd64', '6.1.0-28-amd64'])
    assert state['running_is_newest'] is False and state['newest'] == '6.1.0-28-amd64'
    assert state['message'].startswith('the running kernel 6.1.0-18-amd64 is not the newest installed (6.1.0-28-amd64)')
    assert kernel_state('6.1.0-28-amd64', ['6.1.0-18-amd64', '6.1.0-28-amd64'])['running_is_newest'] is True
    container = kernel_state('6.1.0-28-cloud-amd64', [])
    assert container['running_is_newest'] is True and container['message'] == ''


def test_update_errors_catch_what_apt_only_warns_about():
    # apt-get update against a stopped web server: exit status 0, warnings only
    out = ('Hit:1 http://deb.debian.org/debian bookworm InRelease\n'
           'Err:2 http://ctl01/mirror/cuda ./ InRelease\n'
           '  Could not connect to ctl01:80 (10.213.73.10), connection refused\n'
           'Reading package lists...\n')
    err = ('W: Failed to fetch http://ctl01/mirror/cuda/./InRelease  Could not connect to ctl01:80 (10.213.73.10), '
           'connection refused\n'
           'W: Some index files failed to download. They have been ignored, or old ones used instead.\n')
    assert update_errors(out, err) == [
        'Err:2 http://ctl01/mirror/cuda ./ InRelease',
        'W: Failed to fetch http://ctl01/mirror/cuda/./InRelease Could not connect to ctl01:80 (10.213.73.10), '
        'connection refused',
        'W: Some index files failed to download. They have been ignored, or old ones used instead.']
    assert update_errors('Hit:1 http://deb.debian.org/debian bookworm InRelease\nReading package lists...\n', '') == []


# ---------------------------------------------------------------- upstream pins (Ubuntu: -0ubuntu1 beside -1)
UBUNTU = [{'name': 'nvidia-driver-580-open', 'version': '580.95.05-0ubuntu1'},
          {'name': 'nvidia-fabricmanager', 'upstream': '580.95.05'}]
UBUNTU_MADISON = (' nvidia-fabricmanager | 580.95.05-1 | https://developer.download.nvidia.com/compute/cuda/repos/'
                  'ubuntu2404/x86_64  Packages\n'
                  ' nvidia-fabricmanager | 580.82.07-1 | https://developer.download.nvidia.com/compute/cuda/repos/'
                  'ubuntu2404/x86_64  Packages\n')


def test_wanted_problems_for_upstream_pins():
    assert wanted_problems(UBUNTU) == []
    assert wanted_problems([{'name': 'aa', 'upstream': '580.95.05-1'}, {'name': 'bb', 'upstream': '580.*'},
                            {'name': 'cc', 'version': '580.95.05-1', 'upstream': '580.95.05'}]) == [
        "packages[0]: aa needs an upstream version without epoch, revision or wildcard such as 580.95.05, got "
        "'580.95.05-1'",
        "packages[1]: bb needs an upstream version without epoch, revision or wildcard such as 580.95.05, got '580.*'",
        "packages[2]: cc has both version '580.95.05-1' and upstream '580.95.05': give one"]


def test_an_installed_version_with_the_upstream_is_at_its_pin():
    dpkg = ('nvidia-driver-580-open\tnvidia-driver-580-open\t580.95.05-0ubuntu1\thi \n'
            'nvidia-fabricmanager\tnvidia-fabricmanager\t580.95.05-1\thi \n')
    todo = plan(UBUNTU, dpkg)
    assert todo['install'] == [] and todo['hold'] == []
    assert upstream_of('1:580.95.05-0ubuntu1') == '580.95.05'


def test_an_upstream_pin_off_its_version_is_resolved_from_madison():
    dpkg = 'nvidia-fabricmanager\tnvidia-fabricmanager\t580.82.07-1\thi \n'
    todo = plan(UBUNTU, dpkg)
    assert todo['install'][1] == {'name': 'nvidia-fabricmanager', 'before': '580.82.07-1', 'after': '',
                                  'upstream': '580.95.05'}
    install, problems = resolve(todo['install'], UBUNTU_MADISON)
    assert problems == []
    assert install[1] == {'name': 'nvidia-fabricmanager', 'before': '580.82.07-1', 'after': '580.95.05-1'}
    # an exact entry passes unchanged (unavailable() judges it)
    assert install[0] == todo['install'][0]


def test_resolve_refuses_none_or_several_naming_what_is_offered():
    wanted = [{'name': 'nvidia-fabricmanager', 'upstream': '580.105.08'}, {'name': 'libnvsdm', 'upstream': '580.95.05'},
              {'name': 'nvidia-imex', 'upstream': '580.95.05'}]
    madison = UBUNTU_MADISON + (' nvidia-imex | 580.95.05-1 | a Packages\n nvidia-imex | 580.95.05-1ubuntu1 | b '
                                'Packages\n')
    resolved, problems = resolve(wanted, madison)
    assert problems == [
        'nvidia-fabricmanager=580.105.08-* is not in any configured repository (offered: 580.95.05-1, 580.82.07-1)',
        'libnvsdm=580.95.05-* is not in any configured repository (no version of libnvsdm is offered)',
        'nvidia-imex=580.95.05-* is ambiguous: the repositories offer 580.95.05-1, 580.95.05-1ubuntu1; pin one exact '
        'version']
    assert resolved == wanted
