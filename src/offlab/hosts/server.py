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
  syslog (`logger -t offlab`) and exits; it also exits as soon as the run directory
  is gone (the controller restored and released the server itself).
"""

from __future__ import annotations

import os
import socket
import threading
import time
from .base import Host, HostError
from .journal import Identity, Mirror, Record, read_identity, undo_all
from .changes import Change

SERVER_DIR = "/var/lib/offlab/run"
DEFAULT_WATCHDOG_S = 60
"""Seconds without a heartbeat after which a server restores itself."""

_ACQUIRE = r"""
d=$1
mkdir -p "${d%/*}"
if mkdir -m 700 "$d" 2>/dev/null; then
  printf '%s\n%s\n' "$2" "$3" > "$d/owner"; touch "$d/heartbeat"
  logger -t offlab "held for a run by $2" 2>/dev/null; echo acquired
else
  echo held; cat "$d/owner" 2>/dev/null
  echo "age $(( $(date +%s) - $(stat -c %Y "$d/heartbeat" 2>/dev/null || echo 0) ))"
fi
"""

_WATCHDOG = r"""
exec </dev/null >/dev/null 2>&1
d=$1; delay=$2; undo=$1/$3.undo.sh
while [ -d "$d" ]; do
  sleep 1
  beat=$(stat -c %Y "$d/heartbeat" 2>/dev/null) || continue
  [ $(( $(date +%s) - beat )) -gt "$delay" ] || continue
  if [ -f "$undo" ]; then
    logger -t offlab "no heartbeat from the controller for ${delay} s: restoring from $undo" 2>/dev/null
    said=$(sh "$undo" 2>&1)
    [ -z "$said" ] || logger -t offlab "$said" 2>/dev/null
    rm -f "$undo"
  fi
  for other in "$d"/*.undo.sh; do [ -e "$other" ] && exit 0; done
  rm -rf "$d"
  logger -t offlab "restored and released" 2>/dev/null
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
[ -d "$d" ] || { echo gone; exit 0; }
[ "$(head -n 1 "$d/owner" 2>/dev/null)" = "$2" ] || { echo other; exit 0; }
for f in "$d"/*.undo.sh; do [ -e "$f" ] && { echo kept; exit 0; }; done
rm -rf "$d"; logger -t offlab "released by $2" 2>/dev/null; echo released
"""


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

    def acquire(self) -> str:
        """Hold the server or refuse in one line naming the holder; returns a note when
        a hold from before the server's last reboot was cleared."""
        note = ""
        for _ in range(2):
            said = self.host.run(["sh", "-c", _ACQUIRE, "offlab-lock", self.directory, self.token,
                                  self.identity.boot_id], timeout=20).stdout.splitlines()
            if said[:1] == ["acquired"]:
                self.held = True
                return note
            owner = said[1] if len(said) > 1 else "an unknown controller"
            boot = said[2] if len(said) > 2 else ""
            if boot and boot != self.identity.boot_id:
                self.host.run(["rm", "-rf", self.directory])
                note = f"{self.host.name}: cleared a hold from before the server's last reboot ({owner})"
                continue
            age = said[-1].removeprefix("age ") if said[-1].startswith("age ") else "?"
            raise HostError(f"{self.host.name}: the server is in use by another offlab run ({owner}; "
                            f"last heartbeat {age} s ago, {self.directory}); wait for it to end — if its "
                            f"controller is gone, the server restores itself within {self.delay_s} s "
                            "of its last heartbeat")
        raise HostError(f"{self.host.name}: could not hold {self.directory}; remove it by hand")

    def watch(self, host: Host, key: str) -> None:
        """Start the watchdog of one journal, through the connection of its role (roles
        that share a kernel may not share a network namespace: each undoes its own)."""
        host.run(["setsid", "-f", "sh", "-c", _WATCHDOG, "offlab-watchdog", self.directory,
                  str(self.delay_s), key], timeout=20)

    def beat(self) -> None:
        self.host.run(["touch", f"{self.directory}/heartbeat"], check=False, timeout=10)

    def write(self, key: str, record: Record, undo_script: str, log: str) -> None:
        done = self.host.run(["sh", "-c", _WRITE, "offlab-journal", self.directory, key, log],
                             input_text=undo_script, check=False, timeout=20)
        if done.returncode != 0:
            raise HostError(f"{self.host.name}: cannot write the journal into {self.directory} "
                            f"({done.stderr.strip() or 'gone'}): the server's watchdog may have restored "
                            "it after missed heartbeats")

    def remove(self, key: str) -> None:
        self.host.run(["rm", "-f", f"{self.directory}/{key}.undo.sh"], check=False, timeout=10)

    def release(self) -> str:
        """Let the server go when no journal is left in it; "released", "kept" (a journal
        stays: the watchdog restores it), "gone" or "other" (someone else's now)."""
        said = self.host.run(["sh", "-c", _RELEASE, "offlab-release", self.directory, self.token],
                             check=False, timeout=20).stdout.strip()
        self.held = False
        return said or "unknown"


class Heartbeat:
    """Touches every held server's heartbeat from a thread until stopped; a server that
    does not answer is simply tried again (its watchdog takes over if it stays silent)."""

    def __init__(self, servers: list[ServerRun], interval_s: float):
        self.servers = servers
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="offlab-heartbeat", daemon=True)

    def start(self) -> "Heartbeat":
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            for server in self.servers:
                try:
                    server.beat()
                except Exception:  # a silent server: its watchdog's business, retried next beat
                    continue

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=15)


def replay_session(record: Record) -> list[str]:
    """`offlab restore` of one journal: the same server (machine-id, MAC) or a refusal,
    its watchdog kept from firing meanwhile, every change replayed with its drift check,
    its server-side copy removed and the server released if nothing else holds it."""
    from .hostsfile import HostSpec
    from .ssh import SshHost
    spec = HostSpec(**record.spec)
    host = SshHost(spec.role, spec, record.ssh_config)
    try:
        expected = record.identity
        if expected:
            found = read_identity(host, spec.interface)
            if (found.machine_id, found.mac) != (expected["machine_id"], expected["mac"]):
                raise HostError(f"{spec.ssh} is now machine {found.machine_id} with {spec.interface} "
                                f"{found.mac}, not the journal's {expected['machine_id']} / {expected['mac']}; "
                                "restore that server by hand, then delete its journal")
        server = ServerRun(host, Identity(**expected) if expected else Identity("", "", ""),
                           record.token) if expected else None
        if server is not None:
            server.beat()
        lines, failed = undo_all(host, [Change.from_json(c) for c in record.changes], drift_check=True)
        if failed:
            raise HostError(f"could not undo {'; '.join(failed)}")
        if server is not None:
            server.remove(server.identity.key)
            server.release()
        return lines or [f"{host.name}: nothing to do (already as it was)"]
    finally:
        host.close()
