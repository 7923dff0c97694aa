"""The `offlab` command: run, report, list, export, doctor."""

from __future__ import annotations

import os
import re
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

import typer
from rich import box
from rich.console import Console
from rich.table import Column, Table

from . import doctor as doctor_checks
from . import environment
from .plan import Plan, PlanError, load
from .proc import ProcessError
from .export import export
from .records import CaseSpec, RunInfo
from .runner import Runner
from .store import Store, StoreError
from .topology import Interrupted, TerminationSignals, TopologyError, sweep_leftovers
from .traffic import IperfError

EXIT_INTERRUPTED = 130
DEFAULT_OUT = Path("results")
STORE_NAME = "offlab.sqlite"

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="The offload lab: topologies in namespaces, offload profiles, iperf3, CPU, reports.")
err = Console(stderr=True)
out = Console()


class LabError(Exception):
    """An error the user can act on; printed as one line, exit status 1."""


@dataclass(frozen=True)
class Session:
    """What `offlab run` is about to execute: a new run or the rest of an old one."""

    run_id: str
    cases: tuple[CaseSpec, ...]
    runs: int
    steer_rx_softirq: bool
    done: Mapping[str, int]


def _store(out_dir: Path) -> Store:
    return Store(out_dir / STORE_NAME)


def _notes(plan: Plan) -> str:
    return f"repetitions={plan.runs} steer_rx_softirq={str(plan.steer_rx_softirq).lower()}"


def _from_notes(notes: str, key: str) -> str | None:
    match = re.search(rf"\b{key}=(\S+)", notes)
    return match.group(1) if match else None


def _new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}"


def _write_report(store: Store, run_id: str, out_dir: Path) -> None:
    from .report import write_report  # matplotlib: seconds to import, so only when needed
    md, html = write_report(store.load_run(run_id), out_dir / run_id)
    out.print(f"report: {md}\n        {html}")


@app.command("run")
def run_cmd(
    plan: str = typer.Option("quick", "--plan", help="quick, offloads, or a plan .toml file"),
    runs: Optional[int] = typer.Option(None, "--runs", help="repetitions per case (overrides the plan)"),
    duration: Optional[float] = typer.Option(None, "--duration", help="measured seconds per repetition"),
    warmup: Optional[float] = typer.Option(None, "--warmup", help="warm-up seconds, excluded from every figure"),
    out_dir: Path = typer.Option(DEFAULT_OUT, "--out", help="store and reports directory"),
    resume: Optional[str] = typer.Option(None, "--resume", help="continue an interrupted run"),
    no_progress: bool = typer.Option(False, "--no-progress", help="no progress bar"),
) -> None:
    """Run a plan, store every sample, write the report."""
    chosen = None if resume else load(plan).with_overrides(runs, duration, warmup)
    sweep = sweep_leftovers()
    if sweep:
        err.print(f"removed leftovers of killed runs: {', '.join(sweep)}")
    store = _store(out_dir)
    session = _resume(store, resume, runs) if chosen is None else _begin(store, chosen)
    run_id = session.run_id
    runner = Runner(store, run_id, session.runs, steer_rx_softirq=session.steer_rx_softirq,
                    console=err, show_progress=not no_progress)
    err.print(f"run {run_id}: {len(session.cases)} cases × {session.runs} runs, store {store.path}")
    try:
        with TerminationSignals():
            stats = runner.execute(session.cases, session.done)
    except Interrupted as stop:
        store.finish_run(run_id, "interrupted")
        err.print(f"interrupted by {stop}: {runner.stats.samples} samples of this session kept, "
                  "namespaces removed")
        out.print(f"resume with: offlab run --resume {run_id}" +
                  (f" --out {out_dir}" if out_dir != DEFAULT_OUT else ""))
        raise typer.Exit(128 + stop.signum)  # 130 for SIGINT, 143 for SIGTERM
    except BaseException:
        store.finish_run(run_id, "failed")
        raise
    store.finish_run(run_id, "complete")
    for refused in stats.refused_offload_changes:
        err.print(f"[yellow]offload change refused[/] (recorded as read back): {refused}")
    _write_report(store, run_id, out_dir)


def _begin(store: Store, plan: Plan) -> Session:
    info = RunInfo(
        run_id=_new_run_id(), plan=plan.source if plan.source.endswith(".toml") else plan.name,
        started_at=time.time(), command_line=shlex.join(sys.argv), kernel=environment.kernel(),
        cpu_model=environment.cpu_model(), cores=environment.cores(),
        tool_versions=environment.tool_versions(), host=environment.host(), notes=_notes(plan),
    )
    run_id = store.begin_run(info)
    for case in plan.cases:
        store.add_case(run_id, case)
    return Session(run_id, plan.cases, plan.runs, plan.steer_rx_softirq, {})


def _resume(store: Store, run_id: str, runs: int | None) -> Session:
    results = store.load_run(run_id)
    wanted = runs or int(_from_notes(results.info.notes, "repetitions") or 0)
    if wanted < 1:
        raise LabError(f"run {run_id} does not record its repetitions; pass --runs N")
    steer = _from_notes(results.info.notes, "steer_rx_softirq") != "false"
    return Session(run_id, tuple(results.cases), wanted, steer, store.completed_counts(run_id))


@app.command("report")
def report_cmd(
    run_id: Optional[str] = typer.Argument(None, help="run to report (default: the latest)"),
    out_dir: Path = typer.Option(DEFAULT_OUT, "--out", help="store and reports directory"),
) -> None:
    """Write the Markdown and HTML report of a stored run."""
    store = _store(out_dir)
    chosen = run_id or store.latest_run_id()
    if chosen is None:
        raise LabError(f"no runs in {store.path}; start one with: offlab run")
    _write_report(store, chosen, out_dir)


@app.command("list")
def list_cmd(out_dir: Path = typer.Option(DEFAULT_OUT, "--out", help="store directory")) -> None:
    """Runs in the store."""
    store = _store(out_dir)
    table = Table(Column("run", no_wrap=True), Column("started", no_wrap=True),
                  Column("plan", no_wrap=True),
                  Column("status", no_wrap=True), "cases", "samples", box=box.SIMPLE_HEAD,
                  pad_edge=False, padding=(0, 1))
    for r in store.runs():
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.started))
        table.add_row(r.id, started, r.plan, r.status, str(r.cases), str(r.samples))
    out.print(table)


@app.command("export")
def export_cmd(
    run_id: str = typer.Argument(..., help="run to export"),
    fmt: str = typer.Option(..., "--format", help="json or csv"),
    dest: Optional[Path] = typer.Option(None, "-o", "--output", help="file (default: stdout)"),
    out_dir: Path = typer.Option(DEFAULT_OUT, "--out", help="store directory"),
) -> None:
    """Export a run's samples as JSON or CSV."""
    if fmt not in ("json", "csv"):
        raise typer.BadParameter(f"{fmt!r}; use json or csv", param_hint="--format")
    export(_store(out_dir).load_run(run_id), fmt, dest if dest is not None else sys.stdout)


@app.command("doctor")
def doctor_cmd() -> None:
    """Check root, tools, kernel modules and namespaces, each with its fix."""
    checks = doctor_checks.run_checks()
    table = Table("check", "ok", "detail", "fix")
    for c in checks:
        table.add_row(c.name, "[green]yes[/]" if c.ok else "[red]no[/]", c.detail, c.fix)
    out.print(table)
    if not all(c.ok for c in checks):
        raise typer.Exit(1)


def main() -> None:
    """Entry point: every failure the user can fix is one line and a non-zero status."""
    try:
        status = app(standalone_mode=False)
    except typer.Abort:
        sys.exit(EXIT_INTERRUPTED)
    except (LabError, PlanError, StoreError, TopologyError, ProcessError, IperfError) as failure:
        print(f"offlab: {failure}", file=sys.stderr)
        sys.exit(1)
    except Exception as failure:
        # Usage errors: typer's click exceptions (vendored or not) carry these two.
        if not (hasattr(failure, "format_message") and hasattr(failure, "exit_code")):
            raise
        ctx = getattr(failure, "ctx", None)
        command = ctx.command_path if ctx is not None else "offlab"
        print(f"{command}: {failure.format_message()} (see {command} --help)", file=sys.stderr)
        sys.exit(failure.exit_code)
    sys.exit(status if isinstance(status, int) else 0)


if __name__ == "__main__":
    main()
