"""Real namespaces: build, check what exists through the hosts, tear down, check
nothing is left."""

import subprocess
import time
from pathlib import Path

import pytest
from pyroute2 import netns

from offlab.hosts.naming import namespace_name
from offlab.topology import build, our_namespaces, sweep_leftovers


def link_mtus(host) -> dict[str, int]:
    return {link["ifname"]: link["mtu"] for link in host.links()}


@pytest.mark.parametrize("scenario", ["bare", "vxlan"])
@pytest.mark.parametrize("mtu", [1500, 9000])
def test_up_and_down_leaves_nothing(scenario, mtu):
    assert our_namespaces() == []
    with build(scenario, mtu) as topo:
        names = [h.namespace for h in topo.hosts.values()]
        assert sorted(our_namespaces()) == sorted(names)
        assert all(n.startswith("ofl-") for n in names)
        assert (topo.sender.host.name, topo.receiver.host.name) == ("tx", "rx")
        tx, rx = link_mtus(topo.sender.host), link_mtus(topo.receiver.host)
        assert tx["ofl-v0"] == mtu and rx["ofl-v1"] == mtu
        if scenario == "vxlan":
            assert tx["ofl-tn0"] == mtu - 50 and rx["ofl-tn1"] == mtu - 50
        assert all(name == "lo" or name.startswith("ofl-") for name in {**tx, **rx})
        rps = topo.receiver.host.read_file("/sys/class/net/ofl-v1/queues/rx-0/rps_cpus")
        assert int(rps.strip().replace(",", ""), 16) == 1 << topo.receiver.core
    assert our_namespaces() == []


def test_teardown_when_the_body_raises():
    with pytest.raises(RuntimeError):
        with build("vxlan", 1500):
            assert len(our_namespaces()) == 2
            raise RuntimeError("boom")
    assert our_namespaces() == []


def test_sweep_removes_only_dead_owners():
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = namespace_name("tx", pid=dead.pid)
    live = namespace_name("keep")  # this process: alive
    netns.create(stale)
    netns.create(live)
    try:
        removed = sweep_leftovers()
        remaining = netns.listnetns()
        assert stale in removed and stale not in remaining
        assert live in remaining
    finally:
        for name in (stale, live):
            if name in netns.listnetns():
                netns.remove(name)


def test_sweep_stops_processes_left_in_a_stale_namespace():
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = namespace_name("rx", pid=dead.pid)
    netns.create(stale)
    orphan = subprocess.Popen(["ip", "netns", "exec", stale, "sleep", "60"])
    try:
        # only once `ip` has exec'd sleep is the process inside the namespace
        comm = Path(f"/proc/{orphan.pid}/comm")
        deadline = time.monotonic() + 5
        while comm.read_text().strip() != "sleep" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert stale in sweep_leftovers()
        assert orphan.wait(timeout=5) == -9
    finally:
        if orphan.poll() is None:
            orphan.kill()
        if stale in netns.listnetns():
            netns.remove(stale)
