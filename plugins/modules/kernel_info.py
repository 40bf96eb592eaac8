#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: kernel_info
short_description: Whether the running kernel is the newest installed, before kernel modules are built
version_added: 0.1.0
description:
  - Reads the running kernel (C(uname -r)) and the installed kernels (the releases of C(/boot/vmlinuz-*)).
  - A kernel-module package (the NVIDIA driver's DKMS package, DOCA-OFED's C(mlnx-ofed-kernel-dkms)) builds for the
    running kernel and for newer installed ones. When a newer kernel is installed but not running, the build may
    fail for it, or succeed for a kernel the node is not running, and the node comes back from its next reboot
    without a working driver. The roles stop with RV(message) before installing such a package in that case.
author: aicluster.infra contributors (@aicluster)
extends_documentation_fragment:
  - aicluster.infra.attributes
  - aicluster.infra.attributes.info_module
  - aicluster.infra.attributes.platform
options:
  boot_dir:
    description: Where the kernel images are.
    type: path
    default: /boot
notes:
  - A node with no kernel image in O(boot_dir) (a container) counts as running its newest kernel.
'''

EXAMPLES = r'''
- name: Read the running and installed kernels
  aicluster.infra.kernel_info:
  register: kernels

- name: Stop before building a kernel module for a kernel that is not running
  ansible.builtin.fail:
    msg: "{{ kernels.message }}"
  when: not kernels.running_is_newest
'''

RETURN = r'''
running:
  description: The running kernel's release.
  returned: always
  type: str
  sample: 6.1.0-28-amd64
installed:
  description: The releases with a kernel image, oldest first.
  returned: always
  type: list
  elements: str
  sample: [6.1.0-18-amd64, 6.1.0-28-amd64]
newest:
  description: The newest installed release (the running one when none is listed).
  returned: always
  type: str
running_is_newest:
  description: Whether no installed kernel is newer than the running one.
  returned: always
  type: bool
message:
  description: One line saying which kernel is waiting and what to do; empty when RV(running_is_newest).
  returned: always
  type: str
'''

import glob  # noqa: E402  pylint: disable=wrong-import-position
import os  # noqa: E402  pylint: disable=wrong-import-position

from ansible.module_utils.basic import AnsibleModule  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.aicluster.infra.plugins.module_utils.pinned_packages import kernel_state  # noqa: E402  pylint: disable=wrong-import-position


def main():
    module = AnsibleModule(argument_spec={'boot_dir': {'type': 'path', 'default': '/boot'}}, supports_check_mode=True)
    prefix = os.path.join(module.params['boot_dir'], 'vmlinuz-')
    installed = [path[len(prefix):] for path in glob.glob(prefix + '*') if os.path.isfile(path)]
    module.exit_json(changed=False, **kernel_state(os.uname()[2], installed))


if __name__ == '__main__':
    main()
