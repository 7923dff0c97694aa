"""A host reached over SSH: the OpenSSH client, one multiplexed connection per host
(ControlMaster/ControlPersist), every command with a timeout.

Why the OpenSSH client and not a Python SSH library: it reads `~/.ssh/config` as the
user's own `ssh` does — aliases, ProxyJump, IdentityFile, agent forwarding, known hosts —
so whatever works at the user's shell works here, and multiplexing makes a command over
an open connection cost a few milliseconds. BatchMode keeps it from ever prompting.

A spawned process reports its pid on the remote host first (`sh -c 'echo $$; exec …'`),
so /proc/<pid>/… reads and stops aim at the process itself, not at the local ssh.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import IO, Sequence

from ..proc import DEFAULT_TIMEOUT_S, Completed, ProcessError, run
from ..runscope import RUNTIME_ROOT
from .base import Host, HostError
from .hostsfile import HostSpec

SSH_FAILED = 255
"""ssh's own exit status when it could not run the command at all."""
CONNECT_TIMEOUT_S = 5


def _control_dir() -> Path:
    """A directory for the connection's control socket: under the run's runtime directory
    when there is one, else its own under /run/offlab; named after this pid either way, so
    `runscope.reclaim_stale` removes it after a kill."""
    runtime = RUNTIME_ROOT / f"run-{os.getpid()}"
    if runtime.is_dir():
        return Path(tempfile.mkdtemp(prefix="ssh-", dir=runtime))
    RUNTIME_ROOT.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"ssh-{os.getpid()}-", dir=RUNTIME_ROOT))


class RemoteProcess:
    """A process started over ssh: `pid` is its pid on the remote host; waiting and
    reading go through the local ssh client that carries its output."""

    def __init__(self, local: subprocess.Popen[str], pid: int):
        self.local = local
        self.pid = pid

    @property
    def stdout(self) -> IO[str] | None:
        return self.local.stdout

    @property
    def stderr(self) -> IO[str] | None:
        return self.local.stderr

    @property
    def returncode(self) -> int | None:
        return self.local.returncode

    def poll(self) -> int | None:
        return self.local.poll()

    def wait(self, timeout: float | None = None) -> int:
        return self.local.wait(timeout)

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        return self.local.communicate(timeout=timeout)


class SshHost(Host):
    def __init__(self, name: str, spec: HostSpec, ssh_config: str | None = None,
                 control_dir: Path | None = None):
        self.name = name
        self.spec = spec
        self.machine = f"ssh:{spec.ssh}"
        self._control = control_dir or _control_dir()
        control = self._control
        self._base = ["ssh", *(["-F", ssh_config] if ssh_config else []),
                      "-o", "BatchMode=yes", "-o", "ControlMaster=auto",
                      "-o", f"ControlPath={control}/%C", "-o", "ControlPersist=60",
                      "-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}", "-o", "ServerAliveInterval=5",
                      "-o", "ServerAliveCountMax=2", spec.ssh]

    def _remote(self, args: Sequence[str]) -> str:
        command = shlex.join(args)
        return f"sudo -n {command}" if self.spec.sudo else command

    def run(self, args: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT_S, check: bool = True,
            input_text: str | None = None) -> Completed:
        return self._run(self._remote(args), args, timeout, check, input_text)

    def run_plain(self, args: Sequence[str], timeout: float = DEFAULT_TIMEOUT_S) -> Completed:
        """A command as the login user, without sudo (what is installed, who am I)."""
        return self._run(shlex.join(args), args, timeout, True, None)

    def _run(self, command: str, args: Sequence[str], timeout: float, check: bool,
             input_text: str | None) -> Completed:
        try:
            done = run([*self._base, "--", command], timeout=timeout, check=False, input_text=input_text)
        except ProcessError as err:
            raise HostError(f"{self.name} ({self.spec.ssh}): `{shlex.join(args)}` {err.reason}; "
                            "check the host answers `ssh " + self.spec.ssh + " true`") from None
        if done.returncode == SSH_FAILED:
            raise HostError(f"{self.name} ({self.spec.ssh}): ssh failed: {done.stderr.strip()[-200:]}; "
                            f"check that `ssh {self.spec.ssh} true` works without a password")
        if check and done.returncode != 0:
            raise HostError(f"{self.name} ({self.spec.ssh}): `{shlex.join(args)}` exited with status "
                            f"{done.returncode}: {done.stderr.strip()[-200:] or 'no error output'}")
        return Completed(tuple(args), done.returncode, done.stdout, done.stderr)

    def spawn(self, args: Sequence[str], *, capture_stdout: bool = False) -> RemoteProcess:  # type: ignore[override]
        # The remote shell prints its pid on stderr, then becomes the command.
        wrapped = f"sh -c {shlex.quote('echo $$ >&2; exec ' + self._remote(args))}"
        local = subprocess.Popen([*self._base, "--", wrapped], stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE if capture_stdout else subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True, start_new_session=True)
        assert local.stderr is not None
        first = local.stderr.readline().strip()
        if not first.isdigit():
            local.kill()
            local.wait()
            raise HostError(f"{self.name} ({self.spec.ssh}): could not start `{shlex.join(args)}`: "
                            f"{first or 'ssh closed'}")
        return RemoteProcess(local, int(first))

    def stop(self, process: subprocess.Popen[str], grace_s: float = 2.0) -> None:  # type: ignore[override]
        """TERM the remote process, KILL it after the grace period, then reap the ssh."""
        if process.poll() is None:
            self.run(["kill", "-TERM", str(process.pid)], check=False, timeout=10)
            try:
                process.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                self.run(["kill", "-KILL", str(process.pid)], check=False, timeout=10)
                local = process.local if isinstance(process, RemoteProcess) else process
                local.kill()
                local.wait(timeout=grace_s)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()

    def close(self) -> None:
        """End the multiplexed connection and remove its socket's directory."""
        run([*self._base[:-1], "-O", "exit", self.spec.ssh], check=False, timeout=10)
        shutil.rmtree(self._control, ignore_errors=True)

    def __repr__(self) -> str:
        return f"SshHost({self.name!r}, {self.spec.ssh!r})"
