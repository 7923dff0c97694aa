"""The middlebox plan in seed 003's shape: one row per router and checksum/TSO/GRO
combination on it, one column per path, cells "mean ± CI95"; and the pathologies — a
profile that collapses a path (below a tenth of that path's best profile with the same
router) and the drop, error and checksum counters that grew while it ran. With both
routers measured, the kernel-vs-offlab-fwd table (routers.py) follows. Pure: rows in,
tables out."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ...analysis.adaptive import AdaptiveOutcome
from ...measure.counters import is_pathology
from ...records import TrafficSpec
from ..model import ProfileRow
from ..cells import Table, decimals_for
from ..section import Section
from ...analysis.stats import Summary, relative_change
from ...topology.middlebox import PATHS, Path
from ...studies.middlebox.forwarder import FwdSettings, fwd_settings
from ...studies.middlebox.plan import DIMENSIONS, FWD, KERNEL, SHORT, combination

COLLAPSE_FRACTION = 0.10
"""A profile whose mean is below this share of the path's best profile has collapsed it."""
DEGRADED_FRACTION = 0.50
"""Below this share, and with packets dropped on the path, a profile has degraded it."""
NOT_REACHED = "†"
COLLAPSED = "⚠"
DEGRADED = "↓"
SOCKET_OR_TCP = ("Tcp.RetransSegs", "TcpExt.TCPLostRetransmit", "Udp.InErrors",
                 "Udp.RcvbufErrors", "Udp.SndbufErrors")
"""Pathology counters that also grow under any saturating load (a socket buffer full, a
retransmit): shown, but on their own they do not make a path "degraded"."""
TOP_COUNTERS = 4
"""Pathology counters named per flagged cell, largest first."""

INTRO = (
    "A ⇄ R ⇄ B, R routing in its kernel (three namespaces, two veth pairs) or R as "
    "offlab-fwd bridging its two veth ends with AF_PACKET ports (forwarded paths only); "
    "the offload combination is applied to R's two interfaces, A and B keep all offloads on. "
    "For offlab-fwd the router column names the forwarder's mode / egress offloads the "
    "combination maps to (studies/middlebox/forwarder.py): rows with the same mode differ only by the "
    "kernel's GRO on R's veths. "
    "Cells are the receiver's goodput, mean ± 95% CI (Student t) over the runs, as in "
    "seed 003; Y = feature on, N = off. "
    f"{COLLAPSED} marks a profile below {COLLAPSE_FRACTION:.0%} of the path's best "
    f"(collapsed); {DEGRADED} one below {DEGRADED_FRACTION:.0%} while interface or IP "
    "drop, error or checksum counters grew (degraded by drops on the path); "
    f"{NOT_REACHED} a case whose adaptive CI target was not reached. "
    "Turning checksumming off also turns TSO off on the same interface (a kernel "
    "dependency: tx-tcp-segmentation goes off although ethtool still prints "
    "tcp-segmentation-offload: on), so rows chk N · tso Y measure TSO off; the "
    "read-back is in the appendix. "
    "Forwarding runs on the sender's core (the kernel's softirq, or the pinned offlab-fwd "
    "process; the role \"forwarder\" in the CPU tables)."
)
ON_HOSTS = (
    ("R routing in its kernel (three namespaces, two veth pairs)",
     "R routing in its kernel (three servers of the hosts file, R's two test interfaces)"),
    ("bridging its two veth ends with AF_PACKET ports", "bridging R's two interfaces with AF_PACKET ports"),
    ("A and B keep all offloads on", "A and B keep their offloads as configured"),
    ("kernel's GRO on R's veths", "kernel's GRO on R's interfaces"),
    ("Forwarding runs on the sender's core (the kernel's softirq, or the pinned offlab-fwd process; "
     "the role \"forwarder\" in the CPU tables).",
     "Forwarding runs on R: its softirq where R's NIC IRQs put it, or offlab-fwd pinned to R's app_core "
     "(the role \"forwarder\" on host r in the CPU tables)."),
)
"""The introduction's sentences that differ when A, R and B are real hosts."""


def intro(real_hosts: bool) -> str:
    text = INTRO
    for lab, hosts in ON_HOSTS if real_hosts else ():
        text = text.replace(lab, hosts)
    return text


@dataclass(frozen=True)
class Cell:
    row: ProfileRow
    path: Path
    combo: Mapping[str, bool]
    router: str = KERNEL


Key = tuple[str, tuple[bool, ...], str]
"""(router, combo states, path name)."""

@dataclass(frozen=True)
class MiddleboxTable:
    mtu: int
    traffic: TrafficSpec
    dimensions: tuple[str, ...]
    paths: tuple[Path, ...]
    combos: tuple[tuple[bool, ...], ...]
    cells: Mapping[Key, Cell]
    routers: tuple[str, ...] = (KERNEL,)

    @property
    def title(self) -> str:
        return f"Middlebox · MTU {self.mtu} · {self.traffic.label}"

    def best(self, path: Path, router: str = KERNEL) -> float:
        return max((c.row.throughput.mean for (r, _, p), c in self.cells.items()
                    if p == path.name and r == router), default=0.0)

    def share_of_best(self, cell: Cell) -> float | None:
        best = self.best(cell.path, cell.router)
        return cell.row.throughput.mean / best if best > 0 else None

    def verdict(self, cell: Cell) -> str | None:
        """"collapsed", "degraded" or None (see the thresholds above)."""
        share = self.share_of_best(cell)
        if share is None:
            return None
        if share < COLLAPSE_FRACTION:
            return "collapsed"
        if share < DEGRADED_FRACTION and path_drops(grown_pathologies(cell.row.samples)):
            return "degraded"
        return None


def middlebox_tables(rows: Sequence[ProfileRow]) -> list[MiddleboxTable]:
    """One table per MTU × workload; routers, paths and combinations in plan order."""
    buckets: dict[tuple[int, str], list[Cell]] = {}
    for row in rows:
        topology, combo = row.case.topology, combination(row.case.params)
        if "path" not in topology or "router" not in topology or not combo:
            continue
        cell = Cell(row, PATHS[str(topology["path"])], combo, str(topology["router"]))
        buckets.setdefault((row.case.mtu, row.case.traffic.label), []).append(cell)
    tables = []
    for cells in buckets.values():
        dims = tuple(cells[0].combo)
        paths = tuple(dict.fromkeys(c.path for c in cells))
        combos = tuple(dict.fromkeys(tuple(c.combo[d] for d in dims) for c in cells))
        routers = tuple(r for r in (KERNEL, FWD) if any(c.router == r for c in cells))
        by_key = {(c.router, tuple(c.combo[d] for d in dims), c.path.name): c for c in cells}
        first = cells[0].row.case
        tables.append(MiddleboxTable(first.mtu, first.traffic, dims, paths, combos, by_key, routers))
    return tables


def forwarder_settings(table: "MiddleboxTable", combo: tuple[bool, ...]) -> FwdSettings:
    """The forwarder a combination ran with, as its cases recorded it (derived from the
    combination when no offlab-fwd case of it was measured)."""
    recorded = next((c.row.case.datapath for (r, states, _), c in table.cells.items()
                     if r == FWD and states == combo and c.row.case.datapath is not None), None)
    if recorded is not None:
        return FwdSettings.of(recorded)
    return fwd_settings(dict(zip(table.dimensions, combo)))


def router_label(table: "MiddleboxTable", router: str, combo: tuple[bool, ...]) -> str:
    """"kernel", or "offlab-fwd gro/csum+tso4+tso6+ecn" (mode / egress offloads)."""
    if router == KERNEL:
        return KERNEL
    return f"{FWD} {forwarder_settings(table, combo).label.replace(', ', '/')}"


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
    """The seed's table; a leading router column when offlab-fwd was measured."""
    name, scale = unit(table)
    with_router = table.routers != (KERNEL,)
    header = (*(("router",) if with_router else ()), *(SHORT[d] for d in table.dimensions),
              *(f"{p.label} ({name})" for p in table.paths))
    rows = []
    for router in table.routers:
        for combo in table.combos:
            cells = [_seed_cell(table.cells.get((router, combo, p.name)), table, adaptive, scale)
                     for p in table.paths]
            lead = (router_label(table, router, combo),) if with_router else ()
            rows.append((*lead, *("Y" if on else "N" for on in combo), *cells))
    return Table(header=header, rows=tuple(rows), align_left=len(table.dimensions) + with_router)


def _seed_cell(cell: Cell | None, table: MiddleboxTable,
               adaptive: Mapping[str, AdaptiveOutcome], scale: float) -> str:
    if cell is None:
        return "–"
    text = mean_ci(cell.row.throughput, scale)
    verdict = table.verdict(cell)
    if verdict is not None:
        text += f" {COLLAPSED if verdict == 'collapsed' else DEGRADED}"
    outcome = adaptive.get(cell.row.case.key)
    if outcome is not None and not outcome.reached:
        text += f" {NOT_REACHED}"
    return text


def grown_pathologies(samples: Sequence) -> dict[str, float]:
    """Pathology counter (role-prefixed) → mean growth per sample, largest first."""
    totals: dict[str, float] = {}
    for sample in samples:
        for name, value in sample.counters.items():
            if (is_fwd_drop(name) or ":" in name and is_pathology(name.split(":", 1)[1])) and value > 0:
                totals[name] = totals.get(name, 0.0) + value
    means = {name: total / len(samples) for name, total in totals.items()}
    return dict(sorted(means.items(), key=lambda item: -item[1]))


def is_fwd_drop(name: str) -> bool:
    """offlab-fwd's drops by reason, "fwd:a>b:drop.egress.ENOBUFS" (its total
    "…:dropped" is left out: the reasons already add up to it)."""
    return name.startswith("fwd:") and ":drop." in name


def path_drops(grown: Mapping[str, float]) -> list[str]:
    """The grown counters that say the path (an interface or IP) lost or damaged packets."""
    return [name for name in grown if name.split(":", 1)[-1] not in SOCKET_OR_TCP]


def pathology_table(table: MiddleboxTable) -> Table | None:
    """Collapsed and degraded cells with the counters that grew; None if there are none."""
    name, scale = unit(table)
    rows = []
    for (router, combo, _), cell in table.cells.items():
        verdict = table.verdict(cell)
        if verdict is None:
            continue
        grown = grown_pathologies(cell.row.samples)
        share = table.share_of_best(cell)
        loss = cell.row.loss_percent
        counters = ", ".join(f"{k} {v:.3g}" for k, v in list(grown.items())[:TOP_COUNTERS])
        rows.append((
            cell.path.label if table.routers == (KERNEL,) else f"{cell.path.label} ({router})",
            " ".join(f"{SHORT[d]}{'Y' if on else 'N'}" for d, on in zip(table.dimensions, combo)),
            verdict,
            mean_ci(cell.row.throughput, scale),
            "–" if share is None else f"{share:.0%}",
            "–" if loss is None else f"{loss.mean:.2f}",
            counters or "none",
        ))
    if not rows:
        return None
    header = ("path", "profile", "flag", f"throughput ({name})", "of path's best",
              "UDP loss %", "pathology counters grown, mean per sample")
    return Table(header=header, rows=tuple(rows), align_left=3)


def counter_summary(table: MiddleboxTable) -> str:
    """One sentence: how much of the table was flagged, and how much saw counters grow."""
    verdicts = [table.verdict(c) for c in table.cells.values()]
    grown = [grown_pathologies(c.row.samples) for c in table.cells.values()]
    runs = statistics.fmean(c.row.n for c in table.cells.values())
    return (f"{len(table.cells)} cells, {runs:.3g} runs each on average: "
            f"{verdicts.count('collapsed')} collapsed, {verdicts.count('degraded')} degraded; "
            f"{sum(1 for g in grown if path_drops(g))} with interface/IP drops or errors, "
            f"{sum(1 for g in grown if g and not path_drops(g))} with only socket-buffer or "
            "retransmit counters")


def dimension_features() -> str:
    return "; ".join(f"{SHORT[d]} = {', '.join(fs)}" for d, fs in DIMENSIONS.items())


def router_table(table: MiddleboxTable) -> Table | None:
    """Kernel router against offlab-fwd on the paths both measured: per combination and
    path the two means and offlab-fwd's change against the kernel (95 % Fieller CI,
    * = significant by Welch's test); None unless both routers are in the table."""
    paths = [p for p in table.paths
             if all(any(k[0] == r and k[2] == p.name for k in table.cells) for r in (KERNEL, FWD))]
    if not paths:
        return None
    name, scale = unit(table)
    header = (*(SHORT[d] for d in table.dimensions), "offlab-fwd mode / egress offloads",
              *(h for p in paths for h in (f"{p.label} kernel ({name})", f"{p.label} fwd ({name})",
                                           f"{p.label} fwd vs kernel")))
    rows = []
    for combo in table.combos:
        settings = forwarder_settings(table, combo).label.replace(", ", " / ")
        cells: list[str] = []
        for path in paths:
            kernel = table.cells.get((KERNEL, combo, path.name))
            fwd = table.cells.get((FWD, combo, path.name))
            cells += [mean_ci(c.row.throughput, scale) if c else "–" for c in (kernel, fwd)]
            cells.append(_change(fwd, kernel))
        rows.append((*("Y" if on else "N" for on in combo), settings, *cells))
    return Table(header=header, rows=tuple(rows), align_left=len(table.dimensions) + 1)


def _change(new: Cell | None, base: Cell | None) -> str:
    """"+12% [+3%, +22%] *" — offlab-fwd against the kernel router."""
    if new is None or base is None:
        return "–"
    change = relative_change([s.throughput_bps for s in new.row.samples],
                             [s.throughput_bps for s in base.row.samples])
    if change is None:
        return "–"
    text = f"{change.ratio:+.0%}"
    if change.ci95 is not None:
        text += f" [{change.ci95[0]:+.0%}, {change.ci95[1]:+.0%}]"
    return text + (" *" if change.significant else "")


NOTHING_FLAGGED = Table(header=("flag",), rows=(("no profile collapsed or degraded a path",),))

SectionParts = tuple[str, str, tuple[tuple[str, Table], ...]]
"""(title, introduction, captioned tables): what `report.views.View` is built from."""


def middlebox_sections(rows: Sequence[ProfileRow], adaptive: Mapping[str, AdaptiveOutcome],
                       real_hosts: bool = False) -> list[SectionParts]:
    sections = []
    for table in middlebox_tables(rows):
        tables = [(f"{table.title}: throughput by router offloads and path", seed_table(table, adaptive))]
        flagged = pathology_table(table)
        caption = f"{table.title}: pathologies — {counter_summary(table)}"
        tables.append((caption, flagged if flagged is not None else NOTHING_FLAGGED))
        versus = router_table(table)
        if versus is not None:
            tables.append((f"{table.title}: kernel router vs offlab-fwd, forwarded paths", versus))
        text = f"{intro(real_hosts)} Features per letter: {dimension_features()}."
        sections.append((f"{table.title} (seed 003 shape)", text, tuple(tables)))
    return sections


def sections(rows: Sequence[Any], report: Any) -> list[Section]:
    """This study's views in the run report, from the report's profile rows."""
    settings = report.info.settings
    real_hosts = bool(settings is not None and settings.hosts)
    return [Section(*parts) for parts in middlebox_sections(rows, report.adaptive, real_hosts)]


def charts(rows: Sequence[Any]) -> dict[str, bytes]:
    """slug → PNG of this study's views that have a chart (none)."""
    return {}
