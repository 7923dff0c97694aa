"""The command line: bad flags and bad plans are one line and a non-zero status."""

import subprocess
import sys

import pytest
from hangguard import HANG_S

OFFLAB = [sys.executable, "-c", "from offlab.entry import main; main()"]


def offlab(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([*OFFLAB, *args], capture_output=True, text=True, timeout=HANG_S, cwd=cwd)


@pytest.mark.parametrize("args, status, text", [
    (["run", "--bogus"], 2, "No such option: --bogus"),
    (["run", "--runs", "x"], 2, "--runs"),
    (["run", "--plan", "nope"], 1, "nope: no such plan file"),
    (["export", "r", "--format", "xml"], 2, "use json or csv"),
])
def test_errors_are_one_line(tmp_path, args, status, text):
    done = offlab(*args, cwd=tmp_path)
    assert done.returncode == status
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and text in lines[0], done.stderr
    assert list(tmp_path.iterdir()) == []  # nothing created on the way to the error


def test_bad_plan_file_is_one_line_naming_the_key(tmp_path):
    plan = tmp_path / "p.toml"
    plan.write_text('name = "p"\nruns = 3\nduration = 1.5\nwarmup = 0.5\nscenarios = ["bare"]\n'
                    'mtus = [20]\ntraffic = ["tcp"]\nsequences = ["tx"]\n')
    done = offlab("run", "--plan", str(plan), "--out", str(tmp_path))
    assert done.returncode == 1
    assert done.stderr.strip() == (f"offlab: {plan}: key 'mtus': [20] must be a list of MTUs from 68 to 65535, e.g. [1500, 9000]")


def test_report_without_runs(tmp_path):
    from offlab.store.store import Store
    Store(tmp_path / "empty.sqlite").close()
    done = offlab("report", "--store", str(tmp_path / "empty.sqlite"))
    assert done.returncode == 1 and "no runs" in done.stderr


@pytest.mark.parametrize("args, text", [
    (["run", "--ci-target", "5%", "--runs", "3"], "--runs and --ci-target exclude each other"),
    (["run", "--ci-target", "0%"], "--ci-target '0%': must be more than 0%"),
    (["run", "--ci-target", "5%", "--min-runs", "6", "--max-runs", "4"], "--max-runs 4 is below --min-runs 6"),
    (["compare", "a", "b"], "no such store"),
])
def test_adaptive_and_compare_errors_are_one_line(tmp_path, args, text):
    done = offlab(*args, cwd=tmp_path)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and text in lines[0], done.stderr
    assert list(tmp_path.iterdir()) == []


def test_compare_two_runs_from_two_store_files(tmp_path):
    from tests.fixtures.make_store import build_store
    a, b = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    run_a, run_b = build_store(a, seed=1), build_store(b, seed=2)
    out_dir = tmp_path / "cmp"
    done = offlab("compare", run_a, run_b, "--store", str(a), "--store-b", str(b),
                  "--out", str(out_dir), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "16 matching cases" in done.stdout and "0 only in A, 0 only in B" in done.stdout
    md = (out_dir / "compare.md").read_text()
    assert md.startswith(f"# offlab comparison: {run_b} (B) against {run_a} (A)")
    assert (out_dir / "compare.html").read_text().lower().startswith("<!doctype html>")


def test_compare_unknown_run_is_one_line(tmp_path):
    from tests.fixtures.make_store import build_store
    a = tmp_path / "a.sqlite"
    run_a = build_store(a)
    done = offlab("compare", run_a, "nope", "--store", str(a), cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip() == f"offlab: no run 'nope' in {a}"


def test_run_help_names_every_builtin_plan(tmp_path):
    from offlab.run.plan import builtin_names

    done = offlab("run", "--help", cwd=tmp_path)
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    for name in builtin_names():
        assert name in text, f"`offlab run --help` does not mention plan {name!r}"
