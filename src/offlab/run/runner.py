"""Executing a plan: each topology built once, each case's datapath and offloads set
and read back, repetitions interleaved over the group's cases, every sample handed to
the sink the moment it exists.

Interruption (SIGINT/SIGTERM) unwinds through the topology's and the server's context
managers, so the namespaces are gone before the caller reports how to resume; the
repetition in flight is discarded, the ones before it are already committed.

With an adaptive rule (run settings `ci_target`) a case is repeated until its CI is
narrow enough, between the minimum and maximum runs, and how that ended is stored per
case. Every sample also keeps the kernel counters of every host of the topology that
changed while it ran, prefixed with the host's name ("r:Ip.InDiscards"), and the
userspace datapath's own counters ("fwd:a>b:segments").

The two seams — `build` (a topology for a scenario) and `measure` (one repetition) —
are constructor parameters so the loop itself can be tested without namespaces.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Mapping, Protocol, Sequence

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)

from ..measure import counters, sockbuf, stackconfig
from ..analysis.adaptive import AdaptiveOutcome, rule_of
from ..measure.measure import Context
from ..measure.measure import measure as measure_case
from ..hosts.offloads import OffloadControl
from ..records import CaseSpec, FeatureState, Params, RunSettings, Sample
from ..topology import Topology
from ..topology import build as build_topology
from ..measure.traffic import IperfError, IperfServer

ATTEMPTS = 3
"""A repetition whose iperf3 fails is retried this many times in all, then the run fails."""
TopologyKey = tuple[str, int, Params]
"""(scenario, MTU, topology parameters): the cases that share one build."""


class SampleSink(Protocol):
    def add_sample(self, run_id: str, case: CaseSpec, sample: Sample) -> None: ...

    def record_adaptive(self, run_id: str, outcome: AdaptiveOutcome) -> None: ...

    def record_stack(self, run_id: str, place: str, host: str, config: Mapping[str, str]) -> None: ...


@dataclass
class RunnerStats:
    samples: int = 0
    retries: int = 0
    refused_offload_changes: list[str] = field(default_factory=list)
    malformed_ethtool_lines: int = 0
    napi_threads_pinned: int = 0
    """NAPI threads pinned for the latest case (0 while GRO is off everywhere)."""
    adaptive: list[AdaptiveOutcome] = field(default_factory=list)
    """How each case that finished in this session ended (adaptive runs only)."""


def pending(cases: Iterable[CaseSpec], runs: int, done: Mapping[str, int]) -> list[tuple[CaseSpec, int]]:
    """(case, first repetition still to measure) for every case short of `runs`."""
    return [(c, done.get(c.key, 0)) for c in cases if done.get(c.key, 0) < runs]


def by_topology(work: list[tuple[CaseSpec, int]]) -> Iterator[tuple[TopologyKey, list[tuple[CaseSpec, int]]]]:
    """Work grouped by topology in order of first appearance: one build each."""
    groups: dict[TopologyKey, list[tuple[CaseSpec, int]]] = {}
    for case, first in work:
        groups.setdefault((case.scenario, case.mtu, case.topology), []).append((case, first))
    yield from groups.items()


def saturated_twin(saturated: CaseSpec, paced: CaseSpec) -> bool:
    """Whether a saturated case shares the paced case's topology and workload (the pace
    is a fraction of the slowest of them); the profile and the windows may differ."""
    a, b = saturated.traffic, paced.traffic
    return ((saturated.scenario, saturated.mtu, saturated.topology)
            == (paced.scenario, paced.mtu, paced.topology)
            and (a.protocol, a.mode, a.message_size, a.streams, a.bidirectional)
            == (b.protocol, b.mode, b.message_size, b.streams, b.bidirectional))


def path_devices(topo: Topology) -> dict[str, list[str]]:
    """host name → devices whose own counters (`ethtool -S`) a sample keeps: the NICs of
    real hosts and every device whose offloads the topology controls (veth, VXLAN …),
    each once."""
    devices = {name: list(found) for name, found in topo.nic_interfaces().items()}
    hosts = topo.counter_hosts()
    for iface in topo.offload_interfaces():
        if iface.host.name in hosts and iface.device not in devices.setdefault(iface.host.name, []):
            devices[iface.host.name].append(iface.device)
    return devices


Build = Callable[..., Topology]
Measure = Callable[..., Sample]


class Runner:
    def __init__(self, sink: SampleSink, run_id: str, settings: RunSettings, *,
                 console: Console | None = None, show_progress: bool = True,
                 history: Mapping[str, Sequence[float]] | None = None,
                 build: Build = build_topology, measure: Measure = measure_case,
                 own_cgroup: str | None = None):
        """`history`: case key → throughputs already stored (on resume), which the
        adaptive rule counts. `own_cgroup`: the run's cgroup, whose processes are not
        foreign load."""
        self.sink = sink
        self.run_id = run_id
        self.settings = settings
        self.adaptive = rule_of(settings)
        self.runs = self.adaptive.max_runs if self.adaptive else settings.repetitions
        self.console = console or Console(stderr=True)
        self.show_progress = show_progress
        self.stats = RunnerStats()
        self._build = build
        self._measure = measure
        self._own_cgroup = own_cgroup
        self._control = OffloadControl()
        self._values: dict[str, list[float]] = {k: list(v) for k, v in (history or {}).items()}
        self._fixed: set[str] = set()

    def execute(self, cases: Iterable[CaseSpec], done: Mapping[str, int] | None = None) -> RunnerStats:
        cases = list(cases)
        # A capacity search is a convergent search already: its repetitions are the
        # rule's minimum, not more chasing of the search's own resolution; a paced run's
        # throughput is its pacing, so there is no CI of it to chase either.
        self._fixed = {c.key for c in cases if c.traffic.mode == "capacity" or c.traffic.service_demand}
        work = [(c, first) for c, first in pending(cases, self.runs, done or {})
                if self._wants_more(c.key, first)]
        total = sum(self.runs - first for _, first in work)
        with self._progress() as progress:
            task = progress.add_task("starting", total=total)
            for (scenario, mtu, params), group in by_topology(work):
                progress.update(task, description=f"building {group[0][0].scenario_label} mtu {mtu}")
                saturated = [(c, first) for c, first in group if not c.traffic.service_demand]
                with self._build(scenario, mtu, params, steer_rx_softirq=self.settings.steer_rx_softirq) as topo:
                    if any(case.traffic.protocol == "udp" for case, _ in group):
                        self._raise_socket_limits(topo)
                    self._record_stack(topo, f"{group[0][0].scenario_label} · MTU {mtu}")
                    receiver = topo.receiver
                    with IperfServer(receiver.host, receiver.address, receiver.core, topo.iperf3_port) as server:
                        self._run_group(topo, server, saturated, progress, task)
                        # paced after every saturated sibling is measured: their rates set the pace
                        paced = self._paced([w for w in group if w not in saturated], cases)
                        self._run_group(topo, server, paced, progress, task)
        self.stats.refused_offload_changes = list(self._control.refused)
        self.stats.malformed_ethtool_lines = self._control.malformed_lines
        return self.stats

    def _raise_socket_limits(self, topo: Topology) -> None:
        """Let UDP tests have a tuned test's socket buffers (sockbuf.py); a limit that
        stays low is said once per build (each sample records what was granted)."""
        endpoints = {id(e.host): e.host for e in (topo.sender, topo.receiver)}
        for note in sockbuf.raise_limits(endpoints.values()):
            self.console.print(f"[yellow]socket buffer limit[/]: {note}")

    def _paced(self, work: list[tuple[CaseSpec, int]], cases: list[CaseSpec]) -> list[tuple[CaseSpec, int]]:
        """Service-demand cases with their rate: the fraction asked of the slowest mean
        throughput among the saturated cases of the same topology and workload. A case
        none of whose siblings was measured cannot be paced and is left out, said once."""
        out = []
        for case, first in work:
            twins = [c for c in cases if c.traffic.service_demand is None and saturated_twin(c, case)]
            means = [sum(v) / len(v) for v in (self._values.get(c.key) for c in twins) if v]
            if not means:
                self.console.print(f"[yellow]not paced[/]: {case.key} has no saturated sibling measured")
                continue
            rate = case.traffic.service_demand * min(means)
            out.append((dataclasses.replace(case, traffic=dataclasses.replace(case.traffic, rate_bps=rate)), first))
        return out

    def _record_stack(self, topo: Topology, place: str) -> None:
        """Each host's network stack as this topology runs on it, stored with the run."""
        devices = path_devices(topo)
        for name, host in topo.counter_hosts().items():
            self.sink.record_stack(self.run_id, place, name, stackconfig.read(host, devices.get(name, ())))

    def _wants_more(self, key: str, done: int) -> bool:
        if self.adaptive is None:
            return done < self.runs
        if key in self._fixed:
            return done < self.adaptive.min_runs
        return self.adaptive.wants_more(self._values.get(key, ()))

    def _run_group(self, topo: Topology, server: IperfServer, group: list[tuple[CaseSpec, int]],
                   progress: Progress, task: TaskID) -> None:
        """Repetitions interleaved round-robin over the group's cases, so slow drift of
        the machine (other load, thermal state) spreads over every profile alike
        instead of favouring whichever case happened to run first."""
        next_rep = {case.key: first for case, first in group}
        active = [case for case, _ in group]
        applied: str | None = None
        while active:
            for case in list(active):
                repetition = next_rep[case.key]
                if applied != case.key:
                    state, datapath, napi = self._apply(topo, case)
                    applied = case.key
                progress.update(task, description=f"{case.key} #{repetition + 1}/{self.runs}")
                sample = self._sample(topo, server, case, repetition, state, datapath, napi)
                self.sink.add_sample(self.run_id, case, sample)
                self._values.setdefault(case.key, []).append(sample.throughput_bps)
                next_rep[case.key] += 1
                self.stats.samples += 1
                progress.advance(task)
                if not self._wants_more(case.key, next_rep[case.key]):
                    active.remove(case)
                    progress.advance(task, self.runs - next_rep[case.key])  # runs not needed
                    self._record_outcome(case.key)

    def _record_outcome(self, key: str) -> None:
        if self.adaptive is None or key in self._fixed:
            return
        outcome = self.adaptive.outcome(key, self._values[key])
        self.sink.record_adaptive(self.run_id, outcome)
        self.stats.adaptive.append(outcome)

    def _apply(self, topo: Topology, case: CaseSpec) -> tuple[dict, dict, dict[int, int]]:
        """Put the case's datapath, then its offload profile, in force (the datapath may
        recreate the devices ethtool then sets); the states read back and the NAPI
        threads pinned for it."""
        napi_before = topo.napi_snapshot()
        datapath = topo.apply_datapath(case.datapath)
        state = self._control.apply(case.profile, topo.offload_interfaces())
        napi = topo.pin_napi_threads(napi_before)
        self.stats.napi_threads_pinned = len(napi)
        return state, datapath, napi

    def _sample(self, topo: Topology, server: IperfServer, case: CaseSpec, repetition: int,
                state: Mapping[str, Mapping[str, FeatureState]],
                datapath: Mapping[str, Mapping[str, FeatureState]], napi: Mapping[int, int]) -> Sample:
        """One repetition, with the kernel counters of every host that grew while it ran
        (warm-up included: a drop is a drop whenever it happened)."""
        hosts, nics = topo.counter_hosts(), path_devices(topo)
        for attempt in range(1, ATTEMPTS + 1):
            server.ensure_running()
            before = counters.snapshot_many(hosts, nics)
            context = Context(server.port, server.pid, napi, self._own_cgroup)
            try:
                sample = self._measure(topo, case, repetition, state, datapath, context)
            except IperfError as failure:
                if attempt == ATTEMPTS:
                    raise
                self.stats.retries += 1
                self.console.print(f"[yellow]retrying[/] ({attempt}/{ATTEMPTS - 1}): {failure}")
                server.close()  # a fresh server for the next attempt
                continue
            grown = counters.delta(before, counters.snapshot_many(hosts, nics))
            grown.update(counters.segment_shares(grown, topo.sender.host.name))
            grown.update(topo.datapath_counters())
            return dataclasses.replace(sample, counters={**sample.counters, **grown})
        raise AssertionError("unreachable")

    def _progress(self) -> Progress:
        return Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            console=self.console, disable=not self.show_progress, transient=False,
        )
