"""The middlebox plan in seed 003's shape: one row per checksum/TSO/GRO combination on
the router, one column per path, cells "mean ± CI95"; and the pathologies — a profile
that collapses a path (below a tenth of that path's best profile) and the drop, error
and checksum counters that grew while it ran. Pure: rows in, tables out."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Mapping, Sequence

from ..adaptive import AdaptiveOutcome
from ..counters import is_pathology
from ..matrix import DIMENSIONS, SHORT, Path, combo_of, path_of
from ..records import TrafficSpec
from ..stats import Summary
from .model import ProfileRow
from .tables import Table, decimals_for

COLLAPSE_FRACTION = 0.10
"""A profile whose mean is below this share of the path's best profile has collapsed it."""
NOT_REACHED = "†"
COLLAPSED = "⚠"
TOP_COUNTERS = 4
"""Pathology counters named per flagged cell, largest first."""

INTRO = (
    "A ⇄ R ⇄ B, R routing in its kernel (three namespaces, two veth pairs); the "
    "offload combination is applied to R's two interfaces, A and B keep all offloads on. "
    "Cells are the receiver's goodput, mean ± 95% CI (Student t) over the runs, as in "
    "seed 003; Y = feature on, N = off. "
    f"{COLLAPSED} marks a profile below {COLLAPSE_FRACTION:.0%} of the path's best "
    f"(collapsed); {NOT_REACHED} a case whose adaptive CI target was not reached. "
    "Turning checksumming off also turns TSO off on the same interface (a kernel "
    "dependency: tx-tcp-segmentation goes off although ethtool still prints "
    "tcp-segmentation-offload: on), so rows chk N · tso Y measure TSO off; the "
    "read-back is in the appendix. "
    "Forwarding runs in softirq on the sender's core (the role \"forwarder\" in the CPU "
    "tables)."
)


@dataclass(frozen=True)
class Cell:
    row: ProfileRow
    path: Path
    combo: Mapping[str, bool]


@dataclass(frozen=True)
class MiddleboxTable:
    mtu: int
    traffic: TrafficSpec
    dimensions: tuple[str, ...]
    paths: tuple[Path, ...]
    combos: tuple[tuple[bool, ...], ...]
    cells: Mapping[tuple[tuple[bool, ...], str], Cell]
    """(combo states, path name) → cell."""

    @property
    def title(self) -> str:
        return f"Middlebox · MTU {self.mtu} · {self.traffic.label}"

    def best(self, path: Path) -> float:
        return max((c.row.throughput.mean for (_, p), c in self.cells.items() if p == path.name),
                   default=0.0)

    def collapsed(self, cell: Cell) -> bool:
        best = self.best(cell.path)
        return best > 0 and cell.row.throughput.mean < COLLAPSE_FRACTION * best


def middlebox_tables(rows: Sequence[ProfileRow]) -> list[MiddleboxTable]:
    """One table per MTU × workload, paths and combinations in plan order."""
    buckets: dict[tuple[int, str], list[Cell]] = {}
    for row in rows:
        path, combo = path_of(row.case.scenario), combo_of(row.case.profile)
        if path is None or combo is None:
            continue
        buckets.setdefault((row.case.mtu, row.case.traffic.label), []).append(Cell(row, path, combo))
    tables = []
    for cells in buckets.values():
        dims = tuple(cells[0].combo)
        paths = tuple(dict.fromkeys(c.path for c in cells))
        combos = tuple(dict.fromkeys(tuple(c.combo[d] for d in dims) for c in cells))
        by_key = {(tuple(c.combo[d] for d in dims), c.path.name): c for c in cells}
        first = cells[0].row.case
        tables.append(MiddleboxTable(first.mtu, first.traffic, dims, paths, combos, by_key))
    return tables


def unit(table: MiddleboxTable) -> tuple[str, float]:
    """Gbit/s, or Mbit/s (the seed's unit) when every cell is below 1 Gbit/s."""
    peak = max(c.row.throughput.mean for c in table.cells.values())
    return ("Gbit/s", 1.0) if peak >= 1.0 else ("Mbit/s", 1000.0)


def mean_ci(stat: Summary, scale: float) -> str:
    """"322 ± 13.1" like the seed; the mean alone from a single run."""
    mean = stat.mean * scale
    d = decimals_for(mean)
    if stat.ci95 is None:
        return f"{mean:.{d}f}"
    half = stat.ci95 * scale
    return f"{mean:.{d}f} ± {half:.{decimals_for(half)}f}"


def seed_table(table: MiddleboxTable, adaptive: Mapping[str, AdaptiveOutcome]) -> Table:
    name, scale = unit(table)
    header = (*(SHORT[d] for d in table.dimensions), *(f"{p.label} ({name})" for p in table.paths))
    rows = []
    for combo in table.combos:
        cells = []
        for path in table.paths:
            cell = table.cells.get((combo, path.name))
            if cell is None:
                cells.append("–")
                continue
            text = mean_ci(cell.row.throughput, scale)
            if table.collapsed(cell):
                text += f" {COLLAPSED}"
            outcome = adaptive.get(cell.row.case.key)
            if outcome is not None and not outcome.reached:
                text += f" {NOT_REACHED}"
            cells.append(text)
        rows.append((*("Y" if on else "N" for on in combo), *cells))
    return Table(header=header, rows=tuple(rows), align_left=len(table.dimensions))


def grown_pathologies(samples: Sequence) -> dict[str, float]:
    """Pathology counter (role-prefixed) → mean growth per sample, largest first."""
    totals: dict[str, float] = {}
    for sample in samples:
        for name, value in sample.counters.items():
            if ":" in name and is_pathology(name.split(":", 1)[1]) and value > 0:
                totals[name] = totals.get(name, 0.0) + value
    means = {name: total / len(samples) for name, total in totals.items()}
    return dict(sorted(means.items(), key=lambda item: -item[1]))


def pathology_table(table: MiddleboxTable) -> Table | None:
    """Cells that collapsed or whose drop/error/checksum counters grew; None if none."""
    name, scale = unit(table)
    rows = []
    for (combo, _), cell in table.cells.items():
        grown = grown_pathologies(cell.row.samples)
        collapsed = table.collapsed(cell)
        if not grown and not collapsed:
            continue
        best = table.best(cell.path)
        share = f"{cell.row.throughput.mean / best:.0%}" if best > 0 else "–"
        loss = cell.row.loss_percent
        counters = ", ".join(f"{k} {v:.3g}" for k, v in list(grown.items())[:TOP_COUNTERS])
        rows.append((
            cell.path.label,
            " ".join(f"{SHORT[d]}{'Y' if on else 'N'}" for d, on in zip(table.dimensions, combo)),
            "collapsed" if collapsed else "counters only",
            mean_ci(cell.row.throughput, scale),
            share,
            "–" if loss is None else f"{loss.mean:.2f}",
            counters or "none",
        ))
    if not rows:
        return None
    header = ("path", "profile", "flag", f"throughput ({name})", "of path's best",
              "UDP loss %", "pathology counters grown, mean per sample")
    return Table(header=header, rows=tuple(rows), align_left=3)


def counter_summary(table: MiddleboxTable) -> str:
    """One sentence: how much of the table saw any pathology counter grow."""
    flagged = sum(1 for c in table.cells.values() if grown_pathologies(c.row.samples))
    collapsed = sum(1 for c in table.cells.values() if table.collapsed(c))
    runs = statistics.fmean(c.row.n for c in table.cells.values())
    return (f"{len(table.cells)} cells, {runs:.3g} runs each on average; {collapsed} collapsed; "
            f"{flagged} with a drop, error, retransmit or checksum counter that grew.")


def dimension_features() -> str:
    return "; ".join(f"{SHORT[d]} = {', '.join(fs)}" for d, fs in DIMENSIONS.items())


Section = tuple[str, str, tuple[tuple[str, Table], ...]]
"""(title, introduction, captioned tables): what `report.views.View` is built from."""


def middlebox_sections(rows: Sequence[ProfileRow],
                       adaptive: Mapping[str, AdaptiveOutcome]) -> list[Section]:
    sections = []
    for table in middlebox_tables(rows):
        tables = [(f"{table.title}: throughput by router offloads and path", seed_table(table, adaptive))]
        flagged = pathology_table(table)
        if flagged is not None:
            tables.append((f"{table.title}: pathologies ({counter_summary(table)})", flagged))
        intro = f"{INTRO} Features per letter: {dimension_features()}."
        sections.append((f"{table.title} (seed 003 shape)", intro, tuple(tables)))
    return sections
