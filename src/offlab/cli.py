"""The `offlab` command: run, report, compare, list, export, doctor."""

from __future__ import annotations

import os
import shlex
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping, Optional

import typer
from rich import box
from rich.console import Console
from rich.table import Column, Table

from . import doctor as doctor_checks
from . import environment
from .adaptive import Adaptive, TargetError, parse_target
from .plan import Plan, PlanError, load
from .proc import ProcessError
from .export import export
from .records import CaseSpec, RunInfo, RunSettings
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
    settings: RunSettings
    done: Mapping[str, int]
    history: Mapping[str, tuple[float, ...]] | None = None
    """case key → throughputs already stored (resumed adaptive runs)."""


def _store(out_dir: Path) -> Store:
    return Store(out_dir / STORE_NAME)


def _adaptive(ci_target: str | None, min_runs: int, max_runs: int, runs: int | None) -> Adaptive | None:
    if ci_target is None:
        return None
    if runs is not None:
        raise LabError("--runs and --ci-target exclude each other; bound adaptive runs "
                       "with --min-runs/--max-runs")
    return Adaptive(parse_target(ci_target), min_runs, max_runs)


def _repetitions(settings: RunSettings) -> str:
    if settings.ci_target is not None:
        return (f"{settings.min_runs}–{settings.max_runs} runs "
                f"(CI target {100 * settings.ci_target:g}%)")
    return f"{settings.repetitions} runs"


def _new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}"


def _write_report(store: Store, run_id: str, out_dir: Path) -> None:
    from .report import write_report  # matplotlib: seconds to import, so only when needed
    md, html = write_report(store.load_run(run_id), out_dir / run_id)
    out.print(f"report: {md}\n        {html}")


@app.command("run")
def run_cmd(
    plan: str = typer.Option("quick", "--plan", help="a built-in plan (quick, offloads, msgsize, vxlan, middlebox, userspace) or a plan .toml file"),
    runs: Optional[int] = typer.Option(None, "--runs", help="repetitions per case (overrides the plan)"),
    duration: Optional[float] = typer.Option(None, "--duration", help="measured seconds per repetition"),
    warmup: Optional[float] = typer.Option(None, "--warmup", help="warm-up seconds, excluded from every figure"),
    out_dir: Path = typer.Option(DEFAULT_OUT, "--out", help="store and reports directory"),
    resume: Optional[str] = typer.Option(None, "--resume", help="continue an interrupted run"),
    no_progress: bool = typer.Option(False, "--no-progress", help="no progress bar"),
    ci_target: Optional[str] = typer.Option(
        None, "--ci-target", help="repeat each case until its 95% CI half-width is within this "
        "share of the mean, e.g. 5%"),
    min_runs: int = typer.Option(3, "--min-runs", help="with --ci-target: runs before the first check"),
    max_runs: int = typer.Option(20, "--max-runs", help="with --ci-target: runs at most"),
) -> None:
    """Run a plan, store every sample, write the report."""
    adaptive = _adaptive(ci_target, min_runs, max_runs, runs)
    if resume and adaptive:
        raise LabError("--resume continues with the run's own repetition rule; drop --ci-target")
    chosen = None if resume else load(plan).with_overrides(runs, duration, warmup)
    sweep = sweep_leftovers()
    if sweep:
        err.print(f"removed leftovers of killed runs: {', '.join(sweep)}")
    store = _store(out_dir)
    session = _resume(store, resume, runs) if chosen is None else _begin(store, chosen, adaptive)
    run_id = session.run_id
    runner = Runner(store, run_id, session.settings, console=err, show_progress=not no_progress,
                    history=session.history)
    err.print(f"run {run_id}: {len(session.cases)} cases × {_repetitions(session.settings)}, "
              f"store {store.path}")
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
    for outcome in stats.adaptive:
        if not outcome.reached:
            err.print(f"[yellow]{outcome.case_key}[/]: {outcome.sentence()}")
    _write_report(store, run_id, out_dir)


def _begin(store: Store, plan: Plan, adaptive: Adaptive | None = None) -> Session:
    settings = (plan.settings(adaptive.target, adaptive.min_runs, adaptive.max_runs)
                if adaptive else plan.settings())
    info = RunInfo(
        run_id=_new_run_id(), plan=plan.source if plan.source.endswith(".toml") else plan.name,
        started_at=time.time(), command_line=shlex.join(sys.argv), kernel=environment.kernel(),
        cpu_model=environment.cpu_model(), cores=environment.cores(),
        tool_versions=environment.tool_versions(), host=environment.host(),
        settings=settings,
    )
    run_id = store.begin_run(info)
    for case in plan.cases:
        store.add_case(run_id, case)
    return Session(run_id, plan.cases, settings, {})


def _resume(store: Store, run_id: str, runs: int | None) -> Session:
    """The rest of a stored run, with the settings it was started with (`--runs` may
    raise a fixed repetition count)."""
    results = store.load_run(run_id)
    settings = results.info.settings
    if settings is None:
        raise LabError(f"run {run_id} does not record its settings; start a new run")
    if runs is not None:
        if settings.ci_target is not None:
            raise LabError(f"run {run_id} repeats adaptively; resume it without --runs")
        settings = replace(settings, repetitions=runs)
    history = {k: tuple(s.throughput_bps for s in v) for k, v in results.samples.items()}
    return Session(run_id, tuple(results.cases), settings, store.completed_counts(run_id), history)


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


@app.command("compare")
def compare_cmd(
    run_a: str = typer.Argument(..., help="run id of set A (the reference)"),
    run_b: str = typer.Argument(..., help="run id of set B (compared against A)"),
    store_a: Optional[Path] = typer.Option(None, "--store", help="store file of A "
                                           f"(default: results/{STORE_NAME})"),
    store_b: Optional[Path] = typer.Option(None, "--store-b", help="store file of B (default: A's)"),
    out_dir: Optional[Path] = typer.Option(None, "--out", help="directory for compare.md/html "
                                           "(default: results/compare-A-vs-B)"),
) -> None:
    """Compare two stored runs case by case: change with 95% CI and significance."""
    from .comparison import compare, write_comparison  # imports the report (matplotlib)
    path_a = store_a or DEFAULT_OUT / STORE_NAME
    path_b = store_b or path_a
    for path in {path_a, path_b}:
        if not path.is_file():
            raise LabError(f"{path}: no such store; pass --store (and --store-b) with a results .sqlite")
    with Store(path_a) as first, Store(path_b) as second:
        comparison = compare(first.load_run(run_a), second.load_run(run_b))
    target = out_dir or DEFAULT_OUT / f"compare-{run_a}-vs-{run_b}"
    md, html = write_comparison(comparison, target)
    out.print(f"{len(comparison.matched)} matching cases, {len(comparison.significant)} significant, "
              f"{len(comparison.only_a)} only in A, {len(comparison.only_b)} only in B")
    out.print(f"comparison: {md}\n            {html}")


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
    except (LabError, PlanError, StoreError, TopologyError, ProcessError, IperfError,
            TargetError) as failure:
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
