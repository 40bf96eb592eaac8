#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: cdi_info
short_description: Check that the CDI specs name every GPU and only device nodes that exist
version_added: 0.1.0
description:
  - Reads what a container engine would resolve (C(nvidia-ctk cdi list)), the CDI spec files themselves, the GPUs
    (C(nvidia-smi -q), for index, UUID, minor number and driver version) and the live C(/dev/nvidiaN) nodes, and
    reports each disagreement as one problem.
  - "Problems: a GPU named neither by index nor by UUID; a spec device whose node is another GPU's (an index spec from
    before a GPU dropped out); a device node a spec names that does not exist; a live C(/dev/nvidiaN) no device gives;
    C(all) not giving exactly the live GPUs; a spec generated for another driver version; one device name defined by
    two spec files (across C(/etc/cdi) and C(/var/run/cdi) the later silently wins and the static file's other names
    stay; within one directory the CDI library drops the name); a spec file that does not parse."
  - Each problem says whether regenerating O(managed_spec) fixes it (RV(refresh_needed)); the
    C(aicluster.infra.container_toolkit) role then restarts C(nvidia-cdi-refresh.service) and checks again.
  - Read-only. Run it after every driver, MIG or GPU change (the rolling upgrade does, through the role).
author: aicluster.infra contributors (@aicluster)
extends_documentation_fragment:
  - aicluster.infra.attributes
  - aicluster.infra.attributes.info_module
  - aicluster.infra.attributes.platform
options:
  kind:
    description: The CDI kind (C(vendor/class)) of the GPUs.
    type: str
    default: nvidia.com/gpu
  spec_dirs:
    description: The CDI spec directories, lowest priority first, as the CDI library reads them.
    type: list
    elements: path
    default: [/etc/cdi, /var/run/cdi]
  managed_spec:
    description:
      - The spec the node's toolkit writes (C(nvidia-cdi-refresh) writes C(/var/run/cdi/nvidia.yaml); a legacy static
        spec is C(/etc/cdi/nvidia.yaml)). Problems in it, or GPUs missing from every spec, are fixed by regenerating it.
    type: path
    default: /var/run/cdi/nvidia.yaml
  dev_dir:
    description: Where C(/dev) is read (the device nodes are compared as the specs name them, C(/dev/...)).
    type: path
    default: /dev
requirements:
  - C(nvidia-ctk) (nvidia-container-toolkit-base) and C(nvidia-smi) on the node.
notes:
  - Commands run with C(LANG=C) and C(LC_ALL=C). The spec files are parsed with PyYAML where the node has it,
    otherwise with a reader of the block-style YAML that C(nvidia-ctk cdi generate) writes; JSON specs either way.
  - MIG devices (C(nvidia.com/gpu=0:1)) are compared by their nodes only (C(/dev/nvidia-caps/*) must exist).
seealso:
  - module: aicluster.infra.gpu_info
'''

EXAMPLES = r'''
- name: Check the CDI specs against the live GPUs
  aicluster.infra.cdi_info:
  register: cdi

- name: Fail with one line per problem
  ansible.builtin.fail:
    msg: "{{ cdi.messages | join('\n') }}"
  when: cdi.messages | length > 0
'''

RETURN = r'''
devices:
  description: The device names C(nvidia-ctk cdi list) resolves, as it prints them.
  returned: always
  type: list
  elements: str
  sample: ["nvidia.com/gpu=0", "nvidia.com/gpu=GPU-4857534d-0001-4000-8000-000000000000", "nvidia.com/gpu=all"]
specs:
  description: Each spec file read, with its kind, device names, device nodes and the driver version it mounts.
  returned: always
  type: list
  elements: dict
  sample: [{"path": "/var/run/cdi/nvidia.yaml", "kind": "nvidia.com/gpu", "devices": ["0", "all"],
            "nodes": ["/dev/nvidia0", "/dev/nvidiactl"], "driver_version": "580.95.05"}]
gpus:
  description: The GPUs nvidia-smi reports (index, uuid, minor, driver_version); empty when it failed.
  returned: always
  type: list
  elements: dict
live_nodes:
  description: The C(/dev/nvidiaN) nodes present.
  returned: always
  type: list
  elements: str
  sample: ["/dev/nvidia0", "/dev/nvidia1"]
problems:
  description: Each problem with its check id (C(gpu-unnamed), C(gpu-stale), C(node-missing), C(node-unnamed),
    C(all-stale), C(driver-stale), C(duplicate), C(no-spec), C(spec-unreadable), C(gpus-unreadable)), its message and
    whether regenerating O(managed_spec) fixes it.
  returned: always
  type: list
  elements: dict
  sample: [{"check": "node-missing", "message": "/etc/cdi/nvidia.yaml names /dev/nvidia7, which does not exist (device 7)",
            "refresh": false}]
messages:
  description: The problems' messages, one line each; empty on a node whose specs match its GPUs.
  returned: always
  type: list
  elements: str
refresh_needed:
  description: Whether regenerating O(managed_spec) fixes at least one problem.
  returned: always
  type: bool
'''

import glob  # noqa: E402  pylint: disable=wrong-import-position
import os  # noqa: E402  pylint: disable=wrong-import-position

from ansible.module_utils.basic import AnsibleModule  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.aicluster.infra.plugins.module_utils import cdi  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.aicluster.infra.plugins.module_utils.nvidia_smi import parse_nvidia_smi_q  # noqa: E402  pylint: disable=wrong-import-position

ENVIRON = {'LANG': 'C', 'LC_ALL': 'C'}


def _spec_files(spec_dirs):
    """The spec files in the CDI library's order: directories by priority, then file names (.json and .yaml)."""
    paths = []
    for directory in spec_dirs:
        found = glob.glob(os.path.join(directory, '*.yaml')) + glob.glob(os.path.join(directory, '*.json'))
        paths += sorted(path for path in found if os.path.isfile(path))
    return paths


def _read(path):
    with open(path, encoding='utf-8', errors='replace') as handle:
        return handle.read()


def _on_host(node, dev_dir):
    if node.startswith('/dev/') and dev_dir.rstrip('/') != '/dev':
        return os.path.join(dev_dir, node[len('/dev/'):])
    return node


def main():
    module = AnsibleModule(
        argument_spec={
            'kind': {'type': 'str', 'default': 'nvidia.com/gpu'},
            'spec_dirs': {'type': 'list', 'elements': 'path', 'default': list(cdi.DEFAULT_SPEC_DIRS)},
            'managed_spec': {'type': 'path', 'default': '/var/run/cdi/nvidia.yaml'},
            'dev_dir': {'type': 'path', 'default': '/dev'},
        },
        supports_check_mode=True,
    )
    params = module.params
    ctk = module.get_bin_path('nvidia-ctk', required=True)
    argv = [ctk, 'cdi', 'list']
    rc, out, err = module.run_command(argv, environ_update=ENVIRON)
    if rc != 0:
        module.fail_json(msg='nvidia-ctk cdi list failed', cmd=argv, rc=rc, stdout=out, stderr=err)
    try:
        listed = cdi.parse_cdi_list(out, err)
    except ParseError as exc:
        module.fail_json(msg='nvidia-ctk cdi list: %s' % exc, cmd=argv, rc=rc, stdout=out, stderr=err)

    specs, spec_errors = [], []
    for path in _spec_files(params['spec_dirs']):
        try:
            specs.append(cdi.parse_spec(_read(path), path))
        except (ParseError, OSError) as exc:
            spec_errors.append({'path': path, 'message': str(exc)})

    gpus, gpu_error = None, None
    smi = module.get_bin_path('nvidia-smi')
    if smi is None:
        gpu_error = 'nvidia-smi is not installed'
    else:
        query = [smi, '-q']
        rc, out, err = module.run_command(query, environ_update=ENVIRON)
        if rc != 0:
            gpu_error = '%s (rc %d)' % (' '.join((out + err).split()) or 'no output', rc)
        else:
            try:
                gpus = cdi.gpus_from_q(parse_nvidia_smi_q(out))
            except ParseError as exc:
                module.fail_json(msg='nvidia-smi: %s' % exc, cmd=query, rc=rc, stdout=out, stderr=err)

    try:
        names = os.listdir(params['dev_dir'])
    except OSError:
        names = []
    # Nodes are compared as the specs name them (/dev/...); O(dev_dir) is where /dev is read.
    live_nodes = cdi.live_gpu_nodes(names)
    named = set(node for spec in specs for node in spec['nodes'] + [n for d in spec['devices'] for n in d['nodes']])
    existing = dict((node, os.path.exists(_on_host(node, params['dev_dir']))) for node in sorted(named))

    decision = cdi.cdi_problems(
        {'listed': listed, 'specs': specs, 'spec_errors': spec_errors, 'gpus': gpus, 'gpu_error': gpu_error,
         'live_nodes': live_nodes, 'existing': existing, 'spec_dirs': params['spec_dirs']},
        kind=params['kind'], managed_spec=params['managed_spec'])
    module.exit_json(
        changed=False, devices=listed['devices'], live_nodes=live_nodes, gpus=gpus or [],
        specs=[{'path': s['path'], 'kind': s['kind'], 'devices': [d['name'] for d in s['devices']],
                'nodes': sorted(set(s['nodes'] + [n for d in s['devices'] for n in d['nodes']])),
                'driver_version': s['driver_version']} for s in specs],
        problems=decision['problems'], messages=[p['message'] for p in decision['problems']],
        refresh_needed=decision['refresh_needed'])


if __name__ == '__main__':
    main()
