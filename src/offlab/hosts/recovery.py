"""`offlab restore`: a killed run's journals replayed on their servers. For each journal
left on this machine (journal.py), the server is reconnected over SSH, asked whether its
own watchdog, a reboot or another run's hold already settled it (server.py's claim), and
otherwise put back behind the journal's token, then released.

It sits above journal.py, server.py and ssh.py, which it drives: the journal only
records and undoes, the hold only holds; neither needs the other's replay."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .base import Host, HostError
from .changes import Change
from .hostsfile import HostSpec
from .journal import JOURNAL_DIR, Identity, Record, pending, read_identity, undo_all
from .lease import LeaseLost
from .server import CLAIM, SERVER_DIR, ServerRun, controller_token
from .ssh import AuditLog, SshHost


@dataclass(frozen=True)
class HostRestore:
    host: str
    ok: bool
    lines: tuple[str, ...]


def restore_pending(root: Path = JOURNAL_DIR, only: set[str] | None = None) -> list[HostRestore]:
    """Reconnect to every host a killed run left changed (`only`: the journals of these
    ssh destinations, the servers of the run about to start) and restore it, or learn
    from the server that its watchdog already did: every host is tried, whatever another
    one did, and each gets its own result; a journal goes once its host is settled."""
    results = []
    for path, record in pending(root):
        if only is not None and record.spec.get("ssh") not in only:
            continue
        name = f"{record.spec.get('role')} ({record.spec.get('ssh')})"
        try:
            lines = replay_session(record)
        except Exception as err:  # an unreachable host must not keep the others changed
            results.append(HostRestore(name, False, (str(err),)))
            continue
        path.unlink()
        results.append(HostRestore(name, True, tuple(lines)))
    return results


def replay_session(record: Record) -> list[str]:
    """`offlab restore` of one journal: the same server (machine-id, MAC) or a refusal;
    then the server is asked (CLAIM) whether its watchdog, a reboot or another run's
    hold means there is nothing left to undo; otherwise the changes are replayed behind
    the journal's token with their drift check, the server-side copy removed and the
    server released."""
    spec = HostSpec(**record.spec)
    host = SshHost(spec.role, spec, record.ssh_config, audit=AuditLog())
    try:
        expected = record.identity
        if not expected:  # a journal of offlab before version 2: no server-side hold
            return _replay(host, record) or [f"{host.name}: nothing to do (already as it was)"]
        found = read_identity(host, spec.interface)
        if (found.machine_id, found.mac) != (expected["machine_id"], expected["mac"]):
            raise HostError(f"{spec.ssh} is now machine {found.machine_id} with {spec.interface} "
                            f"{found.mac}, not the journal's {expected['machine_id']} / {expected['mac']}; "
                            "restore that server by hand, then delete its journal")
        if found.boot_id != expected["boot_id"]:
            return [f"{host.name}: rebooted since that run: every change it made went with the reboot"]
        said = _claim(host, record, found)
        if said != "mine":
            return [f"{host.name}: {said}"]
        server = ServerRun(host, found, record.token)
        server._fence(host)
        try:
            lines = _replay(host, record)
        except LeaseLost as lost:
            return [f"{host.name}: restored by the server's own watchdog meanwhile ({lost.reason})"]
        for line in lines:
            host.log(f"restore of {record.token}: {line}")
        server.remove(found.key)
        server.release()
        return lines or [f"{host.name}: nothing to do (already as it was)"]
    finally:
        host.close()


def _claim(host: Host, record: Record, found: Identity) -> str:
    """What the server says of the killed run's hold (CLAIM), as a line unless "mine"."""
    token = record.token or controller_token()
    said = host.run(["sh", "-c", CLAIM, "offlab-claim", SERVER_DIR, token, found.boot_id, found.key],
                    timeout=20).stdout.strip()
    if said == "restored":
        return "already restored by the server's own watchdog"
    if said == "rebooted":
        return "its hold was from before the server's last reboot: every change went with the reboot"
    if said.startswith("other "):
        return (f"now held by another run ({said.removeprefix('other ')}), which could take it only once "
                "the server's watchdog had restored this one; left alone")
    if said != "mine":
        raise HostError(f"could not ask the server about its hold ({said or 'no answer'})")
    return said


def _replay(host: Host, record: Record) -> list[str]:
    lines, failed = undo_all(host, [Change.from_json(c) for c in record.changes], drift_check=True)
    if failed:
        raise HostError(f"could not undo {'; '.join(failed)}")
    return lines
