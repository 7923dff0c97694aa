"""Every bad input a user or QA engineer found is one line on stderr with the fix, a
non-zero exit, and nothing created — one row per case (issue: hardening the lab)."""

from __future__ import annotations

import os
import signal
import subprocess
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest

from offlab.hosts.naming import our_namespaces
from tests.fixtures.make_store import build_store
from hangguard import HANG_S

OFFLAB = [sys.executable, "-c", "from offlab.entry import main; main()"]
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def offlab(*args: str, cwd: Path, as_nobody: bool = False) -> subprocess.CompletedProcess:
    prefix = NOBODY if as_nobody else []
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    if as_nobody:
        env["HOME"] = str(cwd)  # a user of their own, not root's home
    return subprocess.run([*prefix, *OFFLAB, *args], capture_output=True, text=True, timeout=HANG_S,
                          cwd=cwd, env=env)


@pytest.fixture
def checkout_reachable_by_others():
    """Another user runs offlab from this checkout (its source and its .venv), so must
    be able to reach it; a clone in a private directory (`mktemp -d` makes 0700) is out
    of reach. Grant traversal (o+x) on the directories above it for the test, and put
    their modes back afterwards."""
    root = Path(__file__).resolve().parents[1]
    changed = []
    for directory in [root, *root.parents]:
        mode = directory.stat().st_mode & 0o7777
        if not mode & 0o001:
            os.chmod(directory, mode | 0o001)
            changed.append((directory, mode))
    try:
        yield
    finally:
        for directory, mode in changed:
            os.chmod(directory, mode)


def files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


PLAN = ('name = "p"\nruns = 2\nduration = 1.5\nwarmup = 0.5\nscenarios = ["bare"]\n'
        'mtus = [1500]\ntraffic = ["tcp"]\nsequences = ["tx"]\n')

GUEST_PLAN = ('name = "g"\nruns = 1\nduration = 1.5\nwarmup = 0.5\nscenarios = ["qemu"]\n'
              'guest_paths = ["vm2vm"]\nmtus = [1500]\ntraffic = ["tcp"]\nsequences = ["all-on"]\n')

# (arguments, files to create first, exit status, text in the one line)
CASES = [
    (["run", "--plan", "latin1.toml"], {"latin1.toml": b"name = \"caf\xe9\"\n"}, 1, "not UTF-8 text"),
    (["run", "--plan", "big.toml"], {"big.toml": PLAN.replace("duration = 1.5", "duration = 1e300").encode()},
     1, "at most 3600 seconds"),
    (["run", "--plan", "many.toml"], {"many.toml": PLAN.replace("runs = 2", "runs = 100000000000").encode()},
     1, "from 1 to 1000"),
    (["run", "--duration", "nan"], {}, 1, "--duration nan must be more than 0"),
    (["run", "--duration", "10"], {}, 1, "use a duration of 9.5 or 10.5 s"),
    (["run", "--runs", "1000", "--duration", "58", "--plan", "offloads"], {}, 1, "pass --yes"),
    (["run", "--min-runs", "5"], {}, 1, "add --ci-target"),
    (["run", "--resume", "r1", "--plan", "quick"], {}, 1, "drop --plan"),
    (["run", "--resume", "nosuchrun", "--out", "X"], {}, 1, "no such store to resume from"),
    (["run", "--resume", "nosuchrun", "--store", "s.sqlite"], {"s.sqlite": None}, 1, "no run 'nosuchrun'"),
    (["list", "--store", "nonexistent/offlab.sqlite"], {}, 1, "no such store"),
    (["list", "--store", "corrupt.sqlite"], {"corrupt.sqlite": b"this is not sqlite" * 100}, 1,
     "not a usable offlab store"),
    (["report", "--store", "corrupt.sqlite"], {"corrupt.sqlite": b"this is not sqlite" * 100}, 1,
     "not a usable offlab store"),
    (["export", "r", "--format", "json", "--store", "corrupt.sqlite"],
     {"corrupt.sqlite": b"this is not sqlite" * 100}, 1, "not a usable offlab store"),
    (["export", "fixture-run", "--format", "csv", "--store", "s.sqlite", "-o", "/proc/offlab/x.csv"],
     {"s.sqlite": None}, 1, "cannot write the export"),
    (["compare", "fixture-run", "fixture-run", "--store", "s.sqlite", "--fail-on-regression", "150"],
     {"s.sqlite": None}, 1, "from 0 to below 100"),
    (["run", "--max-eta", "0", "--yes"], {}, 1, "--max-eta 0 must be a positive"),
    (["run", "--plan", "g.toml"], {"g.toml": GUEST_PLAN.replace('"vm2vm"', '"vm2cloud"').encode()}, 1,
     "guest_paths"),
]


@pytest.mark.parametrize("args, given, status, text", CASES, ids=[" ".join(c[0])[:60] for c in CASES])
def test_bad_input_is_one_line_and_creates_nothing(tmp_path: Path, args, given, status, text):
    for name, content in given.items():
        if content is None:
            build_store(tmp_path / name)
        else:
            (tmp_path / name).write_bytes(content)
    before = files(tmp_path)
    done = offlab(*args, cwd=tmp_path)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == status, done.stderr
    assert len(lines) == 1 and text in lines[0], done.stderr
    assert files(tmp_path) == before


@pytest.mark.skipif(os.path.exists("/dev/vhost-net"), reason="this machine has vhost-net")
def test_a_backend_this_kernel_lacks_is_one_line_before_anything_starts(tmp_path: Path):
    (tmp_path / "g.toml").write_text(GUEST_PLAN + 'backends = ["tap", "tap-vhost"]\n')
    before = files(tmp_path)
    done = offlab("run", "--plan", "g.toml", "--no-progress", cwd=tmp_path)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    assert "tap-vhost needs the kernel's vhost-net" in lines[0] and "/dev/vhost-net" in lines[0]
    assert files(tmp_path) == before


def test_run_as_a_user_without_root_is_one_line(tmp_path: Path, checkout_reachable_by_others):
    if os.geteuid() != 0:
        pytest.skip("needs root to become another user")
    os.chmod(tmp_path, 0o777)
    done = offlab("run", "--plan", "quick", cwd=tmp_path, as_nobody=True)
    assert done.returncode == 1 and done.stderr.strip().startswith("offlab: offlab run needs root")
    assert files(tmp_path) == set()


def test_a_root_owned_store_reads_for_another_user(tmp_path: Path, checkout_reachable_by_others):
    """The usual state after `sudo offlab run`: list, report (elsewhere) and export work."""
    if os.geteuid() != 0:
        pytest.skip("needs root to become another user")
    tmp_path = Path(tempfile.mkdtemp(prefix="offlab-ro-"))  # pytest's own is private to root
    os.chmod(tmp_path, 0o755)
    store = tmp_path / "results" / "offlab.sqlite"
    run_id = build_store(store)
    os.chmod(tmp_path, 0o777)
    listed = offlab("list", "--store", str(store), cwd=tmp_path, as_nobody=True)
    assert listed.returncode == 0 and run_id in listed.stdout, listed.stderr
    exported = offlab("export", run_id, "--format", "json", "--store", str(store), cwd=tmp_path, as_nobody=True)
    assert exported.returncode == 0 and exported.stdout.startswith("{")
    report = offlab("report", run_id, "--store", str(store), "--out", str(tmp_path / "mine"),
                    cwd=tmp_path, as_nobody=True)
    assert report.returncode == 0, report.stderr
    assert (tmp_path / "mine" / "report.md").is_file()
    assert files(store.parent) == {"offlab.sqlite"}
    unreadable = offlab("list", "--store", "/root/offlab-nope.sqlite", cwd=tmp_path, as_nobody=True)
    assert unreadable.returncode == 1 and len(unreadable.stderr.strip().splitlines()) == 1
    shutil.rmtree(tmp_path)


def test_a_piped_list_keeps_every_column_whole(tmp_path: Path):
    store = tmp_path / "s.sqlite"
    run_id = build_store(store)
    done = offlab("list", "--store", str(store), cwd=tmp_path)
    row = next(line for line in done.stdout.splitlines() if line.startswith(run_id))
    assert "complete" in row and len(row.split()) >= 6


def test_version_and_short_help(tmp_path: Path):
    assert offlab("--version", cwd=tmp_path).stdout.startswith("offlab ")
    assert "Run a plan" in offlab("run", "-h", cwd=tmp_path).stdout


def _default_sigint() -> None:
    """In the child: SIGINT as a terminal delivers it. A test run from a background job
    (make test under nohup, say) inherits SIGINT ignored, and Python then never raises
    KeyboardInterrupt at all."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_a_ctrl_c_that_stopped_an_extension_import_is_one_line(tmp_path: Path):
    # What scipy's pybind11 modules raise when a Ctrl-C lands in their initialisation
    # (seen in the test below under load): an ImportError from the KeyboardInterrupt.
    script = ("import sys, offlab.cli, offlab.entry\n"
              "def stopped():\n"
              "    try:\n"
              "        raise KeyboardInterrupt\n"
              "    except KeyboardInterrupt as ctrl_c:\n"
              "        raise ImportError('initialization failed') from ctrl_c\n"
              "offlab.cli.main = stopped\n"
              "offlab.entry.main()\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                          text=True, timeout=HANG_S)
    assert (done.returncode, done.stderr) == (130, "offlab: interrupted\n")
    other = script.replace("from ctrl_c", "from None")
    done = subprocess.run([sys.executable, "-c", other], cwd=tmp_path, capture_output=True,
                          text=True, timeout=HANG_S)
    assert done.returncode == 1 and "ImportError: initialization failed" in done.stderr


def test_ctrl_c_at_any_moment_of_a_dry_run_is_one_line(tmp_path: Path):
    # From inside the lab's imports to after the last line: interrupted, it says one line
    # and exits 130; a signal after all is said changes nothing. (Not earlier than
    # 0.15 s: in Python's own start-up, before any of offlab runs, a Ctrl-C is Python's.
    # On a loaded machine start-up can outlast a delay: such a run, Python's fatal error
    # or a death by the signal before offlab's main() ran, says nothing about offlab, and
    # a later delay gets past it.)
    interrupted = 0
    for delay in (0.15, 0.3, 0.5, 0.7, 0.9, 1.2):
        proc = subprocess.Popen([*OFFLAB, "run", "--plan", "quick", "--dry-run"], cwd=tmp_path,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=_default_sigint)
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=HANG_S)
        # The dry run probes the plan's VXLAN in a namespace of its own: gone, whenever it stopped.
        assert our_namespaces(proc.pid) == [], delay
        if proc.returncode == 0:
            assert "cases" in stdout.splitlines()[0] and stderr == "", delay
            continue
        if "Fatal Python error: init_import_site" in stderr:
            continue  # interrupted in Python's own start-up, before offlab's first line
        if proc.returncode == -signal.SIGINT and " in main\n" not in stderr:
            # died of the signal before offlab's main() ran (which turns every Ctrl-C into
            # one line and 130): before Python's handler was in place, or in the entry
            # module's own `import signal`
            continue
        assert proc.returncode == 130, (delay, proc.returncode, stderr)
        assert stderr.strip().splitlines() == ["offlab: interrupted"], (delay, stderr)
        interrupted += 1
    assert interrupted > 0
