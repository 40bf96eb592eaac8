# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Importing this makes ``ansible_collections.aicluster.infra`` importable from the working tree (.collections link)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(REPO, '.collections')
LINK = os.path.join(COLLECTIONS, 'ansible_collections', 'aicluster', 'infra')
if not os.path.lexists(LINK):
    os.makedirs(os.path.dirname(LINK))
    os.symlink(os.path.relpath(REPO, os.path.dirname(LINK)), LINK)
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)
