"""How numbers are phrased in recommendations and tables: "+56% [CI +52%, +60%]",
"p=0.003".

One meaning of a bare "±" in the whole report: a standard deviation over runs (the
seeds' "mean±std" cells). An effect's interval is always written as its two ends in
brackets, never as "± half-width"; the few tables that give a mean ± its CI half-width
(seed-shaped study tables) say "95% CI" in their header or introduction.
"""

from __future__ import annotations

from ..analysis.stats import METHOD_NAMES, RelativeChange


def format_change(change: RelativeChange) -> str:
    """"+56% [CI +52%, +60%]": the estimate and the ends of its 95 % CI (Fieller
    intervals stretch away from zero when the reference is noisy, so the two ends are
    given, not a half-width)."""
    text = _pct(change.ratio, signed=True)
    if change.ci95 is None:
        return text + " (CI n/a)"
    low, high = change.ci95
    return text + f" [CI {_pct(low, signed=True)}, {_pct(high, signed=True)}]"


def _pct(fraction: float, signed: bool) -> str:
    value = fraction * 100.0
    digits = 0 if abs(value) >= 10 else 1
    text = f"{abs(value):.{digits}f}%"
    if not signed:
        return text
    return ("−" if value < 0 else "+") + text


def format_p(p: float | None) -> str:
    if p is None:
        return "p n/a"
    if p < 0.001:
        return "p<0.001"
    return f"p={p:.3f}" if p < 0.01 else f"p={p:.2f}"


def format_adjusted(p: float | None, tests: int, method: str) -> str:
    """"Holm p=0.004 over 22 tests": a p-value adjusted for the report's family."""
    name = METHOD_NAMES[method]
    if p is None:
        return f"{name}: n/a"
    return f"{name} {format_p(p)} over {tests} tests"


def format_signed(fraction: float) -> str:
    """"+56%", "−35.5%"."""
    return _pct(fraction, signed=True)
