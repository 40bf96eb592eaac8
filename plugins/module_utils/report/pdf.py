# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""report.pdf: report.html printed by headless Chromium, when the control node has it.

The page's print stylesheet (A4 landscape, sign-off on its own page, no row or
chart cut across pages) does the layout; Chromium only prints. A PDF carries
its creation time, so it is printed only when report.html was (re)written or
the PDF is missing: a re-run on the same results changes nothing.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

# Looked up on PATH in this order: Debian's chromium, other distributions' names, Google's build.
CHROMIUM_NAMES = ('chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable')
# Seconds Chromium may take (coreutils timeout): a 1,024-node report prints in a few seconds.
PRINT_TIMEOUT = 180


def print_argv(chromium, html_path, pdf_path, profile_dir, timeout=PRINT_TIMEOUT):
    """The command that prints ``html_path`` to ``pdf_path``: headless, no sandbox (root on a control node), no
    header or footer (the page has its own), a throwaway profile (nothing written to the user's)."""
    return ['timeout', str(int(timeout)), chromium, '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
            '--no-pdf-header-footer', '--user-data-dir=%s' % profile_dir, '--print-to-pdf=%s' % pdf_path,
            'file://%s' % os.path.abspath(html_path)]


def is_pdf(data):
    """Whether ``data`` (bytes) looks like a whole PDF: the header and an end-of-file marker."""
    return data[:5] == b'%PDF-' and b'%%EOF' in data[-1024:]


def wanted(html_written, pdf_exists):
    """Whether to print: report.html changed in this run, or the PDF is not there."""
    return bool(html_written) or not pdf_exists
