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
