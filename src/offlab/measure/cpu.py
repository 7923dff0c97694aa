"""Per-core CPU time from /proc/stat: a pure parser, the delta between two snapshots as
`CpuShare`s (percent of the window per class), and the snapshot itself.

/proc/stat columns per core: user nice system idle iowait irq softirq steal guest
guest_nice, in USER_HZ ticks. guest/guest_nice are already included in user/nice by
the kernel, so they are not added again.
"""

from __future__ import annotations

import gzip
import json
import math
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from ..hosts.proctimes import ProcStatError
from ..records import CPU_CLASSES, CpuShare

if TYPE_CHECKING:
    from ..hosts import Host

PROC_STAT = Path("/proc/stat")

_COLUMNS = ("usr", "nice", "sys", "idle", "iowait", "irq", "soft", "steal")
"""Our class names for the first eight /proc/stat columns, in the file's order."""


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

    With the host's clock read at both snapshots (`uptime_s`), the window is that clock:
    idle and iowait are then measured time (a tickless kernel accounts them in
    nanoseconds at each idle entry and exit; /proc/stat prints them in 10 ms units) and
    so is steal (the hypervisor's clock); busy is the window less those three, so it
    resolves the window to 10 ms. Only the split of busy time between usr, nice, sys,
    irq and soft comes from tick sampling (`busy_split`): with tick accounting a task
    that sleeps across every tick reads idle in the ticks, which, normalised by the
    ticks' own sum, made paced runs read ≥ 96 % idle while iperf3 used 23 % of a core.
    Without the clock, the shares are of the ticks that elapsed (older snapshots).

    A counter that went backwards (iowait can, by kernel design) counts as zero. A core
    with no ticks elapsed raises: the window was too short to say anything."""
    if set(before.ticks) != set(after.ticks):
        raise ProcStatError("the two snapshots list different cores (CPU hotplug?)")
    window = None
    if before.uptime_s is not None and after.uptime_s is not None and after.uptime_s > before.uptime_s:
        window = (after.uptime_s - before.uptime_s) * USER_HZ
    shares = []
    for core in sorted(before.ticks):
        deltas = {
            c: max(0, after.ticks[core][c] - before.ticks[core][c]) for c in CPU_CLASSES
        }
        total = sum(deltas.values())
        if total == 0:
            raise ProcStatError(f"core {core}: no ticks elapsed between the snapshots")
        if window is None:
            shares.append(CpuShare(core, {c: 100.0 * d / total for c, d in deltas.items()}))
        else:
            shares.append(CpuShare(core, _clocked(deltas, window)))
    return tuple(shares)


TICK_HZ = "cpu_tick_hz"
"""Sample counter: the tick rate that sampled the busy split (CONFIG_HZ, or 100)."""
SPLIT_ERROR_TARGET = 0.02
"""A tick-sampled class is stated with its sampling error; under 2 % of the figure it
resolves the window."""
MEASURED = ("idle", "iowait", "steal")
"""/proc/stat classes that are measured time, not tick samples (tickless idle; steal)."""
BUSY_CLASSES = ("usr", "nice", "sys", "irq", "soft")
"""Classes that are busy time; their split is tick-sampled."""


def _clocked(deltas: Mapping[str, int], window_ticks: float) -> dict[str, float]:
    """One core's classes over a window of `window_ticks` (USER_HZ units of the host's
    clock): measured classes as they are, busy = the rest, split by the busy ticks
    (all of it as sys, the kernel's, when no busy tick was sampled)."""
    measured = {c: min(100.0, 100.0 * deltas[c] / window_ticks) for c in MEASURED}
    busy = max(0.0, 100.0 - sum(measured.values()))
    sampled = sum(deltas[c] for c in BUSY_CLASSES)
    if sampled:
        split = {c: busy * deltas[c] / sampled for c in BUSY_CLASSES}
    else:
        split = {c: (busy if c == "sys" else 0.0) for c in BUSY_CLASSES}
    return {c: measured.get(c, split.get(c, 0.0)) for c in CPU_CLASSES}


def busy_split_error(share_percent: float, busy_percent: float, window_s: float, hz: int) -> float:
    """Standard error, in percent of a core, of one class's part of a core's busy time
    when the split comes from tick samples: the busy time holds about busy × window × HZ
    ticks, each landing in the class with probability p = share / busy (binomial)."""
    if busy_percent <= 0 or window_s <= 0:
        return 0.0
    samples = busy_percent / 100.0 * window_s * hz
    p = min(1.0, share_percent / busy_percent)
    return busy_percent * math.sqrt(p * (1.0 - p) / samples) if samples >= 1 else busy_percent


def kernel_hz() -> int:
    """The kernel's tick rate (CONFIG_HZ from its config, when readable): the rate at
    which tick accounting samples; USER_HZ (100, the lowest a kernel has) otherwise,
    which overstates the sampling error rather than understating it."""
    for path in (Path(f"/boot/config-{os.uname().release}"),):
        try:
            for line in path.read_text().splitlines():
                if line.startswith("CONFIG_HZ="):
                    return int(line.split("=", 1)[1])
        except (OSError, ValueError):
            continue
    try:
        with gzip.open("/proc/config.gz", "rt") as config:
            for line in config:
                if line.startswith("CONFIG_HZ="):
                    return int(line.split("=", 1)[1])
    except (OSError, ValueError):
        pass
    return USER_HZ


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


# --- per-task CPU time in nanoseconds ----------------------------------------------------

REFUSE_TOLERANCE = 0.02
"""A core's pinned tasks may read up to this fraction over the window before the sample's
CPU is refused: the task clocks are exact, but they and the window's ends are read a few
hundred microseconds apart."""
REFUSED_PREFIX = "cpu_refused."
"""Sample counter "cpu_refused.<role>": percent of its core(s) the role's pinned tasks
used, recorded when it exceeds what the cores had; the sample's CPU is refused."""
TASKS_TOTAL = "tasks_pct_total"
"""Sample counter: the run's pinned tasks on every core, ns clock, % of one core."""
ROLE_TASKS_PREFIX = "role_tasks_pct."
"""Sample counter "role_tasks_pct.<role>": CPU (ns clock) of every task pinned to the
role's core over the window, percent of one core."""


def parse_schedstat(text: str) -> int:
    """/proc/<pid>/task/<tid>/schedstat: time on CPU (ns), run-queue wait (ns), slices;
    the first field. Present with CONFIG_SCHED_INFO (no CONFIG_SCHEDSTATS needed)."""
    fields = text.split()
    if len(fields) < 3 or not fields[0].isdigit():
        raise ProcStatError(f"not a schedstat line: {text[:80]!r}")
    return int(fields[0])


def task_ns(pid: int, host: "Host | None" = None) -> int | None:
    """Time every thread of a process has been on a CPU, in nanoseconds (the scheduler's
    clock, not ticks); None once the process is gone. Threads that exited take their
    time with them, so a process should be read while its threads live."""
    try:
        if host is None or host.machine == "local":
            texts = [p.read_text() for p in Path(f"/proc/{pid}/task").glob("*/schedstat")]
        else:
            # A glob needs the shell; the script only reads (world-readable files).
            done = host.run(["sh", "-c", f"cat /proc/{int(pid)}/task/*/schedstat"], timeout=10.0, check=False,
                            root=False)
            texts = done.stdout.splitlines() if done.returncode == 0 else []
    except (FileNotFoundError, ProcessLookupError, OSError):
        return None
    return sum(parse_schedstat(t) for t in texts) if texts else None


def task_percent(before: int | None, after: int | None, window_s: float) -> float | None:
    """A process's CPU over a window, in percent of one core."""
    if before is None or after is None or window_s <= 0:
        return None
    return 100.0 * (after - before) / (window_s * 1e9)


def refused_roles(role_tasks: Mapping[str, float], role_cores: Mapping[str, int]) -> dict[str, float]:
    """Roles whose pinned tasks used more CPU than their cores had over the window (a
    clock or a pinning that cannot be trusted): role → percent used."""
    return {role: used for role, used in role_tasks.items()
            if used > 100.0 * role_cores.get(role, 1) * (1.0 + REFUSE_TOLERANCE)}


def refusals(counters: Mapping[str, float]) -> dict[str, float]:
    """The refusals a sample recorded: role → percent of its core(s) its tasks used."""
    return {name[len(REFUSED_PREFIX):]: value for name, value in counters.items()
            if name.startswith(REFUSED_PREFIX)}
