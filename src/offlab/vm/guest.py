"""The one QEMU guest class, wherever QEMU runs: `Guest(spec, launcher)` starts QEMU
through its launcher, waits until the guest's agent answers (its TAP joining its bridge
meanwhile), checks QEMU is alive while waiting, runs commands through the agent and
always stops QEMU (killed if it will not stop).

A `Launcher` is the part that depends on where QEMU runs — how it is started and
stopped, how the agent's channel opens, where QEMU's own files are read and removed:
`qemu.InNamespace` (one of the lab's namespaces on this machine) and
`remote.OverSsh` (a server reached over SSH). Everything else is this one class, so a
guest on a server is the same guest as one in a namespace."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable

from ..hosts.base import Host
from .agent import AgentChannel, AgentError, AgentResult
from .image import GuestImage
from .spec import GuestError, GuestSpec

BOOT_TIMEOUT_S = 120.0
"""TCG boots this guest in about 5 s alone; two at once on two busy cores take longer."""
PING_EVERY_S = 2.0
STOP_GRACE_S = 5.0
"""QEMU exits cleanly on SIGTERM; after this it is killed."""
TAP_GONE_S = 3.0


@dataclass(frozen=True)
class Started:
    """What a launcher hands back once QEMU runs."""

    process: Any
    """A subprocess.Popen or an ssh RemoteProcess: `pid`, `poll()`, `returncode`."""
    launched_at: float
    """time.monotonic() just before QEMU was started (the guest's boot time counts from it)."""
    agent: AgentChannel | None = None
    """The agent's channel when QEMU's own stdio carries it; None: `open_agent` opens it."""


class Launcher(ABC):
    """Where a guest's QEMU runs. `host` is where its TAP appears (a local namespace or
    an SSH server); `image`, `accel` and `runtime` are known once `start` ran."""

    host: Host
    image: GuestImage | None
    accel: str | None
    accel_reason: str
    runtime: Any
    """QEMU's files (console log, stderr, agent socket): a local Path or a path on the server."""

    tap_poll_s = 0.05
    """How often to look for the TAP QEMU creates (a round trip when over SSH)."""

    @property
    def where(self) -> str:
        """Appended to the guest's name in messages: "" here, " on sender" on a server."""
        return ""

    @abstractmethod
    def start(self, spec: GuestSpec) -> Started:
        """Start QEMU for `spec` (the accelerator chosen, the runtime directory made)."""

    @abstractmethod
    def open_agent(self, deadline: float, check_alive: Callable[[], None],
                   failure: Callable[[str], str]) -> AgentChannel:
        """The agent's channel, once QEMU opened it: `check_alive` raises if QEMU died,
        `failure` words a GuestError with what QEMU and the console said last."""

    @abstractmethod
    def log_tail(self, name: str) -> list[str]:
        """The last lines of one of QEMU's files in the runtime directory."""

    @abstractmethod
    def end(self, process: Any) -> None:
        """TERM QEMU, KILL it after STOP_GRACE_S."""

    @abstractmethod
    def clean(self) -> None:
        """Remove the runtime directory."""


class Guest:
    """`launch()` then `wait_ready()` (or `start()` for both); `run()` commands; `stop()`.
    Several guests boot faster launched together, then waited for one by one. A local
    guest is launched from a thread that outlives it: the kernel delivers
    PR_SET_PDEATHSIG when the launching *thread* ends. One command at a time per guest
    (`run` is not thread-safe)."""

    def __init__(self, spec: GuestSpec, launcher: Launcher, *, bridge: str | None = None):
        self.spec = spec
        self.launcher = launcher
        self.host = launcher.host
        """Where QEMU runs and its TAP appears: a local namespace or an SSH server."""
        self.bridge = bridge
        """A bridge on the host the TAP joins once QEMU created it."""
        self.boot_s: float | None = None
        self.process: Any = None
        self._agent: AgentChannel | None = None
        self._launched_at = 0.0
        self._tap_was_there = False

    @property
    def tap(self) -> str | None:
        return self.spec.nic.tap

    @property
    def accel(self) -> str | None:
        return self.launcher.accel

    @property
    def accel_reason(self) -> str:
        return self.launcher.accel_reason

    @property
    def image(self) -> GuestImage | None:
        return self.launcher.image

    @property
    def runtime(self) -> Any:
        return self.launcher.runtime

    @property
    def pid(self) -> int:
        if self.process is None:
            raise GuestError(f"{self.where} is not running")
        return self.process.pid

    @property
    def where(self) -> str:
        """How messages name the guest: "guest a", "guest a on sender"."""
        return f"guest {self.spec.name}{self.launcher.where}"

    # --- life cycle -----------------------------------------------------------------------

    def start(self, timeout: float = BOOT_TIMEOUT_S) -> "Guest":
        self.launch()
        self.wait_ready(timeout)
        return self

    def launch(self) -> None:
        """QEMU started; any failure stops what was started before it is raised."""
        try:
            if self.tap:
                self._tap_was_there = self.host.has_link(self.tap)
            started = self.launcher.start(self.spec)
            self.process, self._launched_at, self._agent = started.process, started.launched_at, started.agent
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """TERM QEMU (it exits cleanly on it), KILL it after a grace period; then its
        TAP is gone (when QEMU made it) and its runtime files are removed."""
        if self._agent is not None:
            self._agent.close()
            self._agent = None
        if self.process is not None:
            process, self.process = self.process, None
            self.launcher.end(process)
            if self.tap and not self._tap_was_there:
                self._wait_tap_gone()
        self.launcher.clean()

    def __enter__(self) -> "Guest":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"Guest({self.spec.name!r}, {self.launcher!r}, {self.spec.nic.backend}, {self.accel})"

    def _failure(self, what: str) -> str:
        """One message with what QEMU and the guest's console said last."""
        tails = [f"{name}: " + " | ".join(lines) for name in ("qemu.stderr", "console.log")
                 if (lines := self.launcher.log_tail(name))]
        return f"{self.where} ({self.accel}): {what}" + ("; " + "; ".join(tails) if tails else "")

    # --- readiness ----------------------------------------------------------------------

    def wait_ready(self, timeout: float = BOOT_TIMEOUT_S) -> None:
        """Until the agent answers; the TAP joins the bridge meanwhile. Any failure stops
        QEMU before it is raised."""
        try:
            self._wait_ready(time.monotonic() + timeout)
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, deadline: float) -> None:
        agent = self._agent = self._agent or self.launcher.open_agent(deadline, self._check_alive, self._failure)
        if self.tap:
            self._attach_tap(deadline)
        pings: set[str] = set()
        while True:
            # The serial port drops what arrives before the agent opens it: ask again
            # until one ping is answered; later answers to earlier pings are ignored.
            try:
                pings.add(agent.send("echo ready", 5, prefix="ping"))
                answer = agent.wait(pings, min(deadline, time.monotonic() + PING_EVERY_S))
            except AgentError as err:
                raise GuestError(self._failure(str(err))) from None
            if answer is not None:
                break
            self._check_alive()
            if time.monotonic() > deadline:
                raise GuestError(self._failure("the agent did not answer"))
        self.boot_s = time.monotonic() - self._launched_at
        if self.run("test -e /sys/class/net/eth0", check=False).status != 0:
            raise GuestError(self._failure("the guest has no eth0"))

    def _attach_tap(self, deadline: float) -> None:
        assert self.tap is not None
        while not self.host.has_link(self.tap):
            self._check_alive()
            if time.monotonic() > deadline:
                raise GuestError(self._failure(f"QEMU did not create {self.tap}"))
            time.sleep(self.launcher.tap_poll_s)
        self.host.set_link(self.tap, mtu=self.spec.mtu)
        if self.bridge:
            self.host.ip("link", "set", "dev", self.tap, "master", self.bridge)

    def _check_alive(self) -> None:
        if self.process is not None and self.process.poll() is not None:
            raise GuestError(self._failure(f"QEMU exited with status {self.process.returncode}"))

    def _wait_tap_gone(self) -> None:
        """After QEMU ended: its TAP goes with it, a moment later."""
        deadline = time.monotonic() + TAP_GONE_S
        while self.tap and self.host.has_link(self.tap) and time.monotonic() < deadline:
            time.sleep(self.launcher.tap_poll_s)

    # --- commands -----------------------------------------------------------------------

    def run(self, script: str, *, timeout: int = 30, check: bool = True) -> AgentResult:
        """A sh script in the guest; its status, stdout and stderr. With `check`, a
        non-zero status is a GuestError naming the script and its stderr. One command
        at a time per guest (the agent's channel is not thread-safe)."""
        if self._agent is None:
            raise GuestError(f"{self.where} is not running")
        try:
            result = self._agent.request(script, timeout)
        except AgentError as err:
            raise GuestError(self._failure(f"`{script}`: {err}")) from None
        if check and result.status != 0:
            raise GuestError(f"{self.where}: `{script}` exited with status {result.status}: "
                             f"{result.stderr.strip()[-300:] or 'no error output'}")
        return result
