"""Foreign load: CPU time that processes other than the run's own spent while it
measured — another build, another benchmark, a second offlab — the thing that makes
two samples of the same case disagree on a shared machine.

It is measured directly: the user and system time of every user-space process outside
the run's cgroup (see runscope.py), over the measured window. Kernel threads are left
out (softirq and NAPI work on the run's packets runs there), and so is the run's own
cgroup. The figure is positive only when something else ran; on an idle machine it is
~0 (the sampler itself and sshd/agents of the sandbox account for a few tenths of a
percent).

`/proc/<pid>/stat` field 9 (flags) carries PF_KTHREAD for kernel threads; fields 14 and
15 are utime and stime in clock ticks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

PF_KTHREAD = 0x00200000
CLK_TCK = os.sysconf("SC_CLK_TCK")
BUSY_MACHINE_PERCENT = 10.0
"""Foreign load above this share of one core makes a machine "not idle"."""


@dataclass(frozen=True)
class ProcessCpu:
    name: str
    ticks: int


def parse_stat_line(text: str) -> tuple[str, int, int] | None:
    """(comm, flags, utime + stime) of one /proc/<pid>/stat line; None if malformed."""
    head, paren, rest = text.rpartition(")")
    fields = rest.split()
    if not paren or len(fields) < 13:
        return None
    name = head.partition("(")[2]
    try:
        return name, int(fields[6]), int(fields[11]) + int(fields[12])
    except ValueError:
        return None


def in_cgroup(cgroup_text: str, cgroup: str | None) -> bool:
    """Whether a /proc/<pid>/cgroup listing puts the process in the unified-hierarchy
    cgroup `cgroup` (a path below the cgroup2 root, e.g. "/offlab/run-42") or under it."""
    if not cgroup:
        return False
    for line in cgroup_text.splitlines():
        hierarchy, _, path = line.partition("::")
        if hierarchy == "0" and (path == cgroup or path.startswith(cgroup + "/")):
            return True
    return False


def snapshot(own_cgroup: str | None, exclude_pids: Iterable[int] = (),
             proc: Path = Path("/proc")) -> dict[int, ProcessCpu]:
    """CPU ticks of every user-space process outside `own_cgroup`, by pid."""
    skip = set(exclude_pids) | {os.getpid()}
    found = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) in skip:
            continue
        try:
            parsed = parse_stat_line((entry / "stat").read_text())
            if parsed is None or parsed[1] & PF_KTHREAD:
                continue
            if in_cgroup((entry / "cgroup").read_text(), own_cgroup):
                continue
        except OSError:
            continue  # exited while we looked
        found[int(entry.name)] = ProcessCpu(parsed[0], parsed[2])
    return found


def busy_percent(before: Mapping[int, ProcessCpu], after: Mapping[int, ProcessCpu],
                 window_s: float, top: int | None = 5) -> tuple[float, list[tuple[str, float]]]:
    """Foreign CPU over a window in percent of one core, and the `top` busiest processes
    (name, percent; None: all of them), largest first. A process that started inside
    the window counts from zero; one that ended is lost (its last ticks cannot be read)."""
    if window_s <= 0:
        return 0.0, []
    scale = 100.0 / (window_s * CLK_TCK)
    per_process = []
    for pid, now in after.items():
        then = before.get(pid)
        grown = now.ticks - (then.ticks if then is not None and then.name == now.name else 0)
        if grown > 0:
            per_process.append((now.name, grown * scale))
    per_process.sort(key=lambda item: -item[1])
    return sum(p for _, p in per_process), per_process[:top]
