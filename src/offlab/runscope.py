"""What one `offlab run` owns on this machine, and reclaiming it after a kill.

* **One run per machine.** Two runs sharing two cores measure each other. A run
  holds an exclusive `flock` on /run/offlab/lock (per lab instance: OFFLAB_RUNTIME_DIR) (the kernel drops it when the process
  dies, however it dies) and writes who it is into the file, so a second run can name
  the one in its way.
* **A cgroup per run.** offlab moves itself into `<cgroup2>/offlab/run-<pid>` before it
  starts anything, so every process it starts — iperf3, irtt, sockperf, offlab-fwd,
  QEMU, through any wrapper — is in that cgroup by inheritance. After a `kill -9` the
  next run kills exactly those (`cgroup.kill`) and nothing else; the cgroup's own
  `cpu.stat` also says how much CPU the run used.
* **A runtime directory per run** (/run/offlab/run-<pid>) for temporary files, removed
  with the run or by the next one.

Namespaces (ofl-<pid>-<role>) are swept by topology.naming once their processes are
gone; this module reclaims processes and files.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

RUNTIME_ROOT = Path(os.environ.get("OFFLAB_RUNTIME_DIR", "/run/offlab"))
"""The lab instance's runtime root: its machine lock and its runs' files. One per machine
by default; a second lab instance on the same machine (another CPU set, or a test of
several writers into one store, docs/team-store.md) sets OFFLAB_RUNTIME_DIR to its own
directory. Instances never share a run's files: those are per pid either way."""
LOCK_NAME = "lock"
CGROUP_GROUP = "offlab"
KILL_WAIT_S = 5.0


class BusyError(Exception):
    """Another run holds this machine; the message names it and the way out."""


@dataclass(frozen=True)
class Holder:
    pid: int
    run_id: str
    store: str
    started_at: float

    def sentence(self) -> str:
        since = time.strftime("%H:%M:%S", time.localtime(self.started_at))
        return f"run {self.run_id or '(starting)'} (pid {self.pid}, since {since}, store {self.store})"


def cgroup2_root(mounts: str | None = None) -> Path | None:
    """Where the unified (v2) hierarchy is mounted, if anywhere: /sys/fs/cgroup on
    current distributions, /sys/fs/cgroup/unified on hybrid ones."""
    text = Path("/proc/mounts").read_text() if mounts is None else mounts
    for line in text.splitlines():
        fields = line.split()
        if len(fields) > 2 and fields[2] == "cgroup2":
            return Path(fields[1])
    return None


class MachineLock:
    """The exclusive lock of this machine, held for a run's whole life."""

    def __init__(self, root: Path = RUNTIME_ROOT):
        self.path = root / LOCK_NAME
        self._file: IO[str] | None = None

    def acquire(self, store: str, wait: bool = False) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a+", encoding="utf-8")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            holder = self.holder()
            handle.close()
            who = holder.sentence() if holder else "another offlab run"
            raise BusyError(f"{who} is measuring on this machine; wait for it to end, or pass "
                            "--wait to start when it does") from None
        self._file = handle
        self._write(Holder(os.getpid(), "", store, time.time()))

    def name_run(self, run_id: str) -> None:
        """Record the run id once it exists (the lock is taken before the store is touched)."""
        holder = self.holder()
        if self._file is not None and holder is not None:
            self._write(Holder(holder.pid, run_id, holder.store, holder.started_at))

    def holder(self) -> Holder | None:
        try:
            doc = json.loads(self.path.read_text(encoding="utf-8") or "{}")
            return Holder(int(doc["pid"]), str(doc["run_id"]), str(doc["store"]), float(doc["started_at"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _write(self, holder: Holder) -> None:
        assert self._file is not None
        self._file.seek(0)
        self._file.truncate()
        json.dump(holder.__dict__, self._file)
        self._file.flush()

    def release(self) -> None:
        if self._file is not None:
            self._file.seek(0)
            self._file.truncate()
            fcntl.flock(self._file, fcntl.LOCK_UN)
            self._file.close()
            self._file = None


class RunScope:
    """This run's cgroup and runtime directory; `enter()` moves offlab into them."""

    def __init__(self, pid: int | None = None, runtime_root: Path = RUNTIME_ROOT,
                 cgroup_root: Path | None = None):
        self.pid = os.getpid() if pid is None else pid
        self.runtime = runtime_root / f"run-{self.pid}"
        root = cgroup_root if cgroup_root is not None else cgroup2_root()
        self.cgroup = root / CGROUP_GROUP / f"run-{self.pid}" if root is not None else None
        self.cgroup_name = f"/{CGROUP_GROUP}/run-{self.pid}" if root is not None else None
        """The cgroup as /proc/<pid>/cgroup names it (foreign.py tells ours from others by it)."""

    def enter(self) -> None:
        self.runtime.mkdir(parents=True, exist_ok=True)
        if self.cgroup is not None:
            self.cgroup.mkdir(parents=True, exist_ok=True)
            (self.cgroup / "cgroup.procs").write_text(f"{self.pid}\n")

    def cpu_usage_s(self) -> float | None:
        """CPU time of every process of the run so far (cgroup v2 cpu.stat)."""
        if self.cgroup is None:
            return None
        try:
            for line in (self.cgroup / "cpu.stat").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "usage_usec":
                    return int(value) / 1e6
        except OSError:
            return None
        return None

    def leave(self) -> None:
        """Back to the parent cgroup, the cgroup and the runtime directory removed
        (called once every child has been stopped)."""
        shutil.rmtree(self.runtime, ignore_errors=True)
        if self.cgroup is not None and self.cgroup.exists():
            (self.cgroup.parent.parent / "cgroup.procs").write_text(f"{self.pid}\n")
            _remove_cgroup(self.cgroup)


def reclaim_stale(runtime_root: Path = RUNTIME_ROOT, cgroup_root: Path | None = None,
                  alive=None) -> list[str]:
    """Kill the processes of runs whose offlab is gone and remove their cgroups and
    runtime directories; one line per thing reclaimed. Call holding the machine lock."""
    alive = alive or pid_alive
    root = cgroup_root if cgroup_root is not None else cgroup2_root()
    reclaimed = []
    if root is not None and (root / CGROUP_GROUP).is_dir():
        for cgroup in sorted((root / CGROUP_GROUP).glob("run-*")):
            pid = _pid_of(cgroup.name)
            if pid is None or alive(pid):
                continue
            killed = _processes(cgroup)
            _remove_cgroup(cgroup)
            what = ", ".join(killed) if killed else "no processes left"
            reclaimed.append(f"cgroup of killed run (pid {pid}): {what}")
    if runtime_root.is_dir():
        for directory in sorted(runtime_root.glob("ssh-*-*")):  # ssh control sockets outside a run
            pid = _pid_of(directory.name.rsplit("-", 1)[0])
            if pid is not None and not alive(pid):
                shutil.rmtree(directory, ignore_errors=True)
        for directory in sorted(runtime_root.glob("vm-*-*")):  # guests' files outside a run (vm/qemu.py)
            pid = _pid_of("-".join(directory.name.split("-")[:2]))  # vm-<pid>-<guest>-<random>
            if pid is not None and not alive(pid):
                shutil.rmtree(directory, ignore_errors=True)
                reclaimed.append(f"guest files of killed process (pid {pid}): {directory}")
        for directory in sorted(runtime_root.glob("run-*")):
            pid = _pid_of(directory.name)
            if pid is not None and not alive(pid):
                shutil.rmtree(directory, ignore_errors=True)
                reclaimed.append(f"runtime files of killed run (pid {pid}): {directory}")
    return reclaimed


def _processes(cgroup: Path) -> list[str]:
    """"iperf3 (4321)" for every process still in the cgroup."""
    found = []
    for pid in (cgroup / "cgroup.procs").read_text().split():
        try:
            name = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
        found.append(f"{name} ({pid})")
    return found


def _remove_cgroup(cgroup: Path) -> None:
    """Kill what is left in the cgroup (all of it, at once) and remove it."""
    deadline = time.monotonic() + KILL_WAIT_S
    while True:
        if not (cgroup / "cgroup.procs").read_text().split():
            break
        if (cgroup / "cgroup.kill").exists():
            (cgroup / "cgroup.kill").write_text("1\n")
        else:  # kernels before 5.14: one by one
            for pid in (cgroup / "cgroup.procs").read_text().split():
                try:
                    os.kill(int(pid), 9)
                except ProcessLookupError:
                    pass
        if time.monotonic() > deadline:
            raise OSError(f"{cgroup}: processes still running after {KILL_WAIT_S:g} s")
        time.sleep(0.02)
    cgroup.rmdir()


def _pid_of(name: str) -> int | None:
    _, _, number = name.partition("-")
    return int(number) if number.isdigit() else None


def pid_alive(pid: int) -> bool:
    """Whether a process of this pid exists (one of another user's counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
