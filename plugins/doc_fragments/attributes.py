# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """Shared C(attributes) blocks for this collection's modules.

    Modeled on community.general's attributes fragment: combine
    C(aicluster.infra.attributes) (the descriptions) with one of the
    support fragments below, for example::

        extends_documentation_fragment:
          - aicluster.infra.attributes
          - aicluster.infra.attributes.info_module
          - aicluster.infra.attributes.platform
    """

    # Standard fragment: what each attribute means.
    DOCUMENTATION = r'''
options: {}
attributes:
  check_mode:
    description: Can run in check mode and return changed status prediction without modifying target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check mode), when in diff mode.
'''

    # Target platforms; use together with the standard fragment.
    PLATFORM = r'''
options: {}
attributes:
  platform:
    description: Target OS/families that can be operated against.
    support: full
    platforms: posix
'''

    # Modules that only read state; use together with the standard fragment.
    INFO_MODULE = r'''
options: {}
attributes:
  check_mode:
    support: full
    details:
      - This action does not modify state, so it runs the same in check mode and returns the same facts.
  diff_mode:
    support: none
    details:
      - This action does not modify state, so there is never a diff.
'''
