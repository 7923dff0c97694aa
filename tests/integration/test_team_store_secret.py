"""No secret anywhere, from a real run: `offlab run --store postgresql://ROLE:SECRET@…`
measures a tiny plan in namespaces into a PostgreSQL the test started (tests/pgserver.py),
then every place offlab writes to is searched for the password: the database (pg_dump),
the server's log, the run directory (report.md, report.html, whatever else is there), an
export, the state directory (audit log, journals), the runtime directory, and what every
command printed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .runs import OFFLAB

SECRET = "SECRET/with:slash"  # a '/' is what the old hand-written mask missed
PLAN = """
name = "secret"
runs = 1
duration = 0.5
warmup = 0.5
scenarios = ["bare"]
mtus = [1500]
traffic = ["tcp"]
sequences = ["tx"]
"""


def _files_holding(root: Path, needle: bytes) -> list[Path]:
    return [f for f in root.rglob("*") if f.is_file() and not f.is_symlink() and needle in f.read_bytes()]


def test_a_measured_run_leaves_its_store_password_nowhere(tmp_path: Path, pg_server):
    role = pg_server.create_role(SECRET)
    database = pg_server.create_database(owner=role)
    url = pg_server.url(database, password=SECRET, user=role)
    plan, out, work = tmp_path / "plan.toml", tmp_path / "out", tmp_path / "work"
    plan.write_text(PLAN)
    work.mkdir()
    env = dict(os.environ, OFFLAB_RUNTIME_DIR=str(tmp_path / "runtime"), OFFLAB_STATE_DIR=str(tmp_path / "state"))

    def offlab(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*OFFLAB, *args], capture_output=True, text=True, timeout=300, cwd=work, env=env)

    printed = [offlab("store", "upgrade", "--store", url)]
    assert printed[-1].returncode == 0, printed[-1].stderr
    printed.append(offlab("run", "--plan", str(plan), "--store", url, "--out", str(out), "--no-progress"))
    assert printed[-1].returncode == 0, printed[-1].stderr
    (run_dir,) = [d for d in out.iterdir() if d.is_dir()]
    run_id = run_dir.name
    printed += [
        offlab("export", run_id, "--format", "json", "-o", str(out / "run.json"), "--store", url),
        offlab("report", run_id, "--store", url, "--out", str(out / "again")),
        offlab("list", "--store", url),
    ]
    assert [p.returncode for p in printed] == [0] * len(printed), [p.stderr for p in printed]

    dump = pg_server.dump(database)
    assert run_id in dump and "--store" in dump  # the run and the command line it recorded are there
    assert "SECRET" not in dump
    assert "SECRET" not in (pg_server.root / "server.log").read_text()
    assert {f.name for f in run_dir.iterdir()} >= {"report.md", "report.html"}
    assert (out / "run.json").stat().st_size > 0
    for p in printed:
        assert "SECRET" not in p.stdout + p.stderr, p.args
    assert _files_holding(tmp_path, b"SECRET") == []
