"""`--store` takes a PostgreSQL URL wherever it takes a file (run, report, list, compare,
export, doctor), against a real server (tests/pgserver.py). A URL offlab cannot use, a
server that is down, a wrong password or a missing database: one line with the fix,
exit 1, nothing created."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.make_store import build_store
from hangguard import HANG_S

OFFLAB = [sys.executable, "-c", "from offlab.entry import main; main()"]


def offlab(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*OFFLAB, *args], capture_output=True, text=True, timeout=HANG_S, cwd=cwd)


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # closed again when the test connects


def _one_line_error(done: subprocess.CompletedProcess, *said: str) -> str:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    for text in said:
        assert text in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("url, said", [
    ("mysql://u@h/db", "offlab stores results in SQLite or PostgreSQL, not mysql"),
    ("postgresql://u@h:notaport/db", "not a store URL"),
    ("postgresql://u@127.0.0.1:5432", "names no database"),
    ("postgresql:offlab", "not a store URL"),
    ("postgresql+psycopg2://u@h/db", "not postgresql+psycopg2"),
    ("sqlite://", "names no file"),
])
def test_a_bad_store_url_is_one_line(url, said):
    from offlab.store.location import parse
    from offlab.store.store import StoreError
    with pytest.raises(StoreError) as refused:
        parse(url)
    assert said in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize("command", [["list"], ["run", "--plan", "quick"]])
def test_every_command_refuses_a_bad_url_and_creates_nothing(tmp_path, command):
    done = offlab(*command, "--store", "postgresql:/offlab", cwd=tmp_path)
    _one_line_error(done, "not a store URL", "write it as")
    assert list(tmp_path.iterdir()) == []  # no folder named postgresql: (issue 28)


def test_a_password_in_a_bad_url_is_not_printed(tmp_path):
    done = offlab("list", "--store", "postgresql://u:s3cret@h:port/db", cwd=tmp_path)
    assert "s3cret" not in done.stderr and "***" in done.stderr


def test_a_server_that_is_down(tmp_path, pg_server):
    url = pg_server.url("offlab", port=_closed_port())
    line = _one_line_error(offlab("run", "--plan", "quick", "--store", url, cwd=tmp_path),
                           "cannot reach the store", "check the server is running")
    assert pg_server.url("x").split(":")[2].split("@")[0] not in line  # the password is masked
    assert list(tmp_path.iterdir()) == []


def test_a_wrong_password(tmp_path, pg_server):
    database = pg_server.create_database()
    wrong = pg_server.url(database, password="wrong")
    for command in (["list"], ["run", "--plan", "quick"]):
        _one_line_error(offlab(*command, "--store", wrong, cwd=tmp_path),
                        'password authentication failed for user "offlab"', "~/.pgpass")
    doctor = offlab("doctor", "--store", wrong, cwd=tmp_path)
    assert doctor.returncode == 1 and 'password authentication failed' in doctor.stdout
    _one_line_error(offlab("store", "upgrade", "--store", wrong, cwd=tmp_path), "password authentication failed")
    assert pg_server.tables(database) == set() and list(tmp_path.iterdir()) == []


def test_a_database_that_does_not_exist(tmp_path, pg_server):
    _one_line_error(offlab("run", "--plan", "quick", "--store", pg_server.url("nosuchdb"), cwd=tmp_path),
                    'database "nosuchdb" does not exist', "createdb")


def test_an_empty_database_is_no_store_to_read(tmp_path, pg_empty_url):
    _one_line_error(offlab("list", "--store", pg_empty_url, cwd=tmp_path), "not an offlab store")


def test_every_reading_command_takes_a_url(tmp_path, pg_url):
    run_id = build_store(pg_url, runs=3)
    listed = offlab("list", "--store", pg_url, cwd=tmp_path)
    assert listed.returncode == 0 and run_id in listed.stdout and "complete" in listed.stdout
    report = offlab("report", run_id, "--store", pg_url, cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert (tmp_path / "results" / run_id / "report.md").is_file()
    exported = offlab("export", run_id, "--format", "json", "--store", pg_url, cwd=tmp_path)
    assert json.loads(exported.stdout)["run"]["run_id"] == run_id
    doctor = offlab("doctor", "--store", pg_url, cwd=tmp_path)
    assert doctor.returncode == 0 and "postgresql" in doctor.stdout and "1 runs" in doctor.stdout


def test_compare_a_file_with_a_database(tmp_path, pg_url):
    local = tmp_path / "laptop.sqlite"
    run_a, run_b = build_store(local, seed=1), build_store(pg_url, seed=2)
    done = offlab("compare", run_a, run_b, "--store", str(local), "--store-b", pg_url,
                  "--out", str(tmp_path / "cmp"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "16 matching cases" in done.stdout


def test_store_upgrade_upgrades_an_old_store_a_reading_command_refuses(tmp_path):
    import gzip
    import sqlite3
    path = tmp_path / "v2.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(gzip.decompress((Path(__file__).parent / "fixtures" / "v2_store.sql.gz").read_bytes()).decode())
    conn.close()
    refused = offlab("list", "--store", str(path), cwd=tmp_path)
    assert _one_line_error(refused, "needs an upgrade", f"offlab store upgrade --store {path}")
    assert offlab("doctor", "--store", str(path), cwd=tmp_path).returncode == 1
    upgraded = offlab("store", "upgrade", "--store", str(path), cwd=tmp_path)
    assert upgraded.returncode == 0, upgraded.stdout + upgraded.stderr
    assert "→" in upgraded.stdout
    assert "fixture-run" in offlab("list", "--store", str(path), cwd=tmp_path).stdout
    again = offlab("store", "upgrade", "--store", str(path), cwd=tmp_path)
    assert again.returncode == 0 and "nothing to do" in again.stdout
