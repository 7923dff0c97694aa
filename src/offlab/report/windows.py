"""The CPU window of every case on every host: how long each machine's snapshots
bracketed by its own clock (/proc/uptime), against the test's nominal window and
iperf3's measured one, the samples left out of CPU figures for a window off by more than
5 %, and iperf3's own cpu_utilization_percent beside the lab's per-process figures (a
cross-check: iperf3 counts the whole test, warm-up included)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from ..measure.cpu import NOMINAL, WINDOW_PREFIX, WINDOW_TOLERANCE
from ..analysis.stats import summary
from .model import cpu_timed
from .cells import Table, mean_std
from .section import Section

if TYPE_CHECKING:
    from .model import ProfileRow

INTRO = ("Each machine's CPU window is measured by its own clock (/proc/uptime, read with "
         "/proc/stat at both snapshots), never assumed: a core's busy time is that window less "
         "its measured idle, iowait and steal (steal is never busy), and only the split of busy "
         "time between classes is tick-sampled. A window off the nominal measured window by more "
         f"than {WINDOW_TOLERANCE:.0%}, or an iperf3 measured window off it, leaves the sample out "
         "of every CPU figure (with a warning), and so does a role whose pinned tasks used more "
         "CPU than its core had (the scheduler's ns clock; \"CPU refused\"). The last columns set "
         "the iperf3 client's and server's CPU by the ns clock (% of one core, over the window) "
         "beside iperf3's own cpu_utilization_percent (over the whole test, warm-up included), "
         "as a cross-check.")


def _values(row: "ProfileRow", name: str) -> list[float]:
    return [s.counters[name] for s in row.samples if name in s.counters]


def _app(row: "ProfileRow", role: str) -> str:
    clocked = _values(row, f"{role}_app_ns_pct")
    if clocked:
        return mean_std(summary(clocked), decimals=0)
    usr, sys = _values(row, f"{role}_app_usr_pct"), _values(row, f"{role}_app_sys_pct")
    return mean_std(summary([u + s for u, s in zip(usr, sys)]), decimals=0) if usr and len(usr) == len(sys) else "–"


def window_sections(rows: Sequence["ProfileRow"]) -> list:
    body = []
    for row in rows:
        nominal = _values(row, NOMINAL)
        if not nominal:
            continue
        machines = sorted({name[len(WINDOW_PREFIX):] for s in row.samples for name in s.counters
                           if name.startswith(WINDOW_PREFIX)})
        windows = "; ".join(f"{m} {mean_std(summary(_values(row, WINDOW_PREFIX + m)), decimals=2)}"
                            for m in machines)
        left_out = sum(1 for s in row.samples if not cpu_timed(s))  # window off, or refused
        body.append((
            row.case.key, f"{nominal[0]:g}", windows or "–",
            mean_std(summary([s.duration_s for s in row.samples]), decimals=2),
            f"{left_out} of {row.n}",
            f"{_app(row, 'sender')} / {mean_std(_summary(row, 'iperf3_cpu_sender_pct'), decimals=0)}",
            f"{_app(row, 'receiver')} / {mean_std(_summary(row, 'iperf3_cpu_receiver_pct'), decimals=0)}",
        ))
    if not body:
        return []
    table = Table(("Case", "Nominal (s)", "CPU window per machine (s)", "iperf3 window (s)",
                   "Left out of CPU", "iperf3 client CPU %: lab / iperf3",
                   "iperf3 server CPU %: lab / iperf3"), tuple(body), align_left=1)
    return [Section("CPU windows", INTRO, (("Per case, mean±std over samples", table),))]


def _summary(row: "ProfileRow", name: str):
    values = _values(row, name)
    return summary(values) if values else None
