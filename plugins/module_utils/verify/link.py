# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Link quality: each checked port's error counters before and after the bandwidth tests, and its BER.

A marginal optic trains 4X at full speed and passes a short perftest thanks to
FEC; what gives it away is its error counters rising while traffic runs, and
its effective BER. ``decide_link`` turns the two ``ib_counters_info`` reads of
every node (before verify_perftest, after verify_nccl) into ``ib.link_errors``,
``ib.ber`` and, on RoCE ports, ``ib.roce_drops``; each result names both ends of
the link (the HCA port and the switch port the fabric read found it cabled to).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils.verify._common import failed, ran
from ansible_collections.aicluster.infra.plugins.module_utils.verify.results import new_result

# counters whose rise fails a link (ib.link_errors): InfiniBand PortCounters names, RoCE physical-layer names
# (PortRcvSwitchRelayErrors is not one: an HCA counts multicast it is not a member of there, as the real capture
# perfquery/brev-a100-cx6-hdr-plain-C-mlx5_0-lid1-port0.txt shows (6, every other error counter 0); ibqueryerrors
# suppresses it by default as "the only common error" (rdma-core ibqueryerrors.c; real capture
# ibqueryerrors/linux-rdma-ml-sx6036-mlx4-saturated-xmitwait.txt: "## Suppressed: PortRcvSwitchRelayErrors"), and
# fabric.switch_errors leaves it out on the switch side. It is kept in raw as evidence.)
IB_ERRORS = ('SymbolErrorCounter', 'LinkErrorRecoveryCounter', 'LinkDownedCounter', 'PortRcvErrors', 'PortRcvRemotePhysicalErrors',
             'PortXmitDiscards', 'PortXmitConstraintErrors', 'PortRcvConstraintErrors',
             'LocalLinkIntegrityErrors', 'ExcessiveBufferOverrunErrors')
IB_EVIDENCE = ('PortRcvSwitchRelayErrors',)
ROCE_PHY_ERRORS = ('rx_symbol_err_phy', 'rx_crc_errors_phy', 'link_down_events_phy')
# ib.roce_drops: a lossless class that drops, packets lost on the wire ({prio}: verify_ib_roce_priority)
ROCE_DROPS = ('rx_prio{prio}_discards', 'rx_discards_phy', 'out_of_sequence', 'packet_seq_err')
# kept as evidence in raw, never judged: normal under load
ROCE_EVIDENCE = ('rx_prio{prio}_pause', 'tx_prio{prio}_pause', 'np_cnp_sent', 'np_ecn_marked_roce_packets', 'rp_cnp_handled')
DEFAULT_BER_MAX = 1e-12


def _ports(observation):
    """HCA -> the port entry of one ib_counters_info result (None when it failed or did not run)."""
    if not ran(observation) or failed(observation):
        return None
    return dict((entry.get('hca'), entry) for entry in observation.get('ports') or [])


def _peer(peers, node, hca):
    """(short text for the subject, long text for the message) of the switch port HCA is cabled to."""
    found = ((peers or {}).get(node) or {}).get(hca) or {}
    if not found:
        return 'switch port unknown', 'a switch port the fabric read did not show'
    # the subject by GUID (unmanaged switches all print one name), the message with the switch's name too
    return ('%s port %s' % (found.get('switch_guid') or found.get('switch'), found.get('switch_port')),
            found.get('text') or found.get('switch'))


def _rises(before, after, names):
    """name -> rise of the counters both reads have; a counter lower after than before was reset in between: its
    after value is the rise. Also the names that were reset."""
    rises, reset = {}, []
    for name in names:
        if name not in before or name not in after:
            continue
        rise = after[name] - before[name]
        if rise < 0:
            reset.append(name)
            rise = after[name]
        rises[name] = rise
    return rises, reset


def _not_read(entry_before, entry_after):
    """Why a port's counters could not be compared, or None."""
    for when, entry in (('before', entry_before), ('after', entry_after)):
        if entry is None:
            return 'the port was not read %s the tests' % when
        if entry.get('missing') and not entry.get('counters'):
            return '%s not installed' % ', '.join(entry['missing'])
        if not entry.get('counters'):
            return 'no counter read %s the tests: %s' % (when, '; '.join(entry.get('errors') or ['nothing printed']))
    return None


def _skipped(check, subject, threshold, reason, **extra):
    return new_result(check, subject, None, threshold, True, 'not checked: %s' % reason, skipped=reason, **extra)


# Counters that count packets dropped for lack of buffer, not damaged ones (NVIDIA, "Understanding mlx5 ethtool
# Counters": rx_discards_phy "dropped due to lack of buffers on a physical port ... the adapter is congested",
# rx_prio<N>_discards per priority, rx_out_of_buffer "receive queue had no software buffers"): congestion, on RoCE
# most often PFC off on the priority the traffic lands on, not an optic.
OPTIC_ADVICE = 'a marginal optic or cable: clean or replace it, reseat both ends'
BUFFER_ADVICE = ('dropped for lack of buffer, not damaged: congestion the port could not pause (on RoCE PFC off on the '
                 'priority the traffic lands on: see net.roce_qos and net.lossless) or a host that does not drain its '
                 'queues (rx_out_of_buffer)')


def _is_buffer_drop(name):
    return name in ('rx_discards_phy', 'rx_out_of_buffer') or (name.startswith('rx_prio') and name.endswith('_discards'))


def _advice(names):
    buffer = [name for name in names if _is_buffer_drop(name)]
    if len(buffer) == len(names):
        return BUFFER_ADVICE
    if buffer:
        return '%s; %s: %s' % (OPTIC_ADVICE, ', '.join(sorted(buffer)), BUFFER_ADVICE)
    return OPTIC_ADVICE


def _judge_rise(check, subject, what, rises, reset, limits, tested, extra):
    over = dict((name, rise) for name, rise in rises.items() if rise > int(limits.get(name, 0)))
    rising = dict((name, rise) for name, rise in rises.items() if rise)
    note = ' (the bandwidth tests ran in between)' if tested else ' (no bandwidth test ran on this node in between)'
    if reset:
        note += '; reset between the reads: %s' % ', '.join(reset)
    if over:
        return new_result(check, subject, over, dict((name, int(limits.get(name, 0))) for name in over), False,
                          '%s counted %s between the two reads%s; %s'
                          % (what, ', '.join('%s +%d' % (name, rise) for name, rise in sorted(over.items())), note,
                             _advice(list(over))),
                          rises=rising, **extra)
    if not tested:
        # no traffic crossed the link between the reads: quiet counters prove nothing, and a node drained for this
        # check stays drained (the gate does not resume a drain whose check was not made)
        return _skipped(check, subject, dict((name, int(limits.get(name, 0))) for name in rises) or 0,
                        'no bandwidth test ran on this node between the two reads, and no counter rose', rises=rising, **extra)
    return new_result(check, subject, 0, dict((name, int(limits.get(name, 0))) for name in rises) or 0, True,
                      '%s: none of %d counters rose beyond its limit between the two reads%s%s'
                      % (what, len(rises), (' (%s)' % ', '.join('%s +%d' % item for item in sorted(rising.items())))
                         if rising else '', note), rises=rising, **extra)


def _ber_result(subject, what, entry_before, entry_after, ber_max, extra):
    entry = entry_after or entry_before
    if entry is None:
        return _skipped('ib.ber', subject, ber_max, 'the port was not read', **extra)
    ber = entry.get('ber') or {}
    if 'effective_ber' not in ber or ber['effective_ber'] is None:
        if 'mlxlink' in (entry.get('missing') or []):
            reason = 'mlxlink not installed (NVIDIA MFT or mstflint): the BER was not read'
        else:
            reason = 'mlxlink printed no Effective Physical BER (%s)' % ('; '.join(entry.get('errors') or []) or 'no error')
        return _skipped('ib.ber', subject, ber_max, reason, **extra)
    value = float(ber['effective_ber'])
    evidence = dict((key, ber[key]) for key in ('raw_ber', 'symbol_ber', 'effective_errors') if key in ber)
    ok = value <= float(ber_max)
    shown = '%.0e' % value if value >= 1e-200 else 'none counted'
    return new_result('ib.ber', subject, value, float(ber_max), ok,
                      '%s effective BER %s%s' % (
                          what, shown, ' (at most %g)' % float(ber_max) if ok else
                          ', above %g: a marginal optic or cable that FEC still hides; clean or replace it' % float(ber_max)),
                      ber=evidence, **extra)


def _raw_port(before, after, names):
    """What results.json keeps of one port: the judged counters that are not zero, before and after, and the BER."""
    def keep(entry):
        return dict((name, value) for name, value in ((entry or {}).get('counters') or {}).items() if name in names and value)
    return {'before': keep(before), 'after': keep(after), 'ber': ((after or before) or {}).get('ber') or {},
            'missing': sorted(set(((before or {}).get('missing') or []) + ((after or {}).get('missing') or []))),
            'errors': ((before or {}).get('errors') or []) + ((after or {}).get('errors') or []),
            'saturating': bool((before or {}).get('saturating') or (after or {}).get('saturating'))}


def evaluate_node(node, before, after, expected):
    """The link-quality results of one node: ``before``/``after`` are HCA -> port entry (None: not read)."""
    checks = expected.get('checks') or ('ib.link_errors', 'ib.ber', 'ib.roce_drops')
    limits = expected.get('error_max') or {}
    prio = int(expected.get('roce_priority', 3))
    ber_max = expected.get('ber_max') if expected.get('ber_max') not in (None, '') else DEFAULT_BER_MAX
    active = expected.get('active', True)
    tested = str(active).lower() not in ('false', '0', 'no', 'none') and node not in (expected.get('busy') or [])
    hcas = list((expected.get('checked') or {}).get(node) or sorted(set(before or {}) | set(after or {})))
    port = int(expected.get('port') or 1)
    roce_drops = [name.format(prio=prio) for name in ROCE_DROPS]
    evidence = [name.format(prio=prio) for name in ROCE_EVIDENCE]
    results, raw = [], {}
    for hca in hcas:
        entry_before, entry_after = (before or {}).get(hca), (after or {}).get(hca)
        short, long_text = _peer(expected.get('peers'), node, hca)
        subject = '%s:%d (%s)' % (hca, port, short)
        what = '%s port %d (cabled to %s)' % (hca, port, long_text)
        extra = {'peer': long_text}
        ethernet = ((entry_after or entry_before) or {}).get('link_layer') == 'Ethernet'
        errors = ROCE_PHY_ERRORS if ethernet else IB_ERRORS
        raw[hca] = _raw_port(entry_before, entry_after, errors + tuple(roce_drops) + tuple(evidence) + IB_EVIDENCE)
        reason = _not_read(entry_before, entry_after)
        if 'ib.link_errors' in checks:
            if reason:
                results.append(_skipped('ib.link_errors', subject, 0, reason, **extra))
            else:
                rises, reset = _rises(entry_before['counters'], entry_after['counters'], errors)
                results.append(_judge_rise('ib.link_errors', subject, what, rises, reset, limits, tested, extra))
        if ethernet and 'ib.roce_drops' in checks:
            if reason:
                results.append(_skipped('ib.roce_drops', subject, 0, reason, **extra))
            else:
                rises, reset = _rises(entry_before['counters'], entry_after['counters'], roce_drops)
                results.append(_judge_rise('ib.roce_drops', subject, what, rises, reset, limits, tested, extra))
        if 'ib.ber' in checks and expected.get('ber_enabled', True):
            results.append(_ber_result(subject, what, entry_before, entry_after, ber_max, extra))
    return results, raw


def decide_link(observations, expected):
    """The verify_ib role's link-quality decision, made once after the bandwidth tests.

    ``observations``: node -> {``before``, ``after``: ib_counters_info results
    (absent, skipped or failed: that read is missing)}. ``expected``:
    ``checked`` (node -> HCAs in rail order, from verify_ib), ``port``,
    ``peers`` (node -> HCA -> its switch port, from the fabric decision),
    ``error_max`` (counter -> allowed rise; 0 for any other), ``ber_max``,
    ``ber_enabled``, ``roce_priority``, ``active`` (an active test ran between
    the reads: false in check mode), ``busy`` (nodes the active tests skipped) and
    ``checks``. A rise is judged either way (a link that counts errors while idle
    is bad too); the message says when no test ran in between. Returns the outcome the gate collects:
    ``{'nodes', 'raw'}``; a node neither read sees no result.
    """
    nodes, raw = {}, {}
    for node, observed in sorted((observations or {}).items()):
        before, after = _ports((observed or {}).get('before')), _ports((observed or {}).get('after'))
        if before is None and after is None:
            continue
        nodes[node], raw[node] = evaluate_node(node, before, after, expected)
    return {'nodes': nodes, 'raw': raw}
