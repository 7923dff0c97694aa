"""The command line: bad flags and bad plans are one line and a non-zero status."""

import subprocess
import sys

import pytest

OFFLAB = [sys.executable, "-c", "from offlab.cli import main; main()"]


def offlab(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([*OFFLAB, *args], capture_output=True, text=True, timeout=60, cwd=cwd)


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
                    'mtus = [1400]\ntraffic = ["tcp"]\nsequences = ["tx"]\n')
    done = offlab("run", "--plan", str(plan), "--out", str(tmp_path))
    assert done.returncode == 1
    assert done.stderr.strip() == (f"offlab: {plan}: key 'mtus': 1400 is not known; use 1500, 9000")


def test_report_without_runs(tmp_path):
    done = offlab("report", "--out", str(tmp_path))
    assert done.returncode == 1 and "no runs" in done.stderr
