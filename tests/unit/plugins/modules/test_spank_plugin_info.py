# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""spank_plugin_info: a plugin's Slurm release against the node's srun --version."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import struct

from ansible_collections.aicluster.infra.plugins.modules import spank_plugin_info

from _spank_elf import plugin_bytes


def test_a_plugin_of_the_nodes_slurm(run_module, tmp_path):
    path = tmp_path / 'spank_pyxis.so'
    path.write_bytes(plugin_bytes(0x160508))
    result, calls = run_module(spank_plugin_info, {'path': str(path)}, {'srun': (0, 'slurm 22.05.8\n', '')})
    assert calls[0][1:] == ['--version'] and result['changed'] is False
    assert result['compatible'] is True and result['message'] == '' and result['slurm_version'] == '22.05.8'
    assert result['plugin']['series'] == '22.05'


def test_a_plugin_of_another_slurm(run_module, tmp_path):
    path = tmp_path / 'spank_pyxis.so'
    path.write_bytes(plugin_bytes(0x170b04))
    result, _calls = run_module(spank_plugin_info, {'path': str(path)}, {'srun': (0, 'slurm 22.05.8\n', '')})
    assert result['compatible'] is False and 'built for Slurm 23.11' in result['message']


def test_slurmd_when_there_is_no_srun(run_module, tmp_path):
    path = tmp_path / 'spank_pyxis.so'
    path.write_bytes(plugin_bytes(0x160508))
    result, calls = run_module(spank_plugin_info, {'path': str(path)}, {'slurmd': (0, 'slurm 22.05.8\n', '')})
    assert calls[0][1:] == ['-V'] and result['compatible'] is True


def test_no_slurm_and_no_file(run_module, tmp_path):
    result, _calls = run_module(spank_plugin_info, {'path': str(tmp_path / 'none.so')}, {})
    assert result['exists'] is False and result['compatible'] is False and 'does not exist' in result['message']
    path = tmp_path / 'spank_pyxis.so'
    path.write_bytes(plugin_bytes(0x160508))
    result, _calls = run_module(spank_plugin_info, {'path': str(path)}, {})
    assert result['compatible'] is False and 'no srun or slurmd' in result['message']


def test_not_a_plugin_fails(run_module, tmp_path):
    path = tmp_path / 'spank_pyxis.so'
    path.write_bytes(b'#!/bin/sh\n' + struct.pack('<I', 1))
    result, _calls = run_module(spank_plugin_info, {'path': str(path)}, {'srun': (0, 'slurm 22.05.8\n', '')})
    assert result['failed'] and 'is not a Slurm plugin' in result['msg']
