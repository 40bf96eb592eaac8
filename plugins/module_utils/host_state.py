# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What one ``systemctl show`` of a role's units says: which of them must be started or enabled.

The roles read their packages, key files and services in one module run (host_state_info) and run the change
tasks only where the read found a difference, so a re-run on a converged host starts no apt, copy or systemd
module. The decisions mirror ansible.builtin.systemd_service's, so a unit it would leave alone is left alone.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# The properties read, in the order systemctl is asked for them.
SYSTEMCTL_PROPERTIES = ('Id', 'LoadState', 'ActiveState', 'UnitFileState')

# systemd_service takes a unit as running when ActiveState is one of these (a unit that is starting is left to finish).
RUNNING_STATES = ('active', 'activating')

# systemd_service takes a unit as enabled when `systemctl is-enabled` exits 0 and prints none of enabled-runtime (gone
# at the next boot), indirect or alias: those it enables again. The UnitFileState property prints the same words.
ENABLED_STATES = ('enabled', 'static', 'generated', 'transient')


def parse_systemctl_show(text):
    """The units of ``systemctl show --property=...`` of several units, in the order printed (one block of
    ``Key=Value`` lines each, blocks split by blank lines). A unit systemd does not know still has its block
    (``LoadState=not-found``).
    """
    units = []
    block = {}
    for line in (text or '').splitlines() + ['']:
        if not line.strip():
            if block:
                units.append(block)
            block = {}
            continue
        key, sep, value = line.partition('=')
        if sep:
            block[key.strip()] = value.strip()
    return units


def _unit_id(name):
    return name if '.' in name else name + '.service'


def service_states(names, systemctl_show_stdout):
    """{name: {exists, running, enabled, active_state, unit_file_state}} for each asked ``name`` (``munge`` or
    ``munge.service``), from the text of one ``systemctl show`` of them all.

    systemctl prints one block per name, in the order asked, with the unit's real Id (an alias such as ``mysql``
    shows ``Id=mariadb.service``): the blocks are matched by order, or by Id when their count differs.
    """
    units = parse_systemctl_show(systemctl_show_stdout)
    if len(units) == len(names):
        by_name = dict(zip(names, units))
    else:
        ids = dict((unit.get('Id'), unit) for unit in units)
        by_name = dict((name, ids.get(_unit_id(name), {})) for name in names)
    states = {}
    for name in names:
        unit = by_name[name]
        load = unit.get('LoadState', 'not-found')
        active = unit.get('ActiveState', 'inactive')
        unit_file = unit.get('UnitFileState', '')
        states[name] = {
            'exists': load not in ('not-found', ''),
            'running': active in RUNNING_STATES,
            'enabled': unit_file in ENABLED_STATES,
            'active_state': active,
            'unit_file_state': unit_file,
        }
    return states


def services_to_start(states):
    """The names, in their order, that are not running or not enabled at boot: the ones a start-and-enable task
    must act on. A unit systemd does not know is listed too, so that task fails on it as it would have."""
    return [name for name, state in states.items() if not (state['running'] and state['enabled'])]
