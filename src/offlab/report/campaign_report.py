"""The campaign report: the pairs of a campaign side by side (campaign.py). For each
pair, its hosts — NIC driver and firmware, kernel — then, per case group, each
profile's throughput and its effect against all on, pair by pair, with the report's
own statistics (95 % CI, `*` significant). Which NIC or kernel gets what from each
offload reads across a row; an effect inside the noise is marked n.s., not advice."""

from __future__ import annotations

from html import escape
from pathlib import Path

from ..hosts.facts import virtual_roles
from .page import html_table, markdown_table as md_table, page
from .model import CaseGroup, build_groups, build_rows
from .cells import Table, mean_std
from .tables import versus
from ..store.store import RunResults

MARKDOWN_NAME = "campaign.md"
HTML_NAME = "campaign.html"
FACTS = ("kernel", "nic driver", "nic firmware-version", "link speed")


def pairs_table(runs: list[tuple[str, RunResults]]) -> Table:
    rows = []
    for pair, results in runs:
        for role in ("sender", "receiver"):
            facts = results.info.host_facts.get(role, {})
            rows.append((pair, results.info.run_id, results.status, role, facts.get("ssh", "–"),
                         *(facts.get(name, "–") for name in FACTS)))
    return Table(header=("pair", "run", "status", "role", "host", *FACTS), rows=tuple(rows), align_left=8)


def _groups(results: RunResults) -> dict[str, CaseGroup]:
    return {g.slug: g for g in build_groups(results, build_rows(results))}


def group_tables(runs: list[tuple[str, RunResults]]) -> list[tuple[str, Table]]:
    """(group title, table) for every case group any pair measured, in plan order."""
    per_pair = [(pair, _groups(results)) for pair, results in runs]
    slugs = list(dict.fromkeys(slug for _, groups in per_pair for slug in groups))
    tables = []
    for slug in slugs:
        present = [(pair, groups[slug]) for pair, groups in per_pair if slug in groups]
        title = present[0][1].title
        profiles = list(dict.fromkeys(row.case.key for _, group in present for row in group.rows))
        rows = []
        for key in profiles:
            cells = []
            for _, group in present:
                row = next((r for r in group.rows if r.case.key == key), None)
                cells += ["–", "–"] if row is None else [
                    mean_std(row.throughput),
                    "baseline" if row.vs_baseline_throughput is None else versus(row.vs_baseline_throughput)]
            name = next(r.profile.name for _, g in present for r in g.rows if r.case.key == key)
            rows.append((name, *cells))
        header = ("profile", *(f"{pair} {what}" for pair, _ in present for what in ("Gbit/s", "vs all on")))
        tables.append((title, Table(header=header, rows=tuple(rows))))
    return tables


_LEGEND = ("Cells are mean±std over a pair's repetitions; `vs all on` is the profile's change against "
           "the same pair's all-on run with its 95 % CI, `*` significant (Welch p < 0.05), `n.s.` not. "
           "Each pair ran the same plan with the same settings; pairs sharing no host ran at the same time.")


def virtual_note(runs: list[tuple[str, RunResults]]) -> str | None:
    """Pairs whose test interfaces are software devices: their effects are not a NIC's."""
    virtual = [pair for pair, results in runs if virtual_roles(dict(results.info.host_facts))]
    if not virtual:
        return None
    return (f"Pairs {', '.join(virtual)} test over software devices (veth, tun, …), not NICs: their "
            "offload effects are those devices' (each pair's own report says which).")


def render_markdown(campaign: str, runs: list[tuple[str, RunResults]]) -> str:
    note = virtual_note(runs)
    parts = [f"# offlab campaign {campaign}", "", md_table(pairs_table(runs)), "", _LEGEND,
             *(["", f"**{note}**"] if note else [])]
    for title, table in group_tables(runs):
        parts += ["", f"## {title}", "", md_table(table)]
    return "\n".join(parts) + "\n"


def render_html(campaign: str, runs: list[tuple[str, RunResults]]) -> str:
    title = f"offlab campaign {campaign}"
    note = virtual_note(runs)
    body = [f"<h1>{escape(title)}</h1>", html_table(pairs_table(runs), "facts"), f"<p class=sub>{escape(_LEGEND)}</p>",
            *([f"<p><b>{escape(note)}</b></p>"] if note else [])]
    for group_title, table in group_tables(runs):
        body += [f"<h2>{escape(group_title)}</h2>", html_table(table)]
    return page(title, "\n".join(body))


def write_campaign_report(campaign: str, runs: list[tuple[str, RunResults]], out_dir: Path) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    md, html = out_dir / MARKDOWN_NAME, out_dir / HTML_NAME
    md.write_text(render_markdown(campaign, runs), encoding="utf-8")
    html.write_text(render_html(campaign, runs), encoding="utf-8")
    return md, html
