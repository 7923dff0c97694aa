"""One change offlab makes on a server, as data: what it is, the value before, the value
offlab set, and the commands that put it back. The journal (journal.py) is a list of
these; the server-side watchdog (server.py) runs their undo commands as a shell script
when the controller is gone, and a replay by `offlab restore` reads each one's current
value first, so a value somebody changed since is reported and left alone (drift).

Kinds (each with how its current value is read back):
  device   a device offlab created                 present / absent
  mtu      a device's MTU (the test interface, or an upper device the kernel lowered with it)
  link     a device's administrative state          up / down
  file     a value under /proc/sys or /sys (sysctls, RPS masks, IRQ affinity)
  route    a route offlab added                     present / absent
  neigh    a permanent neighbour entry offlab put in place ("ADDRESS dev DEVICE")
                                                   "MAC STATE" / absent
  process  a process group offlab started ("PID command"): its leader's start time
           (clock ticks since boot) / gone
  master   a device's master (the test interface enslaved to a guests' bridge)
                                                   none / the bridge
  address  an address and the device holding it ("10.1.0.1/24"), moved to a bridge or
           added for a guest path                  the device / absent
  features the interface's changeable ethtool features (old = every one as it was,
           new = as read back after offlab's last change)
"""

from __future__ import annotations

import json
import shlex
from dataclasses import asdict, dataclass
from typing import Any

from .offloads import parse_features
from .base import Host

GONE = "gone"
NONE = "none"
ABSENT = "absent"
PRESENT = "present"


@dataclass(frozen=True)
class Change:
    kind: str
    target: str
    old: Any
    new: Any
    undo: tuple[tuple[str, ...], ...]
    """Commands (argument lists, run on the host as root) that put `old` back."""

    @property
    def what(self) -> str:
        return f"{self.kind} {self.target}"

    def to_json(self) -> dict[str, Any]:
        found = asdict(self)
        found["undo"] = [list(command) for command in self.undo]
        return found

    @staticmethod
    def from_json(data: dict[str, Any]) -> "Change":
        return Change(data["kind"], data["target"], data["old"], data["new"],
                      tuple(tuple(command) for command in data["undo"]))


# --- making changes -------------------------------------------------------------------

def device(name: str) -> Change:
    return Change("device", name, ABSENT, PRESENT, (("ip", "link", "del", "dev", name),))


def directory(path: str) -> Change:
    """A directory offlab made for a run's files on a server (offlab-fwd's output):
    removed with all it holds."""
    return Change("directory", path, ABSENT, PRESENT, (("rm", "-rf", "--", path),))


def mtu(dev: str, old: int, new: int | None) -> Change:
    """`new` None: a value offlab does not set itself (an upper device's MTU, which the
    kernel lowers with its parent's), put back whatever it is."""
    return Change("mtu", dev, str(old), None if new is None else str(new), (("ip", "link", "set", "dev", dev, "mtu", str(old)),))


def link(dev: str, old: str, new: str) -> Change:
    return Change("link", dev, old, new, (("ip", "link", "set", "dev", dev, old),))


def file(path: str, old: str, new: str | None) -> Change:
    script = f"printf '%s\\n' {shlex.quote(old)} > {shlex.quote(path)}"
    return Change("file", path, old, new, (("sh", "-c", script),))


def route(spec: tuple[str, ...]) -> Change:
    return Change("route", " ".join(spec), ABSENT, PRESENT, (("ip", "route", "del", *spec),))


def neigh(address: str, dev: str, mac: str, old: str = ABSENT) -> Change:
    """A permanent neighbour entry (the middlebox with offlab-fwd as R: A and B address
    each other's MAC directly). `old` is the entry that was there ("MAC STATE", or
    absent): the undo puts it back as it was, or deletes offlab's and the kernel
    resolves anew."""
    if old == ABSENT:
        back: tuple[str, ...] = ("ip", "neigh", "del", address, "dev", dev)
    else:
        old_mac, _, state = old.partition(" ")
        back = ("ip", "neigh", "replace", address, "lladdr", old_mac, "dev", dev, "nud", state.lower() or "permanent")
    return Change("neigh", f"{address} dev {dev}", old, f"{mac.lower()} PERMANENT", (back,))


def neigh_value(shown: list[dict[str, Any]]) -> str:
    """`ip -j neigh show to ADDRESS dev DEV` as a value: "MAC STATE", or absent (an
    entry without a MAC — FAILED, INCOMPLETE — holds nothing to put back)."""
    for entry in shown:
        if entry.get("lladdr"):
            return f"{entry['lladdr'].lower()} {(entry.get('state') or ['PERMANENT'])[0]}"
    return ABSENT


def process(pid: int, start: str, command: str) -> Change:
    """A process group (its leader's pid is the group id) and its leader's start time:
    the kill is aimed only at that group while its leader is the same process, never at
    a pid the kernel has since given to another."""
    guard = f'[ "$(sed "s/.*) //" /proc/{pid}/stat 2>/dev/null | cut -d" " -f20)" = {start} ]'
    return Change("process", f"{pid} {command[:80]}", GONE, start,
                  (("sh", "-c", f"{guard} && kill -s KILL -- -{pid} || true"),))


def master(dev: str, old: str, new: str) -> Change:
    """`dev` made a port of `new` (a bridge offlab created); `old` is "none" or its
    previous master, which the undo puts back."""
    back = ("ip", "link", "set", "dev", dev, "nomaster") if old == NONE else ("ip", "link", "set", "dev", dev, "master", old)
    return Change("master", dev, old, new, (back,))


def address(prefix: str, old: str, new: str) -> Change:
    """`prefix` ("10.1.0.1/24") moved from device `old` to device `new` (a bridge), or
    added on `new` when `old` is "absent". The undo removes it from `new` (whether or not
    that device is still there) and puts it back where it was."""
    script = f"ip addr del {shlex.quote(prefix)} dev {shlex.quote(new)} 2>/dev/null; true"
    if old != ABSENT:
        script = f"{script}; ip addr replace {shlex.quote(prefix)} dev {shlex.quote(old)}"
    return Change("address", prefix, old, new, (("sh", "-c", script),))


def features(dev: str, old: dict[str, bool]) -> Change:
    pairs = [word for name, on in sorted(old.items()) for word in (name, "on" if on else "off")]
    # Twice: a feature that depends on another (TSO on a checksum) takes on the second pass.
    command = ("ethtool", "-K", dev, *pairs)
    return Change("features", dev, old, None, (command, command) if pairs else ())


# --- reading back ----------------------------------------------------------------------

def current(host: Host, change: Change) -> Any:
    """The value `change` concerns as it is on the host now (same form as old/new)."""
    if change.kind == "device":
        return PRESENT if host.ip("link", "show", "dev", change.target, check=False).returncode == 0 else ABSENT
    if change.kind == "directory":
        return PRESENT if host.run(["test", "-e", change.target], check=False).returncode == 0 else ABSENT
    if change.kind == "mtu":
        return _read(host, f"/sys/class/net/{change.target}/mtu")
    if change.kind == "link":
        found = json.loads(host.ip("-j", "link", "show", "dev", change.target, check=False).stdout or "[{}]")
        return "up" if "UP" in found[0].get("flags", []) else "down"
    if change.kind == "file":
        return _read(host, change.target)
    if change.kind == "route":
        shown = host.ip("route", "show", *change.target.split()[:1], check=False).stdout
        return PRESENT if shown.strip() else ABSENT
    if change.kind == "neigh":
        address, _, dev = change.target.partition(" dev ")
        return neigh_value(json.loads(host.ip("-j", "neigh", "show", "to", address, "dev", dev,
                                              check=False).stdout or "[]"))
    if change.kind == "process":
        return start_time(host, int(change.target.split()[0])) or GONE
    if change.kind == "master":
        found = json.loads(host.ip("-j", "link", "show", "dev", change.target, check=False).stdout or "[{}]")
        return found[0].get("master", NONE) if found else NONE
    if change.kind == "address":
        shown = json.loads(host.ip("-j", "addr", "show", check=False).stdout or "[]")
        local, _, length = change.target.partition("/")
        for link in shown:
            if any(a.get("local") == local and str(a.get("prefixlen")) == length for a in link.get("addr_info", [])):
                return link.get("ifname", ABSENT)
        return ABSENT
    if change.kind == "features":
        listing = parse_features(host.run(["ethtool", "-k", change.target], check=False).stdout)
        return {name: f.on for name, f in listing.features.items() if name in change.old}
    raise ValueError(f"unknown change kind {change.kind!r}")


MASK_FILES = ("rps_cpus", "xps_cpus", "smp_affinity")
"""Files holding a CPU bitmask in hex: "4" written reads back "00000000,00000004"."""


def normal(change: Change, value: Any) -> Any:
    """`value` in a form that compares equal however the kernel prints it: hex CPU masks
    as numbers, multi-value sysctls ("4096\t131072") with single spaces."""
    if change.kind != "file" or not isinstance(value, str):
        return value
    if change.target.rsplit("/", 1)[-1] in MASK_FILES:
        try:
            return int(value.replace(",", "").strip() or "0", 16)
        except ValueError:
            return value
    return " ".join(value.split())


def _read(host: Host, path: str) -> str:
    try:
        return host.read_file(path).strip()
    except FileNotFoundError:
        return ABSENT


def start_time(host: Host, pid: int) -> str | None:
    """Field 22 of /proc/PID/stat (clock ticks after boot), or None if there is no such
    process. The fields after the command name, which may itself hold spaces."""
    try:
        stat = host.read_file(f"/proc/{pid}/stat")
    except FileNotFoundError:
        return None
    return stat.rsplit(") ", 1)[-1].split()[19]


def shell_line(change: Change) -> str:
    """The undo of one change as shell lines that never stop the script: a failure is
    reported (to the watchdog's log) and the next change is undone."""
    lines = []
    for command in change.undo:
        lines.append(f"{shlex.join(command)} >/dev/null 2>&1 || echo {shlex.quote('undo failed: ' + change.what)}")
    return "\n".join(lines)
