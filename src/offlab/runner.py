"""Executing a plan: each scenario × MTU built once, each case's offloads set and read
back, N repetitions measured, every sample handed to the store the moment it exists.

Interruption (SIGINT/SIGTERM) unwinds through the topology's and the server's
context managers, so the namespaces are gone before the caller reports how to resume;
the repetition in flight is discarded, the ones before it are already committed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator, Mapping, Protocol

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)

from .measure import measure
from .offloads import OffloadControl
from .proc import run
from .records import CaseSpec, FeatureState, Sample
from .topology import Topology, build
from .traffic import IperfError, IperfServer

ATTEMPTS = 3
"""A repetition whose iperf3 fails is retried this many times in all, then the run fails."""


class SampleSink(Protocol):
    def add_sample(self, run_id: str, case: CaseSpec, sample: Sample) -> None: ...


@dataclass
class RunnerStats:
    samples: int = 0
    retries: int = 0
    refused_offload_changes: list[str] = field(default_factory=list)
    malformed_ethtool_lines: int = 0
    napi_threads_pinned: int = 0
    """NAPI threads pinned for the latest case (0 while GRO is off everywhere)."""


def pending(cases: Iterable[CaseSpec], runs: int, done: Mapping[str, int]) -> list[tuple[CaseSpec, int]]:
    """(case, first repetition still to measure) for every case short of `runs`."""
    return [(c, done.get(c.key, 0)) for c in cases if done.get(c.key, 0) < runs]


def by_topology(work: list[tuple[CaseSpec, int]]) -> Iterator[tuple[tuple[str, int], list[tuple[CaseSpec, int]]]]:
    """Work grouped by (scenario, MTU) in order of first appearance: one build each."""
    groups: dict[tuple[str, int], list[tuple[CaseSpec, int]]] = {}
    for case, first in work:
        groups.setdefault((case.scenario, case.mtu), []).append((case, first))
    yield from groups.items()


class Runner:
    def __init__(self, sink: SampleSink, run_id: str, runs: int, *,
                 steer_rx_softirq: bool = True, console: Console | None = None,
                 show_progress: bool = True):
        self.sink = sink
        self.run_id = run_id
        self.runs = runs
        self.steer_rx_softirq = steer_rx_softirq
        self.console = console or Console(stderr=True)
        self.show_progress = show_progress
        self.stats = RunnerStats()
        self._control = OffloadControl(run)

    def execute(self, cases: Iterable[CaseSpec], done: Mapping[str, int] | None = None) -> RunnerStats:
        work = pending(cases, self.runs, done or {})
        total = sum(self.runs - first for _, first in work)
        with self._progress() as progress:
            task = progress.add_task("starting", total=total)
            for (scenario, mtu), group in by_topology(work):
                progress.update(task, description=f"building {scenario} mtu {mtu}")
                with build(scenario, mtu, steer_rx_softirq=self.steer_rx_softirq) as topo:
                    receiver = topo.receiver
                    with IperfServer(receiver.namespace, receiver.address, receiver.core) as server:
                        self._run_group(topo, server, group, progress, task)
        self.stats.refused_offload_changes = list(self._control.refused)
        self.stats.malformed_ethtool_lines = self._control.malformed_lines
        return self.stats

    def _run_group(self, topo: Topology, server: IperfServer, group: list[tuple[CaseSpec, int]],
                   progress: Progress, task: TaskID) -> None:
        """Repetitions interleaved round-robin over the group's cases, so slow drift of
        the machine (other load, thermal state) spreads over every profile alike
        instead of favouring whichever case happened to run first."""
        next_rep = {case.key: first for case, first in group}
        applied: str | None = None
        while any(next_rep[c.key] < self.runs for c, _ in group):
            for case, _ in group:
                repetition = next_rep[case.key]
                if repetition >= self.runs:
                    continue
                if applied != case.key:
                    state, napi = self._apply(topo, case)
                    applied = case.key
                progress.update(task, description=f"{case.key} #{repetition + 1}/{self.runs}")
                sample = self._measure(topo, server, case, repetition, state, napi)
                self.sink.add_sample(self.run_id, case, sample)
                next_rep[case.key] += 1
                self.stats.samples += 1
                progress.advance(task)

    def _apply(self, topo: Topology, case: CaseSpec) -> tuple[dict, dict[int, int]]:
        """Put the case's offload profile in force; the state read back and the NAPI
        threads pinned for it."""
        napi_before = topo.napi_snapshot()
        state = self._control.apply(case.profile, topo.offload_interfaces())
        napi = topo.pin_napi_threads(napi_before)
        self.stats.napi_threads_pinned = len(napi)
        return state, napi

    def _measure(self, topo: Topology, server: IperfServer, case: CaseSpec, repetition: int,
                 state: Mapping[str, Mapping[str, FeatureState]], napi: Mapping[int, int]) -> Sample:
        for attempt in range(1, ATTEMPTS + 1):
            server.ensure_running()
            try:
                return measure(topo, case, repetition, state, port=server.port,
                               server_pid=server.pid, kernel_threads=napi)
            except IperfError as failure:
                if attempt == ATTEMPTS:
                    raise
                self.stats.retries += 1
                self.console.print(f"[yellow]retrying[/] ({attempt}/{ATTEMPTS - 1}): {failure}")
                server.close()  # a fresh server for the next attempt
        raise AssertionError("unreachable")

    def _progress(self) -> Progress:
        return Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            console=self.console, disable=not self.show_progress, transient=False,
        )
