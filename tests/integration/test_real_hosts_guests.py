"""QEMU guests on "real hosts" (`qemu` with `--hosts`): the two OpenSSH servers of
sshrig.py each boot a guest over their SSH connection (TCG here), the guests' NICs
bridged onto the servers' test interfaces — directly (`none`) or through a VXLAN device
over them — and everything put back: at the end of a run, and after a `kill -9` of
offlab during a guest's boot or during a case followed by `offlab restore`: no QEMU,
no iperf3, no ofl- device left on either server, the test interface exactly as before
(addresses, master, MTU, state, features).

One rig for the module; the guests of each topology are booted once and serve every
check of it."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from offlab.hosts import files, hostsfile
from offlab.hosts.journal import JOURNAL_DIR
from offlab.hosts.server import SERVER_DIR
from offlab.hosts.session import RemoteSession
from offlab.hosts.ssh import SshHost
from offlab.proc import run
from offlab.topology.guests import ADDRESS
from offlab.topology.remote_guests import BRIDGE, RemoteGuestPath
from offlab.vm import GuestImageMissing, find_image, read_guest_nic

from .runs import OFFLAB, samples, start_run

TCG = {**os.environ, "OFFLAB_VM_ACCEL": "tcg"}
"""The runs through `offlab run` skip the KVM probe (15 s a run here, where nested KVM
hangs); the probe itself runs in test_vm_to_vm_across_the_two_servers."""
from .sshrig import PAIR
from .transfers import tcp_file_arrives

try:
    find_image()
except GuestImageMissing as missing:
    pytest.skip(str(missing), allow_module_level=True)

PLAN = """
name = "vmhosts"
runs = {runs}
duration = 1.5
warmup = 0.5
scenarios = ["qemu"]
guest_paths = ["{path}"]
overlays = ["{overlay}"]
backends = ["tap"]
virtio = ["all-on"]
mtus = [1500]
traffic = ["tcp"]
sequences = ["all-on"]
steer_rx_softirq = false
"""


@pytest.fixture()
def lab(ssh_rigs):
    with ssh_rigs.use(PAIR) as rig:
        yield rig


def interface_state(lab, role: str) -> dict:
    """Everything of a server's test interface a run may touch, read over ssh."""
    spec = hostsfile.load(lab.hosts_file).hosts[role]
    host = SshHost(role, spec, str(lab.ssh_config))
    try:
        link = json.loads(host.ip("-j", "-d", "link", "show", "dev", spec.interface).stdout)[0]
        addresses = sorted(f"{a['local']}/{a['prefixlen']}" for entry in
                           json.loads(host.ip("-j", "addr", "show", "dev", spec.interface).stdout)
                           for a in entry.get("addr_info", []) if a.get("scope") == "global")
        return {"mtu": link["mtu"], "master": link.get("master"), "up": "UP" in link["flags"],
                "addresses": addresses, "features": host.run(["ethtool", "-k", spec.interface]).stdout,
                "ofl": sorted(d["ifname"] for d in json.loads(host.ip("-j", "link", "show").stdout)
                              if d["ifname"].startswith("ofl-") and d["ifname"] != spec.interface)}
    finally:
        host.close()


def left_running(lab) -> list[str]:
    """QEMU, iperf3 or offlab-fwd still running in either server's namespace."""
    found = []
    for server in lab.servers.values():
        for pid in run(["ip", "netns", "pids", server.namespace], check=False).stdout.split():
            try:
                name = Path(f"/proc/{pid}/comm").read_text().strip()
            except OSError:
                continue
            if name.startswith(("qemu", "iperf3", "offlab-fwd")):
                found.append(f"{server.namespace}: {name} {pid}")
    return found


def assert_as_before(lab, before: dict) -> None:
    assert {role: interface_state(lab, role) for role in before} == before
    assert left_running(lab) == []
    assert not list(JOURNAL_DIR.glob("*.json")) and not Path(SERVER_DIR).exists()


@pytest.mark.parametrize("overlay, backend", [("none", "tap"), ("vxlan", "tap"), ("none", "vhost-user")])
def test_vm_to_vm_across_the_two_servers(lab, overlay, backend):
    """A 4 MiB file crosses byte-exact from guest A (sender) to guest B (receiver),
    iperf3 runs between them, both guests' negotiated features are read; on `none` with
    TAPs the servers keep their test addresses on the bridge meanwhile; with vhost-user
    offlab-fwd on each server joins its guest to the test interface itself."""
    before = {role: interface_state(lab, role) for role in ("sender", "receiver")}
    session = RemoteSession(hostsfile.load(lab.hosts_file))
    session.start()
    try:
        with RemoteGuestPath("qemu", 1500, {"path": "vm2vm", "overlay": overlay, "backend": backend},
                             session) as topo:
            a, b = topo.guests["a"], topo.guests["b"]
            assert a.accel in ("kvm", "tcg") and topo.nodes["tx"].why
            during = interface_state(lab, "sender")
            if backend == "vhost-user":
                assert during["master"] is None and during["addresses"] == before["sender"]["addresses"]
                assert set(topo.forwarders) == {"tx", "rx"}
            elif overlay == "none":
                assert during["master"] == BRIDGE and during["addresses"] == []
                assert topo.remote["tx"].addresses(BRIDGE)[:1] == ["10.241.0.1"]
            else:
                assert during["master"] is None and during["mtu"] == 1550 and "ofl-vx0" in during["ofl"]
            assert tcp_file_arrives(a, b, ADDRESS["b"])
            b.run("iperf3 -s -D -1 -p 5201")
            sent = json.loads(a.run(f"iperf3 -c {ADDRESS['b']} -p 5201 -t 1 -J", timeout=60).stdout)
            assert sent["end"]["sum_received"]["bytes"] > 0
            for guest in (a, b):
                assert {"CSUM", "HOST_TSO4", "GUEST_TSO4"} <= set(read_guest_nic(guest).virtio)
            state = topo.apply_datapath(None)
            assert state["virtio:a"]["host_tso4"].on and state["virtio:b"]["guest_tso4"].on
            if backend == "vhost-user":  # what the guest negotiated, as offlab-fwd saw it
                assert state["vhost-user:a@a"]["host_tso4"].on and topo.datapath_counters()
    finally:
        session.close()
    assert_as_before(lab, before)


def test_vm_to_host_over_vxlan_with_vhost_user_through_offlab_run(lab, tmp_path):
    """The whole pipeline: `offlab run --hosts` with guest A to the receiver itself over
    VXLAN, offlab-fwd (gro) as guest A's vhost-user backend on the sender; the report
    names each server's hypervisor, the thread classes' CPU, and keeps the TCG rule."""
    before = {role: interface_state(lab, role) for role in ("sender", "receiver")}
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.format(runs=1, path="vm2host", overlay="vxlan").replace(
        'backends = ["tap"]', 'backends = ["vhost-user"]\nfwd_modes = ["gro"]'))
    done = subprocess.run([*OFFLAB, "run", "--hosts", str(lab.hosts_file), "--plan", str(plan),
                           "--out", str(tmp_path / "r"), "--no-progress", "--yes"], capture_output=True,
                          text=True, timeout=300, env=TCG)
    assert done.returncode == 0, done.stderr[-2000:]
    report = next((tmp_path / "r").glob("*/report.md")).read_text()
    assert "| hypervisor@tx | accel.tcg | on |" in report or "| hypervisor@tx | accel.kvm | on |" in report
    assert "not performance figures" in report or "| hypervisor@tx | accel.kvm | on |" in report
    assert "is a software device, not a NIC" in report and "hypervisor: QEMU" in report
    assert "| fwd@a | mode.gro | on |" in report
    with sqlite3.connect(tmp_path / "r" / "offlab.sqlite") as conn:
        names = {n for (n,) in conn.execute("SELECT name FROM sample_counter")}
    assert {"qemu-a:vcpu_usr_pct", "qemu-a:other_usr_pct"} <= names, sorted(names)[:40]
    assert any(n.startswith("fwd@a:") for n in names)
    assert_as_before(lab, before)
    # The guest's files stayed cached on the servers (by hash) until purged.
    assert list(Path(files.CACHE_DIR).glob("*/vmlinuz"))
    doctor = subprocess.run([*OFFLAB, "doctor", "--hosts", str(lab.hosts_file), "--guests"], capture_output=True,
                            text=True, timeout=120, env=TCG)
    rows = [line for line in doctor.stdout.splitlines() if line.startswith("sender (hosta)")]
    for check in ("qemu-system-x86_64", "KVM (a guest boots under it)", "/dev/vhost-net (tap-vhost)",
                  "memfd or hugepages (vhost-user)", "bridge support", "free cores"):
        assert any(check in row for row in rows), doctor.stdout
    assert any("KVM" in row and "tcg: OFFLAB_VM_ACCEL=tcg" in row for row in rows), doctor.stdout
    purged = subprocess.run([*OFFLAB, "restore", "--purge", "--hosts", str(lab.hosts_file)], capture_output=True,
                            text=True, timeout=120)
    assert purged.returncode == 0 and f"purged sender: removed {files.CACHE_DIR}" in purged.stdout, purged.stderr
    assert not Path(files.CACHE_DIR).exists()


@pytest.mark.parametrize("moment", ["boot", "case"])
def test_kill_9_then_restore_leaves_nothing(lab, tmp_path, moment, monkeypatch):
    """offlab killed while the guests boot, or during a case: `offlab restore` ends
    QEMU and iperf3 on both servers, removes the bridge and the TAPs, and the test
    interface is as before (its address back from the bridge)."""
    monkeypatch.setenv("OFFLAB_VM_ACCEL", "tcg")
    before = {role: interface_state(lab, role) for role in ("sender", "receiver")}
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.format(runs=30, path="vm2vm", overlay="none"))
    db = tmp_path / "r" / "offlab.sqlite"
    args = ["--hosts", str(lab.hosts_file), "--plan", str(plan), "--out", str(db.parent), "--yes"]
    if moment == "boot":
        offlab = start_run(args, db, wait_for=0)
        # Guest A's QEMU made its TAP: it is booting.
        deadline = time.monotonic() + 90
        while not lab.servers["a"].has_link("ofl-ga") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert lab.servers["a"].has_link("ofl-ga") and samples(db) == 0, offlab.communicate(timeout=30)
    else:
        offlab = start_run(args, db, wait_for=1, timeout=240)
        assert samples(db) >= 1
    assert offlab.poll() is None, offlab.communicate()[1][-2000:]
    offlab.send_signal(signal.SIGKILL)
    offlab.wait(timeout=10)
    restored = subprocess.run([*OFFLAB, "restore"], capture_output=True, text=True, timeout=120)
    assert restored.returncode == 0, restored.stderr
    assert_as_before(lab, before)
