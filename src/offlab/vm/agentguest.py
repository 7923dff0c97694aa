"""What every QEMU guest offlab drives does once QEMU runs, wherever it runs: wait until
its agent answers (the TAP joining its bridge meanwhile), check QEMU is still alive while
waiting, and run commands through the agent. vm/qemu.py's `Guest` (a local namespace)
and vm/remote.py's `RemoteGuest` (a server over SSH) differ only in how QEMU is started
and stopped, how the agent's channel is opened and where QEMU's own logs are read."""

from __future__ import annotations

import time
from typing import Any

from ..hosts.base import Host
from .agent import AgentChannel, AgentError, AgentResult
from .spec import GuestError, GuestSpec

BOOT_TIMEOUT_S = 120.0
"""TCG boots this guest in about 5 s alone; two at once on two busy cores take longer."""
PING_EVERY_S = 2.0
STOP_GRACE_S = 5.0
"""QEMU exits cleanly on SIGTERM; after this it is killed."""
TAP_GONE_S = 3.0


class AgentGuest:
    """The shared half of a guest; a subclass sets `host`, `process`, `_agent` and
    `_launched_at` in `launch()`, and defines `_open_agent`, `_log_tail`, `stop`."""

    TAP_POLL_S = 0.05
    """How often to look for the TAP QEMU creates (a round trip when over SSH)."""

    spec: GuestSpec
    host: Host
    """Where QEMU runs and its TAP appears: a local namespace or an SSH server."""
    bridge: str | None
    accel: str | None
    process: Any
    """A subprocess.Popen or an ssh RemoteProcess: `pid`, `poll()`, `returncode`."""
    boot_s: float | None
    _agent: AgentChannel | None
    _launched_at: float

    @property
    def tap(self) -> str | None:
        return self.spec.nic.tap

    @property
    def pid(self) -> int:
        if self.process is None:
            raise GuestError(f"{self.where} is not running")
        return self.process.pid

    @property
    def where(self) -> str:
        """How messages name the guest: "guest a", "guest a on sender"."""
        return f"guest {self.spec.name}"

    # --- what a subclass provides ------------------------------------------------------

    def _open_agent(self, deadline: float) -> AgentChannel:
        raise NotImplementedError

    def _log_tail(self, name: str) -> list[str]:
        """The last lines of one of QEMU's files in the guest's runtime directory."""
        raise NotImplementedError

    def _failure(self, what: str) -> str:
        """One message with what QEMU and the guest's console said last."""
        tails = [f"{name}: " + " | ".join(lines) for name in ("qemu.stderr", "console.log")
                 if (lines := self._log_tail(name))]
        return f"{self.where} ({self.accel}): {what}" + ("; " + "; ".join(tails) if tails else "")

    def stop(self) -> None:
        raise NotImplementedError

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
        agent = self._agent = self._agent or self._open_agent(deadline)
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
            time.sleep(self.TAP_POLL_S)
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
            time.sleep(self.TAP_POLL_S)

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
