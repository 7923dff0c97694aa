"""Many writers into one PostgreSQL store: two lab instances on this machine (each its
own runtime directory and machine lock, OFFLAB_RUNTIME_DIR, and its own namespaces) run
`offlab run` at the same time into one database; both complete, with distinct run ids,
and every sample of each is there once, in its own run, as measured."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sqlalchemy import create_engine, text

from offlab.run.plan import load
from offlab.store.location import parse
from offlab.store.store import Store

PLAN = """
name = "two-writers"
runs = 2
duration = 0.5
warmup = 0.5
scenarios = ["bare"]
mtus = [1500]
traffic = ["tcp"]
sequences = ["tx"]
"""
OFFLAB = [sys.executable, "-c", "from offlab.entry import main; main()"]


def _writers(url: str) -> dict[int, str]:
    """offlab process id → the run it wrote (the store's own record of its writer)."""
    engine = create_engine(parse(url).url)
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT id, writer FROM run")).all()
    engine.dispose()
    return {writer["pid"]: run_id for run_id, writer in rows}  # JSONB: a dict


def test_two_lab_instances_write_one_postgresql_store_at_once(tmp_path: Path, pg_url: str):
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    procs = {}
    for lab in ("a", "b"):
        env = dict(os.environ, OFFLAB_RUNTIME_DIR=str(tmp_path / f"lab-{lab}"))
        procs[lab] = subprocess.Popen(
            [*OFFLAB, "run", "--plan", str(plan), "--store", pg_url, "--out", str(tmp_path / lab),
             "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    outputs = {lab: proc.communicate(timeout=300) for lab, proc in procs.items()}
    for lab, proc in procs.items():
        assert proc.returncode == 0, outputs[lab][1]

    runs = _writers(pg_url)
    assert set(runs) == {proc.pid for proc in procs.values()} and len(set(runs.values())) == 2
    planned = load(str(plan)).cases
    with Store(pg_url, readonly=True) as store:
        results = {lab: store.load_run(runs[proc.pid]) for lab, proc in procs.items()}
    a, b = results["a"], results["b"]
    assert a.info.started_at < b.finished_at and b.info.started_at < a.finished_at  # they overlapped
    for lab, run in results.items():
        assert f"report: {tmp_path / lab / run.info.run_id}" in outputs[lab][0]  # each its own run
        assert run.status == "complete" and run.cases == planned
        for case in planned:
            samples = run.samples[case.key]
            assert [s.repetition for s in samples] == [0, 1]
            for sample in samples:
                assert run.info.started_at <= sample.started_at <= run.finished_at
                assert sample.throughput_bps > 0 and sample.cpu and sample.offloads
    assert sum(len(v) for r in results.values() for v in r.samples.values()) == 2 * 2 * len(planned)


def _stored_samples(pg_server, database: str) -> int:
    with pg_server.admin(database) as conn:
        return conn.execute("SELECT count(*) FROM sample").fetchone()[0]


def test_a_server_restart_during_a_run_loses_no_sample(tmp_path: Path, pg_server, pg_url: str):
    """The run's pooled connection idles through each measurement; the server restarts
    meanwhile (every connection cut). Before pre-ping and the retry, the next sample's
    write failed and the run was marked failed."""
    import time
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.replace("runs = 2", "runs = 3"))
    database = parse(pg_url).url.database
    proc = subprocess.Popen([*OFFLAB, "run", "--plan", str(plan), "--store", pg_url, "--out", str(tmp_path),
                             "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while _stored_samples(pg_server, database) < 1 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    pg_server.restart()
    restarted_after = _stored_samples(pg_server, database)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    planned = load(str(plan)).cases
    with Store(pg_url, readonly=True) as store:
        (run_id,) = store.run_ids()
        results = store.load_run(run_id)
    assert results.status == "complete"
    assert restarted_after < 3 * len(planned)  # the restart came before the run's end
    for case in planned:
        assert [s.repetition for s in results.samples[case.key]] == [0, 1, 2]
