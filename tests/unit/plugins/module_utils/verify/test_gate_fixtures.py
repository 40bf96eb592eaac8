# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The verify stage's results.json, pinned per case: fixtures/gate/<case>/in.json replayed gives out.json.

in.json holds what the verify roles gather (module and command results, role
variables); _gate_harness replays the roles' Python calls on it.
make_gate_fixtures.py writes both files from the simulated hardware of lab/hwsim.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:  # --import-mode=importlib puts no test folder on sys.path
    sys.path.insert(0, HERE)

# pylint: disable=wrong-import-position
from _gate_harness import run_case  # noqa: E402

from ansible_collections.aicluster.infra.plugins.module_utils.verify.checks import CHECKS  # noqa: E402
from ansible_collections.aicluster.infra.plugins.module_utils.verify.results import validate_results  # noqa: E402

GATE = os.path.join(HERE, 'fixtures', 'gate')
CASES = sorted(name for name in os.listdir(GATE) if os.path.isfile(os.path.join(GATE, name, 'in.json')))

# Check ids no case shows both passed and failed yet, each with why.
NOT_PINNED_YET = {
    'net.roce_qos': 'the gate fixtures have no RoCE case yet (every case is an InfiniBand lab); test_roce.py passes and '
                    'fails it, test_roce_role.py through the roce role against hwsim',
    'net.lossless': 'the gate fixtures have no RoCE case yet; test_roce.py passes and fails it, test_hwsim_perftest.py '
                    'makes hwsim drop without PFC',
    'node.reachable': 'only ever failed: the gate adds it to a node without any result, never as a pass',
    'node.drain_breaker': 'only ever failed: the gate adds it when the breaker trips (case breaker), never as a pass',
    'node.tested': 'only ever failed: the gate adds it when nodes ran jobs (case busy-node), never as a pass',
    'fabric.rail': 'hwsim wires every rail right and has no miswiring fault yet; test_fabric.py fails it on the stand-in '
                   'fabric (two scalable units, a rail against its unit)',
    'perftest.gpudirect_bw': 'the generator records no GPU-to-NIC affinity for the perftest plan; test_perftest.py and '
                             'test_hwsim_perftest.py (gdr-broken) pass and fail it',
    'ib.link_errors': 'the pinned evidence predates the link counter reads (no verify_ib_link_outcome: the check did not '
                      'run); test_link.py and test_hwsim_link.py (link-errors) pass and fail it',
    'ib.ber': 'the pinned evidence predates the mlxlink read; test_link.py and test_hwsim_link.py (link-errors) pass and fail it',
    'ib.roce_drops': 'RoCE counters are in no pinned case; test_link.py passes and fails it on ethtool -S and hw_counters',
    # issue 32 (Fabric I): run by the verify role since, but the pinned evidence predates those reads
    'fabric.sm': 'the pinned evidence predates the sminfo/saquery reads; test_sm.py and test_fabric_health.py (through the '
                 'gate) pass and fail it',
    'fabric.partition': 'the pinned evidence predates the P_Key reads; test_partition.py and test_fabric_health.py pass and '
                        'fail it',
    'fabric.switch_errors': 'the pinned evidence predates the ibqueryerrors reads; test_switch_errors.py and '
                            'test_fabric_health.py pass and fail it',
    # issue 33 (Fabric II)
    'nccl.env': 'the pinned multi-node runs predate the NCCL_DEBUG_SUBSYS=INIT,NET lines and the /etc/nccl.conf reads (the '
                'harness does not ask for it); test_nccl_env.py and test_hwsim_nccl_env.py pass and fail it',
}
# issue 34 (burn-in): the cases are verify runs; burn-in results come from playbooks/burnin.yml's samples (not yet built),
# and test_burnin.py passes and fails every burnin.* check on them
NOT_PINNED_YET.update(dict((check, 'a burn-in check; the pinned cases are verify runs; test_burnin.py passes and fails it')
                           for check in CHECKS if check.startswith('burnin.')))


def _load(case, name):
    with open(os.path.join(GATE, case, name), encoding='utf-8') as handle:
        return json.load(handle)


def _canonical(document):
    return json.dumps(document, indent=2, sort_keys=True)


@pytest.fixture(scope='module')
def produced():
    return dict((case, run_case(_load(case, 'in.json'))) for case in CASES)


def test_there_are_cases():
    assert CASES, 'no fixture under %s' % GATE


@pytest.mark.parametrize('case', CASES, ids=CASES)
def test_document_is_pinned(case, produced):
    assert _canonical(produced[case]) == _canonical(_load(case, 'out.json'))


@pytest.mark.parametrize('case', CASES, ids=CASES)
def test_pinned_document_validates(case):
    assert validate_results(_load(case, 'out.json')) == []


@pytest.mark.parametrize('case', CASES, ids=CASES)
def test_case_is_described(case):
    case_in = _load(case, 'in.json')
    assert case_in['description'].strip()
    assert set(case_in['run']) == {'started', 'finished', 'inventory', 'collection_version'}


def test_every_check_is_pinned_passed_and_failed():
    seen = {}
    for case in CASES:
        doc = _load(case, 'out.json')
        for results in [node['results'] for node in doc['nodes'].values()] + [(doc.get('cluster') or {}).get('results') or []]:
            for result in results:
                seen.setdefault(result['check'], set()).add(result['passed'])
    missing = dict((check, sorted(({True, False} - seen.get(check, set())), reverse=True))
                   for check in CHECKS if check not in NOT_PINNED_YET and seen.get(check) != {True, False})
    assert missing == {}, 'check ids not pinned as (passed, failed): %s' % missing
    assert sorted(check for check in NOT_PINNED_YET if check not in CHECKS) == []
