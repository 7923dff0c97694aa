"""What the lab changed on a real host, written down before it changes it, so the host
can always be put back: at the end of a run, on Ctrl-C/SIGTERM, and — when offlab was
killed or the connection lost — at the next start (`offlab run --hosts`, or
`offlab restore`). A user's NIC is never left with TSO off.

One JSON file per host and interface under /var/lib/offlab/journal: the ssh
destination (and config) to reach it again, the interface's original MTU and every
ethtool feature as it was, the devices the lab created there, the IRQ affinities it
changed. The file is written (and fsynced) before the first change and removed only
once everything in it is back.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..offloads import Interface, OffloadControl, parse_features
from .base import Host, HostError
from .hostsfile import HostSpec

JOURNAL_DIR = Path("/var/lib/offlab/journal")


@dataclass
class HostState:
    """A host's original state, as recorded before the lab changed it."""

    spec: dict
    ssh_config: str | None
    interface: str
    mtu: int
    features: dict[str, bool]
    """Every changeable (not [fixed]) feature of the interface, as it was."""
    devices: list[str] = field(default_factory=list)
    irq_affinity: dict[str, str] = field(default_factory=dict)
    """IRQ number → its original smp_affinity_list."""


def journal_path(spec: HostSpec, root: Path = JOURNAL_DIR) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_.@-]", "_", f"{spec.ssh}-{spec.interface}")
    return root / f"{safe}.json"


class Journal:
    """The record of one host's changes; every mutation goes through it."""

    def __init__(self, host: Host, spec: HostSpec, ssh_config: str | None, root: Path = JOURNAL_DIR):
        self.host = host
        self.path = journal_path(spec, root)
        if self.path.exists():
            raise HostError(f"{host.name} ({spec.ssh}): a journal of an earlier run is still at "
                            f"{self.path}; run `offlab restore` first")
        listing = parse_features(host.run(["ethtool", "-k", spec.interface]).stdout)
        links = json.loads(host.ip("-j", "link", "show", "dev", spec.interface).stdout or "[{}]")
        self.state = HostState(asdict(spec), ssh_config, spec.interface, int(links[0].get("mtu", 1500)),
                               {name: f.on for name, f in listing.features.items() if not f.fixed})
        self._write()

    def created(self, device: str) -> None:
        self.state.devices.append(device)
        self._write()

    def changed_irq(self, irq: str, original: str) -> None:
        self.state.irq_affinity.setdefault(irq, original)
        self._write()

    def _write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".tmp")
        with open(temporary, "w", encoding="utf-8") as out:
            json.dump(asdict(self.state), out)
            out.flush()
            os.fsync(out.fileno())
        temporary.replace(self.path)

    def restore(self) -> list[str]:
        lines = restore_state(self.host, self.state)
        self.path.unlink(missing_ok=True)
        return lines


def restore_state(host: Host, state: HostState) -> list[str]:
    """Put a host back as the journal says; one line per thing restored."""
    done = []
    for device in reversed(state.devices):
        host.delete_link(device)
        done.append(f"{host.name}: removed {device}")
    host.ip("link", "set", "dev", state.interface, "mtu", str(state.mtu), check=False)
    done.append(f"{host.name}: {state.interface} MTU {state.mtu}")
    control = OffloadControl()
    iface = Interface("restore", host, state.interface)
    control.set(iface, state.features)
    now = control.read(iface)
    wrong = [name for name, on in state.features.items() if name in now and now[name].on != on]
    if wrong:
        raise HostError(f"{host.name}: could not restore {', '.join(wrong)} on {state.interface}; "
                        f"set them by hand with ethtool -K {state.interface}")
    done.append(f"{host.name}: {state.interface} features as they were")
    for irq, affinity in state.irq_affinity.items():
        host.write_file(f"/proc/irq/{irq}/smp_affinity_list", affinity + "\n", check=False)
    return done


def pending(root: Path = JOURNAL_DIR) -> list[tuple[Path, HostState]]:
    """Journals left by runs that did not restore their hosts."""
    if not root.is_dir():
        return []
    found = []
    for path in sorted(root.glob("*.json")):
        try:
            found.append((path, HostState(**json.loads(path.read_text(encoding="utf-8")))))
        except (OSError, ValueError, TypeError):
            raise HostError(f"{path}: a journal offlab cannot read; restore that host by hand, "
                            "then delete the file") from None
    return found


def restore_pending(root: Path = JOURNAL_DIR) -> list[str]:
    """Reconnect to every host a killed run left changed and restore it."""
    from .ssh import SshHost
    lines = []
    for path, state in pending(root):
        spec = HostSpec(**state.spec)
        host = SshHost(spec.role, spec, state.ssh_config)
        try:
            lines += restore_state(host, state)
        finally:
            host.close()
        path.unlink()
    return lines
