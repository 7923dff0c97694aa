"""`kill -9` of `offlab run` in every kind of plan — bare, VXLAN, a VM path through
offlab-fwd, the middlebox with R as offlab-fwd: after the next start (`offlab doctor
--clean` here) nothing of the killed run is left — no namespace, no device, no process,
no temporary file — its samples are intact, and the next run marks it interrupted."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
from pathlib import Path

import pytest
from pyroute2 import netns

from offlab.topology.fwd import FwdError, find_binary
from offlab.runscope import RUNTIME_ROOT, cgroup2_root

from .runs import OFFLAB, samples, start_run

BASE = """
name = "kill9-{name}"
runs = 20
duration = 0.5
warmup = 0.5
mtus = [1500]
traffic = ["tcp"]
"""
PLANS = {
    "bare": 'scenarios = ["bare"]\nsequences = ["tx"]\n',
    "vxlan": 'scenarios = ["vxlan"]\nsequences = ["tx"]\n',
    "vm": 'scenarios = ["vm2vm"]\ndatapath = ["gro"]\n',
    "middlebox": 'scenarios = ["middlebox"]\npaths = ["a-b"]\nrouter = ["offlab-fwd"]\nmatrix = ["gro"]\n',
}


def _fwd_missing() -> bool:
    try:
        find_binary()
    except FwdError:
        return True
    return False


def _descendants(pid: int) -> set[int]:
    """Processes started (directly or not) by `pid`, found through /proc."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("name", sorted(PLANS))
def test_kill_9_leaves_nothing_after_the_next_start(tmp_path: Path, name: str):
    if name in ("vm", "middlebox") and _fwd_missing():
        pytest.skip("offlab-fwd is not built (make build)")
    plan = tmp_path / "plan.toml"
    plan.write_text(BASE.format(name=name) + PLANS[name])
    db = tmp_path / "results" / "offlab.sqlite"
    run = start_run(["--plan", str(plan), "--out", str(db.parent)], db)
    assert run.poll() is None, run.communicate()[1]
    started = _descendants(run.pid)  # iperf3 server/client, offlab-fwd, irtt …
    kept = samples(db)
    run.send_signal(signal.SIGKILL)
    run.wait(timeout=10)
    ours = [n for n in netns.listnetns() if n.startswith(f"ofl-{run.pid}-")]
    assert ours, "the killed run should have left its namespaces behind for the test to mean anything"

    cleaned = subprocess.run([*OFFLAB, "doctor", "--clean"], capture_output=True, text=True, timeout=60)
    assert "removed" in cleaned.stdout, cleaned.stdout + cleaned.stderr
    assert [n for n in netns.listnetns() if n.startswith(f"ofl-{run.pid}-")] == []
    assert [p for p in started if _alive(p)] == []
    assert not (RUNTIME_ROOT / f"run-{run.pid}").exists()
    root = cgroup2_root()
    if root is not None:
        assert not (root / "offlab" / f"run-{run.pid}").exists()
    assert samples(db) >= kept  # every committed sample is still there

    # The next run on that store says what happened to the killed one.
    tiny = tmp_path / "tiny.toml"
    tiny.write_text(BASE.format(name="next").replace("runs = 20", "runs = 1") + 'scenarios = ["bare"]\nsequences = ["all-on"]\n')
    after = subprocess.run([*OFFLAB, "run", "--plan", str(tiny), "--out", str(db.parent), "--no-progress"],
                           capture_output=True, text=True, timeout=120)
    assert after.returncode == 0, after.stderr
    assert "was killed: marked interrupted" in after.stderr
    with sqlite3.connect(db) as conn:
        statuses = dict(conn.execute("SELECT plan, status FROM run").fetchall())
    assert statuses[str(plan)] == "interrupted" and statuses[str(tiny)] == "complete"
    assert os.geteuid() == 0
