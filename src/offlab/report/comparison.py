"""`offlab compare A B`: two result sets (two kernels, two machines, two dates) side by side.

Cases are matched by `CaseSpec.key` (scenario, MTU, side, profile, traffic). For each
match the change of B against A is given with its 95 % CI (Fieller, see
`stats.relative_change`), for throughput and for CPU % per Gbps; cases present in only
one set are listed, never silently dropped. Whether a case changed is decided by
compare_rule.py: the between-build spread estimated from all matched cases enters each
test, the false discovery rate is held at 5 % over all of them, and each case states
the smallest change it could have detected. The tables reuse the report's cells so a
comparison reads like a report.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from html import escape
from pathlib import Path

from ..analysis import compare_rule
from ..analysis.compare_rule import Verdict

from ..measure import stackconfig
from ..records import RunInfo
from .page import html_table, markdown_table as md_table, page
from .model import ProfileRow, build_rows
from .cells import Table, mean_std
from .tables import versus
from ..analysis.stats import RelativeChange, relative_change
from ..store.store import RunResults

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
    throughput_verdict: Verdict | None = None
    cpu_verdict: Verdict | None = None
    """Whether each changed by the comparison's rule (compare_rule.py)."""


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
        """Cases the rule calls changed (throughput or CPU per Gbps)."""
        return tuple(c for c in self.matched if any(v is not None and v.flagged
                                                     for v in (c.throughput_verdict, c.cpu_verdict)))

    @property
    def between_build(self) -> tuple[float, float]:
        """The between-build relative SD the rule added, (throughput, CPU per Gbps): √τ²."""
        found = [[v.between for c in self.matched for v in (c.throughput_verdict,) if v],
                 [v.between for c in self.matched for v in (c.cpu_verdict,) if v]]
        return tuple(math.sqrt(f[0]) if f else 0.0 for f in found)  # type: ignore[return-value]

    @property
    def tests(self) -> int:
        return sum(v is not None for c in self.matched for v in (c.throughput_verdict, c.cpu_verdict))


def compare(a: RunResults, b: RunResults) -> Comparison:
    """Match the cases of two runs and compute B's change against A. Pure."""
    rows_a, rows_b = build_rows(a), build_rows(b)
    matched = _judged(tuple(_compare_rows(k, rows_a[k], rows_b[k]) for k in rows_a if k in rows_b))
    return Comparison(
        a=a.info,
        b=b.info,
        matched=matched,
        only_a=tuple(k for k in rows_a if k not in rows_b),
        only_b=tuple(k for k in rows_b if k not in rows_a),
        environment=environment_differences(a.info, b.info) + stackconfig.differences(a.stack, b.stack),
    )


def _judged(matched: tuple[CaseComparison, ...]) -> tuple[CaseComparison, ...]:
    """Each case's verdicts by the rule, over all matched cases at once."""
    throughput = [compare_rule.change(m.a.throughput, m.b.throughput) for m in matched]
    cpu = [compare_rule.change(m.a.cpu_per_gbps, m.b.cpu_per_gbps)
           if m.a.cpu_per_gbps is not None and m.b.cpu_per_gbps is not None else None for m in matched]
    verdicts = compare_rule.judge([throughput, cpu])
    return tuple(dataclasses.replace(m, throughput_verdict=t, cpu_verdict=c)
                 for m, t, c in zip(matched, verdicts[0], verdicts[1]))


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
    """Cases changed for the worse by more than `threshold` (a fraction) — throughput
    down, or CPU per Gbps up — that hold at the 5 % false discovery rate (a gate must not
    fail one A/A comparison in three, as a per-case test would over twenty cases)."""
    found = []
    for m in c.matched:
        t, u = m.throughput_verdict, m.cpu_verdict
        if t is not None and t.discovery and t.change.ratio < -threshold:
            found.append(f"{m.key}: throughput {t.change.ratio:+.1%}")
        if u is not None and u.discovery and u.change.ratio > threshold:
            found.append(f"{m.key}: CPU per Gbps {u.change.ratio:+.1%}")
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
            _verdict_cell(m.throughput, m.throughput_verdict),
            mean_std(m.a.cpu_per_gbps),
            mean_std(m.b.cpu_per_gbps),
            _verdict_cell(m.cpu_per_gbps, m.cpu_verdict),
        )
        for m in c.matched
    )
    header = (
        "case",
        "A Gbit/s",
        "B Gbit/s",
        "B vs A throughput (minimum detectable)",
        "A CPU %/Gbps",
        "B CPU %/Gbps",
        "B vs A CPU %/Gbps (minimum detectable)",
    )
    return Table(header=header, rows=rows)


def _verdict_cell(change: RelativeChange | None, verdict: Verdict | None) -> str:
    """The change with its CI and "*" when the rule calls it changed ("n.s." otherwise),
    and the smallest change the case could have shown."""
    text = versus(change)
    if verdict is None:
        return text
    text = text.replace(" *", "").replace(" (n.s.)", "")
    mark = " **" if verdict.discovery else " *" if verdict.flagged else " (n.s.)"
    return f"{text}{mark} (MDE {100 * verdict.mde:.0f} %)"


def _summary_line(c: Comparison) -> str:
    sd_throughput, sd_cpu = c.between_build
    verdicts = [v for m in c.matched for v in (m.throughput_verdict, m.cpu_verdict) if v is not None]
    flagged, found = sum(v.flagged for v in verdicts), sum(v.discovery for v in verdicts)
    return (
        f"{len(c.matched)} matching cases; {flagged} of {c.tests} tests significant (chance alone "
        f"gives about {0.05 * c.tests:.1f}, up to {compare_rule.chance_bound(c.tests)} in 95 % of "
        f"A/A comparisons), {found} of them holding at a 5 % false discovery rate; between-build "
        f"spread estimated from the cases: {100 * sd_throughput:.1f} % throughput, "
        f"{100 * sd_cpu:.1f} % CPU per Gbps; {len(c.only_a)} only in A, {len(c.only_b)} only in B."
    )


RULE_TEXT = ("A change is significant (*) when it stands out (p < 0.05) from the within-run spread "
             "of both runs plus a between-build spread that all matched cases share (estimated "
             "robustly from them: two runs are two builds of each topology, which moves every "
             "case a little); ** when it also holds with the false discovery rate over all tests "
             "at 5 % (Benjamini–Hochberg), which is what --fail-on-regression acts on. In "
             "brackets (MDE), the smallest change each case could have detected (80 % power at "
             "α 0.05); a smaller real change can pass unseen.")


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
        "Cells are mean±std over runs; changes are B against A with their 95 % CI. " + RULE_TEXT,
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
        "<p class=sub>Cells are mean±std over runs; changes are B against A with their 95 % CI. "
        f"{escape(RULE_TEXT)}</p>",
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
