"""What the store gives back: a run's summary and everything stored for a run."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

from ..adaptive import AdaptiveOutcome
from ..records import CaseSpec, RunInfo, Sample


@dataclass(frozen=True)
class RunSummary:
    id: str
    plan: str
    started: float
    status: str
    cases: int
    samples: int


@dataclass(frozen=True)
class RunOutline:
    """What identifies a stored run short of its figures."""

    info: RunInfo
    status: str
    case_keys: tuple[str, ...]
    samples: int
    throughput_total: float
    """Every sample's throughput summed: two runs with other figures differ here."""

    @classmethod
    def of(cls, results: "RunResults") -> "RunOutline":
        samples = [s for v in results.samples.values() for s in v]
        return cls(results.info, results.status, tuple(c.key for c in results.cases), len(samples),
                   math.fsum(s.throughput_bps for s in samples))

    def same_as(self, other: "RunOutline") -> bool:
        """Equal, the totals to rounding (the database sums in its own order)."""
        return (self.info, self.status, self.case_keys, self.samples) == (
            other.info, other.status, other.case_keys, other.samples) and math.isclose(
            self.throughput_total, other.throughput_total, rel_tol=1e-12)


@dataclass(frozen=True)
class RunResults:
    """Everything stored for one run, ready for statistics and reports."""

    info: RunInfo
    status: str
    cases: tuple[CaseSpec, ...]
    """In plan order (the order the runner first added them)."""
    samples: Mapping[str, tuple[Sample, ...]]
    """case key → samples in repetition order; every case has an entry."""
    finished_at: float | None = None
    adaptive: Mapping[str, AdaptiveOutcome] = field(default_factory=dict)
    """case key → how its adaptive repetitions ended (empty for fixed-count runs)."""
    campaign: tuple[str, str] | None = None
    """(campaign id, pair name) when the run is one pair's part of a campaign."""
    stack: Mapping[str, Mapping[str, Mapping[str, str]]] = field(default_factory=dict)
    """place ("bare · MTU 1500") → host → stack setting → value (stackconfig.py)."""
