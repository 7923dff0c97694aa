#!/usr/bin/env python3
"""Rewrites the README's report excerpt from a stored run (the one `make demo` made):
the report's own Markdown, as `offlab report` writes it, cut to its first sections, under
a line naming the machine the run was on (CPU model, cores, kernel, from the run's
recorded environment) and saying that the figures are that machine's.

Usage: .venv/bin/python scripts/readme-excerpt.py [RUN_ID] [--store results/offlab.sqlite] [--readme README.md]
       (or `make readme-excerpt [RUN=RUN_ID]`); without RUN_ID, the store's latest run.

The excerpt is the block of README.md between EXCERPT_BEGIN and EXCERPT_END. The
sections taken are the report's, by their headings (SECTIONS); the script reads the
report rather than the store's numbers, so the README shows whatever the report says.
A heading the report no longer has is an error naming the headings it has."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXCERPT_BEGIN = "<!-- excerpt: written by scripts/readme-excerpt.py from a `make demo` run; do not edit by hand -->"
EXCERPT_END = "<!-- excerpt end -->"
SECTIONS = ("What was measured", "Summary", "Recommendations")
"""The report's sections the README quotes whole, in the report's order."""
TABLES_OF = "Results"
"""The section whose groups (`### ` subsections) the README quotes by their first table
only (the throughput table; charts and CPU tables stay in the report)."""


class ExcerptError(Exception):
    """One line with the fix."""


def report_markdown(run_id: str, store: str, out: Path) -> str:
    """The report `offlab report` writes for the run (in a scratch directory)."""
    offlab = Path(sys.executable).with_name("offlab")
    done = subprocess.run([str(offlab), "report", run_id, "--store", store, "--out", str(out)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise ExcerptError(f"offlab report {run_id} --store {store} failed: {done.stderr.strip()}")
    return (out / "report.md").read_text()


def sections(markdown: str) -> dict[str, str]:
    """The report's `## ` sections: heading → its text (subsections included)."""
    found: dict[str, str] = {}
    for part in re.split(r"^## ", markdown, flags=re.MULTILINE)[1:]:
        heading, _, body = part.partition("\n")
        found[heading.strip()] = body.strip()
    return found


def quoted(found: dict[str, str]) -> str:
    """SECTIONS, headings one level down (the README's excerpt is itself a section)."""
    missing = [name for name in SECTIONS if name not in found]
    if missing:
        raise ExcerptError(f"the report has no section {', '.join(repr(m) for m in missing)} (it has "
                           f"{', '.join(repr(h) for h in found)}); update SECTIONS in {Path(__file__).name}")
    parts = []
    for name in SECTIONS:
        body = re.sub(r"^(#+) ", r"#\1 ", found[name], flags=re.MULTILINE)
        parts.append(f"#### {name}\n\n{body}")
    if TABLES_OF in found:
        parts.append(f"#### {TABLES_OF} (throughput tables; the report has CPU tables and charts too)")
        parts += [f"##### {group}\n\n{table}" for group, table in first_tables(found[TABLES_OF])]
    return "\n\n".join(parts)


def first_tables(section: str) -> list[tuple[str, str]]:
    """(group heading, its first Markdown table) for each `### ` group of a section."""
    found = []
    for part in re.split(r"^### ", section, flags=re.MULTILINE)[1:]:
        heading, _, body = part.partition("\n")
        table = re.search(r"(?:^\|.*\|\n?)+", body, flags=re.MULTILINE)
        if table:
            found.append((heading.strip(), table.group(0).strip()))
    return found


def machine_line(run_id: str, store: str) -> str:
    """Where and how the run was made, from what the store recorded of it."""
    from offlab.run.preflight import duration_text
    from offlab.store.store import Store
    with Store(store, readonly=True) as opened:
        results = opened.load_run(run_id)
    info = results.info
    started = datetime.fromtimestamp(info.started_at, timezone.utc)
    wall = (f", {duration_text(results.finished_at - info.started_at)} of measuring"
            if results.finished_at else "")
    return (f"From `make demo` (plan `{info.plan}`) on {info.cpu_model}, {info.cores} cores, kernel "
            f"{info.kernel}: run `{info.run_id}`, {started:%Y-%m-%d}{wall}. **These figures are that "
            "machine's**: offloads' effects depend on the CPU, its cores and the kernel. `make demo` "
            "measures yours, and `offlab report` writes your own report from the store "
            "(results/offlab.sqlite).")


def latest_run(store: str) -> str:
    from offlab.store.store import Store
    if "://" not in store and not Path(store).is_file():
        raise ExcerptError(f"{store}: no such store; run `make demo` first, or pass --store")
    with Store(store, readonly=True) as opened:
        found = opened.latest_run_id()
    if found is None:
        raise ExcerptError(f"no runs in {store}; run `make demo` first")
    return found


def around_excerpt(readme: Path) -> tuple[str, str]:
    """The README's text before and after its excerpt; checked before the report is
    written (seconds of charts), so a README without its markers is one line at once."""
    text = readme.read_text()
    if text.count(EXCERPT_BEGIN) != 1 or text.count(EXCERPT_END) != 1:
        raise ExcerptError(f"{readme} must hold one line {EXCERPT_BEGIN!r} and one {EXCERPT_END!r} "
                           "around the excerpt")
    head, rest = text.split(EXCERPT_BEGIN)
    _, tail = rest.split(EXCERPT_END)
    return head, tail


def rewrite(readme: Path, block: str) -> None:
    head, tail = around_excerpt(readme)
    readme.write_text(f"{head}{EXCERPT_BEGIN}\n\n{block}\n\n{EXCERPT_END}{tail}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Rewrite README.md's report excerpt from a stored run.")
    parser.add_argument("run_id", nargs="?", help="the run (default: the store's latest)")
    parser.add_argument("--store", default=str(ROOT / "results" / "offlab.sqlite"))
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md")
    args = parser.parse_args(argv[1:])
    try:
        around_excerpt(args.readme)
        if args.run_id is None:
            args.run_id = latest_run(args.store)
        with tempfile.TemporaryDirectory(prefix="offlab-excerpt-") as scratch:
            found = sections(report_markdown(args.run_id, args.store, Path(scratch)))
        block = machine_line(args.run_id, args.store) + "\n\n" + quoted(found)
        rewrite(args.readme, block)
    except ExcerptError as err:
        print(f"readme-excerpt: {err}", file=sys.stderr)
        return 2
    print(f"{args.readme}: excerpt of run {args.run_id} written")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
