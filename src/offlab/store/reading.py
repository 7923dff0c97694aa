"""Rebuilding a stored run's records from its rows (both engines, one set of queries).

A run's child rows are read table by table for the whole run (not per sample), so a
run of thousands of samples costs a handful of queries against a remote database; a
command that prints a few cases (history) reads only those cases' rows (`only`).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Collection, Mapping, Optional

from sqlalchemy import false, func, or_, select, true, tuple_
from sqlalchemy.engine import Connection

from . import codec
from ..analysis.adaptive import AdaptiveOutcome
from ..records import CaseSpec, CpuShare, FeatureState, Interval, OffloadProfile, RateProbe, RunInfo, Sample
from .masking import mask_command_line
from .results import CaseMoments, RunAggregates, RunResults
from .tables import (case, case_adaptive, run, run_campaign, run_stack, sample, sample_counter, sample_cpu,
                     sample_interval, sample_offload, sample_probe)


Wanted = Mapping[str, Optional[Collection[str]]]
"""run id → the case keys to read of it (None: all of its cases)."""


def load_run(conn: Connection, run_id: str, only: Collection[str] | None = None) -> RunResults | None:
    """Everything stored for a run; with `only`, just those cases and their samples."""
    found = load_runs(conn, {run_id: only})
    return found[0] if found else None


def load_runs(conn: Connection, wanted: Wanted) -> list[RunResults]:
    """Several runs (those that exist, in the order given) in one query per table."""
    rows = {r.id: r for r in conn.execute(select(run).where(run.c.id.in_(list(wanted))))}
    if not rows:
        return []
    cases = _cases(conn, wanted)
    samples: dict[str, dict[str, tuple[Sample, ...]]] = {
        run_id: {c.key: () for c in found} for run_id, found in cases.items()}
    for run_id, s in _samples(conn, wanted):
        samples[run_id][s.case_key] = samples[run_id].get(s.case_key, ()) + (s,)
    tags = {r.run_id: (r.campaign, r.pair) for r in conn.execute(
        select(run_campaign).where(run_campaign.c.run_id.in_(list(rows))))}
    adaptive, stack = _adaptive(conn, list(rows)), _stack(conn, list(rows))
    return [RunResults(_info(row), row.status, tuple(cases.get(run_id, ())), samples.get(run_id, {}),
                       row.finished_at, adaptive.get(run_id, {}), tags.get(run_id), stack.get(run_id, {}))
            for run_id, row in ((k, rows[k]) for k in wanted if k in rows)]


def aggregate_runs(conn: Connection, wanted: Mapping[str, Collection[str]]) -> list[RunAggregates]:
    """Several runs' environment, wanted cases and each case's moments (n, mean, sample
    standard deviation, minimum) of throughput and headline CPU, aggregated by the
    database: one row per case, however many samples it has."""
    from ..analysis.stats import Moments  # not at import: `list` and `export` compute nothing
    rows = {r.id: r for r in conn.execute(select(run).where(run.c.id.in_(list(wanted))))}
    if not rows:
        return []
    cases = _cases(conn, wanted)
    moments: dict[str, dict[str, CaseMoments]] = {}
    for r in conn.execute(_moments_query(wanted)):
        cpu = None
        if r.timed and r.cpu_n == r.timed:  # as report/model.py: every timed sample has one
            cpu = Moments(r.cpu_n, r.cpu_mean, r.cpu_std, r.cpu_min > 0)
        moments.setdefault(r.run_id, {})[r.case_key] = CaseMoments(
            Moments(r.n, r.mean, r.std, r.min > 0), cpu, complete=r.computed == r.n)
    return [RunAggregates(_info(rows[k]), tuple(cases.get(k, ())), moments.get(k, {})) for k in wanted if k in rows]


def _moments_query(wanted: Wanted):
    gbps, cpu = sample.c.throughput_bps / 1e9, sample.c.cpu_per_gbps
    # stddev_samp is PostgreSQL's; storage/location.py gives SQLite connections one
    return (select(sample.c.run_id, sample.c.case_key, func.count().label("n"),
                   func.count(sample.c.cpu_timed).label("computed"),
                   func.avg(gbps).label("mean"), func.stddev_samp(gbps).label("std"), func.min(gbps).label("min"),
                   func.count().filter(sample.c.cpu_timed == true()).label("timed"),
                   func.count(cpu).label("cpu_n"), func.avg(cpu).label("cpu_mean"),
                   func.stddev_samp(cpu).label("cpu_std"), func.min(cpu).label("cpu_min"))
            .where(_where(sample.c.run_id, sample.c.case_key, wanted))
            .group_by(sample.c.run_id, sample.c.case_key))


def _info(row: Any) -> RunInfo:
    return RunInfo(
        run_id=row.id, plan=row.plan, started_at=row.started_at, command_line=mask_command_line(row.command_line),
        kernel=row.kernel, cpu_model=row.cpu_model, cores=row.cores,
        tool_versions=codec.mapping_from_doc(row.tool_versions), host=row.host, notes=row.notes,
        settings=codec.settings_from_doc(row.settings), host_facts=codec.nested_from_doc(row.host_facts),
    )


def _where(run_column, key_column, wanted: Wanted):
    """Rows of the wanted runs, and of only their wanted cases where some are named."""
    whole = [run_id for run_id, keys in wanted.items() if keys is None]
    pairs = [(run_id, key) for run_id, keys in wanted.items() if keys is not None for key in keys]
    parts = ([run_column.in_(whole)] if whole else []) + ([tuple_(run_column, key_column).in_(pairs)] if pairs else [])
    return or_(*parts) if parts else false()


def _stack(conn: Connection, run_ids: list[str]) -> dict[str, dict[str, dict[str, dict[str, str]]]]:
    rows = conn.execute(select(run_stack).where(run_stack.c.run_id.in_(run_ids))
                        .order_by(run_stack.c.run_id, run_stack.c.seq)).all()
    found: dict[str, dict[str, dict[str, dict[str, str]]]] = {}
    for r in rows:
        found.setdefault(r.run_id, {}).setdefault(r.place, {}).setdefault(r.host, {})[r.key] = r.value
    return found


def _adaptive(conn: Connection, run_ids: list[str]) -> dict[str, dict[str, AdaptiveOutcome]]:
    rows = conn.execute(
        select(case_adaptive).join(case, (case.c.run_id == case_adaptive.c.run_id)
                                   & (case.c.key == case_adaptive.c.case_key))
        .where(case_adaptive.c.run_id.in_(run_ids)).order_by(case.c.run_id, case.c.position)).all()
    found: dict[str, dict[str, AdaptiveOutcome]] = {}
    for r in rows:
        found.setdefault(r.run_id, {})[r.case_key] = AdaptiveOutcome(
            r.case_key, r.target, r.min_runs, r.max_runs, r.runs, r.half_width, bool(r.reached))
    return found


def _cases(conn: Connection, wanted: Wanted) -> dict[str, list[CaseSpec]]:
    query = select(case).where(_where(case.c.run_id, case.c.key, wanted)).order_by(case.c.run_id, case.c.position)
    found: dict[str, list[CaseSpec]] = {}
    for r in conn.execute(query):
        found.setdefault(r.run_id, []).append(CaseSpec(
            scenario=r.scenario, mtu=r.mtu,
            profile=OffloadProfile(r.profile_name, r.profile_side, codec.mapping_from_doc(r.profile_features)),
            traffic=codec.traffic_from_doc(r.traffic), topology=codec.params_from_doc(r.topology),
            params=codec.params_from_doc(r.params), datapath=codec.datapath_from_doc(r.datapath),
            label=r.label,
        ))
    return found


def _children(conn: Connection, table, wanted: Wanted, *order) -> dict[int, list[Any]]:
    """sample id → the table's rows of that sample, for every sample wanted."""
    query = (select(table).join(sample, sample.c.id == table.c.sample_id)
             .where(_where(sample.c.run_id, sample.c.case_key, wanted)).order_by(table.c.sample_id, *order))
    found: dict[int, list[Any]] = defaultdict(list)
    for row in conn.execute(query):
        found[row.sample_id].append(row)
    return found


def _samples(conn: Connection, wanted: Wanted) -> list[tuple[str, Sample]]:
    rows = conn.execute(select(sample).where(_where(sample.c.run_id, sample.c.case_key, wanted))
                        .order_by(sample.c.run_id, sample.c.case_key, sample.c.repetition)).all()
    cpu = _children(conn, sample_cpu, wanted, sample_cpu.c.ordinal, sample_cpu.c.seq)
    offloads = _children(conn, sample_offload, wanted, sample_offload.c.seq)
    counters = _children(conn, sample_counter, wanted, sample_counter.c.seq)
    intervals = _children(conn, sample_interval, wanted, sample_interval.c.ordinal)
    probes = _children(conn, sample_probe, wanted, sample_probe.c.ordinal)
    return [
        (r.run_id, Sample(
            case_key=r.case_key, repetition=r.repetition, started_at=r.started_at,
            duration_s=r.duration_s, throughput_bps=r.throughput_bps, sender_bps=r.sender_bps,
            retransmits=r.retransmits, lost_packets=r.lost_packets, total_packets=r.total_packets,
            cpu=_cpu(cpu[r.id]), roles=codec.mapping_from_doc(r.roles),
            role_hosts=codec.mapping_from_doc(r.role_hosts),
            offloads=_offloads(offloads[r.id], "ethtool"), datapath=_offloads(offloads[r.id], "datapath"),
            intervals=tuple(Interval(i.start_s, i.end_s, i.bps, bool(i.warmup)) for i in intervals[r.id]),
            probes=tuple(RateProbe(p.offered_bps, p.sent_bps, p.received_bps, p.loss_percent)
                         for p in probes[r.id]),
            counters={c.name: c.value for c in counters[r.id]},
        ))
        for r in rows
    ]


def _cpu(rows: list[Any]) -> tuple[CpuShare, ...]:
    shares: dict[int, tuple[int, str, dict[str, float]]] = {}
    for r in rows:
        shares.setdefault(r.ordinal, (r.core, r.host, {}))[2][r._mapping["class"]] = r.percent
    return tuple(CpuShare(core, pct, host) for core, host, pct in shares.values())


def _offloads(rows: list[Any], layer: str) -> dict[str, dict[str, FeatureState]]:
    found: dict[str, dict[str, FeatureState]] = {}
    for r in rows:
        if r.layer == layer:
            found.setdefault(r.iface, {})[r.feature] = FeatureState(
                bool(r.is_on), bool(r.is_fixed), None if r.requested is None else bool(r.requested))
    return found
