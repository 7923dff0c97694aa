"""Real namespaces: build, check what exists, tear down, check nothing is left."""

import subprocess
import time
from pathlib import Path

import pytest
from pyroute2 import NetNS, netns

from offlab.topology import build, our_namespaces, sweep_leftovers
from offlab.topology.naming import namespace_name


def link_mtus(namespace: str) -> dict[str, int]:
    with NetNS(namespace) as ns:
        return {l.get_attr("IFLA_IFNAME"): l.get_attr("IFLA_MTU") for l in ns.get_links()}


@pytest.mark.parametrize("scenario", ["bare", "vxlan"])
@pytest.mark.parametrize("mtu", [1500, 9000])
def test_up_and_down_leaves_nothing(scenario, mtu):
    assert our_namespaces() == []
    with build(scenario, mtu) as topo:
        assert sorted(our_namespaces()) == sorted(topo.namespaces)
        assert all(n.startswith("ofl-") for n in topo.namespaces)
        tx, rx = link_mtus(topo.sender.namespace), link_mtus(topo.receiver.namespace)
        assert tx["ofl-v0"] == mtu and rx["ofl-v1"] == mtu
        if scenario == "vxlan":
            assert tx["ofl-vx0"] == mtu - 50 and rx["ofl-vx1"] == mtu - 50
        assert all(name == "lo" or name.startswith("ofl-") for name in {**tx, **rx})
        rps = subprocess.run(["ip", "netns", "exec", topo.receiver.namespace, "cat",
                              "/sys/class/net/ofl-v1/queues/rx-0/rps_cpus"],
                             capture_output=True, text=True, check=True).stdout
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
