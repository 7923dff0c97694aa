"""The run's lease on a server, and the fencing token every command there carries.

A server is held by the run whose token is the first line of `<run dir>/owner`
(server.py). A controller can lose that hold without knowing it: frozen, suspended or cut
off for longer than the watchdog's delay, it comes back to a server its watchdog has
restored and another run may hold. So nothing it sends is trusted to be still wanted:
every command of a held server runs inside a small POSIX shell prelude on the server
that takes `<run dir>.lock` (flock), compares the owner with the run's token, and only
then runs the command — the lock held until it ends, so the watchdog (which takes the
same lock before it restores) never undoes the server under a command that passed the
check. A command refused that way exits with LEASE_LOST_STATUS and the marker on
stderr; the controller then marks the lease lost and sends nothing more to that server.

A spawned process (iperf3, irtt, ...) is checked at its start and then lets the lock go
(it runs for the whole measurement): it is journaled before it runs, so a watchdog that
restores later kills its process group.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

LEASE_LOST_STATUS = 86
MARKER = "offlab: lease lost:"

_CHECK = r"""
d=$1; t=$2; shift 2
# Read-only: a command that runs as the SSH user (no sudo) takes the lock too.
[ -e "$d.lock" ] || : >>"$d.lock"
exec 9<"$d.lock" || exit 1
flock 9 || exit 1
now=$(head -n 1 "$d/owner" 2>/dev/null) || now=""
if [ "$now" != "$t" ]; then
  echo "offlab: lease lost: ${now:-nobody} holds $d now" >&2
  logger -t offlab -- "refused a command of $t: ${now:-nobody} holds $d" 2>/dev/null
  exit 86
fi
"""

FENCED_RUN = _CHECK + '"$@" 9>&-\n'
"""Run the command with the lock held until it ends (its own exit status)."""

FENCED_EXEC = _CHECK + 'exec 9>&-\nexec "$@"\n'
"""Check, let the lock go, become the command (a long-running spawned process)."""


class LeaseLost(BaseException):
    """The server's hold is another run's (or nobody's): this run must stop at once and
    touch nothing there. A BaseException, like a signal's Interrupted, so that no
    `except Exception` on the way to the runner swallows it."""

    def __init__(self, host: str, reason: str, first: bool = False):
        self.host = host
        self.reason = reason
        self.first = first
        """Whether this refusal is how the run learnt of the loss (Fence.lose): only the
        first one may stop the run; a later one finds the run already stopping."""
        super().__init__(f"{host}: lease lost ({reason})")


@dataclass
class Fence:
    """The run's token on one server (one kernel): shared by the connections of every
    role there, so one refusal stops them all."""

    directory: str
    token: str
    host: str
    lost: str | None = None
    """Why the lease is gone (set once, by whichever thread saw it first)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def wrap(self, args: list[str], hand_over: bool = False) -> list[str]:
        """`args` as run on the server behind the token check."""
        self.check()
        script = FENCED_EXEC if hand_over else FENCED_RUN
        return ["sh", "-c", script, "offlab-fenced", self.directory, self.token, *args]

    def check(self) -> None:
        if self.lost is not None:
            raise LeaseLost(self.host, self.lost)

    def refused(self, stderr: str) -> bool:
        return MARKER in stderr

    def lose(self, reason: str) -> LeaseLost:
        with self._lock:
            first = self.lost is None
            if first:
                self.lost = reason
        return LeaseLost(self.host, self.lost, first=first)

    def lose_from(self, stderr: str) -> LeaseLost:
        line = next((line for line in stderr.splitlines() if MARKER in line), stderr.strip())
        return self.lose(line.split(MARKER, 1)[-1].strip() or "refused by the server")
