"""A report table and its number cells: the pieces every table of every page uses
(the run report's, a comparison's, a history's, each study's), kept below the case
tables so that a module drawing one table loads none of the others."""

from __future__ import annotations

from dataclasses import dataclass

from ..analysis.stats import Summary


@dataclass(frozen=True)
class Table:
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    align_left: int = 1
    """How many leading columns are text (left-aligned); the rest are numbers."""


def decimals_for(value: float) -> int:
    magnitude = abs(value)
    return 0 if magnitude >= 100 else 1 if magnitude >= 10 else 2


def mean_std(stat: Summary | None, scale: float = 1.0, decimals: int | None = None) -> str:
    """"x.x±y.y" (the seeds' cells); just the mean when one run gives no spread."""
    if stat is None:
        return "–"
    mean = stat.mean * scale
    d = decimals_for(mean) if decimals is None else decimals
    if stat.std is None:
        return f"{mean:.{d}f}"
    return f"{mean:.{d}f}±{stat.std * scale:.{d}f}"
