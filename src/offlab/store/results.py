"""What the store gives back: a run's summary and everything stored for a run."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping

from ..analysis.adaptive import AdaptiveOutcome
from ..records import CaseSpec, RunInfo, Sample

if TYPE_CHECKING:  # stats is a reading command's import only where it computes (list does not)
    from ..analysis.stats import Moments


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


@dataclass(frozen=True)
class CaseMoments:
    """A case's figures as the database aggregates them over its samples (a history's
    need): throughput in Gbit/s over every sample, and the headline CPU per Gbit/s
    (headline.py) over the samples whose CPU can be used."""

    throughput: Moments
    cpu_per_gbps: Moments | None
    """None where no sample's CPU can be used or one of them has no headline figure
    (report/model.py shows none then either)."""
    complete: bool
    """Every sample has its headline stored (revision 0005 on); False: some were stored
    before, and only their rows give the case's CPU figure."""


@dataclass(frozen=True)
class RunAggregates:
    """A run as a history reads it from the database's aggregates: its environment, the
    cases asked for (plan order) and each measured one's moments."""

    info: RunInfo
    cases: tuple[CaseSpec, ...]
    moments: Mapping[str, CaseMoments]
    """case key → its moments; cases with no sample have none."""

    @property
    def sufficient(self) -> bool:
        """Whether the moments give every figure a history prints, as the samples would:
        not for samples stored before their headline was, a capacity case (its rate is
        the mean of the verified runs only, capacity.py), or a throughput interval that
        must be taken over the logs (stats.Moments.needs_values)."""
        capacity = any(c.traffic.mode == "capacity" for c in self.cases if c.key in self.moments)
        return not capacity and all(m.complete and not m.throughput.needs_values for m in self.moments.values())
