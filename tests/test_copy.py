"""`offlab copy`: runs between a SQLite file and PostgreSQL, both ways, read back equal;
a second copy changes nothing; a clash is one line and nothing is copied."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from fixtures.make_store import build_store, fixture_cases, fixture_run_info, make_samples
from offlab.analysis.adaptive import AdaptiveOutcome
from offlab.store.runcopy import copy_runs
from offlab.store.store import Store, StoreError
from hangguard import HANG_S

OFFLAB = [sys.executable, "-c", "from offlab.entry import main; main()"]


def _laptop(path: Path) -> list[str]:
    """A store with the fixture run (adaptive outcome and all) and a short second run."""
    first = build_store(path, runs=3)
    import random
    with Store(path) as store:
        store.record_adaptive(first, AdaptiveOutcome(fixture_cases()[0].key, 0.05, 3, 10, 3, 0.04, True))
        second = store.begin_run(replace(fixture_run_info(), run_id="second", started_at=2e9),
                                 campaign=("camp-1", "pair-a"))
        for sample in make_samples(fixture_cases()[1], random.Random(3), runs=2):
            store.add_sample(second, fixture_cases()[1], sample)
        store.finish_run(second, "interrupted", finished_at=2e9 + 60)
    return [first, second]


def test_sqlite_to_postgresql_and_back_reads_back_equal(tmp_path, pg_url):
    laptop, back = tmp_path / "laptop.sqlite", tmp_path / "back.sqlite"
    run_ids = _laptop(laptop)
    copied = copy_runs(run_ids, laptop, pg_url)
    assert [(c.run_id, c.already) for c in copied] == [(r, False) for r in run_ids]
    copy_runs(run_ids, pg_url, back)
    with Store(laptop, readonly=True) as a, Store(pg_url, readonly=True) as b, Store(back, readonly=True) as c:
        for run_id in run_ids:
            original = a.load_run(run_id)
            assert b.load_run(run_id) == original and c.load_run(run_id) == original
        assert c.load_run("second").campaign == ("camp-1", "pair-a")
        assert [r.status for r in b.runs()] == ["complete", "interrupted"]


def test_a_second_copy_changes_nothing(tmp_path, store_at):
    laptop = tmp_path / "laptop.sqlite"
    run_ids = _laptop(laptop)
    copy_runs(run_ids[:1], laptop, store_at)
    again = copy_runs(run_ids, laptop, store_at)
    assert [c.already for c in again] == [True, False]
    with Store(store_at, readonly=True) as dest:
        assert [r.id for r in dest.runs()] == run_ids


def test_a_clash_is_refused_and_nothing_copied(tmp_path, store_at):
    laptop, other = tmp_path / "laptop.sqlite", tmp_path / "other.sqlite"
    run_ids = _laptop(laptop)
    build_store(other, seed=99, runs=3)  # another run under the fixture's id
    copy_runs(["fixture-run"], other, store_at)
    with pytest.raises(StoreError) as refused:
        copy_runs(["second", "fixture-run"], laptop, store_at)
    message = str(refused.value)
    assert message.startswith("run fixture-run clashes") and "nothing copied" in message and "\n" not in message
    with Store(store_at, readonly=True) as dest:
        assert [r.id for r in dest.runs()] == ["fixture-run"]  # "second" was not copied either
    assert run_ids[1] == "second"


def test_a_running_run_or_an_unknown_one_is_refused(tmp_path, pg_url):
    laptop = tmp_path / "laptop.sqlite"
    with Store(laptop) as store:
        store.begin_run(fixture_run_info())
    with pytest.raises(StoreError, match="still running"):
        copy_runs(["fixture-run"], laptop, pg_url)
    with pytest.raises(StoreError, match="no run 'nope'"):
        copy_runs(["nope"], laptop, pg_url)
    with pytest.raises(StoreError, match="same store"):
        copy_runs(["fixture-run"], laptop, tmp_path / "." / "laptop.sqlite")


def test_the_copy_command(tmp_path, pg_url):
    laptop = tmp_path / "laptop.sqlite"
    run_ids = _laptop(laptop)
    done = subprocess.run([*OFFLAB, "copy", *run_ids, "--store", str(laptop), "--to", pg_url],
                          capture_output=True, text=True, timeout=HANG_S)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("fixture-run: copied (") and "lab-secret" not in done.stdout
    again = subprocess.run([*OFFLAB, "copy", "fixture-run", "--store", str(laptop), "--to", pg_url],
                           capture_output=True, text=True, timeout=HANG_S)
    assert again.returncode == 0 and "already in" in again.stdout


def test_a_run_marked_interrupted_whose_writer_may_be_alive_is_refused(tmp_path, pg_url):
    """A clone of this machine (same /etc/machine-id, another host name) marked another
    machine's run interrupted; that run's writer is not known to be gone."""
    from sqlalchemy import update
    from offlab.store import writer
    from offlab.store.tables import run
    elsewhere = dict(writer.current(), machine=writer.machine_key("a-cloned-machine-id", "other-host"))
    with Store(pg_url) as store:
        store.begin_run(fixture_run_info())
        with store._engine.begin() as conn:  # as the other machine recorded it, then the clone closed it
            conn.execute(update(run).where(run.c.id == "fixture-run")
                         .values(writer=elsewhere, status="interrupted"))
    with pytest.raises(StoreError, match="may still be writing it"):
        copy_runs(["fixture-run"], pg_url, tmp_path / "copy.sqlite")
    with Store(pg_url) as store:
        store.finish_run("fixture-run", "interrupted")  # its own offlab ended it
    assert copy_runs(["fixture-run"], pg_url, tmp_path / "copy.sqlite")[0].already is False
