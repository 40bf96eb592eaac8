# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
name: drift
type: notification
short_description: Write what a check run would change as a drift report (drift.json and drift.md)
version_added: 0.1.0
description:
  - Active only in check mode (C(--check)); a plain run is left alone. Every task a check run reports as changed is
    drift, since a converged fleet gives V(changed=0) in check mode.
  - For each host, each file, package, service, account or setting that differs from the desired state, with its diff
    when the run has C(--diff). Secrets are masked; a task with C(no_log) (the munge key) is listed without content.
  - A handler a drift notifies (a restart) is listed apart, as what the correcting run would also do.
  - C(playbooks/drift.yml) adds the fleet-wide facts that must be single-valued (kernel, GPU driver, OFED, HCA firmware,
    the slurm.conf checksum) and the GPU-fabric MTUs, and fails on drift when C(aicluster_fail_on_drift) is true.
  - Writes C(drift.json) and C(drift.md) to C(<dir>/drift-<UTC time>/) (or to the directory C(playbooks/drift.yml)
    names), rewritten at the start of each play so a later play can read it, and prints the summary line
    (C(N hosts drifted of M)) with each drifted host's entries at the end of the run.
author: aicluster.infra contributors (@aicluster)
requirements:
  - Enabled in the configuration, for example C(callbacks_enabled = aicluster.infra.drift) in C(ansible.cfg)
    or C(ANSIBLE_CALLBACKS_ENABLED=aicluster.infra.drift).
options:
  dir:
    description: Directory under which each check run writes its C(drift-<UTC time>/) report.
    type: path
    default: artifacts
    env:
      - name: AICLUSTER_DRIFT_DIR
    ini:
      - section: aicluster_drift
        key: dir
'''

import datetime
import json
import os
import tempfile

from ansible import context
from ansible.module_utils.common.text.converters import to_text
from ansible.playbook.handler import Handler
from ansible.plugins.callback import CallbackBase

from ansible_collections.aicluster.infra.plugins.module_utils.drift import (
    build_report, change_records, fleet_facts, rail_mtu_settings, render_markdown,
)

# Facts playbooks/drift.yml sets for this callback: where to write, and each host's fleet-wide observations.
DIR_FACT = 'aicluster_drift_dir'
HOST_FACT = 'aicluster_drift_host'


def plain(value):
    """Ansible's tagged and unsafe types as plain JSON types."""
    if isinstance(value, dict):
        return {to_text(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [plain(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return to_text(value)


def _args(task, result):
    invocation = result.get('invocation') if isinstance(result, dict) else None
    if isinstance(invocation, dict) and isinstance(invocation.get('module_args'), dict):
        return plain(invocation['module_args'])
    # not templated here: a value still holding a template names nothing, and the task name says what it is
    return {k: v for k, v in plain(task.args or {}).items() if not (isinstance(v, str) and '{{' in v)}


# ansible-core 2.19 names a callback's task result's parts result, task and host; 2.16 to 2.18 only _result, _task and
# _host (2.19 keeps those, deprecated from 2.23). The collection supports both (meta/runtime.yml).
def _result_of(result):
    return result.result if hasattr(result, 'result') else result._result


def _task_of(result):
    return result.task if hasattr(result, 'task') else result._task


def _host_of(result):
    return result.host if hasattr(result, 'host') else result._host


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'notification'
    CALLBACK_NAME = 'aicluster.infra.drift'
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super(CallbackModule, self).__init__(*args, **kwargs)
        self._active = bool(context.CLIARGS.get('check'))
        self._started = datetime.datetime.now(datetime.timezone.utc)
        self._playbooks = []
        self._play = ''
        self._hosts = set()
        self._changes = []
        self._observed = {}
        self._problems = {}
        self._out = None

    # ------------------------------------------------------------------ what the run did
    def v2_playbook_on_start(self, playbook):
        self._playbooks.append(os.path.basename(to_text(playbook._file_name)))

    def v2_playbook_on_play_start(self, play):
        if self._active and (self._changes or self._observed or self._hosts):
            self._write(complete=False)
        self._play = to_text(play.get_name()).strip()

    def _host(self, result):
        host = _host_of(result)
        if getattr(host, 'implicit', False):
            return None
        name = to_text(host.get_name())
        self._hosts.add(name)
        return name

    def v2_runner_on_ok(self, result):
        if not self._active:
            return
        host = self._host(result)
        res = _result_of(result)
        facts = res.get('ansible_facts') or {}
        if facts.get(DIR_FACT):
            self._out = to_text(facts[DIR_FACT])
        if host is None:
            return
        if isinstance(facts.get(HOST_FACT), dict):
            self._observed[host] = plain(facts[HOST_FACT])
        task = _task_of(result)
        role = to_text(task._role.get_name(include_role_fqcn=False)) if task._role else ''
        items = res.get('results') if isinstance(res.get('results'), list) else None
        for item in items if items is not None else [res]:
            if not isinstance(item, dict):
                continue
            records = change_records(host, to_text(result.task_name), task.action, _args(task, item), plain(item),
                                     role=role, play=self._play, handler=isinstance(task, Handler))
            for record in records:
                if items is not None and 'censored' not in item and item.get('item') is not None:
                    label = item.get('_ansible_item_label', item.get('item'))
                    record['item'] = to_text(label if not isinstance(label, dict) else json.dumps(plain(label)))
                self._changes.append(record)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        if not self._active or ignore_errors:
            return
        host = self._host(result)
        if host:
            res = _result_of(result)
            msg = to_text(res['msg']).splitlines()[0][:300] if res.get('msg') else 'failed'
            self._problems.setdefault(host, []).append('%s: %s' % (to_text(result.task_name), msg))

    def v2_runner_on_unreachable(self, result):
        if not self._active:
            return
        host = self._host(result)
        if host:
            self._problems.setdefault(host, []).append('unreachable: %s' % to_text(_result_of(result).get('msg', ''))[:300])

    def v2_runner_on_skipped(self, result):
        if self._active:
            self._host(result)

    # ------------------------------------------------------------------ the report
    def _report(self, complete):
        facts, settings = {}, {}
        for host, observed in self._observed.items():
            facts[host] = fleet_facts(observed)
            rails = observed.get('rails') or {}
            entries = rail_mtu_settings(rails.get('hcas'), rails.get('links'), rails.get('expected') or {})
            if entries:
                settings[host] = entries
        run = {
            'started': self._started.strftime('%Y-%m-%dT%H:%M:%SZ'),
            'playbook': ' '.join(self._playbooks),
            'check_mode': True,
            'diff_mode': bool(context.CLIARGS.get('diff')),
            'limit': context.CLIARGS.get('subset') or '',
            'complete': complete,
            'fleet_facts_read': sorted(self._observed),
        }
        return build_report(run, self._hosts, self._changes, settings, facts, self._problems)

    def _dir(self):
        if not self._out:
            base = self.get_option('dir') or 'artifacts'
            self._out = os.path.join(base, 'drift-%s' % self._started.strftime('%Y%m%dT%H%M%SZ'))
        return self._out

    def _write(self, complete):
        report = self._report(complete)
        out = self._dir()
        try:
            os.makedirs(out, exist_ok=True)
            for name, text in (('drift.json', json.dumps(report, indent=2, sort_keys=True) + '\n'),
                               ('drift.md', render_markdown(report))):
                handle, tmp = tempfile.mkstemp(dir=out, prefix='.%s.' % name)
                with os.fdopen(handle, 'w') as stream:
                    stream.write(text)
                os.chmod(tmp, 0o644)
                os.replace(tmp, os.path.join(out, name))
        except OSError as exc:
            self._display.warning('aicluster.infra.drift: cannot write the drift report to %s: %s' % (out, exc))
            return report, None
        return report, out

    def v2_playbook_on_stats(self, stats):
        if not self._active:
            return
        report, out = self._write(complete=True)
        self._display.banner('DRIFT')
        self._display.display('%s%s' % (report['summary'], '; report %s' % os.path.join(out, 'drift.md') if out else ''))
        for host in report['drifted_hosts']:
            record = report['hosts'][host]
            names = ['%s %s' % (e['kind'], e['name']) for e in record['drift']]
            names += ['fleet fact %s' % fact for fact in record['odd_facts']]
            self._display.display('  %s: %s' % (host, '; '.join(names)))
        for host in report['unchecked_hosts']:
            self._display.display('  %s not fully checked: %s' % (host, '; '.join(report['hosts'][host]['problems'])))
