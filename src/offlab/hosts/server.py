"""offlab's hold on a server for one run, kept on the server itself:

* a run directory, /var/lib/offlab/run, made with `mkdir` (atomic): whoever made it
  holds the server, and a second controller — or the same server under another alias —
  is refused with the holder named. Its `owner` file names the controller and the
  server's boot id (a directory from before a reboot holds nothing: the reboot undid
  every change, so it is cleared);
* a copy of each journal there, as a shell script of undo commands (journal.py);
* a watchdog per journal, a small POSIX shell loop started over SSH in a session of its
  own, that restores the server from that script (and releases the server once no
  script is left) when the controller's heartbeat (`touch heartbeat` over the SSH
  connection every `delay / 4` s) is older than `delay` seconds — the controller was killed, its machine went away, or the
  network between them did. It runs the undo scripts (processes killed by process
  group, devices removed, MTUs, link states, files and features put back), logs to
  syslog (`logger -t offlab`), leaves a mark (`restored/<key>`, the run's token) and
  exits; it also exits as soon as the hold is not its run's any more (the controller
  restored and released the server itself). It runs outside the SSH session: a
  systemd unit where systemd runs, else a session and a cgroup of its own (_LAUNCH).

The hold is a lease (lease.py): every command of the run carries its token and runs
behind a check of the owner under `flock <run dir>.lock`, which the watchdog takes too.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from typing import Callable

from .base import Host, HostError
from .journal import Identity, Mirror, Record
from .lease import Fence, LeaseLost

SERVER_DIR = "/var/lib/offlab/run"
DEFAULT_WATCHDOG_S = 60
"""Seconds without a heartbeat after which a server restores itself."""

_ACQUIRE = r"""
d=$1
umask 022
mkdir -p "${d%/*}"
exec 9>>"$d.lock"; flock 9
# 755 and a readable owner: the token check of a command run as the SSH user reads it.
if mkdir -m 755 "$d" 2>/dev/null; then
  printf '%s\n%s\n' "$2" "$3" > "$d/owner"; touch "$d/heartbeat"
  logger -t offlab -- "held for a run by $2" 2>/dev/null; echo acquired
else
  if [ "$(sed -n 2p "$d/owner" 2>/dev/null)" != "$3" ]; then
    rm -rf "$d"; echo "rebooted"; exit 0
  fi
  echo held; head -n 1 "$d/owner" 2>/dev/null
  echo "watchdogs $(pgrep -fc "offlab-watchdog $d ")"
  echo "age $(( $(date +%s) - $(stat -c %Y "$d/heartbeat" 2>/dev/null || echo 0) ))"
fi
"""

_LAUNCH = r"""
w=$1; shift
rm -f "$1/$3.watching"
if [ -d /run/systemd/system ] && command -v systemd-run >/dev/null 2>&1; then
  systemd-run --unit="offlab-watchdog-$3" --collect --quiet sh -c "$w" offlab-watchdog "$@" || exit 1
else
  setsid -f sh -c "$w" offlab-watchdog "$@" || exit 1
fi
# Back only once the watchdog is in place (out of the session), before any change.
i=0
while [ ! -e "$1/$3.watching" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -e "$1/$3.watching" ] || { echo "the watchdog did not start" >&2; exit 1; }
"""
"""Where systemd runs, the watchdog is a transient unit of its own (`systemctl status
offlab-watchdog-KEY`): logind's KillUserProcesses, which ends a login session's
processes, cannot reach it. Elsewhere it leaves the SSH session in a session of its
own and moves into a cgroup of its own (offlab-watchdog/KEY under cgroup2), so that
killing the session's cgroup does not kill it."""

_WATCHDOG = r"""
exec </dev/null >/dev/null 2>&1
d=$1; delay=$2; key=$3; t=$4; undo=$1/$3.undo.sh
if [ -z "$INVOCATION_ID" ]; then
  g=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
  if [ -z "$g" ] || [ ! -e "$g/cgroup.procs" ]; then
    # No cgroup2 in sight (a session under `ip netns exec` has a sysfs of its own):
    # mount the hierarchy privately to reach it.
    private=$(mktemp -d) && g=$private && { mount -t cgroup2 none "$g" 2>/dev/null || { rmdir "$g"; g=""; private=""; }; }
  fi
  if [ -n "$g" ]; then
    # One cgroup per journal key, left (empty) after: a watchdog removing another's could
    # remove it between that one's mkdir and its move.
    mkdir -p "$g/offlab-watchdog/$key" && echo $$ > "$g/offlab-watchdog/$key/cgroup.procs"
  fi
  # Once moved, the private view of the hierarchy is no longer needed: leave no mount
  # point behind in /tmp.
  if [ -n "$private" ]; then umount "$private" && rmdir "$private"; fi
fi
touch "$d/$key.watching"
mine() { [ "$(head -n 1 "$d/owner" 2>/dev/null)" = "$t" ]; }
late() {
  beat=$(stat -c %Y "$d/heartbeat" 2>/dev/null) || return 1
  [ $(( $(date +%s) - beat )) -gt "$delay" ]
}
while mine; do
  sleep 1
  late || continue
  exec 9>>"$d.lock"; flock 9
  # Under the lock: a fenced command of the controller is either done or refused.
  mine || exit 0
  if ! late; then exec 9>&-; continue; fi
  if [ -f "$undo" ]; then
    logger -t offlab -- "no heartbeat from $t for ${delay} s: restoring from $undo" 2>/dev/null
    said=$(sh "$undo" 2>&1)
    [ -z "$said" ] || logger -t offlab -- "$said" 2>/dev/null
    mkdir -p "${d%/*}/restored" && printf '%s\n' "$t" > "${d%/*}/restored/$key"
    rm -f "$undo"
  fi
  for other in "$d"/*.undo.sh; do [ -e "$other" ] && exit 0; done
  rm -rf "$d"
  logger -t offlab -- "restored and released the hold of $t" 2>/dev/null
  exit 0
done
"""

_WRITE = r"""
umask 077
cat > "$1/$2.undo.tmp" && mv "$1/$2.undo.tmp" "$1/$2.undo.sh" || exit 1
[ -z "$3" ] || logger -t offlab -- "$3" 2>/dev/null
exit 0
"""

_RELEASE = r"""
d=$1
for f in "$d"/*.undo.sh; do [ -e "$f" ] && { echo kept; exit 0; }; done
rm -rf "$d"; logger -t offlab -- "released by $2" 2>/dev/null; echo released
"""

CLAIM = r"""
d=$1; t=$2; boot=$3; key=$4
mkdir -p "${d%/*}"
exec 9>>"$d.lock"; flock 9
if [ "$(cat "${d%/*}/restored/$key" 2>/dev/null)" = "$t" ]; then echo restored; exit 0; fi
if [ -d "$d" ]; then
  if [ "$(sed -n 2p "$d/owner" 2>/dev/null)" != "$boot" ]; then rm -rf "$d"; echo rebooted; exit 0; fi
  owner=$(head -n 1 "$d/owner" 2>/dev/null)
  [ "$owner" = "$t" ] && { touch "$d/heartbeat"; echo mine; exit 0; }
  echo "other $owner"; exit 0
fi
umask 022; mkdir -m 755 "$d" && printf '%s\n%s\n' "$t" "$boot" > "$d/owner" && touch "$d/heartbeat" && echo mine
"""
"""`offlab restore` of a killed run's journal asks the server first (under the lease's
lock): "restored" (its watchdog did, and left a mark), "rebooted" (the reboot undid
every change), "other OWNER" (another run holds it: it could only take the hold once
this run's watchdog had restored it), or "mine" (the killed run's hold, or a new one
with its token: the replay goes on behind that token)."""


def controller_token() -> str:
    return f"{socket.gethostname()} pid {os.getpid()} since {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}"


class ServerRun(Mirror):
    """The run's hold on one server (one kernel: roles that share a kernel share it)."""

    def __init__(self, host: Host, identity: Identity, token: str, delay_s: int = DEFAULT_WATCHDOG_S,
                 directory: str = SERVER_DIR):
        self.host = host
        self.identity = identity
        self.token = token
        self.delay_s = delay_s
        self.directory = directory
        self.held = False
        self.fence = Fence(directory, token, host.name)
        """Set on every connection to this server once held (SshHost.fence)."""

    @property
    def lost(self) -> str | None:
        return self.fence.lost

    def acquire(self) -> str:
        """Hold the server or refuse in one line naming the holder; returns a note when
        a hold from before the server's last reboot was cleared."""
        note = ""
        for _ in range(2):
            said = self.host.run(["sh", "-c", _ACQUIRE, "offlab-lock", self.directory, self.token,
                                  self.identity.boot_id], timeout=20).stdout.splitlines()
            if said[:1] == ["acquired"]:
                self.held = True
                self._fence(self.host)
                return note
            if said[:1] == ["rebooted"]:
                note = f"{self.host.name}: cleared a hold from before the server's last reboot"
                continue
            owner = said[1] if len(said) > 1 else "an unknown controller"
            age = said[-1].removeprefix("age ") if said[-1].startswith("age ") else "?"
            watchdogs = next((line.split()[1] for line in said if line.startswith("watchdogs ")), "?")
            if watchdogs == "0" and age.isdigit() and int(age) > self.delay_s:
                raise HostError(f"{self.host.name}: a stale hold ({owner}; last heartbeat {age} s ago) and no "
                                f"watchdog runs there to restore it; check the server, then clear it as "
                                "docs/real-hosts.md says (\"A stale hold\")")
            raise HostError(f"{self.host.name}: the server is in use by another offlab run ({owner}; "
                            f"last heartbeat {age} s ago, {self.directory}); wait for it to end — if its "
                            f"controller is gone, the server restores itself within {self.delay_s} s "
                            "of its last heartbeat")
        raise HostError(f"{self.host.name}: could not hold {self.directory}; remove it by hand")

    def _fence(self, host: Host) -> None:
        if hasattr(host, "fence"):
            host.fence = self.fence  # type: ignore[attr-defined]

    def watch(self, host: Host, key: str) -> None:
        """Start the watchdog of one journal, through the connection of its role (roles
        that share a kernel may not share a network namespace: each undoes its own);
        that connection carries the token from now on."""
        self._fence(host)
        host.run(["sh", "-c", _LAUNCH, "offlab-launch", _WATCHDOG, self.directory,
                  str(self.delay_s), key, self.token], timeout=20)

    def beat(self) -> None:
        """Touch the heartbeat behind the token: LeaseLost when the hold is gone."""
        self.host.run(["touch", f"{self.directory}/heartbeat"], check=False, timeout=10)

    def write(self, key: str, record: Record, undo_script: str, log: str) -> None:
        done = self.host.run(["sh", "-c", _WRITE, "offlab-journal", self.directory, key, log],
                             input_text=undo_script, check=False, timeout=20)
        if done.returncode != 0:
            raise HostError(f"{self.host.name}: cannot write the journal into {self.directory} "
                            f"({done.stderr.strip() or 'gone'})")

    def remove(self, key: str) -> None:
        if self.lost is None:
            self.host.run(["rm", "-f", f"{self.directory}/{key}.undo.sh"], check=False, timeout=10)

    def release(self) -> str:
        """Let the server go when no journal is left in it; "released", "kept" (a journal
        stays: the watchdog restores it) or "lost" (the lease went: someone else's now)."""
        self.held = False
        if self.lost is not None:
            return "lost"
        try:
            said = self.host.run(["sh", "-c", _RELEASE, "offlab-release", self.directory, self.token],
                                 check=False, timeout=20).stdout.strip()
        except LeaseLost:
            return "lost"
        return said or "unknown"


class Heartbeat:
    """Touches every held server's heartbeat from a thread until stopped; a server that
    does not answer is simply tried again (its watchdog takes over if it stays silent);
    a server that refuses the token (its lease is gone) is reported once to `on_lost`."""

    def __init__(self, servers: list[ServerRun], interval_s: float,
                 on_lost: Callable[[LeaseLost], None] | None = None):
        self.servers = servers
        self.interval_s = interval_s
        self.on_lost = on_lost
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="offlab-heartbeat", daemon=True)

    def start(self) -> "Heartbeat":
        self._thread.start()
        return self

    def _loop(self) -> None:
        # A Ctrl-C or SIGTERM sent to the process goes to a thread that does not block
        # it; blocked here, it always reaches the main thread, whose mask holds it while
        # the servers are put back (topology/base.py deferred_signals).
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
        while not self._stop.wait(self.interval_s):
            for server in self.servers:
                if server.lost is not None:
                    continue
                try:
                    server.beat()
                except LeaseLost as lost:
                    # Only when this beat is how the run learnt of it: a command of the main
                    # thread refused at the same moment already unwinds the run, and a
                    # signal from here would land in its restore and cut it short (the
                    # journal left behind, seen once in test_host_lease under load).
                    if self.on_lost is not None and lost.first:
                        self.on_lost(lost)
                except Exception:  # a silent server: its watchdog's business, retried next beat
                    continue

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=15)
