"""The guest host's process protocol (spawn, poll, wait, communicate, stop) over a real
POSIX shell: the same commands the agent runs inside a guest, run by this machine's
sh, so the framing of pids, statuses and output files is checked without booting."""

from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass

import pytest

from offlab.hosts.guest import GuestHost, PROCESS_DIR
from offlab.proc import ProcessError


@dataclass(frozen=True)
class Result:
    status: int
    stdout: str
    stderr: str


class LocalShell:
    """An agent whose scripts run in this machine's /bin/sh (busybox's when the host
    has it, as in the guest)."""

    def __init__(self) -> None:
        self.shell_path = shutil.which("busybox")

    def run(self, script: str, *, timeout: int = 30, check: bool = True) -> Result:
        argv = [self.shell_path, "sh", "-c", script] if self.shell_path else ["/bin/sh", "-c", script]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        return Result(done.returncode, done.stdout, done.stderr)


@pytest.fixture
def host() -> GuestHost:
    yield GuestHost("a", LocalShell())
    subprocess.run(["rm", "-rf", PROCESS_DIR], check=False)


def test_run_returns_status_and_output(host: GuestHost) -> None:
    done = host.run(["sh", "-c", "echo out; echo err >&2; exit 3"], check=False)
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")
    with pytest.raises(ProcessError, match="status 3 in guest a: err"):
        host.run(["sh", "-c", "echo err >&2; exit 3"])


def test_run_passes_input_text(host: GuestHost) -> None:
    assert host.run(["cat"], input_text="it's 'quoted' $HOME\n").stdout == "it's 'quoted' $HOME\n"


def test_spawned_process_reports_its_own_pid_status_and_output(host: GuestHost) -> None:
    process = host.spawn(["sh", "-c", "echo hello; echo oops >&2; exit 7"])
    assert process.wait(timeout=10) == 7
    assert process.communicate(timeout=1) == ("hello\n", "oops\n")
    host.stop(process)


def test_stop_terminates_a_running_process(host: GuestHost) -> None:
    process = host.spawn(["sleep", "30"])
    assert process.poll() is None
    # The pid is the command's own once the forked shell has exec'd it.
    deadline = time.monotonic() + 5
    while open(f"/proc/{process.pid}/comm").read().strip() != "sleep" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert open(f"/proc/{process.pid}/comm").read().strip() == "sleep"
    started = time.monotonic()
    host.stop(process, grace_s=5)
    assert process.returncode == 128 + 15  # the shell's status of a command killed by SIGTERM
    assert time.monotonic() - started < 5
    assert not any(p.startswith(process.base.rsplit("/", 1)[1] + ".") for p in _listing())


def test_wait_times_out_like_popen(host: GuestHost) -> None:
    process = host.spawn(["sleep", "30"])
    with pytest.raises(subprocess.TimeoutExpired):
        process.wait(timeout=0.2)
    host.stop(process)


def _listing() -> list[str]:
    done = subprocess.run(["ls", PROCESS_DIR], capture_output=True, text=True)
    return done.stdout.split()
