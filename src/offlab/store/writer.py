"""Which offlab process writes a run, and whether it is gone.

Many machines write one PostgreSQL store, and two lab instances may run on one machine
(each with its own OFFLAB_RUNTIME_DIR). A run that starts marks as interrupted the runs
left "running" by a *killed* offlab — and only those of its own machine: a run still
"running" elsewhere is being measured.

A writer is (machine, boot, pid, process start time). The machine is a hash of
/etc/machine-id with the host name: cloned VMs share a machine-id, containers share the
host's, and the raw id is not something to publish in a shared table. The boot is the
kernel's boot_id (a reboot kills every run); the pid with its start time (clock ticks
since boot, /proc/PID/stat) names one process — a pid reused by another process after
a kill does not keep a dead run alive.
"""

from __future__ import annotations

import hashlib
import os
import socket
from pathlib import Path
from typing import Mapping

MACHINE_ID = Path("/etc/machine-id")
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def machine_key(machine_id: str, host: str) -> str:
    return hashlib.sha256(f"offlab writer\0{machine_id}\0{host}".encode()).hexdigest()[:32]


def process_start(pid: int) -> int | None:
    """The process's start time in clock ticks since boot; None when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rpartition(")")[2].split()[19])  # field 22: starttime


def current() -> dict[str, object]:
    host = socket.gethostname()
    return {"machine": machine_key(_read(MACHINE_ID), host), "boot": _read(BOOT_ID),
            "pid": os.getpid(), "start": process_start(os.getpid())}


def gone(writer: Mapping[str, object] | None, run_host: str, me: dict[str, object]) -> bool | None:
    """Whether a run's writer is known to be gone: True (a dead offlab of this machine),
    False (alive here), None (another machine's: it may be alive). Runs recorded before
    writers were (`writer` None) are judged by host name as the one-machine store
    did, and their process by pid alone."""
    if writer is None:
        return True if run_host == socket.gethostname() else None
    if writer.get("machine") != me["machine"]:
        return None
    if writer.get("boot") != me["boot"]:
        return True
    started = process_start(int(writer["pid"]))
    return started is None or ("start" in writer and started != writer["start"])


def killed_here(writer: Mapping[str, object] | None, run_host: str, me: dict[str, object]) -> bool:
    """Whether a run still marked "running" was written by a dead offlab of this machine."""
    return gone(writer, run_host, me) is True
