"""SIGINT in the middle of `offlab run`: exit 130, finished samples kept, no namespace
left, a resume line — and the resume completes the run."""

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from pyroute2 import netns

PLAN = """
name = "interrupt-test"
runs = 2
duration = 0.5
warmup = 0.5
scenarios = ["bare"]
mtus = [1500]
traffic = ["tcp"]
sequences = ["tx"]
"""
OFFLAB = [sys.executable, "-c", "from offlab.entry import main; main()"]


def samples(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db) as conn:
            return conn.execute("SELECT COUNT(*) FROM sample").fetchone()[0]
    except sqlite3.OperationalError:  # schema not created yet
        return 0


def test_sigint_keeps_samples_removes_namespaces_and_resumes(tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    out = tmp_path / "results"
    db = out / "offlab.sqlite"
    proc = subprocess.Popen([*OFFLAB, "run", "--plan", str(plan), "--out", str(out), "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while samples(db) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    kept = samples(db)
    assert 2 <= kept < 8
    assert [n for n in netns.listnetns() if n.startswith(f"ofl-{proc.pid}-")] == []
    resume = [line for line in stdout.splitlines() if line.startswith("resume with: offlab run --resume ")]
    assert resume, stdout
    run_id = resume[0].split("--resume ")[1].split()[0]
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT status FROM run WHERE id = ?", (run_id,)).fetchone()[0] == "interrupted"

    done = subprocess.run([*OFFLAB, "run", "--resume", run_id, "--out", str(out), "--no-progress"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM sample WHERE run_id = ?", (run_id,)).fetchone()[0] == 8
        assert conn.execute("SELECT status FROM run WHERE id = ?", (run_id,)).fetchone()[0] == "complete"
        reps = conn.execute("SELECT case_key, GROUP_CONCAT(repetition) FROM sample GROUP BY case_key").fetchall()
    assert all(sorted(r.split(",")) == ["0", "1"] for _, r in reps)
    assert (out / run_id / "report.md").exists()
    assert os.path.exists(db)
