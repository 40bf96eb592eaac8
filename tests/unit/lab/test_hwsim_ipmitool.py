"""lab/hwsim ipmitool stand-in (issue 34): the BMC's sdr elist, sdr list and dcmi power reading in the real layouts,
read by the collection's parsers and judged as the burn-in gate does; fan-fail and psu-fail as a real BMC shows them."""
import os
import sys

from _paths import REPO

sys.path.insert(0, os.path.join(REPO, 'lab', 'hwsim'))

# pylint: disable=wrong-import-position
from ansible_collections.aicluster.infra.plugins.module_utils import burnin_sample  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.ipmitool import (  # noqa: E402
    parse_dcmi_power_reading, parse_sdr_elist,
)
from ansible_collections.aicluster.infra.plugins.module_utils.verify import burnin  # noqa: E402
from hwsim.testing import make_lab  # noqa: E402


def _bmc_samples(lab, host='gpu01', count=3):
    samples = []
    for seq in range(1, count + 1):
        errors = []
        bmc = burnin_sample.sample_bmc(lab.ok(host, ['ipmitool', 'sdr', 'elist']), lab.ok(host, ['ipmitool', 'dcmi', 'power', 'reading']),
                                       errors=errors)
        assert errors == []
        samples.append(burnin_sample.build_sample('r1', host, seq, 't%d' % seq, 60 * seq, bmc=bmc))
    return samples


def test_a_gpu_host_bmc_reads_with_the_parsers_and_passes_the_gate(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    sdr = parse_sdr_elist(lab.ok('gpu01', ['ipmitool', 'sdr', 'elist']))
    assert sdr['mode'] == 'elist' and sdr['errors'] == []
    by_name = dict((sensor['name'], sensor) for sensor in sdr['sensors'] if sensor['name'] not in ('Status', 'Presence'))
    assert (by_name['Inlet Temp']['value'], by_name['Fan1']['value'], by_name['GPU8 Temp']['value']) == (23.0, 3480.0, 36.0)
    assert by_name['Pwr Consumption']['value'] == 1800 + round(8 * 71.97)
    psus = [sensor for sensor in sdr['sensors'] if sensor['name'] == 'Status']
    assert [sensor['entity'] for sensor in psus] == ['10.%d' % number for number in range(1, 7)]
    power = parse_dcmi_power_reading(lab.ok('gpu01', ['ipmitool', 'dcmi', 'power', 'reading']))
    assert power['valid'] and power['instantaneous_w'] == by_name['Pwr Consumption']['value'] and power['sampling_period_s'] == 3600
    listed = parse_sdr_elist(lab.ok('gpu01', ['ipmitool', 'sdr', 'list']))
    assert listed['mode'] == 'list' and len(listed['sensors']) == len(sdr['sensors'])
    results = burnin.judge_node(_bmc_samples(lab), {'interval_s': 60})
    bmc = [result for result in results if result['check'] == 'burnin.bmc']
    assert [result['passed'] for result in bmc] == [True] and 'inlet at most 23 C' in bmc[0]['message']


def test_a_failed_fan_and_a_failed_psu_fail_the_burn_in_gate_by_name(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    lab.ok('gpu01', ['hwsim', 'fault', 'fan-fail', '3'])
    lab.ok('gpu01', ['hwsim', 'fault', 'psu-fail', '2'])
    rows = lab.ok('gpu01', ['ipmitool', 'sdr', 'elist'])
    assert 'Fan3             | 3Ah | lcr |  7.1 | 0 RPM\n' in rows
    assert 'Status           | 86h | ok  | 10.2 | Presence detected, Failure detected\n' in rows
    failed = [result for result in burnin.judge_node(_bmc_samples(lab), {'interval_s': 60})
              if not result['passed'] and result['check'] == 'burnin.bmc']
    assert sorted(result['subject'] for result in failed) == ['Fan Redundancy', 'Fan3', 'PS Redundancy', 'Status 10.2']
    assert lab.ok('gpu02', ['ipmitool', 'sdr', 'elist']).count('Failure detected') == 0  # the other host is healthy


def test_a_host_without_gpus_has_two_psus_and_no_gpu_sensors_and_other_commands_are_refused(tmp_path):
    lab = make_lab(tmp_path, 'hgx-h100-ib')
    sensors = parse_sdr_elist(lab.ok('ctl01', ['ipmitool', 'sdr', 'elist']))['sensors']
    assert [sensor['entity'] for sensor in sensors if sensor['name'] == 'Status'] == ['10.1', '10.2']
    assert not [sensor for sensor in sensors if sensor['name'].startswith('GPU')]
    assert [sensor['value'] for sensor in sensors if sensor['name'] == 'Pwr Consumption'] == [208.0]  # the capture's
    status, _out, err = lab.run('gpu01', ['ipmitool', 'sel', 'elist'])
    assert status == 1 and 'sdr elist' in err
