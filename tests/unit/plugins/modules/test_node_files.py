# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_files on real files: one run puts files, directories and removals in place, changes only what differs, and
finds every hand edit, removal or wrong mode (no cache, no stamp)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import getpass
import grp
import os
import stat

from ansible_collections.aicluster.infra.plugins.modules import node_files

OWNER = getpass.getuser()
GROUP = grp.getgrgid(os.getgid()).gr_name


def _entries(tmp_path, **changes):
    entries = [
        dict(path=str(tmp_path / 'state'), state='directory', mode='0755'),
        dict(path=str(tmp_path / 'state' / 'cgroup.conf'), content='ConstrainCores=yes\n'),
        dict(path=str(tmp_path / 'prolog.sh'), content='#!/bin/sh\nexit 0\n', mode='0755'),
        dict(path=str(tmp_path / 'old.conf'), state='absent'),
    ]
    for entry in entries:
        entry.setdefault('owner', OWNER)
        entry.setdefault('group', GROUP)
        entry.update(changes.get(os.path.basename(entry['path']), {}))
    return entries


def _run(run_module, tmp_path, **args):
    params = dict(files=_entries(tmp_path, **args.pop('changes', {})))
    params.update(args)
    result, calls = run_module(node_files, params, {})
    assert calls == []
    return result


def _mode(path):
    return stat.S_IMODE(os.stat(str(path)).st_mode)


def test_first_run_puts_everything_in_place_then_a_rerun_changes_nothing(run_module, tmp_path):
    (tmp_path / 'old.conf').write_text('LimitMEMLOCK=infinity\n')
    result = _run(run_module, tmp_path, _ansible_diff=True)
    assert result['changed'] is True
    assert result['changed_paths'] == [str(tmp_path / name) for name in ('state', 'state/cgroup.conf', 'prolog.sh', 'old.conf')]
    assert (tmp_path / 'state' / 'cgroup.conf').read_text() == 'ConstrainCores=yes\n'
    assert _mode(tmp_path / 'prolog.sh') == 0o755 and _mode(tmp_path / 'state' / 'cgroup.conf') == 0o644
    assert not (tmp_path / 'old.conf').exists()
    assert [diff['before_header'] for diff in result['diff']] == result['changed_paths']
    before = os.stat(str(tmp_path / 'prolog.sh')).st_mtime_ns
    again = _run(run_module, tmp_path, _ansible_diff=True)
    assert again['changed'] is False and again['changed_paths'] == [] and 'diff' not in again
    assert [entry['changed'] for entry in again['files']] == [False] * 4
    assert os.stat(str(tmp_path / 'prolog.sh')).st_mtime_ns == before
    assert sorted(os.listdir(str(tmp_path / 'state'))) == ['cgroup.conf']  # no temporary file left


def test_a_hand_edit_a_removed_file_and_a_wrong_mode_are_all_found(run_module, tmp_path):
    _run(run_module, tmp_path)
    (tmp_path / 'state' / 'cgroup.conf').write_text('ConstrainCores=no\n')
    (tmp_path / 'prolog.sh').unlink()
    (tmp_path / 'old.conf').write_text('back\n')
    os.chmod(str(tmp_path / 'state'), 0o700)
    result = _run(run_module, tmp_path, _ansible_diff=True)
    assert result['changed_paths'] == [str(tmp_path / name) for name in ('state', 'state/cgroup.conf', 'prolog.sh', 'old.conf')]
    edit = [diff for diff in result['diff'] if diff['before_header'].endswith('cgroup.conf')][0]
    assert edit['before'] == 'ConstrainCores=no\n' and edit['after'] == 'ConstrainCores=yes\n'
    assert _mode(tmp_path / 'state') == 0o755 and (tmp_path / 'prolog.sh').read_text() == '#!/bin/sh\nexit 0\n'


def test_a_mode_alone_is_fixed_in_place(run_module, tmp_path):
    _run(run_module, tmp_path)
    os.chmod(str(tmp_path / 'prolog.sh'), 0o644)
    result = _run(run_module, tmp_path, _ansible_diff=True)
    assert result['changed_paths'] == [str(tmp_path / 'prolog.sh')] and _mode(tmp_path / 'prolog.sh') == 0o755
    assert result['diff'][0]['before'] == {'mode': '0644'} and result['diff'][0]['after'] == {'mode': '0755'}


def test_check_mode_says_and_writes_nothing(run_module, tmp_path):
    (tmp_path / 'old.conf').write_text('x\n')
    result = _run(run_module, tmp_path, _ansible_check_mode=True, _ansible_diff=True)
    assert result['changed'] is True and len(result['changed_paths']) == 4
    assert sorted(os.listdir(str(tmp_path))) == ['old.conf']
    _run(run_module, tmp_path)
    (tmp_path / 'prolog.sh').write_text('edited\n')
    result = _run(run_module, tmp_path, _ansible_check_mode=True, _ansible_diff=True)
    assert result['changed_paths'] == [str(tmp_path / 'prolog.sh')]
    assert (tmp_path / 'prolog.sh').read_text() == 'edited\n'


def test_a_directory_in_the_way_is_refused(run_module, tmp_path):
    (tmp_path / 'prolog.sh').mkdir()
    result = _run(run_module, tmp_path)
    assert result['failed'] and 'is a directory' in result['msg']


def test_a_file_needs_content_and_an_absolute_path(run_module, tmp_path):
    result, dummy = run_module(node_files, dict(files=[dict(path=str(tmp_path / 'a'))]), {})
    assert result['failed'] and 'no content' in result['msg']
    result, dummy = run_module(node_files, dict(files=[dict(path='relative', content='x')]), {})
    assert result['failed'] and 'absolute' in result['msg']


def test_prune_removes_the_unlisted_files_of_the_pattern_and_nothing_else(run_module, tmp_path):
    for name in ('60-x-ib0.network', '60-x-ib9.network', '60-x-ib9.netdev', '10-other.network'):
        (tmp_path / name).write_text('[Match]\n')
    os.symlink(str(tmp_path / 'nowhere'), str(tmp_path / '60-x-dangling.network'))
    pattern = [str(tmp_path / '60-x-*.network'), str(tmp_path / '60-x-*.netdev')]
    listed = [dict(path=str(tmp_path / '60-x-ib0.network'), content='[Match]\nName=ib0\n', owner=OWNER, group=GROUP)]

    checked, dummy = run_module(node_files, dict(files=listed, prune=pattern, _ansible_check_mode=True), {})
    assert checked['changed'] and sorted(os.listdir(str(tmp_path))) == [
        '10-other.network', '60-x-dangling.network', '60-x-ib0.network', '60-x-ib9.netdev', '60-x-ib9.network']

    result, dummy = run_module(node_files, dict(files=listed, prune=pattern), {})
    removed = [str(tmp_path / name) for name in ('60-x-dangling.network', '60-x-ib9.netdev', '60-x-ib9.network')]
    assert result['changed_paths'] == [listed[0]['path']] + removed
    assert [entry['state'] for entry in result['files']] == ['file', 'absent', 'absent', 'absent']
    assert sorted(os.listdir(str(tmp_path))) == ['10-other.network', '60-x-ib0.network']

    again, dummy = run_module(node_files, dict(files=listed, prune=pattern), {})
    assert again['changed'] is False and again['changed_paths'] == []


def test_prune_refuses_a_relative_pattern_and_a_matching_directory(run_module, tmp_path):
    result, dummy = run_module(node_files, dict(files=[], prune=['60-x-*.network']), {})
    assert result['failed'] and 'prune: pattern must be absolute' in result['msg']
    (tmp_path / '60-x-dir.network').mkdir()
    result, dummy = run_module(node_files, dict(files=[], prune=[str(tmp_path / '60-x-*.network')]), {})
    assert result['failed'] and 'is a directory' in result['msg']
