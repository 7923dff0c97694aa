"""`offlab history PATTERN`: a case followed across every stored run — two kernels, a new
NIC firmware, another offlab, other servers — with what changed between runs beside
each figure, and the changes `compare`'s statistics call significant marked.

Per matching case and per run that measured it (oldest first): throughput, CPU % per
Gbit/s, the effect of the case's offload profile within that run (its change against
the run's all-on baseline, as the report gives it), and the change of throughput and
of CPU per Gbit/s against the previous run with its 95 % CI and Welch's test (stats.relative_change,
as in comparison.py). A significant change with nothing recorded as changed is still
marked: the cause is then outside what offlab records. Pure; rendering is in
history_report.py.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Iterable

from ..records import RunInfo
from .model import build_groups, build_rows, case_groups
from ..analysis.stats import Moments, RelativeChange, relative_change_of
from ..store.store import RunAggregates, RunResults

NIC_FACTS = ("nic driver", "nic version", "nic firmware-version")
"""Per-host facts (hosts/facts.py, `ethtool -i`) whose change a history names."""


@dataclass(frozen=True)
class HistoryPoint:
    run: RunInfo
    throughput: Moments
    """Gbit/s over the run's repetitions of the case."""
    interval: tuple[float, float] | None
    """The 95 % interval of throughput (stats.Summary.interval)."""
    cpu_per_gbps: Moments | None
    """The headline CPU % per Gbit/s (report/model.py); None where the run has none."""
    effect: RelativeChange | None
    """The profile's throughput against the run's all-on baseline (None for the baseline)."""
    change: RelativeChange | None
    """Throughput against the previous point (None for the first)."""
    changed: tuple[str, ...]
    """What differs from the previous point's run ("kernel: 6.1 → 6.12")."""
    cpu_change: RelativeChange | None = None
    """CPU % per Gbit/s against the previous point (lower is better)."""

    @property
    def significant(self) -> bool:
        """Throughput or CPU per Gbit/s changed significantly from the previous run."""
        return any(c is not None and c.significant for c in (self.change, self.cpu_change))


@dataclass(frozen=True)
class _Figures:
    """One case of one run, as a history prints it."""

    throughput: Moments
    interval: tuple[float, float] | None
    cpu_per_gbps: Moments | None
    effect: RelativeChange | None


@dataclass(frozen=True)
class CaseHistory:
    key: str
    points: tuple[HistoryPoint, ...]


def matches(pattern: str, key: str) -> bool:
    """A shell-style pattern over the case key (`bare/mtu1500/tx:*/tcp`); a pattern
    without wildcards matches keys that contain it."""
    if any(ch in pattern for ch in "*?["):
        return fnmatch.fnmatchcase(key, pattern)
    return pattern in key


def what_changed(before: RunInfo, after: RunInfo) -> tuple[str, ...]:
    """Kernel, offlab version, hosts and each host's kernel and NIC driver/firmware."""
    facts = [("kernel", before.kernel, after.kernel), ("host", before.host, after.host),
             ("offlab", before.tool_versions.get("offlab", "–"), after.tool_versions.get("offlab", "–"))]
    if before.settings is not None and after.settings is not None:
        facts.append(("hosts", before.settings.hosts, after.settings.hosts))
    for role in sorted(set(before.host_facts) | set(after.host_facts)):
        old, new = before.host_facts.get(role, {}), after.host_facts.get(role, {})
        for name in ("kernel", *NIC_FACTS):
            facts.append((f"{role} {name}", old.get(name, "–"), new.get(name, "–")))
    return tuple(f"{name}: {old} → {new}" for name, old, new in facts if old != new)


def _from_samples(results: RunResults) -> dict[str, _Figures]:
    rows = build_rows(results)
    found = {key: (row, None) for key, row in rows.items()}
    for group in build_groups(results, rows):
        for row in group.rows:
            found[row.case.key] = (row, row.vs_baseline_throughput)
    return {key: _Figures(row.throughput.moments, row.throughput.interval,
                          row.cpu_per_gbps.moments if row.cpu_per_gbps is not None else None, effect)
            for key, (row, effect) in found.items()}


def _from_aggregates(run: RunAggregates) -> dict[str, _Figures]:
    """The same figures from the database's moments (store.py gives a run this way only
    where they suffice, RunAggregates.sufficient): each case's effect against its group's
    baseline is computed from the two cases' moments, as report/model.py does from values."""
    found: dict[str, _Figures] = {}
    for _, baseline, members in case_groups([c for c in run.cases if c.key in run.moments]):
        for case in members:
            own = run.moments[case.key]
            effect = None
            if baseline is not None and case is not baseline:
                effect = relative_change_of(run.moments[baseline.key].throughput, own.throughput)
            found[case.key] = _Figures(own.throughput, own.throughput.interval, own.cpu_per_gbps, effect)
    return found


def build_history(runs: Iterable[RunResults | RunAggregates], pattern: str) -> list[CaseHistory]:
    """Every case matching `pattern`, in the order first measured, with one point per
    run that has samples of it, oldest run first."""
    ordered = sorted(runs, key=lambda r: (r.info.started_at, r.info.run_id))
    points: dict[str, list[HistoryPoint]] = {}
    for results in ordered:
        figures = _from_aggregates(results) if isinstance(results, RunAggregates) else _from_samples(results)
        for key, now in figures.items():
            if not matches(pattern, key):
                continue
            previous = points.setdefault(key, [])[-1:]
            if previous:
                last = previous[0]
                change = relative_change_of(now.throughput, last.throughput)
                cpu = (relative_change_of(now.cpu_per_gbps, last.cpu_per_gbps)
                       if now.cpu_per_gbps is not None and last.cpu_per_gbps is not None else None)
                changed = what_changed(last.run, results.info)
            else:
                change, cpu, changed = None, None, ()
            points[key].append(HistoryPoint(results.info, now.throughput, now.interval, now.cpu_per_gbps,
                                            now.effect, change, changed, cpu))
    return [CaseHistory(key, tuple(found)) for key, found in points.items()]
