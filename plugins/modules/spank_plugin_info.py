#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: spank_plugin_info
short_description: Which Slurm a SPANK plugin was built for, and whether this node's Slurm will load it
version_added: 0.1.0
description:
  - Reads a Slurm plugin's C(plugin_name), C(plugin_type) and C(plugin_version) from its ELF file, as Slurm's plugin
    loader does, and the node's Slurm version from C(srun --version) (C(slurmd -V) where there is no C(srun)).
  - Slurm loads a SPANK plugin only when its C(plugin_version) has Slurm's own major and minor release; otherwise it
    logs C(Incompatible Slurm plugin ... version), and with a C(required) plugstack line C(srun) fails and slurmd
    does not start. The pyxis role stops with RV(message) before it writes the plugstack line in that case.
author: aicluster.infra contributors (@aicluster)
extends_documentation_fragment:
  - aicluster.infra.attributes
  - aicluster.infra.attributes.info_module
  - aicluster.infra.attributes.platform
options:
  path:
    description: The plugin's shared object.
    type: path
    required: true
notes:
  - A missing file gives RV(exists=false) and RV(compatible=false); a file that is not a Slurm plugin fails.
'''

EXAMPLES = r'''
- name: Read the pyxis plugin and the node's Slurm
  aicluster.infra.spank_plugin_info:
    path: /usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so
  register: pyxis_plugin

- name: Refuse a plugin built for another Slurm
  ansible.builtin.fail:
    msg: "{{ pyxis_plugin.message }}"
  when: not pyxis_plugin.compatible
'''

RETURN = r'''
exists:
  description: Whether the file exists.
  returned: always
  type: bool
plugin:
  description: The plugin's identity (empty when the file does not exist).
  returned: always
  type: dict
  sample: {"name": "pyxis", "type": "spank", "version_number": 1443080, "version": "22.05.8", "series": "22.05"}
slurm_version:
  description: The node's Slurm version, C(MAJOR.MINOR.MICRO) (empty when no Slurm command was found).
  returned: always
  type: str
  sample: 22.05.8
compatible:
  description: Whether this node's Slurm loads the plugin.
  returned: always
  type: bool
message:
  description: One line saying why not; empty when RV(compatible).
  returned: always
  type: str
'''

import os  # noqa: E402  pylint: disable=wrong-import-position

from ansible.module_utils.basic import AnsibleModule  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.aicluster.infra.plugins.module_utils.containers import (  # noqa: E402  pylint: disable=wrong-import-position
    ElfError, parse_slurm_version, pyxis_compatibility, spank_plugin_info)


def _slurm_version(module):
    for tool, flag in (('srun', '--version'), ('slurmd', '-V')):
        path = module.get_bin_path(tool, opt_dirs=['/usr/sbin', '/usr/local/sbin'])
        if not path:
            continue
        rc, out, err = module.run_command([path, flag], environ_update={'LANG': 'C', 'LC_ALL': 'C'})
        if rc != 0:
            module.fail_json(msg='%s %s failed' % (tool, flag), cmd=[path, flag], rc=rc, stdout=out, stderr=err)
        try:
            return parse_slurm_version(out + err)
        except ValueError as exc:
            module.fail_json(msg='%s %s: %s' % (tool, flag, exc), cmd=[path, flag], rc=rc, stdout=out, stderr=err)
    return None


def main():
    module = AnsibleModule(argument_spec={'path': {'type': 'path', 'required': True}}, supports_check_mode=True)
    path = module.params['path']
    version = _slurm_version(module)
    result = {'changed': False, 'exists': os.path.isfile(path), 'plugin': {},
              'slurm_version': '%d.%02d.%d' % version if version else ''}
    if not result['exists']:
        module.exit_json(compatible=False, message='%s does not exist' % path, **result)
    with open(path, 'rb') as handle:
        data = handle.read()
    try:
        result['plugin'] = spank_plugin_info(data)
    except ElfError as exc:
        module.fail_json(msg='%s is not a Slurm plugin: %s' % (path, exc), **result)
    if version is None:
        module.exit_json(compatible=False, message='no srun or slurmd on this node: Slurm must be installed before '
                                                   'pyxis', **result)
    message = pyxis_compatibility(result['plugin'], version, path)
    module.exit_json(compatible=message is None, message=message or '', **result)


if __name__ == '__main__':
    main()
