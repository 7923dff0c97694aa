"""Two real QEMU guests on offlab-fwd's vhost-user port (seed 004's setup: the backend
moves frames between the guests' virtqueues and the engine does GRO/GSO on the way).
Content crosses intact over TCP and UDP; what the guests negotiate is what the backend
counts (super-packets only from a guest with host_tso4); engine GRO merges a guest's MTU
frames for a guest that takes TSO, engine GSO cuts super-packets for one that does not;
QEMU killed, offlab-fwd lives on and serves the next QEMU on the same socket."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time

import pytest

from offlab.topology.fwd import Forwarder, FwdConfig, FwdError, PortSpec, counters, find_binary
from offlab.hosts import LocalNamespace
from offlab.hosts.naming import our_namespaces, sweep_leftovers
from offlab.vm import DeviceFeatures, Guest, GuestImageMissing, GuestSpec, InNamespace, NicProfile, find_image

from .transfers import tcp_file_arrives, udp_datagrams_arrive

try:
    IMAGE = find_image()
    BINARY = find_binary()
except (GuestImageMissing, FwdError) as missing:
    pytest.skip(str(missing), allow_module_level=True)
if shutil.which("qemu-system-x86_64") is None:
    pytest.skip("needs qemu-system-x86_64 (make setup installs qemu-system-x86)", allow_module_level=True)

A_IP, B_IP = "10.216.0.1", "10.216.0.2"
ROLES = {"a": "a", "b": "b"}


class Pair:
    """offlab-fwd with two vhost-user ports, and a guest on each."""

    def __init__(self, mode: str, a_features: DeviceFeatures, b_features: DeviceFeatures):
        self.dir = tempfile.mkdtemp(prefix="ofl-vu-")
        self.sockets = {r: os.path.join(self.dir, f"{r}.sock") for r in ROLES}
        ports = tuple(PortSpec("vhost-user", self.sockets[r], "") for r in ROLES)
        self.fwd = Forwarder(FwdConfig(mode, ports), BINARY).start()  # type: ignore[arg-type]
        self.ns = LocalNamespace("vu").create()
        self.features = {"a": a_features, "b": b_features}
        self.guests = {r: self.guest(r) for r in ROLES}
        for guest in self.guests.values():
            guest.launch()
        for guest in self.guests.values():
            guest.wait_ready()
        # What the forwarder counted while the guests booted: a frame one guest sent
        # before the other's driver had started its rings is dropped as "guest not
        # connected" (on a loaded machine one guest boots well behind the other).
        self.at_ready = self.counters()

    def guest(self, role: str) -> Guest:
        nic = NicProfile("vhost-user", self.features[role], socket=self.sockets[role],
                         mac=f"52:54:00:00:0c:0{'1' if role == 'a' else '2'}")
        return Guest(GuestSpec(role, nic, f"{A_IP if role == 'a' else B_IP}/24"), InNamespace(self.ns, IMAGE))

    def counters(self) -> dict[str, float]:
        labels = {f"vhost-user:{self.sockets[r]}": r for r in ROLES}
        return counters(self.fwd.snapshot(), labels)

    def drops_since_ready(self) -> dict[str, float]:
        """Drop counters that grew after both guests were up, by how much."""
        grown = {k: v - self.at_ready.get(k, 0.0) for k, v in self.counters().items() if ":drop." in k}
        return {k: v for k, v in grown.items() if v > 0}

    def states(self) -> dict:
        return self.fwd.snapshot().port_states

    def close(self) -> None:
        for guest in self.guests.values():
            guest.stop()
        self.fwd.stop()
        self.ns.remove()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def pair(request):
    """One boot of the two guests per setup (forwarder mode, each guest's device
    features), shared by the tests that use that setup: pytest runs them one after the
    other, and the pair goes when the last of them ends."""
    sweep_leftovers()
    mode, a_features, b_features = request.param
    made = Pair(mode, a_features, b_features)
    yield made
    made.close()
    assert our_namespaces() == []


ALL_ON = DeviceFeatures()
NO_HOST_TSO = DeviceFeatures(host_tso4=False, host_tso6=False)
NO_GUEST_TSO = DeviceFeatures(guest_tso4=False, guest_tso6=False, guest_ecn=False, guest_ufo=False)


def iperf(client: Guest, server: Guest, server_ip: str) -> None:
    server.run("iperf3 -s -D -1")
    time.sleep(0.3)
    client.run(f"iperf3 -c {server_ip} -t 2", timeout=30)


@pytest.mark.parametrize("pair", [("pass", ALL_ON, NO_HOST_TSO)], indirect=True)
def test_content_crosses_and_super_packets_follow_host_tso4(pair):
    a, b = pair.guests["a"], pair.guests["b"]
    assert tcp_file_arrives(a, b, B_IP) and tcp_file_arrives(b, a, A_IP, port=5005)
    assert udp_datagrams_arrive(a, b, B_IP) and udp_datagrams_arrive(b, a, A_IP, port=5007)
    iperf(a, b, B_IP)
    iperf(b, a, A_IP)
    seen = pair.counters()
    # a has host_tso4: its TSO super-packets reach the backend whole, and pass to b
    # (b took guest_tso4). b has none: every frame it sends is within its MTU.
    assert seen["fwd:a>b:rx_super_packets"] > 0
    assert seen["fwd:a>b:passed_super_packets"] > 0
    assert seen.get("fwd:b>a:rx_super_packets", 0) == 0 and seen["fwd:b>a:rx_packets"] > 100
    states = pair.states()
    assert "host_tso4" in states[f"vhost-user:{pair.sockets['a']}"]["negotiated"]
    assert "host_tso4" not in states[f"vhost-user:{pair.sockets['b']}"]["negotiated"]
    # A slow (emulated) guest may not refill its receive ring in time: such frames are
    # dropped and counted, as a NIC's would be; once both guests are up nothing else may be.
    refused = {k: v for k, v in pair.drops_since_ready().items() if "guest receive ring full" not in k}
    assert refused == {}


@pytest.mark.parametrize("pair", [("gro", NO_HOST_TSO, ALL_ON)], indirect=True)
def test_engine_gro_merges_mtu_frames_for_a_guest_that_takes_tso(pair):
    a, b = pair.guests["a"], pair.guests["b"]
    assert tcp_file_arrives(a, b, B_IP)
    iperf(a, b, B_IP)
    seen = pair.counters()
    assert seen.get("fwd:a>b:rx_super_packets", 0) == 0
    assert seen["fwd:a>b:merged_super_packets"] > 0
    assert seen["fwd:a>b:merged_packets"] > seen["fwd:a>b:merged_super_packets"]


@pytest.mark.parametrize("pair", [("gso", ALL_ON, NO_GUEST_TSO)], indirect=True)
def test_engine_gso_cuts_super_packets_for_a_guest_that_takes_none(pair):
    a, b = pair.guests["a"], pair.guests["b"]
    assert tcp_file_arrives(a, b, B_IP)
    iperf(a, b, B_IP)
    seen = pair.counters()
    assert seen["fwd:a>b:rx_super_packets"] > 0
    assert seen["fwd:a>b:segmented_super_packets"] > 0
    assert seen["fwd:a>b:segments"] > seen["fwd:a>b:segmented_super_packets"]
    assert "guest_tso4" not in pair.states()[f"vhost-user:{pair.sockets['b']}"]["negotiated"]


# On the first test's pair (b's device features play no part here): it runs right after
# that test, which it must, for it replaces guest a.
@pytest.mark.parametrize("pair", [("pass", ALL_ON, NO_HOST_TSO)], indirect=True)
def test_qemu_killed_the_forwarder_lives_and_serves_the_next_qemu(pair):
    a, b = pair.guests["a"], pair.guests["b"]
    os.kill(a.pid, signal.SIGKILL)
    a.process.wait()
    a.stop()
    deadline = time.monotonic() + 10
    label = f"vhost-user:{pair.sockets['a']}"
    while pair.states()[label]["connected"] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not pair.states()[label]["connected"]
    # Frames for the dead guest are dropped and counted, not an error.
    b.run(f"ping -c 2 -W 1 {A_IP}", check=False)
    assert pair.fwd.snapshot().event == "stats"  # still answering
    again = pair.guest("a")
    pair.guests["a"] = again
    again.start()
    assert b.run(f"ping -c 3 -W 2 {A_IP}", check=False).status == 0
    state = pair.states()[label]
    assert state["connected"] and state["connections"] == 2
    assert tcp_file_arrives(again, b, B_IP, kib=1024)
