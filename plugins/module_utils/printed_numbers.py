# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Numbers as the tools print them, for the parsers: one rule, so every parser reads ``N/A``, junk, ``nan`` and
``inf`` alike (as nothing)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math


def to_float(token):
    """float() of a printed number; None for None, N/A, junk, nan or inf."""
    try:
        value = float(token)
    except (TypeError, ValueError):
        return None
    if math.isnan(value) or math.isinf(value):
        return None
    return value
