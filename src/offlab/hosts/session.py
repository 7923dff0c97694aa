"""One run's time on the servers of a hosts file, from the first write to the last: the
journals a killed run left restored first, one connection per role, each server held
(server.py) with its watchdog started, a heartbeat while the run lasts, and every
server released at the end — the servers whose journal could not be undone stay held,
and their watchdog restores them once the heartbeat stops."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

from .base import HostError
from .hostsfile import HostsFile
from ..runscope import MachineLock
from .journal import JOURNAL_DIR, Identity, pending, read_identity
from .recovery import restore_pending
from .lease import LeaseLost
from .server import Heartbeat, ServerRun, controller_token
from .ssh import AuditLog, SshHost

HOST_NAMES = {"sender": "tx", "receiver": "rx"}
"""The role's host name in samples (counter prefixes, CPU shares)."""
ROLE_NAMES = {**HOST_NAMES, "router": "r"}
"""With the router of a [router] table (the middlebox plan names its hosts a, r, b)."""


class RemoteSession:
    def __init__(self, hosts: HostsFile, journal_dir: Path = JOURNAL_DIR, audit: AuditLog | None = None,
                 restore_first: bool = True, allow_forwarding: bool = False):
        self.file = hosts
        self.restore_first = restore_first
        """False for one pair of a campaign: the campaign restored before its pairs began,
        and a sibling pair's live journals are in the same directory."""
        self.allow_forwarding = allow_forwarding
        """--allow-forwarding: the router's IP forwarding may be turned on (journaled)."""
        self.journal_dir = journal_dir
        self.audit = audit
        self.token = controller_token()
        self.hosts: dict[str, SshHost] = {}
        self.identities: dict[str, Identity] = {}
        self.servers: dict[str, ServerRun] = {}
        self.drift: list[str] = []
        """Values the topologies' restores left alone, changed since by someone else:
        said with what stayed held when the session closes."""
        """By role; roles on one kernel share one."""
        self._heartbeat: Heartbeat | None = None
        self._watched: set[str] = set()

    def start(self) -> list[str]:
        """Restore what killed runs left, then hold every server; lines to print."""
        lines = restore_journals(self.journal_dir, destinations(self.file)) if self.restore_first else []
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
        self._heartbeat = Heartbeat(list(by_kernel.values()), max(1.0, self.file.watchdog_s / 4),
                                    on_lost=self._lease_lost).start()
        return notes

    @property
    def lost(self) -> str | None:
        """Why the run lost a server, once it has: the run stops and touches nothing there."""
        for role, server in self.servers.items():
            if server.lost is not None:
                return f"the lease on the {role} ({server.host.name}) is gone: {server.lost}"
        return None

    def _lease_lost(self, lost: LeaseLost) -> None:
        """From the heartbeat thread: stop the run at once. SIGTERM to the main thread
        wakes it from any wait and unwinds the run as a signal does (the runner's
        teardown, which now leaves that server alone); the run is then marked
        interrupted with `lost` as its reason."""
        if signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, signal.SIG_IGN, None):
            # Outside the runner (no handler yet) the next fenced command raises LeaseLost.
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGTERM)

    def watch_interface(self, role: str, host: SshHost, key: str) -> None:
        """A watchdog for a role's second test interface (the router's), once a run."""
        if key not in self._watched:
            self.servers[role].watch(host, key)
            self._watched.add(key)

    def close(self) -> list[str]:
        """Stop the heartbeat and release every held server; what was left as it is, by
        line: values changed since offlab set them (drift), servers that stayed held."""
        if self._heartbeat is not None:
            self._heartbeat.stop()
            self._heartbeat = None
        kept, self.drift = self.drift, []
        for server in {id(s): s for s in self.servers.values()}.values():
            if not server.held:
                continue
            try:
                said = server.release()
                if said == "lost":
                    kept.append(f"{server.host.name}: left alone, the run's lease is gone ({server.lost})")
                if said == "kept":
                    kept.append(f"{server.host.name}: a journal could not be undone; the server's watchdog "
                                f"restores it within {server.delay_s} s")
            except HostError as err:
                kept.append(str(err))
        for host in self.hosts.values():
            host.close()
        self.hosts.clear()
        self.servers.clear()
        return kept


def destinations(hosts: HostsFile) -> set[str]:
    """The ssh destinations of a hosts file: whose old journals a run replays first."""
    return {spec.ssh for spec in hosts.roles().values()}


def restore_journals(journal_dir: Path = JOURNAL_DIR, only: set[str] | None = None) -> list[str]:
    """The journals a killed run left on the servers `only` names (all with None), each
    host tried; a host that could not be put back stops the new run (its state is not
    the original). Journals of other servers are left for `offlab restore`: a server
    that cannot be reached never blocks a run to the others."""
    results = restore_pending(journal_dir, only)
    failed = [f"{r.host}: {r.lines[0]}" for r in results if not r.ok]
    if failed:
        raise HostError("could not restore " + "; ".join(failed) + "; fix that, then `offlab restore` "
                        "(or `offlab restore --forget HOST` if that server is gone for good)")
    return [line for r in results for line in r.lines]


def restore_first(wait: bool, only: set[str] | None = None, journal_dir: Path = JOURNAL_DIR) -> list[str]:
    """Journals a killed run left on this run's servers, restored before the guards read
    them (its devices and its iperf3 would be refused there as another offlab's); under
    this machine's lock, so a live run's journals are never touched."""
    if not pending(journal_dir):
        return []
    lock = MachineLock()
    lock.acquire("offlab restore", wait=wait)
    try:
        return restore_journals(journal_dir, only)
    finally:
        lock.release()
