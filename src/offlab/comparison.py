"""`offlab compare A B`: two result sets (two kernels, two machines, two dates) side by side.

Cases are matched by `CaseSpec.key` (scenario, MTU, side, profile, traffic). For each
match the change of B against A is given with its 95 % CI (Fieller, see
`stats.relative_change`) and Welch's p-value, for throughput and for CPU % per Gbps;
cases present in only one set are listed, never silently dropped. The tables reuse the
report's cells so a comparison reads like a report.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from pathlib import Path

from . import stackconfig
from .records import RunInfo
from .report.html import page, render_table as html_table
from .report.markdown import render_table as md_table
from .report.model import ProfileRow, build_rows
from .report.tables import Table, mean_std, versus
from .stats import RelativeChange, relative_change
from .store import RunResults

MARKDOWN_NAME = "compare.md"
HTML_NAME = "compare.html"


@dataclass(frozen=True)
class CaseComparison:
    key: str
    a: ProfileRow
    b: ProfileRow
    throughput: RelativeChange | None
    """B against A, receiver goodput."""
    cpu_per_gbps: RelativeChange | None
    """B against A, busy CPU per Gbit/s (lower is better)."""


@dataclass(frozen=True)
class Comparison:
    a: RunInfo
    b: RunInfo
    matched: tuple[CaseComparison, ...]
    only_a: tuple[str, ...]
    only_b: tuple[str, ...]
    environment: tuple[str, ...] = ()
    """How the two runs' machines and settings differ ("kernel: 6.1 → 6.18"): a change
    may be theirs rather than the offloads'."""

    @property
    def significant(self) -> tuple[CaseComparison, ...]:
        return tuple(
            c
            for c in self.matched
            if (c.throughput and c.throughput.significant)
            or (c.cpu_per_gbps and c.cpu_per_gbps.significant)
        )


def compare(a: RunResults, b: RunResults) -> Comparison:
    """Match the cases of two runs and compute B's change against A. Pure."""
    rows_a, rows_b = build_rows(a), build_rows(b)
    matched = tuple(_compare_rows(k, rows_a[k], rows_b[k]) for k in rows_a if k in rows_b)
    return Comparison(
        a=a.info,
        b=b.info,
        matched=matched,
        only_a=tuple(k for k in rows_a if k not in rows_b),
        only_b=tuple(k for k in rows_b if k not in rows_a),
        environment=environment_differences(a.info, b.info) + stackconfig.differences(a.stack, b.stack),
    )


def environment_differences(a: RunInfo, b: RunInfo) -> tuple[str, ...]:
    """What differs between the two runs' environments, one phrase each."""
    facts = [("kernel", a.kernel, b.kernel), ("CPU", a.cpu_model, b.cpu_model),
             ("cores", a.cores, b.cores), ("host", a.host, b.host)]
    if a.settings is not None and b.settings is not None:
        facts += [("receive steering", a.settings.steer_rx_softirq, b.settings.steer_rx_softirq),
                  ("hosts", a.settings.hosts, b.settings.hosts)]
    for tool in sorted(set(a.tool_versions) | set(b.tool_versions)):
        facts.append((tool, a.tool_versions.get(tool, "–"), b.tool_versions.get(tool, "–")))
    return tuple(f"{name}: {old} → {new}" for name, old, new in facts if old != new)


def regressions(c: Comparison, threshold: float) -> list[str]:
    """Cases where B is significantly worse than A by more than `threshold` (a
    fraction): throughput down, or CPU per Gbps up."""
    found = []
    for m in c.matched:
        if m.throughput is not None and m.throughput.significant and m.throughput.ratio < -threshold:
            found.append(f"{m.key}: throughput {m.throughput.ratio:+.1%}")
        if m.cpu_per_gbps is not None and m.cpu_per_gbps.significant and m.cpu_per_gbps.ratio > threshold:
            found.append(f"{m.key}: CPU per Gbps {m.cpu_per_gbps.ratio:+.1%}")
    return found


def _compare_rows(key: str, a: ProfileRow, b: ProfileRow) -> CaseComparison:
    cpu = None
    if a.cpu_per_gbps is not None and b.cpu_per_gbps is not None:
        cpu = relative_change(b.cpu_per_gbps.values, a.cpu_per_gbps.values)
    return CaseComparison(
        key=key,
        a=a,
        b=b,
        throughput=relative_change(b.throughput.values, a.throughput.values),
        cpu_per_gbps=cpu,
    )


def runs_table(c: Comparison) -> Table:
    def facts(info: RunInfo) -> tuple[str, ...]:
        return (info.run_id, info.plan, info.kernel, info.cpu_model, str(info.cores))

    return Table(
        header=("set", "run", "plan", "kernel", "CPU", "cores"),
        rows=(("A", *facts(c.a)), ("B", *facts(c.b))),
        align_left=6,
    )


def cases_table(c: Comparison) -> Table:
    rows = tuple(
        (
            m.key,
            mean_std(m.a.throughput),
            mean_std(m.b.throughput),
            versus(m.throughput),
            mean_std(m.a.cpu_per_gbps),
            mean_std(m.b.cpu_per_gbps),
            versus(m.cpu_per_gbps),
        )
        for m in c.matched
    )
    header = (
        "case",
        "A Gbit/s",
        "B Gbit/s",
        "B vs A throughput",
        "A CPU %/Gbps",
        "B CPU %/Gbps",
        "B vs A CPU %/Gbps",
    )
    return Table(header=header, rows=rows)


def _summary_line(c: Comparison) -> str:
    return (
        f"{len(c.matched)} matching cases, {len(c.significant)} with a significant change "
        f"(Welch p < 0.05, 95 % CI of the change excluding 0); "
        f"{len(c.only_a)} only in A, {len(c.only_b)} only in B."
    )


def render_markdown(c: Comparison) -> str:
    parts = [
        f"# offlab comparison: {c.b.run_id} (B) against {c.a.run_id} (A)",
        "",
        md_table(runs_table(c)),
        "",
        _summary_line(c),
        *(["", "Environment differences (a change may be theirs): " + "; ".join(c.environment)]
          if c.environment else []),
        "",
        "## Matching cases",
        "",
        "Cells are mean±std over runs; changes are B against A with their 95 % CI; "
        "`*` marks a significant change, `n.s.` one that is not.",
        "",
        md_table(cases_table(c)) if c.matched else "No case is in both sets.",
    ]
    for label, keys in (("Only in A", c.only_a), ("Only in B", c.only_b)):
        if keys:
            parts += ["", f"## {label}", "", *(f"- `{k}`" for k in keys)]
    return "\n".join(parts) + "\n"


def render_html(c: Comparison) -> str:
    title = f"offlab comparison: {c.b.run_id} (B) against {c.a.run_id} (A)"
    body = [
        f"<h1>{escape(title)}</h1>",
        html_table(runs_table(c), "facts"),
        f"<p>{escape(_summary_line(c))}</p>",
        *([f"<p><b>Environment differences</b> (a change may be theirs): {escape('; '.join(c.environment))}</p>"]
          if c.environment else []),
        "<h2>Matching cases</h2>",
        "<p class=sub>Cells are mean±std over runs; changes are B against A with their 95 % CI; "
        "* marks a significant change, n.s. one that is not.</p>",
        html_table(cases_table(c)) if c.matched else "<p>No case is in both sets.</p>",
    ]
    for label, keys in (("Only in A", c.only_a), ("Only in B", c.only_b)):
        if keys:
            items = "".join(f"<li><code>{escape(k)}</code></li>" for k in keys)
            body += [f"<h2>{label}</h2>", f"<ul>{items}</ul>"]
    return page(title, "\n".join(body))


def write_comparison(c: Comparison, out_dir: str | Path) -> tuple[Path, Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md_path, html_path = out / MARKDOWN_NAME, out / HTML_NAME
    md_path.write_text(render_markdown(c), encoding="utf-8")
    html_path.write_text(render_html(c), encoding="utf-8")
    return md_path, html_path
