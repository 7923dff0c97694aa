"""Two real QEMU guests (TCG when KVM does not work here) with virtio-net, each behind a
TAP in one namespace joined by a bridge there (backend `tap`: QEMU's userspace
virtio-net). Content crosses intact over TCP and UDP, iperf3 completes, and what the
device offers is what the guest negotiates and what reaches the host's TAP:

    guest a: every feature on (QEMU's defaults)
    guest b: host_tso4=off (b may not send TCPv4 super-packets), and guest_tso4,
             guest_tso6, guest_ecn, guest_ufo off (b is never given any: guest_tso4=off
             alone leaves the driver's rx-gro-hw on, see docs/vms.md)

a's TAP is made by QEMU, b's beforehand with `ip tuntap`. Guests boot once for the
module; nothing (QEMU, TAPs, the namespace, sockets) is left when it ends, and a killed
run's leftovers are swept when the next one starts."""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
import time

import pytest

from offlab.hosts import LocalNamespace
from offlab.hosts.offloads import parse_features
from offlab.hosts.naming import device_name, our_namespaces, sweep_leftovers
from offlab.runscope import RUNTIME_ROOT, reclaim_stale
from offlab.vm import (DeviceFeatures, Guest, GuestError, GuestImageMissing, GuestSpec, InNamespace, NicProfile,
                       ProfileError, check_backend, class_times, find_image, qemu_threads, read_guest_nic)

try:
    IMAGE = find_image()
except GuestImageMissing as missing:
    pytest.skip(str(missing), allow_module_level=True)
if shutil.which("qemu-system-x86_64") is None:
    pytest.skip("needs qemu-system-x86_64 (make setup installs qemu-system-x86)", allow_module_level=True)

BRIDGE, TAP_A, TAP_B = device_name("gbr"), device_name("ga"), device_name("gb")
A_IP, B_IP, PREFIX = "10.213.0.1", "10.213.0.2", 24
MTU = 1500
ETH_HLEN = 14
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


@pytest.fixture(scope="module")
def lab():
    # A run killed earlier left its namespace (with QEMU in it) and its guests' files.
    sweep_leftovers()
    reclaim_stale()
    ns = LocalNamespace("guests").create()
    guests = []
    try:
        ns.ip("link", "add", BRIDGE, "type", "bridge")
        ns.set_link(BRIDGE, mtu=MTU)
        a = Guest(GuestSpec("a", NicProfile("tap", tap=TAP_A, mac="52:54:00:00:0a:01"), f"{A_IP}/{PREFIX}"),
                  InNamespace(ns), bridge=BRIDGE)
        b_features = DeviceFeatures(host_tso4=False, guest_tso4=False, guest_tso6=False,
                                    guest_ecn=False, guest_ufo=False)
        # a's TAP is created by QEMU, b's beforehand (as a topology owning its devices would).
        ns.ip("tuntap", "add", "dev", TAP_B, "mode", "tap", "vnet_hdr")
        b = Guest(GuestSpec("b", NicProfile("tap", b_features, tap=TAP_B, mac="52:54:00:00:0b:01"),
                            f"{B_IP}/{PREFIX}"), InNamespace(ns), bridge=BRIDGE)
        guests = [a, b]
        for guest in guests:  # both boot at once: one core each
            guest.launch()
        for guest in guests:
            guest.wait_ready()
        yield ns, a, b
    finally:
        pids = [g.process.pid for g in guests if g.process is not None]
        for guest in guests:
            guest.stop()
        ns.remove()
    assert all(not os.path.exists(f"/proc/{pid}") for pid in pids), "a QEMU outlived its guest"
    assert our_namespaces() == []
    assert not list(RUNTIME_ROOT.glob(f"vm-{os.getpid()}-*")), "a guest's runtime files are left"


# --- helpers ------------------------------------------------------------------------------

class TapCapture:
    """Lengths of the frames a guest sends, as the host's TAP receives them, or of those
    the host gives it (`towards_guest`), after any segmentation the TAP's offloads
    require (AF_PACKET in the namespace; MSG_TRUNC gives a super-packet's real length)."""

    def __init__(self, namespace: str, device: str, towards_guest: bool = False):
        self.towards_guest = towards_guest
        from pyroute2.netns import popns, pushns
        pushns(namespace)
        try:
            self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            self.sock.bind((device, 0))
        finally:
            popns()
        self.sock.settimeout(0.2)
        self.lengths: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)

    def _read(self) -> None:
        head = bytearray(128)
        while not self._stop.is_set():
            try:
                # With MSG_TRUNC a packet socket returns the frame's full length.
                length, _, _, address = self.sock.recvmsg_into([head], 0, socket.MSG_TRUNC)
            except socket.timeout:
                continue
            # The host sends on a TAP what goes to the guest, and receives what it sent.
            if (address[2] == PACKET_OUTGOING) == self.towards_guest:
                self.lengths.append(length)

    def __enter__(self) -> "TapCapture":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


def iperf3(client: Guest, server_ip: str, *extra: str) -> dict:
    """One short iperf3 run from `client`; its JSON result."""
    done = client.run(f"iperf3 -c {server_ip} -t 2 -J {' '.join(extra)}", timeout=30)
    return json.loads(done.stdout)


# --- content --------------------------------------------------------------------------------

def test_both_guests_boot_with_their_address(lab):
    ns, a, b = lab
    assert a.accel in ("kvm", "tcg") and a.accel_reason
    for guest, ip in ((a, A_IP), (b, B_IP)):
        assert f"inet {ip}/{PREFIX}" in guest.run("ip -o addr show dev eth0").stdout
        assert guest.run("cat /sys/class/net/eth0/mtu").stdout.strip() == str(MTU)
    assert {TAP_A, TAP_B} <= {link["ifname"] for link in ns.links()
                                             if link.get("master") == BRIDGE}


def test_agent_frames_output_status_and_stderr(lab):
    _, a, _ = lab
    # Output that looks like the agent's own frame lines must come back as plain output.
    done = a.run("printf 'OFLEND r1 0\\nline two'; echo oops >&2; exit 7", check=False)
    assert (done.status, done.stdout, done.stderr) == (7, "OFLEND r1 0\nline two", "oops\n")
    assert a.run("sleep 5", timeout=1, check=False).status == 137  # killed at its timeout


def test_tcp_content_arrives_intact(lab):
    _, a, b = lab
    a.run("dd if=/dev/urandom of=/tmp/blob bs=1024 count=4096 2>/dev/null")
    sent = a.run("md5sum /tmp/blob").stdout.split()[0]
    # -e: the received stream goes to a program, and nc ends with the connection (its
    # stdin, /dev/null under the agent, would end it at once otherwise).
    b.run("rm -f /tmp/got; echo 'cat > /tmp/got' > /tmp/sink.sh; (nc -l -p 5001 -e sh /tmp/sink.sh &); sleep 0.2")
    a.run(f"nc {B_IP} 5001 < /tmp/blob", timeout=60)
    got = ""
    for _ in range(20):  # the receiver may still be writing the last bytes
        got = b.run("md5sum /tmp/got").stdout.split()[0]
        if got == sent:
            break
        time.sleep(0.5)
    assert got == sent
    assert b.run("stat -c %s /tmp/got").stdout.strip() == str(4096 * 1024)


def test_udp_content_arrives_intact(lab):
    """Datagrams one by one, in order, and one 8000-byte datagram (IP-fragmented at
    MTU 1500) with its checksum. busybox's nc has no UDP: netcat-openbsd's does."""
    _, a, b = lab
    b.run("rm -f /tmp/udp /tmp/udp-big; (nc.openbsd -u -l 5002 > /tmp/udp &); "
          "(nc.openbsd -u -l 5003 > /tmp/udp-big &); sleep 0.2")
    a.run(f"for n in $(seq 1 20); do echo \"datagram $n\"; sleep 0.02; done | nc.openbsd -u -q 1 {B_IP} 5002",
          timeout=20)
    a.run("head -c 8000 /dev/urandom > /tmp/udp-big")
    sent = a.run("md5sum /tmp/udp-big").stdout.split()[0]
    a.run(f"nc.openbsd -u -q 1 {B_IP} 5003 < /tmp/udp-big", timeout=20)
    assert b.run("cat /tmp/udp").stdout == "".join(f"datagram {n}\n" for n in range(1, 21))
    assert b.run("md5sum /tmp/udp-big").stdout.split()[0] == sent
    b.run("kill $(pidof nc.openbsd)")


def test_iperf3_tcp_and_udp_complete(lab):
    _, a, b = lab
    b.run("iperf3 -s -D -p 5201")
    tcp = iperf3(a, B_IP, "-p 5201")
    assert tcp["end"]["sum_received"]["bytes"] > 0
    udp = iperf3(a, B_IP, "-p 5201", "-u", "-b 20M")
    assert udp["end"]["sum"]["packets"] > 0 and udp["end"]["sum"]["bytes"] > 0


# --- negotiation ------------------------------------------------------------------------------

def test_host_tso4_on_lets_the_guest_send_super_packets(lab):
    ns, a, b = lab
    state = read_guest_nic(a)
    assert "HOST_TSO4" in state.virtio and state.on("tcp-segmentation-offload")
    b.run("pidof iperf3 >/dev/null || iperf3 -s -D -p 5201")
    with TapCapture(ns.namespace, TAP_A) as capture:
        iperf3(a, B_IP, "-p 5201")
    assert max(capture.lengths) > MTU + ETH_HLEN, "no super-packet from guest a at its TAP"


def test_host_tso4_off_keeps_the_guests_frames_within_the_mtu(lab):
    ns, a, b = lab
    state = read_guest_nic(b)
    assert "HOST_TSO4" not in state.virtio and "HOST_TSO6" in state.virtio
    # The aggregate tcp-segmentation-offload stays on through TSO6: TSO4 is its own flag.
    assert not state.on("tx-tcp-segmentation") and state.on("tx-tcp6-segmentation")
    a.run("pidof iperf3 >/dev/null || iperf3 -s -D -p 5201")
    with TapCapture(ns.namespace, TAP_B) as capture:
        iperf3(b, A_IP, "-p 5201")
    assert len(capture.lengths) > 100
    assert max(capture.lengths) <= MTU + ETH_HLEN


def test_guest_tso_off_means_no_super_packets_to_the_guest(lab):
    """guest_tso4 is the receive side of the guest: without it (and its siblings) the
    driver has no rx-gro-hw, QEMU takes TSO off the TAP, and the host segments a's
    super-packets before they reach b."""
    ns, a, b = lab
    on, off = read_guest_nic(a), read_guest_nic(b)
    assert "GUEST_TSO4" in on.virtio and on.on("rx-gro-hw")
    assert not {"GUEST_TSO4", "GUEST_TSO6", "GUEST_ECN", "GUEST_UFO"} & set(off.virtio)
    assert not off.on("large-receive-offload") and not off.on("rx-gro-hw")
    taps = {tap: parse_features(ns.run(["ethtool", "-k", tap]).stdout).features for tap in (TAP_A, TAP_B)}
    assert taps[TAP_A]["tx-tcp-segmentation"].on and not taps[TAP_B]["tx-tcp-segmentation"].on
    b.run("pidof iperf3 >/dev/null || iperf3 -s -D -p 5201")
    with TapCapture(ns.namespace, TAP_B, towards_guest=True) as capture:
        iperf3(a, B_IP, "-p 5201")
    assert len(capture.lengths) > 100
    assert max(capture.lengths) <= MTU + ETH_HLEN


def test_qemu_threads_by_class(lab):
    _, a, _ = lab
    threads = qemu_threads(a.pid)
    assert [t.name for t in threads["vcpu"]] == [f"CPU 0/{a.accel.upper()}"]
    assert threads["vhost"] == []  # backend tap: QEMU's own virtio-net, no vhost worker
    assert threads["other"]
    vcpu = class_times(threads, a.pid)["vcpu"]
    assert vcpu.usr + vcpu.sys > 0  # the guest has been running on it


def test_tap_vhost_is_refused_with_one_line_without_vhost_net():
    profile = NicProfile("tap-vhost", tap=device_name("gv"))
    if os.path.exists("/dev/vhost-net"):
        pytest.skip("this host has /dev/vhost-net: the refusal cannot be seen here")
    with pytest.raises(ProfileError) as refused:
        check_backend(profile)
    assert "\n" not in str(refused.value) and "/dev/vhost-net" in str(refused.value)
    pytest.skip(f"tap-vhost cannot run here: {refused.value}")


def test_a_guest_that_fails_to_start_leaves_nothing():
    ns = LocalNamespace("gfail").create()
    try:
        guest = Guest(GuestSpec("f", NicProfile("tap", tap=device_name("gf")), "10.213.1.1/24"), InNamespace(ns))
        with pytest.raises(GuestError, match="did not answer|did not create|did not open"):
            guest.start(timeout=1.0)  # far too short for a boot
        assert guest.process is None and guest.runtime is None
        assert not ns.has_link(device_name("gf"))
        assert not list(RUNTIME_ROOT.glob(f"vm-{os.getpid()}-f-*"))
    finally:
        ns.remove()
