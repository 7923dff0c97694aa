"""No secret anywhere: a run recorded with a password in its `--store` URL leaves no trace
of it in the database (pg_dump), the reports, the exports or what any command prints; and
what the user set for libpq (the URL's query, PG* variables, a password file) is what
the connection uses."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.make_store import fixture_cases, make_samples
from offlab.run import runflow
from offlab.records import RunSettings
from offlab.store.location import parse
from offlab.store.masking import (mask_argv, mask_command_line, mask_url, password_to_environment,
                                  without_password)
from offlab.store.store import Store
from sqlalchemy import text
from hangguard import HANG_S

OFFLAB = [sys.executable, "-c", "from offlab.entry import main; main()"]
SECRET = "SECRET/with:slash"  # a '/' is what a hand-written mask missed


def offlab(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*OFFLAB, *args], capture_output=True, text=True, timeout=HANG_S, cwd=cwd)


@pytest.mark.parametrize("given", [
    "postgresql://lab:SECRET/with:slash@db:5432/offlab",
    "postgresql://lab:SECRET@db/offlab?sslmode=require",
    "postgresql://lab@db/offlab?password=SECRET",
])
def test_a_url_is_rendered_without_its_password(given):
    masked = mask_url(given)
    assert "SECRET" not in masked and "lab" in masked and "db" in masked


def test_a_command_line_masks_every_url_argument():
    argv = ["offlab", "copy", "r1", "--store", "postgresql://a:SECRET@h/x", "--to=postgresql://b:SECRET/1@h/y"]
    line = mask_argv(argv)
    assert "SECRET" not in line and line.count("***") == 2
    assert mask_command_line("offlab run --store 'postgresql://a:SECRET@h/x'") == \
        "offlab run --store 'postgresql://a:***@h/x'"


def test_a_campaign_hands_its_pairs_the_password_in_the_environment_not_in_argv(pg_url, tmp_path):
    argv, env = password_to_environment(["run", "--plan", "quick", "--store", pg_url, "--yes"])
    assert "lab-secret" not in " ".join(argv) and env == {"PGPASSWORD": "lab-secret"}
    child = subprocess.run([*OFFLAB, "doctor", *argv[3:5]], capture_output=True, text=True, timeout=HANG_S,
                           env={**__import__("os").environ, **env}, cwd=tmp_path)
    assert child.returncode == 0, child.stderr  # libpq took the password from PGPASSWORD


def test_a_run_with_a_password_in_its_url_leaves_it_nowhere(pg_server, tmp_path, monkeypatch):
    role = pg_server.create_role(SECRET)
    database = pg_server.create_database(owner=role)
    url = pg_server.url(database, password=SECRET, user=role)
    printed = [offlab("store", "upgrade", "--store", url, cwd=tmp_path)]
    assert printed[0].returncode == 0, printed[0].stderr
    monkeypatch.setattr(sys, "argv", ["offlab", "run", "--plan", "quick", "--store", url])
    cases = fixture_cases()[:2]
    with Store(url) as store:
        session = runflow.begin(store, "quick", tuple(cases), RunSettings(repetitions=2))
        for case in cases:
            for sample in make_samples(case, random.Random(3), runs=2):
                store.add_sample(session.run_id, case, sample)
        store.finish_run(session.run_id, "complete")
    run_id = session.run_id
    out = tmp_path / "out"
    printed += [
        offlab("report", run_id, "--store", url, "--out", str(out / "report"), cwd=tmp_path),
        offlab("export", run_id, "--format", "json", "-o", str(out / "run.json"), "--store", url, cwd=tmp_path),
        offlab("export", run_id, "--format", "csv", "-o", str(out / "run.csv"), "--store", url, cwd=tmp_path),
        offlab("list", "--store", url, cwd=tmp_path),
        offlab("history", "tcp", "--store", url, "--out", str(out / "history"), cwd=tmp_path),
        offlab("doctor", "--store", url, cwd=tmp_path),
        offlab("copy", run_id, "--store", url, "--to", str(out / "copy.sqlite"), cwd=tmp_path),
        offlab("list", "--store", url.replace(database, "no_such_db"), cwd=tmp_path),  # an error message
    ]
    assert [p.returncode for p in printed] == [0] * 8 + [1], [p.stderr for p in printed]
    dump = pg_server.dump(database)
    assert run_id in dump and "--store" in dump  # the dump holds the run and its command line
    assert "SECRET" not in dump
    for p in printed:
        assert "SECRET" not in p.stdout + p.stderr
    assert "SECRET" not in (pg_server.root / "server.log").read_text()  # the server's own log
    written = [f for f in out.rglob("*") if f.is_file() and f.suffix != ".sqlite"]
    assert {f.suffix for f in written} >= {".md", ".html", ".json", ".csv"}
    for f in written:
        assert b"SECRET" not in f.read_bytes(), f
    with Store(out / "copy.sqlite", readonly=True) as copied:
        assert "***" in copied.load_run(run_id).info.command_line
    assert b"SECRET" not in (out / "copy.sqlite").read_bytes()


def test_the_url_query_and_libpq_variables_are_not_overridden(pg_server, pg_url, tmp_path, monkeypatch):
    """A reader's own options (read only, one snapshot) used to replace the user's
    `options`; the user's password file is how the password gets there."""
    location = parse(pg_url)
    passfile = tmp_path / "pgpass"
    passfile.write_text(f"127.0.0.1:{pg_server.port}:{location.url.database}:offlab:lab-secret\n")
    passfile.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(passfile))
    monkeypatch.setenv("PGOPTIONS", "-c lock_timeout=4321")
    without = without_password(location.url).render_as_string(hide_password=False)
    given = without + "?options=-c%20statement_timeout%3D1234&connect_timeout=7"
    with Store(given, readonly=True) as reader:
        with reader._reading() as conn:
            assert conn.execute(text("SHOW statement_timeout")).scalar() == "1234ms"
            assert conn.execute(text("SHOW transaction_read_only")).scalar() == "on"
            assert conn.execute(text("SHOW transaction_isolation")).scalar() == "repeatable read"
    with Store(without, readonly=True) as reader:
        with reader._reading() as conn:
            assert conn.execute(text("SHOW lock_timeout")).scalar() == "4321ms"
