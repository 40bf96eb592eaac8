# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kernel_log.parse_xid: NVIDIA Xid events from dmesg text, here and from the lab's stand-in dmesg (lab/hwsim)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys

import pytest

from _paths import REPO

from ansible_collections.aicluster.infra.plugins.module_utils.kernel_log import parse_xid

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))
try:
    from hwsim.testing import make_lab  # pylint: disable=wrong-import-position
except ImportError:  # pragma: no cover
    make_lab = None

DMESG = ('[    1.0] nothing\n'
         '[  812.1] NVRM: Xid (PCI:0000:18:00): 79, pid=\'<unknown>\', name=<unknown>, GPU has fallen off the bus.\n'
         '[  900.0] NVRM: Xid (PCI:0000:19:00): 13, Graphics Exception\r\n'
         '[  901.0] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 44\n')


def test_xid_events_with_code_pci_and_text():
    events = parse_xid(DMESG)
    assert [(e['code'], e['pci']) for e in events] == [(79, '0000:18:00'), (13, '0000:19:00')]
    assert events[0]['text'].endswith('GPU has fallen off the bus.') and events[0]['line'].startswith('[  812.1] NVRM')
    assert events[1]['text'] == 'Graphics Exception'


@pytest.mark.parametrize('text', ['', None, '[    1.0] Linux version 5.15\n'])
def test_no_xid(text):
    assert parse_xid(text) == []


def test_xid_without_pci_prefix():
    assert parse_xid('NVRM: Xid (0000:3b:00): 48, An uncorrectable double bit error')[0]['pci'] == '0000:3b:00'


@pytest.mark.skipif(make_lab is None, reason='lab/hwsim not importable')
def test_stand_in_dmesg_after_an_injected_xid(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib', compute=1)
    assert parse_xid(lab.ok('gpu01', ['dmesg'])) == []
    assert lab.run('gpu01', ['hwsim', 'fault', 'xid', '0', '79'])[0] == 0
    assert [e['code'] for e in parse_xid(lab.ok('gpu01', ['dmesg']))] == [79]
