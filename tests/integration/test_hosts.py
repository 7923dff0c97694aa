"""A local namespace as a host: commands, processes, files and links inside it, and
nothing left after it is removed."""

from pyroute2 import netns

from offlab.hosts import LocalNamespace, connect_veth


def test_a_namespace_host_runs_reads_writes_and_configures_links():
    a, b = LocalNamespace("hta").create(), LocalNamespace("htb").create()
    try:
        assert a.namespace.startswith("ofl-") and a.namespace in netns.listnetns()
        assert [l["ifname"] for l in a.links()] == ["lo"]  # its own view, not the machine's
        connect_veth(a, "ofl-hta0", b, "ofl-htb0")
        a.set_link("ofl-hta0", mtu=4000)
        b.set_link("ofl-htb0", mtu=4000)
        a.add_address("ofl-hta0", "10.231.0.1", 24)
        b.add_address("ofl-htb0", "10.231.0.2", 24)
        assert "10.231.0.1" in a.addresses("ofl-hta0") and b.has_link("ofl-htb0")
        assert {l["ifname"]: l["mtu"] for l in b.links()}["ofl-htb0"] == 4000
        assert '"dev":"ofl-hta0"' in a.ip("-j", "route", "get", "10.231.0.2").stdout
        assert "ofl-hta0" in a.read_file("/proc/net/dev") and "ofl-hta0" not in b.read_file("/proc/net/dev")
        a.write_file("/sys/class/net/ofl-hta0/queues/rx-0/rps_cpus", "1\n")
        assert int(a.read_file("/sys/class/net/ofl-hta0/queues/rx-0/rps_cpus").strip(), 16) == 1
        sleeper = b.spawn(["sleep", "30"])
        b.stop(sleeper)
        assert sleeper.returncode is not None
        a.delete_link("ofl-hta0")
        assert not b.has_link("ofl-htb0")  # the peer goes with it
    finally:
        a.remove()
        b.remove()
    assert a.namespace not in netns.listnetns() and b.namespace not in netns.listnetns()
