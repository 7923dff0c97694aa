"""The middlebox plan on three "servers" (sshrig.py's ROUTER: A ⇄ R ⇄ B, each an OpenSSH server
in a namespace), through `offlab run --hosts` as a user would run it.

First `kill -9` of offlab in each phase — right after the journals are written, mid-case
with offlab-fwd forwarding on R, during the restore — each followed by `offlab restore`
(`offlab doctor --clean --hosts` after the last): no process of offlab left in any server's namespace, every interface, route, neighbour
entry and sysctl as before. Then the next run, the whole small plan, succeeds: R as the
kernel (forwarding turned on with --allow-forwarding and put back) and as offlab-fwd
(copied to R, AF_PACKET on its two interfaces), forwarded and terminated paths. One rig
for the module; tests run in file order (the second is the first's "next run")."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from offlab.topology.fwd import FwdError, find_binary
from offlab.hosts import files
from offlab.hosts.journal import JOURNAL_DIR
from offlab.hosts.server import SERVER_DIR

from .sshrig import ROUTER
from .runs import OFFLAB, start_run, stderr_after

PLAN = """
name = "router-hosts"
runs = {runs}
duration = 0.5
warmup = 0.5
scenarios = ["middlebox"]
paths = {paths}
router = {routers}
matrix = ["tso"]
mtus = [{mtu}]
traffic = ["tcp"]
"""
JOURNALS = 4
"""A, R toward A, R toward B, B: one journal per server and test interface."""


@pytest.fixture()
def lab(ssh_rigs):
    try:
        find_binary()
    except FwdError:
        pytest.skip("offlab-fwd is not built (make build)")
    with ssh_rigs.use(ROUTER) as rig:
        yield rig


def _plan(tmp_path: Path, name: str, runs: int, paths: list[str], routers: list[str], mtu: int = 1500) -> Path:
    plan = tmp_path / f"{name}.toml"
    plan.write_text(PLAN.format(runs=runs, paths=paths, routers=routers, mtu=mtu).replace("'", '"'))
    return plan


def _run_args(lab, plan: Path, out: Path) -> list[str]:
    return ["--hosts", str(lab.hosts_file), "--plan", str(plan), "--out", str(out), "--yes", "--allow-forwarding"]


def _nothing_left(lab, before: dict) -> None:
    """No offlab process in any server's namespace (the servers' watchdogs end within
    a second of their release), every interface, route, neighbour entry and sysctl as
    before, no journal on the controller and no hold on the servers."""
    deadline = time.monotonic() + 5
    while any(lab.processes().values()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert lab.processes() == {"a": [], "r": [], "b": []}
    after = lab.state()
    assert [k for k in before if before[k] != after.get(k)] == []
    assert not list(JOURNAL_DIR.glob("*.json")) and not Path(SERVER_DIR).exists()


def _wait_for_journals(run: subprocess.Popen, count: int, timeout: float = 180) -> None:
    """The run's setup over SSH (guard reads, facts) comes first: past a minute on a
    2-core machine at load 17."""
    deadline = time.monotonic() + timeout
    while len(list(JOURNAL_DIR.glob("*.json"))) < count:
        assert run.poll() is None and time.monotonic() < deadline, stderr_after(run)
        time.sleep(0.002)


def test_kill_9_in_each_phase_then_restore_leaves_nothing(lab, tmp_path):
    before = lab.state()
    killed = []
    for phase in ("after the journal", "mid-case", "during restore"):
        routers = ["offlab-fwd"] if phase == "mid-case" else ["kernel"]
        plan = _plan(tmp_path, phase.replace(" ", "-"), 20, ["a-b"], routers, mtu=4000)
        db = tmp_path / phase.replace(" ", "-") / "offlab.sqlite"
        if phase == "during restore":
            run = start_run([*_run_args(lab, plan, db.parent)], db, wait_for=1)
            assert run.poll() is None, run.communicate()[1]
        else:
            run = subprocess.Popen([*OFFLAB, "run", *_run_args(lab, plan, db.parent), "--no-progress"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if phase == "after the journal":
            _wait_for_journals(run, JOURNALS)
        if phase == "mid-case":  # offlab-fwd runs only while a case runs: killed as it forwards
            deadline = time.monotonic() + 120  # the run's setup over SSH comes first
            while not any(p.startswith("offlab-fwd") for p in lab.processes()["r"]):
                assert time.monotonic() < deadline and run.poll() is None, lab.processes()
                time.sleep(0.01)
        if phase == "during restore":
            run.send_signal(signal.SIGTERM)  # the run starts putting the servers back ...
            deadline = time.monotonic() + 30
            while len(list(JOURNAL_DIR.glob("*.json"))) == JOURNALS and time.monotonic() < deadline:
                time.sleep(0.001)
            assert 0 < len(list(JOURNAL_DIR.glob("*.json"))) < JOURNALS  # ... and is killed half-way
        run.send_signal(signal.SIGKILL)
        run.communicate(timeout=10)
        left = [p for found in lab.processes().values() for p in found]
        if phase == "during restore":  # what a user reaching for doctor does: the same replay
            cleaned = subprocess.run([*OFFLAB, "doctor", "--clean", "--hosts", str(lab.hosts_file)],
                                     capture_output=True, text=True, timeout=120)
            assert cleaned.stdout.startswith("restored "), cleaned.stdout + cleaned.stderr
            failing = [line.split()[2:4] for line in cleaned.stdout.splitlines() if "  NO  " in line]
            assert failing == [] and cleaned.returncode == 0, cleaned.stdout  # no plan: forwarding fails nothing
            assert "net.ipv4.ip_forward = 0: needed only" in cleaned.stdout  # R's, off as before the run
        else:
            restored = subprocess.run([*OFFLAB, "restore"], capture_output=True, text=True, timeout=120)
            assert restored.returncode == 0, restored.stdout + restored.stderr
        _nothing_left(lab, before)
        killed.append((phase, left))
    assert any("offlab-fwd" in p for p in dict(killed)["mid-case"])  # running on R when offlab died


def test_the_middlebox_plan_on_three_servers(lab, tmp_path):
    before = lab.state()
    assert before["r:ip_forward"] == "0"
    plan = _plan(tmp_path, "both", 1, ["a-b", "a-r"], ["kernel", "offlab-fwd"])
    dry = subprocess.run([*OFFLAB, "run", *_run_args(lab, plan, tmp_path / "r"), "--dry-run"],
                         capture_output=True, text=True, timeout=60)
    assert dry.returncode == 0, dry.stderr
    assert "nothing outside those namespaces" not in dry.stdout
    for said in ("router hostr:", "interface ofl-3r1: MTU 1500 ->", "tcp-segmentation-offload on -> on/off",
                 "net.ipv4.ip_forward 0 -> 1 only with --allow-forwarding", "offlab-fwd (AF_PACKET",
                 "route 10.243.2.2 dev ofl-3a0", f"file {files.CACHE_DIR}/"):
        assert said in dry.stdout, dry.stdout
    assert lab.state() == before  # the dry run changed nothing

    refused = subprocess.run([*OFFLAB, "run", "--hosts", str(lab.hosts_file), "--plan", str(plan), "--out",
                              str(tmp_path / "r"), "--yes", "--no-progress"], capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1 and "pass --allow-forwarding" in refused.stderr.strip().splitlines()[-1]
    assert lab.state() == before

    store = tmp_path / "store" / "offlab.sqlite"  # --store and --out apart: the report goes under --out
    # About 700 commands over SSH: two minutes on a quiet machine, past four on a loaded one.
    done = subprocess.run([*OFFLAB, "run", *_run_args(lab, plan, tmp_path / "r"), "--store", str(store),
                           "--no-progress"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(store) as conn:
        keys = {row[0] for row in conn.execute("SELECT case_key FROM sample")}
        names = {row[0] for row in conn.execute("SELECT DISTINCT name FROM sample_counter")}
        hosts = {row[0] for row in conn.execute("SELECT DISTINCT host FROM sample_cpu")}
        forwarded = conn.execute("SELECT MIN(value) FROM sample_counter WHERE name = 'r:Ip.ForwDatagrams'").fetchone()[0]
        segments = conn.execute("SELECT MIN(value) FROM sample_counter WHERE name = 'fwd:a>b:segments'").fetchone()[0]
    assert len(keys) == 6 and {k.split("/")[0] for k in keys} == {"middlebox-ab", "middlebox-ar", "middlebox-fwd-ab"}
    assert hosts == {"a", "r", "b"}  # CPU per core x class on all three
    for node, device in (("a", "ofl-3a0"), ("r", "ofl-3r0"), ("r", "ofl-3r1"), ("b", "ofl-3b0")):
        # /proc/net/snmp and interface deltas on all three (veth's `ethtool -S` has
        # only XDP counters, which do not grow here)
        assert f"{node}:Ip.InReceives" in names and f"{node}:dev.{device}.rx_packets" in names
    assert forwarded > 1000  # R's kernel forwarded A -> B
    assert segments > 1000  # offlab-fwd on R forwarded A -> B
    # copied to R by the one copy-by-hash every file shipped to a server goes through
    # (the rig's servers share this machine's files)
    assert (Path(files.CACHE_DIR) / files.sha256(find_binary()) / "offlab-fwd").is_file()
    report = next((tmp_path / "r").glob("*/report.md")).read_text()
    assert "(seed 003 shape)" in report and "collapsed" in report
    _nothing_left(lab, before)


def test_doctor_judges_the_routers_forwarding_by_the_plan(lab, tmp_path):
    """R's IP forwarding is off in the rig: a failure only for a plan that routes
    through R's kernel; without a plan the row says which plans need it."""
    def forwarding_row(*extra: str) -> tuple[int, str]:
        done = subprocess.run([*OFFLAB, "doctor", "--hosts", str(lab.hosts_file), *extra], capture_output=True,
                              text=True, timeout=120)
        return done.returncode, next(line for line in done.stdout.splitlines() if "IP forwarding" in line)

    status, row = forwarding_row()
    assert " NO " not in row and "net.ipv4.ip_forward = 0: needed only when R's kernel routes" in row, row
    assert status == 0
    status, row = forwarding_row("--plan", str(_plan(tmp_path, "bridged", 1, ["a-b"], ["offlab-fwd"])))
    assert status == 0 and "not needed by plan router-hosts" in row, row
    status, row = forwarding_row("--plan", str(_plan(tmp_path, "routed", 1, ["a-b"], ["kernel"])))
    assert status == 1 and " NO " in row and "plan router-hosts routes through R's kernel" in row, row
    assert "sysctl -w net.ipv4.ip_forward=1" in row


def test_a_neighbour_entry_offlab_replaces_is_put_back_as_it_was(lab, tmp_path):
    """A already has a permanent neighbour entry for B's address on its test interface
    (an operator's, with a MAC of its own): offlab-fwd as R replaces it with B's MAC for
    the run, recording the entry first, and the restore puts the operator's entry back
    — it does not delete it as if offlab had added it."""
    a, peer, mac = lab.servers["a"], "10.243.2.2", "02:00:00:0f:1a:42"
    a.ip("neigh", "replace", peer, "lladdr", mac, "dev", "ofl-3a0", "nud", "permanent")
    try:
        before = lab.state()
        plan = _plan(tmp_path, "neigh", 1, ["a-b"], ["offlab-fwd"])
        done = subprocess.run([*OFFLAB, "run", *_run_args(lab, plan, tmp_path / "r"), "--no-progress"],
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        shown = a.ip("neigh", "show", "to", peer, "dev", "ofl-3a0").stdout
        assert mac in shown and "PERMANENT" in shown, f"A's entry for {peer} after the run: {shown!r}"
        _nothing_left(lab, before)
    finally:
        a.ip("neigh", "del", peer, "dev", "ofl-3a0", check=False)


def test_one_middlebox_takes_the_same_steps_in_namespaces_and_on_servers(lab, tmp_path):
    """The guard against the two places drifting apart (topology/middlebox.py: one
    `Middlebox`, its site `Namespaces` here or `OnServers`): the same case, built in
    three namespaces of this machine and on the rig's three servers, takes the same
    steps in the same order, hands the matrix R's device toward A then toward B, and
    leaves the same features in force on them after the same profile (veths on both
    sides, so the kernel reads back the same) — and with R as offlab-fwd the same
    modes and port offloads in force; the servers are as before afterwards."""
    from offlab.hosts import hostsfile
    from offlab.hosts.offloads import OffloadControl
    from offlab.hosts.session import RemoteSession
    from offlab.run import plan as plans
    from offlab.topology import build
    from offlab.topology.remote_build import remote_builder

    before = lab.state()
    text = PLAN.format(runs=1, paths=["a-b"], routers=["kernel", "offlab-fwd"], mtu=1500).replace("'", '"')
    cases = [c for c in plans.parse(text, "drift.toml").cases if not c.profile.features["tcp-segmentation-offload"]]
    assert {c.topology["router"] for c in cases} == {"kernel", "offlab-fwd"}
    session = RemoteSession(hostsfile.load(lab.hosts_file), allow_forwarding=True)
    session.start()
    try:
        for case in cases:
            seen = {}
            for where, builder in (("here", build), ("servers", remote_builder(session))):
                with builder(case.scenario, case.mtu, case.topology) as topo:
                    interfaces = topo.offload_interfaces()
                    features = OffloadControl().apply(case.profile, interfaces)
                    datapath = topo.apply_datapath(case.datapath)
                    seen[where] = {
                        "steps": list(topo.steps),
                        "matrix": [(i.side, i.host is topo.node_host("r"), i.device) for i in interfaces],
                        "in force": [features[i.label] for i in interfaces],
                        "datapath": list(datapath.values()),
                        "roles": sorted(topo.roles),
                    }
            assert seen["here"]["matrix"] == [("router", True, "ofl-ar1"), ("router", True, "ofl-rb0")]
            assert seen["servers"]["matrix"] == [("router", True, "ofl-3r0"), ("router", True, "ofl-3r1")]
            for key in ("steps", "in force", "datapath", "roles"):
                assert seen["here"][key] == seen["servers"][key], (case.topology, key)
            routed = "R routes" if case.topology["router"] == "kernel" else "R bridges"
            assert seen["here"]["steps"] == ["nodes", "links", "mtu", "addresses", routed, "ends", "steering"]
            assert not seen["here"]["in force"][0]["tcp-segmentation-offload"].on
    finally:
        session.close()
    _nothing_left(lab, before)
