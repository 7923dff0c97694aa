"""Which offlab process writes a run, and whether it is gone.

Many machines write one PostgreSQL store, and two lab instances may run on one machine
(each with its own OFFLAB_RUNTIME_DIR). A run that starts marks as interrupted the runs
left "running" by a *killed* offlab — and only those of its own machine: a run still
"running" elsewhere is being measured. The machine is /etc/machine-id (the hostname
when there is none), the boot is the kernel's boot_id (a reboot kills every run), the
process is its pid.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Callable

MACHINE_ID = Path("/etc/machine-id")
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def current() -> dict[str, object]:
    return {"machine": _read(MACHINE_ID) or socket.gethostname(), "boot": _read(BOOT_ID),
            "pid": os.getpid()}


def to_json(writer: dict[str, object]) -> str:
    return json.dumps(writer, sort_keys=True)


def killed_here(writer_json: str | None, run_host: str, me: dict[str, object],
                alive: Callable[[int], bool]) -> bool:
    """Whether a run still marked "running" was written by a dead offlab of this machine.
    Runs recorded before writers were (`writer_json` None) are judged by host name, as
    the one-machine store always did."""
    if writer_json is None:
        return run_host == socket.gethostname()
    writer = json.loads(writer_json)
    if writer.get("machine") != me["machine"]:
        return False
    if writer.get("boot") != me["boot"]:
        return True
    return not alive(int(writer["pid"]))

