"""offlab-fwd on a server (R of the middlebox plan on real hosts), driven over SSH with
the same surface as the local `fwd.Forwarder`, so `ForwarderComponent` runs either.

* **The binary, by hash.** The controller's offlab-fwd is copied to the server into
  the files cache every copy to a server uses (hosts/files.py:
  /var/lib/offlab/cache/<sha256>/offlab-fwd) unless it is already there; a server never
  runs a binary other than the controller's own build, and a second run copies
  nothing. The file stays there (a cache, not a running thing; `offlab restore --purge
  --hosts` removes it).
* **The process** is started through `SshHost.spawn`: in a process group of its own,
  journaled with its start time before it runs (hosts/journal.py), so every exit path
  — the end of a case, Ctrl-C, a `kill -9` of offlab followed by the next start or
  `offlab restore`, the server's watchdog — kills its group.
* **Its output** (the "ready" line, the stats file it rewrites on SIGUSR1 by rename)
  lives in a directory under /tmp on the server, journaled before it is made and
  removed when it stops (or by the restore of a killed run).
"""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path
from typing import Any

from ..hosts.proctimes import ProcessTimes, process_percent, process_times
from .fwd import (PORT_OFFLOADS, READY_TIMEOUT_S, STATS_TIMEOUT_S, STOP_GRACE_S, FwdConfig, FwdError,
                  FwdStats, find_binary, parse_stats)
from ..hosts import files
from ..hosts.ssh import SshHost

OUTPUT_PREFIX = "offlab-fwd"
"""Its output directory on the server: /tmp/offlab-fwd.<random>."""

_SNAPSHOT = r"""
before=$(cat "$1" 2>/dev/null)
kill -s USR1 "$2" || exit 3
i=0
while [ $i -lt "$3" ]; do
  now=$(cat "$1" 2>/dev/null)
  if [ -n "$now" ] && [ "$now" != "$before" ]; then printf '%s\n' "$now"; exit 0; fi
  sleep 0.01; i=$((i + 1))
done
exit 4
"""


def install_binary(host: SshHost, local: Path | None = None) -> tuple[str, bool]:
    """The controller's offlab-fwd on `host` (path, whether it was copied now)."""
    return files.ensure(host, local or find_binary(), executable=True)


class RemoteForwarder:
    """A running offlab-fwd on a server; `start()` returns once its ports are open."""

    def __init__(self, host: SshHost, config: FwdConfig, binary: str):
        self.host = host
        self.config = config
        self.binary = binary
        self.ready: dict[str, Any] = {}
        self._process = None
        self._dir = ""
        self._times: tuple[float, ProcessTimes | None] | None = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def args(self) -> list[str]:
        """offlab-fwd's arguments: AF_PACKET ports in the server's own namespace."""
        args = [self.binary]
        for port in self.config.ports:
            if port.kind == "vhost-user":  # a guest's socket (remote_guests.py): no offloads of its own
                args += ["--port", port.argument()]
                continue
            listed = "+".join(o for o in PORT_OFFLOADS if o in port.offloads) or "none"
            args += ["--port", f"{port.kind}:{port.ifname},offloads={listed}"]
        args += ["--mode", self.config.mode, "--stats-file", f"{self._dir}/stats.json"]
        if self.config.cpu is not None:
            args += ["--cpu", str(self.config.cpu)]
        return args

    def start(self) -> "RemoteForwarder":
        self._dir = self.host.make_directory(OUTPUT_PREFIX)
        command = f"exec {shlex.join(self.args())} >{self._dir}/stdout.jsonl 2>{self._dir}/stderr.txt"
        try:
            self._process = self.host.spawn(["sh", "-c", command])
            self.ready = self._wait_ready()
        except BaseException:
            self.stop()
            raise
        self._times = (time.monotonic(), process_times(self._process.pid, self.host))
        return self

    def _wait_ready(self) -> dict[str, Any]:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            out = self.host.run(["cat", f"{self._dir}/stdout.jsonl"], check=False, timeout=10).stdout
            for line in out.splitlines():
                doc = json.loads(line)
                if doc.get("event") == "ready":
                    return doc
            if self._process is not None and self._process.poll() is not None:
                said = self.host.run(["cat", f"{self._dir}/stderr.txt"], check=False, timeout=10).stdout
                raise FwdError(f"offlab-fwd on {self.host.name} exited at start: {said.strip() or 'no output'}")
            time.sleep(0.05)
        raise FwdError(f"offlab-fwd on {self.host.name} not ready after {READY_TIMEOUT_S:g} s")

    def snapshot(self) -> FwdStats:
        """SIGUSR1 and the stats file it rewrites, in one round trip."""
        if self._process is None or self._process.poll() is not None:
            raise FwdError(f"offlab-fwd on {self.host.name} is not running")
        tries = str(int(STATS_TIMEOUT_S / 0.01))
        done = self.host.run(["sh", "-c", _SNAPSHOT, "offlab-stats", f"{self._dir}/stats.json",
                              str(self._process.pid), tries], check=False, timeout=STATS_TIMEOUT_S + 10)
        if done.returncode != 0:
            raise FwdError(f"offlab-fwd on {self.host.name} wrote no stats within {STATS_TIMEOUT_S:g} s of SIGUSR1")
        return parse_stats(done.stdout.strip())

    def cpu_since_last(self) -> dict[str, float]:
        """The forwarder's own usr/sys on its server, % of one core, since the last call."""
        if self._times is None or self._process is None:
            return {}
        now, times = time.monotonic(), process_times(self._process.pid, self.host)
        then, before = self._times
        self._times = (now, times)
        percent = process_percent(before, times, now - then)
        return {} if percent is None else {"usr_pct": percent["usr"], "sys_pct": percent["sys"]}

    def stop(self) -> None:
        """TERM its process group (KILL after the grace period), then its files."""
        process, self._process = self._process, None
        if process is not None:
            self.host.stop(process, grace_s=STOP_GRACE_S)
        if self._dir:
            self.host.remove_directory(self._dir)
            self._dir = ""
