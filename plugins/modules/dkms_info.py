#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: dkms_info
short_description: Which DKMS modules have no build for the kernel the next boot uses
version_added: 0.1.0
description:
  - Runs C(dkms status) and reads the installed kernels (C(/boot/vmlinuz-*)), C(/etc/default/grub) and
    C(/boot/grub/grubenv) to find the kernel the next boot uses; then lists every DKMS module whose newest version
    has no C(installed) build for that kernel (C(module_utils/dkms.py)).
  - The next boot's kernel is grubenv's C(next_entry) or C(saved_entry) when C(GRUB_DEFAULT=saved) and it names an
    installed kernel, else the newest installed kernel (GRUB's first entry), else the running one (no image in
    O(boot_dir), a container).
  - Every DKMS module counts (the NVIDIA driver's, DOCA-OFED's C(mlnx-ofed-kernel) and its companions, a site's own),
    except those named in O(ignore); a module without a build for that kernel is missing after the reboot.
  - Read-only. Where C(dkms) is not installed (precompiled kernel modules) it returns RV(available) false and
    nothing missing.
author: aicluster.infra contributors (@aicluster)
extends_documentation_fragment:
  - aicluster.infra.attributes
  - aicluster.infra.attributes.info_module
  - aicluster.infra.attributes.platform
options:
  boot_dir:
    description: Where the kernel images and C(grub/grubenv) are.
    type: path
    default: /boot
  default_grub:
    description: GRUB's settings file (C(GRUB_DEFAULT)).
    type: path
    default: /etc/default/grub
  ignore:
    description: DKMS module names (as C(dkms status) prints them) not to report.
    type: list
    elements: str
    default: []
notes:
  - "C(dkms status) runs with C(LANG=C) and C(LC_ALL=C); both its formats are read (dkms 3 C(nvidia/580.95.05, KERNEL,
    x86_64: installed); dkms 2 C(nvidia, 580.95.05, KERNEL, x86_64: installed))."
  - C(/etc/default/grub.d/*.cfg) overrides of C(GRUB_DEFAULT) are not read.
seealso:
  - module: aicluster.infra.kernel_info
'''

EXAMPLES = r'''
- name: Read the DKMS builds against the next boot's kernel
  aicluster.infra.dkms_info:
  register: dkms

- name: Stop before a reboot into a kernel without every module
  ansible.builtin.fail:
    msg: "{{ dkms.message }}"
  when: dkms.missing | length > 0
'''

RETURN = r'''
available:
  description: Whether C(dkms) is installed.
  returned: always
  type: bool
running:
  description: The running kernel (C(uname -r)).
  returned: always
  type: str
  sample: 6.1.0-28-amd64
next_boot:
  description: The kernel the next boot uses and why.
  returned: always
  type: dict
  sample: {"kernel": "6.1.0-30-amd64", "source": "the newest /boot/vmlinuz-*"}
builds:
  description: Every line of C(dkms status) (C(kernel) and C(arch) empty for a module only added).
  returned: always
  type: list
  elements: dict
  sample: [{"module": "nvidia", "version": "580.95.05", "kernel": "6.1.0-28-amd64", "arch": "x86_64",
            "status": "installed", "note": ""}]
missing:
  description: The modules with no installed build for the next boot's kernel.
  returned: always
  type: list
  elements: dict
  sample: [{"module": "mlnx-ofed-kernel", "version": "24.10.OFED.24.10.1.1.4.1", "status": "",
            "built_for": ["6.1.0-28-amd64"]}]
errors:
  description: The lines of C(dkms status) that are not status lines (its own C(Error!) messages).
  returned: always
  type: list
  elements: str
message:
  description: One sentence naming the kernel, each missing module and the remedy; empty when nothing is missing.
  returned: always
  type: str
'''

import glob  # noqa: E402  pylint: disable=wrong-import-position
import os  # noqa: E402  pylint: disable=wrong-import-position

from ansible.module_utils.basic import AnsibleModule  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.aicluster.infra.plugins.module_utils.dkms import dkms_report, next_boot_kernel  # noqa: E402  pylint: disable=wrong-import-position

ENVIRON = {'LANG': 'C', 'LC_ALL': 'C'}


def _read(path):
    try:
        with open(path, encoding='utf-8', errors='replace') as handle:
            return handle.read()
    except (IOError, OSError):
        return ''


def main():
    module = AnsibleModule(argument_spec={'boot_dir': {'type': 'path', 'default': '/boot'},
                                          'default_grub': {'type': 'path', 'default': '/etc/default/grub'},
                                          'ignore': {'type': 'list', 'elements': 'str', 'default': []}},
                           supports_check_mode=True)
    params = module.params
    prefix = os.path.join(params['boot_dir'], 'vmlinuz-')
    installed = [path[len(prefix):] for path in glob.glob(prefix + '*') if os.path.isfile(path)]
    running = os.uname()[2]
    default_grub = _read(params['default_grub'])
    grubenv = _read(os.path.join(params['boot_dir'], 'grub', 'grubenv'))
    dkms = module.get_bin_path('dkms')
    if not dkms:
        module.exit_json(changed=False, available=False, running=running, builds=[], missing=[], errors=[], message='',
                         next_boot=next_boot_kernel(running, installed, default_grub, grubenv))
    argv = [dkms, 'status']
    rc, out, err = module.run_command(argv, environ_update=ENVIRON)
    if rc != 0:
        module.fail_json(msg='dkms status failed', cmd=argv, rc=rc, stdout=out, stderr=err)
    report = dkms_report(out, running, installed, default_grub, grubenv, params['ignore'])
    module.exit_json(changed=False, available=True, running=running, **report)


if __name__ == '__main__':
    main()
