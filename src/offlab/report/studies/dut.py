"""Seed-002 views of DUT-layout runs (cases with the topology parameter dut = rcv/snd):
the article's per-core tables ("CPU App %usr … CPU S-IRQ %idle", mean±std, one
column per direction), generated vs received rates with CPU per unit of rate, the
encapsulation cost against the bare reference, and the article's bar pairs as a chart.
Pure except for `dut_chart` (matplotlib's object API)."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ..model import ProfileRow, RoleCpu
from ..cells import Table, mean_std
from ..section import Section
from ...analysis.stats import Summary, summary
from ...studies.dut.plan import DUT_DIRECTIONS

DUT_INTRO = (
    "DUT layout: the DUT's application pinned to one core (App), its softirq work "
    "steered to the other (S-IRQ); the traffic generator shares the App core (see "
    "docs/methodology.md, “DUT layout”). Cells are mean±std over the runs, as in the article."
)

CHART = "dut-study"
"""The slug of the DUT study's chart."""

DIRECTION_NAMES = {"rcv": "DUT rcv", "snd": "DUT snd"}
CORE_ROWS = (("App", "dut-app"), ("S-IRQ", "dut-softirq"))
CLASSES = ("usr", "sys", "irq", "soft", "idle")
REFERENCE = "bare"
"""The scenario the encapsulation cost is measured against (the article's previous one)."""
_GENERATED, _RECEIVED = "#74a9cf", "#8856a7"


@dataclass(frozen=True)
class DutStudy:
    """One workload and profile of one scenario, in each DUT direction measured."""

    scenario: str
    """The base scenario ("vxlan", "bare")."""
    mtu: int
    traffic: str
    profile: str
    columns: tuple[tuple[str, ProfileRow], ...]
    """(direction, row), "rcv" before "snd"."""

    @property
    def title(self) -> str:
        return f"{self.scenario} · MTU {self.mtu} · {self.traffic} · {self.profile}"

    @property
    def rate_unit(self) -> tuple[str, float]:
        """Mbit/s when every rate is below 1 Gbit/s (the article's UDP 60 B figures)."""
        if max(max(r.throughput.mean, r.sender.mean) for _, r in self.columns) < 1.0:
            return "Mbit/s", 1000.0
        return "Gbit/s", 1.0


def dut_studies(rows: Iterable[ProfileRow]) -> tuple[DutStudy, ...]:
    """Rows of DUT-layout scenarios grouped by base scenario × MTU × workload × profile,
    in the order first seen."""
    found: dict[tuple[str, int, str, str], dict[str, ProfileRow]] = {}
    for row in rows:
        direction = row.case.topology.get("dut")
        if direction is None:
            continue
        base = row.case.scenario
        key = (base, row.case.mtu, row.case.traffic.label,
               f"{row.profile.side}:{row.profile.name}")
        found.setdefault(key, {})[direction] = row
    return tuple(
        DutStudy(base, mtu, traffic, profile,
                 tuple((d, by_dir[d]) for d in DUT_DIRECTIONS if d in by_dir))
        for (base, mtu, traffic, profile), by_dir in found.items()
    )


def _role(row: ProfileRow, role: str) -> RoleCpu | None:
    return next((r for r in row.roles if r.role == role), None)


def dut_cpu_table(study: DutStudy) -> Table:
    """The article's table: "CPU App %usr" … "CPU S-IRQ %idle", one column per direction."""
    header = ("", *(DIRECTION_NAMES[d] for d, _ in study.columns))
    body = []
    for label, role in CORE_ROWS:
        for cls in CLASSES:
            cells = []
            for _, row in study.columns:
                share = _role(row, role)
                cells.append(mean_std(share.classes[cls], decimals=1) if share else "–")
            body.append((f"CPU {label} %{cls}", *cells))
    return Table(header, tuple(body), align_left=1)


def dut_rates_table(study: DutStudy) -> Table:
    """Generated vs received (the article's bar pairs), loss, CPU per unit of rate over
    both cores, the same without the generator's own process time (an estimate of the
    DUT's alone: the generator's softirq work on the shared core stays in) and without
    the machine's foreign load (what a shared machine adds to every core)."""
    unit, scale = study.rate_unit
    per = unit.replace("bit/s", "bps")
    lines: list[tuple[str, list[str]]] = [
        (f"Generated ({unit})", [mean_std(r.sender, scale) for _, r in study.columns]),
        (f"Received ({unit})", [mean_std(r.throughput, scale) for _, r in study.columns]),
    ]
    if any(r.loss_percent is not None for _, r in study.columns):
        lines.append(("Loss %", [mean_std(r.loss_percent) for _, r in study.columns]))
    lines += [
        (f"CPU % per {per}, both cores",
         [mean_std(_per_rate(r, scale, False)) for _, r in study.columns]),
        (f"CPU % per {per}, both cores − generator process",
         [mean_std(_per_rate(r, scale, True)) for _, r in study.columns]),
        (f"CPU % per {per}, both cores − foreign load",
         [mean_std(_per_rate_without_foreign(r, scale)) for _, r in study.columns]),
        ("Generator process %usr+%sys (its core)",
         [mean_std(_generator_percent(d, r), decimals=1) for d, r in study.columns]),
        ("Foreign load % (not offlab's, both cores)",
         [mean_std(_counter(r, "other_busy_pct"), decimals=1) for _, r in study.columns]),
    ]
    header = ("", *(DIRECTION_NAMES[d] for d, _ in study.columns))
    return Table(header, tuple((name, *cells) for name, cells in lines), align_left=1)


def _counter(row: ProfileRow, name: str) -> Summary | None:
    values = [s.counters.get(name) for s in row.samples]
    return summary(values) if values and None not in values else None  # type: ignore[arg-type]


def _generator_percent(direction: str, row: ProfileRow) -> Summary | None:
    """The generator's iperf3 process (sender when the DUT receives, else receiver)."""
    who = "sender" if direction == "rcv" else "receiver"
    values = []
    for sample in row.samples:
        usr = sample.counters.get(f"{who}_app_usr_pct")
        sys = sample.counters.get(f"{who}_app_sys_pct")
        if usr is None or sys is None:
            return None
        values.append(usr + sys)
    return summary(values) if values else None


def _per_rate(row: ProfileRow, scale: float, without_generator: bool) -> Summary | None:
    generator = None
    if without_generator:
        direction = row.case.topology.get("dut")
        generator = _generator_percent(str(direction), row) if direction else None
        if generator is None:
            return None
    values = []
    for number, sample in enumerate(row.samples):
        rate = sample.throughput_bps / 1e9 * scale
        if rate <= 0:
            return None
        busy = sample.cpu_total_percent
        if generator is not None:
            busy -= generator.values[number]
        values.append(busy / rate)
    return summary(values)


def _per_rate_without_foreign(row: ProfileRow, scale: float) -> Summary | None:
    """Busy CPU minus what the cores spent on other processes of the machine
    (`other_busy_pct`), per unit of rate: the lab's own cost on a shared machine."""
    values = []
    for sample in row.samples:
        foreign = sample.counters.get("other_busy_pct")
        rate = sample.throughput_bps / 1e9 * scale
        if foreign is None or rate <= 0:
            return None
        values.append((sample.cpu_total_percent - foreign) / rate)
    return summary(values)


def encapsulation_table(studies: Iterable[DutStudy]) -> Table | None:
    """Received rate of each scenario against the bare reference, per workload and
    direction (the article: VXLAN reaches ~60 % of bare TCP). None without a reference."""
    by_key: dict[tuple[int, str, str], dict[str, DutStudy]] = {}
    for study in studies:
        by_key.setdefault((study.mtu, study.traffic, study.profile), {})[study.scenario] = study
    body = []
    for (mtu, traffic, profile), scenarios in by_key.items():
        reference = scenarios.get(REFERENCE)
        for name, study in scenarios.items():
            if reference is None or name == REFERENCE:
                continue
            for direction, row in study.columns:
                base = dict(reference.columns).get(direction)
                if base is None:
                    continue
                unit, scale = study.rate_unit if study.rate_unit == reference.rate_unit \
                    else ("Gbit/s", 1.0)
                ratio = row.throughput.mean / base.throughput.mean \
                    if base.throughput.mean > 0 else None
                body.append((
                    f"{traffic} · MTU {mtu} · {profile}", DIRECTION_NAMES[direction], name,
                    f"{mean_std(base.throughput, scale)} {unit}",
                    f"{mean_std(row.throughput, scale)} {unit}",
                    f"{ratio:.0%}" if ratio is not None else "–",
                ))
    if not body:
        return None
    header = ("Workload", "Direction", "Scenario", f"{REFERENCE} received",
              "scenario received", f"scenario ÷ {REFERENCE}")
    return Table(header, tuple(body), align_left=3)


def dut_chart(studies: tuple[DutStudy, ...]) -> bytes:
    """PNG: per study, generated vs received bars per direction (± std) above, CPU %
    per unit of rate over both cores below, like the article's figures."""
    fig = Figure(figsize=(max(4.0, 3.2 * len(studies)), 6.4), dpi=96, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(2, len(studies), squeeze=False)
    for column, study in enumerate(studies):
        unit, scale = study.rate_unit
        names = [DIRECTION_NAMES[d] for d, _ in study.columns]
        xs = range(len(names))
        rows = [r for _, r in study.columns]
        top, bottom = axes[0][column], axes[1][column]
        for offset, colour, label, pick in ((-0.2, _GENERATED, "generated", lambda r: r.sender),
                                            (0.2, _RECEIVED, "received", lambda r: r.throughput)):
            top.bar([x + offset for x in xs], [pick(r).mean * scale for r in rows], 0.4,
                    yerr=[(pick(r).std or 0.0) * scale for r in rows], capsize=3,
                    color=colour, label=label)
        top.set_title(study.title, fontsize=9)
        top.set_ylabel(unit)
        per_rate = [_per_rate(r, scale, False) for r in rows]
        bottom.bar(xs, [s.mean if s else 0.0 for s in per_rate], 0.5,
                   yerr=[(s.std or 0.0) if s else 0.0 for s in per_rate], capsize=3,
                   color="#4c72b0")
        bottom.set_ylabel(f"CPU % per {unit.replace('bit/s', 'bps')}")
        for ax in (top, bottom):
            ax.set_xticks(list(xs), names, fontsize=8)
            ax.grid(axis="y", alpha=0.3)
            ax.set_axisbelow(True)
    axes[0][0].legend(fontsize=8)
    fig.suptitle("DUT throughput (± std) and CPU cost, both cores", fontsize=11)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def sections(rows: Sequence[Any], report: Any) -> list[Section]:
    """This study's views in the run report, from the report's profile rows."""
    studies = dut_studies(rows)
    if not studies:
        return []
    tables = []
    for study in studies:
        tables.append((f"{study.title}: CPU per core", dut_cpu_table(study)))
        tables.append((f"{study.title}: rates and CPU cost", dut_rates_table(study)))
    encapsulation = encapsulation_table(studies)
    if encapsulation is not None:
        tables.append(("Encapsulation cost: received rate against bare", encapsulation))
    return [Section("DUT CPU study (seed 002 shape)", DUT_INTRO, tuple(tables), CHART)]


def charts(rows: Sequence[Any]) -> dict[str, bytes]:
    """slug → PNG of this study's views that have a chart."""
    studies = dut_studies(rows)
    return {CHART: dut_chart(studies)} if studies else {}
