"""Adaptive repetitions: repeat a case until its 95 % CI is as narrow as asked.

netperf's `-I 99,5` does this per test and forgets the outcome; here it is per case,
the decision uses the same Student-t interval as every report figure (`stats.summary`),
and the outcome — reached or not, after how many runs, with what half-width — is
stored with the run and shown in the report. Pure: the runner asks, this module answers.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from .stats import summary

if TYPE_CHECKING:
    from ..records import RunSettings


class TargetError(ValueError):
    """A --ci-target / --min-runs / --max-runs combination that cannot be used."""


def parse_target(text: str) -> float:
    """"5%" (or "5") → 0.05: the wanted CI half-width as a fraction of the mean."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*%?\s*", text)
    if not match:
        raise TargetError(f"--ci-target {text!r}: give a percentage such as 5%")
    percent = float(match.group(1))
    if not 0 < percent < 100:
        raise TargetError(f"--ci-target {text!r}: must be more than 0% and less than 100%")
    return percent / 100.0


@dataclass(frozen=True)
class Adaptive:
    """Repeat until the CI half-width of throughput is within `target` × mean, but at
    least `min_runs` (a CI from 2 runs is too wide to trust) and at most `max_runs`."""

    target: float
    min_runs: int
    max_runs: int

    def __post_init__(self) -> None:
        if not 0 < self.target < 1:
            raise TargetError(f"CI target {self.target:g} must be a fraction between 0 and 1")
        if self.min_runs < 2:
            raise TargetError(f"--min-runs {self.min_runs}: a CI needs at least 2 runs")
        if self.max_runs < self.min_runs:
            raise TargetError(f"--max-runs {self.max_runs} is below --min-runs {self.min_runs}")

    def wants_more(self, values: Sequence[float]) -> bool:
        if len(values) < self.min_runs:
            return True
        if len(values) >= self.max_runs:
            return False
        return relative_half_width(values) > self.target

    def outcome(self, case_key: str, values: Sequence[float]) -> "AdaptiveOutcome":
        width = relative_half_width(values)
        return AdaptiveOutcome(
            case_key=case_key, target=self.target, min_runs=self.min_runs,
            max_runs=self.max_runs, runs=len(values),
            half_width=None if math.isinf(width) else width,
            reached=width <= self.target,
        )

    @property
    def notes(self) -> str:
        """For RunInfo.notes, so `--resume` continues with the same rule."""
        return f"ci_target={self.target:g} min_runs={self.min_runs} max_runs={self.max_runs}"


def rule_of(settings: "RunSettings") -> Adaptive | None:
    """The adaptive rule a run's settings ask for (`ci_target` set), else None; the
    minimum and maximum runs default to 3 and 20."""
    if settings.ci_target is None:
        return None
    return Adaptive(settings.ci_target, settings.min_runs or 3, settings.max_runs or 20)


def relative_half_width(values: Sequence[float]) -> float:
    """95 % CI half-width over |mean|; infinite when it cannot be computed (n < 2 or a
    zero mean), so such a case never counts as having reached a target."""
    if len(values) < 2:
        return math.inf
    s = summary(values)
    if s.ci95 is None or s.mean == 0:
        return math.inf
    return s.ci95 / abs(s.mean)


@dataclass(frozen=True)
class AdaptiveOutcome:
    """How one case's adaptive repetitions ended."""

    case_key: str
    target: float
    min_runs: int
    max_runs: int
    runs: int
    half_width: float | None
    """Relative CI half-width at the end (fraction of the mean); None if undefined."""
    reached: bool

    def sentence(self) -> str:
        """"target 5% reached after 4 runs (CI ±3.1%)" / "… not reached after 10 runs …"."""
        width = "CI undefined" if self.half_width is None else f"CI ±{100 * self.half_width:.1f}%"
        verdict = "reached" if self.reached else "not reached"
        return f"target {100 * self.target:g}% {verdict} after {self.runs} runs ({width})"
