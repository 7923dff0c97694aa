"""The `userspace` plan's view, in seed 004's form: per scenario, the GRO and the GSO
study as mode | throughput ± 95% CI | ratio against "none" with its CI | CPU % per Gbps
| ratio against the kernel's mode, and the issue's goals as measured ratios.

Ratios are mean(new) / mean(reference) with a Fieller 95% CI (stats.relative_change,
which agrees with Welch's test). Pure: rows in, tables out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ...report.model import ProfileRow
from ...report.tables import Table, decimals_for, mean_std
from ...stats import RelativeChange, relative_change
from .plan import DIRECT, GRO_NONE, PROFILES

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
class Goal:
    text: str
    new: str
    reference: str
    target: float
    """Lowest ratio new/reference that meets the goal."""
    strict: bool = False
    """True: the ratio must exceed `target` ("ahead of"), not just reach it."""


GOALS = (
    Goal("engine GRO ≥ 2 × none", "engine-gro", GRO_NONE, 2.0),
    Goal("engine GRO ahead of kernel GRO", "engine-gro", "kernel-gro", 1.0, strict=True),
    Goal("engine GSO ≥ 1.55 × kernel GSO", "engine-gso", "kernel-gso", 1.55),
    Goal("TSO pass-through ≥ 85% of a direct veth", "tso-pass", DIRECT.offloads.name, 0.85),
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


def goal_verdict(goal: Goal, change: RelativeChange | None) -> str:
    """"met" / "missed" on the mean ratio, with "(CI straddles)" when the 95% CI
    includes the target, i.e. the verdict could flip on a rerun."""
    if change is None:
        return "not measured"
    ratio = 1.0 + change.ratio
    met = ratio > goal.target if goal.strict else ratio >= goal.target
    verdict = "met" if met else "missed"
    if change.ci95 is not None and 1.0 + change.ci95[0] <= goal.target <= 1.0 + change.ci95[1]:
        verdict += " (CI straddles the target)"
    return verdict


def goals_table(by_scenario: dict[str, dict[str, ProfileRow]]) -> Table:
    header = ("Scenario", "Goal", "Ratio [95% CI]", "Target", "Verdict")
    body = []
    for scenario, rows in by_scenario.items():
        for goal in GOALS:
            change = _ratio(rows.get(goal.new), rows.get(goal.reference))
            target = f"> {goal.target:g}" if goal.strict else f"≥ {goal.target:g}"
            body.append((scenario, goal.text, ratio_text(change), target, goal_verdict(goal, change)))
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
    tables: list[tuple[str, Table]] = [("Goals of issue 5, measured side by side", goals_table(by_scenario)),
                                       ("Reference: the same namespaces joined by a veth pair",
                                        reference_table(by_scenario))]
    for name, found in by_scenario.items():
        tables.append((f"{name}: GRO (MTU frames into the receiving VM)",
                       study_table(found, GRO_MODES, "kernel-gro")))
        tables.append((f"{name}: GSO (the sending VM's super-packets)",
                       study_table(found, GSO_MODES, "kernel-gso")))
    return [("Userspace datapath (offlab-fwd, seed 004 shape)", INTRO, tuple(tables))]
