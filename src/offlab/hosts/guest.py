"""A host that is a QEMU guest, driven through its console agent (offlab.vm): the lab's
commands run inside the guest's kernel and network stack, so iperf3, ethtool and every
/proc read see the guest's virtio-net device, not the machine's.

The agent runs one shell command at a time and returns its status and output. A spawned
process (an iperf3 server, a client the lab polls) is started in the background inside
the guest with its output in files under `PROCESS_DIR`; it is polled, waited for and
signalled by further commands, so its `pid` is its pid in the guest, as the lab's other
hosts give the command's own pid.
"""

from __future__ import annotations

import itertools
import math
import shlex
import subprocess
import time
from typing import Protocol, Sequence

from ..proc import DEFAULT_TIMEOUT_S, Completed, ProcessError
from ..proc import stop as stop_process
from .base import Host, HostError

PROCESS_DIR = "/tmp/ofl-proc"
POLL_INTERVAL_S = 0.05
START_TIMEOUT_S = 10.0
"""How long a spawned command may take to report its pid (a TCG guest forks slowly)."""


class Result(Protocol):
    status: int
    stdout: str
    stderr: str


class Agent(Protocol):
    """What a running guest offers (vm.Guest): one sh script, its status and output; an
    agent that does not answer raises."""

    def run(self, script: str, *, timeout: int = 30, check: bool = True) -> Result: ...


class GuestHost(Host):
    def __init__(self, name: str, guest: Agent):
        self.name = name
        self.machine = f"guest-{name}"
        """A guest's cores are its own (vCPUs), not the machine's."""
        self.guest = guest
        self._serial = itertools.count(1)

    def run(self, args: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT_S, check: bool = True,
            input_text: str | None = None, root: bool | None = None) -> Completed:
        command = shlex.join(args)
        if input_text is not None:
            command = f"printf %s {shlex.quote(input_text)} | {command}"
        try:
            done = self.guest.run(command, timeout=max(1, math.ceil(timeout)), check=False)
        except Exception as failure:  # the agent did not answer: the guest is gone or hung
            raise ProcessError(args, f"guest {self.name}: {failure}") from None
        if check and done.status != 0:
            tail = " ".join(done.stderr.split())[-300:] or "(no error output)"
            raise ProcessError(args, f"exited with status {done.status} in guest {self.name}: {tail}")
        return Completed(tuple(args), done.status, done.stdout, done.stderr)

    def spawn(self, args: Sequence[str], *, capture_stdout: bool = False) -> "GuestProcess":  # type: ignore[override]
        base = f"{PROCESS_DIR}/{next(self._serial)}"
        # The inner `&` makes the command a child of a subshell that waits for it and
        # writes its status; `$!` is the command's own pid (a simple command is exec'd).
        body = (f"{shlex.join(args)} <{'/dev/null'} >{base}.out 2>{base}.err & "
                f"echo $! >{base}.pid; wait $!; echo $? >{base}.rc.tmp; mv {base}.rc.tmp {base}.rc")
        self.run(["sh", "-c", f"mkdir -p {PROCESS_DIR}; rm -f {base}.*; ({body}) >/dev/null 2>&1 &"])
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            pid = self.run(["cat", f"{base}.pid"], check=False).stdout.strip()
            if pid.isdigit():
                return GuestProcess(self, args, base, int(pid))
            time.sleep(POLL_INTERVAL_S)
        raise HostError(f"guest {self.name}: `{shlex.join(args)}` did not start within {START_TIMEOUT_S:g} s")

    def stop(self, process: subprocess.Popen[str], grace_s: float = 2.0) -> None:  # type: ignore[override]
        """TERM, KILL after the grace period (as for a local process), then the
        process's files in the guest go."""
        assert isinstance(process, GuestProcess)
        stop_process(process, grace_s=grace_s)  # type: ignore[arg-type]
        process.discard()

    def __repr__(self) -> str:
        return f"GuestHost({self.name!r})"


class GuestProcess:
    """A command running in the background in a guest (the subset of Popen the lab uses)."""

    stdout = None
    stderr = None

    def __init__(self, host: GuestHost, args: Sequence[str], base: str, pid: int):
        self.host = host
        self.args = list(args)
        self.base = base
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            text = self.host.run(["cat", f"{self.base}.rc"], check=False).stdout.strip()
            if text.lstrip("-").isdigit():
                self.returncode = int(text)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
            time.sleep(POLL_INTERVAL_S)
        assert self.returncode is not None
        return self.returncode

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        self.wait(timeout)
        out = self.host.run(["cat", f"{self.base}.out"], check=False).stdout
        err = self.host.run(["cat", f"{self.base}.err"], check=False).stdout
        return out, err

    def terminate(self) -> None:
        self.host.run(["kill", "-TERM", str(self.pid)], check=False)

    def kill(self) -> None:
        self.host.run(["kill", "-KILL", str(self.pid)], check=False)

    def discard(self) -> None:
        """Remove the process's files in the guest."""
        self.host.run(["sh", "-c", f"rm -f {self.base}.*"], check=False)
