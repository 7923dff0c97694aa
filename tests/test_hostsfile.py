"""The hosts file: one line naming the file, the host and the fix for every mistake; and
what the real-host topology makes of it (roles, the DUT layout) before it connects."""

import pytest

from offlab.hosts.hostsfile import HostsFileError, parse
from offlab.records import Params
from offlab.topology import TopologyError
from offlab.hosts.session import RemoteSession
from offlab.topology.remote import RemotePair


def _doc(**sender_extra):
    return {"sender": {"ssh": "lab@s1", "interface": "ens1f0", "address": "192.0.2.1", "peer": "192.0.2.2",
                       "app_core": 2, **sender_extra},
            "receiver": {"ssh": "lab@s2", "interface": "ens1f0", "address": "192.0.2.2", "peer": "192.0.2.1",
                         "app_core": 3, "irq_core": 5, "pin_irqs": True}}


def test_a_good_file_describes_its_hosts():
    hosts = parse(_doc(), "h.toml")
    assert hosts.describe() == "ssh: sender lab@s1 (ens1f0), receiver lab@s2 (ens1f0)"
    assert hosts.hosts["receiver"].irq_core == 5 and hosts.hosts["sender"].sudo is False


@pytest.mark.parametrize("change, text", [
    ({"adress": "x"}, "h.toml: [sender]: unknown key 'adress'"),
    ({"address": "not-an-ip"}, "[sender]: address = 'not-an-ip' is not an IP address"),
    ({"app_core": -1}, "[sender]: app_core = -1 must be a core number"),
    ({"ssh": "-oProxyCommand=x"}, "[sender]: ssh = '-oProxyCommand=x' must be a non-empty name"),
    ({"pin_irqs": True}, "[sender]: pin_irqs needs irq_core"),
    ({"peer": "192.0.2.9"}, "each host's peer must be the other's address"),
])
def test_mistakes_are_one_line_with_the_fix(change, text):
    with pytest.raises(HostsFileError) as caught:
        parse(_doc(**change), "h.toml")
    assert "\n" not in str(caught.value) and text in str(caught.value)


def test_missing_tables_and_keys():
    with pytest.raises(HostsFileError, match="no \\[receiver\\] table"):
        parse({"sender": _doc()["sender"]}, "h.toml")
    doc = _doc()
    del doc["sender"]["interface"]
    with pytest.raises(HostsFileError, match="missing key 'interface'"):
        parse(doc, "h.toml")


def test_the_dut_layout_on_real_hosts_uses_the_app_and_irq_cores():
    hosts = parse(_doc(), "h.toml")
    dut = RemotePair("bare", 1500, Params(dut="rcv"), RemoteSession(hosts))
    assert dut.roles == {"dut-app": 3, "dut-softirq": 5, "generator": 2}
    assert dut.role_hosts == {"dut-app": "rx", "dut-softirq": "rx", "generator": "tx"}
    with pytest.raises(TopologyError, match="set irq_core and pin_irqs = true for \\[sender\\]"):
        RemotePair("bare", 1500, Params(dut="snd"), RemoteSession(hosts))
    with pytest.raises(TopologyError, match="needs local namespaces"):
        RemotePair("middlebox", 1500, Params(path="a-b"), RemoteSession(hosts))


def test_the_mtu_wire_on_real_hosts_holds_the_senders_segmentation_off():
    """The receiver sequence over --hosts: the sender's TSO/USO held off as in the lab
    (and, under VXLAN, the tunnel's segmentation on the test interface), the receiver free."""
    from types import SimpleNamespace
    hosts = parse(_doc(), "h.toml")
    pair = RemotePair("vxlan", 1500, Params(wire="mtu"), RemoteSession(hosts))
    pair.remote = {name: SimpleNamespace(spec=hosts.hosts[role]) for name, role in (("tx", "sender"), ("rx", "receiver"))}
    held = {(i.side, i.device): dict(i.pinned) for i in pair.offload_interfaces()}
    assert held[("tx", "ofl-tn0")] == {"tcp-segmentation-offload": False, "tx-udp-segmentation": False}
    assert held[("tx", "ens1f0")]["tx-udp_tnl-segmentation"] is False
    assert held[("rx", "ofl-tn0")] == {} and held[("rx", "ens1f0")] == {}
    bare = RemotePair("bare", 1500, Params(), RemoteSession(hosts))
    bare.remote = pair.remote
    assert all(not i.pinned for i in bare.offload_interfaces())


def test_the_test_network_defaults_to_the_labs_values():
    from offlab.topology import guests, tunnel
    from offlab.hosts.ports import DEFAULT_PORT
    net = parse(_doc(), "h.toml").test_network
    assert (net.vni, net.vxlan_port, net.iperf3_port) == (tunnel.VNI, tunnel.VXLAN_PORT, DEFAULT_PORT)
    assert net.inner_v4 == tunnel.INNER_V4
    assert net.guest_addresses == guests.ADDRESS and net.guest_prefixlen == guests.PREFIXLEN
    assert (guests.VNI, guests.DSTPORT) == (net.vni, net.vxlan_port)


@pytest.mark.parametrize("table, text", [
    ({"vni": 0}, "[test_network]: vni = 0 must be a whole number from 1 to 16777215"),
    ({"vni": 16777216}, "vni = 16777216 must be a whole number from 1 to 16777215"),
    ({"vni": True}, "vni = True must be a whole number"),
    ({"vxlan_port": 65536}, "vxlan_port = 65536 must be a whole number from 1 to 65535"),
    ({"iperf3_port": "5201"}, "iperf3_port = '5201' must be a whole number from 1 to 65535"),
    ({"prefix": "10.202.0.1/24"}, "prefix = '10.202.0.1/24' must be an IPv4 network from /8 to /30"),
    ({"prefix": "10.0.0.0/31"}, "prefix = '10.0.0.0/31' must be an IPv4 network from /8 to /30"),
    ({"prefix": "fd00::/64"}, "prefix = 'fd00::/64' must be an IPv4 network"),
    ({"guest_prefix": 10}, "guest_prefix = 10 must be an IPv4 network"),
    ({"prefix": "10.214.0.0/16"}, "prefix 10.214.0.0/16 and guest_prefix 10.214.0.0/24 overlap"),
    ({"vnid": 7}, "[test_network]: unknown key 'vnid'; allowed: vni, vxlan_port, prefix"),
])
def test_test_network_mistakes_are_one_line_naming_the_key(table, text):
    with pytest.raises(HostsFileError) as caught:
        parse({**_doc(), "test_network": table}, "h.toml")
    assert "\n" not in str(caught.value) and text in str(caught.value)


CUSTOM = {"vni": 4242, "vxlan_port": 8472, "prefix": "172.30.8.0/29", "guest_prefix": "172.30.9.0/24",
          "iperf3_port": 5301}


class _Host:
    """Records the `ip` commands a topology runs (each succeeds)."""

    def __init__(self, spec):
        from types import SimpleNamespace
        self.spec, self.commands = spec, []
        self.journal = SimpleNamespace(before_link=lambda *args: None)

    def ip(self, *args, check=True):
        from types import SimpleNamespace
        self.commands.append(" ".join(args))
        return SimpleNamespace(returncode=0, stdout="", stderr="")

    def add_address(self, device, address, prefixlen):
        self.ip("addr", "add", f"{address}/{prefixlen}", "dev", device)

    def set_link(self, device):
        self.ip("link", "set", "dev", device, "up")


def test_the_remote_tunnel_uses_the_configured_vni_port_and_prefix():
    from types import SimpleNamespace
    hosts = parse({**_doc(), "test_network": CUSTOM}, "h.toml")
    pair = RemotePair("vxlan", 1500, Params(), RemoteSession(hosts))
    pair.remote = {name: _Host(hosts.hosts[role]) for name, role in (("tx", "sender"), ("rx", "receiver"))}
    pair.journals = {name: SimpleNamespace(add=lambda change: None) for name in pair.remote}
    pair._build_tunnel()
    tx = pair.remote["tx"].commands
    assert any("type vxlan id 4242 " in c and "dstport 8472" in c for c in tx)
    assert "addr add 172.30.8.1/29 dev ofl-tn0" in tx
    assert "addr add 172.30.8.2/29 dev ofl-tn0" in pair.remote["rx"].commands
    assert (pair.sender.address, pair.receiver.address) == ("172.30.8.1", "172.30.8.2")
    assert pair.iperf3_port == 5301
    assert RemotePair("bare", 1500, Params(), RemoteSession(parse(_doc(), "h.toml"))).iperf3_port == 5201


def test_the_confirmation_and_the_guests_plan_name_the_configured_values():
    from offlab.run.confirm import planned_changes
    from offlab.run.plan import load
    from offlab.topology.remote_guests import planned_changes as guest_changes
    hosts = parse({**_doc(), "test_network": CUSTOM}, "h.toml")
    cases = load("guests").cases
    said = " ".join(planned_changes(hosts, [*cases, *_vxlan_cases()], True))
    assert "inner 172.30.8.0/29, VXLAN VNI 4242 on UDP 8472" in said and "iperf3 (port 5301" in said
    receiver = " ".join(guest_changes("receiver", hosts.hosts["receiver"], cases, hosts.test_network))
    assert "device ofl-vx0 (VNI 4242, UDP 8472)" in receiver and "address 172.30.9.2/24 added" in receiver


def _vxlan_cases():
    from offlab.run.plan import parse as parse_plan
    plan = ('name = "v"\nruns = 1\nduration = 1.0\nmtus = [1500]\nscenarios = ["vxlan"]\n'
            'traffic = ["tcp"]\nsequences = ["all-on"]\n')
    return parse_plan(plan, "p").cases


def test_the_dry_run_names_the_configured_values():
    from offlab.run.dryrun import _other_changes
    hosts = parse({**_doc(), "test_network": CUSTOM}, "h.toml")
    said = " ".join(_other_changes(None, hosts.hosts["receiver"], "receiver", _vxlan_cases(), [], hosts, True))
    assert "device ofl-tn0 created and removed (vxlan; inner 172.30.8.0/29, VXLAN VNI 4242 on UDP 8472)" in said
    assert "iperf3 -s (port 5301)" in said
