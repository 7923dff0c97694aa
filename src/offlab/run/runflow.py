"""One `offlab run` from its first write to its last: the machine lock, the reclaiming of
a killed run's leftovers, the run's cgroup, a new run record or the rest of an old one,
the runner under signal handling, and the run's status at the end.

Everything before `start` (plan, flags, preflight) has already been checked by the
CLI, so that a refused run writes nothing.
"""

from __future__ import annotations

import os
import secrets
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Mapping

from rich.console import Console

from . import environment
from ..hosts.lease import LeaseLost
from ..records import CaseSpec, RunInfo, RunSettings
from .runner import Runner, RunnerStats
from ..runscope import MachineLock, RunScope, reclaim_stale
from ..store.masking import mask_argv
from ..store.store import Store, StoreError, StoreLocation
from ..topology import Interrupted, TerminationSignals, Topology, sweep_leftovers


class RunError(Exception):
    """A run that cannot start or continue; one line with the fix."""


@dataclass(frozen=True)
class Session:
    """What is about to be executed: a new run or the rest of an old one."""

    run_id: str
    cases: tuple[CaseSpec, ...]
    settings: RunSettings
    done: Mapping[str, int]
    history: Mapping[str, tuple[float, ...]] | None = None
    """case key → throughputs already stored (resumed adaptive runs)."""


@dataclass(frozen=True)
class Outcome:
    run_id: str
    status: str
    stats: RunnerStats
    signal: int | None = None
    reason: str | None = None
    """Why an interrupted run stopped when no signal asked it to (a server's lease lost)."""


RUN_ID_TRIES = 5


def new_run_id() -> str:
    """Time, pid and 16 random bits: readable, in time order, and unique across the
    machines writing one shared store (a clash that happens anyway is refused by the
    store's primary key and `begin` draws again)."""
    return time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}-{secrets.token_hex(2)}"


def begin(store: Store, plan_name: str, cases: tuple[CaseSpec, ...], settings: RunSettings,
          notes: str = "", host_facts: Mapping[str, Mapping[str, str]] | None = None,
          campaign: tuple[str, str] | None = None) -> Session:
    """A new run in the store; `campaign`: (campaign id, pair name) it belongs to."""
    info = RunInfo(
        run_id=new_run_id(), plan=plan_name, started_at=time.time(),
        command_line=mask_argv(sys.argv), kernel=environment.kernel(),
        cpu_model=environment.cpu_model(), cores=environment.cores(),
        tool_versions=environment.tool_versions(), host=environment.host(), notes=notes,
        settings=settings, host_facts=host_facts or {},
    )
    for attempt in range(RUN_ID_TRIES):
        try:
            run_id = store.begin_run(info, campaign)
            break
        except StoreError:
            if attempt + 1 == RUN_ID_TRIES or store.has_run(info.run_id) is False:
                raise
            info = replace(info, run_id=new_run_id())
    for case in cases:
        store.add_case(run_id, case)
    return Session(run_id, cases, settings, {})


def resume(store: Store, run_id: str, runs: int | None) -> Session:
    """The rest of a stored run, with the settings it was started with (`--runs` may
    raise a fixed repetition count)."""
    results = store.load_run(run_id)
    settings = results.info.settings
    if settings is None:
        raise RunError(f"run {run_id} does not record its settings; start a new run")
    if results.status == "complete" and runs is None:
        raise RunError(f"run {run_id} is complete; pass --runs N to add repetitions, or start a new run")
    if runs is not None:
        if settings.ci_target is not None:
            raise RunError(f"run {run_id} repeats adaptively; resume it without --runs")
        settings = replace(settings, repetitions=runs)
    history = {k: tuple(s.throughput_bps for s in v) for k, v in results.samples.items()}
    return Session(run_id, tuple(results.cases), settings, store.completed_counts(run_id), history)


def execute(store_path: StoreLocation | Path, prepare: Callable[[Store], Session], *, console: Console,
            show_progress: bool, wait: bool, build: Callable[..., Topology] | None = None,
            before_start: Callable[[], list[str]] | None = None,
            lost: Callable[[], str | None] = lambda: None) -> Outcome:
    """`build`: how topologies are made (default: local namespaces); `before_start`:
    what else to reclaim once the machine is ours (real hosts a killed run left changed);
    `lost`: why the run lost its hold on a server, once it has (hosts/session.py).
    Take the machine, reclaim what killed runs left, run the session, release all."""
    lock = MachineLock()
    lock.acquire(str(store_path), wait=wait)
    scope = RunScope()
    try:
        for line in reclaim_stale() + [f"namespace of killed run: {n}" for n in sweep_leftovers()]:
            console.print(f"removed {line}")
        for line in (before_start() if before_start else []):
            console.print(f"restored {line}")
        scope.enter()
        with Store(store_path) as store:
            for run_id in store.close_killed_runs():
                console.print(f"run {run_id} was killed: marked interrupted (its samples are kept)")
            session = prepare(store)
            lock.name_run(session.run_id)
            return _run(store, session, console, show_progress, scope.cgroup_name, build, lost)
    finally:
        scope.leave()
        lock.release()


def _run(store: Store, session: Session, console: Console, show_progress: bool,
         own_cgroup: str | None, build: Callable[..., Topology] | None,
         lost: Callable[[], str | None]) -> Outcome:
    runner = Runner(store, session.run_id, session.settings, console=console,
                    show_progress=show_progress, history=session.history, own_cgroup=own_cgroup,
                    **({"build": build} if build is not None else {}))
    try:
        with TerminationSignals():
            stats = runner.execute(session.cases, session.done)
    except (Interrupted, LeaseLost) as stop:
        # A lease lost (seen by a command, or by the heartbeat that then sent SIGTERM) is
        # the reason, whatever unwound the run.
        reason = lost() or (str(stop) if isinstance(stop, LeaseLost) else None)
        store.finish_run(session.run_id, "interrupted", note=f"interrupted: {reason}" if reason else "")
        return Outcome(session.run_id, "interrupted", runner.stats,
                       None if reason else getattr(stop, "signum", None), reason)
    except BaseException:
        store.finish_run(session.run_id, "failed")
        raise
    store.finish_run(session.run_id, "complete")
    return Outcome(session.run_id, "complete", stats)
