"""The session's SSH servers (sshpool.py) under the rigs that share them: a rig starts
as a fresh one would (every sshd up, none of an earlier rig's devices or processes on
the servers), the two-, three- and four-server rigs take their servers from one pool,
and the servers are not this process's namespaces (the modules that check they left
none keep checking their own)."""

from __future__ import annotations

import subprocess

from offlab.hosts.naming import our_namespaces, stale_namespaces

from .routerlab import router_lab
from .sshfleet import ssh_fleet
from .sshlab import ssh_lab


def _ssh(lab, alias: str, command: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ssh", "-F", str(lab.ssh_config), "-o", "BatchMode=yes", alias, command],
                          capture_output=True, text=True, timeout=30)


def test_rigs_share_the_servers_and_each_starts_fresh(ssh_servers):
    first = ssh_lab()
    try:
        assert _ssh(first, "hosta", "ip -br link show ofl-ta0").returncode == 0
        namespaces = {name: server.namespace for name, server in first.servers.items()}
        # something a test leaves running on a server, and a server gone
        leftover = first.servers["a"].spawn(["sleep", "300"])
        first.kill_sshd("b")
        assert _ssh(first, "hostb", "true").returncode != 0
    finally:
        first.stop()
    assert not first.servers["a"].has_link("ofl-ta0") and not first.servers["b"].has_link("ofl-tb0")
    assert leftover.wait(timeout=5) == -9  # ended by the rig's stop
    router = router_lab()
    try:
        # the same servers a and b, b's sshd started again
        assert {n: router.servers[n].namespace for n in ("a", "b")} == namespaces
        assert _ssh(router, "hostb", "true").returncode == 0
        assert "10.243.1.2/24" in _ssh(router, "hostr", "ip -br addr show ofl-3r0").stdout  # R on A's link
        assert "via 10.243.1.2" in _ssh(router, "hosta", "ip route get 10.243.2.2").stdout  # B through R
    finally:
        router.stop()
    fleet = ssh_fleet()
    try:
        assert {n: fleet.servers[n].namespace for n in ("a", "b")} == namespaces
        for alias in ("fleeta", "fleetb", "fleetc", "fleetd"):
            assert _ssh(fleet, alias, "true").returncode == 0, alias
        # the second pair's /var/lib/offlab is its own
        _ssh(fleet, "fleetc", "touch /var/lib/offlab/ofl-pool-probe")
        assert _ssh(fleet, "fleetd", "test -e /var/lib/offlab/ofl-pool-probe").returncode == 0
        assert _ssh(fleet, "fleeta", "test -e /var/lib/offlab/ofl-pool-probe").returncode != 0
        _ssh(fleet, "fleetc", "rm /var/lib/offlab/ofl-pool-probe")
    finally:
        fleet.stop()
    servers = sorted(s.namespace for s in ssh_servers.servers.values())
    assert set(servers).isdisjoint(our_namespaces())
    assert stale_namespaces(servers) == []  # alive: their owner lives as long as this session
