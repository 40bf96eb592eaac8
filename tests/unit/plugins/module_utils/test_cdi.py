# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from _paths import own_fixture

from ansible_collections.aicluster.infra.plugins.module_utils import cdi
from ansible_collections.aicluster.infra.plugins.module_utils.errors import ParseError

UUIDS = ['GPU-8c3f0d6e-31a2-4b7e-9f10-2a6b5c4d3e01', 'GPU-1d2e3f40-5a6b-4c7d-8e9f-0a1b2c3d4e02',
         'GPU-6b7c8d9e-0f1a-4b2c-9d3e-4f5a6b7c8d03', 'GPU-a0b1c2d3-e4f5-4a6b-8c7d-9e0f1a2b3c04']
STATIC = '/etc/cdi/nvidia.yaml'
MANAGED = '/var/run/cdi/nvidia.yaml'


def _spec_yaml():
    return own_fixture('nvidia-ctk/cdi-spec-1.17.8-4xh100-handmade.yaml')


# ------------------------------------------------------------------ nvidia-ctk cdi list
def test_cdi_list_terminal_capture():
    listed = cdi.parse_cdi_list(own_fixture('nvidia-ctk/cdi-list-1.17.8-4xh100-tty-handmade.txt'))
    assert listed['count'] == 9
    assert listed['devices'][:4] == ['nvidia.com/gpu=0', 'nvidia.com/gpu=1', 'nvidia.com/gpu=2', 'nvidia.com/gpu=3']
    assert listed['devices'][-1] == 'nvidia.com/gpu=all'
    assert 'nvidia.com/gpu=%s' % UUIDS[3] in listed['devices']
    assert listed['warnings'] == [] and listed['errors'] == []


def test_cdi_list_conflict_without_terminal():
    listed = cdi.parse_cdi_list(own_fixture('nvidia-ctk/cdi-list-1.18.0-4xh100-conflict-handmade.stdout'),
                                own_fixture('nvidia-ctk/cdi-list-1.18.0-4xh100-conflict-handmade.stderr'))
    assert listed['count'] == 6 and len(listed['devices']) == 6
    assert 'nvidia.com/gpu=0' not in listed['devices'] and 'nvidia.com/gpu=all' not in listed['devices']
    assert len(listed['warnings']) == 1
    lines = listed['warnings'][0].splitlines()
    assert len(lines) == 3
    assert lines[0].startswith('Refreshing the CDI registry returned the following error(s): conflicting device '
                               '"nvidia.com/gpu=0" (specs "/etc/cdi/nvidia-old.yaml", "/etc/cdi/nvidia.yaml")')


def test_cdi_list_multiline_warning_on_a_terminal():
    text = ('INFO[0000] Found 1 CDI devices\n'
            'WARN[0000] Refreshing the CDI registry returned the following error(s): failed to load CDI Spec '
            'invalid device name "x y"\n'
            'conflicting device "nvidia.com/gpu=0" (specs "/etc/cdi/a.yaml", "/etc/cdi/b.yaml")\n'
            'nvidia.com/gpu=1\n')
    listed = cdi.parse_cdi_list(text)
    assert listed['devices'] == ['nvidia.com/gpu=1']
    assert listed['warnings'][0].splitlines()[1].startswith('conflicting device')


def test_cdi_list_empty_registry():
    assert cdi.parse_cdi_list('', 'INFO[0000] Found 0 CDI devices\n') == {
        'count': 0, 'devices': [], 'warnings': [], 'errors': []}


@pytest.mark.parametrize('text', ['NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA driver.\n',
                                  'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n'], ids=['nvidia-smi', 'smi-list'])
def test_cdi_list_rejects_other_text(text):
    with pytest.raises(ParseError):
        cdi.parse_cdi_list(text)


# ------------------------------------------------------------------ spec files
@pytest.mark.parametrize('use_yaml', [True, False], ids=['pyyaml', 'subset-reader'])
def test_spec_yaml(use_yaml):
    if use_yaml and not cdi.HAS_YAML:
        pytest.skip('PyYAML is not installed')
    spec = cdi.parse_spec(_spec_yaml(), STATIC, use_yaml=use_yaml)
    assert spec['kind'] == 'nvidia.com/gpu'
    assert [d['name'] for d in spec['devices']] == ['0', UUIDS[0], '1', UUIDS[1], '2', UUIDS[2], '3', UUIDS[3], 'all']
    assert spec['devices'][2]['nodes'] == ['/dev/nvidia1', '/dev/dri/card2', '/dev/dri/renderD129']
    assert len(spec['devices'][-1]['nodes']) == 12
    assert spec['nodes'] == ['/dev/nvidia-modeset', '/dev/nvidia-uvm-tools', '/dev/nvidia-uvm', '/dev/nvidiactl']
    assert spec['driver_version'] == '570.133.20'


def test_spec_readers_agree():
    if not cdi.HAS_YAML:
        pytest.skip('PyYAML is not installed')
    text = _spec_yaml()
    assert cdi.read_yaml_subset(text) == cdi._yaml.safe_load(text)  # pylint: disable=protected-access


def test_spec_json_with_mig():
    spec = cdi.parse_spec(own_fixture('nvidia-ctk/cdi-spec-1.18.0-1xa100-mig-handmade.json'), '/etc/cdi/mig.json')
    assert [d['name'] for d in spec['devices']] == ['0', '0:0', 'all']
    assert spec['devices'][1]['nodes'][1:] == ['/dev/nvidia-caps/nvidia-cap21', '/dev/nvidia-caps/nvidia-cap22']
    assert spec['driver_version'] == '580.95.05'


def test_subset_reader_quoting_and_flow_lists():
    text = ("cdiVersion: '0.6.0'\nkind: example.com/dev  \ndevices:\n  - name: 'a''b'\n    containerEdits:\n"
            "      deviceNodes: [{}]\n      env: [A=1, B=2]\n")
    assert cdi.read_yaml_subset(text) == {'cdiVersion': '0.6.0', 'kind': 'example.com/dev', 'devices': [
        {'name': "a'b", 'containerEdits': {'deviceNodes': [{}], 'env': ['A=1', 'B=2']}}]}


@pytest.mark.parametrize('text', ['kind: nvidia.com/gpu\ndevices: []\n', '[1, 2]\n', 'cdiVersion: 0.5.0\nkind: x/y\n'
                                  'devices:\n- containerEdits: {}\n'],
                         ids=['no-version', 'a-list', 'nameless-device'])
def test_spec_rejects_non_specs(text):
    with pytest.raises(ParseError):
        cdi.parse_spec(text, '/etc/cdi/bad.yaml', use_yaml=False)


def test_subset_reader_refuses_what_it_cannot_read():
    with pytest.raises(ParseError):
        cdi.read_yaml_subset('kind: nvidia.com/gpu\ndevices: &anchor\n')
    with pytest.raises(ParseError):
        cdi.read_yaml_subset('kind: x\n    stray: indented\n')


# ------------------------------------------------------------------ GPUs
def test_gpus_from_q():
    parsed = {'driver_version': '580.95.05', 'gpus': [{'pci_bus_id': '00000000:18:00.0', 'uuid': UUIDS[0],
                                                       'minor_number': 0},
                                                      {'pci_bus_id': '00000000:2A:00.0', 'uuid': UUIDS[2],
                                                       'minor_number': 2}]}
    assert cdi.gpus_from_q(parsed) == [
        {'index': 0, 'uuid': UUIDS[0], 'minor': 0, 'driver_version': '580.95.05'},
        {'index': 1, 'uuid': UUIDS[2], 'minor': 2, 'driver_version': '580.95.05'}]
    with pytest.raises(ParseError):
        cdi.gpus_from_q({'gpus': [{'pci_bus_id': 'x', 'uuid': None, 'minor_number': 0}]})


def test_live_gpu_nodes():
    names = ['nvidia10', 'nvidia2', 'nvidiactl', 'nvidia-uvm', 'nvidia-nvswitch0', 'nvidia0', 'null']
    assert cdi.live_gpu_nodes(names) == ['/dev/nvidia0', '/dev/nvidia2', '/dev/nvidia10']


# ------------------------------------------------------------------ the decision
def _gpus(minors=(0, 1, 2, 3), driver='570.133.20'):
    return [{'index': index, 'uuid': UUIDS[minor], 'minor': minor, 'driver_version': driver}
            for index, minor in enumerate(minors)]


def _observed(specs, gpus=None, live=(0, 1, 2, 3), missing=(), listed=None):
    gpus = _gpus(live) if gpus is None else gpus
    names = set()
    for spec in specs:
        for device in spec['devices']:
            names.add('%s=%s' % (spec['kind'], device['name']))
    nodes = set(n for s in specs for n in s['nodes'] + [x for d in s['devices'] for x in d['nodes']])
    return {'listed': listed or {'count': len(names), 'devices': sorted(names), 'warnings': [], 'errors': []},
            'specs': specs, 'spec_errors': [], 'gpus': gpus, 'gpu_error': None,
            'live_nodes': ['/dev/nvidia%d' % m for m in live],
            'existing': dict((n, n not in missing and not (n.startswith('/dev/nvidia') and n[11:].isdigit()
                                                           and int(n[11:]) not in live)) for n in nodes)}


def _spec(path=MANAGED):
    return cdi.parse_spec(_spec_yaml(), path)


def _checks(result):
    return [p['check'] for p in result['problems']]


def test_healthy_node_has_no_problem():
    result = cdi.cdi_problems(_observed([_spec()]))
    assert result == {'problems': [], 'refresh_needed': False}


def test_gpu_gone_leaves_a_stale_index_spec():
    # GPU in slot 2 fell off the bus: NVML renumbers (index 2 is now minor 3), /dev/nvidia2 is gone.
    result = cdi.cdi_problems(_observed([_spec()], live=(0, 1, 3)))
    messages = [p['message'] for p in result['problems']]
    assert _checks(result) == ['node-missing', 'all-stale', 'gpu-stale']
    assert messages[0] == ('/var/run/cdi/nvidia.yaml names /dev/nvidia2 (device 2, %s, all), which does not exist'
                           % UUIDS[2])
    assert messages[1] == ('nvidia.com/gpu=all (/var/run/cdi/nvidia.yaml) gives /dev/nvidia0 /dev/nvidia1 /dev/nvidia2 '
                           '/dev/nvidia3; the live GPU nodes are /dev/nvidia0 /dev/nvidia1 /dev/nvidia3')
    assert messages[2] == ('nvidia.com/gpu=2 (/var/run/cdi/nvidia.yaml) gives /dev/nvidia2 /dev/dri/card3 '
                           '/dev/dri/renderD130, but GPU 2 (%s) is /dev/nvidia3' % UUIDS[3])
    assert result['refresh_needed'] is True


def test_new_gpu_not_named():
    spec = _spec()
    spec['devices'] = [d for d in spec['devices'] if d['name'] not in ('3', UUIDS[3])]
    result = cdi.cdi_problems(_observed([spec]))
    assert _checks(result) == ['gpu-unnamed']
    assert result['problems'][0]['message'] == (
        'GPU 3 (%s, /dev/nvidia3) is not named by any CDI spec: nvidia-ctk cdi list has neither nvidia.com/gpu=3 nor '
        'nvidia.com/gpu=%s' % (UUIDS[3], UUIDS[3]))
    # `all` from before the GPU came back does not give it either
    spec['devices'][-1]['nodes'] = [n for n in spec['devices'][-1]['nodes'] if n != '/dev/nvidia3']
    result = cdi.cdi_problems(_observed([spec]))
    assert _checks(result) == ['node-unnamed', 'all-stale', 'gpu-unnamed']
    assert result['problems'][0]['message'] == '/dev/nvidia3 exists but no nvidia.com/gpu device of the specs gives it'
    assert result['refresh_needed'] is True


def test_static_duplicate_beside_the_refreshed_spec():
    result = cdi.cdi_problems(_observed([_spec(STATIC), _spec(MANAGED)]))
    assert _checks(result) == ['duplicate']
    assert result['problems'][0]['message'] == (
        'nvidia.com/gpu=0,1,2,3,... are defined by /etc/cdi/nvidia.yaml and /var/run/cdi/nvidia.yaml '
        '(/var/run/cdi/nvidia.yaml silently wins); keep one spec (remove the static one)')
    assert result['refresh_needed'] is False


def test_static_spec_of_an_older_driver_with_a_missing_gpu():
    static = _spec(STATIC)
    managed = _spec(MANAGED)
    managed['driver_version'] = '580.95.05'
    result = cdi.cdi_problems(_observed([static, managed], gpus=_gpus(driver='580.95.05')))
    assert _checks(result) == ['duplicate', 'driver-stale']
    assert result['problems'][1] == {'check': 'driver-stale', 'refresh': False, 'message':
                                     '/etc/cdi/nvidia.yaml was generated for driver 570.133.20; the driver now is '
                                     '580.95.05'}


def test_conflict_in_one_directory():
    listed = cdi.parse_cdi_list(own_fixture('nvidia-ctk/cdi-list-1.18.0-4xh100-conflict-handmade.stdout'),
                                own_fixture('nvidia-ctk/cdi-list-1.18.0-4xh100-conflict-handmade.stderr'))
    old = _spec('/etc/cdi/nvidia-old.yaml')
    old['devices'] = [d for d in old['devices'] if d['name'] in ('0', UUIDS[0], 'all')]
    result = cdi.cdi_problems(_observed([old, _spec(STATIC)], listed=listed), managed_spec=STATIC)
    checks = _checks(result)
    assert checks[:4] == ['duplicate'] * 4
    assert result['problems'][0]['message'] == (
        'nvidia-ctk cdi list: conflicting device "nvidia.com/gpu=0" (specs "/etc/cdi/nvidia-old.yaml", '
        '"/etc/cdi/nvidia.yaml"): the CDI library drops that device name; remove one of the files')
    assert 'in one directory (a conflict: the CDI library drops these names)' in result['problems'][3]['message']
    # GPU 0 is named by neither index nor UUID any more: the list dropped both.
    assert checks[-1] == 'gpu-unnamed'


def test_no_spec_and_unreadable_gpus():
    observed = _observed([])
    observed['gpus'], observed['gpu_error'] = None, 'Failed to initialize NVML: Driver/library version mismatch (rc 18)'
    result = cdi.cdi_problems(observed)
    assert _checks(result) == ['gpus-unreadable', 'no-spec']
    assert result['refresh_needed'] is True


def test_unreadable_spec_file():
    observed = _observed([_spec()])
    observed['spec_errors'] = [{'path': '/etc/cdi/broken.yaml', 'message': 'not YAML: mapping values'}]
    result = cdi.cdi_problems(observed)
    assert result['problems'] == [{'check': 'spec-unreadable', 'refresh': False, 'message':
                                   '/etc/cdi/broken.yaml cannot be read as a CDI spec: not YAML: mapping values'}]


def test_other_kinds_are_ignored():
    other = _spec('/etc/cdi/other.yaml')
    other['kind'] = 'example.com/fpga'
    other['devices'] = [{'name': '0', 'nodes': ['/dev/fpga0']}]
    assert cdi.cdi_problems(_observed([_spec(), other], missing=('/dev/fpga0',)))['problems'] == []


def test_output_is_deterministic():
    observed = _observed([_spec(STATIC), _spec(MANAGED)], live=(0, 1, 3))
    assert cdi.cdi_problems(observed) == cdi.cdi_problems(observed)
