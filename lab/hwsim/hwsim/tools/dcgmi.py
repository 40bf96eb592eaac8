"""dcgmi stand-in: ``discovery -l``, ``diag -r 1|2|3|4 [-j] [-i IDS]`` and ``health -s|-c|-f|--clear [-j]``.

The table layouts are DCGM 3.x (``| GPU ID | Device Information |`` boxes;
the diag box with 27/48-column cells, category rules, ``Pass - All`` /
``Fail - GPU: N`` rows and warnings wrapped at 45 characters); ``-j`` is the
jsoncpp styled JSON of DCGM 3.1 (tab indentation, ``"key" : value``, keys
sorted, ``null`` between the Deployment tests, as the real capture). A
failed test makes dcgmi exit 226, as DCGM_ST_NVVS_ISOLATE_ERROR (-30) does. With the
``dcgm-plugin-missing`` fault the diag prints DCGM 4.x layouts where the CUDA tests Skip.

``health -s FLAGS | -c [-j] | -f [-j] | --clear``: the layout of dcgmi/Health.cpp (DcgmiOutputTree
28/60 for the check, 18/70 for the fetch; jsoncpp with ``-j``), the incidents of
modules/health/DcgmHealthWatch.cpp with the dcgm_errors.h messages and next steps. The watches
``-s`` sets are kept in the host's state file (``dcgm_health_watches``), as nv-hostengine keeps
them for the default group until it restarts.
"""
import json
from collections import OrderedDict

from hwsim import faults as fault_kinds
from hwsim.tools import gpus as gpu_views

DCGM_VERSION = '3.1.8'
FAILED_STATUS = 226
CONNECT_ERROR = ('Error: unable to establish a connection to the specified host: localhost\n'
                 'Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n')
TRIAGE = 'Run a field diagnostic on the GPU.'
DBE_NEXT = 'Drain the GPU and reset it or reboot the node.'
SYSTEM_TRIAGE = 'Check DCGM and system logs for errors. Reset GPU. Restart DCGM. Rerun diagnostics.'

# (table name, JSON name, warning when it fails; {gpu} is the GPU id)
DEPLOYMENT = (
    ('Denylist', 'Denylist', 'Found driver on the denylist: nouveau Please load the appropriate driver.'),
    ('NVML Library', 'NVML Library', "Cannot open library libnvidia-ml.so.1: 'libnvidia-ml.so.1: cannot open shared object file: "
     "No such file or directory' Check for the existence of the library and set LD_LIBRARY_PATH if needed."),
    ('CUDA Main Library', 'CUDA Main Library', "Cannot open library libcuda.so: 'libcuda.so: cannot open shared object file: "
     "No such file or directory' Check for the existence of the library and set LD_LIBRARY_PATH if needed."),
    ('Permissions and OS Blocks', 'Permissions and OS-related Blocks', 'The number of devices NVML returns is different than the '
     'number of devices in /dev. Check for the presence of cgroups, operating system blocks, and or unsupported / older cards'),
    ('Persistence Mode', 'Persistence Mode', 'Persistence mode for GPU {gpu} is disabled. Enable persistence mode by running '
     '"nvidia-smi -i <gpuId> -pm 1 " as root.'),
    ('Environment Variables', 'Environmental Variables', "Found CUDA performance-limiting environment variable "
     "'CUDA_LAUNCH_BLOCKING'. Please unset this environment variable to address test failures."),
    ('Page Retirement/Row Remap', 'Page Retirement/Row Remap', 'GPU {gpu} had memory errors and row remappings are pending ' + DBE_NEXT),
    ('Graphics Processes', 'Graphics Processes', 'NVVS has detected processes with graphics contexts open running on at least one '
     'GPU. This may cause some tests to fail. Stop the graphics processes or run this diagnostic on a server that is not being '
     'used for display purposes.'),
    ('Inforom', 'Inforom', 'A corrupt InfoROM has been detected in GPU {gpu}. Flash the InfoROM to clear this corruption.'),
)
# (category, table/JSON name, plugin name, lowest run level, warning when it fails)
PLUGINS = (
    ('Integration', 'PCIe', 'pcie', 2, 'Bandwidth of GPU {gpu} in direction h2d of 3.21 did not exceed minimum required bandwidth '
     'of 20.00. ' + SYSTEM_TRIAGE),
    ('Hardware', 'GPU Memory', 'memory', 2, 'CUDA APIs have indicated that a double-bit ECC error has occured on GPU {gpu}. ' + DBE_NEXT),
    ('Hardware', 'Diagnostic', 'diagnostic', 2, 'A memory mismatch was detected on GPU {gpu}, but no error was reported by CUDA or '
     'NVML. ' + TRIAGE),
    ('Stress', 'Targeted Stress', 'targeted_stress', 3, 'Max stress level of 1204.3 did not reach desired stress level of 2500.0 '
     'for GPU {gpu} ' + TRIAGE),
    ('Stress', 'Targeted Power', 'targeted_power', 3, 'Max power of 412.3 did not reach desired power minimum '
     'targeted_power.target_power of 700.0 for GPU {gpu} ' + TRIAGE),
    ('Stress', 'Memory Bandwidth', 'memory_bandwidth', 3, 'GPU {gpu} only achieved a memory bandwidth of 1204.56 GB/s, failing '
     'to meet 2500.00 GB/s for test 0 ' + TRIAGE),
)
ECC_PENDING = 'Pending page retirements together with a DBE were detected on GPU {gpu}. ' + DBE_NEXT
NVLINK_DOWN = "GPU {gpu}'s NvLink link {link} is currently down " + SYSTEM_TRIAGE
WRAP = 45


def _key(name):
    return ''.join(char for char in name.lower() if char.isalnum())


def test_names():
    """Every name ``dcgm-diag-fail`` accepts (normalized: lower case, letters and digits)."""
    names = set()
    for table, json_name, _text in DEPLOYMENT:
        names.update((_key(table), _key(json_name)))
    for _category, name, plugin, _level, _text in PLUGINS:
        names.update((_key(name), _key(plugin)))
    return names


def _injected(state):
    """{normalized test name: slot or None (GPU 0 of the run)} of the dcgm-diag-fail faults."""
    found = {}
    for fault in fault_kinds.of_kind(state['faults'], 'dcgm-diag-fail'):
        name, _sep, gpu = fault['args']['test'].partition(':')
        found[_key(name)] = int(gpu) if gpu else None
    return found


class Test(object):
    """One diag test's outcome: its name, category, and per GPU id a (status, warning or None)."""

    def __init__(self, category, table_name, json_name, per_gpu):
        self.category = category
        self.table_name = table_name
        self.json_name = json_name
        self.per_gpu = per_gpu
        self.results = {}

    @property
    def failed(self):
        return any(status == 'FAIL' for status, _warning in self.results.values())


def _fail_targets(injected, names, views):
    """GPU views a dcgm-diag-fail fault names for a test (GPU 0 of the run when no GPU is given)."""
    for name in names:
        if _key(name) in injected:
            slot = injected[_key(name)]
            if slot is None:
                return views[:1]
            return [view for view in views if view.slot == slot]
    return []


def _deployment(views, injected):
    tests = []
    for table, json_name, text in DEPLOYMENT:
        test = Test('Deployment', table, json_name, False)
        failing = {view.index: text.format(gpu=view.index) for view in _fail_targets(injected, (table, json_name), views)}
        if table == 'Page Retirement/Row Remap':
            failing.update({view.index: ECC_PENDING.format(gpu=view.index) for view in views if view.ecc_pending})
            failing.update({view.index: DEPLOYMENT[6][2].format(gpu=view.index) for view in views if view.remap_pending})
        for view in views:
            test.results[view.index] = ('FAIL', failing[view.index]) if view.index in failing else ('PASS', None)
        tests.append(test)
    return tests


def _plugin(category, name, plugin, text, views, injected):
    test = Test(category, name, name, True)
    failing = {view.index: text.format(gpu=view.index) for view in _fail_targets(injected, (name, plugin), views)}
    if plugin == 'pcie':
        for view in views:
            down = [number for number, up in enumerate(view.links) if not up]
            if down and view.index not in failing:
                failing[view.index] = NVLINK_DOWN.format(gpu=view.index, link=down[0])
    for view in views:
        test.results[view.index] = ('FAIL', failing[view.index]) if view.index in failing else ('PASS', None)
    return test


def run_tests(views, state, level):
    injected = _injected(state)
    tests = _deployment(views, injected)
    for category, name, plugin, lowest, text in PLUGINS:
        if level >= lowest:
            tests.append(_plugin(category, name, plugin, text, views, injected))
    return tests


# --------------------------------------------------------------------------
# table


def _row(left, right):
    return '| %-25s | %-46s |\n' % (left, right)


def _category(name, edge):
    left = ('-----  %s  ' % name).ljust(27, '-')
    return '%s%s+%s%s\n' % (edge, left, '-' * 48, edge)


def _wrap(text):
    return [text[start:start + WRAP] for start in range(0, len(text), WRAP)] or ['']


def _ids(ids):
    return ', '.join(str(index) for index in ids)


def _result_rows(test):
    passed = [index for index, (status, _warning) in sorted(test.results.items()) if status == 'PASS']
    failed = [index for index, (status, _warning) in sorted(test.results.items()) if status == 'FAIL']
    if not test.per_gpu:
        rows = [_row(test.table_name, 'Fail' if failed else 'Pass')]
    elif not failed:
        rows = [_row(test.table_name, 'Pass - All')]
    else:
        rows = []
        if passed:
            rows.append(_row(test.table_name, 'Pass - GPU%s: %s' % ('s' if len(passed) > 1 else '', _ids(passed))))
        rows.append(_row('' if passed else test.table_name, 'Fail - GPU%s: %s' % ('s' if len(failed) > 1 else '', _ids(failed))))
    for index in failed:
        chunks = _wrap(test.results[index][1])
        rows.append(_row('Warning', chunks[0]))
        rows.extend(_row('', chunk) for chunk in chunks[1:])
    return rows


def render_table(tests, views):
    out = ['Successfully ran diagnostic for group.\n',
           '+---------------------------+------------------------------------------------+\n',
           _row('Diagnostic', 'Result'),
           '+===========================+================================================+\n',
           _category('Metadata', '|'),
           _row('DCGM Version', DCGM_VERSION),
           _row('Driver Version Detected', views[0].driver_version),
           _row('GPU Device IDs Detected', ','.join(gpu_views.DEVICE_IDS.get(view.name, '2330') for view in views))]
    category = None
    for test in tests:
        if test.category != category:
            category = test.category
            out.append(_category(category, '|' if category == 'Deployment' else '+'))
        out.extend(_result_rows(test))
    out.append('+---------------------------+------------------------------------------------+\n')
    return ''.join(out)


# --------------------------------------------------------------------------
# JSON (jsoncpp StyledWriter, as DCGM 3.1 prints it)


def _scalar(value):
    if value is None:
        return 'null'
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, int):
        return str(value)
    return '"%s"' % str(value).replace('\\', '\\\\').replace('"', '\\"')


def _json_result(gpu_ids, status, warning):
    result = {'gpu_ids': gpu_ids, 'status': status}
    if warning:
        result['warnings'] = [{'warning': warning}]
    return result


def _json_test(test):
    if test.per_gpu:
        results = [_json_result(index, status, warning) for index, (status, warning) in sorted(test.results.items())]
    else:
        failed = [(index, warning) for index, (status, warning) in sorted(test.results.items()) if status == 'FAIL']
        everyone = ','.join(str(index) for index in sorted(test.results))
        results = [_json_result(everyone, 'FAIL' if failed else 'PASS', failed[0][1] if failed else None)]
    return {'name': test.json_name, 'results': results}


def render_json(tests):
    categories = []
    for test in tests:
        if not categories or categories[-1]['category'] != test.category:
            categories.append({'category': test.category, 'tests': []})
        entries = categories[-1]['tests']
        if test.category == 'Deployment' and entries:
            entries.append(None)
        entries.append(_json_test(test))
    document = {'DCGM GPU Diagnostic': {'test_categories': categories, 'version': DCGM_VERSION}}
    return '\n'.join(_json_lines(document, '')) + '\n'


# --------------------------------------------------------------------------
# DCGM 4 without its CUDA plugin package (fault dcgm-plugin-missing)
#
# DCGM 4 ships the CUDA tests (memory, diagnostic, pcie, targeted stress/power, memory bandwidth) in
# datacenter-gpu-manager-4-cuda<major>; without it they report Skip while the deployment checks ("software")
# pass, and the run exits 0. Layouts: the 4.x table (test names as plugin names, one ``GPUn: status`` row
# per GPU) and the 4.x JSON (``DCGM Diagnostic``, entity results, ``test_summary``).

DCGM4_VERSION = '4.2.3'
DCGM4_SKIP_INFO = 'The plugin could not be loaded: its CUDA library (libdcgmplugin*_cuda) is not installed.'


def run_tests_dcgm4_no_cuda(views, state, level):
    """``software`` (the deployment checks folded into one test) then each CUDA plugin of the level, skipped."""
    software = Test('Deployment', 'software', 'software', True)
    for test in run_tests(views, state, 1):
        for index, (status, warning) in test.results.items():
            if status == 'FAIL' or index not in software.results:
                software.results[index] = (status, warning)
    tests = [software]
    for category, _name, plugin, lowest, _text in PLUGINS:
        if level >= lowest:
            test = Test(category, plugin, plugin, True)
            test.results = dict((view.index, ('SKIP', None)) for view in views)
            tests.append(test)
    return tests


def _dcgm4_status(status):
    return {'PASS': 'Pass', 'FAIL': 'Fail', 'SKIP': 'Skip'}[status]


def _dcgm4_summary(test):
    statuses = set(status for status, _warning in test.results.values())
    return 'FAIL' if 'FAIL' in statuses else ('PASS' if 'PASS' in statuses else 'SKIP')


def render_table_dcgm4(tests, views):
    out = ['Successfully ran diagnostic for group.\n',
           '+---------------------------+------------------------------------------------+\n',
           _row('Diagnostic', 'Result'),
           '+===========================+================================================+\n',
           _category('Metadata', '|'),
           _row('DCGM Version', DCGM4_VERSION),
           _row('Driver Version Detected', views[0].driver_version),
           _row('GPU Device IDs Detected', ', '.join(gpu_views.DEVICE_IDS.get(view.name, '2330') for view in views))]
    category = None
    for test in tests:
        if test.category != category:
            category = test.category
            out.append(_category(category, '|' if category == 'Deployment' else '+'))
        out.append(_row(test.table_name, _dcgm4_status(_dcgm4_summary(test))))
        out.extend(_row('', 'GPU%d: %s' % (index, _dcgm4_status(status))) for index, (status, _w) in sorted(test.results.items()))
        for index, (status, warning) in sorted(test.results.items()):
            if warning:
                chunks = _wrap(warning)
                out.append(_row('Warning', chunks[0]))
                out.extend(_row('', chunk) for chunk in chunks[1:])
        if _dcgm4_summary(test) == 'SKIP':
            chunks = _wrap(DCGM4_SKIP_INFO)
            out.append(_row('Info', chunks[0]))
            out.extend(_row('', chunk) for chunk in chunks[1:])
    out.append('+---------------------------+------------------------------------------------+\n')
    return ''.join(out)


def render_json_dcgm4(tests):
    categories = []
    for test in tests:
        if not categories or categories[-1]['category'] != test.category:
            categories.append({'category': test.category, 'tests': []})
        results = []
        for index, (status, warning) in sorted(test.results.items()):
            entry = {'entity_group': 'GPU', 'entity_group_id': 1, 'entity_id': index, 'status': _dcgm4_status(status)}
            if warning:
                entry['warnings'] = [{'error_category': 1, 'error_id': 0, 'error_severity': 1, 'message': warning}]
            results.append(entry)
        summary = {'status': _dcgm4_status(_dcgm4_summary(test))}
        if _dcgm4_summary(test) == 'SKIP':
            summary['info'] = [DCGM4_SKIP_INFO]
        categories[-1]['tests'].append({'name': test.json_name, 'results': results, 'test_summary': summary})
    document = {'DCGM Diagnostic': {'test_categories': categories, 'version': DCGM4_VERSION}}
    return json.dumps(document, indent=4, sort_keys=True) + '\n'


# --------------------------------------------------------------------------
# discovery -l


def discovery(ctx, views, profile=None):
    rule = '+--------+' + '-' * 70 + '+\n'
    out = ['%d GPU%s found.\n' % (len(views), '' if len(views) == 1 else 's'), rule,
           '| GPU ID | %-69s|\n' % 'Device Information', rule]
    for view in views:
        out.append('| %-6s | %-69s|\n' % (view.index, 'Name: ' + view.name))
        out.append('| %-6s | %-69s|\n' % ('', 'PCI Bus ID: ' + view.pci_bus_id))
        out.append('| %-6s | %-69s|\n' % ('', 'Device UUID: ' + view.uuid))
        out.append(rule)
    switches = gpu_views.nvswitch_count(views[0], profile) if views else 0
    if switches:
        switch_rule = '+-----------+' + '-' * 68 + '+\n'
        out.extend(['%d NvSwitches found.\n' % switches, switch_rule, '| Switch ID |%68s|\n' % '', switch_rule])
        out.extend('| %-9d |%68s|\n' % (number, '') for number in range(switches))
        out.append(switch_rule)
    ctx.write(''.join(out))
    return 0


# --------------------------------------------------------------------------
# arguments


def _level(text):
    """Run level 1-3 from ``-r``: a number (4 runs as 3) or test names (their highest level)."""
    if text.isdigit():
        return min(int(text), 3) if int(text) >= 1 else None
    levels = []
    wanted = [_key(item) for item in text.split(',')]
    for item in wanted:
        matches = [lowest for _category, name, plugin, lowest, _text in PLUGINS if item in (_key(name), _key(plugin))]
        if not matches and item not in ('software', 'deployment'):
            return None
        levels.extend(matches or [1])
    return max(levels)


def _parse_diag(args):
    """{'level', 'json', 'ids'} or None on bad arguments."""
    parsed = {'level': None, 'json': False, 'ids': None}
    position = 0
    while position < len(args):
        arg = args[position]
        if arg in ('-j', '--json'):
            parsed['json'] = True
            position += 1
        elif arg in ('-r', '--run', '-i', '--gpuList', '-g', '--group') and position + 1 < len(args):
            value = args[position + 1]
            if arg in ('-r', '--run'):
                parsed['level'] = _level(value)
                if parsed['level'] is None:
                    return None
            elif arg in ('-i', '--gpuList'):
                parsed['ids'] = value
            position += 2
        else:
            return None
    return parsed if parsed['level'] is not None else None


def diag(ctx, model, args):
    parsed = _parse_diag(args)
    if parsed is None:
        ctx.error('Usage: dcgmi diag -r <1|2|3|test names> [-j] [-i <gpu ids>]\n')
        return 2
    views = gpu_views.visible(model)
    if parsed['ids'] is not None:
        views = gpu_views.select(views, parsed['ids'])
        if not views:
            ctx.write('Error: Invalid GPU ID list: %s\n' % parsed['ids'])
            return 255
    if fault_kinds.of_kind(model.state['faults'], 'dcgm-plugin-missing'):
        tests = run_tests_dcgm4_no_cuda(views, model.state, parsed['level'])
        ctx.write(render_json_dcgm4(tests) if parsed['json'] else render_table_dcgm4(tests, views))
        return FAILED_STATUS if any(test.failed for test in tests) else 0
    tests = run_tests(views, model.state, parsed['level'])
    ctx.write(render_json(tests) if parsed['json'] else render_table(tests, views))
    return FAILED_STATUS if any(test.failed for test in tests) else 0


# --------------------------------------------------------------------------
# health

HEALTH_WATCHES_KEY = 'dcgm_health_watches'
# Health systems in DCGM's bit order: (state name, -f label, check row label); PMU and MCU are never shown.
HEALTH_SYSTEMS = (
    ('pcie', 'PCIe', 'PCIe system'),
    ('nvlink', 'NVLINK', 'NVLINK system'),
    ('memory', 'Memory', 'Memory system'),
    ('sm', 'SM', 'SM system'),
    ('inforom', 'InfoROM', 'InfoROM system'),
    ('thermal', 'Thermal', 'Thermal system'),
    ('power', 'Power', 'Power system'),
    ('driver', 'Driver', 'Driver'),
    ('nvswitch_nonfatal', 'NvSwitch NF', 'Internal error'),
    ('nvswitch_fatal', 'NvSwitch F', 'Internal error'),
)
# -s letters (CommandLineParser ProcessHealthCommandLine): t is thermal and power; a is everything -s can set.
HEALTH_FLAGS = {
    'p': ('pcie',), 'm': ('memory',), 'i': ('inforom',), 't': ('thermal', 'power'), 'n': ('nvlink',),
    'a': ('pcie', 'memory', 'inforom', 'thermal', 'power', 'nvlink', 'nvswitch_nonfatal', 'nvswitch_fatal'),
}
HEALTH_NAMES = {0: 'Healthy', 1: 'Warning', 2: 'Failure'}
HEALTH_WARN, HEALTH_FAIL = 1, 2
NOT_ENABLED = 'Error: Health watches not enabled. Please enable watches. \n'
HEALTH_SET = 'Health monitor systems set successfully.\n'
HEALTH_USAGE = ('Usage: dcgmi health [-g GROUP] (-s <p|m|i|t|n|a> [-u SECONDS] [-m SECONDS] | -c [-j] | -f [-j] | --clear) '
                '(hwsim: %s)\n')
# dcgm_errors.h message formats and their next steps, as DcgmError joins them (message, space, next step)
DBE_DETECTED = 'Detected {count} volatile double-bit ECC error(s) in GPU {gpu}. ' + DBE_NEXT
PAGES_PENDING = 'A pending retired page has been detected in GPU {gpu}. Monitor - this GPU can still perform workload'
UNCONTAINED = 'GPU had an uncontained error (XID 95) ' + DBE_NEXT
LINK_DOWN = "GPU {gpu}'s NvLink link {link} is currently down " + SYSTEM_TRIAGE
HEALTH_INFO_WIDTH = 54


def _health_node(value=None):
    return {'value': value, 'overflow': [], 'children': OrderedDict()}


def _health_child(node, name):
    if name not in node['children']:
        node['children'][name] = _health_node()
    return node['children'][name]


def _health_chunks(message):
    """DCGM's split of an incident text into rows of at most 54 characters: break before the word that
    does not fit (a word followed by ``.``, ``,`` or ``/`` ends where it stands, the mark is lost)."""
    text = message.replace('\n', ' ')
    if len(text) <= HEALTH_INFO_WIDTH:
        return [text]
    chunks = []
    start = end = 0
    while start < len(text):
        end += HEALTH_INFO_WIDTH
        if end >= len(text):
            end = len(text) - 1
        elif end != len(text) - 1:
            while text[end] != ' ' and text[end + 1] not in ' .,/':
                end -= 1
            while text[end] == ' ':
                end -= 1
        while start < len(text) and text[start] == ' ':
            start += 1
        if start >= len(text):
            break
        chunks.append(text[start:end + 1])
        start = end + 2
    return chunks


def health_incidents(model, views, watches):
    """[(GPU view, system, health, message)] in DCGM's order: per GPU, per system bit, per check."""
    uncontained = set(fault['args']['gpu'] for fault in fault_kinds.of_kind(model.state['faults'], 'xid') if fault['args']['code'] == 95)
    found = []
    for view in views:
        if 'nvlink' in watches:
            found.extend((view, 'nvlink', HEALTH_FAIL, LINK_DOWN.format(gpu=view.index, link=number))
                         for number, up in enumerate(view.links) if not up)
        if 'memory' in watches:
            if view.ecc_volatile_uncorrectable:
                found.append((view, 'memory', HEALTH_FAIL, DBE_DETECTED.format(count=view.ecc_volatile_uncorrectable, gpu=view.index)))
            if view.ecc_pending:
                found.append((view, 'memory', HEALTH_WARN, PAGES_PENDING.format(gpu=view.index)))
            if view.slot in uncontained:
                found.append((view, 'memory', HEALTH_FAIL, UNCONTAINED))
    return found


def health_report(incidents):
    """The check's output tree: header, ``Overall Health``, one block per GPU with incidents."""
    root = _health_node()
    overall = max([health for _view, _system, health, _message in incidents] or [0])
    root['children']['Overall Health'] = _health_node(HEALTH_NAMES[overall])
    labels = dict((name, label) for name, _fetch, label in HEALTH_SYSTEMS)
    grouped = OrderedDict()
    for view, system, health, message in incidents:
        grouped.setdefault(view.index, OrderedDict()).setdefault(system, []).append((health, message))
    for index, systems in grouped.items():
        entity = _health_child(_health_child(root, 'GPU'), str(index))
        errors = _health_child(entity, 'Errors')
        worst = 0
        for system, entries in systems.items():
            node = _health_child(errors, labels[system])
            system_health = max(health for health, _message in entries)
            worst = max(worst, system_health)
            node['value'] = HEALTH_NAMES[system_health]
            node['overflow'] = _health_chunks(', '.join(message for _health, message in entries))
        entity['value'] = HEALTH_NAMES[worst]
    return root


def _tree_rows(level, label, node, widths):
    left_area, right_area = widths[0] - 3, widths[1] - 4
    indent = ' ' * (level * 3 - 3) + '-> ' if level else ''
    rows = ['| %s | %s |\n' % ((indent + label).ljust(left_area), (node['value'] or '').ljust(right_area))]
    rows.extend('| %s | %s |\n' % ((' ' * level * 3).ljust(left_area), chunk.ljust(right_area)) for chunk in node['overflow'])
    for name, child in node['children'].items():
        rows.extend(_tree_rows(level + 1, name, child, widths))
    return rows


def render_tree(root, widths, header=None):
    """DcgmiOutputTree: a rule, the header and an ``=`` rule when there is one, the sections, a rule."""
    rule = '+%s+%s+\n' % ('-' * (widths[0] - 1), '-' * (widths[1] - 2))
    out = [rule]
    if header:
        out.append('| %s|\n' % header.ljust(widths[0] + widths[1] - 3))
        out.append(rule.replace('-', '='))
    for name, child in root['children'].items():
        out.extend(_tree_rows(0, name, child, widths))
    out.append(rule)
    return ''.join(out)


def _json_node(node):
    data = {}
    if node['value'] is not None:
        data['value'] = node['value']
    if node['overflow']:
        data['overflow'] = list(node['overflow'])
    if node['children']:
        data['children'] = dict((name, _json_node(child)) for name, child in node['children'].items())
    return data


def _json_lines(value, indent):
    """jsoncpp's styled layout (tabs, sorted keys, ``"key" :``), for diag -j and health -j alike.

    As jsoncpp's StyledWriter does, an array of scalars short enough for its right
    margin (74) stays on one line.
    """
    if isinstance(value, dict):
        lines = [indent + '{']
        keys = sorted(value)
        for position, key in enumerate(keys):
            comma = ',' if position < len(keys) - 1 else ''
            item = value[key]
            if isinstance(item, list) and item and not any(isinstance(entry, (dict, list)) for entry in item) \
                    and 4 + 2 * (len(item) - 1) + sum(len(_scalar(entry)) for entry in item) < 74:
                lines.append('%s\t"%s" : [ %s ]%s' % (indent, key, ', '.join(_scalar(entry) for entry in item), comma))
            elif isinstance(item, (dict, list)):
                lines.append('%s\t"%s" :' % (indent, key))
                nested = _json_lines(item, indent + '\t')
                nested[-1] += comma
                lines.extend(nested)
            else:
                lines.append('%s\t"%s" : %s%s' % (indent, key, _scalar(item), comma))
        return lines + [indent + '}']
    lines = [indent + '[']
    for position, item in enumerate(value):
        nested = _json_lines(item, indent + '\t') if isinstance(item, (dict, list)) else [indent + '\t' + _scalar(item)]
        if position < len(value) - 1:
            nested[-1] += ','
        lines.extend(nested)
    return lines + [indent + ']']


def render_health_json(root, header=None):
    document = {'body': dict((name, _json_node(child)) for name, child in root['children'].items())}
    if header:
        document['header'] = [header]
    return '\n'.join(_json_lines(document, '')) + '\n'


def _parse_health(args):
    """{'action', 'json', 'flags'} or an error text."""
    parsed = {'action': None, 'json': False, 'flags': None}
    actions = {'-c': 'check', '--check': 'check', '-f': 'fetch', '--fetch': 'fetch', '--clear': 'clear'}
    position = 0
    while position < len(args):
        arg = args[position]
        if arg in ('-j', '--json'):
            parsed['json'] = True
        elif arg in actions or arg in ('-s', '--set'):
            if parsed['action'] is not None:
                return 'only one of -s, -c, -f, --clear'
            parsed['action'] = actions.get(arg, 'set')
            if parsed['action'] == 'set':
                if position + 1 >= len(args):
                    return '-s needs flags'
                parsed['flags'] = args[position + 1]
                position += 1
        elif arg in ('-g', '--group', '-u', '--update-interval', '-m', '--max-keep-age', '--host') and position + 1 < len(args):
            position += 1
        else:
            return 'unknown argument %s' % arg
        position += 1
    return parsed if parsed['action'] else 'one of -s, -c, -f, --clear is required'


def _watches_from_flags(flags):
    """The systems ``-s FLAGS`` sets, or None for flags dcgmi rejects (unknown, repeated, ``a`` with others, none)."""
    if not flags or any(flag not in HEALTH_FLAGS for flag in flags) or len(set(flags)) != len(flags) or ('a' in flags and len(flags) > 1):
        return None
    chosen = set()
    for flag in flags:
        chosen.update(HEALTH_FLAGS[flag])
    return [name for name, _fetch, _label in HEALTH_SYSTEMS if name in chosen]


def health(ctx, model, args):
    parsed = _parse_health(args)
    if isinstance(parsed, str):
        ctx.error(HEALTH_USAGE % parsed)
        return 2
    if parsed['action'] in ('set', 'clear'):
        watches = [] if parsed['action'] == 'clear' else _watches_from_flags(parsed['flags'])
        if watches is None:
            ctx.error(HEALTH_USAGE % 'invalid flags detected')
            return 2
        data = ctx.load_state()
        data[HEALTH_WATCHES_KEY] = watches
        ctx.save_state(data)
        ctx.write(HEALTH_SET)
        return 0
    watches = model.state.get(HEALTH_WATCHES_KEY) or []
    if parsed['action'] == 'fetch':
        root = _health_node()
        for name, label, _check in HEALTH_SYSTEMS:
            root['children'][label] = _health_node('On' if name in watches else 'Off')
        ctx.write('Health monitor systems report\n')
        ctx.write(render_health_json(root) if parsed['json'] else render_tree(root, (18, 70)))
        return 0
    if not watches:
        ctx.write(NOT_ENABLED)
        return 255
    root = health_report(health_incidents(model, gpu_views.visible(model), watches))
    header = 'Health Monitor Report'
    ctx.write(render_health_json(root, header) if parsed['json'] else render_tree(root, (28, 60), header))
    return 0


def run(ctx, args):
    """dcgmi discovery -l | dcgmi diag -r N [-j] [-i IDS] | dcgmi health -s FLAGS|-c|-f|--clear [-j]."""
    model = ctx.host_model()
    if not gpu_views.has_gpus(model) or gpu_views.driver_check(ctx, model):
        # nv-hostengine cannot start without a working NVML (no driver, or a driver/library mismatch)
        ctx.error(CONNECT_ERROR)
        return 255
    if args[:1] == ['discovery'] and args[1:] in (['-l'], ['--list']):
        return discovery(ctx, gpu_views.visible(model), model.profile)
    if args[:1] == ['diag']:
        return diag(ctx, model, args[1:])
    if args[:1] == ['health']:
        return health(ctx, model, args[1:])
    ctx.error('Usage: dcgmi <discovery -l | diag -r N [-j] [-i IDS] | health -s FLAGS|-c|-f|--clear [-j]> '
              '(hwsim simulates these subcommands only)\n')
    return 2
