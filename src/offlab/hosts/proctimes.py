"""One process's (or thread's) CPU time, read from /proc/<pid>/stat on this machine or on
a host: what a measured window charges to the applications, offlab-fwd and QEMU's
threads. Below measure/, topology/ and vm/, which all read it (measure/cpu.py reads the
per-core /proc/stat)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .base import Host


class ProcStatError(ValueError):
    """/proc text that cannot be used, with the reason and the line."""


CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class ProcessTimes:
    """utime/stime ticks of one process (fields 14 and 15 of /proc/<pid>/stat)."""

    usr: int
    sys: int


def parse_pid_stat(text: str) -> ProcessTimes:
    """Parse /proc/<pid>/stat; the command name may hold spaces and parentheses, so the
    fields are counted from the last ')'."""
    _, paren, rest = text.rpartition(")")
    fields = rest.split()
    if not paren or len(fields) < 13:
        raise ProcStatError(f"not a /proc/<pid>/stat line: {text[:80]!r}")
    try:
        return ProcessTimes(int(fields[11]), int(fields[12]))
    except ValueError:
        raise ProcStatError(f"non-numeric utime/stime in {text[:80]!r}") from None


def process_times(pid: int, host: "Host | None" = None) -> ProcessTimes | None:
    """None once the process is gone (a client that already exited)."""
    try:
        text = host.read_file(f"/proc/{pid}/stat") if host is not None else Path(f"/proc/{pid}/stat").read_text()
        return parse_pid_stat(text)
    except (FileNotFoundError, ProcessLookupError, OSError):
        return None


def thread_times(pid: int, tid: int) -> ProcessTimes | None:
    """One thread's own utime/stime (/proc/<pid>/task/<tid>/stat; /proc/<pid>/stat is the
    whole process's); None once it is gone."""
    try:
        return parse_pid_stat(Path(f"/proc/{pid}/task/{tid}/stat").read_text())
    except (FileNotFoundError, ProcessLookupError, OSError):
        return None


def process_percent(before: ProcessTimes | None, after: ProcessTimes | None,
                    window_s: float) -> dict[str, float] | None:
    """usr and sys of one process over a window, in percent of one core."""
    if before is None or after is None or window_s <= 0:
        return None
    scale = 100.0 / (window_s * CLK_TCK)
    return {"usr": (after.usr - before.usr) * scale, "sys": (after.sys - before.sys) * scale}
