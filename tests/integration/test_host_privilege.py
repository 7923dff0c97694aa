"""Least privilege on real hosts (issue 38), on the two OpenSSH "servers" of sshrig.py
reached as a non-root user, `ofl-lab`, with `sudo = true` and exactly the sudoers
snippet docs/real-hosts.md documents: a plan runs and restores, the traffic tools run as
that user (never root), a sudo that wants a password stops the run in one line before
anything changes, and each change is a line in the server's own syslog (server a's
/dev/log is a socket the rig reads, sshrig.py)."""

from __future__ import annotations

import json
import re
import shlex
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from offlab.hosts.journal import JOURNAL_DIR
from offlab.hosts.server import SERVER_DIR
from offlab.hosts.ssh import AUDIT_LOG

from .runs import OFFLAB, start_run
from .sshrig import PAIR

USER = "ofl-lab"
TRAFFIC = ("iperf3", "irtt", "sockperf", "offlab-udpload")
PLAN = """
name = "privilege"
runs = {runs}
duration = 1.5
warmup = 0.5
scenarios = ["bare"]
mtus = [1400]
traffic = ["tcp"]
sequences = ["all-on"]
"""


@pytest.fixture()
def lab(ssh_rigs):
    if not Path("/usr/bin/sudo").exists():
        pytest.skip("sudo is not installed (make setup-test)")
    with ssh_rigs.use(PAIR, user=USER) as rig:
        yield rig


def _plan(folder: Path, runs: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "plan.toml"
    path.write_text(PLAN.format(runs=runs))
    return path


def _run(lab, folder: Path, runs: int = 1) -> subprocess.CompletedProcess:
    return subprocess.run([*OFFLAB, "run", "--hosts", str(lab.hosts_file), "--plan", str(_plan(folder, runs)),
                           "--out", str(folder), "--yes", "--no-progress"], capture_output=True, text=True,
                          timeout=300)


def _state(lab) -> dict[str, tuple[str, str]]:
    """Per server: its test interface's MTU and features, as the kernel says."""
    found = {}
    for name, (device,) in lab.test_devices().items():
        server = lab.servers[name]
        found[name] = (server.run(["cat", f"/sys/class/net/{device}/mtu"]).stdout.strip(),
                       server.run(["ethtool", "-k", device]).stdout)
    return found


def _traffic_owners(lab, name: str) -> set[tuple[int, str]]:
    """(uid, command) of every traffic tool running on server `name` (ps over the pids
    of its namespace)."""
    pids = lab.servers[name].namespace
    listed = subprocess.run(["ip", "netns", "pids", pids], capture_output=True, text=True).stdout.split()
    if not listed:
        return set()
    ps = subprocess.run(["ps", "-o", "uid=,comm=", "-p", ",".join(listed)], capture_output=True, text=True)
    rows = (line.split(None, 1) for line in ps.stdout.splitlines() if line.strip())
    return {(int(uid), comm.strip()) for uid, comm in rows if comm.strip() in TRAFFIC}


def _program(audited: str) -> tuple[str, bool]:
    """The program an audited command line ran (past `taskset -c CORE`), and whether
    through `sudo -n`. Read here from the line itself, not through offlab's own table."""
    words = shlex.split(re.sub(r" \[lease [^]]*\]$", "", audited))
    sudo = words[:2] == ["sudo", "-n"]
    words = words[2:] if sudo else words
    words = words[3:] if words[:1] == ["taskset"] else words
    return (words[0].rsplit("/", 1)[-1] if words else ""), sudo


def _audit_since(count: int) -> list[dict]:
    lines = AUDIT_LOG.read_text().splitlines() if AUDIT_LOG.exists() else []
    return [json.loads(line) for line in lines[count:]]


def _audit_count() -> int:
    return len(AUDIT_LOG.read_text().splitlines()) if AUDIT_LOG.exists() else 0


def test_a_plan_as_a_non_root_user_completes_with_the_traffic_tools_as_that_user(lab, tmp_path):
    """The run logs in as ofl-lab; while it measures, every iperf3 on either server is
    ofl-lab's (ps in the server's namespace), root commands went through `sudo -n` and
    the traffic tools did not; at the end the run is complete and both servers are as
    before, nothing held, no journal left."""
    before = _state(lab)
    audited = _audit_count()
    db = tmp_path / "offlab.sqlite"
    run = start_run(["--hosts", str(lab.hosts_file), "--plan", str(_plan(tmp_path, 4)), "--out", str(tmp_path),
                     "--yes"], db, wait_for=1, timeout=180)
    seen: dict[str, set[tuple[int, str]]] = {"a": set(), "b": set()}
    try:
        assert run.poll() is None, run.communicate()[1]
        deadline = time.monotonic() + 60
        while run.poll() is None and not (seen["a"] and seen["b"]) and time.monotonic() < deadline:
            for name in seen:
                seen[name] |= _traffic_owners(lab, name)
            time.sleep(0.1)
        out, err = run.communicate(timeout=240)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 0, err
    assert seen["a"] and seen["b"], "no traffic tool seen on the servers while the run measured"
    assert {uid for owners in seen.values() for uid, _ in owners} == {lab.uid}, seen
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT status FROM run").fetchone()[0] == "complete"
    commands = [entry["command"] for entry in _audit_since(audited)]
    assert any(c.startswith("sudo -n ip link set dev ofl-tb0 mtu 1400") for c in commands), commands
    assert any(c.startswith("sudo -n ethtool -K") for c in commands)
    ran = [_program(command) for command in commands]
    assert {name for name, _ in ran} & set(TRAFFIC)
    assert not [name for name, sudo in ran if sudo and name in TRAFFIC], commands
    # The CPU sampler's per-thread clocks: a shell for the glob, a read, so not root.
    reads = [c for c in commands if "/task/*/schedstat" in c]
    assert reads and not [c for c in reads if c.startswith("sudo -n")], reads
    assert _state(lab) == before
    assert not list(JOURNAL_DIR.glob("*.json")) and not Path(SERVER_DIR).exists()


def test_a_server_where_sudo_wants_a_password_is_one_line_and_nothing_changes(lab, tmp_path):
    """The same sudoers lines without NOPASSWD: the run stops at its first root command
    with one line naming sudo's password and the fix, exit 1, and the servers, the
    controller's journals and /var/lib/offlab are as before."""
    before = _state(lab)
    lab.set_sudoers(password=True)
    try:
        done = _run(lab, tmp_path / "run")
    finally:
        lab.set_sudoers()
    # A "warning:" of the controller's own (a busy machine) may precede it.
    said = [line for line in done.stderr.splitlines() if line.strip() and not line.lstrip().startswith("warning:")]
    assert done.returncode == 1, done.stdout + done.stderr
    assert len(said) == 1 and "sudo -n asks for a password" in said[0] and "sudoers" in said[0], said
    assert _state(lab) == before
    assert not list(JOURNAL_DIR.glob("*.json")) and not Path(SERVER_DIR).exists()


def test_each_change_on_a_server_is_a_line_in_its_syslog(lab, tmp_path):
    """Server a's syslog (its /dev/log, which `logger` writes to) gets offlab's lines: the
    hold, the MTU the run set on its test interface (journaled there before the change),
    the release. (The rig's two servers are one kernel, held once, through server a.)"""
    syslog = lab.pool.syslog("a")
    seen = len(syslog.lines())
    done = _run(lab, tmp_path / "run")
    assert done.returncode == 0, done.stderr
    lines = [line for line in syslog.lines()[seen:] if re.search(r"\bofflab(\[\d+\])?: ", line)]
    assert any(re.search(r"offlab(\[\d+\])?: held for a run by ", line) for line in lines), lines
    assert any(re.search(r"offlab(\[\d+\])?: tx: mtu ofl-ta0: 1500 -> 1400$", line) for line in lines), lines
    assert any(re.search(r"offlab(\[\d+\])?: released by ", line) for line in lines), lines
