"""One run's time on the servers of a hosts file, from the first write to the last: the
journals a killed run left restored first, one connection per role, each server held
(server.py) with its watchdog started, a heartbeat while the run lasts, and every
server released at the end — the servers whose journal could not be undone stay held,
and their watchdog restores them once the heartbeat stops."""

from __future__ import annotations

from pathlib import Path

from .base import HostError
from .hostsfile import HostsFile
from ..runscope import MachineLock
from .journal import JOURNAL_DIR, Identity, pending, read_identity, restore_pending
from .server import Heartbeat, ServerRun, controller_token
from .ssh import AuditLog, SshHost

HOST_NAMES = {"sender": "tx", "receiver": "rx"}
"""The role's host name in samples (counter prefixes, CPU shares)."""
ROLE_NAMES = {**HOST_NAMES, "router": "r"}
"""With the router of a [router] table (the middlebox plan names its hosts a, r, b)."""


class RemoteSession:
    def __init__(self, hosts: HostsFile, journal_dir: Path = JOURNAL_DIR, audit: AuditLog | None = None,
                 allow_forwarding: bool = False):
        self.file = hosts
        self.allow_forwarding = allow_forwarding
        """--allow-forwarding: the router's IP forwarding may be turned on (journaled)."""
        self.journal_dir = journal_dir
        self.audit = audit
        self.token = controller_token()
        self.hosts: dict[str, SshHost] = {}
        self.identities: dict[str, Identity] = {}
        self.servers: dict[str, ServerRun] = {}
        """By role; roles on one kernel share one."""
        self._heartbeat: Heartbeat | None = None
        self._watched: set[str] = set()

    def start(self) -> list[str]:
        """Restore what killed runs left, then hold every server; lines to print."""
        lines = restore_journals(self.journal_dir)
        try:
            lines += self._hold()
        except BaseException:
            self.close()
            raise
        return lines

    def _hold(self) -> list[str]:
        notes = []
        by_kernel: dict[str, ServerRun] = {}
        for role, spec in self.file.roles().items():
            host = SshHost(ROLE_NAMES[role], spec, self.file.ssh_config, audit=self.audit)
            self.hosts[role] = host
            identity = read_identity(host, spec.interface)
            self.identities[role] = identity
            server = by_kernel.get(identity.boot_id)
            if server is None:
                server = ServerRun(host, identity, self.token, self.file.watchdog_s)
                note = server.acquire()
                notes += [note] if note else []
                by_kernel[identity.boot_id] = server
            self.servers[role] = server
            server.watch(host, identity.key)
        self._heartbeat = Heartbeat(list(by_kernel.values()), max(1.0, self.file.watchdog_s / 4)).start()
        return notes

    def watch_interface(self, role: str, host: SshHost, key: str) -> None:
        """A watchdog for a role's second test interface (the router's), once a run."""
        if key not in self._watched:
            self.servers[role].watch(host, key)
            self._watched.add(key)

    def close(self) -> list[str]:
        """Stop the heartbeat and release every held server; what stayed held, by line."""
        if self._heartbeat is not None:
            self._heartbeat.stop()
            self._heartbeat = None
        kept = []
        for server in {id(s): s for s in self.servers.values()}.values():
            if not server.held:
                continue
            try:
                if server.release() == "kept":
                    kept.append(f"{server.host.name}: a journal could not be undone; the server's watchdog "
                                f"restores it within {server.delay_s} s")
            except HostError as err:
                kept.append(str(err))
        for host in self.hosts.values():
            host.close()
        self.hosts.clear()
        self.servers.clear()
        return kept


def restore_journals(journal_dir: Path = JOURNAL_DIR) -> list[str]:
    """Every journal a killed run left, each host tried; a host that could not be put
    back stops the new run (its state is not the original)."""
    results = restore_pending(journal_dir)
    failed = [f"{r.host}: {r.lines[0]}" for r in results if not r.ok]
    if failed:
        raise HostError("could not restore " + "; ".join(failed) + "; fix that, then `offlab restore`")
    return [line for r in results for line in r.lines]


def restore_first(wait: bool, journal_dir: Path = JOURNAL_DIR) -> list[str]:
    """Journals a killed run left, restored before the guards read the servers (its
    devices and its iperf3 would be refused there as another offlab's); under this
    machine's lock, so a live run's journals are never touched."""
    if not pending(journal_dir):
        return []
    lock = MachineLock()
    lock.acquire("offlab restore", wait=wait)
    try:
        return restore_journals(journal_dir)
    finally:
        lock.release()
