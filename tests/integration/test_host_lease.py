"""What an SRE asks of offlab on real hosts (issue 38), on the two OpenSSH "servers"
of sshrig.py: the run's lease (hosts/lease.py) — a controller that comes back after its
servers restored themselves and another controller took them touches nothing there and
marks its run interrupted —, old journals that never block a run, the audit, the
watchdog outside the SSH session, the lockout guard on real routing layouts, and a
management-network outage mid-run. The scenarios share one module-scoped rig (each
rig costs a minute to start)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from offlab.hosts import hostsfile
from offlab.hosts.files import CACHE_DIR
from offlab.hosts.base import HostError
from offlab.hosts.guard import check_servers
from offlab.hosts.journal import JOURNAL_DIR
from offlab.hosts.session import RemoteSession
from offlab.hosts.server import SERVER_DIR
from offlab.hosts.ssh import AUDIT_LOG

from .runs import OFFLAB, samples, start_run
from .sshrig import MGMT, PAIR, WATCHDOG_S

PLAN = """
name = "lease"
runs = {runs}
duration = 1.0
warmup = 1.0
scenarios = ["bare"]
mtus = [{mtu}]
traffic = ["tcp"]
sequences = ["all-on"]
"""


@pytest.fixture()
def lab(ssh_rigs):
    with ssh_rigs.use(PAIR) as rig:
        yield rig


def _mtu(lab, name: str, device: str) -> int:
    return int(lab.servers[name].run(["cat", f"/sys/class/net/{device}/mtu"]).stdout)


def _plan(folder: Path, runs: int, mtu: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "plan.toml"
    path.write_text(PLAN.format(runs=runs, mtu=mtu))
    return path


def _wait(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.2)
    return condition()


class MtuWatch:
    """The receiver's MTU, read in its namespace every 0.1 s, with the time of each read."""

    def __init__(self, lab):
        self.lab = lab
        self.readings: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(0.1):
            self.readings.append((time.time(), _mtu(self.lab, "b", "ofl-tb0")))

    def __enter__(self) -> "MtuWatch":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _run_row(db: Path) -> tuple[str, str]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT status, notes FROM run").fetchone()


def _sample_ends(db: Path) -> list[float]:
    with sqlite3.connect(db) as conn:
        return [row[0] for row in conn.execute("SELECT started_at + duration_s FROM sample")]


def test_a_controller_frozen_past_the_watchdog_comes_back_fenced(lab, tmp_path):
    """Controller A holds the servers at MTU 1400 and is frozen (SIGSTOP) past the
    watchdog: the servers restore themselves. Controller B (its own runtime directory,
    journal and store, as on another machine) takes them at MTU 1300. A resumed: every
    command it sends is refused by the token check on the server, so B's samples are
    all taken at 1300 (the receiver's MTU, watched, never leaves 1300 before B's last
    sample ends) and A's run is marked interrupted with the lease as its reason."""
    db_a = tmp_path / "a" / "offlab.sqlite"
    run_a = start_run(["--hosts", str(lab.hosts_file), "--plan", str(_plan(tmp_path / "a", 30, 1400)),
                       "--out", str(db_a.parent), "--yes"], db_a, wait_for=1)
    run_b = None
    b_root = Path(tempfile.mkdtemp(prefix="ofl-b-"))
    try:
        assert run_a.poll() is None, run_a.communicate()[1]
        assert _mtu(lab, "b", "ofl-tb0") == 1400
        run_a.send_signal(signal.SIGSTOP)
        assert _wait(lambda: not Path(SERVER_DIR).exists(), WATCHDOG_S + 40), "the watchdog did not restore"
        assert _mtu(lab, "b", "ofl-tb0") == 1500

        db_b = tmp_path / "b" / "offlab.sqlite"
        # Short: ssh's control socket path under it must stay under 108 bytes.
        env = dict(os.environ, OFFLAB_RUNTIME_DIR=str(b_root / "run"), OFFLAB_STATE_DIR=str(b_root / "state"))
        run_b = subprocess.Popen([*OFFLAB, "run", "--hosts", str(lab.hosts_file), "--plan",
                                  str(_plan(tmp_path / "b", 8, 1300)), "--out", str(db_b.parent), "--yes",
                                  "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env=env)
        assert _wait(lambda: samples(db_b) >= 1 or run_b.poll() is not None, 120)
        assert run_b.poll() is None, run_b.communicate()[1]
        with MtuWatch(lab) as watch:
            run_a.send_signal(signal.SIGCONT)
            a_out, a_err = run_a.communicate(timeout=120)
            b_out, b_err = run_b.communicate(timeout=240)
        b_journals = list((b_root / "state" / "journal").glob("*.json"))
    finally:
        for process in (run_a, run_b):
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGCONT)
                process.kill()
                process.wait()
        shutil.rmtree(b_root, ignore_errors=True)

    assert run_b.returncode == 0, b_err
    assert run_a.returncode == 1 and "lease" in a_err.strip().splitlines()[-1], a_err
    status, notes = _run_row(db_a)
    assert status == "interrupted" and "lease on the" in notes, (status, notes)
    assert samples(db_a) >= 1  # what A measured before it froze is kept
    assert _run_row(db_b)[0] == "complete"
    changed = [when for when, mtu in watch.readings if mtu != 1300]
    last_b = max(_sample_ends(db_b))
    assert not changed or min(changed) >= last_b, "the receiver left MTU 1300 while B measured"
    assert _mtu(lab, "b", "ofl-tb0") == 1500 and _mtu(lab, "a", "ofl-ta0") == 1500
    assert not list(JOURNAL_DIR.glob("*.json")) and not b_journals
    assert not Path(SERVER_DIR).exists()


def _audit_lines() -> list[dict]:
    return [json.loads(line) for line in AUDIT_LOG.read_text().splitlines()] if AUDIT_LOG.exists() else []


def test_an_unreachable_old_journal_blocks_no_run_and_can_be_forgotten(lab, tmp_path):
    """A killed run's journal of a server that can no longer be reached: a run to other
    servers starts (only this run's servers' journals are replayed first), `offlab
    restore` names it and the way out, and `--forget` drops it with a warning of what
    may be left. The run's spawned processes and the restore's attempt are audited with
    their exit status."""
    gone = JOURNAL_DIR / "ofltestgone.json"
    JOURNAL_DIR.mkdir(parents=True, exist_ok=True)
    gone.write_text(json.dumps({
        "spec": {"role": "sender", "ssh": "ofl-gone.invalid", "interface": "eth9", "address": "10.9.0.1",
                 "peer": "10.9.0.2", "app_core": 0},
        "ssh_config": str(lab.ssh_config),
        "identity": {"machine_id": "0" * 32, "boot_id": "b", "mac": "02:00:00:00:00:09"},
        "changes": [{"kind": "mtu", "target": "eth9", "old": "1500", "new": "9000",
                     "undo": [["ip", "link", "set", "dev", "eth9", "mtu", "1500"]]}],
        "token": "elsewhere pid 1", "version": 2}))
    audited = _audit_lines()
    try:
        done = subprocess.run([*OFFLAB, "run", "--hosts", str(lab.hosts_file), "--plan",
                               str(_plan(tmp_path / "r", 1, 1400)), "--out", str(tmp_path / "r"), "--yes",
                               "--no-progress"], capture_output=True, text=True, timeout=240)
        assert done.returncode == 0, done.stderr
        assert gone.exists()  # not this run's server: left for `offlab restore`
        # Every spawned process's end is audited with its exit status.
        run_lines = _audit_lines()[len(audited):]
        ends = [e for e in run_lines if e.get("event") == "end" and "iperf3" in e["command"]]
        assert ends and all(isinstance(e["status"], int) for e in ends)
        restore = subprocess.run([*OFFLAB, "restore"], capture_output=True, text=True, timeout=60)
        assert restore.returncode == 1 and "NOT restored sender (ofl-gone.invalid)" in restore.stdout
        assert "--forget" in restore.stderr and gone.exists()
        # The restore's attempt is in the controller's audit log, with ssh's status.
        assert any(e["ssh"] == "ofl-gone.invalid" and e["status"] == 255 for e in _audit_lines()[len(audited):])
        forgot = subprocess.run([*OFFLAB, "restore", "--forget", "ofl-gone.invalid"], capture_output=True,
                                text=True, timeout=60)
        assert forgot.returncode == 0, forgot.stderr
        assert "journal forgotten" in forgot.stderr and "mtu eth9" in forgot.stderr
        assert not gone.exists()
    finally:
        gone.unlink(missing_ok=True)
    assert _mtu(lab, "a", "ofl-ta0") == 1500 and not Path(SERVER_DIR).exists()


def test_a_purge_is_audited_on_the_controller_and_in_the_servers_syslog(lab):
    """`offlab restore --purge` removes offlab's files from every server with `rm -rf`
    as root: each removal is a line of the controller's audit log with its exit status,
    and a line in the server's own syslog (server a's /dev/log, which the rig reads)."""
    syslog = lab.pool.syslog("a")
    logged, audited = len(syslog.lines()), len(_audit_lines())
    done = subprocess.run([*OFFLAB, "restore", "--purge", "--hosts", str(lab.hosts_file)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    removals = [e for e in _audit_lines()[audited:] if "rm -rf" in e["command"] and CACHE_DIR in e["command"]]
    assert {e["ssh"] for e in removals} == {"hosta", "hostb"}, "the purge's rm -rf is not in the audit log"
    assert all(e["status"] == 0 for e in removals), removals
    assert any("offlab restore --purge" in line for line in syslog.lines()[logged:]), syslog.lines()[logged:]


def test_doctor_clean_replays_a_killed_run_audited_on_the_controller_and_in_the_servers_syslog(lab, tmp_path):
    """A run killed with `kill -9` whose servers cannot restore themselves (their
    watchdogs killed too): `offlab doctor --clean --hosts` replays its journal — each
    undo it sends is a line of the controller's audit log with its exit status, and
    each thing it put back a line in the server's own syslog naming the run's token."""
    syslog = lab.pool.syslog("a")
    logged, audited = len(syslog.lines()), len(_audit_lines())
    db = tmp_path / "r" / "offlab.sqlite"
    run = start_run(["--hosts", str(lab.hosts_file), "--plan", str(_plan(tmp_path / "r", 30, 1400)),
                     "--out", str(db.parent), "--yes"], db, wait_for=1)
    try:
        assert run.poll() is None, run.communicate()[1]
        run.send_signal(signal.SIGKILL)
        run.wait()
        watchdogs = _watchdogs()
        for pid in watchdogs:  # well before their watchdog_s: nothing restored yet
            os.kill(pid, signal.SIGKILL)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert watchdogs and _mtu(lab, "a", "ofl-ta0") == 1400 and list(JOURNAL_DIR.glob("*.json"))
    doctor = subprocess.run([*OFFLAB, "doctor", "--clean", "--hosts", str(lab.hosts_file)], capture_output=True,
                            text=True, timeout=240)
    assert "restored sender: mtu ofl-ta0 1500" in doctor.stdout, doctor.stdout + doctor.stderr
    assert _mtu(lab, "a", "ofl-ta0") == 1500 and _mtu(lab, "b", "ofl-tb0") == 1500
    assert not list(JOURNAL_DIR.glob("*.json")) and not Path(SERVER_DIR).exists()
    undo = [e for e in _audit_lines()[audited:]
            if e["ssh"] == "hosta" and "ip link set dev ofl-ta0 mtu 1500" in e["command"]]
    assert undo, "doctor --clean's undo of the MTU is not in the controller's audit log"
    assert all(e["status"] == 0 for e in undo), undo
    assert any(re.search(r"offlab(\[\d+\])?: restore of .+: sender: mtu ofl-ta0 1500$", line)
               for line in syslog.lines()[logged:]), syslog.lines()[logged:]


def _watchdogs() -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            line = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"offlab-watchdog" in line and SERVER_DIR.encode() in line:
            found.append(int(proc.name))
    return found


def test_the_watchdog_has_a_cgroup_of_its_own_and_a_stale_hold_is_named(lab, tmp_path):
    """The watchdog leaves the SSH session's cgroup (killing the session's processes must
    not kill it); `doctor --hosts` lists it; a hold whose watchdog is gone is refused as
    stale, with the way to clear it. A watchdog that had to mount cgroup2 privately (under
    `ip netns exec`) leaves no mount point behind in /tmp."""
    mount_points = set(Path("/tmp").glob("tmp.*"))
    session = RemoteSession(hostsfile.load(lab.hosts_file), journal_dir=tmp_path / "journal")
    session.start()
    try:
        pids = _watchdogs()
        assert pids
        for pid in pids:
            assert "offlab-watchdog/" in Path(f"/proc/{pid}/cgroup").read_text()
        assert set(Path("/tmp").glob("tmp.*")) <= mount_points
        doctor = subprocess.run([*OFFLAB, "doctor", "--hosts", str(lab.hosts_file)], capture_output=True,
                                text=True, timeout=120)
        assert "offlab hold" in doctor.stdout and "watchdog of" in doctor.stdout, doctor.stdout
        session._heartbeat.stop()  # the controller goes silent …
        for pid in pids:  # … and its watchdogs are gone too
            os.kill(pid, signal.SIGKILL)
        time.sleep(WATCHDOG_S + 2)  # the heartbeat must be older than watchdog_s
        with pytest.raises(HostError, match="a stale hold .* no watchdog runs there"):
            RemoteSession(hostsfile.load(lab.hosts_file), journal_dir=tmp_path / "other").start()
    finally:
        shutil.rmtree(SERVER_DIR, ignore_errors=True)  # the documented clearing, once checked
        session.close()
    assert not Path(SERVER_DIR).exists()


LAYOUTS = {
    "multipath": [("route", "add", "default", "nexthop", "via", "10.240.1.1", "dev", "mgmt0",
                   "nexthop", "via", "10.241.0.2", "dev", "ofl-ta0")],
    "nexthop group": [("nexthop", "add", "id", "71", "via", "10.241.0.2", "dev", "ofl-ta0"),
                      ("nexthop", "add", "id", "72", "via", "10.240.1.1", "dev", "mgmt0"),
                      ("nexthop", "add", "id", "70", "group", "71/72"),
                      ("route", "add", "default", "nhid", "70")],
    "IPv6 in another table": [("-6", "route", "add", "default", "dev", "ofl-ta0", "table", "100")],
}
UNDO = {
    "multipath": [("route", "del", "default")],
    "nexthop group": [("route", "del", "default"), ("nexthop", "flush")],
    "IPv6 in another table": [("-6", "route", "flush", "table", "100")],
}


def test_the_lockout_guard_sees_every_default_route_layout(lab):
    """Each layout built in the sender's namespace, the test interface carrying a default
    route only through it: an ECMP route's next hops, a nexthop group (`nhid`), an IPv6
    default in a table other than main. Each is refused before anything changes."""
    hosts = hostsfile.load(lab.hosts_file)
    server = lab.servers["a"]
    for layout, commands in LAYOUTS.items():
        for command in commands:
            server.ip(*command)
        try:
            with pytest.raises(HostError, match="default route.* leaves by ofl-ta0"):
                check_servers(hosts, allow_shared=False)
        finally:
            for command in UNDO[layout]:
                server.ip(*command, check=False)
    assert check_servers(hosts, allow_shared=False) == []


def test_the_lockout_guard_sees_an_upper_device_in_another_namespace(lab):
    """A macvlan on the test interface moved into a named namespace (a container's, as
    Docker's macvlan network or a CNI plugin leaves it): the root namespace no longer
    shows it, its traffic still goes through the test interface — refused before
    anything changes, naming the device and the namespace; and only on the server whose
    interface it sits on."""
    namespace = f"ofl-l38-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", namespace], check=True)
    try:
        server = lab.servers["a"]
        server.ip("link", "add", "ofl-mv38", "link", "ofl-ta0", "type", "macvlan", "mode", "bridge")
        server.ip("link", "set", "ofl-mv38", "netns", namespace)
        with pytest.raises(HostError, match=f"ofl-mv38 \\(macvlan\\) in namespace {namespace} sits on ofl-ta0"):
            check_servers(hostsfile.load(lab.hosts_file), allow_shared=False)
        # Only the sender's: server b's test interface has the same ifindex in its own
        # namespace (an ifindex is per namespace), and nothing sits on it.
        found = [w for w in check_servers(hostsfile.load(lab.hosts_file), allow_shared=True) if "ofl-mv38" in w]
        assert found == [f"sender (hosta): ofl-mv38 (macvlan) in namespace {namespace} sits on ofl-ta0 "
                         "(--allow-shared-interface)"], found
    finally:
        subprocess.run(["ip", "netns", "del", namespace], check=False)  # the macvlan goes with it
    assert check_servers(hostsfile.load(lab.hosts_file), allow_shared=False) == []


POLICY_TABLE = "238"


def _rp_filter(read) -> str:
    return read("/proc/sys/net/ipv4/conf/all/rp_filter").strip()


def _tx_packets(lab, name: str, device: str) -> int:
    return int(lab.servers[name].run(["cat", f"/sys/class/net/{device}/statistics/tx_packets"]).stdout)


def test_the_lockout_guard_follows_policy_routing_to_the_ssh_session(lab):
    """A policy rule on the sender sends its SSH replies — source its SSH address,
    destination the controller — out of the test interface (table 238: to the receiver,
    which forwards them on to the controller over its own management link). The main
    table still says the management interface, so a guard that asks only it (`ip route
    get CLIENT`) passes a run that would cut its own session; asked `from` the address
    the session arrived at, as the kernel routes the replies, it is refused. The session
    still works meanwhile: the replies really leave by the test interface."""
    controller, server_address = MGMT["a"][2], MGMT["a"][3]
    sender, receiver = lab.servers["a"], lab.servers["b"]
    forwarding = receiver.read_file("/proc/sys/net/ipv4/ip_forward").strip()
    strict = [space for space in (sender, receiver) if _rp_filter(space.read_file) == "1"]
    if strict or _rp_filter(lambda path: Path(path).read_text()) == "1":
        pytest.skip("strict reverse-path filtering drops the asymmetric SSH replies this layout needs")
    # The receiver forwards the sender's replies to the controller (its management link).
    receiver.run(["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"])
    receiver.ip("route", "add", f"{controller}/32", "via", MGMT["b"][2], "dev", "mgmt0")
    receiver.ip("route", "add", f"{server_address}/32", "via", "10.241.0.1", "dev", "ofl-tb0")
    sender.ip("route", "add", f"{controller}/32", "via", "10.241.0.2", "dev", "ofl-ta0", "table", POLICY_TABLE)
    sender.ip("rule", "add", "from", server_address, "to", controller, "lookup", POLICY_TABLE,
              "priority", POLICY_TABLE)
    try:
        main = json.loads(sender.ip("-j", "route", "get", controller).stdout)[0]["dev"]
        assert main == "mgmt0", "the main table must still say the management link"
        before = _tx_packets(lab, "a", "ofl-ta0")
        reached = subprocess.run(["ssh", "-F", str(lab.ssh_config), "-o", "BatchMode=yes", "hosta", "true"],
                                 capture_output=True, text=True, timeout=60)
        assert reached.returncode == 0, reached.stderr  # the session works over the test link
        assert _tx_packets(lab, "a", "ofl-ta0") - before >= 5, "the SSH replies did not leave by ofl-ta0"
        with pytest.raises(HostError, match="offlab's own SSH session \\(from 10.240.1.1\\) runs over ofl-ta0"):
            check_servers(hostsfile.load(lab.hosts_file), allow_shared=False)
    finally:
        sender.ip("rule", "del", "priority", POLICY_TABLE, check=False)
        sender.ip("route", "flush", "table", POLICY_TABLE, check=False)
        receiver.ip("route", "del", f"{server_address}/32", check=False)
        receiver.ip("route", "del", f"{controller}/32", check=False)
        receiver.run(["sysctl", "-q", "-w", f"net.ipv4.ip_forward={forwarding}"])
    assert check_servers(hostsfile.load(lab.hosts_file), allow_shared=False) == []


def test_a_management_network_outage_mid_run_stops_cleanly_and_keeps_every_sample(lab, tmp_path):
    """The SSH path to the sender is down for 30 s mid-run (its management veth down):
    the servers' watchdog restores them once the heartbeat is older than watchdog_s; the
    run then survives or stops, keeping every sample it finished; afterwards both
    servers are as before, nothing is held, and `offlab restore` leaves no journal."""
    management = MGMT["a"][0]
    db = tmp_path / "r" / "offlab.sqlite"
    run = start_run(["--hosts", str(lab.hosts_file), "--plan", str(_plan(tmp_path / "r", 30, 1400)),
                     "--out", str(db.parent), "--yes"], db, wait_for=1)
    try:
        assert run.poll() is None, run.communicate()[1]
        kept = samples(db)
        subprocess.run(["ip", "link", "set", management, "down"], check=True)
        try:
            time.sleep(30)
        finally:
            subprocess.run(["ip", "link", "set", management, "up"], check=True)
        out, err = run.communicate(timeout=240)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    with sqlite3.connect(db) as conn:
        status = conn.execute("SELECT status FROM run").fetchone()[0]
    assert status in ("complete", "interrupted", "failed") and samples(db) >= kept
    restored = subprocess.run([*OFFLAB, "restore"], capture_output=True, text=True, timeout=120)
    assert restored.returncode == 0, restored.stdout + restored.stderr
    assert not list(JOURNAL_DIR.glob("*.json")) and not Path(SERVER_DIR).exists()
    assert _mtu(lab, "a", "ofl-ta0") == 1500 and _mtu(lab, "b", "ofl-tb0") == 1500
