"""A stand-in for iproute2's ``dcb`` on an mlx5 netdev, for the unit tests of module rdma_qos.

There is no DCB netdev on the test machine to run the real ``dcb`` (iproute2 6.1) on, so this answers the few
commands the module runs, keeping each netdev's APP table and PFC state in a JSON file between runs:

    dcb -j app show dev DEV            {"dscp_prio":[[DSCP,PRIO],...]}, entries sorted by DSCP then priority, the key
                                       left out when there is none ({}) - dcb/dcb_app.c dcb_cmd_app_show(),
                                       dcb_app_table_sort(), dcb_app_print_filtered()
    dcb -j pfc show dev DEV            {"pfc_cap":8,"macsec_bypass":false,"delay":0,"prio_pfc":[8 booleans]} -
                                       dcb/dcb_pfc.c dcb_pfc_print(), dcb.c dcb_print_array_on_off() (print_on_off()
                                       gives JSON booleans, lib/json_print.c)
    dcb app replace dev DEV dscp-prio D:P ...
                                       add the entries that are new, then drop the other priorities of those DSCPs
                                       (dcb_cmd_app_replace(); dcb-app(8) "replace")
    dcb app flush dev DEV dscp-prio    drop every DSCP entry
    dcb pfc set dev DEV prio-pfc P:on|off ...

A netdev that is not in the state file has no DCB: ``Attribute read: Operation not supported`` on stderr, exit 1
(dcb.c perror("Attribute read") on the kernel's -EOPNOTSUPP for a netdev without dcbnl_ops).
"""
import json
import os


class FakeDcb(object):
    def __init__(self, state_path, netdevs):
        self.state_path = str(state_path)
        if not os.path.exists(self.state_path):
            self.save(dict((netdev, {'apps': [], 'pfc': [False] * 8}) for netdev in netdevs))

    def load(self):
        with open(self.state_path) as handle:
            return json.load(handle)

    def save(self, data):
        with open(self.state_path, 'w') as handle:
            json.dump(data, handle)

    def __call__(self, argv):
        args = list(argv[1:])
        as_json = args[:1] == ['-j']
        if as_json:
            args = args[1:]
        if len(args) < 4 or args[2] != 'dev':
            return 1, '', 'Usage: dcb [ OPTIONS ] OBJECT { COMMAND | help }\n'
        what, command, netdev, rest = args[0], args[1], args[3], args[4:]
        data = self.load()
        if netdev not in data:
            return 1, '', 'Attribute read: Operation not supported\n'
        port = data[netdev]
        if (what, command) == ('app', 'show') and as_json:
            apps = sorted(port['apps'])
            return 0, json.dumps({'dscp_prio': apps} if apps else {}, separators=(',', ':')) + '\n', ''
        if (what, command) == ('pfc', 'show') and as_json:
            out = {'pfc_cap': 8, 'macsec_bypass': False, 'delay': 0, 'prio_pfc': port['pfc']}
            return 0, json.dumps(out, separators=(',', ':')) + '\n', ''
        if (what, command) == ('app', 'replace') and rest[:1] == ['dscp-prio']:
            pairs = [[int(part) for part in item.split(':')] for item in rest[1:]]
            if not pairs or any(not 0 <= dscp <= 63 or not 0 <= prio <= 7 for dscp, prio in pairs):
                return 1, '', 'Invalid mapping %s\n' % ' '.join(rest[1:])
            keys = set(dscp for dscp, _prio in pairs)
            port['apps'] = [entry for entry in port['apps'] if entry[0] not in keys or entry in pairs] + \
                [pair for pair in pairs if pair not in port['apps']]
        elif (what, command) == ('app', 'flush') and rest == ['dscp-prio']:
            port['apps'] = []
        elif (what, command) == ('pfc', 'set') and rest[:1] == ['prio-pfc']:
            for item in rest[1:]:
                prio, state = item.split(':')
                port['pfc'][int(prio)] = state == 'on'
        else:
            return 1, '', 'What is "%s"?\n' % ' '.join(args)
        self.save(data)
        return 0, '', ''
