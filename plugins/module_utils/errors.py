# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one exception every parser in this collection raises."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ParseError(ValueError):
    """Raised when a text is not the output of the tool a parser reads.

    Lines the tool itself prints as errors are not parse errors: parsers
    return those in an ``errors`` list next to what they did parse.
    """

    def __init__(self, message, line_number=None, line=None):
        self.line_number = line_number
        self.line = line
        if line_number is not None:
            message = '%s (line %d: %r)' % (message, line_number, line)
        super(ParseError, self).__init__(message)
