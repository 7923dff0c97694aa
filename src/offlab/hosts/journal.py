"""What the lab changed on a real host, written down before it changes it, so the host
can always be put back: at the end of a run, on Ctrl-C/SIGTERM/SIGHUP, by the server's
own watchdog when the controller stops answering (server.py), and — when offlab was
killed or the connection lost — at the next start (`offlab run --hosts`, or
`offlab restore`: recovery.py). A user's NIC is never left with TSO off.

One journal per host and test interface, keyed by the server's machine-id and the
interface's MAC (an alias of the same server finds the same journal): a JSON file under
/var/lib/offlab/journal on the controller and, as a shell script of undo commands with
the JSON in its header, in the server's run directory. It lists every change as
(kind, target, old value, value set, undo commands) — changes.py — and is rewritten
(locally fsynced) before each change is made.

Undo runs in reverse order and never stops at a failure: every other change is still
undone and the failures are reported together. Replaying a journal of an earlier run
first reads each value back: one already as it was is skipped, one somebody changed
since offlab set it is reported and left alone (drift).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .offloads import Interface, OffloadControl, parse_features
from . import changes
from .base import Host, HostError
from .lease import LeaseLost
from .changes import Change
from .hostsfile import HostSpec

STATE_DIR = Path(os.environ.get("OFFLAB_STATE_DIR", "/var/lib/offlab"))
"""The controller's own state (journals, audit log): per lab instance like
OFFLAB_RUNTIME_DIR, so a second controller on one machine (a test of two controllers,
as on two machines) keeps its own."""
JOURNAL_DIR = STATE_DIR / "journal"
VERSION = 2


@dataclass(frozen=True)
class Identity:
    """What makes a server and its test interface the same one again."""

    machine_id: str
    boot_id: str
    mac: str

    @property
    def key(self) -> str:
        return re.sub(r"[^A-Za-z0-9]", "", f"{self.machine_id}-{self.mac}")[:64] or "unknown"


def read_identity(host: Host, interface: str) -> Identity:
    """machine-id, boot_id and the interface's MAC, in one command."""
    done = host.run(["cat", "/etc/machine-id", "/proc/sys/kernel/random/boot_id",
                     f"/sys/class/net/{interface}/address"], check=False, timeout=15)
    lines = done.stdout.split()
    if done.returncode != 0 or len(lines) != 3:
        raise HostError(f"{host.name}: cannot read /etc/machine-id, the boot id and {interface}'s MAC "
                        f"({done.stderr.strip() or 'no output'}); is {interface} there?")
    return Identity(*lines)


@dataclass
class Record:
    """A journal as stored."""

    spec: dict[str, Any]
    ssh_config: str | None
    identity: dict[str, str]
    changes: list[dict[str, Any]] = field(default_factory=list)
    token: str = ""
    """The controller run that holds the server (server.py), to release only its own hold."""
    version: int = VERSION


class Mirror:
    """Where a journal is copied on the server (server.py's run directory); None when
    the host has no server-side copy."""

    token: str = ""
    lost: str | None = None
    """Why the run's lease on the server is gone, once it is (lease.py)."""

    def write(self, key: str, record: Record, undo_script: str, log: str) -> None: ...

    def remove(self, key: str) -> None: ...


def journal_path(identity: Identity, root: Path = JOURNAL_DIR) -> Path:
    return root / f"{identity.key}.json"


class Journal:
    """The record of one host's changes; every mutation goes through it."""

    def __init__(self, host: Host, spec: HostSpec, ssh_config: str | None, identity: Identity,
                 root: Path = JOURNAL_DIR, mirror: Mirror | None = None):
        self.host = host
        self.interface = spec.interface
        self.identity = identity
        self.mirror = mirror
        self.path = journal_path(identity, root)
        self.closed = False
        self.drift: list[str] = []
        """What the restore left alone, changed since by someone else (said by the run)."""
        if self.path.exists():
            raise HostError(f"{host.name} ({spec.ssh}): a journal of an earlier run is still at "
                            f"{self.path}; run `offlab restore` first")
        self.record = Record(asdict(spec), ssh_config, asdict(identity),
                             token=mirror.token if mirror is not None else "")
        listing = parse_features(host.run(["ethtool", "-k", spec.interface]).stdout)
        self.original_features = {name: f.on for name, f in listing.features.items() if not f.fixed}
        self.add(changes.features(spec.interface, self.original_features))

    @property
    def changes(self) -> list[Change]:
        return [Change.from_json(c) for c in self.record.changes]

    def created(self) -> set[str]:
        return {c["target"] for c in self.record.changes if c["kind"] == "device"}

    def add(self, change: Change) -> Change:
        """Write `change` down (here and on the server) before it is made."""
        self.record.changes.append(change.to_json())
        self._write(f"{self.host.name}: {change.kind} {change.target}: {change.old} -> {change.new}")
        return change

    def started(self, pid: int, command: str) -> Change:
        """A process offlab started (its own process group, waiting to run the command
        until this returns): recorded with its start time, so it is killed by group on
        every exit path and never confused with a later process of the same pid."""
        start = changes.start_time(self.host, pid)
        if start is None:
            raise HostError(f"{self.host.name}: `{command}` ended before it could be journaled")
        return self.add(changes.process(pid, start, command))

    def ended(self, change: Change) -> None:
        self.forget(change)

    def forget(self, change: Change) -> None:
        """A change that undid itself (a process that ended): out of the journal."""
        wanted = change.to_json()
        if not self.closed and wanted in self.record.changes:
            self.record.changes.remove(wanted)
            self._write("")

    def _write(self, log: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".tmp")
        with open(temporary, "w", encoding="utf-8") as out:
            json.dump(asdict(self.record), out)
            out.flush()
            os.fsync(out.fileno())
        temporary.replace(self.path)
        if self.mirror is not None:
            self.mirror.write(self.identity.key, self.record, undo_script(self.record), log)

    # --- the changes a topology makes, each journaled first -------------------------------

    def before_link(self, device: str, mtu: int | None, up: bool) -> None:
        """Record the MTU and state of `device` (unless offlab created it) and, when its
        MTU changes, the MTU of every upper device (VLAN, macvlan) on it: the kernel
        lowers those with their parent and never raises them back."""
        if device in self.created():
            return
        links = json.loads(self.host.ip("-j", "-d", "link", "show").stdout or "[]")
        by_name = {link.get("ifname"): link for link in links}
        now = by_name.get(device, {})
        if mtu is not None and str(mtu) != str(now.get("mtu")):
            for upper in (link for link in links if link.get("link") == device):
                self._once(changes.mtu(upper["ifname"], upper["mtu"], None))
            self._once(changes.mtu(device, now.get("mtu", 1500), mtu))
        state = "up" if "UP" in now.get("flags", []) else "down"
        if state != ("up" if up else "down"):
            self._once(changes.link(device, state, "up" if up else "down"))

    def before_write(self, path: str, new: str) -> None:
        old = changes.current(self.host, changes.file(path, "", ""))
        if old != new.strip():
            self._once(changes.file(path, old, new.strip()))

    def before_features(self, device: str) -> None:
        """A change of the test interface's features is about to be made: until it is
        read back (after_features) the value set is unknown, and the journal says so. A
        run stopped in between (SIGTERM, kill -9) may have made the change or not; its
        restore must put the original back, not take its own half-made change for
        someone else's and leave it (the drift check skips an entry without a value
        set)."""
        entry = self._entry("features", device)
        if entry is not None and entry["new"] is not None:
            entry["new"] = None
            self._write("")

    def after_features(self, device: str) -> None:
        """The test interface's features as the kernel has them after offlab's change
        (dependent features included): the value set, for the drift check."""
        entry = self._entry("features", device)
        if entry is not None:
            listing = parse_features(self.host.run(["ethtool", "-k", device]).stdout)
            entry["new"] = {name: f.on for name, f in listing.features.items() if name in entry["old"]}
            self._write("")

    def _entry(self, kind: str, target: str) -> dict | None:
        """The journal's entry of one target (the first change of it), if any."""
        return next((entry for entry in self.record.changes
                     if entry["kind"] == kind and entry["target"] == target), None)

    def before_neigh(self, address: str, dev: str, mac: str) -> None:
        """A permanent neighbour entry about to be put in place: whatever entry is there
        now is recorded, and the undo puts it back (or deletes offlab's)."""
        shown = json.loads(self.host.ip("-j", "neigh", "show", "to", address, "dev", dev, check=False).stdout or "[]")
        self.add(changes.neigh(address, dev, mac, changes.neigh_value(shown)))

    def before_directory(self, path: str) -> Change:
        """A directory about to be made (a run's files on a server): recorded first, so
        every exit path removes it; `ended` forgets it once offlab removed it itself."""
        return self.add(changes.directory(path))

    def before_route(self, spec: tuple[str, ...]) -> None:
        self.add(changes.route(spec))

    def _once(self, change: Change) -> None:
        """The first value of a target is the original; a later change keeps it and
        records its own value as the one set (what the drift check compares with)."""
        entry = self._entry(change.kind, change.target)
        if entry is None:
            self.add(change)
        elif change.new is not None and entry["new"] != change.new:
            entry["new"] = change.new
            self._write(f"{self.host.name}: {change.kind} {change.target}: -> {change.new}")

    # --- putting it back ----------------------------------------------------------------

    def restore(self) -> list[str]:
        """Undo what this run changed and is still as it set it (a value somebody changed
        since is reported as drift and left alone); the journal goes once all is back,
        and stays for `offlab restore` otherwise. On a server whose lease is lost nothing
        is touched: its watchdog restored it before another run could take it."""
        if self.mirror is not None and self.mirror.lost is not None:
            return self._lost(self.mirror.lost)
        try:
            lines, failed = undo_all(self.host, self.changes, drift_check=True, drift=self.drift)
        except LeaseLost as lost:
            return self._lost(lost.reason)
        if failed:
            raise HostError(f"{self.host.name}: could not undo {'; '.join(failed)}; "
                            "the journal stays for `offlab restore`")
        self.discard()
        return lines

    def _lost(self, reason: str) -> list[str]:
        self.discard()
        return [f"{self.host.name}: left alone, the run's lease is gone ({reason}); the server's "
                "watchdog restored it"]

    def discard(self) -> None:
        """The server's copy goes first, this machine's last: the reverse of how they
        were written. A run killed between the two leaves this machine's journal, which
        `offlab restore` replays harmlessly (every value already back) and then releases
        the server; the other order left a server copy nobody here knew of, so the hold
        outlived `offlab doctor --clean` until the watchdog's delay ran out."""
        self.closed = True
        if self.mirror is not None:
            self.mirror.remove(self.identity.key)
        self.path.unlink(missing_ok=True)


class Drift(str):
    """An undo's line saying the value was changed since offlab set it: left alone."""


def undo_all(host: Host, found: list[Change], drift_check: bool,
             drift: list[str] | None = None) -> tuple[list[str], list[str]]:
    """Undo changes newest first; (lines said, failures). A failure never stops the rest.
    `drift` gathers the lines of values left alone (for the run to say so)."""
    lines, failed = [], []
    for change in reversed(found):
        try:
            said = _undo(host, change, drift_check)
        except Exception as err:  # one failed undo must not keep the others changed
            failed.append(f"{change.what} ({str(err).strip()[-160:]})")
            continue
        if said:
            lines.append(f"{host.name}: {said}")
        if isinstance(said, Drift) and drift is not None:
            drift.append(lines[-1])
    return lines, failed


def _undo(host: Host, change: Change, drift_check: bool) -> str:
    if drift_check:
        now = changes.normal(change, changes.current(host, change))
        if now == changes.normal(change, change.old):
            return "" if change.kind == "process" else f"{change.what} already {_show(change.old)}"
        if change.new is not None and now != changes.normal(change, change.new):
            if change.kind == "features":
                moved = ", ".join(f"{name} {'on' if now.get(name) else 'off'}" for name, on in change.new.items()
                                  if name in now and now[name] != on)
                return Drift(f"left the features of {change.target} alone: {moved} now, not as offlab had set "
                             "them; changed since by someone else")
            return Drift(f"left {change.what} alone: it is {_show(now)} now, offlab had set {_show(change.new)} "
                         f"(was {_show(change.old)}); changed since by someone else")
    if change.kind == "features":
        return _restore_features(host, change)
    for command in change.undo:
        host.run(list(command), timeout=30)
    if change.kind == "process":
        return f"ended process group {change.target.split()[0]} ({change.target.split(' ', 1)[-1]})"
    if change.kind == "device":
        return f"removed {change.target}"
    if change.kind == "directory":
        return f"removed the directory {change.target}"
    return f"{change.what} {_show(change.old)}"


def _restore_features(host: Host, change: Change) -> str:
    control, iface = OffloadControl(), Interface("restore", host, change.target)
    control.set(iface, change.old)
    now = control.read(iface)
    wrong = [name for name, on in change.old.items() if name in now and now[name].on != on]
    if wrong:
        raise HostError(f"{', '.join(wrong)} not back on {change.target}; set them by hand with "
                        f"ethtool -K {change.target}")
    return f"{change.target} features as they were"


def _show(value: Any) -> str:
    return "as recorded" if isinstance(value, dict) else str(value)


def undo_script(record: Record) -> str:
    """The journal as the server's watchdog runs it: the record as a comment, then every
    undo newest first, each line on its own so a failure is reported and passed."""
    body = [changes.shell_line(Change.from_json(c)) for c in reversed(record.changes)]
    return "\n".join(["#!/bin/sh", "# offlab journal: undo commands, newest change first",
                      "# " + json.dumps(asdict(record)), *body, ""])


# --- journals a killed run left ---------------------------------------------------------

def pending(root: Path = JOURNAL_DIR) -> list[tuple[Path, Record]]:
    """Journals left by runs that did not restore their hosts."""
    if not root.is_dir():
        return []
    found = []
    for path in sorted(root.glob("*.json")):
        try:
            found.append((path, _load(json.loads(path.read_text(encoding="utf-8")))))
        except (OSError, ValueError, TypeError, KeyError):
            raise HostError(f"{path}: a journal offlab cannot read; restore that host by hand, "
                            "then delete the file") from None
    return found


def _load(data: dict[str, Any]) -> Record:
    if data.get("version") == VERSION:
        return Record(**data)
    # A journal of offlab before version 2: interface, MTU, features, devices, IRQs.
    interface = data["interface"]
    found = [changes.features(interface, data["features"]),
             changes.mtu(interface, data["mtu"], None)]
    found += [changes.device(d) for d in data.get("devices", [])]
    found += [changes.file(f"/proc/irq/{irq}/smp_affinity_list", old, None)
              for irq, old in data.get("irq_affinity", {}).items()]
    return Record(data["spec"], data.get("ssh_config"), {}, [c.to_json() for c in found])


def forget(destination: str, root: Path = JOURNAL_DIR) -> list[str]:
    """Drop the journals of one ssh destination without touching the server (it is gone
    for good, or was put back by hand); a line per journal naming what may be left."""
    lines = []
    for path, record in pending(root):
        if record.spec.get("ssh") != destination:
            continue
        what = ", ".join(dict.fromkeys(Change.from_json(c).what for c in record.changes
                                       if c["kind"] != "process")) or "nothing"
        path.unlink()
        lines.append(f"{record.spec.get('role')} ({destination}): journal forgotten; unless its watchdog "
                     f"or a reboot restored it, these may still be as offlab set them: {what}")
    if not lines:
        raise HostError(f"no journal of {destination!r} in {root}; `offlab restore` lists what is left")
    return lines
