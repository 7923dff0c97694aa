"""The report's tests as one family, and the seed's summary line per group.

Every p-value a report prints — each step's effect on each advised metric, and each
group's "all on vs most off" headline — is one test of one family, and is adjusted over
all of them together (stats.adjusted_p_values, Holm): with 22 tests, one p = 0.04 is
what chance gives about once in a report, so it advises nothing. The adjusted p is
printed beside the raw one wherever an effect is quoted.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..analysis.stats import FAMILY_METHOD, RelativeChange, relative_change
from .model import CaseGroup
from .phrases import format_adjusted, format_change, format_p

ALPHA = 0.05
"""Family-wise: an adjusted p below this holds."""
_WHO = {"tx": "the transmitter", "rx": "the receiver", "both": "both sides"}


@dataclass(frozen=True)
class Headline:
    """A group's all on relative to its profile with most features off: the effect of
    having the side's offloads on, on one metric."""

    group: CaseGroup
    metric: str
    """"throughput" or "cpu" (CPU % per Gbit/s)."""
    change: RelativeChange
    adjusted_p: float | None = None
    tests: int = 1

    @property
    def holds(self) -> bool:
        return (self.change.significant and self.adjusted_p is not None
                and self.adjusted_p < ALPHA)

    def phrase(self) -> str:
        """"throughput by +60% [CI +50%, +70%] (p<0.001; Holm p<0.001 over 22 tests)"."""
        metric = "throughput" if self.metric == "throughput" else self.group.cpu_metric
        mark = "" if self.holds else ", n.s."
        return (f"{metric} by {format_change(self.change)} ({format_p(self.change.welch.p_value)}; "
                f"{format_adjusted(self.adjusted_p, self.tests, FAMILY_METHOD)}{mark})")


def headline_tests(group: CaseGroup) -> list[Headline]:
    """The group's headlines (paced groups: CPU only, their rate is the pace)."""
    widest = group.widest
    if group.baseline is None or widest is None:
        return []
    pairs = [("throughput", group.baseline.throughput, widest.throughput),
             ("cpu", group.baseline.cpu_per_gbps, widest.cpu_per_gbps)]
    out = []
    for metric, on, off in pairs[1:] if group.traffic.service_demand else pairs:
        change = relative_change(on.values, off.values) if on and off else None
        if change is not None:
            out.append(Headline(group, metric, change))
    return out


def group_headline(headlines: list[Headline]) -> str | None:
    """The seed's summary line for one group's headlines (all of the same group)."""
    if not headlines:
        return None
    group = headlines[0].group
    return (f"{group.context}: enabling the offloads of {_WHO[group.side]} (all on vs "
            f"{group.widest.profile.name}) changes " + " and ".join(h.phrase() for h in headlines))
