"""The session's SSH rigs (sshrig.py) as the tests that share them need them: the pair,
router and fleet shapes take their servers from one pool, each starts as a fresh one
would (every sshd up, nothing of an earlier rig's devices or processes on the servers),
the reset after a test ends what it left running and starts a killed sshd again, and a
test that leaves the servers changed — an MTU, an offload, a route or rule, the login
user's sudoers — fails by name while the next test gets the rig as
wired."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from offlab.hosts.journal import JOURNAL_DIR
from offlab.hosts.naming import our_namespaces, stale_namespaces
from offlab.hosts.server import SERVER_DIR

from .sshrig import FLEET, MGMT, PAIR, ROUTER, RigNotRestored


def _ssh(rig, alias: str, command: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ssh", "-F", str(rig.ssh_config), "-o", "BatchMode=yes", alias, command],
                          capture_output=True, text=True, timeout=30)


def test_the_shapes_share_the_servers_and_the_reset_restarts_what_a_test_broke(ssh_rigs):
    with ssh_rigs.use(PAIR) as pair:
        assert _ssh(pair, "hosta", "ip -br link show ofl-ta0").returncode == 0
        namespaces = {name: server.namespace for name, server in pair.servers.items()}
        # something a test leaves running on a server, a server gone, a journal and a hold
        leftover = pair.servers["a"].spawn(["sleep", "300"])
        pair.kill_sshd("b")
        assert _ssh(pair, "hostb", "true").returncode != 0
        JOURNAL_DIR.mkdir(parents=True, exist_ok=True)
        (JOURNAL_DIR / "hostb-ofl-probe.json").write_text("{}")
        Path(SERVER_DIR).mkdir(parents=True)
    assert leftover.wait(timeout=5) == -9  # ended by the reset
    assert not list(JOURNAL_DIR.glob("*.json")) and not Path(SERVER_DIR).exists()
    with ssh_rigs.use(PAIR) as again:
        assert again is pair  # still wired: the reset found it as it was
        assert _ssh(again, "hostb", "true").returncode == 0  # b's sshd started again
    with ssh_rigs.use(ROUTER) as router:
        assert {n: router.servers[n].namespace for n in ("a", "b")} == namespaces
        assert not router.servers["a"].has_link("ofl-ta0") and not router.servers["b"].has_link("ofl-tb0")
        assert "10.243.1.2/24" in _ssh(router, "hostr", "ip -br addr show ofl-3r0").stdout  # R on A's link
        assert "via 10.243.1.2" in _ssh(router, "hosta", "ip route get 10.243.2.2").stdout  # B through R
        assert _ssh(router, "hostr", "cat /proc/sys/net/ipv4/ip_forward").stdout.strip() == "0"
    with ssh_rigs.use(FLEET) as fleet:
        assert {n: fleet.servers[n].namespace for n in ("a", "b")} == namespaces
        for alias in ("fleeta", "fleetb", "fleetc", "fleetd"):
            assert _ssh(fleet, alias, "true").returncode == 0, alias
        assert not fleet.servers["a"].has_link("ofl-3a0")  # the router rig's link went with it
        # the second pair's /var/lib/offlab is its own
        _ssh(fleet, "fleetc", "touch /var/lib/offlab/ofl-pool-probe")
        assert _ssh(fleet, "fleetd", "test -e /var/lib/offlab/ofl-pool-probe").returncode == 0
        assert _ssh(fleet, "fleeta", "test -e /var/lib/offlab/ofl-pool-probe").returncode != 0
        _ssh(fleet, "fleetc", "rm /var/lib/offlab/ofl-pool-probe")
    servers = sorted(s.namespace for s in ssh_rigs.pool.servers.values())
    assert set(servers).isdisjoint(our_namespaces())
    assert stale_namespaces(servers) == []  # alive: their owner lives as long as this session


@pytest.mark.parametrize("change, named", [
    (lambda rig: rig.servers["a"].set_link("ofl-ta0", mtu=4000), "ofl-ta0"),
    (lambda rig: rig.servers["b"].run(["ethtool", "-K", "ofl-tb0", "tso", "off"]), "ofl-tb0"),
    # what a management outage test does to reach the controller another way
    (lambda rig: rig.servers["b"].ip("route", "add", f"{MGMT['a'][2]}/32", "via", MGMT["b"][2], "dev", "mgmt0"),
     "b:routes"),
    (lambda rig: rig.servers["a"].ip("rule", "add", "from", MGMT["a"][3], "lookup", "238", "priority", "238"),
     "a:rules"),
    (lambda rig: rig.servers["a"].ip("route", "add", "10.241.9.0/24", "dev", "ofl-ta0", "table", "238"), "a:routes"),
    (lambda rig: rig.set_sudoers(password=True), "sudoers"),
])
def test_a_test_that_leaves_the_servers_changed_fails_by_name_and_the_next_gets_the_rig_anew(ssh_rigs, change, named):
    user = "ofl-rigcheck" if named == "sudoers" else None
    with pytest.raises(RigNotRestored, match=named):
        with ssh_rigs.use(PAIR, user=user) as changed:
            baseline = changed.state()
            change(changed)
    assert ssh_rigs.current is None and not changed.folder.exists()
    with ssh_rigs.use(PAIR, user=user) as fresh:
        assert fresh is not changed and fresh.state() == baseline
