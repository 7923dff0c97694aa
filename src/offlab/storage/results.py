"""What the store gives back: a run's summary and everything stored for a run."""

from __future__ import annotations

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
