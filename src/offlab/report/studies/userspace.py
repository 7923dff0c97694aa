"""The `userspace` plan's view, in seed 004's form: per scenario, the GRO and the GSO
study as mode | throughput ± 95% CI | ratio against "none" with its CI | CPU % per Gbps
| ratio against the kernel's mode, and the issue's goals as measured ratios.

Ratios are mean(new) / mean(reference) with a Fieller 95% CI (stats.relative_change,
which agrees with Welch's test). Pure: rows in, tables out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ..model import ProfileRow
from ..cells import Table, decimals_for, mean_std
from ..section import Section
from ...analysis.stats import RelativeChange, relative_change
from ...studies.userspace.plan import DIRECT, GRO_NONE, PROFILES

INTRO = (
    "Seed 004 on offlab-fwd: nsA sends one TCP stream to nsB through the forwarder. "
    "Throughput is the receiver's goodput, mean ± 95% CI (Student t) over the runs; ratios "
    "are mean over mean with a 95% CI by Fieller's theorem. CPU % per Gbps is the busy "
    "time of both cores over the throughput. GRO “none” is the kernel-gso profile (MTU "
    "frames forwarded as they are). docs/methodology.md maps each mode to its settings."
)


@dataclass(frozen=True)
class Mode:
    label: str
    profile: str


GSO_MODES = (Mode("none", "none"), Mode("kernel GSO", "kernel-gso"),
             Mode("engine GSO", "engine-gso"), Mode("TSO pass-through", "tso-pass"))
GRO_MODES = (Mode("none", GRO_NONE), Mode("kernel GRO", "kernel-gro"),
             Mode("engine GRO", "engine-gro"))


@dataclass(frozen=True)
class Finding:
    """A comparison the seed-004 study is about: `new` over `reference`."""

    text: str
    new: str
    reference: str


FINDINGS = (
    Finding("engine GRO over no GRO", "engine-gro", GRO_NONE),
    Finding("engine GRO over the kernel's GRO", "engine-gro", "kernel-gro"),
    Finding("engine GSO over the kernel's GSO", "engine-gso", "kernel-gso"),
    Finding("TSO pass-through over a direct veth pair", "tso-pass", DIRECT.offloads.name),
)


def ratio_text(change: RelativeChange | None) -> str:
    """"×2.05 [1.91, 2.20]"; "×2.05" when one run gives no interval."""
    if change is None:
        return "—"
    ratio = 1.0 + change.ratio
    if change.ci95 is None:
        return f"×{ratio:.2f} (CI n/a)"
    low, high = (1.0 + c for c in change.ci95)
    return f"×{ratio:.2f} [{low:.2f}, {high:.2f}]"


def mean_ci(row: ProfileRow) -> str:
    stat = row.throughput
    d = decimals_for(stat.mean)
    if stat.ci95 is None:
        return f"{stat.mean:.{d}f}"
    return f"{stat.mean:.{d}f} ± {stat.ci95:.{d}f}"


def _ratio(new: ProfileRow | None, ref: ProfileRow | None, cpu: bool = False) -> RelativeChange | None:
    if new is None or ref is None:
        return None
    if cpu:
        if new.cpu_per_gbps is None or ref.cpu_per_gbps is None:
            return None
        return relative_change(new.cpu_per_gbps.values, ref.cpu_per_gbps.values)
    return relative_change(new.throughput.values, ref.throughput.values)


def study_table(rows: dict[str, ProfileRow], modes: Sequence[Mode], kernel: str) -> Table:
    header = ("Mode", "Profile", "n", "Throughput (Gbit/s) ± 95% CI", "vs none",
              "CPU % per Gbps", "CPU/Gbps vs none", "Throughput vs kernel")
    none = rows.get(modes[0].profile)
    body = []
    for mode in modes:
        row = rows.get(mode.profile)
        if row is None:
            body.append((mode.label, mode.profile, "0", "not measured", "—", "—", "—", "—"))
            continue
        body.append((
            mode.label, mode.profile, str(row.n), mean_ci(row),
            "—" if mode.profile == modes[0].profile else ratio_text(_ratio(row, none)),
            mean_std(row.cpu_per_gbps),
            "—" if mode.profile == modes[0].profile else ratio_text(_ratio(row, none, cpu=True)),
            "—" if mode.profile == kernel else ratio_text(_ratio(row, rows.get(kernel))),
        ))
    return Table(header, tuple(body), align_left=2)


def findings_table(by_scenario: dict[str, dict[str, ProfileRow]]) -> Table:
    """Throughput ratios with their 95 % CI and whether the difference is significant
    (the project's own speed targets are in docs/benchmarks.md, not in a user's report)."""
    header = ("Scenario", "Comparison", "Throughput ratio [95% CI]", "Significant")
    body = []
    for scenario, rows in by_scenario.items():
        for finding in FINDINGS:
            change = _ratio(rows.get(finding.new), rows.get(finding.reference))
            significant = "—" if change is None else ("yes (Welch p < 0.05)" if change.significant else "no")
            body.append((scenario, finding.text, ratio_text(change), significant))
    return Table(header, tuple(body), align_left=2)


def reference_table(by_scenario: dict[str, dict[str, ProfileRow]]) -> Table:
    header = ("Scenario", "Direct veth (Gbit/s) ± 95% CI", "CPU % per Gbps")
    body = []
    for scenario, rows in by_scenario.items():
        row = rows.get(DIRECT.offloads.name)
        body.append((scenario, mean_ci(row) if row else "not measured",
                     mean_std(row.cpu_per_gbps) if row else "—"))
    return Table(header, tuple(body), align_left=1)


def is_userspace_row(row: ProfileRow) -> bool:
    """A case of one of the plan's own datapath profiles (by its recorded setting)."""
    known = PROFILES.get(row.profile.name)
    return known is not None and row.case.datapath == known.datapath


def userspace_sections(rows: Sequence[ProfileRow]) -> list[tuple[str, str, tuple[tuple[str, Table], ...]]]:
    """(title, introduction, captioned tables) of the userspace view; empty when the
    run measured no userspace datapath profile."""
    by_scenario: dict[str, dict[str, ProfileRow]] = {}
    for row in rows:
        if is_userspace_row(row):
            name = f"{row.case.scenario} · MTU {row.case.mtu} · {row.case.traffic.label}"
            by_scenario.setdefault(name, {})[row.profile.name] = row
    if not by_scenario:
        return []
    tables: list[tuple[str, Table]] = [("Findings: each mode against its reference, in one run",
                                        findings_table(by_scenario)),
                                       ("Reference: the same namespaces joined by a veth pair",
                                        reference_table(by_scenario))]
    for name, found in by_scenario.items():
        tables.append((f"{name}: GRO (MTU frames into the receiving VM)",
                       study_table(found, GRO_MODES, "kernel-gro")))
        tables.append((f"{name}: GSO (the sending VM's super-packets)",
                       study_table(found, GSO_MODES, "kernel-gso")))
    return [("Userspace datapath (offlab-fwd, seed 004 shape)", INTRO, tuple(tables))]


def sections(rows: Sequence[Any], report: Any) -> list[Section]:
    """This study's views in the run report, from the report's profile rows."""
    return [Section(*parts) for parts in userspace_sections(rows)]


def charts(rows: Sequence[Any]) -> dict[str, bytes]:
    """slug → PNG of this study's views that have a chart (none)."""
    return {}
