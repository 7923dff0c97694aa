"""`OverSsh`: the launcher (guest.py) of a QEMU guest on a server reached over SSH
(`offlab run --hosts` with the `qemu` scenario): the same `Guest`, NIC profile, QEMU
command line and agent as in a local namespace (vm/qemu.py's `InNamespace`), started
by the host's ssh connection.

* The agent's serial port is QEMU's **stdio**, carried by the SSH channel that started
  QEMU: nothing has to listen or be installed on the server (no socat, no forwarded
  socket — offlab's connections allow no forwardings), and the channel is the guest's
  only way in.
* QEMU is started through `SshHost.spawn`: in a process group of its own, recorded in
  the host's journal (pid and start time) before it runs, so a stop, a restore or the
  server's watchdog kills the whole group; its stderr and the guest's console go to
  files in the run's directory on the server, which goes with the server's hold.
* The accelerator is probed on each server as on this machine (vm/accel.py): KVM only
  when a KVM guest actually reaches init there within the bound, TCG otherwise, named.
"""

from __future__ import annotations

import os
import select
import shlex
import time
from pathlib import PurePosixPath
from typing import Callable

from ..hosts.ssh import RemoteProcess, SshHost
from .accel import ACCELERATORS, PROBE_MARK, PROBE_TIMEOUT_S, forced_accelerator, probe_argv
from .agent import AgentChannel, AgentError, FrameParser
from .guest import STOP_GRACE_S, Launcher, Started
from .image import GuestImage
from .qemu import qemu_argv
from .spec import GuestError, GuestSpec


class PipeAgentChannel(AgentChannel):
    """The agent's frames over the local ssh client's stdin and stdout."""

    def __init__(self, process: RemoteProcess):
        self.path = "stdio"
        self._process = process
        assert process.local.stdin is not None and process.local.stdout is not None
        self._out = process.local.stdout.fileno()
        self._parser = FrameParser()
        self._serial = 0

    def _write(self, data: bytes) -> None:
        stdin = self._process.local.stdin
        if stdin is None or stdin.closed:
            raise AgentError("the agent's channel is closed")
        try:
            stdin.write(data.decode("ascii"))
            stdin.flush()
        except (BrokenPipeError, ValueError) as err:
            raise AgentError(f"the guest's ssh channel closed ({err})") from None

    def _read(self, timeout: float) -> bytes | None:
        ready, _, _ = select.select([self._out], [], [], timeout)
        return os.read(self._out, 65536) if ready else None

    def close(self) -> None:
        """The channel closes with QEMU's ssh client (OverSsh.end)."""


_probed: dict[str, tuple[str, str]] = {}
"""Answers by server kernel (machine-id and boot id): probed once per process."""


def probe_accelerator(host: SshHost, image: GuestImage, scratch: str, kernel: str = "") -> tuple[str, str]:
    """(accelerator, why) on `host`: the probe guest booted under KVM there (its init
    powers off at once), bounded by `timeout` on the server itself, so a probe whose
    controller died ends on its own; kept for the process by `kernel` (the server's
    identity) when given. OFFLAB_VM_ACCEL forces the answer as locally."""
    forced = forced_accelerator()
    if forced:
        return forced
    if kernel and kernel in _probed:
        return _probed[kernel]
    answer = _probe(host, image, scratch)
    if kernel:
        _probed[kernel] = answer
    return answer


def _probe(host: SshHost, image: GuestImage, scratch: str) -> tuple[str, str]:
    log = f"{scratch}/kvm-probe.log"
    argv = probe_argv(image, log)
    script = (f"[ -r /dev/kvm ] && [ -w /dev/kvm ] || {{ echo 'tcg no usable /dev/kvm'; exit 0; }}\n"
              f"mkdir -p {shlex.quote(scratch)}\n"
              f"timeout -s KILL {PROBE_TIMEOUT_S:g} {shlex.join(argv)} >/dev/null 2>{shlex.quote(log)}.err; rc=$?\n"
              f"if [ $rc = 0 ] && grep -q {shlex.quote(PROBE_MARK)} {shlex.quote(log)}; then echo 'kvm KVM guest booted in the probe'\n"
              f"elif [ $rc = 137 ]; then echo 'tcg a KVM guest did not reach init within {PROBE_TIMEOUT_S:g} s'\n"
              f"else echo \"tcg KVM probe failed: $(head -n 1 {shlex.quote(log)}.err || echo exit $rc)\"; fi\n"
              f"rm -f {shlex.quote(log)} {shlex.quote(log)}.err\n")
    said = host.run(["sh", "-c", script], timeout=PROBE_TIMEOUT_S + 30).stdout.strip().splitlines()
    accel, _, why = (said[-1] if said else "tcg probe said nothing").partition(" ")
    return (accel, why) if accel in ACCELERATORS else ("tcg", f"probe said {said[-1:]}")


class OverSsh(Launcher):
    """QEMU on a server: started by the host's ssh connection, its agent on QEMU's stdio.
    `image` holds the kernel and initramfs paths *on the server* (copied by hash,
    hosts/files.py), `accel` what the server's probe chose (`probe_accelerator`),
    `runtime` a directory of the run on the server, `core` the core QEMU is pinned to."""

    tap_poll_s = 0.1  # each look is a round trip to the server

    def __init__(self, host: SshHost, image: GuestImage, accel: str, runtime: str, *, core: int | None = None,
                 accel_reason: str = ""):
        self.host = host
        self.image = image
        self.accel = accel
        self.accel_reason = accel_reason
        self.runtime = runtime
        self.core = core

    @property
    def where(self) -> str:
        return f" on {self.host.name}"

    def start(self, spec: GuestSpec) -> Started:
        self.host.run(["mkdir", "-p", self.runtime], timeout=20)
        argv = qemu_argv(spec, self.image, self.accel, PurePosixPath(self.runtime), agent="stdio,id=agent,signal=off")
        if self.core is not None:
            argv = ["taskset", "-c", str(self.core), *argv]
        # QEMU's stderr to a file there: a pipe nobody drains could stall it.
        command = ["sh", "-c", 'exec "$@" 2>"$0"', f"{self.runtime}/qemu.stderr", *argv]
        launched_at = time.monotonic()
        process = self.host.spawn(command, capture_stdout=True, keep_stdin=True)
        try:
            return Started(process, launched_at, PipeAgentChannel(process))
        except BaseException:  # not the guest's yet: its stop would not end it
            self.end(process)
            raise

    def open_agent(self, deadline: float, check_alive: Callable[[], None],
                   failure: Callable[[str], str]) -> AgentChannel:
        raise GuestError(failure("not launched"))  # start() opens the channel with QEMU

    def log_tail(self, name: str) -> list[str]:
        """Read there."""
        done = self.host.run(["tail", "-n", "5", f"{self.runtime}/{name}"], check=False, timeout=15)
        return done.stdout.strip().splitlines() if done.returncode == 0 else []

    def end(self, process: RemoteProcess) -> None:
        """Close QEMU's stdin (the agent's channel), then TERM its process group there and
        KILL it after a grace period (SshHost.stop)."""
        if process.local.stdin is not None:
            try:
                process.local.stdin.close()
            except OSError:
                pass
            process.local.stdin = None
        self.host.stop(process, grace_s=STOP_GRACE_S)  # type: ignore[arg-type]

    def clean(self) -> None:
        self.host.run(["rm", "-rf", self.runtime], check=False, timeout=20)

    def __repr__(self) -> str:
        return repr(self.host.name)
