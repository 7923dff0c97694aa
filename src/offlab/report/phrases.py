"""How numbers are phrased in recommendations and tables: "+56% ± 4%", "p=0.003"."""

from __future__ import annotations

from ..stats import RelativeChange


def format_change(change: RelativeChange) -> str:
    """"+56% ± 4%" when the CI is near-symmetric, else "+137% [CI +12%, +310%]"
    (Fieller intervals stretch away from zero when the reference is noisy)."""
    text = _pct(change.ratio, signed=True)
    if change.ci95 is None:
        return text + " (CI n/a)"
    low, high = change.ci95
    below, above = change.ratio - low, high - change.ratio
    if min(below, above) >= 0.75 * max(below, above):
        return text + f" ± {_pct(max(below, above), signed=False)}"
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
