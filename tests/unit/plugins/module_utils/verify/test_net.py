# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""verify/net.py: the MTU holds end to end, judged from the registered ping."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicluster.infra.plugins.module_utils.verify import net


def test_mtu_pass_and_fail():
    ok = net.evaluate_net({'rc': 0, 'stdout': '3 packets transmitted, 3 received', 'stderr': ''},
                          {'mtu': 9000, 'peer': 'gpu02'})[0]
    assert ok['passed'] and ok['measured'] == 9000 and ok['subject'] == 'gpu02'
    bad = net.evaluate_net({'rc': 1, 'stdout': 'PING gpu02 (10.0.0.2) 8972(9000) bytes of data.\n'
                                               'ping: local error: message too long, mtu=1500\n', 'stderr': ''},
                           {'mtu': 9000, 'peer': 'gpu02'})[0]
    assert not bad['passed'] and bad['measured'] == 1500 and 'message too long' in bad['message']
    assert 'ping -M do -s 8972' in bad['message']


def test_mtu_ping_that_could_not_start_says_why():
    bad = net.evaluate_net({'rc': 2, 'msg': 'ping: gpu09: Name or service not known'}, {'mtu': '4096', 'peer': 'gpu09'})[0]
    assert bad['passed'] is False and bad['measured'] is None and bad['threshold'] == 4096
    assert 'Name or service not known' in bad['message'] and 'ping -M do -s 4068' in bad['message']
