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
from typing import Iterable, Mapping

from .records import RunInfo
from .report.model import ProfileRow, build_groups, build_rows
from .stats import RelativeChange, relative_change
from .store import RunResults

NIC_FACTS = ("nic driver", "nic version", "nic firmware-version")
"""Per-host facts (hosts/facts.py, `ethtool -i`) whose change a history names."""


@dataclass(frozen=True)
class HistoryPoint:
    run: RunInfo
    row: ProfileRow
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


def _rows_with_effects(results: RunResults) -> Mapping[str, tuple[ProfileRow, RelativeChange | None]]:
    rows = build_rows(results)
    found = {key: (row, None) for key, row in rows.items()}
    for group in build_groups(results, rows):
        for row in group.rows:
            found[row.case.key] = (row, row.vs_baseline_throughput)
    return found


def build_history(runs: Iterable[RunResults], pattern: str) -> list[CaseHistory]:
    """Every case matching `pattern`, in the order first measured, with one point per
    run that has samples of it, oldest run first."""
    ordered = sorted(runs, key=lambda r: (r.info.started_at, r.info.run_id))
    points: dict[str, list[HistoryPoint]] = {}
    for results in ordered:
        for key, (row, effect) in _rows_with_effects(results).items():
            if not matches(pattern, key):
                continue
            previous = points.setdefault(key, [])[-1:]
            if previous:
                last = previous[0]
                change = relative_change(row.throughput.values, last.row.throughput.values)
                cpu = (relative_change(row.cpu_per_gbps.values, last.row.cpu_per_gbps.values)
                       if row.cpu_per_gbps is not None and last.row.cpu_per_gbps is not None else None)
                changed = what_changed(last.run, results.info)
            else:
                change, cpu, changed = None, None, ()
            points[key].append(HistoryPoint(results.info, row, effect, change, changed, cpu))
    return [CaseHistory(key, tuple(found)) for key, found in points.items()]
