"""Starting `offlab run` as a user would, and watching its store: shared by the tests that
interrupt or kill a run half-way."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

OFFLAB = [sys.executable, "-c", "from offlab.entry import main; main()"]


def samples(db: Path) -> int:
    """Samples committed to a store so far (0 before its schema exists)."""
    try:
        with sqlite3.connect(db) as conn:
            return conn.execute("SELECT COUNT(*) FROM sample").fetchone()[0]
    except sqlite3.Error:
        return 0


def start_run(args: list[str], db: Path, wait_for: int = 2, timeout: float = 120.0) -> subprocess.Popen:
    """`offlab run ARGS` in the background, returned once `wait_for` samples are stored
    (the test then checks it is still running)."""
    run = subprocess.Popen([*OFFLAB, "run", *args, "--no-progress"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + timeout
    while samples(db) < wait_for and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    return run


def stderr_after(run: subprocess.Popen) -> str:
    """A run's stderr for a failed wait's message: the run is killed first if it still
    runs, so the message never waits for the rest of its plan (a 20-run plan over SSH:
    many minutes)."""
    if run.poll() is None:
        run.kill()
    try:
        return run.communicate(timeout=30)[1]
    except subprocess.TimeoutExpired as late:  # a child of the run still holds its stderr
        said = late.stderr.decode(errors="replace") if isinstance(late.stderr, bytes) else late.stderr or ""
        return f"{said}\n(the run was killed; a process it started still held its stderr 30 s later)"


class ListSink:
    """A sink that keeps every sample in order (the store's seam, without a store)."""

    def __init__(self):
        self.records: list[tuple[str, object, object]] = []
        self.outcomes: list[object] = []
        self.stacks: list[tuple[str, str, dict]] = []

    def add_sample(self, run_id, case, sample):
        self.records.append((run_id, case, sample))

    def record_adaptive(self, run_id, outcome):
        self.outcomes.append(outcome)

    def record_stack(self, run_id, place, host, config):
        self.stacks.append((place, host, dict(config)))

    @property
    def samples(self) -> list[tuple[object, object]]:
        """(case, sample) in the order measured."""
        return [(case, sample) for _, case, sample in self.records]

    def by_profile(self) -> dict[str, tuple[object, object]]:
        return {case.profile.name: (case, sample) for case, sample in self.samples}
