"""The threads of a QEMU process by what they do, for CPU sampling per class: vCPU
threads (named "CPU <n>/TCG" or "CPU <n>/KVM" with `-name …,debug-threads=on`), vhost
workers ("vhost-<qemu pid>": threads of QEMU since Linux 6.4, kernel threads before,
so both places are searched), and the rest (the main loop, I/O, RCU, TCG helpers)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..hosts.proctimes import ProcessTimes, parse_pid_stat

VCPU = re.compile(r"^CPU \d+/(TCG|KVM)$")
CLASSES = ("vcpu", "vhost", "other")


@dataclass(frozen=True)
class QemuThread:
    tid: int
    name: str
    kind: str
    """"vcpu", "vhost" or "other"."""


def classify(name: str, qemu_pid: int) -> str:
    if VCPU.match(name):
        return "vcpu"
    if name == f"vhost-{qemu_pid}":
        return "vhost"
    return "other"


def qemu_threads(pid: int, proc: Path = Path("/proc")) -> dict[str, list[QemuThread]]:
    """Every thread of QEMU `pid` (and its vhost kernel threads) by class."""
    found: dict[str, list[QemuThread]] = {kind: [] for kind in CLASSES}
    for task in sorted((proc / str(pid) / "task").iterdir(), key=lambda p: int(p.name)):
        name = _comm(task)
        if name is not None:
            found[classify(name, pid)].append(QemuThread(int(task.name), name, classify(name, pid)))
    own = {t.tid for threads in found.values() for t in threads}
    for entry in proc.iterdir():
        if entry.name.isdigit() and int(entry.name) not in own:
            name = _comm(entry)
            if name == f"vhost-{pid}":
                found["vhost"].append(QemuThread(int(entry.name), name, "vhost"))
    return found


def _comm(task: Path) -> str | None:
    try:
        return (task / "comm").read_text().strip()
    except OSError:
        return None  # the thread ended meanwhile


def class_times(threads: dict[str, list[QemuThread]], qemu_pid: int,
                proc: Path = Path("/proc")) -> dict[str, ProcessTimes]:
    """utime/stime ticks summed per class now; two snapshots around a window give each
    class's CPU share with hosts.proctimes.process_percent. A thread that ended counts no more."""
    totals: dict[str, ProcessTimes] = {}
    for kind, members in threads.items():
        usr = sys = 0
        for thread in members:
            own = proc / str(qemu_pid) / "task" / str(thread.tid) / "stat"
            path = own if own.exists() else proc / str(thread.tid) / "stat"  # a vhost kthread
            try:
                times = parse_pid_stat(path.read_text())
            except OSError:
                continue
            usr, sys = usr + times.usr, sys + times.sys
        totals[kind] = ProcessTimes(usr, sys)
    return totals
