"""Per-core CPU time from /proc/stat: a pure parser, the delta between two snapshots as
`CpuShare`s (percent of the window per class), and the snapshot itself.

/proc/stat columns per core: user nice system idle iowait irq softirq steal guest
guest_nice, in USER_HZ ticks. guest/guest_nice are already included in user/nice by
the kernel, so they are not added again.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from .records import CPU_CLASSES, CpuShare

if TYPE_CHECKING:
    from .hosts import Host

PROC_STAT = Path("/proc/stat")

_COLUMNS = ("usr", "nice", "sys", "idle", "iowait", "irq", "soft", "steal")
"""Our class names for the first eight /proc/stat columns, in the file's order."""


class ProcStatError(ValueError):
    """/proc/stat text that cannot be used, with the reason and the line."""


@dataclass(frozen=True)
class CpuTimes:
    """Cumulative ticks of every core at one instant."""

    ticks: Mapping[int, Mapping[str, int]]
    """core → class → ticks since boot."""
    uptime_s: float | None = None
    """The host's clock (/proc/uptime) read with the ticks, when it was."""


def parse_proc_stat(text: str) -> CpuTimes:
    """Parse the per-core `cpuN` lines; the aggregate `cpu` line and other keys are skipped."""
    cores: dict[int, dict[str, int]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields or not fields[0].startswith("cpu") or fields[0] == "cpu":
            continue
        core_text = fields[0][3:]
        if not core_text.isdigit():
            raise ProcStatError(f"line {number}: {fields[0]!r} is not cpu<N>")
        values = fields[1:]
        if len(values) < len(_COLUMNS):
            raise ProcStatError(
                f"line {number}: {len(values)} columns, need at least {len(_COLUMNS)}"
            )
        if not all(v.isdigit() for v in values[: len(_COLUMNS)]):
            raise ProcStatError(f"line {number}: non-numeric tick count in {line!r}")
        cores[int(core_text)] = {c: int(v) for c, v in zip(_COLUMNS, values)}
    if not cores:
        raise ProcStatError("no cpu<N> lines")
    return CpuTimes(cores)


def shares_between(before: CpuTimes, after: CpuTimes) -> tuple[CpuShare, ...]:
    """Each core's share of the window between two snapshots, per class, in percent.

    A counter that went backwards (iowait can, by kernel design) counts as zero, so
    the classes still sum to 100 % of the ticks that did elapse. A core with no ticks
    elapsed raises: the window was too short to say anything."""
    if set(before.ticks) != set(after.ticks):
        raise ProcStatError("the two snapshots list different cores (CPU hotplug?)")
    shares = []
    for core in sorted(before.ticks):
        deltas = {
            c: max(0, after.ticks[core][c] - before.ticks[core][c]) for c in CPU_CLASSES
        }
        total = sum(deltas.values())
        if total == 0:
            raise ProcStatError(f"core {core}: no ticks elapsed between the snapshots")
        shares.append(CpuShare(core, {c: 100.0 * d / total for c, d in deltas.items()}))
    return tuple(shares)


USER_HZ = 100
"""/proc/stat counts in USER_HZ ticks, 100 a second on every Linux (exported to user
space fixed, whatever the kernel's own HZ)."""
WINDOW_TOLERANCE = 0.05
"""A CPU window off its nominal length by more than this fraction does not describe the
measured window: the sample's CPU figures are left out (report/model.py) with a warning."""
WINDOW_PREFIX = "cpu_window_s."
"""Sample counters "cpu_window_s.<machine>": each machine's CPU window, by its own clock."""
NOMINAL = "cpu_window_nominal_s"
"""Sample counter: the window the CPU snapshots were meant to bracket (the test's
measured duration after warm-up)."""


def window_seconds(before: CpuTimes, after: CpuTimes) -> float:
    """The window between two snapshots by the host's own clock (/proc/uptime read with
    each); without it, the ticks the cores accounted (all classes, idle included), the
    median over cores — a poorer clock: in a VM with tick accounting it strayed by up to
    30 % over 0.7 s here."""
    if before.uptime_s is not None and after.uptime_s is not None:
        return after.uptime_s - before.uptime_s
    spans = sorted(sum(max(0, after.ticks[c][k] - before.ticks[c][k]) for k in CPU_CLASSES)
                   for c in before.ticks if c in after.ticks)
    if not spans:
        return 0.0
    return spans[len(spans) // 2] / USER_HZ


def windows_off(counters: Mapping[str, float], measured_s: float | None = None) -> dict[str, float]:
    """Windows of a sample off nominal by more than WINDOW_TOLERANCE: machine (or
    "iperf3" for the test's own measured window) → seconds. Samples that recorded no
    nominal window (older runs, request/response) are not judged."""
    nominal = counters.get(NOMINAL)
    if not nominal:
        return {}
    found = {name[len(WINDOW_PREFIX):]: value for name, value in counters.items()
             if name.startswith(WINDOW_PREFIX)}
    if measured_s is not None:
        found["iperf3"] = measured_s
    return {where: value for where, value in found.items()
            if abs(value - nominal) > WINDOW_TOLERANCE * nominal}


def parse_iperf3_cpu(text: str) -> dict[str, float]:
    """iperf3's own `cpu_utilization_percent` (the client's and the server's process over
    the whole test, warm-up included, % of one core): kept beside ours as a cross-check."""
    try:
        found = json.loads(text).get("end", {}).get("cpu_utilization_percent", {})
    except (json.JSONDecodeError, AttributeError):
        return {}
    names = {"host_total": "iperf3_cpu_sender_pct", "remote_total": "iperf3_cpu_receiver_pct"}
    return {ours: float(found[theirs]) for theirs, ours in names.items()
            if isinstance(found, dict) and isinstance(found.get(theirs), (int, float))}


PROC_UPTIME = Path("/proc/uptime")


def snapshot(host: "Host | None" = None) -> CpuTimes:
    """Every core of the host's machine (this machine's when no host is given), with the
    host's clock: on this machine both files are read directly; elsewhere in one command,
    so the clock and the ticks are of one instant there."""
    if host is None or host.machine == "local":
        uptime, text = PROC_UPTIME.read_text(), PROC_STAT.read_text()
    else:
        found = host.run(["cat", str(PROC_UPTIME), str(PROC_STAT)], timeout=10.0).stdout
        uptime, _, text = found.partition("\n")
    return replace(parse_proc_stat(text), uptime_s=parse_uptime(uptime))


def parse_uptime(text: str) -> float | None:
    """/proc/uptime's first field (seconds since boot, 10 ms resolution)."""
    try:
        return float(text.split()[0])
    except (IndexError, ValueError):
        return None


# --- one process ------------------------------------------------------------------------

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
