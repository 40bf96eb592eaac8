# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The monitoring role's alert rules and Prometheus configuration: rendered with the role's defaults, checked and
unit-tested by the real promtool (Debian's prometheus package; skipped where it is absent), every metric a field the
exporter serves."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os
import re
import subprocess
import sys

import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:  # --import-mode=importlib puts no test folder on sys.path
    sys.path.insert(0, HERE)

# pylint: disable=wrong-import-position
from _monitoring import (BUILTINS, PROMTOOL, PROMTOOL_ABSENT, defaults, exporter_counters,  # noqa: E402
                         metric_names, render)

from ansible_collections.aicluster.infra.plugins.module_utils.kernel_log import FAIL_BUCKETS, XID_CATALOG  # noqa: E402

RULES = 'etc/prometheus/rules/aicluster-gpu.rules.yml.j2'
RULES_TEST = os.path.join(HERE, 'promtool', 'aicluster-gpu.rules.test.yml')
needs_promtool = pytest.mark.skipif(not os.path.exists(PROMTOOL), reason=PROMTOOL_ABSENT)

ALERTS = ['GpuXidFatal', 'GpuEccDoubleBitErrors', 'GpuRetiredPagesPending', 'GpuRowRemapPending', 'GpuRowRemapFailure',
          'GpuNvlinkErrorsRising', 'GpuFabricNotRegistered', 'GpuFabricFailure', 'NvswitchFatalSxid',
          'GpuTemperatureHigh', 'GpuTemperatureCritical', 'GpuMemoryTemperatureHigh',
          'GpuThermalSlowdown', 'GpuPowerBrakeSlowdown', 'GpuHardwareSlowdown', 'GpuMissing', 'GpuCountBelowExpected',
          'DcgmExporterDown', 'DcgmExporterStale', 'NodeExporterDown']


def _rules(**overrides):
    return yaml.safe_load(render(RULES, **overrides))


def _alerts(**overrides):
    return [rule for group in _rules(**overrides)['groups'] for rule in group['rules']]


def _promtool(*args):
    process = subprocess.run([PROMTOOL] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
    return process.returncode, process.stdout.decode('utf-8', 'replace')


# ------------------------------------------------------------------ the rules

def test_every_alert_is_there_with_a_severity_and_an_annotation_naming_the_node():
    alerts = _alerts(monitoring_expected_gpus_per_node=8)
    assert [rule['alert'] for rule in alerts] == ALERTS
    for rule in alerts:
        assert rule['labels']['severity'] in ('critical', 'warning'), rule['alert']
        annotations = rule['annotations']
        assert set(annotations) == {'summary', 'description'}, rule['alert']
        where = '$labels.instance' if rule['alert'].endswith('ExporterDown') else '$labels.Hostname'
        assert where in annotations['summary'] and where in annotations['description'], rule['alert']
        if rule['alert'].startswith('Gpu') and rule['alert'] != 'GpuCountBelowExpected':
            assert '$labels.gpu' in annotations['summary'], rule['alert']


def test_the_defaults_leave_out_the_expected_count_alert_and_template_thresholds_in():
    alerts = dict((rule['alert'], rule) for rule in _alerts())
    assert 'GpuCountBelowExpected' not in alerts
    assert alerts['GpuTemperatureHigh']['expr'] == 'DCGM_FI_DEV_GPU_TEMP >= 85 < 88'
    assert alerts['GpuTemperatureHigh']['for'] == '5m'
    assert alerts['DcgmExporterDown']['expr'] == 'up{job="dcgm-exporter"} == 0'
    changed = dict((rule['alert'], rule) for rule in _alerts(
        monitoring_fatal_xids=[79], monitoring_gpu_temp_warning_celsius=80, monitoring_alert_for_sustained='30s',
        monitoring_nvlink_error_counters=['DCGM_FI_DEV_NVLINK_COUNT_RX_ERRORS'], monitoring_dcgm_exporter_job='dcgm'))
    assert changed['GpuXidFatal']['expr'] == 'DCGM_FI_DEV_XID_ERRORS == 79'
    assert changed['GpuTemperatureHigh']['expr'] == 'DCGM_FI_DEV_GPU_TEMP >= 80 < 88'
    assert changed['GpuThermalSlowdown']['for'] == '30s'
    assert changed['GpuNvlinkErrorsRising']['expr'].count('increase(') == 1
    assert 'up{job="dcgm"}' in changed['GpuMissing']['expr']
    # an empty list drops the rule rather than writing an expression that matches nothing
    assert 'GpuXidFatal' not in [rule['alert'] for rule in _alerts(monitoring_fatal_xids=[])]


def test_the_default_fatal_xids_are_the_catalogs_reset_reboot_and_support_buckets():
    """The alert, the Slurm prolog and the verify stage's gpu.xid judge the same Xids."""
    expected = sorted(code for code, (bucket, _name) in XID_CATALOG.items() if bucket in FAIL_BUCKETS)
    assert sorted(defaults()['monitoring_fatal_xids']) == expected
    assert 13 not in expected and 94 not in expected  # application faults: the promtool test keeps them quiet


def test_the_rules_read_only_metrics_the_exporter_serves():
    served = exporter_counters()
    used = set()
    for rule in _alerts(monitoring_expected_gpus_per_node=8):
        names = metric_names(rule['expr'])
        assert names, rule['alert']
        assert names <= set(served) | BUILTINS, (rule['alert'], sorted(names - set(served) - BUILTINS))
        used |= names
    assert 'up' in used and 'DCGM_FI_DEV_XID_ERRORS' in used
    # the NVLink rule takes increase() of counters: each must be a counter where the exporter says so
    for name in defaults()['monitoring_nvlink_error_counters']:
        assert served[name] in ('counter', None), name


@pytest.mark.parametrize('expr, expected', [
    ('max by (Hostname, gpu) (last_over_time(DCGM_FI_DEV_GPU_TEMP[1d])) unless on (gpu) up{job="x"} == 0',
     {'DCGM_FI_DEV_GPU_TEMP', 'up'}),
    ('label_replace(increase(A_total[5m]), "counter", "B_total", "", "") > 0', {'A_total'}),
    ('rate(X{Hostname="$node"}[$__rate_interval]) / 1e9', {'X'}),
    ('count(ALERTS{alertstate="firing"}) or vector(0)', {'ALERTS'}),
])
def test_metric_names_of_an_expression(expr, expected):
    from _monitoring import metric_names as names_of  # pylint: disable=import-outside-toplevel
    assert names_of(expr) == expected


@needs_promtool
@pytest.mark.parametrize('overrides', [{}, {'monitoring_expected_gpus_per_node': 8, 'monitoring_fatal_xids': [79]}],
                         ids=['defaults', 'expected-count'])
def test_promtool_check_rules(tmp_path, overrides):
    path = tmp_path / 'aicluster-gpu.rules.yml'
    path.write_text(render(RULES, **overrides))
    returncode, output = _promtool('check', 'rules', str(path))
    assert returncode == 0, output
    assert 'SUCCESS: %d rules found' % (19 + (1 if overrides else 0)) in output


# ------------------------------------------------------------------ promtool test rules

_LABEL_REF = re.compile(r'\{\{\s*\$labels\.(\w+)\s*\}\}')
_VALUE_REF = re.compile(r'\{\{\s*\$value\s*\}\}')


def _go_value(value):
    """$value as Prometheus prints it (Go's %v of a float64) for the small figures of the test file."""
    value = float(value)
    return str(int(value)) if value == int(value) and abs(value) < 1e6 else repr(value)


def _expand(template, labels, value):
    text = _LABEL_REF.sub(lambda match: str(labels.get(match.group(1), '<no value>')), template)
    if value is not None:
        text = _VALUE_REF.sub(_go_value(value), text)
    assert '{{' not in text, 'an annotation uses more than $labels and $value: %r' % template
    return text


def _promtool_tests(rules):
    """The test file with the annotations filled in from the rules (where a case leaves them out) and our `value`
    keys removed."""
    with open(RULES_TEST, encoding='utf-8') as handle:
        tests = yaml.safe_load(handle)
    by_name = dict((rule['alert'], rule) for group in rules['groups'] for rule in group['rules'])
    filled = copy.deepcopy(tests)
    for group in filled['tests']:
        for case in group.get('alert_rule_test') or []:
            for alert in case.get('exp_alerts') or []:
                value = alert.pop('value', None)
                if 'exp_annotations' in alert:
                    continue
                labels = dict((key, val) for key, val in alert['exp_labels'].items() if key != 'severity')
                annotations = by_name[case['alertname']]['annotations']
                assert value is not None or not any('$value' in text for text in annotations.values()), case
                alert['exp_annotations'] = dict((key, _expand(text, labels, value))
                                                for key, text in annotations.items())
    return tests, filled


def test_the_promtool_tests_show_every_alert_firing_and_quiet():
    tests, _filled = _promtool_tests(_rules(monitoring_expected_gpus_per_node=2))
    firing, quiet = set(), set()
    for group in tests['tests']:
        for case in group['alert_rule_test']:
            (firing if case.get('exp_alerts') else quiet).add(case['alertname'])
    assert firing == set(ALERTS), sorted(set(ALERTS) - firing)
    # and an evaluation where it does not fire (not yet, or resolved); the look-alikes that must never fire (Xid 13
    # and 94, a flat NVLink counter, reasons 0x5, 84 °C) sit beside the firing series
    assert quiet == set(ALERTS), sorted(set(ALERTS) - quiet)


@needs_promtool
def test_promtool_test_rules(tmp_path):
    rules_text = render(RULES, monitoring_expected_gpus_per_node=2)
    (tmp_path / 'aicluster-gpu.rules.yml').write_text(rules_text)
    _tests, filled = _promtool_tests(yaml.safe_load(rules_text))
    test_file = tmp_path / 'aicluster-gpu.rules.test.yml'
    test_file.write_text(yaml.safe_dump(filled, sort_keys=False, allow_unicode=True))
    returncode, output = _promtool('test', 'rules', str(test_file))
    assert returncode == 0, output
    assert 'SUCCESS' in output


# ------------------------------------------------------------------ prometheus.yml and the scrape snippet

def _config(name='etc/prometheus/prometheus.yml.j2', **overrides):
    return yaml.safe_load(render(name, **overrides))


def test_prometheus_yml_scrapes_the_groups_hosts_by_name_with_the_rules_and_intervals():
    config = _config(monitoring_scrape_interval='5s', monitoring_evaluation_interval='5s',
                     monitoring_scrape_groups=['gpu_nodes', 'absent_group', 'monitoring'],
                     groups={'all': ['ctl01', 'gpu01', 'gpu02'], 'gpu_nodes': ['gpu02', 'gpu01'],
                             'monitoring': ['ctl01', 'gpu01']})
    assert config['global'] == {'scrape_interval': '5s', 'evaluation_interval': '5s'}
    assert config['rule_files'] == ['/etc/prometheus/rules/*.yml']
    assert 'alerting' not in config
    jobs = dict((job['job_name'], job) for job in config['scrape_configs'])
    assert list(jobs) == ['prometheus', 'dcgm-exporter', 'node']
    assert jobs['prometheus']['static_configs'] == [{'targets': ['localhost:9090']}]
    assert jobs['dcgm-exporter']['static_configs'] == [{'targets': ['ctl01:9400', 'gpu01:9400', 'gpu02:9400']}]
    assert jobs['node']['static_configs'] == [{'targets': ['ctl01:9100', 'gpu01:9100', 'gpu02:9100']}]
    relabel = jobs['dcgm-exporter']['relabel_configs'][0]
    assert re.sub(relabel['regex'] + '$', relabel['replacement'].replace('${1}', r'\1'), 'gpu01:9400') == 'gpu01'


def test_prometheus_yml_options():
    config = _config(monitoring_scrape_timeout='4s', monitoring_alertmanagers=['ctl01:9093'],
                     monitoring_external_labels={'site': 'DH2', 'cluster': 'hgx'},
                     monitoring_node_exporter_scrape=False,
                     monitoring_dcgm_exporter_port=9500, monitoring_prometheus_url='http://ctl01:9090')
    assert config['global']['scrape_timeout'] == '4s'
    assert config['global']['external_labels'] == {'cluster': 'hgx', 'site': 'DH2'}
    assert config['alerting'] == {'alertmanagers': [{'static_configs': [{'targets': ['ctl01:9093']}]}]}
    assert [job['job_name'] for job in config['scrape_configs']] == ['prometheus', 'dcgm-exporter']
    assert config['scrape_configs'][0]['static_configs'] == [{'targets': ['ctl01:9090']}]
    assert config['scrape_configs'][1]['static_configs'] == [{'targets': ['gpu01:9500', 'gpu02:9500']}]


def test_the_snippet_holds_the_same_scrape_jobs():
    snippet = _config('etc/prometheus/aicluster-scrape-configs.yml.j2')
    assert list(snippet) == ['scrape_configs']
    assert snippet['scrape_configs'] == _config()['scrape_configs'][1:]


def test_rendering_is_deterministic():
    for name in ('etc/prometheus/prometheus.yml.j2', 'etc/prometheus/aicluster-scrape-configs.yml.j2', RULES):
        assert render(name) == render(name, groups={'gpu_nodes': ['gpu01', 'gpu02'], 'all': ['gpu01', 'gpu02']})


@needs_promtool
def test_promtool_check_config(tmp_path):
    """The rules by an absolute path, as the role writes them: check config validates them with the config."""
    rules_dir = tmp_path / 'rules'
    rules_dir.mkdir()
    (rules_dir / 'aicluster-gpu.rules.yml').write_text(render(RULES))
    config = tmp_path / 'validate-tmp-name'
    config.write_text(render('etc/prometheus/prometheus.yml.j2', monitoring_prometheus_rules_dir=str(rules_dir),
                             monitoring_scrape_interval='5s', monitoring_alertmanagers=['ctl01:9093']))
    returncode, output = _promtool('check', 'config', str(config))
    assert returncode == 0, output
    assert 'SUCCESS: 1 rule files found' in output and 'SUCCESS: 19 rules found' in output
    snippet = tmp_path / 'snippet'
    snippet.write_text(render('etc/prometheus/aicluster-scrape-configs.yml.j2'))
    returncode, output = _promtool('check', 'config', str(snippet))
    assert returncode == 0, output
