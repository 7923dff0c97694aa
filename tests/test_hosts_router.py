"""The [router] table of a hosts file and what the middlebox on real hosts makes of it
before it connects: one line with the fix for every mistake, R's roles and cores, the
paths offlab-fwd as R refuses."""

import pytest

from offlab.hosts.hostsfile import HostsFileError, parse
from offlab.hosts.session import RemoteSession
from offlab.records import Params
from offlab.topology import TopologyError
from offlab.topology.middlebox import Middlebox
from offlab.topology.remote_middlebox import OnServers


def _doc(**router):
    return {"sender": {"ssh": "lab@a", "interface": "ens1f0", "address": "192.0.2.1", "peer": "198.51.100.2",
                       "app_core": 2},
            "receiver": {"ssh": "lab@b", "interface": "ens1f0", "address": "198.51.100.2", "peer": "192.0.2.1",
                         "app_core": 3},
            "router": {"ssh": "lab@r", "interfaces": ["ens1f0", "ens1f1"], "app_core": 1, **router}}


def test_a_router_table_makes_a_third_role():
    hosts = parse(_doc(sudo=True), "h.toml")
    assert hosts.router is not None and hosts.router.interfaces == ("ens1f0", "ens1f1")
    assert hosts.router.interface == "ens1f0" and hosts.router.sudo is True
    assert list(hosts.roles()) == ["sender", "receiver", "router"]
    assert hosts.describe().endswith("router lab@r (ens1f0, ens1f1)")
    assert parse({k: v for k, v in _doc().items() if k != "router"}, "h.toml").router is None


@pytest.mark.parametrize("change, text", [
    ({"interfaces": ["ens1f0"]}, "[router]: interfaces = ['ens1f0'] must be two different interfaces"),
    ({"interfaces": ["ens1f0", "ens1f0"]}, "must be two different interfaces"),
    ({"interfaces": ["ens1f0", "../etc"]}, "interface '../etc' is not a Linux interface name"),
    ({"interface": "ens1f0"}, "[router]: unknown key 'interface'; allowed: app_core, interfaces, ssh, sudo"),
    ({"app_core": "1"}, "[router]: app_core = '1' must be a core number"),
    ({"sudo": "yes"}, "[router]: sudo must be true or false"),
])
def test_router_mistakes_are_one_line_with_the_fix(change, text):
    with pytest.raises(HostsFileError) as caught:
        parse(_doc(**change), "h.toml")
    assert "\n" not in str(caught.value) and text in str(caught.value)


def test_the_middlebox_roles_are_the_hosts_app_cores():
    hosts = parse(_doc(), "h.toml")
    forwarded = Middlebox(1500, Params(path="a-b", router="kernel"), OnServers(RemoteSession(hosts)))
    assert forwarded.roles == {"sender": 2, "receiver": 3, "forwarder": 1}
    assert forwarded.role_hosts == {"sender": "a", "receiver": "b", "forwarder": "r"}
    assert forwarded.nic_interfaces() == {"a": ["ens1f0"], "r": ["ens1f0", "ens1f1"], "b": ["ens1f0"]}
    assert forwarded.router_devices() == ("ens1f0", "ens1f1")  # toward A, toward B: the file's order
    assert forwarded.forwarder.core == 1 and forwarded.forwarder.scenario.endswith("on R (lab@r)")
    here = Middlebox(1500, Params(path="a-b", router="kernel"))  # the same topology, nodes in namespaces
    assert here.roles == {"sender": 0, "receiver": 1, "forwarder": 0} and here.role_hosts == {}
    assert here.router_devices() == ("ofl-ar1", "ofl-rb0") and here.nic_interfaces() == {}
    terminated = Middlebox(1500, Params(path="r-a", router="kernel"), OnServers(RemoteSession(hosts)))
    assert terminated.roles == {"sender": 1, "receiver": 2}
    with pytest.raises(TopologyError, match="offlab-fwd as R only forwards; path a-r ends on R"):
        Middlebox(1500, Params(path="a-r", router="offlab-fwd"), OnServers(RemoteSession(hosts)))
    with pytest.raises(TopologyError, match="needs a \\[router\\] table in h.toml"):
        Middlebox(1500, Params(path="a-b"), OnServers(RemoteSession(parse({k: v for k, v in _doc().items()
                                                                         if k != "router"}, "h.toml"))))


def test_the_middlebox_report_says_what_r_is_on_real_hosts():
    from offlab.report.studies.middlebox import INTRO, intro
    assert intro(False) == INTRO and "veth" in INTRO
    assert "veth" not in intro(True) and "offlab-fwd pinned to R's app_core" in intro(True)


def test_the_confirmation_names_the_router_and_what_changes_there():
    from offlab.hosts.router import planned_router_changes
    from offlab.run.plan import load
    cases = load("middlebox").cases
    [line] = planned_router_changes(parse(_doc(), "h.toml"), cases, allow_forwarding=True)
    assert line.startswith("router lab@r, interfaces ens1f0, ens1f1: MTU set to 1500")
    assert "tcp-segmentation-offload" in line and "offlab-fwd copied" in line
    assert "net.ipv4.ip_forward set to 1 if it is 0" in line
    assert "ip_forward" not in planned_router_changes(parse(_doc(), "h.toml"), cases, allow_forwarding=False)[0]
    assert planned_router_changes(parse({k: v for k, v in _doc().items() if k != "router"}, "h.toml"),
                                  cases, True) == []


def test_the_confirmation_lists_for_a_and_b_only_what_the_plan_changes_there():
    """The middlebox toggles R's features, not A's or B's, and steers nothing on them;
    a path that ends on R runs no iperf3 on the host it leaves out."""
    from offlab.run.confirm import planned_changes
    from offlab.run.plan import load, parse as parse_plan
    hosts = parse(_doc(), "h.toml")
    middlebox = load("middlebox").cases
    for line in planned_changes(hosts, middlebox, True):
        assert "MTU set to 1500" in line and "ethtool" not in line and "RPS" not in line, line
        assert "iperf3" in line  # the plan's paths reach both A and B
    terminated = parse_plan('name = "t"\nruns = 1\nduration = 1.0\nscenarios = ["middlebox"]\npaths = ["a-r"]\n'
                            'router = ["kernel"]\nmatrix = ["tso"]\nmtus = [1500]\ntraffic = ["tcp"]\n', "t").cases
    sender, receiver = planned_changes(hosts, terminated, True)
    assert "iperf3" in sender and "iperf3" not in receiver
    pair = [c for c in load("quick").cases if c.scenario != "middlebox"]
    sender, receiver = planned_changes(hosts, [*pair, *middlebox], True)
    assert "ethtool features turned off and back on: " in sender
    off_tx = {f for c in pair if c.profile.side in ("both", "tx") for f, on in c.profile.features.items() if not on}
    assert all(f in sender for f in off_tx)
