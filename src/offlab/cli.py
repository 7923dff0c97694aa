"""The `offlab` command: run, report, compare, list, export, doctor.

Options mean the same in every command: `--store FILE|URL` is the results database, a
SQLite file (default results/offlab.sqlite) or a PostgreSQL URL (docs/team-store.md),
`--out DIR` is where a command writes what it makes.
Every mistake the user can fix is one line on stderr and a non-zero exit, and a
refused command creates nothing.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from rich.console import Console

from .run import preflight
from .hosts.guard import OVERRIDE_FLAG
from .store import location as locations
from .store.store import Store, StoreError
from .textout import plain_table

if TYPE_CHECKING:
    from .run import doctor as doctor_checks
    from .analysis.adaptive import Adaptive
    from .run.campaign import Fleet

# The measuring side (the run loop, pyroute2, the hosts' sessions, the plans, the
# checks) takes seconds to import: each command imports what it uses, so that `list`,
# `history`, `compare` and `doctor --store` start without it.

EXIT_INTERRUPTED = 130
EXIT_REGRESSION = 3
"""`offlab compare --fail-on-regression`: a significant regression was found."""
DEFAULT_OUT = Path("results")
STORE_NAME = "offlab.sqlite"
DEFAULT_STORE = DEFAULT_OUT / STORE_NAME
STORE_HELP = "results database: a SQLite file or postgresql://USER@HOST/DB"


class RunInterrupted(Exception):
    """A run stopped by a signal that has said what it kept and how to resume: exit
    128 + the signal's number (130 for SIGINT, 143 for SIGTERM) and say nothing more."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.exit_code = 128 + signum


app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  context_settings={"help_option_names": ["-h", "--help"]},
                  help="The offload lab: topologies in namespaces, offload profiles, iperf3, CPU, reports.")
# Never wrap: a line copied from a log or a pipe must stay one line.
err = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True)


class LabError(Exception):
    """An error the user can act on; printed as one line, exit status 1."""


def _version(value: bool) -> None:
    if value:
        from importlib import metadata
        print(f"offlab {metadata.version('offlab')}")
        raise typer.Exit(0)


@app.callback()
def main_options(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                              help="print the version and exit")) -> None:
    """The offload lab."""


def _write_report(store: Store, run_id: str, out_dir: Path) -> None:
    from .report.write import write_report  # matplotlib: seconds to import, so only when needed
    md, html = write_report(store.load_run(run_id), out_dir)
    out.print(f"report: {md}\n        {html}")


def _adaptive(ci_target: str | None, min_runs: int | None, max_runs: int | None,
              runs: int | None) -> "Adaptive | None":
    from .analysis.adaptive import Adaptive, parse_target
    if ci_target is None:
        if min_runs is not None or max_runs is not None:
            raise LabError("--min-runs/--max-runs bound adaptive repetitions; add --ci-target "
                           "(e.g. --ci-target 5%) or use --runs")
        return None
    if runs is not None:
        raise LabError("--runs and --ci-target exclude each other; bound adaptive runs "
                       "with --min-runs/--max-runs")
    return Adaptive(parse_target(ci_target), 3 if min_runs is None else min_runs,
                    20 if max_runs is None else max_runs)


@app.command("run")
def run_cmd(
    plan: Optional[str] = typer.Option(None, "--plan", help="a built-in plan (quick, offloads, udp, msgsize, vxlan, middlebox, userspace, guests) or a plan .toml file [default: quick]"),
    runs: Optional[int] = typer.Option(None, "--runs", help="repetitions per case (overrides the plan)"),
    duration: Optional[float] = typer.Option(None, "--duration", help="measured seconds per repetition"),
    warmup: Optional[float] = typer.Option(None, "--warmup", help="warm-up seconds, excluded from every figure"),
    out_dir: Optional[Path] = typer.Option(None, "--out", help="directory of the reports (and of the store "
                                           "without --store) [default: results]"),
    store_path: Optional[str] = typer.Option(None, "--store", help=STORE_HELP + " [default: OUT/offlab.sqlite]"),
    resume_id: Optional[str] = typer.Option(None, "--resume", help="continue an interrupted run of the store"),
    no_progress: bool = typer.Option(False, "--no-progress", help="no progress bar"),
    ci_target: Optional[str] = typer.Option(
        None, "--ci-target", help="repeat each case until its 95% CI half-width is within this "
        "share of the mean, e.g. 5%"),
    min_runs: Optional[int] = typer.Option(None, "--min-runs", help="with --ci-target: runs before the first check [default: 3]"),
    max_runs: Optional[int] = typer.Option(None, "--max-runs", help="with --ci-target: runs at most [default: 20]"),
    dry_run: bool = typer.Option(False, "--dry-run", help="print the cases, the time they take and what would change; run nothing"),
    yes: bool = typer.Option(False, "--yes", help="run even if it takes longer than --max-eta; with --hosts, change the servers without asking"),
    max_eta: float = typer.Option(preflight.DEFAULT_MAX_ETA_S / 3600, "--max-eta", help="hours a run may take without --yes"),
    wait: bool = typer.Option(False, "--wait", help="if another run is measuring, start when it ends"),
    hosts_path: Optional[Path] = typer.Option(None, "--hosts", help="a hosts file: run on your own servers over SSH "
                                              "(docs/real-hosts.md); with [[pair]] tables, a campaign over every pair"),
    pair: Optional[str] = typer.Option(None, "--pair", help="with a fleet file (--hosts with [[pair]] tables): run only this pair"),
    campaign_id: Optional[str] = typer.Option(None, "--campaign", hidden=True,
                                              help="the campaign this pair's run belongs to (set by the campaign)"),
    allow_shared: bool = typer.Option(False, OVERRIDE_FLAG, help="with --hosts: run even on a test interface that carries other traffic (the SSH session, the default route, upper devices, other addresses)"),
    allow_forwarding: bool = typer.Option(False, "--allow-forwarding", help="with --hosts and a [router]: turn on the router's IP forwarding if it is off (journaled, put back after)"),
) -> None:
    """Run a plan, store every sample, write the report."""
    from .measure import foreign
    from .run.campaign import Fleet
    from .hosts import HostError
    from .run.confirm import planned_changes
    from .run.dryrun import describe_hosts
    from .hosts.guard import check_servers, check_udp_rates
    from .hosts.remote_doctor import remote_facts
    from .hosts.router import check_router, planned_router_changes, router_facts
    from .hosts.session import RemoteSession, destinations, restore_first
    from .hosts.ssh import AuditLog
    from .run.plan import load
    from .run.runflow import begin, execute, resume
    from .topology.remote_build import remote_builder
    store_file = locations.parse(store_path if store_path is not None else (out_dir or DEFAULT_OUT) / STORE_NAME)
    report_root = out_dir or store_file.reports_dir()  # --out is where the report goes whenever given
    hosts = _select_hosts(hosts_path, pair)
    if isinstance(hosts, Fleet):
        if resume_id is not None:
            raise LabError(f"--resume continues one pair's run; add --pair NAME (pairs of {hosts_path}: "
                           f"{', '.join(p.name for p in hosts.pairs)})")
        _adaptive(ci_target, min_runs, max_runs, runs)
        chosen = load(plan or "quick").with_overrides(runs, duration, warmup)  # a bad plan: one line, before anything
        if not dry_run:  # one question for every server of the campaign, not one per pair
            _confirm([f"{pair.name}: {line}" for pair in hosts.pairs
                      for line in planned_changes(pair.hosts, chosen.cases, chosen.steer_rx_softirq)], yes)
        _campaign(hosts, store_file, dry_run, wait)
        return
    if resume_id is not None:
        given = [name for name, value in (("--plan", plan), ("--duration", duration), ("--warmup", warmup),
                                          ("--ci-target", ci_target), ("--min-runs", min_runs),
                                          ("--max-runs", max_runs)) if value is not None]
        if given:
            raise LabError(f"--resume continues run {resume_id} with its own plan and settings; "
                           f"drop {', '.join(given)}")
        if store_file.path is not None and not store_file.path.is_file():
            raise LabError(f"{store_file}: no such store to resume from; pass the run's --out or --store")
        with Store(store_file, readonly=True) as existing:
            stored = existing.load_run(resume_id)
        cases, settings = stored.cases, stored.info.settings
        if settings is None:
            raise LabError(f"run {resume_id} does not record its settings; start a new run")
        done = {k: len(v) for k, v in stored.samples.items()}
        plan_name = stored.info.plan
    else:
        adaptive = _adaptive(ci_target, min_runs, max_runs, runs)
        chosen = load(plan or "quick").with_overrides(runs, duration, warmup)
        settings = (chosen.settings(adaptive.target, adaptive.min_runs, adaptive.max_runs)
                    if adaptive else chosen.settings())
        if hosts is not None:
            settings = replace(settings, hosts=hosts.describe())
        cases, done = chosen.cases, {}
        plan_name = chosen.source if chosen.source.endswith(".toml") else chosen.name
    eta = preflight.estimate(cases, settings, done)
    # A dry run runs every check the run would (a dry run that passes is a run that
    # starts); it only neither replays old journals nor asks.
    if not max_eta > 0:
        raise LabError(f"--max-eta {max_eta:g} must be a positive number of hours")
    preflight.check_privileges()
    locations.check_reachable(store_file)
    preflight.check_eta(eta, max_eta * 3600, yes or dry_run)
    if hosts is None:
        preflight.check_tools(cases)
        preflight.check_devices(cases)
        preflight.check_guests(cases)
    else:
        check_udp_rates(hosts, cases)  # before any server is reached
        preflight.check_remote(cases, hosts)
        for line in restore_first(wait, destinations(hosts)) if campaign_id is None and not dry_run else []:
            err.print(f"restored {line}")
        for warning in check_servers(hosts, allow_shared) + check_router(hosts, cases, allow_forwarding, allow_shared):
            err.print(f"[yellow]warning[/]: {warning}")
    if dry_run:
        for line in preflight.describe(cases, settings, eta, local=hosts is None):
            print(line)
        for line in describe_hosts(hosts, cases, settings.steer_rx_softirq) if hosts is not None else []:
            print(line)
        return
    if hosts is not None:
        _confirm(planned_changes(hosts, cases, settings.steer_rx_softirq)
                 + planned_router_changes(hosts, cases, allow_forwarding), yes)

    busy, top = preflight.foreign_load()
    notes = ""
    if busy > foreign.BUSY_MACHINE_PERCENT:
        names = ", ".join(f"{name} {pct:.0f}%" for name, pct in top[:3])
        notes = f"machine not idle before the run: {busy:.0f}% of a core used by other processes ({names})"
        err.print(f"[yellow]warning[/]: {notes}; figures will carry that load (see other_busy_pct)")

    facts = remote_facts(hosts, settings.steer_rx_softirq, guests=any(c.scenario == "qemu" for c in cases)) \
        if hosts is not None and resume_id is None else {}
    if hosts is not None and resume_id is None and any(c.scenario == "middlebox" for c in cases):
        facts.update(router_facts(hosts))

    def prepare(store: Store):
        if resume_id is not None:
            return resume(store, resume_id, runs)
        return begin(store, plan_name, cases, settings, notes, facts,
                     (campaign_id, pair) if campaign_id is not None and pair is not None else None)

    err.print(f"{len(cases)} cases, about {eta.text}; store {store_file}")
    # A campaign's parent restored every journal before its pairs started; a pair's run
    # must not, or it would undo the journals of a sibling pair measuring at the same time.
    session = (RemoteSession(hosts, audit=AuditLog(), restore_first=campaign_id is None,
                             allow_forwarding=allow_forwarding) if hosts is not None else None)
    remote = {} if session is None else {"build": remote_builder(session), "before_start": session.start,
                                          "lost": lambda: session.lost}
    try:
        outcome = execute(store_file, prepare, console=err, show_progress=not no_progress, wait=wait, **remote)
    finally:
        for line in session.close() if session is not None else []:
            err.print(f"[yellow]kept[/]: {line}")
    if outcome.status == "interrupted" and outcome.reason is not None:
        raise HostError(f"run {outcome.run_id} interrupted: {outcome.reason}; {outcome.stats.samples} samples "
                        "of this session kept, nothing else touched on that server (its watchdog restored it); "
                        f"resume with `offlab run --resume {outcome.run_id}` once it is free")
    if outcome.status == "interrupted":
        err.print(f"interrupted: {outcome.stats.samples} samples of this session kept, namespaces removed")
        where = f" --store {store_file}" if store_file.path != DEFAULT_STORE else ""
        print(f"resume with: offlab run --resume {outcome.run_id}{where}", flush=True)
        raise RunInterrupted(outcome.signal or 2)
    for refused in outcome.stats.refused_offload_changes:
        err.print(f"[yellow]offload change refused[/] (recorded as read back): {refused}")
    for result in outcome.stats.adaptive:
        if not result.reached:
            err.print(f"[yellow]{result.case_key}[/]: {result.sentence()}")
    with Store(store_file, readonly=True) as store:
        _write_report(store, outcome.run_id, report_root / outcome.run_id)


def _select_hosts(hosts_path: Path | None, pair: str | None):
    """The hosts of this run: None (local namespaces), one pair's hosts file, or a whole
    fleet (a campaign) when a fleet file is given without --pair."""
    from .run.campaign import Fleet, load_hosts
    if hosts_path is None:
        if pair is not None:
            raise LabError("--pair needs --hosts with a fleet file ([[pair]] tables, docs/team-store.md)")
        return None
    loaded = load_hosts(hosts_path)
    if isinstance(loaded, Fleet):
        return loaded if pair is None else loaded.pair(pair).hosts
    if pair is not None:
        raise LabError(f"--pair names a pair of a fleet file; {hosts_path} has no [[pair]] tables")
    return loaded


def _campaign(fleet: Fleet, store_file: locations.StoreLocation, dry_run: bool, wait: bool) -> None:
    """Every pair of a fleet, pairs sharing no host at once (campaign.py), then the
    campaign report."""
    from .run.campaign import new_campaign_id, run_waves
    from .hosts.session import destinations, restore_journals
    from .runscope import RUNTIME_ROOT, MachineLock
    from .store.masking import password_to_environment
    if not dry_run:
        preflight.check_privileges()
        locations.check_reachable(store_file)
    campaign_id = new_campaign_id()
    err.print(f"campaign {campaign_id}: {len(fleet.pairs)} pairs in {len(fleet.waves())} waves; store {store_file}")
    lock = MachineLock()
    lock.acquire(f"campaign {campaign_id}, {store_file}", wait=wait)
    try:
        only = {ssh for pair in fleet.pairs for ssh in destinations(pair.hosts)}
        for line in ([] if dry_run else restore_journals(only=only)):
            err.print(f"restored {line}")
        # confirmed above for every pair: the pairs' runs must not each ask again
        argv = sys.argv[1:] + ([] if "--yes" in sys.argv[1:] else ["--yes"])
        argv, secret = password_to_environment(argv)  # the pairs' argv is world-readable
        os.environ.update(secret)
        outcomes = run_waves(fleet, campaign_id, argv, RUNTIME_ROOT, print)
    finally:
        lock.release()
    failed = [o for o in outcomes if o.exit_code != 0]
    for outcome in failed:
        err.print(f"pair {outcome.pair} ended with exit {outcome.exit_code}: {outcome.stderr_tail}")
    if not dry_run and len(failed) < len(outcomes):
        _report_campaign(Store(store_file, readonly=True), campaign_id, None)
    if failed:
        raise LabError(f"{len(failed)} of {len(outcomes)} pairs of campaign {campaign_id} did not complete "
                       "(above); resume each with --pair NAME --resume RUN_ID")


def _report_campaign(store: Store, campaign_id: str, out_dir: Optional[Path]) -> None:
    from .report.campaign_report import write_campaign_report
    with store:
        runs = [(pair, store.load_run(run_id)) for run_id, pair in store.campaign_runs(campaign_id)]
        where = store.location
    if not runs:
        raise LabError(f"no run of campaign {campaign_id!r} in {where.display}")
    md, html = write_campaign_report(campaign_id, runs, out_dir or where.reports_dir() / campaign_id)
    out.print(f"campaign report: {md}\n                 {html}")


def _confirm(changes: list[str], yes: bool) -> None:
    """Name each server and what will change on it; go on only on "yes" (or --yes)."""
    if yes:
        return
    if not sys.stdin.isatty():
        raise LabError("offlab would change these servers: " + " | ".join(changes) +
                       "; nobody can confirm here (no terminal): pass --yes to go ahead")
    out.print("offlab will change these servers (and put each change back at the end):")
    for line in changes:
        out.print(f"  {line}")
    if input("go ahead? [y/N] ").strip().lower() not in ("y", "yes"):
        raise LabError("nothing changed: not confirmed (pass --yes to skip the question)")


@app.command("report")
def report_cmd(
    run_id: Optional[str] = typer.Argument(None, help="run to report (default: the latest)"),
    store_path: str = typer.Option(str(DEFAULT_STORE), "--store", help=STORE_HELP),
    out_dir: Optional[Path] = typer.Option(None, "--out", help="report directory [default: next to the store "
                                           "(results/ for a database server), named after the run]"),
    campaign_id: Optional[str] = typer.Option(None, "--campaign", help="report a campaign's pairs side by side instead"),
) -> None:
    """Write the Markdown and HTML report of a stored run."""
    if campaign_id is not None:
        if run_id is not None:
            raise LabError("give a run id or --campaign, not both")
        _report_campaign(Store(store_path, readonly=True), campaign_id, out_dir)
        return
    with Store(store_path, readonly=True) as store:
        chosen = run_id or store.latest_run_id()
        if chosen is None:
            raise LabError(f"no runs in {store.path}; start one with: offlab run")
        _write_report(store, chosen, out_dir or store.location.reports_dir() / chosen)


@app.command("compare")
def compare_cmd(
    run_a: str = typer.Argument(..., help="run id of set A (the reference)"),
    run_b: str = typer.Argument(..., help="run id of set B (compared against A)"),
    store_a: str = typer.Option(str(DEFAULT_STORE), "--store", help="results database of A (a file or a URL)"),
    store_b: Optional[str] = typer.Option(None, "--store-b", help="results database of B, a file or a URL [default: A's]"),
    out_dir: Optional[Path] = typer.Option(None, "--out", help="directory for compare.md/html "
                                           "[default: next to A's store, compare-A-vs-B]"),
    fail_on_regression: Optional[float] = typer.Option(
        None, "--fail-on-regression", metavar="PCT",
        help=f"exit {EXIT_REGRESSION} if B is significantly worse than A by more than PCT % in any "
             "case (throughput down or CPU per Gbps up); 0: any significant regression"),
) -> None:
    """Compare two stored runs case by case: change with 95% CI and significance."""
    from .report.comparison import compare, regressions, write_comparison  # imports the report (matplotlib)
    if fail_on_regression is not None and not 0 <= fail_on_regression < 100:
        raise LabError(f"--fail-on-regression {fail_on_regression:g}: give a percentage from 0 to below 100")
    where_a = locations.parse(store_a)
    where_b = locations.parse(store_b) if store_b is not None else where_a
    with Store(where_a, readonly=True) as first, Store(where_b, readonly=True) as second:
        comparison = compare(first.load_run(run_a), second.load_run(run_b))
    if run_a == run_b and where_a.same_as(where_b):
        err.print(f"[yellow]warning[/]: run {run_a} is compared with itself; every change is 0")
    for difference in comparison.environment:
        err.print(f"[yellow]environment differs[/]: {difference}")
    target = out_dir or where_a.reports_dir() / f"compare-{run_a}-vs-{run_b}"
    md, html = write_comparison(comparison, target)
    out.print(f"{len(comparison.matched)} matching cases, {len(comparison.significant)} significant, "
              f"{len(comparison.only_a)} only in A, {len(comparison.only_b)} only in B")
    out.print(f"comparison: {md}\n            {html}")
    if fail_on_regression is not None:
        worse = regressions(comparison, fail_on_regression / 100)
        for line in worse:
            err.print(f"regression: {line}")
        if worse:
            raise typer.Exit(EXIT_REGRESSION)


@app.command("list")
def list_cmd(store_path: str = typer.Option(str(DEFAULT_STORE), "--store", help=STORE_HELP)) -> None:
    """Runs in the store."""
    with Store(store_path, readonly=True) as store:
        runs, dead = store.runs(), set(store.dead_runs())
    rows = []
    for r in runs:
        status = r.status
        if r.id in dead:  # its writer's process on this machine is gone (runs of others are live)
            status = "running? (no live offlab: killed)"
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.started))
        rows.append((r.id, started, r.plan, status, str(r.cases), str(r.samples)))
    for line in plain_table(("run", "started", "plan", "status", "cases", "samples"), rows):
        print(line)


@app.command("export")
def export_cmd(
    run_id: str = typer.Argument(..., help="run to export"),
    fmt: str = typer.Option(..., "--format", help="json or csv"),
    dest: Optional[Path] = typer.Option(None, "-o", "--output", help="file [default: stdout]"),
    store_path: str = typer.Option(str(DEFAULT_STORE), "--store", help=STORE_HELP),
) -> None:
    """Export a run's samples as JSON or CSV."""
    from .store.export import export
    if fmt not in ("json", "csv"):
        raise typer.BadParameter(f"{fmt!r}; use json or csv", param_hint="--format")
    with Store(store_path, readonly=True) as store:
        results = store.load_run(run_id)
    try:
        export(results, fmt, dest if dest is not None else sys.stdout)
    except OSError as failure:
        raise LabError(f"{dest}: cannot write the export ({failure.strerror}); choose another -o path") from None


@app.command("copy")
def copy_cmd(
    run_ids: list[str] = typer.Argument(..., help="runs to copy"),
    store_path: str = typer.Option(str(DEFAULT_STORE), "--store", help="the store to copy from: " + STORE_HELP),
    dest: str = typer.Option(..., "--to", help="the store to copy into (a file is created if missing, a "
                             "database must exist)"),
) -> None:
    """Copy runs between stores (SQLite and PostgreSQL, either way); runs already there are kept."""
    from .store.runcopy import copy_runs
    where = locations.parse(dest)
    for copied in copy_runs(run_ids, store_path, where):
        print(copied.sentence(where))


@app.command("history")
def history_cmd(
    pattern: str = typer.Argument(..., help="cases to follow: a glob over case keys (bare/mtu1500/tx:*/tcp) "
                                  "or a part of one (tso-off)"),
    store_path: str = typer.Option(str(DEFAULT_STORE), "--store", help=STORE_HELP),
    out_dir: Optional[Path] = typer.Option(None, "--out", help="directory for history.md/html "
                                           "[default: next to the store (results/ for a server), history]"),
) -> None:
    """A case across every stored run: its figures against what changed (kernel, NIC, offlab, hosts)."""
    from .report.history import build_history, matches
    from .report.history_report import history_table, write_history
    with Store(store_path, readonly=True) as store:
        cases = build_history(store.runs_with_cases(lambda key: matches(pattern, key)), pattern)
        where = store.location
    if not cases:
        raise LabError(f"no stored case matches {pattern!r} in {where.display}; `offlab list` shows the runs, "
                       "a report names their cases")
    for case in cases:
        print(f"{case.key}:")
        table = history_table(case)
        for line in plain_table(table.header, table.rows):
            print(f"  {line}")
    md, html = write_history(cases, pattern, where.display, out_dir or where.reports_dir() / "history")
    out.print(f"history: {md}\n         {html}")


store_app = typer.Typer(no_args_is_help=True, help="The store's schema: on a team's PostgreSQL, its owner's command.")
app.add_typer(store_app, name="store")


@store_app.command("upgrade")
def store_upgrade_cmd(store_path: str = typer.Option(str(DEFAULT_STORE), "--store", help=STORE_HELP)) -> None:
    """Create offlab's tables in an empty database, or bring an older schema to this
    offlab's revision (on PostgreSQL nothing else changes the schema: run it as the role
    that owns it, when every lab machine has this offlab)."""
    from .run.store_health import upgrade_store
    print(upgrade_store(locations.parse(store_path)))


@app.command("restore")
def restore_cmd(purge: bool = typer.Option(False, "--purge", help="also remove the files offlab copied to the "
                                           "servers of --hosts (guest kernel and initramfs, offlab-fwd)"),
                hosts_path: Optional[Path] = typer.Option(None, "--hosts", help="with --purge: the servers to purge"),
                forget_host: Optional[str] = typer.Option(None, "--forget", metavar="HOST",
                                                          help="drop the journals of HOST (its ssh destination) "
                                                          "without reaching it: a server gone for good")) -> None:
    """Put back every real host a killed run left changed (offloads, MTU, devices)."""
    from .hosts import hostsfile
    from .hosts.journal import forget
    from .hosts.recovery import restore_pending
    from .hosts.remote_doctor import purge_files
    from .runscope import MachineLock
    if forget_host is not None:
        lock = MachineLock()
        lock.acquire("offlab restore --forget")
        try:
            lines = forget(forget_host)
        finally:
            lock.release()
        for line in lines:
            err.print(f"[yellow]warning[/]: {line}")
        return
    if purge and hosts_path is None:
        raise LabError("--purge removes offlab's files from servers: name them with --hosts hosts.toml")
    hosts = hostsfile.load(hosts_path) if hosts_path is not None else None
    lock = MachineLock()
    lock.acquire("offlab restore")
    try:
        results = restore_pending()
        purged = purge_files(hosts) if purge and hosts is not None else []
    finally:
        lock.release()
    for line in purged:
        print(f"purged {line}")
    if not results and not purged:
        print("restored nothing: no host was left changed")
    for result in results:
        for line in result.lines if result.ok else ():
            print(f"restored {line}")
        if not result.ok:
            print(f"NOT restored {result.host}: {result.lines[0]}")
    failed = [r.host for r in results if not r.ok]
    if failed:
        raise LabError(f"{', '.join(failed)} not restored (the others were); fix what each line says and "
                       "run offlab restore again, or `offlab restore --forget HOST` for a server gone for good")


@app.command("doctor")
def doctor_cmd(clean: bool = typer.Option(False, "--clean", help="also remove what killed runs left: "
                                          "their processes, namespaces and temporary files"),
               hosts_path: Optional[Path] = typer.Option(None, "--hosts", help="check the hosts of a hosts file instead"),
               store_path: Optional[str] = typer.Option(None, "--store", help="check a store instead: " + STORE_HELP),
               allow_shared: bool = typer.Option(False, OVERRIDE_FLAG, help="with --hosts: accept a test interface that carries other traffic"),
               guests: bool = typer.Option(False, "--guests", help="with --hosts: also what the qemu scenario needs "
                                           "there (QEMU, a KVM boot probe, vhost-net, memfd, bridge, free cores)"),
               plan: Optional[str] = typer.Option(None, "--plan", help="with --hosts: check what this plan needs "
                                                  "(the router's IP forwarding only when it routes through R's kernel)")) -> None:
    """Check root, tools, kernel modules and namespaces, each with its fix."""
    if (guests or plan is not None) and hosts_path is None:
        raise LabError(f"{'--guests' if guests else '--plan'} checks servers: give them with --hosts hosts.toml")
    if store_path is not None:
        from .run.store_health import check_store
        _print_checks(check_store(locations.parse(store_path)))
        return
    from .run import doctor as doctor_checks
    from .hosts import hostsfile
    from .hosts.remote_doctor import remote_checks
    from .vm.server_doctor import remote_guest_checks
    from .hosts.router import router_checks
    from .run.plan import load
    from .runscope import MachineLock, reclaim_stale
    from .topology import sweep_leftovers
    if hosts_path is not None:
        hosts = hostsfile.load(hosts_path)
        chosen = load(plan) if plan is not None else None  # a bad plan: one line, before any server is asked
        if clean:
            restore_cmd(purge=False, hosts_path=None, forget_host=None)  # what killed runs left on servers: processes, devices, settings
        checks = remote_checks(hosts, allow_shared) + router_checks(
            hosts, allow_shared, (chosen.name, list(chosen.cases)) if chosen is not None else None)
        if guests:
            checks += remote_guest_checks(hosts)
        for line in plain_table(("host", "check", "ok", "detail", "fix"),
                                [(c.host, c.name, "yes" if c.ok else "NO", c.detail, c.fix) for c in checks]):
            print(line)
        if not all(c.ok for c in checks):
            raise typer.Exit(1)
        return
    if clean:
        lock = MachineLock()
        lock.acquire("offlab doctor --clean")
        try:
            removed = reclaim_stale() + [f"namespace of killed run: {n}" for n in sweep_leftovers()]
        finally:
            lock.release()
        for line in removed or ["nothing: no run was killed"]:
            print(f"removed {line}")
    _print_checks(doctor_checks.run_checks())


def _print_checks(checks: list[doctor_checks.Check]) -> None:
    for line in plain_table(("check", "ok", "detail", "fix"),
                            [(c.name, "yes" if c.ok else "NO", c.detail, c.fix) for c in checks]):
        print(line)
    if not all(c.ok for c in checks):
        raise typer.Exit(1)


def known_errors() -> tuple[type[Exception], ...]:
    """The failures a user can fix, each printed as one line. Imported when one is to be
    told apart, not at start-up: most live in the measuring side's modules."""
    from .analysis.adaptive import TargetError
    from .hosts import HostError, hostsfile
    from .run.plan import PlanError
    from .proc import ProcessError
    from .run.runflow import RunError
    from .runscope import BusyError
    from .topology import TopologyError
    from .measure.traffic import IperfError
    return (LabError, PlanError, StoreError, TopologyError, ProcessError, IperfError, TargetError,
            preflight.PreflightError, BusyError, RunError, HostError, hostsfile.HostsFileError)


def main() -> None:
    """Entry point: every failure the user can fix is one line and a non-zero status."""
    try:
        status = app(standalone_mode=False)
    except (typer.Abort, KeyboardInterrupt):
        print("offlab: interrupted", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
    except RunInterrupted as stopped:
        sys.exit(stopped.exit_code)
    except Exception as failure:
        if isinstance(failure, (LabError, StoreError)) or isinstance(failure, known_errors()):
            print(f"offlab: {failure}", file=sys.stderr)
            sys.exit(1)
        # Usage errors: typer's click exceptions (vendored or not) carry these two.
        if not (hasattr(failure, "format_message") and hasattr(failure, "exit_code")):
            raise
        ctx = getattr(failure, "ctx", None)
        command = ctx.command_path if ctx is not None else "offlab"
        print(f"{command}: {failure.format_message()} (see {command} --help)", file=sys.stderr)
        sys.exit(failure.exit_code)
    if status == EXIT_INTERRUPTED:
        # Typer turns a Ctrl-C inside a command into this status, silently.
        print("offlab: interrupted", file=sys.stderr)
    sys.exit(status if isinstance(status, int) else 0)


if __name__ == "__main__":
    main()
