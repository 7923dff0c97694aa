"""Whether a profile's figure is as precise as the run asked for (`offlab run
--ci-target`): a case whose repetitions stopped at the maximum before their 95 % CI was
narrow enough is shown, labelled, and used for no advice and no claim verdict — its
effect could be the noise the target was meant to rule out."""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from ..analysis.adaptive import AdaptiveOutcome
from .effects import Step
from .validity import IMPRECISE, Exclusion

if TYPE_CHECKING:
    from .model import ProfileRow


def missed(row: "ProfileRow", adaptive: Mapping[str, AdaptiveOutcome]) -> AdaptiveOutcome | None:
    """The row's adaptive outcome when it did not reach its target, else None."""
    outcome = adaptive.get(row.case.key)
    return outcome if outcome is not None and not outcome.reached else None


def label(outcome: AdaptiveOutcome) -> str:
    """"precision target missed: CI ±14.2% after 6 runs, target ±10%"."""
    width = "undefined" if outcome.half_width is None else f"±{100 * outcome.half_width:.1f}%"
    return (f"precision target missed: CI {width} after {outcome.runs} runs, "
            f"target ±{100 * outcome.target:g}%")


def imprecise(step: "Step", adaptive: Mapping[str, AdaptiveOutcome]) -> Exclusion | None:
    """Why a step's difference is held back for precision; None when both rows met their
    target (or the run set none)."""
    for row in (step.on_row, step.off_row):
        outcome = missed(row, adaptive)
        if outcome is not None:
            return Exclusion(
                "precision target missed",
                f"{row.profile.name}'s throughput CI was still {label(outcome).split(': ', 1)[1]}: "
                "the difference is shown but advises nothing; rerun with a larger --max-runs "
                "or longer runs", kind=IMPRECISE)
    return None
