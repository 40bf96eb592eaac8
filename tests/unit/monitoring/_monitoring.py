# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared by the monitoring role's tests: its templates rendered with its defaults, the metric names a PromQL
expression reads, and the metrics dcgm-exporter serves (roles/dcgm's dcgm_exporter_counters)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import yaml

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

try:
    from ansible.template import trust_as_template  # ansible-core 2.19: a template must be trusted to be rendered
except ImportError:  # 2.16 to 2.18 render any string
    def trust_as_template(text):
        return text

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ROLE = os.path.join(REPO, 'roles', 'monitoring')
TEMPLATES = os.path.join(ROLE, 'templates')
DASHBOARD = os.path.join(ROLE, 'files', 'grafana', 'aicluster-gpu-fleet.json')
DCGM_DEFAULTS = os.path.join(REPO, 'roles', 'dcgm', 'defaults', 'main.yml')
PROMTOOL = '/usr/bin/promtool'
PROMTOOL_ABSENT = '%s absent (Debian: prometheus)' % PROMTOOL

# Used only while roles/dcgm does not exist yet: the start list of the stack II contract, with the Blackwell NVLink
# counts named as in DCGM's dcgm_fields.h. Once roles/dcgm/defaults/main.yml exists, its dcgm_exporter_counters rule.
CONTRACT_COUNTERS = [
    'DCGM_FI_DEV_GPU_UTIL', 'DCGM_FI_DEV_MEM_COPY_UTIL', 'DCGM_FI_DEV_FB_USED', 'DCGM_FI_DEV_FB_FREE',
    'DCGM_FI_DEV_GPU_TEMP', 'DCGM_FI_DEV_MEMORY_TEMP', 'DCGM_FI_DEV_POWER_USAGE', 'DCGM_FI_DEV_SM_CLOCK',
    'DCGM_FI_DEV_MEM_CLOCK', 'DCGM_FI_DEV_CLOCKS_EVENT_REASONS', 'DCGM_FI_DEV_XID_ERRORS',
    'DCGM_FI_DEV_ROW_REMAP_PENDING', 'DCGM_FI_DEV_ROW_REMAP_FAILURE', 'DCGM_FI_DEV_RETIRED_PENDING',
    'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION', 'DCGM_FI_DEV_POWER_VIOLATION', 'DCGM_FI_DEV_THERMAL_VIOLATION',
    'DCGM_FI_DEV_ECC_SBE_VOL_TOTAL', 'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL', 'DCGM_FI_DEV_ECC_DBE_AGG_TOTAL',
    'DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS', 'DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS',
    'DCGM_FI_DEV_PCIE_REPLAY_COUNTER', 'DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL',
    'DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL', 'DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL',
    'DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL', 'DCGM_FI_DEV_NVLINK_COUNT_RX_ERRORS',
    'DCGM_FI_DEV_NVLINK_COUNT_LOCAL_LINK_INTEGRITY_ERRORS', 'DCGM_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_FAILED_EVENTS',
    'DCGM_FI_DEV_NVLINK_COUNT_TX_DISCARDS',
]
# Prometheus's own series the rules and the dashboard read.
BUILTINS = {'up', 'ALERTS'}


def defaults():
    with open(os.path.join(ROLE, 'defaults', 'main.yml'), encoding='utf-8') as handle:
        return yaml.safe_load(handle)


def render(name, groups=None, **overrides):
    """A template of the role (path under templates/) rendered as the template module would, with the defaults."""
    variables = defaults()
    variables.update({'ansible_managed': 'Ansible managed', 'ansible_search_path': [TEMPLATES],
                      'groups': groups if groups is not None else {'all': ['ctl01', 'gpu01', 'gpu02'],
                                                                   'gpu_nodes': ['gpu02', 'gpu01']}})
    variables.update(overrides)
    loader = DataLoader()
    loader.set_basedir(TEMPLATES)
    with open(os.path.join(TEMPLATES, name), encoding='utf-8') as handle:
        text = handle.read()
    return Templar(loader=loader, variables=variables).template(trust_as_template(text))


def exporter_counters():
    """{field: type} of the metrics dcgm-exporter serves: roles/dcgm's dcgm_exporter_counters, or the contract's
    start list while that role is not there (types unknown: None)."""
    if not os.path.exists(DCGM_DEFAULTS):
        return dict((name, None) for name in CONTRACT_COUNTERS)
    with open(DCGM_DEFAULTS, encoding='utf-8') as handle:
        dcgm = yaml.safe_load(handle)
    # the NVSwitch entity fields too: served when dcgm_exporter_nvswitch_enabled (rules on them stay quiet without)
    counters = dcgm['dcgm_exporter_counters'] + dcgm.get('dcgm_exporter_nvswitch_counters', [])
    return dict((entry['field'], entry.get('type')) for entry in counters)


# ------------------------------------------------------------------ the metric names a PromQL expression reads

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_MATCHERS = re.compile(r'\{[^{}]*\}')
_RANGE = re.compile(r'\[[^\[\]]*\]')
_LABEL_LIST = re.compile(r'\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)')
_IDENT = re.compile(r'(?<![\w.$:])[A-Za-z_:][\w:]*')
_KEYWORDS = {'and', 'or', 'unless', 'bool', 'offset', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right',
             'inf', 'nan', 'Inf', 'NaN'}


def metric_names(expr):
    """The metric names an expression selects: identifiers outside strings, label matchers, ranges and label lists
    that are neither functions (followed by a parenthesis) nor keywords."""
    text = _STRING.sub('""', expr)
    text = _MATCHERS.sub('{}', text)
    text = _RANGE.sub('[]', text)
    text = _LABEL_LIST.sub(' ', text)
    names = set()
    for match in _IDENT.finditer(text):
        rest = text[match.end():].lstrip()
        if match.group(0) in _KEYWORDS or rest.startswith('('):
            continue
        names.add(match.group(0))
    return names
