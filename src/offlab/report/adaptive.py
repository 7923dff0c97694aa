"""The report's account of adaptive repetitions (`offlab run --ci-target`): per case,
whether the CI target was reached, after how many runs, and the CI it ended with."""

from __future__ import annotations

from typing import Mapping

from ..analysis.adaptive import AdaptiveOutcome
from .cells import Table

INTRO = (
    "Each case was repeated until the 95% CI half-width of its throughput was within the "
    "target share of the mean, between the minimum and maximum number of runs. Cases "
    "that hit the maximum first are listed as not reached: their figures are less "
    "certain than asked, and the CI column says by how much."
)


def adaptive_sections(outcomes: Mapping[str, AdaptiveOutcome]) -> list[tuple[str, str, tuple[tuple[str, Table], ...]]]:
    if not outcomes:
        return []
    missed = [o for o in outcomes.values() if not o.reached]
    first = next(iter(outcomes.values()))
    rows = tuple(
        (o.case_key, "yes" if o.reached else "no", o.sentence(), str(o.runs),
         "–" if o.half_width is None else f"±{100 * o.half_width:.1f}%")
        for o in sorted(outcomes.values(), key=lambda o: (o.reached, o.case_key))
    )
    table = Table(header=("case", "reached", "outcome", "runs", "CI half-width"), rows=rows, align_left=3)
    caption = (f"{len(outcomes) - len(missed)} of {len(outcomes)} cases reached "
               f"±{100 * first.target:g}% within {first.min_runs}–{first.max_runs} runs")
    return [(f"Adaptive repetitions (target ±{100 * first.target:g}%)", INTRO, ((caption, table),))]
