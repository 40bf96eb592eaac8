# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lossless RoCE on one netdev, on the host: what module rdma_qos and the roce role's boot-time script
(roles/roce/files/aicluster-roce-qos) share, so that the settings a boot re-applies are applied by the same code as
the Ansible run. It runs the tools through a ``run(argv) -> (rc, stdout, stderr)`` callable the caller gives (the
module's run_command, or subprocess), reads and writes sysfs/configfs attributes, and decides through the pure
functions of module_utils/rdma_qos.py.

Only the standard library and this collection's module_utils (rdma_qos, mlnx_qos, errors) are imported: the role
installs these four files on the node, where Ansible is not.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.aicluster.infra.plugins.module_utils import rdma_qos
from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError
from ansible_collections.aicluster.infra.plugins.module_utils.mlnx_qos import parse_mlnx_qos

ENVIRON = {'LANG': 'C', 'LC_ALL': 'C'}
_ECN_ABSENT = 'the ECN sysfs files are absent (MLNX_OFED/DOCA has them; the inbox driver does not)'
_CM_ABSENT = 'the RDMA-CM configfs files are absent (is configfs mounted and rdma_cm loaded?)'
# traffic_class is left out: only MLNX_OFED has it, its absence is normal on the inbox stack.
WHY_ABSENT = {'ecn_np': _ECN_ABSENT, 'ecn_rp': _ECN_ABSENT, 'cnp_dscp': _ECN_ABSENT, 'cnp_prio': _ECN_ABSENT,
              'roce_tos': _CM_ABSENT, 'roce_mode': _CM_ABSENT}
# The parameters of one port, and their defaults (module rdma_qos's argument_spec has the same).
DEFAULTS = {
    'rdma_device': None, 'port': 1, 'trust': 'dscp', 'pfc_priorities': [3], 'dscp_map': {'26': 3, '48': 6},
    'ecn_priorities': [3], 'cnp_dscp': 48, 'cnp_prio': 6, 'roce_tos': 106, 'roce_mode': 'RoCE v2',
    'traffic_class': 106, 'tool': 'auto', 'mlnx_qos_path': None, 'dcb_path': None, 'sysfs_root': '/sys',
    'configfs_root': '/sys/kernel/config',
}


SETTINGS_VERSION = 1


class Failure(Exception):
    """A tool or a file that failed unexpectedly: fail_json's arguments (msg, and cmd/rc/stdout/stderr or path)."""

    def __init__(self, **kwargs):
        super(Failure, self).__init__(kwargs.get('msg'))
        self.kwargs = kwargs


def read(path):
    """The text of a sysfs/configfs attribute, or None when it is absent."""
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def write(path, text):
    try:
        with open(path, 'w') as handle:
            handle.write(text)
    except (IOError, OSError) as exc:
        raise Failure(msg='writing %r to %s failed: %s' % (text.strip(), path, exc), path=path)


def _executable(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find_tool(which, params, problems):
    """('mlnx_qos' or 'dcb', its path), or (None, None) with a problem added. ``which(name)``: the program's path
    or None (AnsibleModule.get_bin_path, shutil.which)."""
    tool = params['tool']
    if tool in ('auto', 'mlnx_qos'):
        path = params['mlnx_qos_path'] or which('mlnx_qos')
        if params['mlnx_qos_path'] and not _executable(path):
            problems.append('mlnx_qos_path: %s is not an executable file' % path)
            return None, None
        if path:
            return 'mlnx_qos', path
        if tool == 'mlnx_qos':
            problems.append('tool: mlnx_qos is not installed (mlnx-tools, with DOCA or MLNX_OFED; or give '
                            'mlnx_qos_path)')
            return None, None
    path = params['dcb_path'] or which('dcb')
    if params['dcb_path'] and not _executable(path):
        problems.append('dcb_path: %s is not an executable file' % path)
        return None, None
    if not path:
        problems.append('tool: neither mlnx_qos (mlnx-tools) nor dcb (iproute2) is installed')
        return None, None
    return 'dcb', path


def find_rdma_device(params, problems):
    if params['rdma_device']:
        return params['rdma_device']
    folder = os.path.join(params['sysfs_root'], 'class', 'net', params['netdev'], 'device', 'infiniband')
    names = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
    if not names:
        problems.append('rdma_device: %s has no RDMA device (nothing under %s); give rdma_device'
                        % (params['netdev'], folder))
        return None
    return names[0]


def read_dcb(run, tool, path, netdev):
    """(trust/pfc/dscp2prio, None) or (None, why the netdev has no DCB); raises Failure for anything else."""
    if tool == 'mlnx_qos':
        argv = [path, '-i', netdev]
        rc, out, err = run(argv)
        try:
            parsed = parse_mlnx_qos(out)
        except ParseError as exc:
            if rc != 0:
                # not the report: a traceback or an error of the tool; its last line says what
                return None, 'mlnx_qos: %s' % ((err or out).strip().splitlines() or ['rc=%d' % rc])[-1]
            raise Failure(msg='mlnx_qos output not understood: %s' % exc, cmd=argv, rc=rc, stdout=out, stderr=err)
        why = rdma_qos.mlnx_qos_no_dcb(parsed)
        if why:
            return None, 'mlnx_qos: %s' % why
        if rc != 0:
            raise Failure(msg='mlnx_qos failed (rc=%d)' % rc, cmd=argv, rc=rc, stdout=out, stderr=err)
        return rdma_qos.dcb_from_mlnx_qos(parsed), None
    state = {}
    for what, parser in (('app', rdma_qos.parse_dcb_app), ('pfc', rdma_qos.parse_dcb_pfc)):
        argv = [path, '-j', what, 'show', 'dev', netdev]
        rc, out, err = run(argv)
        if rc != 0:
            # dcb.c: perror("Attribute read") -> "Attribute read: Operation not supported" (no dcbnl_ops) or
            # "... No such device"
            return None, 'dcb: %s' % ((err or out).strip().splitlines() or ['rc=%d' % rc])[0]
        try:
            state[what] = parser(out)
        except ParseError as exc:
            raise Failure(msg='dcb output not understood: %s' % exc, cmd=argv, rc=rc, stdout=out, stderr=err)
    return {'trust': 'dscp' if state['app'] else 'pcp', 'pfc': state['pfc'], 'dscp2prio': state['app']}, None


def read_number(path, what):
    text = read(path)
    if text is None:
        return None
    try:
        return rdma_qos.parse_number(text, what)
    except ParseError as exc:
        raise Failure(msg='%s: %s' % (path, exc), path=path)


def read_files(file_paths, check_mode):
    """ECN, CNP, RDMA-CM and traffic-class state; None where absent. RDMA-CM's configfs directory of the device is
    made when absent (configfs shows the attributes only then); in check mode it is removed again after reading
    (the values live in the kernel's cma_device, not in the directory)."""
    state = {}
    for role, name in (('roce_np', 'ecn_np'), ('roce_rp', 'ecn_rp')):
        folder = file_paths['ecn_enable'][role]
        if not os.path.isdir(folder):
            state[name] = None
            continue
        values = [read_number(os.path.join(folder, str(prio)), '%s enable %d' % (role, prio))
                  for prio in rdma_qos.PRIORITIES]
        state[name] = None if None in values else [prio for prio, value in enumerate(values) if value]
    state['cnp_dscp'] = read_number(file_paths['cnp_dscp'], 'cnp_dscp')
    state['cnp_prio'] = read_number(file_paths['cnp_prio'], 'cnp_802p_prio')
    state['roce_tos'] = state['roce_mode'] = state['traffic_class'] = None
    if 'rdma_cm_device' not in file_paths:
        return state
    made = False
    if os.path.isdir(file_paths['rdma_cm']) and not os.path.isdir(file_paths['rdma_cm_device']):
        try:
            os.mkdir(file_paths['rdma_cm_device'])
            made = True
        except OSError as exc:
            raise Failure(msg='mkdir %s failed: %s' % (file_paths['rdma_cm_device'], exc),
                          path=file_paths['rdma_cm_device'])
    try:
        state['roce_tos'] = read_number(file_paths['roce_tos'], 'default_roce_tos')
        mode = read(file_paths['roce_mode'])
        if mode is not None:
            try:
                state['roce_mode'] = rdma_qos.parse_roce_mode(mode)
            except ParseError as exc:
                raise Failure(msg='%s: %s' % (file_paths['roce_mode'], exc), path=file_paths['roce_mode'])
    finally:
        if made and check_mode:
            try:
                os.rmdir(file_paths['rdma_cm_device'])
            except OSError:
                pass
    text = read(file_paths['traffic_class'])
    if text is not None:
        try:
            state['traffic_class'] = rdma_qos.parse_traffic_class(text)
        except ParseError as exc:
            raise Failure(msg='%s: %s' % (file_paths['traffic_class'], exc), path=file_paths['traffic_class'])
    return state


def read_state(run, tool, path, netdev, file_paths, problems, check_mode):
    dcb, why = read_dcb(run, tool, path, netdev)
    if why:
        problems.append('netdev: %s has no DCB (%s); give the RoCE port of an adapter with DCB (mlx5)' % (netdev, why))
        return None
    state = dict(dcb)
    state.update(read_files(file_paths, check_mode))
    return state


def apply(run, tool, path, netdev, settings, state, file_paths):
    """Change what differs; returns the commands and writes done."""
    done = []

    def tool_run(argv):
        rc, out, err = run(argv)
        if rc != 0:
            raise Failure(msg='%s failed (rc=%d)' % (os.path.basename(argv[0]), rc), cmd=argv, rc=rc, stdout=out,
                          stderr=err, cmds=done)
        done.append(' '.join(argv))
        return out

    if tool == 'mlnx_qos':
        argv = rdma_qos.mlnx_qos_trust_pfc_argv(path, netdev, settings, state)
        if argv:
            try:
                state = dict(state, **rdma_qos.dcb_from_mlnx_qos(parse_mlnx_qos(tool_run(argv))))
            except ParseError as exc:
                raise Failure(msg='mlnx_qos output not understood: %s' % exc, cmd=argv, cmds=done)
        argv = rdma_qos.mlnx_qos_dscp_argv(path, netdev, settings, state)
        if argv:
            tool_run(argv)
    else:
        for argv in rdma_qos.dcb_argvs(path, netdev, settings, state):
            tool_run(argv)
    for target, text in rdma_qos.file_writes(file_paths, settings, state):
        write(target, text)
        done.append('%s = %s' % (target, text.strip()))
    return done


def ensure(params, run, which, check_mode=False):
    """One netdev to the wanted settings: read, compare, change what differs (not in check mode), read back.

    ``params``: module rdma_qos's parameters (``netdev`` and the keys of DEFAULTS; a missing one takes its default).
    Returns a dict: ``problems`` (one line each; when there is any, nothing was changed and nothing else is set
    beyond ``tool``), ``warnings``, ``settings``, ``state`` (before), ``after``, ``changes`` (``setting: before ->
    after``), ``unavailable``, ``cmds``, ``tool``, ``rdma_device``. Raises Failure for a tool or a file that failed,
    or a setting that still differs after the changes.
    """
    params = dict(DEFAULTS, **params)
    problems = []
    tool, path = find_tool(which, params, problems)
    settings, bad, warnings = rdma_qos.wanted_settings(params, tool)
    problems.extend(bad)
    netdev = params['netdev']
    netdev_dir = os.path.join(params['sysfs_root'], 'class', 'net', netdev)
    result = {'problems': problems, 'warnings': [], 'tool': tool, 'rdma_device': None}
    state = None
    file_paths = None
    if not os.path.isdir(netdev_dir):
        problems.append('netdev: %s does not exist (no %s)' % (netdev, netdev_dir))
    else:
        result['rdma_device'] = find_rdma_device(params, problems)
        file_paths = rdma_qos.paths(params['sysfs_root'], params['configfs_root'], netdev, result['rdma_device'],
                                    params['port'])
        if tool:
            state = read_state(run, tool, path, netdev, file_paths, problems, check_mode)
    if problems:
        return result
    result['warnings'] = list(warnings)
    missing = rdma_qos.unavailable(settings, state)
    result['warnings'].extend('%s on %s: not changed, %s' % (name, netdev, WHY_ABSENT[name])
                              for name in missing if name in WHY_ABSENT)
    cmds = []
    if check_mode or not rdma_qos.differing(settings, state):
        after = rdma_qos.predict(state, settings)
    else:
        cmds = apply(run, tool, path, netdev, settings, state, file_paths)
        after = read_state(run, tool, path, netdev, file_paths, problems, check_mode)
        if after is None:
            raise Failure(msg='rdma_qos %s: the DCB state could not be read back: %s' % (netdev, '; '.join(problems)),
                          cmds=cmds)
        left = rdma_qos.differing(settings, after)
        if left:
            raise Failure(msg='rdma_qos %s: still differs after the changes: %s' % (netdev, ', '.join(left)),
                          cmds=cmds, current=rdma_qos.json_state(after))
    result.update(settings=settings, state=state, after=after, changes=rdma_qos.changes(state, after, settings),
                  unavailable=missing, cmds=cmds)
    return result


def ensure_ports(params, ports, run, which, check_mode=False):
    """Several netdevs to the same wanted settings in one call (module rdma_qos's ``ports``).

    Every port is read and compared first; when any port has a problem (or could not be read), nothing is changed
    on any port. Then only the ports that differ are changed, one after another. Returns ``(entries, problems)``:
    one entry per port in the order given (``ensure``'s result with ``netdev``, ``port`` and, for a port that could
    not be read, ``failed`` and ``msg``), and the problems, each line prefixed with its netdev. Raises Failure (with
    ``ports``: the entries so far) when a change failed.
    """
    entries, problems = [], []
    for item in ports:
        port_params = dict(params, netdev=item['netdev'], rdma_device=item.get('rdma_device'),
                           port=item.get('port') or DEFAULTS['port'])
        try:
            entry = ensure(port_params, run, which, check_mode=True)
        except Failure as exc:
            entry = {'failed': True, 'msg': exc.kwargs.get('msg'), 'problems': [exc.kwargs.get('msg')]}
        if entry['problems'] and not entry.get('failed'):
            entry.update(failed=True, msg='; '.join(entry['problems']))
        entry.update(netdev=item['netdev'], port=port_params['port'], params=port_params)
        problems.extend('%s: %s' % (item['netdev'], line) for line in entry['problems'])
        entries.append(entry)
    if problems or check_mode:
        return entries, problems
    for index, entry in enumerate(entries):
        if not entry['changes']:
            continue
        try:
            applied = ensure(entry['params'], run, which, check_mode=False)
        except Failure as exc:
            raise Failure(ports=entries, **exc.kwargs)
        applied.update(netdev=entry['netdev'], port=entry['port'], params=entry['params'])
        entries[index] = applied
    return entries, problems


def load_settings(data):
    """The settings file the roce role renders (parsed JSON: ``{version, ports: [{netdev, port}], qos: {...}}``) ->
    [params of each port]; ValueError naming what is wrong. ``qos`` holds module rdma_qos's parameters but
    ``netdev`` and ``port``; a key the module does not know is refused."""
    if not isinstance(data, dict) or data.get('version') != SETTINGS_VERSION:
        raise ValueError('not a version %d RoCE settings file' % SETTINGS_VERSION)
    ports, qos = data.get('ports'), data.get('qos')
    if not isinstance(ports, list) or not all(isinstance(item, dict) and item.get('netdev') for item in ports):
        raise ValueError('ports must be a list of {netdev, port}')
    if not isinstance(qos, dict):
        raise ValueError('qos must be a dict of rdma_qos parameters')
    unknown = sorted(set(qos) - set(DEFAULTS))
    if unknown:
        raise ValueError('qos has unknown keys: %s' % ', '.join(unknown))
    return [dict(qos, netdev=item['netdev'], port=item.get('port', 1)) for item in ports]
